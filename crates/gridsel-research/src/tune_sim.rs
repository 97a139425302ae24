//! `gridsel-research tune-sim`: `tune`'s search replayed on sweep results.
//! The stand-in timer of each (kernel, trip count) is its measured median
//! per grid; runs follow each other through the store's format, as
//! programs run again and again do.

use crate::sweep::{Case, Measured};
use gridsel_cli::csv::{self, Reader};
use gridsel_core::geometry::{Geometry, LaunchDesc};
use gridsel_core::kernel::KernelDesc;
use gridsel_core::splitmix::SplitMix64;
use gridsel_core::tune;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// `tune-sim`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: Measured,
    /// Cold samples' run-to-run noise to rank through: a CSV whose
    /// `ratio` column holds measured cold samples over their grid's
    /// median (bench/harness/cold_noise.py --ratios). Each run's first
    /// launch is seen as its grid's median times a ratio drawn at
    /// random; later launches stay noiseless.
    #[arg(long)]
    cold_noise: Option<PathBuf>,
    /// Warm samples' noise, in the same form: each later launch is seen as
    /// its grid's median times a ratio drawn at random (noiseless when not
    /// given).
    #[arg(long)]
    warm_noise: Option<PathBuf>,
    /// The first warm launch's noise in a run, in the same form, in place
    /// of `--warm-noise` there: some programs run their first steps slow
    /// (bench/results/h100/NOTES.md §49), and that launch gives a warm
    /// search its first sample, `auto`'s grid's.
    #[arg(long)]
    first_warm_noise: Option<PathBuf>,
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
    /// Whether that allowance holds in every run (`run`) or over the runs
    /// on average, what a run leaves banked for the next (`average`), as
    /// GRIDSEL_TUNE_BOUND says.
    #[arg(long, default_value = "run", value_parser = bound)]
    bound: tune::Bound,
    /// Online `tune`'s candidates and plan even where exploring is
    /// unbounded (a tuning session's otherwise): what a session searched
    /// before bench/results/h100/NOTES.md §30.
    #[arg(long)]
    online_plan: bool,
    /// Replay a program's kernels at one size in the same processes,
    /// sharing each run's allowance, launched in turn (the k-th smallest
    /// trip count of each of its kernels is taken as one size).
    #[arg(long)]
    programs: bool,
    /// The candidates a live search has: every grid of the prior, not only
    /// those the sweep measured. A grid the sweep did not measure fails to
    /// the search (it never leads) and costs a launch on `auto`'s grid, so
    /// that a grid's place in the live prior, which decides whether a plan
    /// reaches it, is replayed (bench/results/h100/NOTES.md §43).
    #[arg(long)]
    live_prior: bool,
}

/// `--bound`'s word, as GRIDSEL_TUNE_BOUND takes it.
fn bound(word: &str) -> Result<tune::Bound, String> {
    tune::Bound::named(word).ok_or_else(|| format!("`{word}` is not run or average"))
}

/// Runs `tune-sim`: CSV on stdout, the summary on stderr.
pub fn run(args: &Args) -> Result<(), String> {
    let ratios = args.cold_noise.as_deref().map(read_ratios).transpose()?;
    let warm_ratios = args.warm_noise.as_deref().map(read_ratios).transpose()?;
    let first_warm_ratios = (args.first_warm_noise.as_deref())
        .map(read_ratios)
        .transpose()?;
    let overhead = match args.overhead {
        Some(p) if p.is_finite() && p >= 0.0 => p / 100.0,
        Some(p) => return Err(format!("--overhead {p}: not a percentage")),
        None => f64::INFINITY,
    };
    let options = TuneSimOptions {
        cold_noise: ratios.as_deref(),
        warm_noise: warm_ratios.as_deref(),
        first_warm_noise: first_warm_ratios.as_deref(),
        replications: args.replications.max(1),
        runs: args.runs as usize,
        seed: args.seed,
        best_of: args.best_of,
        overhead,
        bound: args.bound,
        online_plan: args.online_plan,
        programs: args.programs,
        live_prior: args.live_prior,
    };
    simulate(&args.sweep, &options)
}

/// The `ratio` column of a `--cold-noise` CSV: positive, finite, at least one.
fn read_ratios(path: &Path) -> Result<Vec<f64>, String> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{source}: {e}"))?;
    let reader = Reader::new(&source, &text)?;
    let column = reader.column("ratio")?;
    let mut ratios = Vec::new();
    for record in reader {
        let r = record?;
        let ratio: f64 = r.number(column)?;
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(r.error(column, format_args!("{ratio} is not a positive number")));
        }
        ratios.push(ratio);
    }
    if ratios.is_empty() {
        return Err(format!("{source}: no ratios"));
    }
    Ok(ratios)
}

