//! The process-wide state behind the exports: registered kernels, devices,
//! the policy in force, and the launch path that ties them together.
//!
//! Everything here is safe code over plain data; [`crate::ffi::api`] turns C
//! pointers into the values these methods take.

use crate::config::Config;
use crate::device::DeviceDesc;
use crate::ffi::cuda;
use crate::forest::Forest;
use crate::geometry::{Geometry, LaunchDesc};
use crate::image::{self, ImageKind};
use crate::kernel::KernelDesc;
use crate::plan::{self, Choice};
use crate::policy::{self, DEFAULT_POLICY, Limits, Policy, llvm::llvm19, sweep};
use crate::profile::Profile;
use crate::tune;
use crate::{IntMap, IntSet};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// One kernel known from a registered image.
pub struct KernelEntry {
    pub name: String,
    /// One descriptor per device image that holds the kernel (e.g. sm_80 and sm_90).
    pub descs: Vec<KernelDesc>,
    /// (device, trip count) pairs already logged at info.
    logged: Mutex<IntSet<(i64, u64)>>,
    /// Sweep position per (device, trip count), with the space it walks.
    sweep: Mutex<IntMap<(i64, u64), SweepCursor>>,
    /// `tune`'s search or winner per (device, trip count).
    tune: tune::States,
    /// `forest`'s decision per (device, trip count).
    forest: Mutex<IntMap<(i64, u64), policy::Decision>>,
}

/// A sweep space and the index of the next point to launch.
type SweepCursor = (Arc<[sweep::Candidate]>, usize);

impl KernelEntry {
    fn new(name: String, descs: Vec<KernelDesc>) -> Self {
        Self {
            name,
            descs,
            logged: Mutex::default(),
            sweep: Mutex::default(),
            tune: Mutex::default(),
            forest: Mutex::default(),
        }
    }

    /// The descriptor for the image the device runs: same SM architecture,
    /// else the first cubin, else whatever is known (`descs` is never empty:
    /// a kernel no image describes gets a descriptor with only its name).
    pub fn desc_for(&self, device: &DeviceDesc) -> &KernelDesc {
        let exact = self
            .descs
            .iter()
            .find(|d| d.sm_arch == Some(device.sm_arch));
        exact
            .or_else(|| self.descs.iter().find(|d| d.sm_arch.is_some()))
            .unwrap_or(&self.descs[0])
    }
}

/// Trip counts per kernel for which `forest` and `tune` keep a search; past
/// this, launches get `auto`'s grid, so memory and launch-path work stay
/// bounded in programs whose trip count changes at every launch.
pub const MAX_TRIP_COUNTS: usize = 256;

/// What the launch path decided, for the export to apply and record.
pub struct LaunchPlan {
    /// `(num_teams, thread_limit)` to write, `None` to forward unchanged.
    pub request: Option<(i32, i32)>,
    /// What to put in the profile row, when profiling.
    pub record: Option<Record>,
    /// A `tune` trial: time the launch and hand it to [`Runtime::observe`].
    pub observe: Option<Observe>,
}

/// A launch whose time `tune` wants.
pub struct Observe {
    pub kernel: Arc<KernelEntry>,
    pub device: Arc<DeviceDesc>,
    pub device_id: i64,
    pub trip_count: u64,
    pub grid: Geometry,
}

/// One profile row, minus the time.
pub struct Record {
    pub kernel: Arc<KernelEntry>,
    pub trip_count: u64,
    pub label: Arc<str>,
    pub grid: Geometry,
}

/// A problem reported once per process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Once {
    UnknownKernel(usize),
    NoDevice(i64),
}

/// All of gridsel's state in one process.
pub struct Runtime {
    pub config: Config,
    policy_label: Arc<str>,
    /// The label of launches forwarded as LLVM chose them.
    llvm_label: Arc<str>,
    kernels: RwLock<IntMap<usize, Arc<KernelEntry>>>,
    devices: RwLock<IntMap<i64, Option<Arc<DeviceDesc>>>>,
    reported: Mutex<HashSet<Once>>,
    pub profile: Option<Profile>,
    tune: tune::Session,
    /// The `forest` model, loaded when that policy is in force.
    forest: Option<Arc<Forest>>,
}

impl Runtime {
    /// Builds the runtime from settings; reports a profile it cannot open.
    pub fn new(mut config: Config) -> Self {
        let forest = if config.policy == Policy::Forest {
            match Forest::load_or_embedded(config.model.as_deref()) {
                Ok(model) => Some(model),
                Err(e) => {
                    log::error!(
                        "GRIDSEL_POLICY=forest: {e}; using the default policy {DEFAULT_POLICY}"
                    );
                    config.policy = DEFAULT_POLICY;
                    None
                }
            }
        } else {
            None
        };
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
        let tune = tune::Session::new(config.cache.clone());
        Self {
            policy_label: config.policy.to_string().into(),
            llvm_label: Arc::from("llvm"),
            config,
            kernels: RwLock::default(),
            devices: RwLock::default(),
            reported: Mutex::default(),
            profile,
            tune,
            forest,
        }
    }

