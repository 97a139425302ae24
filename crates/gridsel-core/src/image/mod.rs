//! Reading offload device images: what the compiler decided about each kernel.
//!
//! [`parse_image`] takes the bytes a `__tgt_device_image` points at;
//! [`images_in_file`] finds the images inside a host executable or shared
//! library on disk (for `gridsel inspect`). Both fill a
//! [`KernelDesc`] per kernel and never panic: malformed input gives an
//! [`ImageError`] that says what is wrong and where.
//!
//! # Formats accepted
//!
//! * **cubin**: ELF64, `e_machine` 190 (`EM_CUDA`), OS/ABI 0x33, ELF ABI
//!   version 7 (CUDA 12) or 8 (CUDA 13). The SM architecture is in `e_flags`:
//!   ABI v7 keeps it in the low byte (`0x5a055a`: sm_90; bits 16..24 hold the
//!   virtual architecture, 0x500 = 64-bit addresses + unified texture mode);
//!   ABI v8 in bits 8..16 (`0x6005a04`: sm_90). See [`elf::sm_arch`].
//! * **LLVM OffloadBinary** (magic `10 FF 10 AD`): a 32-byte header and
//!   40-byte entries; see [`offload_binary`]. [`parse_image`] parses the first
//!   entry's image (LLVM 19's wrapper registers only that one);
//!   [`offload_binary::parse_all`] and [`images_in_file`] give every entry.
//! * **LLVM bitcode** (`BC C0 DE`, or the wrapper `DE C0 17 0B`): a JIT image;
//!   [`ImageKind::Bitcode`] with no kernels.
//! * **host-offload ELF** (`-fopenmp-targets=x86_64-pc-linux-gnu`; also AArch64
//!   and PowerPC64): a shared object with the kernels as exported functions.
//!   [`ImageKind::HostElf`], names and code sizes only.
//!
//! # Cubin facts and where they come from
//!
//! | [`KernelDesc`] field | source |
//! |---|---|
//! | kernels | FUNC symbols `K` with an object `K_kernel_environment`; without any kernel environment, exported FUNC symbols with `STO_CUDA_ENTRY` (0x10 in `st_other`), a `.nv.info.K` section or the `__omp_offloading_` prefix |
//! | `registers` | global `.nv.info`, `EIATTR_REGCOUNT` (0x2f): {u32 symbol index, u32 registers} |
//! | `local_mem` | global `.nv.info`, `EIATTR_FRAME_SIZE` (0x11): {u32 symbol index, u32 bytes} |
//! | `max_threads` | min of kernel environment MaxThreads (if > 0) and `.nv.info.K` `EIATTR_MAX_THREADS` (0x05) {x, y, z}: x |
//! | `shared_mem` | size of the NOBITS section `.nv.shared.K`; 0 without one in a linked cubin, `None` in an unlinked object |
//! | `code_size` | size of `.text.K` (else the symbol's size) |
//! | `exec_mode`, `min_threads`, `max_teams` | `K_kernel_environment` (48 bytes in `.nv.global.init`, 40 from LLVM 23 on): byte 2 mode, i32 at 4 MinThreads, i32 at 8 MaxThreads, i32 at 16 MaxTeams; values <= 0 are "unset" |
//!
//! The `.nv.info` record format is in [`nv_info`]. `MIN_STACK_SIZE` (0x12)
//! and `MAX_STACK_SIZE` (0x23) have the same {symbol, bytes} shape and are
//! skipped.
//!
//! # Verified on real files (clang 19.1.7, CUDA 12.9 ptxas + nvJitLink, sm_90)
//!
//! From `tests/fixtures/images/kernels.c` (see `tests/fixtures/regen-images.sh`):
//!
//! * The linked cubin is `ET_EXEC`, `e_flags` 0x5a055a, ABI version 7. Kernels
//!   are WEAK FUNC symbols with `st_other` 0x10; the device runtime's
//!   non-kernel functions (`__kmpc_barrier_simple_spmd`, ...) are GLOBAL FUNC
//!   without 0x10 and have their own `.nv.info.<func>` sections, which is why
//!   kernels are picked by their kernel environment first.
//! * Global `.nv.info` holds one `EIATTR_FRAME_SIZE`, `EIATTR_REGCOUNT` and
//!   `EIATTR_MIN_STACK_SIZE` per function, all format 4 with length 8,
//!   {symbol index, value}. Registers 21 for a simple SPMD loop, 30 for the
//!   Generic-SPMD kernel, 49 for 16 live accumulators; frame size 512 for a
//!   kernel with a `double t[64]` indexed at run time, 0 elsewhere.
//! * `.nv.info.K` holds `EIATTR_MAX_THREADS` = (128, 1, 1) by default,
//!   (256, 1, 1) with `thread_limit(256)`, (512, 1, 1) with
//!   `ompx_attribute(__attribute__((launch_bounds(512))))`; the kernel
//!   environment's MaxThreads agrees in every case. Other records seen:
//!   0x36, 0x0a, 0x19 (format 3), 0x1e, 0x1c, 0x28, 0x29, 0x1b (format 3),
//!   0x50 (format 3), 0x17, 0x37 — all skipped by format.
//! * `.nv.shared.K` is 1060 bytes (0x424) for SPMD kernels and 1076 (0x434)
//!   for the Generic-SPMD kernel of the fixtures: the LLVM 19 device
//!   runtime's shared state. Plain SPMD kernels of the benchmarks, built at
//!   -O3, have no such section at all (no static shared memory).
//! * Kernel environments are in `.nv.global.init` with section-relative
//!   `st_value`; MinThreads is 1 in every kernel clang 19 made (so
//!   `min_threads` is `Some(1)`), MaxTeams 0 (unset); `launch_bounds(512)`
//!   also sets MinTeams 1. Byte 2 is 2 (SPMD) or 3 (Generic-SPMD).
//!
//! # Where the images are in a host executable
//!
//! clang 19's linker wrapper wraps every *linked* device image in an
//! OffloadBinary and emits it in a section `.llvm.offloading`
//! (`SHT_LLVM_OFFLOADING` 0x6fff4c0b, flags `SHF_ALLOC`, align 8) of the
//! final executable or shared library; `__tgt_device_image::ImageStart`
//! points at the inner image (entry `ImageOffset`, 0x90 for one entry with
//! `triple` and `arch` strings), so the runtime registers the bare cubin.
//! The `.llvm.offloading` sections of the *input* objects (`SHF_EXCLUDE`,
//! holding the unlinked `ET_REL` cubin per translation unit) are dropped by
//! the linker. For sm_90 the entry is `IMG_Object` (1), OpenMP (1), triple
//! `nvptx64-nvidia-cuda`, arch `sm_90`; for host offload `IMG_Object`,
//! triple `x86_64-pc-linux-gnu`, and the inner image is an x86-64 `ET_DYN`
//! whose kernels are exported (WEAK, protected) functions with
//! `.offloading.entry.<kernel>` objects beside them and no kernel
//! environments. [`images_in_file`] reads that section; on a relocatable
//! object it finds the unlinked images instead, which parse the same way.

