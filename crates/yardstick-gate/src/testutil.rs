//! Fixtures shared by the unit tests.

use std::path::Path;

use yardstick_store::warehouse::{FactRow, RunRow};

use crate::load::RunData;

/// A complete run of benchmark `t` on machine profile `cpu-test`, stored in `location`.
pub(crate) fn run_row(id: &str, location: &str) -> RunRow {
    RunRow {
        run_id: id.into(),
        name: "t".into(),
        status: yardstick_store::RunStatus::Complete,
        mode: Some("realism".into()),
        spec_sha256: String::new(),
        machine_profile: Some("cpu-test".into()),
        env_sha256: None,
        started_at: "2026-01-01T00:00:00.000Z".into(),
        ended_at: None,
        tool_version: "0".into(),
        git_commit: None,
        location: location.into(),
    }
}

/// [`run_row`] with its run directory `dir` (no spec or env) and the given replicate values of
/// `ttft_ms p50` at point `p`.
pub(crate) fn run_data(id: &str, dir: &Path, ttft: &[f64]) -> RunData {
    let facts = ttft
        .iter()
        .enumerate()
        .map(|(k, v)| FactRow {
            run_id: id.into(),
            point_id: "p".into(),
            replicate: Some(k as u32),
            metric: "ttft_ms".into(),
            statistic: "p50".into(),
            value: *v,
            ci_lo: None,
            ci_hi: None,
            unit: "ms".into(),
            n: 1,
            artifact: None,
            row_group: None,
        })
        .collect();
    RunData {
        run: run_row(id, "/nonexistent"),
        dir: dir.to_path_buf(),
        spec: None,
        spec_value: serde_json::Value::Null,
        env: serde_json::Value::Null,
        facts,
    }
}
