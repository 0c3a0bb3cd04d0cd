//! Eval layers in a BenchmarkRun, through the built binary: real HTTP on loopback against
//! `yardstick sim` with its answer oracle (`--answers`, `--correct-fraction`) and its echo
//! log-probability model (`--logprob-scale`), real SQLite. A run stores eval.json and
//! items.jsonl per point × replicate and the facts the gate reads; equal answers PASS the gate,
//! worse answers and a worse perplexity FAIL it (exit 3); bad eval layers are exit 2 with
//! `file:line:col`.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::{self, Sim, json, yardstick};

fn cmd(store: &Path, args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .args(["--store", store.to_str().unwrap()])
        .output()
        .unwrap()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A gating (realism) spec with one eval layer against `url`.
fn spec(url: &str, layer_extra: &str) -> String {
    format!(
        r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: eval-gate
spec:
  mode: realism
  backgroundLoad: {{record: true, description: "test machine"}}
  workload:
    model: sim-llama
    precision: bf16
    sequenceLengths: 128
    batching: continuous
    concurrency: 4
    dataset: {{kind: jsonl, path: bundled probes}}
    correctness: {{policy: eval, tasks: [arith, format]}}
  trials:
    replicates: 3
    warmup: {{requests: 0}}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
  layers:
    component:
      - kind: eval
        target: {{url: "{url}", api: chat, model: sim-llama}}
        tasks: [arith, format]
        perplexity: builtin
        repeat: 2
        maxTokens: 32
        concurrency: 4
        timeout: 20s
{layer_extra}  provenance:
    signing: off
"#
    )
}

/// Runs `text` (written as `<dir>/<name>.yaml`) into `store`; returns the run's JSON outcome.
fn run(store: &Path, name: &str, text: &str) -> Value {
    let path = store.parent().unwrap().join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    let out = yardstick()
        .args(["run", path.to_str().unwrap(), "--store"])
        .arg(store)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::assert_metrics_catalogued(store);
    assert!(common::assert_figures_are_the_summaries(store) > 0);
    json(&out)
}

/// Aggregate facts (replicate -1) of a run as (point, metric, statistic) → (value, n).
fn facts(store: &Path, run_id: &str) -> Vec<(String, String, String, f64, u64)> {
    let q = json(&cmd(
        store,
        &[
            "query",
            &format!(
                "SELECT point_id, metric, statistic, value, n FROM facts WHERE run_id = '{run_id}' \
                 AND replicate = -1 ORDER BY point_id, metric, statistic"
            ),
            "--json",
        ],
    ));
    q["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let get = |i: usize, k: &str| {
                if r.is_array() {
                    r[i].clone()
                } else {
                    r[k].clone()
                }
            };
            (
                get(0, "point_id").as_str().unwrap().to_string(),
                get(1, "metric").as_str().unwrap().to_string(),
                get(2, "statistic").as_str().unwrap().to_string(),
                get(3, "value").as_f64().unwrap(),
                get(4, "n").as_u64().unwrap(),
            )
        })
        .collect()
}

fn fact(all: &[(String, String, String, f64, u64)], point: &str, metric: &str) -> (f64, u64) {
    all.iter()
        .find(|f| f.0 == point && f.1 == metric && f.2 == "value")
        .map(|f| (f.3, f.4))
        .unwrap_or_else(|| panic!("no fact {point} {metric}/value in {all:#?}"))
}

/// The simulator's documented perplexity of the builtin shard, computed here from the text:
/// every word but each paragraph's first has log p = −scale × (0.5 + 0.25 × chars).
fn sim_perplexity(scale: f64) -> (f64, u64) {
    let text = std::fs::read_to_string(repo().join("crates/yardstick-eval/src/shard/measure.txt"))
        .unwrap();
    let (mut sum, mut n) = (0.0, 0u64);
    let mut first = true;
    for line in text.lines() {
        if line.trim().is_empty() {
            first = true;
            continue;
        }
        for w in line.split_whitespace() {
            if first {
                first = false;
                continue;
            }
            sum += scale * (0.5 + 0.25 * w.chars().count() as f64);
            n += 1;
        }
    }
    ((sum / n as f64).exp(), n)
}

