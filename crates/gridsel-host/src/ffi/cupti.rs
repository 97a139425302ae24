//! Kernel times from the GPU, through CUPTI's activity API: each kernel's
//! start and end as the GPU stamped them, without the mapping and launch
//! work libomptarget does around it on the host.
//!
//! CUPTI hands its records back in buffers it asks of us and returns when
//! full, or when [`flush`]ed; each kernel record's fixed head is read, its
//! name and time kept for [`take`], and the buffer freed at once. A flush
//! is what costs: it waits for CUPTI to write out what the GPU stamped
//! (on the H100 about 0.26 ms a flush: bench/results/h100/NOTES.md §48),
//! so a caller flushes only when it needs a time now. The library is
//! loaded by hand (`dlopen`, `dlsym`), from the library path or a CUDA
//! toolkit's folders, since a program's library path seldom names them.

use std::alloc::{Layout, alloc, dealloc};
use std::collections::VecDeque;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::{Mutex, OnceLock};

/// `CUPTI_SUCCESS`.
const SUCCESS: u32 = 0;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`: kernel records that leave
/// kernels running concurrently (`..._KIND_KERNEL` serializes them).
const KIND_CONCURRENT_KERNEL: u32 = 10;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: flush buffers not yet full.
const FLUSH_FORCED: u32 = 1;
/// The bytes of each buffer handed to CUPTI (8-byte aligned, as its records
/// are): a thousand kernel records or so; each flush returns the one being
/// filled.
const BUFFER_BYTES: usize = 256 << 10;
/// Kernel times kept until a launch takes its own: more than the launches
/// that wait for a flush together (the preload library's 256), and the
/// oldest go first, so that records of launches nobody times cannot pile up.
const MAX_KEPT: usize = 1024;

/// The head of a kernel record, the same in `CUpti_ActivityKernel4` to
/// `CUpti_ActivityKernel13` (CUDA 9 to 13): byte offsets of the fields read.
struct KernelHead;

impl KernelHead {
    const KIND: usize = 0;
    const START: usize = 16;
    const END: usize = 24;
    const GRID_X: usize = 52;
    const BLOCK_X: usize = 64;
    const NAME: usize = 104;
    /// The bytes read.
    const LEN: usize = 112;
}

/// One kernel's time on the GPU, as a record gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KernelTime {
    name: String,
    blocks: u32,
    threads: u32,
    ns: u64,
}

/// A kernel record's time, from the record's first [`KernelHead::LEN`]
/// bytes and its name; `None` for another kind of record, or one without
/// both timestamps.
fn kernel_time(head: &[u8; KernelHead::LEN], name: &str) -> Option<KernelTime> {
    let u32_at = |at: usize| u32::from_ne_bytes(head[at..at + 4].try_into().unwrap_or_default());
    let u64_at = |at: usize| u64::from_ne_bytes(head[at..at + 8].try_into().unwrap_or_default());
    if u32_at(KernelHead::KIND) != KIND_CONCURRENT_KERNEL {
        return None;
    }
    let (start, end) = (u64_at(KernelHead::START), u64_at(KernelHead::END));
    (start != 0 && end > start).then(|| KernelTime {
        name: name.to_string(),
        blocks: u32_at(KernelHead::GRID_X),
        threads: u32_at(KernelHead::BLOCK_X),
        ns: end - start,
    })
}

type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
type CompleteFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

/// The CUPTI entry points used after start.
struct Api {
    flush_all: unsafe extern "C" fn(u32) -> u32,
    next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> u32,
}

static API: OnceLock<Api> = OnceLock::new();
static TIMES: Mutex<VecDeque<KernelTime>> = Mutex::new(VecDeque::new());

fn buffer_layout() -> Layout {
    // A constant size and alignment: never fails.
    Layout::from_size_align(BUFFER_BYTES, 8).unwrap_or(Layout::new::<u64>())
}

/// CUPTI asks for a buffer to write records into.
unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: CUPTI passes valid out pointers; the buffer is ours until
        // it comes back through `buffer_completed`, which frees it.
        unsafe {
            let b = alloc(buffer_layout());
            *buffer = b;
            *size = if b.is_null() { 0 } else { BUFFER_BYTES };
            *max = 0;
        }
    });
}

/// CUPTI returns a buffer with `valid` bytes of records: the kernel times
/// are kept for [`take`], and the buffer freed.
unsafe extern "C" fn buffer_completed(
    _context: *mut c_void,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        let Some(api) = API.get() else { return };
        let mut times = Vec::new();
        let mut record: *mut u8 = std::ptr::null_mut();
        // SAFETY: CUPTI walks its own buffer; each record it hands back is
        // at least a kernel record's head long when its kind says it is
        // one, and its name, when not null, a C string CUPTI owns.
        unsafe {
            while (api.next_record)(buffer, valid, &mut record) == SUCCESS && !record.is_null() {
                if record.cast::<u32>().read_unaligned() != KIND_CONCURRENT_KERNEL {
                    continue;
                }
                let head = record.cast::<[u8; KernelHead::LEN]>().read_unaligned();
                let name = record
                    .add(KernelHead::NAME)
                    .cast::<*const c_char>()
                    .read_unaligned();
                if name.is_null() {
                    continue;
                }
                let name = CStr::from_ptr(name).to_string_lossy();
                times.extend(kernel_time(&head, &name));
            }
        }
        if let Ok(mut kept) = TIMES.lock() {
            kept.extend(times);
            while kept.len() > MAX_KEPT {
                kept.pop_front();
            }
        }
    });
    // SAFETY: the buffer is one `buffer_requested` allocated with this
    // layout, handed back once.
    unsafe { dealloc(buffer, buffer_layout()) };
}

/// Where CUPTI is looked for: by name on the library path, then in each
/// CUDA toolkit's `extras/CUPTI/lib64` and `lib64`: under `$CUDA_HOME`,
/// `$CUDA_PATH`, `/usr/local/cuda` and the versioned `/usr/local/cuda-*`
/// (newest first; on the H100 machines only `/usr/local/cuda-13.0` is there).
fn candidates() -> Vec<CString> {
    let mut paths: Vec<String> = ["libcupti.so", "libcupti.so.13", "libcupti.so.12"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut versioned: Vec<String> = std::fs::read_dir("/usr/local")
        .into_iter()
        .flatten()
        .filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_string()))
        .filter(|name| name.starts_with("cuda-"))
        .map(|name| format!("/usr/local/{name}"))
        .collect();
    versioned.sort_by(|a, b| b.cmp(a));
    let roots = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .chain(std::iter::once("/usr/local/cuda".to_string()))
        .chain(versioned);
    for root in roots.filter(|r| r.starts_with('/')) {
        for dir in ["extras/CUPTI/lib64", "lib64"] {
            paths.push(format!("{root}/{dir}/libcupti.so"));
        }
    }
    paths
        .into_iter()
        .filter_map(|p| CString::new(p).ok())
        .collect()
}

/// The address of `name` in `lib`, or an error naming it.
fn symbol(lib: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: a handle dlopen returned and a C string.
    let address = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if address.is_null() {
        Err(format!("CUPTI lacks {}", name.to_string_lossy()))
    } else {
        Ok(address)
    }
}

/// Loads CUPTI and starts its kernel records, once per process; later
/// calls return the first's answer. `Err` says why not, in one line.
pub fn start() -> Result<(), String> {
    static STARTED: OnceLock<Result<(), String>> = OnceLock::new();
    STARTED
        .get_or_init(|| {
            crate::guard::quiet(start_once)
                .unwrap_or_else(|_| Err("starting CUPTI failed".to_string()))
        })
        .clone()
}

fn start_once() -> Result<(), String> {
    let lib = candidates()
        .iter()
        // SAFETY: dlopen with a C string; the handle is kept for the
        // process (CUPTI calls back into this library until it exits).
        .map(|path| unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
        .find(|handle| !handle.is_null())
        .ok_or(
            "no libcupti.so on the library path or in a CUDA toolkit (extras/CUPTI/lib64, lib64)",
        )?;
    let register = symbol(lib, c"cuptiActivityRegisterCallbacks")?;
    let enable = symbol(lib, c"cuptiActivityEnable")?;
    // SAFETY: the symbols have these C signatures in every CUPTI release
    // (cupti_activity.h).
    let api = unsafe {
        Api {
            flush_all: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u32) -> u32>(
                symbol(lib, c"cuptiActivityFlushAll")?,
            ),
            next_record: std::mem::transmute::<
                *mut c_void,
                unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> u32,
            >(symbol(lib, c"cuptiActivityGetNextRecord")?),
        }
    };
    let _ = API.set(api);
    // SAFETY: as above; the callbacks are `extern "C"` functions of this
    // library, which is never unloaded.
    let (registered, enabled) = unsafe {
        let register = std::mem::transmute::<
            *mut c_void,
            unsafe extern "C" fn(RequestFn, CompleteFn) -> u32,
        >(register);
        let enable = std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u32) -> u32>(enable);
        let registered = register(buffer_requested, buffer_completed);
        let enabled = if registered == SUCCESS {
            enable(KIND_CONCURRENT_KERNEL)
        } else {
            registered
        };
        (registered, enabled)
    };
    match (registered, enabled) {
        (SUCCESS, SUCCESS) => Ok(()),
        (SUCCESS, e) => Err(format!("CUPTI refused kernel records (error {e})")),
        (e, _) => Err(format!("CUPTI refused its buffer callbacks (error {e})")),
    }
}

/// Has CUPTI hand back every record it holds (its buffers not yet full
/// too), for [`take`]. Costs a wait for CUPTI: call it only when a time is
/// needed now, after the launches it should cover have waited for their
/// kernels. Nothing before [`start`] succeeded.
pub fn flush() {
    if let Some(api) = API.get() {
        // SAFETY: a CUPTI entry point with its C signature; it calls
        // `buffer_completed` on this thread or CUPTI's.
        let _ = crate::guard::quiet(|| unsafe { (api.flush_all)(FLUSH_FORCED) });
    }
}

/// The GPU time of the oldest launch of kernel `name` handed back and not
/// taken yet: at `blocks` x `threads` where there is one, else at any
/// grid; `None` when there is none (not flushed yet, or no such launch).
/// Taken oldest first, so that launches waiting for their times get them
/// in launch order.
pub fn take(name: &str, blocks: u32, threads: u32) -> Option<u64> {
    let mut kept = TIMES.lock().ok()?;
    let of_kernel = |t: &KernelTime| t.name == name;
    let at = kept
        .iter()
        .position(|t| of_kernel(t) && t.blocks == blocks && t.threads == threads)
        .or_else(|| kept.iter().position(of_kernel))?;
    kept.remove(at).map(|t| t.ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(kind: u32, start: u64, end: u64, blocks: u32, threads: u32) -> [u8; KernelHead::LEN] {
        let mut h = [0u8; KernelHead::LEN];
        h[KernelHead::KIND..][..4].copy_from_slice(&kind.to_ne_bytes());
        h[KernelHead::START..][..8].copy_from_slice(&start.to_ne_bytes());
        h[KernelHead::END..][..8].copy_from_slice(&end.to_ne_bytes());
        h[KernelHead::GRID_X..][..4].copy_from_slice(&blocks.to_ne_bytes());
        h[KernelHead::BLOCK_X..][..4].copy_from_slice(&threads.to_ne_bytes());
        h
    }

    #[test]
    fn a_kernel_record_gives_its_grid_and_time() {
        let h = head(KIND_CONCURRENT_KERNEL, 1_000, 95_500, 3200, 128);
        let expected = KernelTime {
            name: "k".into(),
            blocks: 3200,
            threads: 128,
            ns: 94_500,
        };
        assert_eq!(kernel_time(&h, "k"), Some(expected));
    }

    #[test]
    fn other_records_and_unfinished_ones_give_none() {
        // A memcpy record (kind 1), and kernels without an end or a start.
        assert_eq!(kernel_time(&head(1, 1_000, 2_000, 1, 1), "k"), None);
        let unfinished = head(KIND_CONCURRENT_KERNEL, 1_000, 0, 1, 1);
        assert_eq!(kernel_time(&unfinished, "k"), None);
        assert_eq!(
            kernel_time(&head(KIND_CONCURRENT_KERNEL, 0, 9, 1, 1), "k"),
            None
        );
    }

    #[test]
    fn the_toolkit_folders_follow_the_library_path() {
        let paths: Vec<String> = candidates()
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        assert_eq!(paths[0], "libcupti.so");
        let toolkit = |p: &str| paths.iter().position(|x| x == p).unwrap();
        let extras = toolkit("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
        assert_eq!(toolkit("/usr/local/cuda/lib64/libcupti.so"), extras + 1);
        assert!(extras > 2);
    }
}
