//! The report's tables, built once and written by every format (terminal, Markdown, CSV,
//! Excel, HTML). Cells keep numbers as numbers so CSV and Excel get full precision.

use serde_json::Value;

use crate::format::{self, num};
use crate::model::{MetricStat, PointReport, Report, RunReport};
use yardstick_spec::metrics::id;

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text.
    Text(String),
    /// A number (written at full precision in CSV and Excel, rounded for people).
    Num(f64),
    /// Nothing.
    Empty,
}

impl Cell {
    /// The cell for people.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Num(x) => num(*x),
            Cell::Empty => "-".into(),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Cell {
        if x.is_finite() {
            Cell::Num(x)
        } else {
            Cell::Empty
        }
    }
}

impl From<Option<f64>> for Cell {
    fn from(x: Option<f64>) -> Cell {
        x.map_or(Cell::Empty, Cell::from)
    }
}

/// How people read the numbers of a column ([`Table::human`]; CSV and Excel ignore it and
/// keep raw values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColumnUnit {
    /// A plain number ([`format::num`]).
    #[default]
    Plain,
    /// Every number is in this unit (`%`, `fraction`).
    Fixed(&'static str),
    /// The unit of the metric this row is about: the text of column `unit` when there is one
    /// and it is not empty, else the catalogue's unit of the metric named in column `metric`
    /// ([`format::metric_unit`]).
    Metric {
        /// The column naming the metric.
        metric: usize,
        /// The column holding the declared unit, if any.
        unit: Option<usize>,
    },
}

/// A named table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// File-safe name (`summary`, `point-01`), used for CSV files.
    pub name: String,
    /// Title for people.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells, each as long as `headers`.
    pub rows: Vec<Vec<Cell>>,
    /// How people read each column's numbers; a missing entry is [`ColumnUnit::Plain`].
    pub units: Vec<ColumnUnit>,
    /// The confidence level of its `ci_*` columns, when it is the run's ([`column_name`]).
    pub level: Option<f64>,
}

/// A column header for people (HTML): `ci_half_width_pct` is `95 % CI half-width` at `level`
/// 0.95, `p99_normal` is `p99 if normal`, other snake_case names lose their underscores. CSV
/// and Excel keep the names as they are, for scripts.
pub fn column_name(header: &str, level: Option<f64>) -> String {
    let ci = level.map_or("CI".to_string(), format::level_header);
    match header {
        "ci_lo" => format!("{ci} low"),
        "ci_hi" => format!("{ci} high"),
        "ci_half_width_pct" => format!("{ci} half-width"),
        "p99_normal" => "p99 if normal".into(),
        "p99_normal_error_pct" => "p99 if normal: error".into(),
        "noise_floor_pct" => "noise floor".into(),
        "p_value" => "p-value".into(),
        "n" => "n".into(),
        h => h.strip_suffix("_pct").unwrap_or(h).replace('_', " "),
    }
}

impl Table {
    /// Cell `col` of `row` for people: a number in its column's unit ([`format::human`]),
    /// text as it is, nothing as `-`.
    pub fn human(&self, row: &[Cell], col: usize) -> String {
        let Some(Cell::Num(x)) = row.get(col) else {
            return row.get(col).map_or_else(|| "-".into(), Cell::display);
        };
        let text = |i: usize| match row.get(i) {
            Some(Cell::Text(s)) => s.as_str(),
            _ => "",
        };
        match self.units.get(col).copied().unwrap_or_default() {
            ColumnUnit::Plain => num(*x),
            ColumnUnit::Fixed(unit) => format::human(*x, unit),
            ColumnUnit::Metric { metric, unit } => {
                format::human(*x, format::metric_unit(text(metric), unit.map_or("", text)))
            }
        }
    }
}

/// The (metric, statistic) pairs a summary shows for a point: headline metrics when it has
/// any, else every `value`/`p50`, else everything.
pub fn headline_metrics(p: &PointReport) -> Vec<&MetricStat> {
    // The catalogue's headline statistics, in catalogue order (`yardstick metrics`).
    let picked: Vec<&MetricStat> = yardstick_spec::metrics::CATALOGUE
        .iter()
        .flat_map(|d| d.headline.iter().map(move |s| (d.id, *s)))
        .filter_map(|(m, s)| p.metric(m, s))
        .collect();
    if !picked.is_empty() {
        return picked;
    }
    let simple: Vec<&MetricStat> = p
        .metrics
        .iter()
        .filter(|m| m.statistic == "value" || m.statistic == "p50")
        .collect();
    if simple.is_empty() {
        p.metrics.iter().collect()
    } else {
        simple
    }
}

