//! Research commands: they read the benchmark harness's sweep results
//! (points.csv) and the measured binaries, to evaluate and calibrate the
//! policies, replay `tune`, train the forest (its features), check the
//! parser against the driver, and dump every decision. The harness and
//! bench/forest/train.py call them; a user of gridsel needs none.

use crate::args::{KernelIndex, Measured, policy_help};
use crate::calibrate::{self, Case};
use clap::Subcommand;
use gridsel::ffi::cuda;
use gridsel::geometry::{Geometry, LaunchDesc};
use gridsel::image::{self, ImageKind};
use gridsel::kernel::KernelDesc;
use gridsel::policy::auto::{self, ReductionGrid};
use gridsel::policy::{self, Decision, Limits, Policy, sweep};
use gridsel::splitmix::SplitMix64;
use gridsel::tune;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

/// The research commands.
#[derive(Subcommand)]
pub enum Command {
    /// Evaluate a stateless policy offline: its grid for every measured case of
    /// points.csv and that grid's measured median (CSV for `add-policy`).
    Evaluate {
        #[command(flatten)]
        sweep: Measured,
        #[arg(long, help = policy_help())]
        policy: Policy,
        /// With `--policy auto`: rule 6's constants instead of the shipped
        /// ones, as THREADS,WAVES,MIN_TRIP, or `off` for no rule 6 (to judge
        /// the rule leave-one-program-out, bench/harness/auto_patterns.py).
        #[arg(long, value_parser = parse_reduction_grid)]
        reduction_grid: Option<ReductionArg>,
    },
    /// Check the cubin parser and the occupancy model against the CUDA driver:
    /// load each binary's cubin and compare attributes and resident blocks.
    CheckDriver {
        /// Offload binaries whose cubins to load.
        binaries: Vec<PathBuf>,
        /// CUDA device ordinal of the GPU to ask.
        #[arg(long, default_value_t = 0)]
        ordinal: i32,
    },
    /// Derive a device profile (ThreadsPerBlock, waves) from sweep results,
    /// leave-one-out, and write it as TOML.
    Calibrate {
        #[command(flatten)]
        sweep: Measured,
        /// Where to write the profile (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Where to write auto's leave-one-out grid and time per case (CSV).
        #[arg(long)]
        loo_csv: Option<PathBuf>,
    },
    /// Every policy's decision, tune's candidates and the sweep space for every
    /// kernel of the binaries in a folder over a ladder of trip counts (CSV):
    /// a change that should leave decisions alone must leave this identical.
    DumpDecisions {
        /// Folder of offload binaries (e.g. bench/build/sm_90).
        binaries: PathBuf,
        /// Preset or profile of the device decided for.
        #[arg(long, default_value = "h100")]
        device: String,
    },
    /// Replay `tune`'s search on sweep results, 10 runs in a row (--runs)
    /// through the store's format, for a kernel launched once and one launched 20 times
    /// per run: the stand-in timer of each (kernel, trip count) is its
    /// measured median per grid, exploration unbounded unless --overhead
    /// says (as with GRIDSEL_TUNE_OVERHEAD=off). Prints CSV; the summary
    /// goes to stderr.
    TuneSim {
        #[command(flatten)]
        sweep: Measured,
        /// Cold samples' run-to-run noise to rank through: a CSV whose
        /// `ratio` column holds measured cold samples over their grid's
        /// median (bench/harness/cold_noise.py --ratios). Each run's first
        /// launch is seen as its grid's median times a ratio drawn at
        /// random; later launches stay noiseless.
        #[arg(long)]
        cold_noise: Option<PathBuf>,
        /// Replays of every case, each with its own draws of the noise.
        #[arg(long, default_value_t = 1)]
        replications: u32,
        /// Runs in a row (at least 10: the CSV's columns are runs 1, 5 and
        /// 10; the summary covers them all).
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(10..=1000))]
        runs: u32,
        /// Seed of the draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Judge against the best of the prior's first N candidates (what a
        /// search could find) instead of the best grid the sweep measured.
        #[arg(long)]
        best_of: Option<usize>,
        /// What each run may spend exploring, in percent of its kernel time
        /// (GRIDSEL_TUNE_OVERHEAD); unbounded when not given.
        #[arg(long)]
        overhead: Option<f64>,
        /// Replay a program's kernels at one size in the same processes,
        /// sharing each run's allowance, launched in turn (the k-th smallest
        /// trip count of each of its kernels is taken as one size).
        #[arg(long)]
        programs: bool,
    },
    /// The forest's feature row of every point of points.csv (CSV: the
    /// point's columns, then one `x.<feature>` column per feature in model
    /// order), computed as the `forest` policy computes it at run time: what
    /// bench/forest/train.py trains on.
    Features {
        #[command(flatten)]
        sweep: Measured,
        /// Also a row per grid the `forest` policy searches for each case
        /// (label `candidate`, no median).
        #[arg(long)]
        candidates: bool,
    },
    /// The distribute chunk of every measured case of points.csv (CSV):
    /// iterations per team per round, the trip count's chunks, and the most
    /// blocks the sweep space tries.
    Chunks {
        #[command(flatten)]
        sweep: Measured,
    },
    /// Write a GRIDSEL_CACHE store (tune's format) that pins grids, from a
    /// CSV with columns kernel,device,sm_arch,trip_count,threads,blocks,ns,launches:
    /// every launch of the kernel in that trip count's class gets the grid,
    /// with no search (e.g. a sweep's best grids, for live runs).
    CacheEntries {
        /// The CSV file, or `-` for standard input.
        csv: PathBuf,
        /// Where to write the cache file (stdout when absent).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Runs one of these commands.
pub fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Evaluate {
            sweep,
            policy,
            reduction_grid,
        } => {
            if reduction_grid.is_some() && policy != Policy::Auto {
                return Err("--reduction-grid is a constant of `auto` only".into());
            }
            let (device, cases, kernels) = sweep.load()?;
            println!("program,kernel,trip_count,threads,blocks,median_ms");
            for case in cases {
                let Some(kernel) = kernels.get(&case.kernel) else {
                    continue;
                };
                let launch = LaunchDesc::open(case.trip_count);
                let d = match reduction_grid {
                    Some(ReductionArg(r)) => {
                        let (grid, rule) = auto::auto_with(&device, kernel, &launch, r);
                        let limits = Limits::of(&device, kernel, &launch);
                        Decision::within(grid, rule, &limits, &device, kernel, &launch)
                    }
                    None => match policy::decide(&policy, &device, kernel, &launch) {
                        Some(d) => d,
                        None => continue,
                    },
                };
                let g = d.geometry;
                let time = case.time_of(g).map_or_else(String::new, |t| t.to_string());
                println!(
                    "{},{},{},{},{},{time}",
                    case.program, case.kernel, case.trip_count, g.threads, g.blocks
                );
            }
        }
        Command::CheckDriver { binaries, ordinal } => {
            let mismatches = check_driver(&binaries, ordinal)?;
            eprintln!("check-driver: {mismatches} disagreements");
            if mismatches > 0 {
                return Err(format!("{mismatches} disagreements with the driver"));
            }
        }
        Command::Calibrate {
            sweep,
            out,
            loo_csv,
        } => {
            calibrate_cmd(&sweep, out.as_ref(), loo_csv.as_ref())?;
        }
        Command::TuneSim {
            sweep,
            cold_noise,
            replications,
            runs,
            seed,
            best_of,
            overhead,
            programs,
        } => {
            let ratios = cold_noise.as_ref().map(read_ratios).transpose()?;
            let overhead = match overhead {
                Some(p) if p.is_finite() && p >= 0.0 => p / 100.0,
                Some(p) => return Err(format!("--overhead {p}: not a percentage")),
                None => f64::INFINITY,
            };
            let options = TuneSimOptions {
                cold_noise: ratios.as_deref(),
                replications: replications.max(1),
                runs: runs as usize,
                seed,
                best_of,
                overhead,
                programs,
            };
            tune_sim(&sweep, &options)?
        }
        Command::DumpDecisions { binaries, device } => dump_decisions(&binaries, &device)?,
        Command::Features { sweep, candidates } => features_cmd(&sweep, candidates)?,
        Command::Chunks { sweep } => chunks_cmd(&sweep)?,
        Command::CacheEntries { csv, out } => cache_entries(&csv, out.as_ref())?,
    }
    Ok(())
}

