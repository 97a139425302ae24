//! What several commands take: a launch to decide (`Target`), sweep results
//! (`Measured`), and the kernels of binaries on disk.

use crate::calibrate;
use clap::Args;
use gridsel::device::DeviceDesc;
use gridsel::geometry::LaunchDesc;
use gridsel::image;
use gridsel::kernel::{ExecMode, KernelDesc};
use gridsel::policy::POLICY_NAMES;
use std::collections::HashMap;
use std::path::PathBuf;

/// The device, the measured cases and the kernels' descriptors by name.
pub(crate) type Loaded = (
    DeviceDesc,
    Vec<calibrate::Case>,
    HashMap<String, KernelDesc>,
);

/// Sweep results and what was measured: the harness's points.csv, the
/// binaries that ran, and the device they ran on.
#[derive(Args)]
pub(crate) struct Measured {
    /// The harness's points.csv.
    #[arg(long)]
    pub(crate) points: PathBuf,
    /// Folder of the benchmark binaries that were measured.
    #[arg(long)]
    pub(crate) binaries: PathBuf,
    /// Preset or profile of the measured device.
    #[arg(long, default_value = "h100")]
    pub(crate) device: String,
}

impl Measured {
    /// The device, the measured cases and the kernels' descriptors by name.
    pub(crate) fn load(&self) -> Result<Loaded, String> {
        let device = gridsel::files::device(&self.device).map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&self.points)
            .map_err(|e| format!("{}: {e}", self.points.display()))?;
        let cases = calibrate::read_points(&text)?;
        let kernels = kernels_in(&self.binaries, device.sm_arch)?;
        Ok((device, cases, kernels))
    }
}

/// The device, the kernel and the trip count of a launch.
#[derive(Args)]
pub(crate) struct Target {
    /// Preset (titanx-pascal, v100, a100, h100) or TOML profile.
    #[arg(long, default_value = "h100")]
    pub(crate) device: String,
    /// Iterations of the launch's `distribute` loop.
    #[arg(long)]
    pub(crate) trip_count: u64,
    /// Overrides the device's ThreadsPerBlock.
    #[arg(long)]
    pub(crate) threads_per_block: Option<u32>,
    /// Take the kernel's facts from this binary (with --kernel).
    #[arg(long, requires = "kernel")]
    pub(crate) binary: Option<PathBuf>,
    /// Kernel symbol in --binary.
    #[arg(long)]
    pub(crate) kernel: Option<String>,
    /// Registers per thread (overrides --binary's).
    #[arg(long)]
    pub(crate) registers: Option<u32>,
    /// Static shared memory per block in bytes (overrides --binary's).
    #[arg(long)]
    pub(crate) shared_mem: Option<u32>,
    /// Local memory (stack) per thread in bytes (overrides --binary's).
    #[arg(long)]
    pub(crate) local_mem: Option<u32>,
    /// Compiled thread cap (clang's default is 128).
    #[arg(long)]
    pub(crate) max_threads: Option<u32>,
    /// spmd, generic or generic-spmd.
    #[arg(long, value_parser = parse_mode)]
    pub(crate) mode: Option<ExecMode>,
}

/// `--policy`'s help: the accepted names, from the library's own list.
pub(crate) fn policy_help() -> String {
    format!(
        "Grid policy: {POLICY_NAMES} (sweep and tune decide per launch at run time, so only GRIDSEL_POLICY takes them)"
    )
}

pub(crate) fn parse_mode(text: &str) -> Result<ExecMode, String> {
    match text {
        "spmd" => Ok(ExecMode::Spmd),
        "generic" => Ok(ExecMode::Generic),
        "generic-spmd" => Ok(ExecMode::GenericSpmd),
        _ => Err("expected spmd, generic or generic-spmd".into()),
    }
}

impl Target {
    pub(crate) fn resolve(&self) -> Result<(DeviceDesc, KernelDesc, LaunchDesc), String> {
        let mut device = gridsel::files::device(&self.device).map_err(|e| e.to_string())?;
        if let Some(tpb) = self.threads_per_block {
            device.threads_per_block = tpb;
            device.validate().map_err(|e| e.to_string())?;
        }
        let mut kernel = match (&self.binary, &self.kernel) {
            (Some(path), Some(name)) => find_kernel(path, name, device.sm_arch)?,
            _ => KernelDesc::named("kernel"),
        };
        let overrides = [
            (&mut kernel.registers, self.registers),
            (&mut kernel.shared_mem, self.shared_mem),
            (&mut kernel.local_mem, self.local_mem),
            (&mut kernel.max_threads, self.max_threads),
        ];
        for (field, value) in overrides {
            if value.is_some() {
                *field = value;
            }
        }
        kernel.exec_mode = self.mode.or(kernel.exec_mode);
        Ok((device, kernel, LaunchDesc::open(self.trip_count)))
    }
}

pub(crate) fn read_images(path: &PathBuf) -> Result<Vec<image::ImageInfo>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    image::images_in_file(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

pub(crate) fn find_kernel(path: &PathBuf, name: &str, sm_arch: u32) -> Result<KernelDesc, String> {
    let images = read_images(path)?;
    let mut found: Vec<KernelDesc> = images
        .into_iter()
        .flat_map(|i| i.kernels)
        .filter(|k| k.name == name)
        .collect();
    found.sort_by_key(|k| k.sm_arch != Some(sm_arch));
    found
        .into_iter()
        .next()
        .ok_or_else(|| format!("{}: no kernel {name}", path.display()))
}

/// Every kernel descriptor in the binaries of `dir`, by name, for `sm_arch`.
pub(crate) fn kernels_in(
    dir: &PathBuf,
    sm_arch: u32,
) -> Result<HashMap<String, KernelDesc>, String> {
    let mut out = HashMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let Ok(images) = read_images(&entry.path()) else {
            continue;
        };
        for k in images.into_iter().flat_map(|i| i.kernels) {
            if k.sm_arch.is_none_or(|a| a == sm_arch) {
                out.insert(k.name.clone(), k);
            }
        }
    }
    Ok(out)
}