/// Every table of a report, in reading order.
pub fn all(report: &Report) -> Vec<Table> {
    let r = &report.run;
    let mut out = vec![run_table(r), summary(r)];
    if let Some(t) = gate(report) {
        out.push(t);
    }
    if let Some(t) = latency(r) {
        out.push(t);
    }
    if let Some(t) = scaling(r) {
        out.push(t);
    }
    for (i, p) in r.points.iter().enumerate() {
        out.push(point(i, p, r.level));
    }
    out.push(environment(&r.env));
    if let Some(t) = telemetry(r) {
        out.push(t);
    }
    out
}

/// The run's identity.
pub fn run_table(r: &RunReport) -> Table {
    let row = |k: &str, v: String| vec![Cell::from(k), Cell::Text(v)];
    let run = &r.run;
    let mut rows = vec![
        row("run", run.run_id.clone()),
        row("name", run.name.clone()),
        row("status", run.status.to_string()),
        row("mode", run.mode.clone().unwrap_or_else(|| "-".into())),
        row(
            "machine profile",
            run.machine_profile.clone().unwrap_or_else(|| "-".into()),
        ),
        row("started", run.started_at.clone()),
        row("ended", run.ended_at.clone().unwrap_or_else(|| "-".into())),
        row("tool", format!("yardstick {}", run.tool_version)),
        row(
            "git commit",
            run.git_commit.clone().unwrap_or_else(|| "-".into()),
        ),
        row("spec sha256", run.spec_sha256.clone()),
        row("points", r.points.len().to_string()),
        row("replicates", r.replicates.to_string()),
        row("confidence level", num(r.level)),
    ];
    for n in &r.notes {
        rows.push(row("note", n.clone()));
    }
    Table {
        name: "run".into(),
        level: None,
        title: "Run".into(),
        headers: vec!["field".into(), "value".into()],
        rows,
        units: Vec::new(),
    }
}

