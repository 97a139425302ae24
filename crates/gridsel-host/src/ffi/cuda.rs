//! Device attributes from the CUDA driver, through cudarc's dynamic loading.
//!
//! Inside a program, gridsel only talks to a libcuda that libomptarget has
//! already loaded (checked with `RTLD_NOLOAD`), so it never loads a second
//! driver or wakes a GPU the program does not use. cudarc panics when the
//! library or a symbol is missing; every call here runs behind
//! [`guard::quiet`] and comes back as an error string.

use crate::guard;
use cudarc::driver::sys::{self, CUdevice_attribute as Attr, CUresult};
use gridsel_core::device::DeviceDesc;
use std::ffi::{CStr, c_int};

const LIBCUDA_NAMES: [&CStr; 2] = [c"libcuda.so.1", c"libcuda.so"];

/// Whether libcuda is mapped into this process (`load`: or can be loaded).
fn libcuda_available(load: bool) -> bool {
    let flags = if load {
        libc::RTLD_LAZY
    } else {
        libc::RTLD_LAZY | libc::RTLD_NOLOAD
    };
    LIBCUDA_NAMES.iter().any(|name| {
        // SAFETY: dlopen with a valid name; the handle is closed right away,
        // which only drops the reference this call took.
        unsafe {
            let handle = libc::dlopen(name.as_ptr(), flags);
            if handle.is_null() {
                false
            } else {
                libc::dlclose(handle);
                true
            }
        }
    })
}

fn check(result: CUresult, what: &str) -> Result<(), String> {
    if result == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {result:?}"))
    }
}

fn guarded<T>(body: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    guard::quiet(body)
        .unwrap_or_else(|_| Err("the CUDA driver library lacks a needed symbol".into()))
}

fn attribute(device: c_int, attr: Attr) -> Result<u32, String> {
    let mut value: c_int = 0;
    // SAFETY: a valid out pointer and a device ordinal checked by the driver.
    check(
        unsafe { sys::cuDeviceGetAttribute(&mut value, attr, device) },
        "cuDeviceGetAttribute",
    )?;
    u32::try_from(value).map_err(|_| format!("attribute {attr:?} is negative"))
}

/// How many devices the driver sees, initialising it first.
fn device_count() -> Result<c_int, String> {
    // SAFETY: cuInit is idempotent and thread-safe.
    check(unsafe { sys::cuInit(0) }, "cuInit")?;
    let mut count: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { sys::cuDeviceGetCount(&mut count) },
        "cuDeviceGetCount",
    )?;
    Ok(count)
}

