//! What several commands take: a launch to decide (`Target`), sweep results
//! (`Measured`), and the kernels of binaries on disk.

use crate::calibrate;
use clap::Args;
use gridsel::device::DeviceDesc;
use gridsel::geometry::LaunchDesc;
use gridsel::image;
use gridsel::kernel::{ExecMode, KernelDesc};
use gridsel::policy::POLICY_NAMES;
use gridsel::policy::llvm::LlvmRule;
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
    /// The device, the measured cases and the kernels' descriptors by the
    /// names the cases give them ([`KernelIndex`]).
    pub(crate) fn load(&self) -> Result<Loaded, String> {
        let device = gridsel::files::device(&self.device).map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&self.points)
            .map_err(|e| format!("{}: {e}", self.points.display()))?;
        let cases = calibrate::read_points(&text)?;
        let index = KernelIndex::load(&self.binaries, device.sm_arch)?;
        let kernels = cases
            .iter()
            .filter_map(|c| Some((c.kernel.clone(), index.get(&c.program, &c.kernel)?.clone())))
            .collect();
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
    /// The LLVM release whose grid rule gives LLVM's grid (19 to 23;
    /// default 19).
    #[arg(long = "llvm-version", value_name = "MAJOR", value_parser = parse_llvm_rule)]
    pub(crate) llvm: Option<LlvmRule>,
}

/// `--policy`'s help: the accepted names, from the library's own list.
pub(crate) fn policy_help() -> String {
    format!(
        "Grid policy: {POLICY_NAMES} (sweep and tune decide per launch at run time, so only GRIDSEL_POLICY takes them)"
    )
}

fn parse_llvm_rule(text: &str) -> Result<LlvmRule, String> {
    let release: u32 = text
        .parse()
        .map_err(|_| format!("`{text}` is not an LLVM major version"))?;
    let modelled = LlvmRule::MODELLED;
    LlvmRule::of_release(release).ok_or_else(|| {
        format!(
            "LLVM {release}'s grid rule is not modelled; {}-{} are",
            modelled.start(),
            modelled.end()
        )
    })
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
        device.llvm = self.llvm.unwrap_or_default();
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

/// The kernels of the binaries in a folder, found by the name a sweep
/// recorded. A kernel's symbol carries its source file's device and inode
/// (`__omp_offloading_<dev>_<file>_<function>_l<line>`), so the same sources
/// built elsewhere name it differently: a name is matched exactly first,
/// then by program (the binary's file name) and `<function>_l<line>`. Of a
/// kernel in a cubin for `sm_arch` and in a host image, the cubin's wins.
pub(crate) struct KernelIndex {
    exact: HashMap<String, KernelDesc>,
    stable: HashMap<(String, String), KernelDesc>,
}

impl KernelIndex {
    pub(crate) fn load(dir: &PathBuf, sm_arch: u32) -> Result<Self, String> {
        let mut index = Self {
            exact: HashMap::new(),
            stable: HashMap::new(),
        };
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let Ok(images) = read_images(&entry.path()) else {
                continue;
            };
            let program = entry.file_name().to_string_lossy().into_owned();
            for k in images.into_iter().flat_map(|i| i.kernels) {
                let cubin = match k.sm_arch {
                    Some(a) if a == sm_arch => true,
                    Some(_) => continue,
                    None => false,
                };
                let key = (program.clone(), stable_name(&k.name).to_string());
                if cubin || !index.exact.contains_key(&k.name) {
                    index.stable.insert(key, k.clone());
                    index.exact.insert(k.name.clone(), k);
                }
            }
        }
        Ok(index)
    }

    /// The kernel a sweep recorded as `kernel` of `program`.
    pub(crate) fn get(&self, program: &str, kernel: &str) -> Option<&KernelDesc> {
        self.exact.get(kernel).or_else(|| {
            self.stable
                .get(&(program.to_string(), stable_name(kernel).to_string()))
        })
    }

    /// Every kernel, in no particular order.
    pub(crate) fn all(&self) -> impl Iterator<Item = &KernelDesc> {
        self.exact.values()
    }
}

/// `<function>_l<line>` of an OpenMP kernel symbol (the part that does not
/// depend on where the source file lives); other names as they are.
fn stable_name(kernel: &str) -> &str {
    kernel
        .strip_prefix("__omp_offloading_")
        .and_then(|rest| rest.splitn(3, '_').nth(2))
        .unwrap_or(kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_is_found_by_its_name_or_by_program_function_and_line() {
        let k = |name: &str| KernelDesc::named(name);
        let here = "__omp_offloading_fe00_510055_kernel_ab_l15";
        let elsewhere = "__omp_offloading_10302_2a7f1c_kernel_ab_l15";
        assert_eq!(stable_name(here), "kernel_ab_l15");
        assert_eq!(stable_name(elsewhere), "kernel_ab_l15");
        assert_eq!(stable_name("saxpy"), "saxpy");
        let index = KernelIndex {
            exact: HashMap::from([(here.to_string(), k(here))]),
            stable: HashMap::from([(("2mm".to_string(), "kernel_ab_l15".to_string()), k(here))]),
        };
        assert_eq!(index.get("anything", here).unwrap().name, here);
        // A sweep recorded on another machine: same program, other file id.
        assert_eq!(index.get("2mm", elsewhere).unwrap().name, here);
        // Another program's kernel of the same function and line is not it.
        assert!(index.get("3mm", elsewhere).is_none());
    }
}
