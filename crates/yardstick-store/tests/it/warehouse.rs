//! The warehouse on real databases: SQLite files in temp dirs and a throwaway PostgreSQL cluster
//! on loopback (skipped with a visible `SKIPPED:` line when PostgreSQL is not installed).

use crate::support;

use support::pg::PgCluster;
use support::{canonical, fixture, read, write};
use yardstick_store::StoreError;
use yardstick_store::warehouse::{
    BaselineRow, PostgresWarehouse, RunFilter, SqliteWarehouse, Warehouse, open_existing_warehouse,
    open_warehouse, schema,
};

fn sqlite(dir: &tempfile::TempDir) -> SqliteWarehouse {
    SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap()
}

fn count(w: &mut dyn Warehouse, table: &str) -> i64 {
    let r = w.query(&format!("SELECT COUNT(*) FROM {table}")).unwrap();
    r.rows[0][0].as_i64().unwrap()
}

#[test]
fn sqlite_round_trips_a_run_and_a_resumed_run_never_duplicates_facts() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = sqlite(&dir);
    let f = fixture(
        "01RUN",
        "llama-serve",
        Some("cpu-test"),
        "2026-05-20T12:00:00+02:00",
    );
    write(&mut w, &f);
    assert_eq!(read(&mut w, "01RUN"), canonical(&f));
    let facts = count(&mut w, "facts");
    assert_eq!(facts, f.facts.len() as i64);

    // A resumed run writes the same rows again, with one statistic recomputed.
    let mut again = f.clone();
    again.facts[0].value = 99.5;
    write(&mut w, &again);
    assert_eq!(count(&mut w, "facts"), facts);
    assert_eq!(count(&mut w, "points"), 2);
    assert_eq!(count(&mut w, "replicates"), 6);
    assert_eq!(read(&mut w, "01RUN"), canonical(&again));
    assert_eq!(w.run("nope").unwrap(), None);
    assert!(w.facts("nope").unwrap().is_empty());
}

#[test]
fn sqlite_migrates_a_v1_database_forward_and_reopening_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("yardstick.db");
    {
        let mut v1 = SqliteWarehouse::open_at_version(&db, 1).unwrap();
        assert_eq!(v1.schema_version().unwrap(), 1);
        // v1 has no dimension tables.
        assert!(v1.query("SELECT * FROM machine_profiles").is_err());
        // Runs written at v1 (plain SQL: the v1 tool had no dimension upserts).
        let f = fixture(
            "01OLD",
            "old-bench",
            Some("cpu-old"),
            "2026-01-02T03:04:05Z",
        );
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute(
            "INSERT INTO runs (run_id, name, status, spec_sha256, machine_profile, started_at, \
             tool_version, location) VALUES (?1, ?2, 'complete', ?3, ?4, ?5, '0.0.1', 'x')",
            rusqlite::params![
                f.run.run_id,
                f.run.name,
                f.run.spec_sha256,
                f.run.machine_profile,
                "2026-01-02T03:04:05.000Z"
            ],
        )
        .unwrap();
    }
    let mut w = SqliteWarehouse::open(&db).unwrap();
    assert_eq!(w.schema_version().unwrap(), schema::latest_version());
    assert!(schema::latest_version() >= 2);
    let profiles = w
        .query("SELECT machine_profile, first_seen_at FROM machine_profiles")
        .unwrap();
    assert_eq!(
        profiles.rows,
        vec![vec![
            serde_json::json!("cpu-old"),
            serde_json::json!("2026-01-02T03:04:05.000Z")
        ]],
        "the v2 migration backfills dimensions from existing runs"
    );
    assert_eq!(count(&mut w, "workloads"), 1);
    let applied = w
        .query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
        .unwrap();
    assert_eq!(applied.rows.len(), schema::MIGRATIONS.len());
    drop(w);

    let mut w = SqliteWarehouse::open(&db).unwrap();
    let again = w
        .query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
        .unwrap();
    assert_eq!(again, applied, "re-opening applies nothing");
    assert_eq!(count(&mut w, "runs"), 1);
}

