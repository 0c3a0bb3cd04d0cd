//! The dashboard's pages. Each gathers its data on the blocking pool with the API's own
//! functions (`api::runs::select`, `api::trend::compute`, `yardstick_gate`, `yardstick_report`)
//! and renders HTML there too (plots are CPU work).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde_json::Value;
use yardstick_gate::{GateOptions, baseline, calibrate};
use yardstick_report::format::human_with_ci;
use yardstick_report::html::{
    diagnosis_card, gate_table_html, headline_line, point_cards, table_html,
};
use yardstick_report::model::{RunReport, metrics_by_point};
use yardstick_report::{GateView, Report, tables};
use yardstick_store::warehouse::{RunFilter, RunRow, Warehouse};

use super::{PageError, enc, esc, html_page};
use crate::api::runs::{RunsQuery, select};
use crate::api::trend::{TrendOut, TrendQuery, compute};
use crate::state::{AppState, Located};

type Params = Result<Query<HashMap<String, String>>, QueryRejection>;
type PageResult = Result<Html<String>, PageError>;

/// The query's parameters; an empty value (a form's empty field) is no value.
fn params(q: Params) -> Result<HashMap<String, String>, PageError> {
    let Query(mut q) = q.map_err(|e| PageError::bad_request(e.body_text()))?;
    q.retain(|_, v| !v.trim().is_empty());
    Ok(q)
}

fn run_link(id: &str) -> String {
    format!("<a href=\"/runs/{}\"><code>{}</code></a>", enc(id), esc(id))
}

/// The first 10 characters of a run id (a ULID's time part; unique in practice in a store).
fn short(id: &str) -> &str {
    id.get(..10).unwrap_or(id)
}

fn badge(v: &str) -> String {
    format!("<span class=\"badge {v}\">{v}</span>", v = esc(v))
}

/// `/runs`: the stored runs, newest first, each with its headline, filtered and paged.
pub(super) async fn runs(State(state): State<Arc<AppState>>, q: Params) -> PageResult {
    let p = params(q)?;
    let status = match p.get("status").map(String::as_str) {
        None => None,
        Some("running") => Some(yardstick_store::RunStatus::Running),
        Some("incomplete") => Some(yardstick_store::RunStatus::Incomplete),
        Some("complete") => Some(yardstick_store::RunStatus::Complete),
        Some(other) => {
            return Err(PageError::bad_request(format!(
                "status must be running, incomplete or complete, got {other:?}"
            )));
        }
    };
    let num = |k: &str| -> Result<Option<usize>, PageError> {
        p.get(k)
            .map(|v| {
                v.parse()
                    .map_err(|_| PageError::bad_request(format!("{k} must be a number, got {v:?}")))
            })
            .transpose()
    };
    let query = RunsQuery {
        name: p.get("name").cloned(),
        profile: p.get("profile").cloned(),
        label: p.get("label").cloned(),
        status,
        since: p.get("since").cloned(),
        until: p.get("until").cloned(),
        limit: num("limit")?,
        offset: num("offset")?,
    };
    state
        .blocking(move |st, w| {
            let page = select(st, w, &query)?;
            // Each listed run's headline, as its page's cards lead with it, from its facts in the
            // warehouse (no artifact is read): one query per run shown.
            let headlines = page
                .runs
                .iter()
                .map(|r| Ok(headline_line(&metrics_by_point(&w.facts(&r.run_id)?))))
                .collect::<Result<Vec<String>, yardstick_store::StoreError>>()?;
            let mut o = String::new();
            o.push_str("<h1>Runs</h1>\n<form class=\"filters\" method=\"get\" action=\"/runs\">");
            for (k, label) in [
                ("name", "benchmark"),
                ("profile", "machine profile"),
                ("label", "label (key=value)"),
                ("since", "since (7d, 2026-05-01)"),
            ] {
                let _ = write!(
                    o,
                    "<label>{label}<input name=\"{k}\" value=\"{}\"></label>",
                    esc(p.get(k).map(String::as_str).unwrap_or(""))
                );
            }
            o.push_str("<label>status<select name=\"status\"><option value=\"\">any</option>");
            for s in ["complete", "incomplete", "running"] {
                let sel = if p.get("status").map(String::as_str) == Some(s) {
                    " selected"
                } else {
                    ""
                };
                let _ = write!(o, "<option{sel}>{s}</option>");
            }
            o.push_str("</select></label><button>Filter</button></form>\n");
            if page.runs.is_empty() {
                o.push_str("<p class=\"note\">No run matches.</p>");
            } else {
                o.push_str(
                    "<div class=\"scroll\"><table><thead><tr><th>run</th><th>benchmark</th>\
                     <th>headline</th><th>status</th><th>machine profile</th><th>started (UTC)</th>\
                     <th>git commit</th><th>yardstick</th><th></th></tr></thead><tbody>\n",
                );
                for (r, headline) in page.runs.iter().zip(&headlines) {
                    let _ = writeln!(
                        o,
                        "<tr><td>{}</td><td class=\"t\"><a href=\"/runs?name={}\">{}</a></td>\
                         <td class=\"t\">{}</td><td>{}</td><td class=\"t\">{}</td>\
                         <td title=\"{}\">{}</td>\
                         <td><code>{}</code></td><td>{}</td>\
                         <td><a href=\"/trend?name={}\">trend</a></td></tr>",
                        run_link(&r.run_id),
                        enc(&r.name),
                        esc(&r.name),
                        if headline.is_empty() { "-" } else { headline },
                        r.status,
                        esc(r.machine_profile.as_deref().unwrap_or("-")),
                        esc(&r.started_at),
                        // To the minute (the whole time in the tooltip): the list keeps within
                        // the page.
                        esc(&parse_time(&r.started_at)
                            .map_or_else(|| r.started_at.clone(), fmt_time)),
                        esc(r
                            .git_commit
                            .as_deref()
                            .map(|c| c.get(..12).unwrap_or(c))
                            .unwrap_or("-")),
                        esc(&r.tool_version),
                        enc(&r.name),
                    );
                }
                o.push_str("</tbody></table></div>\n");
            }
            // Paging links keep the filters.
            let keep: String = p
                .iter()
                .filter(|(k, _)| *k != "offset")
                .map(|(k, v)| format!("{}={}&", enc(k), enc(v)))
                .collect();
            o.push_str("<p>");
            if page.offset > 0 {
                let prev = page.offset.saturating_sub(page.limit);
                let _ = write!(o, "<a href=\"/runs?{keep}offset={prev}\">← newer</a> ");
            }
            let _ = write!(
                o,
                "runs {}–{}",
                page.offset + usize::from(!page.runs.is_empty()),
                page.offset + page.runs.len()
            );
            if let Some(next) = page.next_offset {
                let _ = write!(o, " <a href=\"/runs?{keep}offset={next}\">older →</a>");
            }
            o.push_str("</p>");
            Ok(html_page("Runs", "/runs", &o))
        })
        .await
        .map_err(PageError::from)
}

