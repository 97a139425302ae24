//! `tune`'s store written by a thread of its own, never by a launch.
//!
//! A write of the store takes its lock and appends the updates to its
//! journal, then fsyncs (see `files::StoreFile`), and now and then merges
//! the journal into the file, which re-reads, re-parses and rewrites all of
//! it: near the store's 4 MiB cap 112-119 ms in a release build, about 1 s
//! in a debug build on a 2-core VM, and every write did that before the
//! journal. None of it belongs on the launch thread where a search
//! settled. [`StoreWriter`] takes the update instead (a push onto a queue
//! under a lock held for no I/O) and wakes its writer thread, spawned at
//! the first update, once per process; the thread writes the queue at
//! once the first time (a process killed later keeps that much), then at
//! most once per [`SAVE_INTERVAL`]. A store whose load asks for upkeep
//! (`Store::upkeep_due`: a long journal to merge) gets the thread at its
//! load, which does it at once, during the program's run rather than at
//! its exit. At exit ([`Saver::flush`], from `__tgt_unregister_lib`, on
//! whichever thread calls `exit`) the writer writes what is left without
//! waiting for the interval, and the exit waits for it at most
//! [`EXIT_PATIENCE`]; a write still going on then is abandoned with the
//! process, with one warning (an append is cut off by the next writer, a
//! rewrite is atomic: the store keeps its last complete version).
//!
//! A process that forks: the child has the parent's queue but not its
//! thread. The queued updates are the parent's to write, so the child
//! drops them and starts over with a queue and (at its first update) a
//! writer thread of its own: it never waits for the parent's.

use crate::Reported;
use crate::tune::store::{Contents, StoreError, Update};
use crate::tune::{Saver, Store};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a running process writes the store, after its first write.
/// Off the launch threads a write costs the program no launch time, but it
/// still costs a core (a rewrite of the store 112-119 ms near its cap in a
/// release build) and takes the store's lock: a solver's shrinking loops
/// settle a search per trip-count class (gramschmidt settled 17 per run on
/// the H100, bench/results/h100/NOTES.md §15). A process ends with a write
/// anyway; the ones before keep what a run learned if it is killed before
/// its exit.
pub const SAVE_INTERVAL: Duration = Duration::from_secs(10);

/// How long the exit waits for the writer: long enough for dozens of
/// processes ending together to take their turns at the store's lock (each
/// holds it for an append to the journal and an fsync, a few ms; the test
/// `thirty_two_processes_on_a_store_at_its_cap_lose_nothing_and_stall_no_launch`
/// runs 32 at the store's cap), and for a rewrite of the store where one is
/// due; short enough that a stopped process cannot hang the program's exit.
pub const EXIT_PATIENCE: Duration = Duration::from_secs(5);

/// The store file behind a writer thread ([`Saver`]).
pub struct StoreWriter {
    shared: Arc<Shared>,
}

/// What the writer thread and the threads handing it updates share.
struct Shared {
    store: Box<dyn Store>,
    interval: Duration,
    state: Mutex<State>,
    /// Signalled when the queue grows, the exit begins or a write ends.
    changed: Condvar,
}

/// The writer's state: held under its lock only to push, take or put back
/// updates, never during I/O, so a launch never waits for a write.
#[derive(Default)]
struct State {
    /// The process this state belongs to (see the module documentation on
    /// fork).
    pid: u32,
    /// Updates not yet in the file.
    queue: Vec<Update>,
    /// The store's upkeep is due ([`Store::upkeep_due`]): a write is, even
    /// of no updates.
    upkeep: bool,
    /// A writer thread runs in this process.
    thread: bool,
    /// The writer thread has taken a batch off the queue and is writing it.
    writing: bool,
    /// When the writer last tried to write; `None` before its first try,
    /// so that the first update is written at once.
    last_write: Option<Instant>,
    /// Set by the exit's flush: until when it waits for the writer, which
    /// writes what is left at once and then ends.
    exit_deadline: Option<Instant>,
    /// Causes of failed writes already logged: one line per cause.
    reported: Reported<String>,
}

impl StoreWriter {
    /// `store` written at most once per [`SAVE_INTERVAL`].
    pub fn new(store: Box<dyn Store>) -> Self {
        Self::with_interval(store, SAVE_INTERVAL)
    }

    /// `store` written at most once per `interval`.
    pub fn with_interval(store: Box<dyn Store>, interval: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                interval,
                state: Mutex::default(),
                changed: Condvar::new(),
            }),
        }
    }
}

