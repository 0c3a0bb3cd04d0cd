//! Multi-turn sessions against the simulator with prefix caching and a reasoning model: each
//! turn sends the conversation so far after the think time, the simulator's prefix cache makes
//! later turns' time to first token depend on the uncached part only, and yardstick sees it;
//! reasoning tokens are counted apart from the answer, with the time to the first answer token.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{Sim, json, yardstick};

/// The simulator as these tests run it: 20 ms plus 0.5 ms per uncached prompt token to the
/// first token, 5 ms between tokens, the first 4 output tokens reasoning.
fn sim(cache: bool, log: &std::path::Path) -> Sim {
    let mut args = vec![
        "--ttft-ms",
        "20",
        "--ttft-per-token-ms",
        "0.5",
        "--itl-ms",
        "5",
        "--reasoning-tokens",
        "4",
        "--log",
        log.to_str().unwrap(),
    ];
    if cache {
        args.extend(["--prefix-cache-tokens", "100000"]);
    }
    Sim::start(&args)
}

fn serve(sim: &Sim, out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    yardstick()
        .args([
            "--json", "bench", "serve", "--url", &sim.url, "--model", "m",
        ])
        .args(["--scenario", "D(64,16)", "--concurrency", "2"])
        .args(["--server-metrics", "off", "--output"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn turns_resend_the_conversation_and_the_prefix_cache_shortens_later_turns() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    let s = sim(true, &log);
    let flags = [
        "--turns",
        "3",
        "--think-time",
        "100",
        "--shared-prefix",
        "256",
        "--max-requests",
        "6",
    ];
    let out = dir.path().join("cached");
    let o = serve(&s, &out, &flags);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    crate::schema_cli::assert_conforms("bench-serve", &v);
    let p = &v["points"][0];
    assert_eq!(
        p["scenario"], "D(64,16) sessions(turns=3,think=100,prefix=256)",
        "{p}"
    );
    assert_eq!(
        p["sessions"],
        serde_json::json!({"completed": 6, "failed": 0, "cut": 0, "turns": 18}),
        "{p}"
    );
    assert_eq!(p["requests"]["completed"], 18);

    // Each turn's prompt is the whole conversation so far, by the server's own count: the
    // shared 256-token system prompt, every question (64) and every answer without its
    // reasoning (16 output tokens, 4 of them reasoning: 12).
    let turns = p["turns"].as_array().unwrap();
    let prompts: Vec<f64> = turns
        .iter()
        .map(|t| t["prompt_tokens_mean"].as_f64().unwrap())
        .collect();
    assert_eq!(prompts, [320.0, 396.0, 472.0], "{p}");

    // The server's log: every request's TTFT is 20 ms + 0.5 ms per prompt token it had not
    // cached, and from the second turn on it had cached at least the previous turn's whole
    // blocks.
    let logged = lines(&log);
    assert_eq!(logged.len(), 18);
    for r in &logged {
        let prompt = r["prompt_tokens"].as_f64().unwrap();
        let cached = r["cached_tokens"].as_f64().unwrap();
        let ttft = r["ttft_ms"].as_f64().unwrap();
        let model = 20.0 + 0.5 * (prompt - cached);
        assert!(ttft >= model - 0.5 && ttft < model + 15.0, "{r}");
        if prompt > 320.0 {
            let previous = prompt - 76.0;
            assert!(cached >= (previous / 16.0).floor() * 16.0, "{r}");
        }
    }

    // The client sees the same: the server's cached counts in every response's usage, and a
    // later turn about as fast as a first one although its prompt is longer.
    let records = lines(&out.join("requests.jsonl"));
    let by_turn = |t: u64| -> Vec<&Value> { records.iter().filter(|r| r["turn"] == t).collect() };
    assert_eq!(by_turn(2).len(), 6);
    for r in by_turn(2) {
        assert!(r["cached_prompt_tokens"].as_u64().unwrap() >= 384, "{r}");
        assert_eq!(r["prompt_tokens"], r["planned_input_tokens"], "{r}");
    }
    let rate = p["prompt_cache_hit_rate"].as_f64().unwrap();
    assert!(rate > 0.7, "{p}");
    let later = p["later_turn_ttft_ms"]["p50"].as_f64().unwrap();
    assert!(
        later < 100.0,
        "without the cache it would be 20 + 0.5 × 396 ≈ 218 ms: {p}"
    );

    // Think time: each later turn is scheduled 100 ms after the previous answer completed,
    // and its latencies count from then.
    let mut sessions: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in &records {
        sessions
            .entry(r["session"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    assert_eq!(sessions.len(), 6);
    for turns in sessions.values() {
        for w in turns.windows(2) {
            let gap =
                (w[1]["scheduled_ns"].as_f64().unwrap() - w[0]["done_ns"].as_f64().unwrap()) / 1e6;
            assert!((99.0..160.0).contains(&gap), "think gap {gap} ms");
        }
    }
    let d = p["session_duration_s"]["p50"].as_f64().unwrap();
    assert!(d > 0.3, "three turns and two 100 ms thinks: {d} s");

    // Reasoning: 4 tokens per answer counted apart, and the first answer token 4 inter-token
    // gaps (20 ms) after the first token.
    assert_eq!(p["reasoning_tokens"]["mean"], 4.0, "{p}");
    let lag = p["answer_ttft_ms"]["p50"].as_f64().unwrap() - p["ttft_ms"]["p50"].as_f64().unwrap();
    assert!((15.0..40.0).contains(&lag), "answer TTFT − TTFT = {lag} ms");

    // The same sessions without the prefix cache: later turns pay for the whole prompt.
    let log2 = dir.path().join("sim2.jsonl");
    let cold = sim(false, &log2);
    let o = serve(&cold, &dir.path().join("cold"), &flags);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let q = &json(&o)["points"][0];
    assert!(q.get("prompt_cache_hit_rate").is_none(), "{q}");
    let cold_later = q["later_turn_ttft_ms"]["p50"].as_f64().unwrap();
    assert!(
        cold_later > later + 100.0,
        "later turns: {cold_later} ms uncached vs {later} ms cached"
    );
}

#[test]
fn conversations_come_from_a_dataset_with_their_own_turns_and_delays() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("turns.jsonl");
    std::fs::write(
        &data,
        "{\"session_id\": \"a\", \"text\": \"one two three four\", \"output_tokens\": 3}\n\
         {\"session_id\": \"a\", \"text\": \"five six\", \"output_tokens\": 2, \"delay\": 50}\n\
         {\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hello there\"}, {\"role\": \"assistant\", \"content\": \"hi\"}]}\n",
    )
    .unwrap();
    let s = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let o = yardstick()
        .args(["--json", "bench", "serve", "--url", &s.url, "--model", "m"])
        .arg("--dataset")
        .arg(&data)
        .args([
            "--sessions",
            "--max-requests",
            "10",
            "--server-metrics",
            "off",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = &json(&o)["points"][0];
    let c = &p["sessions"];
    assert_eq!(c["completed"], 10, "{p}");
    // Session `a` has two turns, the other one: 10 sessions drawn from the two.
    let turns = c["turns"].as_u64().unwrap();
    assert!((11..20).contains(&turns), "{p}");
    let t = p["turns"].as_array().unwrap();
    // Turn 2 exists only in `a`: 4 words, the 3-token answer, then 2 words.
    assert_eq!(t[1]["prompt_tokens_mean"], 9.0, "{p}");
}

#[test]
fn session_flags_refuse_what_cannot_work() {
    let s = Sim::start(&[]);
    for (args, needle) in [
        (vec!["--turns", "0"], "--turns"),
        (vec!["--think-time", "soon"], "exp(1000)"),
        (vec!["--turns", "2", "--api", "completions"], "--api chat"),
    ] {
        let o = yardstick()
            .args(["bench", "serve", "--url", &s.url, "--model", "m"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_spec_serve_layer_runs_sessions_and_stores_their_facts() {
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--prefix-cache-tokens",
        "50000",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let spec = dir.path().join("sessions.yaml");
    std::fs::write(
        dir.path().join("convs.jsonl"),
        "{\"session_id\": 1, \"text\": \"a b c\"}\n{\"session_id\": 1, \"text\": \"d e\"}\n",
    )
    .unwrap();
    std::fs::write(
        &spec,
        crate::common::layered_spec(
            "sessions",
            &format!(
                "    component:
      - kind: serve
        target: {{url: \"{}\", api: chat, model: m}}
        scenarios: [\"D(16,8)\"]
        load: {{mode: concurrency, values: [2]}}
        sessions: {{turns: 2-3, thinkTime: \"exp(20)\", sharedPrefix: 64}}
        stop: {{maxRequests: 6}}
      - kind: serve
        target: {{url: \"{}\", api: chat, model: m}}
        scenarios: [\"D(16,8)\"]
        load: {{mode: concurrency, values: [1]}}
        sessions: {{dataset: convs.jsonl}}
        stop: {{maxRequests: 2}}
",
                sim.url, sim.url
            ),
        ),
    )
    .unwrap();
    let o = crate::common::run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["status"], "complete", "{v}");
    let m = &v["summary"]["points"][0]["metrics"];
    assert_eq!(m["sessions"]["completed"]["mean"], 6.0, "{m}");
    // The conversations file: one session of two turns, stored with the run.
    let d = &v["summary"]["points"][1]["metrics"];
    assert_eq!(d["sessions"]["completed"]["mean"], 2.0, "{d}");
    assert_eq!(d["sessions"]["turns"]["mean"], 4.0, "{d}");
    let run_dir = std::path::Path::new(v["dir"].as_str().unwrap());
    assert!(
        crate::common::files_under(&run_dir.join("inputs"), "jsonl")
            .iter()
            .any(|f| f.to_string_lossy().contains("convs")),
        "the conversations are stored with the run"
    );
    assert_eq!(m["sessions"]["completed"]["n"], 3, "{m}");
    for k in [
        "session_duration_s",
        "session_throughput",
        "first_turn_ttft_ms",
        "later_turn_ttft_ms",
        "prompt_cache_hit_rate",
    ] {
        assert!(m.get(k).is_some(), "{k} missing: {m}");
    }
    // The report draws TTFT by turn from every replicate's turns.
    let html = dir.path().join("r.html");
    let r = yardstick()
        .args(["--json", "report", v["run_id"].as_str().unwrap(), "--html"])
        .arg(&html)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let turns = json(&r)["report"]["run"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["work"]["sessions"]["sharedPrefix"] == 64)
        .unwrap()["turns"]
        .clone();
    let first: Vec<&Value> = turns
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["turn"] == 1)
        .collect();
    assert_eq!(first.len(), 3, "turn 1 of each replicate: {turns}");
    // 64 shared tokens and a 16-token question.
    assert_eq!(first[0]["prompt_tokens"], 80.0, "{turns}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Sessions: TTFT by turn"), "no turns section");
    // A session layer that cannot work is refused before anything runs.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("api: chat", "api: completions"),
    )
    .unwrap();
    let o = crate::common::run_spec(&bad, &store, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("sessions are chat conversations"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
