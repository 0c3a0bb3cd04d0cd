//! Property tests: `yardstick query` SQL is read-only whatever it says — hostile statements
//! (writes, ATTACH, VACUUM INTO, PRAGMA, several statements, endless recursion) give a clear
//! error, never a panic, a hang, a change to the warehouse or a file outside it — while an
//! ordinary SELECT still returns the rows.

use crate::props;
use crate::support;

use std::cell::Cell;
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use support::{fixture, write};
use yardstick_store::warehouse::{QueryLimits, SqliteWarehouse, Warehouse};

fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .filter(|(n, _)| !n.ends_with("-wal") && !n.ends_with("-shm"))
        .collect();
    v.sort();
    v
}

#[test]
fn an_endless_recursive_query_is_stopped_not_hung() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap();
    let limits = QueryLimits {
        time: Duration::from_millis(300),
        max_rows: 1000,
        ..QueryLimits::default()
    };
    let e = w
        .query_with("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c", &limits)
        .unwrap_err()
        .to_string();
    assert!(e.contains("stopped after 0.3 s"), "{e}");
    // Past the row cap the answer stops, says so, and holds exactly the cap's rows.
    let r = w
        .query_with(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
            &limits,
        )
        .unwrap();
    assert!(r.truncated, "{r:?}");
    assert_eq!(r.truncated_by.as_deref(), Some("more than 1000 rows"));
    assert_eq!(r.rows.len(), 1000);
    assert_eq!(r.rows[999][0], serde_json::json!(1000));
    // Exactly the cap is not truncated.
    let r = w
        .query_with("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000) SELECT x FROM c", &limits)
        .unwrap();
    assert!(!r.truncated && r.truncated_by.is_none() && r.rows.len() == 1000);
    // The connection still answers after an interrupted query.
    assert_eq!(w.query("SELECT 1").unwrap().rows.len(), 1);
}

#[test]
fn hostile_sql_never_writes_and_select_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("yardstick.db");
    let mut w = SqliteWarehouse::open(&db).unwrap();
    write(
        &mut w,
        &fixture("R1", "serve", Some("cpu-test"), "2026-01-01T00:00:00.000Z"),
    );
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("evil.db");
    let t = target.display().to_string();
    let before_runs = w.query("SELECT count(*) FROM runs").unwrap().rows;
    let facts = w.query("SELECT count(*) FROM facts").unwrap().rows;
    assert_eq!(
        before_runs[0][0],
        serde_json::json!(1),
        "the seeded run is there"
    );
    let listing_before = listing(dir.path());

    let statement = prop_oneof![
        Just(format!("ATTACH DATABASE '{t}' AS x")),
        Just(format!("ATTACH '{t}' AS x; CREATE TABLE x.t(a)")),
        Just(format!("VACUUM INTO '{t}'")),
        Just("SELECT 1; DELETE FROM runs".to_string()),
        Just("DELETE FROM runs".to_string()),
        Just("DROP TABLE facts".to_string()),
        Just("UPDATE runs SET name = 'x'".to_string()),
        Just("INSERT INTO runs(run_id) VALUES ('evil')".to_string()),
        Just("PRAGMA journal_mode = DELETE".to_string()),
        Just("PRAGMA writable_schema = 1".to_string()),
        Just("SELECT load_extension('/tmp/evil')".to_string()),
        Just("CREATE TEMP TABLE t AS SELECT * FROM runs".to_string()),
        Just("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 50000) SELECT x FROM c".to_string()),
        Just("SELECT * FROM runs, facts, facts AS f2 LIMIT 10".to_string()),
        Just("SELECT run_id, name FROM runs".to_string()),
        "(SELECT|WITH|DELETE|INSERT|ATTACH|PRAGMA|VACUUM|EXPLAIN|REPLACE|CREATE|DROP|;|\\(|\\)|'|\"|runs|facts|\\*|FROM|INTO| |[a-z0-9_]{1,6}|--|/\\*){1,12}",
        "\\PC{0,60}",
    ];
    let limits = QueryLimits {
        time: Duration::from_secs(5),
        ..QueryLimits::default()
    };
    let cases = Cell::new(0usize);
    let answered = Cell::new(0usize);
    let wh = std::cell::RefCell::new(w);
    props::runner()
        .run(&statement, |sql| {
            cases.set(cases.get() + 1);
            let r = wh.borrow_mut().query_with(&sql, &limits);
            match r {
                Ok(r) => {
                    answered.set(answered.get() + 1);
                    prop_assert!(!r.columns.is_empty());
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
            prop_assert!(!target.exists(), "{sql:?} wrote {t}");
            Ok(())
        })
        .unwrap();
    let mut w = wh.into_inner();
    // Nothing changed: same files, same rows; and ordinary reads answered.
    assert!(
        answered.get() > 0,
        "no statement ever answered: the query path is broken"
    );
    assert_eq!(listing(dir.path()), listing_before);
    assert_eq!(
        w.query("SELECT count(*) FROM runs").unwrap().rows,
        before_runs
    );
    assert_eq!(w.query("SELECT count(*) FROM facts").unwrap().rows, facts);
    let names = w.query("SELECT name FROM runs").unwrap().rows;
    assert_eq!(names[0][0], serde_json::json!("serve"));
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    props::report("query SQL", cases.get());
}
