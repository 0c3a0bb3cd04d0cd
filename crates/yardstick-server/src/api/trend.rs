//! `GET /api/v1/trend`: one metric of one benchmark over time.
//!
//! The points are the runs' aggregate facts (the mean over replicates with its Student-t
//! interval, what `summary.json` holds), one series per machine profile and point of the sweep,
//! oldest first, with the baseline in force for each profile.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yardstick_store::warehouse::{BaselineRow, RunFilter, Warehouse};

use super::extract::ApiQuery;
use crate::ApiError;
use crate::state::AppState;

/// Most runs one trend looks at (the newest).
pub const MAX_RUNS: usize = 5000;

/// What to trend.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrendQuery {
    /// The benchmark (the spec's `metadata.name`).
    pub benchmark: String,
    /// The metric id (`yardstick metrics` lists them), e.g. `ttft_ms`.
    pub metric: String,
    /// The statistic (`p50`, `mean`, `value`...); default: the one the gate compares, else the
    /// metric's first.
    pub statistic: Option<String>,
    /// Only this machine profile (default: a series per profile).
    pub profile: Option<String>,
    /// Only this point of the sweep (default: a series per point).
    pub point: Option<String>,
    /// Only runs started since: an age (`30d`), a date or an RFC 3339 time.
    pub since: Option<String>,
    /// At most this many runs, the newest (default and maximum 5000).
    #[schemars(range(min = 1, max = 5000))]
    pub limit: Option<usize>,
    /// Also find the change points of each series (E-divisive means with a permutation test,
    /// over its newest 500 complete runs): `changes=true`.
    #[serde(default)]
    pub changes: Option<bool>,
}

/// Change points look at most this many runs of a series (the newest).
pub const MAX_CHANGE_RUNS: usize = 500;

/// A change in a series: where its level moved, by how much, and between which commits.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrendChange {
    /// The first run after the change.
    pub run_id: String,
    /// When it started.
    pub started_at: String,
    /// The last run before the change.
    pub previous_run: String,
    /// The commits between: the last run's before the change, and the first's after (the
    /// change came in one of the commits in `from..to`).
    pub from_commit: Option<String>,
    /// See `from_commit`.
    pub to_commit: Option<String>,
    /// The mean of the runs before (back to the previous change).
    pub before: f64,
    /// The mean of the runs after (up to the next change).
    pub after: f64,
    /// `after - before`, with its Welch interval.
    pub difference: f64,
    /// Lower bound of the difference's interval.
    pub ci_lo: Option<f64>,
    /// Upper bound of the difference's interval.
    pub ci_hi: Option<f64>,
    /// The difference relative to `before`, percent.
    pub relative_pct: Option<f64>,
    /// The permutation test's p-value.
    pub p_value: f64,
    /// Better, worse or neither, by the metric's direction.
    pub direction: String,
}

impl TrendChange {
    /// The change as a sentence (`worse change: 20.2 ms → 40.3 ms, +99.5 %, step 20.1 ms [19.4
    /// ms, 20.8 ms] (p = 0.005), commits a1b2..c3d4`), values in `unit`.
    pub fn text(&self, unit: &str) -> String {
        use yardstick_spec::human::human_with_ci;
        let h = |v: f64| human_with_ci(v, None, unit);
        format!(
            "{} change: {} → {}{} (p = {:.3}){}",
            self.direction,
            h(self.before),
            h(self.after),
            match (self.relative_pct, self.ci_lo.zip(self.ci_hi)) {
                (Some(r), Some((lo, hi))) => format!(
                    ", {r:+.1} %, step {} [{}, {}]",
                    h(self.difference),
                    h(lo),
                    h(hi)
                ),
                (Some(r), None) => format!(", {r:+.1} %"),
                _ => String::new(),
            },
            self.p_value,
            match (&self.from_commit, &self.to_commit) {
                (Some(a), Some(b)) if a != b => format!(
                    ", commits {}..{}",
                    a.get(..12).unwrap_or(a),
                    b.get(..12).unwrap_or(b)
                ),
                _ => String::new(),
            }
        )
    }
}

/// One run's value.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrendPoint {
    /// The run.
    pub run_id: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// The git commit it was run from.
    pub git_commit: Option<String>,
    /// The run's state.
    pub status: yardstick_store::RunStatus,
    /// The value (mean over replicates).
    pub value: f64,
    /// Lower bound of its confidence interval.
    pub ci_lo: Option<f64>,
    /// Upper bound of its confidence interval.
    pub ci_hi: Option<f64>,
    /// Replicates behind it.
    pub n: u64,
    /// What the gate said of this metric of the run, the last time it was gated (by
    /// `yardstick gate` on the store, or by the server when the run was pushed): `PASS`,
    /// `WARN`, `FAIL`, `INCONCLUSIVE`; null when it never was.
    pub verdict: Option<String>,
    /// The baseline that gating compared against (the baseline in force then).
    pub gated_against: Option<String>,
}

