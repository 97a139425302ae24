//! The plan of a search: how many candidates it screens, how it halves
//! them and re-measures a close call, within how many exploring launches,
//! for each [`Kind`] of sample and each way of exploring ([`Exploring`]).

use super::{KEEP, Kind, SESSION_SIGNIFICANCE, SIGNIFICANCE};

/// The plan of one kind of search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Most exploring launches of this kind, over all runs.
    pub budget: u32,
    /// Most candidates measured (in the prior's order).
    pub candidates: usize,
    /// Samples added to each survivor per halving round.
    pub repeats: u32,
    /// A candidate whose median is more than this many times the leader's
    /// is dropped: it gets no more samples.
    pub drop: f64,
    /// The search stops early once the leader's median is this much (a
    /// fraction) below every other survivor's.
    pub clear: f64,
    /// The least run-to-run spread assumed (a relative median absolute
    /// deviation) while the samples cannot show it.
    pub spread_floor: f64,
    /// Whether LLVM's grid is among the candidates screened.
    pub screens_llvm: bool,
    /// Whether candidates that would starve the launch
    /// ([`Search::starving_from`](super::Search::starving_from)) are screened.
    pub screens_starving: bool,
    /// What the plan does, once screened and halved, with a candidate faster
    /// than the leader that the noise keeps from the lead.
    pub confirm: Confirm,
}

/// How a plan confirms a candidate faster than the leader by more than a
/// [`TIE`](super::TIE) that the noise still keeps from the lead, before it settles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Confirm {
    /// The faster candidate is measured again, up to `samples`.
    Faster { samples: usize },
    /// The faster candidate and the leader are measured in turn (the leader
    /// first when it has fewer samples), up to `samples` each. Between two
    /// candidates with that many samples each, a lead takes `significance`
    /// standard errors instead of [`SIGNIFICANCE`].
    Paired { samples: usize, significance: f64 },
}

impl Confirm {
    /// How many standard errors a candidate with `fast` samples must beat
    /// one with `slow` samples by to displace it.
    pub(super) fn significance(self, fast: usize, slow: usize) -> f64 {
        match self {
            Self::Paired {
                samples,
                significance,
            } if fast >= samples && slow >= samples => significance,
            _ => SIGNIFICANCE,
        }
    }

    /// The samples each candidate of the pair (or the faster one) gets.
    pub fn samples(self) -> usize {
        match self {
            Self::Faster { samples } | Self::Paired { samples, .. } => samples,
        }
    }
}

impl Params {
    /// One sample per run: four candidates (auto, then the next three of the
    /// prior: occupancy and moves), then the two best once more: settled
    /// after five or six launches, unless a faster one the noise holds back is
    /// confirmed in pairs with the leader (below), which takes up to the
    /// budget's eight exploring launches and four of `auto`'s, free.
    ///
    /// LLVM's grid is not screened here. It is in the plan to show that
    /// `auto`'s grid is not slower, but a cold launch cannot show that: on
    /// the H100 the same grid's cold launches varied by 16 % from run to
    /// run (max-min, median over cases; 56 % at p90), while the sweep
    /// found auto's grid at most 7-10 % slower than LLVM's, in 3 of 285
    /// cases. What the launch does show is the cost: on reductions LLVM's
    /// grid took 1.5-5.5x auto's time, 42 % of what exploring cost
    /// once-per-run kernels at the middle sizes. Replayed over the sweep
    /// (`gridsel tune-sim`), no cold search kept LLVM's grid.
    /// (bench/results/h100/NOTES.md §18.)
    ///
    /// Nor are grids that would starve the launch: fewer threads with work
    /// than `auto`'s grid while that is under one wave. Live on the H100,
    /// once per run at the middle sizes, they took 1.5-3.4x auto's time
    /// (matrix-vector products, where `auto` gives every row a thread and
    /// every other candidate starves) and cost more than all the exploring
    /// did: 105 % of a run's GPU time over runs 2-10, against 98.5 % in all.
    /// Replayed over the sweep through the measured cold noise, leaving them
    /// out keeps the same share of best. (bench/results/h100/NOTES.md §20.)
    ///
    /// A faster candidate the noise holds back is confirmed in pairs with
    /// the leader (`auto`'s grid, mostly, which costs nothing to launch),
    /// four samples each, and then leads at one standard error. At two, a
    /// cold search could not keep a grid 7-8 % faster than `auto`'s
    /// (jacobi2d, syrk in `learn/suite/mid5`): at the median cold noise that
    /// takes a dozen samples of each, a dozen runs more. Replayed over the
    /// sweep through the measured cold noise for 20 runs, the kept grid ends
    /// at 96.0 % of best instead of 95.0 %, and 1.1 % of the replays more
    /// than 3 % slower than `auto`'s grid instead of 1.0 %
    /// (bench/results/h100/NOTES.md §22).
    pub const COLD: Params = Params {
        budget: 8,
        candidates: 4,
        repeats: 1,
        drop: 1.5,
        clear: 0.10,
        spread_floor: 0.05,
        screens_llvm: false,
        screens_starving: false,
        confirm: Confirm::Paired {
            samples: 4,
            significance: 1.0,
        },
    };
    /// Dozens of samples per run: twelve candidates halved three times with
    /// two samples per survivor and round (34 launches), within 40.
    pub const WARM: Params = Params {
        budget: 40,
        candidates: 12,
        repeats: 2,
        drop: 1.5,
        clear: 0.10,
        spread_floor: 0.01,
        screens_llvm: true,
        screens_starving: true,
        confirm: Confirm::Faster { samples: 3 },
    };

