//! `yardstick server` driven as a child process on loopback, over a store filled by real
//! `yardstick run`s against the in-process simulator: every answer is checked against what the
//! CLI prints for the same store (runs, facts, compare, validate, schema, metrics), artifacts
//! against their manifest, tokens against the token file, and shutdown by SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{json, yardstick};
// The throwaway PostgreSQL cluster of the store's tests (it finds `external` here).
use crate::external;
#[allow(dead_code)]
pub(crate) use yardstick_testsupport::pg;

/// How long any one wait of these tests may take.
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// A tiny serving spec against the in-process simulator, labelled `team: inference`.
pub(crate) fn spec() -> &'static str {
    r#"apiVersion: yardstick/v1
kind: BenchmarkRun
metadata:
  name: server-tiny
  labels: {team: inference}
spec:
  mode: exploratory
  workload:
    model: sim-llama
    precision: fp32
    sequenceLengths: "D(16,8)"
    batching: continuous
    concurrency: [2]
    dataset: {kind: synthetic, seed: 42}
    correctness: {policy: none}
  trials:
    replicates: 3
    warmup: {requests: 2}
    confidenceLevel: 0.95
    outlierPolicy: report-tukey
  layers:
    component:
      - kind: serve
        target: {url: sim, api: chat, model: sim-llama}
        scenarios: ["D(16,8)"]
        load: {mode: concurrency, values: [2]}
        stop: {maxRequests: 12, maxDuration: 10s}
  provenance:
    signing: off
"#
}

/// A store holding two runs of [`spec`], made once for every test of this module.
pub(crate) struct Fixture {
    pub(crate) store: PathBuf,
    /// Run ids, oldest first.
    pub(crate) runs: Vec<String>,
}

pub(crate) fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        // Shared by the module's tests for the life of the test process, so it is kept: under
        // cargo's scratch directory for integration tests, not the system's temp directory.
        let dir = tempfile::Builder::new()
            .prefix("ys-server-it-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        let spec_path = dir.join("spec.yaml");
        std::fs::write(&spec_path, spec()).unwrap();
        let store = dir.join("store");
        let mut runs = Vec::new();
        for _ in 0..2 {
            let out = crate::common::run_spec(&spec_path, &store, &[]);
            assert!(
                out.status.success(),
                "yardstick run failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v = json(&out);
            runs.push(v["run_id"].as_str().expect("run_id").to_string());
        }
        Fixture { store, runs }
    })
}

/// A running `yardstick server`, killed on drop.
pub(crate) struct ServerProc {
    child: Child,
    /// `HOST:PORT` to connect to (loopback).
    pub(crate) addr: String,
    /// The URL the server printed.
    pub(crate) url: String,
    stderr: PathBuf,
}

impl ServerProc {
    pub(crate) fn start(store: &Path, extra: &[&str]) -> ServerProc {
        ServerProc::start_on("127.0.0.1:0", store, extra)
    }

    fn start_on(listen: &str, store: &Path, extra: &[&str]) -> ServerProc {
        let stderr = store.parent().unwrap().join(format!(
            "server-{}.stderr",
            std::process::id() as u64 * 1000 + next()
        ));
        let mut child = yardstick()
            .args(["server", "--listen", listen, "--store"])
            .arg(store)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn yardstick server");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(WAIT)
            .expect("the server printed no address");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {line:?}; stderr: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                )
            })
            .to_string();
        let port = url.rsplit_once(':').unwrap().1;
        ServerProc {
            child,
            addr: format!("127.0.0.1:{port}"),
            url,
            stderr,
        }
    }

    pub(crate) fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], b"")
    }

    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        http(&self.addr, method, path, headers, body)
    }

    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the process to exit, at most [`WAIT`].
    pub(crate) fn wait(&mut self) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(start.elapsed() < WAIT, "the server did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn next() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One HTTP/1.1 response.
pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Resp {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A JSON error body with a non-empty message, and the status.
    pub(crate) fn error(&self) -> (u16, String) {
        let v = self.json();
        let msg = v["error"]
            .as_str()
            .unwrap_or_else(|| panic!("status {}: no `error` field in {v}", self.status))
            .to_string();
        assert!(!msg.is_empty());
        (self.status, msg)
    }
}

/// A minimal HTTP/1.1 client (one request per connection), bounded in time. `Host` is `addr`
/// unless `headers` has one.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.set_write_timeout(Some(WAIT)).unwrap();
    // The Host is the address, unless the caller names another.
    let host = if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        String::new()
    } else {
        format!("Host: {addr}\r\n")
    };
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\n{host}Connection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    // The server may answer (413) before reading a large body: a failed write is fine.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let nl = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(String::from_utf8_lossy(&rest[..nl]).trim(), 16).unwrap();
            rest = &rest[nl + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body = out;
    }
    Resp {
        status,
        headers,
        body,
    }
}

