//! [`ImageError`]: everything that can be wrong with an image.

use std::fmt;

/// Why an image could not be read. Every malformed input ends here; the
/// parser never panics.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImageError {
    /// Zero bytes.
    Empty,
    /// Not a cubin, OffloadBinary, LLVM bitcode or ELF file.
    UnknownFormat {
        /// Up to the first 8 bytes, for the message.
        magic: Vec<u8>,
    },
    /// A structure runs past the end of the bytes it lives in.
    Truncated {
        /// What was being read.
        what: String,
        /// Where it starts, relative to what is named in `what`.
        offset: u64,
        /// Bytes it needs from `offset`.
        needed: u64,
        /// Bytes available in all.
        len: u64,
    },
    /// The ELF container is malformed (message from the `object` crate).
    Elf {
        /// What was being read.
        context: String,
        /// What `object` said.
        reason: String,
    },
    /// An ELF file this parser does not read (32-bit, big-endian).
    UnsupportedElf {
        /// Why.
        reason: String,
    },
    /// An ELF file for a machine that is neither CUDA nor a host-offload target.
    UnsupportedMachine {
        /// `e_machine`.
        machine: u16,
    },
    /// A malformed `.nv.info` or `.nv.info.<kernel>` record.
    NvInfo {
        /// Section name.
        section: String,
        /// Offset of the bad record in the section.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A malformed LLVM OffloadBinary.
    OffloadBinary {
        /// Offset of the binary (in the bytes or section given).
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A `<kernel>_kernel_environment` symbol that cannot be read.
    KernelEnvironment {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
}

impl ImageError {
    pub(crate) fn truncated(what: impl Into<String>, offset: u64, needed: u64, len: u64) -> Self {
        Self::Truncated {
            what: what.into(),
            offset,
            needed,
            len,
        }
    }

    pub(crate) fn elf(context: impl Into<String>, err: object::read::Error) -> Self {
        Self::Elf {
            context: context.into(),
            reason: err.to_string(),
        }
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty image (0 bytes)"),
            Self::UnknownFormat { magic } => {
                f.write_str("unrecognised image format (not a cubin, OffloadBinary, LLVM bitcode or ELF); first bytes:")?;
                for b in magic {
                    write!(f, " {b:02x}")?;
                }
                if magic.starts_with(&[0x50, 0xed, 0x55, 0xba]) {
                    f.write_str(
                        " (a CUDA fatbinary, which clang OpenMP offload does not produce)",
                    )?;
                }
                Ok(())
            }
            Self::Truncated {
                what,
                offset,
                needed,
                len,
            } => write!(
                f,
                "truncated {what} at offset {offset:#x}: needs {needed} bytes, only {} of {len} bytes remain",
                len.saturating_sub(*offset)
            ),
            Self::Elf { context, reason } => write!(f, "malformed ELF ({context}): {reason}"),
            Self::UnsupportedElf { reason } => write!(f, "unsupported ELF file: {reason}"),
            Self::UnsupportedMachine { machine } => write!(
                f,
                "ELF e_machine {machine} is neither CUDA (190) nor a host-offload target (x86-64 62, AArch64 183, PowerPC64 21)"
            ),
            Self::NvInfo {
                section,
                offset,
                reason,
            } => {
                write!(f, "bad {section} record at offset {offset:#x}: {reason}")
            }
            Self::OffloadBinary { offset, reason } => {
                write!(f, "bad LLVM OffloadBinary at offset {offset:#x}: {reason}")
            }
            Self::KernelEnvironment { kernel, reason } => {
                write!(f, "bad {kernel}_kernel_environment: {reason}")
            }
        }
    }
}

impl std::error::Error for ImageError {}
