//! The report for a terminal: aligned tables with CIs and deltas. ANSI styles are always
//! emitted; the binary writes through `anstream`, which strips them when stdout is not a
//! terminal (or `--color never`, `NO_COLOR`).

use std::fmt::Write;

use crate::format::{self, num};
use crate::model::Report;
use crate::tables::headline_metrics;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RED: &str = "\x1b[1;31m";
const GREEN: &str = "\x1b[1;32m";
const YELLOW: &str = "\x1b[1;33m";
const RESET: &str = "\x1b[0m";

/// The style of a verdict.
fn verdict_style(v: &str) -> &'static str {
    match v {
        "PASS" => GREEN,
        "FAIL" => RED,
        "WARN" | "INCONCLUSIVE" => YELLOW,
        _ => "",
    }
}

/// A column's alignment.
#[derive(Clone, Copy, PartialEq)]
enum Align {
    Left,
    Right,
}

/// Writes an aligned table: bold headers, two spaces between columns; a cell may carry a style.
fn table(out: &mut String, headers: &[&str], align: &[Align], rows: &[Vec<(String, &str)>]) {
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, (c, _)) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let last = headers.len() - 1;
    let line = |cells: Vec<(String, &str)>| -> String {
        let mut s = String::new();
        for (i, (c, style)) in cells.into_iter().enumerate() {
            let pad = " ".repeat(width[i].saturating_sub(c.chars().count()));
            let styled = if style.is_empty() {
                c
            } else {
                format!("{style}{c}{RESET}")
            };
            if i > 0 {
                s.push_str("  ");
            }
            match align[i] {
                Align::Right => {
                    s.push_str(&pad);
                    s.push_str(&styled);
                }
                Align::Left if i == last => s.push_str(&styled),
                Align::Left => {
                    s.push_str(&styled);
                    s.push_str(&pad);
                }
            }
        }
        s.trim_end().to_string()
    };
    let head: Vec<(String, &str)> = headers.iter().map(|h| (h.to_string(), BOLD)).collect();
    let _ = writeln!(out, "{}", line(head));
    for r in rows {
        let _ = writeln!(out, "{}", line(r.clone()));
    }
}

/// Renders the report for a terminal.
pub fn render(report: &Report) -> String {
    let r = &report.run;
    let mut out = String::new();
    let run = &r.run;
    let _ = writeln!(
        out,
        "{BOLD}{}{RESET}  run {}  {}  {}",
        run.name,
        run.run_id,
        run.status,
        run.machine_profile.as_deref().unwrap_or("-")
    );
    let _ = writeln!(
        out,
        "{DIM}started {}  ended {}  yardstick {}  {} replicates per point{RESET}",
        run.started_at,
        run.ended_at.as_deref().unwrap_or("-"),
        run.tool_version,
        r.replicates
    );
    for n in &r.notes {
        let _ = writeln!(out, "{YELLOW}note{RESET}: {n}");
    }
    let _ = writeln!(out);

    let level = format::level_header(r.level);
    let mut rows = Vec::new();
    for p in &r.points {
        for m in headline_metrics(p) {
            rows.push(vec![
                (p.id.clone(), ""),
                (format!("{} {}", m.metric, m.statistic), ""),
                (num(m.mean), ""),
                (format::ci(m.ci), ""),
                (format::pm_pct(m.half_width_pct()), DIM),
                (m.unit.clone(), ""),
                (m.n.to_string(), ""),
            ]);
        }
        for f in p.failed_replicates() {
            rows.push(vec![
                (p.id.clone(), ""),
                (format!("replicate {} failed", f.replicate), RED),
                (String::new(), ""),
                (String::new(), ""),
                (String::new(), ""),
                (String::new(), ""),
                (String::new(), ""),
            ]);
        }
    }
    use Align::*;
    if rows.is_empty() {
        let _ = writeln!(out, "no results stored for this run");
    } else {
        table(
            &mut out,
            &["POINT", "METRIC", "MEAN", &level, "±", "UNIT", "N"],
            &[Left, Left, Right, Right, Right, Left, Right],
            &rows,
        );
    }

    // The tail next to its normal-assumption estimate (docs/methodology.md#percentile-claims).
    if let Some(t) = crate::tables::latency(r) {
        let _ = writeln!(out);
        let rows: Vec<Vec<(String, &str)>> = t
            .rows
            .iter()
            .map(|row| {
                [0, 1, 2, 4, 7, 8, 9]
                    .iter()
                    .map(|&i| (row[i].display(), ""))
                    .collect()
            })
            .collect();
        table(
            &mut out,
            &["POINT", "LATENCY", "N", "P50", "P99", "P99 NORMAL", "ERR %"],
            &[Left, Left, Right, Right, Right, Right, Right],
            &rows,
        );
    }

    if let Some(g) = &report.gate {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{BOLD}{}{RESET} baseline {}  candidate {}",
            if g.verdict.is_some() {
                "gate"
            } else {
                "comparison"
            },
            g.baseline_run,
            g.candidate_run
        );
        for d in g.spec_diffs.iter().chain(&g.env_diffs) {
            let _ = writeln!(
                out,
                "  differs: {}: {} -> {}",
                d.path, d.baseline, d.candidate
            );
        }
        for w in &g.warnings {
            let _ = writeln!(out, "{YELLOW}warning{RESET}: {w}");
        }
        let level = format!("{} (Δ)", format::level_header(g.level));
        let rows: Vec<Vec<(String, &str)>> = g
            .rows
            .iter()
            .map(|m| {
                let v = m.verdict.clone().unwrap_or_else(|| "-".into());
                let style = verdict_style(&v);
                vec![
                    (m.point.clone(), ""),
                    (m.label(), ""),
                    (num(m.baseline), ""),
                    (num(m.candidate), ""),
                    (format::delta_pct(m.ratio), ""),
                    (format::delta_ci(m.ci), ""),
                    (m.tolerance_label(), ""),
                    (v, style),
                ]
            })
            .collect();
        table(
            &mut out,
            &[
                "POINT", "METRIC", "BASE", "CAND", "Δ", &level, "TOL", "VERDICT",
            ],
            &[Left, Left, Right, Right, Right, Right, Right, Left],
            &rows,
        );
        if let Some(v) = &g.verdict {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "gate: {}{v}{RESET} ({} PASS, {} WARN, {} INCONCLUSIVE, {} FAIL)",
                verdict_style(v),
                g.count("PASS"),
                g.count("WARN"),
                g.count("INCONCLUSIVE"),
                g.count("FAIL")
            );
            if let Some(why) = &g.exploratory_reason {
                let _ = writeln!(out, "{YELLOW}exploratory{RESET}: {why}");
            }
        }
    }
    for w in &report.warnings {
        let _ = writeln!(out, "{YELLOW}warning{RESET}: {w}");
    }
    out
}
