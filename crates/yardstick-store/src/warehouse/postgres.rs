//! The shared warehouse: PostgreSQL (12 or newer) by URL, through the synchronous `postgres`
//! crate.
//!
//! Connections are made **without TLS** (`NoTls`): meant for a server on loopback, a Unix socket,
//! or a private network the operator already trusts. A URL with `sslmode=require` fails to
//! connect rather than silently downgrading. For a server across an untrusted network, tunnel it
//! (SSH, WireGuard) to a local port. `query` runs in `BEGIN READ ONLY`; for a shared warehouse,
//! also give dashboard users a role with `SELECT` privileges only (a read-only transaction still
//! allows, e.g., `COPY … TO` a server file for superusers).

use std::time::Duration;

use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, SimpleQueryMessage};

use super::query::{Collector, QueryLimits};
use super::schema::{self, Dialect, MIGRATIONS, MIGRATIONS_TABLE};
use super::sql::{self, render};
use super::{
    BaselineRow, CalibrationRow, FactRow, PointRow, QueryResult, ReplicateRow, RunFilter, RunRow,
    TrendRow, VerdictRow, Warehouse,
};
use crate::StoreError;

/// Arbitrary key of the advisory lock that serialises concurrent migrators.
const MIGRATION_LOCK: i64 = 0x0079_6172_6473_746b;
/// Rows per `INSERT … SELECT FROM unnest(…)` batch.
const FACT_BATCH: usize = 10_000;
/// Rows per `FETCH` of an ad-hoc query's cursor.
const FETCH_BATCH: usize = 1_000;

fn db_err(e: postgres::Error) -> StoreError {
    StoreError::Warehouse(pg_message(&e))
}

/// The server's message with its detail and hint, which `Display` leaves out.
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{}: {}", db.severity(), db.message());
            if let Some(d) = db.detail() {
                s.push_str(&format!(" ({d})"));
            }
            if let Some(h) = db.hint() {
                s.push_str(&format!(" hint: {h}"));
            }
            s
        }
        None => e.to_string(),
    }
}

fn pg(d: &str) -> String {
    render(Dialect::Postgres, d)
}

fn to_i32(what: &str, v: u32) -> Result<i32, StoreError> {
    i32::try_from(v).map_err(|_| StoreError::Invalid(format!("{what} {v} is too large")))
}

/// The PostgreSQL backend.
pub struct PostgresWarehouse {
    client: Client,
}

impl std::fmt::Debug for PostgresWarehouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresWarehouse").finish_non_exhaustive()
    }
}

impl PostgresWarehouse {
    /// What the connection's role may do beyond reading and writing the warehouse's tables:
    /// `superuser`, or membership of `pg_read_server_files`, `pg_write_server_files`,
    /// `pg_execute_server_program` (each lets a read-only query reach the database host's files
    /// or programs). Empty for the role docs/warehouse.md recommends.
    pub fn dangerous_privileges(&mut self) -> Result<Vec<String>, StoreError> {
        let row = self
            .client
            .query_one(
                "SELECT r.rolsuper, \
                        pg_has_role(current_user, 'pg_read_server_files', 'MEMBER'), \
                        pg_has_role(current_user, 'pg_write_server_files', 'MEMBER'), \
                        pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER') \
                 FROM pg_roles r WHERE r.rolname = current_user",
                &[],
            )
            .map_err(db_err)?;
        let names = [
            "superuser",
            "pg_read_server_files",
            "pg_write_server_files",
            "pg_execute_server_program",
        ];
        Ok(names
            .iter()
            .enumerate()
            .filter(|(i, _)| row.get::<_, bool>(*i))
            .map(|(_, n)| n.to_string())
            .collect())
    }

