//! The host crate's calls into C, each behind a safe interface: every
//! `unsafe` line of `gridsel-host` is in this module.
//!
//! - [`cuda`]: device attributes from the CUDA driver.
//! - [`cupti`]: kernel times from the GPU (CUPTI's activity records).
//! - [`fs`]: safe reads, writes and locks of the files the environment names.
//! - [`process`]: pipes and signals for the command lines.
//! - [`stderr`]: log lines written without raising SIGPIPE in the host program.

pub mod cuda;
pub mod cupti;
pub mod fs;
pub mod process;
pub mod stderr;
