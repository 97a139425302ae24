//! The process-wide state behind the exports, and the launch pipeline.
//!
//! [`Runtime::launch`] is the one path every kernel launch takes, in the
//! manner of LLVM's `GenericKernelTy::launch`: the export converts the C
//! ABI into a [`LaunchRequest`] and hands over the forwarding call; the
//! pipeline looks up the kernel and the device, applies the clause rules
//! ([`clauses::may_change`]), asks the [`GridPolicy`] in force, cuts its grid to
//! the launch's [`Limits`], forwards, and times, profiles and feeds the
//! policy back where asked. Everything here is safe code over plain data.

use crate::IntMap;
use crate::Reported;
use crate::clauses::{self, Keep};
use crate::config::{Config, ENV_OVERRIDE_CLAUSES, ENV_POLICY, ENV_TEAMS_REGIONS};
use crate::device::DeviceDesc;
use crate::ffi::dl;
use crate::files;
use crate::geometry::{Geometry, Iterations, LaunchDesc};
use crate::guard::boundary;
use crate::image::{self, ImageKind};
use crate::kernel::KernelDesc;
use crate::policy::forest::ForestPolicy;
use crate::policy::sweep::SweepPolicy;
use crate::policy::{
    DEFAULT_POLICY, Decision, FixedBeyondSafeRange, GridPolicy, Launch, Limits, Policy, Stateless,
    llvm::{self, LlvmRule},
};
use crate::profile::Profile;
use crate::tune::{LearnedPolicy, Store, TunePolicy};
use crate::writer::StoreWriter;
use gridsel_host::ffi::cuda;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Instant;

/// One kernel known from a registered image.
pub struct KernelEntry {
    pub name: String,
    /// Unique in the process (a host address may be reused by a library
    /// loaded later): what policies key their state by.
    pub serial: u64,
    /// One descriptor per device image that holds the kernel (e.g. sm_80 and sm_90).
    pub descs: Vec<KernelDesc>,
    /// (device, trip count) pairs whose decision is logged.
    logged: Reported<(i64, u64)>,
}

impl KernelEntry {
    fn new(name: String, serial: u64, descs: Vec<KernelDesc>) -> Self {
        Self {
            name,
            serial,
            descs,
            logged: Reported::new(),
        }
    }

    /// The index in `descs` of the descriptor for the image the device
    /// runs: same SM architecture, else the first cubin, else whatever is
    /// known (`descs` is never empty: a kernel no image describes gets a
    /// descriptor with only its name).
    fn desc_index(&self, device: &DeviceDesc) -> usize {
        let exact = self
            .descs
            .iter()
            .position(|d| d.sm_arch == Some(device.sm_arch));
        exact
            .or_else(|| self.descs.iter().position(|d| d.sm_arch.is_some()))
            .unwrap_or(0)
    }

    /// Whether (device, trip) is seen for the first time (then logged).
    fn first_sighting(&self, device_id: i64, trip: u64) -> bool {
        self.logged.first((device_id, trip))
    }
}

/// One `__tgt_target_kernel` call, as the export read it.
#[derive(Clone, Copy, Debug)]
pub struct LaunchRequest {
    /// The CUDA ordinal the OpenMP device number resolved to.
    pub device_id: i64,
    /// The kernel's host entry address.
    pub host_ptr: usize,
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
    /// Hand the launch's time to the policy.
    observe: bool,
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

/// A profile row's label: the policy's name, shared, or one a proposal set.
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

/// Something reported once per process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Once {
    UnknownKernel(usize),
    NoDevice(i64),
    /// A kernel's launches kept for a rule the user can lift (once per
    /// kernel and rule, whatever its trip counts).
    KeptWithOptIn(usize, Keep),
    /// A `fixed:T,B` grid was cut to a launch's limits.
    FixedCut,
    /// Launches go to a device that is not a CUDA device: their grids have
    /// no effect.
    HostOffload,
    /// Device images without a cubin: the kernels' resources are unknown.
    NoCubin,
}