#[test]
fn eval_layer_stores_artifacts_and_facts_and_the_gate_catches_worse_answers() {
    let right = Sim::start(&[
        "--answers",
        "arith",
        "--answers",
        "format",
        "--ttft-ms",
        "1",
        "--itl-ms",
        "0",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = run(&store, "a", &spec(&right.url, ""));
    let a_id = a["run_id"].as_str().unwrap().to_string();
    let dir = PathBuf::from(a["dir"].as_str().unwrap());

    // Artifacts: eval.json and items.jsonl per point × replicate, in the manifest.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let listed = manifest.to_string();
    for r in 0..3 {
        for point in ["component.0.eval_arith", "component.0.eval_format"] {
            let base = format!("eval/{point}/r{r}");
            let items = std::fs::read_to_string(dir.join(&base).join("items.jsonl")).unwrap();
            let lines: Vec<Value> = items
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            // every item twice (repeat 2), all correct
            let n = if point.ends_with("arith") { 25 } else { 22 };
            assert_eq!(lines.len(), 2 * n, "{base}");
            assert!(lines.iter().all(|l| l["correct"] == true), "{base}");
            let ev: Value =
                serde_json::from_slice(&std::fs::read(dir.join(&base).join("eval.json")).unwrap())
                    .unwrap();
            assert_eq!(ev["tasks"][0]["n"], n);
            assert!(listed.contains(&format!("{base}/eval.json")), "{base}");
            assert!(listed.contains(&format!("{base}/items.jsonl")), "{base}");
        }
        assert!(
            dir.join(format!("eval/component.0.eval_perplexity/r{r}/eval.json"))
                .is_file()
        );
    }

    // Facts the gate reads: accuracy as a fraction, determinism, perplexity (the sim's known
    // value on the shard), each the mean of 3 replicates.
    let f = facts(&store, &a_id);
    assert_eq!(fact(&f, "component.0.eval/arith", "accuracy"), (1.0, 3));
    assert_eq!(fact(&f, "component.0.eval/format", "accuracy").0, 1.0);
    assert_eq!(fact(&f, "component.0.eval/arith", "determinism").0, 1.0);
    let (want, tokens) = sim_perplexity(1.0);
    let (got, _) = fact(&f, "component.0.eval/perplexity", "perplexity");
    assert!(
        (got - want).abs() < 1e-9 * want,
        "perplexity {got} vs true {want}"
    );
    assert_eq!(
        fact(&f, "component.0.eval/perplexity", "perplexity_tokens").0,
        tokens as f64
    );
    let unit = json(&cmd(
        &store,
        &[
            "query",
            "SELECT DISTINCT unit FROM facts WHERE metric = 'accuracy'",
            "--json",
        ],
    ));
    assert!(unit.to_string().contains("fraction"), "{unit}");

    // summary.json: the eval section, every replicate's accuracy, the Wilson interval.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let evals = summary["eval"].as_array().expect("summary.json has eval");
    assert_eq!(evals.len(), 3);
    assert_eq!(evals[0]["accuracy"], serde_json::json!([1.0, 1.0, 1.0]));
    assert_eq!(evals[0]["replicates_agree"], true);
    let ci = &evals[0]["wilson_ci_first_replicate"];
    assert!(
        ci["lo"].as_f64().unwrap() > 0.8 && ci["hi"].as_f64().unwrap() == 1.0,
        "{ci}"
    );

    // The report shows the accuracy.
    let out = cmd(&store, &["report", &a_id]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("accuracy"), "{text}");

    // Equal answers against the saved baseline: PASS.
    let out = cmd(&store, &["baseline", "save", &a_id]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let b = run(&store, "b", &spec(&right.url, ""));
    let out = cmd(&store, &["gate", b["run_id"].as_str().unwrap(), "--json"]);
    let g = json(&out);
    assert_eq!(out.status.code(), Some(0), "{g}");
    assert_eq!(g["verdict"], "PASS");
    let gated: Vec<&str> = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(
        gated.contains(&"accuracy") && gated.contains(&"perplexity"),
        "{gated:?}"
    );

    // One arith item answered wrong out of 25 (a 4-point drop against a 2-point tolerance):
    // replicates of a deterministic server agree, but 25 items cannot show a 2-point loss, so
    // the gate, pairing the items of both runs, says INCONCLUSIVE (exit 4) instead of crying
    // FAIL, and names the item-level evidence.
    let arith =
        std::fs::read_to_string(repo().join("crates/yardstick-eval/src/probes/arith.jsonl"))
            .unwrap();
    let one_wrong = arith.replacen("\"references\": [\"42\"]", "\"references\": [\"-1\"]", 1);
    assert_ne!(one_wrong, arith);
    let answers = tmp.path().join("one-wrong.jsonl");
    std::fs::write(&answers, one_wrong).unwrap();
    let one = Sim::start(&[
        "--answers",
        answers.to_str().unwrap(),
        "--answers",
        "format",
        "--ttft-ms",
        "1",
        "--itl-ms",
        "0",
    ]);
    let d = run(&store, "d", &spec(&one.url, ""));
    let out = cmd(&store, &["gate", d["run_id"].as_str().unwrap(), "--json"]);
    let g = json(&out);
    assert_eq!(out.status.code(), Some(4), "{g}");
    assert_eq!(g["verdict"], "INCONCLUSIVE");
    let arith_v = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["point"] == "component.0.eval/arith" && m["metric"] == "accuracy")
        .unwrap()
        .clone();
    assert_eq!(arith_v["verdict"], "INCONCLUSIVE", "{arith_v}");
    assert_eq!(arith_v["paired"]["items"], 25, "{arith_v}");
    assert_eq!(arith_v["paired"]["baseline_only"], 1, "{arith_v}");
    assert_eq!(arith_v["paired"]["candidate_only"], 0, "{arith_v}");
    assert!(
        arith_v["reason"]
            .as_str()
            .unwrap()
            .contains("paired on 25 items: 1 right only in the baseline"),
        "{arith_v}"
    );
    drop(one);

    // Worse answers (80 % of the prompts right) and a worse model (log-probabilities × 1.1):
    // the gate FAILs on accuracy and on perplexity, exit 3.
    let worse = Sim::start(&[
        "--answers",
        "arith",
        "--answers",
        "format",
        "--correct-fraction",
        "0.8",
        "--logprob-scale",
        "1.1",
        "--ttft-ms",
        "1",
        "--itl-ms",
        "0",
    ]);
    let c = run(&store, "c", &spec(&worse.url, ""));
    let c_id = c["run_id"].as_str().unwrap();
    let fc = facts(&store, c_id);
    let acc = fact(&fc, "component.0.eval/arith", "accuracy").0;
    assert!(acc < 0.98 && acc > 0.4, "arith accuracy {acc}");
    let (want, _) = sim_perplexity(1.1);
    let got = fact(&fc, "component.0.eval/perplexity", "perplexity").0;
    assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    let out = cmd(&store, &["gate", c_id, "--json"]);
    let g = json(&out);
    assert_eq!(out.status.code(), Some(3), "{g}");
    assert_eq!(g["verdict"], "FAIL");
    let verdict = |point: &str, metric: &str| {
        g["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["point"] == point && m["metric"] == metric)
            .unwrap_or_else(|| panic!("{point} {metric} not gated: {g}"))["verdict"]
            .clone()
    };
    assert_eq!(verdict("component.0.eval/arith", "accuracy"), "FAIL");
    assert_eq!(verdict("component.0.eval/perplexity", "perplexity"), "FAIL");
    // --confirm re-runs only the failing eval points; a deterministic regression reproduces.
    let out = cmd(&store, &["gate", c_id, "--confirm", "--json"]);
    let g = json(&out);
    assert_eq!(out.status.code(), Some(3), "{g}");
    let acc = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["point"] == "component.0.eval/arith" && m["metric"] == "accuracy")
        .unwrap();
    assert!(
        acc["reason"]
            .as_str()
            .unwrap()
            .contains("confirmed by re-run"),
        "{acc}"
    );
    // The human output names them.
    let out = cmd(&store, &["gate", c_id]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("accuracy") && text.contains("FAIL"), "{text}");
}

#[test]
fn task_files_are_relative_to_the_spec_and_stored_with_the_run() {
    let sim = Sim::start(&["--answers", "arith", "--ttft-ms", "1", "--itl-ms", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let specs = tmp.path().join("specs");
    std::fs::create_dir_all(specs.join("probes")).unwrap();
    // The arith items copied into a file task, and one the simulator has no answer for.
    let arith =
        std::fs::read_to_string(repo().join("crates/yardstick-eval/src/probes/arith.jsonl"))
            .unwrap();
    let mut lines: Vec<String> = arith.lines().map(str::to_owned).collect();
    lines.push(
        r#"{"id":"x","prompt":"Name a colour.","references":["blue"],"scorer":"contains"}"#.into(),
    );
    std::fs::write(specs.join("probes/mine.jsonl"), lines.join("\n") + "\n").unwrap();
    let text = spec(&sim.url, "").replace(
        "tasks: [arith, format]\n        perplexity: builtin",
        "tasks: [probes/mine.jsonl]",
    );
    let path = specs.join("mine.yaml");
    std::fs::write(&path, &text).unwrap();
    let store = tmp.path().join("store");
    // Run from another directory: the task file is found next to the spec.
    let out = yardstick()
        .current_dir(tmp.path())
        .args(["run", path.to_str().unwrap(), "--store"])
        .arg(&store)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = json(&out);
    let id = o["run_id"].as_str().unwrap();
    let f = facts(&store, id);
    let (acc, n) = fact(&f, "component.0.eval/mine", "accuracy");
    assert!((acc - 25.0 / 26.0).abs() < 1e-12, "{acc}");
    assert_eq!(n, 3, "replicates");
    let dir = PathBuf::from(o["dir"].as_str().unwrap());
    let stored = std::fs::read_to_string(dir.join("inputs/eval/probes_mine.jsonl")).unwrap();
    assert_eq!(stored, lines.join("\n") + "\n");

    // A server that knows no answers FAILs against it; `gate --confirm` re-runs the failing
    // point from the candidate run's frozen copy of the task file, so it works from any
    // directory and after the original file is gone.
    let out = cmd(&store, &["baseline", "save", id]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let clueless = Sim::start(&["--ttft-ms", "1", "--itl-ms", "0"]);
    let text = text.replace(&sim.url, &clueless.url);
    std::fs::write(&path, &text).unwrap();
    let out = yardstick()
        .current_dir(tmp.path())
        .args(["run", path.to_str().unwrap(), "--store"])
        .arg(&store)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad_id = json(&out)["run_id"].as_str().unwrap().to_string();
    std::fs::remove_dir_all(specs.join("probes")).unwrap();
    let out = yardstick()
        .current_dir(tmp.path())
        .args(["gate", &bad_id, "--confirm", "--json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let g = json(&out);
    assert_eq!(out.status.code(), Some(3), "{g}");
    let acc = g["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["point"] == "component.0.eval/mine" && m["metric"] == "accuracy")
        .unwrap();
    assert_eq!(acc["verdict"], "FAIL", "{acc}");
    assert!(
        acc["reason"]
            .as_str()
            .unwrap()
            .contains("confirmed by re-run"),
        "{acc}"
    );
}

fn run_invalid(dir: &Path, name: &str, text: &str) -> (Option<i32>, String) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let store = dir.join("store");
    let out = yardstick()
        .args(["run", path.to_str().unwrap(), "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        !store.join("runs").exists()
            || std::fs::read_dir(store.join("runs"))
                .unwrap()
                .next()
                .is_none(),
        "no run is created for an invalid spec"
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_eval_layers_are_exit_2_with_file_line_col() {
    let tmp = tempfile::tempdir().unwrap();
    let good = spec("sim", "");
    let line_of =
        |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;

    // A typo in a bundled probe name: did-you-mean.
    let text = good.replace(
        "        tasks: [arith, format]",
        "        tasks: [arith, fromat]",
    );
    let (code, err) = run_invalid(tmp.path(), "typo.yaml", &text);
    assert_eq!(code, Some(2), "{err}");
    let want = format!("typo.yaml:{}:", line_of(&text, "fromat"));
    assert!(
        err.contains(&want) && err.contains("error[eval-config]"),
        "{err}"
    );
    assert!(err.contains("did you mean `format`"), "{err}");

    // A task file that does not exist next to the spec.
    let text = good.replace(
        "        tasks: [arith, format]",
        "        tasks: [arith, nope/missing.jsonl]",
    );
    let (code, err) = run_invalid(tmp.path(), "missing.yaml", &text);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "missing.yaml:{}:",
            line_of(&text, "missing.jsonl")
        )) && err.contains("error[eval-files]"),
        "{err}"
    );
    // validate says the same.
    let out = yardstick()
        .args([
            "validate",
            tmp.path().join("missing.yaml").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error[eval-files]")
            || String::from_utf8_lossy(&out.stdout).contains("error[eval-files]")
    );

    // Serve fields on an eval layer, repeat 0, no model.
    let text = good
        .replace(
            "repeat: 2",
            "repeat: 0\n        load: {mode: concurrency, values: [1]}",
        )
        .replace(", model: sim-llama}", "}");
    let (code, err) = run_invalid(tmp.path(), "fields.yaml", &text);
    assert_eq!(code, Some(2), "{err}");
    // The bad value's position for a wrong value, the key's for a field that does not belong.
    for (needle, at) in [("repeat: 0", "0"), ("load: {mode", "load")] {
        let line = line_of(&text, needle);
        let col = text.lines().nth(line - 1).unwrap().find(at).unwrap() + 1;
        let want = format!("fields.yaml:{line}:{col}: error[eval-config]");
        assert!(err.contains(&want), "{want} in {err}");
    }
    assert!(err.contains("target.model"), "{err}");

    // A task file that exists but is invalid (duplicate id): exit 2 naming the file's line,
    // before any run is created.
    std::fs::write(
        tmp.path().join("dup.jsonl"),
        "{\"id\":\"a\",\"prompt\":\"p\",\"references\":[\"x\"],\"scorer\":\"exact\"}\n\
         {\"id\":\"a\",\"prompt\":\"q\",\"references\":[\"y\"],\"scorer\":\"exact\"}\n",
    )
    .unwrap();
    let text = good.replace(
        "        tasks: [arith, format]",
        "        tasks: [dup.jsonl]",
    );
    let (code, err) = run_invalid(tmp.path(), "dup.yaml", &text);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("dup.jsonl:2: duplicate id `a`"), "{err}");
}

#[test]
fn the_example_eval_spec_runs_as_written_against_the_embedded_simulator() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let out = yardstick()
        .args(["run"])
        .arg(repo().join("examples/eval.yaml"))
        .arg("--store")
        .arg(&store)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let o = json(&out);
    let id = o["run_id"].as_str().unwrap();
    let f = facts(&store, id);
    // The simulator answers filler words: accuracy 0 (a measurement, not a failure),
    // deterministic, and its documented perplexity on the bundled shard.
    assert_eq!(fact(&f, "component.0.eval/arith", "accuracy"), (0.0, 3));
    assert_eq!(fact(&f, "component.0.eval/format", "determinism").0, 1.0);
    let (want, _) = sim_perplexity(1.0);
    let got = fact(&f, "component.0.eval/perplexity", "perplexity").0;
    assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
}

#[test]
fn the_gate_catches_a_rouge_l_drop_on_paired_items() {
    // A graded task (ROUGE-L) whose references are the simulator's answers: all right gives
    // ROUGE-L 1.0; with --correct-fraction 0.5 about half the items get filler (ROUGE-L ~0).
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("probes")).unwrap();
    let task = tmp.path().join("probes/sum.jsonl");
    let lines: String = (0..20)
        .map(|i| {
            format!(
                "{{\"id\":\"s{i}\",\"prompt\":\"Summarise passage {i}.\",\
                 \"references\":[\"zeta{i} omega{i} kappa sigma\"],\"scorer\":\"rouge-l\"}}\n"
            )
        })
        .collect();
    std::fs::write(&task, lines).unwrap();
    let sim = |extra: &[&str]| {
        let mut args = vec![
            "--answers",
            task.to_str().unwrap(),
            "--ttft-ms",
            "1",
            "--itl-ms",
            "0",
        ];
        args.extend_from_slice(extra);
        Sim::start(&args)
    };
    let text = |url: &str| {
        spec(url, "").replace(
            "tasks: [arith, format]\n        perplexity: builtin",
            "tasks: [probes/sum.jsonl]",
        )
    };
    let store = tmp.path().join("store");
    let right = sim(&[]);
    let a = run(&store, "a", &text(&right.url));
    let a_id = a["run_id"].as_str().unwrap();
    assert_eq!(
        fact(&facts(&store, a_id), "component.0.eval/sum", "mean_rouge_l").0,
        1.0
    );
    let out = cmd(&store, &["baseline", "save", a_id]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rouge = |g: &Value| {
        g["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == "mean_rouge_l")
            .unwrap_or_else(|| panic!("mean_rouge_l not gated: {g}"))
            .clone()
    };
    // The same answers: PASS.
    let b = run(&store, "b", &text(&right.url));
    let out = cmd(&store, &["gate", b["run_id"].as_str().unwrap(), "--json"]);
    let g = json(&out);
    assert_eq!(out.status.code(), Some(0), "{g}");
    let m = rouge(&g);
    assert_eq!(
        (m["class"].as_str(), m["verdict"].as_str()),
        (Some("quality"), Some("PASS"))
    );
    drop(right);
    // About half the items wrong: ROUGE-L falls far beyond 2 points, FAIL on paired items.
    let worse = sim(&["--correct-fraction", "0.5"]);
    let c = run(&store, "c", &text(&worse.url));
    let c_id = c["run_id"].as_str().unwrap();
    let score = fact(&facts(&store, c_id), "component.0.eval/sum", "mean_rouge_l").0;
    assert!(score < 0.9 && score > 0.1, "ROUGE-L {score}");
    let out = cmd(&store, &["gate", c_id, "--json"]);
    let g = json(&out);
    assert_eq!(out.status.code(), Some(3), "{g}");
    let m = rouge(&g);
    assert_eq!(m["verdict"], "FAIL", "{m}");
    assert_eq!(m["tolerance_pct"], 2.0);
    assert_eq!(m["paired"]["statistic"], "mean_score", "{m}");
    assert_eq!(m["paired"]["items"], 20, "{m}");
    assert!(m["ci_hi"].as_f64().unwrap() < 0.98, "{m}");
}