/// What `tune-sim` replays besides the sweep: the noise, how often, the
/// "best" judged against, and whether kernels share a process.
struct TuneSimOptions<'a> {
    cold_noise: Option<&'a [f64]>,
    warm_noise: Option<&'a [f64]>,
    first_warm_noise: Option<&'a [f64]>,
    replications: u32,
    runs: usize,
    seed: u64,
    best_of: Option<usize>,
    /// Each run's allowance (a fraction; infinite: unbounded).
    overhead: f64,
    bound: tune::Bound,
    online_plan: bool,
    programs: bool,
    live_prior: bool,
}

impl TuneSimOptions<'_> {
    /// Unbounded exploring (no `--overhead`) is a tuning session's: its
    /// candidates and plan, unless `--online-plan`.
    fn exploring(&self) -> tune::search::Exploring {
        if self.overhead.is_infinite() && !self.online_plan {
            tune::search::Exploring::UNBOUNDED
        } else {
            tune::search::Exploring::Bounded
        }
    }
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

fn simulate(sweep: &Measured, o: &TuneSimOptions<'_>) -> Result<(), String> {
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
        let prior = tune::candidates(&device, &kernel, &launch, &[], o.exploring(), |g| {
            o.live_prior || case.times.contains_key(&g)
        });
        let Some(&(_, auto)) = prior
            .list
            .first()
            .filter(|&&(c, g)| c == tune::search::Candidate::Auto && case.time_of(g).is_some())
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
                    bound: o.bound,
                };
                let noise = |n: u32| {
                    let ratios = match n {
                        0 => o.cold_noise,
                        1 => o.first_warm_noise.or(o.warm_noise),
                        _ => o.warm_noise,
                    };
                    ratios.map_or(1.0, |r| r[draws.below(r.len())])
                };
                let replays = tune::replay_program(&replayed, setup, noise);
                summary[n].add_program(&replays, &autos);
                for (c, r) in program.iter().zip(&replays) {
                    let kept = format!("{},{}", r.kept_grids[9].threads, r.kept_grids[9].blocks);
                    let runs = |x: Option<usize>| x.map_or_else(String::new, |n| n.to_string());
                    println!(
                        "{},{},{},{per_run},{replication},{},{},{},{},{},{},{},{},{},{},{},{},{kept}",
                        csv::field(&c.case.program),
                        csv::field(&c.case.kernel),
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
    let through = |kind: &str, ratios: Option<&[f64]>| match ratios {
        Some(ratios) => format!(
            "{kind} samples ranked through {} measured ratios",
            ratios.len()
        ),
        None => format!("{kind} samples noiseless"),
    };
    let first_warm = o.first_warm_noise.map_or_else(String::new, |r| {
        format!(", {}", through("a run's first warm", Some(r)))
    });
    let noise = format!(
        "{}, {}{first_warm}, {} replications",
        through("cold", o.cold_noise),
        through("warm", o.warm_noise),
        o.replications
    );
    let allowance = match o.exploring() {
        _ if o.overhead.is_finite() => format!(
            "allowance {} % (bound: {})",
            o.overhead * 100.0,
            o.bound.name()
        ),
        tune::search::Exploring::Bounded => "exploring unbounded, online plan".to_string(),
        tune::search::Exploring::Unbounded { .. } => {
            "exploring unbounded, session plan".to_string()
        }
    };
    let prior = if o.live_prior {
        "live priors (grids the sweep did not measure fail)"
    } else {
        "priors of the measured grids"
    };
    let processes = if o.programs {
        format!("{} programs' kernels together", programs.len())
    } else {
        "each kernel alone".to_string()
    };
    for (n, s) in summary.iter_mut().enumerate() {
        let replays = s.replays;
        eprintln!(
            "tune-sim: {} launches per run, {noise}, {allowance}, {prior}, {processes}: {replays} replays ({skipped} cases skipped: auto's grid not measured)\n{}",
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
    /// Runs until the kept grid is within 98 % of best.
    reached_98: Vec<f64>,
    /// Runs until the search explores no more.
    settled: Vec<f64>,
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
        self.reached_98
            .push(never(tune::runs_until_within(&r.kept, r.best_time, 0.98)));
        self.settled.push(never(r.settled_after));
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
        for (what, runs) in [
            ("kept grid: runs to 98 % of best", &mut self.reached_98),
            ("search: runs until settled", &mut self.settled),
        ] {
            runs.sort_by(f64::total_cmp);
            let at = |q: f64| {
                runs.get(((runs.len() as f64 - 1.0) * q) as usize)
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            out.push_str(&format!(
                "  {what} median {}, p90 {}, never within {} runs {:.1} %\n",
                at(0.5),
                at(0.9),
                self.log_share[0].len(),
                100.0 * runs.iter().filter(|x| x.is_infinite()).count() as f64 / n
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

#[cfg(test)]
mod tests {
    use super::{Case, SimCase, sim_programs};
    use gridsel_core::geometry::Geometry;

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
                    prior: gridsel_core::tune::Prior::unpredicted(Vec::new()),
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
