//! The report for a terminal: aligned tables with CIs and deltas, numbers in human units
//! ([`format::human`], [`format::human_ci`]). ANSI styles are always
//! emitted; the binary writes through `anstream`, which strips them when stdout is not a
//! terminal (or `--color never`, `NO_COLOR`).

use std::fmt::Write;

use crate::format;
use crate::model::Report;
use crate::tables::headline_metrics;

pub(crate) use yardstick_stats::text::style::{BOLD, DIM, RESET};
const RED: &str = "\x1b[1;31m";
const GREEN: &str = "\x1b[1;32m";
const YELLOW: &str = "\x1b[1;33m";

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right (the last column is not padded).
    Left,
    /// Padded on the left.
    Right,
}

/// The widths of a table's columns, in characters.
fn widths<'a>(
    headers: &[&str],
    rows: impl Iterator<Item = impl Iterator<Item = &'a str>>,
) -> Vec<usize> {
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.enumerate().take(headers.len()) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    width
}

/// One line of an aligned table: two spaces between columns, trailing spaces trimmed; a cell
/// may carry a style (an ANSI escape, reset after the cell).
fn line(width: &[usize], align: &[Align], cells: Vec<(String, &str)>) -> String {
    let last = width.len() - 1;
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
}

/// Writes an aligned table: bold headers, two spaces between columns; a cell may carry a style.
fn table(out: &mut String, headers: &[&str], align: &[Align], rows: &[Vec<(String, &str)>]) {
    let width = widths(
        headers,
        rows.iter().map(|r| r.iter().map(|(c, _)| c.as_str())),
    );
    let head: Vec<(String, &str)> = headers.iter().map(|h| (h.to_string(), BOLD)).collect();
    let _ = writeln!(out, "{}", line(&width, align, head));
    for r in rows {
        let _ = writeln!(out, "{}", line(&width, align, r.clone()));
    }
}

/// Each column's alignment: right when every cell in it is a number or `-`, else left.
fn numeric_right(columns: usize, rows: &[Vec<String>]) -> Vec<Align> {
    (0..columns)
        .map(|i| {
            let numeric = rows.iter().all(|r| {
                r.get(i)
                    .is_none_or(|c| c.parse::<f64>().is_ok() || c == "-")
            });
            if numeric { Align::Right } else { Align::Left }
        })
        .collect()
}

/// An aligned table of plain cells, as the command line prints lists: a bold header line, two
/// spaces between columns, a column right-aligned when every cell in it is a number or `-`.
/// Every row has one cell per header.
pub fn plain_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let width = widths(headers, rows.iter().map(|r| r.iter().map(String::as_str)));
    let align = numeric_right(headers.len(), rows);
    let plain = |cells: &[String]| cells.iter().map(|c| (c.clone(), "")).collect();
    let head: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    let mut out = format!("{BOLD}{}{RESET}\n", line(&width, &align, plain(&head)));
    for r in rows {
        out.push_str(&line(&width, &align, plain(r)));
        out.push('\n');
    }
    out
}