/// A run against its stored baseline.
enum GateOf {
    /// No baseline stored for its benchmark and machine profile.
    NoBaseline,
    /// The run is the baseline.
    IsBaseline,
    /// `gate --json`'s output, or why it cannot be computed.
    Done(Result<Value, GateFailure>),
}

/// Why the gate of a run against its baseline could not be computed.
#[derive(Debug, thiserror::Error)]
enum GateFailure {
    /// Loading the runs, their noise floors, or the gate itself failed.
    #[error(transparent)]
    Gate(#[from] yardstick_gate::GateError),
    /// The report did not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The gate of a run against its stored baseline.
fn gate_of(st: &AppState, w: &mut dyn Warehouse, run: &RunRow) -> GateOf {
    let mut w = Located::new(w, st.config.store_dir.as_deref());
    let Ok(base) = baseline::resolve_auto(&mut w, run) else {
        return GateOf::NoBaseline;
    };
    if base.run_id == run.run_id {
        return GateOf::IsBaseline;
    }
    let mut go = || -> Result<Value, GateFailure> {
        let cand = yardstick_gate::load_run(&mut w, &run.run_id)?;
        let base = yardstick_gate::load_run(&mut w, &base.run_id)?;
        let profile = cand.run.machine_profile.clone().unwrap_or_default();
        let noise_floors = calibrate::noise_floors(&mut w, &profile, &cand.run.name)?;
        let opts = GateOptions {
            cross_profile: false,
            tolerances: None,
            noise_floors,
        };
        let report = yardstick_gate::gate(&base, &cand, &opts)?;
        Ok(serde_json::to_value(&report)?)
    };
    GateOf::Done(go())
}

fn load_report(st: &AppState, w: &mut dyn Warehouse, id: &str) -> Result<RunReport, PageError> {
    let store = st.config.store_dir.as_deref();
    let mut w = Located::new(w, store);
    Ok(yardstick_report::load_run(&mut w, id, store)?)
}

fn run_header(o: &mut String, r: &RunRow) {
    let _ = writeln!(
        o,
        "<p class=\"sub\">run <code>{}</code> · {} · machine profile <code>{}</code> · started {} · \
         git <code>{}</code> · yardstick {}</p>",
        esc(&r.run_id),
        r.status,
        esc(r.machine_profile.as_deref().unwrap_or("-")),
        esc(&r.started_at),
        esc(r.git_commit.as_deref().unwrap_or("-")),
        esc(&r.tool_version),
    );
}

fn sections_html(o: &mut String, report: &Report) -> Result<(), PageError> {
    for s in yardstick_report::html::sections(report)? {
        if s.figures.is_empty() {
            continue;
        }
        let _ = writeln!(o, "<h2 id=\"{}\">{}</h2>", esc(s.id), esc(&s.title));
        let _ = writeln!(o, "<p class=\"sub\">{}</p>", esc(&s.caption));
        for f in &s.figures {
            let _ = writeln!(
                o,
                "<figure><figcaption>{}</figcaption>\n{}\n</figure>",
                esc(&f.title),
                f.svg
            );
        }
    }
    Ok(())
}

/// `/runs/{id}`: headline cards, plots, then the tables folded.
pub(super) async fn run(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> PageResult {
    state
        .blocking(move |st, w| Ok(run_page(st, w, &id)))
        .await
        .map_err(PageError::from)?
}

fn run_page(st: &AppState, w: &mut dyn Warehouse, id: &str) -> PageResult {
    let r = load_report(st, w, id)?;
    let run = r.run.clone();
    let gate = gate_of(st, w, &run);
    let view = match &gate {
        GateOf::Done(Ok(v)) => GateView::from_json(v).ok(),
        _ => None,
    };
    let mut o = String::new();
    let _ = writeln!(o, "<h1>{}</h1>", esc(&run.name));
    run_header(&mut o, &run);
    let _ = writeln!(
        o,
        "<p><a href=\"/trend?name={n}\">trend of {}</a> · <a href=\"/runs?name={n}\">all runs of \
         this benchmark</a> · <a href=\"/api/v1/runs/{id}\">JSON</a></p>",
        esc(&run.name),
        n = enc(&run.name),
        id = enc(&run.run_id)
    );
    for w in r.notes.iter().chain(&r.warnings) {
        let _ = writeln!(o, "<p class=\"warn\">{}</p>", esc(w));
    }
    match (&gate, &view) {
        (_, Some(g)) => {
            let v = g.verdict.clone().unwrap_or_else(|| "-".into());
            let _ = writeln!(
                o,
                "<div class=\"cards\"><div class=\"card\"><div class=\"k\">gate against baseline \
                 </div><div class=\"v\">{}</div><div class=\"s\">baseline {} · \
                 <a href=\"/compare?a={}&amp;b={}\">compare</a> · {} PASS, {} WARN, {} \
                 INCONCLUSIVE, {} FAIL</div></div></div>",
                badge(&v),
                run_link(&g.baseline_run),
                enc(&g.baseline_run),
                enc(&run.run_id),
                g.count("PASS"),
                g.count("WARN"),
                g.count("INCONCLUSIVE"),
                g.count("FAIL"),
            );
        }
        (GateOf::Done(Err(e)), _) => {
            let _ = writeln!(
                o,
                "<p class=\"warn\">gate against the baseline: {}</p>",
                esc(&e.to_string())
            );
        }
        (GateOf::IsBaseline, _) => {
            o.push_str("<p class=\"note\">This run is the stored baseline of its benchmark and machine profile.</p>\n");
        }
        _ => {
            o.push_str("<p class=\"note\">No baseline is stored for this benchmark and machine profile (<code>yardstick baseline save RUN</code>).</p>\n");
        }
    }
    if let Some(d) = &r.diagnosis {
        diagnosis_card(&mut o, d);
    }
    point_cards(&mut o, &r, view.as_ref(), 12, "in the tables below");
    let report = Report::new(r, view);
    sections_html(&mut o, &report)?;
    let r = &report.run;
    o.push_str("<h2 id=\"tables\">Tables</h2>\n");
    let fold = |o: &mut String,
                title: &str,
                t: &tables::Table,
                write: fn(&mut String, &tables::Table, usize)| {
        let _ = writeln!(o, "<details><summary>{}</summary>", esc(title));
        write(o, t, 1000);
        o.push_str("</details>\n");
    };
    let s = tables::summary(r);
    fold(&mut o, &s.title.clone(), &s, table_html);
    if let Some(t) = tables::latency(r) {
        fold(&mut o, &t.title.clone(), &t, table_html);
    }
    if let Some(t) = tables::gate(&report) {
        fold(&mut o, &t.title.clone(), &t, gate_table_html);
    }
    for (i, p) in r.points.iter().enumerate() {
        let t = tables::point(i, p, r.level);
        fold(
            &mut o,
            &format!("{} — {} statistics", t.title, t.rows.len()),
            &t,
            table_html,
        );
    }
    fold(
        &mut o,
        "Environment",
        &tables::environment(&r.env),
        table_html,
    );
    if let Some(spec) = &r.spec_yaml {
        let _ = writeln!(
            o,
            "<details><summary>Spec</summary><pre>{}</pre></details>",
            esc(spec)
        );
    }
    Ok(html_page(
        &format!("{} {}", run.name, short(&run.run_id)),
        "/runs",
        &o,
    ))
}

fn fmt_time(secs: f64) -> String {
    fmt_tick(secs, f64::INFINITY)
}

/// A time (seconds since the epoch, UTC) as precisely as an axis spanning `span` seconds needs:
/// seconds under an hour, minutes under a few days, else the date.
fn fmt_tick(secs: f64, span: f64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs as i64)
        .map(|t| {
            let date = format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day());
            if span < 3600.0 {
                format!("{date} {:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
            } else if span < 5.0 * 86400.0 || span.is_infinite() {
                format!("{date} {:02}:{:02}", t.hour(), t.minute())
            } else {
                date
            }
        })
        .unwrap_or_default()
}

fn parse_time(s: &str) -> Option<f64> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos() as f64 / 1e9)
}