fn describe(ordinal: c_int) -> Result<DeviceDesc, String> {
    let count = device_count()?;
    if ordinal < 0 || ordinal >= count {
        return Err(format!("no CUDA device {ordinal} ({count} present)"));
    }
    let mut raw_name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds 256 bytes and the driver NUL-terminates.
    check(
        unsafe { sys::cuDeviceGetName(raw_name.as_mut_ptr(), 256, ordinal) },
        "cuDeviceGetName",
    )?;
    // SAFETY: NUL-terminated by the driver, within the buffer.
    let name = unsafe { CStr::from_ptr(raw_name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let major = attribute(ordinal, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(ordinal, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let sm_arch = major * 10 + minor;
    // Allocation granularities are per architecture and not driver
    // attributes; the preset of the same generation supplies them.
    let family = match major {
        0..=6 => "titanx-pascal",
        7 => "v100",
        8 => "a100",
        _ => "h100",
    };
    let base = DeviceDesc::preset(family).ok_or("missing preset")?;
    let desc = DeviceDesc {
        name,
        sm_arch,
        sm_count: attribute(ordinal, Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_sm: attribute(
            ordinal,
            Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )?,
        max_registers_per_sm: attribute(
            ordinal,
            Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        )?,
        max_shared_mem_per_sm: attribute(
            ordinal,
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        )?,
        max_blocks_per_sm: attribute(
            ordinal,
            Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
        )?,
        max_threads_per_block: attribute(ordinal, Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        warp_size: attribute(ordinal, Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        reserved_shared_per_block: attribute(
            ordinal,
            Attr::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        )?,
        ..base
    };
    desc.validate().map_err(|e| e.to_string())?;
    Ok(desc)
}

/// Whether the driver libomptarget loaded into this process has a device
/// `ordinal`, the CUDA plugin's device of that number (without one, the
/// launches of that device number run on another plugin: host offload).
pub fn has_device(ordinal: i32) -> bool {
    libcuda_available(false) && guarded(device_count).is_ok_and(|count| ordinal < count)
}

/// Device `ordinal` from the driver libomptarget loaded into this process.
pub fn device_in_process(ordinal: i32) -> Result<DeviceDesc, String> {
    if !libcuda_available(false) {
        return Err("no CUDA driver loaded in this process (host offload or no GPU)".into());
    }
    guarded(|| describe(ordinal))
}

/// Every GPU on this machine, loading libcuda if needed (for the CLI).
pub fn devices_on_machine() -> Result<Vec<DeviceDesc>, String> {
    if !libcuda_available(true) {
        return Err("libcuda.so.1 cannot be loaded (no NVIDIA driver)".into());
    }
    guarded(|| (0..device_count()?).map(describe).collect())
}

/// What the driver says about one kernel of a loaded cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverKernel {
    pub name: String,
    pub registers: u32,
    pub shared_mem: u32,
    pub local_mem: u32,
    pub max_threads: u32,
    /// `cuOccupancyMaxPotentialBlockSize`: (block size, minimum grid size).
    pub potential: (u32, u32),
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor` for each block size asked.
    pub active_blocks: Vec<(u32, u32)>,
}

/// Loads `cubin` into device `ordinal`'s primary context and asks the driver
/// for each named kernel's attributes and occupancy at `block_sizes`. For
/// checking the cubin parser and the occupancy model against the driver.
pub fn driver_kernels(
    ordinal: i32,
    cubin: &[u8],
    names: &[String],
    block_sizes: &[u32],
) -> Result<Vec<DriverKernel>, String> {
    if !libcuda_available(true) {
        return Err("libcuda.so.1 cannot be loaded (no NVIDIA driver)".into());
    }
    guarded(|| {
        // The driver reads the image in place: keep it 8-byte aligned.
        let mut aligned = vec![0u64; cubin.len().div_ceil(8)];
        // SAFETY: the destination holds at least cubin.len() bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                cubin.as_ptr(),
                aligned.as_mut_ptr().cast::<u8>(),
                cubin.len(),
            )
        };
        let mut device: sys::CUdevice = 0;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: valid out pointers; the context is the device's primary one.
        unsafe {
            check(sys::cuInit(0), "cuInit")?;
            check(sys::cuDeviceGet(&mut device, ordinal), "cuDeviceGet")?;
            check(
                sys::cuDevicePrimaryCtxRetain(&mut ctx, device),
                "cuDevicePrimaryCtxRetain",
            )?;
            check(sys::cuCtxSetCurrent(ctx), "cuCtxSetCurrent")?;
            check(
                sys::cuModuleLoadData(&mut module, aligned.as_ptr().cast()),
                "cuModuleLoadData",
            )?;
        }
        let result = names
            .iter()
            .map(|name| driver_kernel(module, name, block_sizes))
            .collect();
        // SAFETY: the module was loaded above and is no longer used.
        unsafe { sys::cuModuleUnload(module) };
        result
    })
}

fn driver_kernel(
    module: sys::CUmodule,
    name: &str,
    block_sizes: &[u32],
) -> Result<DriverKernel, String> {
    use sys::CUfunction_attribute as F;
    let c_name = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
    let mut func: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: a loaded module and a NUL-terminated name.
    check(
        unsafe { sys::cuModuleGetFunction(&mut func, module, c_name.as_ptr()) },
        "cuModuleGetFunction",
    )?;
    let attr = |a: F| -> Result<u32, String> {
        let mut v: c_int = 0;
        // SAFETY: valid out pointer and function handle.
        check(
            unsafe { sys::cuFuncGetAttribute(&mut v, a, func) },
            "cuFuncGetAttribute",
        )?;
        u32::try_from(v).map_err(|_| format!("{a:?} is negative"))
    };
    let (mut min_grid, mut block): (c_int, c_int) = (0, 0);
    // SAFETY: valid out pointers; no dynamic shared memory, no size limit.
    check(
        unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(&mut min_grid, &mut block, func, None, 0, 0)
        },
        "cuOccupancyMaxPotentialBlockSize",
    )?;
    let mut active_blocks = Vec::with_capacity(block_sizes.len());
    for &threads in block_sizes {
        let mut n: c_int = 0;
        let size = c_int::try_from(threads).map_err(|e| e.to_string())?;
        // SAFETY: valid out pointer and function handle.
        check(
            unsafe { sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, func, size, 0) },
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        )?;
        active_blocks.push((threads, u32::try_from(n).unwrap_or(0)));
    }
    Ok(DriverKernel {
        name: name.to_string(),
        registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        shared_mem: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        local_mem: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        max_threads: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        potential: (
            u32::try_from(block).unwrap_or(0),
            u32::try_from(min_grid).unwrap_or(0),
        ),
        active_blocks,
    })
}