    /// The statement, read-only, under a statement timeout, its rows fetched in batches from a
    /// cursor until the row or byte cap.
    fn run_query(
        &mut self,
        q: &str,
        limits: &QueryLimits,
        deadline: std::time::Instant,
        invalid: impl Fn(postgres::Error) -> StoreError,
    ) -> Result<QueryResult, StoreError> {
        let mut tx = self
            .client
            .build_transaction()
            .read_only(true)
            .start()
            .map_err(db_err)?;
        let ms = limits.time.as_millis().clamp(1, i32::MAX as u128);
        tx.batch_execute(&format!("SET LOCAL statement_timeout = {ms}"))
            .map_err(db_err)?;
        // Preparing first (the extended protocol accepts exactly one statement) gives the column
        // types, and guarantees the simple-protocol execution below cannot smuggle a `COMMIT; …`
        // out of the read-only transaction.
        let st = tx.prepare(q).map_err(&invalid)?;
        if st.columns().is_empty() {
            return Err(StoreError::Invalid(
                "query: the statement returns no rows; use SELECT, WITH, VALUES or EXPLAIN".into(),
            ));
        }
        let columns: Vec<String> = st.columns().iter().map(|c| c.name().to_string()).collect();
        let types: Vec<Type> = st.columns().iter().map(|c| c.type_().clone()).collect();
        let mut out = Collector::new(limits, &columns);
        // Text results decode every type (numeric, timestamps, arrays…) without a Rust mapping
        // for each; they are then typed by the described column types. A cursor hands them
        // over in batches, so a huge answer stops at the caps instead of filling memory; EXPLAIN
        // (which a cursor cannot hold) answers a few rows at once.
        let explain = q
            .trim_start()
            .get(..7)
            .is_some_and(|w| w.eq_ignore_ascii_case("explain"));
        let take = |messages: Vec<SimpleQueryMessage>, out: &mut Collector<'_>| {
            let mut seen = 0usize;
            for m in messages {
                if let SimpleQueryMessage::Row(r) = m {
                    seen += 1;
                    let row = (0..types.len())
                        .map(|i| json_value(&types[i], r.get(i)))
                        .collect();
                    if !out.push(row) {
                        return None;
                    }
                }
            }
            Some(seen)
        };
        if explain {
            let messages = tx.simple_query(q).map_err(&invalid)?;
            take(messages, &mut out);
        } else {
            tx.batch_execute(&format!("DECLARE yardstick_query NO SCROLL CURSOR FOR {q}"))
                .map_err(&invalid)?;
            loop {
                if std::time::Instant::now() >= deadline {
                    return Err(limits.timed_out());
                }
                let messages = tx
                    .simple_query(&format!("FETCH {FETCH_BATCH} FROM yardstick_query"))
                    .map_err(&invalid)?;
                match take(messages, &mut out) {
                    Some(n) if n == FETCH_BATCH => continue,
                    _ => break,
                }
            }
        }
        tx.rollback().map_err(db_err)?;
        Ok(out.finish(columns))
    }

    /// Connects (without TLS, see the module docs) and migrates to the latest schema.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_at_version(url, schema::latest_version())
    }

    /// Connects and migrates up to `version` only (tests of forward migration, pinning).
    pub fn connect_at_version(url: &str, version: u32) -> Result<Self, StoreError> {
        let mut config: postgres::Config = url.parse().map_err(|e| {
            StoreError::Invalid(format!("`{}` is not a PostgreSQL URL: {e}", redact(url)))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let client = config.connect(NoTls).map_err(|e| {
            StoreError::Warehouse(format!(
                "cannot connect to {}: {}",
                redact(url),
                pg_message(&e)
            ))
        })?;
        let mut w = PostgresWarehouse { client };
        w.migrate(version)?;
        Ok(w)
    }

    fn migrate(&mut self, target: u32) -> Result<(), StoreError> {
        let mut tx = self.client.transaction().map_err(db_err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(db_err)?;
        tx.batch_execute(MIGRATIONS_TABLE).map_err(db_err)?;
        let current: i32 = tx
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )
            .map_err(db_err)?
            .get(0);
        let current = current as u32;
        if current > schema::latest_version() {
            return Err(StoreError::Invalid(format!(
                "the database is at schema version {current}, newer than this yardstick knows \
                 ({}); upgrade yardstick",
                schema::latest_version()
            )));
        }
        for m in MIGRATIONS
            .iter()
            .filter(|m| m.version > current && m.version <= target)
        {
            tx.batch_execute(&Dialect::Postgres.render(m))
                .map_err(|e| {
                    StoreError::Warehouse(format!(
                        "migration {} ({}): {}",
                        m.version,
                        m.name,
                        pg_message(&e)
                    ))
                })?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                &[&(m.version as i32), &m.name, &yardstick_env::now_rfc3339()],
            )
            .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)
    }
}