/// How a run's value stands against the baseline's: `FAIL` when its whole confidence interval
/// is beyond the metric's default tolerance in the worse direction, `WARN` when only its mean
/// is, `PASS` otherwise; `None` without a baseline value or for a metric the gate does not
/// class. An indication for the plot: the gate (`/runs/{id}`) decides with its own rules.
fn verdict(
    metric: &str,
    statistic: &str,
    better: Option<&str>,
    base: Option<f64>,
    value: f64,
    ci: Option<(f64, f64)>,
) -> Option<&'static str> {
    let base = base?;
    let class = yardstick_gate::classify(metric, statistic, &["p99"])?;
    let tol = yardstick_gate::tolerance_pct(class, None);
    let points = matches!(
        class,
        yardstick_gate::MetricClass::Accuracy | yardstick_gate::MetricClass::Quality
    );
    let higher = match better {
        Some("higher") => true,
        Some("lower") => false,
        _ => return None,
    };
    // How much worse than the baseline `v` is, in the tolerance's unit.
    let worse = |v: f64| -> f64 {
        let d = if higher { base - v } else { v - base };
        if points {
            d
        } else if base != 0.0 {
            d / base.abs() * 100.0
        } else {
            0.0
        }
    };
    let (lo, hi) = ci.unwrap_or((value, value));
    let best = worse(lo).min(worse(hi));
    Some(if best > tol {
        "FAIL"
    } else if worse(value) > tol {
        "WARN"
    } else {
        "PASS"
    })
}