/// One series: a machine profile and a point, over time.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TrendSeries {
    /// Machine profile.
    pub machine_profile: Option<String>,
    /// Point of the sweep.
    pub point_id: String,
    /// The baseline run in force for this profile and benchmark, if one is set.
    pub baseline_run: Option<String>,
    /// The runs' values, oldest first.
    pub points: Vec<TrendPoint>,
    /// The change points, oldest first (when asked for with `changes=true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<TrendChange>>,
    /// The smallest difference a change must have (the machine profile's noise floor for this
    /// metric, from `gate --calibrate`, as a share of the series' level); 0 without a floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_effect: Option<f64>,
}

/// A trend.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TrendOut {
    /// Benchmark.
    pub benchmark: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// Unit of the values.
    pub unit: Option<String>,
    /// Which way is better (`higher`, `lower`, `neither`), from the metric catalogue.
    pub better: Option<String>,
    /// The series.
    pub series: Vec<TrendSeries>,
}

/// The trend a query asks for.
pub fn compute(w: &mut dyn Warehouse, q: &TrendQuery) -> Result<TrendOut, ApiError> {
    let def = yardstick_spec::metrics::lookup(&q.metric);
    let statistic = q
        .statistic
        .clone()
        .or_else(|| {
            def.and_then(|d| d.gated.or(d.statistics.first().copied()))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "mean".to_string());
    let limit = q.limit.unwrap_or(MAX_RUNS);
    if limit == 0 || limit > MAX_RUNS {
        return Err(ApiError::bad_request(
            format!("limit must be 1 to {MAX_RUNS}, got {limit}"),
            None,
        ));
    }
    let since = q
        .since
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(|s| yardstick_store::warehouse::since_to_time(s, time::OffsetDateTime::now_utc()))
        .transpose()?;
    let filter = RunFilter {
        name: Some(q.benchmark.clone()),
        machine_profile: q.profile.clone(),
        since,
        limit: Some(limit),
        ..Default::default()
    };
    // One query whatever the number of runs: the runs joined to the metric's facts and
    // recorded verdicts (oldest first), and the baselines.
    let rows = w.trend_rows(&filter, &q.metric, &statistic)?;
    let baselines: Vec<BaselineRow> = w
        .baselines()?
        .into_iter()
        .filter(|b| b.benchmark == q.benchmark)
        .collect();
    let mut unit = None;
    let mut series: BTreeMap<(Option<String>, String), Vec<TrendPoint>> = BTreeMap::new();
    for r in rows {
        if q.point.as_ref().is_some_and(|p| *p != r.point_id) {
            continue;
        }
        if unit.is_none() {
            unit = Some(r.unit);
        }
        series
            .entry((r.machine_profile, r.point_id))
            .or_default()
            .push(TrendPoint {
                run_id: r.run_id,
                started_at: r.started_at,
                git_commit: r.git_commit,
                status: r.status,
                value: r.value,
                ci_lo: r.ci_lo,
                ci_hi: r.ci_hi,
                n: r.n,
                verdict: r.verdict,
                gated_against: r.gated_against,
            });
    }
    // A series per profile and point: points in natural order (a sweep's 1, 8, 32).
    let mut series: Vec<TrendSeries> = series
        .into_iter()
        .map(|((profile, point_id), points)| TrendSeries {
            baseline_run: baselines
                .iter()
                .find(|b| Some(&b.machine_profile) == profile.as_ref())
                .map(|b| b.run_id.clone()),
            machine_profile: profile,
            point_id,
            points,
            changes: None,
            min_effect: None,
        })
        .collect();
    series.sort_by(|a, b| {
        a.machine_profile
            .cmp(&b.machine_profile)
            .then_with(|| yardstick_store::order::natural_cmp(&a.point_id, &b.point_id))
    });
    if q.changes == Some(true) {
        for s in &mut series {
            let floors = match &s.machine_profile {
                Some(p) => {
                    yardstick_gate::calibrate::noise_floors(w, p, &q.benchmark).unwrap_or_default()
                }
                None => Default::default(),
            };
            let floor_pct = floors
                .get(&(s.point_id.clone(), q.metric.clone(), statistic.clone()))
                .copied();
            let (changes, min_effect) = changes_of(&s.points, floor_pct, def);
            s.changes = Some(changes);
            s.min_effect = Some(min_effect);
        }
    }
    Ok(TrendOut {
        benchmark: q.benchmark.clone(),
        metric: q.metric.clone(),
        better: def.map(|d| d.direction.as_str().to_string()),
        statistic,
        unit,
        series,
    })
}

/// The change points of a series' complete runs (its newest [`MAX_CHANGE_RUNS`]), and the
/// smallest difference that counted: `floor_pct` of the series' mean level.
fn changes_of(
    points: &[TrendPoint],
    floor_pct: Option<f64>,
    def: Option<&yardstick_spec::metrics::MetricDef>,
) -> (Vec<TrendChange>, f64) {
    let runs: Vec<&TrendPoint> = points
        .iter()
        .filter(|p| p.status == yardstick_store::RunStatus::Complete && p.value.is_finite())
        .collect();
    let runs = &runs[runs.len().saturating_sub(MAX_CHANGE_RUNS)..];
    let values: Vec<f64> = runs.iter().map(|p| p.value).collect();
    let level = if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    };
    let min_effect = floor_pct.map_or(0.0, |f| f / 100.0 * level.abs());
    let settings = yardstick_stats::changepoint::Settings {
        min_effect,
        ..Default::default()
    };
    let found = yardstick_stats::changepoint::detect(&values, &settings).unwrap_or_default();
    let changes = found
        .into_iter()
        .map(|c| {
            let (first, last) = (runs[c.index], runs[c.index - 1]);
            let direction = match def.map(|d| d.direction) {
                Some(yardstick_spec::metrics::Direction::HigherIsBetter) if c.difference > 0.0 => {
                    "better"
                }
                Some(yardstick_spec::metrics::Direction::HigherIsBetter) => "worse",
                Some(yardstick_spec::metrics::Direction::LowerIsBetter) if c.difference < 0.0 => {
                    "better"
                }
                Some(yardstick_spec::metrics::Direction::LowerIsBetter) => "worse",
                _ => "neither",
            };
            TrendChange {
                run_id: first.run_id.clone(),
                started_at: first.started_at.clone(),
                previous_run: last.run_id.clone(),
                from_commit: last.git_commit.clone(),
                to_commit: first.git_commit.clone(),
                before: c.before,
                after: c.after,
                difference: c.difference,
                ci_lo: c.ci.map(|[lo, _]| lo),
                ci_hi: c.ci.map(|[_, hi]| hi),
                relative_pct: c.relative_pct,
                p_value: c.p_value,
                direction: direction.into(),
            }
        })
        .collect();
    (changes, min_effect)
}

