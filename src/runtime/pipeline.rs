//! The launch pipeline: [`Runtime::launch`] stages a launch (kernel,
//! device, clause rules, the policy's proposal, the one cut to the launch's
//! limits), forwards it, and records it.

use super::log_line::{Decided, describe};
use super::{KernelEntry, Once, Runtime};
use crate::clauses::{self, Keep};
use crate::config::{ENV_LOG, ENV_POLICY, ENV_TUNE_CLOCK};
use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc};
use crate::guard::boundary;
use crate::kernel::KernelDesc;
use crate::lock;
use crate::policy::{Launch, Limits, MAX_LATE_LAUNCHES, Observe, Policy, Proposal, llvm};
use crate::tune::Clock;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One `__tgt_target_kernel` call, as the export read it.
#[derive(Clone, Copy, Debug)]
pub struct LaunchRequest {
    /// The CUDA ordinal the OpenMP device number resolved to.
    pub device_id: i64,
    /// The kernel's host entry address.
    pub host_ptr: usize,
    /// What the program asked, with the libomptarget it goes to
    /// ([`Runtime::llvm_release`]).
    pub desc: LaunchDesc,
    /// The call returns only after the kernel (not `nowait`).
    pub waits: bool,
}

/// One launch staged for the forwarded call: what the pipeline decided to
/// write, and what it records once the call returns.
struct Staged {
    entry: Arc<KernelEntry>,
    /// The index in `entry.descs` of the descriptor the device runs
    /// (`KernelEntry::desc_index`).
    desc_index: usize,
    device: Arc<DeviceDesc>,
    request: LaunchRequest,
    /// `(num_teams, thread_limit)` to write, `None` to forward unchanged.
    write: Option<(i32, i32)>,
    /// The grid launched (as gridsel models it, for LLVM's).
    grid: Geometry,
    /// The profile row's label, when profiling.
    label: Option<Label>,
    /// Hand the launch's time to the policy, and how soon.
    observe: Observe,
}

impl Staged {
    fn kernel(&self) -> &KernelDesc {
        &self.entry.descs[self.desc_index]
    }

    fn launch(&self) -> Launch<'_> {
        Launch {
            kernel_serial: self.entry.serial,
            kernel_name: &self.entry.name,
            kernel: self.kernel(),
            device_id: self.request.device_id,
            device: &self.device,
            desc: self.request.desc,
            timed: self.request.waits,
        }
    }
}

/// Launches timed on the GPU waiting for their kernels' records
/// ([`Runtime::timed`]), and the process's launches counted against the
/// oldest one's: CUPTI keeps the records of every kernel, timed or not, and
/// a flush must come before the waiting launches' records are the oldest of
/// more than it keeps. Generic over what waits, so that when a batch is due
/// is checked on its own.
pub(super) struct Awaiting<T = Waiting> {
    queue: Mutex<VecDeque<(Instant, T)>>,
    /// Held while a batch is timed: batches are timed one at a time, in
    /// the order they were taken, since records are matched to launches by
    /// kernel and grid, oldest first.
    timing: Mutex<()>,
    /// The process's launches on the GPU clock so far.
    launches: AtomicU64,
    /// The launch count at which the queue is due: its oldest launch's
    /// plus [`MAX_AWAITING`]; `u64::MAX` while it is empty.
    due_at: AtomicU64,
}

impl<T> Default for Awaiting<T> {
    fn default() -> Self {
        Self {
            queue: Mutex::default(),
            timing: Mutex::default(),
            launches: AtomicU64::new(0),
            due_at: AtomicU64::new(u64::MAX),
        }
    }
}

impl<T> Awaiting<T> {
    /// Counts a launch of the process, timed or not; true when the waiting
    /// launches are due: [`MAX_AWAITING`] launches came after the oldest.
    fn count_launch(&self) -> bool {
        let launches = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        launches >= self.due_at.load(Ordering::Relaxed)
    }

    /// Queues a launch (after [`Self::count_launch`] counted it); true when
    /// the waiting launches are due: its time is wanted `now`, or
    /// [`MAX_AWAITING`] wait, or the oldest has waited [`MAX_AWAIT`].
    fn push(&self, launch: T, now: bool) -> bool {
        let mut queue = lock(&self.queue);
        if queue.is_empty() {
            let launches = self.launches.load(Ordering::Relaxed);
            self.due_at
                .store(launches + MAX_AWAITING as u64, Ordering::Relaxed);
        }
        queue.push_back((Instant::now(), launch));
        now || queue.len() >= MAX_AWAITING
            || queue
                .front()
                .is_some_and(|(since, _)| since.elapsed() >= MAX_AWAIT)
    }

