//! The red-team's query findings against `yardstick server`, each replayed with the exact
//! request over MCP (`/mcp`, open in the default configuration): a heap-limit PRAGMA that broke
//! the warehouse until restart, a blob that crashed the process, runaway queries that held every
//! warehouse connection, a query that ran on after its client left, and a PostgreSQL superuser
//! role that let a read-only query read the host's files. Each test fails on the server before
//! the query sandbox and passes after it.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server::{ServerProc, WAIT, fixture, http, pg, spec};

/// A query that never ends by itself.
const ENDLESS: &str =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";

/// One MCP session over raw HTTP (streamable HTTP: JSON-RPC in, SSE or JSON out).
struct Mcp<'a> {
    addr: &'a str,
    session: String,
    auth: Option<String>,
}

/// The JSON-RPC message of an MCP answer (the `data:` line of an SSE event, or the body).
fn rpc_message(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .rfind(|d| d.starts_with('{'))
        .map(str::to_string)
        .unwrap_or_else(|| text.to_string());
    serde_json::from_str(&data).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {text}"))
}

impl<'a> Mcp<'a> {
    fn open(addr: &'a str, auth: Option<&str>) -> Mcp<'a> {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "red-team", "version": "1"}}});
        let mut m = Mcp {
            addr,
            session: String::new(),
            auth: auth.map(|t| format!("Bearer {t}")),
        };
        let r = m.post(&init);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        m.session = r
            .header("mcp-session-id")
            .expect("an MCP session id")
            .to_string();
        let r = m.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(r.status < 300, "{}", r.status);
        m
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        if !self.session.is_empty() {
            h.push(("Mcp-Session-Id", self.session.as_str()));
        }
        if let Some(a) = &self.auth {
            h.push(("Authorization", a.as_str()));
        }
        h
    }

    fn post(&self, msg: &Value) -> crate::server::Resp {
        let body = msg.to_string();
        http(self.addr, "POST", "/mcp", &self.headers(), body.as_bytes())
    }

    /// Calls `query_facts`; the tool's result (`structuredContent`, `isError`, `content`).
    fn query(&self, sql: &str) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "query_facts", "arguments": {"sql": sql}}});
        let r = self.post(&call);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let msg = rpc_message(&r.body);
        msg.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {msg}"))
    }

    /// Sends `query_facts` on a connection of its own and returns the connection unread, so
    /// that the caller can leave without waiting for the answer.
    fn query_and_leave(&self, sql: &str) -> TcpStream {
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "query_facts", "arguments": {"sql": sql}}})
        .to_string();
        let mut s = TcpStream::connect(self.addr).unwrap();
        let mut req = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (k, v) in self.headers() {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        req.push_str(&body);
        s.write_all(req.as_bytes()).unwrap();
        s
    }
}

fn tool_error(result: &Value) -> String {
    assert_eq!(result["isError"], json!(true), "not a tool error: {result}");
    result["content"][0]["text"].as_str().unwrap().to_string()
}

/// The API still answers: the fixture's two runs, and a healthy `/healthz`.
fn api_answers(s: &ServerProc) {
    let runs = s.get("/api/v1/runs");
    assert_eq!(runs.status, 200, "{}", String::from_utf8_lossy(&runs.body));
    assert_eq!(runs.json()["runs"].as_array().unwrap().len(), 2);
    assert_eq!(s.get("/runs").status, 200);
    let trend = s.get("/api/v1/trend?benchmark=server-tiny&metric=ttft_ms&statistic=p50");
    assert_eq!(trend.status, 200);
    assert_eq!(s.get("/healthz").status, 200);
}

/// Finding 1: `PRAGMA hard_heap_limit=1000` answered 200 and then every warehouse call failed
/// "out of memory" until restart.
#[test]
fn a_heap_limit_pragma_over_mcp_is_refused_and_the_api_keeps_answering() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let mcp = Mcp::open(&s.addr, None);
    for sql in [
        "PRAGMA hard_heap_limit=1000",
        "SELECT * FROM pragma_hard_heap_limit",
        "PRAGMA soft_heap_limit=1000",
        "SELECT * FROM pragma_database_list",
    ] {
        let e = tool_error(&mcp.query(sql));
        assert!(e.contains("only SELECT over the warehouse"), "{sql}: {e}");
    }
    api_answers(&s);
    // A push still opens the warehouse (it was "cannot open yardstick.db" before).
    let ok = mcp.query("SELECT count(*) AS n FROM runs");
    assert_eq!(ok["structuredContent"]["rows"], json!([[2]]), "{ok}");
}

