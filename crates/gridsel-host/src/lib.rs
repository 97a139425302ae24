//! # gridsel-host: the host side both the preload library and the command lines need
//!
//! What runs on the host around gridsel's decisions, shared by the preload
//! library `libgridsel.so` (crate `gridsel`) and the command lines
//! (`gridsel-cli`, `gridsel-research`), so that neither command line links
//! the preload library: the settings ([`config`], one table of every
//! `GRIDSEL_*` variable), the files the environment names ([`files`]: device
//! profiles, models, the store of `tune`'s searches; [`profile`]: the launch
//! profile), log lines on stderr ([`logging`]) and the panic boundary
//! ([`guard`]).
//!
//! All `unsafe` code of this crate lives in [`ffi`] (the CUDA driver, the file
//! system, stderr, process signals), each call behind a safe interface, and
//! the compiler holds the rest of the crate to that; files the environment
//! names are opened only through [`ffi::fs`].
#![deny(unsafe_code)]

pub mod config;
#[allow(unsafe_code)]
pub mod ffi;
pub mod files;
pub mod guard;
pub mod logging;
pub mod profile;

/// gridsel's version (the workspace's, the one `gridsel_version()` of the
/// preload library gives), as the command lines' reports state it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
