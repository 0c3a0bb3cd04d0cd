//! The ad-hoc query gate: how many queries run at once, in all and per client, and the limits
//! each runs under — against a real SQLite warehouse.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use yardstick_server::query::{QueryGate, QuerySettings};

use crate::state_with;

const ENDLESS: &str =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

#[test]
fn the_gate_admits_per_client_and_in_all_and_frees_places_when_done() {
    let gate = QueryGate::new(QuerySettings {
        concurrent: 3,
        per_client: 2,
        ..QuerySettings::default()
    });
    let a1 = gate.admit("a").unwrap();
    let _a2 = gate.admit("a").unwrap();
    let e = gate.admit("a").err().unwrap();
    assert_eq!(e.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        e.body.error.contains("this client already runs 2"),
        "{}",
        e.body.error
    );
    let _b1 = gate.admit("b").unwrap();
    // Three in all: client c, with none of its own running, waits for the others.
    let e = gate.admit("c").err().unwrap();
    assert!(
        e.body.error.contains("the server already runs 3"),
        "{}",
        e.body.error
    );
    drop(a1);
    let _c1 = gate.admit("c").unwrap();
    let e = gate.admit("a").err().unwrap();
    assert!(
        e.body.error.contains("the server already runs 3"),
        "{}",
        e.body.error
    );
}

#[test]
fn settings_that_could_starve_the_api_are_refused() {
    for bad in [
        QuerySettings {
            concurrent: 16,
            ..QuerySettings::default()
        },
        QuerySettings {
            per_client: 0,
            ..QuerySettings::default()
        },
        QuerySettings {
            time: Duration::ZERO,
            ..QuerySettings::default()
        },
    ] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
    assert!(QuerySettings::default().check().is_ok());
}

#[tokio::test]
async fn a_query_whose_caller_leaves_is_cancelled_and_frees_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let st = state_with(
        dir.path(),
        QuerySettings {
            per_client: 1,
            // Far longer than the test waits: only the cancellation can free the place.
            time: Duration::from_secs(600),
            ..QuerySettings::default()
        },
    );
    let started = Instant::now();
    let run = yardstick_server::query::run(&st, "t", ENDLESS.into(), None, async {
        tokio::time::sleep(Duration::from_millis(300)).await
    });
    let e = run.await.err().unwrap();
    assert!(e.body.error.contains("cancelled"), "{}", e.body.error);
    // The place comes free once the statement has stopped: the same client runs again, at
    // once, with a bounded wait for the blocking thread to notice the flag.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ok = yardstick_server::query::run(
            &st,
            "t",
            "SELECT 1 AS one".into(),
            None,
            std::future::pending(),
        )
        .await;
        match ok {
            Ok(r) => {
                assert_eq!(r.rows, vec![vec![serde_json::json!(1)]]);
                break;
            }
            Err(e) if e.status == StatusCode::TOO_MANY_REQUESTS => {
                assert!(
                    Instant::now() < deadline,
                    "the cancelled query kept its place"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{}", e.body.error),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}