/// Finding 2: `SELECT zeroblob(20000000)` answered 80 MB (and ~160 MB more in memory);
/// `zeroblob(300000000)` aborted the process. Now SQLite refuses the value, and long answers
/// stop at the row and byte caps and say so.
#[test]
fn huge_answers_over_mcp_are_refused_or_truncated_never_built() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &["--query-max-bytes", "1MiB"]);
    let mcp = Mcp::open(&s.addr, None);
    for sql in ["SELECT zeroblob(20000000)", "SELECT zeroblob(300000000)"] {
        let e = tool_error(&mcp.query(sql));
        assert!(e.contains("too big"), "{sql}: {e}");
    }
    // 20,000 rows of 200 bytes: 4 MB, past the 1 MiB cap.
    let r = mcp.query(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) \
         SELECT x, hex(zeroblob(100)) FROM c",
    );
    let body = &r["structuredContent"];
    assert_eq!(body["truncated"], json!(true), "{}", body["truncated_by"]);
    assert_eq!(
        body["truncated_by"],
        json!("more than 1048576 bytes of rows")
    );
    let rows = body["rows"].as_array().unwrap();
    assert!(rows.len() > 1000 && rows.len() < 20_000, "{}", rows.len());
    assert!(serde_json::to_string(rows).unwrap().len() <= 1024 * 1024);
    let summary = r["content"][0]["text"].as_str().unwrap();
    assert!(summary.contains("truncated"), "{summary}");
    // The default row cap: 10,000.
    let r = mcp.query(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 50000) SELECT x FROM c",
    );
    assert_eq!(
        r["structuredContent"]["rows"].as_array().unwrap().len(),
        10_000
    );
    assert_eq!(
        r["structuredContent"]["truncated_by"],
        json!("more than 10000 rows")
    );
    api_answers(&s);
}

/// Finding 3: sixteen never-ending recursive queries held all sixteen warehouse connections for
/// 120 s each, and `/api/v1/runs` stopped answering. Now each query stops at the time limit,
/// at most four run at once (two per client), the rest are refused 429, and the API answers
/// throughout.
#[test]
fn runaway_queries_over_mcp_stop_at_the_limit_and_never_starve_the_api() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &["--query-timeout", "3s"]);
    let addr = s.addr.clone();
    let started = Instant::now();
    let answers: Vec<Value> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..16)
            .map(|_| {
                let addr = addr.as_str();
                scope.spawn(move || Mcp::open(addr, None).query(ENDLESS))
            })
            .collect();
        // While they run (or are refused), the API answers.
        std::thread::sleep(Duration::from_millis(500));
        for _ in 0..5 {
            api_answers(&s);
        }
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert!(started.elapsed() < WAIT, "{:?}", started.elapsed());
    let texts: Vec<String> = answers.iter().map(tool_error).collect();
    let stopped = texts
        .iter()
        .filter(|t| t.contains("stopped after 3 s"))
        .count();
    let refused = texts
        .iter()
        .filter(|t| t.contains("already runs") && t.contains("queries"))
        .count();
    // Every one of the same client's queries: the first two ran until the limit, the others
    // were refused while those ran (a late one may have run once a place was free).
    assert!(stopped >= 2, "{texts:#?}");
    assert!(refused >= 1, "{texts:#?}");
    assert_eq!(stopped + refused, 16, "{texts:#?}");
    api_answers(&s);
}

