//! What gridsel may change in a launch, and how a chosen grid is expressed.
//!
//! The rules (docs/abi.md §5): only an open launch (num_teams 0 and
//! thread_limit 0) is changed. `target` (-1 teams) and `target parallel*`
//! (1 team) are never touched, since extra teams would run the whole region
//! again, nor is thread_limit 1 (simd forms). User clauses are kept unless
//! `GRIDSEL_OVERRIDE_CLAUSES=1` asks otherwise.
//!
//! A `target teams` region without a `distribute` loop on the construct
//! (trip count 0 at the launch: team-level code around an inner `distribute
//! parallel for`, or none at all) is kept too, unless
//! `GRIDSEL_TEAMS_REGIONS=change` says the program's results do not depend
//! on its number of teams. Each team runs the region's team-level code, so
//! the number of teams can show in the results (a counter bumped per team,
//! an array indexed by `omp_get_team_num()`); OpenMP leaves it to the
//! implementation without a `num_teams` clause, but gridsel promises never
//! to change what a program computes, so only the user can say. Opened, such
//! a launch is changed only by the policies that need no trip count: a fixed
//! grid, the sweep, and `tune`'s measurements; the others keep LLVM's grid
//! ([`crate::policy::Rule::NoTripCount`]): with no trip count there is
//! nothing for a rule to size the grid by.

use crate::device::DeviceDesc;
use crate::env::{ENV_OVERRIDE_CLAUSES, ENV_TEAMS_REGIONS};
use crate::geometry::{Geometry, LaunchDesc};
use crate::kernel::{ExecMode, KernelDesc};
use std::fmt;
use std::str::FromStr;

/// Why a launch is forwarded unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keep {
    /// `target` without teams: the runtime runs one team.
    SingleTeamRegion,
    /// `target parallel*`: exactly one team by construction.
    OneTeam,
    /// `thread_limit(1)` or a simd form.
    OneThread,
    /// The program fixed the grid with a clause.
    UserClause,
    /// No `distribute` loop on the construct: every team runs the region's
    /// team-level code (`GRIDSEL_TEAMS_REGIONS=change` opens it).
    NoTripCount,
    /// The kernel environment names an execution mode other than Generic,
    /// SPMD and Generic-SPMD: bare kernels (0), whose grid is the program's,
    /// and LLVM 22's SPMD-No-Loop kernels (6), which run one iteration per
    /// thread with no loop around it, so that a smaller grid would skip
    /// iterations.
    UnknownExecMode(u8),
}

impl Keep {
    /// Whether the user can lift this rule with an opt-in (a clause, a
    /// region without a loop): such keeps are worth an info line, the
    /// others only a debug one.
    pub fn has_opt_in(self) -> bool {
        matches!(self, Self::UserClause | Self::NoTripCount)
    }
}

impl fmt::Display for Keep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::SingleTeamRegion => "`target` region (runtime uses one team)",
            Self::OneTeam => "`target parallel` region (one team)",
            Self::OneThread => "thread_limit(1) or simd",
            Self::UserClause => {
                return write!(
                    f,
                    "num_teams/thread_limit clause ({ENV_OVERRIDE_CLAUSES}=1 to override)"
                );
            }
            Self::NoTripCount => {
                return write!(
                    f,
                    "no trip count: no distribute loop on the construct, so each team runs the region's team-level code ({ENV_TEAMS_REGIONS}=change if the results do not depend on the number of teams)"
                );
            }
            Self::UnknownExecMode(mode) => {
                return write!(
                    f,
                    "execution mode {mode} is not Generic, SPMD or Generic-SPMD; such kernels may depend on their grid"
                );
            }
        })
    }
}

/// What `GRIDSEL_TEAMS_REGIONS` says of `target teams` regions without a
/// `distribute` loop on the construct (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TeamsRegions {
    /// Their number of teams may show in the results: kept as given.
    #[default]
    Keep,
    /// The user asserts that the program's results do not depend on it.
    Change,
}

impl FromStr for TeamsRegions {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "keep" => Ok(Self::Keep),
            "change" => Ok(Self::Change),
            _ => Err(format!(
                "`{}` is not keep or change",
                crate::text::shown(text)
            )),
        }
    }
}

impl fmt::Display for TeamsRegions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Keep => "keep",
            Self::Change => "change",
        })
    }
}

/// What the user allows beyond open launches with a `distribute` loop:
/// assertions about the program that gridsel cannot check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptIn {
    /// `GRIDSEL_OVERRIDE_CLAUSES=1`: `num_teams`/`thread_limit` clauses may
    /// be replaced.
    pub override_clauses: bool,
    /// `GRIDSEL_TEAMS_REGIONS`.
    pub teams_regions: TeamsRegions,
}

/// Whether gridsel may choose this launch's grid.
pub fn may_change(launch: &LaunchDesc, opt_in: OptIn) -> Result<(), Keep> {
    match (launch.num_teams, launch.thread_limit) {
        (n, _) if n < 0 => Err(Keep::SingleTeamRegion),
        (1, _) => Err(Keep::OneTeam),
        (_, 1) => Err(Keep::OneThread),
        (n, t) if (n != 0 || t != 0) && !opt_in.override_clauses => Err(Keep::UserClause),
        _ if launch.trip_count == 0 && opt_in.teams_regions == TeamsRegions::Keep => {
            Err(Keep::NoTripCount)
        }
        _ => Ok(()),
    }
}

