//! `yardstick run` end to end through the built binary: the embedded simulator on loopback, the
//! store, verify (tampering, unsigned), signing keys, interruption and resume.

use crate::common::{self, files_under, run_spec, yardstick};

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small serve spec against the embedded simulator: 2 points × 3 replicates, 12 requests each.
fn serve_spec(provenance: &str, max_requests: u32) -> String {
    format!(
        "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {{name: run-test}}
spec:
  mode: exploratory
  workload:
    model: sim-llama
    precision: bf16
    sequenceLengths: \"D(20,10)\"
    batching: continuous
    concurrency: [1, 4]
    dataset: {{kind: synthetic, seed: 1}}
    correctness: {{policy: none}}
  trials: {{replicates: 3, warmup: {{requests: 2}}, confidenceLevel: 0.95, outlierPolicy: report-tukey}}
  layers:
    component:
      - kind: serve
        target: {{url: sim, api: chat, model: sim-llama}}
        scenarios: [\"D(20,10)\"]
        load: {{mode: concurrency, values: [1, 4]}}
        stop: {{maxRequests: {max_requests}, maxDuration: 30s}}
{provenance}"
    )
}

fn run_json(spec: &Path, store: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
    let o = run_spec(spec, store, extra);
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o, v)
}

fn make_writable(p: &Path) {
    let mut perm = std::fs::metadata(p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(p, perm).unwrap();
}

#[test]
fn a_signed_run_verifies_and_tampering_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("keys/signing.key");
    let o = yardstick().arg("keygen").arg(&key).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        serve_spec(
            &format!(
                "  provenance: {{signing: required, key: \"{}\"}}\n",
                key.display()
            ),
            12,
        ),
    )
    .unwrap();
    let store = dir.path().join("store");
    let (o, v) = run_json(&spec, &store, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["status"], "complete");
    assert_eq!(v["signed"], true);
    let run_id = v["run_id"].as_str().unwrap().to_string();
    let run_dir = store.join("runs").join(&run_id);

    // The summary aggregates 3 replicates per point with a confidence interval.
    let points = v["summary"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    let thr = &points[1]["metrics"]["request_throughput"]["value"];
    assert_eq!(thr["n"], 3);
    let ci = thr["ci"].as_array().unwrap();
    let mean = thr["mean"].as_f64().unwrap();
    assert!(ci[0].as_f64().unwrap() <= mean && mean <= ci[1].as_f64().unwrap());
    let ttft = points[0]["metrics"]["ttft_ms"]["p50"]["mean"]
        .as_f64()
        .unwrap();
    assert!(
        (45.0..200.0).contains(&ttft),
        "TTFT p50 {ttft} ms vs the simulator's 50 ms"
    );
    // Raw samples: one Parquet file per point and replicate.
    assert_eq!(files_under(&run_dir.join("samples"), "parquet").len(), 6);

    let pub_key = format!("{}.pub", key.display());
    let verify = |extra: &[&str]| {
        yardstick()
            .args(["verify", "--json", &run_id, "--store"])
            .arg(&store)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = verify(&["--key", &pub_key]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["signature"]["check"]["status"], "verified");
    assert_eq!(r["verified"], true);
    // A directory of trusted keys works the same.
    let o = verify(&["--trusted", &dir.path().join("keys").display().to_string()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    // No trusted key: signed by an untrusted key, integrity only, never "verified".
    let o = verify(&[]);
    assert!(o.status.success());
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["signature"]["check"]["status"], "untrusted");
    assert_eq!(r["verified"], false);
    let o = verify(&["--require-signature"]);
    assert_eq!(o.status.code(), Some(1));
    // Another trusted key: "signed by another key", exit 1.
    let other = dir.path().join("other/other.key");
    assert!(
        yardstick()
            .arg("keygen")
            .arg(&other)
            .output()
            .unwrap()
            .status
            .success()
    );
    let o = verify(&["--key", &format!("{}.pub", other.display())]);
    assert_eq!(o.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["signature"]["check"]["status"], "other_key");
    // Both keys trusted: one is enough.
    let o = verify(&[
        "--key",
        &format!("{}.pub", other.display()),
        "--key",
        &pub_key,
    ]);
    assert!(o.status.success());

    // Flip one byte of a sealed sample file: verify names it.
    let sample = files_under(&run_dir.join("samples"), "parquet")[0].clone();
    make_writable(&sample);
    let mut bytes = std::fs::read(&sample).unwrap();
    bytes[10] ^= 0x01;
    std::fs::write(&sample, &bytes).unwrap();
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rel = sample
        .strip_prefix(&run_dir)
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert_eq!(r["problems"][0]["path"], rel);
    assert_eq!(r["problems"][0]["problem"], "modified");

    // The forger also recomputes the sample's hash in the manifest: the hashes agree, but the
    // signature no longer covers the manifest, with or without a key.
    let manifest_path = run_dir.join("manifest.json");
    make_writable(&manifest_path);
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    for a in m["artifacts"].as_array_mut().unwrap() {
        if a["path"] == rel.as_str() {
            a["sha256"] = sha256_hex(&bytes).into();
        }
    }
    std::fs::write(&manifest_path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    for extra in [vec![], vec!["--key", pub_key.as_str()]] {
        let o = verify(&extra);
        assert_eq!(o.status.code(), Some(1), "{extra:?}");
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["problems"].as_array().unwrap().len(), 0);
        let reason = r["signature"]["check"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("does not cover the current manifest.json"),
            "{reason}"
        );
    }

    // And deletes the signature: without a key that is "unsigned" (integrity only, exit 0);
    // with the trusted key it is a failure that says the run is unsigned.
    make_writable(&run_dir.join("attestation.dsse.json"));
    std::fs::remove_file(run_dir.join("attestation.dsse.json")).unwrap();
    let o = yardstick()
        .args(["verify", &run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("unsigned") && text.contains("integrity only"),
        "{text}"
    );
    let o = yardstick()
        .args(["verify", &run_id, "--key", &pub_key, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("UNSIGNED") && text.contains("FAILED"),
        "{text}"
    );
}

/// sha256 of bytes, hex, through the same crate the store uses.
fn sha256_hex(bytes: &[u8]) -> String {
    yardstick_store::fsutil::sha256_bytes(bytes)
}

#[test]
fn signing_required_without_a_key_exits_2_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    let missing = dir.path().join("nope.key");
    std::fs::write(
        &spec,
        serve_spec(
            &format!(
                "  provenance: {{signing: required, key: \"{}\"}}\n",
                missing.display()
            ),
            12,
        ),
    )
    .unwrap();
    let store = dir.path().join("store");
    let o = yardstick()
        .arg("run")
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("keygen"), "{}", stderr(&o));
    assert!(
        !store.exists(),
        "nothing may be written before the key is checked"
    );
}

#[test]
fn an_invalid_spec_runs_nothing_and_dry_run_prints_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        serve_spec("", 12).replace("replicates: 3", "replicates: 2"),
    )
    .unwrap();
    let o = yardstick().arg("run").arg(&spec).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("error[trials-replicates]"),
        "{}",
        stderr(&o)
    );

    std::fs::write(&spec, serve_spec("", 12)).unwrap();
    let store = dir.path().join("store");
    let (o, v) = run_json(&spec, &store, &["--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["points"].as_array().unwrap().len(), 2);
    assert_eq!(v["steps"].as_array().unwrap().len(), 6);
    assert!(!store.exists(), "a dry run writes nothing");
}

#[test]
fn a_killed_run_is_incomplete_and_resume_completes_it_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    // Enough requests per replicate that the kill lands mid-run. The target names a CA file
    // beside the spec, which the run freezes into inputs/target/.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../yardstick-load/tests/fixtures/tls/cert.pem"),
        dir.path().join("ca.pem"),
    )
    .unwrap();
    std::fs::write(
        &spec,
        serve_spec("", 60).replace("model: sim-llama}", "model: sim-llama, caCert: ca.pem}"),
    )
    .unwrap();
    let store = dir.path().join("store");
    let mut child = yardstick()
        .args(["run", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until at least one replicate is sealed, then SIGKILL.
    let deadline = Instant::now() + Duration::from_secs(60);
    let results = loop {
        let found = if store.join("runs").exists() {
            files_under(&store.join("runs"), "json")
                .into_iter()
                .filter(|p| p.to_string_lossy().contains("/results/"))
                .count()
        } else {
            0
        };
        if found >= 1 || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(results >= 1, "no replicate finished within a minute");
    let run_id = std::fs::read_dir(store.join("runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .to_string();

    // The store opens; the run reads as incomplete and its finished replicates verify.
    let o = yardstick()
        .args(["verify", "--json", &run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["status"], "incomplete");
    let run_dir = store.join("runs").join(&run_id);

    // A SIGKILL can land in two windows the timing above does not choose, so both are made
    // here: (1) after a replicate's result is sealed but before its facts reach the warehouse —
    // the facts of a finished replicate are deleted; (2) after an unfinished replicate's samples
    // are sealed but before its result is — a samples file and a log are added for a replicate
    // that has no result.
    let points = [
        "component.0.serve/D(20,10)/concurrency=1",
        "component.0.serve/D(20,10)/concurrency=4",
    ];
    // Finished means listed in the manifest (a result file can be on disk, renamed into place,
    // a moment before the manifest lists it).
    let manifest = yardstick_store::run::read_manifest(&run_dir).unwrap();
    let finished: Vec<(String, u32)> = points
        .iter()
        .flat_map(|p| (0..3).map(move |r| (p.to_string(), r)))
        .filter(|(p, r)| {
            let slug = yardstick_store::run::slug(p);
            manifest
                .artifact(&format!("results/{slug}/r{r}.json"))
                .is_some()
        })
        .collect();
    let (open_point, open_rep) = points
        .iter()
        .flat_map(|p| (0..3).map(move |r| (p.to_string(), r)))
        .find(|pr| !finished.contains(pr))
        .expect("an unfinished replicate (the kill came before the last one)");
    {
        // Window (1) on a replicate the warehouse indexed. When the kill left none indexed, it
        // landed in that window by itself.
        let db = rusqlite::Connection::open(store.join("yardstick.db")).unwrap();
        let indexed: Option<(String, i64)> = db
            .query_row(
                "SELECT point_id, replicate FROM replicates WHERE run_id = ?1 \
                 ORDER BY point_id, replicate LIMIT 1",
                rusqlite::params![run_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .ok();
        if let Some((done_point, done_rep)) = indexed {
            let gone = db
                .execute(
                    "DELETE FROM facts WHERE run_id = ?1 AND point_id = ?2 AND replicate = ?3",
                    rusqlite::params![run_id, done_point, done_rep],
                )
                .unwrap();
            assert!(
                gone > 0,
                "an indexed replicate has facts (written before its row)"
            );
            db.execute(
                "DELETE FROM replicates WHERE run_id = ?1 AND point_id = ?2 AND replicate = ?3",
                rusqlite::params![run_id, done_point, done_rep],
            )
            .unwrap();
        }
    }
    let open_slug = yardstick_store::run::slug(&open_point);
    let orphans = [
        format!("samples/{open_slug}/r{open_rep}.parquet"),
        format!("logs/{open_slug}/r{open_rep}/stale.log"),
    ];
    {
        let mut w = yardstick_store::run::RunWriter::resume(&run_dir).unwrap();
        for rel in &orphans {
            w.add(rel, b"from an attempt that never finished", "samples")
                .unwrap();
        }
        w.interrupt("killed (made by the test)").unwrap();
    }

    // The resumed run reads its frozen copy of the CA file, not the spec's (now gone).
    let frozen = std::fs::read(run_dir.join("inputs/target/ca.pem")).unwrap();
    assert_eq!(frozen, std::fs::read(dir.path().join("ca.pem")).unwrap());
    std::fs::remove_file(dir.path().join("ca.pem")).unwrap();

    let (o, v) = run_json(&spec, &store, &["--resume", &run_id]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(v["status"], "complete");
    assert_eq!(v["run_id"], run_id);
    assert_eq!(files_under(&run_dir.join("samples"), "parquet").len(), 6);
    // The unfinished attempt's files were dropped, named in a note, and measured again.
    let manifest = yardstick_store::run::read_manifest(&run_dir).unwrap();
    assert!(
        manifest
            .notes
            .iter()
            .any(|n| n.contains("discarded") && n.contains(&orphans[1])),
        "{:?}",
        manifest.notes
    );
    assert!(manifest.artifact(&orphans[1]).is_none());
    assert!(!run_dir.join(&orphans[1]).exists());
    let samples = std::fs::read(run_dir.join(&orphans[0])).unwrap();
    assert_eq!(&samples[..4], b"PAR1", "the samples were measured again");
    let o = yardstick()
        .args(["verify", &run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));

    // Facts are not duplicated: one row per (point, replicate, metric, statistic), every
    // replicate of every point present exactly once.
    let mut wh = yardstick_store::warehouse::open_warehouse(&store.display().to_string()).unwrap();
    let facts = wh.facts(&run_id).unwrap();
    let mut keys: Vec<_> = facts
        .iter()
        .map(|f| {
            (
                f.point_id.clone(),
                f.replicate,
                f.metric.clone(),
                f.statistic.clone(),
            )
        })
        .collect();
    let total = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), total, "duplicated facts after resume");
    let mut replicates: Vec<_> = facts
        .iter()
        .filter(|f| f.metric == "request_throughput")
        .map(|f| (f.point_id.clone(), f.replicate))
        .collect();
    replicates.sort();
    assert_eq!(
        replicates.len(),
        2 * 4,
        "3 replicates + 1 aggregate per point: {replicates:?}"
    );
    assert_eq!(
        wh.run(&run_id).unwrap().unwrap().status,
        yardstick_store::RunStatus::Complete
    );
}

#[test]
fn retention_drops_raw_samples_and_the_run_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, serve_spec("", 6)).unwrap();
    let store = dir.path().join("store");
    let (o, v) = run_json(&spec, &store, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run_id = v["run_id"].as_str().unwrap().to_string();
    let run_dir = store.join("runs").join(&run_id);
    assert_eq!(files_under(&run_dir.join("samples"), "parquet").len(), 6);

    let o = yardstick()
        .args(["gc", "--json", "--keep-raw", "0s", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !run_dir.join("samples").exists()
            || files_under(&run_dir.join("samples"), "parquet").is_empty()
    );
    let o = yardstick()
        .args(["verify", "--json", &run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(o.status.success(), "{r}");
    assert!(
        r["dropped_by_retention"].as_array().map_or(0, Vec::len) >= 6,
        "{r}"
    );
    // Facts survive retention.
    let o = yardstick()
        .args(["runs", "show", "--json", &run_id, "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("request_throughput"));
}

#[test]
fn an_mlperf_server_scenario_in_a_spec_reports_its_verdict_per_replicate() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    let text = serve_spec("", 40)
        .replace(
            "load: {mode: concurrency, values: [1, 4]}",
            "load: {mode: rate, values: [40]}\n        slo: {ttftMs: 1000, tpotMs: 200}\n        mlperf: server",
        )
        .replace("concurrency: [1, 4]", "concurrency: 1");
    std::fs::write(&spec, text).unwrap();
    let store = dir.path().join("store");
    let (o, v) = run_json(&spec, &store, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let points = v["summary"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 1);
    assert_eq!(
        points[0]["id"],
        "component.0.serve/D(20,10)/mlperf-server=40"
    );
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    let r0: serde_json::Value = serde_json::from_slice(
        &std::fs::read(run_dir.join("results/component.0.serve_D_20_10_mlperf-server_40/r0.json"))
            .unwrap(),
    )
    .unwrap();
    let m = &r0["summary"]["mlperf"];
    assert_eq!(m["scenario"], "server");
    // 40 queries cannot support a p99 claim under LoadGen's early stopping.
    assert_eq!(m["validity"], "INVALID", "{m}");
    assert_eq!(m["result"], "PASS", "{m}");
}

#[test]
fn a_spec_from_standard_input_is_run_and_stored_as_given() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let text = serve_spec("", 4).replace("replicates: 3", "replicates: 3, order: sequential");
    let store = dir.path().join("store");
    let mut child = yardstick()
        .args(["run", "--json", "-q", "-", "--store"])
        .arg(&store)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(run_dir.join("spec.yaml")).unwrap(),
        text
    );
}

#[test]
fn the_telemetry_interval_is_configurable_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, serve_spec("", 4)).unwrap();
    let store = dir.path().join("store");
    let (o, v) = run_json(&spec, &store, &["--telemetry-interval", "250ms"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = &v["summary"]["telemetry"];
    assert_eq!(t["interval_s"], 0.25, "{t}");
    assert!(t["samples"].as_u64().unwrap() >= 1, "{t}");
    for bad in ["5ms", "0", "2h", "soon"] {
        let (o, _) = run_json(&spec, &store, &["--telemetry-interval", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("is not a duration between 10ms and 1h"),
            "{bad}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_serve_target_takes_extra_ca_certificates_from_the_spec() {
    // target.caCert is a path relative to the spec's directory, checked before any work (a
    // working https target is tested in yardstick-load's tls.rs).
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = dir.path().join("specs");
    std::fs::create_dir(&spec_dir).unwrap();
    let spec = spec_dir.join("spec.yaml");
    let with_ca = |ca: &str| {
        serve_spec("", 4)
            .replace(
                "target: {url: sim, api: chat, model: sim-llama}",
                &format!("target: {{url: sim, api: chat, model: sim-llama, caCert: {ca}}}"),
            )
            .replace("values: [1, 4]", "values: [1]")
            .replace("concurrency: [1, 4]", "concurrency: 1")
    };
    let store = dir.path().join("store");
    // Run from another directory than the spec's, so a path resolved against the working
    // directory would not be found.
    let run_in = |args: &[&str]| {
        let mut cmd = yardstick();
        cmd.current_dir(dir.path()).args(args).arg(&spec);
        if args[0] == "run" {
            cmd.arg("--store").arg(&store);
        }
        cmd.output().unwrap()
    };

    // A missing file: validate and run refuse it (exit 2) at the field's line and column.
    std::fs::write(&spec, with_ca("missing-ca.pem")).unwrap();
    for args in [&["validate"][..], &["run", "-q"][..]] {
        let o = run_in(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("target.caCert `missing-ca.pem` does not exist")
                && err.contains("spec.yaml:18:")
                && err.contains("target-files"),
            "{args:?}: {err}"
        );
    }
    assert!(!store.join("runs").exists(), "nothing ran");

    // A file that holds no certificate: run reads it before any work and refuses it.
    std::fs::write(spec_dir.join("not-a-ca.pem"), "hello\n").unwrap();
    std::fs::write(&spec, with_ca("not-a-ca.pem")).unwrap();
    let o = run_in(&["run", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no PEM certificate in the file"),
        "{}",
        stderr(&o)
    );
    assert!(!store.join("runs").exists(), "nothing ran");

    // A real certificate beside the spec: found, read and the run completes.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../yardstick-load/tests/fixtures/tls/cert.pem"),
        spec_dir.join("ca.pem"),
    )
    .unwrap();
    std::fs::write(&spec, with_ca("ca.pem")).unwrap();
    let o = run_in(&["run", "-q", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "complete");
    assert_eq!(v["summary"]["failures"], serde_json::json!([]));
}

/// Every component kind the schema accepts is planned (`run --dry-run` lists a point for it) —
/// never a run stored as complete that silently measured nothing (a spec with a `startup` or
/// `dataloader` layer once planned 0 points and exited 0).
/// The kinds come from `yardstick schema`, so a kind added later is walked too.
#[test]
fn every_component_kind_is_planned() {
    let schema = common::json(&yardstick().arg("schema").output().unwrap());
    let kinds: Vec<String> = schema["$defs"]["ComponentLayer"]["properties"]["kind"]["enum"]
        .as_array()
        .expect("the schema lists the component kinds")
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert!(kinds.len() >= 4, "{kinds:?}");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for kind in &kinds {
        let entry = match kind.as_str() {
            "serve" => "kind: serve\n        target: {url: sim, api: chat, model: sim-llama}\n        scenarios: [\"D(20,10)\"]\n        load: {mode: concurrency, values: [1]}\n        stop: {maxRequests: 4}".to_string(),
            "eval" => "kind: eval\n        target: {url: sim, api: chat, model: sim-llama}\n        tasks: [arith]".to_string(),
            "startup" => "kind: startup\n        command: [\"true\"]\n        ready: {exit: true}".to_string(),
            other => format!("kind: {other}\n        command: [\"true\"]"),
        };
        let spec_text = serve_spec("", 4).replace(
            "kind: serve\n        target: {url: sim, api: chat, model: sim-llama}\n        scenarios: [\"D(20,10)\"]\n        load: {mode: concurrency, values: [1, 4]}\n        stop: {maxRequests: 4, maxDuration: 30s}",
            &entry,
        );
        assert!(spec_text.contains(&format!("kind: {kind}")), "{spec_text}");
        let spec = dir.path().join(format!("{kind}.yaml"));
        std::fs::write(&spec, &spec_text).unwrap();
        let v = yardstick().arg("validate").arg(&spec).output().unwrap();
        assert!(v.status.success(), "{kind}: {}", stderr(&v));
        let (o, plan) = run_json(&spec, &store, &["--dry-run"]);
        assert!(o.status.success(), "{kind}: {}", stderr(&o));
        let points = plan["points"].as_array().unwrap();
        assert!(!points.is_empty(), "{kind}: {plan}");
        assert!(
            points
                .iter()
                .all(|p| p["id"].as_str().unwrap().contains(kind.as_str())),
            "{kind}: {plan}"
        );
    }
}

/// A spec for Kubernetes is refused, not run on this machine as if it were the cluster.
#[test]
fn a_scheduler_engine_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for engine in ["kubernetes"] {
        let extra = if engine == "kubernetes" {
            "\n    image: example/yardstick:1"
        } else {
            ""
        };
        let text = serve_spec("", 4).replace(
            "  layers:",
            &format!("  execution:\n    engine: {engine}{extra}\n  layers:"),
        );
        assert!(text.contains(&format!("engine: {engine}")), "{text}");
        let spec = dir.path().join(format!("{engine}.yaml"));
        std::fs::write(&spec, &text).unwrap();
        let v = yardstick().arg("validate").arg(&spec).output().unwrap();
        assert!(v.status.success(), "{engine}: {}", stderr(&v));
        for extra in [&["--dry-run"][..], &[][..]] {
            let (o, _) = run_json(&spec, &store, extra);
            assert_eq!(o.status.code(), Some(2), "{engine} {extra:?}");
            let e = stderr(&o);
            assert!(
                e.contains(&format!("`execution.engine: {engine}`"))
                    && e.contains("yardstick k8s render"),
                "{engine}: {e}"
            );
        }
        assert!(!store.join("runs").exists(), "{engine}: nothing is stored");
    }
}

/// A spec's `load: {mode: trace}`: the trace (relative to the spec) is read before any work,
/// replayed against the simulator as `bench serve --trace` does, stored with the run, and each
/// replicate's summary has the trace block and the schedule fidelity block; a bad trace
/// refuses the run (exit 2) with its file, line and column before anything runs.
#[test]
fn a_spec_replays_a_trace_and_refuses_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = dir.path().join("specs");
    std::fs::create_dir(&spec_dir).unwrap();
    let lines: String = (0..12)
        .map(|i| {
            format!(
                "{{\"at_ms\": {}, \"input_tokens\": 40, \"output_tokens\": 4, \"prefix_id\": \"sys\"}}\n",
                i * 25
            )
        })
        .collect();
    std::fs::write(spec_dir.join("small.jsonl"), lines).unwrap();
    let spec = spec_dir.join("spec.yaml");
    let with_trace = |file: &str| {
        serve_spec("", 4)
            .replace("        scenarios: [\"D(20,10)\"]\n", "")
            .replace(
                "load: {mode: concurrency, values: [1, 4]}",
                &format!(
                    "load: {{mode: trace, trace: {{file: {file}, format: jsonl, speedup: 2}}}}"
                ),
            )
            .replace("concurrency: [1, 4]", "concurrency: 1")
            // The trace is the whole workload: no request cap (one would cut it short).
            .replace("        stop: {maxRequests: 4, maxDuration: 30s}\n", "")
    };
    std::fs::write(&spec, with_trace("small.jsonl")).unwrap();
    let store = dir.path().join("store");
    let o = yardstick()
        .current_dir(dir.path())
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    common::assert_metrics_catalogued(&store);
    let _ = common::assert_figures_are_the_summaries(&store);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "complete", "{v}");
    let p = &v["summary"]["points"][0];
    assert_eq!(p["id"], "component.0.serve/trace=small", "{p}");
    assert!(
        p["metrics"]["schedule_lateness_ms"]["p99"]["mean"]
            .as_f64()
            .is_some(),
        "{p}"
    );
    let run_dir = Path::new(v["dir"].as_str().unwrap());
    let stored = files_under(&run_dir.join("inputs"), "jsonl");
    assert!(
        stored
            .iter()
            .any(|f| std::fs::read(f).unwrap()
                == std::fs::read(spec_dir.join("small.jsonl")).unwrap()),
        "the trace is stored with the run: {stored:?}"
    );
    let recs = files_under(&run_dir.join("results"), "json");
    assert_eq!(recs.len(), 3, "{recs:?}");
    for r in recs {
        let rec: serde_json::Value = serde_json::from_slice(&std::fs::read(&r).unwrap()).unwrap();
        let s = &rec["summary"];
        assert_eq!(s["stop_reason"], "trace_end", "{s}");
        // The trial's warm-up requests are the trace's first two, not measured.
        assert_eq!(s["requests"]["completed"].as_u64(), Some(10), "{s}");
        assert_eq!(s["requests"]["warmup"].as_u64(), Some(2), "{s}");
        assert_eq!(s["trace"]["requests"].as_u64(), Some(12), "{s}");
        assert!(
            s["trace"]["theoretical_prefix_hit_rate"].as_f64().is_some(),
            "{s}"
        );
        let l = &s["schedule_lateness_ms"];
        let g = |k: &str| l[k].as_f64().unwrap();
        assert!(
            0.0 <= g("p50") && g("p50") <= g("p99") && g("p99") <= g("max"),
            "{l}"
        );
    }

    // Time going back on line 3: refused before anything runs, with file:line:col.
    std::fs::write(
        spec_dir.join("bad.jsonl"),
        "{\"at_ms\": 0, \"input_tokens\": 4, \"output_tokens\": 2}\n{\"at_ms\": 10, \"input_tokens\": 4, \"output_tokens\": 2}\n{\"at_ms\": 5, \"input_tokens\": 4, \"output_tokens\": 2}\n",
    )
    .unwrap();
    std::fs::write(&spec, with_trace("bad.jsonl")).unwrap();
    let store2 = dir.path().join("store2");
    let o = yardstick()
        .current_dir(dir.path())
        .args(["run", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&store2)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bad.jsonl:3:2: the time goes back"),
        "{}",
        stderr(&o)
    );
    assert!(!store2.join("runs").exists(), "nothing ran");
    // A missing file: validate refuses it at the field.
    std::fs::write(&spec, with_trace("missing.jsonl")).unwrap();
    let o = yardstick().arg("validate").arg(&spec).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trace file `missing.jsonl` does not exist")
            && stderr(&o).contains("load-trace"),
        "{}",
        stderr(&o)
    );
}

/// `run --preset health` runs the preset as a stored run whose spec is the one `init --preset`
/// writes (targets filled with the defaults), kept under `<store>/presets/`; bad preset input is
/// refused with exit 2 before anything runs.
#[test]
fn a_preset_runs_as_a_stored_run_of_the_spec_init_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let o = yardstick()
        .args(["run", "--json", "-q", "--preset", "health", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "complete");
    let ids: Vec<&str> = v["summary"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert!(
        ids.iter().any(|i| i.starts_with("micro.0.memory")),
        "{ids:?}"
    );
    assert!(
        ids.iter()
            .any(|i| i.contains("serve/D(128,32)/concurrency=8")),
        "{ids:?}"
    );
    let init = yardstick()
        .args(["init", "--preset", "health"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", stderr(&init));
    let written = std::fs::read(store.join("presets/health.yaml")).unwrap();
    assert_eq!(written, init.stdout);
    let run_dir = store.join("runs").join(v["run_id"].as_str().unwrap());
    assert_eq!(
        std::fs::read(run_dir.join("spec.yaml")).unwrap(),
        init.stdout
    );

    for (args, says) in [
        (vec!["run", "--preset", "nope"], "invalid value 'nope'"),
        (vec!["run", "--url", "http://127.0.0.1:9"], "--preset"),
        (
            vec!["run", "--preset", "llm-eval", "--url", "ftp://x"],
            "expected an http(s) URL",
        ),
        (
            vec!["init", "--preset", "health", "--template", "serve"],
            "cannot be used with",
        ),
    ] {
        let o = yardstick()
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}
