//! The store as one process uses it: the traits the host side implements
//! ([`Store`], [`Saver`]), and the records read once.
//!
//! The records read once (a [`Session`]'s `OnceLock`) are the learning
//! policy's own state, as its searches are, so they live here with it; the
//! file, its lock, the writer thread and the clock stay on the host side,
//! reached only through the two traits (`gridsel-host`'s `files::StoreFile`,
//! the preload library's `writer::StoreWriter`). Core keeps no clock and
//! opens no file.

use super::Clock;
use super::prior::learned_moves;
use super::search::Candidate;
use super::store::{self, Table, Update};
use crate::device::DeviceDesc;
use crate::env::ENV_CACHE;
use crate::libomptarget::LlvmRelease;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The store's records, read once, and whether updates go to it.
pub(super) struct Loaded {
    pub(super) table: Table,
    /// False without a store, or when the file could not be read, is not
    /// a gridsel store or was written by a newer gridsel: then it is left
    /// as it is.
    save: bool,
    /// [`learned_moves`] per device (name, sm), worked out at the device's
    /// first search: the table does not change within the process.
    learned: Mutex<Vec<(String, u32, Vec<Candidate>)>>,
}

impl Loaded {
    fn new(table: Table, save: bool) -> Self {
        Self {
            table,
            save,
            learned: Mutex::default(),
        }
    }

    pub(super) fn learned_moves(&self, device: &DeviceDesc) -> Vec<Candidate> {
        let mut learned = crate::lock(&self.learned);
        if let Some((_, _, moves)) = learned
            .iter()
            .find(|(name, sm, _)| *name == device.name && *sm == device.sm_arch)
        {
            return moves.clone();
        }
        let moves = learned_moves(&self.table, device);
        learned.push((device.name.clone(), device.sm_arch, moves.clone()));
        moves
    }
}

/// Where `tune` keeps its searches across runs; the `GRIDSEL_CACHE` file
/// (`gridsel-host`'s `files::StoreFile`) implements it.
pub trait Store: Send + Sync {
    /// What to call it in the log (the file's path).
    fn location(&self) -> String;
    /// Every record stored that validates, and what was dropped; empty
    /// when there is nothing yet.
    fn load(&self) -> Result<store::Contents, store::StoreError>;
    /// [`Self::load`] for a reader that needs only `only`'s kernels, and
    /// never writes: the records of other kernels may be skipped unread
    /// ([`store::parse_only`]).
    fn load_only(&self, only: &store::Only) -> Result<store::Contents, store::StoreError> {
        let mut contents = self.load()?;
        contents.table.retain(|r| only.wants_kernel(&r.key.kernel));
        Ok(contents)
    }
    /// Adds `updates`, waiting at most `patience` for other writers (then
    /// [`store::StoreError::Busy`]); and the upkeep the last load asked
    /// for ([`Self::upkeep_due`]), even with no updates.
    fn store(&self, updates: &[Update], patience: Duration) -> Result<(), store::StoreError>;
    /// Whether the last [`Self::load`] found the store in want of upkeep
    /// that its next [`Self::store`] does, and which had better not wait
    /// for the process's exit: the store file's journal long enough to be
    /// merged into it, or entries left out to be set aside.
    fn upkeep_due(&self) -> bool {
        false
    }
}

/// A [`Store`] that takes a running process's updates without making the
/// caller wait: the preload library's store writer (`writer::StoreWriter`),
/// which writes them on a thread of its own. A write appends to the store
/// file's journal and fsyncs it, and now and then rewrites the whole file
/// (near the store's 4 MiB cap 112-119 ms in a release build, about 1 s in
/// a debug build on a 2-core VM): a launch thread must spend neither.
pub trait Saver: Store {
    /// Takes `update` to be written soon, off the calling thread (a launch
    /// thread, at the launch where a search settled); returns at once.
    fn save(&self, update: Update);
    /// The process ends: writes what [`Self::save`] took and has not
    /// written yet, and `updates`, waiting a bounded time for the store.
    fn flush(&self, updates: Vec<Update>);
    /// The time updates are stamped with now
    /// ([`Tally::used`](super::store::Tally::used); seconds since the Unix
    /// epoch): the clock is the store's, as the searches' age is theirs.
    fn now(&self) -> u64;
}

