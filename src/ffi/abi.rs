//! libomptarget's data structures (docs/abi.md §2, §3) and checked access.
//!
//! Readers copy what they need out of program memory into owned values and
//! validate counts and versions first; a layout gridsel does not know is an
//! [`AbiError`], never a guess.

use std::ffi::{CStr, c_char, c_void};
use std::fmt;

/// `__tgt_bin_desc`.
#[repr(C)]
pub struct BinDesc {
    pub num_device_images: i32,
    pub device_images: *const DeviceImage,
    pub host_entries_begin: *const u8,
    pub host_entries_end: *const u8,
}

/// `__tgt_device_image`.
#[repr(C)]
pub struct DeviceImage {
    pub image_start: *const u8,
    pub image_end: *const u8,
    pub entries_begin: *const u8,
    pub entries_end: *const u8,
}

/// `__tgt_offload_entry` of LLVM <= 19 (32 bytes).
#[repr(C)]
struct EntryV1 {
    addr: *const c_void,
    name: *const c_char,
    size: usize,
    flags: i32,
    data: i32,
}

/// `llvm::offloading::EntryTy` of LLVM >= 20 (56 bytes; first 8 bytes zero).
#[repr(C)]
struct EntryV2 {
    reserved: u64,
    version: u16,
    kind: u16,
    flags: u32,
    address: *const c_void,
    symbol_name: *const c_char,
    size: u64,
    data: u64,
    aux_addr: *const c_void,
}

/// `KernelArgsTy` fields up to the trip count: shared by every version.
#[repr(C)]
struct KernelArgsHead {
    version: u32,
    num_args: u32,
    pointers: [*const c_void; 6],
    tripcount: u64,
}

/// `KernelArgsTy` of versions 2 to 5: one layout, 104 bytes. LLVM 23
/// renamed the grid fields `UserNumBlocks`/`UserThreadLimit` and added flag
/// bits, but kept every offset; from version 4 the implicit `dyn_ptr`
/// argument goes last in the argument arrays, which gridsel never touches
/// (docs/abi.md §2).
#[repr(C)]
struct KernelArgsV2 {
    head: KernelArgsHead,
    flags: u64,
    num_teams: [u32; 3],
    thread_limit: [u32; 3],
    dyn_cgroup_mem: u32,
}

/// `Flags.NoWait`: the call returns before the kernel ends.
const FLAG_NOWAIT: u64 = 1;
/// `Flags.DynCGroupMemFallback` (bits 2-3, LLVM 23): what the runtime does
/// when dynamic shared memory does not fit; the same for any grid.
const FLAG_DYN_CGROUP_MEM_FALLBACK: u64 = 0b11 << 2;
/// Every flag bit that leaves the grid to gridsel. The others say the grid is
/// not the runtime's to choose, or come from launches that are not clang's
/// OpenMP code: `IsCUDA` (bit 1, LLVM 21: a CUDA-style launch with its own
/// grid), and LLVM 23's `Cooperative` (bit 4: every block must be resident
/// at once), `IsPtrArgs` (bit 5: liboffload's own launches) and
/// `StrictBlocksAndThreads` (bit 6, one bit for both: launch exactly the
/// given grid; clang sets it for strict `num_teams`/`thread_limit`), and
/// any bit a later LLVM adds.
const FLAGS_OPEN_TO_GRIDSEL: u64 = FLAG_NOWAIT | FLAG_DYN_CGROUP_MEM_FALLBACK;

const _: () = assert!(size_of::<EntryV1>() == 32);
const _: () = assert!(size_of::<EntryV2>() == 56);
const _: () = assert!(size_of::<KernelArgsHead>() == 64);
const _: () = assert!(size_of::<KernelArgsV2>() == 104);

/// What cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiError {
    Null(&'static str),
    UnknownKernelArgsVersion(u32),
    BadRange(&'static str),
}

impl fmt::Display for AbiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null(what) => write!(f, "{what} is null"),
            Self::UnknownKernelArgsVersion(v) => {
                write!(
                    f,
                    "KernelArgs version {v} has a layout gridsel does not know (1-5 are supported)"
                )
            }
            Self::BadRange(what) => write!(f, "{what} has an invalid address range"),
        }
    }
}

/// Largest device image or entry table gridsel will read (1 GiB).
const MAX_RANGE: usize = 1 << 30;