    /// The waiting launches, in launch order, with the guard that keeps
    /// other batches from being timed until this one is.
    fn take(&self) -> (MutexGuard<'_, ()>, Vec<T>) {
        let timing = lock(&self.timing);
        let mut queue = lock(&self.queue);
        self.due_at.store(u64::MAX, Ordering::Relaxed);
        let batch = queue.drain(..).map(|(_, launch)| launch).collect();
        (timing, batch)
    }
}

/// One launch waiting for its kernel's record.
pub(super) struct Waiting {
    staged: Staged,
    /// The launch call's wall time, for a launch that failed.
    host_ns: u64,
    rc: i32,
}

/// The process's launches, timed or not, after which a waiting launch's
/// record is flushed: a flush every 256 launches at most, about 1 us a
/// launch at 0.26 ms a flush, well within the records CUPTI's side keeps
/// (`MAX_KEPT`), and as late as a policy's [`Observe::Later`] time may
/// come.
const MAX_AWAITING: usize = MAX_LATE_LAUNCHES;

/// How long a launch waits at most before CUPTI is flushed for it, so that
/// a profile's rows come within a fraction of a second.
const MAX_AWAIT: Duration = Duration::from_millis(50);

/// A profile row's label: the policy's name, shared, or a fixed one (`llvm` for
/// LLVM's grid, or one a proposal set).
enum Label {
    Shared(Arc<str>),
    Static(&'static str),
}

impl Label {
    fn as_str(&self) -> &str {
        match self {
            Self::Shared(s) => s,
            Self::Static(s) => s,
        }
    }
}

impl Runtime {
    /// Runs one launch through the pipeline. `forward` makes the real call
    /// with the `(num_teams, thread_limit)` to write, `None` for the
    /// program's own; it runs outside every panic boundary, so the real
    /// runtime's unwinding passes through. Any failure of gridsel's own
    /// forwards the launch unchanged.
    pub fn launch(
        &self,
        request: LaunchRequest,
        forward: impl FnOnce(Option<(i32, i32)>) -> i32,
    ) -> i32 {
        if self.passes_everything() {
            return forward(None);
        }
        let staged = boundary(|| self.stage(request)).flatten();
        // Two atomics, which cannot panic: no boundary on every launch.
        if self.clock == Clock::Gpu && self.awaiting.count_launch() {
            boundary(|| self.time_awaiting());
        }
        let Some(staged) = staged else {
            return forward(None);
        };
        let timed = staged.observe.timed() || staged.label.is_some();
        let start = timed.then(Instant::now);
        let rc = forward(staged.write);
        if let Some(start) = start {
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            boundary(|| self.timed(staged, ns, rc));
        }
        rc
    }

    /// A timed launch's feedback, by the process's clock: at once with
    /// `host_ns`, the launch call's wall time; on the GPU, once its
    /// kernel's record is back. A flush of CUPTI's records costs a wait, so
    /// launches only profiled or observed [`Observe::Later`] wait in
    /// [`Awaiting`] and are timed together (every [`MAX_AWAITING`] launches
    /// or [`MAX_AWAIT`], and at exit), while a launch whose time the policy
    /// needs now ([`Observe::Now`]) flushes them all. A
    /// launch on the GPU clock that did not wait for its kernel (`nowait`)
    /// is not timed: a host time beside the GPU's would rank a grid by the
    /// clock that timed it.
    fn timed(&self, staged: Staged, host_ns: u64, rc: i32) {
        match self.clock {
            Clock::Host => self.finish(&staged, host_ns, rc),
            Clock::Gpu if !staged.request.waits => {}
            Clock::Gpu => {
                let now = staged.observe == Observe::Now;
                let waiting = Waiting {
                    staged,
                    host_ns,
                    rc,
                };
                if self.awaiting.push(waiting, now) {
                    self.time_awaiting();
                }
            }
        }
    }

