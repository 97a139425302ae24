//! The kernels of the registered binaries, by host entry address: what
//! `__tgt_register_lib` recorded, looked up at every launch.

use crate::IntMap;
use crate::Reported;
use crate::device::DeviceDesc;
use crate::image::{self, ImageKind};
use crate::kernel::KernelDesc;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

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
    pub(super) fn desc_index(&self, device: &DeviceDesc) -> usize {
        let exact = self
            .descs
            .iter()
            .position(|d| d.sm_arch == Some(device.sm_arch));
        exact
            .or_else(|| self.descs.iter().position(|d| d.sm_arch.is_some()))
            .unwrap_or(0)
    }

    /// Whether (device, trip) is seen for the first time (then logged).
    pub(super) fn first_sighting(&self, device_id: i64, trip: u64) -> bool {
        self.logged.first((device_id, trip))
    }
}

/// The registered kernels.
#[derive(Default)]
pub(super) struct Registry {
    kernels: RwLock<IntMap<usize, Arc<KernelEntry>>>,
    next_serial: AtomicU64,
    /// Some registered binary has a cubin: the kernels' resources are known.
    cubin_seen: AtomicBool,
    /// Said once: device images without a cubin.
    said_no_cubin: Reported<()>,
}

impl Registry {
    /// Records a registered binary's kernels: `entries` are (host address,
    /// device symbol) pairs, `images` the raw device images. Returns the
    /// kernels registered.
    pub(super) fn register(
        &self,
        entries: &[(usize, String)],
        images: &[&[u8]],
    ) -> Vec<Arc<KernelEntry>> {
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
        // that no CUDA device runs them (`Devices::forced_for`); a GPU image
        // without a cubin (LLVM bitcode) is said here, once.
        let host_only = parsed
            .iter()
            .all(|i| matches!(i.kind, ImageKind::HostElf { .. }));
        if !has_cubin && !host_only && self.said_no_cubin.first(()) {
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
        registered
    }

    /// Forgets the kernels of an unregistered binary.
    pub(super) fn unregister(&self, entries: &[(usize, String)]) {
        let mut table = crate::write_lock(&self.kernels);
        for (addr, _) in entries {
            table.remove(addr);
        }
    }

    /// The kernel behind a host entry address.
    pub(super) fn kernel(&self, host_ptr: usize) -> Option<Arc<KernelEntry>> {
        crate::read_lock(&self.kernels).get(&host_ptr).cloned()
    }

    /// Whether some registered binary had a cubin.
    pub(super) fn cubin_seen(&self) -> bool {
        self.cubin_seen.load(Ordering::Relaxed)
    }
}
