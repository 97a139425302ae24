//! # gridsel: launch grids for OpenMP offload kernels, chosen per GPU and kernel
//!
//! gridsel is loaded with `LD_PRELOAD` under unmodified clang OpenMP offload
//! programs. libomptarget picks every kernel's grid (blocks = teams, threads
//! per block) with one fixed rule; gridsel intercepts the launch, looks at
//! what it knows about the kernel and the GPU, and writes a better grid into
//! the launch before forwarding it.
//!
//! This crate is the preload library: the process's side of gridsel. The
//! decisions themselves are plain data in `gridsel-core`, and the host side
//! it shares with the command lines (settings, files, the CUDA driver,
//! logging, the panic boundary) is `gridsel-host`; both are re-exported
//! here, so `gridsel::policy` is `gridsel_core::policy` and `gridsel::files`
//! is `gridsel_host::files`. The workspace's crates: `docs/layout.md` in the
//! repository.
//!
//! ## How a launch flows
//!
//! 1. Before `main`, each binary or shared library with offload code calls
//!    `__tgt_register_lib`. [`api`] records its offload entries (host
//!    address -> kernel name) and its device images; [`image`] parses each
//!    cubin once into [`KernelDesc`]s.
//! 2. At every `__tgt_target_kernel`, [`api`] reads the C ABI into a
//!    [`runtime::LaunchRequest`] and [`runtime::Runtime::launch`] runs the
//!    pipeline: the kernel and the device (from the driver, a preset or a
//!    TOML device description), the clause rules ([`clauses`]), the [`policy::GridPolicy`]
//!    in force, the launch's limits ([`policy::limits`]), the forwarded call,
//!    and the profile and the policy's feedback.
//!
//! All `unsafe` code of this crate lives in [`api`] (the exports, at the top)
//! and [`ffi`] (the calls into C, at the bottom: ABI, dlsym), and the
//! compiler holds the rest of the crate to that; that of `gridsel-host` (the
//! CUDA driver, files, stderr) is in its own `ffi` module. Files the
//! environment names are opened only through `gridsel_host::ffi::fs`
//! ([`files`]).
//! Every export catches panics ([`guard`]) and forwards the call unchanged.
//! A grid gridsel writes never leaves the launch's limits, and is only
//! written where the OpenMP program left the grid to the implementation, so
//! results do not depend on it.
#![deny(unsafe_code)]

pub use gridsel_core::{
    BuildIntHasher, IntHasher, IntMap, IntSet, Reported, clauses, device, forest_model, geometry,
    image, kernel, libomptarget, lock, policy, read_lock, residency, splitmix, tune, write_lock,
};
pub use gridsel_core::{
    Decision, DeviceDesc, ExecMode, Geometry, KernelDesc, LaunchDesc, LoopClass, Policy,
};
pub use gridsel_host::{config, files, guard, logging, profile};

#[allow(unsafe_code)]
pub mod api;
#[allow(unsafe_code)]
pub mod ffi;
pub mod runtime;
pub mod writer;
