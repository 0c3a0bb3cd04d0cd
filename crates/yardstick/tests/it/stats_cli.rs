//! `yardstick stats summarize|compare` driven through the built binary: JSON shape, exit codes,
//! stdin, bad input, and snapshots of the human output.

use crate::common::yardstick;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

/// Runs with `stdin` piped in. Resamples stay modest: the test binary is a debug build.
fn run(args: &[&str], stdin: &str) -> Output {
    let mut child = yardstick()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A deterministic, skewed, latency-like series: `n` values around `centre`.
fn series(n: usize, centre: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let u = ((i * 7919 + 13) % 1009) as f64 / 1009.0;
            let round = |x: f64| (x * 1000.0).round() / 1000.0;
            round(centre * (1.0 + 0.3 * (u - 0.5)) + 5.0 * u.powi(6))
        })
        .collect()
}

fn lines(values: &[f64]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

const SUMMARY_KEYS: [&str; 13] = [
    "n", "mean", "stddev", "min", "max", "median", "p50", "p90", "p95", "p99", "cv", "ci",
    "outliers",
];

fn assert_summary_shape(s: &Value, n: usize) {
    for k in SUMMARY_KEYS {
        assert!(s.get(k).is_some(), "missing {k} in {s}");
    }
    assert_eq!(s["n"], n);
    let ci = &s["ci"];
    assert!(ci["level"].is_f64());
    for k in ["mean", "median"] {
        let pair = ci[k]
            .as_array()
            .unwrap_or_else(|| panic!("ci.{k} is {}", ci[k]));
        assert_eq!(pair.len(), 2);
        assert!(pair[0].as_f64().unwrap() <= pair[1].as_f64().unwrap());
    }
    for k in ["tukey_mild", "tukey_severe", "mad"] {
        assert!(s["outliers"][k].is_u64(), "outliers.{k}");
    }
    for k in ["min", "p50", "p90", "p95", "p99", "max"].windows(2) {
        assert!(
            s[k[0]].as_f64().unwrap() <= s[k[1]].as_f64().unwrap(),
            "{k:?}"
        );
    }
}

#[test]
fn summarize_json_has_the_documented_keys_and_refuses_unsupported_cis() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.txt", &lines(&series(100, 50.0)));
    let s = json(&run(
        &[
            "stats",
            "summarize",
            small.to_str().unwrap(),
            "--json",
            "--resamples",
            "300",
        ],
        "",
    ));
    assert_summary_shape(&s, 100);
    // n = 100 supports p50/p90/p95 at 95 % but not p99 (needs 299): null, never invented.
    assert!(s["ci"]["p95"].is_array());
    assert!(s["ci"]["p99"].is_null(), "{}", s["ci"]);
    assert_eq!(s["ci"]["min_n"]["p99"], 299);
    assert_eq!(s["ci"]["resamples"], 300);

    let big = write(dir.path(), "big.txt", &lines(&series(299, 50.0)));
    let s = json(&run(
        &[
            "stats",
            "summarize",
            big.to_str().unwrap(),
            "--json",
            "--resamples",
            "200",
        ],
        "",
    ));
    let p99 = s["ci"]["p99"].as_array().expect("p99 CI exists at n = 299");
    assert!(p99[0].as_f64().unwrap() <= s["p99"].as_f64().unwrap());
    assert!(s["p99"].as_f64().unwrap() <= p99[1].as_f64().unwrap());
}

#[test]
fn summarize_reads_stdin_by_default_and_with_dash_and_json_arrays() {
    let text = "# warm latencies (ms)\n12.5\n\n13.0 # slow\n11.75\n14\n";
    let a = json(&run(
        &["--json", "stats", "summarize", "--resamples", "100"],
        text,
    ));
    let b = json(&run(
        &["stats", "summarize", "-", "--json", "--resamples", "100"],
        text,
    ));
    assert_eq!(a, b);
    assert_eq!(a["n"], 4);
    assert_eq!(a["file"], "<stdin>");
    assert_eq!(a["min"], 11.75);
    assert_eq!(a["median"], 12.75);
    let arr = json(&run(
        &["stats", "summarize", "--json", "--resamples", "100"],
        "[12.5, 13.0, 11.75, 14]",
    ));
    assert_eq!(arr["mean"], a["mean"]);
}

#[test]
fn a_single_sample_has_null_spread_and_intervals() {
    let s = json(&run(&["stats", "summarize", "--json"], "7\n"));
    assert_eq!(s["n"], 1);
    assert!(s["stddev"].is_null() && s["cv"].is_null());
    assert!(s["ci"]["mean"].is_null() && s["ci"]["p50"].is_null());
}

