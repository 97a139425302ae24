//! The random-forest model behind `GRIDSEL_POLICY=forest`: loading,
//! validation, features and inference.
//!
//! Lloyd et al. 2018 (§III) trained a random forest to predict a kernel's time
//! from its features and a candidate grid, and launched the grid of least
//! predicted time. Their prediction cost more than most kernels ran; this one
//! is flattened arrays of a few shallow trees (the H100 model: 8 trees of
//! depth 8), searched once per (kernel, trip count, device) and cached by the
//! runtime. The search ([`Forest::argmin`]) walks each tree once per thread
//! count with the range of block counts that reach each node, not once per
//! candidate, because every feature is monotonic in the blocks.
//!
//! ## Model file (format `gridsel-forest`, version 1)
//!
//! One JSON object, written by `bench/forest/train.py` (scikit-learn's
//! `RandomForestRegressor`, exported node by node):
//!
//! ```json
//! {
//!  "format": "gridsel-forest",
//!  "version": 1,
//!  "target": "ln_rel",
//!  "features": ["trip_count", "registers", ...],
//!  "meta": { "device": "...", "params": {...}, ... },
//!  "trees": [
//!   {"feature": [9, -1, -1], "threshold": [48.0, 0.0, 0.0],
//!    "left": [1, -1, -1], "right": [2, -1, -1], "value": [0.0, 0.12, -0.3]}
//!  ]
//! }
//! ```
//!
//! - `features` must equal [`FEATURES`], name for name: a model trained on
//!   other features is refused rather than misread.
//! - `target`: `ln_ms` (natural log of the kernel's median milliseconds) or
//!   `ln_rel` (the same less the case's median over its grids). Only the
//!   argmin over candidates is used, so both choose alike; `meta` is free-form.
//! - Each tree is five arrays of equal length, node 0 the root, in
//!   scikit-learn's order. An internal node has `feature` in `0..FEATURES.len()`,
//!   a finite `threshold` and children `left` (taken when
//!   `x[feature] <= threshold`) and `right`, both later in the array; a leaf
//!   has `feature`, `left` and `right` -1 and its finite prediction in
//!   `value`. Every node but the root is the child of exactly one node (a
//!   tree, not a graph sharing subtrees), and no leaf is more than
//!   [`MAX_DEPTH`] - 1 levels below the root.
//! - The forest's prediction is the mean of its trees' leaves. Features are
//!   computed in `f64` and rounded to `f32` before comparison, as
//!   scikit-learn does, so the library reproduces the training tool's
//!   predictions to the last bits (tests/forest.rs checks it).
//!
//! A missing, unreadable, corrupt or wrong-version model is a [`ForestError`];
//! the runtime logs it once and falls back to the default policy.

use crate::device::DeviceDesc;
use crate::geometry::Geometry;
use crate::kernel::{ExecMode, KernelDesc};
use crate::residency::{occupancy_with, on_every_sm, resident_blocks_per_sm};
use serde::Deserialize;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The value of the file's `format` field.
pub const FORMAT: &str = "gridsel-forest";
/// The model version this build reads.
pub const VERSION: u64 = 1;
/// The H100 model, embedded (regenerate with bench/forest/train.py).
pub const EMBEDDED_H100: &str = include_str!("../data/h100-forest.json");

/// Feature names, in model order: the trip count; the kernel's registers per
/// thread, static shared memory per block, stack frame per thread and code
/// size (the work per iteration), 0 when unknown; the total work (code size x
/// trip count); the execution mode (1 Generic, 2 SPMD, 3 Generic-SPMD, 0
/// unknown); the compiled thread cap; the distribute chunk (0 unknown); and
/// per candidate grid its threads, blocks, iterations per thread, chunks per
/// block (below 1: idle teams), threads per chunk (above 1: idle threads),
/// waves of resident blocks and occupancy. [`features`] computes a row.
/// bench/forest/train.py computes none: it reads the rows and these names
/// from `gridsel-research features`.
pub const FEATURES: [&str; 16] = [
    "trip_count",
    "registers",
    "shared_mem",
    "local_mem",
    "code_size",
    "total_work",
    "exec_mode",
    "thread_cap",
    "chunk",
    "threads",
    "blocks",
    "iters_per_thread",
    "chunks_per_block",
    "threads_per_chunk",
    "waves",
    "occupancy",
];

/// Number of features.
pub const N_FEATURES: usize = FEATURES.len();

/// Deepest tree accepted (leaves at most this many edges below the root
/// minus one): bounds [`Forest::argmin`]'s stack.
pub const MAX_DEPTH: usize = 64;

