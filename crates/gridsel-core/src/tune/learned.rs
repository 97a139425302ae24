//! `auto` with what tuning learned: production runs launch the grids a
//! tuning session settled on, at no cost to them ([`LearnedPolicy`]).
//!
//! Exploring belongs to a tuning session (`gridsel tune`, or
//! `GRIDSEL_POLICY=tune`), as MIOpen's Find belongs to a find step and
//! Kernel Tuner's search to an offline run; a production run only reads what
//! was learned. Under the default policy the stores are read when a program
//! registers its device images, never at a launch, and never written: no
//! writer thread, no journal, no lock file. Only the lines of the program's
//! own kernels are parsed ([`store::parse_only`]), so a 4 MiB store of
//! thousands of searches costs a production run a read of the file.
//!
//! A launch gets a learned grid where a record of its kernel, device,
//! sm_arch, trip-count class and build ([`store::Key`]) has settled
//! ([`learned`]); the grid is resolved for the launch as `tune` resolves its
//! candidates ([`resolve`]), cut to the launch's safe range like any grid.
//! Elsewhere `auto`'s static rule ([`chunked`]) decides. A settled record
//! of one of the program's kernels for another build of it, or another
//! LLVM, is ignored, and one line per process says how many.
//!
//! For a `gridsel tune` session's confirmation runs the policy can
//! alternate ([`LearnedPolicy::alternating`]): per search, in launch order,
//! the learned grid at the odd-numbered launches (the 2nd, 4th, ...) or at
//! the even-numbered ones from the 3rd on ([`LearnedLaunches`]), and
//! `auto`'s at the others, the cold first launch always among them. In a
//! time-stepping code every kernel is launched once a step, so whole steps
//! alternate between the learned set and `auto`'s, and one process compares
//! them: two runs of the very same grids differ by far more between
//! processes than two halves of one run do. The session swaps the sides
//! from run to run, so that a code doing different work on odd and even
//! steps (ping-pong buffers) favours each side in turn.

use super::prior::resolve;
use super::search::{Candidate, Exploring, Search};
use super::session::{Store, dropped_summary};
use super::store::{self, Key, Only, Record};
use crate::Reported;
use crate::env::{ENV_CACHE, ENV_LOG};
use crate::kernel::KernelDesc;
use crate::libomptarget::LlvmRelease;
use crate::policy::per_launch::PerLaunch;
use crate::policy::{GridPolicy, Launch, Proposal, Rule, chunked};
use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The profile's label (`GRIDSEL_PROFILE`'s `policy` column) of a launch
/// that got a learned grid.
pub const LEARNED_LABEL: &str = "learned";

/// The grid a settled record says to launch: its pinned grid, else the
/// leader of its search for the record's kind of samples ([`Record::kind`])
/// as production ranks it ([`ranked_for_production`]). `None` for a search
/// that has not settled, or whose leader has no sample of that kind.
pub fn learned(record: &Record) -> Option<Candidate> {
    if record.pinned.is_some() {
        return record.pinned;
    }
    let kind = record.kind();
    if !record.search.settled(kind) {
        return None;
    }
    let search = ranked_for_production(record);
    let leader = search.leader(kind);
    let measured = !search.samples.get(leader)?.of(kind).is_empty();
    measured.then(|| search.candidates[leader])
}