#[test]
fn sqlite_query_is_read_only_by_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = sqlite(&dir);
    let f = fixture("01Q", "q", Some("cpu-test"), "2026-05-20T10:00:00Z");
    write(&mut w, &f);
    let r = w
        .query(
            "SELECT metric, COUNT(*) AS n, ROUND(AVG(value), 3) AS mean, MAX(ci_hi) FROM facts \
             WHERE replicate = -1 GROUP BY metric ORDER BY metric",
        )
        .unwrap();
    assert_eq!(r.columns, vec!["metric", "n", "mean", "MAX(ci_hi)"]);
    assert_eq!(r.rows[1][0], serde_json::json!("ttft_ms"));
    assert_eq!(r.rows[1][1], serde_json::json!(2));
    assert_eq!(r.rows[1][2], serde_json::json!(51.95));
    assert_eq!(
        r.rows[1][3],
        serde_json::Value::Null,
        "infinity is null in JSON"
    );
    let json = w
        .query("SELECT json_extract(params, '$.concurrency') AS c FROM points ORDER BY c")
        .unwrap();
    assert_eq!(
        json.rows,
        vec![vec![serde_json::json!(1)], vec![serde_json::json!(16)]]
    );

    for bad in [
        "DELETE FROM facts",
        "INSERT INTO runs (run_id) VALUES ('x')",
        "DROP TABLE facts",
        "UPDATE facts SET value = 0",
        "CREATE TABLE t (x)",
        "PRAGMA query_only = OFF",
        "VACUUM INTO '/tmp/yardstick-escape.db'",
        "ATTACH DATABASE '/tmp/yardstick-attach.db' AS a",
        "SELECT 1; DELETE FROM facts",
        "SELEKT 1",
    ] {
        let err = w.query(bad).expect_err(bad);
        assert!(matches!(err, StoreError::Invalid(_)), "{bad}: {err:?}");
    }
    assert!(!std::path::Path::new("/tmp/yardstick-attach.db").exists());
    assert_eq!(count(&mut w, "facts"), f.facts.len() as i64);
    // The writer still writes after queries.
    w.upsert_run(&f.run).unwrap();
}