    /// Flushes CUPTI's records and gives each launch of `batch` its
    /// kernel's time, in launch order; a launch whose record did not come
    /// back is left untimed (one warning per process).
    fn time_on_gpu(&self, batch: Vec<Waiting>) {
        gridsel_host::ffi::cupti::flush();
        for w in batch {
            let (name, grid) = (&w.staged.entry.name, w.staged.grid);
            if w.rc != 0 {
                // A failed launch ranks last whatever its time.
                self.finish(&w.staged, w.host_ns, w.rc);
            } else if let Some(ns) = gridsel_host::ffi::cupti::take(name, grid.blocks, grid.threads)
            {
                self.finish(&w.staged, ns, w.rc);
            } else if self.report_once(Once::NoKernelRecord) {
                log::warn!(
                    "{ENV_TUNE_CLOCK}=gpu: no GPU time came back for a launch of {name}; such launches are left untimed"
                );
            }
        }
    }

    /// Times the launches still waiting for their kernels' records (when
    /// due, and at exit, before the profile is written).
    pub(super) fn time_awaiting(&self) {
        let (_timing, batch) = self.awaiting.take();
        if !batch.is_empty() {
            self.time_on_gpu(batch);
        }
    }

    /// The decision half of [`Self::launch`], which stages the launch for the
    /// forwarded call; `None` forwards unchanged and unrecorded (an unknown
    /// kernel or device).
    fn stage(&self, request: LaunchRequest) -> Option<Staged> {
        #[cfg(feature = "fault-injection")]
        if std::env::var_os(crate::config::ENV_INJECT_PANIC).is_some() {
            panic!("injected by {}", crate::config::ENV_INJECT_PANIC);
        }
        let Some(entry) = self.kernel(request.host_ptr) else {
            if self.report_once(Once::UnknownKernel(request.host_ptr)) {
                log::warn!(
                    "launch of unregistered kernel at {:#x}; passing it through",
                    request.host_ptr
                );
            }
            return None;
        };
        let device = self.device(request.device_id)?;
        let mut staged = Staged {
            desc_index: entry.desc_index(&device),
            entry,
            device,
            request,
            write: None,
            // LLVM's grid, as gridsel models it, is only worked out for
            // the profile or the log.
            grid: Geometry::new(0, 0),
            label: None,
            observe: Observe::No,
        };
        match self.proposal(&staged) {
            Some(proposal) => self.cut(&mut staged, proposal),
            None if self.profile.is_some() => {
                let desc = staged.request.desc;
                staged.grid = llvm::grid(&staged.device, staged.kernel(), &desc);
                staged.label = Some(Label::Static("llvm"));
            }
            None => {}
        }
        Some(staged)
    }

    /// The policy's proposal for a launch the clause rules let it change;
    /// `None` keeps LLVM's grid.
    fn proposal(&self, staged: &Staged) -> Option<Proposal> {
        let desc = staged.request.desc;
        // A teams region's grid verified for this build by a tuning
        // session is launched even where such regions are kept.
        match clauses::may_change(&desc, self.config.opt_in)
            .or_else(|keep| match keep {
                Keep::NoTripCount if self.policy.verified(&staged.launch()) => Ok(()),
                keep => Err(keep),
            })
            .and_then(|()| clauses::may_change_kernel(staged.kernel()))
        {
            Ok(()) => self.policy.decide(&staged.launch()),
            Err(keep) => {
                // A rule the user can lift is said at info, with the
                // variable that lifts it, once per kernel (a solver's
                // shrinking loops would repeat it per trip count); the
                // others at debug.
                let name = &staged.entry.name;
                if keep.has_opt_in() {
                    if log::log_enabled!(log::Level::Info)
                        && self.report_once(Once::KeptWithOptIn(staged.request.host_ptr, keep))
                    {
                        log::info!("{name}: kept as given: {keep}");
                    }
                } else if log::log_enabled!(log::Level::Debug)
                    && staged
                        .entry
                        .first_sighting(staged.request.device_id, desc.trip_count)
                {
                    log::debug!("{name}: kept as given: {keep}");
                }
                None
            }
        }
    }

