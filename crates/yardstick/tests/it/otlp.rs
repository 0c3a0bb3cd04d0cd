//! OTLP metrics and request traces with a real receiver: an OTLP/HTTP endpoint in Python that
//! decodes every export with the official `opentelemetry-proto` package (otlp_receiver.py).
//! `bench serve --otlp --otlp-traces` and `run` with `observability.otlp` export while the load
//! runs; what the receiver decoded is checked against the run's own records, request by
//! request, and against what the server under test saw. `.ci/run` installs the package in the
//! virtualenv of `YARDSTICK_PYTHON`.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use base64::Engine;
use serde_json::Value;

use crate::common::{Sim, bench_serve_json, json, serve_doc, yardstick};

struct Receiver {
    child: Child,
    url: String,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Starts the receiver with a Python that imports `opentelemetry.proto`.
    fn start(test: &str) -> Option<Receiver> {
        let python = crate::common::python_importing(
            "opentelemetry-proto",
            test,
            "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            "opentelemetry-proto from PyPI (`pip install opentelemetry-proto`) in the venv of \
             YARDSTICK_PYTHON (.ci/run installs it)",
        )?;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("exports.jsonl");
        let mut child = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/otlp_receiver.py"))
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .unwrap_or_else(|| panic!("receiver said {line:?}"));
        Some(Receiver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            out,
            _dir: dir,
        })
    }

    /// Every export received so far (panics on one that did not decode).
    fn exports(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                assert!(v.get("error").is_none(), "did not decode: {v}");
                assert_eq!(v["content_type"], "application/x-protobuf", "{v}");
                v
            })
            .collect()
    }
}

