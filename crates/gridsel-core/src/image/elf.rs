//! Cubins and host-offload ELF images.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use object::Endianness;
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, SectionTable, Sym};

use super::nv_info::{self, NvInfoAttrs};
use super::{ImageError, ImageInfo, ImageKind};
use crate::kernel::{ExecMode, KernelDesc, KernelEnvironment};

type Header = elf::FileHeader64<Endianness>;

/// `e_machine` of CUDA cubins.
pub const EM_CUDA: u16 = 190;
/// Host-offload targets libomptarget's host plugin supports.
pub const HOST_MACHINES: [u16; 3] = [elf::EM_X86_64, elf::EM_AARCH64, elf::EM_PPC64];
/// `SHT_LLVM_OFFLOADING`.
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;
/// `STO_CUDA_ENTRY` in `st_other`: the function is a kernel.
const STO_CUDA_ENTRY: u8 = 0x10;
const ENV_SUFFIX: &str = "_kernel_environment";
/// The stack size ptxas records when the call graph has no static bound
/// (recursion, indirect calls): the driver sizes the stack at run time.
const UNBOUNDED_STACK: u32 = u32::MAX;

/// `object` (without its `unaligned` feature) wants ELF structures 8-byte
/// aligned; slices from `include_bytes!` or inside an OffloadBinary need not
/// be. This holds the bytes at an 8-byte aligned address, copying only when
/// they are not already.
pub(super) struct Aligned<'a> {
    buf: Cow<'a, [u8]>,
    start: usize,
    len: usize,
}

impl<'a> Aligned<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        if (bytes.as_ptr() as usize).is_multiple_of(8) {
            return Self {
                buf: Cow::Borrowed(bytes),
                start: 0,
                len: bytes.len(),
            };
        }
        let mut v = vec![0u8; bytes.len() + 8];
        // align_offset may answer usize::MAX in theory; then `object` reports
        // the misalignment as an error rather than this code panicking.
        let start = match v.as_ptr().align_offset(8) {
            s if s < 8 => s,
            _ => 0,
        };
        v[start..start + bytes.len()].copy_from_slice(bytes);
        Self {
            buf: Cow::Owned(v),
            start,
            len: bytes.len(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

/// The parts of an ELF file the parsers need.
pub(super) struct Elf<'a> {
    pub data: &'a [u8],
    pub header: &'a Header,
    pub endian: Endianness,
    pub sections: SectionTable<'a, Header, &'a [u8]>,
}

impl<'a> Elf<'a> {
    /// `data` must be 8-byte aligned (see [`aligned`]).
    pub fn parse(data: &'a [u8]) -> Result<Self, ImageError> {
        if data.len() < 64 {
            return Err(ImageError::truncated(
                "ELF header",
                0,
                64,
                data.len() as u64,
            ));
        }
        match data[4] {
            elf::ELFCLASS64 => {}
            elf::ELFCLASS32 => {
                return Err(ImageError::UnsupportedElf {
                    reason: "32-bit ELF".into(),
                });
            }
            c => {
                return Err(ImageError::UnsupportedElf {
                    reason: format!("ELF class {c}"),
                });
            }
        }
        if data[5] != elf::ELFDATA2LSB {
            return Err(ImageError::UnsupportedElf {
                reason: "not little-endian".into(),
            });
        }
        let header = Header::parse(data).map_err(|e| ImageError::elf("file header", e))?;
        let endian = header
            .endian()
            .map_err(|e| ImageError::elf("file header", e))?;
        let sections = header
            .sections(endian, data)
            .map_err(|e| ImageError::elf("section headers", e))?;
        // Not used, but a file whose program headers are cut off is truncated
        // (the driver would refuse it), so say so.
        header
            .program_headers(endian, data)
            .map_err(|e| ImageError::elf("program headers", e))?;
        Ok(Self {
            data,
            header,
            endian,
            sections,
        })
    }

    pub fn machine(&self) -> u16 {
        self.header.e_machine(self.endian)
    }

    /// Contents of the first section with this name or type.
    pub fn section_data(
        &self,
        name: &[u8],
        sh_type: Option<u32>,
    ) -> Result<Option<&'a [u8]>, ImageError> {
        for s in self.sections.iter() {
            let n = self
                .sections
                .section_name(self.endian, s)
                .unwrap_or_default();
            if n == name || sh_type.is_some_and(|t| s.sh_type(self.endian) == t) {
                let ctx = String::from_utf8_lossy(name).into_owned();
                return s
                    .data(self.endian, self.data)
                    .map(Some)
                    .map_err(|e| ImageError::elf(ctx, e));
            }
        }
        Ok(None)
    }
}