#[test]
fn sqlite_filters_runs_fills_dimensions_and_guards_baselines() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = sqlite(&dir);
    let runs = [
        ("01A", "serve", "cpu-a", "2026-05-01T00:00:00Z"),
        ("01B", "serve", "cpu-b", "2026-05-10T00:00:00Z"),
        ("01C", "train", "cpu-a", "2026-05-15T00:00:00Z"),
        ("01D", "serve", "cpu-a", "2026-05-19T23:59:59.999Z"),
    ];
    for (id, name, profile, t) in runs {
        write(&mut w, &fixture(id, name, Some(profile), t));
    }
    let ids = |w: &mut SqliteWarehouse, f: RunFilter| -> Vec<String> {
        w.runs(&f).unwrap().into_iter().map(|r| r.run_id).collect()
    };
    assert_eq!(
        ids(&mut w, RunFilter::default()),
        ["01D", "01C", "01B", "01A"]
    );
    let by_profile = RunFilter {
        machine_profile: Some("cpu-a".into()),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, by_profile), ["01D", "01C", "01A"]);
    let combined = RunFilter {
        machine_profile: Some("cpu-a".into()),
        name: Some("serve".into()),
        since: Some("2026-05-01T00:00:00.001Z".into()),
        limit: Some(5),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, combined), ["01D"]);
    let limited = RunFilter {
        limit: Some(2),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, limited), ["01D", "01C"]);
    // Paging and a time window: `until` is exclusive, `offset` skips the newest first.
    let paged = RunFilter {
        limit: Some(2),
        offset: Some(1),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, paged), ["01C", "01B"]);
    let skipped = RunFilter {
        offset: Some(3),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, skipped), ["01A"]);
    let window = RunFilter {
        since: Some("2026-05-01T00:00:00.001Z".into()),
        until: Some("2026-05-15T00:00:00Z".into()),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, window), ["01B"]);
    let by_status = |status: &str| RunFilter {
        status: Some(status.into()),
        ..Default::default()
    };
    assert_eq!(ids(&mut w, by_status("complete")).len(), 4);
    assert!(ids(&mut w, by_status("x' OR '1'='1")).is_empty());
    // One metric's aggregate facts over the runs a filter selects, in one query.
    let serve = RunFilter {
        name: Some("serve".into()),
        ..Default::default()
    };
    let facts = w.metric_facts(&serve, "ttft_ms", "p50").unwrap();
    let mut runs: Vec<&str> = facts.iter().map(|f| f.run_id.as_str()).collect();
    runs.dedup();
    runs.sort();
    runs.dedup();
    assert_eq!(runs, ["01A", "01B", "01D"]);
    assert_eq!(facts.len(), 6, "two points per run");
    assert!(
        facts
            .iter()
            .all(|f| f.replicate.is_none() && f.metric == "ttft_ms")
    );
    let newest = RunFilter {
        limit: Some(1),
        ..serve.clone()
    };
    let facts = w.metric_facts(&newest, "ttft_ms", "p50").unwrap();
    assert!(facts.len() == 2 && facts.iter().all(|f| f.run_id == "01D"));
    assert!(w.metric_facts(&serve, "ttft_ms", "p77").unwrap().is_empty());
    assert!(
        w.metric_facts(&serve, "ttft_ms' OR '1'='1", "p50")
            .unwrap()
            .is_empty()
    );
    let bad_since = RunFilter {
        since: Some("yesterday".into()),
        ..Default::default()
    };
    assert!(matches!(w.runs(&bad_since), Err(StoreError::Invalid(_))));

    let dims = w
        .query(
            "SELECT machine_profile, first_seen_at, last_seen_at FROM machine_profiles \
             ORDER BY machine_profile",
        )
        .unwrap();
    assert_eq!(
        dims.rows,
        vec![
            vec![
                serde_json::json!("cpu-a"),
                serde_json::json!("2026-05-01T00:00:00.000Z"),
                serde_json::json!("2026-05-19T23:59:59.999Z")
            ],
            vec![
                serde_json::json!("cpu-b"),
                serde_json::json!("2026-05-10T00:00:00.000Z"),
                serde_json::json!("2026-05-10T00:00:00.000Z")
            ],
        ]
    );
    assert_eq!(count(&mut w, "workloads"), 2);

    let base = |run: &str| BaselineRow {
        machine_profile: "cpu-a".into(),
        benchmark: "serve".into(),
        run_id: run.into(),
        created_at: "2026-05-20T00:00:00Z".into(),
        note: Some("first".into()),
    };
    w.set_baseline(&base("01A"), false).unwrap();
    w.set_baseline(&base("01A"), false).unwrap(); // the same run again is fine
    let err = w.set_baseline(&base("01D"), false).unwrap_err();
    assert!(err.to_string().contains("01A"), "{err}");
    w.set_baseline(&base("01D"), true).unwrap();
    let b = w.baselines().unwrap();
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].run_id, "01D");
    assert_eq!(b[0].created_at, "2026-05-20T00:00:00.000Z");
    assert!(
        w.set_baseline(&base("NO-SUCH-RUN"), true).is_err(),
        "a baseline names a stored run (foreign key)"
    );
}

#[test]
fn sqlite_refuses_orphans_nan_and_bad_times() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = sqlite(&dir);
    let f = fixture("01X", "x", None, "2026-05-20T10:00:00Z");
    // Facts before their point: the foreign key refuses them.
    w.upsert_run(&f.run).unwrap();
    let err = w.upsert_facts(&f.facts[..1]).unwrap_err();
    assert!(err.to_string().contains("FOREIGN KEY"), "{err}");
    w.upsert_points(&f.points).unwrap();
    let mut nan = f.facts[0].clone();
    nan.value = f64::NAN;
    assert!(matches!(
        w.upsert_facts(&[nan]),
        Err(StoreError::Invalid(_))
    ));
    let mut late = f.run.clone();
    late.started_at = "20 May 2026".into();
    assert!(matches!(w.upsert_run(&late), Err(StoreError::Invalid(_))));
    assert_eq!(count(&mut w, "facts"), 0);
    assert_eq!(
        count(&mut w, "machine_profiles"),
        0,
        "no profile, no dimension row"
    );
}

