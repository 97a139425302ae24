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

/// `KernelArgsTy` of versions 2 and 3 (LLVM 16 to 22).
#[repr(C)]
struct KernelArgsV2 {
    head: KernelArgsHead,
    flags: u64,
    num_teams: [u32; 3],
    thread_limit: [u32; 3],
    dyn_cgroup_mem: u32,
}

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
                    "KernelArgs version {v} has a layout gridsel does not know (1-3 are supported)"
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
    if len < 8 || (begin as usize) % align_of::<u64>() != 0 {
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
    /// A y or z dimension was given (v2+): gridsel writes only x, so such
    /// launches are left alone.
    pub multi_dimensional: bool,
}

impl KernelArgs {
    /// Validates the version and reads the trip count.
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
            }),
            2..=3 => {
                // SAFETY: versions 2-3 have this layout.
                let v2 = unsafe { &*(ptr as *const KernelArgsV2) };
                Ok(Self {
                    ptr,
                    version: head.version,
                    trip_count: head.tripcount,
                    nowait: v2.flags & 1 != 0,
                    multi_dimensional: v2.num_teams[1..] != [0, 0]
                        || v2.thread_limit[1..] != [0, 0],
                })
            }
            v => Err(AbiError::UnknownKernelArgsVersion(v)),
        }
    }

    /// Writes the grid where this version's launch reads it: v1 takes the
    /// call arguments only, v2+ reads `NumTeams[0]`/`ThreadLimit[0]`.
    pub fn write_grid(&mut self, num_teams: i32, thread_limit: i32) {
        if self.version >= 2 {
            // SAFETY: version 2-3 structs have this layout (checked in `read`),
            // and the caller rebuilds the struct before every launch.
            let args = unsafe { &mut *(self.ptr as *mut KernelArgsV2) };
            args.num_teams = [num_teams as u32, 0, 0];
            args.thread_limit = [thread_limit as u32, 0, 0];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v3(flags: u64, num_teams: [u32; 3], thread_limit: [u32; 3]) -> KernelArgsV2 {
        KernelArgsV2 {
            head: KernelArgsHead {
                version: 3,
                num_args: 0,
                pointers: [std::ptr::null(); 6],
                tripcount: 1000,
            },
            flags,
            num_teams,
            thread_limit,
            dyn_cgroup_mem: 0,
        }
    }

    #[test]
    fn reads_nowait_and_extra_dimensions_and_writes_x_only() {
        let mut plain = v3(0, [0; 3], [0; 3]);
        // SAFETY: a well-formed version 3 struct.
        let mut args = unsafe { KernelArgs::read((&raw mut plain).cast()) }.unwrap();
        assert_eq!(
            (args.trip_count, args.nowait, args.multi_dimensional),
            (1000, false, false)
        );
        args.write_grid(264, 128);
        assert_eq!(
            (plain.num_teams, plain.thread_limit),
            ([264, 0, 0], [128, 0, 0])
        );

        let mut nowait = v3(1, [0; 3], [0; 3]);
        // SAFETY: as above.
        assert!(
            unsafe { KernelArgs::read((&raw mut nowait).cast()) }
                .unwrap()
                .nowait
        );
        let mut two_d = v3(0, [0, 4, 0], [0; 3]);
        // SAFETY: as above.
        assert!(
            unsafe { KernelArgs::read((&raw mut two_d).cast()) }
                .unwrap()
                .multi_dimensional
        );
    }

    #[test]
    fn unknown_versions_and_null_are_errors() {
        let mut args = v3(0, [0; 3], [0; 3]);
        args.head.version = 9;
        // SAFETY: a readable struct with an unknown version.
        assert_eq!(
            unsafe { KernelArgs::read((&raw mut args).cast()) }.err(),
            Some(AbiError::UnknownKernelArgsVersion(9))
        );
        // SAFETY: null is allowed and rejected.
        assert_eq!(
            unsafe { KernelArgs::read(std::ptr::null_mut()) }.err(),
            Some(AbiError::Null("KernelArgs"))
        );
    }
}
