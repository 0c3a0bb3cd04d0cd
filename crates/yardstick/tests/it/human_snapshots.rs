//! Snapshots of what people read (issue 17, section 4: outputs are contracts): the human, not
//! JSON, output of `validate` (a good and a bad spec), `metrics ttft`, `compare`, `gate` and
//! `report` through the built binary. The runs are STREAM results imported from fixed files,
//! so every number is deterministic and nothing waits on a simulator; what still varies (run
//! ids, times, temporary paths, the tool version) is redacted before the snapshot.

use std::path::Path;
use std::process::Output;

use crate::common::{json, yardstick};

/// STREAM output with the four kernels at these best rates (MB/s).
fn stream_output(copy: f64, scale: f64, add: f64, triad: f64) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../yardstick-workloads/tests/fixtures/stream_omp.txt"),
    )
    .unwrap();
    text.replace("21853.4", &format!("{copy:.1}"))
        .replace("15610.9", &format!("{scale:.1}"))
        .replace("17811.7", &format!("{add:.1}"))
        .replace("17890.2", &format!("{triad:.1}"))
}

/// Imports three STREAM runs (one file each) with the triad rate at `triad` ± 1 % into
/// `store`; returns the run id.
pub(crate) fn import(dir: &Path, store: &Path, name: &str, triad: f64) -> String {
    let mut files = Vec::new();
    for (i, k) in [0.99, 1.0, 1.01].iter().enumerate() {
        let path = dir.join(format!("{name}-{i}.txt"));
        std::fs::write(
            &path,
            stream_output(21853.4 * k, 15610.9 * k, 17811.7 * k, triad * k),
        )
        .unwrap();
        files.push(path);
    }
    let out = yardstick()
        .args(["import", "stream"])
        .args(&files)
        .arg("--store")
        .arg(store)
        .args([
            "--profile",
            "cpu-test_linux6.1",
            "--name",
            "stream-snap",
            "--json",
        ])
        .output()
        .unwrap();
    let v = json(&out);
    assert!(out.status.success(), "{v}");
    v["run_id"].as_str().expect("run_id").to_string()
}

/// Replaces what varies between runs of the test: run ids (`[RUN-A]`, ...), temporary paths,
/// RFC 3339 times and the tool's version.
fn redact(text: &str, runs: &[(&str, &str)], dir: &Path) -> String {
    let mut s = text.replace(&dir.display().to_string(), "[TMP]");
    for (id, label) in runs {
        s = s.replace(id, label);
    }
    s = s.replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
    redact_times(&s)
}

/// `2026-01-02T03:04:05.678Z` (any fraction, `Z` or an offset) → `[TIME]`.
fn redact_times(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let digits = |from: usize, n: usize| {
        b.len() >= from + n && b[from..from + n].iter().all(u8::is_ascii_digit)
    };
    while i < b.len() {
        let is_time = digits(i, 4)
            && b.get(i + 4) == Some(&b'-')
            && digits(i + 5, 2)
            && b.get(i + 7) == Some(&b'-')
            && digits(i + 8, 2)
            && matches!(b.get(i + 10), Some(b'T' | b' '))
            && digits(i + 11, 2)
            && b.get(i + 13) == Some(&b':')
            && digits(i + 14, 2);
        if !is_time {
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let mut j = i + 16;
        while j < b.len() && (b[j].is_ascii_digit() || matches!(b[j], b':' | b'.')) {
            j += 1;
        }
        if b.get(j) == Some(&b'Z') {
            j += 1;
        } else if matches!(b.get(j), Some(b'+' | b'-')) && digits(j + 1, 2) {
            j += 3;
            if b.get(j) == Some(&b':') && digits(j + 1, 2) {
                j += 3;
            }
        }
        out.push_str("[TIME]");
        i = j;
    }
    out
}

/// Standard output, then standard error under a marker when there is any, then the exit code.
fn shown(out: &Output) -> String {
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    if !err.is_empty() {
        s.push_str("--- stderr ---\n");
        s.push_str(&err);
    }
    s.push_str(&format!("--- exit {:?} ---\n", out.status.code()));
    s
}

#[test]
fn redaction_replaces_times_runs_and_paths_only() {
    let dir = Path::new("/tmp/xyz");
    assert_eq!(
        redact(
            "run 01ABC at 2026-01-02T03:04:05.123Z in /tmp/xyz/store, 2026-01-02 03:04:05+02:00; 2026 cores",
            &[("01ABC", "[RUN-A]")],
            dir
        ),
        "run [RUN-A] at [TIME] in [TMP]/store, [TIME]; 2026 cores"
    );
}

#[test]
fn validate_a_good_and_a_bad_spec() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        crate::common::command_spec("snap-good", "[sh, -c, \"true\"]", &[]),
    )
    .unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata: {name: snap-bad}\nspec:\n  mode: realism\n  trials: {replicates: 1, warmup: {runs: 1}, confidenceLevel: 1.5, outlierPolicy: none}\n  layers: {micro: [{kind: memory}]}\n",
    )
    .unwrap();
    let out = yardstick().arg("validate").arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    insta::assert_snapshot!("validate_good", redact(&shown(&out), &[], dir.path()));
    let out = yardstick().arg("validate").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    insta::assert_snapshot!("validate_bad", redact(&shown(&out), &[], dir.path()));
}

#[test]
fn metrics_ttft() {
    let out = yardstick().args(["metrics", "ttft"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let text = shown(&out);
    assert!(text.contains("ttft_ms"), "{text}");
    insta::assert_snapshot!("metrics_ttft", text);
}

#[test]
fn compare_gate_and_report_of_imported_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // B's triad is 20 % slower than A's; the other kernels are the same.
    let a = import(dir.path(), &store, "a", 17890.2);
    let b = import(dir.path(), &store, "b", 17890.2 * 0.8);
    let runs = [(a.as_str(), "[RUN-A]"), (b.as_str(), "[RUN-B]")];
    let cmd = |args: &[&str]| {
        yardstick()
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap()
    };

    let out = cmd(&["compare", &a, &b]);
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    insta::assert_snapshot!("compare", redact(&shown(&out), &runs, dir.path()));

    let out = cmd(&["baseline", "save", &a]);
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let out = cmd(&["gate", &b, "--baseline", "auto"]);
    // A 20 % slower triad fails the gate (exit 3).
    assert_eq!(out.status.code(), Some(3), "{}", shown(&out));
    insta::assert_snapshot!("gate", redact(&shown(&out), &runs, dir.path()));

    let out = cmd(&["report", &b]);
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let text = shown(&out);
    // Human units: the triad's 14.1 GB/s, not 14094.7 MB/s.
    assert!(text.contains("memory.triad value  14.1 GB/s"), "{text}");
    insta::assert_snapshot!("report", redact(&text, &runs, dir.path()));
}
