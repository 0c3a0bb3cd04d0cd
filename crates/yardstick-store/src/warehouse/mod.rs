//! The warehouse: curated facts about runs in a relational store, behind one trait with two
//! backends — SQLite (embedded default, `<store>/yardstick.db`) and PostgreSQL (shared, by URL).
//!
//! Tables: `runs`, `points`, `replicates`, `facts` (metric, statistic, value, ci_lo, ci_hi, unit,
//! n, with lineage to the artifact and row group they came from), the dimensions
//! `machine_profiles` and `workloads`, and `baselines`. Schema migrations are versioned
//! ([`schema::MIGRATIONS`]); `docs/warehouse.md` describes every table and column.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::run::FindRunError;
pub use crate::run::{ReplicateStatus, RunStatus};

pub mod postgres;
pub mod query;
pub mod schema;
mod sql;
pub mod sqlite;

pub use postgres::PostgresWarehouse;
pub use query::QueryLimits;
pub use sqlite::SqliteWarehouse;

/// File name of the embedded warehouse inside a store directory.
pub const SQLITE_FILE: &str = "yardstick.db";

/// One run, as the warehouse knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRow {
    /// ULID.
    pub run_id: String,
    /// The spec's `metadata.name` (the benchmark identity).
    pub name: String,
    /// `running`, `incomplete` or `complete`.
    pub status: RunStatus,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplicateRow {
    /// Run.
    pub run_id: String,
    /// Point.
    pub point_id: String,
    /// 0-based replicate index.
    pub replicate: u32,
    /// `complete` or `failed`.
    pub status: ReplicateStatus,
    /// RFC 3339.
    pub started_at: String,
    /// RFC 3339.
    pub ended_at: Option<String>,
    /// Raw samples artifact (relative path in the run directory).
    pub artifact: Option<String>,
}

/// One fact: a statistic of a metric at a point (and replicate, or the point as a whole).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

/// One recorded A/A comparison of a metric (`yardstick gate --calibrate`): two runs of the same
/// configuration on the same machine profile, whose ratio measures the profile's noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CalibrationRow {
    /// Machine profile key.
    pub machine_profile: String,
    /// Benchmark identity (spec name).
    pub benchmark: String,
    /// Point.
    pub point_id: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// The reference run.
    pub baseline_run: String,
    /// The repeat run.
    pub candidate_run: String,
    /// Ratio candidate / baseline of the replicate medians.
    pub ratio: f64,
    /// RFC 3339.
    pub recorded_at: String,
}

/// What the gate said of one metric of a run, the last time the run was gated: what a trend
/// colours its points by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictRow {
    /// The gated run.
    pub run_id: String,
    /// Point.
    pub point_id: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// The run it was gated against.
    pub baseline_run: String,
    /// `PASS`, `WARN`, `FAIL` or `INCONCLUSIVE`.
    pub verdict: String,
    /// Candidate / baseline.
    pub ratio: Option<f64>,
    /// RFC 3339.
    pub recorded_at: String,
}

/// One point of a trend: a run, one aggregate fact of it (the mean over replicates of one
/// metric and statistic at one point of the sweep), and what the gate last said of it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRow {
    /// The run.
    pub run_id: String,
    /// When it started (canonical RFC 3339).
    pub started_at: String,
    /// The commit it ran from.
    pub git_commit: Option<String>,
    /// Its state.
    pub status: RunStatus,
    /// Its machine profile.
    pub machine_profile: Option<String>,
    /// The point of the sweep.
    pub point_id: String,
    /// The value.
    pub value: f64,
    /// Lower bound of its interval.
    pub ci_lo: Option<f64>,
    /// Upper bound of its interval.
    pub ci_hi: Option<f64>,
    /// Unit of the value.
    pub unit: String,
    /// Replicates behind it.
    pub n: u64,
    /// The recorded gate verdict of this metric of the run, if it was gated.
    pub verdict: Option<String>,
    /// The baseline run that gating compared against.
    pub gated_against: Option<String>,
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
    /// Only runs started before this RFC 3339 time.
    pub until: Option<String>,
    /// Only runs in this state (`running`, `incomplete`, `complete`).
    pub status: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
    /// Skip this many of the matching runs first (paging, with `limit`).
    pub offset: Option<usize>,
}

