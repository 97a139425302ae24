//! Grid-selection policies: pure functions of (device, kernel, launch).
//!
//! Every policy answers with a [`Decision`]: the grid, the loop class it saw,
//! and the [`Rule`] that fired, so the log can say why without formatting
//! strings on the launch path. Every grid is then cut to the launch's
//! [`Limits`], one place for every policy: what the compiled kernel, the
//! device and the device runtime's heap allow.

pub mod chunked;
pub mod forest;
pub mod limits;
pub mod lloyd;
pub mod llvm;
pub mod occupancy;
pub mod per_launch;
pub mod sweep;

use crate::device::{DeviceDesc, MAX_BLOCKS, MAX_THREADS_PER_BLOCK};
use crate::geometry::{Geometry, LaunchDesc, LoopClass};
use crate::kernel::KernelDesc;
use crate::libomptarget::{LlvmRelease, LlvmRule};
pub use limits::Limits;
use std::fmt;
use std::str::FromStr;

/// The policy named by `GRIDSEL_POLICY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Forward untouched: LLVM's own choice.
    Llvm,
    /// Lloyd et al. 2018, Fig. 7, as published.
    Lloyd,
    /// The default: the grid a tuning session learned for the launch where a
    /// store holds one ([`crate::tune::LearnedPolicy`]), else its static rule,
    /// the chunk-aware grid from measurements on the device ([`chunked`]).
    Auto,
    /// Maximum theoretical occupancy ([`occupancy`]).
    Occupancy,
    /// The same grid for every launch (`fixed:T,B`), for sweeps.
    Fixed(Geometry),
    /// Cycle through the sweep space launch by launch: the benchmark
    /// harness's research policy, only in a library built with the `sweep`
    /// feature.
    #[cfg(feature = "sweep")]
    Sweep,
    /// Measure candidate grids on the first launches, then keep the fastest
    /// ([`crate::tune`]).
    Tune,
    /// Least predicted time under a random forest ([`forest`], [`crate::forest_model`]).
    Forest,
}

/// The policy names `GRIDSEL_POLICY` accepts, for error messages and `--help`.
#[cfg(not(feature = "sweep"))]
pub const POLICY_NAMES: &str = "auto, llvm, lloyd, occupancy, fixed:T,B, tune, forest";
/// The policy names `GRIDSEL_POLICY` accepts, for error messages and
/// `--help`; with `sweep`, the benchmark harness's.
#[cfg(feature = "sweep")]
pub const POLICY_NAMES: &str = "auto, llvm, lloyd, occupancy, fixed:T,B, sweep, tune, forest";

/// The default: `auto` beat both `llvm` and `lloyd` on the H100 suite
/// (bench/results/h100/report.md).
pub const DEFAULT_POLICY: Policy = Policy::Auto;

impl FromStr for Policy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Some(spec) = text.strip_prefix("fixed:") {
            let parsed = spec.split_once(',').and_then(|(t, b)| {
                Some((t.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?))
            });
            // A grid no GPU can launch is refused here, with the policy's
            // one error line, rather than cut down at every launch unsaid;
            // what one kernel cannot launch is cut at its launches.
            return match parsed {
                Some((t, b))
                    if (1..=MAX_THREADS_PER_BLOCK).contains(&t)
                        && (1..=MAX_BLOCKS).contains(&b) =>
                {
                    Ok(Self::Fixed(Geometry::new(t, b)))
                }
                _ => Err(format!(
                    "`{}`: fixed:T,B needs 1..={MAX_THREADS_PER_BLOCK} threads per block and 1..={MAX_BLOCKS} blocks, as in fixed:128,264",
                    crate::text::shown(text)
                )),
            };
        }
        match text {
            "llvm" => Ok(Self::Llvm),
            "lloyd" => Ok(Self::Lloyd),
            "auto" => Ok(Self::Auto),
            "occupancy" => Ok(Self::Occupancy),
            #[cfg(feature = "sweep")]
            "sweep" => Ok(Self::Sweep),
            "tune" => Ok(Self::Tune),
            "forest" => Ok(Self::Forest),
            _ => Err(format!(
                "unknown policy `{}`; valid: {POLICY_NAMES}",
                crate::text::shown(text)
            )),
        }
    }
}

impl fmt::Display for Policy {
    /// Honours width and alignment (`{:<8}`), so policies line up in tables.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fixed;
        f.pad(match self {
            Self::Llvm => "llvm",
            Self::Lloyd => "lloyd",
            Self::Auto => "auto",
            Self::Occupancy => "occupancy",
            Self::Fixed(g) => {
                fixed = format!("fixed:{},{}", g.threads, g.blocks);
                &fixed
            }
            #[cfg(feature = "sweep")]
            Self::Sweep => "sweep",
            Self::Tune => "tune",
            Self::Forest => "forest",
        })
    }
}

