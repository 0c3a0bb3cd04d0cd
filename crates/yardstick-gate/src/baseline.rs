//! Baselines: one reference run per (machine profile, benchmark name), stored in the warehouse.
//! Saving is explicit; replacing another run's baseline needs `force`.

use yardstick_store::warehouse::{BaselineRow, RunRow, Warehouse};

use crate::{GateError, find_run};

/// Saves `run_id` (or a unique prefix) as the baseline of its machine profile and benchmark.
/// Only complete runs with a machine profile can be baselines.
pub fn save(
    w: &mut dyn Warehouse,
    run_id: &str,
    force: bool,
    note: Option<String>,
) -> Result<BaselineRow, GateError> {
    let run = find_run(w, run_id)?;
    if run.status != "complete" {
        return Err(GateError::Invalid(format!(
            "run {} is `{}`; only a complete run can be a baseline",
            run.run_id, run.status
        )));
    }
    let profile = run.machine_profile.clone().ok_or_else(|| {
        GateError::Invalid(format!(
            "run {} has no machine profile; a baseline is keyed by one",
            run.run_id
        ))
    })?;
    let row = BaselineRow {
        machine_profile: profile,
        benchmark: run.name.clone(),
        run_id: run.run_id.clone(),
        created_at: yardstick_env::now_rfc3339(),
        note,
    };
    w.set_baseline(&row, force)?;
    Ok(row)
}

/// Every stored baseline.
pub fn list(w: &mut dyn Warehouse) -> Result<Vec<BaselineRow>, GateError> {
    Ok(w.baselines()?)
}

/// The stored baseline of a machine profile and benchmark, if any.
pub fn find(
    w: &mut dyn Warehouse,
    profile: &str,
    benchmark: &str,
) -> Result<Option<BaselineRow>, GateError> {
    Ok(w.baselines()?
        .into_iter()
        .find(|b| b.machine_profile == profile && b.benchmark == benchmark))
}

/// `--baseline auto`: the stored baseline of the candidate's machine profile and name.
pub fn resolve_auto(w: &mut dyn Warehouse, candidate: &RunRow) -> Result<BaselineRow, GateError> {
    let profile = candidate.machine_profile.clone().unwrap_or_default();
    find(w, &profile, &candidate.name)?.ok_or(GateError::NoBaseline {
        profile,
        benchmark: candidate.name.clone(),
    })
}
