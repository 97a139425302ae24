//! `gridsel tune --gpus`: one session over the GPUs of a node. Its tuning
//! runs go in rounds of one process per GPU at once (`CUDA_VISIBLE_DEVICES`
//! naming it), each on its own copy of the scratch store as the round
//! began; the library's per-process salt spreads processes that run one
//! search at once over different candidates of a round (`Search::step`).
//! After the round, what each process added to its copy is merged into
//! the scratch store as the store merges any process's additions
//! ([`additions`]: one `Update` per record, applied by `Table::apply`), so
//! the session keeps one store. The before run and the confirmation run on
//! the first GPU named, so that their pairs compare runs of one GPU.

use gridsel_core::tune::search::{Kind, Samples};
use gridsel_core::tune::store::{Record, Tally, Update};

/// The variable that names a process's GPUs to the CUDA driver.
pub const VISIBLE: &str = "CUDA_VISIBLE_DEVICES";

/// `--gpus`: every GPU the driver reports, or a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gpus {
    All,
    /// `CUDA_VISIBLE_DEVICES` values, one a process, in order.
    List(Vec<String>),
}

/// `--gpus`: `all`, or GPU indices (or UUIDs) separated by commas, each
/// once.
pub fn parse(text: &str) -> Result<Gpus, String> {
    if text == "all" {
        return Ok(Gpus::All);
    }
    let list: Vec<String> = text.split(',').map(|g| g.trim().to_string()).collect();
    let plain =
        |g: &String| !g.is_empty() && g.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !list.iter().all(plain) {
        return Err(format!(
            "`{text}` is not `all` or a list of GPUs such as 0,1,2"
        ));
    }
    for (i, g) in list.iter().enumerate() {
        if list[..i].contains(g) {
            return Err(format!("GPU {g} is named twice"));
        }
    }
    Ok(Gpus::List(list))
}

/// The GPUs of `all`, given the driver's count (or why it has none) and
/// the caller's `CUDA_VISIBLE_DEVICES`: its entries where it names as many
/// (a batch system's allocation), else the indices. `Err`: why one
/// process is all there is, in a line.
pub fn all(count: Result<usize, String>, visible: Option<&str>) -> Result<Vec<String>, String> {
    let count = match count {
        Ok(0) => return Err("the driver reports no GPU".into()),
        Ok(n) => n,
        Err(why) => return Err(why),
    };
    let entries: Vec<String> = visible
        .map(|v| v.split(',').map(str::trim).filter(|e| !e.is_empty()))
        .into_iter()
        .flatten()
        .map(String::from)
        .collect();
    Ok(match entries.len() >= count {
        true => entries.into_iter().take(count).collect(),
        false => (0..count).map(|i| i.to_string()).collect(),
    })
}

/// What a process added to the record `before` (`None`: the record did not
/// exist), reading `after`, the record its copy of the store ends with, as
/// one update: the runs, exploring launches and samples it added, the
/// trip counts, launches per run, settling and pin it left.
pub fn additions(before: Option<&Record>, after: &Record) -> Update {
    let none = Record::new(after.key.clone());
    let before = before.unwrap_or(&none);
    let mut update = Update::new(after.key.clone());
    update.tally = Tally {
        runs: after.tally.runs.saturating_sub(before.tally.runs),
        ..after.tally
    };
    update.llvm = after.llvm;
    for (slot, (a, b)) in update
        .explored
        .iter_mut()
        .zip(after.search.explored.iter().zip(before.search.explored))
    {
        *slot = a.saturating_sub(b);
    }
    update.settled = after.search.settled;
    update.pinned = after.pinned.filter(|_| after.pinned != before.pinned);
    let empty = Samples::default();
    for (&c, samples) in after.search.candidates.iter().zip(&after.search.samples) {
        let old = (before.search.candidates.iter())
            .position(|x| *x == c)
            .map_or(&empty, |i| &before.search.samples[i]);
        for kind in [Kind::Cold, Kind::Warm] {
            let new = added(old.of(kind), samples.of(kind));
            update.samples.extend(new.iter().map(|&ns| (c, kind, ns)));
        }
    }
    update
}

