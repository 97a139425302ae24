//! What gridsel adds to one launch of a known kernel: the whole export body
//! (panic boundary, KernelArgs read, kernel and device look-up, policy,
//! write-back) against a stand-in runtime that returns at once.
//!
//! `cargo bench --bench launch_path`; docs/measurements.md §4 quotes the medians.

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use gridsel::api::launch_with;
use gridsel::config::Config;
use gridsel::device::DeviceDesc;
use gridsel::forest_model::Forest;
use gridsel::geometry::LaunchDesc;
use gridsel::kernel::{ExecMode, KernelDesc};
use gridsel::policy::{self, Policy};
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
unsafe extern "C-unwind" fn stand_in(
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
    runtime_with(Config {
        policy,
        ..Config::default()
    })
}

/// [`runtime`] with the settings of `config` (its device the H100's).
fn runtime_with(config: Config) -> Runtime {
    let config = Config {
        device: DeviceDesc::preset("h100"),
        ..config
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

/// One launch of the fixture kernel through the export body.
fn launch_once(rt: &Runtime) -> c_int {
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
            rt,
            stand_in,
            std::ptr::null_mut(),
            0,
            0,
            0,
            HOST_PTR as *mut c_void,
            (&raw mut args).cast(),
        )
    }
}

fn launch(c: &mut Criterion) {
    // `forest` here is the cached decision: every launch after the first.
    for policy in [
        Policy::Auto,
        Policy::Lloyd,
        Policy::Llvm,
        Policy::Forest,
        Policy::Tune,
    ] {
        let rt = runtime(policy.clone());
        c.bench_function(&format!("launch_path/{policy}"), |b| {
            b.iter(|| launch_once(&rt))
        });
    }
    // Online `tune` whose allowance admits no trial: every launch runs the
    // search's leader, held back, and is timed (one in 16 a sample).
    let held_back = runtime_with(Config {
        policy: Policy::Tune,
        tune_overhead: 0.0,
        ..Config::default()
    });
    c.bench_function("launch_path/tune-held-back", |b| {
        b.iter(|| launch_once(&held_back))
    });
    // The first launch of a (kernel, trip count): a fresh runtime, so an
    // empty cache, for every iteration (its set-up, the binary's
    // registration included, is not timed). `tune`'s is its search's start:
    // the prior's candidates resolved for the launch.
    for policy in [Policy::Forest, Policy::Tune] {
        c.bench_function(&format!("launch_path/{policy}-first"), |b| {
            b.iter_batched(
                || runtime(policy.clone()),
                |rt| launch_once(&rt),
                BatchSize::PerIteration,
            )
        });
    }
}

/// The forest search alone over the full candidate grid (no cache), for the
/// usual 128-thread cap and for a 1024-thread cap (the largest space).
fn forest_search(c: &mut Criterion) {
    let device = DeviceDesc::preset("h100").expect("preset");
    let model = Forest::embedded().expect("embedded model");
    for cap in [128, 1024] {
        let kernel = KernelDesc {
            registers: Some(40),
            shared_mem: Some(0),
            local_mem: Some(0),
            max_threads: Some(cap),
            exec_mode: Some(ExecMode::Spmd),
            code_size: Some(3000),
            sm_arch: Some(90),
            ..KernelDesc::named("k")
        };
        let launch = LaunchDesc::open(1_000_000);
        let n = policy::forest::candidates(&device, &kernel, &launch).len();
        c.bench_function(&format!("forest_space/cap{cap}_{n}_candidates"), |b| {
            b.iter(|| policy::forest::candidates(&device, black_box(&kernel), &launch))
        });
        c.bench_function(&format!("forest_search/cap{cap}_{n}_candidates"), |b| {
            b.iter(|| policy::forest::forest(&model, &device, black_box(&kernel), &launch))
        });
    }
}

criterion_group!(launch_path, launch, forest_search);
criterion_main!(launch_path);
