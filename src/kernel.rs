//! What gridsel knows about one offload kernel.
//!
//! A [`KernelDesc`] is read once per kernel from the registered device image
//! (see [`crate::image`]); every field is optional because host-offload and JIT
//! images carry no cubin, and a policy must say what it does without a fact
//! rather than invent one.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The device runtime's execution mode, byte 2 of `<kernel>_kernel_environment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecMode {
    /// One main thread per team runs the region; the runtime adds a warp for it.
    Generic,
    /// Every thread runs the region (`target teams distribute parallel for`).
    Spmd,
    /// Generic code that OpenMPOpt made SPMD-like (`teams distribute` + nested `parallel for`).
    GenericSpmd,
}

impl ExecMode {
    /// Decodes the kernel environment's mode byte (`OMP_TGT_EXEC_MODE_*`).
    pub fn from_raw(raw: u8) -> Option<Self> {
        match raw {
            1 => Some(Self::Generic),
            2 => Some(Self::Spmd),
            3 => Some(Self::GenericSpmd),
            _ => None,
        }
    }

    /// The value clang and libomptarget use for this mode.
    pub fn raw(self) -> u8 {
        match self {
            Self::Generic => 1,
            Self::Spmd => 2,
            Self::GenericSpmd => 3,
        }
    }
}

impl fmt::Display for ExecMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Generic => "Generic",
            Self::Spmd => "SPMD",
            Self::GenericSpmd => "Generic-SPMD",
        })
    }
}

/// Static facts about one kernel, as compiled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelDesc {
    /// Device symbol, e.g. `__omp_offloading_fe00_98c183_main_l7`.
    pub name: String,
    /// Registers per thread (`EIATTR_REGCOUNT`).
    pub registers: Option<u32>,
    /// Static shared memory per block in bytes (size of `.nv.shared.<kernel>`).
    pub shared_mem: Option<u32>,
    /// Local memory (stack frame) per thread in bytes (`EIATTR_FRAME_SIZE`).
    pub local_mem: Option<u32>,
    /// Compiled thread cap: the smaller of the kernel environment's MaxThreads
    /// and `EIATTR_MAX_THREADS`; no launch gets more threads per block.
    pub max_threads: Option<u32>,
    /// Kernel environment MinThreads, when the compiler set one.
    pub min_threads: Option<u32>,
    /// Kernel environment MaxTeams, when the compiler set one.
    pub max_teams: Option<u32>,
    /// Execution mode from the kernel environment.
    pub exec_mode: Option<ExecMode>,
    /// Machine code size in bytes (`.text.<kernel>`), a work-per-iteration proxy.
    pub code_size: Option<u32>,
    /// SM architecture of the cubin (e.g. 90), `None` for non-CUDA images.
    pub sm_arch: Option<u32>,
}

impl KernelDesc {
    /// A descriptor that knows only the kernel's name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Iterations a team receives per `distribute` chunk.
    ///
    /// LLVM 19 SPMD kernels hand out chunks of the compiled thread cap,
    /// whatever the launch's block size (REFERENCE.md §3; measured in
    /// bench/results/h100/NOTES.md); Generic-SPMD and Generic kernels give one
    /// `distribute` iteration per team.
    pub fn distribute_chunk(&self) -> Option<u32> {
        match self.exec_mode? {
            ExecMode::Spmd => self.max_threads,
            ExecMode::Generic | ExecMode::GenericSpmd => Some(1),
        }
    }

    /// Names of the facts this descriptor lacks, for the log.
    pub fn unknown_fields(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        let facts: [(&'static str, bool); 5] = [
            ("registers", self.registers.is_some()),
            ("shared memory", self.shared_mem.is_some()),
            ("local memory", self.local_mem.is_some()),
            ("thread cap", self.max_threads.is_some()),
            ("execution mode", self.exec_mode.is_some()),
        ];
        for (name, known) in facts {
            if !known {
                missing.push(name);
            }
        }
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_mode_round_trips_the_raw_byte() {
        for raw in 1..=3 {
            assert_eq!(ExecMode::from_raw(raw).unwrap().raw(), raw);
        }
        assert_eq!(ExecMode::from_raw(0), None);
        assert_eq!(ExecMode::from_raw(4), None);
    }

    #[test]
    fn chunk_is_the_cap_for_spmd_and_one_otherwise() {
        let mut k = KernelDesc {
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::named("k")
        };
        assert_eq!(k.distribute_chunk(), Some(128));
        k.exec_mode = Some(ExecMode::GenericSpmd);
        assert_eq!(k.distribute_chunk(), Some(1));
        k.exec_mode = None;
        assert_eq!(k.distribute_chunk(), None);
    }

    #[test]
    fn unknown_fields_lists_what_is_missing() {
        let k = KernelDesc {
            registers: Some(32),
            ..KernelDesc::named("k")
        };
        assert_eq!(
            k.unknown_fields(),
            vec![
                "shared memory",
                "local memory",
                "thread cap",
                "execution mode"
            ]
        );
    }
}