/// Which rule of a policy produced a grid.
///
/// Its text ([`fmt::Display`]) is what the info log and `gridsel select` say
/// of a decision: what the rule does, in terms a user of the program knows.
/// Why each rule exists, with the measurement behind it, is in the variants'
/// documentation here and in docs/policies.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The launch keeps LLVM's own grid, by this release's rule.
    LlvmDefault(LlvmRule),
    /// Lloyd et al. 2018, Fig. 7, a loop of at most one iteration per SM:
    /// one single-thread block per iteration.
    LloydShort,
    /// Fig. 7, a loop the device holds at once: ThreadsPerBlock threads,
    /// one per iteration.
    LloydIdeal,
    /// Fig. 7, a longer loop: as many blocks as the device holds at once.
    LloydLong,
    /// `auto`'s static rule ([`chunked`]), rules 1-2: blocks the width of
    /// the `distribute` chunk, one per chunk. LLVM 19's 32-thread blocks run a 128-iteration
    /// chunk serially; 128-thread blocks were 1.5-3.3x faster on those
    /// loops on the H100 (bench/results/h100/NOTES.md §2).
    AutoOneTeamPerChunk,
    /// [`chunked`] rule 3: a long loop's blocks capped at `max(waves x resident
    /// blocks, 3200)`. One wave (the paper's rule) made stencils 10-24 %
    /// faster but load-imbalanced kernels up to 30 % slower
    /// (bench/results/h100/NOTES.md §2); `waves` is calibrated.
    AutoResidentWaves,
    /// [`chunked`] rule 4: Generic and Generic-SPMD kernels keep LLVM's grid; no
    /// grid of the H100 sweep beat it beyond the noise on such kernels
    /// (bench/results/h100/NOTES.md §2).
    AutoKeepsLlvm,
    /// [`chunked`] rule 5: a kernel that may nest parallel regions (or whose
    /// image cannot tell) keeps LLVM's grid: more threads need device heap,
    /// can exhaust it, and ran 2-20x slower on the H100 where it sufficed
    /// (bench/results/h100/NOTES.md §9).
    AutoNestingKeepsLlvm,
    /// [`chunked`] rules 6 and 7: cross-team reductions get one wave of blocks,
    /// of 32 threads from 2^23 iterations (1.65x over LLVM's grid on the
    /// H100's reduction programs), of the chunk's 128 from 2^20 (1.12x live),
    /// both chosen leave-one-program-out (bench/results/h100/auto-patterns.md).
    AutoReductionWave,
    /// [`chunked`] rule 8: loops of 2^25 iterations or more without a cross-team
    /// reduction get two waves of 64-thread blocks; chosen
    /// leave-one-program-out (37 of 39 folds) and 1.15x over LLVM's grid
    /// live over 26 launches, none slower beyond the noise
    /// (bench/results/h100/NOTES.md §31, §32).
    AutoLongLoopWaves,
    /// A launch without a trip count keeps LLVM's grid under the static
    /// policies, which all size the grid by the trip count.
    NoTripCount,
    Occupancy,
    Fixed,
    SweepPoint,
    TuneTrial,
    TuneRecheck,
    TuneWinner,
    /// `tune`'s leader where its search has measured no other grid yet.
    TuneOnlyMeasured,
    /// The grid a tuning session settled on for this kernel, build, device
    /// and trip-count class, read from the store under the default policy
    /// ([`crate::tune::LearnedPolicy`]).
    Learned,
    Forest,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::LlvmDefault(rule) => return write!(f, "{rule}"),
            Self::LloydShort => {
                "a short loop (at most one iteration per SM) gets one 1-thread block per iteration"
            }
            Self::LloydIdeal => {
                "a loop the GPU holds at once gets blocks of ThreadsPerBlock threads, one thread per iteration"
            }
            Self::LloydLong => {
                "a loop longer than the GPU holds at once gets as many blocks as it holds"
            }
            Self::AutoOneTeamPerChunk => {
                "one block per chunk of iterations that OpenMP hands a team, as wide as the chunk"
            }
            Self::AutoResidentWaves => {
                "a long loop's blocks are capped at a few waves of the blocks the GPU holds at once (at least LLVM's 3200), leaving the hardware to balance the load"
            }
            Self::AutoKeepsLlvm => {
                "a Generic or Generic-SPMD kernel (code between `teams` and `parallel`) keeps LLVM's grid, which no other grid beat on such kernels"
            }
            Self::AutoNestingKeepsLlvm => {
                "a kernel that may nest parallel regions (or whose image cannot tell) keeps LLVM's grid, since more threads need device heap and run slower"
            }
            Self::AutoReductionWave => {
                "a loop with a cross-team reduction gets one wave of the blocks the GPU holds at once (of 32 threads from 8 M iterations), so fewer partial results are combined"
            }
            Self::AutoLongLoopWaves => {
                "a long loop (32 M iterations or more) gets two waves of 64-thread blocks, as many as the GPU holds at once twice over"
            }
            Self::NoTripCount => {
                "no trip count (a `target teams` region without a distribute loop): LLVM's grid, since no rule can size it (`tune` measures, `fixed:T,B` sets one)"
            }
            Self::Occupancy => "block size of maximum occupancy, one wave of blocks",
            Self::Fixed => "fixed grid",
            Self::SweepPoint => "sweep point",
            Self::TuneTrial => "a trial: tune measures candidate grids on the first launches",
            Self::TuneRecheck => "the runner-up, re-checked after online tuning settled",
            Self::TuneWinner => "the fastest grid tune measured",
            Self::TuneOnlyMeasured => "the only grid tune has measured for this kernel",
            Self::Learned => {
                "learned: the fastest grid tuning measured for this build of the kernel on this GPU, read from the store"
            }
            Self::Forest => "least predicted time under the random forest",
        })
    }
}

