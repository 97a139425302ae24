//! The `forest` policy's model: Rust inference against the training tool's
//! own predictions, and every kind of bad model file.
//!
//! tests/fixtures/forest/ is written by
//! `python3 bench/forest/train.py ... --fixture tests/fixtures/forest`:
//! a 4-tree model and scikit-learn's predictions for sample (kernel, trip
//! count, grid) rows.

mod log_capture;

use gridsel::config::Config;
use gridsel::device::DeviceDesc;
use gridsel::forest_model::{self, Forest, ForestError};
use gridsel::geometry::{Geometry, LaunchDesc};
use gridsel::kernel::{ExecMode, KernelDesc};
use gridsel::policy::{self, Policy};
use gridsel::runtime::Runtime;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/forest")
        .join(name)
}

fn opt(text: &str) -> Option<u32> {
    (!text.is_empty()).then(|| text.parse().unwrap())
}

#[test]
fn predictions_match_the_training_tool() {
    let model = gridsel::files::model(&fixture("model.json")).unwrap();
    let device = DeviceDesc::preset("h100").unwrap();
    let text = std::fs::read_to_string(fixture("expected.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "registers,shared_mem,local_mem,max_threads,exec_mode,code_size,trip_count,threads,blocks,prediction"
    );
    let mut n = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let kernel = KernelDesc {
            registers: opt(f[0]),
            shared_mem: opt(f[1]),
            local_mem: opt(f[2]),
            max_threads: opt(f[3]),
            exec_mode: match f[4] {
                "spmd" => Some(ExecMode::Spmd),
                "generic" => Some(ExecMode::Generic),
                "generic-spmd" => Some(ExecMode::GenericSpmd),
                _ => None,
            },
            code_size: opt(f[5]),
            sm_arch: Some(90),
            ..KernelDesc::named("k")
        };
        let trip: u64 = f[6].parse().unwrap();
        let grid = Geometry::new(f[7].parse().unwrap(), f[8].parse().unwrap());
        let expected: f64 = f[9].parse().unwrap();
        let got = model.predict(&forest_model::features(&device, &kernel, trip, grid));
        assert!(
            (got - expected).abs() <= 1e-12 * expected.abs().max(1.0),
            "{line}: rust {got}, scikit-learn {expected}"
        );
        n += 1;
    }
    assert!(n >= 20, "only {n} rows");
}

#[test]
fn the_embedded_model_decides_through_the_policy_interface() {
    let device = DeviceDesc::preset("h100").unwrap();
    let kernel = KernelDesc {
        registers: Some(40),
        shared_mem: Some(0),
        local_mem: Some(0),
        max_threads: Some(128),
        exec_mode: Some(ExecMode::Spmd),
        code_size: Some(3000),
        sm_arch: Some(90),
        ..KernelDesc::named("k")
    };
    let policy: Policy = "forest".parse().unwrap();
    let launch = LaunchDesc::open(1 << 20);
    let d = policy::decide(&policy, &device, &kernel, &launch).unwrap();
    assert_eq!(d.rule, policy::Rule::Forest);
    assert!(policy::forest::candidates(&device, &kernel, &launch).contains(&d.geometry));
    // Deterministic.
    assert_eq!(policy::decide(&policy, &device, &kernel, &launch), Some(d));
}

/// The search walks each tree once per thread count with ranges of blocks;
/// it must choose exactly what predicting every candidate one by one does.
#[test]
fn the_grid_search_equals_predicting_every_candidate() {
    let device = DeviceDesc::preset("h100").unwrap();
    let models = [
        Forest::embedded().unwrap(),
        std::sync::Arc::new(gridsel::files::model(&fixture("model.json")).unwrap()),
    ];
    let mut searched = 0;
    for model in &models {
        for (mode, cap) in [
            (ExecMode::Spmd, 128),
            (ExecMode::Spmd, 1024),
            (ExecMode::Spmd, 256),
            (ExecMode::GenericSpmd, 128),
            (ExecMode::Generic, 128),
        ] {
            for (registers, shared, code) in [(16, 0, 900), (40, 0, 3000), (128, 16_384, 20_000)] {
                let kernel = KernelDesc {
                    registers: Some(registers),
                    shared_mem: Some(shared),
                    local_mem: Some(0),
                    max_threads: Some(cap),
                    exec_mode: Some(mode),
                    code_size: Some(code),
                    sm_arch: Some(90),
                    ..KernelDesc::named("k")
                };
                for trip in [1, 77, 4096, 100_000, 1 << 20, 3 << 24, 1 << 31] {
                    let launch = LaunchDesc::open(trip);
                    let grids = policy::forest::candidates(&device, &kernel, &launch);
                    let one_by_one = grids
                        .iter()
                        .map(|&g| model.predict(&forest_model::features(&device, &kernel, trip, g)))
                        .enumerate()
                        .fold(None, |best: Option<(usize, f64)>, (i, p)| match best {
                            Some((_, b)) if b <= p => best,
                            _ => Some((i, p)),
                        })
                        .map(|(i, _)| grids[i]);
                    let searched_grid = policy::forest::choose(model, &device, &kernel, &launch);
                    assert_eq!(
                        searched_grid, one_by_one,
                        "{mode:?} cap {cap} regs {registers} trip {trip}"
                    );
                    searched += 1;
                }
            }
        }
    }
    assert_eq!(searched, 2 * 5 * 3 * 7);
}