/// `evaluate --reduction-grid`: rule 6's constants, `None` for `off`.
#[derive(Clone, Copy)]
pub struct ReductionArg(Option<ReductionGrid>);

/// `--reduction-grid`: THREADS,WAVES,MIN_TRIP or `off`.
fn parse_reduction_grid(text: &str) -> Result<ReductionArg, String> {
    if text.trim() == "off" {
        return Ok(ReductionArg(None));
    }
    let numbers: Vec<u64> = text
        .split(',')
        .map(|n| n.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("`{text}`: expected THREADS,WAVES,MIN_TRIP or off"))?;
    match numbers[..] {
        [threads, waves, min_trip] if threads > 0 && waves > 0 => {
            Ok(ReductionArg(Some(ReductionGrid {
                threads: u32::try_from(threads)
                    .map_err(|_| format!("`{text}`: too many threads"))?,
                waves: u32::try_from(waves).map_err(|_| format!("`{text}`: too many waves"))?,
                min_trip,
            })))
        }
        _ => Err(format!(
            "`{text}`: expected THREADS,WAVES,MIN_TRIP (positive threads and waves) or off"
        )),
    }
}

/// `gridsel dump-decisions`: see the command's doc.
fn dump_decisions(binaries: &PathBuf, device: &str) -> Result<(), String> {
    let device = gridsel::files::device(device).map_err(|e| e.to_string())?;
    let mut kernels: Vec<KernelDesc> = KernelIndex::load(binaries, device.sm_arch)?
        .all()
        .cloned()
        .collect();
    kernels.sort_by(|a, b| a.name.cmp(&b.name));
    let trips = [
        1u64,
        7,
        33,
        100,
        131,
        132,
        133,
        1000,
        4096,
        16_896,
        100_000,
        409_600,
        1 << 20,
        1 << 24,
        1 << 30,
    ];
    let policies = [
        "llvm",
        "lloyd",
        "auto",
        "occupancy",
        "forest",
        "fixed:64,100",
    ]
    .map(|p| p.parse::<Policy>().expect("a policy name"));
    let grids = |gs: &mut dyn Iterator<Item = gridsel::Geometry>| {
        gs.map(|g| format!("{}x{}", g.threads, g.blocks))
            .collect::<Vec<_>>()
            .join(";")
    };
    println!("kernel,trip_count,policy,threads,blocks,rule,clamped");
    for k in &kernels {
        for &trip in &trips {
            let launch = LaunchDesc::open(trip);
            for p in &policies {
                if let Some(d) = policy::decide(p, &device, k, &launch) {
                    let g = d.geometry;
                    println!(
                        "{},{trip},\"{p}\",{},{},{:?},{}",
                        k.name, g.threads, g.blocks, d.rule, d.clamped
                    );
                }
            }
            let tune = tune::candidates(&device, k, &launch, &[], |_| true);
            println!(
                "{},{trip},tune,,,\"{}\",",
                k.name,
                grids(&mut tune.list.into_iter().map(|(_, g)| g))
            );
            let space = sweep::space(&device, k, &launch);
            println!(
                "{},{trip},sweep,,,\"{}\",",
                k.name,
                grids(&mut space.iter().map(|c| c.decision.geometry))
            );
        }
    }
    Ok(())
}

