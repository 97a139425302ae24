//! Image parser against real clang-19 images, a clang 23 device object
//! (tests/fixtures/regen-images.sh) and malformed input.

use gridsel::image::{ImageError, ImageInfo, ImageKind, images_in_file, parse_image};
use gridsel::kernel::{ExecMode, KernelDesc};

const CUBIN: &[u8] = include_bytes!("fixtures/images/kernels.sm_90.cubin");
const OFFLOAD: &[u8] = include_bytes!("fixtures/images/kernels.sm_90.offload");
const HOST_SO: &[u8] = include_bytes!("fixtures/images/kernels.x86_64.so");
const HOST_EXE: &[u8] = include_bytes!("fixtures/images/kernels.x86_64.exe");
const BITCODE: &[u8] = include_bytes!("fixtures/images/tiny.bc");
const LLVM23_OBJECT: &[u8] = include_bytes!("fixtures/images/reduction.llvm23.sm_90.o");

/// `__omp_offloading_<dev>_<file>_<func>_l<line>` -> `<func>`; the device and
/// file ids change with the inode of the source at regeneration.
fn func_of(kernel: &str) -> Option<&str> {
    let rest = kernel.strip_prefix("__omp_offloading_")?;
    let func_line = rest.splitn(3, '_').nth(2)?;
    Some(func_line.rsplit_once("_l")?.0)
}

fn kernel<'a>(info: &'a ImageInfo, func: &str) -> &'a KernelDesc {
    let found: Vec<_> = info
        .kernels
        .iter()
        .filter(|k| func_of(&k.name) == Some(func))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "kernel for {func} in {:?}",
        info.kernels.iter().map(|k| &k.name).collect::<Vec<_>>()
    );
    found[0]
}

fn funcs(info: &ImageInfo) -> Vec<&str> {
    let mut v: Vec<_> = info
        .kernels
        .iter()
        .filter_map(|k| func_of(&k.name))
        .collect();
    v.sort_unstable();
    v
}

const FUNCS: [&str; 6] = [
    "bounds512",
    "generic_spmd",
    "heavy",
    "limit256",
    "local_array",
    "spmd",
];

fn check_cubin_kernels(info: &ImageInfo) {
    assert_eq!(info.kind, ImageKind::Cubin { sm_arch: 90 });
    assert_eq!(
        funcs(info),
        FUNCS,
        "only kernels, not device runtime functions"
    );
    for k in &info.kernels {
        assert_eq!(k.sm_arch, Some(90), "{}", k.name);
        assert!(k.registers.is_some_and(|r| r > 0), "{}", k.name);
        assert!(k.code_size.is_some_and(|c| c > 0), "{}", k.name);
        let env = k
            .environment
            .expect("every clang 19 kernel has an environment");
        assert_eq!(
            env.min_threads,
            Some(1),
            "clang 19 writes MinThreads 1: {}",
            k.name
        );
        assert_eq!(env.max_teams, None, "{}", k.name);
        assert_eq!(env.max_threads, k.max_threads, "{}", k.name);
        assert_eq!(ExecMode::from_raw(env.exec_mode), k.exec_mode, "{}", k.name);
        assert_eq!(env.reduction_data_size, None, "no reductions: {}", k.name);
        assert!(!k.unbounded_stack, "{}", k.name);
    }

    let spmd = kernel(info, "spmd");
    assert_eq!(spmd.exec_mode, Some(ExecMode::Spmd));
    assert_eq!(spmd.max_threads, Some(128));
    assert_eq!(spmd.shared_mem, Some(36));
    assert_eq!(spmd.local_mem, Some(0));
    assert_eq!(spmd.registers, Some(21));
    assert_eq!(spmd.distribute_chunk(), Some(128));

    let gs = kernel(info, "generic_spmd");
    assert_eq!(gs.exec_mode, Some(ExecMode::GenericSpmd));
    assert_eq!(gs.max_threads, Some(128));
    assert_eq!(
        gs.shared_mem,
        Some(52),
        "runtime 36 + 16 bytes of its own (the 1 KiB reserve is left out, as the driver does)"
    );
    assert_eq!(gs.local_mem, Some(0));
    assert_eq!(gs.distribute_chunk(), Some(1));

    let l256 = kernel(info, "limit256");
    assert_eq!(l256.exec_mode, Some(ExecMode::Spmd));
    assert_eq!(l256.max_threads, Some(256));
    assert_eq!(l256.shared_mem, Some(36));

    let b512 = kernel(info, "bounds512");
    assert_eq!(b512.exec_mode, Some(ExecMode::Spmd));
    assert_eq!(b512.max_threads, Some(512));
    assert_eq!(b512.shared_mem, Some(36));

    let heavy = kernel(info, "heavy");
    assert_eq!(heavy.max_threads, Some(128));
    assert!(
        heavy.registers > spmd.registers,
        "{:?} vs {:?}",
        heavy.registers,
        spmd.registers
    );
    assert!(heavy.code_size > spmd.code_size);

    let local = kernel(info, "local_array");
    assert_eq!(local.local_mem, Some(512), "double t[64]");
    assert_eq!(local.max_threads, Some(128));
    assert_eq!(local.exec_mode, Some(ExecMode::Spmd));
}