/// The libomptarget that gridsel forwards launches to, told by its file
/// name (`libomptarget.so.22.1`: LLVM 22): its major version (0: unknown),
/// which the store's records keep, and its grid rule. Where the file names
/// no release gridsel models, LLVM 19's rule stands in, and one info line
/// says so.
fn identify_llvm() -> (u32, LlvmRule) {
    let Some(path) = dl::library_defining(c"__tgt_target_kernel") else {
        // No libomptarget: the launches themselves report it.
        return (0, LlvmRule::FALLBACK);
    };
    let fallback = LlvmRule::FALLBACK.release();
    let release = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(llvm::release_of_library);
    let rule = match release.map(|r| (r, LlvmRule::of_release(r))) {
        Some((_, Some(rule))) => {
            log::info!("libomptarget {}: LLVM {}", path.display(), rule.release());
            rule
        }
        Some((release, None)) => {
            log::info!(
                "libomptarget {}: LLVM {release}, whose grid rule gridsel does not model; LLVM {fallback}'s stands in for it",
                path.display()
            );
            LlvmRule::FALLBACK
        }
        None => {
            log::info!(
                "libomptarget {}: no LLVM version in the file name; LLVM {fallback}'s grid rule stands in for its own",
                path.display()
            );
            LlvmRule::FALLBACK
        }
    };
    (release.unwrap_or(0), rule)
}

/// All of gridsel's state in one process.
pub struct Runtime {
    pub config: Config,
    /// The policy in force, built once from the settings.
    policy: Box<dyn GridPolicy>,
    policy_label: Arc<str>,
    /// The label of launches forwarded as LLVM chose them.
    llvm_label: Arc<str>,
    /// The grid rule of the libomptarget in the process ([`identify_llvm`]).
    llvm: LlvmRule,
    kernels: RwLock<IntMap<usize, Arc<KernelEntry>>>,
    next_serial: AtomicU64,
    devices: RwLock<IntMap<i64, Option<Arc<DeviceDesc>>>>,
    reported: Reported<Once>,
    /// Some registered binary has a cubin: the kernels' resources are known.
    cubin_seen: AtomicBool,
    profile: Option<Profile>,
}

/// The policy `config` names, built with its settings, in a process whose
/// libomptarget is LLVM `llvm` (0: unknown); the one place a policy is
/// registered. A `forest` model that cannot be loaded is one error line and
/// the default policy.
fn build_policy(config: &mut Config, llvm: u32) -> Box<dyn GridPolicy> {
    match &config.policy {
        Policy::Tune => Box::new(
            TunePolicy::new(
                config.cache.clone().map(|store| {
                    let file = files::StoreFile::new(store.path, store.default);
                    Box::new(StoreWriter::new(Box::new(file))) as Box<dyn crate::tune::Saver>
                }),
                config.tune_overhead,
            )
            .with_llvm(llvm)
            .with_session_runs(config.tune_session_runs),
        ),
        // `auto` reads the grids tuning learned: the user's store, then the
        // site's, each only read (a `StoreFile` is written only through its
        // writer, which this policy has none of). `GRIDSEL_CACHE=off` reads
        // neither.
        Policy::Auto if config.cache.is_some() => {
            let user = config.cache.iter().map(|store| store.path.clone());
            let stores = user
                .chain(config.site_cache.clone())
                .map(|path| Box::new(files::StoreFile::new(path, false)) as Box<dyn Store>)
                .collect();
            Box::new(LearnedPolicy::new(stores, llvm).alternating(config.learned_alternate))
        }
        Policy::Sweep => Box::<SweepPolicy>::default(),
        Policy::Forest => match files::model_or_embedded(config.model.as_deref()) {
            Ok(model) => Box::new(ForestPolicy::new(model)),
            Err(e) => {
                log::error!(
                    "GRIDSEL_POLICY=forest: {e}; using the default policy {DEFAULT_POLICY}"
                );
                config.policy = DEFAULT_POLICY;
                Box::new(Stateless(DEFAULT_POLICY))
            }
        },
        Policy::Fixed(g) if !config.safe_range => Box::new(FixedBeyondSafeRange(*g)),
        other => Box::new(Stateless(other.clone())),
    }
}