/// A record's search as production ranks it: `auto`'s, LLVM's and
/// `occupancy`'s grids first, as the prior orders them, so that they are
/// kept unless another candidate beats them beyond the noise, and by a
/// tuning session's rule ([`Exploring::UNBOUNDED`]), whose searches
/// production is for, so that production launches the grid the session
/// settled on and its confirmation judged. A close call the session's plan
/// decides at 1.5 standard errors ([`super::search::SESSION_SIGNIFICANCE`])
/// would be a tie at online `tune`'s two, and `auto`'s grid would run
/// instead: replayed over the sweeps, a session's lower bar then ended
/// 0.1-0.4 points farther from the best rather than 0.2-0.5 nearer
/// (bench/results/h100/NOTES.md §53). A search online `tune` settled is
/// read the same way, though no confirmation followed it: a lower median
/// than the earliest unbeaten candidate's leads there on four samples, not
/// three, and two candidates of four samples or more are told apart at 1.5
/// standard errors, not two (replayed with online `tune`'s plan, 0.1-0.3
/// points nearer the best, and at three times the measured noise 0.4-0.5 %
/// of the replays more than 3 % slower than `auto`'s grid instead of
/// 0.1-0.2 %).
pub fn ranked_for_production(record: &Record) -> Search {
    let mut search = Search {
        exploring: Exploring::UNBOUNDED,
        ..Search::new(vec![Candidate::Auto, Candidate::Llvm, Candidate::Occupancy])
    };
    for (c, s) in record.search.candidates.iter().zip(&record.search.samples) {
        let i = search.index_of(*c);
        search.samples[i] = s.clone();
    }
    search
}

/// The default policy, `auto`, launching the grids read from the stores
/// where they hold a settled record for the launch.
pub struct LearnedPolicy {
    /// The user's store, then the site's (`GRIDSEL_SITE_CACHE`): the first
    /// to have a learned grid for a key gives it.
    stores: Vec<Box<dyn Store>>,
    learned: RwLock<HashMap<Key, Read>>,
    /// Some grid was learned: without one, every launch gets the static
    /// rule's grid at the static rule's cost, with no lock taken.
    any: AtomicBool,
    /// Each launch class's learned grid, looked up at its first launch.
    launches: PerLaunch<Class>,
    /// Launch the learned grid only at these launches of a class.
    alternate: Option<LearnedLaunches>,
    /// Said once per process: how many learned grids apply on the GPU of
    /// the first launch, records ignored for another build or LLVM, and,
    /// per store (by its index in `stores`), that it could not be read
    /// or left records out.
    said_read: Reported<()>,
    said_ignored: Reported<()>,
    said_trouble: Reported<usize>,
}

/// A learned grid as read from the stores.
struct Read {
    grid: Candidate,
    /// The store (by its index in `stores`) it came from, for the line
    /// that says how many apply ([`LearnedPolicy::say_read`]).
    store: usize,
    /// A tuning session verified it for a `target teams` region of its
    /// build (`Record::verified`).
    verified: bool,
}

/// A launch class as its first launch found it in what was read.
struct Class {
    grid: Option<Candidate>,
    /// Its grid was verified for a `target teams` region of its build
    /// ([`GridPolicy::verified`]): answered from here, so that every launch
    /// of such a region costs one lookup, not a key's strings built anew.
    verified: bool,
    /// How many times the class was launched before (counted under the
    /// lock the lookup already takes); a launch of a `target teams` region
    /// kept as given is not one.
    launched: u64,
}

/// Which launches of each search an alternating run gives the learned
/// grid, counted from 0 in launch order; `auto`'s gets the others, the
/// cold first launch (0) always, which would weigh on one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LearnedLaunches {
    /// Launches 1, 3, 5, ...
    Odd,
    /// Launches 2, 4, 6, ...
    Even,
}

impl LearnedLaunches {
    /// The side confirmation run `i` (from 1) takes: odd runs the odd
    /// launches, even runs the even ones, so that an effect of launch
    /// parity itself changes sign from run to run.
    pub fn of_run(i: u32) -> Self {
        if i % 2 == 1 { Self::Odd } else { Self::Even }
    }

    /// Whether launch `j` of a search gets the learned grid.
    pub fn learned_at(self, j: u64) -> bool {
        j > 0 && (j % 2 == 1) == (self == Self::Odd)
    }

    /// The setting's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Odd => "odd",
            Self::Even => "even",
        }
    }

    /// The side [`LearnedLaunches::name`] calls `word`.
    pub fn named(word: &str) -> Option<Self> {
        [Self::Odd, Self::Even]
            .into_iter()
            .find(|side| side.name() == word)
    }
}

