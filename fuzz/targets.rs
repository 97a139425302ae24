//! The fuzz targets: one function per parser that reads input gridsel does
//! not control, each also checking what the parser's acceptance promises.
//!
//! Included with `#[path]` by cargo-fuzz's binaries (`fuzz/fuzz_targets/`)
//! and by the stable runner in `cargo test` (`tests/fuzz.rs`), so each body
//! is written once. A target panics only when gridsel misbehaves: a panic in
//! a parser, or an accepted input that breaks one of the invariants below.
//! It returns whether the parser accepted the input, for the runner's counts.

use gridsel::config::{self, Config};
use gridsel::device::DeviceDesc;
use gridsel::forest_model::{Forest, KernelFeatures};
use gridsel::geometry::LaunchDesc;
use gridsel::image::{self, ImageInfo, ImageKind};
use gridsel::kernel::{ExecMode, KernelDesc};
use gridsel::logging;
use gridsel::policy::{self, Policy, sweep};
use gridsel::residency::resident_blocks_per_sm;
use gridsel::tune::{self, search::Exploring};
use std::path::Path;

/// A target's name (its corpus folder `fuzz/corpus/<name>/` and its
/// cargo-fuzz binary) and its body.
pub type Target = (&'static str, fn(&[u8]) -> bool);

/// Every target.
pub const TARGETS: [Target; 6] = [
    ("device_image", device_image),
    ("device_toml", device_toml),
    ("forest_model", forest_model),
    ("tune_cache", tune_cache),
    ("tune_journal", tune_journal),
    ("environment", environment),
];

/// The body of the target called `name`.
pub fn target(name: &str) -> fn(&[u8]) -> bool {
    match TARGETS.iter().find(|(n, _)| *n == name) {
        Some(&(_, body)) => body,
        None => panic!("no fuzz target `{name}`"),
    }
}

/// The policies that decide without launch history.
const STATELESS: [Policy; 5] = [
    Policy::Llvm,
    Policy::Lloyd,
    Policy::Auto,
    Policy::Occupancy,
    Policy::Forest,
];

/// Trip counts every decision is checked at: none, one, a typical loop and
/// the largest a launch can carry.
const TRIPS: [u64; 4] = [0, 1, 100_000, u64::MAX];

/// More candidates than any valid device gives: with 1024-thread blocks of
/// 32-thread warps (33 thread counts, each with at most 30 block counts) the
/// sweep space and tune's list held at most 914 grids over the presets, 1
/// to 1024 SMs and kernels of every mode and cap. A longer list means a
/// device limit `validate` should have refused (audit finding 2).
const MAX_CANDIDATES: usize = 2048;

fn h100() -> DeviceDesc {
    DeviceDesc::preset("h100").expect("the h100 preset")
}

/// Every stateless policy's grid for `kernel` stays within the kernel's and
/// the device's limits, whatever the kernel's facts.
fn check_decisions(device: &DeviceDesc, kernel: &KernelDesc) {
    let cap = gridsel::residency::thread_cap(device, kernel);
    assert!(cap <= device.max_threads_per_block, "thread cap {cap}");
    for trip in TRIPS {
        let launch = LaunchDesc::open(trip);
        for p in &STATELESS {
            let d = policy::decide(p, device, kernel, &launch).expect("a stateless policy");
            let g = d.geometry;
            assert!(
                (1..=cap).contains(&g.threads)
                    && (1..=gridsel::device::MAX_BLOCKS).contains(&g.blocks),
                "{p} gave {g:?} for {kernel:?} at trip {trip} (cap {cap})"
            );
        }
    }
}

fn check_image(info: &ImageInfo, device: &DeviceDesc) {
    for kernel in &info.kernels {
        match info.kind {
            ImageKind::Cubin { sm_arch } => assert_eq!(kernel.sm_arch, Some(sm_arch)),
            ImageKind::HostElf { .. } => {
                assert_eq!((kernel.sm_arch, kernel.registers), (None, None))
            }
            ImageKind::Bitcode => panic!("a bitcode image with kernels"),
        }
        check_decisions(device, kernel);
    }
}

/// A device image as `__tgt_register_lib` hands it over, and a file as
/// `gridsel inspect` reads it: every kernel gets grids within its limits.
pub fn device_image(data: &[u8]) -> bool {
    let device = h100();
    let image = image::parse_image(data);
    if let Ok(info) = &image {
        check_image(info, &device);
    }
    let file = image::images_in_file(data);
    if let Ok(images) = &file {
        images.iter().for_each(|info| check_image(info, &device));
    }
    image.is_ok() || file.is_ok()
}

/// A `GRIDSEL_DEVICE` profile: what parses validates, and its candidate
/// lists and grids stay bounded.
pub fn device_toml(data: &[u8]) -> bool {
    let Ok(device) = DeviceDesc::from_toml(&String::from_utf8_lossy(data)) else {
        return false;
    };
    assert_eq!(device.validate(), Ok(()));
    let kernels = [
        KernelDesc::named("unknown"),
        KernelDesc {
            exec_mode: Some(ExecMode::Spmd),
            registers: Some(32),
            shared_mem: Some(1060),
            ..KernelDesc::named("spmd, no cap")
        },
        KernelDesc {
            exec_mode: Some(ExecMode::Generic),
            max_threads: Some(128),
            ..KernelDesc::named("generic")
        },
    ];
    for kernel in &kernels {
        check_decisions(&device, kernel);
        let launch = LaunchDesc::open(1 << 20);
        let space = sweep::space(&device, kernel, &launch).len();
        let tune = [Exploring::Bounded, Exploring::UNBOUNDED]
            .map(|e| {
                tune::candidates(&device, kernel, &launch, &[], e, |_| true)
                    .list
                    .len()
            })
            .into_iter()
            .max()
            .unwrap_or(0);
        assert!(
            space <= MAX_CANDIDATES && tune <= MAX_CANDIDATES,
            "{space} sweep points, {tune} tune candidates for {device:?}"
        );
    }
    true
}

/// A `GRIDSEL_MODEL` file: what parses predicts, and its search finds
/// exactly the candidate of least prediction.
pub fn forest_model(data: &[u8]) -> bool {
    let Ok(model) = Forest::from_json(&String::from_utf8_lossy(data)) else {
        return false;
    };
    assert!(model.trees() > 0 && model.nodes() >= model.trees());
    let device = h100();
    let kernel = KernelDesc {
        exec_mode: Some(ExecMode::Spmd),
        max_threads: Some(128),
        registers: Some(32),
        ..KernelDesc::named("k")
    };
    // One column of more candidates than a tree may have levels, so a tree
    // whose every level splits the range fills the search's stack.
    let threads = 128;
    let resident = resident_blocks_per_sm(&device, &kernel, threads);
    let column = KernelFeatures::new(&device, &kernel, 1 << 20).column(&device, threads, resident);
    let blocks: Vec<u32> = (1..=100).collect();
    let predicted: Vec<f64> = blocks
        .iter()
        .map(|&b| model.predict(&column.row(b)))
        .collect();
    let least = predicted.iter().copied().fold(f64::INFINITY, f64::min);
    let first = predicted.iter().position(|&p| p == least);
    let searched = model.argmin([(column, blocks.as_slice())]);
    assert_eq!(searched.map(|(i, _)| i), first, "{predicted:?}");
    assert_eq!(searched.map(|(_, p)| p), first.map(|_| least));
    let launch = LaunchDesc::open(1 << 20);
    let grid = policy::forest::choose(&model, &device, &kernel, &launch);
    assert!(
        grid.is_some_and(|g| policy::forest::candidates(&device, &kernel, &launch).contains(&g)),
        "{grid:?}"
    );
    true
}

/// A `GRIDSEL_CACHE` store: the records that validate render back to the
/// same table, which then reads whole (nothing left out), and every search
/// in it answers (a step inside its candidates, a leader, a learned grid or
/// none) whatever its samples. A reader of some of its kernels (a
/// production run's) reads exactly their records.
pub fn tune_cache(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let Ok(contents) = tune::store::parse(&text) else {
        return false;
    };
    let table = contents.table;
    let only =
        tune::store::Only::kernels(table.records().step_by(2).map(|r| r.key.kernel.as_str()));
    let mut wanted = table.clone();
    wanted.retain(|r| only.wants_kernel(&r.key.kernel));
    let read = tune::store::parse_only(&text, &only).expect("a store parse reads");
    assert_eq!(read.table, wanted);
    for r in table.records() {
        let _ = tune::learned(r);
        let s = &r.search;
        for kind in [tune::search::Kind::Cold, tune::search::Kind::Warm] {
            for salt in 0..3 {
                let step = s.step(kind, salt).candidate();
                assert!(step < s.candidates.len().max(1));
            }
            assert!(s.leader(kind) < s.candidates.len().max(1));
            let _ = (s.margin(kind), s.runner_up(kind), s.ranked(kind));
        }
    }
    assert_eq!(tune::store::Table::parse(&table.render()), Ok(table));
    true
}

/// A `GRIDSEL_CACHE` store's journal: nothing past its last complete line
/// is read; the lines that validate, written again, read back with nothing
/// left out and add the same to a store; that store reads whole and
/// renders back to the same text.
pub fn tune_journal(data: &[u8]) -> bool {
    use tune::store::{self, Contents, Journal, JournalId, Table};
    let Ok(journal) = store::parse_journal(data) else {
        return false;
    };
    assert!(journal.complete <= data.len());
    assert!(journal.complete == 0 || data[journal.complete - 1] == b'\n');
    let Some(store) = journal.store else {
        assert!(journal.updates.is_empty() && journal.dropped.is_empty());
        return true;
    };
    // The store the journal's lines make of none, as text (candidates in
    // the store's order, whatever order the lines added them in).
    let applied = |journal: Journal, store: JournalId| {
        let mut contents = Contents {
            journal: Some(store),
            ..Contents::default()
        };
        assert!(contents.extend(journal));
        contents.table.render()
    };
    let mut text = store::journal_header(store);
    for u in &journal.updates {
        text += &store::journal_line(u);
    }
    let again = store::parse_journal(text.as_bytes()).expect("a journal gridsel wrote");
    assert_eq!(again.store, Some(store));
    assert!(again.dropped.is_empty(), "{:?}", again.dropped);
    assert_eq!(again.updates.len(), journal.updates.len());
    let rendered = applied(journal, store);
    assert_eq!(applied(again, store), rendered);
    let back = Table::parse(&rendered).expect("a store that reads whole");
    assert_eq!(back.render(), rendered);
    true
}

/// The variables [`environment`] fills, in the order of the input's
/// NUL-separated values.
const VARIABLES: [&str; 8] = [
    config::ENV_POLICY,
    config::ENV_DEVICE,
    config::ENV_THREADS_PER_BLOCK,
    config::ENV_OVERRIDE_CLAUSES,
    config::ENV_PROFILE,
    config::ENV_CACHE,
    config::ENV_MODEL,
    config::ENV_LOG,
];

/// gridsel's environment: the input is one value per variable of
/// [`VARIABLES`], separated by NUL bytes (which no environment value holds);
/// missing and non-UTF-8 values are unset, as `std::env::var` leaves them.
/// A `GRIDSEL_DEVICE` value naming an existing file is unset too: files are
/// [`device_toml`]'s to fuzz, and this target must not read the disk.
/// Accepted means every value was taken without an error.
pub fn environment(data: &[u8]) -> bool {
    let values: Vec<Option<String>> = data
        .split(|&b| b == 0)
        .map(|v| String::from_utf8(v.to_vec()).ok())
        .chain(std::iter::repeat(None))
        .take(VARIABLES.len())
        .collect();
    let lookup = |name: &str| {
        let at = VARIABLES.iter().position(|&v| v == name)?;
        let value = values[at].clone()?;
        let a_file = name == config::ENV_DEVICE
            && DeviceDesc::preset(&value).is_none()
            && Path::new(&value).exists();
        (!a_file).then_some(value)
    };
    let (config, errors) = Config::from_lookup(|name| lookup(name).map(Into::into));
    // One message at most per variable set.
    let set = VARIABLES.iter().filter(|v| lookup(v).is_some()).count();
    assert!(errors.len() <= set, "{errors:?}");
    if let Some(tpb) = config.threads_per_block {
        assert!((1..=1024).contains(&tpb), "{tpb}");
    }
    if let Some(device) = &config.device {
        assert_eq!(device.validate(), Ok(()));
        assert_eq!(config.refine(device.clone()).validate(), Ok(()));
    }
    if let Some(text) = lookup(config::ENV_POLICY) {
        // What parses prints back to itself.
        if let Ok(policy) = text.parse::<Policy>() {
            assert_eq!(config.policy, policy);
            assert_eq!(policy.to_string().parse::<Policy>(), Ok(policy));
        }
    }
    if let Some(text) = lookup(config::ENV_LOG) {
        assert_eq!(
            logging::parse_level(&text.to_ascii_uppercase()),
            logging::parse_level(&text)
        );
    }
    errors.is_empty()
}
