//! Sweep results as the research commands read them: the benchmark
//! harness's points.csv (one row per measured grid of each kernel and trip
//! count, with its median time), gathered into [`Case`]s, and the kernels of
//! the binaries that were measured, found by the names the sweep recorded
//! ([`KernelIndex`]).

use clap::Args;
use gridsel_cli::args::read_images;
use gridsel_cli::csv::Reader;
use gridsel_core::device::DeviceDesc;
use gridsel_core::geometry::Geometry;
use gridsel_core::kernel::KernelDesc;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Sweep results and what was measured: the harness's points.csv, the
/// binaries that ran, and the device they ran on.
#[derive(Args)]
pub struct Measured {
    /// The harness's points.csv.
    #[arg(long)]
    pub points: PathBuf,
    /// Folder of the benchmark binaries that were measured.
    #[arg(long)]
    pub binaries: PathBuf,
    /// Preset or profile of the measured device.
    #[arg(long, default_value = "h100")]
    pub device: String,
}

/// The device, the measured cases and the kernels' descriptors by name.
pub type Loaded = (DeviceDesc, Vec<Case>, HashMap<String, KernelDesc>);

impl Measured {
    /// The device, the measured cases and the kernels' descriptors by the
    /// names the cases give them ([`KernelIndex`]).
    pub fn load(&self) -> Result<Loaded, String> {
        let device = self.device()?;
        let cases = read_points(&self.points_text()?, &self.points.display().to_string())?;
        let index = KernelIndex::load(&self.binaries, device.sm_arch)?;
        let kernels = cases
            .iter()
            .filter_map(|c| Some((c.kernel.clone(), index.get(&c.program, &c.kernel)?.clone())))
            .collect();
        Ok((device, cases, kernels))
    }

    /// Calls `visit` with the device and each measured case whose kernel
    /// `--binaries` describes, then warns once about the others as
    /// `command` ([`warn_undescribed`]).
    pub fn each_described(
        &self,
        command: &str,
        mut visit: impl FnMut(&DeviceDesc, &Case, &KernelDesc),
    ) -> Result<(), String> {
        let (device, cases, kernels) = self.load()?;
        let mut missing = BTreeSet::new();
        for case in &cases {
            match kernels.get(&case.kernel) {
                Some(kernel) => visit(&device, case, kernel),
                None => {
                    missing.insert(case.kernel.clone());
                }
            }
        }
        let measured: HashSet<&str> = cases.iter().map(|c| c.kernel.as_str()).collect();
        warn_undescribed(command, &missing, measured.len());
        Ok(())
    }

    /// The measured device's descriptor.
    pub fn device(&self) -> Result<DeviceDesc, String> {
        gridsel_host::files::device(&self.device).map_err(|e| e.to_string())
    }

    /// The text of points.csv.
    pub fn points_text(&self) -> Result<String, String> {
        std::fs::read_to_string(&self.points).map_err(|e| format!("{}: {e}", self.points.display()))
    }
}

/// Every measured grid of one (kernel, trip count).
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub program: String,
    pub kernel: String,
    pub trip_count: u64,
    /// Median time in ms of each measured grid (the mean of the medians
    /// when a grid was measured under several labels).
    pub times: HashMap<Geometry, f64>,
    /// LLVM's grid and its median, from the row labelled `llvm`: a policy
    /// that picks the same grid is given exactly this time.
    pub llvm: Option<(Geometry, f64)>,
}

impl Case {
    /// The measured time of `grid`: LLVM's own measurement when it is LLVM's
    /// grid (so choosing LLVM's grid is exactly a speedup of 1), else the
    /// grid's median.
    pub fn time_of(&self, grid: Geometry) -> Option<f64> {
        match self.llvm {
            Some((llvm, t)) if llvm == grid => Some(t),
            _ => self.times.get(&grid).copied(),
        }
    }

    /// The best measured time.
    pub fn best(&self) -> f64 {
        self.times.values().copied().fold(f64::INFINITY, f64::min)
    }

    /// Best time over grids with exactly `threads` threads.
    pub fn best_at(&self, threads: u32) -> Option<f64> {
        self.times
            .iter()
            .filter(|(g, _)| g.threads == threads)
            .map(|(_, &t)| t)
            .reduce(f64::min)
    }
}

/// The columns of points.csv that the research commands read.
pub const POINTS_COLUMNS: [&str; 7] = [
    "program",
    "kernel",
    "trip_count",
    "label",
    "threads",
    "blocks",
    "median_ms",
];

/// Reads points.csv's `text` (named `source` in errors) into cases, in order
/// of program, kernel and trip count.
pub fn read_points(text: &str, source: &str) -> Result<Vec<Case>, String> {
    let reader = Reader::new(source, text)?;
    let [program, kernel, trip_count, label, threads, blocks, median] =
        reader.columns(POINTS_COLUMNS)?;
    let mut cases: BTreeMap<(String, String, u64), Case> = BTreeMap::new();
    let mut sums: HashMap<(String, String, u64, Geometry), (f64, u32)> = HashMap::new();
    for record in reader {
        let r = record?;
        let trip = r.number(trip_count)?;
        let grid = Geometry::new(r.number(threads)?, r.number(blocks)?);
        let key = (
            r.text(program)?.to_string(),
            r.text(kernel)?.to_string(),
            trip,
        );
        let case = cases.entry(key.clone()).or_insert_with(|| Case {
            program: key.0.clone(),
            kernel: key.1.clone(),
            trip_count: trip,
            times: HashMap::new(),
            llvm: None,
        });
        let time: f64 = r.number(median)?;
        if r.text(label)? == "llvm" {
            case.llvm = Some((grid, time));
        }
        let sum = sums.entry((key.0, key.1, trip, grid)).or_insert((0.0, 0));
        *sum = (sum.0 + time, sum.1 + 1);
        case.times.insert(grid, sum.0 / f64::from(sum.1));
    }
    Ok(cases.into_values().collect())
}

