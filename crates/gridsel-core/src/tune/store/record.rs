//! A record, one process's update to it, and a record's fields in the file.

use super::{Key, later_use};
use crate::tune::Clock;
use crate::tune::search::{Candidate, Kind, Samples, Search};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// How a search's kernel was launched, as a [`Record`] sums it over
/// processes and an [`Update`] tells it for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The smallest and largest trip counts launched.
    pub trips: (u64, u64),
    /// When a process last added to it (seconds since the Unix epoch).
    pub used: u64,
    /// Processes that launched the kernel in this class (in an update: 1
    /// for the process's first update of the record, else 0).
    pub runs: u32,
    /// Most launches one process made.
    pub launches_per_run: u32,
}

impl Tally {
    /// Nothing launched yet.
    pub const NONE: Self = Self {
        trips: (u64::MAX, 0),
        used: 0,
        runs: 0,
        launches_per_run: 0,
    };

    /// Adds one process's tally.
    fn add(&mut self, u: &Tally) {
        self.trips = (self.trips.0.min(u.trips.0), self.trips.1.max(u.trips.1));
        self.used = later_use(self.used, u.used);
        self.runs = self.runs.saturating_add(u.runs);
        self.launches_per_run = self.launches_per_run.max(u.launches_per_run);
    }
}

/// One search as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub key: Key,
    pub tally: Tally,
    /// The major version of the libomptarget of the last process that
    /// added to it; 0 where unknown.
    pub llvm_release: u32,
    /// A grid every launch gets, no search (a store written from a sweep's
    /// best grids).
    pub pinned: Option<Candidate>,
    /// The grid a `gridsel tune --allow-teams-regions` session verified
    /// for a `target teams` region without a distribute loop (class 0) of
    /// this build: every run's output unchanged with it. Production
    /// launches it under `GRIDSEL_TEAMS_REGIONS=keep` while it is the
    /// search's learned grid ([`super::super::learned`]). Written only when set.
    pub verified: Option<Candidate>,
    pub search: Search,
    /// What timed the search's samples: a process timing with another
    /// clock adds none to them ([`super::super::TunePolicy`]).
    pub clock: Clock,
    /// Exploring allowance online `tune` banked for this search's later
    /// runs, in ns (negative: owed): [`super::super::Allowance`].
    pub credit: i64,
    /// Fields of the record this gridsel does not know, kept as they were
    /// (a newer gridsel of the same format version may add some).
    pub unknown: Map<String, Value>,
}

impl Record {
    pub fn new(key: Key) -> Self {
        Self {
            key,
            tally: Tally::NONE,
            llvm_release: 0,
            pinned: None,
            verified: None,
            search: Search::default(),
            clock: Clock::Host,
            credit: 0,
            unknown: Map::new(),
        }
    }

    /// Whether any candidate has a sample.
    pub fn measured(&self) -> bool {
        self.search.samples.iter().any(|s| !s.is_empty())
    }

    /// Adds one process's additions. Samples of another clock than the
    /// record's replace its search (a tuning session timing on the GPU
    /// measures afresh a search timed on the host): the two are never
    /// ranked together.
    pub fn merge(&mut self, u: &Update) {
        if u.clock != self.clock && !u.samples.is_empty() {
            if self.measured() {
                self.search = Search::default();
            }
            self.clock = u.clock;
        }
        self.tally.add(&u.tally);
        if u.llvm_release != 0 {
            self.llvm_release = u.llvm_release;
        }
        for (slot, add) in self.search.explored.iter_mut().zip(u.explored) {
            *slot = slot.saturating_add(add);
        }
        for (slot, done) in self.search.settled.iter_mut().zip(u.settled) {
            *slot |= done;
        }
        for &(c, kind, ns) in &u.samples {
            let i = self.search.index_of(c);
            self.search.samples[i].push(kind, ns);
        }
        if u.pinned.is_some() {
            self.pinned = u.pinned;
        }
        if let Some(verified) = u.verified {
            self.verified = verified;
        }
        self.credit = self.credit.saturating_add(u.credit);
    }

