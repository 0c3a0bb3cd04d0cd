//! `yardstick server` under attack, driven as a child process on 127.0.0.1 with raw TCP: invented
//! methods must not grow `/metrics` or the access log, silent, dripping and idle connections
//! are closed, the number of connections is capped, shutdown ends within its grace period
//! while a query runs, a `Host` that is not the server's is refused on every route, every
//! response carries the security headers, and `/healthz` says when the warehouse is broken.
//!
//! Timing bounds are generous (the machine may be busy): each test sets short limits with the
//! flags and only checks that the server acted well within a much longer bound.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::yardstick;
use crate::server::{ServerProc, WAIT, copy_dir, fixture};

/// How long a test waits for the server to close a connection its limits should close.
const CLOSE_BOUND: Duration = Duration::from_secs(30);

/// Reads until the server closes the connection (or `bound` passes): what it sent, and whether
/// it closed.
fn read_until_closed(s: &mut TcpStream, bound: Duration) -> (Vec<u8>, bool) {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    s.set_read_timeout(Some(Duration::from_millis(250)))
        .unwrap();
    while start.elapsed() < bound {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            // A reset is a close too.
            Err(_) => return (got, true),
        }
    }
    (got, false)
}

fn status_of(raw: &[u8]) -> Option<u16> {
    let head = String::from_utf8_lossy(raw);
    head.lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
}

/// Finding 5: every distinct method a client invents (no token needed, even when reads need
/// one) was a new `/metrics` series and an access-log line as long as the method.
#[test]
fn invented_methods_do_not_grow_metrics_or_the_access_log() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &["--require-read-token"]);
    let filler = "A".repeat(100_000);
    for i in 0..20 {
        let method = format!("X{i}{filler}");
        let r = s.request(&method, "/api/v1/runs", &[], b"");
        assert!(r.status >= 400, "{}", r.status);
    }
    // A denied read still counts, under its status, without a series of its own method.
    assert_eq!(s.get("/api/v1/runs").status, 401);
    let m = s.get("/metrics");
    assert_eq!(m.status, 200);
    let text = String::from_utf8(m.body).unwrap();
    assert!(
        text.len() < 64 * 1024,
        "/metrics grew to {} bytes",
        text.len()
    );
    assert!(
        !text.contains("AAAAAAAA"),
        "a client's method became a label"
    );
    assert!(
        text.contains("method=\"other\",route=\"/api/v1/runs\""),
        "{text}"
    );
    assert!(
        text.contains(
            "yardstick_server_requests_total{method=\"GET\",route=\"/api/v1/runs\",status=\"401\"} 1"
        ),
        "{text}"
    );
    let log = s.stderr();
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 4096, "an access-log line of {longest} bytes");
    assert!(
        log.contains("\"method\":\"X0AAAA"),
        "{}",
        &log[..log.len().min(2000)]
    );
}

/// Finding 6: a connection that sends nothing, or a header line a second, stayed open for
/// good; so did a kept-alive connection nobody used.
#[test]
fn silent_slow_header_and_idle_connections_are_closed() {
    let f = fixture();
    let s = ServerProc::start(
        &f.store,
        &["--header-timeout", "1s", "--idle-timeout", "2s"],
    );
    // Silent.
    let mut silent = TcpStream::connect(&s.addr).unwrap();
    // A header line every 300 ms, for ever.
    let mut slow = TcpStream::connect(&s.addr).unwrap();
    let mut slow_w = slow.try_clone().unwrap();
    let dripper = std::thread::spawn(move || {
        let start = Instant::now();
        let _ = slow_w.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        let mut i = 0;
        while start.elapsed() < CLOSE_BOUND {
            if slow_w
                .write_all(format!("X-Slow-{i}: 1\r\n").as_bytes())
                .is_err()
            {
                return true;
            }
            i += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
        false
    });
    // One request answered, then the connection kept alive and unused.
    let mut idle = TcpStream::connect(&s.addr).unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).as_bytes())
        .unwrap();

    let (got, closed) = read_until_closed(&mut silent, CLOSE_BOUND);
    assert!(
        closed,
        "a silent connection is still open after {CLOSE_BOUND:?}"
    );
    assert!(got.is_empty() || status_of(&got) == Some(408), "{got:?}");
    let (_, closed) = read_until_closed(&mut slow, CLOSE_BOUND);
    assert!(
        closed,
        "a connection sending one header line at a time is still open"
    );
    let _ = dripper.join();
    let (got, closed) = read_until_closed(&mut idle, CLOSE_BOUND);
    assert_eq!(
        status_of(&got),
        Some(200),
        "{}",
        String::from_utf8_lossy(&got)
    );
    assert!(closed, "an idle kept-alive connection is still open");
    // The server still serves.
    assert_eq!(s.get("/healthz").status, 200);
}

