//! The gate and the baselines, read-only: `GET /api/v1/runs/{id}/gate` gives what
//! `yardstick gate RUN --baseline B --json` prints (without `--confirm` or `--calibrate`, which
//! run or record things), and `GET /api/v1/baselines` the stored baselines.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use yardstick_gate::{GateError, GateOptions, GateReport, baseline, calibrate};
use yardstick_store::warehouse::{BaselineRow, Warehouse};

use super::extract::{ApiPath, ApiQuery, JsonBody};
use super::runs::RunPath;
use crate::ApiError;
use crate::state::{AppState, Located};

/// The server's gating of a pushed run, recorded for trends.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PushGate {
    /// `PASS`, `WARN`, `FAIL` or `INCONCLUSIVE`.
    pub verdict: String,
    /// The baseline run it was gated against.
    pub baseline_run: String,
}

/// Which baseline to gate against.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateQuery {
    /// `auto` (the stored baseline of the run's machine profile and benchmark; the default) or
    /// a run id (or unique prefix). Baseline files are not read on the server.
    pub baseline: Option<String>,
    /// Compare runs of different machine profiles anyway (reported, not enforced).
    #[serde(default)]
    pub cross_profile: bool,
    /// Ignore the machine profile's recorded noise floors (tolerances only).
    #[serde(default)]
    pub no_noise_floor: bool,
}

/// What `yardstick gate --json` prints.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GateOut {
    /// The gate's report: the verdict, each metric's verdict, the comparison.
    #[serde(flatten)]
    pub report: GateReport,
    /// The confirmation run of `gate --confirm`; always null here (the server runs nothing).
    pub confirm_run: Option<String>,
}

fn gate_error(e: GateError) -> ApiError {
    match e {
        e @ GateError::NoBaseline { .. } => ApiError::not_found(
            e.to_string(),
            Some(
                "name a baseline run with ?baseline=RUN_ID, or save one with `yardstick baseline save RUN`",
            ),
        ),
        e @ GateError::ProfileMismatch { .. } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            e.to_string(),
            Some("?cross_profile=true compares them anyway (reported, not enforced)"),
        ),
        e => e.into(),
    }
}

pub(super) async fn gate(
    State(state): State<Arc<AppState>>,
    ApiPath(p): ApiPath<RunPath>,
    ApiQuery(q): ApiQuery<GateQuery>,
) -> Result<Json<GateOut>, ApiError> {
    state
        .blocking(move |st, w| gate_run(st, w, &p.id, &q).map(Json))
        .await
}

/// Gates run `id` against its baseline: what `GET /api/v1/runs/{id}/gate` answers.
pub fn gate_run(
    state: &AppState,
    w: &mut dyn Warehouse,
    id: &str,
    q: &GateQuery,
) -> Result<GateOut, ApiError> {
    let mut w = Located::new(w, state.config.store_dir.as_deref());
    let cand = yardstick_gate::load_run(&mut w, id).map_err(gate_error)?;
    // `auto` or a run: never a path (`gate --baseline FILE` reads files the client
    // would name on the server's disk).
    let base_id = match q.baseline.as_deref().unwrap_or("auto") {
        "auto" => {
            baseline::resolve_auto(&mut w, &cand.run)
                .map_err(gate_error)?
                .run_id
        }
        id => id.to_string(),
    };
    let base = yardstick_gate::load_run(&mut w, &base_id).map_err(gate_error)?;
    let noise_floors = if q.no_noise_floor {
        Default::default()
    } else {
        let profile = cand.run.machine_profile.clone().unwrap_or_default();
        calibrate::noise_floors(&mut w, &profile, &cand.run.name).map_err(gate_error)?
    };
    let opts = GateOptions {
        cross_profile: q.cross_profile,
        tolerances: None,
        noise_floors,
    };
    let report = yardstick_gate::gate(&base, &cand, &opts).map_err(gate_error)?;
    Ok(GateOut {
        report,
        confirm_run: None,
    })
}

/// Gates a run the server has just stored against the baseline in force for its machine
/// profile and benchmark, and records the verdicts (what trends show). `None` when no
/// baseline is set, the run is the baseline, or the gate cannot decide (the push stands
/// either way: gating is the server's courtesy, not a condition of storing).
pub fn gate_stored(state: &AppState, w: &mut dyn Warehouse, run_id: &str) -> Option<PushGate> {
    let run = w.run(run_id).ok()??;
    let base = baseline::find(w, run.machine_profile.as_deref()?, &run.name).ok()??;
    if base.run_id == run.run_id {
        return None;
    }
    let q = GateQuery {
        baseline: Some(base.run_id.clone()),
        ..Default::default()
    };
    let out = gate_run(state, w, run_id, &q).ok()?;
    out.report.record(w).ok()?;
    Some(PushGate {
        verdict: out.report.verdict.to_string(),
        baseline_run: base.run_id,
    })
}

/// Which baselines to list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BaselinesQuery {
    /// Only this machine profile.
    pub profile: Option<String>,
    /// Only this benchmark.
    pub benchmark: Option<String>,
}

/// The stored baselines.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BaselinesOut {
    /// One per (machine profile, benchmark), as `yardstick baseline list --json` lists them.
    pub baselines: Vec<BaselineRow>,
}

/// What `PUT /api/v1/baselines` sets.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetBaseline {
    /// The run (id or unique prefix) to make the baseline of its machine profile and
    /// benchmark. It must be complete, have a machine profile, and pass the store's trust
    /// policy.
    pub run: String,
    /// Replace the baseline of another run (without it, that is a 409).
    #[serde(default)]
    pub force: bool,
    /// Why this run is the baseline.
    pub note: Option<String>,
}

/// Longest note a baseline keeps.
pub const MAX_NOTE: usize = 4096;

/// `PUT /api/v1/baselines` (scope admin): what `yardstick baseline save RUN` does on the
/// server's warehouse, with the same checks.
pub(super) async fn set_baseline(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<SetBaseline>,
) -> Result<Json<BaselineRow>, ApiError> {
    if body.note.as_ref().is_some_and(|n| n.len() > MAX_NOTE) {
        return Err(ApiError::bad_request(
            format!("the note is longer than {MAX_NOTE} bytes"),
            None,
        ));
    }
    if let Some(why) = yardstick_store::run::unsafe_run_id(&body.run) {
        return Err(ApiError::bad_request(
            format!("`{}` is not a run id: {why}", body.run),
            Some("GET /api/v1/runs lists the stored runs"),
        ));
    }
    state
        .blocking(move |st, w| {
            let store = st.config.store_dir.as_deref();
            baseline::save_admitted(w, store, &body.run, body.force, body.note)
                .map(Json)
                .map_err(gate_error)
        })
        .await
}

pub(super) async fn baselines(
    State(state): State<Arc<AppState>>,
    ApiQuery(q): ApiQuery<BaselinesQuery>,
) -> Result<Json<BaselinesOut>, ApiError> {
    state
        .blocking(move |_, w| {
            let mut baselines = baseline::list(w).map_err(gate_error)?;
            baselines.retain(|b| {
                q.profile.as_ref().is_none_or(|p| *p == b.machine_profile)
                    && q.benchmark.as_ref().is_none_or(|n| *n == b.benchmark)
            });
            Ok(Json(BaselinesOut { baselines }))
        })
        .await
}