impl LearnedPolicy {
    /// Reads `stores` (the user's first) at each image registration.
    pub fn new(stores: Vec<Box<dyn Store>>) -> Self {
        Self {
            stores,
            learned: RwLock::default(),
            any: AtomicBool::new(false),
            launches: PerLaunch::keyed_by(|l| u64::from(store::class(l.desc.trip_count))),
            said_read: Reported::new(),
            said_ignored: Reported::new(),
            said_trouble: Reported::new(),
            alternate: None,
        }
    }

    /// With `alternate`, each search (kernel, device and trip-count class)
    /// gets its learned grid only at those of its launches, and `auto`'s at
    /// the others: a tuning session's confirmation runs compare the two
    /// within one process (module doc).
    pub fn alternating(mut self, alternate: Option<LearnedLaunches>) -> Self {
        self.alternate = alternate;
        self
    }

    /// Says, once, how many of the learned grids read apply on `l`'s GPU
    /// (its name and sm_arch: a record of another GPU never does), per
    /// store, and how many more were read for another GPU.
    fn say_read(&self, l: &Launch<'_>) {
        if !self.said_read.first(()) {
            return;
        }
        let learned = crate::read_lock(&self.learned);
        let here = |k: &Key| k.device == l.device.name && k.sm_arch == l.device.sm_arch;
        let found: Vec<String> = (0..self.stores.len())
            .filter_map(|index| {
                let n = learned
                    .iter()
                    .filter(|&(k, r)| r.store == index && here(k))
                    .count();
                (n > 0).then(|| format!("{n} from {}", self.stores[index].location()))
            })
            .collect();
        let elsewhere = learned.keys().filter(|k| !here(k)).count();
        let gpu = format!("{} (sm_{})", l.device.name, l.device.sm_arch);
        match (found.is_empty(), elsewhere) {
            (false, 0) => log::info!(
                "learned grids: {} for this program's kernels on this GPU, {gpu} ({ENV_LOG}=info says which launches get them; {ENV_CACHE}=off runs without)",
                found.join(", ")
            ),
            (false, _) => log::info!(
                "learned grids: {} for this program's kernels on this GPU, {gpu}, and {elsewhere} for another GPU, not used here ({ENV_LOG}=info says which launches get them; {ENV_CACHE}=off runs without)",
                found.join(", ")
            ),
            (true, _) => log::info!(
                "learned grids: none for this GPU, {gpu}: the {elsewhere} read for this program's kernels were measured on another GPU; tuning on this one learns its own"
            ),
        }
    }

    /// The first launch of `l`'s class: its learned grid, the one of a
    /// record for any build first, and whether its build's record was
    /// verified.
    fn lookup(&self, l: &Launch<'_>) -> Class {
        let key = Key::of_launch(l);
        let learned = crate::read_lock(&self.learned);
        let own = learned.get(&key);
        Class {
            grid: learned.get(&key.any_build()).or(own).map(|r| r.grid),
            verified: own.is_some_and(|r| r.verified),
            launched: 0,
        }
    }
}

