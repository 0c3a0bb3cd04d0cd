//! Runs: the list with filters, one run, its facts, and the comparison of two.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yardstick_store::warehouse::{
    FactRow, PointRow, ReplicateRow, RunFilter, RunRow, Warehouse, find_run, since_to_time,
};
use yardstick_store::{Manifest, RunStatus};

use super::extract::{ApiPath, ApiQuery};
use crate::ApiError;
use crate::state::AppState;

/// Runs listed per page unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 50;
/// The largest page.
pub const MAX_LIMIT: usize = 1000;
/// The largest offset (far beyond any store; keeps the SQL's numbers in every backend's range).
pub const MAX_OFFSET: usize = 1_000_000_000;

/// Filters and paging of `GET /api/v1/runs`. Every value is compared as a plain value, never
/// read as SQL.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    /// Only runs of this benchmark (the spec's `metadata.name`).
    pub name: Option<String>,
    /// Only runs of this machine profile.
    pub profile: Option<String>,
    /// Only runs whose spec has this label: `key=value`, or `key` for any value.
    pub label: Option<String>,
    /// Only runs in this state.
    pub status: Option<RunStatus>,
    /// Only runs started since: an age (`7d`, `12h`), a date (`2026-05-01`) or an RFC 3339 time.
    pub since: Option<String>,
    /// Only runs started before: an age, a date or an RFC 3339 time, like `since`.
    pub until: Option<String>,
    /// Runs per page (1 to 1000, default 50).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Runs to skip, for the next pages (default 0, at most 1,000,000,000).
    #[schemars(range(max = 1_000_000_000))]
    pub offset: Option<usize>,
}

/// One page of runs.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RunsPage {
    /// The runs, newest first.
    pub runs: Vec<RunRow>,
    /// The page size asked for.
    pub limit: usize,
    /// Runs skipped before this page.
    pub offset: usize,
    /// The `offset` of the next page, when there are more runs.
    pub next_offset: Option<usize>,
}

/// A `label` filter: `key=value` or `key`.
pub fn label_matches(filter: &str, labels: &std::collections::BTreeMap<String, String>) -> bool {
    match filter.split_once('=') {
        Some((k, v)) => labels.get(k).is_some_and(|have| have == v),
        None => labels.contains_key(filter),
    }
}

fn time_bound(flag: &str, v: Option<&str>) -> Result<Option<String>, ApiError> {
    // `since=` (empty, as a form leaves it) is no bound.
    v.filter(|s| !s.trim().is_empty())
        .map(|s| {
            since_to_time(s, time::OffsetDateTime::now_utc()).map_err(|e| {
                ApiError::bad_request(
                    format!("{flag}: {e}"),
                    Some("an age (7d, 12h), a date (2026-05-01) or an RFC 3339 time"),
                )
            })
        })
        .transpose()
}

/// The runs a query selects, and the next page's offset.
pub fn select(
    state: &AppState,
    w: &mut dyn Warehouse,
    q: &RunsQuery,
) -> Result<RunsPage, ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::bad_request(
            format!("limit must be 1 to {MAX_LIMIT}, got {limit}"),
            Some("page with limit and offset"),
        ));
    }
    let offset = q.offset.unwrap_or(0);
    if offset > MAX_OFFSET {
        return Err(ApiError::bad_request(
            format!("offset must be at most {MAX_OFFSET}, got {offset}"),
            Some("follow next_offset from page to page"),
        ));
    }
    let mut filter = RunFilter {
        machine_profile: q.profile.clone(),
        name: q.name.clone(),
        since: time_bound("since", q.since.as_deref())?,
        until: time_bound("until", q.until.as_deref())?,
        status: q.status.map(|s| s.as_str().to_string()),
        ..Default::default()
    };
    let mut runs = match &q.label {
        // Labels live in each run's spec, not in the warehouse: filter, then page.
        Some(label) => w
            .runs(&filter)?
            .into_iter()
            .filter(|r| label_matches(label, &state.labels(r)))
            .skip(offset)
            .take(limit + 1)
            .collect(),
        None => {
            filter.limit = Some(limit + 1);
            filter.offset = Some(offset);
            w.runs(&filter)?
        }
    };
    let next_offset = (runs.len() > limit).then_some(offset + limit);
    runs.truncate(limit);
    Ok(RunsPage {
        runs,
        limit,
        offset,
        next_offset,
    })
}

pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<RunsQuery>,
) -> Result<Json<RunsPage>, ApiError> {
    state
        .blocking(move |st, w| select(st, w, &q).map(Json))
        .await
}

/// The run named in the path.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunPath {
    /// Run id (ULID), or a unique prefix of one.
    pub id: String,
}

/// One run, everything stored about it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunDetail {
    /// The warehouse row.
    pub run: RunRow,
    /// The points of its plan.
    pub points: Vec<PointRow>,
    /// Every replicate and its state.
    pub replicates: Vec<ReplicateRow>,
    /// The manifest (every artifact with its sha256), when the run directory is here.
    pub manifest: Option<Manifest>,
    /// `summary.json`: every point's aggregate facts, scaling, eval and bottleneck analyses.
    pub summary: Option<serde_json::Value>,
    /// The failed replicates and why (the summary's `failures`).
    pub failures: Option<serde_json::Value>,
    /// The bottleneck verdicts (the summary's `bottlenecks`; left out of this field, not of
    /// `summary`, when written in a shape this version does not read).
    pub bottlenecks: Option<yardstick_store::summary::RunBottlenecks>,
    /// `env.json`: the environment capture.
    pub env: Option<serde_json::Value>,
    /// The spec as it was given (`spec.yaml`).
    pub spec: Option<String>,
}

