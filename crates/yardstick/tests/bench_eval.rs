//! `yardstick bench eval` driven through the built binary against a tiny OpenAI-compatible test
//! server written here (raw TCP on 127.0.0.1, ephemeral port, one thread per connection). The
//! server computes `What is A op B?` from the prompt and answers wrongly when A ends in 9, answers
//! `format` prompts with a JSON object of the asked keys, and in "flaky" mode alternates between
//! two phrasings (every third request) so repeats differ. Bounded and fast.

mod common;
use common::yardstick;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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

fn serve_one(mut s: TcpStream, flaky: bool, counter: &AtomicU64) {
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
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let counter = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let c = counter.clone();
            std::thread::spawn(move || serve_one(s, flaky, &c));
        }
    });
    format!("http://{addr}")
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
    for line in include_str!("../../yardstick-eval/src/probes/arith.jsonl").lines() {
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
    let q = &c["tasks"][0]["quality"];
    assert_eq!(q["metric"], "bleu");
    assert_eq!(q["a"].as_f64().unwrap(), b);
    assert_eq!(q["delta"], 0.0);
    assert_eq!(q["verdict"], "same");
    let text = run(&["bench", "eval", "--compare", f, f]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("paired bootstrap"));
}