/// The kernels of the binaries in a folder, found by the name a sweep
/// recorded. A kernel's symbol carries its source file's device and inode
/// (`__omp_offloading_<dev>_<file>_<function>_l<line>`), so the same sources
/// built elsewhere name it differently: a name is matched exactly first,
/// then by program (the binary's file name) and `<function>_l<line>`. Of a
/// kernel in a cubin for `sm_arch` and in a host image, the cubin's wins.
pub struct KernelIndex {
    exact: HashMap<String, KernelDesc>,
    stable: HashMap<(String, String), KernelDesc>,
}

impl KernelIndex {
    pub fn load(dir: &Path, sm_arch: u32) -> Result<Self, String> {
        let mut index = Self {
            exact: HashMap::new(),
            stable: HashMap::new(),
        };
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let Ok(images) = read_images(&entry.path()) else {
                continue;
            };
            let program = entry.file_name().to_string_lossy().into_owned();
            for k in images.into_iter().flat_map(|i| i.kernels) {
                let cubin = match k.sm_arch {
                    Some(a) if a == sm_arch => true,
                    Some(_) => continue,
                    None => false,
                };
                let key = (program.clone(), stable_name(&k.name).to_string());
                if cubin || !index.exact.contains_key(&k.name) {
                    index.stable.insert(key, k.clone());
                    index.exact.insert(k.name.clone(), k);
                }
            }
        }
        Ok(index)
    }

    /// The kernel a sweep recorded as `kernel` of `program`.
    pub fn get(&self, program: &str, kernel: &str) -> Option<&KernelDesc> {
        self.exact.get(kernel).or_else(|| {
            self.stable
                .get(&(program.to_string(), stable_name(kernel).to_string()))
        })
    }

    /// Every kernel, in no particular order.
    pub fn all(&self) -> impl Iterator<Item = &KernelDesc> {
        self.exact.values()
    }
}

/// `<function>_l<line>` of an OpenMP kernel symbol (the part that does not
/// depend on where the source file lives); other names as they are.
fn stable_name(kernel: &str) -> &str {
    kernel
        .strip_prefix("__omp_offloading_")
        .and_then(|rest| rest.splitn(3, '_').nth(2))
        .unwrap_or(kernel)
}

/// Warns about the measured kernels that `--binaries` does not describe (kernel
/// names carry the source file's inode, so only the binaries that were
/// measured describe them).
pub fn warn_undescribed(command: &str, missing: &BTreeSet<String>, of: usize) {
    if let Some(first) = missing.first() {
        eprintln!(
            "gridsel-research {command}: {} of {of} measured kernels have no descriptor in --binaries and are left out (first: {first})",
            missing.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_points_csv_keeping_the_fastest_duplicate() {
        let text = "program,kernel,trip_count,label,threads,blocks,n_samples,median_ms,p10_ms,p90_ms\n\
                    gemm,k1,1000,llvm,32,32,5,2.0,1.9,2.1\n\
                    gemm,k1,1000,grid,32,32,5,1.5,1.4,1.6\n\
                    gemm,k1,1000,grid,128,8,5,1.0,0.9,1.1\n\
                    gemm,k2,50,\"fixed:1,50\",1,50,5,3.0,2.9,3.1\n";
        let cases = read_points(text, "points.csv").unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(
            cases[0].times[&Geometry::new(32, 32)],
            1.75,
            "mean of the two medians"
        );
        assert_eq!(cases[0].llvm, Some((Geometry::new(32, 32), 2.0)));
        assert_eq!(cases[0].best(), 1.0);
        // A quoted label holding a comma leaves the columns after it in place.
        assert_eq!(cases[1].times[&Geometry::new(1, 50)], 3.0);
        assert!(read_points("", "points.csv").is_err());
        assert!(read_points("program,kernel\nx,y\n", "points.csv").is_err());
        assert_eq!(
            read_points(&text.replace("1.0,0.9", "fast,0.9"), "p.csv").unwrap_err(),
            "p.csv line 4: median_ms `fast` is not a number"
        );
    }

    #[test]
    fn a_kernel_is_found_by_its_name_or_by_program_function_and_line() {
        let k = |name: &str| KernelDesc::named(name);
        let here = "__omp_offloading_fe00_510055_kernel_ab_l15";
        let elsewhere = "__omp_offloading_10302_2a7f1c_kernel_ab_l15";
        assert_eq!(stable_name(here), "kernel_ab_l15");
        assert_eq!(stable_name(elsewhere), "kernel_ab_l15");
        assert_eq!(stable_name("saxpy"), "saxpy");
        let index = KernelIndex {
            exact: HashMap::from([(here.to_string(), k(here))]),
            stable: HashMap::from([(("2mm".to_string(), "kernel_ab_l15".to_string()), k(here))]),
        };
        assert_eq!(index.get("anything", here).unwrap().name, here);
        // A sweep recorded on another machine: same program, other file id.
        assert_eq!(index.get("2mm", elsewhere).unwrap().name, here);
        // Another program's kernel of the same function and line is not it.
        assert!(index.get("3mm", elsewhere).is_none());
    }
}