/// Several trends of one benchmark at once.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrendsQuery {
    /// The benchmark (the spec's `metadata.name`).
    pub benchmark: String,
    /// Metric ids, comma separated (`ttft_ms,tpot_ms`); each with its gated statistic unless
    /// named as `metric:statistic` (`ttft_ms:p50`). At most 16.
    pub metrics: String,
    /// Machine profiles, comma separated (default: every profile, a series each).
    pub profiles: Option<String>,
    /// Only this point of the sweep (default: a series per point).
    pub point: Option<String>,
    /// Only runs started since: an age (`30d`), a date or an RFC 3339 time.
    pub since: Option<String>,
    /// At most this many runs per trend, the newest (default and maximum 5000).
    #[schemars(range(min = 1, max = 5000))]
    pub limit: Option<usize>,
    /// Also find each series' change points (`changes=true`).
    #[serde(default)]
    pub changes: Option<bool>,
}

/// Several trends.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TrendsOut {
    /// Benchmark.
    pub benchmark: String,
    /// One per metric asked for, in the order asked; each with a series per profile and point.
    pub trends: Vec<TrendOut>,
}

/// Most metrics one `GET /api/v1/trends` asks for.
pub const MAX_METRICS: usize = 16;

/// The trends a query asks for: one [`compute`] per metric, with the profiles' series merged.
pub fn compute_many(w: &mut dyn Warehouse, q: &TrendsQuery) -> Result<TrendsOut, ApiError> {
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let metrics = list(&q.metrics);
    if metrics.is_empty() || metrics.len() > MAX_METRICS {
        return Err(ApiError::bad_request(
            format!(
                "metrics must name 1 to {MAX_METRICS} metric ids, got {}",
                metrics.len()
            ),
            Some("`yardstick metrics` lists the ids, e.g. metrics=ttft_ms,tpot_ms"),
        ));
    }
    let profiles: Vec<Option<String>> = match q.profiles.as_deref().map(list) {
        Some(p) if !p.is_empty() => p.into_iter().map(Some).collect(),
        _ => vec![None],
    };
    let mut trends = Vec::with_capacity(metrics.len());
    for m in metrics {
        let (metric, statistic) = match m.split_once(':') {
            Some((m, s)) => (m.to_string(), Some(s.to_string())),
            None => (m, None),
        };
        let mut merged: Option<TrendOut> = None;
        for profile in &profiles {
            let one = compute(
                w,
                &TrendQuery {
                    benchmark: q.benchmark.clone(),
                    metric: metric.clone(),
                    statistic: statistic.clone(),
                    profile: profile.clone(),
                    point: q.point.clone(),
                    since: q.since.clone(),
                    limit: q.limit,
                    changes: q.changes,
                },
            )?;
            match &mut merged {
                Some(t) => {
                    t.unit = t.unit.take().or(one.unit);
                    t.series.extend(one.series);
                }
                None => merged = Some(one),
            }
        }
        trends.extend(merged);
    }
    Ok(TrendsOut {
        benchmark: q.benchmark.clone(),
        trends,
    })
}

pub(super) async fn trends(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<TrendsQuery>,
) -> Result<Json<TrendsOut>, ApiError> {
    state
        .blocking(move |_, w| compute_many(w, &q).map(Json))
        .await
}

pub(super) async fn trend(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<TrendQuery>,
) -> Result<Json<TrendOut>, ApiError> {
    state.blocking(move |_, w| compute(w, &q).map(Json)).await
}
