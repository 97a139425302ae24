//! What gridsel adds to one launch of a known kernel: the whole export body
//! (panic boundary, KernelArgs read, kernel and device look-up, policy,
//! write-back) against a stand-in runtime that returns at once.
//!
//! `cargo bench --bench launch_path`; the README quotes the medians.

use criterion::{Criterion, criterion_group, criterion_main};
use gridsel::config::Config;
use gridsel::device::DeviceDesc;
use gridsel::ffi::api::launch_with;
use gridsel::policy::Policy;
use gridsel::runtime::Runtime;
use std::ffi::{c_int, c_void};
use std::hint::black_box;

/// `KernelArgsTy` version 3, as clang 19 builds it.
#[repr(C)]
struct KernelArgs {
    version: u32,
    num_args: u32,
    pointers: [*const c_void; 6],
    tripcount: u64,
    flags: u64,
    num_teams: [u32; 3],
    thread_limit: [u32; 3],
    dyn_cgroup_mem: u32,
}

/// The forwarded call: consumes the grid and reports success.
unsafe extern "C" fn stand_in(
    _: *mut c_void,
    _: i64,
    teams: i32,
    threads: i32,
    _: *mut c_void,
    _: *mut c_void,
) -> c_int {
    black_box((teams, threads));
    0
}

const HOST_PTR: usize = 0x1000;
const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/images/kernels.sm_90.cubin");

fn runtime(policy: Policy) -> Runtime {
    let config = Config {
        policy,
        device: DeviceDesc::preset("h100"),
        ..Config::default()
    };
    let rt = Runtime::new(config);
    let info = gridsel::image::parse_image(FIXTURE).expect("fixture cubin parses");
    let name = info
        .kernels
        .first()
        .expect("fixture has kernels")
        .name
        .clone();
    rt.register(&[(HOST_PTR, name)], &[FIXTURE]);
    rt
}

fn launch(c: &mut Criterion) {
    for policy in [Policy::Lloyd, Policy::Llvm] {
        let rt = runtime(policy.clone());
        c.bench_function(&format!("launch_path/{policy}"), |b| {
            b.iter(|| {
                let mut args = KernelArgs {
                    version: 3,
                    num_args: 0,
                    pointers: [std::ptr::null(); 6],
                    tripcount: black_box(1_000_000),
                    flags: 0,
                    num_teams: [0; 3],
                    thread_limit: [0; 3],
                    dyn_cgroup_mem: 0,
                };
                // SAFETY: a well-formed version 3 KernelArgs and a stand-in runtime.
                unsafe {
                    launch_with(
                        &rt,
                        stand_in,
                        std::ptr::null_mut(),
                        0,
                        0,
                        0,
                        HOST_PTR as *mut c_void,
                        (&raw mut args).cast(),
                    )
                }
            })
        });
    }
}

criterion_group!(launch_path, launch);
criterion_main!(launch_path);
