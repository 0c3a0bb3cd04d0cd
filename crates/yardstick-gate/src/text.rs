//! Comparisons and gate reports as people read them (`yardstick compare` and `yardstick gate`
//! without `--json`): plain aligned tables, values in human units with the metric's unit (the
//! raw numbers stay in `--json`). Warnings are the caller's to print.

use yardstick_report::format::{human, metric_unit};
use yardstick_report::terminal::{plain_table, table_with_notes, width, wrap};
use yardstick_stats::descriptive::median;
use yardstick_stats::text::style::{DIM, RESET};

use crate::compare::{Comparison, FieldDiff};
use crate::gate::GateReport;

/// A JSON value shortened to 60 characters for a table cell.
fn short(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(59).collect::<String>())
    } else {
        s
    }
}

fn diffs(out: &mut String, title: &str, diffs: &[FieldDiff]) {
    if diffs.is_empty() {
        out.push_str(&format!("{title}: identical\n"));
        return;
    }
    out.push_str(&format!("{title}: {} field(s) differ\n", diffs.len()));
    let rows: Vec<Vec<String>> = diffs
        .iter()
        .map(|d| vec![d.path.clone(), short(&d.baseline), short(&d.candidate)])
        .collect();
    out.push_str(&plain_table(&["FIELD", "A", "B"], &rows));
}

/// The two runs and the spec and environment fields that differ.
fn runs_and_diffs(c: &Comparison) -> String {
    let mut out = format!(
        "A (baseline)  {}  {}\nB (candidate) {}  {}\n",
        c.baseline_run,
        c.baseline_profile.as_deref().unwrap_or("-"),
        c.candidate_run,
        c.candidate_profile.as_deref().unwrap_or("-")
    );
    diffs(&mut out, "spec", &c.spec_diffs);
    diffs(&mut out, "env", &c.env_diffs);
    out
}

/// The median of a side's replicate values (what the ratio is of), else its aggregate.
fn median_or(replicates: &[f64], aggregate: f64) -> f64 {
    if replicates.is_empty() {
        aggregate
    } else {
        median(replicates)
    }
}

/// The interval of a ratio as a cell.
fn interval(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{lo:.3}, {hi:.3}]"),
        _ => "-".into(),
    }
}

/// What the value columns hold, under the tables.
const COLUMNS_NOTE: &str = "A, B: medians of the replicate values; B/A: their ratio with its \
                            bootstrap CI over replicates";

/// Where the step time goes in both runs, for points both profiled.
fn profiles(c: &Comparison) -> String {
    let mut out = String::new();
    if c.profiles.is_empty() {
        return out;
    }
    out.push_str("\nWhere the step time goes (profiled replicates: explanations, never gated)\n");
    let rows: Vec<Vec<String>> = c
        .profiles
        .iter()
        .flat_map(|p| {
            p.figures.iter().map(|(m, a, b)| {
                let unit = metric_unit(m, "");
                vec![
                    p.point.clone(),
                    m.clone(),
                    human(*a, unit),
                    human(*b, unit),
                    if unit == "s" {
                        format!("{:+.1} ms", (b - a) * 1e3)
                    } else {
                        format!("{:+.3}", b - a)
                    },
                ]
            })
        })
        .collect();
    out.push_str(&plain_table(&["POINT", "FIGURE", "A", "B", "B-A"], &rows));
    for p in &c.profiles {
        if let Some(a) = &p.attribution {
            out.push_str(&format!("{}: {a}\n", p.point));
        }
    }
    out
}

/// `yardstick compare`: the two runs, the spec and env fields that differ, and per point ×
/// metric the medians of the replicate values, B/A with its interval, the Mann–Whitney p and
/// the replicate counts.
pub fn comparison(c: &Comparison) -> String {
    let mut out = runs_and_diffs(c);
    out.push('\n');
    let rows: Vec<Vec<String>> = c
        .metrics
        .iter()
        .map(|m| {
            let unit = metric_unit(&m.metric, &m.unit);
            vec![
                m.point.clone(),
                format!("{} {}", m.metric, m.statistic),
                human(median_or(&m.baseline_replicates, m.baseline), unit),
                human(median_or(&m.candidate_replicates, m.candidate), unit),
                m.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                interval(m.ci_lo, m.ci_hi),
                m.mann_whitney_p.map_or("-".into(), |p| format!("{p:.3}")),
                format!(
                    "{}/{}",
                    m.baseline_replicates.len(),
                    m.candidate_replicates.len()
                ),
            ]
        })
        .collect();
    let level = format!("{:.0} % CI", c.level * 100.0);
    out.push_str(&plain_table(
        &["POINT", "METRIC", "A", "B", "B/A", &level, "MWU p", "REPS"],
        &rows,
    ));
    out.push_str(&format!("{DIM}{COLUMNS_NOTE}{RESET}\n"));
    out.push_str(&profiles(c));
    out
}

/// `yardstick gate`: the two runs and what differs, then per gated metric its verdict first,
/// the medians, their ratio with its interval and the bound it is held to, and under each row
/// why (and, when INCONCLUSIVE, what would decide it), folded to the terminal's width. The
/// overall verdict line is the caller's (it follows any confirmation run).
pub fn report(r: &GateReport) -> String {
    report_at(r, width())
}

