//! `yardstick sim` driven as a user would: the built binary on an ephemeral loopback port,
//! spoken to over raw HTTP/1.1.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::Sim;

struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
    /// The body ended cleanly (complete chunked encoding or content length).
    complete: bool,
}

fn dechunk(raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut rest = raw;
    loop {
        let Some(i) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[..i]).unwrap().trim(), 16).unwrap();
        rest = &rest[i + 2..];
        if size == 0 {
            return (out, true);
        }
        if rest.len() < size + 2 {
            out.extend_from_slice(&rest[..rest.len().min(size)]);
            return (out, false);
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

fn http(addr: &str, method: &str, path: &str, body: &str) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nX-Request-Id: t-{path}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw); // a cut connection may end in a reset
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let rest = &raw[split + 4..];
    let status = head[9..12].parse().unwrap();
    let (body, complete) = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        (rest.to_vec(), true)
    };
    Resp {
        status,
        head,
        body,
        complete,
    }
}

fn events(body: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").expect("data event").to_string())
        .collect()
}

fn read_log(path: &Path, want: usize) -> Vec<Value> {
    for _ in 0..100 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= want {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("log {} never reached {want} lines", path.display());
}

#[test]
fn health_models_metrics_and_unknown_routes() {
    let sim = Sim::start(&["--model", "tiny"]);
    let r = http(&sim.addr, "GET", "/health", "");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok\n"[..]));
    let r = http(&sim.addr, "GET", "/v1/models", "");
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["data"][0]["id"], "tiny");
    let r = http(&sim.addr, "GET", "/nope", "");
    assert_eq!(r.status, 404);
    http(
        &sim.addr,
        "POST",
        "/v1/completions",
        r#"{"prompt":"a","max_tokens":2}"#,
    );
    let r = http(&sim.addr, "GET", "/metrics", "");
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.contains("# TYPE yardstick_sim_requests_received_total counter"));
    assert!(
        text.contains(
            "yardstick_sim_requests_finished_total{model_name=\"tiny\",outcome=\"ok\"} 1"
        )
    );
    assert!(text.contains("yardstick_sim_generation_tokens_total{model_name=\"tiny\"} 2"));
}