impl GridPolicy for LearnedPolicy {
    /// Reads the records of `kernels` from the stores: at registration,
    /// off every launch. A record applies to launches of LLVM
    /// `llvm_release` where it was measured under the same major version, or
    /// either is unknown.
    fn prepare(&self, kernels: &[&KernelDesc], llvm_release: LlvmRelease) {
        let same_llvm =
            |major: u32| major == 0 || llvm_release.major() == 0 || major == llvm_release.major();
        let only = Only::kernels(kernels.iter().map(|k| k.name.as_str()));
        let builds: HashMap<&str, Vec<&str>> =
            kernels.iter().fold(HashMap::new(), |mut builds, k| {
                builds
                    .entry(k.name.as_str())
                    .or_default()
                    .push(k.build.as_str());
                builds
            });
        let mut ignored = 0usize;
        for (index, store) in self.stores.iter().enumerate() {
            let contents = match store.load_only(&only) {
                Ok(contents) => contents,
                Err(e) => {
                    if self.said_trouble.first(index) {
                        log::warn!(
                            "learned grids: store {}: {e}; not read (auto chooses every grid)",
                            store.location()
                        );
                    }
                    continue;
                }
            };
            if !contents.dropped.is_empty() && self.said_trouble.first(index) {
                log::warn!(
                    "learned grids: store {}: {}; the rest is read (the next tuning run sets them aside)",
                    store.location(),
                    dropped_summary(&contents.dropped)
                );
            }
            let mut table = crate::write_lock(&self.learned);
            for record in contents.table.records() {
                let Some(c) = learned(record) else {
                    continue;
                };
                // A pinned record without a build pins every build.
                let any_build = record.key.build.is_empty() && record.pinned.is_some();
                let this_build = any_build
                    || builds
                        .get(record.key.kernel.as_str())
                        .is_some_and(|b| b.contains(&record.key.build.as_str()));
                if !this_build || !same_llvm(record.llvm_release) {
                    ignored += 1;
                    continue;
                }
                // The user's store comes first and keeps its grid.
                if !table.contains_key(&record.key) {
                    let read = Read {
                        grid: c,
                        store: index,
                        // Verified for its own build alone, and for the
                        // grid it verified.
                        verified: !record.key.build.is_empty() && record.verified == Some(c),
                    };
                    table.insert(record.key.clone(), read);
                    self.any.store(true, Ordering::Release);
                }
            }
        }
        if ignored > 0 && self.said_ignored.first(()) {
            log::info!(
                "learned grids: {ignored} settled searches of this program's kernels were measured on another build of it or another LLVM: ignored; tuning this build learns its own"
            );
        }
    }

    fn verified(&self, l: &Launch<'_>) -> bool {
        self.any.load(Ordering::Acquire)
            && self
                .launches
                .with(l, || self.lookup(l), |class| class.verified)
                .unwrap_or(false)
    }