#[test]
fn raw_cubin() {
    let info = parse_image(CUBIN).unwrap();
    check_cubin_kernels(&info);
    assert_eq!(info.triple, None);
    assert_eq!(info.arch, None);
    assert_eq!(images_in_file(CUBIN).unwrap(), vec![info]);
}

#[test]
fn cubin_e_flags_hold_the_arch() {
    let flags = u32::from_le_bytes(CUBIN[48..52].try_into().unwrap());
    assert_eq!(flags, 0x5a055a);
    assert_eq!(CUBIN[8], 7, "ELF ABI version 7 (CUDA 12)");
    assert_eq!(gridsel::image::elf::sm_arch(flags, 7), 90);
    assert_eq!(
        gridsel::image::elf::sm_arch(0x6005a04, 8),
        90,
        "CUDA 13 layout (docs/cubin.md §1)"
    );
}

#[test]
fn misaligned_cubin_parses_the_same() {
    let mut v = vec![0u8; CUBIN.len() + 1];
    v[1..].copy_from_slice(CUBIN);
    assert_eq!(parse_image(&v[1..]).unwrap(), parse_image(CUBIN).unwrap());
}

#[test]
fn offload_binary_unwraps_to_the_cubin() {
    assert_eq!(&OFFLOAD[..4], &[0x10, 0xff, 0x10, 0xad]);
    let info = parse_image(OFFLOAD).unwrap();
    check_cubin_kernels(&info);
    assert_eq!(info.triple.as_deref(), Some("nvptx64-nvidia-cuda"));
    assert_eq!(info.arch.as_deref(), Some("sm_90"));
    let plain = parse_image(CUBIN).unwrap();
    assert_eq!(info.kernels, plain.kernels);
    // The inner image is the cubin, byte for byte, at ImageOffset 0x90.
    let off = u64::from_le_bytes(OFFLOAD[0x38..0x40].try_into().unwrap()) as usize;
    let size = u64::from_le_bytes(OFFLOAD[0x40..0x48].try_into().unwrap()) as usize;
    assert_eq!(off, 0x90);
    assert_eq!(&OFFLOAD[off..off + size], CUBIN);
    assert_eq!(images_in_file(OFFLOAD).unwrap(), vec![info]);
}

#[test]
fn two_offload_binaries_back_to_back() {
    let mut two = OFFLOAD.to_vec();
    while !two.len().is_multiple_of(8) {
        two.push(0);
    }
    two.extend_from_slice(&[0; 8]);
    two.extend_from_slice(OFFLOAD);
    let images = images_in_file(&two).unwrap();
    assert_eq!(images.len(), 2);
    assert_eq!(images[0], images[1]);
}

#[test]
fn bitcode_is_a_jit_image_without_kernels() {
    let info = parse_image(BITCODE).unwrap();
    assert_eq!(info.kind, ImageKind::Bitcode);
    assert!(info.kernels.is_empty());
    let wrapped = [0xde, 0xc0, 0x17, 0x0b, 0, 0, 0, 0];
    assert_eq!(parse_image(&wrapped).unwrap().kind, ImageKind::Bitcode);
}

