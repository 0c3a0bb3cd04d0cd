//! The query sandbox: what the team server's red-team did with one read-only statement — set a
//! process-wide heap limit with a PRAGMA, build a 300 MB blob, read the store's path, run a
//! query forever — each refused or stopped by SQLite, while the ordinary reads people write
//! (joins, JSON, window functions, the schema) still answer.

use crate::support::{fixture, write};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use yardstick_store::warehouse::{QueryLimits, SqliteWarehouse, Warehouse};

fn seeded() -> (tempfile::TempDir, SqliteWarehouse) {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap();
    write(
        &mut w,
        &fixture("R1", "serve", Some("cpu-test"), "2026-01-01T00:00:00.000Z"),
    );
    (dir, w)
}

fn refused(w: &mut SqliteWarehouse, sql: &str) -> String {
    match w.query(sql) {
        Ok(r) => panic!("{sql:?} answered {r:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_heap_limit_pragma_is_refused_and_the_warehouse_keeps_working() {
    let (dir, mut w) = seeded();
    // The statement that broke the server until restart: it answered 200, and afterwards every
    // warehouse call failed "out of memory" (the limit is process-wide).
    for sql in [
        "PRAGMA hard_heap_limit=1000",
        "PRAGMA soft_heap_limit=1000",
        "SELECT * FROM pragma_hard_heap_limit(1000)",
        "SELECT count(*) FROM pragma_hard_heap_limit",
        "PRAGMA cache_size=1",
        "PRAGMA query_only=0",
        "PRAGMA journal_mode",
    ] {
        let e = refused(&mut w, sql);
        assert!(e.contains("only SELECT over the warehouse"), "{sql}: {e}");
    }
    // The process has no heap limit: a fresh connection reads it as 0, and a query that needs
    // memory still answers, as does writing a run.
    let c = rusqlite::Connection::open_in_memory().unwrap();
    let limit: i64 = c
        .query_row("PRAGMA hard_heap_limit", [], |r| r.get(0))
        .unwrap();
    assert_eq!(limit, 0);
    let big = w
        .query("SELECT length(group_concat(x)) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) SELECT x FROM c)")
        .unwrap();
    assert_eq!(big.rows[0][0], serde_json::json!(108_893));
    let mut writer = SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap();
    write(
        &mut writer,
        &fixture("R2", "serve", Some("cpu-test"), "2026-01-02T00:00:00.000Z"),
    );
    assert_eq!(
        w.query("SELECT count(*) FROM runs").unwrap().rows[0][0],
        serde_json::json!(2)
    );
}

#[test]
fn huge_values_fail_in_sqlite_instead_of_filling_memory() {
    let (_dir, mut w) = seeded();
    let limits = QueryLimits {
        max_bytes: 1024 * 1024,
        ..QueryLimits::default()
    };
    for sql in [
        "SELECT zeroblob(20000000)",
        "SELECT zeroblob(300000000)",
        "SELECT randomblob(20000000)",
        "SELECT replace(hex(zeroblob(400000)), '0', 'aaaaaaaaaa')",
    ] {
        let e = w.query_with(sql, &limits).unwrap_err().to_string();
        assert!(e.contains("too big"), "{sql}: {e}");
    }
    // Small ones are fine: up to half the byte cap.
    let r = w
        .query_with("SELECT length(zeroblob(1000))", &limits)
        .unwrap();
    assert_eq!(r.rows[0][0], serde_json::json!(1000));
}

#[test]
fn answers_stop_at_the_byte_cap_and_say_so() {
    let (_dir, mut w) = seeded();
    let limits = QueryLimits {
        max_bytes: 64 * 1024,
        ..QueryLimits::default()
    };
    // 1,000 rows of 1 KB: about 1 MB, sixteen times the cap.
    let r = w
        .query_with(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000) \
             SELECT x, hex(zeroblob(500)) AS pad FROM c",
            &limits,
        )
        .unwrap();
    assert!(r.truncated);
    assert_eq!(
        r.truncated_by.as_deref(),
        Some("more than 65536 bytes of rows")
    );
    let bytes = serde_json::to_string(&r.rows).unwrap().len();
    assert!(bytes <= 64 * 1024, "{bytes} bytes answered");
    assert!(r.rows.len() > 10 && r.rows.len() < 1000, "{}", r.rows.len());
    // The rows kept are the first ones, in order.
    assert_eq!(r.rows[0][0], serde_json::json!(1));
    let n = r.rows.len();
    assert_eq!(r.rows[n - 1][0], serde_json::json!(n));
}

#[test]
fn the_store_path_and_other_databases_stay_hidden() {
    let (_dir, mut w) = seeded();
    for sql in [
        "SELECT * FROM pragma_database_list",
        "SELECT file FROM pragma_database_list",
        "PRAGMA database_list",
        "SELECT * FROM temp.sqlite_schema",
        "SELECT * FROM dbstat",
        "SELECT sqlite_compileoption_get(0)",
        "SELECT load_extension('/tmp/evil')",
        "SELECT fts3_tokenizer('simple')",
    ] {
        let e = refused(&mut w, sql);
        assert!(e.contains("only SELECT over the warehouse"), "{sql}: {e}");
    }
}

#[test]
fn ordinary_reads_still_answer() {
    let (_dir, mut w) = seeded();
    for sql in [
        "SELECT r.name, count(*) FROM facts f JOIN runs r USING (run_id) GROUP BY r.name",
        "SELECT metric, value, rank() OVER (PARTITION BY metric ORDER BY value) FROM facts",
        "SELECT json_extract(params, '$.concurrency'), params ->> '$.concurrency' FROM points",
        "SELECT p.point_id, j.key FROM points p, json_each(p.params) j",
        "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name",
        "SELECT name, type FROM pragma_table_info('facts')",
        "PRAGMA table_info(facts)",
        "SELECT substr(started_at, 1, 10), strftime('%Y', started_at), round(4.25, 1) FROM runs",
        "SELECT * FROM runs WHERE run_id IN (SELECT run_id FROM facts WHERE metric LIKE 'ttft%')",
        "WITH t AS (SELECT * FROM facts) SELECT count(*) FROM t",
        "EXPLAIN QUERY PLAN SELECT * FROM facts WHERE run_id = 'R1'",
        "VALUES (1, 'a'), (2, 'b')",
        "SELECT version, name FROM schema_migrations",
    ] {
        let r = w.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert!(!r.columns.is_empty(), "{sql}");
        assert!(!r.rows.is_empty(), "{sql}: no rows");
        assert!(!r.truncated, "{sql}");
    }
}

#[test]
fn a_cancelled_query_stops_at_once() {
    let (_dir, mut w) = seeded();
    let cancel = Arc::new(AtomicBool::new(false));
    let limits = QueryLimits {
        // Far beyond how long the test waits: only the flag can stop it.
        time: Duration::from_secs(600),
        cancel: Some(cancel.clone()),
        ..QueryLimits::default()
    };
    let flag = cancel.clone();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let e = w
        .query_with(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
            &limits,
        )
        .unwrap_err()
        .to_string();
    setter.join().unwrap();
    assert!(e.contains("cancelled"), "{e}");
    // The same connection answers the next query.
    assert_eq!(w.query("SELECT 1").unwrap().rows.len(), 1);
}