/// Marks a leaf in [`Node::feature`].
const LEAF: u32 = u32::MAX;

/// One flattened node: 16 bytes, every tree in one array.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Node {
    /// The largest `f32` not above the model's `f64` threshold, so that
    /// `x <= threshold` on the `f32` feature is exactly scikit-learn's test.
    threshold: f32,
    /// Feature index, or [`LEAF`].
    feature: u32,
    /// An internal node's children, absolute indices: left in the low half
    /// (taken when `x <= threshold`), right in the high half. A leaf's
    /// prediction as `f64` bits, so a walk ends without another load.
    link: u64,
}

impl Node {
    fn left(self) -> u32 {
        self.link as u32
    }

    fn right(self) -> u32 {
        (self.link >> 32) as u32
    }

    fn value(self) -> f64 {
        f64::from_bits(self.link)
    }
}

/// A loaded, validated forest.
#[derive(Clone, Debug, PartialEq)]
pub struct Forest {
    nodes: Vec<Node>,
    /// Root index of every tree.
    roots: Vec<u32>,
    /// The model's `target` field.
    pub target: String,
}

/// Why a model could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ForestError {
    /// The file could not be read.
    Io(String),
    /// Not JSON, or not the expected shape.
    Syntax(String),
    /// Another format or version than this build reads.
    Version(String),
    /// Well-formed JSON whose trees or features are inconsistent.
    Invalid(String),
}

impl fmt::Display for ForestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(m) => write!(f, "cannot read forest model: {m}"),
            Self::Syntax(m) => write!(f, "corrupt forest model: {m}"),
            Self::Version(m) => write!(f, "wrong forest model version: {m}"),
            Self::Invalid(m) => write!(f, "invalid forest model: {m}"),
        }
    }
}

impl std::error::Error for ForestError {}

#[derive(Deserialize)]
struct ModelFile {
    target: String,
    features: Vec<String>,
    trees: Vec<TreeFile>,
}

#[derive(Deserialize)]
struct TreeFile {
    feature: Vec<i64>,
    threshold: Vec<f64>,
    left: Vec<i64>,
    right: Vec<i64>,
    value: Vec<f64>,
}

/// The largest `f32` that is `<= t` (`t` finite).
fn f32_at_or_below(t: f64) -> f32 {
    let c = t as f32;
    if f64::from(c) <= t {
        return c;
    }
    // One step toward -inf (c is not NaN; c may be +inf when t > f32::MAX).
    let bits = c.to_bits();
    if c == 0.0 {
        -f32::from_bits(1)
    } else if c > 0.0 {
        f32::from_bits(bits - 1)
    } else {
        f32::from_bits(bits + 1)
    }
}