/// Whether gridsel may choose any grid for this kernel: not when its kernel
/// environment names an execution mode gridsel does not know
/// ([`Keep::UnknownExecMode`]). Kernels without an environment (host images,
/// older compilers) are judged by their launches alone.
pub fn may_change_kernel(kernel: &KernelDesc) -> Result<(), Keep> {
    match kernel.environment {
        Some(env) if ExecMode::from_raw(env.exec_mode).is_none() => {
            Err(Keep::UnknownExecMode(env.exec_mode))
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_of_an_unknown_execution_mode_are_kept() {
        use crate::kernel::KernelEnvironment;
        let with_mode = |exec_mode| KernelDesc {
            environment: Some(KernelEnvironment {
                exec_mode,
                ..KernelEnvironment::default()
            }),
            ..KernelDesc::named("k")
        };
        for known in [1, 2, 3] {
            assert_eq!(may_change_kernel(&with_mode(known)), Ok(()));
        }
        // 0: bare; 6: LLVM 22's SPMD-No-Loop; 8: a mode yet to come.
        for unknown in [0, 6, 8] {
            assert_eq!(
                may_change_kernel(&with_mode(unknown)),
                Err(Keep::UnknownExecMode(unknown))
            );
        }
        assert_eq!(may_change_kernel(&KernelDesc::named("host")), Ok(()));
    }

    fn launch(num_teams: i32, thread_limit: i32, trip_count: u64) -> LaunchDesc {
        LaunchDesc {
            num_teams,
            thread_limit,
            ..LaunchDesc::open(trip_count)
        }
    }

    const NONE: OptIn = OptIn {
        override_clauses: false,
        teams_regions: TeamsRegions::Keep,
    };
    const CLAUSES: OptIn = OptIn {
        override_clauses: true,
        ..NONE
    };
    const TEAMS: OptIn = OptIn {
        teams_regions: TeamsRegions::Change,
        ..NONE
    };

    #[test]
    fn only_open_launches_with_a_loop_are_changed() {
        assert_eq!(OptIn::default(), NONE);
        assert_eq!(may_change(&launch(0, 0, 100), NONE), Ok(()));
        assert_eq!(
            may_change(&launch(-1, 0, 0), NONE),
            Err(Keep::SingleTeamRegion)
        );
        assert_eq!(may_change(&launch(1, 0, 100), NONE), Err(Keep::OneTeam));
        assert_eq!(may_change(&launch(0, 1, 100), NONE), Err(Keep::OneThread));
        assert_eq!(may_change(&launch(8, 0, 100), NONE), Err(Keep::UserClause));
        assert_eq!(may_change(&launch(0, 64, 100), NONE), Err(Keep::UserClause));
        assert_eq!(may_change(&launch(0, 0, 0), NONE), Err(Keep::NoTripCount));
    }

    #[test]
    fn override_opens_clauses_but_never_single_team_regions() {
        assert_eq!(may_change(&launch(8, 64, 100), CLAUSES), Ok(()));
        assert_eq!(
            may_change(&launch(-1, 0, 0), CLAUSES),
            Err(Keep::SingleTeamRegion)
        );
        assert_eq!(may_change(&launch(1, 64, 100), CLAUSES), Err(Keep::OneTeam));
        assert_eq!(
            may_change(&launch(8, 1, 100), CLAUSES),
            Err(Keep::OneThread)
        );
        // Clauses opened, a region without a loop is still kept.
        assert_eq!(
            may_change(&launch(8, 0, 0), CLAUSES),
            Err(Keep::NoTripCount)
        );
    }

    #[test]
    fn teams_regions_open_only_launches_without_a_loop() {
        assert_eq!(may_change(&launch(0, 0, 0), TEAMS), Ok(()));
        assert_eq!(may_change(&launch(0, 0, 100), TEAMS), Ok(()));
        // The rules before it are unchanged: `target`, `target parallel`,
        // thread_limit(1) and clauses.
        assert_eq!(
            may_change(&launch(-1, 0, 0), TEAMS),
            Err(Keep::SingleTeamRegion)
        );
        assert_eq!(may_change(&launch(1, 0, 0), TEAMS), Err(Keep::OneTeam));
        assert_eq!(may_change(&launch(0, 1, 0), TEAMS), Err(Keep::OneThread));
        assert_eq!(may_change(&launch(8, 0, 0), TEAMS), Err(Keep::UserClause));
        assert_eq!(may_change(&launch(0, 64, 0), TEAMS), Err(Keep::UserClause));
        // Both opt-ins: a clause on a region without a loop may go too.
        let both = OptIn {
            override_clauses: true,
            ..TEAMS
        };
        assert_eq!(may_change(&launch(8, 64, 0), both), Ok(()));
        assert_eq!(
            may_change(&launch(-1, 0, 0), both),
            Err(Keep::SingleTeamRegion)
        );
    }

    #[test]
    fn teams_regions_parse_and_print_back() {
        for v in [TeamsRegions::Keep, TeamsRegions::Change] {
            assert_eq!(v.to_string().parse::<TeamsRegions>(), Ok(v));
        }
        assert_eq!(" change ".parse::<TeamsRegions>(), Ok(TeamsRegions::Change));
        for bad in ["", "Change", "1", "yes", "keep,change"] {
            assert!(bad.parse::<TeamsRegions>().is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_rules_a_user_can_lift_are_worth_an_info_line() {
        assert!(Keep::UserClause.has_opt_in() && Keep::NoTripCount.has_opt_in());
        for k in [Keep::SingleTeamRegion, Keep::OneTeam, Keep::OneThread] {
            assert!(!k.has_opt_in(), "{k:?}");
        }
        assert!(
            Keep::NoTripCount
                .to_string()
                .contains("GRIDSEL_TEAMS_REGIONS=change")
        );
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