/// The result of a read-only query.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, as JSON values (numbers, strings, null).
    pub rows: Vec<Vec<serde_json::Value>>,
    /// The answer stopped at a row or byte cap ([`QueryLimits`]): `rows` holds only the first
    /// rows; add a `LIMIT` or narrow the query.
    #[serde(default)]
    pub truncated: bool,
    /// Which cap, when truncated (e.g. `more than 100000 rows`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_by: Option<String>,
}

/// Every warehouse row of one stored run: what indexing its run directory writes
/// (`yardstick_run::index`). Writing is idempotent (upserts), so a run indexed twice is one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRows {
    /// The run.
    pub run: RunRow,
    /// Its points.
    pub points: Vec<PointRow>,
    /// Its replicates.
    pub replicates: Vec<ReplicateRow>,
    /// Its facts: per replicate and the aggregates over replicates.
    pub facts: Vec<FactRow>,
}

impl RunRows {
    /// Writes the rows: the run first (as `running`, so that a reader never sees a complete run
    /// with half its facts), then points, replicates and facts, then the run's final row.
    pub fn write(&self, w: &mut dyn Warehouse) -> Result<(), StoreError> {
        w.upsert_run(&RunRow {
            status: RunStatus::Running,
            ..self.run.clone()
        })?;
        w.upsert_points(&self.points)?;
        for r in &self.replicates {
            w.upsert_replicate(r)?;
        }
        w.upsert_facts(&self.facts)?;
        w.upsert_run(&self.run)
    }
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
    /// Points of a run, by point id.
    fn points(&mut self, run_id: &str) -> Result<Vec<PointRow>, StoreError>;
    /// Replicates of a run, by point id then replicate.
    fn replicates(&mut self, run_id: &str) -> Result<Vec<ReplicateRow>, StoreError>;
    /// Facts of a run, by point, replicate (aggregates first), metric, statistic.
    fn facts(&mut self, run_id: &str) -> Result<Vec<FactRow>, StoreError>;
    /// The aggregate facts (over replicates) of one metric and statistic, of the runs `filter`
    /// selects (its limit and offset count runs): one query for a trend over many runs instead
    /// of every fact of every run. Sorted like [`Warehouse::facts`] (by point; `run_id` says
    /// which run each belongs to).
    fn metric_facts(
        &mut self,
        filter: &RunFilter,
        metric: &str,
        statistic: &str,
    ) -> Result<Vec<FactRow>, StoreError>;
    /// Sets the baseline of a (profile, benchmark) pair; refuses to replace one unless `force`.
    fn set_baseline(&mut self, baseline: &BaselineRow, force: bool) -> Result<(), StoreError>;
    /// All baselines.
    fn baselines(&mut self) -> Result<Vec<BaselineRow>, StoreError>;
    /// Records A/A comparisons (idempotent per baseline/candidate pair and metric).
    fn record_calibrations(&mut self, rows: &[CalibrationRow]) -> Result<(), StoreError>;
    /// The recorded A/A comparisons of a (machine profile, benchmark) pair.
    fn calibrations(
        &mut self,
        machine_profile: &str,
        benchmark: &str,
    ) -> Result<Vec<CalibrationRow>, StoreError>;
    /// Records what the gate said of a run: replaces the verdicts of an earlier gating of the
    /// same runs (`rows` share one `run_id`; an empty slice records nothing).
    fn record_verdicts(&mut self, rows: &[VerdictRow]) -> Result<(), StoreError>;
    /// A trend in one query: the aggregate facts of one metric and statistic of the runs
    /// `filter` selects (its limit counts runs, the newest), each with its run's columns and
    /// recorded gate verdict; oldest run first, then by point.
    fn trend_rows(
        &mut self,
        filter: &RunFilter,
        metric: &str,
        statistic: &str,
    ) -> Result<Vec<TrendRow>, StoreError>;
    /// Runs one read-only SQL statement within `limits`: writes are refused by the database, not
    /// by parsing; a statement past its time limit or cancelled is an error; rows past the row
    /// or byte cap are left out and the answer says it is truncated.
    fn query_with(&mut self, sql: &str, limits: &QueryLimits) -> Result<QueryResult, StoreError>;
    /// [`Warehouse::query_with`] under the default limits ([`QueryLimits::default`]).
    fn query(&mut self, sql: &str) -> Result<QueryResult, StoreError> {
        self.query_with(sql, &QueryLimits::default())
    }
    /// The schema version the database is at.
    fn schema_version(&mut self) -> Result<u32, StoreError>;
}

