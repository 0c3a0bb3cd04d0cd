//! The secrets canary: a bearer token given to `yardstick run` (spec `apiKeyEnv`) and
//! `bench serve --bearer-env`, and also present in the environment under other names, must not
//! reach any file of the run directory, the warehouse, the export, any report format, the
//! `bench serve --output` directory, or any command's output. Compressed containers (Parquet,
//! the xlsx zip) are decoded before they are searched.
//!
//! Both commands reach the simulator through a relay that records what goes over the wire, so
//! the test also proves the token was read and sent (`Authorization: Bearer …`): a token that
//! never left the environment would make "0 hits" mean nothing.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use crate::common::{Sim, yardstick};
use base64::Engine;

/// Names under which the token also sits in the environment, including allow-listed prefixes
/// the environment capture records (`NCCL_`, `UCX_`).
const ALSO_IN: [&str; 7] = [
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "MY_SECRET",
    "ANTHROPIC_API_KEY",
    "NCCL_CANARY_SETTING",
    "UCX_CANARY_SETTING",
];

fn canary() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("ysCanary{:x}{:x}Q", nanos, std::process::id())
}

fn with_secrets(mut c: Command, token: &str) -> Command {
    c.env("YS_CANARY_TOKEN", token)
        // Captured by the environment capture: proof the search sees environment data.
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID_canary_visible");
    for name in ALSO_IN {
        c.env(name, token);
    }
    c
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every form the token could take in a file: as is, in base64 (at each alignment), and as
/// an `Authorization` header value.
fn needles(token: &str) -> Vec<Vec<u8>> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut v = vec![
        token.as_bytes().to_vec(),
        format!("Bearer {token}").into_bytes(),
    ];
    for pad in ["", "a", "ab"] {
        let enc = b64.encode(format!("{pad}{token}"));
        // Skip the characters that depend on the prefix.
        let skip = [0, 2, 3][pad.len()];
        v.push(enc.as_bytes()[skip..enc.len() - 4].to_vec());
    }
    v
}

/// The searchable bytes of a file: Parquet decoded to rows, zip archives (xlsx) unpacked.
fn contents(p: &Path, scratch: &Path) -> Vec<Vec<u8>> {
    let raw = std::fs::read(p).unwrap();
    let mut out = vec![raw.clone()];
    if raw.starts_with(b"PAR1") {
        let rows = yardstick_store::samples::read_rows(raw)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        out.push(serde_json::to_vec(&rows).unwrap());
    } else if raw.starts_with(b"PK\x03\x04") {
        let dest = scratch.join(format!(
            "unzip-{}",
            p.file_name().unwrap().to_string_lossy()
        ));
        let o = Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(p)
            .arg(&dest)
            .output()
            .unwrap();
        ok(&o, "unzip");
        let inner = files_under(&dest);
        assert!(!inner.is_empty(), "{} unpacked to nothing", p.display());
        out.extend(inner.iter().map(|f| std::fs::read(f).unwrap()));
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A loopback TCP relay to `upstream` (`HOST:PORT`) that keeps every byte clients sent.
struct Relay {
    url: String,
    sent: Arc<Mutex<Vec<u8>>>,
}

fn relay(upstream: &str) -> Relay {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let sent = Arc::new(Mutex::new(Vec::new()));
    let (upstream, keep) = (upstream.to_string(), sent.clone());
    std::thread::spawn(move || {
        for client in l.incoming() {
            let Ok(mut client) = client else { continue };
            let Ok(mut server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            // Server to client as it comes.
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s2, &mut c2);
                let _ = c2.shutdown(Shutdown::Write);
            });
            // Client to server, recorded.
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut b = [0u8; 8192];
                while let Ok(n) = client.read(&mut b) {
                    if n == 0 || server.write_all(&b[..n]).is_err() {
                        break;
                    }
                    keep.lock().unwrap().extend_from_slice(&b[..n]);
                }
                let _ = server.shutdown(Shutdown::Write);
            });
        }
    });
    Relay { url, sent }
}

impl Relay {
    /// Requests that carried `Authorization: Bearer TOKEN`, and all requests (the API's and
    /// the tokenize endpoint's before each point: every POST must carry it).
    fn bearer_count(&self, token: &str) -> (usize, usize) {
        let sent = String::from_utf8_lossy(&self.sent.lock().unwrap()).to_ascii_lowercase();
        let auth = format!("authorization: bearer {}", token.to_ascii_lowercase());
        let requests = sent.matches("post /").count();
        (sent.matches(&auth).count(), requests)
    }
}

/// The search finds the token however it is framed: raw, after `Bearer `, and base64-encoded
/// at any alignment with anything before and after it.
#[test]
fn the_search_recognises_every_form_of_the_token() {
    let token = canary();
    let needles = needles(&token);
    let b64 = base64::engine::general_purpose::STANDARD;
    for pre in ["", "x", "xy", "xyz", "{\"authorization\":\"Bearer "] {
        for post in ["", "=", "\"}", "tail bytes"] {
            let plain = format!("{pre}{token}{post}");
            let encoded = b64.encode(&plain);
            for hay in [plain.as_bytes(), encoded.as_bytes()] {
                assert!(
                    needles.iter().any(|n| find(hay, n)),
                    "missed {:?}",
                    String::from_utf8_lossy(hay)
                );
            }
        }
    }
    // And it does not fire on a token that differs in one character.
    let other = token.replacen("Canary", "Canarx", 1);
    let other_b64 = b64.encode(&other);
    assert!(!needles.iter().any(|n| find(other.as_bytes(), n)));
    assert!(!needles.iter().any(|n| find(other_b64.as_bytes(), n)));
}

