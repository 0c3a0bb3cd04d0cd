//! Markdown for `$GITHUB_STEP_SUMMARY` and pull-request comments: the verdict first, then the
//! headline numbers in human units ([`format::human`]). GitHub-flavoured tables; no timestamps
//! beyond the run's own.

use std::fmt::Write;

use crate::format;
use crate::model::Report;
use crate::tables::headline_metrics;

/// Escapes a table cell (pipes and newlines would break the row).
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', " ")
}

fn verdict_mark(v: &str) -> &'static str {
    match v {
        "PASS" => "✅",
        "WARN" => "⚠️",
        "FAIL" => "❌",
        "INCONCLUSIVE" => "❔",
        _ => "",
    }
}

/// Rows of a compact comment's table before the rest is summarised in one line (a GitHub
/// comment holds 65,536 characters).
const COMPACT_ROWS: usize = 25;

/// Renders the report as Markdown: the full report, or the compact comment when
/// [`Report::compact`] is set.
pub fn render(report: &Report) -> String {
    match &report.compact {
        Some(c) => compact(report, c.link.as_deref()),
        None => full(report),
    }
}

/// Whether a gate row moved: its verdict is not PASS, or its interval of the change excludes no
/// change.
fn moved(m: &crate::gate::GateRow) -> bool {
    matches!(m.verdict.as_deref(), Some("FAIL" | "WARN" | "INCONCLUSIVE"))
        || m.ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0)
}

/// The pull-request comment: one verdict line, the metrics that moved with their intervals (or,
/// without a gate, each point's headline figures), failed replicates, and the link.
fn compact(report: &Report, link: Option<&str>) -> String {
    let r = &report.run;
    let run = &r.run;
    let mut out = String::new();
    match &report.gate {
        Some(g) => {
            let moved: Vec<&crate::gate::GateRow> = g.rows.iter().filter(|m| moved(m)).collect();
            let what = if g.verdict.is_some() {
                "gate"
            } else {
                "comparison"
            };
            let _ = writeln!(
                out,
                "### yardstick {what}: {} {} — `{}`",
                verdict_mark(g.verdict.as_deref().unwrap_or("")),
                g.verdict.as_deref().unwrap_or("compared"),
                cell(&run.name)
            );
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{} of {} metrics moved (baseline `{}`, candidate `{}`): {} FAIL, {} WARN, {} INCONCLUSIVE.",
                moved.len(),
                g.rows.len(),
                g.baseline_run,
                g.candidate_run,
                g.count("FAIL"),
                g.count("WARN"),
                g.count("INCONCLUSIVE")
            );
            if let Some(why) = &g.exploratory_reason {
                let _ = writeln!(out);
                let _ = writeln!(out, "> Exploratory, not enforced: {}", cell(why));
            }
            let _ = writeln!(out);
            if !moved.is_empty() {
                let _ = writeln!(
                    out,
                    "| | point | metric | baseline | candidate | Δ | {} (Δ) |",
                    format::level_header(g.level)
                );
                let _ = writeln!(out, "| --- | --- | --- | ---: | ---: | ---: | ---: |");
                for m in moved.iter().take(COMPACT_ROWS) {
                    let unit = format::metric_unit(&m.metric, &m.unit);
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} | {} | {} | {} |",
                        verdict_mark(m.verdict.as_deref().unwrap_or("")),
                        cell(&m.point),
                        cell(&m.label()),
                        format::human(m.baseline, unit),
                        format::human(m.candidate, unit),
                        format::delta_pct(m.ratio),
                        format::delta_ci(m.ci)
                    );
                }
                if moved.len() > COMPACT_ROWS {
                    let _ = writeln!(
                        out,
                        "\n… and {} more in the full report.",
                        moved.len() - COMPACT_ROWS
                    );
                }
                let _ = writeln!(out);
            }
        }
        None => {
            let _ = writeln!(
                out,
                "### yardstick: `{}` — {} ({} replicates)",
                cell(&run.name),
                run.status,
                r.replicates
            );
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "| point | metric | mean | {} |",
                format::level_header(r.level)
            );
            let _ = writeln!(out, "| --- | --- | ---: | ---: |");
            let rows: Vec<_> = r
                .points
                .iter()
                .flat_map(|p| headline_metrics(p).into_iter().map(move |m| (p, m)))
                .collect();
            for (p, m) in rows.iter().take(COMPACT_ROWS) {
                let unit = format::metric_unit(&m.metric, &m.unit);
                let _ = writeln!(
                    out,
                    "| {} | {} {} | {} | {} |",
                    cell(&p.id),
                    cell(&m.metric),
                    cell(&m.statistic),
                    cell(&format::human(m.mean, unit)),
                    cell(&format::human_ci(m.mean, m.ci, unit))
                );
            }
            if rows.len() > COMPACT_ROWS {
                let _ = writeln!(
                    out,
                    "\n… and {} more in the full report.",
                    rows.len() - COMPACT_ROWS
                );
            }
            let _ = writeln!(out);
        }
    }
    if let Some(d) = &r.diagnosis {
        let _ = writeln!(
            out,
            "**Diagnosis ({}): {}** ({} confidence) — {}",
            d.playbook,
            cell(&d.verdict),
            d.confidence,
            cell(&d.summary)
        );
        let _ = writeln!(out);
    }
    for p in &r.points {
        for f in p.failed_replicates() {
            let _ = writeln!(
                out,
                "- ❌ `{}` replicate {} failed: {}",
                cell(&p.id),
                f.replicate,
                cell(f.error.as_deref().unwrap_or(""))
            );
        }
    }
    let _ = write!(
        out,
        "<sub>run `{}` · machine profile `{}` · yardstick {}",
        run.run_id,
        run.machine_profile.as_deref().unwrap_or("-"),
        run.tool_version
    );
    if let Some(l) = link {
        let _ = write!(out, " · [full report]({l})");
    }
    let _ = writeln!(out, "</sub>");
    out
}