#[test]
fn chat_stream_has_role_content_usage_done_and_a_true_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "30",
        "--itl-ms",
        "5",
        "--log",
        log.to_str().unwrap(),
    ]);
    let body = r#"{"model":"m","messages":[{"role":"user","content":"one two three four"}],
        "max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}"#;
    let r = http(&sim.addr, "POST", "/v1/chat/completions", body);
    assert_eq!(r.status, 200);
    assert!(r.head.to_ascii_lowercase().contains("text/event-stream"));
    assert!(r.complete);
    let ev = events(&r.body);
    assert_eq!(ev.len(), 1 + 6 + 1 + 1, "{ev:?}");
    let role: Value = serde_json::from_str(&ev[0]).unwrap();
    assert_eq!(role["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(role["choices"][0]["delta"]["content"], "");
    for e in &ev[1..7] {
        let v: Value = serde_json::from_str(e).unwrap();
        assert!(
            !v["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }
    let last: Value = serde_json::from_str(&ev[6]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    let usage: Value = serde_json::from_str(&ev[7]).unwrap();
    assert_eq!(usage["usage"]["prompt_tokens"], 4);
    assert_eq!(usage["usage"]["completion_tokens"], 6);
    assert_eq!(ev[8], "[DONE]");

    let lines = read_log(&log, 1);
    let l = &lines[0];
    assert_eq!(l["request_id"], "t-/v1/chat/completions");
    assert_eq!(
        (l["outcome"].as_str(), l["output_tokens"].as_u64()),
        (Some("ok"), Some(6))
    );
    let ns = |k: &str| l[k].as_u64().unwrap();
    assert!(ns("received_ns") <= ns("admitted_ns"));
    let ttft = (ns("first_token_ns") - ns("received_ns")) as f64 / 1e6;
    let decode = (ns("last_token_ns") - ns("first_token_ns")) as f64 / 1e6;
    // Never early. The upper bounds only catch gross errors: on a loaded 2-core CI machine
    // running tests in parallel, scheduling delays of tens of ms do happen.
    assert!((30.0..300.0).contains(&ttft), "ttft {ttft}");
    // Tokens are due at absolute deadlines (admission + 30 ms + k * 5 ms), so a first token
    // written a little late makes the later gaps look shorter: "never early" is a statement
    // about the deadlines, i.e. about the last token, not about the first-to-last span.
    let total = (ns("last_token_ns") - ns("received_ns")) as f64 / 1e6;
    assert!(
        (55.0..350.0).contains(&total),
        "30 ms + 5 gaps of 5 ms took {total}"
    );
    assert!(decode < 300.0, "5 gaps of 5 ms took {decode}");
}

#[test]
fn non_streaming_completions_and_embeddings() {
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1", "--embedding-dim", "8"]);
    let r = http(
        &sim.addr,
        "POST",
        "/v1/completions",
        r#"{"prompt":"a b c","max_tokens":4}"#,
    );
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["prompt_tokens"], 3);
    assert_eq!(v["usage"]["completion_tokens"], 4);
    assert_eq!(
        v["choices"][0]["text"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count(),
        4
    );
    let r = http(
        &sim.addr,
        "POST",
        "/v1/chat/completions",
        r#"{"messages":[{"role":"user","content":"x"}]}"#,
    );
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        v["usage"]["completion_tokens"], 100,
        "the default --max-tokens"
    );
    let r = http(
        &sim.addr,
        "POST",
        "/v1/embeddings",
        r#"{"input":["a b","c d e"]}"#,
    );
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    let e: Vec<f64> = serde_json::from_value(v["data"][1]["embedding"].clone()).unwrap();
    assert_eq!(e.len(), 8);
    assert!((e.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-4);
    assert_eq!(v["usage"]["prompt_tokens"], 5);
    let r = http(
        &sim.addr,
        "POST",
        "/v1/chat/completions",
        r#"{"messages":"nope"}"#,
    );
    assert_eq!(r.status, 400);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("messages"));
}

#[test]
fn eos_after_is_overridden_by_ignore_eos_and_min_tokens() {
    let sim = Sim::start(&["--ttft-ms", "0", "--itl-ms", "0", "--eos-after", "3"]);
    let n = |body: &str| {
        let r = http(&sim.addr, "POST", "/v1/completions", body);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        (
            v["usage"]["completion_tokens"].as_u64().unwrap(),
            v["choices"][0]["finish_reason"].clone(),
        )
    };
    assert_eq!(n(r#"{"prompt":"x","max_tokens":10}"#), (3, "stop".into()));
    assert_eq!(
        n(r#"{"prompt":"x","max_tokens":10,"min_tokens":5}"#),
        (5, "stop".into())
    );
    assert_eq!(
        n(r#"{"prompt":"x","max_tokens":10,"ignore_eos":true}"#),
        (10, "length".into())
    );
}

/// The value of the gauge `name` (one series, by model) in the simulator's /metrics.
fn gauge(addr: &str, name: &str) -> f64 {
    let r = http(addr, "GET", "/metrics", "");
    let text = String::from_utf8(r.body).unwrap();
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
}

#[test]
fn max_running_queues_the_second_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    // A runs for 20 ms + 4 gaps of 250 ms (~1 s) and B is sent only once the simulator reports A
    // running, so B arrives while A holds the only slot unless this thread stalls for most of a
    // second. (Two threads racing with a 60 ms A missed the queue when B started late.)
    let sim = Sim::start(&[
        "--max-running",
        "1",
        "--ttft-ms",
        "20",
        "--itl-ms",
        "250",
        "--log",
        log.to_str().unwrap(),
    ]);
    let addr = sim.addr.clone();
    let a = std::thread::spawn({
        let addr = addr.clone();
        move || {
            http(
                &addr,
                "POST",
                "/v1/completions",
                r#"{"prompt":"x","max_tokens":5,"stream":true}"#,
            )
        }
    });
    let running = "yardstick_sim_num_requests_running";
    let mut polls = 0;
    while gauge(&addr, running) < 1.0 {
        polls += 1;
        assert!(polls < 3000, "A never started running");
        std::thread::sleep(Duration::from_millis(2));
    }
    let b = http(
        &addr,
        "POST",
        "/v1/completions",
        r#"{"prompt":"y","max_tokens":2,"stream":true}"#,
    );
    assert!(a.join().unwrap().complete && b.complete);
    let lines = read_log(&log, 2);
    let ns = |l: &Value, k: &str| l[k].as_u64().unwrap();
    let (first, second) = if ns(&lines[0], "admitted_ns") <= ns(&lines[1], "admitted_ns") {
        (&lines[0], &lines[1])
    } else {
        (&lines[1], &lines[0])
    };
    assert_eq!(first["output_tokens"], 5, "A was admitted first: {lines:?}");
    // B arrived while A was generating (so it met a full slot) ...
    assert!(
        ns(second, "received_ns") < ns(first, "last_token_ns"),
        "{lines:?}"
    );
    // ... waited for A to finish, and its TTFT counts that wait: at least the rest of A's
    // generation after B arrived, plus B's own 20 ms.
    assert!(
        ns(second, "admitted_ns") >= ns(first, "last_token_ns"),
        "{lines:?}"
    );
    let waited = (ns(first, "last_token_ns") - ns(second, "received_ns")) as f64 / 1e6;
    assert!(
        second["ttft_ms"].as_f64().unwrap() >= waited + 20.0,
        "{lines:?}"
    );
}

/// With --max-waiting 0, a request that meets the only slot taken is turned away at once with
/// 429 and the `Retry-After` asked for, counted under the `refused` outcome.
#[test]
fn max_waiting_turns_away_what_the_queue_cannot_hold() {
    let sim = Sim::start(&[
        "--max-running",
        "1",
        "--max-waiting",
        "0",
        "--retry-after",
        "2",
        "--ttft-ms",
        "20",
        "--itl-ms",
        "250",
    ]);
    let addr = sim.addr.clone();
    let a = std::thread::spawn({
        let addr = addr.clone();
        move || {
            http(
                &addr,
                "POST",
                "/v1/completions",
                r#"{"prompt":"x","max_tokens":5,"stream":true}"#,
            )
        }
    });
    let mut polls = 0;
    while gauge(&addr, "yardstick_sim_num_requests_running") < 1.0 {
        polls += 1;
        assert!(polls < 3000, "A never started running");
        std::thread::sleep(Duration::from_millis(2));
    }
    let b = http(
        &addr,
        "POST",
        "/v1/completions",
        r#"{"prompt":"y","max_tokens":2}"#,
    );
    assert_eq!(b.status, 429, "{}", b.head);
    assert!(
        b.head.to_ascii_lowercase().contains("retry-after: 2"),
        "{}",
        b.head
    );
    assert!(String::from_utf8_lossy(&b.body).contains("rate_limit_exceeded"));
    assert!(a.join().unwrap().complete);
    let m = http(&addr, "GET", "/metrics", "");
    let text = String::from_utf8_lossy(&m.body);
    assert!(
        text.lines()
            .any(|l| l.contains("outcome=\"refused\"") && l.ends_with(" 1")),
        "{text}"
    );
    // --max-waiting needs --max-running.
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args(["sim", "--max-waiting", "3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn injected_faults_and_bad_flags() {
    let sim = Sim::start(&["--error-rate", "1", "--error-status", "503"]);
    let r = http(&sim.addr, "POST", "/v1/completions", r#"{"prompt":"x"}"#);
    assert_eq!(r.status, 503);
    drop(sim);
    let sim = Sim::start(&["--disconnect-rate", "1", "--ttft-ms", "1", "--itl-ms", "1"]);
    let r = http(
        &sim.addr,
        "POST",
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":10,"stream":true}"#,
    );
    assert_eq!(r.status, 200);
    assert!(!r.complete, "the stream must be cut");
    assert!(!String::from_utf8_lossy(&r.body).contains("[DONE]"));
    drop(sim);

    let out = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args(["sim", "--port", "0", "--error-rate", "1.5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("error rate"));
}
