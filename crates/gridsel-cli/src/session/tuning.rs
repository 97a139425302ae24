//! The tuning runs of a session: into the scratch store, in rounds of one
//! run per GPU of `--gpus`, until every search of the program's kernels has
//! settled or the budget leaves no time for another.

use super::{Before, Clock, ProgramSession, RunKind, Runner, SessionRun};
use super::{plan, progress, report, store};
use crate::runner::manifest::Program;
use gridsel_host::config::{ENV_CACHE, ENV_POLICY, ENV_TUNE_OVERHEAD, ENV_TUNE_SESSION_RUNS};
use plan::{Limit, Plan};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

impl Runner<'_> {
    /// The tuning runs into the scratch store, `plan.runs` at most, until
    /// every search of the program's kernels has settled or the budget
    /// leaves no time for another besides the confirmation; then what more
    /// time would buy. Whether they all verified.
    pub(super) fn tuning_runs(
        &self,
        program: &Program,
        folder: &Path,
        (before, clock, plan): (&Before, &Clock, Plan),
        session: &mut ProgramSession,
    ) -> Result<bool, String> {
        let reserve_s = f64::from(self.confirm_runs()) * before.wall_s;
        let gpus = self.gpus.len().max(1) as u32;
        let mut spent_s = 0.0;
        let mut done = 0;
        let mut out_of_time = false;
        while done < plan.runs {
            // A round's runs take as long as the longest, about one run.
            let run_s = match done {
                0 => before.wall_s,
                _ => spent_s / f64::from(done),
            };
            if done > 0 && !plan::another_fits(clock.left_s(), run_s, reserve_s) {
                out_of_time = true;
                break;
            }
            let round: Vec<u32> = (done + 1..=plan.runs.min(done + gpus)).collect();
            let ran = self.tuning_round((program, folder, before), &round, plan.runs)?;
            done = *round.last().unwrap_or(&done);
            spent_s += ran.iter().map(|(run, _)| run.wall_s).sum::<f64>();
            if ran.iter().any(|(_, output)| output.is_none()) {
                for (run, _) in ran {
                    progress(program, &run, "");
                    session.runs.push(run);
                }
                return Ok(false);
            }
            for (run, _) in &ran {
                read_kernels(run, &mut session.kernels);
            }
            session.searches = store::searches(self.scratch, &session.kernels, self.initial)?;
            for r in &session.searches {
                if r.pinned.is_some() || r.search.settled(r.kind()) {
                    let key = (r.key.kernel.clone(), r.key.class);
                    session.settled_after.entry(key).or_insert(done);
                }
            }
            let settled = session.settled_after.len();
            let searches = session.searches.len();
            for (run, _) in ran {
                let more = format!("; {settled} of {searches} searches settled");
                progress(program, &run, &more);
                session.runs.push(run);
            }
            if settled == searches {
                return Ok(true);
            }
        }
        let why = match (out_of_time, plan.limit()) {
            (true, _) => format!("{} is spent", self.budget_label(clock)),
            (false, Limit::Cap) => format!("--runs {} is reached", plan.cap),
            (false, Limit::Budget) => format!("{} allows no more", self.budget_label(clock)),
            (false, Limit::Needed) => {
                "the runs their plans need are spent (the noise drew more grids into a round)"
                    .to_string()
            }
        };
        let open: Vec<plan::Open> = session
            .searches
            .iter()
            .filter(|r| {
                let key = (r.key.kernel.clone(), r.key.class);
                !session.settled_after.contains_key(&key)
            })
            .map(|r| plan::Open {
                kernel: &r.key.kernel,
                class: r.key.class,
                launches: r.tally.launches_per_run,
            })
            .collect();
        let mean_s = spent_s / f64::from(done.max(1));
        let times = (before.wall_s, mean_s);
        let more = plan::more_time(&open, times, self.confirm_runs(), (self.most_runs, gpus));
        eprintln!(
            "[tune {}] after {}, {why}: {} still exploring, auto's grid stays for them: {more}",
            program.name,
            report::counted(done as usize, "tuning run", "tuning runs"),
            report::counted(open.len(), "search", "searches"),
        );
        Ok(true)
    }

    /// The tuning runs numbered `round` of the `planned`, at once, one per
    /// GPU of `--gpus`: one process on the scratch store itself; several,
    /// each on a copy of it as the round begins, merged into it after
    /// ([`store::absorb`]). Each run and, when it verified, its output, in
    /// order.
    fn tuning_round(
        &self,
        (program, folder, before): (&Program, &Path, &Before),
        round: &[u32],
        planned: u32,
    ) -> Result<Vec<(SessionRun, Option<String>)>, String> {
        let runs = planned.to_string();
        let digits = runs.len();
        let several = round.len() > 1;
        let stores: Vec<PathBuf> = round
            .iter()
            .map(|i| match several {
                false => self.scratch.to_path_buf(),
                true => folder.join(format!("tune-{i:0digits$}.store.json")),
            })
            .collect();
        for store in stores.iter().filter(|_| several) {
            store::copy(self.scratch, store)?;
        }
        let ran = std::thread::scope(|scope| {
            let handles: Vec<_> = (round.iter().zip(&stores).enumerate())
                .map(|(g, (&i, store))| {
                    let gpu = self.gpus.get(g).map(String::as_str);
                    let on = match (gpu, self.gpus.len()) {
                        (Some(gpu), 2..) => format!(" on GPU {gpu}"),
                        _ => String::new(),
                    };
                    let stem = format!("tune-{i:0digits$}");
                    let label = format!("tuning run {i}/{planned}{on}");
                    let mut tuning = vec![
                        (ENV_POLICY, OsStr::new("tune")),
                        (ENV_TUNE_OVERHEAD, OsStr::new("off")),
                        (ENV_TUNE_SESSION_RUNS, OsStr::new(&runs)),
                        (ENV_CACHE, store.as_os_str()),
                    ];
                    tuning.extend(self.teams_regions());
                    let reference = Some(before.reference.as_str());
                    scope.spawn(move || {
                        let kind = (RunKind::Tuning, i, label);
                        self.run_on(gpu, (program, folder), &stem, kind, &tuning, reference)
                    })
                })
                .collect();
            let joined = handles.into_iter().map(|h| h.join());
            joined.collect::<Result<Vec<_>, _>>()
        })
        .map_err(|_| "a tuning run's thread panicked".to_string())?;
        if several {
            store::absorb(self.scratch, &stores)?;
        }
        Ok(ran)
    }
}

/// Adds the kernels a tuning run launched to `kernels`: its launches, of
/// many grids while it explores, are not compared, so none is kept.
fn read_kernels(run: &SessionRun, kernels: &mut BTreeSet<String>) {
    let bytes = std::fs::read(&run.files.profile).unwrap_or_default();
    gridsel_cli::profile_rows::parse(&String::from_utf8_lossy(&bytes), |l| {
        if !kernels.contains(&*l.kernel) {
            kernels.insert(l.kernel.to_string());
        }
    });
}
