//! The devices launches go to, each described once: forced by
//! `GRIDSEL_DEVICE`, or read from the CUDA driver that libomptarget loaded.

use crate::IntMap;
use crate::Reported;
use crate::config::{Config, ENV_DEVICE};
use crate::device::DeviceDesc;
use crate::libomptarget::LlvmRelease;
use gridsel_host::ffi::cuda;
use std::sync::{Arc, RwLock};

/// The description of each device id, `None` for one that has none (its
/// launches pass through), read once.
#[derive(Default)]
pub(super) struct Devices {
    known: RwLock<IntMap<i64, Option<Arc<DeviceDesc>>>>,
    /// Said once per device id: it has no description.
    said_none: Reported<i64>,
    /// Said once: launches go to a device that is not a CUDA device.
    said_host_offload: Reported<()>,
}

/// What [`Devices::get`] says of the process where it reads a device for
/// the first time.
pub(super) struct Process {
    /// The libomptarget launches go to.
    pub llvm_release: LlvmRelease,
    /// Some registered binary had a cubin.
    pub cubin_seen: bool,
}

impl Devices {
    /// The description of device `id`: forced by the settings, or read
    /// once from the CUDA driver that libomptarget loaded.
    pub(super) fn get(
        &self,
        id: i64,
        config: &Config,
        process: Process,
    ) -> Option<Arc<DeviceDesc>> {
        if let Some(found) = crate::read_lock(&self.known).get(&id) {
            return found.clone();
        }
        let desc = match &config.device {
            Some(forced) => Ok(self.forced_for(forced, id, process)),
            None => i32::try_from(id)
                .map_err(|_| format!("device id {id} out of range"))
                .and_then(cuda::device_in_process),
        };
        let desc = match desc {
            Ok(d) => Some(Arc::new(config.refine(d))),
            Err(e) => {
                if self.said_none.first(id) {
                    log::warn!(
                        "device {id}: {e}; its launches pass through (set {ENV_DEVICE} to choose anyway)"
                    );
                }
                None
            }
        };
        crate::write_lock(&self.known)
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
    fn forced_for(&self, forced: &DeviceDesc, id: i64, process: Process) -> DeviceDesc {
        if i32::try_from(id).is_ok_and(cuda::has_device) {
            return forced.clone();
        }
        let name = format!("{} (forced; no CUDA device)", forced.name);
        if self.said_host_offload.first(()) {
            // From LLVM 21 on the host plugin runs every kernel as Generic,
            // 1 block of 1 thread (docs/llvm-grid.md §1); 19's launches the
            // grid it is given, on the CPU.
            let effect = if process.llvm_release.rule().release() >= 21 {
                "and LLVM's host plugin runs every kernel as 1 block of 1 thread, so the grids gridsel chooses have no effect"
            } else {
                "so the grids gridsel chooses run on the CPU and tell nothing of a GPU's speed"
            };
            let facts = if process.cubin_seen {
                ""
            } else {
                ", from the trip count alone (the program has no cubin to give its kernels' registers, memory use and thread caps)"
            };
            log::info!(
                "device {id}: no CUDA device runs its launches (host offload?), {effect}; the grids below are those gridsel would launch on the {} that {ENV_DEVICE} names{facts}, and tune keeps their times under `{name}`, apart from a real {}'s",
                forced.name,
                forced.name
            );
        }
        DeviceDesc {
            name,
            ..forced.clone()
        }
    }
}