/// One symbol, with what the parsers look at.
struct SymInfo<'a> {
    index: usize,
    name: &'a str,
    st_type: u8,
    bind: u8,
    other: u8,
    shndx: Option<usize>,
    value: u64,
    size: u64,
}

fn symbols<'a>(e: &Elf<'a>, sh_type: u32) -> Result<Vec<SymInfo<'a>>, ImageError> {
    let table = e
        .sections
        .symbols(e.endian, e.data, sh_type)
        .map_err(|err| ImageError::elf("symbol table", err))?;
    let mut out = Vec::with_capacity(table.len());
    for (index, sym) in table.enumerate() {
        let name = table
            .symbol_name(e.endian, sym)
            .map_err(|err| ImageError::elf("symbol name", err))?;
        let Ok(name) = std::str::from_utf8(name) else {
            continue;
        };
        let shndx = table
            .symbol_section(e.endian, sym, index)
            .ok()
            .flatten()
            .map(|s| s.0);
        out.push(SymInfo {
            index: index.0,
            name,
            st_type: sym.st_type(),
            bind: sym.st_bind(),
            other: sym.st_other(),
            shndx,
            value: sym.st_value(e.endian),
            size: sym.st_size(e.endian),
        });
    }
    Ok(out)
}

/// Sections by name: (index, header).
fn section_map<'a>(
    e: &Elf<'a>,
) -> HashMap<&'a [u8], (usize, &'a elf::SectionHeader64<Endianness>)> {
    let mut m = HashMap::new();
    for (i, s) in e.sections.enumerate() {
        if let Ok(n) = e.sections.section_name(e.endian, s) {
            m.entry(n).or_insert((i.0, s));
        }
    }
    m
}

/// Reads `<kernel>_kernel_environment`'s configuration. A symbol of
/// another size than LLVM 18-22's or LLVM 23's ([`KernelEnvironment::config_size`])
/// is no environment this parser knows (unsized symbols, 0, are read as
/// LLVM 18-22's when the section holds the bytes).
fn read_env(e: &Elf<'_>, kernel: &str, sym: &SymInfo<'_>) -> Result<KernelEnvironment, ImageError> {
    let bad = |reason: String| ImageError::KernelEnvironment {
        kernel: kernel.to_owned(),
        reason,
    };
    let config_len = match sym.size {
        0 => KernelEnvironment::CONFIG_SIZE,
        size => KernelEnvironment::config_size(size).ok_or_else(|| {
            bad(format!(
                "symbol size {size}, expected {} (LLVM 18-22) or {} (LLVM 23 and later)",
                KernelEnvironment::SIZE,
                KernelEnvironment::SIZE_SINCE_LLVM23
            ))
        })?,
    };
    let shndx = sym
        .shndx
        .ok_or_else(|| bad("symbol has no section".into()))?;
    let section = e
        .sections
        .section(object::SectionIndex(shndx))
        .map_err(|err| bad(format!("section {shndx}: {err}")))?;
    if section.sh_type(e.endian) == elf::SHT_NOBITS {
        return Err(bad("symbol lies in a NOBITS section".into()));
    }
    let data = section
        .data(e.endian, e.data)
        .map_err(|err| bad(format!("section {shndx}: {err}")))?;
    // Cubins and relocatable files have sh_addr 0 and section-relative
    // st_value; linked host objects have addresses in both.
    let off = sym
        .value
        .checked_sub(section.sh_addr(e.endian))
        .and_then(|o| usize::try_from(o).ok())
        .ok_or_else(|| bad(format!("st_value {:#x} lies before its section", sym.value)))?;
    let config = data
        .get(off..)
        .and_then(|d| d.get(..config_len))
        .ok_or_else(|| {
            bad(format!(
                "needs {config_len} bytes at {off:#x}, section has {}",
                data.len()
            ))
        })?;
    let env = KernelEnvironment::decode(config);
    if ExecMode::from_raw(env.exec_mode).is_none() {
        log::warn!(
            "{kernel}: unknown execution mode {} in the kernel environment",
            env.exec_mode
        );
    }
    Ok(env)
}

