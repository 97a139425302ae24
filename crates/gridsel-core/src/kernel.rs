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

/// `<kernel>_kernel_environment`'s configuration, as the compiler wrote it.
///
/// The layout is LLVM's `ConfigurationEnvironmentTy` (offload/include/
/// Shared/Environment.h, the same in LLVM 18, 19 and main; docs/cubin.md),
/// the first member of `KernelEnvironmentTy`. Counts the compiler leaves
/// unset (0 or negative) are `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelEnvironment {
    /// Byte 0: the runtime's generic state machine serves the team's
    /// workers (Generic mode without a custom state machine).
    pub use_generic_state_machine: bool,
    /// Byte 1: a `parallel` region may run inside another one. `None` when
    /// the byte is neither 0 nor 1 (OpenMPOpt could not tell).
    pub may_use_nested_parallelism: Option<bool>,
    /// Byte 2: `OMP_TGT_EXEC_MODE_*` as written, also when unknown.
    pub exec_mode: u8,
    /// i32 at 4: `ompx_attribute(launch_bounds)`'s minimum, or 1.
    pub min_threads: Option<u32>,
    /// i32 at 8: the compiled thread cap (`thread_limit`, launch bounds, 128).
    pub max_threads: Option<u32>,
    /// i32 at 12.
    pub min_teams: Option<u32>,
    /// i32 at 16: a constant `num_teams` clause.
    pub max_teams: Option<u32>,
    /// i32 at 20: bytes of one team's partial result of a cross-team
    /// `reduction` (the sum of the reduced variables' sizes); `None` when the
    /// kernel does not reduce across teams.
    pub reduction_data_size: Option<u32>,
    /// i32 at 24: slots of the runtime's cross-team reduction buffer (LLVM
    /// 18 to 22; LLVM 23 sizes the buffer by the launch's blocks instead).
    pub reduction_buffer_length: Option<u32>,
}

impl KernelEnvironment {
    /// Bytes of `<kernel>_kernel_environment` from LLVM 18 to 22
    /// (`KernelEnvironmentTy`: the configuration, padded to 32 bytes, then
    /// two pointers). LLVM 15-17 have no kernel environment, only an
    /// `<kernel>_exec_mode` byte.
    pub const SIZE: u64 = 48;
    /// Bytes of the configuration at its start, LLVM 18 to 22.
    pub const CONFIG_SIZE: usize = 28;
    /// Bytes of `<kernel>_kernel_environment` from LLVM 23 on: the
    /// configuration lost `ReductionBufferLength` (24 bytes), the pointers
    /// follow at once (Debian's llvm-toolchain-23 23.1.1 source, and
    /// clang 23.1.4's images).
    pub const SIZE_SINCE_LLVM23: u64 = 40;

    /// Bytes of the configuration in an environment of `symbol_size` bytes;
    /// `None` for a size no LLVM release writes.
    pub fn config_size(symbol_size: u64) -> Option<usize> {
        match symbol_size {
            Self::SIZE => Some(Self::CONFIG_SIZE),
            Self::SIZE_SINCE_LLVM23 => Some(24),
            _ => None,
        }
    }

    /// Decodes the configuration bytes of either layout: fields past the
    /// end of `config` (`ReductionBufferLength` from LLVM 23 on) are unset.
    pub fn decode(config: &[u8]) -> Self {
        let i32_at = |o: usize| {
            config
                .get(o..o + 4)
                .and_then(|s| s.try_into().ok())
                .map(i32::from_le_bytes)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|&v| v > 0)
        };
        let byte = |o: usize| config.get(o).copied().unwrap_or(0);
        Self {
            use_generic_state_machine: byte(0) == 1,
            may_use_nested_parallelism: match byte(1) {
                0 => Some(false),
                1 => Some(true),
                _ => None,
            },
            exec_mode: byte(2),
            min_threads: i32_at(4),
            max_threads: i32_at(8),
            min_teams: i32_at(12),
            max_teams: i32_at(16),
            reduction_data_size: i32_at(20),
            reduction_buffer_length: i32_at(24),
        }
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
    /// Local memory (stack) per thread in bytes, callees included
    /// (`EIATTR_FRAME_SIZE`, `MIN/MAX_STACK_SIZE`); `None` when unknown, also
    /// when the stack has no static bound ([`Self::unbounded_stack`]).
    pub local_mem: Option<u32>,
    /// The cubin gives the stack size as 0xFFFFFFFF: the call graph has
    /// recursion or indirect calls (the device runtime's, in a module that
    /// may use nested parallelism), so the driver sizes the stack at run time.
    #[serde(default)]
    pub unbounded_stack: bool,
    /// Compiled thread cap: the smaller of the kernel environment's MaxThreads
    /// and `EIATTR_MAX_THREADS`; no launch gets more threads per block.
    pub max_threads: Option<u32>,
    /// Execution mode from the kernel environment.
    pub exec_mode: Option<ExecMode>,
    /// Everything the kernel environment says; `None` without one (host
    /// images of older compilers, JIT images, the C API).
    #[serde(default)]
    pub environment: Option<KernelEnvironment>,
    /// Machine code size in bytes (`.text.<kernel>`), a work-per-iteration proxy.
    pub code_size: Option<u32>,
    /// SM architecture of the cubin (e.g. 90), `None` for non-CUDA images.
    pub sm_arch: Option<u32>,
    /// Compiled for libomptarget's host plugin: the kernel runs on the CPU,
    /// where no device runtime heap bounds the grid.
    #[serde(default)]
    pub host: bool,
    /// The build of the program the kernel came from
    /// ([`crate::image::build_id`] of its device image), set when the image
    /// registers; empty where unknown (a descriptor read from a file, or
    /// given through the C API).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub build: String,
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
    /// whatever the launch's block size (docs/llvm-grid.md §3; measured in
    /// bench/results/h100/NOTES.md); Generic-SPMD and Generic kernels give one
    /// `distribute` iteration per team.
    pub fn distribute_chunk(&self) -> Option<u32> {
        match self.exec_mode? {
            ExecMode::Spmd => self.max_threads,
            ExecMode::Generic | ExecMode::GenericSpmd => Some(1),
        }
    }

