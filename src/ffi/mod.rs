//! The bottom of the preload library: every call into C that gridsel
//! makes (the libomptarget ABI, the dynamic linker, the CUDA driver, the
//! file system, stderr), each behind a safe interface. Together with
//! [`crate::api`], the exports at the top, this holds every `unsafe` line.
//!
//! - [`abi`]: libomptarget's structures and the checked reads and writes of them.
//! - [`dl`]: the real libomptarget entry points, found with `RTLD_NEXT`.
//! - [`cuda`]: device attributes from the driver libomptarget already loaded.
//! - [`fs`]: safe reads, writes and locks of the files the environment names.
//! - [`process`]: signals to the processes the `gridsel` command line runs.
//! - [`stderr`]: log lines written without raising SIGPIPE in the host program.

pub mod abi;
pub mod cuda;
pub mod dl;
pub mod fs;
pub mod process;
pub mod stderr;