impl Forest {
    /// Parses and validates a model file's text.
    pub fn from_json(text: &str) -> Result<Self, ForestError> {
        let raw: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ForestError::Syntax(e.to_string()))?;
        let format = raw.get("format").and_then(|v| v.as_str());
        if format != Some(FORMAT) {
            return Err(ForestError::Version(format!(
                "format {}, expected \"{FORMAT}\"",
                raw.get("format")
                    .map_or("missing".to_string(), |v| v.to_string())
            )));
        }
        match raw.get("version").and_then(|v| v.as_u64()) {
            Some(VERSION) => {}
            other => {
                return Err(ForestError::Version(format!(
                    "version {}, this gridsel reads version {VERSION} (retrain with bench/forest/train.py)",
                    other.map_or("missing".to_string(), |v| v.to_string())
                )));
            }
        }
        let file: ModelFile =
            serde_json::from_value(raw).map_err(|e| ForestError::Syntax(e.to_string()))?;
        Self::from_file(file)
    }

    fn from_file(file: ModelFile) -> Result<Self, ForestError> {
        let invalid = |m: String| Err(ForestError::Invalid(m));
        if file.features != FEATURES {
            return invalid(format!(
                "features {:?} differ from this gridsel's {:?}",
                file.features, FEATURES
            ));
        }
        if !matches!(file.target.as_str(), "ln_ms" | "ln_rel") {
            return invalid(format!(
                "unknown target `{}`",
                crate::text::shown(&file.target)
            ));
        }
        if file.trees.is_empty() {
            return invalid("no trees".to_string());
        }
        let mut forest = Self {
            nodes: Vec::new(),
            roots: Vec::with_capacity(file.trees.len()),
            target: file.target,
        };
        for (t, tree) in file.trees.iter().enumerate() {
            forest
                .add_tree(tree)
                .map_err(|m| ForestError::Invalid(format!("tree {t}: {m}")))?;
        }
        Ok(forest)
    }

    fn add_tree(&mut self, tree: &TreeFile) -> Result<(), String> {
        let n = tree.feature.len();
        if n == 0 {
            return Err("no nodes".to_string());
        }
        let lens = [
            tree.threshold.len(),
            tree.left.len(),
            tree.right.len(),
            tree.value.len(),
        ];
        if lens.iter().any(|&l| l != n) {
            return Err(format!(
                "node arrays differ in length (feature {n}, threshold {}, left {}, right {}, value {})",
                lens[0], lens[1], lens[2], lens[3]
            ));
        }
        let base = self.nodes.len();
        if base + n > (LEAF - 1) as usize {
            return Err("too many nodes".to_string());
        }
        // Each node's parent and depth, set when its parent is read. Children
        // come after their parent, so there are no cycles and a node's depth
        // is final before its own children are read; one parent per node
        // then makes the arrays a tree in which every node is reachable once.
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut depth = vec![0usize; n];
        for i in 0..n {
            if i > 0 && parent[i].is_none() {
                return Err(format!("node {i} is not reachable from the root"));
            }
            let (f, l, r) = (tree.feature[i], tree.left[i], tree.right[i]);
            let node = if f == -1 {
                if l != -1 || r != -1 {
                    return Err(format!("leaf {i} has children"));
                }
                if !tree.value[i].is_finite() {
                    return Err(format!("leaf {i} value is not finite"));
                }
                Node {
                    threshold: 0.0,
                    feature: LEAF,
                    link: tree.value[i].to_bits(),
                }
            } else {
                if !(0..N_FEATURES as i64).contains(&f) {
                    return Err(format!("node {i} feature {f} out of 0..{N_FEATURES}"));
                }
                let child_ok = |c: i64| c > i as i64 && c < n as i64;
                if !child_ok(l) || !child_ok(r) {
                    return Err(format!(
                        "node {i} children {l}, {r} not after it within {n} nodes"
                    ));
                }
                if !tree.threshold[i].is_finite() {
                    return Err(format!("node {i} threshold is not finite"));
                }
                if depth[i] + 1 >= MAX_DEPTH {
                    return Err(format!("deeper than {MAX_DEPTH} levels"));
                }
                for child in [l as usize, r as usize] {
                    if let Some(first) = parent[child] {
                        return Err(format!(
                            "node {child} has two parents, nodes {first} and {i}"
                        ));
                    }
                    parent[child] = Some(i);
                    depth[child] = depth[i] + 1;
                }
                let (left, right) = ((base as i64 + l) as u64, (base as i64 + r) as u64);
                Node {
                    threshold: f32_at_or_below(tree.threshold[i]),
                    feature: f as u32,
                    link: left | right << 32,
                }
            };
            self.nodes.push(node);
        }
        self.roots.push(base as u32);
        Ok(())
    }

    /// The embedded H100 model, parsed once per process.
    pub fn embedded() -> Result<Arc<Self>, ForestError> {
        static EMBEDDED: OnceLock<Result<Arc<Forest>, ForestError>> = OnceLock::new();
        EMBEDDED
            .get_or_init(|| Self::from_json(EMBEDDED_H100).map(Arc::new))
            .clone()
    }

    /// Number of trees.
    pub fn trees(&self) -> usize {
        self.roots.len()
    }

    /// Number of nodes over all trees.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The leaf `x` reaches in the tree at `root`.
    #[cfg(feature = "reference")]
    fn leaf(&self, root: u32, x: &[f32; N_FEATURES]) -> f64 {
        let mut at = root as usize;
        loop {
            let n = self.nodes[at];
            if n.feature == LEAF {
                return n.value();
            }
            at = if x[n.feature as usize] <= n.threshold {
                n.left()
            } else {
                n.right()
            } as usize;
        }
    }

    /// The forest's prediction for one feature row (mean over trees, summed in
    /// tree order as scikit-learn does): the plain walk [`Forest::argmin`] is
    /// checked against (tests/forest.rs, the fuzz targets), which alone use
    /// it; the `reference` feature builds it.
    #[cfg(feature = "reference")]
    pub fn predict(&self, x: &[f32; N_FEATURES]) -> f64 {
        let sum: f64 = self.roots.iter().map(|&r| self.leaf(r, x)).sum();
        sum / self.roots.len() as f64
    }

    /// The candidate of least predicted time (the first on ties) and its
    /// prediction, over a grid given column by column: each thread count's
    /// features and its block counts, ascending. The index counts candidates
    /// in that order; `None` for no candidates.
    ///
    /// Exactly `Forest::predict` (feature `reference`) on every candidate,
    /// without walking each one: within a column every feature is fixed or monotonic in the
    /// blocks (`BY_BLOCKS`), so a split sends a prefix of the column's
    /// candidates one way and the rest the other (settled by the range's
    /// ends, else counted), and a tree is walked once per column with a
    /// range of candidates. Sums
    /// still add one leaf per tree in tree order, so the values are
    /// `predict`'s to the bit (tests/forest.rs compares the two).
    pub fn argmin<'a>(
        &self,
        columns: impl IntoIterator<Item = (ColumnFeatures, &'a [u32])>,
    ) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        // Index of the column's first candidate among all columns'.
        let mut offset = 0;
        let mut sums: Vec<f64> = Vec::new();
        let mut varying: [Vec<f32>; BY_BLOCKS.len()] = Default::default();
        // Right-hand ranges left for later: at most one per level.
        let mut deferred = [(0u32, 0usize, 0usize); MAX_DEPTH];
        for (column, blocks) in columns {
            debug_assert!(blocks.is_sorted(), "blocks ascending");
            if blocks.is_empty() {
                continue;
            }
            for v in &mut varying {
                v.clear();
            }
            for &b in blocks {
                for (v, x) in varying.iter_mut().zip(column.by_blocks(b)) {
                    v.push(x);
                }
            }
            sums.clear();
            sums.resize(blocks.len(), 0.0);
            for &root in &self.roots {
                let (mut at, mut lo, mut hi) = (root, 0, blocks.len());
                let mut pending = 0;
                loop {
                    let n = self.nodes[at as usize];
                    if n.feature == LEAF {
                        let v = n.value();
                        sums[lo..hi].iter_mut().for_each(|s| *s += v);
                        if pending == 0 {
                            break;
                        }
                        pending -= 1;
                        (at, lo, hi) = deferred[pending];
                        continue;
                    }
                    let f = n.feature as usize;
                    let Some((slot, rising)) = SLOTS[f] else {
                        at = if column.fixed[f] <= n.threshold {
                            n.left()
                        } else {
                            n.right()
                        };
                        continue;
                    };
                    // `x <= threshold` holds on a prefix of a rising feature
                    // and on a suffix of a falling one. Counting beats a
                    // binary search on these short ranges: no dependent loads.
                    let xs = &varying[slot][lo..hi];
                    // The range's ends settle most splits: all one way.
                    let (first, last) = (xs[0] <= n.threshold, xs[xs.len() - 1] <= n.threshold);
                    let below = if first == last {
                        if first { xs.len() } else { 0 }
                    } else {
                        xs.iter().map(|&x| u32::from(x <= n.threshold)).sum::<u32>() as usize
                    };
                    let (left, right) = if rising {
                        ((lo, lo + below), (lo + below, hi))
                    } else {
                        ((hi - below, hi), (lo, hi - below))
                    };
                    if below == 0 {
                        (at, lo, hi) = (n.right(), right.0, right.1);
                    } else if below == hi - lo {
                        (at, lo, hi) = (n.left(), left.0, left.1);
                    } else {
                        deferred[pending] = (n.right(), right.0, right.1);
                        pending += 1;
                        (at, lo, hi) = (n.left(), left.0, left.1);
                    }
                }
            }
            for (i, &s) in sums.iter().enumerate() {
                if best.is_none_or(|(_, b)| s < b) {
                    best = Some((offset + i, s));
                }
            }
            offset += blocks.len();
        }
        best.map(|(i, s)| (i, s / self.roots.len() as f64))
    }
}