/// A policy's answer for one launch, cut to the launch's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub geometry: Geometry,
    pub class: LoopClass,
    pub rule: Rule,
    /// The grid was cut down to the launch's limits.
    pub clamped: bool,
}

impl Decision {
    /// `grid`, chosen by `rule`, cut to `limits`, with the loop class the
    /// log and the CLI show (the launch pipeline cuts with `limits` alone).
    pub fn within(
        grid: Geometry,
        rule: Rule,
        limits: &Limits,
        device: &DeviceDesc,
        kernel: &KernelDesc,
        launch: &LaunchDesc,
    ) -> Self {
        let (geometry, clamped) = limits.clamp(grid);
        Self {
            geometry,
            class: lloyd::classify(device, kernel, launch.trip_count),
            rule,
            clamped,
        }
    }
}

/// One launch as a policy sees it.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// The kernel's registration serial, unique in the process: the key of
    /// what a policy learns about it.
    pub kernel_serial: u64,
    /// The kernel's device symbol.
    pub kernel_name: &'a str,
    pub kernel: &'a KernelDesc,
    pub device_id: i64,
    pub device: &'a DeviceDesc,
    pub desc: LaunchDesc,
    /// The call returns only after the kernel (not `nowait`), so its wall
    /// time measures the kernel.
    pub timed: bool,
}

/// What a policy proposes for a launch; the pipeline cuts it to the
/// launch's limits ([`Decision::within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub grid: Geometry,
    pub rule: Rule,
    /// Whether to time this launch for [`GridPolicy::observe`], and how
    /// soon the time is wanted.
    pub observe: Observe,
    /// The profile's label for this launch when it is not the policy's name
    /// (the sweep labels each point with the policy it reproduces).
    pub label: Option<&'static str>,
    /// Cut only to the compiled kernel's and the device's limits
    /// (`GRIDSEL_SAFE_RANGE=off` with `fixed:T,B`).
    pub beyond_safe_range: bool,
}

/// Whether a launch is timed for the policy that proposed it, and how soon
/// its time must come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observe {
    /// Not timed for the policy.
    No,
    /// Before the kernel's next launch is decided: the time decides it (a
    /// search's trial). On the GPU clock this costs a flush of CUPTI's
    /// records, about 0.26 ms.
    Now,
    /// With the clock's next batch: the time adds to what the policy knows
    /// but decides no launch soon (a settled search's sample, a held-back
    /// launch once its leader has a yardstick). Comes before the process
    /// has launched [`MAX_LATE_LAUNCHES`] more kernels, timed or not, or
    /// with the next timed launch after 50 ms, so that a policy can keep
    /// what it needs to match it.
    Later,
}

impl Observe {
    /// The launch is timed for the policy.
    pub fn timed(self) -> bool {
        self != Self::No
    }
}

/// How many launches of the process an [`Observe::Later`] time may come
/// after its own, at most: the GPU clock times the launches waiting for
/// their records once this many launches came after the oldest.
pub const MAX_LATE_LAUNCHES: usize = 256;

impl Proposal {
    pub fn new(grid: Geometry, rule: Rule) -> Self {
        Self {
            grid,
            rule,
            observe: Observe::No,
            label: None,
            beyond_safe_range: false,
        }
    }
}