/// Headline metrics of every point: mean over replicates with CI.
pub fn summary(r: &RunReport) -> Table {
    let mut rows = Vec::new();
    for p in &r.points {
        let failed = p.failed_replicates().count();
        for m in headline_metrics(p) {
            rows.push(vec![
                Cell::from(p.id.as_str()),
                Cell::from(m.metric.as_str()),
                Cell::from(m.statistic.as_str()),
                Cell::from(m.mean),
                Cell::from(m.ci.map(|c| c.0)),
                Cell::from(m.ci.map(|c| c.1)),
                Cell::from(m.half_width_pct()),
                Cell::from(m.unit.as_str()),
                Cell::Num(m.n as f64),
            ]);
        }
        if p.metrics.is_empty() {
            rows.push(vec![
                Cell::from(p.id.as_str()),
                Cell::from("(no results)"),
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Empty,
                Cell::Num((p.replicates.len() - failed) as f64),
            ]);
        }
    }
    Table {
        name: "summary".into(),
        level: Some(r.level),
        title: format!(
            "Summary (mean over replicates, {})",
            format::level_header(r.level)
        ),
        headers: [
            "point",
            "metric",
            "statistic",
            "mean",
            "ci_lo",
            "ci_hi",
            "ci_half_width_pct",
            "unit",
            "n",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        units: {
            let of_metric = ColumnUnit::Metric {
                metric: 1,
                unit: Some(7),
            };
            vec![
                ColumnUnit::Plain,
                ColumnUnit::Plain,
                ColumnUnit::Plain,
                of_metric,
                of_metric,
                of_metric,
                ColumnUnit::Fixed("%"),
            ]
        },
    }
}

/// Every (metric, statistic) of one point with its replicate values.
pub fn point(index: usize, p: &PointReport, level: f64) -> Table {
    let reps: Vec<u32> = {
        let mut v: Vec<u32> = p
            .metrics
            .iter()
            .flat_map(|m| m.replicates.iter().map(|r| r.0))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut headers: Vec<String> = ["metric", "statistic", "mean", "ci_lo", "ci_hi", "unit", "n"]
        .map(String::from)
        .to_vec();
    headers.extend(reps.iter().map(|k| format!("r{k}")));
    let rows = p
        .metrics
        .iter()
        .map(|m| {
            let mut row = vec![
                Cell::from(m.metric.as_str()),
                Cell::from(m.statistic.as_str()),
                Cell::from(m.mean),
                Cell::from(m.ci.map(|c| c.0)),
                Cell::from(m.ci.map(|c| c.1)),
                Cell::from(m.unit.as_str()),
                Cell::Num(m.n as f64),
            ];
            for k in &reps {
                row.push(Cell::from(
                    m.replicates.iter().find(|r| r.0 == *k).map(|r| r.1),
                ));
            }
            row
        })
        .collect();
    Table {
        name: format!("point-{:02}", index + 1),
        level: Some(level),
        title: format!(
            "Point {}: {} ({})",
            index + 1,
            p.id,
            format::level_header(level)
        ),
        units: {
            let of_metric = ColumnUnit::Metric {
                metric: 0,
                unit: Some(5),
            };
            let mut u = vec![ColumnUnit::Plain, ColumnUnit::Plain, of_metric, of_metric];
            u.extend([of_metric, ColumnUnit::Plain, ColumnUnit::Plain]);
            u.extend(reps.iter().map(|_| of_metric));
            u
        },
        headers,
        rows,
    }
}

/// Pooled request latencies per serving point: percentiles, and the normal-assumption p99
/// (mean + 2.326 sd) beside the empirical one.
pub fn latency(r: &RunReport) -> Option<Table> {
    let mut rows = Vec::new();
    for p in &r.points {
        let Some(l) = &p.latency else { continue };
        for metric in [id::TTFT_MS, id::TPOT_MS, id::ITL_MS, id::E2E_MS] {
            let xs = l.get(metric);
            if xs.is_empty() {
                continue;
            }
            let mut s = xs.to_vec();
            s.sort_unstable_by(f64::total_cmp);
            let q = |q: f64| yardstick_stats::percentile::percentile_sorted(&s, q);
            let mean = s.iter().sum::<f64>() / s.len() as f64;
            let tail = yardstick_stats::tail::normal_tail(&s, 0.99).ok();
            rows.push(vec![
                Cell::from(p.id.as_str()),
                Cell::from(metric),
                Cell::Num(s.len() as f64),
                Cell::from(mean),
                Cell::from(q(0.5)),
                Cell::from(q(0.9)),
                Cell::from(q(0.95)),
                Cell::from(q(0.99)),
                Cell::from(tail.map(|t| t.normal)),
                Cell::from(tail.and_then(|t| t.relative_error).map(|e| e * 100.0)),
                Cell::from(s[s.len() - 1]),
            ]);
        }
    }
    (!rows.is_empty()).then(|| Table {
        name: "latency".into(),
        level: None,
        title: "Request latency (measured requests pooled over replicates)".into(),
        headers: [
            "point",
            "metric",
            "n",
            "mean",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99_normal",
            "p99_normal_error_pct",
            "max",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        units: {
            let ms = ColumnUnit::Metric {
                metric: 1,
                unit: None,
            };
            let mut u = vec![ColumnUnit::Plain, ColumnUnit::Plain, ColumnUnit::Plain];
            u.extend([ms; 6]);
            u.extend([ColumnUnit::Fixed("%"), ms]);
            u
        },
    })
}

/// The throughput of a point for scaling: tokens/s, else samples/s (aggregate over the
/// measured window).
pub fn scaling_throughput(p: &PointReport) -> Option<(&'static str, f64)> {
    for (m, s) in [
        (yardstick_spec::metrics::id::TOKENS_PER_S, "aggregate"),
        (yardstick_spec::metrics::id::SAMPLES_PER_S, "aggregate"),
        (yardstick_spec::metrics::id::TOKENS_PER_S, "p50"),
        (yardstick_spec::metrics::id::SAMPLES_PER_S, "p50"),
    ] {
        if let Some(x) = p.metric(m, s) {
            return Some((m, x.mean));
        }
    }
    None
}

/// Scaling efficiency T(N) / (N/N0 · T(N0)) across the world sizes of a run, when it has two
/// or more with a throughput.
pub fn scaling_points(r: &RunReport) -> Vec<(u32, f64, f64, &'static str)> {
    let mut v: Vec<(u32, f64, &'static str)> = r
        .points
        .iter()
        .filter_map(|p| {
            let n = p.world_size()?;
            let (m, t) = scaling_throughput(p)?;
            Some((n, t, m))
        })
        .collect();
    v.sort_by_key(|x| x.0);
    v.dedup_by_key(|x| x.0);
    if v.len() < 2 {
        return Vec::new();
    }
    let (n0, t0, _) = v[0];
    v.iter()
        .map(|&(n, t, m)| (n, t, t / (t0 * f64::from(n) / f64::from(n0)), m))
        .collect()
}

/// The scaling table, when there are world sizes.
pub fn scaling(r: &RunReport) -> Option<Table> {
    let pts = scaling_points(r);
    (!pts.is_empty()).then(|| Table {
        name: "scaling".into(),
        level: None,
        title: "Scaling efficiency T(N) / (N/N0 · T(N0))".into(),
        headers: ["world_size", "metric", "throughput", "efficiency"]
            .map(String::from)
            .to_vec(),
        rows: pts
            .iter()
            .map(|(n, t, e, m)| {
                vec![
                    Cell::Num(f64::from(*n)),
                    Cell::from(*m),
                    Cell::from(*t),
                    Cell::from(*e),
                ]
            })
            .collect(),
        units: vec![
            ColumnUnit::Plain,
            ColumnUnit::Plain,
            ColumnUnit::Metric {
                metric: 1,
                unit: None,
            },
            ColumnUnit::Fixed("fraction"),
        ],
    })
}

/// The gate or comparison rows.
pub fn gate(report: &Report) -> Option<Table> {
    let g = report.gate.as_ref()?;
    let rows = g
        .rows
        .iter()
        .map(|m| {
            vec![
                Cell::from(m.point.as_str()),
                Cell::from(m.metric.as_str()),
                Cell::from(m.statistic.as_str()),
                Cell::from(m.baseline),
                Cell::from(m.candidate),
                Cell::from(m.ratio),
                Cell::from(m.ci.map(|c| c.0)),
                Cell::from(m.ci.map(|c| c.1)),
                Cell::from(m.tolerance_pct),
                Cell::from(m.noise_floor_pct),
                Cell::from(m.bound()),
                Cell::from(m.p_value),
                m.verdict.clone().map_or(Cell::Empty, Cell::Text),
                m.reason.clone().map_or(Cell::Empty, Cell::Text),
            ]
        })
        .collect();
    Some(Table {
        name: "gate".into(),
        level: None,
        title: match &g.verdict {
            Some(v) => format!(
                "Gate: {v} ({} baseline vs {} candidate)",
                g.baseline_run, g.candidate_run
            ),
            None => format!(
                "Comparison: {} (A) vs {} (B)",
                g.baseline_run, g.candidate_run
            ),
        },
        headers: [
            "point",
            "metric",
            "statistic",
            "baseline",
            "candidate",
            "ratio",
            "ci_lo",
            "ci_hi",
            "tolerance",
            "noise_floor_pct",
            "bound",
            "p_value",
            "verdict",
            "reason",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        units: {
            let of_metric = ColumnUnit::Metric {
                metric: 1,
                unit: None,
            };
            vec![
                ColumnUnit::Plain,
                ColumnUnit::Plain,
                ColumnUnit::Plain,
                of_metric,
                of_metric,
            ]
        },
    })
}

/// Key environment fields, then every other scalar leaf of `env.json`.
pub fn env_fields(env: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, x, out);
                }
            }
            Value::Array(a) => {
                if a.iter().all(|x| !x.is_object() && !x.is_array()) {
                    let items: Vec<String> = a
                        .iter()
                        .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                        .collect();
                    out.push((prefix.to_string(), items.join(", ")));
                } else {
                    for (i, x) in a.iter().enumerate() {
                        walk(&format!("{prefix}[{i}]"), x, out);
                    }
                }
            }
            Value::Null => {}
            Value::String(s) => out.push((prefix.to_string(), s.clone())),
            x => out.push((prefix.to_string(), x.to_string())),
        }
    }
    walk("", env, &mut out);
    out
}

