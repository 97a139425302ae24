//! The top of the preload library: the symbols gridsel exports,
//! libomptarget's three entry points, which it interposes, and the C API of
//! `include/gridsel.h`. They convert the C ABI (through [`crate::ffi`]) and
//! call into the library; with `ffi` they hold every `unsafe` line.
//!
//! Every export runs its work through [`boundary`]: a panic inside gridsel
//! is caught, logged once, and the call is forwarded exactly as it came.
//! The exports only convert the C ABI: the launch itself is
//! [`Runtime::launch`]'s.
//! Null checks happen in the [`crate::ffi::abi`] readers.
//!
//! The interposed entry points are `extern "C-unwind"` and call the real
//! function outside [`boundary`]: an exception libomptarget throws unwinds
//! through gridsel to the program, as it would without gridsel (through an
//! `extern "C"` function it aborts the process, and `catch_unwind` aborts on
//! a foreign exception too).

use crate::Reported;
use crate::device::DeviceDesc;
use crate::ffi::abi::{self, BinDesc, KernelArgs};
use crate::ffi::dl;
use crate::geometry::LaunchDesc;
use crate::guard::boundary;
use crate::kernel::{ExecMode, KernelDesc};
use crate::libomptarget::LlvmRelease;
use crate::policy::{self, Policy};
use crate::runtime::{LaunchRequest, Runtime};
use std::ffi::{CStr, c_char, c_int, c_void};

/// libomptarget's `OFFLOAD_FAIL`: the host runs its fallback for the region.
const OFFLOAD_FAIL: c_int = !0;

/// Records the images and kernels of a binary, then registers it with
/// libomptarget. Called by each binary's constructor before `main`.
///
/// # Safety
/// `desc` is the compiler-generated `__tgt_bin_desc` of the calling binary.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn __tgt_register_lib(desc: *mut BinDesc) {
    boundary(|| match unsafe { abi::read_bin_desc(desc) } {
        Ok(lib) => Runtime::global().register(&lib.kernels, &lib.images),
        Err(e) => log::warn!("__tgt_register_lib: {e}; this binary's kernels pass through"),
    });
    if let Some(real) = dl::register_lib() {
        // SAFETY: forwarding the caller's own argument to the real function.
        unsafe { real(desc) }
    }
}

/// Forgets a binary's kernels, flushes the profile, and unregisters it.
///
/// # Safety
/// As for [`__tgt_register_lib`].
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn __tgt_unregister_lib(desc: *mut BinDesc) {
    boundary(|| {
        if let Ok(lib) = unsafe { abi::read_bin_desc(desc) } {
            Runtime::global().unregister(&lib.kernels);
        }
    });
    if let Some(real) = dl::unregister_lib() {
        // SAFETY: forwarding the caller's own argument.
        unsafe { real(desc) }
    }
}

/// Chooses the grid of an OpenMP kernel launch and forwards it.
///
/// Returns libomptarget's result; 0 is success, anything else makes the
/// program run the region's host fallback (or stop, under
/// `OMP_TARGET_OFFLOAD=MANDATORY`). When libomptarget cannot be found the
/// call fails that way: there is nothing to forward to.
///
/// # Safety
/// The arguments are those clang passes to libomptarget's function.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn __tgt_target_kernel(
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
) -> c_int {
    // The runtime first: it installs the logger the lookup's error needs.
    let runtime = boundary(Runtime::global);
    let Some(real) = dl::target_kernel() else {
        return OFFLOAD_FAIL;
    };
    match runtime {
        // SAFETY: forwarded from the caller.
        Some(rt) => unsafe {
            launch_with(
                rt,
                real,
                loc,
                device_id,
                num_teams,
                thread_limit,
                host_ptr,
                args,
            )
        },
        // SAFETY: the caller's own arguments, unchanged.
        None => unsafe { real(loc, device_id, num_teams, thread_limit, host_ptr, args) },
    }
}

/// The body of [`__tgt_target_kernel`] with the runtime and the forwarding
/// target given, so the launch path can be measured against a stand-in: the
/// ABI read into a [`LaunchRequest`], then [`Runtime::launch`], which calls
/// back to write the chosen grid and forward.
///
/// # Safety
/// As for [`__tgt_target_kernel`]; `real` has its signature.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn launch_with(
    rt: &Runtime,
    real: dl::TargetKernelFn,
    loc: *mut c_void,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *mut c_void,
) -> c_int {
    let read = boundary(|| match unsafe { KernelArgs::read(args) } {
        Ok(a) => Some(a),
        Err(e) => {
            report_abi_once(&e);
            None
        }
    })
    .flatten();
    // Multi-dimensional launches and grids a flag fixes (strict, cooperative)
    // are the program's own business.
    let Some(mut kernel_args) = read.filter(KernelArgs::grid_may_change) else {
        // SAFETY: the caller's own arguments, unchanged.
        return unsafe { real(loc, device_id, num_teams, thread_limit, host_ptr, args) };
    };
    // A tuning session's runs time every launch whose grid may change, the
    // `nowait` ones too: they wait for their kernel (`GRIDSEL_TUNE_WAIT`).
    if rt.config.tune_wait {
        kernel_args.wait_for_kernel();
    }
    let request = LaunchRequest {
        device_id: dl::resolve_device(device_id),
        host_ptr: host_ptr as usize,
        desc: LaunchDesc {
            trip_count: kernel_args.trip_count,
            num_teams,
            thread_limit,
            llvm_release: rt.llvm_release(),
        },
        waits: !kernel_args.nowait,
    };
    rt.launch(request, |write| {
        let (teams, threads) = match write {
            Some((teams, threads)) => {
                kernel_args.write_grid(teams, threads);
                (teams, threads)
            }
            None => (num_teams, thread_limit),
        };
        // SAFETY: the caller's arguments, with the grid gridsel chose.
        unsafe { real(loc, device_id, teams, threads, host_ptr, args) }
    })
}