fn range_len(begin: *const u8, end: *const u8, what: &'static str) -> Result<usize, AbiError> {
    if begin.is_null() || end.is_null() {
        return Err(AbiError::Null(what));
    }
    let len = (end as usize)
        .checked_sub(begin as usize)
        .ok_or(AbiError::BadRange(what))?;
    if len > MAX_RANGE {
        Err(AbiError::BadRange(what))
    } else {
        Ok(len)
    }
}

/// A registered binary: its kernel entries and its device images.
pub struct Library<'a> {
    /// (host address, device symbol) of every kernel entry.
    pub kernels: Vec<(usize, String)>,
    pub images: Vec<&'a [u8]>,
}

/// Reads a `__tgt_bin_desc`.
///
/// # Safety
/// `desc` must be null or point to a descriptor whose ranges stay valid for `'a`.
pub unsafe fn read_bin_desc<'a>(desc: *const BinDesc) -> Result<Library<'a>, AbiError> {
    // SAFETY: checked for null; the caller vouches for the rest.
    let desc = unsafe { desc.as_ref() }.ok_or(AbiError::Null("__tgt_bin_desc"))?;
    // SAFETY: the entry range comes from the same descriptor.
    let kernels = unsafe { read_entries(desc.host_entries_begin, desc.host_entries_end)? };
    let count =
        usize::try_from(desc.num_device_images).map_err(|_| AbiError::BadRange("device images"))?;
    let mut images = Vec::with_capacity(count);
    if count > 0 {
        if desc.device_images.is_null() {
            return Err(AbiError::Null("device image array"));
        }
        // SAFETY: libomptarget's contract: `count` images at `device_images`.
        let table = unsafe { std::slice::from_raw_parts(desc.device_images, count) };
        for image in table {
            let len = range_len(image.image_start, image.image_end, "device image")?;
            // SAFETY: [start, end) is the image the compiler embedded.
            images.push(unsafe { std::slice::from_raw_parts(image.image_start, len) });
        }
    }
    Ok(Library { kernels, images })
}

/// Reads an offload entry table of either layout; keeps kernels (size 0).
///
/// # Safety
/// `[begin, end)` must be an offload entry table or empty.
unsafe fn read_entries(begin: *const u8, end: *const u8) -> Result<Vec<(usize, String)>, AbiError> {
    if begin.is_null() && end.is_null() {
        return Ok(Vec::new());
    }
    let len = range_len(begin, end, "offload entry table")?;
    if len == 0 {
        return Ok(Vec::new());
    }
    // Both layouts hold pointers: a table the compiler emitted is aligned.
    if len < 8 || !(begin as usize).is_multiple_of(align_of::<u64>()) {
        return Err(AbiError::BadRange("offload entry table"));
    }
    // SAFETY: at least 8 readable bytes; the first field is a u64 or a pointer.
    let new_layout = unsafe { (begin as *const u64).read_unaligned() } == 0;
    let mut out = Vec::new();
    if new_layout {
        if len % size_of::<EntryV2>() != 0 {
            return Err(AbiError::BadRange("offload entry table (LLVM 20+ layout)"));
        }
        // SAFETY: length checked to be whole entries of this layout.
        let entries = unsafe {
            std::slice::from_raw_parts(begin as *const EntryV2, len / size_of::<EntryV2>())
        };
        for e in entries {
            if e.size == 0 {
                // SAFETY: the name is the compiler's NUL-terminated symbol or null.
                push_kernel(&mut out, e.address, unsafe { c_name(e.symbol_name) });
            }
        }
    } else {
        if len % size_of::<EntryV1>() != 0 {
            return Err(AbiError::BadRange(
                "offload entry table (LLVM <= 19 layout)",
            ));
        }
        // SAFETY: length checked to be whole entries of this layout.
        let entries = unsafe {
            std::slice::from_raw_parts(begin as *const EntryV1, len / size_of::<EntryV1>())
        };
        for e in entries {
            if e.size == 0 {
                // SAFETY: as above.
                push_kernel(&mut out, e.addr, unsafe { c_name(e.name) });
            }
        }
    }
    Ok(out)
}

fn push_kernel(out: &mut Vec<(usize, String)>, addr: *const c_void, name: Option<String>) {
    if let (false, Some(name)) = (addr.is_null(), name) {
        out.push((addr as usize, name));
    }
}

