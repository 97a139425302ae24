//! How many tuning runs a session plans from its budget (`--time`) and
//! its cap (`--runs`), and what more time would buy: pure functions of the
//! before run's launches and wall time.
//!
//! A search's plan is sized by the launches the session's runs give it
//! (`GRIDSEL_TUNE_SESSION_RUNS` times its launches per run but the first,
//! `Params::session_warm`), and a kernel launched once a run measures one
//! grid a run ([`Params::COLD`]). So the runs a program's searches need
//! are known from the before run's launches ([`runs_needed`]), and the
//! session plans the fewest runs that settle every search, as far as the
//! budget allows after the before run and the confirmation's runs.

use gridsel_core::tune::search::Params;
use std::time::Duration;

/// The default budget, as many times the before run's wall time: a
/// program whose kernels are launched once a run takes 1 + 13 tuning runs
/// and up to 18 confirmation runs (3 pairs asked, up to 9 while they
/// disagree), 32 in all.
pub const DEFAULT_BUDGET_RUNS: u32 = 30;

/// The least default budget: a program of a few milliseconds spends more
/// in starting its processes than in its kernels.
pub const MIN_DEFAULT_BUDGET: Duration = Duration::from_secs(60);

/// The budget of a session whose before run took `before_s`, unless
/// `--time` gave one.
pub fn budget(given: Option<Duration>, before_s: f64) -> Duration {
    given.unwrap_or_else(|| {
        let runs = Duration::from_secs_f64(before_s.max(0.0) * f64::from(DEFAULT_BUDGET_RUNS));
        runs.max(MIN_DEFAULT_BUDGET)
    })
}

/// The tuning runs a search launched `launches` times a run needs for its
/// whole plan: once a run (cold samples), as many as [`Params::COLD`] can
/// take to settle, a launch a run; more often, the fewest runs whose warm
/// launches (all but each run's first) size its plan to
/// [`Params::SESSION_WARM`] (`Params::session_warm` is that from 137).
pub fn runs_needed(launches: u32) -> u32 {
    match launches.saturating_sub(1) {
        0 => Params::COLD.most_launches(),
        warm => Params::SESSION_WARM.most_launches().div_ceil(warm),
    }
}

/// What a session's tuning runs are planned from, and the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The tuning runs planned: the fewest of `needed`, `affordable` and
    /// `cap`, at least one.
    pub runs: u32,
    /// The runs the program's searches need, the most any needs (1 without
    /// a launch).
    pub needed: u32,
    /// The runs the budget leaves time for after the before run and the
    /// confirmation's.
    pub affordable: u32,
    /// `--runs`.
    pub cap: u32,
}

/// What set a plan's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The runs its searches need.
    Needed,
    /// `--runs`, fewer.
    Cap,
    /// The budget, fewer still.
    Budget,
}

impl Plan {
    /// What set its runs: none of them exceeds what the searches need.
    pub fn limit(&self) -> Limit {
        if self.runs == self.needed {
            Limit::Needed
        } else if self.runs == self.cap {
            Limit::Cap
        } else {
            Limit::Budget
        }
    }
}

/// The plan of a session whose before run took `before_s` and launched
/// its searches `launches` times each, with `budget_s` seconds in all, at
/// most `cap` tuning runs and `confirm_runs` runs of the confirmation to
/// leave time for; `gpus` tuning runs at once.
pub fn plan(
    launches: impl IntoIterator<Item = u32>,
    (budget_s, before_s): (f64, f64),
    cap: u32,
    confirm_runs: u32,
    gpus: u32,
) -> Plan {
    let needed = launches.into_iter().map(runs_needed).max().unwrap_or(1);
    let run_s = before_s.max(1e-3);
    let rounds = (budget_s - run_s * f64::from(1 + confirm_runs)) / run_s;
    let affordable = (rounds.max(0.0).floor() as u32).saturating_mul(gpus.max(1));
    Plan {
        runs: needed.min(affordable).min(cap).max(1),
        needed,
        affordable,
        cap,
    }
}

/// Whether another round of tuning runs fits: `left_s` of the budget left,
/// a tuning run taking `run_s`, and the confirmation's `reserve_s` kept.
pub fn another_fits(left_s: f64, run_s: f64, reserve_s: f64) -> bool {
    run_s + reserve_s <= left_s
}

/// A search still exploring when the tuning runs ended: its kernel,
/// trip-count class and launches per run.
pub struct Open<'a> {
    pub kernel: &'a str,
    pub class: u32,
    pub launches: u32,
}

/// What more time would buy, in the user's terms: each search still
/// exploring with the tuning runs its whole plan takes, and what a session
/// of that many would take (before run `before_s`, tuning runs of
/// `tuning_s`, `gpus` at once, `confirm_runs` confirmation runs of
/// `before_s`) as `--time` and, past `cap`, `--runs`.
pub fn more_time(
    open: &[Open],
    (before_s, tuning_s): (f64, f64),
    confirm_runs: u32,
    (cap, gpus): (u32, u32),
) -> String {
    let each: Vec<String> = open
        .iter()
        .map(|o| {
            let times = match o.launches {
                0 | 1 => "once a run".to_string(),
                n => format!("{n} times a run"),
            };
            format!(
                "{} at class {} (launched {times}: {} tuning runs settle it)",
                o.kernel,
                o.class,
                runs_needed(o.launches)
            )
        })
        .collect();
    let runs = open
        .iter()
        .map(|o| runs_needed(o.launches))
        .max()
        .unwrap_or(1);
    let rounds = runs.div_ceil(gpus.max(1));
    let seconds = before_s * f64::from(1 + confirm_runs) + tuning_s * f64::from(rounds);
    let runs_flag = match runs > cap {
        true => format!(" --runs {runs}"),
        false => String::new(),
    };
    let time = duration_label(seconds);
    format!(
        "{}; a session of {runs} tuning runs would take about {time} (--time {time}{runs_flag})",
        each.join(", "),
    )
}