fn calibrate_cmd(
    sweep: &Measured,
    out: Option<&PathBuf>,
    loo_csv: Option<&PathBuf>,
) -> Result<(), String> {
    let (base, cases, kernels) = sweep.load()?;
    let device = sweep.device.as_str();
    let cal = calibrate::calibrate(&base, &cases, &kernels);
    let judged: Vec<f64> = cal
        .folds
        .iter()
        .filter_map(|f| {
            f.auto.map(|(_, t)| {
                t / cases[f.case]
                    .times
                    .values()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
            })
        })
        .collect();
    eprintln!(
        "calibrated on {} cases ({} with descriptors): threads_per_block {}, waves {}; auto (leave-one-out) judged on {} cases",
        cases.len(),
        cases
            .iter()
            .filter(|c| kernels.contains_key(&c.kernel))
            .count(),
        cal.threads_per_block,
        cal.waves,
        judged.len()
    );
    let profile = calibrate::profile_toml(device, &base, &cal, cases.len());
    match out {
        Some(path) => {
            std::fs::write(path, &profile).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => print!("{profile}"),
    }
    if let Some(path) = loo_csv {
        let mut csv = String::from(
            "program,kernel,trip_count,fold_threads_per_block,fold_waves,threads,blocks,median_ms\n",
        );
        for f in &cal.folds {
            let c = &cases[f.case];
            let show = |v: Option<u32>| v.map_or_else(String::new, |v| v.to_string());
            let (grid, time) = f.auto.map_or((String::new(), String::new()), |(g, t)| {
                (format!("{},{}", g.threads, g.blocks), t.to_string())
            });
            let grid = if grid.is_empty() {
                ",".to_string()
            } else {
                grid
            };
            csv.push_str(&format!(
                "{},{},{},{},{},{grid},{time}\n",
                c.program,
                c.kernel,
                c.trip_count,
                show(f.threads_per_block),
                show(f.waves)
            ));
        }
        std::fs::write(path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The `ratio` column of a `--cold-noise` CSV: positive, finite, at least one.
fn read_ratios(path: &PathBuf) -> Result<Vec<f64>, String> {
    let what = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{what}: {e}"))?;
    let mut lines = text.lines();
    let columns = csv_columns(lines.next().unwrap_or_default(), &["ratio"], &what)?;
    let mut ratios = Vec::new();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let n = i + 2;
        let ratio: f64 = parse_field(csv_fields(line, &columns, &what, n)?[0], &what, n, "ratio")?;
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(format!(
                "{what} line {n}: ratio {ratio} is not a positive number"
            ));
        }
        ratios.push(ratio);
    }
    if ratios.is_empty() {
        return Err(format!("{what}: no ratios"));
    }
    Ok(ratios)
}

/// What `tune-sim` replays besides the sweep: the noise, how often, the
/// "best" judged against, and whether kernels share a process.
struct TuneSimOptions<'a> {
    cold_noise: Option<&'a [f64]>,
    replications: u32,
    runs: usize,
    seed: u64,
    best_of: Option<usize>,
    /// Each run's allowance (a fraction; infinite: unbounded).
    overhead: f64,
    programs: bool,
}

/// One case of the sweep as `tune-sim` replays it.
struct SimCase<'a> {
    case: &'a Case,
    prior: tune::Prior,
    auto: Geometry,
    best: f64,
}