/// A URL with its password replaced, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &url[s + 3..at];
            match userinfo.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &userinfo[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// A status column, read into its enum; an unknown value is an integrity error.
fn parse_status<T>(r: &postgres::Row, i: usize) -> Result<T, StoreError>
where
    T: std::str::FromStr<Err = crate::run::UnknownStatus>,
{
    let s: String = r.try_get(i).map_err(db_err)?;
    s.parse()
        .map_err(|e: crate::run::UnknownStatus| StoreError::Integrity(e.to_string()))
}

fn run_from_row(r: &postgres::Row) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        run_id: r.get(0),
        name: r.get(1),
        status: parse_status(r, 2)?,
        mode: r.get(3),
        spec_sha256: r.get(4),
        machine_profile: r.get(5),
        env_sha256: r.get(6),
        started_at: r.get(7),
        ended_at: r.get(8),
        tool_version: r.get(9),
        git_commit: r.get(10),
        location: r.get(11),
    })
}

/// A text-format value as JSON, typed by its column: numbers for integer and floating types
/// (integral `numeric` as integers, non-finite as null), booleans, parsed JSON for `json`/`jsonb`,
/// text otherwise — the same shapes the SQLite backend gives.
fn json_value(ty: &Type, text: Option<&str>) -> serde_json::Value {
    use serde_json::Value;
    let Some(t) = text else {
        return Value::Null;
    };
    let float = |t: &str| {
        t.parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number)
    };
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => t
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::String(t.into())),
        Type::FLOAT4 | Type::FLOAT8 => float(t),
        Type::NUMERIC => t
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| float(t)),
        Type::BOOL => Value::Bool(t == "t"),
        Type::JSON | Type::JSONB => {
            serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.into()))
        }
        _ => Value::String(t.into()),
    }
}

impl PostgresWarehouse {
    /// The facts matching a condition on the `facts` table, with its values bound in order.
    fn facts_where(&mut self, cond: &str, args: &[String]) -> Result<Vec<FactRow>, StoreError> {
        let params: Vec<&(dyn ToSql + Sync)> =
            args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        let rows = self
            .client
            .query(
                &pg(&format!(
                    "SELECT {} FROM facts WHERE {cond}",
                    sql::FACT_COLUMNS
                )),
                &params,
            )
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let rep: i32 = r.get(2);
            let n: i64 = r.get(9);
            let row_group: Option<i32> = r.get(11);
            let metric: String = r.get(3);
            out.push(FactRow {
                run_id: r.get(0),
                point_id: r.get(1),
                replicate: super::replicate_from_key(rep.into())?,
                statistic: r.get(4),
                value: r.get(5),
                ci_lo: r.get(6),
                ci_hi: r.get(7),
                unit: r.get(8),
                n: u64::try_from(n)
                    .map_err(|_| StoreError::Integrity(format!("fact {metric}: n = {n}")))?,
                artifact: r.get(10),
                row_group: row_group
                    .map(|g| {
                        u32::try_from(g)
                            .map_err(|_| StoreError::Integrity(format!("row group {g}")))
                    })
                    .transpose()?,
                metric,
            });
        }
        super::sort_facts(&mut out);
        Ok(out)
    }
}

impl Warehouse for PostgresWarehouse {
    fn upsert_run(&mut self, run: &RunRow) -> Result<(), StoreError> {
        let r = super::canonical_run(run)?;
        let mut tx = self.client.transaction().map_err(db_err)?;
        tx.execute(
            &pg(sql::UPSERT_RUN),
            &[
                &r.run_id,
                &r.name,
                &r.status.as_str(),
                &r.mode,
                &r.spec_sha256,
                &r.machine_profile,
                &r.env_sha256,
                &r.started_at,
                &r.ended_at,
                &r.tool_version,
                &r.git_commit,
                &r.location,
            ],
        )
        .map_err(db_err)?;
        if let Some(p) = &r.machine_profile {
            tx.execute(&pg(sql::UPSERT_PROFILE), &[p, &r.started_at])
                .map_err(db_err)?;
        }
        tx.execute(
            &pg(sql::UPSERT_WORKLOAD),
            &[&r.spec_sha256, &r.name, &r.started_at],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)
    }

    fn upsert_points(&mut self, points: &[PointRow]) -> Result<(), StoreError> {
        let mut tx = self.client.transaction().map_err(db_err)?;
        let st = tx.prepare(&pg(sql::UPSERT_POINT)).map_err(db_err)?;
        for p in points {
            tx.execute(
                &st,
                &[
                    &p.run_id,
                    &p.point_id,
                    &p.layer,
                    &p.kind,
                    &p.params.to_string(),
                ],
            )
            .map_err(|e| {
                StoreError::Warehouse(format!(
                    "point {}/{}: {}",
                    p.run_id,
                    p.point_id,
                    pg_message(&e)
                ))
            })?;
        }
        tx.commit().map_err(db_err)
    }