fn verdict_color(v: Option<&str>) -> &'static str {
    match v {
        Some("FAIL") => "#d62728",
        Some("WARN") => "#e69100",
        Some("PASS") => "#2c9f2c",
        _ => "#1f77b4",
    }
}

/// The trend of one metric: a plot per series, linked points, and the values folded.
fn trend_html(o: &mut String, t: &TrendOut) -> Result<(), PageError> {
    let unit = t.unit.clone().unwrap_or_default();
    let _ = writeln!(
        o,
        "<h2 id=\"{}\">{} · {}</h2>",
        esc(&format!("{}-{}", t.metric, t.statistic)),
        esc(&t.metric),
        esc(&t.statistic)
    );
    if t.series.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"note\">No run of this benchmark has {} {}.</p>",
            esc(&t.metric),
            esc(&t.statistic)
        );
    }
    for s in &t.series {
        let pts: Vec<(&crate::api::trend::TrendPoint, f64)> = s
            .points
            .iter()
            .filter_map(|p| {
                parse_time(&p.started_at)
                    .filter(|_| p.value.is_finite())
                    .map(|x| (p, x))
            })
            .collect();
        let base = s
            .baseline_run
            .as_ref()
            .and_then(|b| s.points.iter().find(|p| p.run_id == *b))
            .map(|p| p.value);
        let line = yardstick_report::plots::TrendLine {
            x: pts.iter().map(|(_, x)| *x).collect(),
            y: pts.iter().map(|(p, _)| p.value).collect(),
            ci: pts.iter().map(|(p, _)| p.ci_lo.zip(p.ci_hi)).collect(),
            baseline: base,
        };
        let title = format!(
            "{} {} · {} · {}",
            t.metric,
            t.statistic,
            s.machine_profile.as_deref().unwrap_or("-"),
            s.point_id
        );
        let y_label = if unit.is_empty() {
            t.metric.clone()
        } else {
            unit.clone()
        };
        let span = line.x.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            - line.x.iter().copied().fold(f64::INFINITY, f64::min);
        let tick = |x: f64| fmt_tick(x, span);
        let plotted = yardstick_report::plots::trend(&y_label, &line, &tick)?;
        let Some((svg, pos)) = plotted else { continue };
        // Each run: a circle linking to its page, coloured by its standing against the
        // baseline, its value in the tooltip.
        let mut marks = String::with_capacity(pos.len() * 200);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for ((p, x), (cx, cy)) in pts.iter().zip(&pos) {
            // The gate's recorded verdict; else an indication from the interval and the
            // tolerance, drawn hollow.
            let (v, gated) = match p.verdict.as_deref() {
                Some(v) => (Some(v), true),
                None => (
                    verdict(
                        &t.metric,
                        &t.statistic,
                        t.better.as_deref(),
                        base,
                        p.value,
                        p.ci_lo.zip(p.ci_hi),
                    ),
                    false,
                ),
            };
            *counts.entry(v.unwrap_or("-")).or_default() += 1;
            let is_base = s.baseline_run.as_deref() == Some(p.run_id.as_str());
            let color = if is_base { "#000" } else { verdict_color(v) };
            let _ = write!(
                marks,
                "<a class=\"pt\" href=\"/runs/{}\" data-verdict=\"{}\" data-source=\"{}\"><circle cx=\"{cx}\" cy=\"{cy}\" r=\"{}\" fill=\"{}\" stroke=\"{color}\" stroke-width=\"2\"/><title>{} · {} · {}{}{}</title></a>",
                enc(&p.run_id),
                v.unwrap_or("none"),
                if gated { "gate" } else { "indication" },
                if is_base { 7 } else { 4 },
                if gated || is_base { color } else { "#fff" },
                esc(&human_with_ci(p.value, p.ci_lo.zip(p.ci_hi), &unit)),
                esc(&fmt_time(*x)),
                esc(&p.run_id),
                if is_base { " · baseline" } else { "" },
                match (v, &p.gated_against) {
                    (Some(v), Some(b)) if gated => format!(" · gate {v} against {b}"),
                    (Some(v), _) => format!(" · {v} (indication, not gated)"),
                    _ => String::new(),
                },
            );
        }
        // Change points: a dashed line at the first run after each change.
        let changes = s.changes.as_deref().unwrap_or_default();
        for c in changes {
            if let Some((cx, _)) = pts
                .iter()
                .zip(&pos)
                .find(|((p, _), _)| p.run_id == c.run_id)
                .map(|(_, xy)| *xy)
            {
                let _ = write!(
                    marks,
                    "<line class=\"change\" data-run=\"{}\" x1=\"{cx}\" x2=\"{cx}\" y1=\"0\" y2=\"100%\" stroke=\"#7b3fb5\" stroke-width=\"2\" stroke-dasharray=\"5 4\"><title>{}</title></line>",
                    enc(&c.run_id),
                    esc(&c.text(&unit)),
                );
            }
        }
        let svg = match svg.rfind("</svg>") {
            Some(k) => format!("{}{marks}</svg>", &svg[..k]),
            None => svg,
        };
        let _ = writeln!(
            o,
            "<figure><figcaption>{} — {} runs{}{}</figcaption>\n{svg}\n<p class=\"note\">line: each \
             run's mean over replicates; band: its confidence interval; dashed: the baseline's \
             value; points: <span style=\"color:#d62728\">●</span> FAIL \
             <span style=\"color:#e69100\">●</span> WARN <span style=\"color:#2c9f2c\">●</span> \
             PASS as the gate recorded it, hollow ○ where the run was never gated (an \
             indication from its interval and the default tolerance), ● the baseline \
             run</p></figure>",
            esc(&title),
            pts.len(),
            match &s.baseline_run {
                Some(b) => format!(", baseline {}", run_link(b)),
                None => ", no baseline".into(),
            },
            ["FAIL", "WARN"]
                .iter()
                .filter_map(|v| counts.get(v).map(|n| format!(", {n} {v}")))
                .collect::<String>(),
        );
        if !changes.is_empty() {
            let _ = writeln!(
                o,
                "<p class=\"note\">change points (E-divisive means, permutation test; dashed \
                 purple lines):</p><ul class=\"changes\">"
            );
            for c in changes {
                let _ = writeln!(
                    o,
                    "<li>{}: {}</li>",
                    run_link(&c.run_id),
                    esc(&c.text(&unit))
                );
            }
            o.push_str("</ul>\n");
        }
        let _ = writeln!(
            o,
            "<details><summary>values ({} runs)</summary><div class=\"scroll\"><table><thead><tr>\
             <th>run</th><th>started</th><th>git commit</th><th>value</th><th>n</th></tr></thead><tbody>",
            pts.len()
        );
        for (p, _) in pts.iter().rev() {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                run_link(&p.run_id),
                esc(&p.started_at),
                esc(p
                    .git_commit
                    .as_deref()
                    .map(|c| c.get(..12).unwrap_or(c))
                    .unwrap_or("-")),
                esc(&human_with_ci(p.value, p.ci_lo.zip(p.ci_hi), &unit)),
                p.n
            );
        }
        o.push_str("</tbody></table></div></details>\n");
    }
    Ok(())
}

