//! The warehouse: curated facts about runs in a relational store, behind one trait with two
//! backends — SQLite (embedded default, `<store>/yardstick.db`) and PostgreSQL (shared, by URL).
//!
//! Tables: `runs`, `points`, `replicates`, `facts` (metric, statistic, value, ci_lo, ci_hi, unit,
//! n, with lineage to the artifact and row group they came from), the dimensions
//! `machine_profiles` and `workloads`, and `baselines`. Schema migrations are versioned.

use serde::{Deserialize, Serialize};

use crate::StoreError;

/// One run, as the warehouse knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// ULID.
    pub run_id: String,
    /// The spec's `metadata.name` (the benchmark identity).
    pub name: String,
    /// `running`, `incomplete` or `complete`.
    pub status: String,
    /// `publication`, `realism` or `exploratory`.
    pub mode: Option<String>,
    /// sha256 of the spec.
    pub spec_sha256: String,
    /// Machine profile key.
    pub machine_profile: Option<String>,
    /// sha256 of the environment capture.
    pub env_sha256: Option<String>,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339.
    pub ended_at: Option<String>,
    /// Tool version.
    pub tool_version: String,
    /// Git commit of the working directory.
    pub git_commit: Option<String>,
    /// Where the run directory is (path or URL).
    pub location: String,
}

/// One point of a run's plan (a cell of the sweep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRow {
    /// Run.
    pub run_id: String,
    /// Stable id within the run, e.g. `component.0/D(100,100)/c=8`.
    pub point_id: String,
    /// `micro`, `component` or `e2e`.
    pub layer: String,
    /// Layer kind: `serve`, `memory`, `train`, `command`...
    pub kind: String,
    /// Parameters of the point as JSON (scenario, load, world size...).
    pub params: serde_json::Value,
}

/// One replicate of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicateRow {
    /// Run.
    pub run_id: String,
    /// Point.
    pub point_id: String,
    /// 0-based replicate index.
    pub replicate: u32,
    /// `complete` or `failed`.
    pub status: String,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339.
    pub ended_at: Option<String>,
    /// Raw samples artifact (relative path in the run directory).
    pub artifact: Option<String>,
}

/// One fact: a statistic of a metric at a point (and replicate, or the point as a whole).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactRow {
    /// Run.
    pub run_id: String,
    /// Point.
    pub point_id: String,
    /// Replicate index, or `None` for the aggregate over replicates.
    pub replicate: Option<u32>,
    /// Metric name, e.g. `ttft_ms`, `output_token_throughput`, `step_time_s`, `memory.triad`.
    pub metric: String,
    /// Statistic: `mean`, `p50`, `p99`, `value`...
    pub statistic: String,
    /// The value.
    pub value: f64,
    /// Lower CI bound, when computed.
    pub ci_lo: Option<f64>,
    /// Upper CI bound, when computed.
    pub ci_hi: Option<f64>,
    /// Unit: `ms`, `req/s`, `tok/s`, `GB/s`...
    pub unit: String,
    /// Samples behind the statistic.
    pub n: u64,
    /// Lineage: the artifact the fact was computed from.
    pub artifact: Option<String>,
    /// Lineage: the row group of that artifact, when it is Parquet.
    pub row_group: Option<u32>,
}

/// A stored baseline: the reference run for a (machine profile, benchmark) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineRow {
    /// Machine profile key.
    pub machine_profile: String,
    /// Benchmark identity (spec name).
    pub benchmark: String,
    /// The reference run.
    pub run_id: String,
    /// RFC 3339.
    pub created_at: String,
    /// Why it was set.
    pub note: Option<String>,
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only this machine profile.
    pub machine_profile: Option<String>,
    /// Only this benchmark name.
    pub name: Option<String>,
    /// Only runs started at or after this RFC 3339 time.
    pub since: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

/// The result of a read-only query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, as JSON values (numbers, strings, null).
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// A warehouse backend. Writes are idempotent (upserts keyed by the natural keys), so a resumed
/// run never duplicates facts.
pub trait Warehouse {
    /// Inserts or updates a run.
    fn upsert_run(&mut self, run: &RunRow) -> Result<(), StoreError>;
    /// Inserts or updates points.
    fn upsert_points(&mut self, points: &[PointRow]) -> Result<(), StoreError>;
    /// Inserts or updates a replicate.
    fn upsert_replicate(&mut self, replicate: &ReplicateRow) -> Result<(), StoreError>;
    /// Inserts or replaces facts (keyed by run, point, replicate, metric, statistic).
    fn upsert_facts(&mut self, facts: &[FactRow]) -> Result<(), StoreError>;
    /// Runs, newest first.
    fn runs(&mut self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError>;
    /// One run.
    fn run(&mut self, run_id: &str) -> Result<Option<RunRow>, StoreError>;
    /// Facts of a run.
    fn facts(&mut self, run_id: &str) -> Result<Vec<FactRow>, StoreError>;
    /// Sets the baseline of a (profile, benchmark) pair; refuses to replace one unless `force`.
    fn set_baseline(&mut self, baseline: &BaselineRow, force: bool) -> Result<(), StoreError>;
    /// All baselines.
    fn baselines(&mut self) -> Result<Vec<BaselineRow>, StoreError>;
    /// Runs a read-only SQL query (writes are refused by the database, not by parsing).
    fn query(&mut self, sql: &str) -> Result<QueryResult, StoreError>;
    /// The schema version the database is at.
    fn schema_version(&mut self) -> Result<u32, StoreError>;
}