/// [`report`] folded to `width` characters.
pub fn report_at(r: &GateReport, width: usize) -> String {
    let mut out = runs_and_diffs(&r.comparison);
    out.push('\n');
    let mut notes = Vec::new();
    let rows: Vec<Vec<String>> =
        r.metrics
            .iter()
            .map(|m| {
                let cmp = r.comparison.metrics.iter().find(|c| {
                    c.point == m.point && c.metric == m.metric && c.statistic == m.statistic
                });
                // The unit the comparison recorded for this metric, else the catalogue's.
                let unit = metric_unit(&m.metric, cmp.map_or("", |c| c.unit.as_str()));
                let (a, b) = match cmp {
                    Some(c) if m.paired.is_none() => (
                        median_or(&c.baseline_replicates, m.baseline),
                        median_or(&c.candidate_replicates, m.candidate),
                    ),
                    _ => (m.baseline, m.candidate),
                };
                notes.push(match &m.to_decide {
                    Some(d) => format!("{}. To decide: {d}.", m.reason),
                    None => m.reason.clone(),
                });
                vec![
                    m.verdict.to_string(),
                    m.point.clone(),
                    format!("{} {}", m.metric, m.statistic),
                    human(a, unit),
                    human(b, unit),
                    m.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                    interval(m.ci_lo, m.ci_hi),
                    m.bound.map_or("-".into(), |b| format!("{b:.3}")),
                ]
            })
            .collect();
    let level = format!("{:.0} % CI", r.comparison.level * 100.0);
    out.push_str(&table_with_notes(
        &[
            "VERDICT", "POINT", "METRIC", "A", "B", "B/A", &level, "BOUND",
        ],
        &rows,
        &notes,
        width,
    ));
    for l in wrap(
        &format!(
            "{COLUMNS_NOTE}; BOUND: the ratio beyond which the metric regressed (its tolerance, \
             or the machine's noise floor when wider)"
        ),
        width,
    ) {
        out.push_str(&format!("{DIM}{l}{RESET}\n"));
    }
    out.push_str(&profiles(&r.comparison));
    out
}

/// What `gate --calibrate` printed for people: the A/A comparison recorded, and the noise floor
/// of each metric of `benchmark` on `profile` so far.
pub fn calibration(c: &crate::calibrate::Calibration, profile: &str, benchmark: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "recorded A/A comparison {} vs {} ({} metric(s)); as a gate it would be {}",
        c.baseline_run, c.candidate_run, c.recorded, c.a_a_verdict
    );
    let _ = writeln!(out);
    let rows: Vec<Vec<String>> = c
        .floors
        .iter()
        .map(|f| {
            vec![
                f.point.clone(),
                format!("{} {}", f.metric, f.statistic),
                f.comparisons.to_string(),
                format!("{:.2}", f.max_pct),
                f.floor_pct.map_or_else(
                    || format!("- (needs {})", c.min_comparisons),
                    |x| format!("{x:.2}"),
                ),
            ]
        })
        .collect();
    out.push_str(&yardstick_report::terminal::plain_table(
        &["POINT", "METRIC", "A/A RUNS", "MAX |Δ| %", "NOISE FLOOR %"],
        &rows,
    ));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "noise floors of {benchmark} on {profile}: the 95th percentile of |ln ratio| over A/A \
         runs, used by `gate` once a metric has {} of them",
        c.min_comparisons
    );
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::gate::{GateOptions, Verdict};
    use crate::testutil::run_data;

    #[test]
    fn the_tables_show_values_in_their_unit_and_the_verdict_with_its_reason() {
        let base = run_data("a", Path::new("/x/runs/a"), &[50.0, 51.0, 49.0, 50.5, 49.5]);
        let slow = run_data("b", Path::new("/x/runs/b"), &[80.0, 81.0, 79.0, 80.5, 79.5]);
        let report = crate::gate::gate(&base, &slow, &GateOptions::default()).unwrap();
        assert_eq!(report.verdict, Verdict::Fail);
        let text = super::report_at(&report, 100);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("A (baseline)  a") && lines[1].starts_with("B (candidate) b"));
        // The comparison: medians with their unit (ms), then B/A.
        let cmp = super::comparison(&report.comparison);
        let cmp_row = cmp.lines().find(|l| l.contains("ttft_ms p50")).unwrap();
        assert!(
            cmp_row.contains("50.0 ms") && cmp_row.contains("80.0 ms") && cmp_row.contains("1.600"),
            "{cmp}"
        );
        // The gate's row leads with the verdict; the reason is folded under it.
        let i = lines.iter().position(|l| l.contains("VERDICT")).unwrap();
        assert!(lines[i].starts_with("\x1b[1mVERDICT"), "{text}");
        assert!(lines[i + 1].starts_with("\x1b[1;31mFAIL"), "{text}");
        assert!(
            lines[i + 1].contains("50.0 ms") && lines[i + 1].contains("1.050"),
            "{text}"
        );
        assert!(
            lines[i + 2].starts_with("    ") && lines[i + 2].contains("CI ["),
            "{text}"
        );
        let plain = |l: &str| {
            let mut out = String::new();
            let mut esc = false;
            for c in l.chars() {
                match (esc, c) {
                    (_, '\x1b') => esc = true,
                    (true, 'm') => esc = false,
                    (true, _) => {}
                    (false, c) => out.push(c),
                }
            }
            out
        };
        assert!(
            text.lines().all(|l| plain(l).chars().count() <= 100),
            "{text}"
        );
    }
}
