//! Every `unsafe` line of gridsel: the C exports, the libomptarget ABI, the
//! dynamic linker and the CUDA driver.
//!
//! - [`api`]: the exported symbols, each behind one panic boundary.
//! - [`abi`]: libomptarget's structures and the checked reads and writes of them.
//! - [`dl`]: the real libomptarget entry points, found with `RTLD_NEXT`.
//! - [`cuda`]: device attributes from the driver libomptarget already loaded.
//! - [`fs`]: advisory file locks for the tuning cache.

pub mod abi;
pub mod api;
pub mod cuda;
pub mod dl;
pub mod fs;