#[test]
fn a_bearer_token_reaches_no_artifact_report_log_or_output() {
    let token = canary();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let store = work.join("store");
    std::fs::create_dir_all(&work).unwrap();
    let mut outputs: Vec<(String, Output)> = Vec::new();
    // The bundled simulator on a loopback port, reached through the recording relay.
    let sim = Sim::start(&["--ttft-ms", "5", "--itl-ms", "1"]);
    let wire = relay(&sim.addr);

    // A run whose serving target takes its token from the environment.
    let spec = work.join("spec.yaml");
    std::fs::write(
        &spec,
        "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: canary}
spec:
  mode: exploratory
  workload:
    model: sim-llama
    precision: bf16
    sequenceLengths: \"D(20,10)\"
    batching: continuous
    concurrency: [2]
    dataset: {kind: synthetic, seed: 1}
    correctness: {policy: none}
  trials: {replicates: 3, warmup: {requests: 2}, confidenceLevel: 0.95, outlierPolicy: report-tukey}
  layers:
    component:
      - kind: serve
        target: {url: \"URL\", api: chat, model: sim-llama, apiKeyEnv: YS_CANARY_TOKEN}
        scenarios: [\"D(20,10)\"]
        load: {mode: concurrency, values: [2]}
        stop: {maxRequests: 12, maxDuration: 30s}
"
        .replace("URL", &wire.url),
    )
    .unwrap();
    let mut c = with_secrets(yardstick(), &token);
    c.args(["run", "--json"])
        .arg(&spec)
        .arg("--store")
        .arg(&store);
    let o = c.output().unwrap();
    ok(&o, "run");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_id = v["run_id"].as_str().unwrap().to_string();
    outputs.push(("run".into(), o));
    let (with_token, requests) = wire.bearer_count(&token);
    assert!(
        requests >= 3 * 12 && with_token == requests,
        "yardstick run sent {requests} request(s), {with_token} with the bearer token"
    );

    // bench serve against the same simulator, with --output.
    let mut c = with_secrets(yardstick(), &token);
    c.args([
        "bench",
        "serve",
        "--json",
        "--url",
        &wire.url,
        "--model",
        "sim-llama",
        "--scenario",
        "D(16,8)",
        "--concurrency",
        "2",
        "--max-requests",
        "10",
        "--bearer-env",
        "YS_CANARY_TOKEN",
        "--output",
    ])
    .arg(work.join("bench-out"));
    let o = c.output().unwrap();
    ok(&o, "bench serve");
    outputs.push(("bench serve".into(), o));
    let (bench_with_token, bench_requests) = wire.bearer_count(&token);
    assert!(
        bench_requests >= requests + 10 && bench_with_token == bench_requests,
        "bench serve sent {} request(s), {} with the bearer token",
        bench_requests - requests,
        bench_with_token - with_token
    );

    // Every report format, the export, and the read-side commands.
    let reports = work.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let report_args: Vec<String> = vec![
        "report".into(),
        run_id.clone(),
        "--html".into(),
        reports.join("r.html").display().to_string(),
        "--xlsx".into(),
        reports.join("r.xlsx").display().to_string(),
        "--markdown".into(),
        reports.join("r.md").display().to_string(),
        "--junit".into(),
        reports.join("r.xml").display().to_string(),
        "--csv".into(),
        reports.join("csv").display().to_string(),
    ];
    for args in [
        report_args,
        vec!["--json".into(), "report".into(), run_id.clone()],
        vec![
            "export".into(),
            "--parquet".into(),
            work.join("export").display().to_string(),
        ],
        vec![
            "--json".into(),
            "runs".into(),
            "show".into(),
            run_id.clone(),
        ],
        vec!["--json".into(), "verify".into(), run_id.clone()],
        vec!["--json".into(), "query".into(), "SELECT * FROM runs".into()],
    ] {
        let mut c = with_secrets(yardstick(), &token);
        c.args(&args).arg("--store").arg(&store);
        let o = c.output().unwrap();
        ok(&o, &args.join(" "));
        outputs.push((args.join(" "), o));
    }

    // Search every byte.
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let needles = needles(&token);
    let (mut files, mut bytes, mut hits) = (0usize, 0usize, Vec::new());
    let mut everything = Vec::new();
    for f in files_under(&work) {
        files += 1;
        for blob in contents(&f, &scratch) {
            bytes += blob.len();
            if needles.iter().any(|n| find(&blob, n)) {
                hits.push(f.display().to_string());
            }
            everything.extend_from_slice(&blob);
        }
    }
    for (what, o) in &outputs {
        for stream in [&o.stdout, &o.stderr] {
            bytes += stream.len();
            if needles.iter().any(|n| find(stream, n)) {
                hits.push(format!("output of `{what}`"));
            }
            everything.extend_from_slice(stream);
        }
    }
    assert!(hits.is_empty(), "the token leaked into: {hits:?}");

    // The search was not vacuous: it covered the run, the warehouse, every report, the export
    // and the bench output, decoded, and it saw environment data and the secret's variable name.
    let names: Vec<String> = files_under(&work)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "env.json",
        "manifest.json",
        "yardstick.db",
        "r.html",
        "r.xlsx",
        "r.md",
        "r.xml",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} not searched: {names:?}"
        );
    }
    assert!(names.iter().any(|n| n.ends_with(".parquet")));
    assert!(files >= 25, "only {files} files searched");
    assert!(bytes >= 100_000, "only {bytes} bytes searched");
    assert!(
        find(&everything, b"PCI_BUS_ID_canary_visible"),
        "the environment capture was not among what was searched"
    );
    assert!(
        find(&everything, b"YS_CANARY_TOKEN"),
        "the spec naming the variable was not among what was searched"
    );
    eprintln!(
        "secrets canary: {bench_with_token} requests carried the token; {files} files, {bytes} \
         bytes searched, 0 hits"
    );
}
