//! The bottom of the preload library: its calls into C that only a library
//! loaded into an offload program makes (the libomptarget ABI, the dynamic
//! linker), each behind a safe interface. Together with [`crate::api`], the
//! exports at the top, this holds every `unsafe` line of this crate; the
//! host-side calls it shares with the command lines (the CUDA driver, files,
//! stderr) are `gridsel_host::ffi`.
//!
//! - [`abi`]: libomptarget's structures and the checked reads and writes of them.
//! - [`dl`]: the real libomptarget entry points, found with `RTLD_NEXT`.

pub mod abi;
pub mod dl;