pub(crate) fn cli_json(args: &[&str]) -> Value {
    let out = yardstick().arg("--json").args(args).output().unwrap();
    json(&out)
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn server_lists_filters_and_shows_runs_like_the_cli() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let store = f.store.to_str().unwrap();

    let all = s.get("/api/v1/runs").json();
    let ids: Vec<&str> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    let cli = cli_json(&["runs", "list", "--store", store]);
    assert_eq!(
        all["runs"], cli["runs"],
        "the same rows as `runs list --json`"
    );
    assert_eq!(ids, [f.runs[1].as_str(), f.runs[0].as_str()]);
    assert_eq!(all["next_offset"], Value::Null);

    let profile = all["runs"][0]["machine_profile"]
        .as_str()
        .unwrap()
        .to_string();
    let count = |q: &str| {
        let r = s.get(&format!("/api/v1/runs?{q}"));
        assert_eq!(r.status, 200, "{q}: {}", String::from_utf8_lossy(&r.body));
        r.json()["runs"].as_array().unwrap().len()
    };
    assert_eq!(count("name=server-tiny"), 2);
    assert_eq!(count("name=other"), 0);
    assert_eq!(count(&format!("profile={profile}")), 2);
    assert_eq!(count("label=team%3Dinference"), 2);
    assert_eq!(count("label=team"), 2);
    assert_eq!(count("label=team%3Dtraining"), 0);
    assert_eq!(count("status=complete"), 2);
    assert_eq!(count("status=incomplete"), 0);
    assert_eq!(count("since=1d"), 2);
    assert_eq!(count("until=2000-01-01"), 0);
    // SQL in a filter is a plain value: it matches nothing and breaks nothing.
    assert_eq!(count("name=x%27%20OR%20%271%27%3D%271"), 0);
    assert_eq!(
        count("name=server-tiny%27%3B%20DROP%20TABLE%20runs%3B--"),
        0
    );
    assert_eq!(count(""), 2);
    let page = s.get("/api/v1/runs?limit=1").json();
    assert_eq!(page["runs"][0]["run_id"], f.runs[1].as_str());
    assert_eq!(page["next_offset"], 1);
    let page2 = s.get("/api/v1/runs?limit=1&offset=1").json();
    assert_eq!(page2["runs"][0]["run_id"], f.runs[0].as_str());
    assert_eq!(page2["next_offset"], Value::Null);
    for bad in [
        "status=done",
        "limit=0",
        "limit=100000",
        "limit=-1",
        "since=last%20week",
        "since=99999999999999w",
        "nosuch=1",
        "limit=abc",
        "offset=18446744073709551615",
        "offset=18446744073709551616",
    ] {
        let (status, msg) = s.get(&format!("/api/v1/runs?{bad}")).error();
        assert_eq!(status, 400, "{bad}: {msg}");
    }

    // One run, by id and by a prefix, with what its directory holds.
    let id = &f.runs[0];
    let one = s.get(&format!("/api/v1/runs/{id}"));
    assert_eq!(one.status, 200);
    let one = one.json();
    assert_eq!(one["run"]["run_id"], id.as_str());
    assert_eq!(one["manifest"]["run_id"], id.as_str());
    assert!(one["spec"].as_str().unwrap().contains("server-tiny"));
    assert!(one["summary"].is_object());
    assert!(one["env"].is_object());
    assert!(!one["points"].as_array().unwrap().is_empty());
    assert_eq!(one["replicates"].as_array().unwrap().len(), 3);
    let by_prefix = s.get(&format!("/api/v1/runs/{}", &id[..20])).json();
    assert_eq!(by_prefix["run"]["run_id"], id.as_str());
    let (status, _) = s.get("/api/v1/runs/01JNOSUCHRUN0000000000000").error();
    assert_eq!(status, 404);
    let (status, _) = s.get("/api/v1/runs/%27%20OR%201%3D1--").error();
    assert_eq!(status, 404);
    let (status, _) = s.get("/api/v1/runs/%ff%fe").error();
    assert_eq!(status, 400);
    let long = "A".repeat(10_000);
    let (status, _) = s.get(&format!("/api/v1/runs/{long}")).error();
    assert_eq!(status, 404);

    // Facts: the same as `runs show --json`.
    let facts = s.get(&format!("/api/v1/runs/{id}/facts")).json();
    let cli = cli_json(&["runs", "show", id, "--store", store]);
    assert_eq!(facts["facts"], cli["facts"]);
    assert!(!facts["facts"].as_array().unwrap().is_empty());
    let ttft = s
        .get(&format!(
            "/api/v1/runs/{id}/facts?metric=ttft_ms&statistic=p50&aggregate=true"
        ))
        .json();
    let want: Vec<&Value> = cli["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["metric"] == "ttft_ms" && f["statistic"] == "p50" && f["replicate"].is_null())
        .collect();
    assert_eq!(want.len(), 1);
    assert_eq!(
        ttft["facts"].as_array().unwrap().iter().collect::<Vec<_>>(),
        want
    );
    let per_replicate = s
        .get(&format!(
            "/api/v1/runs/{id}/facts?metric=ttft_ms&statistic=p50&aggregate=false"
        ))
        .json();
    assert_eq!(per_replicate["facts"].as_array().unwrap().len(), 3);
    let (status, _) = s
        .get(&format!("/api/v1/runs/{id}/facts?aggregate=maybe"))
        .error();
    assert_eq!(status, 400);
    let (status, _) = s.get("/api/v1/runs/01JNOSUCH/facts").error();
    assert_eq!(status, 404);

    // Unknown routes are JSON 404s; the access log has a line per request, without queries.
    let (status, _) = s.get("/api/v1/nothing").error();
    assert_eq!(status, 404);
    let log = s.stderr();
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        lines.iter().any(|l| l["route"] == "/api/v1/runs/{id}"
            && l["status"] == 200
            && l["method"] == "GET"
            && l["duration_ms"].is_number()),
        "{log}"
    );
    assert!(!log.contains("DROP TABLE"), "queries are not logged: {log}");
}