#[test]
fn host_offload_image() {
    let info = parse_image(HOST_SO).unwrap();
    assert_eq!(info.kind, ImageKind::HostElf { machine: 62 });
    assert_eq!(funcs(&info), FUNCS);
    for k in &info.kernels {
        // LLVM 19 host images carry no kernel environments and no cubin facts.
        assert_eq!(k.exec_mode, None, "{}", k.name);
        assert_eq!(k.max_threads, None);
        assert_eq!(k.registers, None);
        assert_eq!(k.shared_mem, None);
        assert_eq!(k.sm_arch, None);
        assert!(k.code_size.is_some_and(|c| c > 0));
    }
}

#[test]
fn images_in_host_executable() {
    let images = images_in_file(HOST_EXE).unwrap();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].triple.as_deref(), Some("x86_64-pc-linux-gnu"));
    assert_eq!(images[0].arch, None, "empty arch string");
    let mut so = parse_image(HOST_SO).unwrap();
    so.triple = images[0].triple.clone();
    assert_eq!(images[0], so);
}

#[test]
fn elf_without_offloading_has_no_images() {
    assert_eq!(images_in_file(HOST_SO).unwrap(), vec![]);
}

// ---------------------------------------------------------------- malformed

fn assert_err(bytes: &[u8], what: &str) -> ImageError {
    let r = parse_image(bytes);
    let r2 = images_in_file(bytes);
    match (r, r2) {
        (Err(e), Err(_)) => {
            assert!(!e.to_string().is_empty());
            e
        }
        other => panic!("{what}: expected errors, got {other:?}"),
    }
}

#[test]
fn empty_input() {
    assert_eq!(assert_err(&[], "empty"), ImageError::Empty);
}

#[test]
fn truncated_cubins_are_errors() {
    let n = CUBIN.len();
    for len in [1, 3, 4, 63, 64, 100, 1000, n / 2, n - 100, n - 1] {
        assert_err(&CUBIN[..len], &format!("cubin cut at {len}"));
    }
}

#[test]
fn every_truncation_of_the_wrappers_is_handled() {
    // Never a panic; all cuts of the OffloadBinary that lose the image fail.
    for len in 0..OFFLOAD.len() {
        if len % 97 == 0 || len < 200 {
            assert!(
                parse_image(&OFFLOAD[..len]).is_err(),
                "offload cut at {len}"
            );
        }
    }
    for len in (0..HOST_EXE.len()).step_by(331) {
        let _ = images_in_file(&HOST_EXE[..len]);
        let _ = parse_image(&HOST_EXE[..len]);
    }
}

