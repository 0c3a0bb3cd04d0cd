//! The embedded warehouse: one SQLite file (`<store>/yardstick.db`), bundled SQLite, WAL journal
//! (readers never block the writer), a busy timeout for concurrent writers, foreign keys on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::query::{Collector, QueryLimits};
use super::schema::{self, Dialect, MIGRATIONS, MIGRATIONS_TABLE};
use super::sql::{self, render};
use super::{
    BaselineRow, CalibrationRow, FactRow, PointRow, QueryResult, ReplicateRow, RunFilter, RunRow,
    TrendRow, VerdictRow, Warehouse,
};
use crate::StoreError;

/// How long a writer waits for another writer's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How many SQLite virtual-machine steps run between two looks at a query's deadline and
/// cancel flag.
const PROGRESS_OPS: std::ffi::c_int = 10_000;
const RUNNING: u8 = 0;
const TIMED_OUT: u8 = 1;
const CANCELLED: u8 = 2;

fn db_err(e: rusqlite::Error) -> StoreError {
    StoreError::Warehouse(e.to_string())
}

/// The SQLite backend.
#[derive(Debug)]
pub struct SqliteWarehouse {
    conn: Connection,
    path: PathBuf,
    /// Opened on the first `query`: read-only flags, `PRAGMA query_only`, and the query sandbox
    /// (an authorizer admitting only reads of the warehouse's tables; [`super::query`]).
    reader: Option<Connection>,
}

impl SqliteWarehouse {
    /// Opens (creating when missing) and migrates the database at `path` to the latest schema.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_at_version(path, schema::latest_version())
    }

    /// Opens the database at `path` and migrates it up to `version` only. For tests of forward
    /// migration and for pinning a schema; everything else uses [`SqliteWarehouse::open`].
    pub fn open_at_version(path: &Path, version: u32) -> Result<Self, StoreError> {
        let conn = Connection::open(path)
            .map_err(|e| StoreError::Warehouse(format!("cannot open {}: {e}", path.display())))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        // WAL: readers (dashboards, `yardstick query`) never block the run that is writing.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(db_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Warehouse(format!(
                "{} refused WAL journaling (got `{mode}`); is it on a network file system?",
                path.display()
            )));
        }
        // NORMAL is durable across application crashes in WAL mode (a power loss may lose the
        // last commits, never corrupt); 64 MiB of page cache keeps the facts b-tree's hot path in
        // memory during large ingests.
        conn.execute_batch(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536;",
        )
        .map_err(db_err)?;
        let mut w = SqliteWarehouse {
            conn,
            path: path.to_path_buf(),
            reader: None,
        };
        w.migrate(version)?;
        Ok(w)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self, target: u32) -> Result<(), StoreError> {
        // IMMEDIATE takes the write lock first, so two processes opening a fresh store at once
        // apply each migration exactly once.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(db_err)?;
        tx.execute_batch(MIGRATIONS_TABLE).map_err(db_err)?;
        let current: u32 = tx
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        if current > schema::latest_version() {
            return Err(StoreError::Invalid(format!(
                "{} is at schema version {current}, newer than this yardstick knows ({}); \
                 upgrade yardstick",
                self.path.display(),
                schema::latest_version()
            )));
        }
        for m in MIGRATIONS
            .iter()
            .filter(|m| m.version > current && m.version <= target)
        {
            tx.execute_batch(&Dialect::Sqlite.render(m)).map_err(|e| {
                StoreError::Warehouse(format!("migration {} ({}): {e}", m.version, m.name))
            })?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
                params![m.version, m.name, yardstick_env::now_rfc3339()],
            )
            .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)
    }

    fn reader(&mut self) -> Result<&Connection, StoreError> {
        if self.reader.is_none() {
            let c = Connection::open_with_flags(
                &self.path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(db_err)?;
            c.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
            c.execute_batch("PRAGMA query_only = ON").map_err(db_err)?;
            // The warehouse's own tables and views, read before the sandbox closes the door.
            let tables = c
                .prepare("SELECT lower(name) FROM sqlite_schema WHERE type IN ('table', 'view')")
                .and_then(|mut st| {
                    st.query_map([], |r| r.get::<_, String>(0))?
                        .collect::<Result<std::collections::BTreeSet<String>, _>>()
                })
                .map_err(db_err)?;
            super::query::sandbox(&c, tables).map_err(db_err)?;
            self.reader = Some(c);
        }
        Ok(self.reader.as_ref().expect("just opened"))
    }
}

