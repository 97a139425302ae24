//! The process-wide state behind the exports, and the launch pipeline.
//!
//! [`Runtime::launch`] is the one path every kernel launch takes, in the
//! manner of LLVM's `GenericKernelTy::launch`: the export converts the C
//! ABI into a [`LaunchRequest`] and hands over the forwarding call; the
//! pipeline (`pipeline`) looks up the kernel (`registry`) and the device
//! (`devices`), applies the clause rules ([`crate::clauses::may_change`]),
//! asks the [`GridPolicy`] in force (built in `policies`) for a proposal,
//! cuts it to the launch's [`crate::policy::Limits`] (the only place a grid
//! is cut), forwards, and times, profiles and feeds the policy back where
//! asked; the info log says what it did (`log_line`). Every launch carries the
//! release of the libomptarget it goes to, told once at start (`llvm`).
//! Everything here is safe code over plain data.

mod devices;
mod llvm;
mod log_line;
mod pipeline;
mod policies;
mod registry;

use crate::config::{
    Config, ENV_OVERRIDE_CLAUSES, ENV_PROFILE, ENV_SAFE_RANGE, ENV_TEAMS_REGIONS, ENV_TUNE_CLOCK,
};
use crate::device::DeviceDesc;
use crate::kernel::KernelDesc;
use crate::libomptarget::LlvmRelease;
use crate::policy::{GridPolicy, Policy};
use crate::profile::Profile;
use crate::tune::Clock;
use crate::{Reported, clauses::Keep};
use devices::{Devices, Process};
pub use pipeline::LaunchRequest;
pub use registry::KernelEntry;
use registry::Registry;
use std::sync::{Arc, OnceLock};

/// Something the pipeline reports once per process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Once {
    UnknownKernel(usize),
    /// A kernel's launches kept for a rule the user can lift (once per
    /// kernel and rule, whatever its trip counts).
    KeptWithOptIn(usize, Keep),
    /// A `fixed:T,B` grid was cut to a launch's limits.
    FixedCut,
    /// A launch timed on the GPU got no kernel record back.
    NoKernelRecord,
}

/// All of gridsel's state in one process.
pub struct Runtime {
    pub config: Config,
    /// The policy in force, built once from the settings.
    policy: Box<dyn GridPolicy>,
    policy_label: Arc<str>,
    /// The libomptarget the process's launches go to ([`llvm::identify`]).
    llvm_release: LlvmRelease,
    registry: Registry,
    devices: Devices,
    reported: Reported<Once>,
    profile: Option<Profile>,
    /// What timed launches are timed with ([`clock`]).
    clock: Clock,
    /// Launches timed on the GPU waiting for their kernels' records.
    awaiting: pipeline::Awaiting,
}

/// What this process times launches with: the GPU where
/// `GRIDSEL_TUNE_CLOCK=gpu` asks it, something is timed (`tune`'s
/// searches, or the profile), the device is the driver's (a forced one
/// runs no kernel on it) and CUPTI starts; else the host, the launch call's
/// wall time. A missing CUPTI is one warning.
fn clock(config: &Config) -> Clock {
    let timed = config.policy == Policy::Tune || config.profile.is_some();
    if config.tune_clock != Clock::Gpu || !timed || config.device.is_some() {
        return Clock::Host;
    }
    match gridsel_host::ffi::cupti::start() {
        Ok(()) => Clock::Gpu,
        Err(e) => {
            log::warn!(
                "{ENV_TUNE_CLOCK}=gpu: {e}; launches are timed on the host (the launch call's wall time)"
            );
            Clock::Host
        }
    }
}

impl Runtime {
    /// Builds the runtime from settings; reports a profile it cannot open.
    pub fn new(mut config: Config) -> Self {
        let llvm_release = llvm::identify();
        let clock = clock(&config);
        let policy = policies::build(&mut config, clock);
        let profile = config
            .profile
            .as_ref()
            .and_then(|path| match Profile::open(path) {
                Ok(p) => Some(p),
                Err(e) => {
                    log::error!(
                        "{ENV_PROFILE}: cannot open {}: {e}; not profiling",
                        path.display()
                    );
                    None
                }
            });
        Self {
            policy,
            policy_label: config.policy.to_string().into(),
            llvm_release,
            config,
            registry: Registry::default(),
            devices: Devices::default(),
            reported: Reported::new(),
            profile,
            clock,
            awaiting: pipeline::Awaiting::default(),
        }
    }

    /// The process's runtime, configured from the environment on first use.
    pub fn global() -> &'static Runtime {
        static RUNTIME: OnceLock<Runtime> = OnceLock::new();
        RUNTIME.get_or_init(|| {
            let (config, errors) = Config::from_env();
            crate::logging::init(config.log);
            for e in &errors {
                log::error!("{e}");
            }
            if !config.safe_range {
                log::warn!(
                    "{ENV_SAFE_RANGE}=off: fixed grids may leave the launch's safe range; a launch that needs more device heap than there is fails and ends the program"
                );
            }
            log::info!(
                "policy {}, device {}, {ENV_OVERRIDE_CLAUSES}={}, {ENV_TEAMS_REGIONS}={}",
                config.policy,
                config
                    .device
                    .as_ref()
                    .map_or("from the CUDA driver", |d| &d.name),
                u8::from(config.opt_in.override_clauses),
                config.opt_in.teams_regions,
            );
            Runtime::new(config)
        })
    }

    fn report_once(&self, what: Once) -> bool {
        self.reported.first(what)
    }

    /// The libomptarget this process's launches go to.
    pub fn llvm_release(&self) -> LlvmRelease {
        self.llvm_release
    }

    /// Records a registered binary's kernels: `entries` are (host address,
    /// device symbol) pairs, `images` the raw device images; the policy
    /// prepares for them.
    pub fn register(&self, entries: &[(usize, String)], images: &[&[u8]]) {
        let registered = self.registry.register(entries, images);
        let descs: Vec<&KernelDesc> = registered.iter().flat_map(|e| e.descs.iter()).collect();
        self.policy.prepare(&descs, self.llvm_release);
    }

    /// Forgets the kernels of an unregistered binary, flushes the profile
    /// and lets the policy keep what it learned (binaries are unregistered
    /// at exit, off the launch path).
    pub fn unregister(&self, entries: &[(usize, String)]) {
        self.registry.unregister(entries);
        self.time_awaiting();
        if let Some(p) = &self.profile {
            p.flush();
        }
        self.policy.flush();
    }

    /// The kernel behind a host entry address.
    pub fn kernel(&self, host_ptr: usize) -> Option<Arc<KernelEntry>> {
        self.registry.kernel(host_ptr)
    }

    /// The description of device `id`: forced by the settings, or read once
    /// from the CUDA driver that libomptarget loaded.
    pub fn device(&self, id: i64) -> Option<Arc<DeviceDesc>> {
        let process = Process {
            llvm_release: self.llvm_release,
            cubin_seen: self.registry.cubin_seen(),
        };
        self.devices.get(id, &self.config, process)
    }

    /// `llvm` without a profile: every launch is forwarded untouched.
    pub fn passes_everything(&self) -> bool {
        self.config.policy == Policy::Llvm && self.profile.is_none()
    }
}