    /// A warm search in a tuning session, where the user asked for
    /// exploring and no allowance bounds it ([`Exploring::Unbounded`]):
    /// thirty-two candidates, halved four times with two samples per
    /// survivor and round (the last round's two finalists to the
    /// [`KEEP`](super::KEEP) samples a candidate keeps), and a faster
    /// candidate the noise holds back is confirmed in pairs with the leader,
    /// so that a leader with one sample is measured before the search
    /// settles on it.
    ///
    /// Thirty-two, not sixteen: a session's prior of a loop holds a median
    /// of 21 candidates (up to 29 on the upstream mini-apps), and on the
    /// H100 the best grid of three upstream
    /// kernels was 21st or 22nd (PRK star2 32 x 65536, 1.36x over `auto`'s
    /// grid; PRK grid3 32 x 2112, 1.42x; LULESH l683 128 x 528, 1.23x),
    /// past sixteen's reach: the live sessions kept 1.24x, 1.26x and
    /// `auto`'s grid. Replayed over the live priors (`tune-sim
    /// --live-prior`, 20 launches per run), the kept grid ends at 98.6 %
    /// of best instead of 97.7 % on the upstream sweep and 97.4 % instead
    /// of 96.6 % on the suite's, losing it in no case; the plan takes up
    /// to 94 warm launches instead of 48 (bench/results/h100/NOTES.md §43).
    /// (Sixteen had replaced online `tune`'s twelve, which missed
    /// ts_ocean's 32-thread grids of whole waves, 13th and later: §30.)
    ///
    /// The confirm in pairs, from `gridsel tune` on ts_ocean on the H100
    /// (bench/results/h100/NOTES.md §30): `auto`'s grid, dropped after one
    /// slow warm sample (65 us against the others' 60-63), stayed the
    /// leader, since one sample cannot be beaten beyond the noise, while
    /// the plan went on measuring the faster one alone.
    ///
    /// Between two candidates with four samples each or more, a lead takes
    /// [`SESSION_SIGNIFICANCE`] standard errors, not two: at the 1 % spread
    /// floor and the [`KEEP`] samples a candidate keeps, two standard
    /// errors hold back any gain under 1.9 %, however many runs the
    /// session has, and on the H100 a session of PRK nstream kept `auto`'s
    /// grid against one 1.7 % faster over 8 samples to 6 (NOTES §52).
    pub const SESSION_WARM: Params = Params {
        budget: 128,
        candidates: 32,
        confirm: Confirm::Paired {
            samples: 4,
            significance: SESSION_SIGNIFICANCE,
        },
        ..Self::WARM
    };

    /// The most candidates a session's plan screens at fewer than two
    /// samples per survivor and round: sixteen, the most that three halving
    /// rounds of two samples bring to one within [`KEEP`](super::KEEP)
    /// samples. More take a fourth round, which at one repeat ranks on
    /// too few samples: below the 57 warm launches of seventeen at two
    /// repeats, a plan is what it was when sixteen was the most.
    const SESSION_ONE_REPEAT_MOST: usize = 16;