impl SimCase<'_> {
    /// A grid's measured median; as for every policy judged offline, LLVM's
    /// grid takes LLVM's own (the candidates are all measured grids).
    fn time(&self, g: Geometry) -> f64 {
        self.case.time_of(g).unwrap_or(f64::INFINITY)
    }
}

/// The cases of the sweep grouped as the processes that launch them: each
/// alone, or with `programs`, a program's kernels at one size together (the
/// k-th smallest trip count of each of its kernels: the sweep does not say
/// which trip counts one run of a program launches), in source order.
fn sim_programs<'a>(mut cases: Vec<SimCase<'a>>, programs: bool) -> Vec<Vec<SimCase<'a>>> {
    if !programs {
        return cases.into_iter().map(|c| vec![c]).collect();
    }
    cases.sort_by_key(|c| c.case.trip_count);
    let mut ranks: HashMap<(&'a str, &'a str), usize> = HashMap::new();
    let mut groups: BTreeMap<(&'a str, usize), Vec<SimCase<'a>>> = BTreeMap::new();
    for c in cases {
        let case: &'a Case = c.case;
        let rank = ranks.entry((&case.program, &case.kernel)).or_default();
        groups.entry((&case.program, *rank)).or_default().push(c);
        *rank += 1;
    }
    // In source order, which a run's launches mostly follow: a kernel's
    // name ends in its line (`__omp_offloading_..._l15`).
    let line = |c: &SimCase<'_>| {
        let name = &c.case.kernel;
        let line = name
            .rsplit_once("_l")
            .and_then(|(_, l)| l.parse::<u32>().ok());
        (line, name.clone())
    };
    let mut groups: Vec<Vec<SimCase<'a>>> = groups.into_values().collect();
    for g in &mut groups {
        g.sort_by_key(line);
    }
    groups
}