#[test]
fn sqlite_trend_queries_use_the_fact_key_not_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = sqlite(&dir);
    write(
        &mut w,
        &fixture("01T", "serve", Some("cpu"), "2026-05-20T10:00:00Z"),
    );
    let plan = w
        .query(
            "EXPLAIN QUERY PLAN SELECT substr(r.started_at, 1, 10) AS day, AVG(f.value) \
             FROM runs r JOIN facts f ON f.run_id = r.run_id WHERE r.name = 'serve' \
             AND f.metric = 'ttft_ms' AND f.statistic = 'p50' AND f.replicate = -1 \
             GROUP BY day ORDER BY day",
        )
        .unwrap();
    let detail: Vec<String> = plan
        .rows
        .iter()
        .map(|r| r.last().unwrap().as_str().unwrap().to_string())
        .collect();
    assert!(
        detail
            .iter()
            .any(|d| d.starts_with("SEARCH f USING PRIMARY KEY (run_id=? AND metric=?")),
        "{detail:?}"
    );
    assert!(
        detail.iter().all(|d| !d.starts_with("SCAN f")),
        "{detail:?}"
    );
}

#[test]
fn sqlite_readers_do_not_block_a_writer_in_another_handle() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("yardstick.db");
    let mut writer = SqliteWarehouse::open(&db).unwrap();
    let mut reader = SqliteWarehouse::open(&db).unwrap();
    let f = fixture("01W", "w", Some("cpu"), "2026-05-20T10:00:00Z");
    write(&mut writer, &f);
    let before = reader.query("SELECT COUNT(*) FROM facts").unwrap();
    let mut g = fixture("01V", "w", Some("cpu"), "2026-05-21T10:00:00Z");
    g.facts.truncate(3);
    write(&mut writer, &g);
    let after = reader.query("SELECT COUNT(*) FROM facts").unwrap();
    assert_eq!(before.rows[0][0], serde_json::json!(f.facts.len()));
    assert_eq!(after.rows[0][0], serde_json::json!(f.facts.len() + 3));
}

#[test]
fn open_warehouse_picks_the_backend_from_the_location() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let loc = store.to_str().unwrap();
    assert!(matches!(
        open_existing_warehouse(loc).map(drop),
        Err(StoreError::NotFound(_))
    ));
    let mut w = open_warehouse(loc).unwrap();
    assert_eq!(w.schema_version().unwrap(), schema::latest_version());
    assert!(store.join("yardstick.db").is_file());
    drop(w);
    let mut w = open_existing_warehouse(loc).unwrap();
    assert_eq!(w.runs(&RunFilter::default()).unwrap(), vec![]);
    // A PostgreSQL URL is never mistaken for a directory: nothing listens on port 1.
    let err = open_warehouse("postgresql://yardstick@127.0.0.1:1/none")
        .map(drop)
        .unwrap_err();
    assert!(err.to_string().contains("cannot connect"), "{err}");
    assert!(!std::path::Path::new("postgresql:").exists());
}

