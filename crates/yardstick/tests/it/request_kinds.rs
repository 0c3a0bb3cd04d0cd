//! Request kinds: `yardstick bench serve --kind tool-call=W --kind json=W --kind text=W` against
//! `yardstick sim`, which answers each kind (a tool call, a schema-conforming object) and breaks
//! a known share on purpose (`--invalid-rate`): the client's valid rate per kind must find that
//! share within its interval, streamed and not, and the checks must be the real ones (a tools
//! file and a schema of the user's, a server that ignores them).

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::Sim;

fn bench(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args(["bench", "serve", "--url", url, "--model", "m"])
        .args(args)
        .output()
        .unwrap()
}

fn json_of(o: &Output) -> Value {
    crate::common::serve_doc(o)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const MIX: [&str; 6] = [
    "--kind",
    "tool-call=0.4",
    "--kind",
    "json=0.4",
    "--kind",
    "text=0.2",
];

/// The simulator's log by request id: (kind of structured answer, broken on purpose).
fn sim_truth(log: &std::path::Path) -> std::collections::HashMap<String, (Option<String>, bool)> {
    crate::common::sim_log_by_id(log)
        .into_iter()
        .map(|(id, v)| {
            (
                id,
                (
                    v["structured"].as_str().map(str::to_owned),
                    v["broken"] == true,
                ),
            )
        })
        .collect()
}

#[test]
fn valid_rates_find_the_share_the_server_broke_streamed_and_not() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let sim = Sim::start(&[
        "--ttft-ms",
        "2",
        "--itl-ms",
        "1",
        "--invalid-rate",
        "0.25",
        "--seed",
        "3",
        "--log",
        log.to_str().unwrap(),
    ]);
    for stream in [true, false] {
        let out = dir.path().join(format!("out-{stream}"));
        let mut args: Vec<&str> = MIX.to_vec();
        args.extend([
            "--scenario",
            "D(20,64)",
            "--concurrency",
            "8",
            "--max-requests",
            "400",
            "--max-duration",
            "60s",
            "--slo-ttft-ms",
            "1000",
        ]);
        if !stream {
            args.push("--no-stream");
        }
        let out_s = out.to_str().unwrap().to_string();
        args.extend(["--output", &out_s]);
        let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
            .env("NO_COLOR", "1")
            .args([
                "--json", "bench", "serve", "--url", &sim.url, "--model", "m",
            ])
            .args(&args)
            .output()
            .unwrap();
        let doc = json_of(&o);
        let p = &doc["points"][0];
        assert_eq!(p["requests"]["failed"].as_u64(), Some(0), "{p}");
        let per = p["per_kind"].as_object().expect("per_kind");
        let kinds: Vec<&str> = per.keys().map(String::as_str).collect();
        assert_eq!(kinds, ["json", "text", "tool-call"], "stream={stream}");
        let total: u64 = per.values().map(|k| k["requests"].as_u64().unwrap()).sum();
        assert_eq!(total, 400);
        // Text is not checked.
        assert!(per["text"]["valid"].is_null(), "{p}");
        for kind in ["tool-call", "json"] {
            let k = &per[kind];
            let rate = f(&k["valid_rate"]);
            let [lo, hi] = [f(&k["valid_rate_ci95"][0]), f(&k["valid_rate_ci95"][1])];
            eprintln!(
                "stream={stream} {kind}: {rate:.3} [{lo:.3}, {hi:.3}] of {}",
                k["completed"]
            );
            // About a quarter broken (which requests is up to arrival order at the server).
            assert!((rate - 0.75).abs() < 0.15, "{kind}: {rate}");
            assert!(lo < rate && rate < hi, "{kind}: {rate} [{lo}, {hi}]");
            let why = k["first_invalid"].as_str().expect("a reason");
            match kind {
                // The simulator cuts a tool call's arguments short...
                "tool-call" => assert!(why.contains("not JSON"), "{why}"),
                // ...and drops a required property from a JSON answer.
                _ => assert!(why.contains("does not match the schema"), "{why}"),
            }
            // A tool call's first piece is its first token (no TTFT without streaming).
            assert_eq!(k["ttft_ms"]["p50"].is_number(), stream, "{k}");
        }
        let overall = f(&p["valid_rate"]);
        assert!((overall - 0.75).abs() < 0.1, "{overall}");
        // Request by request, the client's verdict is the server's truth: invalid exactly
        // when the simulator broke the answer, and every request's kind is what it was sent as.
        let truth = sim_truth(&log);
        let lines = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
        let mut checked = 0;
        for l in lines.lines() {
            let r: Value = serde_json::from_str(l).unwrap();
            let id = r["request_id"].as_str().unwrap();
            let (structured, broken) = truth.get(id).unwrap_or_else(|| panic!("{id} not in log"));
            match r["kind"].as_str().unwrap() {
                "text" => assert!(structured.is_none() && r.get("valid").is_none(), "{r}"),
                kind => {
                    assert_eq!(structured.as_deref(), Some(kind), "{r}");
                    assert_eq!(r["valid"] == false, *broken, "{r}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 250, "{checked}");
        // Quality goodput counts the valid answers (and text) within the SLO.
        let q = f(&p["quality_goodput"]);
        let g = f(&p["goodput"]);
        assert!(q < g && q > 0.5 * g, "quality goodput {q} vs goodput {g}");
    }

    // The human summary has the per-kind table and the first reason.
    let mut args = MIX.to_vec();
    args.extend(["--scenario", "D(10,64)", "--max-requests", "40"]);
    let o = bench(&sim.url, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("kind") && l.contains("95 % interval")),
        "{text}"
    );
    assert!(text.contains("first invalid"), "{text}");
    assert!(text.contains("quality goodput"), "{text}");
}

#[test]
fn user_tools_and_schemas_are_sent_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"{"tools": [{"type": "function", "function": {"name": "book_flight",
            "parameters": {"type": "object", "properties": {
                "from": {"type": "string", "minLength": 3, "maxLength": 3},
                "seats": {"type": "integer", "minimum": 1, "maximum": 9}},
              "required": ["from", "seats"], "additionalProperties": false}}}]}"#,
    )
    .unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"name": "city", "schema": {"type": "object",
            "properties": {"name": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
            "required": ["name", "population"]}}"#,
    )
    .unwrap();
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let o = bench(
        &sim.url,
        &[
            "--json",
            "--kind",
            "tool-call",
            "--kind",
            "json",
            "--tools",
            tools.to_str().unwrap(),
            "--json-schema",
            schema.to_str().unwrap(),
            "--scenario",
            "D(10,64)",
            "--max-requests",
            "60",
            "--output",
            dir.path().join("out").to_str().unwrap(),
        ],
    );
    let doc = json_of(&o);
    let p = &doc["points"][0];
    for kind in ["tool-call", "json"] {
        assert_eq!(f(&p["per_kind"][kind]["valid_rate"]), 1.0, "{p}");
    }
    // Every record says its kind and verdict, in the JSON lines and the Parquet table.
    let lines = std::fs::read_to_string(dir.path().join("out/requests.jsonl")).unwrap();
    let recs: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 60);
    assert!(
        recs.iter()
            .all(|r| r["valid"] == true && r["kind"].is_string()),
        "{}",
        lines.lines().next().unwrap()
    );
    // A user's schema the server's answers cannot meet: every answer is invalid, and why.
    let strict = dir.path().join("strict.json");
    std::fs::write(
        &strict,
        r#"{"type": "object", "properties": {"name": {"type": "string", "pattern": "^[0-9]+$"}}, "required": ["name"]}"#,
    )
    .unwrap();
    // The simulator generates a word for a string (it ignores `pattern`): never valid here.
    let o = bench(
        &sim.url,
        &[
            "--json",
            "--kind",
            "json",
            "--json-schema",
            strict.to_str().unwrap(),
            "--scenario",
            "D(10,64)",
            "--max-requests",
            "20",
        ],
    );
    let doc = json_of(&o);
    let k = &doc["points"][0]["per_kind"]["json"];
    assert_eq!(f(&k["valid_rate"]), 0.0, "{k}");
    assert!(
        k["first_invalid"].as_str().unwrap().contains("/name"),
        "{k}"
    );
    // Too few output tokens cut a structured answer short, as a constrained decoder is: the
    // answer is invalid (it does not parse).
    let o = bench(
        &sim.url,
        &[
            "--json",
            "--kind",
            "json",
            "--scenario",
            "D(10,4)",
            "--max-requests",
            "10",
        ],
    );
    let doc = json_of(&o);
    let k = &doc["points"][0]["per_kind"]["json"];
    assert_eq!(f(&k["valid_rate"]), 0.0, "{k}");
    assert!(
        k["first_invalid"].as_str().unwrap().contains("not JSON"),
        "{k}"
    );
}

