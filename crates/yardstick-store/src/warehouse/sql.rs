//! The statements both backends run, written once with `?N` parameters. PostgreSQL spells them
//! `$N`; `JSONPARAM(?N)` and `JSONTEXT(col)` mark the only other difference (JSON is `TEXT` in
//! SQLite and `JSONB` in PostgreSQL).

use super::schema::Dialect;

/// The statement in `dialect`.
pub(crate) fn render(dialect: Dialect, template: &str) -> String {
    match dialect {
        Dialect::Sqlite => {
            let s = replace_calls(template, "JSONPARAM", |arg| arg.to_string());
            replace_calls(&s, "JSONTEXT", |arg| arg.to_string())
        }
        Dialect::Postgres => {
            let s = replace_calls(template, "JSONPARAM", |arg| {
                format!("CAST(CAST({arg} AS TEXT) AS JSONB)")
            });
            let s = replace_calls(&s, "JSONTEXT", |arg| format!("CAST({arg} AS TEXT)"));
            s.replace('?', "$")
        }
    }
}

fn replace_calls(s: &str, name: &str, f: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let open = format!("{name}(");
    while let Some(i) = rest.find(&open) {
        out.push_str(&rest[..i]);
        let after = &rest[i + open.len()..];
        let close = after.find(')').expect("a closing parenthesis");
        out.push_str(&f(&after[..close]));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

pub(crate) const UPSERT_RUN: &str = "
INSERT INTO runs (run_id, name, status, mode, spec_sha256, machine_profile, env_sha256,
                  started_at, ended_at, tool_version, git_commit, location)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
ON CONFLICT (run_id) DO UPDATE SET
    name = excluded.name, status = excluded.status, mode = excluded.mode,
    spec_sha256 = excluded.spec_sha256, machine_profile = excluded.machine_profile,
    env_sha256 = excluded.env_sha256, started_at = excluded.started_at,
    ended_at = excluded.ended_at, tool_version = excluded.tool_version,
    git_commit = excluded.git_commit, location = excluded.location";

pub(crate) const UPSERT_PROFILE: &str = "
INSERT INTO machine_profiles (machine_profile, first_seen_at, last_seen_at) VALUES (?1, ?2, ?2)
ON CONFLICT (machine_profile) DO UPDATE SET
    first_seen_at = CASE WHEN excluded.first_seen_at < machine_profiles.first_seen_at
                         THEN excluded.first_seen_at ELSE machine_profiles.first_seen_at END,
    last_seen_at = CASE WHEN excluded.last_seen_at > machine_profiles.last_seen_at
                        THEN excluded.last_seen_at ELSE machine_profiles.last_seen_at END";

pub(crate) const UPSERT_WORKLOAD: &str = "
INSERT INTO workloads (spec_sha256, name, first_seen_at, last_seen_at) VALUES (?1, ?2, ?3, ?3)
ON CONFLICT (spec_sha256) DO UPDATE SET
    first_seen_at = CASE WHEN excluded.first_seen_at < workloads.first_seen_at
                         THEN excluded.first_seen_at ELSE workloads.first_seen_at END,
    last_seen_at = CASE WHEN excluded.last_seen_at > workloads.last_seen_at
                        THEN excluded.last_seen_at ELSE workloads.last_seen_at END";

pub(crate) const UPSERT_POINT: &str = "
INSERT INTO points (run_id, point_id, layer, kind, params)
VALUES (?1, ?2, ?3, ?4, JSONPARAM(?5))
ON CONFLICT (run_id, point_id) DO UPDATE SET
    layer = excluded.layer, kind = excluded.kind, params = excluded.params";

pub(crate) const UPSERT_REPLICATE: &str = "
INSERT INTO replicates (run_id, point_id, replicate, status, started_at, ended_at, artifact)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT (run_id, point_id, replicate) DO UPDATE SET
    status = excluded.status, started_at = excluded.started_at,
    ended_at = excluded.ended_at, artifact = excluded.artifact";

/// The fact upsert's conflict clause (SQLite binds one row per execution; PostgreSQL a batch
/// through `unnest`).
pub(crate) const FACT_CONFLICT: &str = "
ON CONFLICT (run_id, metric, statistic, replicate, point_id) DO UPDATE SET
    value = excluded.value, ci_lo = excluded.ci_lo, ci_hi = excluded.ci_hi,
    unit = excluded.unit, n = excluded.n, artifact = excluded.artifact,
    row_group = excluded.row_group";

pub(crate) const FACT_COLUMNS: &str = "run_id, point_id, replicate, metric, statistic, value, \
     ci_lo, ci_hi, unit, n, artifact, row_group";

pub(crate) const RUN_COLUMNS: &str = "run_id, name, status, mode, spec_sha256, machine_profile, \
     env_sha256, started_at, ended_at, tool_version, git_commit, location";

pub(crate) const SELECT_POINTS: &str =
    "SELECT run_id, point_id, layer, kind, JSONTEXT(params) FROM points WHERE run_id = ?1";

pub(crate) const SELECT_REPLICATES: &str = "SELECT run_id, point_id, replicate, status, \
     started_at, ended_at, artifact FROM replicates WHERE run_id = ?1";

pub(crate) const SELECT_BASELINE: &str = "SELECT run_id FROM baselines \
     WHERE machine_profile = ?1 AND benchmark = ?2";

pub(crate) const UPSERT_BASELINE: &str = "
INSERT INTO baselines (machine_profile, benchmark, run_id, created_at, note)
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (machine_profile, benchmark) DO UPDATE SET
    run_id = excluded.run_id, created_at = excluded.created_at, note = excluded.note";

pub(crate) const SELECT_BASELINES: &str = "SELECT machine_profile, benchmark, run_id, \
     created_at, note FROM baselines";

pub(crate) const UPSERT_CALIBRATION: &str = "
INSERT INTO gate_calibrations (machine_profile, benchmark, point_id, metric, statistic,
    baseline_run, candidate_run, ratio, recorded_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
ON CONFLICT (machine_profile, benchmark, point_id, metric, statistic, baseline_run,
    candidate_run) DO UPDATE SET ratio = excluded.ratio, recorded_at = excluded.recorded_at";

pub(crate) const SELECT_CALIBRATIONS: &str = "SELECT machine_profile, benchmark, point_id, \
     metric, statistic, baseline_run, candidate_run, ratio, recorded_at FROM gate_calibrations \
     WHERE machine_profile = ?1 AND benchmark = ?2 \
     ORDER BY point_id, metric, statistic, recorded_at, candidate_run";

pub(crate) const DELETE_VERDICTS: &str = "DELETE FROM gate_verdicts WHERE run_id = ?1";

pub(crate) const INSERT_VERDICT: &str = "
INSERT INTO gate_verdicts (run_id, point_id, metric, statistic, baseline_run, verdict, ratio,
    recorded_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (run_id, metric, statistic, point_id) DO UPDATE SET
    baseline_run = excluded.baseline_run, verdict = excluded.verdict, ratio = excluded.ratio,
    recorded_at = excluded.recorded_at";

/// The statement of [`super::Warehouse::trend_rows`] and the values to bind: the runs the
/// filter selects (newest first, limited) joined to their one aggregate fact by the facts' key,
/// and to their recorded verdict by the verdicts' key.
pub(crate) fn trend_query(
    filter: &super::RunFilter,
    metric: &str,
    statistic: &str,
) -> Result<(String, Vec<String>), crate::StoreError> {
    let (runs, mut args) = select_runs_columns(
        "run_id, started_at, git_commit, status, machine_profile",
        filter,
    )?;
    let (m, s) = (args.len() + 1, args.len() + 2);
    args.push(metric.to_string());
    args.push(statistic.to_string());
    Ok((
        format!(
            "SELECT r.run_id, r.started_at, r.git_commit, r.status, r.machine_profile, \
             f.point_id, f.value, f.ci_lo, f.ci_hi, f.unit, f.n, v.verdict, v.baseline_run \
             FROM ({runs}) r \
             JOIN facts f ON f.run_id = r.run_id AND f.metric = ?{m} AND f.statistic = ?{s} \
                 AND f.replicate = -1 \
             LEFT JOIN gate_verdicts v ON v.run_id = f.run_id AND v.metric = f.metric \
                 AND v.statistic = f.statistic AND v.point_id = f.point_id \
             ORDER BY r.started_at, r.run_id, f.point_id"
        ),
        args,
    ))
}

/// `SELECT … FROM runs` with the filter's conditions, newest first. Returns the statement and
/// the values to bind, in order.
pub(crate) fn select_runs(
    filter: &super::RunFilter,
) -> Result<(String, Vec<String>), crate::StoreError> {
    select_runs_columns(RUN_COLUMNS, filter)
}

/// The condition on `facts` selecting the aggregate facts (replicate -1) of one metric and
/// statistic of the runs [`select_runs`] would list (a subquery, so paging and the newest-first
/// limit apply to runs, not to facts). Returns the condition and the values to bind.
pub(crate) fn metric_facts_condition(
    filter: &super::RunFilter,
    metric: &str,
    statistic: &str,
) -> Result<(String, Vec<String>), crate::StoreError> {
    let (runs, mut args) = select_runs_columns("run_id", filter)?;
    let cond = format!(
        "metric = ?{} AND statistic = ?{} AND replicate = -1 AND run_id IN ({runs})",
        args.len() + 1,
        args.len() + 2
    );
    args.push(metric.to_string());
    args.push(statistic.to_string());
    Ok((cond, args))
}

/// The filter's `since` and `until` are compared in the warehouse's canonical time form
/// ([`super::canonical_time`]); one that is not an RFC 3339 time is an error.
fn select_runs_columns(
    columns: &str,
    filter: &super::RunFilter,
) -> Result<(String, Vec<String>), crate::StoreError> {
    let bound = |t: &Option<String>| t.as_deref().map(super::canonical_time).transpose();
    let (since, until) = (bound(&filter.since)?, bound(&filter.until)?);
    let mut sql = format!("SELECT {columns} FROM runs");
    let mut conds = Vec::new();
    let mut args = Vec::new();
    let mut add = |col: &str, op: &str, v: String| {
        args.push(v);
        conds.push(format!("{col} {op} ?{}", args.len()));
    };
    if let Some(p) = &filter.machine_profile {
        add("machine_profile", "=", p.clone());
    }
    if let Some(n) = &filter.name {
        add("name", "=", n.clone());
    }
    if let Some(s) = since {
        add("started_at", ">=", s);
    }
    if let Some(u) = until {
        add("started_at", "<", u);
    }
    if let Some(st) = &filter.status {
        add("status", "=", st.clone());
    }
    if !conds.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conds.join(" AND "));
    }
    sql.push_str(" ORDER BY started_at DESC, run_id DESC");
    // Both numbers are `usize`, written into the statement (never text from a caller).
    match (filter.limit, filter.offset) {
        (Some(l), Some(o)) => sql.push_str(&format!(" LIMIT {l} OFFSET {o}")),
        (Some(l), None) => sql.push_str(&format!(" LIMIT {l}")),
        // SQLite needs a LIMIT before an OFFSET; -1 is none (PostgreSQL: ALL).
        (None, Some(o)) => sql.push_str(&format!(" LIMIT {} OFFSET {o}", i64::MAX)),
        (None, None) => {}
    }
    Ok((sql, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_both_dialects() {
        assert_eq!(
            render(Dialect::Sqlite, UPSERT_POINT),
            UPSERT_POINT.replace("JSONPARAM(?5)", "?5")
        );
        let pg = render(Dialect::Postgres, UPSERT_POINT);
        assert!(pg.contains("CAST(CAST($5 AS TEXT) AS JSONB)"), "{pg}");
        assert!(!pg.contains('?'));
        assert!(render(Dialect::Postgres, SELECT_POINTS).contains("CAST(params AS TEXT)"));
    }
}