/// The run a person names: its id, or a unique prefix of one (in any case: run ids are
/// upper-case ULIDs).
pub fn find_run(w: &mut dyn Warehouse, id: &str) -> Result<RunRow, FindRunError> {
    if let Some(r) = w.run(id)? {
        return Ok(r);
    }
    let want = id.to_ascii_uppercase();
    let mut matches: Vec<RunRow> = w
        .runs(&RunFilter::default())?
        .into_iter()
        .filter(|r| r.run_id.starts_with(&want))
        .collect();
    match matches.len() {
        1 => Ok(matches.remove(0)),
        0 => Err(FindRunError::NotFound(id.to_string())),
        count => Err(FindRunError::Ambiguous {
            id: id.to_string(),
            count,
        }),
    }
}

/// Where a warehouse lives, parsed from a `--store` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarehouseLocation {
    /// A PostgreSQL connection URL (`postgres://…` or `postgresql://…`).
    Postgres(String),
    /// The embedded SQLite file of a store directory (`<dir>/yardstick.db`).
    Sqlite {
        /// The store directory.
        store_dir: PathBuf,
        /// The database file inside it.
        db: PathBuf,
    },
}

impl WarehouseLocation {
    /// Parses a `--store` value: a PostgreSQL URL, otherwise a store directory.
    pub fn parse(location: &str) -> WarehouseLocation {
        if location.starts_with("postgres://") || location.starts_with("postgresql://") {
            WarehouseLocation::Postgres(location.to_string())
        } else {
            let store_dir = PathBuf::from(location);
            let db = store_dir.join(SQLITE_FILE);
            WarehouseLocation::Sqlite { store_dir, db }
        }
    }

    /// The store directory, when the location is one.
    pub fn store_dir(&self) -> Option<&Path> {
        match self {
            WarehouseLocation::Sqlite { store_dir, .. } => Some(store_dir),
            WarehouseLocation::Postgres(_) => None,
        }
    }
}

/// Opens (creating and migrating when needed) the warehouse at `location`: `postgres://…` or
/// `postgresql://…` is PostgreSQL, anything else a store directory holding `yardstick.db`.
pub fn open_warehouse(location: &str) -> Result<Box<dyn Warehouse>, StoreError> {
    match WarehouseLocation::parse(location) {
        WarehouseLocation::Postgres(url) => Ok(Box::new(PostgresWarehouse::connect(&url)?)),
        WarehouseLocation::Sqlite { store_dir, db } => {
            std::fs::create_dir_all(&store_dir)?;
            Ok(Box::new(SqliteWarehouse::open(&db)?))
        }
    }
}

/// Like [`open_warehouse`], but a store directory without a database is
/// [`StoreError::NotFound`] instead of being created (for commands that only read).
pub fn open_existing_warehouse(location: &str) -> Result<Box<dyn Warehouse>, StoreError> {
    if let WarehouseLocation::Sqlite { db, .. } = WarehouseLocation::parse(location)
        && !db.is_file()
    {
        return Err(StoreError::NotFound(format!(
            "no warehouse at {} (a store directory holds {SQLITE_FILE} once a run was stored)",
            db.display()
        )));
    }
    open_warehouse(location)
}

/// Rewrites an RFC 3339 time as the canonical UTC form the warehouse stores
/// (`2026-05-20T10:31:07.123Z`), so that text order is time order in every backend.
pub fn canonical_time(rfc3339: &str) -> Result<String, StoreError> {
    use time::format_description::well_known::Rfc3339;
    let t = time::OffsetDateTime::parse(rfc3339, &Rfc3339).map_err(|e| {
        StoreError::Invalid(format!(
            "`{rfc3339}` is not an RFC 3339 time (e.g. 2026-05-20T10:31:07Z): {e}"
        ))
    })?;
    Ok(format_time(t))
}

fn format_time(t: time::OffsetDateTime) -> String {
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.to_offset(time::UtcOffset::UTC)
        .format(&fmt)
        .expect("a UTC time formats")
}

/// Parses an age such as `30d`, `12h`, `90m`, `45s` or `2w` (one number and one unit).
pub fn parse_age(s: &str) -> Result<std::time::Duration, StoreError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        StoreError::Invalid(format!(
            "`{s}` is not an age; use a whole number and a unit: s, m, h, d or w (e.g. 30d)"
        ))
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(secs)
        .map(std::time::Duration::from_secs)
        .ok_or_else(bad)
}