/// Finding 6: a body dripped a byte at a time held its connection (and handler) for as long
/// as the client liked.
#[test]
fn a_dripped_request_body_is_answered_408_and_closed() {
    let f = fixture();
    let s = ServerProc::start(
        &f.store,
        &["--body-timeout", "1s", "--body-min-rate", "1KiB"],
    );
    let mut c = TcpStream::connect(&s.addr).unwrap();
    let head = format!(
        "POST /api/v1/validate HTTP/1.1\r\nHost: {}\r\nContent-Type: application/yaml\r\n\
         Content-Length: 100000\r\n\r\n",
        s.addr
    );
    c.write_all(head.as_bytes()).unwrap();
    let mut w = c.try_clone().unwrap();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < CLOSE_BOUND {
            if w.write_all(b"#").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let (got, closed) = read_until_closed(&mut c, CLOSE_BOUND);
    assert_eq!(
        status_of(&got),
        Some(408),
        "{}",
        String::from_utf8_lossy(&got)
    );
    assert!(closed, "the dripping connection is still open");
    let body = String::from_utf8_lossy(&got);
    assert!(body.contains("--body-timeout"), "{body}");
    assert!(s.stderr().contains("\"status\":408"), "{}", s.stderr());
}

/// Finding 6: nothing capped the number of open connections.
#[test]
fn connections_beyond_the_cap_wait_for_a_free_one() {
    let f = fixture();
    let s = ServerProc::start(
        &f.store,
        &["--max-connections", "2", "--header-timeout", "60s"],
    );
    let first = TcpStream::connect(&s.addr).unwrap();
    let _second = TcpStream::connect(&s.addr).unwrap();
    // Both silent connections hold the two slots (the accept loop took them).
    std::thread::sleep(Duration::from_millis(500));
    let mut third = TcpStream::connect(&s.addr).unwrap();
    third
        .write_all(
            format!(
                "GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                s.addr
            )
            .as_bytes(),
        )
        .unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = [0u8; 64];
    match third.read(&mut buf) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) => {}
        other => panic!("a third connection was served past a cap of 2: {other:?}"),
    }
    drop(first);
    let (got, _) = read_until_closed(&mut third, WAIT);
    assert_eq!(
        status_of(&got),
        Some(200),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

/// An MCP session on the server: the session id after `initialize` and `initialized`.
fn mcp_session(s: &ServerProc) -> String {
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let r = s.request("POST", "/mcp", &headers, init.as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let session = r
        .header("mcp-session-id")
        .expect("an Mcp-Session-Id")
        .to_string();
    let mut with = headers.to_vec();
    with.push(("Mcp-Session-Id", &session));
    with.push(("MCP-Protocol-Version", "2025-06-18"));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = s.request("POST", "/mcp", &with, note.as_bytes());
    assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
    session
}

/// Finding 6: after SIGTERM the process waited for a warehouse query on the blocking pool
/// (up to the query's own 120 s limit) long after the drain period.
#[test]
fn shutdown_ends_within_its_grace_period_while_a_query_runs() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_dir(&f.store, &store);
    let mut s = ServerProc::start(&store, &["--shutdown-grace", "2s"]);
    let session = mcp_session(&s);
    // An endless query, on the blocking pool.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "query_facts",
        "arguments": {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}}})
    .to_string();
    let mut c = TcpStream::connect(&s.addr).unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{call}",
        s.addr,
        call.len()
    );
    c.write_all(req.as_bytes()).unwrap();
    // Let the query start.
    std::thread::sleep(Duration::from_secs(1));
    let pid = s.pid().to_string();
    let start = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = s.wait();
    let took = start.elapsed();
    assert_eq!(status.code(), Some(0), "{}", s.stderr());
    assert!(
        took < Duration::from_secs(25),
        "the server took {took:?} to stop with --shutdown-grace 2s"
    );
}

