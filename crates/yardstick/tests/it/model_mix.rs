//! Model mixes: `yardstick bench serve --model NAME=WEIGHT` (repeated) against `yardstick sim`
//! serving a base model and LoRA adapters with one adapter slot: every model is reported beside
//! the whole, and the adapters' time to first token carries the simulated adapter loads while
//! the base model's does not.

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::Sim;

const TTFT_MS: f64 = 10.0;
const LOAD_MS: f64 = 40.0;

fn bench(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args(["bench", "serve", "--url", url])
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

const MIX: [&str; 8] = [
    "--model",
    "base=0.4",
    "--model",
    "lora-a=0.2",
    "--model",
    "lora-b=0.2",
    "--model",
    "lora-c=0.2",
];

#[test]
fn a_base_and_three_adapters_in_one_slot_report_per_model_with_the_loads_in_ttft() {
    let sim = Sim::start(&[
        "--model",
        "base",
        "--ttft-ms",
        "10",
        "--itl-ms",
        "2",
        "--adapters",
        "3",
        "--max-loaded-adapters",
        "1",
        "--adapter-load-ms",
        "40",
    ]);
    let mut args: Vec<&str> = MIX.to_vec();
    args.extend([
        "--scenario",
        "D(10,5)",
        "--concurrency",
        "4",
        "--max-requests",
        "160",
        "--max-duration",
        "60s",
        "--slo-ttft-ms",
        "45",
    ]);
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args(["--json", "bench", "serve", "--url", &sim.url])
        .args(&args)
        .output()
        .unwrap();
    let doc = json_of(&o);
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["failed"].as_u64(), Some(0), "{p}");
    let per = p["per_model"].as_object().expect("per_model");
    let names: Vec<&str> = per.keys().map(String::as_str).collect();
    assert_eq!(names, ["base", "lora-a", "lora-b", "lora-c"]);
    let total: u64 = per.values().map(|m| m["requests"].as_u64().unwrap()).sum();
    assert_eq!(total, p["requests"]["completed"].as_u64().unwrap());
    // Roughly the weights (160 draws: wide bounds).
    let base = &per["base"];
    assert!(
        (40..=90).contains(&base["requests"].as_u64().unwrap()),
        "{base}"
    );
    let tput: f64 = per.values().map(|m| f(&m["output_token_throughput"])).sum();
    assert!((tput - f(&p["output_token_throughput"])).abs() < 1e-6 * tput.max(1.0));
    let (b50, b99) = (f(&base["ttft_ms"]["p50"]), f(&base["ttft_ms"]["p99"]));
    eprintln!("base ttft p50 {b50:.2} p99 {b99:.2}");
    // The base model never waits for an adapter: its TTFT is the sim's, well below a load.
    assert!(
        (TTFT_MS..TTFT_MS + LOAD_MS).contains(&b99),
        "base p99 {b99}"
    );
    assert_eq!(f(&base["slo_attainment"]), 1.0, "{base}");
    for name in ["lora-a", "lora-b", "lora-c"] {
        let m = &per[name];
        let (a50, a99) = (f(&m["ttft_ms"]["p50"]), f(&m["ttft_ms"]["p99"]));
        eprintln!("{name} ttft p50 {a50:.2} p99 {a99:.2}");
        // With one slot and three adapters most requests load theirs: the p99 carries a
        // whole load (timers are never early; a busy machine adds to both).
        assert!(
            (LOAD_MS - 5.0..LOAD_MS + 60.0).contains(&(a99 - b99)),
            "{name}: p99 {a99} vs the base's {b99}"
        );
        assert!(a99 >= TTFT_MS + LOAD_MS, "{name}: p99 {a99}");
        for k in ["itl_ms_p50", "tpot_ms_p50", "e2e_ms_p50"] {
            assert!(m[k].is_number(), "{name}.{k}: {m}");
        }
        assert!(f(&m["slo_attainment"]) < 1.0, "{name}: {m}");
    }

    // The human summary has the per-model table under the point.
    let mut args: Vec<&str> = MIX.to_vec();
    args.extend(["--scenario", "D(10,5)", "--max-requests", "12"]);
    let o = bench(&sim.url, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let header = text
        .lines()
        .position(|l| l.trim_start().starts_with("model") && l.contains("ttft p99"))
        .unwrap_or_else(|| panic!("no per-model table:\n{text}"));
    assert!(
        text.lines()
            .skip(header + 1)
            .any(|l| l.trim_start().starts_with("base ")),
        "{text}"
    );

    // A single model keeps today's output: no per-model block.
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args([
            "--json", "bench", "serve", "--url", &sim.url, "--model", "base",
        ])
        .args(["--scenario", "D(10,5)", "--max-requests", "4"])
        .output()
        .unwrap();
    let doc = json_of(&o);
    assert!(doc["points"][0].get("per_model").is_none(), "{doc}");
    assert_eq!(doc["model"], "base");
}

#[test]
fn bad_model_mixes_exit_2_with_a_hint() {
    for (bad, says) in [
        (&["--model", "a=0", "--model", "b"][..], "above 0"),
        (&["--model", "a=-1"], "above 0"),
        (&["--model", "a=lots", "--model", "b=1"], "not a number"),
        (&["--model", "a=1", "--model", "a=2"], "named twice"),
    ] {
        let mut args = bad.to_vec();
        args.extend(["--max-requests", "1"]);
        let o = bench("http://127.0.0.1:9", &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(
            err.contains(says) && err.contains("hint:"),
            "{bad:?}: {err}"
        );
    }
    // Adapter flags without adapters are refused by the simulator.
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args([
            "sim",
            "--port",
            "0",
            "--adapters",
            "0",
            "--adapter-load-ms",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn models_from_a_file_with_zipf_weights_put_most_requests_on_the_first() {
    let sim = Sim::start(&["--model", "base", "--ttft-ms", "1", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("adapters.txt");
    let names: Vec<String> = (0..50).map(|k| format!("lora-{k:02}")).collect();
    std::fs::write(&file, format!("# fifty adapters\n\n{}\n", names.join("\n"))).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args(["--json", "bench", "serve", "--url", &sim.url])
        .args([
            "--models-from",
            file.to_str().unwrap(),
            "--model-zipf",
            "1.2",
        ])
        .args([
            "--scenario",
            "D(5,2)",
            "--concurrency",
            "8",
            "--max-requests",
            "400",
        ])
        .output()
        .unwrap();
    let doc = json_of(&o);
    assert!(
        doc["model"].as_str().unwrap().starts_with("50 models from"),
        "{}",
        doc["model"]
    );
    let per = doc["points"][0]["per_model"].as_object().unwrap();
    let n = |name: &str| per.get(name).map_or(0, |m| m["requests"].as_u64().unwrap());
    // Zipf(1.2) over 50: the first takes 1/H ≈ 28 % of requests, the second 1/2^1.2 of that;
    // the first five together about 62 %, far more than the other 45 (about 4.8 sd).
    let first = n("lora-00");
    assert!((80..=160).contains(&first), "{first}");
    assert!(n("lora-01") < first && n("lora-01") > first / 4, "{per:?}");
    let head: u64 = (0..5).map(|k| n(&names[k])).sum();
    assert!(head > 400 - head, "head {head}");
    // Bad input exits 2.
    std::fs::write(&file, "# nothing\n").unwrap();
    for (args, says) in [
        (
            vec!["--models-from", file.to_str().unwrap()],
            "no model names",
        ),
        (
            vec!["--models-from", "/nonexistent/x.txt"],
            "--models-from: /nonexistent/x.txt",
        ),
    ] {
        let o = bench("http://127.0.0.1:9", &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_model_held_to_its_own_slo_is_counted_by_it_and_others_by_the_points() {
    // Every first token takes 30 ms: the point's 10 ms objective fails every request, the
    // 100 ms of model `b` passes all of b's.
    let sim = Sim::start(&["--ttft-ms", "30", "--itl-ms", "1"]);
    let doc = json_of(&bench(
        &sim.url,
        &[
            "--json",
            "--model",
            "a=0.5",
            "--model",
            "b=0.5",
            "--scenario",
            "D(8,4)",
            "--concurrency",
            "4",
            "--max-requests",
            "80",
            "--slo-ttft-ms",
            "10",
            "--model-slo",
            "b:ttft=100,e2e=1000",
        ],
    ));
    let p = &doc["points"][0];
    let (a, b) = (&p["per_model"]["a"], &p["per_model"]["b"]);
    assert_eq!(f(&a["slo_attainment"]), 0.0, "{a}");
    assert_eq!(f(&b["slo_attainment"]), 1.0, "{b}");
    assert!(a.get("slo").is_none(), "{a}");
    assert_eq!(f(&b["slo"]["ttft_ms"]), 100.0, "{b}");
    assert_eq!(f(&b["slo"]["e2e_ms"]), 1000.0, "{b}");
    // Goodput counts b's requests alone: its share of the throughput.
    let goodput = f(&p["goodput"]);
    let rps = f(&p["request_throughput"]);
    let b_share = b["completed"].as_u64().unwrap() as f64 / 80.0;
    assert!(
        (goodput / rps - b_share).abs() < 0.02,
        "goodput {goodput} of {rps} req/s, b's share {b_share}"
    );
    // The objectives travel with the results.
    assert_eq!(
        f(&doc["slo"]["per_model"]["b"]["ttft_ms"]),
        100.0,
        "{}",
        doc["slo"]
    );

    // The human table says which model has its own.
    let o = bench(
        &sim.url,
        &[
            "--model",
            "a=0.5",
            "--model",
            "b=0.5",
            "--max-requests",
            "8",
            "--slo-ttft-ms",
            "10",
            "--model-slo",
            "b:ttft=100",
        ],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("slo of b: ttft ≤ 100 ms"), "{text}");

    // Bad objectives exit 2 with a hint.
    for (bad, says) in [
        ("c:ttft=5", "`c` is not one the run sends"),
        ("b:speed=5", "`speed` is not an objective"),
        ("b:ttft=-1", "positive number"),
        ("b:ttft=5,ttft=6", "given twice"),
        ("b", "expected MODEL:ttft=MS"),
    ] {
        let o = bench(
            "http://127.0.0.1:9",
            &[
                "--model",
                "a",
                "--model",
                "b",
                "--model-slo",
                bad,
                "--max-requests",
                "1",
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(says), "{bad}: {err}");
    }
}

/// A BurstGPT trace names a model per request: `--trace-models` sends each to it, renamed by
/// `--trace-model-map`, and reports them per model. The simulator serves `small` and one adapter
/// slot for any other name (a second one is answered 404): with the map every request succeeds,
/// without it production's two names reach the server and the second fails.
#[test]
fn a_traces_model_column_is_the_mix_renamed_to_the_served_models() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("burst.csv");
    let mut text =
        String::from("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n");
    for i in 0..30 {
        let model = match i {
            29 => "",
            _ if i % 3 == 2 => "GPT-4",
            _ => "ChatGPT",
        };
        text.push_str(&format!(
            "{:.2},{model},16,4,20,API log\n",
            f64::from(i) * 0.02
        ));
    }
    std::fs::write(&trace, text).unwrap();
    let sim = Sim::start(&[
        "--model",
        "small",
        "--adapters",
        "1",
        "--ttft-ms",
        "2",
        "--itl-ms",
        "1",
    ]);
    let t = trace.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--json",
            "--model",
            "small",
            "--trace",
            t,
            "--trace-format",
            "burstgpt",
            "--trace-models",
        ];
        args.extend(extra);
        bench(&sim.url, &args)
    };
    let o = run(&[
        "--trace-model-map",
        "GPT-4=big",
        "--trace-model-map",
        "ChatGPT=small",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("trace models: small 67 %, big 30 %"), "{err}");
    let doc = json_of(&o);
    let p = &doc["points"][0];
    assert_eq!(p["requests"]["failed"].as_u64(), Some(0), "{p}");
    let per = &p["per_model"];
    // 20 ChatGPT lines and the one without a model go to `small`; 9 GPT-4 lines to `big`.
    assert_eq!(per["small"]["requests"].as_u64(), Some(21), "{per}");
    assert_eq!(per["big"]["requests"].as_u64(), Some(9), "{per}");
    assert_eq!(per.as_object().unwrap().len(), 2, "{per}");

    // Unmapped, production's names reach the server: one takes the adapter slot, the other is
    // not served.
    let doc = json_of(&run(&[]));
    let p = &doc["points"][0];
    assert!(p["requests"]["failed"].as_u64().unwrap() > 0, "{p}");

    // A map entry the trace never names, a map without --trace-models, a trace without models.
    let o = run(&["--trace-model-map", "GPT-5=big"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("renames `GPT-5`, which no request names"));
    let o = bench(
        &sim.url,
        &[
            "--model",
            "small",
            "--trace",
            t,
            "--trace-format",
            "burstgpt",
            "--trace-model-map",
            "a=b",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(
        &plain,
        "{\"at_ms\": 0, \"input_tokens\": 8, \"output_tokens\": 2}\n",
    )
    .unwrap();
    let o = bench(
        &sim.url,
        &[
            "--model",
            "small",
            "--trace",
            plain.to_str().unwrap(),
            "--trace-models",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no request names a model"));
}

/// `target.modelsFrom` with `modelZipf` in a spec: the names are read before any work, stored
/// with the run, and the requests spread over them as `--models-from` does.
#[test]
fn a_spec_reads_its_models_from_a_file_with_zipf_weights() {
    let sim = Sim::start(&["--ttft-ms", "1", "--itl-ms", "1"]);
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..20).map(|k| format!("lora-{k:02}")).collect();
    std::fs::write(dir.path().join("adapters.txt"), names.join("\n")).unwrap();
    let spec = crate::common::layered_spec(
        "zipf",
        &format!(
            "    component:\n      - kind: serve\n        target: {{url: \"{}\", api: chat, \
             modelsFrom: adapters.txt, modelZipf: 1.5}}\n        scenarios: [\"D(5,2)\"]\n        \
             load: {{mode: concurrency, values: [1]}}\n        stop: {{maxRequests: 200}}\n",
            sim.url
        ),
    );
    let p = dir.path().join("spec.yaml");
    std::fs::write(&p, &spec).unwrap();
    let store = dir.path().join("store");
    let o = crate::common::run_spec(&p, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stored = crate::common::files_under(&store, "txt");
    assert!(
        stored
            .iter()
            .any(|f| f.ends_with("inputs/target/adapters.txt")),
        "{stored:?}"
    );
    // Every sample row carries its run, point and replicate as columns (join keys).
    let samples = crate::common::files_under(&store, "parquet");
    let sample = samples
        .iter()
        .find(|f| f.to_string_lossy().contains("/samples/") && f.ends_with("r1.parquet"))
        .unwrap_or_else(|| panic!("{samples:?}"));
    let run_id = sample
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .skip_while(|c| c != "runs")
        .nth(1)
        .unwrap();
    let rows = yardstick_store::samples::read_rows(std::fs::read(sample).unwrap()).unwrap();
    assert_eq!(rows.len(), 200, "every measured request is a row");
    for r in &rows {
        assert_eq!(r["run_id"], run_id.as_str(), "{r}");
        assert_eq!(
            r["point_id"], "component.0.serve/D(5,2)/concurrency=1",
            "{r}"
        );
        assert_eq!(r["replicate"], 1, "{r}");
        assert!(
            r["trace_id"].is_string() && r["response_id"].is_string(),
            "{r}"
        );
    }
    // Per replicate: Zipf(1.5) over 20 gives the first name 1/H ≈ 41 % of 200 requests.
    let results: Vec<_> = crate::common::files_under(&store, "json")
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("/results/"))
        .collect();
    assert_eq!(results.len(), 3);
    for r in results {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&r).unwrap()).unwrap();
        let per = v["summary"]["per_model"]
            .as_object()
            .or_else(|| v["per_model"].as_object())
            .unwrap_or_else(|| panic!("per_model in {v}"));
        let first = per["lora-00"]["requests"].as_u64().unwrap();
        assert!((55..=110).contains(&first), "{first} of 200");
        assert!(per.keys().all(|k| names.contains(k)), "{per:?}");
    }
    // Bad ones are refused at their place.
    crate::common::assert_validate_refuses(
        &p,
        &spec,
        &[
            (
                "modelZipf: 1.5",
                "modelZipf: 0",
                "the Zipf exponent is a number above 0",
            ),
            (
                "modelsFrom: adapters.txt",
                "modelsFrom: none.txt",
                "does not exist",
            ),
            (
                "modelsFrom: adapters.txt, ",
                "model: m, modelsFrom: adapters.txt, ",
                "both name",
            ),
            (
                "modelsFrom: adapters.txt, ",
                "model: m, ",
                "`modelZipf` weights the names",
            ),
        ],
    );
}
