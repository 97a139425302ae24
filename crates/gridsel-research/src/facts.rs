//! Facts the benchmark tools ask for instead of recomputing what the
//! library owns: `features` (the forest's feature rows, for
//! bench/forest/train.py), `chunks` (each case's distribute chunk, for the
//! harness's `ceiling`), `costs` (`tune`'s predicted cost of every measured
//! grid beside its measured time, to judge the pruning threshold) and
//! `cache-entries` (a store pinning grids, for the
//! harness's `best-cache`).

use crate::sweep::{KernelIndex, Measured, POINTS_COLUMNS, warn_undescribed};
use gridsel_cli::csv::{self, Reader};
use gridsel_core::forest_model::{FEATURES, N_FEATURES, features as feature_row};
use gridsel_core::geometry::{Geometry, LaunchDesc};
use gridsel_core::policy::{self, sweep};
use gridsel_core::tune;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// `features`: see the command's doc.
pub fn features(sweep: &Measured, candidates: bool) -> Result<(), String> {
    let device = sweep.device()?;
    let kernels = KernelIndex::load(&sweep.binaries, device.sm_arch)?;
    let source = sweep.points.display().to_string();
    let text = sweep.points_text()?;
    let reader = Reader::new(&source, &text)?;
    let names = POINTS_COLUMNS;
    let columns = reader.columns(names)?;
    let [_, _, trip_count, _, threads, blocks, _] = columns;
    let features_header: Vec<String> = FEATURES.iter().map(|f| format!("x.{f}")).collect();
    println!("{},{}", names.join(","), features_header.join(","));
    // An f32 widened to f64 prints exactly, so a reader parsing the value as
    // a double gets the very f32 the model compares.
    let row = |fields: &[&str], x: [f32; N_FEATURES]| {
        let fields: Vec<_> = fields.iter().map(|f| csv::field(f)).collect();
        let x: Vec<String> = x.iter().map(|&v| f64::from(v).to_string()).collect();
        println!("{},{}", fields.join(","), x.join(","));
    };
    // The described cases in order of appearance, for the candidate rows.
    let (mut cases, mut seen) = (Vec::new(), HashSet::new());
    let (mut measured, mut missing) = (HashSet::new(), BTreeSet::new());
    for record in reader {
        let r = record?;
        let fields = columns
            .iter()
            .map(|&c| r.text(c))
            .collect::<Result<Vec<_>, _>>()?;
        let (program, kernel_name) = (fields[0], fields[1]);
        measured.insert(kernel_name.to_string());
        let Some(kernel) = kernels.get(program, kernel_name) else {
            missing.insert(kernel_name.to_string());
            continue;
        };
        let trip: u64 = r.number(trip_count)?;
        let grid = Geometry::new(r.number(threads)?, r.number(blocks)?);
        row(&fields, feature_row(&device, kernel, trip, grid));
        if seen.insert((program.to_string(), kernel_name.to_string(), trip)) {
            cases.push((program.to_string(), kernel, trip));
        }
    }
    if candidates {
        for (program, kernel, trip) in &cases {
            let trip_text = trip.to_string();
            for g in policy::forest::candidates(&device, kernel, &LaunchDesc::open(*trip)) {
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
                row(&fields, feature_row(&device, kernel, *trip, g));
            }
        }
    }
    warn_undescribed("features", &missing, measured.len());
    Ok(())
}

/// `chunks`: see the command's doc.
pub fn chunks(sweep: &Measured) -> Result<(), String> {
    println!("program,kernel,trip_count,chunk,chunks,max_blocks");
    sweep.each_described("chunks", |device, case, kernel| {
        let launch = LaunchDesc::open(case.trip_count);
        let max_blocks = sweep::grid(device, kernel, &launch)
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
            csv::field(&case.program),
            csv::field(&case.kernel),
            case.trip_count
        );
    })
}

