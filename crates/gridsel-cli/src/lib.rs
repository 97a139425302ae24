//! What gridsel's two command lines share: `gridsel`, a user's commands
//! (decide, inspect, compare, the store), and `gridsel-research`, the
//! commands over the benchmark harness's sweep results. The flags that name
//! a launch and a policy ([`args`]) are defined here once, and every CSV
//! either reads or writes goes through [`csv`].
#![forbid(unsafe_code)]

pub mod args;
pub mod csv;