    /// The process's runtime, configured from the environment on first use.
    pub fn global() -> &'static Runtime {
        static RUNTIME: OnceLock<Runtime> = OnceLock::new();
        RUNTIME.get_or_init(|| {
            crate::logging::init();
            let (config, errors) = Config::from_env();
            for e in &errors {
                log::error!("{e}");
            }
            if !config.safe_range {
                log::warn!(
                    "GRIDSEL_SAFE_RANGE=off: fixed grids may leave the launch's safe range; a launch that needs more device heap than there is fails and ends the program"
                );
            }
            log::info!(
                "policy {}, device {}",
                config.policy,
                config
                    .device
                    .as_ref()
                    .map_or("from the CUDA driver", |d| &d.name)
            );
            Runtime::new(config)
        })
    }

    fn report_once(&self, what: Once) -> bool {
        crate::lock(&self.reported).insert(what)
    }

    /// Records a registered binary's kernels: `entries` are (host address,
    /// device symbol) pairs, `images` the raw device images.
    pub fn register(&self, entries: &[(usize, String)], images: &[&[u8]]) {
        let mut parsed = Vec::new();
        for (i, bytes) in images.iter().enumerate() {
            match image::parse_image(bytes) {
                Ok(info) => {
                    log::debug!("image {i}: {:?}, {} kernels", info.kind, info.kernels.len());
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
            let entry = KernelEntry::new(name.clone(), descs);
            let unknown = entry
                .descs
                .iter()
                .find(|d| d.sm_arch.is_some())
                .unwrap_or(&entry.descs[0])
                .unknown_fields();
            if !unknown.is_empty() {
                let why = if has_cubin {
                    "not found in the cubin"
                } else {
                    "no cubin in this binary"
                };
                log::info!("kernel {name}: {why}; unknown: {}", unknown.join(", "));
            }
            built.push((*addr, Arc::new(entry)));
        }
        crate::write_lock(&self.kernels).extend(built);
        log::info!(
            "registered {} offload entries from {} device images",
            entries.len(),
            images.len()
        );
    }

    /// Forgets the kernels of an unregistered binary, flushes the profile
    /// and saves `tune`'s winners still queued for the cache (binaries are
    /// unregistered at exit, off the launch path).
    pub fn unregister(&self, entries: &[(usize, String)]) {
        let mut table = crate::write_lock(&self.kernels);
        for (addr, _) in entries {
            table.remove(addr);
        }
        drop(table);
        if let Some(p) = &self.profile {
            p.flush();
        }
        self.tune.flush();
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
            Some(forced) => Ok(forced.clone()),
            None => i32::try_from(id)
                .map_err(|_| format!("device id {id} out of range"))
                .and_then(cuda::device_in_process),
        };
        let desc = match desc {
            Ok(d) => Some(Arc::new(self.config.refine(d))),
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

    /// `llvm` without a profile: every launch is forwarded untouched.
    pub fn passes_everything(&self) -> bool {
        self.config.policy == Policy::Llvm && self.profile.is_none()
    }

    /// Decides one launch. `waits` is false for `nowait` launches, whose call
    /// returns before the kernel ends: `tune` cannot time them and gives them
    /// `auto`'s grid.
    pub fn plan_launch(
        &self,
        device_id: i64,
        host_ptr: usize,
        launch: LaunchDesc,
        waits: bool,
    ) -> LaunchPlan {
        let profiling = self.profile.is_some();
        let pass = |record| LaunchPlan {
            request: None,
            record,
            observe: None,
        };
        let Some(entry) = self.kernel(host_ptr) else {
            if self.report_once(Once::UnknownKernel(host_ptr)) {
                log::warn!("launch of unregistered kernel at {host_ptr:#x}; passing it through");
            }
            return pass(None);
        };
        let Some(device) = self.device(device_id) else {
            return pass(None);
        };
        let kernel = entry.desc_for(&device);
        let llvm = llvm19(&device, kernel, &launch);
        let record = |label: &Arc<str>, grid| {
            profiling.then(|| Record {
                kernel: entry.clone(),
                trip_count: launch.trip_count,
                label: label.clone(),
                grid,
            })
        };
        if let Err(keep) = plan::may_change(&launch, self.config.override_clauses) {
            if log::log_enabled!(log::Level::Debug)
                && self.first_sighting(&entry, device_id, launch.trip_count)
            {
                log::debug!("{}: kept as given: {keep}", entry.name);
            }
            return pass(record(&self.llvm_label, llvm));
        }
        let mut observe = None;
        let (decision, label) = match &self.config.policy {
            Policy::Tune if !waits => match policy::decide(&Policy::Auto, &device, kernel, &launch)
            {
                Some(d) => (d, self.policy_label.clone()),
                None => return pass(record(&self.llvm_label, llvm)),
            },
            Policy::Tune => {
                let (d, timed) = self.tune.plan(
                    &entry.name,
                    &entry.tune,
                    &device,
                    kernel,
                    device_id,
                    &launch,
                );
                observe = timed.then(|| Observe {
                    kernel: entry.clone(),
                    device: device.clone(),
                    device_id,
                    trip_count: launch.trip_count,
                    grid: d.geometry,
                });
                (d, self.policy_label.clone())
            }
            Policy::Forest => {
                match self.forest_decision(&entry, &device, kernel, device_id, &launch) {
                    Some(d) => (d, self.policy_label.clone()),
                    None => return pass(record(&self.llvm_label, llvm)),
                }
            }
            Policy::Sweep => {
                match self.next_sweep_point(&entry, &device, kernel, device_id, &launch) {
                    Some(c) => (c.decision, Arc::from(c.label.as_str())),
                    None => return pass(record(&self.llvm_label, llvm)),
                }
            }
            Policy::Fixed(g) if !self.config.safe_range => (
                policy::fixed_beyond_safe_range(*g, &device, kernel, &launch),
                self.policy_label.clone(),
            ),
            other => match policy::decide(other, &device, kernel, &launch) {
                Some(d) => (d, self.policy_label.clone()),
                None => return pass(record(&self.llvm_label, llvm)),
            },
        };
        if self.config.policy == Policy::Llvm {
            return pass(record(&label, llvm));
        }
        let (num_teams, thread_limit) = plan::request(decision.geometry, &device, kernel);
        let choice = Choice {
            decision,
            llvm,
            num_teams,
            thread_limit,
        };
        if log::log_enabled!(log::Level::Info)
            && self.first_sighting(&entry, device_id, launch.trip_count)
        {
            log::info!(
                "{}",
                describe(
                    &entry.name,
                    kernel,
                    &device,
                    &launch,
                    &self.config.policy,
                    &choice
                )
            );
        }
        LaunchPlan {
            request: Some((num_teams, thread_limit)),
            record: record(&label, decision.geometry),
            observe,
        }
    }

    /// Hands the measured time of a `tune` trial to its search.
    pub fn observe(&self, o: &Observe, ns: u64) {
        self.tune.observe(
            &o.kernel.name,
            &o.kernel.tune,
            &o.device,
            o.device_id,
            o.trip_count,
            o.grid,
            ns,
        );
    }

    /// `forest`'s decision for a launch, searched once per (device, trip
    /// count) and cached in the kernel's entry; `None` without a model.
    fn forest_decision(
        &self,
        entry: &KernelEntry,
        device: &DeviceDesc,
        kernel: &KernelDesc,
        device_id: i64,
        launch: &LaunchDesc,
    ) -> Option<policy::Decision> {
        let model = self.forest.as_deref()?;
        let key = (device_id, launch.trip_count);
        if let Some(d) = crate::lock(&entry.forest).get(&key) {
            return Some(*d);
        }
        if crate::lock(&entry.forest).len() >= MAX_TRIP_COUNTS {
            // A kernel whose trip count keeps changing: no search per launch.
            return policy::decide(&Policy::Auto, device, kernel, launch);
        }
        let d = policy::forest::decide_with(model, device, kernel, launch);
        crate::lock(&entry.forest).insert(key, d);
        Some(d)
    }

    fn first_sighting(&self, entry: &KernelEntry, device_id: i64, trip: u64) -> bool {
        crate::lock(&entry.logged).insert((device_id, trip))
    }

    /// The next point of the (device, trip count)'s sweep; `None` (LLVM's
    /// grid) for trip counts past [`MAX_TRIP_COUNTS`], so a kernel whose
    /// trip count changes at every launch keeps bounded state.
    fn next_sweep_point(
        &self,
        entry: &KernelEntry,
        device: &DeviceDesc,
        kernel: &KernelDesc,
        device_id: i64,
        launch: &LaunchDesc,
    ) -> Option<sweep::Candidate> {
        let mut sweeps = crate::lock(&entry.sweep);
        let key = (device_id, launch.trip_count);
        if !sweeps.contains_key(&key) && sweeps.len() >= MAX_TRIP_COUNTS {
            return None;
        }
        let (space, next) = sweeps
            .entry(key)
            .or_insert_with(|| (sweep::space(device, kernel, launch).into(), 0));
        let candidate = space.get(*next % space.len().max(1)).cloned();
        *next += 1;
        candidate
    }
}

/// The info line for one decision: what LLVM would do, what gridsel does
/// and why, the launch's limits where they are narrower than the kernel's
/// own, and everything known about the kernel.
pub fn describe(
    name: &str,
    kernel: &KernelDesc,
    device: &DeviceDesc,
    launch: &LaunchDesc,
    policy: &Policy,
    choice: &Choice,
) -> String {
    let d = &choice.decision;
    let limits = Limits::of(device, kernel, launch);
    format!(
        "{name}: trip {} ({} loop on {}, {} SMs): LLVM {} -> {policy} {}; {}{}{}; kernel: {kernel}",
        launch.trip_count,
        d.class,
        device.name,
        device.sm_count,
        choice.llvm,
        d.geometry,
        d.rule,
        if d.clamped {
            " (clamped to the launch's limits)"
        } else {
            ""
        },
        if limits.narrowed.is_some() {
            format!("; limits: {limits}")
        } else {
            String::new()
        },
    )
}