#[test]
fn bad_kinds_exit_2_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("tools.json");
    std::fs::write(&broken, "[{\"type\": \"function\",\n \"function\": {").unwrap();
    let no_name = dir.path().join("noname.json");
    std::fs::write(&no_name, r#"[{"type": "function", "function": {}}]"#).unwrap();
    let b = broken.to_str().unwrap();
    let n = no_name.to_str().unwrap();
    for (bad, says) in [
        (&["--kind", "yaml"][..], "unknown request kind `yaml`"),
        (&["--kind", "json=0"], "above 0"),
        (&["--kind", "json", "--kind", "json=2"], "named twice"),
        (&["--kind", "tool-call", "--tools", b], "line 2, column"),
        (&["--kind", "tool-call", "--tools", n], "has no `name`"),
        (&["--tools", n], "add --kind tool-call"),
        (
            &["--kind", "json", "--api", "completions"],
            "needs the chat API",
        ),
    ] {
        let mut args = bad.to_vec();
        args.extend(["--max-requests", "1"]);
        let o = bench("http://127.0.0.1:9", &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(says), "{bad:?}: {err}");
    }
}

#[test]
fn images_are_sent_distinct_counted_by_the_server_and_reported() {
    // One token per 28 × 28 patch at 1 ms each: a 280 × 280 image is 100 tokens, 100 ms.
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--ttft-per-token-ms",
        "1",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = bench(
        &sim.url,
        &[
            "--json",
            "--image",
            "280x280,2",
            "--scenario",
            "D(10,4)",
            "--max-requests",
            "12",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    let doc = json_of(&o);
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["failed"].as_u64(), Some(0), "{p}");
    let bytes = f(&p["image_bytes_per_request"]);
    assert!(bytes > 2.0 * 1000.0, "{bytes}");
    let lines = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let recs: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in &recs {
        // The server counted the text and both images: 10 + 2 × 100.
        assert_eq!(r["prompt_tokens"].as_u64(), Some(210), "{r}");
        assert!(r["image_bytes"].as_u64().unwrap() > 2000, "{r}");
        // ...and charged them to the time to first token (210 ms + 5 ms).
        assert!(f(&r["ttft_ms"]) >= 215.0, "{r}");
    }
    // Bad sizes and APIs exit 2.
    for (bad, says) in [
        (&["--image", "10x10"][..], "16 to 4096"),
        (&["--image", "512"], "no `x`"),
        (
            &["--image", "512x512", "--api", "completions"],
            "API is not chat",
        ),
    ] {
        let mut args = bad.to_vec();
        args.extend(["--max-requests", "1"]);
        let o = bench("http://127.0.0.1:9", &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(says), "{bad:?}: {err}");
    }
}

#[test]
fn specs_name_mixes_and_kinds_and_bad_ones_are_refused_with_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/request-kinds.yaml"
    ))
    .unwrap();
    let validate = |text: &str| {
        let p = dir.path().join("spec.yaml");
        std::fs::write(&p, text).unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/tools.json"), "[]").unwrap();
        Command::new(env!("CARGO_BIN_EXE_yardstick"))
            .env("NO_COLOR", "1")
            .args(["validate", p.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let o = validate(&example);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (from, to, says) in [
        (
            "          api: chat\n",
            "          api: completions\n",
            "target API is not `chat`",
        ),
        (
            "{name: lora-sql, weight: 0.1",
            "{name: lora-sql, weight: 0",
            "weight` must be a number above 0",
        ),
        (
            "{name: lora-sql, weight: 0.1",
            "{name: lora-support, weight: 0.1",
            "named twice",
        ),
        (
            "slo: {ttftMs: 800}",
            "slo: {ttftMs: -5}",
            "slo.ttftMs is -5",
        ),
        (
            "          - {kind: tool-call, weight: 0.4}\n",
            "",
            "`tools` describes the answers of `tool-call` requests",
        ),
        (
            "        tools: data/tools.json",
            "        tools: data/nope.json",
            "tools `data/nope.json` does not exist",
        ),
        (
            "          api: chat\n",
            "          api: chat\n          model: sim-llama\n",
            "`target.model` and `target.models` both",
        ),
        (
            "        tools: data/tools.json",
            "        tools: data/tools.json\n        images: 8x8",
            "must be 16 to 4096 pixels, got 8",
        ),
    ] {
        assert!(example.contains(from), "{from}");
        let o = validate(&example.replacen(from, to, 1));
        let err =
            String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(2), "{says}: {err}");
        assert!(err.contains(says), "{says}: {err}");
        // Every error names its place in the file.
        assert!(err.contains("spec.yaml:"), "{err}");
    }
    // `run` reads the tools before any work: an empty array is refused, exit 2, nothing run.
    let p = dir.path().join("spec.yaml");
    std::fs::write(&p, &example).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args(["run", p.to_str().unwrap(), "--store"])
        .arg(dir.path().join("store"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("non-empty array"), "{err}");
    assert!(!err.contains("[1/3]"), "{err}");
}