#[test]
fn server_streams_artifacts_checked_against_the_manifest() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let id = &f.runs[1];
    let list = s.get(&format!("/api/v1/runs/{id}/artifacts")).json();
    let artifacts = list["artifacts"].as_array().unwrap();
    assert!(artifacts.len() >= 3, "{list}");
    let run_dir = f.store.join("runs").join(id);
    for a in artifacts {
        let path = a["path"].as_str().unwrap();
        let r = s.get(&format!("/api/v1/runs/{id}/artifacts/{path}"));
        assert_eq!(r.status, 200, "{path}");
        let on_disk = std::fs::read(run_dir.join(path)).unwrap();
        assert_eq!(r.body, on_disk, "{path}");
        assert_eq!(sha256_hex(&r.body), a["sha256"].as_str().unwrap(), "{path}");
        assert_eq!(r.header("x-yardstick-sha256"), a["sha256"].as_str());
    }
    // Only what the manifest lists; never outside the run directory.
    for (path, want) in [
        ("../../yardstick.db", 404),
        ("%2e%2e/%2e%2e/yardstick.db", 404),
        ("..%2F..%2Fyardstick.db", 404),
        ("%2Fetc%2Fpasswd", 404),
        ("samples/../spec.yaml", 404),
        ("manifest.json", 404),
        ("nosuch.parquet", 404),
    ] {
        let r = s.get(&format!("/api/v1/runs/{id}/artifacts/{path}"));
        let (status, msg) = r.error();
        assert_eq!(status, want, "{path}: {msg}");
    }
    let (status, _) = s.get("/api/v1/runs/01JNOSUCH/artifacts").error();
    assert_eq!(status, 404);
}