/// `/trend?name=&metric=&statistic=&profile=`: a plot per metric over time (every gated
/// metric of the newest run when no metric is named; `metric` may list several, comma
/// separated).
pub(super) async fn trend(State(state): State<Arc<AppState>>, q: Params) -> PageResult {
    let p = params(q)?;
    state
        .blocking(move |_, w| Ok(trend_page(w, &p)))
        .await
        .map_err(PageError::from)?
}

fn trend_page(w: &mut dyn Warehouse, p: &HashMap<String, String>) -> PageResult {
    let mut o = String::new();
    o.push_str("<h1>Trends</h1>\n<form class=\"filters\" method=\"get\" action=\"/trend\">");
    for (k, label) in [
        ("name", "benchmark"),
        ("metric", "metric(s), comma separated"),
        ("statistic", "statistic"),
        ("profile", "machine profile"),
        ("since", "since (30d, 2026-05-01)"),
    ] {
        let _ = write!(
            o,
            "<label>{label}<input name=\"{k}\" value=\"{}\"></label>",
            esc(p.get(k).map(String::as_str).unwrap_or(""))
        );
    }
    o.push_str("<button>Show</button></form>\n");
    let Some(name) = p.get("name") else {
        let runs = w.runs(&RunFilter {
            limit: Some(crate::api::trend::MAX_RUNS),
            ..Default::default()
        })?;
        let names: BTreeSet<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        o.push_str("<p>Pick a benchmark:</p><ul>");
        for n in names {
            let _ = write!(
                o,
                "<li><a href=\"/trend?name={}\">{}</a></li>",
                enc(n),
                esc(n)
            );
        }
        o.push_str("</ul>");
        return Ok(html_page("Trends", "/trend", &o));
    };
    let metrics: Vec<(String, Option<String>)> = match p.get("metric") {
        Some(m) => m
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| (m.to_string(), p.get("statistic").cloned()))
            .collect(),
        None => {
            // The gated metrics of the newest run.
            let newest = w.runs(&RunFilter {
                name: Some(name.clone()),
                machine_profile: p.get("profile").cloned(),
                limit: Some(1),
                ..Default::default()
            })?;
            let mut seen = BTreeSet::new();
            let mut out = Vec::new();
            if let Some(run) = newest.first() {
                for f in w.facts(&run.run_id)? {
                    if f.replicate.is_none()
                        && yardstick_gate::headline(&f.metric, &f.statistic).is_some()
                        && seen.insert((f.metric.clone(), f.statistic.clone()))
                    {
                        out.push((f.metric, Some(f.statistic)));
                    }
                }
            }
            out.truncate(8);
            out
        }
    };
    let _ = writeln!(
        o,
        "<p class=\"sub\">benchmark <b>{}</b> · <a href=\"/runs?name={}\">its runs</a> · each \
         point is a run (click to open it); the band is the confidence interval of each run's \
         mean over replicates, the dashed line the baseline's value. Points are coloured by the \
         verdict the gate recorded for the run (when it was gated by `yardstick gate` or on \
         push); runs never gated are drawn hollow, red when their whole interval is worse than \
         the baseline by more than the metric's default tolerance, orange when their mean is \
         (an indication).</p>",
        esc(name),
        enc(name)
    );
    if metrics.is_empty() {
        o.push_str("<p class=\"note\">No gated metric found in the newest run: name one with <code>metric=</code>.</p>");
    }
    for (metric, statistic) in metrics {
        let q = TrendQuery {
            benchmark: name.clone(),
            metric,
            statistic,
            profile: p.get("profile").cloned(),
            point: p.get("point").cloned(),
            since: p.get("since").cloned(),
            limit: None,
            changes: Some(true),
        };
        let t = compute(w, &q)?;
        trend_html(&mut o, &t)?;
    }
    Ok(html_page(&format!("Trend {name}"), "/trend", &o))
}

