//! # gridsel: launch grids for OpenMP offload kernels, chosen per GPU and kernel
//!
//! gridsel is loaded with `LD_PRELOAD` under unmodified clang OpenMP offload
//! programs. libomptarget picks every kernel's grid (blocks = teams, threads per
//! block) with one fixed rule; gridsel intercepts the launch, looks at what it
//! knows about the kernel and the GPU, and writes a better grid into the launch
//! before forwarding it.
//!
//! ## How a launch flows
//!
//! 1. Before `main`, each binary or shared library with offload code calls
//!    `__tgt_register_lib`. [`ffi::api`] records its offload entries (host
//!    address -> kernel name) and its device images; [`image`] parses each
//!    cubin once into [`KernelDesc`]s (registers, shared and local memory,
//!    thread cap, execution mode).
//! 2. At every `__tgt_target_kernel`, [`runtime`] maps the host address to the
//!    kernel, the device id to a [`DeviceDesc`] (from the driver, a preset or a
//!    profile file) and, when the program left the grid open, asks the
//!    [`Policy`] in force for a [`Geometry`]. [`plan`] holds the rules about
//!    what may be changed at all; the policies are pure functions.
//! 3. The grid is written into both the call arguments and `KernelArgs`, and
//!    the call is forwarded to the real libomptarget.
//!
//! All `unsafe` code, the C ABI and the CUDA driver live in [`ffi`]; everything
//! else is plain data. Every export catches panics and forwards the call
//! unchanged. A grid gridsel writes never exceeds the kernel's compiled cap or
//! the device's limits, and is only written where the OpenMP program left the
//! grid to the implementation, so results do not depend on it.

pub mod calibrate;
pub mod config;
pub mod device;
pub mod ffi;
pub mod forest;
pub mod geometry;
pub mod image;
pub mod kernel;
pub mod logging;
pub mod occupancy;
pub mod plan;
pub mod policy;
pub mod profile;
pub mod runtime;
pub mod tune;

pub use device::DeviceDesc;
pub use geometry::{Geometry, LaunchDesc, LoopClass};
pub use kernel::{ExecMode, KernelDesc};
pub use policy::{Decision, Policy};

/// Locks `mutex`, taking over a lock poisoned by a panic elsewhere: the state
/// behind gridsel's locks only steers grid choices, every one of which is
/// clamped before use, and a launch must never fail for gridsel's sake.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] for the read side of an `RwLock`.
pub(crate) fn read_lock<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`lock`] for the write side of an `RwLock`.
pub(crate) fn write_lock<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The crate version, as the C API reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
