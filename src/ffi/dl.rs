//! The real libomptarget functions, found once with `dlsym(RTLD_NEXT, ...)`.

use std::ffi::{CStr, OsStr, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::abi::BinDesc;

// "C-unwind": libomptarget, or a runtime standing in for it, may be C++ and
// throw; the exception passes through gridsel to the program's handler.
pub type TargetKernelFn =
    unsafe extern "C-unwind" fn(*mut c_void, i64, i32, i32, *mut c_void, *mut c_void) -> c_int;
pub type RegisterLibFn = unsafe extern "C-unwind" fn(*mut BinDesc);

/// `omp_get_default_device`, which clang's `DeviceId` -1 stands for.
type DefaultDeviceFn = unsafe extern "C" fn() -> std::ffi::c_int;

/// Resolves clang's "default device" (-1) to a device number.
pub fn resolve_device(id: i64) -> i64 {
    static DEFAULT: OnceLock<Option<usize>> = OnceLock::new();
    if id >= 0 {
        return id;
    }
    // SAFETY: dlsym with a valid name; libomp defines this function.
    let found = *DEFAULT.get_or_init(|| {
        let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"omp_get_default_device".as_ptr()) };
        (!sym.is_null()).then_some(sym as usize)
    });
    match found {
        // SAFETY: libomp's `int omp_get_default_device(void)`.
        Some(addr) => i64::from(unsafe { std::mem::transmute::<usize, DefaultDeviceFn>(addr)() }),
        None => 0,
    }
}

/// The next definition of `name` after this library in lookup order.
fn next(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with a valid NUL-terminated name has no preconditions.
    let sym = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if sym.is_null() { None } else { Some(sym) }
}

/// The file of the library whose definition of `name` comes next after
/// this library (the one gridsel forwards to), symbolic links resolved:
/// `/usr/lib/llvm-19/lib/libomptarget.so.19.1` for `__tgt_target_kernel`
/// in a clang 19 program. `None` when there is no such definition; quiet,
/// since the launch path reports a missing function itself.
pub fn library_defining(name: &CStr) -> Option<PathBuf> {
    let sym = next(name)?;
    // SAFETY: an all-zero `Dl_info` (null pointers, zero addresses) is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `sym` is an address dlsym returned; dladdr only writes `info`.
    if unsafe { libc::dladdr(sym, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr set `dli_fname` to the loaded object's NUL-terminated
    // path, which lives as long as the object stays loaded.
    let loaded = PathBuf::from(OsStr::from_bytes(
        unsafe { CStr::from_ptr(info.dli_fname) }.to_bytes(),
    ));
    Some(std::fs::canonicalize(&loaded).unwrap_or(loaded))
}

macro_rules! real_fn {
    ($(#[$doc:meta])* $fn_name:ident, $symbol:literal, $ty:ty) => {
        $(#[$doc])*
        pub fn $fn_name() -> Option<$ty> {
            static REAL: OnceLock<Option<usize>> = OnceLock::new();
            let addr = (*REAL.get_or_init(|| {
                let found = next($symbol).map(|p| p as usize);
                if found.is_none() {
                    log::error!("{} not found after gridsel in the link order (is libomptarget loaded?)", $symbol.to_string_lossy());
                }
                found
            }))?;
            // SAFETY: the symbol is libomptarget's function of this signature
            // (offload/src/interface.cpp; docs/abi.md §1).
            Some(unsafe { std::mem::transmute::<usize, $ty>(addr) })
        }
    };
}

real_fn!(
    /// libomptarget's `__tgt_target_kernel`.
    target_kernel, c"__tgt_target_kernel", TargetKernelFn
);
real_fn!(
    /// libomptarget's `__tgt_register_lib`.
    register_lib, c"__tgt_register_lib", RegisterLibFn
);
real_fn!(
    /// libomptarget's `__tgt_unregister_lib`.
    unregister_lib, c"__tgt_unregister_lib", RegisterLibFn
);