/// `costs`: see the command's doc; `session`: a tuning session's prior.
pub fn costs(sweep: &Measured, session: bool) -> Result<(), String> {
    let exploring = if session {
        tune::search::Exploring::UNBOUNDED
    } else {
        tune::search::Exploring::Bounded
    };
    println!(
        "program,kernel,trip_count,threads,blocks,median_ms,auto_ms,predicted,prior_rank,reduction"
    );
    sweep.each_described("costs", |device, case, kernel| {
        let launch = LaunchDesc::open(case.trip_count);
        let auto = policy::chunked::grid(device, kernel, &launch).0;
        let reduction = if kernel.has_cross_team_reduction() {
            "yes"
        } else {
            "no"
        };
        let Some(auto_ms) = case.time_of(auto) else {
            return;
        };
        // Every candidate the prior would list, pruned or not.
        let prior = tune::candidates_before_pruning(device, kernel, &launch, &[], exploring, |g| {
            case.times.contains_key(&g)
        });
        let mut grids: Vec<&Geometry> = case.times.keys().collect();
        grids.sort();
        for &g in grids {
            let predicted = tune::cost::relative_cost(device, kernel, &launch, g, auto)
                .map_or_else(String::new, |r| format!("{r:.4}"));
            let rank = prior
                .list
                .iter()
                .position(|&(_, p)| p == g)
                .map_or_else(String::new, |r| r.to_string());
            println!(
                "{},{},{},{},{},{},{auto_ms},{predicted},{rank},{reduction}",
                csv::field(&case.program),
                csv::field(&case.kernel),
                case.trip_count,
                g.threads,
                g.blocks,
                case.time_of(g).unwrap_or(f64::NAN),
            );
        }
    })
}

/// `cache-entries`: see the command's doc.
pub fn cache_entries(csv: &Path, out: Option<&Path>) -> Result<(), String> {
    let (source, text) = if csv.as_os_str() == "-" {
        let text = std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))?;
        ("stdin".to_string(), text)
    } else {
        let source = csv.display().to_string();
        let text = std::fs::read_to_string(csv).map_err(|e| format!("{source}: {e}"))?;
        (source, text)
    };
    let reader = Reader::new(&source, &text)?;
    let [
        kernel,
        device,
        sm_arch,
        trip_count,
        threads,
        blocks,
        ns,
        launches,
    ] = reader.columns([
        "kernel",
        "device",
        "sm_arch",
        "trip_count",
        "threads",
        "blocks",
        "ns",
        "launches",
    ])?;
    let mut table = tune::store::Table::default();
    for record in reader {
        let r = record?;
        let trip: u64 = r.number(trip_count)?;
        let grid = Geometry::new(r.number(threads)?, r.number(blocks)?);
        let ns: u64 = r.number(ns)?;
        let _: u32 = r.number(launches)?;
        // No build: a pinned record without one pins every build.
        let key = tune::store::Key::for_trip(
            r.text(kernel)?,
            r.text(device)?,
            r.number(sm_arch)?,
            trip,
            "",
        );
        if let Some(existing) = table.get(&key) {
            return Err(r.record_error(format_args!(
                "a second grid for kernel {}, device {}, sm_{}, trip-count class {} (trip counts {} and {trip})",
                key.kernel, key.device, key.sm_arch, key.class, existing.tally.trips.0
            )));
        }
        let pinned = tune::search::Candidate::Grid(grid);
        let mut update = tune::store::Update::new(key);
        update.tally.trips = (trip, trip);
        update.pinned = Some(pinned);
        update.samples = vec![(pinned, tune::search::Kind::Warm, ns)];
        table.apply(&update);
    }
    let rendered = table.render();
    if rendered.len() as u64 > tune::store::MAX_BYTES {
        return Err(format!(
            "{} records make {} bytes, over the store's limit of {} (the runtime would not read it)",
            table.len(),
            rendered.len(),
            tune::store::MAX_BYTES
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