#[test]
fn postgres_migrates_upserts_and_queries_read_only() {
    let Some(pg) = PgCluster::start("postgres_migrates_upserts_and_queries_read_only") else {
        return;
    };
    let url = pg.create_db("migrate");
    {
        let mut v1 = PostgresWarehouse::connect_at_version(&url, 1).unwrap();
        assert_eq!(v1.schema_version().unwrap(), 1);
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        c.execute(
            "INSERT INTO runs (run_id, name, status, spec_sha256, machine_profile, started_at, \
             tool_version, location) VALUES ('01OLD', 'old', 'complete', 's', 'cpu-old', \
             '2026-01-02T03:04:05.000Z', '0.0.1', 'x')",
            &[],
        )
        .unwrap();
    }
    let mut w = PostgresWarehouse::connect(&url).unwrap();
    assert_eq!(w.schema_version().unwrap(), schema::latest_version());
    assert_eq!(
        count(&mut w, "machine_profiles"),
        1,
        "backfilled by migration 2"
    );
    let applied = w
        .query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
        .unwrap();
    drop(w);
    let mut w = PostgresWarehouse::connect(&url).unwrap();
    assert_eq!(
        w.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
            .unwrap(),
        applied
    );

    let f = fixture("01PG", "serve", Some("cpu-old"), "2026-05-20T10:00:00Z");
    write(&mut w, &f);
    write(&mut w, &f); // resumed: no duplicates
    assert_eq!(count(&mut w, "facts"), f.facts.len() as i64);
    assert_eq!(read(&mut w, "01PG"), canonical(&f));
    let dims = w
        .query("SELECT last_seen_at FROM machine_profiles WHERE machine_profile = 'cpu-old'")
        .unwrap();
    assert_eq!(
        dims.rows[0][0],
        serde_json::json!("2026-05-20T10:00:00.000Z")
    );

    let r = w
        .query("SELECT (params->>'concurrency')::int AS c, params FROM points ORDER BY c")
        .unwrap();
    assert_eq!(r.rows[1][0], serde_json::json!(16));
    assert_eq!(r.rows[1][1], f.points[1].params);
    for bad in [
        "DELETE FROM facts",
        "UPDATE facts SET value = 0",
        "DROP TABLE facts",
        "CREATE TABLE t (x int)",
        "COMMIT; DELETE FROM facts",
        "SELECT 1; DELETE FROM facts",
        "SELECT nextval('nope')",
        "SELEKT 1",
    ] {
        let err = w.query(bad).expect_err(bad);
        assert!(matches!(err, StoreError::Invalid(_)), "{bad}: {err:?}");
    }
    assert_eq!(count(&mut w, "facts"), f.facts.len() as i64);
    // The connection is usable (not stuck in a failed transaction) after refused queries.
    w.upsert_facts(&f.facts[..2]).unwrap();

    let err = w
        .set_baseline(
            &BaselineRow {
                machine_profile: "cpu-old".into(),
                benchmark: "serve".into(),
                run_id: "NO-SUCH-RUN".into(),
                created_at: "2026-05-20T00:00:00Z".into(),
                note: None,
            },
            false,
        )
        .unwrap_err();
    assert!(err.to_string().contains("foreign key"), "{err}");
}

#[test]
fn the_same_facts_round_trip_through_sqlite_and_postgres_identically() {
    let Some(pg) =
        PgCluster::start("the_same_facts_round_trip_through_sqlite_and_postgres_identically")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut lite = open_warehouse(dir.path().to_str().unwrap()).unwrap();
    let mut post = open_warehouse(&pg.create_db("roundtrip")).unwrap();
    let fixtures = [
        fixture(
            "01R1",
            "serve",
            Some("H100x8_drv580_cuda13.0"),
            "2026-05-18T08:00:00Z",
        ),
        fixture("01R2", "serve", None, "2026-05-19T08:00:00.5+05:30"),
        fixture(
            "01R3",
            "train",
            Some("cpu-EPYC"),
            "2026-05-20T08:00:00.123456Z",
        ),
    ];
    for w in [&mut lite, &mut post] {
        for f in &fixtures {
            write(w.as_mut(), f);
        }
        w.set_baseline(
            &BaselineRow {
                machine_profile: "cpu-EPYC".into(),
                benchmark: "train".into(),
                run_id: "01R3".into(),
                created_at: "2026-05-20T09:00:00Z".into(),
                note: Some("A/A checked — ok".into()),
            },
            false,
        )
        .unwrap();
    }
    for f in &fixtures {
        let a = read(lite.as_mut(), &f.run.run_id);
        let b = read(post.as_mut(), &f.run.run_id);
        assert_eq!(a, b, "run {}", f.run.run_id);
        assert_eq!(a, canonical(f));
        // Bit-identical floats, not just equal ones (-0.0 == 0.0).
        let bits = |x: &support::RunFixture| -> Vec<u64> {
            x.facts
                .iter()
                .flat_map(|f| [Some(f.value), f.ci_lo, f.ci_hi])
                .flatten()
                .map(f64::to_bits)
                .collect()
        };
        assert_eq!(bits(&a), bits(&b));
    }
    for filter in [
        RunFilter::default(),
        RunFilter {
            name: Some("serve".into()),
            since: Some("2026-05-19T00:00:00Z".into()),
            ..Default::default()
        },
        RunFilter {
            machine_profile: Some("cpu-EPYC".into()),
            limit: Some(1),
            ..Default::default()
        },
    ] {
        assert_eq!(lite.runs(&filter).unwrap(), post.runs(&filter).unwrap());
        assert_eq!(
            lite.metric_facts(&filter, "ttft_ms", "p50").unwrap(),
            post.metric_facts(&filter, "ttft_ms", "p50").unwrap()
        );
    }
    assert_eq!(lite.baselines().unwrap(), post.baselines().unwrap());
    // The same portable query gives the same answer.
    let q = "SELECT r.name, f.metric, f.statistic, COUNT(*) AS n, MIN(f.value) AS lo, \
             MAX(f.n) AS most FROM facts f JOIN runs r ON r.run_id = f.run_id \
             GROUP BY r.name, f.metric, f.statistic ORDER BY r.name, f.metric, f.statistic";
    assert_eq!(lite.query(q).unwrap(), post.query(q).unwrap());
}

