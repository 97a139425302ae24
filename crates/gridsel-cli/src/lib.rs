//! What gridsel's two command lines share: `gridsel`, a user's commands
//! (decide, inspect, compare, the store), and `gridsel-research`, the
//! commands over the benchmark harness's sweep results. The flags that name
//! a launch and a policy ([`args`]) are defined here once, every CSV either
//! reads or writes goes through [`csv`], and a run's `GRIDSEL_PROFILE` is
//! read ([`profile_rows`]) and split into its searches' launches and an
//! alternating run's two sides ([`launches`]) once, for `gridsel tune` and
//! for `gridsel-research sides`; medians and percentiles are [`stats`]'.
#![forbid(unsafe_code)]

pub mod args;
pub mod csv;
pub mod launches;
pub mod profile_rows;
pub mod stats;