/// The string attributes of an OTLP attribute list.
fn attrs(list: &Value) -> HashMap<String, Value> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|kv| {
                    let v = &kv["value"];
                    let v = v
                        .get("stringValue")
                        .or(v.get("intValue"))
                        .or(v.get("doubleValue"))
                        .or(v.get("boolValue"))
                        .cloned()
                        .unwrap_or(Value::Null);
                    (kv["key"].as_str().unwrap().to_string(), v)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// protobuf's JSON mapping gives bytes in base64; OTLP ids are compared in hex.
fn hex(b64: &Value) -> String {
    base64::engine::general_purpose::STANDARD
        .decode(b64.as_str().unwrap())
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every metric of every metrics export, in order: (name, metric JSON).
fn metrics(exports: &[Value]) -> Vec<(String, Value)> {
    exports
        .iter()
        .filter(|e| e["path"] == "/v1/metrics")
        .flat_map(|e| e["export"]["resourceMetrics"].as_array().unwrap().clone())
        .flat_map(|rm| rm["scopeMetrics"].as_array().unwrap().clone())
        .flat_map(|sm| sm["metrics"].as_array().unwrap().clone())
        .map(|m| (m["name"].as_str().unwrap().to_string(), m))
        .collect()
}

/// Every span of every traces export, with its resource's attributes.
fn spans(exports: &[Value]) -> Vec<(HashMap<String, Value>, Value)> {
    let mut out = Vec::new();
    for e in exports.iter().filter(|e| e["path"] == "/v1/traces") {
        for rs in e["export"]["resourceSpans"].as_array().unwrap() {
            let res = attrs(&rs["resource"]["attributes"]);
            for ss in rs["scopeSpans"].as_array().unwrap() {
                for s in ss["spans"].as_array().unwrap() {
                    out.push((res.clone(), s.clone()));
                }
            }
        }
    }
    out
}

/// The sampling rule's number of a trace id, written out here as docs/observability.md states
/// it: SplitMix64 of the id's two 64-bit halves XORed, its top 53 bits over 2^53.
fn unit_of(trace_id: u128) -> f64 {
    let mut z = (trace_id as u64) ^ ((trace_id >> 64) as u64);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

fn u64_of(v: &Value) -> u64 {
    v.as_str()
        .map(|s| s.parse().unwrap())
        .or(v.as_u64())
        .or(v.as_f64().map(|f| f as u64))
        .unwrap_or(0)
}

#[test]
fn bench_serve_exports_otlp_metrics_and_a_span_per_sampled_request() {
    let Some(rx) =
        Receiver::start("bench_serve_exports_otlp_metrics_and_a_span_per_sampled_request")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let out_dir = dir.path().join("out");
    // One request at a time on the server and four in flight: TTFTs spread from 5 ms to tens of
    // ms, so some miss the 20 ms SLO; a few requests fail.
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--max-running",
        "1",
        "--error-rate",
        "0.05",
        "--seed",
        "5",
        "--log",
        log.to_str().unwrap(),
    ]);
    let out = yardstick()
        .env("NO_COLOR", "1")
        .env("YS_OTLP_CANARY", "Bearer otlp-secret-canary-4409")
        .args([
            "--json", "bench", "serve", "--url", &sim.url, "--model", "m",
        ])
        .args([
            "--scenario",
            "D(16,8)",
            "--concurrency",
            "4",
            "--max-requests",
            "200",
            "--slo-ttft-ms",
            "20",
            "--output",
            out_dir.to_str().unwrap(),
        ])
        .args(["--otlp", &rx.url, "--otlp-traces", &rx.url])
        .args(["--otlp-trace-ratio", "0.2", "--hot-interval", "200ms"])
        .args(["--otlp-header", "Authorization=YS_OTLP_CANARY"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let doc = serve_doc(&out);
    let hot = doc["hot_metrics"].as_array().unwrap();
    let kinds: Vec<&str> = hot.iter().map(|h| h["sink"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["otlp-metrics", "otlp-traces"], "{hot:?}");
    for h in hot {
        assert!(h["pushes"].as_u64().unwrap() >= 1, "{h}");
        assert_eq!(h["dropped_pushes"], 0, "{h}");
        assert_eq!(h["dropped_samples"], 0, "{h}");
    }
    assert!(hot[0]["url"].as_str().unwrap().ends_with("/v1/metrics"));
    let exports = rx.exports();
    // The header reached the receiver, and its value nothing else.
    assert!(
        exports
            .iter()
            .all(|e| e["authorization"] == "Bearer otlp-secret-canary-4409")
    );
    assert!(!format!("{doc}{stderr}").contains("otlp-secret-canary"));

    // Metrics: the last export holds what the summary says.
    let completed = doc["points"][0]["requests"]["completed"].as_u64().unwrap();
    let failed = doc["points"][0]["requests"]["failed"].as_u64().unwrap();
    assert!(failed > 0, "the simulator's 5 % errors: {doc}");
    let all = metrics(&exports);
    let last = |name: &str| {
        all.iter()
            .rev()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .1
            .clone()
    };
    let done = last("yardstick_requests_completed_total");
    assert_eq!(done["unit"], "{request}");
    assert_eq!(done["sum"]["isMonotonic"], true);
    assert_eq!(
        done["sum"]["aggregationTemporality"],
        "AGGREGATION_TEMPORALITY_CUMULATIVE"
    );
    let dp = &done["sum"]["dataPoints"][0];
    assert_eq!(dp["asDouble"].as_f64().unwrap() as u64, completed);
    let a = attrs(&dp["attributes"]);
    assert_eq!(a["benchmark"], "bench-serve");
    assert_eq!(a["point"], "D(16,8)/concurrency=4");
    assert!(u64_of(&dp["startTimeUnixNano"]) <= u64_of(&dp["timeUnixNano"]));
    let errors = last("yardstick_request_errors_total");
    let by_class: u64 = errors["sum"]["dataPoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["asDouble"].as_f64().unwrap_or(0.0) as u64)
        .sum();
    assert_eq!(by_class, failed);
    let ttft = last("yardstick_ttft_seconds");
    assert_eq!(ttft["unit"], "s");
    let h = &ttft["histogram"]["dataPoints"][0];
    assert_eq!(u64_of(&h["count"]), completed);
    let buckets: Vec<u64> = h["bucketCounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(u64_of)
        .collect();
    assert_eq!(buckets.iter().sum::<u64>(), completed);
    assert_eq!(
        buckets.len(),
        h["explicitBounds"].as_array().unwrap().len() + 1
    );
    assert_eq!(buckets[0], 0, "no TTFT under the simulator's 5 ms");

    // Traces: exactly the requests the sampling rule names, each with the ids its request
    // carried to the server.
    let records: Vec<Value> = std::fs::read_to_string(out_dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: HashSet<String> = records
        .iter()
        .filter(|r| {
            let trace = u128::from_str_radix(r["trace_id"].as_str().unwrap(), 16).unwrap();
            r.get("error").is_some_and(|e| !e.is_null())
                || r["ttft_ms"].as_f64().is_some_and(|t| t > 20.0)
                || unit_of(trace) < 0.2
        })
        .map(|r| r["trace_id"].as_str().unwrap().to_string())
        .collect();
    let got = spans(&exports);
    assert_eq!(got.len() as u64, hot[1]["samples"].as_u64().unwrap());
    let got_ids: HashSet<String> = got.iter().map(|(_, s)| hex(&s["traceId"])).collect();
    assert_eq!(got_ids.len(), got.len(), "one span per request");
    assert_eq!(got_ids, expected);
    let truth = crate::common::sim_log_by_id(&log);
    let mut reasons: HashMap<String, usize> = HashMap::new();
    for (res, s) in &got {
        assert_eq!(res["service.name"], "yardstick");
        assert_eq!(res["benchmark"], "bench-serve");
        assert_eq!(s["kind"], "SPAN_KIND_CLIENT");
        let a = attrs(&s["attributes"]);
        let id = a["yardstick.request_id"].as_str().unwrap();
        // The server saw this span as the parent of its own work.
        let tp = truth[id]["traceparent"].as_str().unwrap();
        assert_eq!(tp.split('-').nth(1).unwrap(), hex(&s["traceId"]));
        assert_eq!(tp.split('-').nth(2).unwrap(), hex(&s["spanId"]));
        let events: Vec<&str> = s["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(events[..2], ["scheduled", "sent"], "{s}");
        let reason = a["yardstick.sampled"].as_str().unwrap().to_string();
        if reason == "error" {
            assert_eq!(s["status"]["code"], "STATUS_CODE_ERROR", "{s}");
            assert!(a.contains_key("error.type"));
        } else {
            assert_eq!(events.last(), Some(&"last_token"), "{s}");
            assert_eq!(a["gen_ai.usage.output_tokens"], "8");
        }
        *reasons.entry(reason).or_default() += 1;
    }
    // Failures are always kept; how the rest splits between over-SLO and the ratio depends on
    // how busy the machine is (the set above is checked exactly either way).
    assert!(reasons.get("error").is_some_and(|n| *n > 0), "{reasons:?}");
    let under_slo = records
        .iter()
        .filter(|r| {
            r.get("error").is_none_or(Value::is_null)
                && r["ttft_ms"].as_f64().is_some_and(|t| t <= 20.0)
        })
        .count();
    if under_slo >= 50 {
        assert!(reasons.get("ratio").is_some_and(|n| *n > 0), "{reasons:?}");
    }

    // A spec's `observability.otlp`: metrics and spans of each step of `yardstick run`, with the
    // run's join keys.
    let spec = dir.path().join("spec.yaml");
    let text = crate::common::layered_spec(
        "otlp-run",
        &format!(
            "    component:\n      - kind: serve\n        target: {{url: \"{}\", api: chat, model: m}}\n        scenarios: [\"D(16,8)\"]\n        load: {{mode: concurrency, values: [2]}}\n        stop: {{maxRequests: 30}}\n",
            sim.url
        ),
    )
    .replace(
        "  layers:\n",
        &format!(
            "  observability: {{otlp: {{url: \"{}\", traces: true, traceRatio: 1}}, interval: 200ms}}\n  layers:\n",
            rx.url
        ),
    );
    std::fs::write(&spec, &text).unwrap();
    crate::common::assert_validate_refuses(
        &spec,
        &text,
        &[
            ("traceRatio: 1", "traceRatio: 1.5", "is not between 0 and 1"),
            (&rx.url, "ftp://x:4318", "is not an http(s) URL"),
            (
                "traces: true, traceRatio: 1",
                "metrics: false",
                "sends neither metrics nor traces",
            ),
        ],
    );
    std::fs::write(&spec, &text).unwrap();
    let before = rx.exports().len();
    let o = yardstick()
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run_id = json(&o)["run_id"].as_str().unwrap().to_string();
    let exports = rx.exports()[before..].to_vec();
    let run_spans = spans(&exports);
    let mut per_replicate: HashMap<String, usize> = HashMap::new();
    for (res, s) in &run_spans {
        assert_eq!(res["run_id"], run_id.as_str());
        assert_eq!(res["benchmark"], "otlp-run");
        let a = attrs(&s["attributes"]);
        assert_eq!(
            a["yardstick.point"],
            "component.0.serve/D(16,8)/concurrency=2"
        );
        *per_replicate
            .entry(res["replicate"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    // Ratio 1: every request of every replicate (warm-up included) has its span.
    assert_eq!(per_replicate.len(), 3, "{per_replicate:?}");
    assert!(
        per_replicate.values().all(|n| *n >= 30),
        "{per_replicate:?}"
    );
    let replicates: HashSet<String> = metrics(&exports)
        .iter()
        .filter(|(n, _)| n == "yardstick_requests_completed_total")
        .map(|(_, m)| {
            let a = attrs(&m["sum"]["dataPoints"][0]["attributes"]);
            assert_eq!(a["run_id"], run_id.as_str());
            a["replicate"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(replicates.len(), 3, "{replicates:?}");
}

#[test]
fn an_otlp_collector_that_is_down_costs_dropped_exports_not_the_benchmark() {
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    // Nothing listens on port 1.
    let out = bench_serve_json(
        &sim.url,
        &[
            "--scenario",
            "D(16,8)",
            "--concurrency",
            "2",
            "--max-requests",
            "60",
            "--otlp",
            "http://127.0.0.1:1",
            "--otlp-traces",
            "http://127.0.0.1:1",
            "--otlp-trace-ratio",
            "1",
            "--hot-interval",
            "100ms",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let doc = serve_doc(&out);
    assert_eq!(doc["points"][0]["requests"]["completed"], 60);
    for h in doc["hot_metrics"].as_array().unwrap() {
        assert_eq!(h["pushes"], 0, "{h}");
        assert!(h["dropped_pushes"].as_u64().unwrap() >= 1, "{h}");
        assert!(h["dropped_samples"].as_u64().unwrap() > 0, "{h}");
    }
    // Every span was counted as dropped: 60 requests (and any warm-up) at ratio 1.
    assert!(doc["hot_metrics"][1]["dropped_samples"].as_u64().unwrap() >= 60);
    assert!(
        stderr.contains("OTLP traces") && stderr.contains("dropped"),
        "{stderr}"
    );
    // Bad flags are the user's mistakes.
    for (args, says) in [
        (vec!["--otlp", "ftp://x:4318"], "is not an http(s) URL"),
        (
            vec![
                "--otlp-traces",
                "http://127.0.0.1:1",
                "--otlp-trace-ratio",
                "2",
            ],
            "not between 0 and 1",
        ),
        (vec!["--otlp-header", "A=B"], "needs --otlp"),
        (
            vec![
                "--otlp",
                "http://127.0.0.1:1",
                "--otlp-header",
                "Authorization=YS_UNSET_VAR_93",
            ],
            "is not set",
        ),
    ] {
        let o = bench_serve_json(
            &sim.url,
            &[&["--max-requests", "5"][..], &args[..]].concat(),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