#[test]
fn server_compare_trend_validate_and_contracts_match_the_cli() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let store = f.store.to_str().unwrap();
    let (a, b) = (&f.runs[0], &f.runs[1]);

    let cmp = s.get(&format!("/api/v1/compare?a={a}&b={b}"));
    assert_eq!(cmp.status, 200, "{}", String::from_utf8_lossy(&cmp.body));
    let cli = cli_json(&["compare", a, b, "--store", store]);
    assert_eq!(cmp.json(), cli, "the same as `compare --json`");
    let (status, _) = s.get(&format!("/api/v1/compare?a={a}&b=01JNOSUCH")).error();
    assert_eq!(status, 404);
    let (status, _) = s.get(&format!("/api/v1/compare?a={a}")).error();
    assert_eq!(status, 400);

    // The trend of TTFT's median: one series (one profile, one point), both runs, oldest
    // first, each value the run's aggregate fact.
    let t = s.get("/api/v1/trend?benchmark=server-tiny&metric=ttft_ms&statistic=p50");
    assert_eq!(t.status, 200, "{}", String::from_utf8_lossy(&t.body));
    let t = t.json();
    let series = t["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{t}");
    let points = series[0]["points"].as_array().unwrap();
    let ids: Vec<&str> = points
        .iter()
        .map(|p| p["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a.as_str(), b.as_str()]);
    let facts = s.get(&format!("/api/v1/runs/{a}/facts")).json();
    let fact = facts["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["metric"] == "ttft_ms" && f["statistic"] == "p50" && f["replicate"].is_null())
        .expect("an aggregate p50 TTFT fact");
    assert_eq!(points[0]["value"], fact["value"]);
    assert_eq!(points[0]["ci_lo"], fact["ci_lo"]);
    assert_eq!(t["unit"], "ms");
    let none = s
        .get("/api/v1/trend?benchmark=server-tiny&metric=nosuch")
        .json();
    assert!(none["series"].as_array().unwrap().is_empty());
    let (status, _) = s.get("/api/v1/trend?metric=ttft_ms").error();
    assert_eq!(status, 400);

    // Validation: the same rule ids as `yardstick validate --json`.
    let bad = spec().replace("replicates: 3", "replicates: 2").replace(
        "outlierPolicy: report-tukey",
        "outlierPolicy: trim-everything",
    );
    let bad_path = f.store.parent().unwrap().join("bad.yaml");
    std::fs::write(&bad_path, &bad).unwrap();
    let cli = cli_json(&["validate", bad_path.to_str().unwrap()]);
    let r = s.request(
        "POST",
        "/api/v1/validate",
        &[("Content-Type", "application/yaml")],
        bad.as_bytes(),
    );
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["valid"], false);
    let rules = |v: &Value| -> Vec<String> {
        v["files"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["rule"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(rules(&v).contains(&"trials-replicates".to_string()), "{v}");
    assert_eq!(rules(&v), rules(&cli));
    assert_eq!(v["files"][0]["diagnostics"], cli["files"][0]["diagnostics"]);
    let good = s
        .request("POST", "/api/v1/validate", &[], spec().as_bytes())
        .json();
    assert_eq!(good["valid"], true, "{good}");
    for body in [&b"\xff\xfe not utf-8"[..], b"{{{{", b"", b"- a\n- b\n"] {
        let r = s.request("POST", "/api/v1/validate", &[], body);
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["valid"], false);
    }
    let huge = vec![b'#'; 2 * 1024 * 1024];
    let (status, _) = s.request("POST", "/api/v1/validate", &[], &huge).error();
    assert_eq!(status, 413);

    // The contract: the schema `yardstick schema` prints, every rule with its why and hint, the
    // templates, the catalogue `yardstick metrics --json` prints, the gate's tolerances.
    let c = s.get("/api/benchmark/contracts").json();
    assert_eq!(c["schema"], cli_json(&["schema"]));
    assert_eq!(c["metrics"], cli_json(&["metrics"]));
    let rules = c["rules"].as_array().unwrap();
    assert!(rules.len() >= 30);
    for r in rules {
        for k in ["id", "summary", "section", "hint"] {
            assert!(!r[k].as_str().unwrap_or("").is_empty(), "{k} of {r}");
        }
    }
    assert!(rules.iter().any(|r| r["id"] == "trials-replicates"));
    let names: Vec<&str> = c["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["serve", "train", "micro", "full"]);
    let tol = c["gate"]["tolerances"].as_array().unwrap();
    assert!(
        tol.iter()
            .any(|t| t["class"] == "throughput" && t["tolerance"] == 5.0),
        "{tol:?}"
    );
}

/// Every route the server answers, as OpenAPI spells it.
const ROUTES: &[(&str, &str)] = &[
    ("get", "/healthz"),
    ("get", "/metrics"),
    ("get", "/api/openapi.json"),
    ("get", "/api/benchmark/contracts"),
    ("get", "/api/v1/runs"),
    ("get", "/api/v1/runs/{id}"),
    ("get", "/api/v1/runs/{id}/facts"),
    ("get", "/api/v1/runs/{id}/artifacts"),
    ("get", "/api/v1/runs/{id}/artifacts/{path}"),
    ("get", "/api/v1/runs/{id}/gate"),
    ("get", "/api/v1/baselines"),
    ("put", "/api/v1/baselines"),
    ("get", "/api/v1/compare"),
    ("get", "/api/v1/trend"),
    ("get", "/api/v1/trends"),
    ("post", "/api/v1/validate"),
    ("post", "/api/v1/pushes"),
    ("put", "/api/v1/pushes/{id}/blobs/{sha256}"),
    ("post", "/api/v1/pushes/{id}/commit"),
];

#[test]
fn server_openapi_document_lists_every_route_and_metrics_count_requests() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let health = s.get("/healthz");
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    let doc = s.get("/api/openapi.json");
    assert_eq!(doc.status, 200);
    let doc = doc.json();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().unwrap();
    for (method, path) in ROUTES {
        assert!(
            paths.get(*path).and_then(|p| p.get(*method)).is_some(),
            "{method} {path} missing from {:?}",
            paths.keys().collect::<Vec<_>>()
        );
    }
    let unique: std::collections::BTreeSet<&str> = ROUTES.iter().map(|(_, p)| *p).collect();
    assert_eq!(
        paths.len(),
        unique.len(),
        "{:?}",
        paths.keys().collect::<Vec<_>>()
    );
    // Response types are schemas, not untyped values.
    let runs_ok = &paths["/api/v1/runs"]["get"]["responses"]["200"];
    assert!(runs_ok["content"]["application/json"]["schema"].is_object());
    assert!(
        doc["components"]["schemas"]["RunRow"].is_object(),
        "{}",
        doc["components"]
    );
    let params: Vec<&str> = paths["/api/v1/runs"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for p in [
        "name", "profile", "label", "status", "since", "until", "limit", "offset",
    ] {
        assert!(params.contains(&p), "{p} in {params:?}");
    }

    let _ = s.get("/api/v1/runs");
    let _ = s.get("/api/v1/runs/01JNOSUCH");
    let m = s.get("/metrics");
    assert_eq!(m.status, 200);
    let text = String::from_utf8(m.body).unwrap();
    assert!(
        text.contains(
            "yardstick_server_requests_total{method=\"GET\",route=\"/api/v1/runs\",status=\"200\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains("route=\"/api/v1/runs/{id}\",status=\"404\"} 1"),
        "{text}"
    );
    assert!(
        text.contains(
            "yardstick_server_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 1"
        ),
        "{text}"
    );
}

#[test]
fn server_tokens_are_stored_hashed_and_guard_reads_when_required() {
    let f = fixture();
    // A store of its own: the token file must not leak into the other tests' store.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_dir(&f.store, &store);
    let create = |scope: &str| {
        let out = yardstick()
            .args([
                "server", "token", "create", "--scope", scope, "--note", "it", "--store",
            ])
            .arg(&store)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let read = create("read");
    let push = create("push");
    assert!(read.starts_with("ysk_") && read.len() > 40, "{read}");
    let file_path = store.join("server-tokens.json");
    let file = std::fs::read_to_string(&file_path).unwrap();
    assert!(
        !file.contains(&read) && !file.contains(&push),
        "tokens stored in clear"
    );
    assert!(file.contains(&sha256_hex(read.as_bytes())));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let listed = cli_json(&[
        "server",
        "token",
        "list",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(!listed.to_string().contains(&read));
    let bad = yardstick()
        .args(["server", "token", "create", "--scope", "root", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));

    // Open reads by default.
    {
        let s = ServerProc::start(&store, &[]);
        assert_eq!(s.get("/api/v1/runs").status, 200);
    }
    let s = ServerProc::start(&store, &["--require-read-token"]);
    let r = s.get("/api/v1/runs");
    assert_eq!(r.error().0, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let wrong = s.request(
        "GET",
        "/api/v1/runs",
        &[("Authorization", "Bearer ysk_0000")],
        b"",
    );
    assert_eq!(wrong.error().0, 401);
    let not_bearer = s.request("GET", "/api/v1/runs", &[("Authorization", &read)], b"");
    assert_eq!(not_bearer.error().0, 401);
    for token in [&read, &push] {
        let ok = s.request(
            "GET",
            "/api/v1/runs",
            &[("Authorization", &format!("Bearer {token}"))],
            b"",
        );
        assert_eq!(ok.status, 200);
    }
    let v = s.request("POST", "/api/v1/validate", &[], spec().as_bytes());
    assert_eq!(v.error().0, 401);
    // A method the route does not serve is a JSON 405, with or without a token (it writes
    // nothing, so there is nothing to authorize).
    assert_eq!(
        s.request("DELETE", &format!("/api/v1/runs/{}", f.runs[0]), &[], b"")
            .error()
            .0,
        405
    );
    let bearer = format!("Bearer {push}");
    let del = s.request(
        "DELETE",
        &format!("/api/v1/runs/{}", f.runs[0]),
        &[("Authorization", &bearer)],
        b"",
    );
    assert_eq!(del.error().0, 405);
    assert_eq!(
        s.get(&format!("/api/v1/runs/{}", f.runs[0])).error().0,
        401,
        "still there, still guarded"
    );
    let v = s.request(
        "POST",
        "/api/v1/validate",
        &[("Authorization", &format!("Bearer {read}"))],
        spec().as_bytes(),
    );
    assert_eq!(v.status, 200);
    // Health, metrics and the API document stay open.
    assert_eq!(s.get("/healthz").status, 200);
    assert_eq!(s.get("/metrics").status, 200);
    assert_eq!(s.get("/api/openapi.json").status, 200);
    // A token created while the server runs works at once; a revoked one stops working.
    let late = create("read");
    let h = format!("Bearer {late}");
    assert_eq!(
        s.request("GET", "/api/v1/runs", &[("Authorization", &h)], b"")
            .status,
        200
    );
    let id = &sha256_hex(late.as_bytes())[..12];
    let out = yardstick()
        .args(["server", "token", "revoke", id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        s.request("GET", "/api/v1/runs", &[("Authorization", &h)], b"")
            .status,
        401
    );
    let log = s.stderr();
    for t in [&read, &push, &late] {
        assert!(!log.contains(t.as_str()), "a token in the log: {log}");
    }
    assert!(log.contains("\"status\":401"), "{log}");
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn server_refuses_bad_setups_with_exit_2() {
    let f = fixture();
    let run = |args: &[&str]| {
        let mut c = yardstick();
        c.arg("server").args(args);
        let mut child = c
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .unwrap();
                return (status.code(), err);
            }
            if start.elapsed() > WAIT {
                let _ = child.kill();
                panic!("`server {args:?}` did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let store = f.store.to_str().unwrap();
    let (code, err) = run(&["--listen", "0.0.0.0:0", "--store", store]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--insecure-http"), "{err}");
    let (code, err) = run(&["--listen", "[::]:0", "--store", store]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = run(&[
        "--listen",
        "0.0.0.0:0",
        "--store",
        store,
        "--tls-cert",
        "c.pem",
        "--tls-key",
        "k.pem",
    ]);
    assert_eq!(code, Some(2), "{err}");
    // A store that cannot be created (its parent is a file) is refused naming --store.
    let file = f.store.parent().unwrap().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("store");
    let (code, err) = run(&[
        "--listen",
        "127.0.0.1:0",
        "--store",
        under_file.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--store") && err.contains("cannot create it"),
        "{err}"
    );
    let (code, err) = run(&["--listen", "not-an-address"]);
    assert_eq!(code, Some(2), "{err}");
}

/// `yardstick server --store DIR` on a directory that does not exist yet creates it (a new team
/// server that will receive pushes), says so, and serves an empty store.
#[test]
fn a_store_that_does_not_exist_yet_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let s = ServerProc::start(&store, &[]);
    assert_eq!(s.get("/healthz").status, 200);
    let runs = s.get("/api/v1/runs");
    assert_eq!(runs.status, 200);
    assert_eq!(runs.json()["runs"].as_array().map(Vec::len), Some(0));
    assert!(store.is_dir());
    assert!(
        s.stderr().contains(&format!(
            "created a new, empty store at {}",
            store.display()
        )),
        "{}",
        s.stderr()
    );
}

#[test]
fn server_stops_cleanly_on_sigterm() {
    let f = fixture();
    let mut s = ServerProc::start(&f.store, &[]);
    assert_eq!(s.get("/healthz").status, 200);
    let pid = s.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let status = s.wait();
    assert_eq!(status.code(), Some(0), "stderr: {}", s.stderr());
    assert!(TcpStream::connect(&s.addr).is_err(), "still listening");
}

#[test]
fn server_serves_https_with_a_certificate_and_key() {
    let test = "server::server_serves_https_with_a_certificate_and_key";
    let tools = [("openssl", "version"), ("curl", "--version")]
        .iter()
        .all(|(t, v)| {
            Command::new(t)
                .arg(v)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
    if crate::external::require(
        "openssl and curl",
        test,
        "apt-get install openssl curl",
        tools.then_some(()),
    )
    .is_none()
    {
        return;
    }
    let f = fixture();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=yardstick-test"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let (c, k) = (cert.to_str().unwrap(), key.to_str().unwrap());
    // With TLS, a non-loopback address needs no --insecure-http.
    let mut s = ServerProc::start_on(
        "0.0.0.0:0",
        &f.store,
        &["--tls-cert", c, "--tls-key", k, "--require-read-token"],
    );
    assert!(s.url.starts_with("https://0.0.0.0:"), "{}", s.url);
    let https = format!("https://{}", s.addr);
    let curl = |path: &str, extra: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "30", "--cacert", c])
            .args(extra)
            .arg(format!("{https}{path}"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(curl("/healthz", &[])["status"], "ok");
    assert!(
        curl("/api/v1/runs", &[])["error"].is_string(),
        "a token is still needed"
    );
    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(&s.addr).unwrap();
    plain.set_read_timeout(Some(WAIT)).unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!answer.starts_with(b"HTTP/1.1 200"), "{answer:?}");
    // A key that is not the certificate's is refused at start, with exit 2.
    let wrong = yardstick()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            c,
            "--tls-key",
            c,
            "--store",
        ])
        .arg(&f.store)
        .output()
        .unwrap();
    assert_eq!(
        wrong.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(s.wait().code(), Some(0), "{}", s.stderr());
}

#[test]
fn server_serves_a_postgresql_warehouse_with_run_directories_from_the_store() {
    let test = "server::server_serves_a_postgresql_warehouse_with_run_directories_from_the_store";
    let Some(cluster) = pg::PgCluster::start(test) else {
        return;
    };
    // The role docs/warehouse.md recommends: owns the warehouse, no superuser.
    let url = cluster.create_owned_db("ys_server", "ys_app");
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join("spec.yaml");
    std::fs::write(&spec_path, spec()).unwrap();
    let store = dir.path().join("store");
    let mut runs = Vec::new();
    for _ in 0..2 {
        let out = crate::common::run_spec(&spec_path, &store, &["--warehouse", &url]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        runs.push(json(&out)["run_id"].as_str().unwrap().to_string());
    }
    // The store directory has no SQLite warehouse: the runs are only in PostgreSQL.
    assert!(!store.join("yardstick.db").exists());
    let s = ServerProc::start(&store, &["--warehouse", &url]);
    let list = s.get("/api/v1/runs?name=server-tiny").json();
    let cli = cli_json(&["runs", "list", "--store", &url]);
    assert_eq!(list["runs"], cli["runs"]);
    assert_eq!(list["runs"].as_array().unwrap().len(), 2);
    assert_eq!(
        s.get("/api/v1/runs?name=x%27%20OR%201%3D1--").json()["runs"],
        Value::Array(vec![])
    );
    let (a, b) = (&runs[0], &runs[1]);
    // The warehouse row's location is the URL; the run directory comes from --store.
    let one = s.get(&format!("/api/v1/runs/{a}")).json();
    assert_eq!(one["manifest"]["run_id"], a.as_str());
    let cmp = s.get(&format!("/api/v1/compare?a={a}&b={b}"));
    assert_eq!(cmp.status, 200, "{}", String::from_utf8_lossy(&cmp.body));
    assert!(!cmp.json()["metrics"].as_array().unwrap().is_empty());
    let t = s
        .get("/api/v1/trend?benchmark=server-tiny&metric=ttft_ms&statistic=p50")
        .json();
    assert_eq!(t["series"][0]["points"].as_array().unwrap().len(), 2, "{t}");
    let r = s.get(&format!("/api/v1/runs/{b}/artifacts/spec.yaml"));
    assert_eq!(r.status, 200);
    assert_eq!(r.body, spec().as_bytes());
}

#[test]
fn server_gates_a_run_like_the_cli_and_lists_baselines() {
    let f = fixture();
    // A store of its own: saving a baseline must not change the other tests' store.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_dir(&f.store, &store);
    let st = store.to_str().unwrap();
    let (a, b) = (&f.runs[0], &f.runs[1]);
    let s = ServerProc::start(&store, &[]);
    assert_eq!(
        s.get("/api/v1/baselines").json()["baselines"],
        Value::Array(vec![])
    );
    let (status, msg) = s.get(&format!("/api/v1/runs/{b}/gate")).error();
    assert_eq!(status, 404, "no baseline yet: {msg}");

    let g = s.get(&format!("/api/v1/runs/{b}/gate?baseline={a}"));
    assert_eq!(g.status, 200, "{}", String::from_utf8_lossy(&g.body));
    let cli = yardstick()
        .args(["--json", "gate", b, "--baseline", a, "--store", st])
        .output()
        .unwrap();
    assert_eq!(g.json(), json(&cli), "the same as `gate --json`");
    let cli_gate = json(&cli);

    let saved = yardstick()
        .args(["baseline", "save", a, "--store", st])
        .output()
        .unwrap();
    assert!(
        saved.status.success(),
        "{}",
        String::from_utf8_lossy(&saved.stderr)
    );
    let list = s.get("/api/v1/baselines?benchmark=server-tiny").json();
    let cli = cli_json(&["baseline", "list", "--store", st]);
    assert_eq!(list, cli);
    assert_eq!(list["baselines"][0]["run_id"], a.as_str());
    assert!(
        s.get("/api/v1/baselines?profile=nosuch").json()["baselines"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let auto = s.get(&format!("/api/v1/runs/{b}/gate")).json();
    assert_eq!(auto["comparison"]["baseline_run"], a.as_str());
    let t = s
        .get("/api/v1/trend?benchmark=server-tiny&metric=ttft_ms")
        .json();
    assert_eq!(t["series"][0]["baseline_run"], a.as_str());
    // `yardstick gate` recorded its verdicts in the warehouse: the trend shows them.
    let point = |id: &str| {
        t["series"][0]["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["run_id"] == id)
            .unwrap()
            .clone()
    };
    let gated = cli_gate["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft_ms" && m["statistic"] == t["statistic"])
        .unwrap()["verdict"]
        .clone();
    assert_eq!(point(b)["verdict"], gated);
    assert_eq!(point(b)["gated_against"], a.as_str());
    assert_eq!(point(a)["verdict"], Value::Null);
    // A baseline is a run, never a file on the server's disk.
    for bad in ["/etc/passwd", "..%2F..%2Fetc%2Fpasswd", "Cargo.toml"] {
        let (status, msg) = s
            .get(&format!("/api/v1/runs/{b}/gate?baseline={bad}"))
            .error();
        assert!(status == 404 || status == 400, "{bad}: {status} {msg}");
    }
}

/// schemathesis (PyPI), next to `$YARDSTICK_PYTHON` or in the venv `.ci/run` makes.
fn schemathesis(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("YARDSTICK_PYTHON")
        .map(PathBuf::from)
        .and_then(|p| p.parent().map(|d| d.join("schemathesis")))
        .into_iter()
        .chain([PathBuf::from(
            "/var/tmp/yardstick-pytools/venv/bin/schemathesis",
        )])
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    external::require(
        "schemathesis",
        test,
        "schemathesis from PyPI in the venv of YARDSTICK_PYTHON (.ci/run installs it)",
        found,
    )
}

/// A client nobody here wrote fuzzes the running server from its own OpenAPI document: no
/// response is a 5xx, every status, content type, header and body conforms to the document, and
/// a method a route does not serve is a 405. (The checks of how strictly requests are validated
/// are left out: `since`/`until` take ages, dates and RFC 3339 times, which no JSON Schema
/// pattern captures exactly.)
#[test]
fn server_answers_schemathesis_within_its_openapi_document() {
    let Some(st) = schemathesis("server_answers_schemathesis_within_its_openapi_document") else {
        return;
    };
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    // schemathesis keeps a `.schemathesis/` cache in its working directory: not in the clone.
    let scratch = tempfile::tempdir().unwrap();
    let out = Command::new(&st)
        .current_dir(scratch.path())
        .args([
            "run",
            &format!("{}/api/openapi.json", s.url),
            "--url",
            &s.url,
        ])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_headers_conformance,response_schema_conformance,unsupported_method",
            "--max-examples",
            "40",
            "--seed",
            "1",
            "--request-timeout",
            "20",
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("run schemathesis");
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text
        .lines()
        .skip_while(|l| !l.contains("SUMMARY"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        out.status.success(),
        "schemathesis found failures:\n{text}\n{}\nserver stderr:\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr()
    );
    // "  1017 generated, 1017 passed"
    let cases = text
        .lines()
        .find_map(|l| l.trim().split_once(" generated,"))
        .and_then(|(n, _)| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(cases >= 100, "too few cases to mean anything: {summary}");
    eprintln!("schemathesis: {cases} cases, 0 failures against /api/openapi.json");
    // Not one request made the server answer 5xx: its access log says so too.
    assert!(
        !s.stderr().contains("\"status\":5"),
        "a 5xx in the access log: {}",
        s.stderr()
    );
}