/// # Safety
/// `name` must be null or NUL-terminated.
unsafe fn c_name(name: *const c_char) -> Option<String> {
    // SAFETY: forwarded from the caller.
    (!name.is_null()).then(|| {
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
}

/// A `KernelArgsTy` of a known version.
pub struct KernelArgs {
    ptr: *mut KernelArgsHead,
    pub version: u32,
    pub trip_count: u64,
    /// `Flags.NoWait` (v2+): the call returns before the kernel ends.
    pub nowait: bool,
    /// A y or z dimension other than 1 was given (v2+; 0 stands for 1, as
    /// libomptarget reads it): gridsel writes only x, so such launches are
    /// left alone.
    pub multi_dimensional: bool,
    /// A flag other than `NoWait` and `DynCGroupMemFallback` is set (v2+): the program
    /// asked for exactly its grid (strict, cooperative or CUDA-style), so
    /// gridsel leaves the launch alone.
    pub grid_fixed: bool,
}

impl KernelArgs {
    /// Validates the version and reads the trip count and flags.
    ///
    /// # Safety
    /// `ptr` must be null or point to the `KernelArgsTy` of this launch.
    pub unsafe fn read(ptr: *mut c_void) -> Result<Self, AbiError> {
        let ptr = ptr as *mut KernelArgsHead;
        // SAFETY: checked for null; every version starts with this head.
        let head = unsafe { ptr.as_ref() }.ok_or(AbiError::Null("KernelArgs"))?;
        match head.version {
            1 => Ok(Self {
                ptr,
                version: 1,
                trip_count: head.tripcount,
                nowait: false,
                multi_dimensional: false,
                grid_fixed: false,
            }),
            2..=5 => {
                // SAFETY: versions 2-5 have this layout.
                let v2 = unsafe { &*(ptr as *const KernelArgsV2) };
                let beyond_x = |dims: &[u32; 3]| dims[1..].iter().any(|&d| d > 1);
                Ok(Self {
                    ptr,
                    version: head.version,
                    trip_count: head.tripcount,
                    nowait: v2.flags & FLAG_NOWAIT != 0,
                    multi_dimensional: beyond_x(&v2.num_teams) || beyond_x(&v2.thread_limit),
                    grid_fixed: v2.flags & !FLAGS_OPEN_TO_GRIDSEL != 0,
                })
            }
            v => Err(AbiError::UnknownKernelArgsVersion(v)),
        }
    }

    /// Whether gridsel may write a grid into this launch: one-dimensional and
    /// not fixed by a flag.
    pub fn grid_may_change(&self) -> bool {
        !self.multi_dimensional && !self.grid_fixed
    }

    /// Writes the grid where this version's launch reads it: v1 takes the
    /// call arguments only, v2+ reads `NumTeams[0]`/`ThreadLimit[0]`
    /// (`UserNumBlocks[0]`/`UserThreadLimit[0]` from LLVM 23 on). The
    /// y and z entries stay as the program wrote them (0 or 1).
    pub fn write_grid(&mut self, num_teams: i32, thread_limit: i32) {
        if self.version >= 2 {
            // SAFETY: version 2-5 structs have this layout (checked in `read`),
            // and the caller rebuilds the struct before every launch.
            let args = unsafe { &mut *(self.ptr as *mut KernelArgsV2) };
            args.num_teams[0] = num_teams as u32;
            args.thread_limit[0] = thread_limit as u32;
        }
    }

    /// Makes a `nowait` launch wait for its kernel: clears `Flags.NoWait`,
    /// so that libomptarget takes the launch's blocking path (the one of a
    /// region without `nowait`: the kernel and its data transfers are done
    /// when the call returns) instead of leaving it to the task's later
    /// queries. The region's task still ends when its launch does; only
    /// when, within that task, the kernel is waited for changes.
    pub fn wait_for_kernel(&mut self) {
        if self.version >= 2 && self.nowait {
            // SAFETY: as in `write_grid`.
            let args = unsafe { &mut *(self.ptr as *mut KernelArgsV2) };
            args.flags &= !FLAG_NOWAIT;
            self.nowait = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte offsets of `KernelArgsTy`'s fields in LLVM's field order
    /// (`Version`, `NumArgs`, six pointers, `Tripcount`, `Flags`,
    /// `NumTeams[3]`/`UserNumBlocks[3]`, `ThreadLimit[3]`/`UserThreadLimit[3]`,
    /// `DynCGroupMem`), written out rather than derived from the Rust structs
    /// so that a wrong struct fails the tests.
    const VERSION: usize = 0;
    const NUM_ARGS: usize = 4;
    const ARG_BASE_PTRS: usize = 8;
    const TRIPCOUNT: usize = 56;
    const FLAGS: usize = 64;
    const NUM_TEAMS: usize = 72;
    const THREAD_LIMIT: usize = 84;
    const DYN_CGROUP_MEM: usize = 96;
    const V2_SIZE: usize = 104;

    /// A launch's arguments as the bytes clang stores on the stack, in a
    /// buffer larger than any version so that a write past the end shows.
    struct Bytes([u64; 16]);

    impl Bytes {
        fn new(version: u32, flags: u64, teams: [u32; 3], threads: [u32; 3]) -> Self {
            // 0xA5 everywhere first: fields gridsel must not touch stay so.
            let mut b = Self([0xA5A5_A5A5_A5A5_A5A5; 16]);
            b.put(VERSION, &version.to_le_bytes());
            b.put(NUM_ARGS, &2u32.to_le_bytes());
            b.put(TRIPCOUNT, &1000u64.to_le_bytes());
            if version >= 2 {
                b.put(FLAGS, &flags.to_le_bytes());
                for i in 0..3 {
                    b.put(NUM_TEAMS + 4 * i, &teams[i].to_le_bytes());
                    b.put(THREAD_LIMIT + 4 * i, &threads[i].to_le_bytes());
                }
                b.put(DYN_CGROUP_MEM, &0u32.to_le_bytes());
            }
            b
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: a u64 array viewed as its bytes.
            unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast(), 128) }
        }

        fn put(&mut self, at: usize, v: &[u8]) {
            self.bytes()[at..at + v.len()].copy_from_slice(v);
        }

        fn u32_at(&mut self, at: usize) -> u32 {
            u32::from_le_bytes(self.bytes()[at..at + 4].try_into().unwrap())
        }

        fn read(&mut self) -> Result<KernelArgs, AbiError> {
            // SAFETY: 128 readable, aligned bytes, more than any layout.
            unsafe { KernelArgs::read(self.0.as_mut_ptr().cast()) }
        }
    }

    #[test]
    fn the_structs_have_llvms_offsets() {
        assert_eq!(std::mem::offset_of!(KernelArgsHead, version), VERSION);
        assert_eq!(std::mem::offset_of!(KernelArgsHead, num_args), NUM_ARGS);
        assert_eq!(
            std::mem::offset_of!(KernelArgsHead, pointers),
            ARG_BASE_PTRS
        );
        assert_eq!(std::mem::offset_of!(KernelArgsHead, tripcount), TRIPCOUNT);
        assert_eq!(std::mem::offset_of!(KernelArgsV2, flags), FLAGS);
        assert_eq!(std::mem::offset_of!(KernelArgsV2, num_teams), NUM_TEAMS);
        assert_eq!(
            std::mem::offset_of!(KernelArgsV2, thread_limit),
            THREAD_LIMIT
        );
        assert_eq!(
            std::mem::offset_of!(KernelArgsV2, dyn_cgroup_mem),
            DYN_CGROUP_MEM
        );
        assert_eq!(size_of::<KernelArgsV2>(), V2_SIZE);
    }

    #[test]
    fn version_1_is_read_and_its_bytes_are_never_written() {
        // clang 15: 64 bytes up to the trip count, the grid in the call only.
        let mut b = Bytes::new(1, 0, [0; 3], [0; 3]);
        let before = b.bytes().to_vec();
        let mut args = b.read().unwrap();
        assert_eq!((args.version, args.trip_count), (1, 1000));
        assert!(args.grid_may_change());
        args.write_grid(264, 128);
        assert_eq!(b.bytes(), &before[..]);
    }

    #[test]
    fn every_104_byte_version_is_read_and_written_at_its_offsets() {
        // 2: clang 16-17; 3: clang 18-22; 4: LLVM's main branch between 22
        // and 23 only; 5: clang 23 (docs/abi.md §2).
        for version in 2..=5 {
            let mut b = Bytes::new(version, 0, [0; 3], [0; 3]);
            let mut args = b.read().unwrap();
            assert_eq!((args.version, args.trip_count), (version, 1000));
            assert!(!args.nowait && args.grid_may_change(), "v{version}");
            args.write_grid(264, 96);
            assert_eq!(
                [b.u32_at(NUM_TEAMS), b.u32_at(THREAD_LIMIT)],
                [264, 96],
                "v{version}"
            );
            // y and z, the flags and the dynamic shared memory stay as given.
            for at in [
                NUM_TEAMS + 4,
                NUM_TEAMS + 8,
                THREAD_LIMIT + 4,
                THREAD_LIMIT + 8,
            ] {
                assert_eq!(b.u32_at(at), 0, "v{version} offset {at}");
            }
            assert_eq!(b.u32_at(FLAGS), 0);
            assert_eq!(b.u32_at(DYN_CGROUP_MEM), 0);
            // Nothing after the struct.
            assert!(
                b.bytes()[V2_SIZE..].iter().all(|&x| x == 0xA5),
                "v{version}"
            );
        }
    }

    #[test]
    fn y_and_z_of_one_are_one_dimensional_and_stay_one() {
        // LLVM 23 reads 0 in y and z as 1; clang writes 0 (21-23 checked).
        let mut b = Bytes::new(5, 0, [0, 1, 1], [0, 1, 1]);
        let mut args = b.read().unwrap();
        assert!(args.grid_may_change());
        args.write_grid(8, 128);
        assert_eq!(
            [NUM_TEAMS, NUM_TEAMS + 4, THREAD_LIMIT, THREAD_LIMIT + 4].map(|at| b.u32_at(at)),
            [8, 1, 128, 1]
        );
        let mut two_d = Bytes::new(5, 0, [0, 4, 1], [0; 3]);
        assert!(!two_d.read().unwrap().grid_may_change());
    }

    #[test]
    fn flags_that_fix_the_grid_leave_the_launch_alone() {
        // NoWait (bit 0) and DynCGroupMemFallback (bits 2-3) leave the grid open.
        let mut nowait = Bytes::new(3, 1, [0; 3], [0; 3]);
        let args = nowait.read().unwrap();
        assert!(args.nowait && args.grid_may_change());
        let mut fallback = Bytes::new(5, 0b1100, [0; 3], [0; 3]);
        assert!(fallback.read().unwrap().grid_may_change());
        // IsCUDA (bit 1), LLVM 23's Cooperative (4), IsPtrArgs (5) and
        // StrictBlocksAndThreads (6), and any bit gridsel does not know fix it.
        for flags in [1 << 1, 1 << 4, 1 << 5, 1 << 6, 1 << 63] {
            let mut b = Bytes::new(5, flags, [7, 1, 1], [64, 1, 1]);
            let args = b.read().unwrap();
            assert!(args.grid_fixed && !args.grid_may_change(), "{flags:#x}");
        }
    }

    #[test]
    fn waiting_for_the_kernel_clears_no_wait_alone() {
        // NoWait with DynCGroupMemFallback (bits 2-3) beside it: only bit 0 goes.
        for version in 2..=5 {
            let mut b = Bytes::new(version, 0b1101, [0; 3], [0; 3]);
            let before = b.bytes().to_vec();
            let mut args = b.read().unwrap();
            args.wait_for_kernel();
            assert!(!args.nowait, "v{version}");
            assert_eq!(b.u32_at(FLAGS), 0b1100, "v{version}");
            let mut after = b.bytes().to_vec();
            after[FLAGS] |= 1;
            assert_eq!(after, before, "v{version}: nothing else changed");
        }
        // Version 1 has no flags: nothing is written.
        let mut v1 = Bytes::new(1, 0, [0; 3], [0; 3]);
        let before = v1.bytes().to_vec();
        v1.read().unwrap().wait_for_kernel();
        assert_eq!(v1.bytes(), &before[..]);
    }

    #[test]
    fn unknown_versions_and_null_are_errors() {
        for version in [0, 6, 9] {
            let mut b = Bytes::new(version, 0, [0; 3], [0; 3]);
            assert_eq!(
                b.read().err(),
                Some(AbiError::UnknownKernelArgsVersion(version))
            );
        }
        // SAFETY: null is allowed and rejected.
        assert_eq!(
            unsafe { KernelArgs::read(std::ptr::null_mut()) }.err(),
            Some(AbiError::Null("KernelArgs"))
        );
    }
}