fn report_abi_once(e: &abi::AbiError) {
    static REPORTED: Reported<()> = Reported::new();
    if REPORTED.first(()) {
        log::warn!("__tgt_target_kernel: {e}; launches pass through");
    }
}

// ---- C API (include/gridsel.h) -------------------------------------------
// These call no foreign code, so nothing can unwind into them but a panic,
// which `boundary` catches: they stay `extern "C"`.

/// Declares a C struct of `u32` fields that mirror [`DeviceDesc`]'s
/// fields of the same names, with the conversions both ways, from one list
/// of field names: a field added to the list is converted both ways, and
/// `header_structs_list_the_rust_fields_in_order` checks the list against
/// `include/gridsel.h`.
macro_rules! c_device {
    ($(#[$meta:meta])* pub struct $name:ident { $($field:ident),* $(,)? }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name {
            $(pub $field: u32,)*
        }

        impl $name {
            /// The field names, in declaration (and C) order.
            #[cfg(test)]
            pub const FIELDS: &[&str] = &[$(stringify!($field)),*];

            fn to_desc(self) -> DeviceDesc {
                DeviceDesc {
                    name: "C API device".into(),
                    $($field: self.$field,)*
                }
            }
        }

        impl From<&DeviceDesc> for $name {
            fn from(d: &DeviceDesc) -> Self {
                Self { $($field: d.$field,)* }
            }
        }
    };
}

c_device! {
    /// `gridsel_device`: a GPU's limits, [`DeviceDesc`]'s numbers.
    pub struct CDevice {
        sm_arch,
        sm_count,
        max_threads_per_sm,
        max_registers_per_sm,
        max_shared_mem_per_sm,
        max_blocks_per_sm,
        max_threads_per_block,
        warp_size,
        threads_per_block,
        register_alloc_unit,
        shared_alloc_unit,
        reserved_shared_per_block,
        waves,
    }
}

/// `gridsel_kernel`: a kernel's resources; 0 means unknown.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CKernel {
    pub registers: u32,
    pub shared_mem: u32,
    pub local_mem: u32,
    pub max_threads: u32,
    /// 0 unknown, 1 Generic, 2 SPMD, 3 Generic-SPMD.
    pub exec_mode: u32,
    /// 0 unknown, 1 no nested parallelism, 2 may nest.
    pub nesting: u32,
}

/// `gridsel_grid`: the answer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CGrid {
    pub threads: u32,
    pub blocks: u32,
    pub llvm_threads: u32,
    pub llvm_blocks: u32,
    /// 0 none, 1 short, 2 ideal, 3 long.
    pub loop_class: u32,
}

// The same sizes are asserted for C in include/gridsel_abi_check.c.
const _: () = assert!(size_of::<CDevice>() == 13 * 4);
const _: () = assert!(size_of::<CKernel>() == 6 * 4);
const _: () = assert!(size_of::<CGrid>() == 5 * 4);

pub const GRIDSEL_OK: c_int = 0;
pub const GRIDSEL_ERR_NULL: c_int = -1;
pub const GRIDSEL_ERR_POLICY: c_int = -2;
pub const GRIDSEL_ERR_DEVICE: c_int = -3;
pub const GRIDSEL_ERR_INTERNAL: c_int = -4;

impl CKernel {
    /// The caller's description; its mode, cap and nesting stand for the
    /// kernel environment they come from.
    fn to_desc(self) -> KernelDesc {
        let known = |v: u32| (v > 0).then_some(v);
        let mut kernel = KernelDesc {
            registers: known(self.registers),
            shared_mem: known(self.shared_mem),
            local_mem: known(self.local_mem),
            max_threads: known(self.max_threads),
            exec_mode: u8::try_from(self.exec_mode)
                .ok()
                .and_then(ExecMode::from_raw),
            ..KernelDesc::named("C API kernel")
        };
        match self.nesting {
            1 => kernel.state_nesting(false),
            2 => kernel.state_nesting(true),
            _ => {}
        }
        kernel
    }
}