/// Runs one read-only statement, refusing anything that could write and stopping at the
/// limits' row and byte caps.
fn run_query(conn: &Connection, q: &str, limits: &QueryLimits) -> Result<QueryResult, StoreError> {
    let refused = |e: rusqlite::Error| {
        let m = e.to_string();
        if m.contains("not authorized") || m.contains("is prohibited") {
            StoreError::Invalid(format!(
                "query: {m}: only SELECT over the warehouse's tables and views, with SQLite's \
                 ordinary functions, is allowed (no PRAGMA but table_info and its kin, no \
                 ATTACH, no writes); docs/warehouse.md lists the tables"
            ))
        } else {
            StoreError::Invalid(format!("query: {m}"))
        }
    };
    let mut st = conn.prepare(q).map_err(refused)?;
    // Asked of SQLite, not parsed here: a statement that could write is refused before it
    // runs (this also covers `VACUUM INTO`, which a read-only connection would allow).
    if !st.readonly() {
        return Err(StoreError::Invalid(
            "query: only read-only statements are allowed (the warehouse is written by \
             `yardstick run`)"
                .into(),
        ));
    }
    if st.column_count() == 0 {
        return Err(StoreError::Invalid(
            "query: the statement returns no rows; use SELECT, WITH, VALUES or EXPLAIN".into(),
        ));
    }
    let columns: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
    let width = columns.len();
    let mut out = Collector::new(limits, &columns);
    let mut it = st.query([]).map_err(refused)?;
    while let Some(r) = it.next().map_err(refused)? {
        let mut row = Vec::with_capacity(width);
        for i in 0..width {
            row.push(json_value(r.get_ref(i).map_err(db_err)?));
        }
        if !out.push(row) {
            break;
        }
    }
    Ok(out.finish(columns))
}

/// A status column, read into its enum; an unknown value is a conversion error of that column.
fn parse_status<T>(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<T>
where
    T: std::str::FromStr<Err = crate::run::UnknownStatus>,
{
    let s: String = r.get(i)?;
    s.parse().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn run_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: r.get(0)?,
        name: r.get(1)?,
        status: parse_status(r, 2)?,
        mode: r.get(3)?,
        spec_sha256: r.get(4)?,
        machine_profile: r.get(5)?,
        env_sha256: r.get(6)?,
        started_at: r.get(7)?,
        ended_at: r.get(8)?,
        tool_version: r.get(9)?,
        git_commit: r.get(10)?,
        location: r.get(11)?,
    })
}

/// A column value as JSON: integers and reals as numbers (non-finite reals as null), text as
/// strings, blobs as `\x`-prefixed hex (PostgreSQL's `bytea` text form).
fn json_value(v: ValueRef<'_>) -> serde_json::Value {
    match v {
        ValueRef::Null => serde_json::Value::Null,
        ValueRef::Integer(i) => i.into(),
        ValueRef::Real(f) => serde_json::Number::from_f64(f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        ValueRef::Blob(b) => format!("\\x{}", hex::encode(b)).into(),
    }
}

impl SqliteWarehouse {
    /// The facts matching a condition on the `facts` table, with its values bound in order.
    fn facts_where(&mut self, cond: &str, args: &[String]) -> Result<Vec<FactRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {} FROM facts WHERE {cond}",
                sql::FACT_COLUMNS
            ))
            .map_err(db_err)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(9)?,
                    FactRow {
                        run_id: r.get(0)?,
                        point_id: r.get(1)?,
                        replicate: None,
                        metric: r.get(3)?,
                        statistic: r.get(4)?,
                        value: r.get(5)?,
                        ci_lo: r.get(6)?,
                        ci_hi: r.get(7)?,
                        unit: r.get(8)?,
                        n: 0,
                        artifact: r.get(10)?,
                        row_group: r.get(11)?,
                    },
                ))
            })
            .map_err(db_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (rep, n, mut f) = row.map_err(db_err)?;
            f.replicate = super::replicate_from_key(rep)?;
            f.n = u64::try_from(n)
                .map_err(|_| StoreError::Integrity(format!("fact {}: n = {n}", f.metric)))?;
            out.push(f);
        }
        super::sort_facts(&mut out);
        Ok(out)
    }
}

