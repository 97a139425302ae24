//! SplitMix64 (Steele, Lea and Flood, 2014): small, fast, well-mixed and
//! reproducible draws, without a dependency. `gridsel-research tune-sim` draws the
//! noise a replayed search ranks through with it; the fuzz test, its
//! mutations. Nothing in a program's launch path draws.

/// A SplitMix64 stream from its seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; modulo bias below 2^-40 for n < 2^24).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn the_reference_stream() {
        // The first outputs for seed 0 (the published reference values).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert!((0..1000).all(|_| r.below(7) < 7));
    }
}