    /// [`Self::SESSION_WARM`] sized to the `warm_launches` a tuning session
    /// gives the search (its launches per run but the first, times the
    /// session's tuning runs): the most candidates, at most thirty-two
    /// (sixteen at one repeat: `SESSION_ONE_REPEAT_MOST`), and then
    /// the most repeats, at most two, whose screening, halving, re-measure
    /// of the leader and settling launch (`session_launches`) fit. Those
    /// assume the medians keep their order; noise that reorders them draws
    /// more survivors into a round, so the budget is what ends the plan in
    /// time whatever the samples: the exploring launches that fit besides
    /// `auto`'s own, which are free and at most `auto_samples`, and the
    /// launch that settles (at most thirty-two's 128).
    ///
    /// Thirty-two candidates at two repeats take up to 94 launches (32
    /// screened; 16, 8 and 4 survivors given two more each and the 2
    /// finalists one more, to the 8 samples kept: 58; the leader of one
    /// sample measured to four: 3; the launch that settles: 1), and
    /// `auto`'s grid up to 8 of them, so from 137 warm launches (a kernel
    /// launched 47 times or more per run, three runs) the plan is
    /// [`Self::SESSION_WARM`]. From 57 (seventeen at two repeats) to 94
    /// the candidates grow with the launches. Sixteen at two repeats take
    /// up to 48 (16 screened, 8, 4 and 2 survivors given two more each:
    /// 44; 3; 1), `auto`'s grid up to 7: at 48-56 warm launches the plan
    /// is sixteen's. At 40 (five runs of nine launches) it is sixteen at
    /// one repeat (30, 3 and 1), budget 35. At 12 (three runs of a kernel
    /// launched five times) it is four at one repeat: 4 screened, the two
    /// best once more (2), a re-measure of up to five launches (the leader
    /// from one sample to four, a finalist from two) and the launch that
    /// settles: 12; budget 7. Sixteen's whole plan there needed 50-64
    /// launches and was still exploring when the session ended
    /// (bench/results/h100/NOTES.md §33). Below 9 launches no plan fits:
    /// auto's grid and one other are screened, within a budget of what is
    /// left, at least one; a session leaves such a search's plan unsized
    /// instead ([`Exploring::in_session`]).
    pub fn session_warm(warm_launches: u32) -> Params {
        let most = Self::SESSION_WARM;
        let (candidates, repeats) = (2..=most.candidates)
            .rev()
            .flat_map(|c| (1..=most.repeats).rev().map(move |r| (c, r)))
            .filter(|&(c, r)| c <= Self::SESSION_ONE_REPEAT_MOST || r == most.repeats)
            .find(|&(c, r)| session_launches(c, r, most.confirm) <= warm_launches)
            .unwrap_or((2, 1));
        let auto = auto_samples(candidates, repeats, most.confirm);
        Params {
            budget: warm_launches.saturating_sub(auto + 1).clamp(1, most.budget),
            candidates,
            repeats,
            ..most
        }
    }

    /// The most launches this plan takes to settle, however the samples
    /// fall: its exploring budget, `auto`'s samples, which the budget does
    /// not count, and the launch that settles. [`Self::COLD`]'s 13 are a
    /// once-per-run kernel's tuning runs; [`Self::SESSION_WARM`]'s 137 are
    /// the warm launches from which [`Self::session_warm`] gives its whole
    /// plan (`gridsel tune` plans its runs from both).
    pub fn most_launches(self) -> u32 {
        self.budget + auto_samples(self.candidates, self.repeats, self.confirm) + 1
    }

    /// The online plan of `kind` (what a store's reader explains).
    pub fn of(kind: Kind) -> Params {
        Self::for_search(kind, Exploring::Bounded)
    }

    /// The plan of `kind` when exploring is `exploring`.
    pub fn for_search(kind: Kind, exploring: Exploring) -> Params {
        match (kind, exploring) {
            (Kind::Cold, _) => Self::COLD,
            (Kind::Warm, Exploring::Bounded) => Self::WARM,
            (
                Kind::Warm,
                Exploring::Unbounded {
                    warm_launches: None,
                },
            ) => Self::SESSION_WARM,
            (
                Kind::Warm,
                Exploring::Unbounded {
                    warm_launches: Some(w),
                },
            ) => Self::session_warm(w),
        }
    }
}

/// The samples each survivor of halving round `round` (from 1) is brought
/// to: `repeats` more per round, never more than the [`KEEP`] a candidate
/// keeps (a round that wanted more would never be met: the oldest sample
/// goes as each new one comes).
pub(super) fn round_target(repeats: u32, round: u32) -> u32 {
    (1 + repeats * round).min(KEEP as u32)
}