/// One tree's nodes as (feature, threshold, left, right, value).
type Node = (i64, f64, i64, i64, f64);

fn leaf(value: f64) -> Node {
    (-1, 0.0, -1, -1, value)
}

/// A split on the block count (feature 10).
fn on_blocks(threshold: f64, left: i64, right: i64) -> Node {
    (10, threshold, left, right, 0.0)
}

/// A model file with one tree.
fn one_tree(nodes: &[Node]) -> String {
    let column = |f: fn(&Node) -> serde_json::Value| nodes.iter().map(f).collect::<Vec<_>>();
    serde_json::json!({
        "format": forest_model::FORMAT,
        "version": forest_model::VERSION,
        "target": "ln_rel",
        "features": forest_model::FEATURES,
        "trees": [{
            "feature": column(|n| n.0.into()),
            "threshold": column(|n| n.1.into()),
            "left": column(|n| n.2.into()),
            "right": column(|n| n.3.into()),
            "value": column(|n| n.4.into()),
        }],
    })
    .to_string()
}

/// A path of `levels` splits on the blocks, each sending the largest of
/// `1..=candidates` blocks still on the path to a leaf of its own on the
/// right: the search defers one range per level.
fn path(levels: usize, candidates: usize) -> Vec<Node> {
    let mut nodes = Vec::new();
    for k in 0..levels {
        let at = nodes.len() as i64;
        let threshold = (candidates - 1 - k) as f64 + 0.5;
        nodes.push(on_blocks(threshold, at + 2, at + 1));
        nodes.push(leaf(-(k as f64)));
    }
    nodes.push(leaf(1.0));
    nodes
}

#[test]
fn models_that_are_not_trees_are_refused() {
    let cases = [
        (
            "a child shared by two nodes",
            vec![
                on_blocks(8.5, 1, 2),
                on_blocks(4.5, 3, 4),
                on_blocks(16.5, 3, 4),
                leaf(0.1),
                leaf(0.2),
            ],
            "node 3 has two parents, nodes 1 and 2",
        ),
        (
            "one child on both sides",
            vec![on_blocks(8.5, 1, 1), leaf(0.1)],
            "node 1 has two parents, nodes 0 and 0",
        ),
        (
            "a node no other points to",
            vec![on_blocks(8.5, 1, 2), leaf(0.1), leaf(0.2), leaf(0.3)],
            "node 3 is not reachable from the root",
        ),
        (
            "a path one level too deep",
            path(forest_model::MAX_DEPTH, 100),
            "deeper than 64 levels",
        ),
    ];
    for (what, nodes, message) in cases {
        match Forest::from_json(&one_tree(&nodes)) {
            Err(ForestError::Invalid(m)) => assert!(m.contains(message), "{what}: {m}"),
            other => panic!("{what}: {other:?}"),
        }
    }
}

/// A tree as deep as allowed, searched over more candidates than it has
/// levels, so every level defers a range: the search's stack must hold them.
#[test]
fn the_deepest_tree_allowed_is_searched_exactly() {
    let candidates = 100;
    let model =
        Forest::from_json(&one_tree(&path(forest_model::MAX_DEPTH - 1, candidates))).unwrap();
    let device = DeviceDesc::preset("h100").unwrap();
    let kernel = KernelDesc {
        exec_mode: Some(ExecMode::Spmd),
        max_threads: Some(128),
        ..KernelDesc::named("k")
    };
    let column =
        forest_model::KernelFeatures::new(&device, &kernel, 1 << 20).column(&device, 128, 16);
    let blocks: Vec<u32> = (1..=candidates as u32).collect();
    let predicted: Vec<f64> = blocks
        .iter()
        .map(|&b| model.predict(&column.row(b)))
        .collect();
    let least = predicted.iter().copied().fold(f64::INFINITY, f64::min);
    let first = predicted.iter().position(|&p| p == least).unwrap();
    assert_eq!(
        model.argmin([(column, blocks.as_slice())]),
        Some((first, least))
    );
    // The deepest right-hand leaf (-62) wins: blocks 100 - 62.
    assert_eq!((first, least), (100 - 62 - 1, -62.0));
}

fn fixture_json() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("model.json")).unwrap()).unwrap()
}

/// A bad model: what is wrong, the file's text, the error kind expected and a
/// word its message must contain.
type BadModel = (&'static str, String, fn(&ForestError) -> bool, &'static str);