impl Runtime {
    /// Builds the runtime from settings; reports a profile it cannot open.
    pub fn new(mut config: Config) -> Self {
        let (llvm_release, llvm) = identify_llvm();
        let policy = build_policy(&mut config, llvm_release);
        let profile = config
            .profile
            .as_ref()
            .and_then(|path| match Profile::open(path) {
                Ok(p) => Some(p),
                Err(e) => {
                    log::error!(
                        "GRIDSEL_PROFILE: cannot open {}: {e}; not profiling",
                        path.display()
                    );
                    None
                }
            });
        Self {
            policy,
            policy_label: config.policy.to_string().into(),
            llvm_label: Arc::from("llvm"),
            llvm,
            config,
            kernels: RwLock::default(),
            next_serial: AtomicU64::new(0),
            devices: RwLock::default(),
            reported: Reported::new(),
            cubin_seen: AtomicBool::new(false),
            profile,
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
                    "GRIDSEL_SAFE_RANGE=off: fixed grids may leave the launch's safe range; a launch that needs more device heap than there is fails and ends the program"
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

    /// The grid the user fixed is one `kernel` cannot launch, cut to
    /// `limits`: one warning per process, for the first such kernel (every
    /// kernel's cut is in its info line). Other policies' grids are cut
    /// silently: they are gridsel's own proposals.
    fn report_fixed_cut(&self, kernel: &str, grid: Geometry, limits: &Limits) {
        if matches!(self.config.policy, Policy::Fixed(_)) && self.report_once(Once::FixedCut) {
            log::warn!(
                "{ENV_POLICY}={}: {kernel} cannot launch that grid ({limits}); its launches get {grid} (GRIDSEL_LOG=info shows each kernel's)",
                self.config.policy
            );
        }
    }

    /// Records a registered binary's kernels: `entries` are (host address,
    /// device symbol) pairs, `images` the raw device images.
    pub fn register(&self, entries: &[(usize, String)], images: &[&[u8]]) {
        let mut parsed = Vec::new();
        for (i, bytes) in images.iter().enumerate() {
            match image::parse_image(bytes) {
                Ok(mut info) => {
                    log::debug!("image {i}: {:?}, {} kernels", info.kind, info.kernels.len());
                    // Hashed here, once, never at a launch.
                    let build = image::build_id(bytes);
                    for k in &mut info.kernels {
                        k.build.clone_from(&build);
                    }
                    parsed.push(info);
                }
                Err(e) => log::warn!(
                    "image {i} ({} bytes): {e}; its kernels get partial descriptors",
                    bytes.len()
                ),
            }
        }
        let has_cubin = parsed
            .iter()
            .any(|i| matches!(i.kind, ImageKind::Cubin { .. }));
        if has_cubin {
            self.cubin_seen.store(true, Ordering::Relaxed);
        }
        // Host images are said at the first launch, where gridsel learns
        // that no CUDA device runs them ([`Self::forced_for`]); a GPU image
        // without a cubin (LLVM bitcode) is said here, once.
        let host_only = parsed
            .iter()
            .all(|i| matches!(i.kind, ImageKind::HostElf { .. }));
        if !has_cubin && !host_only && self.report_once(Once::NoCubin) {
            log::info!(
                "no cubin in the program's device images (LLVM bitcode, or an image gridsel cannot read): its kernels' grids are chosen without their registers, memory use and thread caps"
            );
        }
        let mut by_name: HashMap<&str, Vec<KernelDesc>> = HashMap::new();
        for k in parsed.iter().flat_map(|i| i.kernels.iter()) {
            by_name.entry(k.name.as_str()).or_default().push(k.clone());
        }
        // Built and logged before taking the table's lock: launches on other
        // threads go on meanwhile.
        let mut built = Vec::with_capacity(entries.len());
        for (addr, name) in entries {
            let mut descs = by_name.remove(name.as_str()).unwrap_or_default();
            if descs.is_empty() {
                descs.push(KernelDesc::named(name.clone()));
            }
            let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
            let entry = KernelEntry::new(name.clone(), serial, descs);
            if has_cubin {
                match entry.descs.iter().find(|d| d.sm_arch.is_some()) {
                    None => log::info!(
                        "kernel {name}: not in the binary's cubin; its grids are chosen without its registers, memory use and thread cap"
                    ),
                    Some(desc) => {
                        let unknown = desc.unknown_fields();
                        if !unknown.is_empty() {
                            log::info!(
                                "kernel {name}: the cubin does not give its {}",
                                unknown.join(", ")
                            );
                        }
                    }
                }
            }
            built.push((*addr, Arc::new(entry)));
        }
        let registered: Vec<Arc<KernelEntry>> = built.iter().map(|(_, e)| e.clone()).collect();
        crate::write_lock(&self.kernels).extend(built);
        log::info!(
            "registered {} offload entries from {} device images",
            entries.len(),
            images.len()
        );
        let descs: Vec<&KernelDesc> = registered.iter().flat_map(|e| e.descs.iter()).collect();
        self.policy.prepare(&descs);
    }

    /// Forgets the kernels of an unregistered binary, flushes the profile
    /// and lets the policy keep what it learned (binaries are unregistered
    /// at exit, off the launch path).
    pub fn unregister(&self, entries: &[(usize, String)]) {
        let mut table = crate::write_lock(&self.kernels);
        for (addr, _) in entries {
            table.remove(addr);
        }
        drop(table);
        if let Some(p) = &self.profile {
            p.flush();
        }
        self.policy.flush();
    }

    /// The kernel behind a host entry address.
    pub fn kernel(&self, host_ptr: usize) -> Option<Arc<KernelEntry>> {
        crate::read_lock(&self.kernels).get(&host_ptr).cloned()
    }

    /// The description of device `id`: forced by the settings, or read once
    /// from the CUDA driver that libomptarget loaded.
    pub fn device(&self, id: i64) -> Option<Arc<DeviceDesc>> {
        if let Some(found) = crate::read_lock(&self.devices).get(&id) {
            return found.clone();
        }
        let desc = match &self.config.device {
            Some(forced) => Ok(self.forced_for(forced, id)),
            None => i32::try_from(id)
                .map_err(|_| format!("device id {id} out of range"))
                .and_then(cuda::device_in_process),
        };
        let desc = match desc {
            Ok(d) => Some(Arc::new(DeviceDesc {
                llvm: self.llvm,
                ..self.config.refine(d)
            })),
            Err(e) => {
                if self.report_once(Once::NoDevice(id)) {
                    log::warn!(
                        "device {id}: {e}; its launches pass through (set GRIDSEL_DEVICE to choose anyway)"
                    );
                }
                None
            }
        };
        crate::write_lock(&self.devices)
            .entry(id)
            .or_insert(desc)
            .clone()
    }

    /// The device `GRIDSEL_DEVICE` forces, for device `id`: as given where a
    /// CUDA device of this process runs `id`'s launches. Elsewhere (host
    /// offload, or a plugin other than CUDA's) the grid has no effect and
    /// the device only models the launches: it is named apart
    /// (`H100 (forced; no CUDA device)`), so that the times `tune` measures
    /// there are stored under a device no GPU's runs read, never as that
    /// GPU's. One info line per process says so, and what gridsel cannot
    /// know there.
    fn forced_for(&self, forced: &DeviceDesc, id: i64) -> DeviceDesc {
        if i32::try_from(id).is_ok_and(cuda::has_device) {
            return forced.clone();
        }
        let name = format!("{} (forced; no CUDA device)", forced.name);
        if self.report_once(Once::HostOffload) {
            // From LLVM 21 on the host plugin runs every kernel as Generic,
            // 1 block of 1 thread (docs/llvm-grid.md §1); 19's launches the
            // grid it is given, on the CPU.
            let effect = if self.llvm.release() >= 21 {
                "and LLVM's host plugin runs every kernel as 1 block of 1 thread, so the grids gridsel chooses have no effect"
            } else {
                "so the grids gridsel chooses run on the CPU and tell nothing of a GPU's speed"
            };
            let facts = if self.cubin_seen.load(Ordering::Relaxed) {
                ""
            } else {
                ", from the trip count alone (the program has no cubin to give its kernels' registers, memory use and thread caps)"
            };
            log::info!(
                "device {id}: no CUDA device runs its launches (host offload?), {effect}; the grids below are those gridsel would launch on the {} that GRIDSEL_DEVICE names{facts}, and tune keeps their times under `{name}`, apart from a real {}'s",
                forced.name,
                forced.name
            );
        }
        DeviceDesc {
            name,
            ..forced.clone()
        }
    }

    /// `llvm` without a profile: every launch is forwarded untouched.
    pub fn passes_everything(&self) -> bool {
        self.config.policy == Policy::Llvm && self.profile.is_none()
    }

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
        let Some(staged) = staged else {
            return forward(None);
        };
        let timed = staged.observe || staged.label.is_some();
        let start = timed.then(Instant::now);
        let rc = forward(staged.write);
        if let Some(start) = start {
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            boundary(|| self.finish(&staged, ns, rc));
        }
        rc
    }

    /// The decision half of [`Self::launch`], which stages the launch for the
    /// forwarded call; `None` forwards unchanged and unrecorded (an unknown
    /// kernel or device).
    fn stage(&self, request: LaunchRequest) -> Option<Staged> {
        #[cfg(feature = "fault-injection")]
        if std::env::var_os("GRIDSEL_INJECT_PANIC").is_some() {
            panic!("injected by GRIDSEL_INJECT_PANIC");
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
        let profiling = self.profile.is_some();
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
            observe: false,
        };
        let (device, kernel, desc) = (&*staged.device, staged.kernel(), request.desc);
        let proposal = match clauses::may_change(&desc, self.config.opt_in)
            .and_then(|()| clauses::may_change_kernel(kernel))
        {
            Ok(()) => self.policy.decide(&staged.launch()),
            Err(keep) => {
                // A rule the user can lift is said at info, with the
                // variable that lifts it, once per kernel (a solver's
                // shrinking loops would repeat it per trip count); the
                // others at debug.
                if keep.has_opt_in() {
                    if log::log_enabled!(log::Level::Info)
                        && self.report_once(Once::KeptWithOptIn(request.host_ptr, keep))
                    {
                        log::info!("{}: kept as given: {keep}", staged.entry.name);
                    }
                } else if log::log_enabled!(log::Level::Debug)
                    && staged
                        .entry
                        .first_sighting(request.device_id, desc.trip_count)
                {
                    log::debug!("{}: kept as given: {keep}", staged.entry.name);
                }
                None
            }
        };
        let Some(proposal) = proposal else {
            if profiling {
                staged.grid = llvm::grid(device, kernel, &desc);
                staged.label = Some(Label::Shared(self.llvm_label.clone()));
            }
            return Some(staged);
        };
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
                .first_sighting(request.device_id, desc.trip_count)
        {
            let decision =
                Decision::within(proposal.grid, proposal.rule, &limits, device, kernel, &desc);
            log::info!(
                "{}",
                describe(
                    &staged.entry.name,
                    kernel,
                    device,
                    &desc,
                    &self.config.policy,
                    &decision
                )
            );
        }
        staged.write = Some((num_teams, thread_limit));
        staged.grid = grid;
        staged.observe = proposal.observe && request.waits;
        if profiling {
            staged.label = Some(match proposal.label {
                Some(label) => Label::Static(label),
                None => Label::Shared(self.policy_label.clone()),
            });
        }
        Some(staged)
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
        if staged.observe {
            let ns = if rc == 0 { ns } else { u64::MAX };
            self.policy.observe(&staged.launch(), staged.grid, ns);
        }
    }
}

/// The info line for one decision, in the user's terms: the grid the
/// policy launches instead of LLVM's, or that it keeps LLVM's, and why; the
/// launch's limits where they are narrower than the kernel's own; and what
/// the cubin says of the kernel (a kernel without one has nothing to show,
/// and one line per process says so).
pub fn describe(
    name: &str,
    kernel: &KernelDesc,
    device: &DeviceDesc,
    launch: &LaunchDesc,
    policy: &Policy,
    d: &Decision,
) -> String {
    let mut line = format!(
        "{name} on {}, {}",
        device.name,
        Iterations(launch.trip_count)
    );
    let llvm = llvm::grid(device, kernel, launch);
    let _ = if d.geometry == llvm {
        write!(line, ": {policy} keeps LLVM's grid, {llvm}: {}", d.rule)
    } else {
        write!(
            line,
            ": {policy} launches {} instead of LLVM's {llvm}: {}",
            d.geometry, d.rule
        )
    };
    if d.clamped {
        line.push_str(", cut to what the launch allows");
    }
    let limits = Limits::of(device, kernel, launch);
    if limits.narrowed.is_some() {
        let _ = write!(line, "; the launch allows {limits}");
    }
    if kernel.sm_arch.is_some() {
        let _ = write!(line, "; kernel: {kernel}");
    }
    line
}