fn is_func(s: &SymInfo<'_>) -> bool {
    s.st_type == elf::STT_FUNC
}

fn is_exported(s: &SymInfo<'_>) -> bool {
    s.bind == elf::STB_GLOBAL || s.bind == elf::STB_WEAK
}

/// Kernel environments by kernel name. Unlinked (`ET_REL`) cubins give them
/// type 13 (`STT_CUDA_OBJECT`) instead of `STT_OBJECT`.
fn env_symbols<'s, 'a>(syms: &'s [SymInfo<'a>]) -> HashMap<&'a str, &'s SymInfo<'a>> {
    syms.iter()
        .filter(|s| !matches!(s.st_type, elf::STT_FUNC | elf::STT_SECTION | elf::STT_FILE))
        .filter_map(|s| Some((s.name.strip_suffix(ENV_SUFFIX)?, s)))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// The CUDA architecture in `e_flags`: the low byte for ELF ABI version 7
/// and below (CUDA <= 12, e.g. 0x5a055a = sm_90 with virtual arch 90 in bits
/// 16..24), bits 8..16 for ABI version 8 (CUDA 13, e.g. 0x6005a04).
pub fn sm_arch(e_flags: u32, abi_version: u8) -> u32 {
    if abi_version >= 8 {
        (e_flags >> 8) & 0xff
    } else {
        e_flags & 0xff
    }
}

/// Shared memory the system reserves per block from sm_80 on.
const RESERVED_SHARED_SM80: u32 = 1024;