fn tune_sim(sweep: &Measured, o: &TuneSimOptions<'_>) -> Result<(), String> {
    let (device, cases, kernels) = sweep.load()?;
    /// Launches per run of the two kinds of program.
    const PER_RUN: [u32; 2] = [1, 20];
    println!(
        "program,kernel,trip_count,launches_per_run,replication,runs_to_95pct_of_best,runs_to_95pct_spent,kept_ms_run1,kept_ms_run5,kept_ms_run10,spent_ms_run1,spent_ms_run5,spent_ms_run10,auto_ms,best_ms,candidates,space_points,kept_threads_run10,kept_blocks_run10"
    );
    let mut skipped = 0;
    let mut replayable = Vec::new();
    for case in &cases {
        let kernel = kernels
            .get(&case.kernel)
            .cloned()
            .unwrap_or_else(|| KernelDesc::named(case.kernel.clone()));
        let launch = LaunchDesc::open(case.trip_count);
        let prior = tune::candidates(&device, &kernel, &launch, &[], |g| {
            case.times.contains_key(&g)
        });
        let Some(&(_, auto)) = prior
            .list
            .first()
            .filter(|(c, _)| *c == tune::search::Candidate::Auto)
        else {
            skipped += 1;
            continue;
        };
        let best = match o.best_of {
            Some(n) => prior
                .list
                .iter()
                .take(n)
                .filter_map(|&(_, g)| case.time_of(g))
                .fold(f64::INFINITY, f64::min),
            None => case.times.values().copied().fold(f64::INFINITY, f64::min),
        };
        replayable.push(SimCase {
            case,
            prior,
            auto,
            best,
        });
    }
    let programs = sim_programs(replayable, o.programs);
    let mut draws = SplitMix64(o.seed);
    let mut summary: [Summary; 2] = Default::default();
    for program in &programs {
        let times: Vec<_> = program.iter().map(|c| move |g| c.time(g)).collect();
        let replayed: Vec<tune::ReplayedKernel<'_>> = program
            .iter()
            .zip(&times)
            .map(|(c, time)| tune::ReplayedKernel {
                prior: &c.prior,
                time,
                best_time: c.best,
            })
            .collect();
        let autos: Vec<f64> = program.iter().map(|c| c.time(c.auto)).collect();
        for (n, &per_run) in PER_RUN.iter().enumerate() {
            for replication in 1..=o.replications {
                let setup = tune::ReplaySetup {
                    runs: o.runs,
                    launches: per_run,
                    cold: 1.0,
                    overhead: o.overhead,
                };
                let noise = |cold: bool| match o.cold_noise {
                    Some(ratios) if cold => ratios[draws.below(ratios.len())],
                    _ => 1.0,
                };
                let replays = tune::replay_program(&replayed, setup, noise);
                summary[n].add_program(&replays, &autos);
                for (c, r) in program.iter().zip(&replays) {
                    // The grid kept after run 10: the candidate with that measured
                    // time (grids of equal medians are interchangeable here).
                    let kept = c
                        .prior
                        .list
                        .iter()
                        .map(|&(_, g)| g)
                        .find(|&g| c.time(g) == r.kept[9])
                        .map_or_else(
                            || ",".to_string(),
                            |g| format!("{},{}", g.threads, g.blocks),
                        );
                    let runs = |x: Option<usize>| x.map_or_else(String::new, |n| n.to_string());
                    println!(
                        "{},{},{},{per_run},{replication},{},{},{},{},{},{},{},{},{},{},{},{},{kept}",
                        c.case.program,
                        c.case.kernel,
                        c.case.trip_count,
                        runs(r.runs_to_95pct),
                        runs(r.runs_to_95pct_spent),
                        r.kept[0],
                        r.kept[4],
                        r.kept[9],
                        r.spent[0],
                        r.spent[4],
                        r.spent[9],
                        c.time(c.auto),
                        c.best,
                        c.prior.list.len(),
                        c.case.times.len()
                    );
                }
            }
        }
    }
    let noise = match o.cold_noise {
        Some(ratios) => format!(
            "cold samples ranked through {} measured ratios, {} replications",
            ratios.len(),
            o.replications
        ),
        None => "noiseless".to_string(),
    };
    let allowance = if o.overhead.is_finite() {
        format!("allowance {} %", o.overhead * 100.0)
    } else {
        "exploring unbounded".to_string()
    };
    let processes = if o.programs {
        format!("{} programs' kernels together", programs.len())
    } else {
        "each kernel alone".to_string()
    };
    for (n, s) in summary.iter_mut().enumerate() {
        let replays = s.replays;
        eprintln!(
            "tune-sim: {} launches per run, {noise}, {allowance}, {processes}: {replays} replays ({skipped} cases skipped: auto's grid not measured)\n{}",
            PER_RUN[n],
            s.render(o.programs)
        );
    }
    Ok(())
}

/// What `tune-sim` says of one number of launches per run, over its replays.
#[derive(Default)]
struct Summary {
    replays: usize,
    /// Runs until within 95 % of best: the kept grid, what the runs spent.
    reached: [Vec<f64>; 2],
    /// Per run, the sums of ln(best / time) of the kept grid and of what the
    /// run spent, for geometric means.
    log_share: [Vec<f64>; 2],
    /// Per run, the sum of what the run spent over auto's grid, less one.
    excess: Vec<f64>,
    /// Replays whose last kept grid is more than 3 % slower than auto's.
    slower_than_auto: usize,
    /// Replays of programs, and per run the sum over them of what the
    /// program's run spent over what its kernels take on auto's grids, less
    /// one.
    programs: usize,
    program_excess: Vec<f64>,
    /// Per replay of a program, its costliest run after the first, over
    /// auto's grids, less one.
    program_worst: Vec<f64>,
}

impl Summary {
    /// The replays of one program's kernels, with their times on auto's
    /// grids.
    fn add_program(&mut self, replays: &[tune::Replay], autos: &[f64]) {
        self.programs += 1;
        let runs = replays.first().map_or(0, |r| r.spent.len());
        self.program_excess.resize(runs, 0.0);
        let mut worst = f64::NEG_INFINITY;
        for (run, sum) in self.program_excess.iter_mut().enumerate() {
            let spent: f64 = replays.iter().map(|r| r.spent[run]).sum();
            let excess = spent / autos.iter().sum::<f64>() - 1.0;
            *sum += excess;
            if run > 0 {
                worst = worst.max(excess);
            }
        }
        self.program_worst.push(worst);
        for (r, &auto) in replays.iter().zip(autos) {
            self.add(r, auto);
        }
    }

    fn add(&mut self, r: &tune::Replay, auto: f64) {
        self.replays += 1;
        let never = |x: Option<usize>| x.map_or(f64::INFINITY, |x| x as f64);
        self.reached[0].push(never(r.runs_to_95pct));
        self.reached[1].push(never(r.runs_to_95pct_spent));
        for (sums, per_run) in self.log_share.iter_mut().zip([&r.kept, &r.spent]) {
            sums.resize(per_run.len(), 0.0);
            for (sum, t) in sums.iter_mut().zip(per_run) {
                *sum += (r.best_time / t).ln();
            }
        }
        if r.kept.last().is_some_and(|&t| t > auto * 1.03) {
            self.slower_than_auto += 1;
        }
        self.excess.resize(r.spent.len(), 0.0);
        for (sum, t) in self.excess.iter_mut().zip(&r.spent) {
            *sum += t / auto - 1.0;
        }
    }

