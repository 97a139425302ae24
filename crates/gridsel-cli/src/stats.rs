//! Medians, percentiles and geometric means, computed as the benchmark
//! harness computes them (`bench/harness/gridsel_bench.py`): percentiles are
//! linearly interpolated between order statistics (numpy's default), so a
//! median of an even count is the mean of the middle two.

/// The centre and the spread of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub min: f64,
    pub max: f64,
    /// The sum of the samples: for launch times, what the launches cost in
    /// all, which a median hides when a few launches are slow.
    pub total: f64,
}

impl Summary {
    /// `None` for no samples. NaNs sort last and are kept: the caller feeds
    /// measured times only.
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Self {
            count: sorted.len(),
            median: percentile(&sorted, 0.5),
            p10: percentile(&sorted, 0.1),
            p90: percentile(&sorted, 0.9),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            total: sorted.iter().sum(),
        })
    }

    /// The p10 to p90 range as a percentage of the median: the noise of one
    /// policy's launches.
    pub fn spread_pct(&self) -> f64 {
        (self.p90 - self.p10) / self.median * 100.0
    }
}

/// The median of `samples`; `None` for none.
pub fn median(samples: &[f64]) -> Option<f64> {
    Summary::of(samples).map(|s| s.median)
}

/// The `q` quantile (0 to 1) of non-empty `sorted`, interpolated linearly
/// between the two nearest order statistics.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// The geometric mean of positive `values`; `None` when there are none.
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let log_sum: f64 = values.iter().map(|v| v.ln()).sum();
    Some((log_sum / values.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_and_even_medians() {
        assert_eq!(Summary::of(&[5.0, 1.0, 3.0]).unwrap().median, 3.0);
        assert_eq!(Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap().median, 2.5);
        assert_eq!(Summary::of(&[7.0]).unwrap().median, 7.0);
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn percentiles_interpolate_as_numpy_does() {
        // numpy.percentile(range(1, 11), [10, 90]) == [1.9, 9.1]
        let s = Summary::of(&(1..=10).rev().map(f64::from).collect::<Vec<_>>()).unwrap();
        assert!((s.p10 - 1.9).abs() < 1e-12, "{s:?}");
        assert!((s.p90 - 9.1).abs() < 1e-12, "{s:?}");
        assert_eq!((s.min, s.max, s.count, s.total), (1.0, 10.0, 10, 55.0));
        assert!((s.spread_pct() - 7.2 / 5.5 * 100.0).abs() < 1e-9);
        // One sample: no spread.
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!((one.p10, one.p90, one.spread_pct()), (3.0, 3.0, 0.0));
    }

    #[test]
    fn geomean_of_reciprocals_is_one() {
        assert!((geomean(&[2.0, 0.5]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geomean(&[1.0, 4.0]).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
    }
}