    /// Cuts `proposal` to the launch's limits, the one place a grid is cut,
    /// and stages the result; the info log says what came of it.
    fn cut(&self, staged: &mut Staged, proposal: Proposal) {
        let (device, kernel, desc) = (&*staged.device, staged.kernel(), staged.request.desc);
        let limits = if proposal.beyond_safe_range {
            Limits::compiled(device, kernel)
        } else {
            Limits::of(device, kernel, &desc)
        };
        let (grid, cut) = limits.clamp(proposal.grid);
        if cut {
            self.report_fixed_cut(&staged.entry.name, grid, &limits);
        }
        let (num_teams, thread_limit) = clauses::request(grid, device, kernel);
        if log::log_enabled!(log::Level::Info)
            && staged
                .entry
                .first_sighting(staged.request.device_id, desc.trip_count)
        {
            // The safe range the line names is worked out again only where
            // the proposal may leave it, and only for the log.
            let safe = if proposal.beyond_safe_range {
                Limits::of(device, kernel, &desc)
            } else {
                limits
            };
            log::info!(
                "{}",
                describe(&Decided {
                    name: &staged.entry.name,
                    kernel,
                    device,
                    launch: &desc,
                    policy: &self.config.policy,
                    rule: proposal.rule,
                    grid,
                    cut,
                    llvm: llvm::grid(device, kernel, &desc),
                    safe: &safe,
                })
            );
        }
        staged.write = Some((num_teams, thread_limit));
        staged.grid = grid;
        staged.observe = if staged.request.waits {
            proposal.observe
        } else {
            Observe::No
        };
        if self.profile.is_some() {
            staged.label = Some(match proposal.label {
                Some(label) => Label::Static(label),
                None => Label::Shared(self.policy_label.clone()),
            });
        }
    }

    /// The grid the user fixed is one `kernel` cannot launch, cut to
    /// `limits`: one warning per process, for the first such kernel (every
    /// kernel's cut is in its info line). Other policies' grids are cut
    /// silently: they are gridsel's own proposals.
    fn report_fixed_cut(&self, kernel: &str, grid: Geometry, limits: &Limits) {
        if matches!(self.config.policy, Policy::Fixed(_)) && self.report_once(Once::FixedCut) {
            log::warn!(
                "{ENV_POLICY}={}: {kernel} cannot launch that grid ({limits}); its launches get {grid} ({ENV_LOG}=info shows each kernel's)",
                self.config.policy
            );
        }
    }

    /// The feedback half of [`Self::launch`]: the profile row and the
    /// policy's observation (a failed launch ranks last).
    fn finish(&self, staged: &Staged, ns: u64, rc: i32) {
        if let (Some(label), Some(profile)) = (&staged.label, &self.profile) {
            profile.record(
                &staged.entry.name,
                staged.request.desc.trip_count,
                label.as_str(),
                staged.grid,
                ns,
            );
        }
        if staged.observe.timed() {
            let ns = if rc == 0 { ns } else { u64::MAX };
            self.policy.observe(&staged.launch(), staged.grid, ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The waiting launches are due once `MAX_AWAITING` launches of the
    /// process, timed or not, came after the oldest (CUPTI keeps a bounded
    /// number of records of every kernel), at once for a launch whose time
    /// is wanted now, and never while nothing waits.
    #[test]
    fn waiting_launches_are_due_after_so_many_launches_timed_or_not() {
        let awaiting = Awaiting::<u32>::default();
        for _ in 0..1000 {
            assert!(!awaiting.count_launch(), "nothing waits");
        }
        assert!(!awaiting.count_launch());
        assert!(!awaiting.push(1, false));
        // A settled search's next samples: one launch in 16 timed.
        for n in 1..MAX_AWAITING {
            let due = awaiting.count_launch();
            assert!(!due, "due after {n} launches");
            if n % 16 == 0 {
                assert!(!awaiting.push(n as u32 + 1, false));
            }
        }
        assert!(awaiting.count_launch(), "due at the {MAX_AWAITING}th");
        // The guard goes with the statement: a batch taken while another
        // is being timed waits for it.
        let batch = awaiting.take().1;
        assert_eq!(batch.len(), MAX_AWAITING / 16);
        assert_eq!(batch[..2], [1, 17], "in launch order");
        assert!(!awaiting.count_launch(), "nothing waits once taken");
        // A time wanted now is due with it, whatever waited before.
        assert!(!awaiting.push(7, false));
        assert!(awaiting.push(8, true));
        assert_eq!(awaiting.take().1, [7, 8]);
        // So many timed launches waiting are due without a count.
        for n in 1..=MAX_AWAITING {
            assert_eq!(awaiting.push(0, false), n == MAX_AWAITING);
        }
    }
}
