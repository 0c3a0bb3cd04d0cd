//! `yardstick schema --output NAME`: the JSON Schema of a command's `--json` output, checked
//! against real outputs of that command (and made to fail on a broken one).

use crate::common::{json, yardstick};

fn schema(name: &str) -> serde_json::Value {
    let o = yardstick()
        .args(["schema", "--output", name])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    json(&o)
}

/// Validates `instance` against the schema of `name`, listing every violation.
pub(crate) fn assert_conforms(name: &str, instance: &serde_json::Value) {
    let s = schema(name);
    let validator = jsonschema::validator_for(&s).expect("a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:#?}");
}

fn run_json(args: &[&str], stdin: Option<&str>) -> serde_json::Value {
    use std::io::Write;
    let mut child = yardstick()
        .arg("--json")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or("").as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    json(&o)
}

#[test]
fn every_listed_output_has_a_schema_and_unknown_names_are_refused() {
    let o = yardstick()
        .args(["--json", "schema", "--list"])
        .output()
        .unwrap();
    let list = json(&o);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"benchmark-run") && names.contains(&"stats-compare"),
        "{names:?}"
    );
    for name in names {
        let s = schema(name);
        assert!(
            jsonschema::validator_for(&s).is_ok(),
            "{name}: not a valid schema"
        );
    }
    // The default is still the spec's schema.
    let default = yardstick().arg("schema").output().unwrap();
    assert_eq!(json(&default), schema("benchmark-run"));
    let bad = yardstick()
        .args(["schema", "--output", "nope"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no schema for output `nope`") && err.contains("stats-compare"),
        "{err}"
    );
}

#[test]
fn real_outputs_conform_to_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    let sample = |base: f64| {
        (0..40)
            .map(|i| format!("{}\n", base + f64::from(i % 7) * 0.5))
            .collect::<String>()
    };
    std::fs::write(&a, sample(10.0)).unwrap();
    std::fs::write(&b, sample(12.0)).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    assert_conforms(
        "stats-summarize",
        &run_json(&["stats", "summarize", a], None),
    );
    // One sample: nulls where n cannot support a value.
    assert_conforms(
        "stats-summarize",
        &run_json(&["stats", "summarize", "-"], Some("3.5\n")),
    );
    assert_conforms(
        "stats-compare",
        &run_json(&["stats", "compare", a, b], None),
    );
    assert_conforms("metrics", &run_json(&["metrics"], None));
}

#[test]
fn a_schema_rejects_an_output_that_breaks_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    std::fs::write(&a, "1\n2\n3\n4\n").unwrap();
    let mut v = run_json(&["stats", "summarize", a.to_str().unwrap()], None);
    v["n"] = serde_json::json!("four");
    let s = schema("stats-summarize");
    let validator = jsonschema::validator_for(&s).unwrap();
    assert!(!validator.is_valid(&v), "a string n must not conform");
    let mut m = run_json(&["metrics"], None);
    m[0]["direction"] = serde_json::json!("sideways");
    assert!(
        !jsonschema::validator_for(&schema("metrics"))
            .unwrap()
            .is_valid(&m)
    );
}

#[test]
fn compare_and_gate_outputs_conform_to_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // Imported STREAM runs: B's triad 20 % slower, so the gate fails with every field filled.
    let a = crate::human_snapshots::import(dir.path(), &store, "a", 17890.2);
    let b = crate::human_snapshots::import(dir.path(), &store, "b", 17890.2 * 0.8);
    let store = store.to_str().unwrap();
    assert_conforms(
        "compare",
        &run_json(&["compare", &a, &b, "--store", store], None),
    );
    let saved = yardstick()
        .args(["baseline", "save", &a, "--store", store])
        .output()
        .unwrap();
    assert!(saved.status.success());
    let o = yardstick()
        .args(["--json", "gate", &b, "--baseline", "auto", "--store", store])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let gate = json(&o);
    assert_eq!(gate["verdict"], "FAIL");
    assert_conforms("gate", &gate);
    let calibration = run_json(
        &[
            "gate",
            &b,
            "--baseline",
            &a,
            "--calibrate",
            "--store",
            store,
        ],
        None,
    );
    assert!(
        calibration["recorded"].as_u64().unwrap() >= 1,
        "{calibration}"
    );
    assert_conforms("gate-calibrate", &calibration);
}

/// `env compare`'s side-by-side rooflines, and the server's tokens as created and listed.
#[test]
fn env_compare_and_server_token_outputs_conform_to_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let a = crate::env_cli::micro_file(
        dir.path(),
        "a.json",
        "cpu-a",
        &[
            ("gemm.f32.1024", 200.0, "GFLOP/s"),
            ("memory.triad", 20.0, "GB/s"),
        ],
    );
    let b = crate::env_cli::micro_file(
        dir.path(),
        "b.json",
        "cpu-b",
        &[
            ("gemm.f32.1024", 100.0, "GFLOP/s"),
            ("memory.triad", 40.0, "GB/s"),
        ],
    );
    let compared = run_json(
        &[
            "env",
            "compare",
            &a,
            &b,
            "--dtype",
            "fp32",
            "--workload",
            "decode=2",
        ],
        None,
    );
    assert_eq!(compared["dtype"], "fp32", "{compared}");
    assert_conforms("env-compare", &compared);
    let store = dir.path().join("server-store");
    std::fs::create_dir_all(&store).unwrap();
    let store = store.to_str().unwrap();
    let created = run_json(
        &[
            "server", "token", "create", "--scope", "push", "--store", store,
        ],
        None,
    );
    assert_eq!(created["scope"], "push", "{created}");
    assert_conforms("server-token-create", &created);
    let listed = run_json(&["server", "token", "list", "--store", store], None);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["id"], created["id"]);
    assert_conforms("server-token-list", &listed);
}