/// A query whose client leaves is cancelled: with one query per client and a 120 s limit, the
/// same client's next query is admitted long before the first one's limit.
#[test]
fn a_query_whose_client_leaves_is_cancelled() {
    let f = fixture();
    let s = ServerProc::start(
        &f.store,
        &[
            "--query-timeout",
            "120s",
            "--query-concurrency-per-client",
            "1",
        ],
    );
    let mcp = Mcp::open(&s.addr, None);
    // Running now: the same client's next query is refused. (A probe that ran instead means the
    // endless query had not been admitted yet, or was refused while the probe held the place:
    // leave it and send it again, waiting longer.)
    let mut attempt = 0;
    let conn = loop {
        attempt += 1;
        assert!(attempt <= 10, "the endless query never started");
        let conn = mcp.query_and_leave(ENDLESS);
        std::thread::sleep(Duration::from_millis(500 * attempt));
        let r = mcp.query("SELECT 1");
        if r["isError"] == json!(true) {
            assert!(tool_error(&r).contains("already runs 1 queries"), "{r}");
            break conn;
        }
    };
    drop(conn);
    // Gone: the place is free again well before the 120 s limit.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = mcp.query("SELECT 1 AS one");
        if r["isError"] != json!(true) {
            assert_eq!(r["structuredContent"]["rows"], json!([[1]]));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the query was not cancelled when its client left: {r}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Finding 3, PostgreSQL: no statement_timeout, and a superuser warehouse role let
/// `pg_read_file` read the database host's files. The server now refuses to start on such a
/// role unless told, and bounds every query in time on the recommended role.
#[test]
fn postgresql_queries_are_bounded_and_a_superuser_role_is_refused() {
    let test = "server_query::postgresql_queries_are_bounded_and_a_superuser_role_is_refused";
    let Some(cluster) = pg::PgCluster::start(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    // The cluster's bootstrap role is a superuser.
    let superuser = cluster.create_db("ys_super");
    let out = crate::common::yardstick()
        .args(["server", "--listen", "127.0.0.1:0", "--store"])
        .arg(&store)
        .args(["--warehouse", &superuser])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("superuser"), "{err}");
    assert!(err.contains("--allow-privileged-warehouse"), "{err}");
    // The recommended role: queries run, under the time limit, and cannot read host files.
    let url = cluster.create_owned_db("ys_query", "ys_app");
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec()).unwrap();
    let out = crate::common::run_spec(&spec_path, &store, &["--warehouse", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = ServerProc::start(&store, &["--warehouse", &url, "--query-timeout", "2s"]);
    let mcp = Mcp::open(&s.addr, None);
    let started = Instant::now();
    let e = tool_error(&mcp.query(ENDLESS));
    assert!(e.contains("stopped after 2 s"), "{e}");
    assert!(started.elapsed() < WAIT);
    let e = tool_error(&mcp.query("SELECT pg_read_file('/etc/hostname')"));
    assert!(e.contains("permission denied"), "{e}");
    let r = mcp.query("SELECT generate_series(1, 20000) AS x");
    assert_eq!(
        r["structuredContent"]["rows"].as_array().unwrap().len(),
        10_000
    );
    assert_eq!(r["structuredContent"]["truncated"], json!(true));
    let n = mcp.query("SELECT count(*) AS n FROM runs");
    assert_eq!(n["structuredContent"]["rows"], json!([[1]]), "{n}");
    let runs = s.get("/api/v1/runs");
    assert_eq!(runs.status, 200);
    // The same superuser URL starts when told to.
    let s2 = ServerProc::start(
        &store,
        &["--warehouse", &superuser, "--allow-privileged-warehouse"],
    );
    assert_eq!(s2.get("/healthz").status, 200);
}

/// Hostile JSON-RPC for `/mcp` (which the OpenAPI fuzz test does not reach): every method and
/// tool, with ids, params and arguments of every JSON shape, hostile SQL among them. The server
/// never answers 5xx, never hangs, and afterwards answers the API with the same runs.
#[test]
fn mcp_survives_hostile_json_rpc() {
    use proptest::prelude::*;
    let f = fixture();
    let s = ServerProc::start(&f.store, &["--query-timeout", "2s"]);
    let mcp = Mcp::open(&s.addr, None);
    let runs_before = s.get("/api/v1/runs").json()["runs"].clone();
    let json_leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "\\PC{0,40}".prop_map(Value::from),
        Just(json!("x".repeat(70_000))),
    ];
    let json_any = json_leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let sql = prop_oneof![
        Just("PRAGMA hard_heap_limit=1000".to_string()),
        Just("SELECT zeroblob(300000000)".to_string()),
        Just(ENDLESS.to_string()),
        Just("DELETE FROM runs".to_string()),
        Just("ATTACH '/tmp/x.db' AS x".to_string()),
        Just("SELECT * FROM pragma_database_list".to_string()),
        Just("SELECT run_id FROM runs".to_string()),
        "(SELECT|WITH|PRAGMA|ATTACH|FROM|runs|facts|\\*|;|'|\\(|\\)| |[a-z_]{1,6}){1,10}",
    ];
    let tool = prop_oneof![
        Just("benchmark_contracts"),
        Just("validate_spec"),
        Just("list_runs"),
        Just("get_run"),
        Just("compare_runs"),
        Just("gate_run"),
        Just("trend"),
        Just("query_facts"),
        Just("no_such_tool"),
    ];
    let arguments = prop_oneof![
        json_any.clone(),
        sql.prop_map(|q| json!({"sql": q})),
        (
            "[a-z]{1,6}",
            prop_oneof![Just(json!(-1)), Just(json!(1e308)), json_any.clone()]
        )
            .prop_map(|(k, v)| json!({"id": v, "a": v, "b": v, k: v, "limit": v})),
    ];
    let message = prop_oneof![
        (tool, arguments, json_any.clone()).prop_map(|(t, a, id)| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": t, "arguments": a}})
        }),
        (
            prop_oneof![
                Just("tools/list"),
                Just("ping"),
                Just("initialize"),
                Just("resources/list"),
                Just("prompts/get"),
                Just("notifications/cancelled"),
                Just("logging/setLevel"),
                Just("completion/complete"),
            ],
            json_any.clone(),
            json_any.clone()
        )
            .prop_map(|(m, id, p)| json!({"jsonrpc": "2.0", "id": id, "method": m, "params": p})),
        json_any.clone(),
    ];
    // Each case is an HTTP exchange (some run a query to its 2 s limit): bounded whatever
    // PROPTEST_CASES says.
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(256u32)
            .min(300),
        failure_persistence: None,
        ..Default::default()
    });
    let cases = std::cell::Cell::new(0usize);
    runner
        .run(&message, |msg| {
            cases.set(cases.get() + 1);
            let r = mcp.post(&msg);
            prop_assert!(
                r.status < 500,
                "{} for {msg}: {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            Ok(())
        })
        .unwrap();
    crate::props::report("/mcp JSON-RPC", cases.get());
    // Raw bodies that are not JSON at all, and a body past the limit.
    for body in [
        &b"{"[..],
        b"[]",
        b"\x00\xff",
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\"}",
    ] {
        let r = http(&s.addr, "POST", "/mcp", &mcp.headers(), body);
        assert!(
            r.status < 500,
            "{}: {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
    }
    let big = vec![b' '; 2 * 1024 * 1024];
    let r = http(&s.addr, "POST", "/mcp", &mcp.headers(), &big);
    assert!(r.status < 500, "{}", r.status);
    api_answers(&s);
    assert_eq!(s.get("/api/v1/runs").json()["runs"], runs_before);
    // The session still works.
    let ok = mcp.query("SELECT count(*) FROM runs");
    assert_eq!(ok["structuredContent"]["rows"], json!([[2]]), "{ok}");
}

/// `yardstick query` runs in the same sandbox: a pragma is exit 2, a runaway query stops at
/// `--timeout` (exit 2), and a long answer is truncated with a warning and `"truncated": true`.
#[test]
fn the_query_command_is_sandboxed_bounded_and_says_when_it_truncates() {
    let f = fixture();
    let store = f.store.to_str().unwrap();
    let out = crate::common::yardstick()
        .args(["query", "--store", store, "PRAGMA hard_heap_limit=1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("only SELECT over the warehouse"));
    let out = crate::common::yardstick()
        .args(["query", "--store", store, "--timeout", "1s", ENDLESS])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stopped after 1 s"), "{err}");
    assert!(err.contains("--timeout"), "{err}");
    let out = crate::common::yardstick()
        .args(["--json", "query", "--store", store, "--max-rows", "5"])
        .arg("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100) SELECT x FROM c")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], json!([[1], [2], [3], [4], [5]]));
    assert_eq!(v["truncated"], json!(true));
    assert_eq!(v["truncated_by"], json!("more than 5 rows"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("truncated") && err.contains("--max-rows"),
        "{err}"
    );
    let out = crate::common::yardstick()
        .args(["query", "--store", store, "--timeout", "soon", "SELECT 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--timeout"));
}
