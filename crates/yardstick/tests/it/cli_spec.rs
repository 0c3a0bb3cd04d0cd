//! The spec commands driven through the built binary: validate, init, schema, global flags.

use crate::common::yardstick;

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn run_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = yardstick()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The child may exit before reading everything (e.g. a too-large input); that is fine.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn template(name: &str) -> Vec<u8> {
    let o = yardstick()
        .args(["init", "--template", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

#[test]
fn every_init_template_pipes_into_validate() {
    for t in ["serve", "train", "micro", "full"] {
        let o = run_with_stdin(&["validate", "-"], &template(t));
        assert_eq!(o.status.code(), Some(0), "{t}: {}", stderr(&o));
        assert!(stderr(&o).contains("<stdin>: valid"), "{}", stderr(&o));
    }
}

#[test]
fn replicates_two_exits_2_with_line_and_rule() {
    let full = String::from_utf8(template("full")).unwrap();
    let line = full
        .lines()
        .position(|l| l.contains("replicates: 3"))
        .unwrap()
        + 1;
    let o = run_with_stdin(
        &["validate", "-"],
        full.replacen("replicates: 3", "replicates: 2", 1)
            .as_bytes(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("<stdin>:{line}:")) && err.contains("error[trials-replicates]"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn json_output_lists_diagnostics_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yaml");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&good, template("micro")).unwrap();
    std::fs::write(
        &bad,
        String::from_utf8(template("micro"))
            .unwrap()
            .replace("confidenceLevel: 0.95", "confidenceLevel: 1.5"),
    )
    .unwrap();
    let o = yardstick()
        .args(["validate", "--json"])
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], false);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["valid"], true);
    assert_eq!(files[0]["diagnostics"].as_array().unwrap().len(), 0);
    assert_eq!(files[1]["valid"], false);
    let d = &files[1]["diagnostics"][0];
    assert_eq!(d["rule"], "trials-confidence");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["path"], "spec.trials.confidenceLevel");
    assert!(d["line"].as_u64().unwrap() > 1 && d["col"].as_u64().unwrap() > 1);
    assert!(d["hint"].as_str().unwrap().contains("0.95"));
}

#[test]
fn unreadable_inputs_are_invalid_input_not_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("binary.yaml");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0, 0, 1, 2]).unwrap();
    let empty = dir.path().join("empty.yaml");
    std::fs::write(&empty, "").unwrap();
    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&latin1, b"apiVersion: yardstick/v1\nkind: caf\xe9\n").unwrap();
    let cases = [
        (dir.path().join("missing.yaml"), "cannot read the spec"),
        (dir.path().to_path_buf(), "cannot read the spec"),
        (binary, "binary"),
        (empty, "empty"),
        (latin1, "not UTF-8"),
    ];
    for (path, want) in cases {
        let o = yardstick().arg("validate").arg(&path).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}: {}",
            path.display(),
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(
            err.contains("error[input]") && err.contains(want),
            "{}: {err}",
            path.display()
        );
    }
    // All files are reported in one go.
    let o = yardstick()
        .args(["validate", "nope1.yaml", "nope2.yaml"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        err.contains("nope1.yaml:1:1") && err.contains("nope2.yaml:1:1"),
        "{err}"
    );
}

#[test]
fn a_ten_megabyte_file_is_refused_quickly_and_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    let line = "# padding padding padding padding padding padding padding padding padding\n";
    let text = line.repeat(10 * 1024 * 1024 / line.len() + 1);
    std::fs::write(&big, &text).unwrap();
    let o = yardstick().arg("validate").arg(&big).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a spec is at most 8388608 bytes"),
        "{}",
        stderr(&o)
    );
    // Through stdin too.
    let o = run_with_stdin(&["validate", "-"], text.as_bytes());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("error[input]"), "{}", stderr(&o));
}

#[test]
fn hostile_yaml_is_bounded() {
    // Deep nesting: no stack overflow.
    let o = run_with_stdin(&["validate", "-"], "[".repeat(1_000_000).as_bytes());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[yaml-limits]"), "{}", stderr(&o));
    let deep: String = (0..1000)
        .map(|i| format!("{}a:\n", " ".repeat(i)))
        .collect();
    let o = run_with_stdin(&["validate", "-"], deep.as_bytes());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("yaml-limits"), "{}", stderr(&o));
    // Billion laughs: 9^9 expansions if unbounded.
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
    for w in names.windows(2) {
        let refs = vec![format!("*{}", w[0]); 9].join(",");
        bomb.push_str(&format!("{}: &{} [{refs}]\n", w[1], w[1]));
    }
    let o = run_with_stdin(&["validate", "-"], bomb.as_bytes());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[yaml-limits]"), "{}", stderr(&o));
}

#[test]
fn init_writes_files_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.yaml");
    let o = yardstick()
        .args(["init", "--template", "train", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("kind: train")
    );
    let o = yardstick()
        .args(["init", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists") && stderr(&o).contains("--force"));
    let o = yardstick()
        .args(["init", "--force", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("kind: serve")
    );
    let o = yardstick().arg("validate").arg(&path).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn schema_is_json_describing_benchmarkrun() {
    let o = yardstick().arg("schema").output().unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["title"], "BenchmarkRun");
    assert_eq!(v["additionalProperties"], false);
    let required: Vec<&str> = v["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(required.contains(&"apiVersion") && required.contains(&"spec"));
}

#[test]
fn usage_errors_exit_2_and_version_prints() {
    let o = yardstick()
        .args(["validate", "--no-such-flag", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = yardstick()
        .args(["init", "--template", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("serve"), "{}", stderr(&o));
    let o = yardstick().arg("--version").output().unwrap();
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("yardstick "));
}

#[test]
fn quiet_hides_warnings_and_deny_warnings_fails_on_them() {
    let spec = "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata: {name: x}\nspec:\n  mode: exploratory\n  comparison: {variables: [a, b]}\n  trials: {replicates: 3, warmup: {runs: 1}, confidenceLevel: 0.95, outlierPolicy: none}\n  layers: {micro: [{kind: memory}]}\n";
    let o = run_with_stdin(&["validate", "-"], spec.as_bytes());
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("warning[comparison-one-variable]"));
    let o = run_with_stdin(&["validate", "-q", "-"], spec.as_bytes());
    assert_eq!(o.status.code(), Some(0));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let o = run_with_stdin(&["validate", "--deny-warnings", "-"], spec.as_bytes());
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let bad = b"apiVersion: yardstick/v1\n";
    let o = run_with_stdin(&["validate", "-"], bad);
    assert!(
        !stderr(&o).contains('\x1b'),
        "piped output has no ANSI escapes"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_yardstick"))
        .args(["validate", "--color", "always", "-"])
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bad).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(stderr(&o).contains("\x1b[1;31merror"), "{}", stderr(&o));
}

/// Every example spec under examples/ validates as written (the README and docs tell users to
/// run them as they are): a field renamed or a rule added cannot leave one broken.
#[test]
fn every_example_spec_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let out = crate::common::yardstick()
            .arg("validate")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} does not validate:\n{}{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} example specs found");
}