    /// The kind of samples the search ranks by: warm once some process
    /// launched the kernel more than once.
    pub fn kind(&self) -> Kind {
        if self.tally.launches_per_run >= 2 {
            Kind::Warm
        } else {
            Kind::Cold
        }
    }
}

/// What one process adds to a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub key: Key,
    pub tally: Tally,
    /// The process's libomptarget major version (0: unknown, which leaves
    /// the record's as it is).
    pub llvm_release: u32,
    pub explored: [u32; 2],
    /// Kinds whose plan this process saw finish.
    pub settled: [bool; 2],
    pub samples: Vec<(Candidate, Kind, u64)>,
    /// What timed them ([`Record::clock`]).
    pub clock: Clock,
    pub pinned: Option<Candidate>,
    /// The verified mark where a tuning session changed it
    /// ([`Record::verified`]; `Some(None)`: cleared). A journal line, the
    /// record an update makes of none, can carry a mark but not its
    /// clearing: online processes never change it.
    pub verified: Option<Option<Candidate>>,
    /// What the process adds to the record's [`Record::credit`].
    pub credit: i64,
}

impl Update {
    pub fn new(key: Key) -> Self {
        Self {
            key,
            tally: Tally::NONE,
            llvm_release: 0,
            explored: [0; 2],
            settled: [false; 2],
            samples: Vec::new(),
            clock: Clock::Host,
            pinned: None,
            verified: None,
            credit: 0,
        }
    }

    /// What was added to `before` (`None`: no record) to make `after`, the
    /// same search, as an update: applied to `before` it gives `after`
    /// back, and applied to the record the store holds by then it adds
    /// only that, as a journal line does, keeping what others added
    /// meanwhile (a tuning session's delta: it tuned a copy of the store).
    /// Samples are told apart by their order: a kind's list is the old one
    /// with new samples pushed on, its oldest dropped past
    /// [`crate::tune::search::KEEP`], so the new ones are what follows the
    /// longest tail of the old list that the new list starts with.
    /// Counts are differences, `settled`, `pinned` and `verified` count
    /// where they changed, and the tally's times and LLVM are `after`'s.
    /// A record of another clock than `after`'s counts as none: `after`'s
    /// samples replace its search ([`Record::merge`]).
    pub fn between(before: Option<&Record>, after: &Record) -> Self {
        let none = Record::new(after.key.clone());
        let before = before.filter(|b| b.clock == after.clock).unwrap_or(&none);
        let old = |c: Candidate, kind: Kind| {
            let at = before.search.candidates.iter().position(|&x| x == c);
            at.map_or(&[][..], |i| before.search.samples[i].of(kind))
        };
        let mut samples = Vec::new();
        for (&c, s) in after.search.candidates.iter().zip(&after.search.samples) {
            for kind in [Kind::Cold, Kind::Warm] {
                let new = added_samples(old(c, kind), s.of(kind));
                samples.extend(new.iter().map(|&ns| (c, kind, ns)));
            }
        }
        let (b, a) = (&before.search, &after.search);
        Self {
            key: after.key.clone(),
            tally: Tally {
                runs: after.tally.runs.saturating_sub(before.tally.runs),
                ..after.tally
            },
            llvm_release: after.llvm_release,
            explored: [0, 1].map(|i| a.explored[i].saturating_sub(b.explored[i])),
            settled: [0, 1].map(|i| a.settled[i] && !b.settled[i]),
            samples,
            clock: after.clock,
            pinned: after.pinned.filter(|_| after.pinned != before.pinned),
            verified: (after.verified != before.verified).then_some(after.verified),
            credit: after.credit.saturating_sub(before.credit),
        }
    }

    /// Whether it adds anything.
    pub fn is_empty(&self) -> bool {
        self.tally.runs == 0
            && self.samples.is_empty()
            && self.pinned.is_none()
            && self.verified.is_none()
            && self.settled == [false; 2]
            && self.credit == 0
    }
}

/// The samples of `new` pushed on after `old`'s ([`Update::between`]): what
/// follows the longest tail of `old` that `new` starts with (all of `new`
/// where none does: every old sample was pushed out).
fn added_samples<'a>(old: &[u64], new: &'a [u64]) -> &'a [u64] {
    let from = (0..old.len())
        .find(|&from| new.starts_with(&old[from..]))
        .unwrap_or(old.len());
    &new[old.len() - from..]
}

