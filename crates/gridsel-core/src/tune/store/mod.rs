//! The store: what `tune` measured, kept across runs (`GRIDSEL_CACHE`).
//!
//! A JSON object, one record a line:
//!
//! ```json
//! {"version": 3, "journal": "5f0c29e4a1b3d870", "records": [
//! {"kernel": "__omp_offloading_..._l7", "device": "NVIDIA H100 80GB HBM3", "sm_arch": 90,
//!  "class": 21, "build": "9c1e0f5a7b2d4e68", "llvm": 19, "trips": [1000, 1000], "used": 1795000000, "runs": 3,
//!  "launches_per_run": 20, "explored": [1, 34], "settled": [false, true], "pinned": null,
//!  "grids": {"auto": {"cold": [51200], "warm": [40960, 41010]}, "move:64,1": {...}}}
//! ]}
//! ```
//!
//! A record is one search ([`super::search`]): its samples per candidate
//! and kind, how many launches explored, how many runs and launches per run
//! fed it. It is keyed by (kernel, device name, sm_arch, trip-count
//! [`class`], build): `build` names the device image the kernel came from
//! ([`crate::image::build_id`]), so that a program rebuilt (another compiler,
//! other flags, changed code) starts its searches afresh rather than
//! inheriting grids measured on other machine code; `llvm`
//! ([`Record::llvm_release`]) is the major
//! version of the libomptarget that last added to it (0: unknown), which
//! production runs also match ([`super::learned`]). This module is the format and the merge; the preload
//! library's `files::StoreFile` reads the file once per process and adds
//! each process's new samples under a lock, so processes running at once
//! add to the same searches and lose nothing. The file is kept under
//! [`MAX_BYTES`] by dropping the records used least recently.
//!
//! Beside it, the store's journal: what processes added since the file was
//! last written, one [`Update`] a line in a record's own fields
//! ([`journal_line`]), after a first line naming the store it extends
//! ([`journal_header`]):
//!
//! ```json
//! {"gridsel_journal": 2, "store": "5f0c29e4a1b3d870"}
//! {"kernel": "__omp_offloading_..._l7", "device": ..., "runs": 1, ..., "grids": {"auto": {"cold": [51200], "warm": []}}}
//! ```
//!
//! Appending a line costs the same whatever the store's size; rewriting
//! the file costs a parse and a render of all of it. Readers apply the
//! journal over the file ([`Contents::extend`]) when its id is the one the
//! file names ([`JournalId`]: drawn anew at each rewrite, which merges the
//! journal in), so a journal already merged is never read twice.
//!
//! Only a gridsel store is ever replaced ([`parse`] says what is one): a
//! file that is not (a mistyped `GRIDSEL_CACHE`), one of a newer version
//! and one that cannot be read are left as they are. Each record is read
//! alone: one that does not validate, or a second record of a search, is
//! left out, named, and the rest kept; the preload library keeps the file
//! as it was as `<store>.bad` before a write drops them. A store of an
//! older version (version 1 kept only winners, version 2 knew no builds) is
//! read as empty, likewise.
//! Fields a record has that this version does not know are kept and written
//! back ([`Record::unknown`]), so a newer gridsel of the same version that
//! adds one loses nothing to an older one.

mod journal;
mod key;
mod only;
mod parse;
mod record;
mod table;
#[cfg(test)]
mod tests;

pub use journal::*;
pub use key::*;
pub use only::*;
pub use parse::*;
pub use record::*;
pub use table::*;

/// The file format's version; other versions are ignored.
pub const VERSION: u32 = 3;

/// The largest store read or written: some 2 000 searches of a dozen
/// candidates with their samples, far more than a program's few dozen
/// kernels need; past it the least recently used records go.
pub const MAX_BYTES: u64 = 4 << 20;