/// `/compare?a=&b=`: two runs side by side, and the comparison B/A.
pub(super) async fn compare(State(state): State<Arc<AppState>>, q: Params) -> PageResult {
    let p = params(q)?;
    state
        .blocking(move |st, w| Ok(compare_page(st, w, &p)))
        .await
        .map_err(PageError::from)?
}

fn compare_page(st: &AppState, w: &mut dyn Warehouse, p: &HashMap<String, String>) -> PageResult {
    let mut o = String::new();
    o.push_str(
        "<h1>Compare two runs</h1>\n<form class=\"filters\" method=\"get\" action=\"/compare\">",
    );
    for (k, label) in [("a", "A (baseline run)"), ("b", "B (candidate run)")] {
        let _ = write!(
            o,
            "<label>{label}<input name=\"{k}\" value=\"{}\"></label>",
            esc(p.get(k).map(String::as_str).unwrap_or(""))
        );
    }
    o.push_str("<button>Compare</button></form>\n");
    let (Some(a), Some(b)) = (p.get("a"), p.get("b")) else {
        o.push_str("<p class=\"note\">Name two runs (ids or unique prefixes).</p>");
        return Ok(html_page("Compare", "/compare", &o));
    };
    let ra = load_report(st, w, a)?;
    let rb = load_report(st, w, b)?;
    let cmp = {
        let mut lw = Located::new(w, st.config.store_dir.as_deref());
        let la =
            yardstick_gate::load_run(&mut lw, &ra.run.run_id).map_err(crate::ApiError::from)?;
        let lb =
            yardstick_gate::load_run(&mut lw, &rb.run.run_id).map_err(crate::ApiError::from)?;
        yardstick_gate::compare(&la, &lb).map_err(crate::ApiError::from)?
    };
    let view = serde_json::to_value(&cmp)
        .ok()
        .and_then(|v| GateView::from_json(&v).ok());
    o.push_str("<div class=\"cols\">");
    for (side, r) in [("A", &ra), ("B", &rb)] {
        let _ = writeln!(
            o,
            "<div><h2>{side}: {}</h2><p>{}</p>",
            esc(&r.run.name),
            run_link(&r.run.run_id)
        );
        run_header(&mut o, &r.run);
        point_cards(&mut o, r, None, 6, "on the run's page");
        o.push_str("</div>");
    }
    o.push_str("</div>\n");
    if let Some(g) = &view {
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
    let report = Report::new(rb, view);
    if let Some(t) = tables::gate(&report) {
        let _ = writeln!(o, "<h2>{}</h2>", esc(&t.title));
        gate_table_html(&mut o, &t, 1000);
    }
    if let Some(g) = &report.gate {
        let s = yardstick_report::plots::gate_ratios(g)?;
        for f in &s.figures {
            let _ = writeln!(
                o,
                "<figure><figcaption>{}</figcaption>\n{}\n</figure>",
                esc(&f.title),
                f.svg
            );
        }
    }
    Ok(html_page("Compare", "/compare", &o))
}

/// `/baselines`: the stored baselines.
pub(super) async fn baselines(State(state): State<Arc<AppState>>) -> PageResult {
    state
        .blocking(move |_, w| {
            let list = baseline::list(w).map_err(crate::ApiError::from)?;
            let mut o = String::from("<h1>Baselines</h1>\n<p class=\"sub\">One reference run per machine profile and benchmark; <code>yardstick baseline save RUN</code> sets one.</p>\n");
            if list.is_empty() {
                o.push_str("<p class=\"note\">No baseline is stored.</p>");
            } else {
                o.push_str("<div class=\"scroll\"><table><thead><tr><th>benchmark</th><th>machine profile</th><th>run</th><th>set</th><th>note</th><th></th></tr></thead><tbody>\n");
                for b in &list {
                    let _ = writeln!(
                        o,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"/trend?name={}&amp;profile={}\">trend</a></td></tr>",
                        esc(&b.benchmark),
                        esc(&b.machine_profile),
                        run_link(&b.run_id),
                        esc(&b.created_at),
                        esc(b.note.as_deref().unwrap_or("")),
                        enc(&b.benchmark),
                        enc(&b.machine_profile),
                    );
                }
                o.push_str("</tbody></table></div>");
            }
            Ok(html_page("Baselines", "/baselines", &o))
        })
        .await
        .map_err(PageError::from)
}

/// `/contracts`: the metric catalogue, the validation rules and the gate's tolerances.
pub(super) async fn contracts() -> Html<String> {
    let mut o = String::from(
        "<h1>The methodology contract</h1>\n<p class=\"sub\">As data: \
         <a href=\"/api/benchmark/contracts\">/api/benchmark/contracts</a>.</p>\n",
    );
    // Each definition and hint on a line of its own under its row (as the gate's reasons): the
    // tables keep within the page.
    o.push_str("<h2>Metrics</h2><div class=\"scroll\"><table><thead><tr><th>metric</th><th>unit</th><th>better</th><th>gated</th><th>statistics</th></tr></thead><tbody>\n");
    for m in yardstick_spec::metrics::CATALOGUE {
        let _ = writeln!(
            o,
            "<tr class=\"lead\"><td class=\"t\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"t\">{}</td></tr>\n<tr class=\"why\"><td colspan=\"5\">{}</td></tr>",
            esc(m.id),
            esc(m.unit),
            esc(m.direction.as_str()),
            esc(m.gated.unwrap_or("-")),
            esc(&m.statistics.join(", ")),
            esc(m.definition)
        );
    }
    o.push_str("</tbody></table></div>\n<h2>Gate tolerances</h2><div class=\"scroll\"><table><thead><tr><th>class</th><th>default tolerance</th></tr></thead><tbody>\n");
    for c in [
        yardstick_gate::MetricClass::Throughput,
        yardstick_gate::MetricClass::Latency,
        yardstick_gate::MetricClass::Tail,
        yardstick_gate::MetricClass::StepTime,
        yardstick_gate::MetricClass::Memory,
        yardstick_gate::MetricClass::Accuracy,
        yardstick_gate::MetricClass::Perplexity,
        yardstick_gate::MetricClass::Quality,
    ] {
        let unit = if matches!(
            c,
            yardstick_gate::MetricClass::Accuracy | yardstick_gate::MetricClass::Quality
        ) {
            "points"
        } else {
            "%"
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"n\">{} {unit}</td></tr>",
            esc(&serde_json::to_value(c)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{c:?}"))),
            yardstick_gate::tolerance_pct(c, None)
        );
    }
    let _ = writeln!(
        o,
        "</tbody></table></div><p class=\"note\">At least {} replicates per side for a verdict other than INCONCLUSIVE.</p>",
        yardstick_gate::MIN_REPLICATES
    );
    o.push_str("<h2>Validation rules</h2><div class=\"scroll\"><table><thead><tr><th>rule</th><th>checks</th><th>why (methodology.md)</th></tr></thead><tbody>\n");
    for r in yardstick_spec::rules::RULES {
        let _ = writeln!(
            o,
            "<tr class=\"lead\"><td class=\"t\"><code>{}</code></td><td class=\"w\">{}</td><td class=\"t\">{}</td></tr>\n<tr class=\"why\"><td colspan=\"3\">hint: {}</td></tr>",
            esc(r.id),
            esc(r.summary),
            esc(r.section),
            esc(r.hint)
        );
    }
    o.push_str("</tbody></table></div>");
    html_page("Contracts", "/contracts", &o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_spec::metrics::id;

    #[test]
    fn trend_verdicts_follow_the_tolerance_and_the_interval() {
        // Throughput (higher is better, 5 % drop tolerated).
        let v = |value, ci| {
            verdict(
                id::OUTPUT_TOKEN_THROUGHPUT,
                "value",
                Some("higher"),
                Some(100.0),
                value,
                ci,
            )
        };
        assert_eq!(v(99.0, Some((97.0, 101.0))), Some("PASS"));
        assert_eq!(v(90.0, Some((80.0, 97.0))), Some("WARN"));
        assert_eq!(v(90.0, Some((88.0, 92.0))), Some("FAIL"));
        assert_eq!(v(120.0, None), Some("PASS"));
        assert_eq!(
            verdict(
                id::OUTPUT_TOKEN_THROUGHPUT,
                "value",
                Some("higher"),
                None,
                1.0,
                None
            ),
            None
        );
    }
}