#[test]
fn bad_input_exits_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("word.txt", "1.0\n2.0\nfast\n", "word.txt:3"),
        ("nan.txt", "1\nNaN\n", "nan.txt:2"),
        ("inf.txt", "# c\ninf\n", "inf.txt:2"),
        ("empty.txt", "", "no samples"),
        ("comments.txt", "# only\n\n", "no samples"),
        ("json.txt", "[1, 2, \"x\"]", "json.txt:1"),
    ];
    for (name, text, expect) in cases {
        let p = write(dir.path(), name, text);
        let o = run(&["stats", "summarize", p.to_str().unwrap()], "");
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{name}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{name}");
    }
    let o = run(&["stats", "summarize"], "1\n2\nx\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("<stdin>:3"), "{}", stderr(&o));
    let missing = dir.path().join("missing.txt");
    let o = run(&["stats", "summarize", missing.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&["stats", "summarize", "--confidence", "1.5"], "1\n");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&["stats", "compare", "-", "-"], "1\n");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn compare_json_keys_direction_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let base = series(200, 50.0);
    let slower: Vec<f64> = series(150, 50.0).iter().map(|x| x * 1.2).collect();
    let a = write(dir.path(), "a.txt", &lines(&base));
    let b = write(dir.path(), "b.txt", &lines(&slower));
    let same = write(dir.path(), "same.txt", &lines(&series(200, 50.0)));
    let (a, b, same) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        same.to_str().unwrap(),
    );
    let args = |x: &str, y: &str| -> Vec<String> {
        ["stats", "compare", x, y, "--json", "--resamples", "300"]
            .map(String::from)
            .to_vec()
    };
    let run_s = |v: Vec<String>| run(&v.iter().map(String::as_str).collect::<Vec<_>>(), "");

    let c = json(&run_s(args(a, b)));
    for k in [
        "a",
        "b",
        "mann_whitney_p",
        "welch_p",
        "ratio_of_medians",
        "ratio_ci",
        "cliffs_delta",
        "verdict",
    ] {
        assert!(c.get(k).is_some(), "missing {k}");
    }
    assert_summary_shape(&c["a"], 200);
    assert_summary_shape(&c["b"], 150);
    let ratio = c["ratio_of_medians"].as_f64().unwrap();
    let want = median(&slower) / median(&base);
    assert!((ratio - want).abs() < 1e-12 * want, "{ratio} vs {want}");
    let ci = c["ratio_ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= ratio && ratio <= ci[1].as_f64().unwrap());
    assert_eq!(c["verdict"], "b_greater");
    assert!(c["cliffs_delta"].as_f64().unwrap() > 0.0);
    assert!(c["mann_whitney_p"].as_f64().unwrap() < 0.05);

    let r = json(&run_s(args(b, a)));
    assert_eq!(r["verdict"], "a_greater");
    assert!(r["cliffs_delta"].as_f64().unwrap() < 0.0);

    let s = json(&run_s(args(a, same)));
    assert_eq!(s["verdict"], "same");
    assert_eq!(s["ratio_of_medians"], 1.0);
}

#[test]
fn same_seed_same_output_and_the_seed_is_used() {
    let text = lines(&series(80, 20.0));
    let go = |seed: &str| {
        run(
            &[
                "stats",
                "summarize",
                "--json",
                "--resamples",
                "200",
                "--seed",
                seed,
            ],
            &text,
        )
    };
    let (x, y, z) = (json(&go("7")), json(&go("7")), json(&go("8")));
    assert_eq!(x, y);
    assert_eq!(x["ci"]["seed"], 7);
    assert_ne!(
        x["ci"]["median"], z["ci"]["median"],
        "a different seed draws different resamples"
    );
    // The mean's interval is ABC: analytic, no resampling, so the seed does not move it.
    assert_eq!(x["ci"]["mean_method"], "abc");
    assert_eq!(x["ci"]["median_method"], "bca");
    assert_eq!(x["ci"]["mean"], z["ci"]["mean"]);
}

#[test]
fn human_output_snapshots() {
    let text = lines(&series(120, 40.0));
    let o = run(
        &["stats", "summarize", "--resamples", "500", "--seed", "1"],
        &text,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("summarize_human", String::from_utf8(o.stdout).unwrap());

    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.txt", &lines(&series(120, 40.0)));
    let b = write(dir.path(), "b.txt", &lines(&series(90, 44.0)));
    let o = yardstick()
        .current_dir(dir.path())
        .args([
            "stats",
            "compare",
            "a.txt",
            "b.txt",
            "--resamples",
            "500",
            "--seed",
            "1",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = (a, b);
    insta::assert_snapshot!("compare_human", String::from_utf8(o.stdout).unwrap());
}
