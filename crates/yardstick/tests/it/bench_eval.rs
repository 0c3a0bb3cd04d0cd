//! `yardstick bench eval` driven through the built binary against a tiny OpenAI-compatible test
//! server written here (raw TCP on 127.0.0.1, ephemeral port, one thread per connection). The
//! server computes `What is A op B?` from the prompt and answers wrongly when A ends in 9, answers
//! `format` prompts with a JSON object of the asked keys, and in "flaky" mode alternates between
//! two phrasings (every third request) so repeats differ. Bounded and fast.

use crate::common::yardstick;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

fn run(args: &[&str]) -> Output {
    yardstick().args(args).output().expect("run yardstick")
}

fn answer(prompt: &str, flaky: bool, n: u64) -> String {
    if let Some(rest) = prompt.strip_prefix("What is ") {
        let q = rest.split('?').next().unwrap_or("");
        let parts: Vec<&str> = q.split_whitespace().collect();
        let a: i64 = parts[0].parse().unwrap();
        let b: i64 = parts[2].parse().unwrap();
        let mut v = match parts[1] {
            "+" => a + b,
            "-" => a - b,
            "*" => a * b,
            "/" => a / b,
            _ => 0,
        };
        if a.rem_euclid(10) == 9 {
            v += 1;
        }
        return if flaky && n % 3 == 1 {
            format!("The answer is {v}.")
        } else {
            v.to_string()
        };
    }
    if let Some(i) = prompt.find("exactly the keys ") {
        let keys = &prompt[i + "exactly the keys ".len()..];
        let keys = keys.split(". ").next().unwrap_or("");
        let mut m = serde_json::Map::new();
        for k in keys.split(", ") {
            m.insert(k.trim().to_string(), json!(1));
        }
        return Value::Object(m).to_string();
    }
    "I do not know".into()
}

/// Request bodies the test server received, in arrival order.
type Bodies = Arc<Mutex<Vec<Value>>>;

fn serve_one(mut s: TcpStream, flaky: bool, counter: &AtomicU64, bodies: &Bodies) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut len = 0usize;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if path.is_empty() {
            path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        }
        let l = line.to_ascii_lowercase();
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    let req: Value = serde_json::from_slice(&body).unwrap();
    bodies.lock().unwrap().push(req.clone());
    assert_eq!(req["temperature"], json!(0), "decoding must be greedy");
    assert!(req["seed"].is_u64() && req["max_tokens"].is_u64());
    let n = counter.fetch_add(1, Ordering::SeqCst);
    let (prompt, chat) = match req["messages"].as_array() {
        Some(m) => (m[0]["content"].as_str().unwrap().to_string(), true),
        None => (req["prompt"].as_str().unwrap().to_string(), false),
    };
    let text = answer(&prompt, flaky, n);
    let choice = if chat {
        json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"})
    } else {
        json!({"index": 0, "text": text, "finish_reason": "stop"})
    };
    assert_eq!(path.ends_with("/chat/completions"), chat, "path {path}");
    let resp = json!({"id": "x", "choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 2}})
        .to_string();
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        resp.len(),
        resp
    );
}

/// Starts the test server; returns its base URL.
fn server(flaky: bool) -> String {
    capturing_server(flaky).0
}

/// Starts the test server; returns its base URL and the request bodies it receives.
fn capturing_server(flaky: bool) -> (String, Bodies) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let counter = Arc::new(AtomicU64::new(0));
    let bodies: Bodies = Arc::default();
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let (c, b) = (counter.clone(), seen.clone());
            std::thread::spawn(move || serve_one(s, flaky, &c, &b));
        }
    });
    (format!("http://{addr}"), bodies)
}

