//! What the policies decide, judged and dumped: `evaluate` (a policy's
//! grid for every measured case, with that grid's measured time),
//! `dump-decisions` (every decision over a ladder of trip counts) and
//! `space` (the sweep space of one launch).

use crate::sweep::{KernelIndex, Measured};
use gridsel_cli::args::Target;
use gridsel_cli::csv;
use gridsel_core::geometry::LaunchDesc;
use gridsel_core::kernel::KernelDesc;
use gridsel_core::policy::chunked::{self, WaveGrid};
use gridsel_core::policy::{self, Decision, Limits, Policy, sweep};
use gridsel_core::tune;
use std::path::Path;

/// `evaluate`: `policy`'s grid for every described case of `sweep` and that
/// grid's measured median (CSV); with `reduction_grid`, `auto`'s static
/// rule ([`chunked`]) with those constants of rule 6.
pub fn evaluate(
    sweep: &Measured,
    policy: &Policy,
    reduction_grid: Option<ReductionArg>,
) -> Result<(), String> {
    if reduction_grid.is_some() && *policy != Policy::Auto {
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
                let (grid, rule) = chunked::grid_with(&device, kernel, &launch, r);
                let limits = Limits::of(&device, kernel, &launch);
                Decision::within(grid, rule, &limits, &device, kernel, &launch)
            }
            None => match policy::decide(policy, &device, kernel, &launch) {
                Some(d) => d,
                None => continue,
            },
        };
        let g = d.geometry;
        let time = case.time_of(g).map_or_else(String::new, |t| t.to_string());
        println!(
            "{},{},{},{},{},{time}",
            csv::field(&case.program),
            csv::field(&case.kernel),
            case.trip_count,
            g.threads,
            g.blocks
        );
    }
    Ok(())
}

/// `evaluate --reduction-grid`: rule 6's constants, `None` for `off`.
#[derive(Clone, Copy)]
pub struct ReductionArg(Option<WaveGrid>);

/// `--reduction-grid`: THREADS,WAVES,MIN_TRIP or `off`.
pub fn parse_reduction_grid(text: &str) -> Result<ReductionArg, String> {
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
            Ok(ReductionArg(Some(WaveGrid {
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

/// `dump-decisions`: see the command's doc.
pub fn dump(binaries: &Path, device: &str) -> Result<(), String> {
    let device = gridsel_host::files::device(device).map_err(|e| e.to_string())?;
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
    let grids = |gs: &mut dyn Iterator<Item = gridsel_core::Geometry>| {
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
                        "{},{trip},{},{},{},{},{}",
                        csv::field(&k.name),
                        csv::quoted(&p.to_string()),
                        g.threads,
                        g.blocks,
                        csv::field(&format!("{:?}", d.rule)),
                        d.clamped
                    );
                }
            }
            let tune = tune::candidates(
                &device,
                k,
                &launch,
                &[],
                tune::search::Exploring::Bounded,
                |_| true,
            );
            println!(
                "{},{trip},tune,,,{},",
                csv::field(&k.name),
                csv::quoted(&grids(&mut tune.list.into_iter().map(|(_, g)| g)))
            );
            let space = sweep::space(&device, k, &launch);
            println!(
                "{},{trip},sweep,,,{},",
                csv::field(&k.name),
                csv::quoted(&grids(&mut space.iter().map(|c| c.decision.geometry)))
            );
        }
    }
    Ok(())
}

/// `space`: the sweep space of `target`'s launch (CSV), the grids the
/// `sweep` policy cycles through; column `forest` says whether the forest
/// policy searches the point.
pub fn space(target: &Target) -> Result<(), String> {
    let (device, kernel, launch) = target.resolve()?;
    println!("label,threads,blocks,forest");
    for c in sweep::space(&device, &kernel, &launch) {
        let g = c.decision.geometry;
        let searched = c.label == "grid" && policy::forest::searched_threads(&device, g.threads);
        println!(
            "{},{},{},{}",
            csv::field(c.label),
            g.threads,
            g.blocks,
            u8::from(searched)
        );
    }
    Ok(())
}