/// Candidate-independent features of one (kernel, trip count), computed once
/// per decision.
#[derive(Clone, Copy, Debug)]
pub struct KernelFeatures {
    trip: f64,
    registers: f64,
    shared_mem: f64,
    local_mem: f64,
    code_size: f64,
    exec_mode: f64,
    thread_cap: f64,
    chunk: f64,
    chunks: f64,
    eff_chunk: f64,
}

impl KernelFeatures {
    /// The kernel's and the trip count's features (unknown facts count 0).
    pub fn new(device: &DeviceDesc, kernel: &KernelDesc, trip_count: u64) -> Self {
        let trip = trip_count.max(1);
        let chunk = match kernel.exec_mode {
            Some(ExecMode::Spmd) => kernel.max_threads.unwrap_or(0),
            Some(ExecMode::Generic | ExecMode::GenericSpmd) => 1,
            None => 0,
        };
        let eff_chunk = u64::from(chunk.max(1));
        Self {
            trip: trip as f64,
            registers: f64::from(kernel.registers.unwrap_or(0)),
            shared_mem: f64::from(kernel.shared_mem.unwrap_or(0)),
            local_mem: f64::from(kernel.local_mem.unwrap_or(0)),
            code_size: f64::from(kernel.code_size.unwrap_or(0)),
            exec_mode: f64::from(kernel.exec_mode.map_or(0, ExecMode::raw)),
            thread_cap: f64::from(crate::residency::thread_cap(device, kernel)),
            chunk: f64::from(chunk),
            chunks: trip.div_ceil(eff_chunk) as f64,
            eff_chunk: eff_chunk as f64,
        }
    }