/// The width tables fold to: `COLUMNS` when set, else the terminal's width when stdout is a
/// terminal, else 100 (a log or a pipe).
pub fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| *w >= 20)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
        .unwrap_or(100)
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stands on
/// its own line).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let len = cur.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// [`plain_table`] whose rows each carry a note (a sentence too long for a column: why a
/// verdict was given), printed under its row, indented, dimmed and wrapped to `width`. The
/// first column's cells may be verdicts (`PASS`, `FAIL`, ...), which are coloured.
pub fn table_with_notes(
    headers: &[&str],
    rows: &[Vec<String>],
    notes: &[String],
    width: usize,
) -> String {
    let col = widths(headers, rows.iter().map(|r| r.iter().map(String::as_str)));
    let align = numeric_right(headers.len(), rows);
    let head: Vec<(String, &str)> = headers.iter().map(|h| (h.to_string(), BOLD)).collect();
    let mut out = format!("{}\n", line(&col, &align, head));
    const INDENT: &str = "    ";
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<(String, &str)> = r
            .iter()
            .enumerate()
            .map(|(k, c)| (c.clone(), if k == 0 { verdict_style(c) } else { "" }))
            .collect();
        out.push_str(&line(&col, &align, cells));
        out.push('\n');
        if let Some(note) = notes.get(i).filter(|n| !n.is_empty()) {
            for l in wrap(note, width.saturating_sub(INDENT.len()).max(30)) {
                let _ = writeln!(out, "{INDENT}{DIM}{l}{RESET}");
            }
        }
    }
    out
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
    if let Some(d) = &r.diagnosis {
        let _ = writeln!(
            out,
            "{BOLD}diagnosis ({}): {}{RESET} — confidence {}\n  {}",
            d.playbook, d.verdict, d.confidence, d.summary
        );
        for e in &d.evidence {
            let _ = writeln!(out, "  {DIM}-{RESET} {} {DIM}({}){RESET}", e.claim, e.at);
        }
        for a in &d.actions {
            let _ = writeln!(out, "  {DIM}next:{RESET} {a}");
        }
        let _ = writeln!(out);
    }

    let level = format::level_header(r.level);
    let mut rows = Vec::new();
    for p in &r.points {
        for m in headline_metrics(p) {
            let unit = format::metric_unit(&m.metric, &m.unit);
            rows.push(vec![
                (p.id.clone(), ""),
                (format!("{} {}", m.metric, m.statistic), ""),
                (format::human(m.mean, unit), ""),
                (format::human_ci(m.mean, m.ci, unit), DIM),
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
            ]);
        }
    }
    use Align::*;
    if rows.is_empty() {
        let _ = writeln!(out, "no results stored for this run");
    } else {
        table(
            &mut out,
            &["POINT", "METRIC", "MEAN", &level, "N"],
            &[Left, Left, Right, Right, Right],
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
                    .map(|&i| (t.human(row, i), ""))
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
                let unit = format::metric_unit(&m.metric, &m.unit);
                vec![
                    (m.point.clone(), ""),
                    (m.label(), ""),
                    (format::human(m.baseline, unit), ""),
                    (format::human(m.candidate, unit), ""),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_wrap_under_their_rows_at_the_width() {
        let rows = vec![
            vec!["FAIL".to_string(), "p".to_string(), "1.2".to_string()],
            vec!["PASS".to_string(), "q".to_string(), "1.0".to_string()],
        ];
        let notes = vec![
            "one two three four five six seven eight nine ten eleven twelve".to_string(),
            String::new(),
        ];
        let out = table_with_notes(&["VERDICT", "POINT", "B/A"], &rows, &notes, 40);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(
            lines[1].contains("FAIL") && lines[1].contains("1.2"),
            "{out}"
        );
        assert_eq!(
            lines[2],
            "    \x1b[2mone two three four five six seven\x1b[0m"
        );
        assert_eq!(lines[3], "    \x1b[2meight nine ten eleven twelve\x1b[0m");
        assert!(lines[4].contains("PASS"), "{out}");
        assert_eq!(wrap("a verylongword b", 4), vec!["a", "verylongword", "b"]);
    }

    #[test]
    fn plain_tables_align_numbers_right_and_text_left() {
        let rows = vec![
            vec!["a".to_string(), "1.5".to_string(), "x y".to_string()],
            vec!["longer".to_string(), "-".to_string(), "".to_string()],
        ];
        assert_eq!(
            plain_table(&["NAME", "VALUE", "NOTE"], &rows),
            "\x1b[1mNAME    VALUE  NOTE\x1b[0m\na         1.5  x y\nlonger      -\n"
        );
        // No rows: every column counts as numeric; the header is as wide as itself.
        assert_eq!(plain_table(&["A", "BB"], &[]), "\x1b[1mA  BB\x1b[0m\n");
    }
}