/// Finding 7: only `/mcp` checked `Host`; the API and the dashboard answered a page of
/// `attacker.example` whose name resolves to 127.0.0.1 (DNS rebinding).
#[test]
fn a_foreign_host_is_refused_on_every_route_unless_allowed() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let port = s.addr.rsplit_once(':').unwrap().1.to_string();
    for (method, path) in [
        ("GET", "/api/v1/runs"),
        ("GET", "/runs"),
        ("GET", "/"),
        ("GET", "/healthz"),
        ("GET", "/metrics"),
        ("GET", "/api/openapi.json"),
        ("GET", "/nonexistent"),
        ("POST", "/mcp"),
    ] {
        for host in ["attacker.example", &format!("attacker.example:{port}")] {
            let r = s.request(method, path, &[("Host", host)], b"");
            let (status, error) = r.error();
            assert_eq!(status, 403, "{method} {path} for {host}: {error}");
            assert!(error.contains("attacker.example"), "{error}");
            let hint = r.json()["hint"].as_str().unwrap_or_default().to_string();
            assert!(hint.contains("--allowed-host"), "{hint}");
        }
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_string(),
    ] {
        let r = s.request("GET", "/api/v1/runs", &[("Host", &host)], b"");
        assert_eq!(r.status, 200, "{host}");
    }
    assert!(s.stderr().contains("\"status\":403"));

    let named = ServerProc::start(
        &f.store,
        &[
            "--allowed-host",
            "ys.example",
            "--allowed-host",
            "other.example:9",
        ],
    );
    let ok = |host: &str| named.request("GET", "/runs", &[("Host", host)], b"").status;
    assert_eq!(ok("ys.example"), 200);
    assert_eq!(ok("YS.example:8686"), 200);
    assert_eq!(ok("other.example:9"), 200);
    assert_eq!(ok("other.example:10"), 403);
    assert_eq!(ok("attacker.example"), 403);
    assert_eq!(ok("localhost"), 200);

    // A name that is no host name is refused at start.
    let out = yardstick()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--allowed-host",
            "a b",
            "--store",
        ])
        .arg(&f.store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--allowed-host"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Finding 9: no response carried a Content-Security-Policy, nosniff or frame options.
#[test]
fn every_response_carries_the_security_headers() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let run = format!("/runs/{}", f.runs[0]);
    for path in [
        "/runs",
        run.as_str(),
        "/trend",
        "/compare",
        "/api/v1/runs",
        "/healthz",
        "/nonexistent",
        "/runs/01JNOSUCHRUN",
    ] {
        let r = s.get(path);
        for (name, want) in [
            (
                "content-security-policy",
                "default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
            ),
            ("x-content-type-options", "nosniff"),
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
        ] {
            assert_eq!(r.header(name), Some(want), "{path}: {name}");
        }
    }
    // The pages need nothing the policy forbids: no script, nothing from elsewhere.
    let page = String::from_utf8(s.get(&run).body).unwrap();
    assert!(!page.contains("<script"), "a script in {run}");
    assert!(
        !page.contains("src=\"http"),
        "a resource from elsewhere in {run}"
    );
}

/// `/healthz` said 200 while every other route answered 500 on a broken warehouse.
#[test]
fn healthz_reports_a_broken_warehouse() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_dir(&f.store, &store);
    let s = ServerProc::start(&store, &[]);
    let ok = s.get("/healthz");
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["status"], "ok");
    // The database's files become garbage, in place (same size: SQLite maps the -shm file).
    for e in std::fs::read_dir(&store).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("yardstick.db") {
            let len = std::fs::metadata(&p).unwrap().len() as usize;
            let mut file = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            file.write_all(&vec![0x5a; len]).unwrap();
        }
    }
    assert_eq!(s.get("/api/v1/runs").status, 500, "the warehouse is broken");
    let r = s.get("/healthz");
    let (status, error) = r.error();
    assert_eq!(status, 503, "{error}");
    assert!(error.contains("warehouse"), "{error}");
    // Still no token needed, even when reads need one.
    let t = ServerProc::start(&f.store, &["--require-read-token"]);
    assert_eq!(t.get("/healthz").status, 200);
}

/// Limits that do not read, or would make the server unusable, are refused with exit 2.
#[test]
fn bad_limit_flags_are_refused_with_exit_2() {
    let f = fixture();
    for (flag, value) in [
        ("--header-timeout", "0s"),
        ("--idle-timeout", "soon"),
        ("--body-timeout", "10 parsecs"),
        ("--body-min-rate", "fast"),
        ("--max-connections", "0"),
        ("--max-connections", "many"),
        ("--shutdown-grace", "0"),
    ] {
        let out = yardstick()
            .args(["server", "--listen", "127.0.0.1:0", flag, value, "--store"])
            .arg(&f.store)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
}