impl Warehouse for SqliteWarehouse {
    fn upsert_run(&mut self, run: &RunRow) -> Result<(), StoreError> {
        let r = super::canonical_run(run)?;
        let tx = self.conn.transaction().map_err(db_err)?;
        tx.prepare_cached(sql::UPSERT_RUN)
            .and_then(|mut st| {
                st.execute(params![
                    r.run_id,
                    r.name,
                    r.status.as_str(),
                    r.mode,
                    r.spec_sha256,
                    r.machine_profile,
                    r.env_sha256,
                    r.started_at,
                    r.ended_at,
                    r.tool_version,
                    r.git_commit,
                    r.location
                ])
            })
            .map_err(db_err)?;
        if let Some(p) = &r.machine_profile {
            tx.prepare_cached(sql::UPSERT_PROFILE)
                .and_then(|mut st| st.execute(params![p, r.started_at]))
                .map_err(db_err)?;
        }
        tx.prepare_cached(sql::UPSERT_WORKLOAD)
            .and_then(|mut st| st.execute(params![r.spec_sha256, r.name, r.started_at]))
            .map_err(db_err)?;
        tx.commit().map_err(db_err)
    }

    fn upsert_points(&mut self, points: &[PointRow]) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(db_err)?;
        {
            let mut st = tx
                .prepare_cached(&render(Dialect::Sqlite, sql::UPSERT_POINT))
                .map_err(db_err)?;
            for p in points {
                st.execute(params![
                    p.run_id,
                    p.point_id,
                    p.layer,
                    p.kind,
                    p.params.to_string()
                ])
                .map_err(|e| {
                    StoreError::Warehouse(format!("point {}/{}: {e}", p.run_id, p.point_id))
                })?;
            }
        }
        tx.commit().map_err(db_err)
    }

    fn upsert_replicate(&mut self, replicate: &ReplicateRow) -> Result<(), StoreError> {
        let r = super::canonical_replicate(replicate)?;
        self.conn
            .prepare_cached(sql::UPSERT_REPLICATE)
            .and_then(|mut st| {
                st.execute(params![
                    r.run_id,
                    r.point_id,
                    r.replicate,
                    r.status.as_str(),
                    r.started_at,
                    r.ended_at,
                    r.artifact
                ])
            })
            .map_err(|e| {
                StoreError::Warehouse(format!(
                    "replicate {}/{}/{}: {e}",
                    r.run_id, r.point_id, r.replicate
                ))
            })?;
        Ok(())
    }

    fn upsert_facts(&mut self, facts: &[FactRow]) -> Result<(), StoreError> {
        for f in facts {
            super::check_fact(f)?;
        }
        let tx = self.conn.transaction().map_err(db_err)?;
        {
            let mut st = tx
                .prepare_cached(&format!(
                    "INSERT INTO facts ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
                     ?11, ?12) {}",
                    sql::FACT_COLUMNS,
                    sql::FACT_CONFLICT
                ))
                .map_err(db_err)?;
            for f in facts {
                let n = i64::try_from(f.n).map_err(|_| {
                    StoreError::Invalid(format!("fact {}: n = {} is too large", f.metric, f.n))
                })?;
                st.execute(params![
                    f.run_id,
                    f.point_id,
                    super::replicate_key(f.replicate),
                    f.metric,
                    f.statistic,
                    super::stored_f64(f.value),
                    f.ci_lo.map(super::stored_f64),
                    f.ci_hi.map(super::stored_f64),
                    f.unit,
                    n,
                    f.artifact,
                    f.row_group
                ])
                .map_err(|e| {
                    StoreError::Warehouse(format!(
                        "fact {}/{}/{}.{}: {e}",
                        f.run_id, f.point_id, f.metric, f.statistic
                    ))
                })?;
            }
        }
        tx.commit().map_err(db_err)
    }

    fn runs(&mut self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let (q, args) = sql::select_runs(filter)?;
        let mut st = self.conn.prepare(&q).map_err(db_err)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), run_from_row)
            .map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn run(&mut self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {} FROM runs WHERE run_id = ?1", sql::RUN_COLUMNS),
                [run_id],
                run_from_row,
            )
            .optional()
            .map_err(db_err)
    }

    fn points(&mut self, run_id: &str) -> Result<Vec<PointRow>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&render(Dialect::Sqlite, sql::SELECT_POINTS))
            .map_err(db_err)?;
        let rows = st
            .query_map([run_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .map_err(db_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (run_id, point_id, layer, kind, params) = row.map_err(db_err)?;
            let params = serde_json::from_str(&params).map_err(|e| {
                StoreError::Integrity(format!("point {run_id}/{point_id}: params: {e}"))
            })?;
            out.push(PointRow {
                run_id,
                point_id,
                layer,
                kind,
                params,
            });
        }
        out.sort_by(|a, b| a.point_id.cmp(&b.point_id));
        Ok(out)
    }

    fn replicates(&mut self, run_id: &str) -> Result<Vec<ReplicateRow>, StoreError> {
        let mut st = self.conn.prepare(sql::SELECT_REPLICATES).map_err(db_err)?;
        let rows = st
            .query_map([run_id], |r| {
                Ok(ReplicateRow {
                    run_id: r.get(0)?,
                    point_id: r.get(1)?,
                    replicate: r.get(2)?,
                    status: parse_status(r, 3)?,
                    started_at: r.get(4)?,
                    ended_at: r.get(5)?,
                    artifact: r.get(6)?,
                })
            })
            .map_err(db_err)?;
        let mut out: Vec<ReplicateRow> = rows.collect::<Result<_, _>>().map_err(db_err)?;
        out.sort_by(|a, b| (&a.point_id, a.replicate).cmp(&(&b.point_id, b.replicate)));
        Ok(out)
    }

    fn facts(&mut self, run_id: &str) -> Result<Vec<FactRow>, StoreError> {
        self.facts_where("run_id = ?1", &[run_id.to_string()])
    }

    fn metric_facts(
        &mut self,
        filter: &RunFilter,
        metric: &str,
        statistic: &str,
    ) -> Result<Vec<FactRow>, StoreError> {
        let (cond, args) = sql::metric_facts_condition(filter, metric, statistic)?;
        self.facts_where(&cond, &args)
    }

    fn set_baseline(&mut self, baseline: &BaselineRow, force: bool) -> Result<(), StoreError> {
        let created_at = super::canonical_time(&baseline.created_at)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let existing: Option<String> = tx
            .query_row(
                sql::SELECT_BASELINE,
                params![baseline.machine_profile, baseline.benchmark],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)?;
        super::check_baseline_replace(baseline, existing.as_deref(), force)?;
        tx.execute(
            sql::UPSERT_BASELINE,
            params![
                baseline.machine_profile,
                baseline.benchmark,
                baseline.run_id,
                created_at,
                baseline.note
            ],
        )
        .map_err(|e| StoreError::Warehouse(format!("baseline {}: {e}", baseline.run_id)))?;
        tx.commit().map_err(db_err)
    }

    fn baselines(&mut self) -> Result<Vec<BaselineRow>, StoreError> {
        let mut st = self.conn.prepare(sql::SELECT_BASELINES).map_err(db_err)?;
        let rows = st
            .query_map([], |r| {
                Ok(BaselineRow {
                    machine_profile: r.get(0)?,
                    benchmark: r.get(1)?,
                    run_id: r.get(2)?,
                    created_at: r.get(3)?,
                    note: r.get(4)?,
                })
            })
            .map_err(db_err)?;
        let mut out: Vec<BaselineRow> = rows.collect::<Result<_, _>>().map_err(db_err)?;
        out.sort_by(|a, b| {
            (&a.machine_profile, &a.benchmark).cmp(&(&b.machine_profile, &b.benchmark))
        });
        Ok(out)
    }

    fn record_calibrations(&mut self, rows: &[CalibrationRow]) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(db_err)?;
        {
            let mut st = tx.prepare(sql::UPSERT_CALIBRATION).map_err(db_err)?;
            for c in rows {
                let at = super::canonical_time(&c.recorded_at)?;
                st.execute(params![
                    c.machine_profile,
                    c.benchmark,
                    c.point_id,
                    c.metric,
                    c.statistic,
                    c.baseline_run,
                    c.candidate_run,
                    c.ratio,
                    at
                ])
                .map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)
    }

    fn calibrations(
        &mut self,
        machine_profile: &str,
        benchmark: &str,
    ) -> Result<Vec<CalibrationRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(sql::SELECT_CALIBRATIONS)
            .map_err(db_err)?;
        let rows = st
            .query_map(params![machine_profile, benchmark], |r| {
                Ok(CalibrationRow {
                    machine_profile: r.get(0)?,
                    benchmark: r.get(1)?,
                    point_id: r.get(2)?,
                    metric: r.get(3)?,
                    statistic: r.get(4)?,
                    baseline_run: r.get(5)?,
                    candidate_run: r.get(6)?,
                    ratio: r.get(7)?,
                    recorded_at: r.get(8)?,
                })
            })
            .map_err(db_err)?;
        rows.collect::<Result<_, _>>().map_err(db_err)
    }

    fn record_verdicts(&mut self, rows: &[VerdictRow]) -> Result<(), StoreError> {
        let Some(first) = rows.first() else {
            return Ok(());
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(db_err)?;
        tx.execute(sql::DELETE_VERDICTS, params![first.run_id])
            .map_err(db_err)?;
        {
            let mut st = tx.prepare(sql::INSERT_VERDICT).map_err(db_err)?;
            for v in rows {
                super::check_verdict(v, &first.run_id)?;
                let at = super::canonical_time(&v.recorded_at)?;
                st.execute(params![
                    v.run_id,
                    v.point_id,
                    v.metric,
                    v.statistic,
                    v.baseline_run,
                    v.verdict,
                    v.ratio.map(super::stored_f64),
                    at
                ])
                .map_err(|e| StoreError::Warehouse(format!("verdicts of {}: {e}", v.run_id)))?;
            }
        }
        tx.commit().map_err(db_err)
    }

    fn trend_rows(
        &mut self,
        filter: &RunFilter,
        metric: &str,
        statistic: &str,
    ) -> Result<Vec<TrendRow>, StoreError> {
        let (q, args) = sql::trend_query(filter, metric, statistic)?;
        let mut st = self.conn.prepare_cached(&q).map_err(db_err)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((
                    r.get::<_, i64>(10)?,
                    TrendRow {
                        run_id: r.get(0)?,
                        started_at: r.get(1)?,
                        git_commit: r.get(2)?,
                        status: parse_status(r, 3)?,
                        machine_profile: r.get(4)?,
                        point_id: r.get(5)?,
                        value: r.get(6)?,
                        ci_lo: r.get(7)?,
                        ci_hi: r.get(8)?,
                        unit: r.get(9)?,
                        n: 0,
                        verdict: r.get(11)?,
                        gated_against: r.get(12)?,
                    },
                ))
            })
            .map_err(db_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (n, mut t) = row.map_err(db_err)?;
            t.n = u64::try_from(n)
                .map_err(|_| StoreError::Integrity(format!("fact {metric}: n = {n}")))?;
            out.push(t);
        }
        Ok(out)
    }

    fn query_with(&mut self, q: &str, limits: &QueryLimits) -> Result<QueryResult, StoreError> {
        let conn = self.reader()?;
        // No string or blob larger than half the byte cap: `zeroblob(300000000)` fails in
        // SQLite instead of being built in memory and hex-encoded.
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, limits.max_value_bytes())
            .map_err(db_err)?;
        // A progress handler stops the statement at its deadline or when it is cancelled (an
        // endless recursive CTE, a cross join of everything, a client that went away).
        let deadline = Instant::now() + limits.time;
        let why = Arc::new(AtomicU8::new(RUNNING));
        let (cancel, stopped) = (limits.cancel.clone(), why.clone());
        conn.progress_handler(
            PROGRESS_OPS,
            Some(move || {
                let reason = if cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                    CANCELLED
                } else if Instant::now() >= deadline {
                    TIMED_OUT
                } else {
                    return false;
                };
                stopped.store(reason, Ordering::Relaxed);
                true
            }),
        );
        let result = run_query(conn, q, limits);
        conn.progress_handler(0, None::<fn() -> bool>);
        match (result, why.load(Ordering::Relaxed)) {
            (Err(_), TIMED_OUT) => Err(limits.timed_out()),
            (Err(_), CANCELLED) => Err(QueryLimits::was_cancelled()),
            (r, _) => r,
        }
    }

    fn schema_version(&mut self) -> Result<u32, StoreError> {
        self.conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(db_err)
    }
}