/// The samples the finalists of a plan of `candidates` halved with
/// `repeats` per round end with, and the launches its rounds give the
/// survivors, over all rounds, when the medians keep their order.
fn halving(candidates: usize, repeats: u32) -> (u32, u32) {
    let (mut survivors, mut round, mut launches, mut target) = (candidates, 0, 0, 1);
    while kept(survivors) > 1 {
        survivors = kept(survivors);
        round += 1;
        let next = round_target(repeats, round);
        launches += survivors as u32 * (next - target);
        target = next;
    }
    (target, launches)
}

/// The warm launches a plan of `candidates` screened and halved with
/// `repeats` samples per survivor and round takes at most to settle, when
/// none is dropped, no leader is clear early and the medians keep their
/// order: one launch per candidate screened, `repeats` per survivor of
/// each halving round, the re-measure `confirm` asks before settling (the
/// leader, which may have been dropped after its first sample, and the
/// fastest, a finalist, each brought to the confirm's samples), and one
/// more: the launch that finds the plan done marks the search settled, and
/// production reads only settled ones.
fn session_launches(candidates: usize, repeats: u32, confirm: Confirm) -> u32 {
    let (finalist, rounds) = halving(candidates, repeats);
    let wanted = confirm.samples() as u32;
    candidates as u32 + rounds + (wanted - 1) + wanted.saturating_sub(finalist) + 1
}

/// The most samples one candidate gets in such a plan, however the medians
/// fall: a halving round measures a candidate only up to the round's
/// target, and the re-measure up to the confirm's samples. So `auto`'s
/// launches, which the budget does not count, are at most this many.
fn auto_samples(candidates: usize, repeats: u32, confirm: Confirm) -> u32 {
    let (finalist, _) = halving(candidates, repeats);
    (confirm.samples() as u32).max(finalist)
}

/// How freely a search may explore: what decides its plan
/// ([`Params::for_search`]) and its candidates ([`super::super::candidates`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Exploring {
    /// Online (`GRIDSEL_POLICY=tune`), within an allowance of the process's
    /// kernel time ([`super::super::Allowance`]).
    #[default]
    Bounded,
    /// In a tuning session (`gridsel tune`, `GRIDSEL_TUNE_OVERHEAD=off`):
    /// the user asked for exploring, so a search may measure more grids.
    /// `warm_launches`: the warm launches the session will give the search,
    /// which size its warm plan ([`Params::session_warm`]); `None` where
    /// unknown (exploring unbounded outside `gridsel tune`, or a search's
    /// first run, before its launches per run are known), which is
    /// [`Params::SESSION_WARM`].
    Unbounded { warm_launches: Option<u32> },
}

impl Exploring {
    /// A session's plan without a known number of warm launches.
    pub const UNBOUNDED: Self = Self::Unbounded {
        warm_launches: None,
    };

    /// How freely a search may explore in a tuning session of
    /// `session_runs` tuning runs (`None`: not known), for a search whose
    /// store record saw `launches_per_run` (0: no record). Every run's
    /// first launch is cold, so a run gives the search one warm launch
    /// less than it launches the kernel.
    ///
    /// `launches_per_run` is the most one process made (the store keeps
    /// the maximum): where an earlier process of the store launched the
    /// kernel more often than the session's runs do, the plan is sized too
    /// large, and the search may end the session still exploring, which
    /// the session says; production then keeps `auto`'s grid for it.
    ///
    /// Fewer warm launches than the smallest plan takes (`auto`'s grid and
    /// one other, `session_launches`) leave the plan unsized: a sized one
    /// would settle on `auto`'s grid before any other could take the lead
    /// (two samples), and the store would keep that settled search from
    /// online `tune` for good; unsized, it stays exploring.
    pub fn in_session(session_runs: Option<u32>, launches_per_run: u32) -> Self {
        let per_run = launches_per_run.saturating_sub(1);
        let smallest = session_launches(2, 1, Params::SESSION_WARM.confirm);
        Self::Unbounded {
            warm_launches: session_runs
                .map(|runs| per_run.saturating_mul(runs))
                .filter(|&w| w >= smallest),
        }
    }

    /// Whether the user asked for exploring: a tuning session.
    pub fn unbounded(self) -> bool {
        matches!(self, Self::Unbounded { .. })
    }
}