/// The samples `after` holds that `before` did not: `after` is `before`
/// with samples pushed at its end and the oldest dropped past the store's
/// [`gridsel_core::tune::search::KEEP`], so the new ones are what follows
/// the longest end of `before` that `after` starts with (where equal times
/// make that ambiguous, the fewest).
fn added<'a>(before: &[u64], after: &'a [u64]) -> &'a [u64] {
    let kept = (0..=after.len().min(before.len()))
        .rev()
        .find(|&k| after[..k] == before[before.len() - k..])
        .unwrap_or(0);
    &after[kept..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::tune::search::{Candidate, KEEP};
    use gridsel_core::tune::store::{Key, Table};

    #[test]
    fn gpus_parse_as_all_or_a_list() {
        assert_eq!(parse("all"), Ok(Gpus::All));
        assert_eq!(
            parse("0,1, 3"),
            Ok(Gpus::List(vec!["0".into(), "1".into(), "3".into()]))
        );
        for bad in ["", "0,,1", "0;1", "a b", "0,0"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn all_is_the_drivers_gpus_as_the_caller_sees_them() {
        assert_eq!(all(Ok(2), None), Ok(vec!["0".into(), "1".into()]));
        // Slurm gave this job GPUs 2 and 3: they are the ones to name.
        assert_eq!(all(Ok(2), Some("2,3")), Ok(vec!["2".into(), "3".into()]));
        assert_eq!(all(Ok(2), Some("")), Ok(vec!["0".into(), "1".into()]));
        assert!(all(Ok(0), None).is_err());
        assert_eq!(all(Err("no driver".into()), None), Err("no driver".into()));
    }

    #[test]
    fn added_samples_are_the_ones_after_what_was_kept() {
        assert_eq!(added(&[1, 2], &[1, 2, 3]), [3]);
        assert_eq!(added(&[], &[5]), [5]);
        assert_eq!(added(&[1, 2], &[1, 2]), [] as [u64; 0]);
        let full: Vec<u64> = (1..=KEEP as u64).collect();
        let pushed: Vec<u64> = (3..=KEEP as u64 + 2).collect();
        assert_eq!(added(&full, &pushed), [KEEP as u64 + 1, KEEP as u64 + 2]);
    }

    /// A process's additions merged into the record as it began give the
    /// record the process's copy ended with.
    #[test]
    fn a_copys_additions_applied_to_the_round_start_give_the_copy() {
        let key = Key::for_trip("k", "NVIDIA H100", 90, 1000, "b");
        let mut start = Record::new(key.clone());
        let (auto, occupancy) = (Candidate::Auto, Candidate::Occupancy);
        let add = |r: &mut Record, runs, samples: &[(Candidate, u64)], settled| {
            let mut u = Update::new(key.clone());
            u.tally = Tally {
                trips: (1000, 1000),
                used: 5,
                runs,
                launches_per_run: 1,
            };
            u.samples = samples.iter().map(|&(c, ns)| (c, Kind::Cold, ns)).collect();
            u.explored = [samples.iter().filter(|(c, _)| *c != auto).count() as u32, 0];
            u.settled = [settled, false];
            r.merge(&u);
        };
        add(&mut start, 2, &[(auto, 100), (occupancy, 90)], false);
        let mut copy = start.clone();
        add(&mut copy, 1, &[(occupancy, 91)], true);
        let update = additions(Some(&start), &copy);
        assert_eq!(update.tally.runs, 1);
        assert_eq!(update.samples, [(occupancy, Kind::Cold, 91)]);
        let mut table = Table::default();
        table.insert(start);
        table.apply(&update);
        assert_eq!(table.get(&key), Some(&copy));
        // A record the round made: the whole of it.
        let fresh = additions(None, &copy);
        let mut empty = Table::default();
        empty.apply(&fresh);
        assert_eq!(empty.get(&key).map(|r| r.tally.runs), Some(3));
    }
}