/// Fills `out` with a shipped preset (`titanx-pascal`, `v100`, `a100`, `h100`).
/// Returns `GRIDSEL_OK`, `GRIDSEL_ERR_NULL` or `GRIDSEL_ERR_DEVICE`.
///
/// # Safety
/// `name` is null or NUL-terminated; `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gridsel_device_preset(name: *const c_char, out: *mut CDevice) -> c_int {
    boundary(|| {
        if name.is_null() || out.is_null() {
            return GRIDSEL_ERR_NULL;
        }
        // SAFETY: checked for null; NUL-terminated by contract.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        match DeviceDesc::preset(&name) {
            Some(d) => {
                // SAFETY: checked for null; writable by contract.
                unsafe { out.write(CDevice::from(&d)) };
                GRIDSEL_OK
            }
            None => GRIDSEL_ERR_DEVICE,
        }
    })
    .unwrap_or(GRIDSEL_ERR_INTERNAL)
}

/// Chooses the grid `policy` gives a kernel launched over `trip_count`
/// iterations with its grid left open, next to LLVM 19's choice (a trip
/// count of 0, a region without a distribute loop, gets LLVM's grid from
/// every policy but `fixed`).
/// Returns `GRIDSEL_OK`, `GRIDSEL_ERR_NULL`, `GRIDSEL_ERR_POLICY` (unknown or
/// stateful policy) or `GRIDSEL_ERR_DEVICE` (invalid device).
///
/// # Safety
/// Pointers are null or valid; `policy` is NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gridsel_select(
    device: *const CDevice,
    kernel: *const CKernel,
    trip_count: u64,
    policy: *const c_char,
    out: *mut CGrid,
) -> c_int {
    boundary(|| {
        // SAFETY: null-checked reads of caller-owned plain structs.
        let (Some(device), Some(kernel)) = (unsafe { device.as_ref() }, unsafe { kernel.as_ref() })
        else {
            return GRIDSEL_ERR_NULL;
        };
        if policy.is_null() || out.is_null() {
            return GRIDSEL_ERR_NULL;
        }
        let device = device.to_desc();
        if device.validate().is_err() {
            return GRIDSEL_ERR_DEVICE;
        }
        // SAFETY: checked for null; NUL-terminated by contract.
        let Ok(policy) = unsafe { CStr::from_ptr(policy) }
            .to_string_lossy()
            .parse::<Policy>()
        else {
            return GRIDSEL_ERR_POLICY;
        };
        let kernel = kernel.to_desc();
        // The header promises LLVM 19's grid beside the decision.
        let launch = LaunchDesc {
            llvm_release: LlvmRelease::new(19),
            ..LaunchDesc::open(trip_count)
        };
        let Some(decision) = policy::decide(&policy, &device, &kernel, &launch) else {
            return GRIDSEL_ERR_POLICY;
        };
        let llvm = policy::llvm::grid(&device, &kernel, &launch);
        let loop_class = match decision.class {
            crate::LoopClass::None => 0,
            crate::LoopClass::Short => 1,
            crate::LoopClass::Ideal => 2,
            crate::LoopClass::Long => 3,
        };
        let grid = CGrid {
            threads: decision.geometry.threads,
            blocks: decision.geometry.blocks,
            llvm_threads: llvm.threads,
            llvm_blocks: llvm.blocks,
            loop_class,
        };
        // SAFETY: checked for null; writable by contract.
        unsafe { out.write(grid) };
        GRIDSEL_OK
    })
    .unwrap_or(GRIDSEL_ERR_INTERNAL)
}

/// The library version, a static NUL-terminated string.
#[unsafe(no_mangle)]
pub extern "C" fn gridsel_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field names of `typedef struct NAME { ... } NAME;` in the
    /// header, in order.
    fn header_fields(header: &str, name: &str) -> Vec<String> {
        let start = header
            .find(&format!("typedef struct {name} {{"))
            .unwrap_or_else(|| panic!("no struct {name} in the header"));
        let body = &header[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
        body.lines()
            .filter_map(|line| {
                let decl = line.split("/*").next()?.trim().strip_suffix(';')?;
                Some(decl.split_whitespace().last()?.to_owned())
            })
            .collect()
    }

    #[test]
    fn header_structs_list_the_rust_fields_in_order() {
        let header = include_str!("../include/gridsel.h");
        assert_eq!(header_fields(header, "gridsel_device"), CDevice::FIELDS);
        assert_eq!(CDevice::FIELDS.len() * 4, size_of::<CDevice>());
    }

    #[test]
    fn a_device_crosses_the_c_api_unchanged() {
        let h100 = DeviceDesc::preset("h100").unwrap();
        let back = CDevice::from(&h100).to_desc();
        assert_eq!(
            DeviceDesc {
                name: h100.name.clone(),
                ..back
            },
            h100
        );
        assert_eq!(back.name, "C API device");
    }
}