    fn upsert_replicate(&mut self, replicate: &ReplicateRow) -> Result<(), StoreError> {
        let r = super::canonical_replicate(replicate)?;
        let idx = to_i32("replicate", r.replicate)?;
        self.client
            .execute(
                &pg(sql::UPSERT_REPLICATE),
                &[
                    &r.run_id,
                    &r.point_id,
                    &idx,
                    &r.status.as_str(),
                    &r.started_at,
                    &r.ended_at,
                    &r.artifact,
                ],
            )
            .map_err(|e| {
                StoreError::Warehouse(format!(
                    "replicate {}/{}/{}: {}",
                    r.run_id,
                    r.point_id,
                    r.replicate,
                    pg_message(&e)
                ))
            })?;
        Ok(())
    }

    fn upsert_facts(&mut self, facts: &[FactRow]) -> Result<(), StoreError> {
        for f in facts {
            super::check_fact(f)?;
        }
        let facts = super::dedup_facts(facts);
        let stmt = format!(
            "INSERT INTO facts ({}) SELECT * FROM unnest($1::text[], $2::text[], $3::int4[], \
             $4::text[], $5::text[], $6::float8[], $7::float8[], $8::float8[], $9::text[], \
             $10::int8[], $11::text[], $12::int4[]) {}",
            sql::FACT_COLUMNS,
            sql::FACT_CONFLICT
        );
        let mut tx = self.client.transaction().map_err(db_err)?;
        let st = tx.prepare(&stmt).map_err(db_err)?;
        for chunk in facts.chunks(FACT_BATCH) {
            let mut run_id = Vec::with_capacity(chunk.len());
            let mut point_id = Vec::with_capacity(chunk.len());
            let mut replicate = Vec::with_capacity(chunk.len());
            let mut metric = Vec::with_capacity(chunk.len());
            let mut statistic = Vec::with_capacity(chunk.len());
            let mut value = Vec::with_capacity(chunk.len());
            let mut ci_lo = Vec::with_capacity(chunk.len());
            let mut ci_hi = Vec::with_capacity(chunk.len());
            let mut unit = Vec::with_capacity(chunk.len());
            let mut n = Vec::with_capacity(chunk.len());
            let mut artifact = Vec::with_capacity(chunk.len());
            let mut row_group = Vec::with_capacity(chunk.len());
            for f in chunk {
                run_id.push(f.run_id.as_str());
                point_id.push(f.point_id.as_str());
                replicate.push(
                    i32::try_from(super::replicate_key(f.replicate)).map_err(|_| {
                        StoreError::Invalid(format!("replicate {:?} is too large", f.replicate))
                    })?,
                );
                metric.push(f.metric.as_str());
                statistic.push(f.statistic.as_str());
                value.push(super::stored_f64(f.value));
                ci_lo.push(f.ci_lo.map(super::stored_f64));
                ci_hi.push(f.ci_hi.map(super::stored_f64));
                unit.push(f.unit.as_str());
                n.push(i64::try_from(f.n).map_err(|_| {
                    StoreError::Invalid(format!("fact {}: n = {} is too large", f.metric, f.n))
                })?);
                artifact.push(f.artifact.as_deref());
                row_group.push(f.row_group.map(|g| to_i32("row group", g)).transpose()?);
            }
            let params: [&(dyn ToSql + Sync); 12] = [
                &run_id, &point_id, &replicate, &metric, &statistic, &value, &ci_lo, &ci_hi, &unit,
                &n, &artifact, &row_group,
            ];
            tx.execute(&st, &params).map_err(|e| {
                StoreError::Warehouse(format!(
                    "facts of run {}: {}",
                    chunk[0].run_id,
                    pg_message(&e)
                ))
            })?;
        }
        tx.commit().map_err(db_err)
    }

    fn runs(&mut self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let (q, args) = sql::select_runs(filter)?;
        let params: Vec<&(dyn ToSql + Sync)> =
            args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        let rows = self.client.query(&pg(&q), &params).map_err(db_err)?;
        rows.iter().map(run_from_row).collect()
    }

    fn run(&mut self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        let row = self
            .client
            .query_opt(
                &format!("SELECT {} FROM runs WHERE run_id = $1", sql::RUN_COLUMNS),
                &[&run_id],
            )
            .map_err(db_err)?;
        row.as_ref().map(run_from_row).transpose()
    }

