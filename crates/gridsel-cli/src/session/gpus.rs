//! `gridsel tune --gpus`: one session over the GPUs of a node. Its tuning
//! runs go in rounds of one process per GPU at once (`CUDA_VISIBLE_DEVICES`
//! naming it), each on its own copy of the scratch store as the round
//! began; the library's per-process salt spreads processes that run one
//! search at once over different candidates of a round (`Search::step`).
//! After the round, what each process added to its copy is merged into
//! the scratch store as the store merges any process's additions
//! (`Update::between` per record, applied by `Table::apply`), so the
//! session keeps one store. The before run and the confirmation run on
//! the first GPU named, so that their pairs compare runs of one GPU.

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

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_core::tune::search::{Candidate, KEEP, Kind};
    use gridsel_core::tune::store::{Key, Record, Table, Tally, Update};

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

    /// The samples a copy added to a candidate's list `before` to make it
    /// `after`, as the round's merge takes them (`Update::between`).
    fn added(before: &[u64], after: &[u64]) -> Vec<u64> {
        let key = Key::for_trip("k", "NVIDIA H100", 90, 1000, "b");
        let holding = |samples: &[u64]| {
            let mut record = Record::new(key.clone());
            let mut u = Update::new(key.clone());
            u.samples = (samples.iter())
                .map(|&ns| (Candidate::Auto, Kind::Cold, ns))
                .collect();
            record.merge(&u);
            record
        };
        let update = Update::between(Some(&holding(before)), &holding(after));
        update.samples.iter().map(|&(_, _, ns)| ns).collect()
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
        let update = Update::between(Some(&start), &copy);
        assert_eq!(update.tally.runs, 1);
        assert_eq!(update.samples, [(occupancy, Kind::Cold, 91)]);
        let mut table = Table::default();
        table.insert(start);
        table.apply(&update);
        assert_eq!(table.get(&key), Some(&copy));
        // A record the round made: the whole of it.
        let fresh = Update::between(None, &copy);
        let mut empty = Table::default();
        empty.apply(&fresh);
        assert_eq!(empty.get(&key).map(|r| r.tally.runs), Some(3));
    }
}
