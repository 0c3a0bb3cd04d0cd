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

use super::extract::{ApiPath, ApiQuery};
use super::runs::RunPath;
use crate::ApiError;
use crate::state::{AppState, Located};

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