/// Ten arithmetic items, two of them (A ending in 9) answered wrongly by the server.
fn ten_items(dir: &Path) -> String {
    let qs = [
        (2, "+", 3, 5),
        (19, "+", 1, 20),
        (7, "*", 6, 42),
        (10, "-", 4, 6),
        (100, "/", 4, 25),
        (29, "-", 9, 20),
        (5, "*", 5, 25),
        (8, "+", 8, 16),
        (12, "-", 20, -8),
        (3, "*", 3, 9),
    ];
    let mut s = String::new();
    for (i, (a, op, b, v)) in qs.iter().enumerate() {
        s.push_str(
            &json!({"id": format!("q{i}"), "prompt": format!("What is {a} {op} {b}? Number only."),
                "references": [v.to_string()], "scorer": "numeric"})
            .to_string(),
        );
        s.push('\n');
    }
    let p = dir.join("ten.jsonl");
    std::fs::write(&p, s).unwrap();
    p.display().to_string()
}

fn json_out(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "status {:?}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn accuracy_equals_the_known_fraction_with_its_wilson_ci() {
    let url = server(false);
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    let out = dir.path().join("out");
    let o = run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        &format!("{tasks},arith,format"),
        "--repeat",
        "2",
        "--json",
        "--output",
        out.to_str().unwrap(),
    ]);
    let v = json_out(&o);
    crate::schema_cli::assert_conforms("bench-eval", &v);
    let t = &v["tasks"][0];
    assert_eq!(t["name"], "ten");
    assert_eq!(t["n"], 10);
    assert_eq!(t["accuracy"], 0.8);
    let ci = t["ci"].as_array().unwrap();
    assert!((ci[0].as_f64().unwrap() - 0.4902).abs() < 1e-4, "{ci:?}");
    assert!((ci[1].as_f64().unwrap() - 0.9433).abs() < 1e-4, "{ci:?}");
    assert_eq!(t["determinism"], 1.0);
    // The bundled arith probe: the server is right unless A ends in 9.
    let arith = &v["tasks"][1];
    assert_eq!(arith["name"], "arith");
    let n = arith["n"].as_u64().unwrap();
    let wrong = arith["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["repeat"] == 0 && !i["correct"].as_bool().unwrap())
        .count() as u64;
    assert!(wrong >= 1, "some arith item has A ending in 9");
    let mut expected_wrong = 0;
    for line in include_str!("../../../yardstick-eval/src/probes/arith.jsonl").lines() {
        let item: Value = serde_json::from_str(line).unwrap();
        let a: i64 = item["prompt"].as_str().unwrap()["What is ".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        if a % 10 == 9 {
            expected_wrong += 1;
        }
    }
    assert_eq!(wrong, expected_wrong);
    assert_eq!(
        arith["accuracy"].as_f64().unwrap(),
        (n - wrong) as f64 / n as f64
    );
    // format: the server emits the asked keys as JSON.
    assert_eq!(v["tasks"][2]["accuracy"], 1.0);
    assert!(v["perplexity"].is_null());
    // --output: eval.json is the same document; items.jsonl has every item × repeat.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    assert_eq!(file["tasks"][0]["accuracy"], 0.8);
    let items = std::fs::read_to_string(out.join("items.jsonl")).unwrap();
    let total: u64 = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["n"].as_u64().unwrap())
        .sum();
    assert_eq!(items.lines().count() as u64, 2 * total);
    for l in items.lines() {
        let r: Value = serde_json::from_str(l).unwrap();
        for k in ["task", "id", "output", "correct", "score"] {
            assert!(r.get(k).is_some(), "{k} in {l}");
        }
    }
}

#[test]
fn a_flaky_server_has_determinism_below_one_and_completions_work() {
    let url = server(true);
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    let o = run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        &tasks,
        "--repeat",
        "2",
        "--api",
        "completions",
        "--json",
    ]);
    let v = json_out(&o);
    let d = v["tasks"][0]["determinism"].as_f64().unwrap();
    assert!(d < 1.0, "determinism {d}");
    // Both phrasings carry the number: accuracy is unchanged.
    assert_eq!(v["tasks"][0]["accuracy"], 0.8);
    // Without --repeat there is no determinism rate.
    let v = json_out(&run(&[
        "bench", "eval", "--url", &url, "--model", "m", "--tasks", &tasks, "--json",
    ]));
    assert!(v["tasks"][0]["determinism"].is_null());
}

