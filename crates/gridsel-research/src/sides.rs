//! `gridsel-research sides`: one alternating run's two sides, per search,
//! as `gridsel tune`'s confirmation splits them ([`Launches::sides`]): the
//! measurements that judge production runs within one process
//! (bench/gpu/tune-session.sh) read its CSV instead of splitting the
//! profile again.

use clap::Args;
use gridsel_cli::csv::field;
use gridsel_cli::launches::{Launches, SideLaunches, Split, grid_label};
use gridsel_core::tune::LearnedLaunches;
use gridsel_host::ffi::fs::read_capped;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The most of a run's profile read: about 4 million launches.
const MAX_PROFILE_BYTES: u64 = 256 << 20;

/// The CSV's columns: the search, the run's launches of it, then per side
/// (auto, learned) its launches, the grids it launched (blocks x threads,
/// the most launched first), its median launch time, that median times the
/// run's launches (its share of the side's median-sum GPU time) and its
/// launch times summed, scaled to the run's launches (its share of the
/// side's plain GPU time).
const COLUMNS: &str = "kernel,class,trip_counts,launches,\
    auto_launches,auto_grids,auto_median_ns,auto_median_sum_ns,auto_sum_ns,\
    learned_launches,learned_grids,learned_median_ns,learned_median_sum_ns,learned_sum_ns";

#[derive(Args)]
pub struct SidesArgs {
    /// The run's GRIDSEL_PROFILE file.
    profile: PathBuf,
    /// The launches of each search that got the learned grid, as the run's
    /// GRIDSEL_LEARNED_ALTERNATE said: odd (its 2nd, 4th, ... launch) or
    /// even (its 3rd, 5th, ...). A run without a store splits as well: two
    /// sides of the same grids, the noise within one process.
    #[arg(long, value_parser = learned_launches)]
    learned: LearnedLaunches,
}

fn learned_launches(word: &str) -> Result<LearnedLaunches, String> {
    LearnedLaunches::named(word).ok_or_else(|| format!("{word:?}: odd or even"))
}

/// `sides`: prints the CSV (see the command's doc).
pub fn run(args: &SidesArgs) -> Result<(), String> {
    let (csv, bad_rows) = sides(&args.profile, args.learned)?;
    if bad_rows > 0 {
        eprintln!(
            "gridsel-research sides: {}: {bad_rows} malformed lines left out",
            args.profile.display()
        );
    }
    print!("{csv}");
    Ok(())
}

/// The CSV of the alternating run whose profile is at `profile`, its
/// learned grids at the launches `at`; and the profile's malformed lines.
/// A search without a launch on a side (launched once or twice) has that
/// side's columns empty; the session leaves it out of both.
pub fn sides(profile: &Path, at: LearnedLaunches) -> Result<(String, usize), String> {
    let text = read_capped(profile, MAX_PROFILE_BYTES)
        .map_err(|e| format!("{}: {e}", profile.display()))?;
    let (launches, bad_rows) = Launches::read(&text, |_, _| {});
    let mut csv = format!("{COLUMNS}\n");
    for ((kernel, class), split) in launches.sides(at) {
        let Split {
            launches,
            trip_counts,
            auto,
            learned,
        } = split;
        let trips: Vec<String> = trip_counts.iter().map(u64::to_string).collect();
        let _ = write!(
            csv,
            "{},{class},{},{launches}",
            field(&kernel),
            trips.join(" ")
        );
        for side in [auto, learned] {
            csv.push(',');
            csv.push_str(&side_columns(side.as_ref()));
        }
        csv.push('\n');
    }
    Ok((csv, bad_rows))
}

/// A side's five columns.
fn side_columns(side: Option<&SideLaunches>) -> String {
    let Some(s) = side else {
        return ",,,,".to_string();
    };
    let grids: Vec<String> = s.grids.iter().map(|(g, _)| grid_label(*g)).collect();
    format!(
        "{},{},{},{},{}",
        s.on_side,
        grids.join(" "),
        s.launched.median_ns,
        s.launched.median_sum_ns(),
        s.sum_ns
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsel_host::profile::HEADER;

    /// A profile of a time-stepping run alternating at `at`: 5 steps of
    /// `step` (trip count 4096; learned 264x128 at 70 µs, auto's 32x128 at
    /// 100 µs, the cold first 900 µs) and of `flux` (auto's grid throughout,
    /// 31 µs after a learned `step`, else 30); `init` once.
    fn profile(dir: &Path, at: LearnedLaunches) -> PathBuf {
        let mut text = format!("{HEADER}\nk_init,100,auto,1,128,5000\n");
        for j in 0..5u64 {
            let learned = at.learned_at(j);
            let (policy, blocks, ns) = match j {
                0 => ("auto", 32, 900_000),
                _ if learned => ("learned", 264, 70_000),
                _ => ("auto", 32, 100_000),
            };
            let flux = if learned { 31_000 } else { 30_000 };
            text += &format!("k_step,4096,{policy},{blocks},128,{ns}\n");
            text += &format!("k_flux,4096,auto,32,128,{flux}\n");
        }
        text += "k_flux,4096,au\n";
        let path = dir.join(format!("{}.csv", at.name()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_profile_splits_per_search_into_its_sides_without_the_cold_launch() {
        let dir = std::env::temp_dir().join(format!("gridsel-sides-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (odd, bad_rows) =
            sides(&profile(&dir, LearnedLaunches::Odd), LearnedLaunches::Odd).unwrap();
        assert_eq!(bad_rows, 1);
        let rows: Vec<&str> = odd.lines().collect();
        assert_eq!(rows[0], COLUMNS);
        // Learned at launches 1 and 3, auto's at 2 and 4; each side's
        // search weighs as the run's 5 launches.
        assert_eq!(
            rows[1..],
            [
                "k_flux,25,4096,5,2,32x128,30000,150000,150000,2,32x128,31000,155000,155000",
                "k_init,14,100,1,,,,,,,,,,",
                "k_step,25,4096,5,2,32x128,100000,500000,500000,2,264x128,70000,350000,350000",
            ]
        );
        // Even: learned at 2 and 4; the same run's times the other way round.
        let (even, _) =
            sides(&profile(&dir, LearnedLaunches::Even), LearnedLaunches::Even).unwrap();
        assert!(
            even.contains("k_step,25,4096,5,2,32x128,100000,500000,500000,2,264x128,70000"),
            "{even}"
        );
        // Split by the other parity, the sides swap.
        let (crossed, _) =
            sides(&profile(&dir, LearnedLaunches::Odd), LearnedLaunches::Even).unwrap();
        assert!(
            crossed.contains("k_step,25,4096,5,2,264x128,70000,350000,350000,2,32x128,100000"),
            "{crossed}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