/// A policy as the launch pipeline runs it: it decides each open launch and,
/// where it learns, observes the launches it asked to time, owning whatever
/// state that takes. The pipeline applies the clause rules before and the
/// launch's limits after (the preload library's launch pipeline); adding a policy is a type
/// implementing this plus its [`Policy`] name.
pub trait GridPolicy: Send + Sync {
    /// A binary with these `kernels` was registered with the libomptarget
    /// of release `llvm_release`, the one its launches will go to (at
    /// program start, off the launch path): work that a first launch would
    /// otherwise wait for.
    fn prepare(&self, _kernels: &[&KernelDesc], _llvm_release: LlvmRelease) {}

    /// The grid for an open launch; `None` keeps LLVM's.
    fn decide(&self, launch: &Launch<'_>) -> Option<Proposal>;

    /// Whether it holds a grid verified for this launch of a `target
    /// teams` region without a distribute loop, which gridsel otherwise
    /// keeps as given under `GRIDSEL_TEAMS_REGIONS=keep`: one a tuning
    /// session verified for the program's build (`Record::verified`).
    fn verified(&self, _launch: &Launch<'_>) -> bool {
        false
    }

    /// The wall time of a launch whose proposal asked for it, `u64::MAX`
    /// when the launch failed.
    fn observe(&self, _launch: &Launch<'_>, _grid: Geometry, _ns: u64) {}

    /// The process ends: keep what was learned.
    fn flush(&self) {}
}

/// The policies that decide from the launch alone.
pub struct Stateless(pub Policy);

impl GridPolicy for Stateless {
    fn decide(&self, launch: &Launch<'_>) -> Option<Proposal> {
        let (grid, rule) = stateless_grid(&self.0, launch.device, launch.kernel, &launch.desc)?;
        Some(Proposal::new(grid, rule))
    }
}

/// `fixed:T,B` allowed out of the launch's safe range
/// (`GRIDSEL_SAFE_RANGE=off`): the one way to launch a grid that may fail,
/// for measuring that range itself.
pub struct FixedBeyondSafeRange(pub Geometry);

impl GridPolicy for FixedBeyondSafeRange {
    fn decide(&self, _launch: &Launch<'_>) -> Option<Proposal> {
        Some(Proposal {
            beyond_safe_range: true,
            ..Proposal::new(self.0, Rule::Fixed)
        })
    }
}

/// A stateless policy's grid before the launch's limits; `None` for `llvm`
/// (LLVM's own grid, left as it is) and for the policies that learn.
fn stateless_grid(
    policy: &Policy,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> Option<(Geometry, Rule)> {
    Some(match policy {
        Policy::Llvm | Policy::Tune => return None,
        #[cfg(feature = "sweep")]
        Policy::Sweep => return None,
        // `chunked` and `forest` keep it themselves, since `tune` and
        // `ForestPolicy` call them directly.
        Policy::Lloyd | Policy::Occupancy if launch.trip_count == 0 => {
            llvm_without_trip_count(device, kernel, launch)
        }
        Policy::Lloyd => lloyd::lloyd(device, kernel, launch.trip_count),
        // `auto` from the launch alone is its static rule; where a store is
        // read, the preload library runs `tune::LearnedPolicy` instead.
        Policy::Auto => chunked::grid(device, kernel, launch),
        Policy::Occupancy => occupancy::occupancy(device, kernel, launch.trip_count),
        Policy::Fixed(g) => (*g, Rule::Fixed),
        Policy::Forest => forest::with_embedded_model(device, kernel, launch),
    })
}

/// LLVM's grid, and the rule that keeps it, for a launch without a trip
/// count: a `target teams` region without a distribute loop, which reaches
/// a policy only under `GRIDSEL_TEAMS_REGIONS=change`
/// ([`crate::clauses::may_change`]). Every static rule sizes the grid by the
/// trip count, so those policies keep LLVM's; a fixed grid, the sweep and
/// `tune`'s measurements are what change it.
pub fn llvm_without_trip_count(
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> (Geometry, Rule) {
    (llvm::grid(device, kernel, launch), Rule::NoTripCount)
}

/// The decision of a policy that needs no launch history (all but `tune`,
/// and the harness's `sweep`: `None`), for the CLI, the C API and the policies that start
/// from others' grids. `llvm` gives LLVM's grid; `forest` uses the embedded
/// model.
pub fn decide(
    policy: &Policy,
    device: &DeviceDesc,
    kernel: &KernelDesc,
    launch: &LaunchDesc,
) -> Option<Decision> {
    let (grid, rule) = match policy {
        Policy::Llvm => (
            llvm::grid(device, kernel, launch),
            Rule::LlvmDefault(launch.llvm_release.rule()),
        ),
        other => stateless_grid(other, device, kernel, launch)?,
    };
    let limits = Limits::of(device, kernel, launch);
    Some(Decision::within(
        grid, rule, &limits, device, kernel, launch,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ExecMode;

    fn h100() -> DeviceDesc {
        DeviceDesc::preset("h100").unwrap()
    }

    #[test]
    fn parses_every_policy_and_prints_it_back() {
        for text in POLICY_NAMES.split(", ") {
            let text = text.replace("T,B", "128,264");
            assert_eq!(text.parse::<Policy>().unwrap().to_string(), text);
        }
        assert_eq!(
            " fixed: 32 , 7 ".parse::<Policy>().unwrap(),
            Policy::Fixed(Geometry::new(32, 7))
        );
    }

    #[test]
    fn display_pads_to_the_requested_width() {
        assert_eq!(format!("[{:<8}]", Policy::Auto), "[auto    ]");
        assert_eq!(format!("[{:>6}]", Policy::Llvm), "[  llvm]");
        let fixed = Policy::Fixed(Geometry::new(128, 2));
        assert_eq!(format!("[{fixed:<14}]"), "[fixed:128,2   ]");
        // Wider than the width: printed whole.
        assert_eq!(format!("[{:<4}]", Policy::Occupancy), "[occupancy]");
    }

    #[test]
    fn rejects_malformed_policies_naming_the_choices() {
        for bad in [
            "",
            "LLOYD",
            "fast",
            "fixed:",
            "fixed:0,1",
            "fixed:1,0",
            "fixed:1",
            "fixed:a,b",
            "fixed:-1,2",
            "fixed:99999,1",
            "fixed:1025,1",
            "fixed:1024,2147483648",
        ] {
            let err = bad.parse::<Policy>().unwrap_err();
            assert!(err.contains("fixed"), "{bad}: {err}");
        }
    }

    #[test]
    fn fixed_is_clamped_to_the_kernel() {
        let k = KernelDesc {
            local_mem: Some(0),
            max_threads: Some(128),
            exec_mode: Some(ExecMode::Spmd),
            ..KernelDesc::named("k")
        };
        let d = decide(
            &Policy::Fixed(Geometry::new(256, 64)),
            &h100(),
            &k,
            &LaunchDesc::open(1000),
        )
        .unwrap();
        assert_eq!(d.geometry, Geometry::new(128, 64));
        assert!(d.clamped);
        assert_eq!(d.rule, Rule::Fixed);
    }

    #[test]
    fn static_policies_keep_llvms_grid_without_a_trip_count() {
        let d = h100();
        let l = LaunchDesc::open(0);
        for mode in [ExecMode::Spmd, ExecMode::GenericSpmd, ExecMode::Generic] {
            let k = KernelDesc {
                exec_mode: Some(mode),
                ..KernelDesc::spmd_for_tests(128)
            };
            let llvm = llvm::grid(&d, &k, &l);
            assert_eq!(llvm, Geometry::new(128, 3200));
            for p in [
                Policy::Lloyd,
                Policy::Auto,
                Policy::Occupancy,
                Policy::Forest,
            ] {
                let got = decide(&p, &d, &k, &l).unwrap();
                assert_eq!(
                    (got.geometry, got.rule, got.clamped),
                    (llvm, Rule::NoTripCount, false),
                    "{p} {mode:?}"
                );
                assert!(got.rule.to_string().starts_with("no trip count"));
            }
            // A fixed grid applies as for any launch, cut to the limits.
            let fixed = decide(&Policy::Fixed(Geometry::new(64, 528)), &d, &k, &l).unwrap();
            assert_eq!(
                (fixed.geometry, fixed.rule),
                (Geometry::new(64, 528), Rule::Fixed)
            );
        }
    }

    /// A user's library knows no `sweep`: the harness's research policy is
    /// built only into its own library (feature `sweep`).
    #[cfg(not(feature = "sweep"))]
    #[test]
    fn sweep_is_not_a_policy_of_a_users_library() {
        let err = "sweep".parse::<Policy>().unwrap_err();
        assert_eq!(
            err,
            "unknown policy `sweep`; valid: auto, llvm, lloyd, occupancy, fixed:T,B, tune, forest"
        );
    }

    #[cfg(feature = "sweep")]
    #[test]
    fn sweep_is_not_stateless() {
        assert_eq!(
            decide(
                &Policy::Sweep,
                &h100(),
                &KernelDesc::named("k"),
                &LaunchDesc::open(10)
            ),
            None
        );
    }
}
