//! `report.svg`: each policy's speedup over the baseline (the first policy:
//! `compare`'s `llvm`, `tune`'s run before tuning) per (program, kernel,
//! trip count), one horizontal bar each, on a log scale around 1 (bars to
//! the right of the line are faster than the baseline, to the left slower); the
//! labels stay horizontal, however long the kernel names. Plain SVG text;
//! every bar carries its numbers as `data-*` attributes and a tooltip.

use super::results::{BASELINE, ProgramResult};
use crate::runner::manifest::Program;
use std::fmt::Write;

const COLORS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];
/// Height of a bar's row.
const BAR: f64 = 12.0;
const GROUP_GAP: f64 = 10.0;
const TOP: f64 = 50.0;
const PLOT_WIDTH: f64 = 420.0;
/// Characters are about this wide at font-size 11.
const CHAR_WIDTH: f64 = 6.6;

/// One bar: which policy, and its speedup.
struct Bar {
    policy: usize,
    speedup: f64,
}

/// The bars of one (program, kernel, trip count).
struct Group<'a> {
    program: &'a str,
    kernel: &'a str,
    trip_count: u64,
    bars: Vec<Bar>,
}

impl Group<'_> {
    fn label(&self) -> String {
        format!("{}: {} @{}", self.program, self.kernel, self.trip_count)
    }
}

/// The (program, kernel, trip count) groups with at least one speedup.
fn groups<'a>(programs: &'a [Program], results: &'a [ProgramResult]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group> = Vec::new();
    for (program, result) in programs.iter().zip(results) {
        for row in result.rows.iter().filter(|r| r.policy != BASELINE) {
            let Some(speedup) = row.speedup else {
                continue;
            };
            let same = groups.last().is_some_and(|g| {
                g.program == program.name
                    && g.kernel == row.kernel
                    && g.trip_count == row.trip_count
            });
            if !same {
                groups.push(Group {
                    program: &program.name,
                    kernel: &row.kernel,
                    trip_count: row.trip_count,
                    bars: Vec::new(),
                });
            }
            let group = groups.last_mut().expect("pushed above");
            group.bars.push(Bar {
                policy: row.policy,
                speedup,
            });
        }
    }
    groups
}

pub fn chart(programs: &[Program], policies: &[String], results: &[ProgramResult]) -> String {
    let groups = groups(programs, results);
    let speedups = groups
        .iter()
        .flat_map(|g| &g.bars)
        .map(|b| b.speedup.log2());
    let low = speedups.clone().fold(0.0, f64::min).floor().min(-1.0);
    let high = speedups.fold(0.0, f64::max).ceil().max(1.0);
    let longest_label = groups.iter().map(|g| g.label().len()).max().unwrap_or(0);
    let left = 20.0 + longest_label as f64 * CHAR_WIDTH;
    let x = |log2: f64| left + (log2 - low) / (high - low) * PLOT_WIDTH;
    let plot_height: f64 = groups
        .iter()
        .map(|g| g.bars.len() as f64 * BAR + GROUP_GAP)
        .sum::<f64>()
        .max(40.0);
    let legend_width: f64 = policies
        .iter()
        .skip(BASELINE + 1)
        .map(|name| 30.0 + name.len() as f64 * CHAR_WIDTH)
        .sum();
    let title = format!(
        "speedup over {} (log scale; right of the line: faster)",
        policies[BASELINE]
    );
    let width = (left + PLOT_WIDTH + 30.0)
        .max(20.0 + legend_width)
        .max(20.0 + title.len() as f64 * CHAR_WIDTH * 1.2);
    let height = TOP + plot_height + 30.0;

    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
         font-family=\"monospace\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"16\" font-size=\"13\">{}</text>\n",
        escape(&title)
    );
    // Legend: the compared policies.
    let mut at = 10.0;
    for (policy, name) in policies.iter().enumerate().skip(BASELINE + 1) {
        let _ = writeln!(
            svg,
            "<rect x=\"{at:.1}\" y=\"26\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"35\">{}</text>",
            color(policy),
            at + 14.0,
            escape(name)
        );
        at += 30.0 + name.len() as f64 * CHAR_WIDTH;
    }
    // Axis: a line per power of two, the one at 1 darker, numbered below.
    for power in low as i32..=high as i32 {
        let at = x(f64::from(power));
        let stroke = if power == 0 { "#333" } else { "#ddd" };
        let _ = writeln!(
            svg,
            "<line x1=\"{at:.1}\" x2=\"{at:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"{stroke}\"/>\
             <text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            TOP + plot_height,
            TOP + plot_height + 14.0,
            2f64.powi(power)
        );
    }
    if groups.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"10\" y=\"{:.1}\">no kernel with launches under {} and another policy</text>",
            TOP + 24.0,
            escape(&policies[BASELINE])
        );
    }
    let one = x(0.0);
    let mut y = TOP + GROUP_GAP / 2.0;
    for group in &groups {
        let label = escape(&group.label());
        let centre = y + group.bars.len() as f64 * BAR / 2.0;
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            left - 8.0,
            centre + 4.0
        );
        for bar in &group.bars {
            let end = x(bar.speedup.log2());
            let _ = writeln!(
                svg,
                "<rect class=\"bar\" data-program=\"{program}\" data-kernel=\"{kernel}\" \
                 data-trip-count=\"{trip}\" data-policy=\"{policy}\" data-speedup=\"{speedup}\" \
                 x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\">\
                 <title>{policy} on {label}: {speedup:.3}x</title></rect>",
                end.min(one),
                (end - one).abs().max(1.0),
                BAR - 2.0,
                color(bar.policy),
                program = escape(group.program),
                kernel = escape(group.kernel),
                trip = group.trip_count,
                policy = escape(&policies[bar.policy]),
                speedup = bar.speedup,
            );
            y += BAR;
        }
        y += GROUP_GAP;
    }
    svg.push_str("</svg>\n");
    svg
}

