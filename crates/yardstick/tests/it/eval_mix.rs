//! Accuracy under load: `yardstick bench serve --eval-mix TASKS:SHARE` against `yardstick sim
//! --answers TASK`, whose answer oracle logs, request by request, whether it answered right
//! (`oracle`) — and with `--wrong-when-busy N` answers wrong whenever more than N requests are in
//! the server. The client's grade of every item must be the server's truth, and its accuracy per
//! load level must find the fall the server was told to have.

use std::path::Path;

use serde_json::Value;

use crate::common::{Sim, bench_serve_json, serve_doc, yardstick};

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The simulator's verdict per request id: `Some(true)` answered right, `Some(false)` wrong,
/// `None` a prompt not in its table.
fn oracle_log(log: &Path) -> std::collections::HashMap<String, Option<bool>> {
    crate::common::sim_log_by_id(log)
        .into_iter()
        .map(|(id, v)| (id, v["oracle"].as_str().map(|o| o == "right")))
        .collect()
}

fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_grade_is_the_servers_truth_streamed_not_streamed_and_completions() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sim.jsonl");
    // 70 % of the table's prompts answered right (chosen by their hash), the rest filler.
    let sim = Sim::start(&[
        "--ttft-ms",
        "2",
        "--itl-ms",
        "1",
        "--answers",
        "arith",
        "--answers",
        "extract",
        "--correct-fraction",
        "0.7",
        "--log",
        log.to_str().unwrap(),
    ]);
    for (name, extra, n) in [
        ("stream", &[][..], 300u64),
        ("whole", &["--no-stream"][..], 120),
        ("completions", &["--api", "completions"][..], 120),
    ] {
        let out = dir.path().join(name);
        let n_s = n.to_string();
        let mut args = vec![
            "--eval-mix",
            "arith,extract:0.4",
            // Filler of 8 tokens never contains an answer (16 would reach extract-11's "green").
            "--eval-max-tokens",
            "8",
            "--scenario",
            "D(20,16)",
            "--concurrency",
            "4",
            "--max-requests",
            &n_s,
            "--max-duration",
            "60s",
            "--slo-ttft-ms",
            "1000",
            "--output",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let doc = serve_doc(&bench_serve_json(&sim.url, &args));
        let p = &doc["points"][0];
        assert_eq!(p["requests"]["failed"].as_u64(), Some(0), "{p}");
        let a = &p["eval_mix"];
        let completed = a["completed"].as_u64().unwrap();
        let correct = a["correct"].as_u64().unwrap();
        assert_eq!(p["correct"].as_u64(), Some(correct), "{p}");
        assert_eq!(p["accuracy"], a["accuracy"], "{p}");
        assert_eq!(p["accuracy_ci"]["lo"], a["ci95"][0], "{p}");
        // About 40 % of the requests are eval items.
        let share = completed as f64 / n as f64;
        assert!((share - 0.4).abs() < 0.12, "{name}: share {share}");
        let acc = f(&a["accuracy"]);
        let [lo, hi] = [f(&a["ci95"][0]), f(&a["ci95"][1])];
        eprintln!("{name}: accuracy {acc:.3} [{lo:.3}, {hi:.3}] of {completed}");
        assert!(lo <= acc && acc <= hi && lo > 0.0 && hi < 1.0, "{a}");
        let tasks: Vec<&str> = a["per_task"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(tasks, ["arith", "extract"], "{a}");
        let first_wrong = a["per_task"]["arith"]["first_wrong"].as_str().unwrap_or("");
        assert!(
            first_wrong.is_empty() || first_wrong.starts_with("arith/arith-"),
            "{first_wrong}"
        );
        // Request by request, the grade is the server's truth, and plain requests are not
        // graded (their prompts are not in the table).
        let truth = oracle_log(&log);
        let mut graded = 0;
        let mut right = 0;
        for r in records(&out).iter().filter(|r| r["warmup"] != true) {
            let id = r["request_id"].as_str().unwrap();
            let verdict = *truth.get(id).unwrap_or_else(|| panic!("{id} not in log"));
            if r["kind"] == "eval" {
                let task = r["eval_task"].as_str().unwrap();
                assert!(task == "arith" || task == "extract", "{r}");
                let v = verdict.unwrap_or_else(|| panic!("{name}: not an oracle prompt: {r}"));
                assert_eq!(r["valid"] == true, v, "{name}: {r}");
                graded += 1;
                right += u64::from(v);
            } else {
                assert!(verdict.is_none() && r.get("valid").is_none(), "{r}");
            }
        }
        assert_eq!((graded, right), (completed, correct), "{name}");
        // Quality goodput counts only correct answers within the SLO.
        let q = f(&p["quality_goodput"]);
        let g = f(&p["goodput"]);
        assert!(
            q < g && q > 0.4 * g,
            "{name}: quality goodput {q} vs goodput {g}"
        );
        // The eval items are a kind of their own in per_kind.
        assert_eq!(p["per_kind"]["eval"]["completed"].as_u64(), Some(completed));
        assert!(p.get("valid_rate").is_none(), "no structured kind: {p}");
    }
}

#[test]
fn accuracy_falls_where_the_server_gets_busy_and_the_intervals_say_so() {
    // Right while at most 2 other requests are in the server; wrong beyond.
    let sim = Sim::start(&[
        "--ttft-ms",
        "5",
        "--itl-ms",
        "2",
        "--answers",
        "arith",
        "--wrong-when-busy",
        "2",
    ]);
    let doc = serve_doc(&bench_serve_json(
        &sim.url,
        &[
            "--eval-mix",
            "arith:0.5",
            "--eval-max-tokens",
            "8",
            "--scenario",
            "D(20,8)",
            "--concurrency",
            "1,16",
            "--max-requests",
            "160",
            "--max-duration",
            "60s",
        ],
    ));
    let points = doc["points"].as_array().unwrap();
    let acc: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|p| {
            (
                f(&p["accuracy"]),
                f(&p["accuracy_ci"]["lo"]),
                f(&p["accuracy_ci"]["hi"]),
            )
        })
        .collect();
    eprintln!("accuracy by concurrency 1, 16: {acc:?}");
    assert_eq!(acc[0].0, 1.0, "alone, every item is answered right");
    assert!(acc[1].0 < 0.3, "{acc:?}");
    assert!(acc[1].2 < acc[0].1, "the intervals do not overlap: {acc:?}");
    // The gate's accuracy figures are catalogued per point.
    for p in points {
        assert!(
            p["correct"].is_u64() && p["eval_mix"]["per_task"]["arith"].is_object(),
            "{p}"
        );
    }

    // The human summary says it in words.
    let o = yardstick()
        .args(["bench", "serve", "--url", &sim.url, "--model", "m"])
        .args(["--eval-mix", "arith:0.5", "--scenario", "D(20,8)"])
        .args(["--concurrency", "1", "--max-requests", "20"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("accuracy under load: 100.0 %"), "{text}");
}

#[test]
fn bad_eval_mixes_exit_2_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let bad_task = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad_task,
        "{\"id\": \"a\", \"prompt\": \"x\", \"references\": [\"y\"], \"scorer\": \"exact\"}\n{oops\n",
    )
    .unwrap();
    let bad = bad_task.to_str().unwrap().to_string() + ":0.5";
    for (args, says) in [
        (&["--eval-mix", "arith"][..], "no `:SHARE`"),
        (&["--eval-mix", "arith:0"], "in (0, 1]"),
        (&["--eval-mix", "nope:0.2"], "unknown task `nope`"),
        (&["--eval-mix", &bad], "bad.jsonl:2"),
        (&["--eval-mix", "arith,arith:0.2"], "named twice"),
        (
            &["--eval-mix", "arith:0.2", "--eval-max-tokens", "0"],
            "at least 1",
        ),
        (
            &[
                "--eval-mix",
                "arith:0.2",
                "--api",
                "embeddings",
                "--scenario",
                "E(8)",
            ],
            "API is embeddings",
        ),
        (&["--eval-mix", "arith:0.2", "--turns", "2"], "not sessions"),
        (&["--kind", "eval"], "--eval-mix TASKS:SHARE"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--max-requests", "1"]);
        let o = yardstick()
            .args([
                "bench",
                "serve",
                "--url",
                "http://127.0.0.1:9",
                "--model",
                "m",
            ])
            .args(&all)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_spec_mixes_eval_items_into_a_serve_layer_and_stores_the_accuracy() {
    let sim = Sim::start(&["--ttft-ms", "2", "--itl-ms", "1", "--answers", "arith"]);
    let dir = tempfile::tempdir().unwrap();
    // A task file of the user's beside the spec: two items the simulator does not know.
    std::fs::create_dir_all(dir.path().join("tasks")).unwrap();
    std::fs::write(
        dir.path().join("tasks/mine.jsonl"),
        "{\"id\": \"m1\", \"prompt\": \"Say yes.\", \"references\": [\"yes\"], \"scorer\": \"exact\"}\n\
         {\"id\": \"m2\", \"prompt\": \"Say no.\", \"references\": [\"no\"], \"scorer\": \"exact\"}\n",
    )
    .unwrap();
    let spec = crate::common::layered_spec(
        "evalmix",
        &format!(
            "    component:\n      - kind: serve\n        \
             target: {{url: \"{url}\", api: chat, model: m}}\n        scenarios: [\"D(16,8)\"]\n        \
             load: {{mode: concurrency, values: [2]}}\n        stop: {{maxRequests: 60}}\n        \
             evalMix: {{tasks: [arith, tasks/mine.jsonl], share: 0.5, maxTokens: 8}}\n",
            url = sim.url
        ),
    );
    let p = dir.path().join("spec.yaml");
    std::fs::write(&p, &spec).unwrap();
    let store = dir.path().join("store");
    let o = crate::common::run_spec(&p, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The point's figures include the accuracy: arith right, the user's items wrong.
    let replicates = crate::common::files_under(&store, "json")
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("/results/"))
        .collect::<Vec<_>>();
    assert_eq!(replicates.len(), 3, "{replicates:?}");
    let text = std::fs::read_to_string(&replicates[0]).unwrap();
    assert!(text.contains("\"accuracy\""), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let found = find_key(&v, "per_task").expect("per_task in the summary");
    let arith = f(&found["arith"]["accuracy"]);
    let mine = f(&found["mine"]["accuracy"]);
    assert_eq!((arith, mine), (1.0, 0.0), "{found}");
    // The user's task file is stored with the run.
    let stored = crate::common::files_under(&store, "jsonl");
    assert!(
        stored
            .iter()
            .any(|f| f.ends_with("inputs/target/tasks_mine.jsonl")),
        "{stored:?}"
    );

    // Bad mixes are refused at their place before any work.
    crate::common::assert_validate_refuses(
        &p,
        &spec,
        &[
            ("share: 0.5", "share: 1.5", "in (0, 1]"),
            (
                "tasks: [arith, tasks/mine.jsonl]",
                "tasks: [arth]",
                "did you mean `arith`",
            ),
            ("tasks/mine.jsonl", "tasks/none.jsonl", "does not exist"),
            ("api: chat", "api: embeddings", "target API is `embeddings`"),
        ],
    );
}

/// The first value under `key` anywhere in `v`.
fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m
            .get(key)
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}
