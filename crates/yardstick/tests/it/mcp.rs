//! The MCP tools (`yardstick mcp` over stdio, `/mcp` on `yardstick server` over streamable
//! HTTP) driven by a client nobody here wrote: `mcp_client.py`, on the official Python SDK
//! (`pip install mcp`), lists the tools and calls each one with real arguments against the
//! server tests' store (two real runs), checking the answers. Without the SDK the Python tests
//! say SKIPPED (a failure under `YARDSTICK_REQUIRE_EXTERNAL=1`); the raw stdio handshake below
//! needs nothing but the binary.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::yardstick;
use crate::server::{ServerProc, fixture, spec};

/// The tool calls `mcp_client.py` makes and checks (besides `initialize` and `tools/list`).
const CALLS: u64 = 23;

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/mcp_client.py");

/// A Python that imports the official MCP SDK: `$YARDSTICK_PYTHON`, the venv `.ci/run` makes,
/// or `python3`.
fn python(test: &str) -> Option<PathBuf> {
    crate::common::python_importing(
        "mcp-python-sdk",
        test,
        "mcp.client.stdio, mcp.client.streamable_http",
        "the official MCP Python SDK from PyPI (`pip install mcp`) in the venv of \
         YARDSTICK_PYTHON (.ci/run installs it)",
    )
}

/// The client's configuration for `transport`, over the fixture's two runs.
fn config(transport: Value) -> Value {
    let f = fixture();
    let bad = spec().replace("replicates: 3", "replicates: 2");
    let mut cfg = json!({
        "runs": f.runs,
        "benchmark": "server-tiny",
        "spec": spec(),
        "bad_spec": bad,
    });
    for (k, v) in transport.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    cfg
}

/// Runs the Python client; returns the number of tool calls it checked.
fn run_client(py: &PathBuf, cfg: &Value, server_log: impl Fn() -> String) -> u64 {
    let out = Command::new(py)
        .arg(CLIENT)
        .arg(cfg.to_string())
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP client failed:\n{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server_log()
    );
    let transport = cfg["transport"].as_str().unwrap();
    let calls = stdout
        .lines()
        .find_map(|l| l.strip_prefix("CHECKED "))
        .and_then(|l| l.strip_suffix(&format!(" calls over {transport}")))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no CHECKED line:\n{stdout}"));
    // Every tool was checked at least once.
    for tool in [
        "benchmark_contracts",
        "validate_spec",
        "list_runs",
        "get_run",
        "compare_runs",
        "gate_run",
        "trend",
        "query_facts",
    ] {
        assert!(
            stdout.contains(&format!("ok {tool}:")),
            "{tool} unchecked:\n{stdout}"
        );
    }
    assert_eq!(calls, CALLS, "tool calls checked:\n{stdout}");
    eprintln!("MCP over {transport}: {calls} tool calls checked by the Python SDK client");
    calls
}

#[test]
fn mcp_stdio_answers_the_official_python_sdk_client() {
    let test = "mcp_stdio_answers_the_official_python_sdk_client";
    let Some(py) = python(test) else {
        return;
    };
    let f = fixture();
    let cfg = config(json!({
        "transport": "stdio",
        "command": [env!("CARGO_BIN_EXE_yardstick"), "mcp", "--store", f.store],
    }));
    run_client(&py, &cfg, String::new);
}

#[test]
fn mcp_http_answers_the_official_python_sdk_client() {
    let test = "mcp_http_answers_the_official_python_sdk_client";
    let Some(py) = python(test) else {
        return;
    };
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let cfg = config(json!({"transport": "http", "url": format!("{}/mcp", s.url)}));
    run_client(&py, &cfg, || s.stderr());
    // The access log has the MCP requests, none a 5xx.
    let log = s.stderr();
    assert!(log.contains("\"route\":\"/mcp\""), "{log}");
    assert!(!log.contains("\"status\":5"), "a 5xx: {log}");
}

/// With `--require-read-token`, `/mcp` needs a token like every read: refused without one (401
/// and `WWW-Authenticate: Bearer`), served to the SDK client with one.
#[test]
fn mcp_http_needs_a_read_token_when_reads_do() {
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    crate::server::copy_dir(&f.store, &store);
    let out = yardstick()
        .args(["server", "token", "create", "--scope", "read", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let s = ServerProc::start(&store, &["--require-read-token"]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let r = s.request("POST", "/mcp", &headers, init.as_bytes());
    assert_eq!(r.status, 401, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let bearer = format!("Bearer {token}");
    let mut with = headers.to_vec();
    with.push(("Authorization", &bearer));
    let r = s.request("POST", "/mcp", &with, init.as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    let test = "mcp_http_needs_a_read_token_when_reads_do";
    let Some(py) = python(test) else {
        return;
    };
    let cfg = config(json!({
        "transport": "http",
        "url": format!("{}/mcp", s.url),
        "headers": {"Authorization": bearer},
    }));
    run_client(&py, &cfg, || s.stderr());
}

/// Without any Python: the stdio transport answers `initialize` and `tools/list` with the eight
/// tools, each with input and output schemas, and a `tools/call` with structured content; its
/// stdout carries nothing but protocol messages.
#[test]
fn mcp_stdio_lists_the_tools_to_a_raw_json_rpc_client() {
    let f = fixture();
    let mut child = yardstick()
        .args(["mcp", "--store"])
        .arg(&f.store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let mut recv = || -> Value {
        let line = lines.next().expect("an answer").unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {line:?}: {e}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    let init = recv();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "yardstick", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let list = recv();
    let tools = list["result"]["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "benchmark_contracts",
            "compare_runs",
            "gate_run",
            "get_run",
            "list_runs",
            "query_facts",
            "trend",
            "validate_spec"
        ]
    );
    // Issue 39: the listing is what an assistant pays for in every conversation (it was 47 KB).
    let listed = list.to_string().len();
    assert!(listed < 20_000, "tools/list is {listed} bytes");
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        let name = t["name"].as_str().unwrap();
        if yardstick_server::mcp::WITH_OUTPUT_SCHEMA.contains(&name) {
            assert_eq!(t["outputSchema"]["type"], "object", "{t}");
        } else {
            assert!(t.get("outputSchema").is_none(), "{t}");
        }
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "list_runs", "arguments": {"limit": 5}}}));
    let call = recv();
    let ids: Vec<&str> = call["result"]["structuredContent"]["runs"]
        .as_array()
        .expect("structured runs")
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [f.runs[1].as_str(), f.runs[0].as_str()], "{call}");
    assert_eq!(call["result"]["isError"], false);
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "query_facts", "arguments": {"sql": "UPDATE runs SET name = 'x'"}}}));
    let call = recv();
    assert_eq!(call["result"]["isError"], true, "{call}");
    drop(stdin);
    // Closing stdin ends the server, cleanly.
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}