/// A playbook's diagnosis: verdict, summary, evidence and next steps.
fn diagnosis_md(out: &mut String, d: &yardstick_store::summary::Diagnosis) {
    let _ = writeln!(
        out,
        "**Diagnosis ({}): {}** — confidence {}. {}",
        d.playbook,
        cell(&d.verdict),
        d.confidence,
        cell(&d.summary)
    );
    let _ = writeln!(out);
    for e in &d.evidence {
        let _ = writeln!(out, "- {} (`{}`)", cell(&e.claim), e.at.replace('`', "'"));
    }
    for a in &d.actions {
        let _ = writeln!(out, "- Next: {}", cell(a));
    }
    let _ = writeln!(out);
}

/// The full report.
fn full(report: &Report) -> String {
    let r = &report.run;
    let run = &r.run;
    let mut out = String::new();
    let _ = writeln!(out, "## yardstick report: {}", cell(&run.name));
    let _ = writeln!(out);
    if let Some(g) = &report.gate
        && let Some(v) = &g.verdict
    {
        let _ = writeln!(
            out,
            "**Gate: {} {v}** — {} PASS, {} WARN, {} INCONCLUSIVE, {} FAIL (baseline `{}`)",
            verdict_mark(v),
            g.count("PASS"),
            g.count("WARN"),
            g.count("INCONCLUSIVE"),
            g.count("FAIL"),
            g.baseline_run
        );
        if let Some(why) = &g.exploratory_reason {
            let _ = writeln!(out);
            let _ = writeln!(out, "> Exploratory, not enforced: {}", cell(why));
        }
        let _ = writeln!(out);
    }
    if let Some(d) = &r.diagnosis {
        diagnosis_md(&mut out, d);
    }
    let _ = writeln!(out, "| run | status | machine profile | started | tool |");
    let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
    let _ = writeln!(
        out,
        "| `{}` | {} | `{}` | {} | yardstick {} |",
        run.run_id,
        run.status,
        run.machine_profile.as_deref().unwrap_or("-"),
        run.started_at,
        run.tool_version
    );
    let _ = writeln!(out);

    if let Some(g) = &report.gate {
        let _ = writeln!(
            out,
            "### {} `{}` → `{}`",
            if g.verdict.is_some() {
                "Gate"
            } else {
                "Comparison"
            },
            g.baseline_run,
            g.candidate_run
        );
        let _ = writeln!(out);
        if !g.spec_diffs.is_empty() || !g.env_diffs.is_empty() {
            let _ = writeln!(out, "Fields that differ:");
            for d in g.spec_diffs.iter().chain(&g.env_diffs) {
                let _ = writeln!(
                    out,
                    "- `{}`: `{}` → `{}`",
                    d.path,
                    d.baseline.replace('`', "'"),
                    d.candidate.replace('`', "'")
                );
            }
            let _ = writeln!(out);
        }
        for w in &g.warnings {
            let _ = writeln!(out, "> ⚠️ {}", cell(w));
            let _ = writeln!(out);
        }
        let _ = writeln!(
            out,
            "| point | metric | baseline | candidate | Δ | {} (Δ) | tolerance | verdict | why |",
            format::level_header(g.level)
        );
        let _ = writeln!(
            out,
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"
        );
        for m in &g.rows {
            let v = m.verdict.as_deref().unwrap_or("-");
            let unit = format::metric_unit(&m.metric, &m.unit);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} {} | {} |",
                cell(&m.point),
                cell(&m.label()),
                format::human(m.baseline, unit),
                format::human(m.candidate, unit),
                format::delta_pct(m.ratio),
                format::delta_ci(m.ci),
                m.tolerance_label(),
                verdict_mark(v),
                v,
                cell(m.reason.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(out);
    }

    let _ = writeln!(
        out,
        "### Results (mean over {} replicates, {})",
        r.replicates,
        format::level_header(r.level)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "| point | metric | mean | CI | n |");
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: |");
    for p in &r.points {
        for m in headline_metrics(p) {
            let unit = format::metric_unit(&m.metric, &m.unit);
            let _ = writeln!(
                out,
                "| {} | {} {} | {} | {} | {} |",
                cell(&p.id),
                cell(&m.metric),
                cell(&m.statistic),
                cell(&format::human(m.mean, unit)),
                cell(&format::human_ci(m.mean, m.ci, unit)),
                m.n
            );
        }
        for f in p.failed_replicates() {
            let _ = writeln!(
                out,
                "| {} | ❌ replicate {} failed: {} | | | |",
                cell(&p.id),
                f.replicate,
                cell(f.error.as_deref().unwrap_or(""))
            );
        }
    }
    if let Some(t) = crate::tables::latency(r) {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "<details><summary>Latency percentiles and the normal-assumption p99</summary>"
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "| point | latency | n | p50 | p90 | p99 | p99 if normal (μ+2.326σ) |"
        );
        let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: |");
        for row in &t.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&row[0].display()),
                row[1].display(),
                t.human(row, 2),
                t.human(row, 4),
                t.human(row, 5),
                t.human(row, 7),
                t.human(row, 8)
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "</details>");
    }
    let notes: Vec<&String> = r.notes.iter().chain(&report.warnings).collect();
    if !notes.is_empty() {
        let _ = writeln!(out);
        for n in notes {
            let _ = writeln!(out, "> {}", cell(n));
        }
    }
    out
}
