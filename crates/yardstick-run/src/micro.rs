//! The micro executor: one replicate of a micro point is one trial (fresh buffers, files,
//! sockets) of the built-in micro benchmark; its iterations are the raw samples.

use yardstick_spec::metrics::Measured;
use yardstick_spec::model::Precision;
use yardstick_spec::{MicroKind, Trials};
use yardstick_store::samples::{Column, Table};
use yardstick_workloads::micro::{self, MicroConfig, TrialPolicy};

use crate::RunError;
use crate::facts::Figures;
use crate::replicate::ReplicateOutcome;

/// Runs one replicate of a micro benchmark: its summary is
/// `{"<result name>": {"value", "mean", "min", "max", "cv"}, "units": {...}, "warnings": [...]}`,
/// its figures the micro report's, one sample row per measured iteration.
pub fn run_replicate(
    kind: &str,
    sizes: Option<&Vec<u64>>,
    dtype: Option<Precision>,
    trials: &Trials,
    seed: u64,
) -> Result<ReplicateOutcome, RunError> {
    let kind: MicroKind = kind
        .parse()
        .map_err(|e: yardstick_spec::units::UnitError| RunError::Invalid(e.to_string()))?;
    let mut config = MicroConfig::new(kind);
    if let Some(s) = sizes {
        config.sizes = s.clone();
    }
    config.dtypes = dtype.into_iter().collect();
    let mut policy = TrialPolicy::from_spec(trials);
    // The orchestrator repeats the point `replicates` times; each call is one replicate.
    policy.replicates = 1;
    policy.seed = seed;
    let report = micro::run(&config, &policy).map_err(|e| RunError::Workload(e.to_string()))?;
    let mut summary = serde_json::Map::new();
    let mut units = serde_json::Map::new();
    let (mut names, mut iters, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for r in &report.results {
        summary.insert(
            r.name.clone(),
            serde_json::json!({"value": r.value, "mean": r.mean, "min": r.min, "max": r.max, "cv": r.cv}),
        );
        units.insert(r.name.clone(), r.unit.clone().into());
        for (i, x) in r.samples.iter().flatten().enumerate() {
            names.push(r.name.clone());
            iters.push(i as i64);
            values.push(*x);
        }
    }
    summary.insert("units".into(), units.into());
    if !report.skipped.is_empty() {
        // What was not measured, and why (e.g. a GPU probe on a machine without one).
        summary.insert(
            "skipped".into(),
            serde_json::to_value(&report.skipped).unwrap_or_default(),
        );
    }
    if !report.warnings.is_empty() || !report.skipped.is_empty() {
        summary.insert(
            "warnings".into(),
            report
                .warnings
                .iter()
                .cloned()
                .chain(
                    report
                        .skipped
                        .iter()
                        .map(|s| format!("{}: {}", s.name, s.reason)),
                )
                .collect::<Vec<_>>()
                .into(),
        );
    }
    Ok(
        ReplicateOutcome::new(summary.into(), Figures::new(report.measurements())).with_samples(
            Table::new()
                .with("name", Column::Str(names))
                .with("iteration", Column::I64(iters))
                .with("value", Column::F64(values)),
        ),
    )
}