fn read_json(dir: &std::path::Path, rel: &str) -> Option<serde_json::Value> {
    yardstick_store::fsutil::read_in(dir, rel)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
}

/// Everything stored about one run (id or unique prefix): what `GET /api/v1/runs/{id}` answers.
pub fn detail(state: &AppState, w: &mut dyn Warehouse, id: &str) -> Result<RunDetail, ApiError> {
    let run = find_run(w, id)?;
    let points = w.points(&run.run_id)?;
    let replicates = w.replicates(&run.run_id)?;
    let dir = state.run_dir(&run);
    let manifest = dir
        .as_deref()
        .and_then(|d| yardstick_store::read_manifest(d).ok());
    let summary = dir.as_deref().and_then(|d| read_json(d, "summary.json"));
    let env = dir.as_deref().and_then(|d| read_json(d, "env.json"));
    let spec = dir.as_deref().and_then(|d| {
        yardstick_store::fsutil::read_in(d, "spec.yaml")
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    });
    let field = |k: &str| {
        summary
            .as_ref()
            .and_then(|s| s.get(k))
            .filter(|v| !v.is_null())
            .cloned()
    };
    Ok(RunDetail {
        failures: field("failures"),
        bottlenecks: field("bottlenecks").and_then(|b| serde_json::from_value(b).ok()),
        run,
        points,
        replicates,
        manifest,
        summary,
        env,
        spec,
    })
}

pub(super) async fn show(
    State(state): State<Arc<AppState>>,
    ApiPath(p): ApiPath<RunPath>,
) -> Result<Json<RunDetail>, ApiError> {
    state
        .blocking(move |st, w| detail(st, w, &p.id).map(Json))
        .await
}

/// The facts of one run.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FactsOut {
    /// The run's full id.
    pub run_id: String,
    /// Every fact: per replicate, and the aggregates over replicates (`replicate: null`).
    pub facts: Vec<FactRow>,
}

/// Which facts of a run (all of them by default).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FactsQuery {
    /// Only this metric (e.g. `ttft_ms`).
    pub metric: Option<String>,
    /// Only this statistic (e.g. `p50`).
    pub statistic: Option<String>,
    /// Only this point of the sweep.
    pub point: Option<String>,
    /// Only the aggregates over replicates (`true`) or only per-replicate facts (`false`).
    pub aggregate: Option<bool>,
}

impl FactsQuery {
    /// Whether `f` is selected.
    pub fn keeps(&self, f: &FactRow) -> bool {
        self.metric.as_ref().is_none_or(|m| *m == f.metric)
            && self.statistic.as_ref().is_none_or(|s| *s == f.statistic)
            && self.point.as_ref().is_none_or(|p| *p == f.point_id)
            && self.aggregate.is_none_or(|a| a == f.replicate.is_none())
    }
}

pub(super) async fn facts(
    State(state): State<Arc<AppState>>,
    ApiPath(p): ApiPath<RunPath>,
    ApiQuery(q): ApiQuery<FactsQuery>,
) -> Result<Json<FactsOut>, ApiError> {
    state
        .blocking(move |_, w| {
            let run = find_run(w, &p.id)?;
            let mut facts = w.facts(&run.run_id)?;
            facts.retain(|f| q.keeps(f));
            Ok(Json(FactsOut {
                facts,
                run_id: run.run_id,
            }))
        })
        .await
}

/// The two runs to compare.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    /// The baseline run (id or unique prefix).
    pub a: String,
    /// The candidate run (id or unique prefix).
    pub b: String,
}

pub(super) async fn compare(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<CompareQuery>,
) -> Result<Json<yardstick_gate::Comparison>, ApiError> {
    state
        .blocking(move |st, w| compare_runs(st, w, &q).map(Json))
        .await
}

/// The comparison of two runs: what `GET /api/v1/compare` (and `yardstick compare A B --json`)
/// answers.
pub fn compare_runs(
    state: &AppState,
    w: &mut dyn Warehouse,
    q: &CompareQuery,
) -> Result<yardstick_gate::Comparison, ApiError> {
    let mut w = crate::state::Located::new(w, state.config.store_dir.as_deref());
    let a = yardstick_gate::load_run(&mut w, &q.a)?;
    let b = yardstick_gate::load_run(&mut w, &q.b)?;
    Ok(yardstick_gate::compare(&a, &b)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_filters() {
        let labels: std::collections::BTreeMap<String, String> =
            [("team".to_string(), "inference".to_string())].into();
        assert!(label_matches("team=inference", &labels));
        assert!(label_matches("team", &labels));
        assert!(!label_matches("team=training", &labels));
        assert!(!label_matches("owner", &labels));
        assert!(!label_matches("team=inference' OR '1'='1", &labels));
    }
}