impl Shared {
    /// The state, started over in a forked child.
    fn state(&self) -> MutexGuard<'_, State> {
        let mut state = crate::lock(&self.state);
        let pid = std::process::id();
        if state.pid != pid {
            *state = State {
                pid,
                ..State::default()
            };
        }
        state
    }

    /// The writer thread's loop: waits for updates, writes them no more
    /// often than the interval allows (at once after the exit began), and
    /// ends once the exit's updates are written or could not be.
    fn run(&self) {
        let mut state = self.state();
        loop {
            let now = Instant::now();
            let due = match (state.exit_deadline, state.last_write) {
                (Some(_), _) | (None, None) => now,
                (None, Some(last)) => last + self.interval,
            };
            let pending = !state.queue.is_empty() || state.upkeep;
            if !pending || now < due {
                if state.exit_deadline.is_some() {
                    break;
                }
                state = if !pending {
                    self.changed.wait(state).unwrap_or_else(|p| p.into_inner())
                } else {
                    self.changed
                        .wait_timeout(state, due - now)
                        .map_or_else(|p| p.into_inner().0, |(s, _)| s)
                };
                continue;
            }
            let batch = std::mem::take(&mut state.queue);
            state.upkeep = false;
            let patience = state
                .exit_deadline
                .map_or(EXIT_PATIENCE, |d| d.saturating_duration_since(now));
            state.writing = true;
            drop(state);
            let written = crate::guard::boundary(|| self.write(&batch, patience));
            state = self.state();
            state.writing = false;
            if !batch.is_empty() {
                // Upkeep alone (at the load) leaves the first update's
                // write at once.
                state.last_write = Some(Instant::now());
            }
            match written {
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    let mut batch = batch;
                    batch.append(&mut state.queue);
                    state.queue = batch;
                    self.report(&mut state, &e);
                    if state.exit_deadline.is_some() {
                        // Left to the exit's own try, within its patience.
                        break;
                    }
                }
                // A panic (reported by the boundary): the batch is dropped
                // rather than retried into the same panic.
                None => {}
            }
            self.changed.notify_all();
        }
        state.thread = false;
        self.changed.notify_all();
    }

    /// Writes `batch`, waiting at most `patience` for the store's lock.
    fn write(&self, batch: &[Update], patience: Duration) -> Result<(), StoreError> {
        let start = Instant::now();
        self.store.store(batch, patience)?;
        log::debug!(
            "tune: store {}: saved {} updates in {} us",
            self.store.location(),
            batch.len(),
            start.elapsed().as_micros()
        );
        Ok(())
    }

    /// Logs a failed write, once per cause.
    fn report(&self, state: &mut State, e: &StoreError) {
        if state.reported.first(e.to_string()) {
            log::warn!(
                "tune: cannot save to the store {}: {e}",
                self.store.location()
            );
        }
    }
}

impl Store for StoreWriter {
    fn location(&self) -> String {
        self.shared.store.location()
    }

    /// The store's contents; upkeep it asks for is done at once, by the
    /// writer thread.
    fn load(&self) -> Result<Contents, StoreError> {
        let contents = self.shared.store.load()?;
        if self.shared.store.upkeep_due() {
            let mut state = self.shared.state();
            state.upkeep = true;
            self.wake(state);
        }
        Ok(contents)
    }

    fn store(&self, updates: &[Update], patience: Duration) -> Result<(), StoreError> {
        self.shared.store.store(updates, patience)
    }

    fn upkeep_due(&self) -> bool {
        self.shared.store.upkeep_due()
    }
}

impl StoreWriter {
    /// Wakes the writer thread for what `state` holds, spawning it if there
    /// is none yet.
    fn wake(&self, mut state: MutexGuard<'_, State>) {
        if state.thread || state.exit_deadline.is_some() {
            self.shared.changed.notify_all();
            return;
        }
        state.thread = true;
        drop(state);
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("gridsel-store".into())
            .spawn(move || shared.run());
        if let Err(e) = spawned {
            // Everything stays queued for the exit's flush.
            let mut state = self.shared.state();
            state.thread = false;
            let cause = format!("no thread to write it while the program runs ({e})");
            if state.reported.first(cause.clone()) {
                log::warn!(
                    "tune: store {}: {cause}; written at exit",
                    self.shared.store.location()
                );
            }
        }
    }
}

impl Saver for StoreWriter {
    fn now(&self) -> u64 {
        crate::files::unix_seconds()
    }

    fn save(&self, update: Update) {
        let mut state = self.shared.state();
        state.queue.push(update);
        self.wake(state);
    }

    fn flush(&self, updates: Vec<Update>) {
        let deadline = Instant::now() + EXIT_PATIENCE;
        let shared = &self.shared;
        let mut state = shared.state();
        state.queue.extend(updates);
        state.exit_deadline = Some(deadline);
        shared.changed.notify_all();
        // The writer thread, if any, writes the rest at once.
        while state.thread {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = shared
                .changed
                .wait_timeout(state, deadline - now)
                .map_or_else(|p| p.into_inner().0, |(s, _)| s);
        }
        if state.queue.is_empty() && !state.writing {
            return;
        }
        if state.writing {
            // Abandoned with the process mid-write (waiting for another
            // process's lock, or a slow disk): the store keeps its last
            // complete version, without this process's last updates.
            log::warn!(
                "tune: the store {} was still being written when the program ended ({} s later); this run's last measurements are not in it",
                shared.store.location(),
                EXIT_PATIENCE.as_secs()
            );
            return;
        }
        // No writer thread (none was needed, or it gave up on a busy
        // store): this thread writes, within what is left of the patience.
        let batch = std::mem::take(&mut state.queue);
        drop(state);
        let patience = deadline.saturating_duration_since(Instant::now());
        if let Err(e) = shared.write(&batch, patience) {
            shared.report(&mut shared.state(), &e);
        }
    }
}

impl Drop for StoreWriter {
    /// Lets the writer thread end (once it wrote what is queued); it is not
    /// waited for.
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state
            .exit_deadline
            .get_or_insert(Instant::now() + EXIT_PATIENCE);
        self.shared.changed.notify_all();
    }
}