pub mod elf;
mod error;
pub mod nv_info;
pub mod offload_binary;

pub use error::ImageError;

use crate::kernel::KernelDesc;

/// What kind of image it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "format", rename_all = "kebab-case")]
pub enum ImageKind {
    /// A CUDA cubin for `sm_<sm_arch>`.
    Cubin {
        /// e.g. 90.
        sm_arch: u32,
    },
    /// A host-offload shared object (`e_machine`: 62 x86-64, 183 AArch64, 21 PowerPC64).
    HostElf {
        /// `e_machine`.
        machine: u16,
    },
    /// LLVM bitcode (JIT); nothing is known about its kernels.
    Bitcode,
}

/// One parsed device image.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageInfo {
    /// What it is.
    pub kind: ImageKind,
    /// Its kernels, in symbol-table order.
    pub kernels: Vec<KernelDesc>,
    /// The OffloadBinary's `triple`, when the image came wrapped in one.
    pub triple: Option<String>,
    /// The OffloadBinary's `arch` (e.g. `sm_90`), when the image came wrapped in one.
    pub arch: Option<String>,
}

impl ImageInfo {
    /// The kernel with this device symbol name.
    pub fn kernel(&self, name: &str) -> Option<&KernelDesc> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// The build of a program, as the device image its kernels came from names
/// it: 16 hex digits of a 64-bit hash of the image's bytes, the same in every
/// process that registers the same image (no random seed), another for any
/// other machine code, compiler or flags. It keys `tune`'s searches
/// ([`crate::tune::store::Key`]), so grids measured on one build are never
/// launched on another. Not cryptographic: it tells builds apart, it does
/// not authenticate them. Word at a time, some 4 GB/s: 2-3 ms for a 10 MB
/// image, once when the image registers.
pub fn build_id(image: &[u8]) -> String {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, word: u64| {
        let x = (h ^ word).wrapping_mul(K);
        x ^ (x >> 29)
    };
    let mut words = image.chunks_exact(8);
    let mut h = K ^ image.len() as u64;
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        h = mix(h, u64::from_le_bytes(bytes));
    }
    let mut tail = [0; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = mix(h, u64::from_le_bytes(tail));
    format!("{:016x}", crate::splitmix::SplitMix64(h).next_u64())
}

const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
const BITCODE_MAGIC: [u8; 4] = [b'B', b'C', 0xc0, 0xde];
const BITCODE_WRAPPER_MAGIC: [u8; 4] = [0xde, 0xc0, 0x17, 0x0b];

fn unknown(bytes: &[u8]) -> ImageError {
    ImageError::UnknownFormat {
        magic: bytes.iter().take(8).copied().collect(),
    }
}

/// Parses one device image: a cubin, an OffloadBinary around one (first
/// entry), LLVM bitcode or a host-offload ELF.
pub fn parse_image(bytes: &[u8]) -> Result<ImageInfo, ImageError> {
    parse_inner(bytes, true)
}

fn parse_inner(bytes: &[u8], allow_wrapper: bool) -> Result<ImageInfo, ImageError> {
    if bytes.is_empty() {
        return Err(ImageError::Empty);
    }
    let Some(magic) = bytes.get(..4) else {
        return Err(unknown(bytes));
    };
    if magic == offload_binary::MAGIC {
        if !allow_wrapper {
            return Err(ImageError::OffloadBinary {
                offset: 0,
                reason: "an OffloadBinary inside an OffloadBinary".into(),
            });
        }
        let (entries, _) = offload_binary::parse_one(bytes, 0)?;
        let Some(first) = entries.into_iter().next() else {
            return Err(ImageError::OffloadBinary {
                offset: 0,
                reason: "no entries".into(),
            });
        };
        return parse_entry(&first);
    }
    if magic == BITCODE_MAGIC || magic == BITCODE_WRAPPER_MAGIC {
        return Ok(ImageInfo {
            kind: ImageKind::Bitcode,
            kernels: Vec::new(),
            triple: None,
            arch: None,
        });
    }
    if magic != ELF_MAGIC {
        return Err(unknown(bytes));
    }
    let buf = elf::Aligned::new(bytes);
    let e = elf::Elf::parse(buf.bytes())?;
    match e.machine() {
        elf::EM_CUDA => elf::parse_cubin(&e),
        m if elf::HOST_MACHINES.contains(&m) => elf::parse_host(&e),
        machine => Err(ImageError::UnsupportedMachine { machine }),
    }
}

fn parse_entry(entry: &offload_binary::OffloadEntry<'_>) -> Result<ImageInfo, ImageError> {
    let mut info = parse_inner(entry.image, false)?;
    info.triple = entry.triple.clone().filter(|s| !s.is_empty());
    info.arch = entry.arch.clone().filter(|s| !s.is_empty());
    Ok(info)
}

/// Every offload image in a file on disk: the entries of the
/// `.llvm.offloading` section of a host executable, shared library or
/// object file; every entry of an OffloadBinary file; or the file itself when
/// it is a bare cubin or bitcode. An ELF without offload images gives an
/// empty list (a bare host-offload image is not recognised as one here; use
/// [`parse_image`]).
pub fn images_in_file(bytes: &[u8]) -> Result<Vec<ImageInfo>, ImageError> {
    visit_images_in_file(bytes, |image, entry| match entry {
        Some(entry) => parse_entry(entry),
        None => parse_image(image),
    })
}

/// The raw bytes of every offload image in a file, as the runtime would
/// register them (for loading them into the CUDA driver); same search as
/// [`images_in_file`].
pub fn raw_images_in_file(bytes: &[u8]) -> Result<Vec<Vec<u8>>, ImageError> {
    visit_images_in_file(bytes, |image, _| Ok(image.to_vec()))
}

/// Calls `visit` on each image of a file, with its OffloadBinary entry when
/// it came from one.
fn visit_images_in_file<T>(
    bytes: &[u8],
    mut visit: impl FnMut(&[u8], Option<&offload_binary::OffloadEntry<'_>>) -> Result<T, ImageError>,
) -> Result<Vec<T>, ImageError> {
    if bytes.is_empty() {
        return Err(ImageError::Empty);
    }
    let mut entries = |blob: &[u8]| -> Result<Vec<T>, ImageError> {
        offload_binary::parse_all(blob)?
            .iter()
            .map(|e| visit(e.image, Some(e)))
            .collect()
    };
    if bytes.starts_with(&offload_binary::MAGIC) {
        return entries(bytes);
    }
    if !bytes.starts_with(&ELF_MAGIC) {
        return visit(bytes, None).map(|i| vec![i]);
    }
    let buf = elf::Aligned::new(bytes);
    let e = elf::Elf::parse(buf.bytes())?;
    if e.machine() == elf::EM_CUDA {
        return visit(bytes, None).map(|i| vec![i]);
    }
    match e.section_data(b".llvm.offloading", Some(elf::SHT_LLVM_OFFLOADING))? {
        Some(section) => entries(section),
        None => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::build_id;

    #[test]
    fn a_build_is_the_same_for_the_same_bytes_and_another_for_any_change() {
        let image: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let id = build_id(&image);
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(build_id(&image.clone()), id);
        let mut changed = image.clone();
        for at in [0, 500, 999] {
            changed[at] ^= 1;
            assert_ne!(build_id(&changed), id, "byte {at}");
            changed[at] ^= 1;
        }
        // A zero byte more or less, in the last word or past it.
        assert_ne!(build_id(&image[..999]), id);
        assert_ne!(build_id(&[image.as_slice(), &[0]].concat()), id);
        assert_ne!(build_id(&[]), build_id(&[0]));
    }
}