    /// The summary's lines; with `programs`, one more for whole programs'
    /// runs.
    fn render(&mut self, programs: bool) -> String {
        let n = self.replays.max(1) as f64;
        let mut out = String::new();
        for (view, (reached, sums)) in ["kept grid", "runs' spending"]
            .iter()
            .zip(self.reached.iter_mut().zip(&self.log_share))
        {
            reached.sort_by(f64::total_cmp);
            let at = |q: f64| {
                reached
                    .get(((reached.len() as f64 - 1.0) * q) as usize)
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            let shares: Vec<String> = sums
                .iter()
                .map(|s| format!("{:.1}", 100.0 * (s / n).exp()))
                .collect();
            out.push_str(&format!(
                "  {view}: runs to 95 % of best median {}, p90 {}, never within {} runs {:.1} %; share of best by run (geomean, %): {}\n",
                at(0.5),
                at(0.9),
                sums.len(),
                100.0 * reached.iter().filter(|x| x.is_infinite()).count() as f64 / n,
                shares.join(" ")
            ));
        }
        let last = self.excess.len();
        let excess: Vec<String> = self
            .excess
            .iter()
            .map(|s| format!("{:+.1}", 100.0 * s / n))
            .collect();
        out.push_str(&format!(
            "  runs' time over auto's grid by run (mean, %): {}; runs 2-{last} together {:+.0} % of one run; last kept grid > 3 % slower than auto's: {:.1} %",
            excess.join(" "),
            100.0 * self.excess.iter().skip(1).sum::<f64>() / n,
            100.0 * self.slower_than_auto as f64 / n
        ));
        if programs {
            let p = self.programs.max(1) as f64;
            let excess: Vec<String> = self
                .program_excess
                .iter()
                .map(|s| format!("{:+.1}", 100.0 * s / p))
                .collect();
            self.program_worst.sort_by(f64::total_cmp);
            let worst = |q: f64| {
                let w = &self.program_worst;
                w.get(((w.len() as f64 - 1.0) * q) as usize)
                    .map_or(f64::NAN, |x| 100.0 * x)
            };
            out.push_str(&format!(
                "\n  programs' runs over auto's grids by run (mean over {} replays of programs, %): {}; runs 2-{last} together {:+.0} % of one run; a program's costliest of runs 2-{last}: median {:+.1} %, p90 {:+.1} %, max {:+.1} %",
                self.programs,
                excess.join(" "),
                100.0 * self.program_excess.iter().skip(1).sum::<f64>() / p,
                worst(0.5),
                worst(0.9),
                worst(1.0)
            ));
        }
        out
    }
}

/// Compares gridsel's descriptors and occupancy with the driver's; returns
/// the number of disagreements.
fn check_driver(binaries: &[PathBuf], ordinal: i32) -> Result<usize, String> {
    let device = cuda::devices_on_machine()?
        .into_iter()
        .nth(ordinal as usize)
        .ok_or("no such GPU")?;
    let mut mismatches = 0;
    println!("kernel,field,gridsel,driver");
    for path in binaries {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for raw in image::raw_images_in_file(&bytes).map_err(|e| e.to_string())? {
            let Ok(info) = image::parse_image(&raw) else {
                continue;
            };
            if !matches!(info.kind, ImageKind::Cubin { .. }) {
                continue;
            }
            let names: Vec<String> = info.kernels.iter().map(|k| k.name.clone()).collect();
            let sizes: Vec<u32> = (1..=32).map(|w| w * device.warp_size).collect();
            for (k, d) in info
                .kernels
                .iter()
                .zip(cuda::driver_kernels(ordinal, &raw, &names, &sizes)?)
            {
                let mut compare = |field: &str, ours: Option<u32>, theirs: u32| {
                    if ours != Some(theirs) {
                        mismatches += 1;
                        println!(
                            "{},{field},{},{theirs}",
                            k.name,
                            ours.map_or("?".into(), |v| v.to_string())
                        );
                    }
                };
                compare("registers", k.registers, d.registers);
                compare("shared_mem", k.shared_mem, d.shared_mem);
                compare("local_mem", k.local_mem, d.local_mem);
                compare("max_threads", k.max_threads, d.max_threads);
                for &(t, n) in d.active_blocks.iter().filter(|(t, _)| *t <= d.max_threads) {
                    compare(
                        &format!("resident_blocks@{t}"),
                        Some(gridsel::occupancy::resident_blocks_per_sm(&device, k, t)),
                        n,
                    );
                }
                let (ours, _) = policy::occupancy::occupancy(&device, k, u64::MAX);
                compare("occupancy_block_size", Some(ours.threads), d.potential.0);
                println!(
                    "{},checked,{} regs {} B shared,potential {}x{}",
                    k.name, d.registers, d.shared_mem, d.potential.0, d.potential.1
                );
            }
        }
    }
    Ok(mismatches)
}

/// The positions of `names` in a CSV header line, in that order.
fn csv_columns(header: &str, names: &[&str], what: &str) -> Result<Vec<usize>, String> {
    let header: Vec<&str> = header.split(',').collect();
    names
        .iter()
        .map(|name| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| format!("{what} lacks column {name}"))
        })
        .collect()
}