#[derive(Serialize, Deserialize)]
pub(super) struct SamplesFile {
    cold: Vec<u64>,
    warm: Vec<u64>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct RecordFile {
    kernel: String,
    device: String,
    sm_arch: u32,
    class: u32,
    build: String,
    /// Named `llvm` in the file, as every store has been written.
    #[serde(rename = "llvm")]
    llvm_release: u32,
    trips: [u64; 2],
    used: u64,
    runs: u32,
    launches_per_run: u32,
    explored: [u32; 2],
    settled: [bool; 2],
    pinned: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verified: Option<String>,
    grids: BTreeMap<String, SamplesFile>,
    /// Absent for the host clock, as every store before it was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    clock: Option<String>,
    /// Absent where 0: stores written before it are read as they were.
    #[serde(default, skip_serializing_if = "is_zero")]
    credit: i64,
    /// Fields this gridsel does not know (a newer one of the same version
    /// wrote them): kept, and written back.
    #[serde(flatten)]
    unknown: Map<String, Value>,
}

fn is_zero(credit: &i64) -> bool {
    *credit == 0
}

impl RecordFile {
    pub(super) fn from_record(r: &Record) -> Self {
        let grids = r
            .search
            .candidates
            .iter()
            .zip(&r.search.samples)
            .filter(|(_, s)| !s.is_empty())
            .map(|(c, s)| {
                (
                    c.to_string(),
                    SamplesFile {
                        cold: s.cold.clone(),
                        warm: s.warm.clone(),
                    },
                )
            })
            .collect();
        Self {
            kernel: r.key.kernel.clone(),
            device: r.key.device.clone(),
            sm_arch: r.key.sm_arch,
            class: r.key.class,
            build: r.key.build.clone(),
            llvm_release: r.llvm_release,
            trips: [r.tally.trips.0, r.tally.trips.1],
            used: r.tally.used,
            runs: r.tally.runs,
            launches_per_run: r.tally.launches_per_run,
            explored: r.search.explored,
            settled: r.search.settled,
            pinned: r.pinned.map(|c| c.to_string()),
            verified: r.verified.map(|c| c.to_string()),
            grids,
            clock: (r.clock != Clock::Host).then(|| r.clock.name().to_string()),
            credit: r.credit,
            unknown: r.unknown.clone(),
        }
    }

    pub(super) fn into_record(self) -> Result<Record, String> {
        let mut search = Search {
            explored: self.explored,
            settled: self.settled,
            ..Search::default()
        };
        for (name, s) in self.grids {
            if s.cold.len() > crate::tune::search::KEEP || s.warm.len() > crate::tune::search::KEEP
            {
                return Err(format!(
                    "`{name}`: more than {} samples",
                    crate::tune::search::KEEP
                ));
            }
            let candidate = name.parse()?;
            // A candidate without samples says nothing, and is not written
            // back (`from_record`): read as absent, so that a store reads
            // the same after a rewrite.
            if s.cold.is_empty() && s.warm.is_empty() {
                continue;
            }
            let i = search.index_of(candidate);
            search.samples[i] = Samples {
                cold: s.cold,
                warm: s.warm,
            };
        }
        Ok(Record {
            key: Key {
                kernel: self.kernel,
                device: self.device,
                sm_arch: self.sm_arch,
                class: self.class,
                build: self.build,
            },
            llvm_release: self.llvm_release,
            tally: Tally {
                trips: (self.trips[0], self.trips[1]),
                used: self.used,
                runs: self.runs,
                launches_per_run: self.launches_per_run,
            },
            pinned: self.pinned.map(|p| p.parse()).transpose()?,
            verified: self.verified.map(|p| p.parse()).transpose()?,
            search,
            clock: match self.clock {
                None => Clock::Host,
                Some(word) => Clock::named(&word).ok_or_else(|| format!("`{word}` is no clock"))?,
            },
            credit: self.credit,
            unknown: self.unknown,
        })
    }
}