fn bad_models() -> Vec<BadModel> {
    let mut out: Vec<BadModel> = vec![
        (
            "corrupt JSON",
            "{\"format\": \"gridsel-forest\", \"version\": 1, \"trees\": [".to_string(),
            |e| matches!(e, ForestError::Syntax(_)),
            "corrupt",
        ),
        (
            "not an object",
            "[1, 2, 3]".to_string(),
            |e| matches!(e, ForestError::Version(_)),
            "format",
        ),
    ];
    let mut v = fixture_json();
    v["version"] = 2.into();
    out.push((
        "wrong version",
        v.to_string(),
        |e| matches!(e, ForestError::Version(_)),
        "version 2",
    ));
    let mut v = fixture_json();
    v["format"] = "xgboost".into();
    out.push((
        "wrong format",
        v.to_string(),
        |e| matches!(e, ForestError::Version(_)),
        "xgboost",
    ));
    let mut v = fixture_json();
    v["trees"][1]["threshold"].as_array_mut().unwrap().pop();
    out.push((
        "arrays of different lengths",
        v.to_string(),
        |e| matches!(e, ForestError::Invalid(_)),
        "tree 1: node arrays differ",
    ));
    let mut v = fixture_json();
    v["trees"][0]["left"][0] = 0.into();
    out.push((
        "a cycle",
        v.to_string(),
        |e| matches!(e, ForestError::Invalid(_)),
        "not after it",
    ));
    let mut v = fixture_json();
    v["trees"][0]["right"][0] = 100_000.into();
    out.push((
        "a child out of range",
        v.to_string(),
        |e| matches!(e, ForestError::Invalid(_)),
        "not after it",
    ));
    let mut v = fixture_json();
    v["trees"][0]["feature"][0] = 99.into();
    out.push((
        "a feature out of range",
        v.to_string(),
        |e| matches!(e, ForestError::Invalid(_)),
        "feature 99",
    ));
    let mut v = fixture_json();
    v["features"][0] = "tripcount".into();
    out.push((
        "other features",
        v.to_string(),
        |e| matches!(e, ForestError::Invalid(_)),
        "features",
    ));
    let mut v = fixture_json();
    v["trees"] = serde_json::json!([]);
    out.push((
        "no trees",
        v.to_string(),
        |e| matches!(e, ForestError::Invalid(_)),
        "no trees",
    ));
    let mut v = fixture_json();
    v["trees"][0]["value"] = serde_json::json!("many");
    out.push((
        "a wrong type",
        v.to_string(),
        |e| matches!(e, ForestError::Syntax(_)),
        "corrupt",
    ));
    out
}

#[test]
fn bad_model_files_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("gridsel-forest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.json");
    let e = gridsel::files::model(&missing).unwrap_err();
    assert!(matches!(e, ForestError::Io(_)), "{e}");
    assert!(e.to_string().contains("missing.json"), "{e}");
    for (what, text, kind, word) in bad_models() {
        let path = dir.join("bad.json");
        std::fs::write(&path, &text).unwrap();
        let e = gridsel::files::model(&path).unwrap_err();
        assert!(kind(&e), "{what}: {e:?}");
        let msg = e.to_string();
        assert!(msg.contains(word), "{what}: {msg}");
        assert!(msg.contains("bad.json"), "{what}: {msg}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_model_at_run_time_logs_one_error_and_falls_back() {
    let capture = log_capture::install();
    let dir = std::env::temp_dir().join(format!("gridsel-forest-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cases = vec![("missing".to_string(), dir.join("nothing-here.json"))];
    for (i, (what, text, _, _)) in bad_models().into_iter().enumerate() {
        let path = dir.join(format!("bad{i}.json"));
        std::fs::write(&path, text).unwrap();
        cases.push((what.to_string(), path));
    }
    for (what, path) in cases {
        capture.clear();
        let rt = Runtime::new(Config {
            policy: Policy::Forest,
            model: Some(path.clone()),
            device: DeviceDesc::preset("h100"),
            ..Config::default()
        });
        assert_eq!(rt.config.policy, policy::DEFAULT_POLICY, "{what}");
        let name = path.file_name().unwrap().to_str().unwrap();
        let errors = capture.lines(log::Level::Error, "");
        assert_eq!(errors.len(), 1, "{what}: {errors:?}");
        assert!(errors[0].contains(name), "{what}: {}", errors[0]);
        assert!(
            errors[0].contains(&format!("default policy {}", policy::DEFAULT_POLICY)),
            "{what}: {}",
            errors[0]
        );
    }
    // A good file and the embedded model keep the policy.
    for model in [Some(fixture("model.json")), None] {
        let rt = Runtime::new(Config {
            policy: Policy::Forest,
            model,
            ..Config::default()
        });
        assert_eq!(rt.config.policy, Policy::Forest);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