/// Gate calibrations (migration 3): recorded idempotently per run pair and metric, read back per
/// (profile, benchmark) in the same order by both backends, times canonicalised.
fn calibrations_round_trip(
    w: &mut dyn Warehouse,
) -> Vec<yardstick_store::warehouse::CalibrationRow> {
    use yardstick_store::warehouse::CalibrationRow;
    let row = |cand: &str, metric: &str, ratio: f64| CalibrationRow {
        machine_profile: "cpu-EPYC".into(),
        benchmark: "serve".into(),
        point_id: "component.0.serve/D(16,8)/concurrency=2".into(),
        metric: metric.into(),
        statistic: "p50".into(),
        baseline_run: "01A".into(),
        candidate_run: cand.into(),
        ratio,
        recorded_at: "2026-05-20T10:00:00+02:00".into(),
    };
    w.record_calibrations(&[row("01B", "ttft_ms", 1.01), row("01B", "e2e_ms", 0.99)])
        .unwrap();
    // Recording the same pair again replaces, never duplicates.
    w.record_calibrations(&[row("01B", "ttft_ms", 1.02), row("01C", "ttft_ms", 0.98)])
        .unwrap();
    let mut other = row("01D", "ttft_ms", 1.5);
    other.machine_profile = "cpu-other".into();
    w.record_calibrations(&[other]).unwrap();
    let got = w.calibrations("cpu-EPYC", "serve").unwrap();
    assert_eq!(count(w, "gate_calibrations"), 4);
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(got[0].metric, "e2e_ms");
    assert_eq!((got[1].candidate_run.as_str(), got[1].ratio), ("01B", 1.02));
    assert_eq!((got[2].candidate_run.as_str(), got[2].ratio), ("01C", 0.98));
    assert_eq!(got[0].recorded_at, "2026-05-20T08:00:00.000Z");
    assert!(w.calibrations("cpu-EPYC", "train").unwrap().is_empty());
    got
}

#[test]
fn calibrations_round_trip_through_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let mut lite = open_warehouse(dir.path().to_str().unwrap()).unwrap();
    let from_sqlite = calibrations_round_trip(lite.as_mut());
    let Some(pg) = PgCluster::start("calibrations_round_trip_through_sqlite_and_postgres") else {
        return;
    };
    let mut post = open_warehouse(&pg.create_db("calibrations")).unwrap();
    assert_eq!(calibrations_round_trip(post.as_mut()), from_sqlite);
}