    /// Whether the kernel environment says the kernel has a cross-team
    /// reduction: every team writes a partial result that the runtime
    /// combines after the loop.
    pub fn has_cross_team_reduction(&self) -> bool {
        self.environment
            .is_some_and(|e| e.reduction_data_size.is_some())
    }

    /// A cubin SPMD kernel with compiled cap `cap`, no nesting, nothing else
    /// known: the policies' tests' usual kernel.
    #[cfg(test)]
    pub(crate) fn spmd_for_tests(cap: u32) -> Self {
        Self {
            local_mem: Some(0),
            max_threads: Some(cap),
            exec_mode: Some(ExecMode::Spmd),
            ..Self::named("k")
        }
    }

    /// Whether a `parallel` region of this kernel may run inside another one
    /// (which makes the device runtime allocate from its heap; see
    /// `policy::limits`): the kernel environment's answer; without
    /// one, `false` when the stack has a static bound, since the runtime's
    /// serialized nested path recurses through `__kmpc_parallel_51` and
    /// leaves ptxas no bound; else unknown.
    pub fn nested_parallelism(&self) -> Option<bool> {
        match self.environment.and_then(|e| e.may_use_nested_parallelism) {
            Some(known) => Some(known),
            None if self.local_mem.is_some() => Some(false),
            None => None,
        }
    }

    /// Records what a caller states about nesting in place of a compiled
    /// kernel environment (the C API's and `gridsel select`'s kernels): the
    /// environment's nesting byte, with the mode and cap it would carry when
    /// there is none yet.
    pub fn state_nesting(&mut self, nested: bool) {
        let (exec_mode, max_threads) = (self.exec_mode, self.max_threads);
        let environment = self.environment.get_or_insert_with(|| KernelEnvironment {
            exec_mode: exec_mode.map_or(0, ExecMode::raw),
            max_threads,
            ..KernelEnvironment::default()
        });
        environment.may_use_nested_parallelism = Some(nested);
    }

    /// Names of the facts this descriptor lacks, for the log.
    pub fn unknown_fields(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        let facts: [(&'static str, bool); 5] = [
            ("registers", self.registers.is_some()),
            ("shared memory", self.shared_mem.is_some()),
            (
                "local memory",
                self.local_mem.is_some() || self.unbounded_stack,
            ),
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

/// One line of everything known about a kernel, for `gridsel inspect` and
/// the info log: `SPMD, 21 regs, 36 B shared, stack 0 B, cap 128; environment:
/// ...`. Unknown facts print as `?`.
impl fmt::Display for KernelDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<u32>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
        match self.exec_mode {
            Some(m) => write!(f, "{m}")?,
            None => f.write_str("mode ?")?,
        }
        write!(
            f,
            ", {} regs, {} B shared, stack ",
            show(self.registers),
            show(self.shared_mem)
        )?;
        if self.unbounded_stack {
            f.write_str("unbounded")?;
        } else {
            write!(f, "{} B", show(self.local_mem))?;
        }
        write!(f, ", cap {}", show(self.max_threads))?;
        match &self.environment {
            Some(env) => write!(f, "; environment: {env}"),
            None => f.write_str("; no kernel environment"),
        }
    }
}

impl fmt::Display for KernelEnvironment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<u32>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        write!(
            f,
            "mode byte {}, generic state machine {}, nested parallelism {}, threads {}..{}, teams {}..{}, ",
            self.exec_mode,
            yes_no(self.use_generic_state_machine),
            self.may_use_nested_parallelism.map_or("unknown", yes_no),
            show(self.min_threads),
            show(self.max_threads),
            show(self.min_teams),
            show(self.max_teams),
        )?;
        match self.reduction_data_size {
            Some(bytes) => write!(
                f,
                "cross-team reduction {bytes} B x {} slots",
                show(self.reduction_buffer_length)
            ),
            None => f.write_str("no cross-team reduction"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stated_nesting_stands_for_the_environment_and_keeps_one_already_read() {
        let mut k = KernelDesc {
            exec_mode: Some(ExecMode::GenericSpmd),
            max_threads: Some(256),
            ..KernelDesc::named("k")
        };
        assert_eq!(k.nested_parallelism(), None);
        k.state_nesting(true);
        let env = k.environment.unwrap();
        assert_eq!(
            (
                env.may_use_nested_parallelism,
                env.exec_mode,
                env.max_threads
            ),
            (Some(true), 3, Some(256))
        );
        assert_eq!(k.nested_parallelism(), Some(true));
        k.environment.as_mut().unwrap().reduction_data_size = Some(8);
        k.state_nesting(false);
        assert_eq!(k.nested_parallelism(), Some(false));
        assert_eq!(k.environment.unwrap().reduction_data_size, Some(8));
    }

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