/// The fields of a CSV line at `columns` (no quoting: the harness's files
/// have none), or which line is short.
fn csv_fields<'a>(
    line: &'a str,
    columns: &[usize],
    what: &str,
    number: usize,
) -> Result<Vec<&'a str>, String> {
    let fields: Vec<&str> = line.split(',').collect();
    columns
        .iter()
        .map(|&c| {
            fields
                .get(c)
                .copied()
                .ok_or_else(|| format!("{what} line {number}: too few fields"))
        })
        .collect()
}

fn parse_field<T: std::str::FromStr>(
    text: &str,
    what: &str,
    number: usize,
    name: &str,
) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{what} line {number}: {name} `{text}` is not a number"))
}

/// Warns about the measured kernels that `--binaries` does not describe (kernel
/// names carry the source file's inode, so only the binaries that were
/// measured describe them).
fn warn_undescribed(command: &str, missing: &BTreeSet<String>, of: usize) {
    if let Some(first) = missing.first() {
        eprintln!(
            "gridsel {command}: {} of {of} measured kernels have no descriptor in --binaries and are left out (first: {first})",
            missing.len()
        );
    }
}

/// `gridsel features`: see the command's doc.
fn features_cmd(sweep: &Measured, candidates: bool) -> Result<(), String> {
    use gridsel::forest::{FEATURES, N_FEATURES, features};
    let device = gridsel::files::device(&sweep.device).map_err(|e| e.to_string())?;
    let kernels = KernelIndex::load(&sweep.binaries, device.sm_arch)?;
    let what = sweep.points.display().to_string();
    let text = std::fs::read_to_string(&sweep.points).map_err(|e| format!("{what}: {e}"))?;
    let mut lines = text.lines();
    let names = [
        "program",
        "kernel",
        "trip_count",
        "label",
        "threads",
        "blocks",
        "median_ms",
    ];
    let columns = csv_columns(lines.next().unwrap_or_default(), &names, &what)?;
    let features_header: Vec<String> = FEATURES.iter().map(|f| format!("x.{f}")).collect();
    println!("{},{}", names.join(","), features_header.join(","));
    // An f32 widened to f64 prints exactly, so a reader parsing the value as
    // a double gets the very f32 the model compares.
    let row = |fields: &[&str], x: [f32; N_FEATURES]| {
        let x: Vec<String> = x.iter().map(|&v| f64::from(v).to_string()).collect();
        println!("{},{}", fields.join(","), x.join(","));
    };
    // The described cases in order of appearance, for the candidate rows.
    let (mut cases, mut seen) = (Vec::new(), HashSet::new());
    let (mut measured, mut missing) = (HashSet::new(), BTreeSet::new());
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let n = i + 2;
        let f = csv_fields(line, &columns, &what, n)?;
        measured.insert(f[1]);
        let Some(kernel) = kernels.get(f[0], f[1]) else {
            missing.insert(f[1].to_string());
            continue;
        };
        let trip: u64 = parse_field(f[2], &what, n, "trip_count")?;
        let grid = Geometry::new(
            parse_field(f[4], &what, n, "threads")?,
            parse_field(f[5], &what, n, "blocks")?,
        );
        row(&f, features(&device, kernel, trip, grid));
        if seen.insert((f[0], f[1], trip)) {
            cases.push((f[0], kernel, trip));
        }
    }
    if candidates {
        for &(program, kernel, trip) in &cases {
            let trip_text = trip.to_string();
            for g in policy::forest::candidates(&device, kernel, &LaunchDesc::open(trip)) {
                let (threads, blocks) = (g.threads.to_string(), g.blocks.to_string());
                let fields = [
                    program,
                    &kernel.name,
                    &trip_text,
                    "candidate",
                    &threads,
                    &blocks,
                    "",
                ];
                row(&fields, features(&device, kernel, trip, g));
            }
        }
    }
    warn_undescribed("features", &missing, measured.len());
    Ok(())
}