fn color(policy: usize) -> &'static str {
    COLORS[(policy - 1) % COLORS.len()]
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::results::Samples;
    use gridsel_cli::profile_rows::ProfileRow;
    use std::collections::BTreeMap;

    fn program(name: &str) -> Program {
        Program {
            name: name.into(),
            command: vec!["x".into()],
            env: BTreeMap::new(),
            cwd: "/".into(),
        }
    }

    #[test]
    fn one_bar_per_kernel_and_compared_policy_with_its_speedup() {
        let mut s = Samples::new(3);
        let launches = [
            ("k<1>", 0, 400),
            ("k<1>", 1, 100),
            ("k<1>", 2, 800),
            ("j", 1, 5),
        ];
        for (kernel, policy, ns) in launches {
            let launch = ProfileRow {
                kernel: kernel.into(),
                trip_count: 9,
                blocks: 1,
                threads: 32,
                ns,
            };
            s.add_launch(policy, launch);
        }
        let policies = ["llvm", "auto", "fixed:1,32"].map(String::from);
        let svg = chart(&[program("p&q")], &policies, &[s.finish()]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // `j` has no llvm launch: no bar.
        assert_eq!(svg.matches("class=\"bar\"").count(), 2, "{svg}");
        assert!(svg.contains("data-kernel=\"k&lt;1&gt;\" data-trip-count=\"9\" data-policy=\"auto\" data-speedup=\"4\""));
        assert!(svg.contains("data-policy=\"fixed:1,32\" data-speedup=\"0.5\""));
        assert!(svg.contains("p&amp;q: k&lt;1&gt; @9"));
        // The axis spans 1/2 to 4.
        for tick in [">0.5<", ">1<", ">2<", ">4<"] {
            assert!(svg.contains(tick), "{tick}");
        }
        assert!(!svg.contains(">8<") && !svg.contains(">0.25<"));
    }

    #[test]
    fn no_bars_still_draws_a_chart() {
        let svg = chart(
            &[program("p")],
            &["llvm".into(), "auto".into()],
            &[Samples::new(2).finish()],
        );
        assert!(svg.starts_with("<svg") && svg.contains("no kernel"));
        assert_eq!(svg.matches("class=\"bar\"").count(), 0);
    }
}