/// The environment capture.
pub fn environment(env: &Value) -> Table {
    Table {
        name: "environment".into(),
        level: None,
        title: "Environment and machine profile".into(),
        headers: vec!["field".into(), "value".into()],
        rows: env_fields(env)
            .into_iter()
            .map(|(k, v)| vec![Cell::Text(k), Cell::Text(v)])
            .collect(),
        units: Vec::new(),
    }
}

/// Telemetry per device and metric: samples, mean, min, max, first and last.
pub fn telemetry(r: &RunReport) -> Option<Table> {
    let mut keys: Vec<(&str, &str)> = r
        .telemetry
        .iter()
        .map(|t| (t.device.as_str(), t.metric.as_str()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let rows: Vec<Vec<Cell>> = keys
        .iter()
        .map(|(d, m)| {
            let v: Vec<f64> = r
                .telemetry
                .iter()
                .filter(|t| t.device == *d && t.metric == *m)
                .map(|t| t.value)
                .collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            vec![
                Cell::from(*d),
                Cell::from(*m),
                Cell::Num(v.len() as f64),
                Cell::from(mean),
                Cell::from(v.iter().copied().fold(f64::INFINITY, f64::min)),
                Cell::from(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
                Cell::from(v[0]),
                Cell::from(v[v.len() - 1]),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        name: "telemetry".into(),
        level: None,
        title: "Telemetry".into(),
        headers: [
            "device", "metric", "samples", "mean", "min", "max", "first", "last",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        units: Vec::new(),
    })
}
