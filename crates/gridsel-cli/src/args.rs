//! What commands of both command lines take: a launch to decide
//! ([`Target`]), a policy (its help, [`policy_help`]), and the kernels of
//! binaries on disk.

use clap::Args;
use gridsel_core::device::DeviceDesc;
use gridsel_core::env::ENV_POLICY;
use gridsel_core::geometry::LaunchDesc;
use gridsel_core::image;
use gridsel_core::kernel::{ExecMode, KernelDesc};
use gridsel_core::libomptarget::{LlvmRelease, LlvmRule};
use gridsel_core::policy::POLICY_NAMES;
use std::path::{Path, PathBuf};

/// The device, the kernel and the trip count of a launch.
#[derive(Args)]
pub struct Target {
    /// Preset (titanx-pascal, v100, a100, h100) or TOML device description.
    #[arg(long, default_value = "h100")]
    pub device: String,
    /// Iterations of the launch's `distribute` loop.
    #[arg(long)]
    pub trip_count: u64,
    /// Overrides the device's ThreadsPerBlock.
    #[arg(long)]
    pub threads_per_block: Option<u32>,
    /// Take the kernel's facts from this binary (with --kernel).
    #[arg(long, requires = "kernel")]
    pub binary: Option<PathBuf>,
    /// Kernel symbol in --binary.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Registers per thread (overrides --binary's).
    #[arg(long)]
    pub registers: Option<u32>,
    /// Static shared memory per block in bytes (overrides --binary's).
    #[arg(long)]
    pub shared_mem: Option<u32>,
    /// Local memory (stack) per thread in bytes (overrides --binary's).
    #[arg(long)]
    pub local_mem: Option<u32>,
    /// Compiled thread cap (clang's default is 128).
    #[arg(long)]
    pub max_threads: Option<u32>,
    /// spmd, generic or generic-spmd (default: --binary's, else spmd, the
    /// mode clang gives `target teams distribute parallel for`).
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<ExecMode>,
    /// Whether the kernel may run a `parallel` region inside another: yes
    /// or no. Such a kernel keeps at most LLVM's grid, since more threads or
    /// blocks can exhaust the GPU runtime's heap and fail the launch.
    /// Default: --binary's kernel environment, else no, as in the
    /// single-level `parallel for` kernels Lloyd et al. decide (their Fig. 7).
    #[arg(long, value_name = "yes|no", value_parser = parse_yes_no)]
    pub nested: Option<bool>,
    /// The LLVM release whose grid rule gives LLVM's grid (19 to 23;
    /// default 19).
    #[arg(long = "llvm-version", value_name = "MAJOR", value_parser = parse_llvm_rule)]
    pub llvm_release: Option<LlvmRelease>,
}

/// `--policy`'s help: the accepted names, from the library's own list.
pub fn policy_help() -> String {
    format!(
        "Grid policy: {POLICY_NAMES} (tune decides per launch at run time, so only {ENV_POLICY} takes it)"
    )
}

fn parse_llvm_rule(text: &str) -> Result<LlvmRelease, String> {
    let release: u32 = text.parse().map_err(|_| {
        let text = gridsel_core::text::shown(text);
        format!("`{text}` is not an LLVM major version")
    })?;
    let modelled = LlvmRule::MODELLED;
    match LlvmRule::of_release(release) {
        Some(_) => Ok(LlvmRelease::new(release)),
        None => Err(format!(
            "LLVM {release}'s grid rule is not modelled; {}-{} are",
            modelled.start(),
            modelled.end()
        )),
    }
}

/// `--mode`: spmd, generic or generic-spmd.
fn parse_mode(text: &str) -> Result<ExecMode, String> {
    match text {
        "spmd" => Ok(ExecMode::Spmd),
        "generic" => Ok(ExecMode::Generic),
        "generic-spmd" => Ok(ExecMode::GenericSpmd),
        _ => Err("expected spmd, generic or generic-spmd".into()),
    }
}

/// `--nested`: yes or no.
fn parse_yes_no(text: &str) -> Result<bool, String> {
    match text {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("expected yes or no".into()),
    }
}

impl Target {
    /// The device, the kernel (from --binary, with the flags' overrides) and
    /// the launch.
    pub fn resolve(&self) -> Result<(DeviceDesc, KernelDesc, LaunchDesc), String> {
        let mut device = gridsel_host::files::device(&self.device).map_err(|e| e.to_string())?;
        if let Some(tpb) = self.threads_per_block {
            device.threads_per_block = tpb;
            device.validate().map_err(|e| e.to_string())?;
        }
        // A kernel described by flags alone has no kernel environment; it
        // is the paper's kind unless the flags say otherwise: SPMD, no
        // nesting (--nested's help).
        let (mut kernel, nested) = match (&self.binary, &self.kernel) {
            (Some(path), Some(name)) => (find_kernel(path, name, device.sm_arch)?, self.nested),
            _ => {
                let flags_only = KernelDesc {
                    exec_mode: Some(ExecMode::Spmd),
                    ..KernelDesc::named("kernel")
                };
                (flags_only, Some(self.nested.unwrap_or(false)))
            }
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
        if let Some(nested) = nested {
            kernel.state_nesting(nested);
        }
        // Without --llvm-version, LLVM 19's rule (its help's default).
        let launch = LaunchDesc {
            llvm_release: self.llvm_release.unwrap_or(LlvmRelease::new(19)),
            ..LaunchDesc::open(self.trip_count)
        };
        Ok((device, kernel, launch))
    }
}

/// The offload images of the executable, library or object file at `path`.
pub fn read_images(path: &Path) -> Result<Vec<image::ImageInfo>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    image::images_in_file(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The kernel `name` of the file at `path`, its cubin for `sm_arch` first.
pub fn find_kernel(path: &Path, name: &str, sm_arch: u32) -> Result<KernelDesc, String> {
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

/// The arguments of `cli`'s subcommands that have no help, as
/// `SUBCOMMAND --ARGUMENT`: each binary's tests check that every flag is
/// defined with its help.
pub fn arguments_without_help(cli: &clap::Command) -> Vec<String> {
    cli.clone().debug_assert();
    let mut missing = Vec::new();
    for sub in cli.get_subcommands() {
        for arg in sub.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            if !builtin && arg.get_help().is_none() {
                missing.push(format!("{} --{}", sub.get_name(), arg.get_id()));
            }
        }
    }
    missing
}