    fn decide(&self, l: &Launch<'_>) -> Option<Proposal> {
        let learned = self
            .any
            .load(Ordering::Acquire)
            .then(|| {
                self.launches.with(
                    l,
                    || self.lookup(l),
                    |class| {
                        let j = class.launched;
                        if j == 0 {
                            self.say_read(l);
                        }
                        class.launched += 1;
                        class
                            .grid
                            .filter(|_| self.alternate.is_none_or(|at| at.learned_at(j)))
                    },
                )
            })
            .flatten()
            .flatten()
            .and_then(|c| resolve(c, l.device, l.kernel, &l.desc));
        Some(match learned {
            Some(grid) => Proposal {
                label: Some(LEARNED_LABEL),
                ..Proposal::new(grid, Rule::Learned)
            },
            None => {
                let (grid, rule) = chunked::grid(l.device, l.kernel, &l.desc);
                Proposal::new(grid, rule)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceDesc;
    use crate::geometry::{Geometry, LaunchDesc};
    use crate::tune::search::Kind;
    use crate::tune::store::{Contents, StoreError, Table, Update};
    use std::time::Duration;

    /// A store in memory, which must never be written.
    struct Memory(Table);

    impl Store for Memory {
        fn location(&self) -> String {
            "memory".into()
        }
        fn load(&self) -> Result<Contents, StoreError> {
            Ok(Contents {
                table: self.0.clone(),
                ..Contents::default()
            })
        }
        fn store(&self, _: &[Update], _: Duration) -> Result<(), StoreError> {
            panic!("a production run wrote a store")
        }
    }

    const FAST: Candidate = Candidate::Move {
        threads: 64,
        blocks_log2: 1,
    };

    fn kernel(build: &str) -> KernelDesc {
        KernelDesc {
            build: build.into(),
            ..KernelDesc::spmd_for_tests(128)
        }
    }

    /// A search of `kernel` measured warm, `FAST` well ahead of auto's grid.
    fn measured(kernel: &KernelDesc, device: &DeviceDesc, trip: u64, settled: bool) -> Update {
        let key = Key::for_trip(
            &kernel.name,
            &device.name,
            device.sm_arch,
            trip,
            &kernel.build,
        );
        let mut u = Update::new(key);
        (u.tally.runs, u.tally.launches_per_run, u.llvm_release) = (1, 20, 19);
        u.settled = [false, settled];
        for ns in [5000, 5010, 4990] {
            u.samples.push((Candidate::Auto, Kind::Warm, ns));
            u.samples.push((FAST, Kind::Warm, ns / 2));
        }
        u
    }

    /// `policy`'s proposal for a launch to LLVM 19's libomptarget, the
    /// release the records are measured under.
    fn decide(
        policy: &LearnedPolicy,
        kernel: &KernelDesc,
        device: &DeviceDesc,
        trip: u64,
    ) -> Proposal {
        decide_under(LlvmRelease::new(19), policy, kernel, device, trip)
    }

    fn decide_under(
        llvm_release: LlvmRelease,
        policy: &LearnedPolicy,
        kernel: &KernelDesc,
        device: &DeviceDesc,
        trip: u64,
    ) -> Proposal {
        policy.prepare(&[kernel], llvm_release);
        let launch = Launch {
            kernel_serial: 1,
            kernel_name: &kernel.name,
            kernel,
            device_id: 0,
            device,
            desc: LaunchDesc {
                llvm_release,
                ..LaunchDesc::open(trip)
            },
            timed: true,
        };
        policy.decide(&launch).unwrap()
    }

    #[test]
    fn a_settled_search_gives_its_leader_and_an_unsettled_one_nothing() {
        let device = DeviceDesc::preset("h100").unwrap();
        let k = kernel("00000000000000b1");
        let mut record = Record::new(Key::for_trip("k", "d", 90, 1, ""));
        record.merge(&measured(&k, &device, 1000, true));
        assert_eq!(learned(&record), Some(FAST));
        let mut unsettled = Record::new(record.key.clone());
        unsettled.merge(&measured(&k, &device, 1000, false));
        assert_eq!(learned(&unsettled), None);
        // Pinned: the pinned grid, settled or not.
        unsettled.pinned = Some(Candidate::Grid(Geometry::new(32, 7)));
        assert_eq!(learned(&unsettled), unsettled.pinned);
        // Settled without a sample of its kind: nothing learned.
        let mut empty = Record::new(record.key.clone());
        empty.tally.launches_per_run = 20;
        empty.search.settled = [true, true];
        assert_eq!(learned(&empty), None);
    }

    #[test]
    fn production_launches_the_grid_a_sessions_close_call_settled_on() {
        // PRK nstream on the H100 (NOTES §52): the fast grid 1.7 % faster
        // than auto's over 8 samples to 6, both quiet; a session takes it
        // at 1.5 standard errors (2.0 % at online `tune`'s two).
        let mut record = Record::new(Key::for_trip("k", "d", 90, 1, ""));
        record.tally.launches_per_run = 100;
        record.search = Search::new(vec![Candidate::Auto, FAST]);
        let jitter = [-1i64, 1, 0, 1, -1, 0, 1, -1];
        for (i, centre, n) in [(0, 350_000, 6), (1, 344_050, 8)] {
            for d in &jitter[..n] {
                record
                    .search
                    .record(i, Kind::Warm, (centre + d) as u64, true);
            }
        }
        record.search.settle(Kind::Warm);
        assert_eq!(learned(&record), Some(FAST));
        let online = Search {
            exploring: Exploring::Bounded,
            ..record.search.clone()
        };
        assert_eq!(online.leader(Kind::Warm), 0);
    }

    #[test]
    fn launches_of_the_same_build_and_llvm_get_the_learned_grid_labelled_learned() {
        let device = DeviceDesc::preset("h100").unwrap();
        let (k, trip) = (kernel("00000000000000b1"), 100_000);
        let mut table = Table::default();
        table.apply(&measured(&k, &device, trip, true));
        let learned_grid = resolve(FAST, &device, &k, &LaunchDesc::open(trip)).unwrap();
        let (auto_grid, _) = chunked::grid(&device, &k, &LaunchDesc::open(trip));
        assert_ne!(learned_grid, auto_grid);

        let policy = LearnedPolicy::new(vec![Box::new(Memory(table.clone()))]);
        let p = decide(&policy, &k, &device, trip);
        assert_eq!(
            (p.grid, p.rule, p.label),
            (learned_grid, Rule::Learned, Some(LEARNED_LABEL))
        );
        // Another trip-count class, build or LLVM: auto's static rule.
        assert_eq!(decide(&policy, &k, &device, 10).label, None);
        let other = LearnedPolicy::new(vec![Box::new(Memory(table.clone()))]);
        let p = decide(&other, &kernel("00000000000000b2"), &device, trip);
        assert_eq!((p.grid, p.label), (auto_grid, None));
        let other_llvm = LearnedPolicy::new(vec![Box::new(Memory(table.clone()))]);
        let llvm_22 = LlvmRelease::new(22);
        assert_eq!(
            decide_under(llvm_22, &other_llvm, &k, &device, trip).label,
            None
        );
        // An unknown LLVM on either side cannot tell: the grid applies.
        let unknown = LearnedPolicy::new(vec![Box::new(Memory(table))]);
        assert_eq!(
            decide_under(LlvmRelease::UNKNOWN, &unknown, &k, &device, trip).grid,
            learned_grid
        );
    }

    #[test]
    fn alternating_launches_the_learned_grid_at_each_searchs_odd_or_even_launches() {
        let device = DeviceDesc::preset("h100").unwrap();
        let (k, trip) = (kernel("00000000000000b1"), 100_000);
        let mut table = Table::default();
        table.apply(&measured(&k, &device, trip, true));
        table.apply(&measured(&k, &device, 10, true));
        let alternating =
            |at| LearnedPolicy::new(vec![Box::new(Memory(table.clone()))]).alternating(Some(at));
        let labels = |policy: &LearnedPolicy, trip| -> Vec<Option<&str>> {
            (0..5)
                .map(|_| decide(policy, &k, &device, trip).label)
                .collect()
        };
        let learned = Some(LEARNED_LABEL);
        let odd = alternating(LearnedLaunches::Odd);
        assert_eq!(labels(&odd, trip), [None, learned, None, learned, None]);
        // Another trip-count class counts its own launches.
        assert_eq!(labels(&odd, 10), [None, learned, None, learned, None]);
        assert_eq!(decide(&odd, &k, &device, trip).label, learned);
        // The even side: the cold first launch stays auto's.
        let even = alternating(LearnedLaunches::Even);
        assert_eq!(labels(&even, trip), [None, None, learned, None, learned]);
        // Confirmation runs take the sides in turn.
        let sides: Vec<_> = (1..=4).map(LearnedLaunches::of_run).collect();
        use LearnedLaunches::{Even, Odd};
        assert_eq!(sides, [Odd, Even, Odd, Even]);
        // Without the setting, every launch gets the learned grid.
        let production = LearnedPolicy::new(vec![Box::new(Memory(table))]);
        for _ in 0..3 {
            assert_eq!(decide(&production, &k, &device, trip).label, learned);
        }
    }

    #[test]
    fn the_first_store_with_a_learned_grid_gives_it() {
        let device = DeviceDesc::preset("h100").unwrap();
        let (k, trip) = (kernel("00000000000000b1"), 100_000);
        let mut site = Table::default();
        site.apply(&measured(&k, &device, trip, true));
        let mut user = Table::default();
        let mut pinned = measured(&k, &device, trip, true);
        pinned.pinned = Some(Candidate::Grid(Geometry::new(32, 7)));
        user.apply(&pinned);
        let both = LearnedPolicy::new(vec![
            Box::new(Memory(user.clone())),
            Box::new(Memory(site.clone())),
        ]);
        assert_eq!(decide(&both, &k, &device, trip).grid, Geometry::new(32, 7));
        let site_only = LearnedPolicy::new(vec![
            Box::new(Memory(Table::default())),
            Box::new(Memory(site)),
        ]);
        let fast = resolve(FAST, &device, &k, &LaunchDesc::open(trip)).unwrap();
        assert_eq!(decide(&site_only, &k, &device, trip).grid, fast);
    }
}