pub(super) fn parse_cubin(e: &Elf<'_>) -> Result<ImageInfo, ImageError> {
    let flags = e.header.e_flags(e.endian);
    let abi = e.header.e_ident().abi_version;
    let arch = sm_arch(flags, abi);
    let linked = e.header.e_type(e.endian) == elf::ET_EXEC;
    let syms = symbols(e, elf::SHT_SYMTAB)?;
    // From sm_80 the driver reserves 1 KiB of shared memory per block; a
    // linked cubin that uses it (`.nv.reservedSmem.offset0`) places it at the
    // start of every kernel's `.nv.shared.K`. The driver's SHARED_SIZE_BYTES,
    // and so the static shared memory here, leaves it out (checked with
    // `gridsel-research check-driver` on the H100: every section was 1024 bytes over).
    let reserved_in_section =
        if linked && arch >= 80 && syms.iter().any(|s| s.name == ".nv.reservedSmem.offset0") {
            RESERVED_SHARED_SM80
        } else {
            0
        };
    let sections = section_map(e);
    let envs = env_symbols(&syms);

    let info_name = |k: &str| format!(".nv.info.{k}");
    let mut seen = HashSet::new();
    let kernels: Vec<&SymInfo<'_>> = if envs.is_empty() {
        syms.iter()
            .filter(|s| is_func(s) && is_exported(s) && s.shndx.is_some())
            .filter(|s| {
                s.other & STO_CUDA_ENTRY != 0
                    || s.name.starts_with("__omp_offloading_")
                    || sections.contains_key(info_name(s.name).as_bytes())
            })
            .filter(|s| seen.insert(s.name))
            .collect()
    } else {
        syms.iter()
            .filter(|s| is_func(s) && s.shndx.is_some() && envs.contains_key(s.name))
            .filter(|s| seen.insert(s.name))
            .collect()
    };

    let global = match sections.get(&b".nv.info"[..]) {
        Some((_, s)) => {
            let data = s
                .data(e.endian, e.data)
                .map_err(|err| ImageError::elf(".nv.info", err))?;
            nv_info::parse(".nv.info", data)?
        }
        None => NvInfoAttrs::default(),
    };

    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        let name = k.name;
        let own_name = info_name(name);
        let own = match sections.get(own_name.as_bytes()) {
            Some((_, s)) => {
                let data = s
                    .data(e.endian, e.data)
                    .map_err(|err| ImageError::elf(own_name.clone(), err))?;
                nv_info::parse(&own_name, data)?
            }
            None => NvInfoAttrs::default(),
        };
        let env = envs.get(name).map(|s| read_env(e, name, s)).transpose()?;
        // A linked cubin gathers all static shared memory a kernel uses,
        // its callees' included, into `.nv.shared.K`; no section means none
        // (plain SPMD kernels at -O3 have none). An unlinked object cannot
        // tell, since the device runtime's share is added at link time.
        let shared_mem = match sections.get(format!(".nv.shared.{name}").as_bytes()) {
            Some((_, s)) => u32::try_from(s.sh_size(e.endian))
                .ok()
                .map(|size| size.saturating_sub(reserved_in_section)),
            None => linked.then_some(0),
        };
        let code_size = sections
            .get(format!(".text.{name}").as_bytes())
            .map(|(_, s)| s.sh_size(e.endian))
            .or((k.size > 0).then_some(k.size))
            .and_then(|v| u32::try_from(v).ok());
        let ei_max = own.max_threads.map(|(x, _, _)| x).filter(|&x| x > 0);
        let max_threads = match (env.and_then(|v| v.max_threads), ei_max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sym_index = k.index as u32;
        let local_mem = match (
            global.frame_size.get(&sym_index),
            global.stack_size.get(&sym_index),
        ) {
            (Some(&f), Some(&st)) => Some(f.max(st)),
            (f, st) => f.or(st).copied(),
        };
        out.push(KernelDesc {
            name: name.to_owned(),
            registers: global.regcount.get(&sym_index).copied(),
            shared_mem,
            local_mem: local_mem.filter(|&b| b != UNBOUNDED_STACK),
            unbounded_stack: local_mem == Some(UNBOUNDED_STACK),
            max_threads,
            exec_mode: env.and_then(|v| ExecMode::from_raw(v.exec_mode)),
            environment: env,
            code_size,
            sm_arch: Some(arch),
            host: false,
            // The image's, set when it registers.
            build: String::new(),
        });
    }
    Ok(ImageInfo {
        kind: ImageKind::Cubin { sm_arch: arch },
        kernels: out,
        triple: None,
        arch: None,
    })
}

pub(super) fn parse_host(e: &Elf<'_>) -> Result<ImageInfo, ImageError> {
    let machine = e.machine();
    let mut syms = symbols(e, elf::SHT_SYMTAB)?;
    if syms.is_empty() {
        // A stripped shared object still has its dynamic symbols.
        syms = symbols(e, elf::SHT_DYNSYM)?;
    }
    let envs = env_symbols(&syms);
    // Kernels have an offload entry `.offloading.entry.<name>` (LLVM 17-19)
    // and are exported functions; the host fallbacks in the host executable
    // are local, the outlined parallel regions too.
    let entries: HashSet<&str> = syms
        .iter()
        .filter_map(|s| s.name.strip_prefix(".offloading.entry."))
        .collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for s in &syms {
        let is_kernel = is_func(s)
            && is_exported(s)
            && s.shndx.is_some()
            && (entries.contains(s.name)
                || envs.contains_key(s.name)
                || (entries.is_empty()
                    && s.name.starts_with("__omp_offloading_")
                    && !s.name.contains('.')));
        if !is_kernel || !seen.insert(s.name) {
            continue;
        }
        let env = envs
            .get(s.name)
            .map(|envsym| read_env(e, s.name, envsym))
            .transpose()?;
        out.push(KernelDesc {
            name: s.name.to_owned(),
            max_threads: env.and_then(|v| v.max_threads),
            exec_mode: env.and_then(|v| ExecMode::from_raw(v.exec_mode)),
            environment: env,
            code_size: u32::try_from(s.size).ok().filter(|&v| v > 0),
            host: true,
            ..KernelDesc::default()
        });
    }
    Ok(ImageInfo {
        kind: ImageKind::HostElf { machine },
        kernels: out,
        triple: None,
        arch: None,
    })
}