#[test]
fn a_run_outcome_conforms_to_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        crate::common::command_spec("schema-run", "[sh, -c, \"true\"]", &[]),
    )
    .unwrap();
    let o = crate::common::run_spec(&spec, &dir.path().join("store"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["status"], "complete");
    assert_conforms("run", &v);
    // The status is one of the run's lifecycle states, nothing else.
    let mut bad = v.clone();
    bad["status"] = serde_json::json!("done");
    assert!(
        !jsonschema::validator_for(&schema("run"))
            .unwrap()
            .is_valid(&bad)
    );
}

#[test]
fn this_machines_capture_conforms_to_the_env_schema() {
    // The full capture (Python, torch and NCCL probes, NVML when there is a GPU) and a
    // minimal one: both are this machine's real output.
    let full = run_json(&["env"], None);
    assert!(
        full["machine_profile"]
            .as_str()
            .is_some_and(|p| !p.is_empty())
    );
    assert_conforms("env", &full);
    assert_conforms("env", &run_json(&["env", "--no-python", "--no-gpu"], None));
    let mut bad = full.clone();
    bad["memory"]["total_bytes"] = serde_json::json!(-1);
    assert!(
        !jsonschema::validator_for(&schema("env"))
            .unwrap()
            .is_valid(&bad)
    );
}

#[test]
fn validate_outputs_conform_to_their_schema_valid_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        crate::common::command_spec("schema-validate", "[sh, -c, \"true\"]", &[]),
    )
    .unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        crate::common::command_spec("schema-validate", "[sh, -c, \"true\"]", &[])
            .replace("replicates: 3", "replicates: 1"),
    )
    .unwrap();
    let ok = run_json(&["validate", good.to_str().unwrap()], None);
    assert_eq!(ok["valid"], true);
    assert_conforms("validate", &ok);
    let o = yardstick()
        .args(["--json", "validate"])
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let v = json(&o);
    assert_eq!(v["valid"], false);
    assert_eq!(v["files"][1]["diagnostics"][0]["rule"], "trials-replicates");
    assert_conforms("validate", &v);
    let mut broken = v.clone();
    broken["files"][1]["diagnostics"][0]["severity"] = serde_json::json!("fatal");
    assert!(
        !jsonschema::validator_for(&schema("validate"))
            .unwrap()
            .is_valid(&broken)
    );
}

#[test]
fn verify_outputs_conform_to_their_schema_in_both_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        crate::common::command_spec("schema-verify", "[sh, -c, \"true\"]", &[]),
    )
    .unwrap();
    let store = dir.path().join("store");
    let o = crate::common::run_spec(&spec, &store, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id = json(&o)["run_id"].as_str().unwrap().to_string();
    let verify = || {
        yardstick()
            .args(["--json", "verify", &id, "--store"])
            .arg(&store)
            .output()
            .unwrap()
    };
    let clean = json(&verify());
    assert_eq!(clean["ok"], true, "{clean}");
    assert_conforms("verify", &clean);
    // A modified artifact: exit 1, the problem listed, same schema.
    let run_dir = store.join("runs").join(&id);
    std::fs::write(run_dir.join("spec.yaml"), "tampered").unwrap();
    let o = verify();
    assert_eq!(o.status.code(), Some(1));
    let tampered = json(&o);
    assert_eq!(tampered["problems"][0]["problem"], "modified", "{tampered}");
    assert_conforms("verify", &tampered);
    // A manifest that is not one: the run cannot be checked, the other shape.
    std::fs::write(run_dir.join("manifest.json"), "{\"artifacts\": 7}").unwrap();
    let o = verify();
    assert_eq!(o.status.code(), Some(1));
    let unreadable = json(&o);
    assert!(unreadable["error"].is_string(), "{unreadable}");
    assert_conforms("verify", &unreadable);
}

#[test]
fn key_trust_and_init_outputs_conform_to_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("ci.key");
    let k = run_json(&["keygen", key.to_str().unwrap()], None);
    assert_conforms("keygen", &k);
    let store = dir.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let store = store.to_str().unwrap();
    let public = k["public_key"].as_str().unwrap();
    let added = run_json(&["trust", "add", public, "--store", store], None);
    assert_eq!(added["keyid"], k["keyid"]);
    let required = run_json(&["trust", "require", "on", "--store", store], None);
    assert_eq!(required["require_signature"], true);
    let listed = run_json(&["trust", "list", "--store", store], None);
    let removed = run_json(
        &[
            "trust",
            "remove",
            k["keyid"].as_str().unwrap(),
            "--store",
            store,
        ],
        None,
    );
    for v in [&added, &required, &listed, &removed] {
        assert_conforms("trust", v);
    }
    let spec = dir.path().join("bench.yaml");
    let init = run_json(&["init", "-o", spec.to_str().unwrap()], None);
    assert_eq!(init["written"], spec.to_str().unwrap());
    assert_conforms("init", &init);
}