/// The store as one process uses it: read once, when a binary registers
/// ([`GridPolicy::prepare`]; else at the first search), and written through
/// its [`Saver`]: a search that settles after this process measured it
/// ([`Learner::take_measured`]) is handed over at the launch where it
/// settled, the rest at exit ([`GridPolicy::flush`]).
pub(super) struct Session {
    store: Option<Box<dyn Saver>>,
    records: OnceLock<Loaded>,
    /// The LLVM major version of the libomptarget the searches' launches
    /// go to (0: unknown), which every update carries to its record
    /// ([`store::Record::llvm_release`]): one libomptarget per process,
    /// told by each search's first launch ([`Self::launches_go_to`]).
    llvm_release: AtomicU32,
    /// What this process times its launches with, which every update
    /// carries to its record ([`store::Record::clock`]).
    pub(super) clock: Clock,
}

impl Session {
    pub(super) fn new(store: Option<Box<dyn Saver>>) -> Self {
        Self {
            store,
            records: OnceLock::new(),
            llvm_release: AtomicU32::new(0),
            clock: Clock::Host,
        }
    }

    /// A search starts with a launch to the libomptarget of `llvm_release`.
    pub(super) fn launches_go_to(&self, llvm_release: LlvmRelease) {
        self.llvm_release
            .store(llvm_release.major(), Ordering::Relaxed);
    }

    /// The store, read once; a file that cannot be used is one warning and
    /// an empty table.
    pub(super) fn loaded(&self) -> &Loaded {
        self.records.get_or_init(|| {
            let Some(store) = &self.store else {
                return Loaded::new(Table::default(), false);
            };
            let (table, save) = match store.load() {
                Ok(contents) => {
                    log::info!(
                        "tune: store {}: {} searches ({ENV_CACHE}=off runs without one)",
                        store.location(),
                        contents.table.len()
                    );
                    if !contents.dropped.is_empty() {
                        log::warn!(
                            "tune: store {}: {}; the rest is used, and the file as it is now is kept as {}.bad ({}.journal.bad for journal lines) when the store is next written",
                            store.location(),
                            dropped_summary(&contents.dropped),
                            store.location(),
                            store.location()
                        );
                    }
                    (contents.table, true)
                }
                Err(e @ store::StoreError::NotAStore(_)) => {
                    log::warn!(
                        "tune: store {}: {e}; neither read nor written (does {ENV_CACHE} name the right file?)",
                        store.location()
                    );
                    (Table::default(), false)
                }
                Err(e) => {
                    log::warn!(
                        "tune: store {}: {e}; ignored (not read or written)",
                        store.location()
                    );
                    (Table::default(), false)
                }
            };
            Loaded::new(table, save)
        })
    }

    /// The store's clock ([`Saver::now`]); 0 without a store, whose
    /// updates go nowhere.
    pub(super) fn now(&self) -> u64 {
        self.store.as_deref().map_or(0, |store| store.now())
    }

    /// Hands an update to the store's writer; returns the end of the log
    /// line that says so.
    pub(super) fn save(&self, update: Update) -> String {
        let Some(store) = self.store.as_deref().filter(|_| self.loaded().save) else {
            return String::new();
        };
        store.save(Update {
            llvm_release: self.llvm_release.load(Ordering::Relaxed),
            clock: self.clock,
            ..update
        });
        format!("; queued for {}", store.location())
    }

    /// Writes `updates` and whatever is still queued (at exit, never on a
    /// launch thread).
    pub(super) fn flush(&self, updates: Vec<Update>) {
        if let Some(store) = self.store.as_deref().filter(|_| self.loaded().save) {
            let llvm_release = self.llvm_release.load(Ordering::Relaxed);
            store.flush(
                updates
                    .into_iter()
                    .map(|u| Update {
                        llvm_release,
                        clock: self.clock,
                        ..u
                    })
                    .collect(),
            );
        }
    }
}

/// What a store left out, for one line: the first few entries, and how
/// many more.
pub(super) fn dropped_summary(dropped: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut text = format!(
        "left out: {}",
        dropped[..dropped.len().min(SHOWN)].join("; ")
    );
    if dropped.len() > SHOWN {
        text += &format!("; and {} more records", dropped.len() - SHOWN);
    }
    text
}