    fn points(&mut self, run_id: &str) -> Result<Vec<PointRow>, StoreError> {
        let rows = self
            .client
            .query(&pg(sql::SELECT_POINTS), &[&run_id])
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let params: String = r.get(4);
            let point_id: String = r.get(1);
            out.push(PointRow {
                params: serde_json::from_str(&params).map_err(|e| {
                    StoreError::Integrity(format!("point {run_id}/{point_id}: params: {e}"))
                })?,
                run_id: r.get(0),
                point_id,
                layer: r.get(2),
                kind: r.get(3),
            });
        }
        out.sort_by(|a, b| a.point_id.cmp(&b.point_id));
        Ok(out)
    }

    fn replicates(&mut self, run_id: &str) -> Result<Vec<ReplicateRow>, StoreError> {
        let rows = self
            .client
            .query(&pg(sql::SELECT_REPLICATES), &[&run_id])
            .map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let idx: i32 = r.get(2);
            out.push(ReplicateRow {
                run_id: r.get(0),
                point_id: r.get(1),
                replicate: u32::try_from(idx)
                    .map_err(|_| StoreError::Integrity(format!("replicate {idx}")))?,
                status: parse_status(&r, 3)?,
                started_at: r.get(4),
                ended_at: r.get(5),
                artifact: r.get(6),
            });
        }
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
        let mut tx = self.client.transaction().map_err(db_err)?;
        // Serialise concurrent baseline setters of the same pair.
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1 || '/' || $2))",
            &[&baseline.machine_profile, &baseline.benchmark],
        )
        .map_err(db_err)?;
        let existing = tx
            .query_opt(
                &pg(sql::SELECT_BASELINE),
                &[&baseline.machine_profile, &baseline.benchmark],
            )
            .map_err(db_err)?
            .map(|r| r.get::<_, String>(0));
        super::check_baseline_replace(baseline, existing.as_deref(), force)?;
        tx.execute(
            &pg(sql::UPSERT_BASELINE),
            &[
                &baseline.machine_profile,
                &baseline.benchmark,
                &baseline.run_id,
                &created_at,
                &baseline.note,
            ],
        )
        .map_err(|e| {
            StoreError::Warehouse(format!("baseline {}: {}", baseline.run_id, pg_message(&e)))
        })?;
        tx.commit().map_err(db_err)
    }

    fn baselines(&mut self) -> Result<Vec<BaselineRow>, StoreError> {
        let rows = self
            .client
            .query(sql::SELECT_BASELINES, &[])
            .map_err(db_err)?;
        let mut out: Vec<BaselineRow> = rows
            .iter()
            .map(|r| BaselineRow {
                machine_profile: r.get(0),
                benchmark: r.get(1),
                run_id: r.get(2),
                created_at: r.get(3),
                note: r.get(4),
            })
            .collect();
        out.sort_by(|a, b| {
            (&a.machine_profile, &a.benchmark).cmp(&(&b.machine_profile, &b.benchmark))
        });
        Ok(out)
    }

    fn record_calibrations(&mut self, rows: &[CalibrationRow]) -> Result<(), StoreError> {
        let mut tx = self.client.transaction().map_err(db_err)?;
        let st = tx.prepare(&pg(sql::UPSERT_CALIBRATION)).map_err(db_err)?;
        for c in rows {
            let at = super::canonical_time(&c.recorded_at)?;
            tx.execute(
                &st,
                &[
                    &c.machine_profile,
                    &c.benchmark,
                    &c.point_id,
                    &c.metric,
                    &c.statistic,
                    &c.baseline_run,
                    &c.candidate_run,
                    &c.ratio,
                    &at,
                ],
            )
            .map_err(db_err)?;
        }
        tx.commit().map_err(db_err)
    }

    fn calibrations(
        &mut self,
        machine_profile: &str,
        benchmark: &str,
    ) -> Result<Vec<CalibrationRow>, StoreError> {
        let rows = self
            .client
            .query(
                &pg(sql::SELECT_CALIBRATIONS),
                &[&machine_profile, &benchmark],
            )
            .map_err(db_err)?;
        Ok(rows
            .iter()
            .map(|r| CalibrationRow {
                machine_profile: r.get(0),
                benchmark: r.get(1),
                point_id: r.get(2),
                metric: r.get(3),
                statistic: r.get(4),
                baseline_run: r.get(5),
                candidate_run: r.get(6),
                ratio: r.get(7),
                recorded_at: r.get(8),
            })
            .collect())
    }

    fn record_verdicts(&mut self, rows: &[VerdictRow]) -> Result<(), StoreError> {
        let Some(first) = rows.first() else {
            return Ok(());
        };
        let mut tx = self.client.transaction().map_err(db_err)?;
        tx.execute(&pg(sql::DELETE_VERDICTS), &[&first.run_id])
            .map_err(db_err)?;
        let st = tx.prepare(&pg(sql::INSERT_VERDICT)).map_err(db_err)?;
        for v in rows {
            super::check_verdict(v, &first.run_id)?;
            let at = super::canonical_time(&v.recorded_at)?;
            let ratio = v.ratio.map(super::stored_f64);
            tx.execute(
                &st,
                &[
                    &v.run_id,
                    &v.point_id,
                    &v.metric,
                    &v.statistic,
                    &v.baseline_run,
                    &v.verdict,
                    &ratio,
                    &at,
                ],
            )
            .map_err(|e| StoreError::Warehouse(format!("verdicts of {}: {e}", v.run_id)))?;
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
        let params: Vec<&(dyn ToSql + Sync)> =
            args.iter().map(|a| a as &(dyn ToSql + Sync)).collect();
        let rows = self.client.query(&pg(&q), &params).map_err(db_err)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let n: i64 = r.get(10);
            out.push(TrendRow {
                run_id: r.get(0),
                started_at: r.get(1),
                git_commit: r.get(2),
                status: parse_status(r, 3)?,
                machine_profile: r.get(4),
                point_id: r.get(5),
                value: r.get(6),
                ci_lo: r.get(7),
                ci_hi: r.get(8),
                unit: r.get(9),
                n: u64::try_from(n)
                    .map_err(|_| StoreError::Integrity(format!("fact {metric}: n = {n}")))?,
                verdict: r.get(11),
                gated_against: r.get(12),
            });
        }
        Ok(out)
    }

    fn query_with(&mut self, q: &str, limits: &QueryLimits) -> Result<QueryResult, StoreError> {
        let invalid =
            |e: postgres::Error| StoreError::Invalid(format!("query: {}", pg_message(&e)));
        if q.len() > super::query::MAX_SQL_BYTES {
            return Err(StoreError::Invalid(format!(
                "query: the SQL is {} bytes, more than {}",
                q.len(),
                super::query::MAX_SQL_BYTES
            )));
        }
        let deadline = std::time::Instant::now() + limits.time;
        // A cancel request from another thread when the query is cancelled (the client went
        // away); the server's statement_timeout below bounds it in time.
        let watch = limits.cancel.clone().map(|flag| {
            let token = self.client.cancel_token();
            let (done, wait) = std::sync::mpsc::channel::<()>();
            let thread = std::thread::spawn(move || {
                loop {
                    match wait.recv_timeout(Duration::from_millis(50)) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                            if flag.load(std::sync::atomic::Ordering::Relaxed) {
                                let _ = token.cancel_query(NoTls);
                                return;
                            }
                        }
                        _ => return,
                    }
                }
            });
            (done, thread)
        });
        let result = self.run_query(q, limits, deadline, invalid);
        if let Some((done, thread)) = watch {
            drop(done);
            let _ = thread.join();
        }
        match result {
            Err(_) if limits.cancelled() => Err(QueryLimits::was_cancelled()),
            Err(_) if std::time::Instant::now() >= deadline => Err(limits.timed_out()),
            r => r,
        }
    }

    fn schema_version(&mut self) -> Result<u32, StoreError> {
        let v: i32 = self
            .client
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                &[],
            )
            .map_err(db_err)?
            .get(0);
        Ok(v as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted_and_text_values_typed() {
        assert_eq!(
            redact("postgres://u:secret@127.0.0.1:5432/db"),
            "postgres://u:***@127.0.0.1:5432/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(json_value(&Type::INT8, Some("42")), serde_json::json!(42));
        assert_eq!(
            json_value(&Type::NUMERIC, Some("2.5")),
            serde_json::json!(2.5)
        );
        assert_eq!(json_value(&Type::NUMERIC, Some("7")), serde_json::json!(7));
        assert_eq!(
            json_value(&Type::FLOAT8, Some("NaN")),
            serde_json::Value::Null
        );
        assert_eq!(json_value(&Type::BOOL, Some("t")), serde_json::json!(true));
        assert_eq!(
            json_value(&Type::JSONB, Some("{\"c\": 8}")),
            serde_json::json!({"c": 8})
        );
        assert_eq!(json_value(&Type::TEXT, None), serde_json::Value::Null);
    }
}