/// Offset and size of a section, read by hand from the ELF64 headers.
fn section(bytes: &[u8], name: &str) -> (usize, usize) {
    let u16_at = |o: usize| u16::from_le_bytes(bytes[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let shdr = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(shdr(shstrndx) + 0x18);
    (0..shnum)
        .map(shdr)
        .find(|&h| {
            let n = strtab + u32_at(h);
            bytes[n..].split(|&b| b == 0).next() == Some(name.as_bytes())
        })
        .map(|h| (u64_at(h + 0x18), u64_at(h + 0x20)))
        .unwrap()
}

#[test]
fn corrupted_nv_info_length() {
    let (off, size) = section(CUBIN, ".nv.info");
    assert!(size > 8);
    // First record: 04 11 08 00 (FRAME_SIZE, 8 bytes). Make it claim more than the section.
    assert_eq!(&CUBIN[off..off + 4], &[0x04, 0x11, 0x08, 0x00]);
    let mut bad = CUBIN.to_vec();
    bad[off + 2..off + 4].copy_from_slice(&0xfff0u16.to_le_bytes());
    let e = assert_err(&bad, "nv.info length");
    let msg = e.to_string();
    assert!(matches!(e, ImageError::NvInfo { offset: 0, .. }), "{e:?}");
    assert!(
        msg.contains(".nv.info") && msg.contains("truncated"),
        "{msg}"
    );

    // A REGCOUNT record shorter than {sym, regs}.
    let mut short = CUBIN.to_vec();
    short[off + 4 + 8 + 1] = 0x2f; // second record: 04 2f 08 00
    short[off + 4 + 8 + 2] = 4;
    short[off + 4 + 8 + 3] = 0;
    assert!(parse_image(&short).is_err());

    // An unknown format byte cannot be skipped.
    let mut fmt = CUBIN.to_vec();
    fmt[off] = 9;
    assert!(matches!(parse_image(&fmt), Err(ImageError::NvInfo { .. })));
}

#[test]
fn unknown_attributes_are_skipped() {
    let (off, _) = section(CUBIN, ".nv.info");
    // Turn the first FRAME_SIZE (local_array's 512 bytes) into an unknown attribute 0x7e.
    let mut v = CUBIN.to_vec();
    v[off + 1] = 0x7e;
    let info = parse_image(&v).unwrap();
    // Skipped, not an error; MIN_STACK_SIZE still gives the 512 bytes.
    assert_eq!(kernel(&info, "local_array").local_mem, Some(512));
    assert_eq!(kernel(&info, "spmd").local_mem, Some(0));
}

#[test]
fn corrupted_offload_binary() {
    let mut v = OFFLOAD.to_vec();
    v[8..16].copy_from_slice(&(OFFLOAD.len() as u64 * 2).to_le_bytes()); // size
    assert!(
        matches!(parse_image(&v), Err(ImageError::Truncated { .. })),
        "{:?}",
        parse_image(&v)
    );
    let mut v = OFFLOAD.to_vec();
    v[0x40..0x48].copy_from_slice(&u64::MAX.to_le_bytes()); // image size
    assert!(matches!(
        parse_image(&v),
        Err(ImageError::OffloadBinary { .. })
    ));
    let mut v = OFFLOAD.to_vec();
    v[4] = 77; // version
    assert!(matches!(
        parse_image(&v),
        Err(ImageError::OffloadBinary { .. })
    ));
    let mut v = OFFLOAD.to_vec();
    v[0x20..0x40].fill(0xff); // entry
    assert!(parse_image(&v).is_err());
}

#[test]
fn other_machine_is_rejected() {
    let mut v = CUBIN.to_vec();
    v[18..20].copy_from_slice(&224u16.to_le_bytes()); // EM_AMDGPU
    assert_eq!(
        parse_image(&v),
        Err(ImageError::UnsupportedMachine { machine: 224 })
    );
    // As a file it is just an ELF without offload images.
    assert_eq!(images_in_file(&v), Ok(vec![]));
    let mut v = CUBIN.to_vec();
    v[4] = 1; // ELFCLASS32
    assert!(matches!(
        assert_err(&v, "elf32"),
        ImageError::UnsupportedElf { .. }
    ));
}

#[test]
fn random_bytes_never_panic() {
    // xorshift, deterministic
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for round in 0..300 {
        let len = (next() % 4096) as usize;
        let mut v: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        assert!(parse_image(&v).is_err() || v.len() >= 4);
        let _ = images_in_file(&v);
        // Random bytes behind each real magic.
        let magic: &[u8] = match round % 4 {
            0 => &CUBIN[..64],
            1 => &[0x10, 0xff, 0x10, 0xad],
            2 => &HOST_SO[..64],
            _ => &[0x7f, b'E', b'L', b'F'],
        };
        if v.len() >= magic.len() {
            v[..magic.len()].copy_from_slice(magic);
        }
        let _ = parse_image(&v);
        let _ = images_in_file(&v);
    }
    // Byte flips in the real cubin: anything but a panic.
    let mut v = CUBIN.to_vec();
    for _ in 0..2000 {
        let i = (next() as usize) % v.len();
        let old = v[i];
        v[i] = next() as u8;
        let _ = parse_image(&v);
        v[i] = old;
    }
    assert_eq!(
        assert_err(b"hello world", "text"),
        ImageError::UnknownFormat {
            magic: b"hello wo".to_vec()
        }
    );
}

/// clang 23 (23.1.4) writes 40-byte kernel environments: the configuration
/// lost `ReductionBufferLength`, the pointers follow at once.
#[test]
fn llvm23_kernel_environments_are_read() {
    let info = parse_image(LLVM23_OBJECT).expect("clang 23 sm_90 object");
    assert_eq!(info.kind, ImageKind::Cubin { sm_arch: 90 });
    let sum = kernel(&info, "sum");
    assert_eq!(sum.exec_mode, Some(ExecMode::Spmd));
    assert_eq!(sum.max_threads, Some(128));
    let env = sum.environment.expect("an environment");
    assert_eq!(
        (env.exec_mode, env.min_threads, env.max_threads),
        (2, Some(1), Some(128))
    );
    assert_eq!(env.may_use_nested_parallelism, Some(false));
    // One double per team; the slot count is no longer compiled in.
    assert_eq!(env.reduction_data_size, Some(8));
    assert_eq!(env.reduction_buffer_length, None);
}