    /// The features shared by every grid of `threads` threads;
    /// `resident_per_sm` is [`resident_blocks_per_sm`] at `threads`.
    pub fn column(
        &self,
        device: &DeviceDesc,
        threads: u32,
        resident_per_sm: u32,
    ) -> ColumnFeatures {
        let threads_f = f64::from(threads.max(1));
        let resident = f64::from(on_every_sm(device, resident_per_sm));
        let occupancy = occupancy_with(device, threads, resident_per_sm);
        let fixed = [
            self.trip,
            self.registers,
            self.shared_mem,
            self.local_mem,
            self.code_size,
            self.code_size * self.trip,
            self.exec_mode,
            self.thread_cap,
            self.chunk,
            threads_f,
            f64::NAN, // blocks
            f64::NAN, // iters_per_thread
            f64::NAN, // chunks_per_block
            threads_f / self.eff_chunk,
            f64::NAN, // waves
            occupancy,
        ];
        ColumnFeatures {
            fixed: fixed.map(|v| v as f32),
            trip: self.trip,
            chunks: self.chunks,
            threads: threads_f,
            resident,
        }
    }
}

/// The features of the grids of one thread count: all but the four that
/// depend on the block count (`BY_BLOCKS`) are fixed.
#[derive(Clone, Copy, Debug)]
pub struct ColumnFeatures {
    /// The row with NaN where `BY_BLOCKS` go.
    fixed: [f32; N_FEATURES],
    trip: f64,
    chunks: f64,
    threads: f64,
    resident: f64,
}

/// The features that vary with the block count, each monotonic in it:
/// (feature index, whether it rises with the blocks).
const BY_BLOCKS: [(usize, bool); 4] = [
    (10, true),  // blocks
    (11, false), // iters_per_thread
    (12, false), // chunks_per_block
    (14, true),  // waves
];

/// Each feature's place in `BY_BLOCKS` and direction; `None` when fixed.
const SLOTS: [Option<(usize, bool)>; N_FEATURES] = {
    let mut slots = [None; N_FEATURES];
    let mut i = 0;
    while i < BY_BLOCKS.len() {
        slots[BY_BLOCKS[i].0] = Some((i, BY_BLOCKS[i].1));
        i += 1;
    }
    slots
};

impl ColumnFeatures {
    /// The `BY_BLOCKS` features of `blocks` blocks, in that order.
    fn by_blocks(&self, blocks: u32) -> [f32; 4] {
        let b = f64::from(blocks.max(1));
        [
            b,
            self.trip / (self.threads * b),
            self.chunks / b,
            b / self.resident,
        ]
        .map(|v| v as f32)
    }

    /// The full feature row of `blocks` blocks.
    pub fn row(&self, blocks: u32) -> [f32; N_FEATURES] {
        let mut row = self.fixed;
        for ((feature, _), v) in BY_BLOCKS.iter().zip(self.by_blocks(blocks)) {
            row[*feature] = v;
        }
        row
    }
}

/// The feature row of one (kernel, trip count, grid): what the search
/// computes column by column, and what `gridsel-research features` prints for the
/// training tool.
pub fn features(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    trip_count: u64,
    grid: Geometry,
) -> [f32; N_FEATURES] {
    KernelFeatures::new(device, kernel, trip_count)
        .column(
            device,
            grid.threads,
            resident_blocks_per_sm(device, kernel, grid.threads),
        )
        .row(grid.blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_round_down_to_f32() {
        for t in [
            0.5,
            1.0,
            48.5,
            1e-40,
            -3.3,
            1e300,
            -1e300,
            0.1,
            16_777_217.0,
        ] {
            let c = f32_at_or_below(t);
            assert!(f64::from(c) <= t, "{t}");
            // Nothing between c and t: the next f32 up exceeds t.
            let up = if c >= 0.0 {
                f32::from_bits(c.to_bits() + 1)
            } else {
                f32::from_bits(c.to_bits() - 1)
            };
            assert!(f64::from(up) > t || c == f32::MAX, "{t}");
        }
    }

    #[test]
    fn the_embedded_model_loads() {
        let f = Forest::embedded().unwrap();
        assert!(f.trees() > 0 && f.nodes() > f.trees());
    }
}