/// Resolves a `--since` value — an age (`7d`) counted back from `now`, a date (`2026-05-01`) or an
/// RFC 3339 time — to the canonical time the warehouse compares with.
pub fn since_to_time(since: &str, now: time::OffsetDateTime) -> Result<String, StoreError> {
    if let Ok(age) = parse_age(since) {
        let age = time::Duration::try_from(age)
            .map_err(|_| StoreError::Invalid(format!("`{since}` is too long an age")))?;
        let t = now
            .checked_sub(age)
            .unwrap_or(time::PrimitiveDateTime::MIN.assume_utc());
        return Ok(format_time(t));
    }
    let date_fmt = time::macros::format_description!("[year]-[month]-[day]");
    if let Ok(d) = time::Date::parse(since, &date_fmt) {
        return Ok(format_time(d.midnight().assume_utc()));
    }
    canonical_time(since).map_err(|_| {
        StoreError::Invalid(format!(
            "`{since}` is neither an age (7d, 12h), a date (2026-05-01) nor an RFC 3339 time"
        ))
    })
}

/// [`since_to_time`] counted back from the current time.
pub fn resolve_since(since: &str) -> Result<String, StoreError> {
    since_to_time(since, time::OffsetDateTime::now_utc())
}

/// Checks a fact before it is written: the natural key must be present and values finite or
/// infinite but never NaN (SQLite stores NaN as NULL, which would silently lose the fact).
pub(crate) fn check_fact(f: &FactRow) -> Result<(), StoreError> {
    let nan =
        f.value.is_nan() || f.ci_lo.is_some_and(f64::is_nan) || f.ci_hi.is_some_and(f64::is_nan);
    if nan {
        return Err(StoreError::Invalid(format!(
            "fact {}/{}/{}.{} has a NaN value; store a missing statistic as no fact",
            f.run_id, f.point_id, f.metric, f.statistic
        )));
    }
    if f.metric.is_empty() || f.statistic.is_empty() {
        return Err(StoreError::Invalid(format!(
            "fact of run {} point {} has an empty metric or statistic",
            f.run_id, f.point_id
        )));
    }
    Ok(())
}

/// The stored form of a float: `-0.0` becomes `0.0` (SQLite stores an integral REAL as an
/// integer and loses the sign; normalising in every backend keeps them identical).
pub(crate) fn stored_f64(x: f64) -> f64 {
    if x == 0.0 { 0.0 } else { x }
}

/// The stored form of a replicate index: `-1` is the aggregate over replicates (a key column
/// cannot be NULL and still be unique in both backends).
pub(crate) fn replicate_key(r: Option<u32>) -> i64 {
    r.map_or(-1, i64::from)
}

/// The inverse of [`replicate_key`].
pub(crate) fn replicate_from_key(k: i64) -> Result<Option<u32>, StoreError> {
    if k < 0 {
        Ok(None)
    } else {
        u32::try_from(k)
            .map(Some)
            .map_err(|_| StoreError::Integrity(format!("replicate {k} is out of range")))
    }
}

/// Facts in their canonical order: point, replicate (aggregate first), metric, statistic.
pub(crate) fn sort_facts(facts: &mut [FactRow]) {
    facts.sort_by(|a, b| {
        (
            &a.point_id,
            replicate_key(a.replicate),
            &a.metric,
            &a.statistic,
        )
            .cmp(&(
                &b.point_id,
                replicate_key(b.replicate),
                &b.metric,
                &b.statistic,
            ))
    });
}

/// Refuses to replace another run's baseline unless forced (setting the same run again is fine).
pub(crate) fn check_baseline_replace(
    new: &BaselineRow,
    existing: Option<&str>,
    force: bool,
) -> Result<(), StoreError> {
    match existing {
        Some(old) if old != new.run_id && !force => Err(StoreError::Conflict(format!(
            "the baseline of {} on {} is already run {old}; replacing it with {} needs force",
            new.benchmark, new.machine_profile, new.run_id
        ))),
        _ => Ok(()),
    }
}

/// A verdict row is one of the run being recorded, with a verdict the gate gives.
pub(crate) fn check_verdict(v: &VerdictRow, run_id: &str) -> Result<(), StoreError> {
    if v.run_id != run_id {
        return Err(StoreError::Invalid(format!(
            "verdicts of one gating belong to one run: {} and {run_id}",
            v.run_id
        )));
    }
    if !matches!(
        v.verdict.as_str(),
        "PASS" | "WARN" | "FAIL" | "INCONCLUSIVE"
    ) {
        return Err(StoreError::Invalid(format!(
            "verdict `{}` of {} {}: expected PASS, WARN, FAIL or INCONCLUSIVE",
            v.verdict, v.metric, v.statistic
        )));
    }
    Ok(())
}

