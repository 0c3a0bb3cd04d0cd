//! One self-contained HTML file: inline CSS, inline SVG plots, no script, no network
//! reference of any kind (no CDN, no web font, no external image), so it opens offline and can
//! be attached to a CI run as a single artifact. Table numbers are in human units
//! ([`Table::human`]).

use std::fmt::Write;

use crate::ReportError;
use crate::format::xml_escape as esc;
use crate::model::Report;
use crate::plots::{self, Section};
use crate::tables::{self, Table};

/// The report's style sheet (the server's dashboard pages use it too).
pub const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:1.6em;margin:0 0 4px}h2{margin-top:36px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:1em;margin:18px 0 6px}
.sub{color:#555}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.w{white-space:normal;min-width:320px}.scroll{overflow-x:auto}
figure{margin:12px 0 24px;background:#fff;border:1px solid #e3e3e3;padding:8px}
figure svg{display:block;max-width:100%;height:auto}
figcaption{font-size:13px;color:#444;margin-bottom:4px}
.note{color:#666;font-size:13px;margin:4px 0}
.badge{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:600}
.PASS{background:#2c9f2c}.FAIL{background:#d62728}.WARN,.INCONCLUSIVE{background:#e69100}
pre{background:#fff;border:1px solid #ddd;padding:10px;overflow:auto;font-size:12px}
nav a{margin-right:12px}
.warn{background:#fff6e0;border-left:4px solid #e69100;padding:6px 10px;margin:6px 0}
";

/// Writes a table as HTML (every cell escaped), at most `max_rows` rows with a note on the rest.
pub fn table_html(out: &mut String, t: &Table, max_rows: usize) {
    let _ = writeln!(out, "<div class=\"scroll\"><table><thead><tr>");
    for h in &t.headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for r in t.rows.iter().take(max_rows) {
        let _ = write!(out, "<tr>");
        for (i, c) in r.iter().enumerate() {
            let text = t.human(r, i);
            let class = match c {
                tables::Cell::Num(_) => " class=\"n\"",
                _ if text.chars().count() > 48 => " class=\"w\"",
                _ => "",
            };
            let text = match text.as_str() {
                v @ ("PASS" | "FAIL" | "WARN" | "INCONCLUSIVE") => {
                    format!("<span class=\"badge {v}\">{v}</span>")
                }
                _ => esc(&text),
            };
            let _ = write!(out, "<td{class}>{text}</td>");
        }
        let _ = writeln!(out, "</tr>");
    }
    let _ = writeln!(out, "</tbody></table></div>");
    if t.rows.len() > max_rows {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more rows in the CSV and Excel outputs.</p>",
            t.rows.len() - max_rows
        );
    }
}

fn section_html(out: &mut String, s: &Section) {
    let _ = writeln!(out, "<h2 id=\"{}\">{}</h2>", s.id, esc(&s.title));
    if !s.figures.is_empty() {
        let _ = writeln!(out, "<p class=\"sub\">{}</p>", esc(&s.caption));
    }
    for f in &s.figures {
        let _ = writeln!(
            out,
            "<figure><figcaption>{}</figcaption>\n{}\n</figure>",
            esc(&f.title),
            f.svg
        );
    }
    if let Some((head, rows)) = &s.table {
        let _ = write!(out, "<table><thead><tr>");
        for h in head {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        let _ = writeln!(out, "</tr></thead><tbody>");
        for r in rows {
            let _ = write!(out, "<tr>");
            for c in r {
                let _ = write!(out, "<td>{}</td>", esc(c));
            }
            let _ = writeln!(out, "</tr>");
        }
        let _ = writeln!(out, "</tbody></table>");
    }
    for n in &s.notes {
        let _ = writeln!(out, "<p class=\"note\">Not plotted: {}.</p>", esc(n));
    }
}

/// The plot sections of a report, in reading order.
pub fn sections(report: &Report) -> Result<Vec<Section>, ReportError> {
    let r = &report.run;
    let mut out = Vec::new();
    if let Some(g) = &report.gate {
        out.push(plots::gate_ratios(g)?);
    }
    out.push(plots::latency_histograms(r)?);
    out.push(plots::latency_cdf(r)?);
    out.push(plots::throughput_latency(r)?);
    let runs: Vec<&crate::model::RunReport> = std::iter::once(r).chain(&report.others).collect();
    out.extend(plots::frontier(&runs)?);
    out.extend(plots::capacity(r)?);
    out.extend(plots::turns(r)?);
    out.extend(plots::profiles(r)?);
    out.push(plots::percentiles(r)?);
    out.push(plots::step_times(r)?);
    out.push(plots::scaling(r)?);
    out.extend(plots::components(r)?);
    out.extend(plots::nodes(r)?);
    out.push(plots::rank_boxes(r)?);
    out.push(plots::telemetry(r)?);
    Ok(out)
}

/// Renders the report as one HTML document.
pub fn render(report: &Report) -> Result<String, ReportError> {
    let r = &report.run;
    let run = &r.run;
    let sections = sections(report)?;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    );
    let _ = writeln!(
        o,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    );
    // An empty data: icon keeps browsers from asking the file system (or a server) for one.
    let _ = writeln!(o, "<link rel=\"icon\" href=\"data:,\">");
    let _ = writeln!(
        o,
        "<title>yardstick report: {} ({})</title>",
        esc(&run.name),
        esc(&run.run_id)
    );
    let _ = writeln!(o, "<style>{CSS}</style></head><body><main>");
    let _ = writeln!(o, "<h1>{}</h1>", esc(&run.name));
    let _ = writeln!(
        o,
        "<p class=\"sub\">run <code>{}</code> · {} · machine profile <code>{}</code> · started {}</p>",
        esc(&run.run_id),
        run.status,
        esc(run.machine_profile.as_deref().unwrap_or("-")),
        esc(&run.started_at)
    );
    if let Some(g) = &report.gate
        && let Some(v) = &g.verdict
    {
        let _ = writeln!(
            o,
            "<p>Gate against baseline <code>{}</code>: <span class=\"badge {v}\">{v}</span> \
             ({} PASS, {} WARN, {} INCONCLUSIVE, {} FAIL)</p>",
            esc(&g.baseline_run),
            g.count("PASS"),
            g.count("WARN"),
            g.count("INCONCLUSIVE"),
            g.count("FAIL")
        );
        if let Some(why) = &g.exploratory_reason {
            let _ = writeln!(
                o,
                "<p class=\"warn\">Exploratory, not enforced: {}</p>",
                esc(why)
            );
        }
    }
    for w in r.notes.iter().chain(&report.warnings) {
        let _ = writeln!(o, "<p class=\"warn\">{}</p>", esc(w));
    }
    let _ = write!(o, "<nav><a href=\"#summary\">Summary</a>");
    if report.gate.is_some() {
        let _ = write!(o, "<a href=\"#gate\">Gate</a>");
    }
    for s in &sections {
        if !s.figures.is_empty() {
            let _ = write!(o, "<a href=\"#{}\">{}</a>", s.id, esc(&s.title));
        }
    }
    let _ = writeln!(
        o,
        "<a href=\"#environment\">Environment</a><a href=\"#spec\">Spec</a></nav>"
    );

    let _ = writeln!(o, "<h2 id=\"summary\">Summary</h2>");
    let summary = tables::summary(r);
    let _ = writeln!(o, "<p class=\"sub\">{}</p>", esc(&summary.title));
    table_html(&mut o, &summary, 500);
    if let Some(t) = tables::latency(r) {
        let _ = writeln!(o, "<h3>{}</h3>", esc(&t.title));
        table_html(&mut o, &t, 500);
    }
    if let Some(t) = tables::scaling(r) {
        let _ = writeln!(o, "<h3>{}</h3>", esc(&t.title));
        table_html(&mut o, &t, 500);
    }
    if let (Some(g), Some(t)) = (&report.gate, tables::gate(report)) {
        let _ = writeln!(o, "<h2 id=\"gate\">{}</h2>", esc(&t.title));
        for d in g.spec_diffs.iter().chain(&g.env_diffs) {
            let _ = writeln!(
                o,
                "<p class=\"note\">differs: <code>{}</code>: {} → {}</p>",
                esc(&d.path),
                esc(&d.baseline),
                esc(&d.candidate)
            );
        }
        for w in &g.warnings {
            let _ = writeln!(o, "<p class=\"warn\">{}</p>", esc(w));
        }
        table_html(&mut o, &t, 500);
    }
    for s in &sections {
        section_html(&mut o, s);
    }

    let _ = writeln!(o, "<h2 id=\"points\">Points</h2>");
    for (i, p) in r.points.iter().enumerate() {
        let t = tables::point(i, p, r.level);
        let _ = writeln!(
            o,
            "<details><summary>{}</summary>",
            esc(&format!("{} — {} statistics", t.title, t.rows.len()))
        );
        let _ = writeln!(
            o,
            "<pre>{}</pre>",
            esc(&serde_json::to_string_pretty(&p.work).unwrap_or_default())
        );
        table_html(&mut o, &t, 1000);
        let _ = writeln!(o, "</details>");
    }

    let _ = writeln!(
        o,
        "<h2 id=\"environment\">Environment and machine profile</h2>"
    );
    let _ = writeln!(
        o,
        "<p>Machine profile <code>{}</code></p>",
        esc(run.machine_profile.as_deref().unwrap_or("-"))
    );
    table_html(&mut o, &tables::run_table(r), 100);
    if r.env.is_null() {
        let _ = writeln!(o, "<p class=\"note\">env.json is missing for this run.</p>");
    } else {
        table_html(&mut o, &tables::environment(&r.env), 2000);
    }
    if let Some(t) = tables::telemetry(r) {
        let _ = writeln!(o, "<h3>{}</h3>", esc(&t.title));
        table_html(&mut o, &t, 200);
    }
    let _ = writeln!(o, "<h2 id=\"spec\">Spec</h2>");
    match &r.spec_yaml {
        Some(y) => {
            let _ = writeln!(o, "<pre>{}</pre>", esc(y));
        }
        None => {
            let _ = writeln!(
                o,
                "<p class=\"note\">spec.yaml is missing for this run.</p>"
            );
        }
    }
    let _ = writeln!(
        o,
        "<p class=\"note\">yardstick {} · report of run {}</p>",
        esc(&run.tool_version),
        esc(&run.run_id)
    );
    let _ = writeln!(o, "</main></body></html>");
    Ok(o)
}