/// A duration as `--time` takes it, rounded up: seconds under two
/// minutes, minutes under two hours, else hours.
pub fn duration_label(seconds: f64) -> String {
    let s = seconds.max(1.0).ceil() as u64;
    match s {
        0..120 => format!("{s}s"),
        120..7200 => format!("{}m", s.div_ceil(60)),
        _ => format!("{}h", s.div_ceil(3600)),
    }
}

/// `--time`: a number and a unit, `s`, `m` or `h` (`90s`, `10m`, `2h`); a
/// bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.trim().strip_suffix(['s', 'm', 'h']) {
        Some(number) => (number, &text.trim()[number.len()..]),
        None => (text.trim(), "s"),
    };
    let scale = match unit {
        "m" => 60.0,
        "h" => 3600.0,
        _ => 1.0,
    };
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("`{text}` is not a duration such as 90s, 10m or 2h"))?;
    let seconds = value * scale;
    if seconds > MAX_BUDGET.as_secs_f64() {
        return Err(format!("`{text}` is over a week"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The longest `--time`, a week, as `--timeout`'s.
const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_needs_the_runs_its_whole_plan_takes() {
        // Once a run: the cold plan's 13 launches, a run each.
        assert_eq!(runs_needed(1), 13);
        assert_eq!(runs_needed(0), 13);
        // Warm: the fewest runs giving the 137 warm launches of the whole
        // session plan, and no fewer.
        for launches in [2, 5, 9, 20, 26, 73, 100, 1000] {
            let runs = runs_needed(launches);
            let warm = launches - 1;
            assert_eq!(Params::session_warm(warm * runs), Params::SESSION_WARM);
            if runs > 1 {
                assert_ne!(
                    Params::session_warm(warm * (runs - 1)),
                    Params::SESSION_WARM,
                    "{launches}"
                );
            }
        }
        assert_eq!(
            (runs_needed(5), runs_needed(47), runs_needed(100)),
            (35, 3, 2)
        );
    }

    #[test]
    fn the_plan_is_what_the_searches_need_within_the_budget_and_the_cap() {
        // 1 s runs, 6 confirmation runs kept: 60 s leave 53 tuning runs.
        let p = plan([100, 1], (60.0, 1.0), 100, 6, 1);
        assert_eq!(
            p,
            Plan {
                runs: 13,
                needed: 13,
                affordable: 53,
                cap: 100
            }
        );
        assert_eq!(p.limit(), Limit::Needed);
        assert_eq!(plan([5], (60.0, 1.0), 3, 6, 1).runs, 3);
        assert_eq!(plan([5], (60.0, 1.0), 3, 6, 1).limit(), Limit::Cap);
        assert_eq!(plan([1], (12.0, 1.0), 100, 6, 1).runs, 5);
        assert_eq!(plan([1], (12.0, 1.0), 100, 6, 1).limit(), Limit::Budget);
        // Two GPUs run two at a time.
        assert_eq!(plan([1], (12.0, 1.0), 100, 6, 2).affordable, 10);
        // No time left: still one run; no launch: one.
        assert_eq!(plan([1], (2.0, 1.0), 100, 6, 1).runs, 1);
        assert_eq!(plan([], (60.0, 1.0), 100, 6, 1).runs, 1);
        assert!(another_fits(7.0, 1.0, 6.0) && !another_fits(6.9, 1.0, 6.0));
    }

    #[test]
    fn more_time_names_the_open_searches_and_the_session_that_settles_them() {
        let open = [
            Open {
                kernel: "k_l12",
                class: 20,
                launches: 1,
            },
            Open {
                kernel: "k_l30",
                class: 21,
                launches: 5,
            },
        ];
        // 2 s before run and 6 confirmation runs, 35 tuning runs of 3 s.
        assert_eq!(
            more_time(&open, (2.0, 3.0), 6, (3, 1)),
            "k_l12 at class 20 (launched once a run: 13 tuning runs settle it), k_l30 at class \
             21 (launched 5 times a run: 35 tuning runs settle it); a session of 35 tuning runs \
             would take about 119s (--time 119s --runs 35)"
        );
        assert!(more_time(&open[..1], (2.0, 3.0), 6, (100, 1)).ends_with("(--time 53s)"));
        // Two GPUs: 7 rounds of 3 s.
        assert!(more_time(&open[..1], (2.0, 3.0), 6, (100, 2)).ends_with("(--time 35s)"));
    }

    #[test]
    fn budgets_read_and_print_as_the_user_writes_them() {
        let secs = |t: &str| parse_duration(t).map(|d| d.as_secs_f64());
        assert_eq!(secs("90s"), Ok(90.0));
        assert_eq!(secs("10m"), Ok(600.0));
        assert_eq!(secs("2h"), Ok(7200.0));
        assert_eq!(secs("1.5m"), Ok(90.0));
        assert_eq!(secs("45"), Ok(45.0));
        for bad in ["", "m", "-3s", "0", "ten", "5d", "nan", "200h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(duration_label(44.2), "45s");
        assert_eq!(duration_label(121.0), "3m");
        assert_eq!(duration_label(7201.0), "3h");
        assert_eq!(budget(None, 0.01), MIN_DEFAULT_BUDGET);
        assert_eq!(budget(None, 10.0), Duration::from_secs(300));
        assert_eq!(budget(Some(Duration::from_secs(5)), 10.0).as_secs(), 5);
    }
}