#[test]
fn compare_two_runs_with_mcnemar() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, wrong: usize| {
        let items: Vec<Value> = (0..30)
            .map(
                |i| json!({"task": "t", "id": format!("i{i}"), "repeat": 0, "correct": i >= wrong}),
            )
            .collect();
        let p = dir.path().join(name);
        std::fs::write(
            &p,
            json!({"tasks": [{"name": "t", "items": items}]}).to_string(),
        )
        .unwrap();
        p.display().to_string()
    };
    let a = write("a.json", 0);
    let b = write("b.json", 12);
    let v = json_out(&run(&["bench", "eval", "--compare", &a, &b, "--json"]));
    crate::schema_cli::assert_conforms("bench-eval-compare", &v);
    let t = &v["tasks"][0];
    assert_eq!(t["a_only"], 12);
    assert_eq!(t["b_only"], 0);
    assert_eq!(t["verdict"], "a_better");
    let text = run(&["bench", "eval", "--compare", &a, &a]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("same"));
}

#[test]
fn bad_task_files_exit_2_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(
        &p,
        "{\"id\":\"a\",\"prompt\":\"x\",\"references\":[\"1\"],\"scorer\":\"exact\"}\n{\"id\":\"b\",\"prompt\":\"x\",\"references\":[\"1\"]}\n",
    )
    .unwrap();
    let o = run(&[
        "bench",
        "eval",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--tasks",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.jsonl:2"), "{err}");
    // ... and names the missing field.
    assert!(err.contains("scorer"), "{err}");
    // Bad regex, duplicate id, empty file: exit 2, naming the line (or the file).
    let item = |id: &str, refs: &str, scorer: &str| {
        format!(r#"{{"id":"{id}","prompt":"x","references":[{refs}],"scorer":"{scorer}"}}"#)
    };
    for (name, text, want, why) in [
        (
            "regex.jsonl",
            format!(
                "{}\n\n{}\n",
                item("a", r#""1""#, "exact"),
                item("b", r#""(unclosed""#, "regex")
            ),
            "regex.jsonl:3",
            "regex",
        ),
        (
            "dup.jsonl",
            format!(
                "{}\n{}\n",
                item("a", r#""1""#, "exact"),
                item("a", r#""2""#, "exact")
            ),
            "dup.jsonl:2",
            "duplicate id",
        ),
        (
            "empty.jsonl",
            "\n  \n".to_string(),
            "empty.jsonl:0",
            "no items",
        ),
    ] {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        let o = run(&[
            "bench",
            "eval",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--tasks",
            f.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want) && err.contains(why), "{name}: {err}");
    }
    let o = run(&[
        "bench",
        "eval",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--tasks",
        "nope",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn an_unreachable_server_fails() {
    // Bind then drop: a port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = run(&[
        "bench",
        "eval",
        "--url",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "--tasks",
        "arith",
        "--timeout",
        "5",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("every request failed"));
}

#[test]
fn f1_and_choice_through_the_cli() {
    // The server answers anything it does not recognise with "I do not know".
    let url = server(false);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("graded.jsonl");
    std::fs::write(
        &p,
        concat!(
            r#"{"id":"a","prompt":"Say something.","references":["i do know"],"scorer":"f1","normalize":{"case":true}}"#,
            "\n",
            r#"{"id":"b","prompt":"Say more.","references":["I do not know"],"scorer":"f1"}"#,
            "\n"
        ),
    )
    .unwrap();
    let c = dir.path().join("choice.jsonl");
    std::fs::write(
        &c,
        r#"{"id":"c","messages":[{"role":"system","content":"One letter."},{"role":"user","content":"Pick."}],"references":["I"],"scorer":"choice"}"#,
    )
    .unwrap();
    let v = json_out(&run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        &format!("{},{}", p.display(), c.display()),
        "--json",
    ]));
    let t = &v["tasks"][0];
    // a: F1("i do not know", "i do know") = 2 * (3/4) * 1 / (3/4 + 1) = 6/7, below threshold 1.
    assert_eq!(t["accuracy"], 0.5);
    let f1 = t["mean_f1"].as_f64().unwrap();
    assert!((f1 - (6.0 / 7.0 + 1.0) / 2.0).abs() < 1e-12, "{f1}");
    assert_eq!(v["tasks"][1]["accuracy"], 1.0);
    assert!(v["tasks"][1]["mean_f1"].is_null());
}

#[test]
fn concurrency_keeps_results_and_order() {
    let url = server(false);
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    let v = json_out(&run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        &tasks,
        "--repeat",
        "3",
        "--concurrency",
        "8",
        "--json",
    ]));
    let t = &v["tasks"][0];
    assert_eq!(t["accuracy"], 0.8);
    assert_eq!(t["determinism"], 1.0);
    assert_eq!(v["concurrency"], 8);
    assert!(v["requests_per_s"].as_f64().unwrap() > 0.0);
    let order: Vec<(String, u64)> = t["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap().to_string(),
                i["repeat"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = (0..10)
        .flat_map(|i| (0..3).map(move |r| (format!("q{i}"), r)))
        .collect();
    assert_eq!(order, want);
}

#[test]
fn bleu_task_reports_corpus_bleu() {
    // The server answers "I do not know" to these prompts.
    let url = server(false);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mt.jsonl");
    std::fs::write(
        &p,
        concat!(
            r#"{"id":"a","prompt":"Translate.","references":["I do not know"],"scorer":"bleu"}"#,
            "\n",
            r#"{"id":"b","prompt":"Translate again.","references":["We do not know it at all"],"scorer":"bleu","threshold":90}"#,
            "\n"
        ),
    )
    .unwrap();
    let v = json_out(&run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        p.to_str().unwrap(),
        "--json",
    ]));
    let t = &v["tasks"][0];
    assert_eq!(t["accuracy"], 0.5);
    let b = t["bleu"].as_f64().unwrap();
    assert!(b > 0.0 && b < 100.0, "{b}");
    // Segment statistics are kept per item, so two runs compare with a paired bootstrap of
    // corpus BLEU (here a run against itself: no difference).
    let out = dir.path().join("out");
    let o = run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        p.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let f = out.join("eval.json");
    let f = f.to_str().unwrap();
    let c = json_out(&run(&["bench", "eval", "--compare", f, f, "--json"]));
    crate::schema_cli::assert_conforms("bench-eval-compare", &c);
    let q = &c["tasks"][0]["quality"];
    assert_eq!(q["metric"], "bleu");
    assert_eq!(q["a"].as_f64().unwrap(), b);
    assert_eq!(q["delta"], 0.0);
    assert_eq!(q["verdict"], "same");
    let text = run(&["bench", "eval", "--compare", f, f]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("paired bootstrap"));
}

#[test]
fn stop_sequences_and_seed_reach_the_request_body() {
    let (url, bodies) = capturing_server(false);
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    for api in ["chat", "completions"] {
        bodies.lock().unwrap().clear();
        let v = json_out(&run(&[
            "bench",
            "eval",
            "--url",
            &url,
            "--model",
            "m",
            "--tasks",
            &tasks,
            "--api",
            api,
            "--seed",
            "1234",
            "--stop",
            "\n\n",
            "--stop",
            "END",
            "--max-tokens",
            "7",
            "--json",
        ]));
        assert_eq!(v["tasks"][0]["accuracy"], 0.8);
        let got = bodies.lock().unwrap().clone();
        assert_eq!(got.len(), 10, "{api}: one request per item");
        for b in &got {
            assert_eq!(b["seed"], 1234, "{api}: {b}");
            assert_eq!(b["stop"], json!(["\n\n", "END"]), "{api}: {b}");
            assert_eq!(b["max_tokens"], 7, "{api}: {b}");
            assert_eq!(b["temperature"], json!(0), "{api}: {b}");
            assert_eq!(b["model"], "m");
        }
    }
    // Without --stop and --seed: seed 0 is sent, and no stop sequence.
    bodies.lock().unwrap().clear();
    json_out(&run(&[
        "bench", "eval", "--url", &url, "--model", "m", "--tasks", &tasks, "--json",
    ]));
    for b in bodies.lock().unwrap().iter() {
        assert_eq!(b["seed"], 0, "{b}");
        assert!(
            b.get("stop").is_none_or(|s| s.is_null() || s == &json!([])),
            "{b}"
        );
    }
}

#[test]
fn confidence_sets_the_wilson_level_and_is_checked() {
    let url = server(false);
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    let ci = |level: &str| -> (f64, f64) {
        let v = json_out(&run(&[
            "bench",
            "eval",
            "--url",
            &url,
            "--model",
            "m",
            "--tasks",
            &tasks,
            "--confidence",
            level,
            "--json",
        ]));
        let t = &v["tasks"][0];
        assert_eq!(t["accuracy"], 0.8);
        assert_eq!(
            v["confidence"].as_f64().unwrap(),
            level.parse::<f64>().unwrap()
        );
        let c = t["ci"].as_array().unwrap();
        (c[0].as_f64().unwrap(), c[1].as_f64().unwrap())
    };
    let (lo95, hi95) = ci("0.95");
    let (lo90, hi90) = ci("0.9");
    // Wilson at 90 % (z = 1.6449) for 8 of 10: (0.5408, 0.9314).
    assert!(
        (lo90 - 0.5408).abs() < 1e-4 && (hi90 - 0.9314).abs() < 1e-4,
        "{lo90} {hi90}"
    );
    assert!(
        lo90 > lo95 && hi90 < hi95,
        "0.9 [{lo90}, {hi90}] vs 0.95 [{lo95}, {hi95}]"
    );
    // The human table names the level.
    let o = run(&[
        "bench",
        "eval",
        "--url",
        &url,
        "--model",
        "m",
        "--tasks",
        &tasks,
        "--confidence",
        "0.9",
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("90% CI"));
    // Out of (0, 1): exit 2 before any request, naming the flag.
    for bad in ["1.5", "0", "1", "-0.2", "NaN"] {
        let o = run(&[
            "bench",
            "eval",
            "--url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--tasks",
            &tasks,
            &format!("--confidence={bad}"),
        ]);
        assert_eq!(o.status.code(), Some(2), "--confidence {bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--confidence must be in (0, 1)"),
            "{bad}: {err}"
        );
    }
}

/// An eval.json of one 25-item task, right except the items listed in `wrong`.
fn eval_doc(dir: &Path, name: &str, wrong: &[usize]) -> String {
    let items: Vec<Value> = (0..25)
        .map(|i| {
            let c = !wrong.contains(&i);
            json!({"task": "probe", "id": format!("i{i}"), "repeat": 0, "output": "x",
                   "correct": c, "score": f64::from(u8::from(c))})
        })
        .collect();
    let p = dir.join(name);
    std::fs::write(
        &p,
        json!({"tasks": [{"name": "probe", "items": items, "bleu": null,
                          "mean_rouge_l": null, "mean_f1": null}]})
        .to_string(),
    )
    .unwrap();
    p.display().to_string()
}

#[test]
fn compare_prints_the_gates_verdict_next_to_mcnemar() {
    let dir = tempfile::tempdir().unwrap();
    // Baseline 20/25 = 0.80: the 2-point tolerance is the ratio bound 0.975.
    let base = eval_doc(dir.path(), "a.json", &[0, 5, 10, 15, 20]);
    let one = eval_doc(dir.path(), "one.json", &[0, 1, 5, 10, 15, 20]);
    let five = eval_doc(dir.path(), "five.json", &[0, 1, 2, 3, 4, 5, 6, 10, 15, 20]);
    let cmp = |b: &str, extra: &[&str]| -> Value {
        let mut args = vec!["bench", "eval", "--compare", &base, b, "--json"];
        args.extend_from_slice(extra);
        json_out(&run(&args))
    };
    // Identical: PASS, a zero-width paired interval at 1.
    let v = cmp(&base, &[]);
    let t = &v["tasks"][0];
    assert_eq!(t["gate_verdict"], "PASS", "{v:#}");
    assert_eq!(t["verdict"], "same");
    assert_eq!(t["gate"][0]["metric"], "accuracy");
    assert_eq!(t["gate"][0]["ci_lo"], 1.0);
    assert!((t["gate"][0]["bound"].as_f64().unwrap() - 0.975).abs() < 1e-12);
    // One item lost: 25 items cannot resolve 2 points.
    let v = cmp(&one, &[]);
    assert_eq!(v["tasks"][0]["gate_verdict"], "INCONCLUSIVE", "{v:#}");
    assert_eq!(v["tasks"][0]["gate"][0]["paired"]["baseline_only"], 1);
    // Five lost (0.80 -> 0.60): McNemar's exact p is 2 * 0.5^5 = 0.0625, not significant at
    // 0.05 -- but the gate, asking "more than 2 points worse?", FAILs.
    let v = cmp(&five, &[]);
    let t = &v["tasks"][0];
    assert_eq!(t["verdict"], "same", "{v:#}");
    assert!((t["p_value"].as_f64().unwrap() - 0.0625).abs() < 1e-12);
    assert_eq!(t["gate_verdict"], "FAIL", "{v:#}");
    assert_eq!(v["gate_verdict"], "FAIL");
    assert_eq!(t["gate"][0]["tolerance_pct"], 2.0);
    assert!(t["gate"][0]["reason"].as_str().unwrap().contains("McNemar"));
    // --tolerance-points 50 accepts a 20-point loss.
    let v = cmp(&five, &["--tolerance-points", "50"]);
    assert_eq!(v["tasks"][0]["gate_verdict"], "PASS", "{v:#}");
    assert_eq!(v["tasks"][0]["gate"][0]["tolerance_pct"], 50.0);
    // Human output: the McNemar column and the gate's verdict and reason.
    let o = run(&["bench", "eval", "--compare", &base, &five]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("McNemar") && text.contains("gate"), "{text}");
    let row = text.lines().find(|l| l.starts_with("probe")).unwrap();
    assert!(
        row.contains("same") && row.trim_end().ends_with("FAIL"),
        "{row}"
    );
    assert!(
        text.contains("entirely beyond the 2.0 point drop tolerance"),
        "{text}"
    );
    // A bad tolerance is exit 2.
    let o = run(&[
        "bench",
        "eval",
        "--compare",
        &base,
        &five,
        "--tolerance-points",
        "150",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--tolerance-points"));
}

#[test]
fn compare_of_real_runs_gates_accuracy_and_quality() {
    // Two real runs against the test server: the same answers give PASS for accuracy and for
    // the ROUGE-L score of a graded task.
    let url = server(false);
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    let graded = dir.path().join("graded.jsonl");
    std::fs::write(
        &graded,
        concat!(
            r#"{"id":"a","prompt":"Say something.","references":["i do know"],"scorer":"rouge-l"}"#,
            "\n",
            r#"{"id":"b","prompt":"Say more.","references":["I do not know"],"scorer":"rouge-l"}"#,
            "\n"
        ),
    )
    .unwrap();
    let mut files = Vec::new();
    for name in ["a", "b"] {
        let out = dir.path().join(name);
        let o = run(&[
            "bench",
            "eval",
            "--url",
            &url,
            "--model",
            "m",
            "--tasks",
            &format!("{tasks},{}", graded.display()),
            "--output",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(out.join("eval.json").display().to_string());
    }
    let v = json_out(&run(&[
        "bench",
        "eval",
        "--compare",
        &files[0],
        &files[1],
        "--json",
    ]));
    assert_eq!(v["gate_verdict"], "PASS", "{v:#}");
    let graded = &v["tasks"][1];
    let metrics: Vec<&str> = graded["gate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["accuracy", "mean_rouge_l"]);
    assert_eq!(graded["gate"][1]["class"], "quality");
    assert_eq!(graded["gate"][1]["paired"]["statistic"], "mean_score");
}

#[test]
fn an_unreadable_ca_file_exits_2_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = ten_items(dir.path());
    let o = run(&[
        "bench",
        "eval",
        "--url",
        "https://127.0.0.1:9",
        "--model",
        "m",
        "--tasks",
        &tasks,
        "--ca-cert",
        "/nonexistent/ca.pem",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CA certificate file /nonexistent/ca.pem"),
        "{err}"
    );
}