/// `gridsel chunks`: see the command's doc.
fn chunks_cmd(sweep: &Measured) -> Result<(), String> {
    let (device, cases, kernels) = sweep.load()?;
    println!("program,kernel,trip_count,chunk,chunks,max_blocks");
    let mut missing = BTreeSet::new();
    for case in &cases {
        let Some(kernel) = kernels.get(&case.kernel) else {
            missing.insert(case.kernel.clone());
            continue;
        };
        let launch = LaunchDesc::open(case.trip_count);
        let max_blocks = sweep::grid(&device, kernel, &launch)
            .iter()
            .map(|g| g.blocks)
            .max()
            .map_or_else(String::new, |b| b.to_string());
        let (chunk, chunks) = kernel.distribute_chunk().map_or_else(
            || (String::new(), String::new()),
            |c| {
                let chunks = case.trip_count.max(1).div_ceil(u64::from(c.max(1)));
                (c.to_string(), chunks.to_string())
            },
        );
        println!(
            "{},{},{},{chunk},{chunks},{max_blocks}",
            case.program, case.kernel, case.trip_count
        );
    }
    let measured: HashSet<&str> = cases.iter().map(|c| c.kernel.as_str()).collect();
    warn_undescribed("chunks", &missing, measured.len());
    Ok(())
}

/// `gridsel cache-entries`: see the command's doc.
fn cache_entries(csv: &PathBuf, out: Option<&PathBuf>) -> Result<(), String> {
    let what = csv.display().to_string();
    let text = if csv.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))?
    } else {
        std::fs::read_to_string(csv).map_err(|e| format!("{what}: {e}"))?
    };
    let mut lines = text.lines();
    let names = [
        "kernel",
        "device",
        "sm_arch",
        "trip_count",
        "threads",
        "blocks",
        "ns",
        "launches",
    ];
    let columns = csv_columns(lines.next().unwrap_or_default(), &names, &what)?;
    let mut table = tune::cache::Table::default();
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let n = i + 2;
        let f = csv_fields(line, &columns, &what, n)?;
        let trip: u64 = parse_field(f[3], &what, n, "trip_count")?;
        let grid = Geometry::new(
            parse_field(f[4], &what, n, "threads")?,
            parse_field(f[5], &what, n, "blocks")?,
        );
        let ns: u64 = parse_field(f[6], &what, n, "ns")?;
        let _: u32 = parse_field(f[7], &what, n, "launches")?;
        let key =
            tune::cache::Key::for_trip(f[0], f[1], parse_field(f[2], &what, n, "sm_arch")?, trip);
        if let Some(r) = table.get(&key) {
            return Err(format!(
                "{what} line {n}: a second grid for kernel {}, device {}, sm_{}, trip-count class {} (trip counts {} and {trip})",
                key.kernel, key.device, key.sm_arch, key.class, r.trips.0
            ));
        }
        let pinned = tune::search::Candidate::Grid(grid);
        let mut update = tune::cache::Update::new(key);
        update.trips = (trip, trip);
        update.pinned = Some(pinned);
        update.samples = vec![(pinned, tune::search::Kind::Warm, ns)];
        table.apply(&update);
    }
    let rendered = table.render();
    if rendered.len() as u64 > tune::cache::MAX_BYTES {
        return Err(format!(
            "{} records make {} bytes, over the store's limit of {} (the runtime would not read it)",
            table.len(),
            rendered.len(),
            tune::cache::MAX_BYTES
        ));
    }
    match out {
        Some(path) => {
            std::fs::write(path, rendered).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => print!("{rendered}"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Case, SimCase, sim_programs};
    use gridsel::geometry::Geometry;

    fn case(program: &str, kernel: &str, trip_count: u64) -> Case {
        Case {
            program: program.into(),
            kernel: kernel.into(),
            trip_count,
            times: Default::default(),
            llvm: None,
        }
    }

    /// `--programs`: a program's kernels at their k-th smallest trip count
    /// run together, in source order (the line their name ends in).
    #[test]
    fn programs_group_each_kernels_kth_trip_count_in_source_order() {
        let cases = [
            case("p", "k_l20", 100),
            case("p", "k_l5", 20),
            case("p", "k_l20", 10),
            case("q", "k_l1", 7),
            case("p", "k_l5", 200),
        ];
        let sim = |programs: bool| {
            let list: Vec<SimCase<'_>> = cases
                .iter()
                .map(|c| SimCase {
                    case: c,
                    prior: gridsel::tune::Prior {
                        list: Vec::new(),
                        starving_from: None,
                    },
                    auto: Geometry::new(128, 1),
                    best: 1.0,
                })
                .collect();
            sim_programs(list, programs)
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|c| format!("{}:{}", c.case.kernel, c.case.trip_count))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sim(true),
            ["k_l5:20 k_l20:10", "k_l5:200 k_l20:100", "k_l1:7"]
        );
        assert_eq!(sim(false).len(), cases.len());
        assert_eq!(sim(false)[0], "k_l20:100");
    }
}