/// A run with its canonical times.
pub(crate) fn canonical_run(run: &RunRow) -> Result<RunRow, StoreError> {
    let mut r = run.clone();
    r.started_at = canonical_time(&run.started_at)?;
    r.ended_at = run.ended_at.as_deref().map(canonical_time).transpose()?;
    Ok(r)
}

/// A replicate with its canonical times.
pub(crate) fn canonical_replicate(rep: &ReplicateRow) -> Result<ReplicateRow, StoreError> {
    let mut r = rep.clone();
    r.started_at = canonical_time(&rep.started_at)?;
    r.ended_at = rep.ended_at.as_deref().map(canonical_time).transpose()?;
    Ok(r)
}

/// Keeps the last of facts that share a natural key (PostgreSQL refuses to update one row twice
/// in one statement; SQLite would apply them in order, so the last wins in both).
pub(crate) fn dedup_facts(facts: &[FactRow]) -> Vec<&FactRow> {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<&FactRow> = facts
        .iter()
        .rev()
        .filter(|f| {
            seen.insert((
                f.run_id.as_str(),
                f.point_id.as_str(),
                f.replicate,
                f.metric.as_str(),
                f.statistic.as_str(),
            ))
        })
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_ages_and_times_parse() {
        assert_eq!(
            WarehouseLocation::parse("postgresql://u@127.0.0.1:5/db"),
            WarehouseLocation::Postgres("postgresql://u@127.0.0.1:5/db".into())
        );
        let WarehouseLocation::Sqlite { db, .. } = WarehouseLocation::parse("./s") else {
            panic!("a directory");
        };
        assert_eq!(db, Path::new("./s/yardstick.db"));
        assert_eq!(parse_age("30d").unwrap().as_secs(), 30 * 86_400);
        assert_eq!(parse_age("2w").unwrap().as_secs(), 14 * 86_400);
        assert!(parse_age("30").is_err() && parse_age("d").is_err() && parse_age("3y").is_err());
        assert_eq!(
            canonical_time("2026-05-20T12:00:00+02:00").unwrap(),
            "2026-05-20T10:00:00.000Z"
        );
        let now = time::macros::datetime!(2026-05-20 10:00 UTC);
        assert_eq!(
            since_to_time("7d", now).unwrap(),
            "2026-05-13T10:00:00.000Z"
        );
        assert_eq!(
            since_to_time("2026-05-01", now).unwrap(),
            "2026-05-01T00:00:00.000Z"
        );
        assert!(since_to_time("last week", now).is_err());
    }

    #[test]
    fn runs_are_found_by_id_or_unique_prefix() {
        let dir = std::env::temp_dir().join(format!("yardstick-find-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = open_warehouse(dir.to_str().unwrap()).unwrap();
        for id in ["01JDAAA1", "01JDAAB2", "01JDC3"] {
            w.upsert_run(&RunRow {
                run_id: id.into(),
                name: "b".into(),
                status: RunStatus::Complete,
                mode: None,
                spec_sha256: String::new(),
                machine_profile: None,
                env_sha256: None,
                started_at: "2026-01-01T00:00:00.000Z".into(),
                ended_at: None,
                tool_version: "0".into(),
                git_commit: None,
                location: "s".into(),
            })
            .unwrap();
        }
        assert_eq!(find_run(w.as_mut(), "01JDAAB2").unwrap().run_id, "01JDAAB2");
        assert_eq!(find_run(w.as_mut(), "01jdc").unwrap().run_id, "01JDC3");
        let e = find_run(w.as_mut(), "01jdaa").unwrap_err();
        assert_eq!(e.to_string(), "`01jdaa` matches 2 runs");
        assert_eq!(
            e.with_hint(),
            "`01jdaa` matches 2 runs; give more characters of the run id"
        );
        let e = find_run(w.as_mut(), "01X").unwrap_err();
        assert!(matches!(e, FindRunError::NotFound(_)));
        assert_eq!(
            e.with_hint(),
            "no run `01X` in the warehouse (`yardstick runs list` shows the stored runs)"
        );
        assert_eq!(
            FindRunError::from(StoreError::Invalid("x".into())).hint(),
            None
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
