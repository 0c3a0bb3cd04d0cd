//! Baselines, run comparison and the regression gate (issue 8;
//! docs/methodology.md#baselines-and-regression-gates).
//!
//! * [`baseline`]: the warehouse's baselines, keyed by machine profile and benchmark name;
//!   replacing one is explicit (`force`); [`file`] exports them as `baselines/<profile>.json`.
//! * [`compare()`]: any two runs: every spec/env field that differs (the one-variable rule,
//!   docs/methodology.md#one-variable-at-a-time) and, per point × headline metric, the ratio
//!   candidate/baseline with a bootstrap CI over **replicate-level** values (replicates are the
//!   independent unit) and a Mann–Whitney p-value.
//! * [`gate()`]: a verdict per metric against tolerances (defaults from the methodology,
//!   overridable in the spec's `gates.tolerances`), Holm-corrected across metrics, overall = worst.
//! * [`eval::compare_eval`]: `bench eval --compare` of two eval result files, with the gate's
//!   verdict per task from the same paired item bootstrap and verdict rules ([`paired`]).
//! * [`calibrate`]: noise floors of a machine profile learned from recorded A/A comparisons; a
//!   regression must clear the farther of the tolerance and the floor.
//! * [`confirm`]: `gate --confirm`, a FAIL that stands only when a re-run of the failing points
//!   fails again; [`baseline::resolve`] finds the baseline `gate --baseline` names.
#![deny(missing_docs)]

pub mod baseline;
pub mod calibrate;
mod compare;
pub mod confirm;
mod error;
pub mod eval;
pub mod file;
mod gate;
mod load;
pub mod paired;
#[cfg(test)]
mod testutil;
pub mod text;

pub use compare::{
    Comparison, FieldDiff, MetricComparison, classify, compare, diff_values, env_key_fields,
    headline,
};
pub use error::GateError;
pub use file::load_run;
pub use gate::{
    Direction, GateOptions, GateReport, MIN_REPLICATES, MetricClass, MetricVerdict, Verdict,
    check_profiles, direction_of, gate, metric_tolerance, points_scale, ratio_bound, tolerance_pct,
};
pub use load::{RunData, find_run};
