//! One self-contained HTML file: inline CSS, inline SVG plots, no script, no network
//! reference of any kind (no CDN, no web font, no external image), so it opens offline and can
//! be attached to a CI run as a single artifact. Table numbers are in human units
//! ([`Table::human`]).

use std::fmt::Write;

use crate::ReportError;
use crate::format::{human, human_with_ci, metric_unit, xml_escape as esc};
use crate::gate::GateView;
use crate::model::{MetricStat, PointReport, Report, RunReport};
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
td.t{white-space:normal;overflow-wrap:anywhere;min-width:4em}
td.w{white-space:normal;overflow-wrap:anywhere;min-width:14em}.scroll{overflow-x:auto}
tr.lead>td{border-bottom:0}
tr.why>td{white-space:normal;overflow-wrap:anywhere;border-top:0;color:#555;padding:0 8px 5px 28px}
figure{margin:12px 0 24px;background:#fff;border:1px solid #e3e3e3;padding:8px}
figure svg{display:block;max-width:100%;height:auto}
figcaption{font-size:13px;color:#444;margin-bottom:4px}
.note{color:#666;font-size:13px;margin:4px 0}
.badge{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:600}
.PASS{background:#2c9f2c}.FAIL{background:#d62728}.WARN,.INCONCLUSIVE{background:#e69100}
pre{background:#fff;border:1px solid #ddd;padding:10px;overflow:auto;font-size:12px}
nav a{margin-right:12px}
.warn{background:#fff6e0;border-left:4px solid #e69100;padding:6px 10px;margin:6px 0}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0 18px}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:150px}
.card .k{font-size:12px;color:#555}.card .v{font-size:20px;font-weight:600}
.card .s{font-size:12px;color:#555}
.card.bad{border-color:#d62728;background:#fdeeee}.card.good{border-color:#2c9f2c}
.headline b,.headline .more{white-space:nowrap}.headline .more{color:#666;font-size:12px}
details>summary{cursor:pointer;font-weight:600;margin:8px 0}
";

/// A playbook's diagnosis: the verdict and confidence, the summary, the evidence (each claim
/// with the point it was measured at and its figures), the actions, and the rule, folded.
pub fn diagnosis_card(o: &mut String, d: &yardstick_store::summary::Diagnosis) {
    let class = match d.verdict.as_str() {
        "no-knee" => "PASS",
        "inconclusive" => "INCONCLUSIVE",
        _ => "FAIL",
    };
    let _ = writeln!(
        o,
        "<h2 id=\"diagnosis\">Diagnosis: {}</h2>",
        esc(&d.question)
    );
    let _ = writeln!(
        o,
        "<p><span class=\"badge {class}\">{}</span> confidence {} · playbook <code>{}</code></p>",
        esc(&d.verdict),
        esc(&d.confidence),
        esc(&d.playbook)
    );
    let _ = writeln!(o, "<p><b>{}</b></p>", esc(&d.summary));
    if !d.evidence.is_empty() {
        let _ = writeln!(o, "<p class=\"sub\">Evidence</p><ul>");
        for e in &d.evidence {
            let figures: Vec<String> = e
                .figures
                .iter()
                .map(|(k, v)| format!("{}={}", esc(k), v))
                .collect();
            let _ = writeln!(
                o,
                "<li>{} <span class=\"note\">at <code>{}</code>: {}</span></li>",
                esc(&e.claim),
                esc(&e.at),
                figures.join(", ")
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    if !d.actions.is_empty() {
        let _ = writeln!(o, "<p class=\"sub\">Next</p><ul>");
        for a in &d.actions {
            let _ = writeln!(o, "<li>{}</li>", esc(a));
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(
        o,
        "<details><summary>The rule</summary><p class=\"note\">{}</p></details>",
        esc(&d.rule)
    );
}

/// Writes a table as HTML (every cell escaped), at most `max_rows` rows with a note on the rest.
/// Numbers keep to one line; text may wrap, and break inside a word (a long point id or metric
/// name) where the page is too narrow for it, so the table fits the page.
pub fn table_html(out: &mut String, t: &Table, max_rows: usize) {
    let cols: Vec<usize> = (0..t.headers.len()).collect();
    write_table(out, t, &cols, None, max_rows);
}

/// [`table_html`] for a table whose rows each carry a verdict and a sentence saying why (the
/// gate's, [`tables::gate`]): the `lead` column (the verdict) first, then the others in order,
/// and the `note` column's text (the reason) not in a column but on a line of its own under its
/// row, spanning the table and wrapping, as [`crate::terminal::table_with_notes`] prints it on
/// a terminal. A lead column with no value in any row (a comparison's) is left out. A column
/// name not in the table is ignored.
pub fn table_with_notes_html(out: &mut String, t: &Table, lead: &str, note: &str, max_rows: usize) {
    let find = |name: &str| t.headers.iter().position(|h| h == name);
    let (lead, note) = (find(lead), find(note));
    let shown = lead.filter(|&l| {
        t.rows
            .iter()
            .any(|r| !matches!(r.get(l), None | Some(tables::Cell::Empty)))
    });
    let cols: Vec<usize> = shown
        .into_iter()
        .chain((0..t.headers.len()).filter(|&i| Some(i) != lead && Some(i) != note))
        .collect();
    write_table(out, t, &cols, note, max_rows);
}

/// The gate's (or a comparison's) table: [`table_with_notes_html`] led by the verdict, each
/// reason under its row.
pub fn gate_table_html(out: &mut String, t: &Table, max_rows: usize) {
    table_with_notes_html(out, t, "verdict", "reason", max_rows);
}

/// Writes columns `cols` of `t` in that order, and column `note`'s text under each row.
fn write_table(out: &mut String, t: &Table, cols: &[usize], note: Option<usize>, max_rows: usize) {
    let _ = writeln!(out, "<div class=\"scroll\"><table><thead><tr>");
    for &i in cols {
        let _ = write!(
            out,
            "<th>{}</th>",
            esc(&tables::column_name(&t.headers[i], t.level))
        );
    }
    let _ = writeln!(out, "</tr></thead><tbody>");
    for r in t.rows.iter().take(max_rows) {
        let why = note.and_then(|k| r.get(k)).and_then(|c| match c {
            tables::Cell::Text(s) if !s.trim().is_empty() => Some(s.as_str()),
            _ => None,
        });
        let _ = write!(
            out,
            "<tr{}>",
            if why.is_some() { " class=\"lead\"" } else { "" }
        );
        for &i in cols {
            let text = t.human(r, i);
            let class = match r.get(i) {
                Some(tables::Cell::Num(_)) => " class=\"n\"",
                // A sentence wraps in a column of its own width; a name (a point id) breaks.
                Some(tables::Cell::Text(_)) if text.chars().count() > 48 && text.contains(' ') => {
                    " class=\"w\""
                }
                Some(tables::Cell::Text(_)) if !is_verdict(&text) => " class=\"t\"",
                _ => "",
            };
            let text = if is_verdict(&text) {
                format!("<span class=\"badge {text}\">{text}</span>")
            } else {
                esc(&text)
            };
            let _ = write!(out, "<td{class}>{text}</td>");
        }
        let _ = writeln!(out, "</tr>");
        if let Some(why) = why {
            let _ = writeln!(
                out,
                "<tr class=\"why\"><td colspan=\"{}\">{}</td></tr>",
                cols.len(),
                esc(why)
            );
        }
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

fn is_verdict(text: &str) -> bool {
    matches!(text, "PASS" | "FAIL" | "WARN" | "INCONCLUSIVE")
}

/// One headline card: a key, its value (HTML), a line under it; `class` is `good`, `bad` or
/// empty.
pub fn card(o: &mut String, class: &str, key: &str, value_html: &str, sub: &str) {
    let _ = write!(
        o,
        "<div class=\"card {class}\"><div class=\"k\">{}</div><div class=\"v\">{}</div>\
         <div class=\"s\">{}</div></div>",
        esc(key),
        value_html,
        esc(sub)
    );
}

/// The SLO a serving point was held to: its component layer's (`component.<i>.…`), else the
/// first bound of each objective over the spec's layers; none for other points or without a
/// readable spec.
pub fn slo_of(spec_yaml: Option<&str>, p: &PointReport) -> yardstick_spec::model::Slo {
    let mut out = yardstick_spec::model::Slo::default();
    if p.kind != "serve" {
        return out;
    }
    let spec = spec_yaml.and_then(|s| yardstick_spec::check_bytes(s.as_bytes()).spec);
    let layers = spec
        .and_then(|s| s.spec)
        .and_then(|s| s.layers)
        .and_then(|l| l.component)
        .unwrap_or_default();
    let own =
        p.id.strip_prefix("component.")
            .and_then(|rest| rest.split(['.', '/']).next())
            .and_then(|i| i.parse::<usize>().ok());
    for (i, l) in layers.into_iter().enumerate() {
        if own.is_some_and(|k| k != i) {
            continue;
        }
        if let Some(s) = l.slo {
            out.ttft_ms = out.ttft_ms.or(s.ttft_ms);
            out.tpot_ms = out.tpot_ms.or(s.tpot_ms);
            out.e2e_ms = out.e2e_ms.or(s.e2e_ms);
        }
    }
    out
}

/// A name people read for a headline figure: `TTFT p99`, `output token throughput`, or the
/// catalogue id for the rest (`memory.triad`, `gemm.f32.peak`).
fn figure_label(metric: &str, statistic: &str) -> String {
    let name = match metric {
        "ttft_ms" => "TTFT",
        "tpot_ms" => "TPOT",
        "itl_ms" => "ITL",
        "e2e_ms" => "E2E latency",
        "step_time_s" => "step time",
        "mfu" => "MFU",
        m if !m.contains('.') => return plain_label(m, statistic),
        m => m,
    };
    match statistic {
        "value" | "aggregate" => name.to_string(),
        s => format!("{name} {s}"),
    }
}

fn plain_label(metric: &str, statistic: &str) -> String {
    let name = match metric {
        "wall_s" => "wall time".to_string(),
        "max_rss_bytes" => "max RSS".to_string(),
        "peak_mem_bytes" => "peak memory".to_string(),
        m => {
            let m = m.replace("_per_s", "/s");
            let m = ["_ms", "_s", "_bytes"]
                .iter()
                .find_map(|u| m.strip_suffix(u))
                .unwrap_or(&m)
                .to_string();
            m.replace('_', " ")
        }
    };
    match statistic {
        "value" | "aggregate" => name,
        s => format!("{name} {s}"),
    }
}

/// At most this many figures per point.
const CARDS_PER_POINT: usize = 6;

/// The (metric, statistic) pairs of `metrics`.
fn pairs(metrics: &[MetricStat]) -> Vec<(&str, &str)> {
    metrics
        .iter()
        .map(|m| (m.metric.as_str(), m.statistic.as_str()))
        .collect()
}

/// The statistics of `metrics` that `picks` names, in its order.
fn picked<'m>(metrics: &'m [MetricStat], picks: &[crate::headlines::Pick]) -> Vec<&'m MetricStat> {
    picks
        .iter()
        .filter_map(|k| {
            metrics
                .iter()
                .find(|m| m.metric == k.metric && m.statistic == k.statistic)
        })
        .collect()
}

/// The figures a point leads with, among its `metrics`, in reading order
/// ([`crate::headlines::picks`]): its headline cards' ([`point_cards`]).
pub fn headline_figures(metrics: &[MetricStat]) -> Vec<&MetricStat> {
    picked(metrics, &crate::headlines::picks(&pairs(metrics)))
}

/// A run's headline in a line, for a list of runs: of the first of its `points` (id and
/// metrics) with a headline figure, the first two of its cards' figures
/// ([`headline_figures`], [`crate::headlines::first_two`]: a serving point's request rate and
/// TTFT, a training point's step time and tokens/s, a micro point's figure), each labelled and
/// valued as on its card (the mean in human units; its interval and the point in the element's
/// title), then how many other points the run has. Empty when no point has a headline figure.
pub fn headline_line(points: &[(String, Vec<MetricStat>)]) -> String {
    let Some((id, figures)) = points.iter().find_map(|(id, metrics)| {
        let have = pairs(metrics);
        let two = picked(
            metrics,
            &crate::headlines::first_two(&crate::headlines::picks(&have)),
        );
        (!two.is_empty()).then_some((id, two))
    }) else {
        return String::new();
    };
    let mut title = id.clone();
    let mut o = String::new();
    for (i, m) in figures.iter().enumerate() {
        let unit = metric_unit(&m.metric, &m.unit);
        let label = figure_label(&m.metric, &m.statistic);
        let _ = write!(
            o,
            "{}<span class=\"fig\">{} <b>{}</b></span>",
            if i > 0 { " · " } else { "" },
            esc(&label),
            esc(&human(m.mean, unit))
        );
        let _ = write!(title, "\n{label}: {}", human_with_ci(m.mean, m.ci, unit));
    }
    if points.len() > 1 {
        let _ = write!(
            o,
            " <span class=\"more\">+{} point{}</span>",
            points.len() - 1,
            if points.len() == 2 { "" } else { "s" }
        );
    }
    format!(
        "<span class=\"headline\" title=\"{}\">{o}</span>",
        esc(&title)
    )
}

/// The headline cards of the first `max` points of `r`, each point under its id: its headline
/// figures ([`crate::headlines::picks`]) as the mean over replicates with the interval in
/// human units; the p99 of each objective its SLO bounds, met or missed; the gate's verdict on
/// a figure when `gate` judged it; the bottleneck of a training point; its failed replicates.
/// `rest` says where the points past `max` are.
pub fn point_cards(o: &mut String, r: &RunReport, gate: Option<&GateView>, max: usize, rest: &str) {
    for p in r.points.iter().take(max) {
        let _ = writeln!(o, "<h3>{}</h3><div class=\"cards\">", esc(&p.id));
        let mut shown: Vec<&MetricStat> = headline_figures(&p.metrics)
            .into_iter()
            .take(CARDS_PER_POINT)
            .collect();
        let slo = slo_of(r.spec_yaml.as_deref(), p);
        let bounds: Vec<(&str, f64)> = [
            (yardstick_spec::metrics::id::TTFT_MS, slo.ttft_ms),
            (yardstick_spec::metrics::id::TPOT_MS, slo.tpot_ms),
            (yardstick_spec::metrics::id::E2E_MS, slo.e2e_ms),
        ]
        .into_iter()
        .filter_map(|(m, b)| Some((m, b?)))
        .collect();
        for (m, _) in &bounds {
            if let Some(s) = p.metric(m, "p99")
                && !shown.iter().any(|x| std::ptr::eq(*x, s))
            {
                shown.push(s);
            }
        }
        if shown.is_empty() {
            let what = if p.metrics.is_empty() {
                "measured nothing"
            } else {
                "no headline figure"
            };
            card(o, "", "result", what, rest);
        }
        for m in shown {
            let unit = metric_unit(&m.metric, &m.unit);
            let value = esc(&human_with_ci(m.mean, m.ci, unit));
            let key = figure_label(&m.metric, &m.statistic);
            let bound = bounds
                .iter()
                .find(|(b, _)| m.statistic == "p99" && *b == m.metric)
                .map(|b| b.1);
            let judged = gate.and_then(|g| {
                g.rows
                    .iter()
                    .find(|x| x.point == p.id && x.metric == m.metric && x.statistic == m.statistic)
            });
            let (class, sub) = if let Some(limit) = bound {
                let ok = m.mean <= limit;
                (
                    if ok { "good" } else { "bad" },
                    format!(
                        "SLO {} · {}",
                        human(limit, unit),
                        if ok { "met" } else { "missed" }
                    ),
                )
            } else if let Some(row) = judged
                && let Some(v) = &row.verdict
            {
                let class = match v.as_str() {
                    "PASS" => "good",
                    "FAIL" => "bad",
                    _ => "",
                };
                (
                    class,
                    format!(
                        "gate {v} · {} vs baseline",
                        crate::format::delta_pct(row.ratio)
                    ),
                )
            } else {
                ("", format!("{} · n = {}", m.metric, m.n))
            };
            card(o, class, &key, &value, &sub);
        }
        if let Some(b) = r.bottlenecks.iter().find(|b| b.point == p.id) {
            let verdict = b.classification.bottleneck.as_str();
            // The strongest piece of evidence (they come strongest first).
            let evidence = b.classification.evidence.first().map_or("", String::as_str);
            card(o, "", "bottleneck", &esc(verdict), evidence);
        }
        let failed = p.failed_replicates().count();
        if failed > 0 {
            card(o, "bad", "failed replicates", &failed.to_string(), rest);
        }
        o.push_str("</div>\n");
    }
    if r.points.len() > max {
        let _ = writeln!(
            o,
            "<p class=\"note\">{} more points {}.</p>",
            r.points.len() - max,
            esc(rest)
        );
    }
}

/// The gate's verdict as a card: the verdict, the baseline, the count of each verdict.
/// `extra_html` goes after the counts (a link).
pub fn gate_card(o: &mut String, g: &GateView, extra_html: &str) {
    let Some(v) = &g.verdict else {
        return;
    };
    let _ = writeln!(
        o,
        "<div class=\"cards\"><div class=\"card {}\"><div class=\"k\">gate against baseline</div>\
         <div class=\"v\"><span class=\"badge {v}\">{v}</span></div><div class=\"s\">baseline \
         <code>{}</code>{extra_html} · {} PASS, {} WARN, {} INCONCLUSIVE, {} FAIL</div></div></div>",
        match v.as_str() {
            "PASS" => "good",
            "FAIL" => "bad",
            _ => "",
        },
        esc(&g.baseline_run),
        g.count("PASS"),
        g.count("WARN"),
        g.count("INCONCLUSIVE"),
        g.count("FAIL")
    );
}

/// A plot section: its heading, caption, figures and table; its notes say what is not plotted.
pub fn section_html(out: &mut String, s: &Section) {
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

/// Whether a section has anything to show (a figure or a table); one without is left out of
/// the page, its notes gathered with the others' ([`not_plotted_html`]).
pub fn has_content(s: &Section) -> bool {
    !s.figures.is_empty() || s.table.is_some()
}

/// The notes of the sections left out ([`has_content`]), folded under one line: what the run
/// has no data for is worth a look, not a heading each.
pub fn not_plotted_html(out: &mut String, sections: &[Section]) {
    let notes: Vec<&String> = sections
        .iter()
        .filter(|s| !has_content(s))
        .flat_map(|s| &s.notes)
        .collect();
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details id=\"not-plotted\"><summary>Not plotted ({} plot{} without data in this run)</summary>",
        notes.len(),
        if notes.len() == 1 { "" } else { "s" }
    );
    for n in notes {
        let _ = writeln!(out, "<p class=\"note\">Not plotted: {}.</p>", esc(n));
    }
    let _ = writeln!(out, "</details>");
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

/// A table folded under its title.
fn folded(o: &mut String, id: Option<&str>, title: &str, t: &Table, max_rows: usize) {
    folded_with(o, id, title, t, max_rows, table_html);
}

/// [`folded`], the table written by `write` ([`table_html`], [`gate_table_html`]).
fn folded_with(
    o: &mut String,
    id: Option<&str>,
    title: &str,
    t: &Table,
    max_rows: usize,
    write: fn(&mut String, &Table, usize),
) {
    let id = id.map(|i| format!(" id=\"{i}\"")).unwrap_or_default();
    let _ = writeln!(o, "<details{id}><summary>{}</summary>", esc(title));
    write(o, t, max_rows);
    let _ = writeln!(o, "</details>");
}

/// Renders the report as one HTML document. It opens on the answer, as the server's run page
/// does: the gate's verdict and each point's headline cards, then the plots (sections without
/// data left out, their notes folded), then every table folded.
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
    for w in r.notes.iter().chain(&report.warnings) {
        let _ = writeln!(o, "<p class=\"warn\">{}</p>", esc(w));
    }
    let _ = write!(o, "<nav><a href=\"#headlines\">Headlines</a>");
    for s in sections.iter().filter(|s| has_content(s)) {
        let _ = write!(o, "<a href=\"#{}\">{}</a>", s.id, esc(&s.title));
    }
    let _ = writeln!(
        o,
        "<a href=\"#tables\">Tables</a><a href=\"#environment\">Environment</a>\
         <a href=\"#spec\">Spec</a></nav>"
    );

    if let Some(d) = &r.diagnosis {
        diagnosis_card(&mut o, d);
    }
    let _ = writeln!(o, "<h2 id=\"headlines\">Headlines</h2>");
    let _ = writeln!(
        o,
        "<p class=\"sub\">Each point's headline figures: the mean over replicates with its {} \
         (± a percentage when symmetric).</p>",
        esc(&crate::format::level_header(r.level))
    );
    if let Some(g) = &report.gate {
        gate_card(&mut o, g, "");
        if let Some(why) = &g.exploratory_reason {
            let _ = writeln!(
                o,
                "<p class=\"warn\">Exploratory, not enforced: {}</p>",
                esc(why)
            );
        }
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
    }
    point_cards(
        &mut o,
        r,
        report.gate.as_ref(),
        usize::MAX,
        "in the tables below",
    );

    for s in sections.iter().filter(|s| has_content(s)) {
        section_html(&mut o, s);
    }
    not_plotted_html(&mut o, &sections);

    let _ = writeln!(o, "<h2 id=\"tables\">Tables</h2>");
    let summary = tables::summary(r);
    folded(&mut o, Some("summary"), &summary.title, &summary, 500);
    if let Some(t) = tables::latency(r) {
        folded(&mut o, None, &t.title, &t, 500);
    }
    if let Some(t) = tables::scaling(r) {
        folded(&mut o, None, &t.title, &t, 500);
    }
    if let Some(t) = tables::gate(report) {
        folded_with(&mut o, Some("gate"), &t.title, &t, 500, gate_table_html);
    }
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
        "<details id=\"environment\"><summary>Environment and machine profile</summary>"
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
    let _ = writeln!(o, "</details>");
    let _ = writeln!(o, "<details id=\"spec\"><summary>Spec</summary>");
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
    let _ = writeln!(o, "</details>");
    let _ = writeln!(
        o,
        "<p class=\"note\">yardstick {} · report of run {}</p>",
        esc(&run.tool_version),
        esc(&run.run_id)
    );
    let _ = writeln!(o, "</main></body></html>");
    Ok(o)
}