/// Gate verdicts (migration 4): a gating replaces the run's earlier verdicts, trends read one
/// metric and statistic of the runs a filter selects, bad rows are refused with nothing written,
/// and a verdict of a run not in the warehouse is refused by the database.
fn verdicts_round_trip(w: &mut dyn Warehouse) -> Vec<yardstick_store::warehouse::VerdictRow> {
    use yardstick_store::warehouse::VerdictRow;
    for (id, at) in [
        ("01A", "2026-05-20T10:00:00Z"),
        ("01B", "2026-05-21T10:00:00Z"),
    ] {
        write(w, &fixture(id, "serve", Some("cpu-EPYC"), at));
    }
    let row = |run: &str, metric: &str, verdict: &str, ratio: Option<f64>| VerdictRow {
        run_id: run.into(),
        point_id: "component.0/D(100,100)/c=1".into(),
        metric: metric.into(),
        statistic: "p50".into(),
        baseline_run: "01A".into(),
        verdict: verdict.into(),
        ratio,
        recorded_at: "2026-05-22T10:00:00+02:00".into(),
    };
    w.record_verdicts(&[
        row("01B", "ttft_ms", "FAIL", Some(1.3)),
        row("01B", "e2e_ms", "PASS", None),
    ])
    .unwrap();
    // Gating again replaces every verdict of the run: e2e_ms is gone.
    w.record_verdicts(&[row("01B", "ttft_ms", "PASS", Some(1.01))])
        .unwrap();
    assert_eq!(count(w, "gate_verdicts"), 1);
    // Refused, nothing changed: an unknown verdict, rows of two runs, an unknown run.
    for bad in [
        vec![row("01B", "ttft_ms", "MAYBE", None)],
        vec![
            row("01B", "ttft_ms", "PASS", None),
            row("01A", "ttft_ms", "PASS", None),
        ],
        vec![row("01NOPE", "ttft_ms", "PASS", None)],
    ] {
        assert!(w.record_verdicts(&bad).is_err(), "{bad:?}");
    }
    w.record_verdicts(&[]).unwrap();
    assert_eq!(count(w, "gate_verdicts"), 1);
    let all = RunFilter {
        name: Some("serve".into()),
        ..Default::default()
    };
    // The trend joins each run's aggregate fact to its verdict: 01A was never gated.
    let got: Vec<VerdictRow> = {
        let rows = w.trend_rows(&all, "ttft_ms", "p50").unwrap();
        let runs: Vec<&str> = rows.iter().map(|r| r.run_id.as_str()).collect();
        assert!(
            runs.windows(2).all(|p| p[0] <= p[1]),
            "oldest first: {runs:?}"
        );
        assert!(
            rows.iter()
                .any(|r| r.run_id == "01A" && r.verdict.is_none())
        );
        let b: Vec<_> = rows.iter().filter(|r| r.run_id == "01B").collect();
        assert!(!b.is_empty());
        for r in &b {
            let gated = r.point_id == "component.0/D(100,100)/c=1";
            assert_eq!(r.verdict.as_deref(), gated.then_some("PASS"), "{r:?}");
            assert_eq!(r.gated_against.as_deref(), gated.then_some("01A"), "{r:?}");
        }
        w.query("SELECT run_id, point_id, metric, statistic, baseline_run, verdict, ratio, recorded_at FROM gate_verdicts")
            .unwrap()
            .rows
            .iter()
            .map(|r| VerdictRow {
                run_id: r[0].as_str().unwrap().into(),
                point_id: r[1].as_str().unwrap().into(),
                metric: r[2].as_str().unwrap().into(),
                statistic: r[3].as_str().unwrap().into(),
                baseline_run: r[4].as_str().unwrap().into(),
                verdict: r[5].as_str().unwrap().into(),
                ratio: r[6].as_f64(),
                recorded_at: r[7].as_str().unwrap().into(),
            })
            .collect()
    };
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(
        (got[0].verdict.as_str(), got[0].ratio),
        ("PASS", Some(1.01))
    );
    assert_eq!(got[0].recorded_at, "2026-05-22T08:00:00.000Z");
    assert!(
        w.trend_rows(&all, "ttft_ms", "p99")
            .unwrap()
            .iter()
            .all(|r| r.verdict.is_none())
    );
    let old = RunFilter {
        until: Some("2026-05-20T12:00:00Z".into()),
        ..all.clone()
    };
    assert!(
        w.trend_rows(&old, "ttft_ms", "p50")
            .unwrap()
            .iter()
            .all(|r| r.run_id == "01A")
    );
    got
}

#[test]
fn verdicts_round_trip_through_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let mut lite = open_warehouse(dir.path().to_str().unwrap()).unwrap();
    let from_sqlite = verdicts_round_trip(lite.as_mut());
    let Some(pg) = PgCluster::start("verdicts_round_trip_through_sqlite_and_postgres") else {
        return;
    };
    let mut post = open_warehouse(&pg.create_db("verdicts")).unwrap();
    assert_eq!(verdicts_round_trip(post.as_mut()), from_sqlite);
}