/// Survivors kept out of `m` (IterML's cut ratio 0.5; fewer than `m` when
/// `m > 1`).
pub(super) fn kept(m: usize) -> usize {
    if m <= 1 { m } else { m.div_ceil(2).min(m - 1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's warm plan fits the warm launches the session gives the
    /// search (the arithmetic of [`Params::session_warm`]), and is
    /// SESSION_WARM's from 137: a kernel launched 50 times per run in three
    /// runs, or in a search's first run, when its launches per run are not
    /// known yet. Below 57 it is what it was with sixteen candidates at
    /// most. Online plans and the cold one do not change.
    #[test]
    fn a_sessions_warm_plan_fits_the_launches_its_runs_give() {
        let plan =
            |runs, per_run| Params::for_search(Kind::Warm, Exploring::in_session(runs, per_run));
        let shape = |p: Params| (p.candidates, p.repeats, p.budget);
        let confirm = Params::SESSION_WARM.confirm;
        assert_eq!(shape(plan(Some(3), 5)), (4, 1, 7));
        assert_eq!(session_launches(4, 1, confirm), 12);
        assert_eq!(session_launches(4, 2, confirm), 13);
        assert_eq!(auto_samples(4, 1, confirm), 4);
        assert_eq!(shape(Params::session_warm(40)), (16, 1, 35));
        assert_eq!(session_launches(16, 1, confirm), 34);
        assert_eq!(session_launches(16, 2, confirm), 48);
        assert_eq!(auto_samples(16, 2, confirm), 7);
        assert_eq!(shape(Params::session_warm(56)), (16, 2, 48));
        assert_eq!(shape(Params::session_warm(64)), (20, 2, 55));
        // Past sixteen only at two repeats: a fourth halving round, whose
        // two finalists stop at the eight samples kept.
        assert_eq!(session_launches(17, 2, confirm), 57);
        assert_eq!(shape(Params::session_warm(57)), (17, 2, 48));
        assert_eq!(session_launches(32, 1, confirm), 66);
        assert_eq!(session_launches(32, 2, confirm), 94);
        assert_eq!(auto_samples(32, 2, confirm), KEEP as u32);
        assert_eq!(shape(Params::session_warm(94)), (32, 2, 85));
        assert_eq!(shape(Params::session_warm(93)), (31, 2, 84));
        assert_eq!(shape(Params::session_warm(9)), (2, 2, 4));
        assert_eq!(shape(Params::session_warm(8)), (2, 1, 3));
        assert_eq!(shape(Params::session_warm(3)), (2, 1, 1));
        assert_eq!(plan(Some(3), 47), Params::SESSION_WARM);
        assert_ne!(plan(Some(3), 46), Params::SESSION_WARM);
        // Below the smallest plan's 9 warm launches the plan stays unsized:
        // sized, it would settle on auto's grid before another could lead.
        assert_eq!(session_launches(2, 1, confirm), 9);
        assert_eq!(plan(Some(3), 4), Params::session_warm(9));
        assert_eq!(plan(Some(2), 5), Params::SESSION_WARM);
        assert_eq!(plan(Some(3), 3), Params::SESSION_WARM);
        assert_eq!(Params::session_warm(137), Params::SESSION_WARM);
        assert_eq!(Params::SESSION_WARM.most_launches(), 137);
        assert_ne!(Params::session_warm(136), Params::SESSION_WARM);
        assert_eq!(Params::COLD.most_launches(), 13);
        assert_eq!(plan(Some(3), 0), Params::SESSION_WARM, "first run");
        assert_eq!(plan(None, 5), Params::SESSION_WARM, "outside a session");
        let mut previous = 0;
        for w in 1..=300 {
            let p = Params::session_warm(w);
            assert!(p.candidates >= previous && p.budget <= w.min(128), "{w}");
            // No round asks more samples than a candidate keeps.
            assert!(auto_samples(p.candidates, p.repeats, p.confirm) <= KEEP as u32);
            if w >= 9 {
                let auto = auto_samples(p.candidates, p.repeats, p.confirm);
                assert!(
                    session_launches(p.candidates, p.repeats, p.confirm) <= w,
                    "{w}"
                );
                assert!(p.budget + auto < w, "{w}");
            }
            previous = p.candidates;
        }
        for kind in [Kind::Cold, Kind::Warm] {
            assert_eq!(
                Params::of(kind),
                Params::for_search(kind, Exploring::Bounded)
            );
        }
        assert_eq!(plan(Some(3), 5).confirm, Params::SESSION_WARM.confirm);
        assert_eq!(
            Params::for_search(Kind::Cold, Exploring::in_session(Some(3), 5)),
            Params::COLD
        );
    }
}
