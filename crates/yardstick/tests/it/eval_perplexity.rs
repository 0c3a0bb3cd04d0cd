//! `yardstick bench eval --perplexity` against a tiny in-test `/v1/completions` server (raw TCP on
//! 127.0.0.1) that echoes the prompt with known log-probabilities: token j ≥ 1 of a paragraph
//! (whitespace tokens) gets −0.5·j, the first gets null, and one generated token follows. The
//! perplexity is then known exactly. Other modes refuse `echo` (HTTP 400) or return no
//! log-probabilities: the result must say "unsupported", never give a number.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};

use serde_json::{Value, json};

#[derive(Clone, Copy)]
enum Mode {
    Known,
    Refuse,
    NoLogprobs,
}

fn serve_one(mut s: TcpStream, mode: Mode) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    loop {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        let req: Value = serde_json::from_slice(&body).unwrap();
        let (status, resp) = match mode {
            Mode::Refuse => (
                "400 Bad Request",
                json!({"error": {"message": "echo is not supported"}}),
            ),
            Mode::NoLogprobs => (
                "200 OK",
                json!({"choices": [{"text": " x", "logprobs": null}]}),
            ),
            Mode::Known => {
                assert_eq!(req["echo"], true);
                assert_eq!(req["logprobs"], 1);
                let prompt = req["prompt"].as_str().unwrap();
                let mut tokens = Vec::new();
                let mut offsets = Vec::new();
                let mut at = 0;
                for (j, w) in prompt.split(' ').enumerate() {
                    let t = if j == 0 {
                        w.to_string()
                    } else {
                        format!(" {w}")
                    };
                    offsets.push(at);
                    at += t.len();
                    tokens.push(t);
                }
                let mut lps: Vec<Value> = (0..tokens.len())
                    .map(|j| {
                        if j == 0 {
                            Value::Null
                        } else {
                            json!(-0.5 * j as f64)
                        }
                    })
                    .collect();
                let mut tops: Vec<Value> = tokens
                    .iter()
                    .zip(&lps)
                    .map(|(t, lp)| {
                        if lp.is_null() {
                            Value::Null
                        } else {
                            json!({t.as_str(): lp})
                        }
                    })
                    .collect();
                // The generated token, which must not count.
                tokens.push(" zzz".into());
                offsets.push(at);
                lps.push(json!(-50.0));
                tops.push(json!({" zzz": -50.0}));
                (
                    "200 OK",
                    json!({"choices": [{"text": format!("{prompt} zzz"), "index": 0,
                        "logprobs": {"tokens": tokens, "text_offset": offsets,
                                     "token_logprobs": lps, "top_logprobs": tops}}],
                        "usage": {"prompt_tokens": tokens.len() - 1, "completion_tokens": 1}}),
                )
            }
        };
        let text = resp.to_string();
        let _ = write!(
            s,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        );
    }
}

fn server(mode: Mode) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve_one(s, mode));
        }
    });
    format!("http://{addr}")
}

fn run(url: &str, shard: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args(["--json", "bench", "eval", "--url", url, "--model", "m"])
        .args(["--tasks", "none", "--perplexity", shard, "--timeout", "10"])
        .output()
        .expect("run yardstick")
}

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn known_logprobs_give_the_exact_perplexity() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("shard.txt");
    // Paragraph 1: a b c -> −0.5, −1.0; paragraph 2: d e -> −0.5. Σ = −2, N = 3.
    std::fs::write(&f, "a b c\n\n\nd e\n").unwrap();
    let v = json_of(&run(&server(Mode::Known), f.to_str().unwrap()));
    let p = &v["perplexity"];
    assert_eq!(p["tokens"], 3, "{p}");
    assert_eq!(p["paragraphs"], 2);
    let want = (2.0f64 / 3.0).exp();
    assert!((p["value"].as_f64().unwrap() - want).abs() < 1e-12, "{p}");
    assert!((p["nll"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!(p["unsupported"].is_null());
    assert_eq!(v["tasks"], json!([]));

    // The bundled shard: 7 paragraphs, every token after the first scored.
    let v = json_of(&run(&server(Mode::Known), "builtin"));
    let p = &v["perplexity"];
    assert_eq!(p["source"], "builtin");
    assert_eq!(p["paragraphs"], 7);
    assert!(p["value"].as_f64().unwrap() > 1.0);
}

#[test]
fn refusing_or_silent_servers_are_unsupported_not_a_number() {
    for mode in [Mode::Refuse, Mode::NoLogprobs] {
        let o = run(&server(mode), "builtin");
        let v = json_of(&o);
        let p = &v["perplexity"];
        assert!(p["value"].is_null(), "{p}");
        assert!(!p["unsupported"].as_str().unwrap().is_empty());
        assert!(String::from_utf8_lossy(&o.stderr).contains("unsupported by this server"));
    }
    // Text output says it too.
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .env("NO_COLOR", "1")
        .args([
            "bench",
            "eval",
            "--url",
            &server(Mode::Refuse),
            "--model",
            "m",
        ])
        .args(["--tasks", "none", "--perplexity", "builtin"])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("perplexity: unsupported by this server"));
}

#[test]
fn bad_perplexity_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    let url = server(Mode::Known);
    assert_eq!(run(&url, empty.to_str().unwrap()).status.code(), Some(2));
    let o = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args([
            "bench", "eval", "--url", &url, "--model", "m", "--tasks", "none",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
