//! The confirmation runs of a session: pairs of production runs with and
//! without what was learned, or alternating runs, of the learned set and of
//! searches on their own; the verdict on their launch times is
//! [`confirm`]'s.

use super::confirm::{self, Confirmed};
use super::{AFTER, ALONE_MOST, BEFORE, PAIRS_CAP_FACTOR};
use super::{Before, Clock, ProgramSession, RunKind, Runner};
use super::{progress, read_launches, store, untuned};
use crate::compare::results::Samples;
use crate::runner::manifest::Program;
use crate::runner::output;
use gridsel_cli::launches::{self, Pair, SearchKey, Side};
use gridsel_core::tune::LearnedLaunches;
use gridsel_host::config::{ENV_CACHE, ENV_LEARNED_ALTERNATE, ENV_POLICY};
use std::ffi::OsStr;
use std::path::Path;

/// A confirmation: of which store, into which folder, how, and what its
/// progress lines call it (`None`: the learned set, named by none).
struct Confirming<'c> {
    program: &'c Program,
    folder: &'c Path,
    reference: &'c str,
    store: &'c Path,
    by: Confirmed,
    what: Option<String>,
}

impl Runner<'_> {
    /// The confirmation: pairs of production runs with and without what
    /// was learned, or alternating runs, and the verdict they give. It
    /// stops at the first run that does not verify, without a verdict.
    ///
    /// Where every search the learned set changes is launched often
    /// enough, a pair is one run alternating between the two sets;
    /// otherwise two runs, taking turns at running first, so that neither
    /// side is always the one after a warm-up. Past the pairs asked, one
    /// more while they disagree.
    pub(super) fn confirmation(
        &self,
        program: &Program,
        folder: &Path,
        (before, clock): (&Before, &Clock),
        session: &mut ProgramSession,
        samples: &mut Samples,
    ) -> Result<(), String> {
        let changed = store::changed(self.scratch, &session.kernels)?;
        let set = Confirming {
            program,
            folder,
            reference: &before.reference,
            store: self.scratch,
            by: match confirm::can_alternate(changed.iter(), &before.per_run) {
                true => Confirmed::Alternating,
                false => Confirmed::Pairs,
            },
            what: None,
        };
        let Some(verdict) = self.confirm_store(&set, (before, clock), session, samples) else {
            return Ok(());
        };
        let undecided = verdict.undecided();
        // The searches that alternate first, together (one store, a few
        // runs of one process each), then those of the others that gained
        // most, alone.
        let together = confirm::together(&verdict, &before.per_run);
        let alone = confirm::alone(&verdict, ALONE_MOST);
        let groups: Vec<Vec<SearchKey>> = (!together.is_empty())
            .then(|| together.clone())
            .into_iter()
            .chain(
                alone
                    .into_iter()
                    .filter(|k| !together.contains(k))
                    .map(|k| vec![k]),
            )
            .collect();
        session.verdict = Some(verdict);
        if undecided {
            self.confirm_alone(program, folder, (before, clock), &groups, session)?;
        }
        Ok(())
    }

    /// Confirms each group of `groups` without the program's other
    /// searches, while the budget leaves time for the pairs asked: their
    /// learned grids against auto's, the others at auto's (a store of the
    /// group alone, in a folder `alone-N` of the program's), with the same
    /// decision as the set's. Their runs count as the session's (they must
    /// verify), their samples not in its before and after.
    fn confirm_alone(
        &self,
        program: &Program,
        folder: &Path,
        (before, clock): (&Before, &Clock),
        groups: &[Vec<SearchKey>],
        session: &mut ProgramSession,
    ) -> Result<(), String> {
        for (n, keys) in (1..).zip(groups) {
            let what = match keys.as_slice() {
                [key] => format!("{} (class {}) alone", key.0, key.1),
                _ => format!(
                    "the {} searches launched often enough to alternate, together",
                    keys.len()
                ),
            };
            let by = match confirm::can_alternate(keys.iter(), &before.per_run) {
                true => Confirmed::Alternating,
                false => Confirmed::Pairs,
            };
            let needed_s = f64::from(self.confirm_pairs) * by.runs_per_pair() * before.wall_s;
            if clock.left_s() < needed_s {
                eprintln!(
                    "[tune {}] {} leaves no time to confirm {what} (about {:.0} s)",
                    program.name,
                    self.budget_label(clock),
                    needed_s.ceil()
                );
                return Ok(());
            }
            let folder = output::create_subfolder(folder, &format!("alone-{n}"))?;
            let alone = folder.join("store.json");
            store::alone(self.scratch, &alone, keys, &session.kernels)?;
            let set = Confirming {
                program,
                folder: &folder,
                reference: &before.reference,
                store: &alone,
                by,
                what: Some(what.clone()),
            };
            let mut samples = Samples::new(2);
            let Some(verdict) = self.confirm_store(&set, (before, clock), session, &mut samples)
            else {
                return Ok(());
            };
            let kept = (keys.iter())
                .filter(|k| verdict.action(k) == confirm::Action::Write)
                .count();
            let said = match (verdict.program_refused(), kept) {
                (Some(why), _) => format!("refused: {why}"),
                (None, 0) => "refused: slower than auto's grid".to_string(),
                (None, k) if k == keys.len() => "kept".to_string(),
                (None, k) => format!("kept {k}, the others slower than auto's grids"),
            };
            eprintln!("[tune {}] {what}: {said}", program.name);
            session
                .alone
                .extend(keys.iter().map(|k| (k.clone(), verdict.clone())));
        }
        Ok(())
    }

    /// The pairs (or alternating runs) of `set`: `--confirm` of them, and
    /// more while they disagree and the budget leaves time, up to
    /// [`PAIRS_CAP_FACTOR`] times as many; the verdict they give, `None` at
    /// a run that did not verify.
    fn confirm_store(
        &self,
        set: &Confirming,
        (before, clock): (&Before, &Clock),
        session: &mut ProgramSession,
        samples: &mut Samples,
    ) -> Option<confirm::Verdict> {
        let by = set.by;
        let looks = confirm::Looks {
            first: self.confirm_pairs as usize,
            last: (self.confirm_pairs * PAIRS_CAP_FACTOR) as usize,
        };
        let mut pairs = Vec::new();
        let pair_s = by.runs_per_pair() * before.wall_s;
        for i in 1..=self.confirm_pairs * PAIRS_CAP_FACTOR {
            if i > self.confirm_pairs && !confirm::decide(&pairs, looks, by).undecided() {
                break;
            }
            if i > self.confirm_pairs && clock.left_s() < pair_s {
                eprintln!(
                    "[tune {}] {} leaves no time for more confirmation of {}: the {} decide",
                    set.program.name,
                    self.budget_label(clock),
                    set.what.as_deref().unwrap_or("the learned set"),
                    by.counted(pairs.len())
                );
                break;
            }
            pairs.push(self.confirmation_pair(set, i, session, samples)?);
        }
        Some(confirm::decide(&pairs, looks, by))
    }

    /// The `i`th pair of the confirmation of `set` (one alternating run, or
    /// a run under auto and one reading its store, in turns first), its
    /// launches into `samples`; `None` at a run that did not verify.
    fn confirmation_pair(
        &self,
        set: &Confirming,
        i: u32,
        session: &mut ProgramSession,
        samples: &mut Samples,
    ) -> Option<Pair> {
        let (program, folder, reference, by) = (set.program, set.folder, set.reference, set.by);
        let store = set.store.as_os_str();
        let mut learned = vec![(ENV_POLICY, OsStr::new("auto")), (ENV_CACHE, store)];
        learned.extend(self.teams_regions());
        let digits = (self.confirm_pairs * PAIRS_CAP_FACTOR).to_string().len();
        let mut pair = Pair::default();
        let order = match (by, i % 2) {
            (Confirmed::Alternating, _) => &[RunKind::ConfirmAlternating][..],
            (Confirmed::Pairs, 1) => &[RunKind::ConfirmAuto, RunKind::ConfirmLearned],
            (Confirmed::Pairs, _) => &[RunKind::ConfirmLearned, RunKind::ConfirmAuto],
        };
        // Alternating runs take the sides in turn (module doc).
        let at = LearnedLaunches::of_run(i);
        let mut alternate = vec![
            (ENV_POLICY, OsStr::new("auto")),
            (ENV_CACHE, store),
            (ENV_LEARNED_ALTERNATE, OsStr::new(at.name())),
        ];
        alternate.extend(self.teams_regions());
        let untuned = untuned();
        for &kind in order {
            let settings: &[(&str, &OsStr)] = match kind {
                RunKind::ConfirmAuto => &untuned,
                RunKind::ConfirmLearned => &learned,
                _ => &alternate,
            };
            let stem = format!("{}-{i:0digits$}", kind.name());
            let label = self.confirmation_label(kind, i);
            let label = match &set.what {
                Some(what) => format!("{what}, {label}"),
                None => label,
            };
            let place = (kind, i, label);
            let (run, output) = self.run(program, folder, &stem, place, settings, Some(reference));
            progress(program, &run, "");
            if output.is_none() {
                session.runs.push(run);
                return None;
            }
            let kernels = &mut session.kernels;
            match kind {
                RunKind::ConfirmAuto | RunKind::ConfirmLearned => {
                    let (policy, side) = match kind {
                        RunKind::ConfirmAuto => (BEFORE, &mut pair.auto),
                        _ => (AFTER, &mut pair.learned),
                    };
                    samples.add_wall(policy, run.wall_s);
                    *side = read_launches(&run, kernels, samples, |_| Some(policy)).times();
                }
                // An alternating run's wall time is of both sets: neither
                // side's.
                _ => {
                    let side = |j| match launches::alternating_side(at, j)? {
                        Side::Auto => Some(BEFORE),
                        Side::Learned => Some(AFTER),
                    };
                    pair = read_launches(&run, kernels, samples, side).alternating(at);
                }
            }
            session.runs.push(run);
        }
        Some(pair)
    }

    /// The label of the `index`th confirmation run of `kind`.
    fn confirmation_label(&self, kind: RunKind, index: u32) -> String {
        let side = match kind {
            RunKind::ConfirmAuto => "auto",
            RunKind::ConfirmLearned => "learned",
            _ => "learned and auto alternating",
        };
        if index <= self.confirm_pairs {
            format!("confirmation {index}/{}, {side}", self.confirm_pairs)
        } else {
            let most = self.confirm_pairs * PAIRS_CAP_FACTOR;
            let more = match kind {
                RunKind::ConfirmAlternating => "runs",
                _ => "pairs",
            };
            format!("confirmation {index} (more {more}, up to {most}), {side}")
        }
    }
}
