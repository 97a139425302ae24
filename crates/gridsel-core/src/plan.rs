//! What gridsel may change in a launch, and how a chosen grid is expressed.
//!
//! The rules (docs/abi.md §5): only an open launch (num_teams 0 and
//! thread_limit 0) is changed. `target` (-1 teams) and `target parallel*`
//! (1 team) are never touched, since extra teams would run the whole region
//! again, nor is thread_limit 1 (simd forms). A region without a `distribute`
//! loop (trip count 0) is left alone too: each team runs it entirely, so the
//! number of teams is part of its meaning. User clauses are kept unless
//! `GRIDSEL_OVERRIDE_CLAUSES=1` asks otherwise.

use crate::device::DeviceDesc;
use crate::geometry::{Geometry, LaunchDesc};
use crate::kernel::{ExecMode, KernelDesc};
use crate::policy::Decision;
use std::fmt;

/// Why a launch is forwarded unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// `target` without teams: the runtime runs one team.
    SingleTeamRegion,
    /// `target parallel*`: exactly one team by construction.
    OneTeam,
    /// `thread_limit(1)` or a simd form.
    OneThread,
    /// The program fixed the grid with a clause.
    UserClause,
    /// No `distribute` loop: every team runs the whole region.
    NoTripCount,
}

impl fmt::Display for Keep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::SingleTeamRegion => "`target` region (runtime uses one team)",
            Self::OneTeam => "`target parallel` region (one team)",
            Self::OneThread => "thread_limit(1) or simd",
            Self::UserClause => {
                "num_teams/thread_limit clause (GRIDSEL_OVERRIDE_CLAUSES=1 to override)"
            }
            Self::NoTripCount => "no distribute loop (each team runs the whole region)",
        })
    }
}

/// Whether gridsel may choose this launch's grid.
pub fn may_change(launch: &LaunchDesc, override_clauses: bool) -> Result<(), Keep> {
    match (launch.num_teams, launch.thread_limit) {
        (n, _) if n < 0 => Err(Keep::SingleTeamRegion),
        (1, _) => Err(Keep::OneTeam),
        (_, 1) => Err(Keep::OneThread),
        (n, t) if (n != 0 || t != 0) && !override_clauses => Err(Keep::UserClause),
        _ if launch.trip_count == 0 => Err(Keep::NoTripCount),
        _ => Ok(()),
    }
}

/// The `(num_teams, thread_limit)` pair that makes libomptarget launch `g`.
///
/// Generic-mode kernels get a warp added to any thread limit by the runtime
/// (`getNumThreads`), so it is taken off here; [`crate::policy::Limits`] keeps
/// such grids above one warp.
pub fn request(g: Geometry, device: &DeviceDesc, kernel: &KernelDesc) -> (i32, i32) {
    let mut threads = g.threads;
    if kernel.exec_mode == Some(ExecMode::Generic) {
        threads = threads.saturating_sub(device.warp_size).max(1);
    }
    let to_i32 = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    (to_i32(g.blocks), to_i32(threads))
}

/// A decision together with what LLVM would have done, for logs and profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub decision: Decision,
    pub llvm: Geometry,
    pub num_teams: i32,
    pub thread_limit: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(num_teams: i32, thread_limit: i32, trip_count: u64) -> LaunchDesc {
        LaunchDesc {
            trip_count,
            num_teams,
            thread_limit,
        }
    }

    #[test]
    fn only_open_launches_with_a_loop_are_changed() {
        assert_eq!(may_change(&launch(0, 0, 100), false), Ok(()));
        assert_eq!(
            may_change(&launch(-1, 0, 0), false),
            Err(Keep::SingleTeamRegion)
        );
        assert_eq!(may_change(&launch(1, 0, 100), false), Err(Keep::OneTeam));
        assert_eq!(may_change(&launch(0, 1, 100), false), Err(Keep::OneThread));
        assert_eq!(may_change(&launch(8, 0, 100), false), Err(Keep::UserClause));
        assert_eq!(
            may_change(&launch(0, 64, 100), false),
            Err(Keep::UserClause)
        );
        assert_eq!(may_change(&launch(0, 0, 0), false), Err(Keep::NoTripCount));
    }

    #[test]
    fn override_opens_clauses_but_never_single_team_regions() {
        assert_eq!(may_change(&launch(8, 64, 100), true), Ok(()));
        assert_eq!(
            may_change(&launch(-1, 0, 0), true),
            Err(Keep::SingleTeamRegion)
        );
        assert_eq!(may_change(&launch(1, 64, 100), true), Err(Keep::OneTeam));
        assert_eq!(may_change(&launch(8, 1, 100), true), Err(Keep::OneThread));
    }

    #[test]
    fn generic_kernels_ask_for_one_warp_less() {
        let d = DeviceDesc::preset("h100").unwrap();
        let mut k = KernelDesc {
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::named("k")
        };
        assert_eq!(request(Geometry::new(128, 264), &d, &k), (264, 128));
        k.exec_mode = Some(ExecMode::Generic);
        assert_eq!(request(Geometry::new(128, 264), &d, &k), (264, 96));
        assert_eq!(request(Geometry::new(33, 1), &d, &k), (1, 1));
        assert_eq!(request(Geometry::new(1, u32::MAX), &d, &k), (i32::MAX, 1));
    }
}
