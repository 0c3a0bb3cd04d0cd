//! Parquet export of the warehouse (Hive layout, values read back) and retention (`gc`) on real
//! run directories, with `verify` telling dropped-by-policy from missing.

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::{fixture, write};
use yardstick_store::export::{NULL_PARTITION, export_parquet};
use yardstick_store::gc::{self, GC_ENVELOPE, GC_RECORD, GcOptions};
use yardstick_store::run::{RunWriter, ToolInfo};
use yardstick_store::samples::read_rows;
use yardstick_store::sign::TrustSet;
use yardstick_store::verify::{VerifyOptions, verify_run};
use yardstick_store::warehouse::{SqliteWarehouse, Warehouse};

fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn export_writes_hive_partitions_that_read_back_as_the_facts() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap();
    let a = fixture("01A", "serve", Some("cpu-a"), "2026-05-19T23:30:00Z");
    let b = fixture("01B", "serve", Some("cpu-a"), "2026-05-20T00:30:00+01:00"); // 19th UTC
    let c = fixture("01C", "train", Some("gpu/H100=8"), "2026-05-20T08:00:00Z");
    let d = fixture("01D", "serve", None, "2026-05-21T08:00:00Z");
    for f in [&a, &b, &c, &d] {
        write(&mut w, f);
    }
    let out = dir.path().join("lake");
    let report = export_parquet(&mut w, &out).unwrap();
    assert_eq!(report.runs, 4);
    let per_run = a.facts.len();
    assert_eq!(report.facts, 4 * per_run);
    assert_eq!(
        files_under(&out),
        vec![
            format!("facts/profile={NULL_PARTITION}/date=2026-05-21/part-0.parquet"),
            "facts/profile=cpu-a/date=2026-05-19/part-0.parquet".to_string(),
            "facts/profile=gpu%2FH100%3D8/date=2026-05-20/part-0.parquet".to_string(),
        ]
    );
    let cpu = report
        .files
        .iter()
        .find(|f| f.profile.as_deref() == Some("cpu-a"))
        .unwrap();
    assert_eq!((cpu.runs, cpu.rows), (2, 2 * per_run));

    let rows = read_rows(std::fs::read(out.join(&cpu.path)).unwrap()).unwrap();
    assert_eq!(rows.len(), 2 * per_run);
    // Runs in start order, facts in canonical order; partition columns only in the path.
    assert_eq!(rows[0]["run_id"], "01A");
    assert_eq!(rows[per_run]["run_id"], "01B");
    assert!(rows[0].get("profile").is_none() && rows[0].get("date").is_none());
    let stored = w.facts("01B").unwrap();
    for (row, fact) in rows[per_run..].iter().zip(&stored) {
        assert_eq!(row["point_id"], fact.point_id.as_str());
        assert_eq!(row["metric"], fact.metric.as_str());
        assert_eq!(row["statistic"], fact.statistic.as_str());
        assert_eq!(row["value"].as_f64().unwrap(), fact.value);
        assert_eq!(row["n"].as_u64().unwrap(), fact.n);
        assert_eq!(
            row["replicate"].as_u64().map(|r| r as u32),
            fact.replicate,
            "{row}"
        );
        assert_eq!(row["benchmark"], "serve");
        assert_eq!(row["layer"], "component");
        assert_eq!(row["started_at"], "2026-05-19T23:30:00.000Z");
    }
    let params: serde_json::Value =
        serde_json::from_str(rows[0]["params"].as_str().unwrap()).unwrap();
    assert_eq!(params["slo"]["ttftMs"], 500.5);

    // A second export is a complete snapshot: same files, same content.
    let before: Vec<Vec<u8>> = files_under(&out)
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    let again = export_parquet(&mut w, &out).unwrap();
    assert_eq!(again.files, report.files);
    let after: Vec<Vec<u8>> = files_under(&out)
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    assert_eq!(before, after);

    // It never replaces a directory that is not an export.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join("facts")).unwrap();
    std::fs::write(other.join("facts/notes.txt"), "mine").unwrap();
    let err = export_parquet(&mut w, &other).unwrap_err();
    assert!(err.to_string().contains("not a yardstick export"), "{err}");
    assert_eq!(files_under(&other), vec!["facts/notes.txt"]);
}

#[test]
fn an_empty_warehouse_exports_an_empty_facts_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SqliteWarehouse::open(&dir.path().join("yardstick.db")).unwrap();
    let report = export_parquet(&mut w, &dir.path().join("lake")).unwrap();
    assert_eq!((report.runs, report.facts, report.files.len()), (0, 0, 0));
    assert!(dir.path().join("lake/facts").is_dir());
}

fn tool() -> ToolInfo {
    ToolInfo {
        name: "yardstick".into(),
        version: "0.1.0".into(),
        git_commit: None,
    }
}

/// A complete, signed run with raw samples, telemetry and a log.
fn sealed_run(runs: &Path, key: &ed25519_dalek::SigningKey) -> std::path::PathBuf {
    let mut w = RunWriter::create(runs, "serve", "spec: x\n", tool()).unwrap();
    w.set_env(b"{\"cpu\": 1}", "cpu-test").unwrap();
    w.add("samples/p0-r0.parquet", &[7u8; 4000], "samples")
        .unwrap();
    w.add("samples/p0-r1.parquet", &[8u8; 3000], "samples")
        .unwrap();
    w.add("telemetry.parquet", &[9u8; 500], "telemetry")
        .unwrap();
    w.add("logs/server.log", b"started\n", "log").unwrap();
    w.add("summary.json", b"{}", "summary").unwrap();
    let dir = w.dir().to_path_buf();
    w.complete(Some(key)).unwrap();
    dir
}

#[test]
fn gc_drops_raw_artifacts_of_old_runs_and_verify_tells_dropped_from_missing() {
    let store = tempfile::tempdir().unwrap();
    let runs = store.path().join("runs");
    let key = ed25519_dalek::SigningKey::from_bytes(&[3u8; 32]);
    let old = sealed_run(&runs, &key);
    let later = time::OffsetDateTime::now_utc() + time::Duration::days(40);
    let thirty = Duration::from_secs(30 * 86_400);

    // A fresh run is hot: nothing to do.
    let r = gc::gc(store.path(), thirty).unwrap();
    assert_eq!((r.runs_checked, r.pruned.len()), (1, 0));

    // Dry run: reported, nothing deleted.
    let dry = gc::gc_with(
        store.path(),
        &GcOptions {
            keep_raw: thirty,
            now: later,
            dry_run: true,
            key: Some(key.clone()),
        },
    )
    .unwrap();
    assert_eq!(dry.pruned.len(), 1);
    assert_eq!(dry.bytes_freed, 4000 + 3000 + 500 + 8);
    assert!(old.join("samples/p0-r0.parquet").exists());
    assert!(!old.join(GC_RECORD).exists());

    // An incomplete old run is left alone (it is resumable).
    let mut w = RunWriter::create(&runs, "serve", "spec", tool()).unwrap();
    w.add("samples/a.parquet", b"raw", "samples").unwrap();
    let incomplete = w.dir().to_path_buf();
    w.interrupt("ctrl-c").unwrap();

    let opts = GcOptions {
        keep_raw: thirty,
        now: later,
        dry_run: false,
        key: Some(key.clone()),
    };
    let r = gc::gc_with(store.path(), &opts).unwrap();
    assert_eq!(r.runs_checked, 2);
    assert_eq!(r.pruned.len(), 1);
    assert_eq!(r.policy, "keep-raw 30d");
    let dropped: Vec<&str> = r.pruned[0]
        .dropped
        .iter()
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        dropped,
        [
            "samples/p0-r0.parquet",
            "samples/p0-r1.parquet",
            "telemetry.parquet",
            "logs/server.log"
        ]
    );
    assert_eq!(r.skipped.len(), 1);
    assert!(
        r.skipped[0].reason.contains("incomplete"),
        "{:?}",
        r.skipped
    );
    assert!(incomplete.join("samples/a.parquet").exists());
    // Kept: spec, env, summary, manifest, attestation. Gone: raw files and their empty dirs.
    assert_eq!(
        files_under(&old),
        [
            "attestation.dsse.json",
            "env.json",
            GC_ENVELOPE,
            GC_RECORD,
            "manifest.json",
            "spec.yaml",
            "summary.json"
        ]
    );
    let record = gc::read_record(&old).unwrap().unwrap();
    assert_eq!(record.dropped.len(), 4);
    assert_eq!(record.dropped[0].policy, "keep-raw 30d");

    // Explained by the signed retention record, the run verifies with its key.
    let v = verify_run(&old, &trusting(&key)).unwrap();
    assert!(v.ok() && v.verified(), "{:?} {:?}", v.problems, v.retention);
    assert_eq!(v.dropped_by_retention.len(), 4);
    let text = v.text();
    assert!(
        text.contains("  4 raw file(s) dropped by the retention policy")
            && text.trim_end().ends_with("OK (verified)"),
        "{text}"
    );
    assert!(
        v.retention
            .as_ref()
            .unwrap()
            .signature
            .as_ref()
            .unwrap()
            .is_verified()
    );
    // Without the signed record, the same files are missing.
    let envelope = old.join(GC_ENVELOPE);
    let saved = std::fs::read(&envelope).unwrap();
    std::fs::remove_file(&envelope).unwrap();
    let v = verify_run(&old, &trusting(&key)).unwrap();
    assert!(!v.ok());
    assert_eq!(v.problems.len(), 4, "{:?}", v.problems);
    let text = v.text();
    assert_eq!(text.matches("\n  MISSING   ").count(), 4, "{text}");
    assert!(text.trim_end().ends_with("FAILED"), "{text}");
    assert!(
        v.retention
            .as_ref()
            .unwrap()
            .reason
            .as_ref()
            .unwrap()
            .contains("not (no gc.dsse.json)")
    );
    std::fs::write(&envelope, saved).unwrap();

    // A second pass has nothing left to drop.
    let again = gc::gc_with(store.path(), &opts).unwrap();
    assert!(again.pruned.is_empty());
    assert_eq!(gc::read_record(&old).unwrap().unwrap().dropped.len(), 4);
}

#[test]
fn gc_keeps_tampered_files_and_verify_still_reports_unexplained_losses() {
    let store = tempfile::tempdir().unwrap();
    let runs = store.path().join("runs");
    let key = ed25519_dalek::SigningKey::from_bytes(&[4u8; 32]);
    let run = sealed_run(&runs, &key);
    // Tamper with one sample: retention must not destroy the evidence.
    let p = run.join("samples/p0-r1.parquet");
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&p, perm).unwrap();
    std::fs::write(&p, b"tampered").unwrap();
    // And lose the summary, which retention never drops.
    std::fs::remove_file(run.join("summary.json")).unwrap();

    let r = gc_two_days_on(store.path(), Some(&key));
    assert_eq!(r.pruned[0].dropped.len(), 3);
    assert!(r.skipped[0].reason.contains("p0-r1"), "{:?}", r.skipped);
    assert!(p.exists());

    let v = verify_run(&run, &trusting(&key)).unwrap();
    let left: Vec<(&str, &str)> = v
        .problems
        .iter()
        .map(|p| (p.path.as_str(), p.problem))
        .collect();
    assert_eq!(
        left,
        [
            ("samples/p0-r1.parquet", "modified"),
            ("summary.json", "missing")
        ]
    );
    assert!(!v.ok());
    assert!(matches!(
        gc::gc(&store.path().join("nope"), Duration::from_secs(1)),
        Err(yardstick_store::StoreError::NotFound(_))
    ));
}

fn trusting(key: &ed25519_dalek::SigningKey) -> VerifyOptions {
    let mut t = TrustSet::new();
    t.add(key.verifying_key(), "test");
    VerifyOptions::trusting(t)
}

fn writable(p: &Path) {
    let mut perm = std::fs::metadata(p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(p, perm).unwrap();
}

/// Retention keeping raw files one day, run two days from now (so every raw file is due),
/// signing its record with `key` when given.
fn gc_two_days_on(store: &Path, key: Option<&ed25519_dalek::SigningKey>) -> gc::GcReport {
    gc::gc_with(
        store,
        &GcOptions {
            keep_raw: Duration::from_secs(86_400),
            now: time::OffsetDateTime::now_utc() + time::Duration::days(2),
            dry_run: false,
            key: key.cloned(),
        },
    )
    .unwrap()
}

fn pruned_run(
    store: &Path,
    key: &ed25519_dalek::SigningKey,
    gc_key: Option<&ed25519_dalek::SigningKey>,
) -> (std::path::PathBuf, gc::GcReport) {
    let run = sealed_run(&store.join("runs"), key);
    let r = gc_two_days_on(store, gc_key);
    (run, r)
}

/// A hand-written gc.json must not excuse what retention never drops: a record naming
/// summary.json, env.json, the spec or the manifest is refused as a whole.
#[test]
fn a_retention_record_cannot_excuse_the_summary_spec_env_or_manifest() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    for victim in ["summary.json", "env.json", "spec.yaml"] {
        let store = tempfile::tempdir().unwrap();
        let (run, r) = pruned_run(store.path(), &key, Some(&key));
        assert_eq!(r.pruned.len(), 1);
        // The attacker deletes the file and adds it to gc.json with its true hash.
        let m = yardstick_store::read_manifest(&run).unwrap();
        let a = m.artifact(victim).unwrap().clone();
        writable(&run.join(victim));
        std::fs::remove_file(run.join(victim)).unwrap();
        let mut record = gc::read_record(&run).unwrap().unwrap();
        let mut d = record.dropped[0].clone();
        d.path = a.path.clone();
        d.sha256 = a.sha256.clone();
        record.dropped.push(d);
        std::fs::write(run.join(GC_RECORD), serde_json::to_vec(&record).unwrap()).unwrap();
        let v = verify_run(&run, &trusting(&key)).unwrap();
        assert!(!v.ok(), "{victim}");
        let missing: Vec<&str> = v
            .problems
            .iter()
            .filter(|p| p.problem == "missing")
            .map(|p| p.path.as_str())
            .collect();
        assert!(missing.contains(&victim), "{victim}: {:?}", v.problems);
        let why = v.retention.unwrap().reason.unwrap();
        assert!(why.contains(victim) && why.contains("never drops"), "{why}");
        // Without any key given the record is still refused.
        assert!(!verify_run(&run, &VerifyOptions::default()).unwrap().ok());
    }
}

/// The retention record of a signed run must be signed by the key that signed the run.
#[test]
fn a_retention_record_signed_by_another_key_or_unsigned_excuses_nothing() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    let other = ed25519_dalek::SigningKey::from_bytes(&[6u8; 32]);

    // gc refuses to prune a signed run without the run's key, or with another key.
    for gc_key in [None, Some(&other)] {
        let store = tempfile::tempdir().unwrap();
        let (run, r) = pruned_run(store.path(), &key, gc_key);
        assert!(r.pruned.is_empty());
        assert_eq!(r.skipped.len(), 1, "{:?}", r.skipped);
        assert!(r.skipped[0].reason.contains("signed"), "{:?}", r.skipped);
        assert!(run.join("samples/p0-r0.parquet").exists());
        assert!(verify_run(&run, &trusting(&key)).unwrap().ok());
    }

    // A record re-signed by another key (both keys trusted): the run's key made the run, so
    // only its signature on the record counts.
    let store = tempfile::tempdir().unwrap();
    let (run, r) = pruned_run(store.path(), &key, Some(&key));
    assert_eq!(r.pruned.len(), 1);
    let record_bytes = std::fs::read(run.join(GC_RECORD)).unwrap();
    let env: yardstick_store::sign::Envelope =
        serde_json::from_slice(&std::fs::read(run.join(GC_ENVELOPE)).unwrap()).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let statement: yardstick_store::sign::Statement =
        serde_json::from_slice(&b64.decode(&env.payload).unwrap()).unwrap();
    assert_eq!(
        statement.digest_of(GC_RECORD).unwrap(),
        yardstick_store::fsutil::sha256_bytes(&record_bytes)
    );
    let forged = yardstick_store::sign::sign_statement(&statement, &other);
    writable(&run.join(GC_ENVELOPE));
    std::fs::write(run.join(GC_ENVELOPE), serde_json::to_vec(&forged).unwrap()).unwrap();
    let mut both = TrustSet::new();
    both.add(key.verifying_key(), "run key");
    both.add(other.verifying_key(), "other");
    let v = verify_run(&run, &VerifyOptions::trusting(both)).unwrap();
    assert!(v.verified(), "the run itself is still signed by its key");
    assert!(!v.ok());
    assert_eq!(v.problems.len(), 4, "{:?}", v.problems);
    let why = v.retention.unwrap().reason.unwrap();
    assert!(
        why.contains("not signed by the key that signed the run"),
        "{why}"
    );

    // A record whose statement is not chained to this run (copied from another run).
    let store2 = tempfile::tempdir().unwrap();
    let (run2, _) = pruned_run(store2.path(), &key, Some(&key));
    writable(&run.join(GC_ENVELOPE));
    std::fs::copy(run2.join(GC_ENVELOPE), run.join(GC_ENVELOPE)).unwrap();
    let v = verify_run(&run, &trusting(&key)).unwrap();
    assert!(!v.ok());
    let why = v.retention.unwrap().reason.unwrap();
    assert!(
        why.contains("does not cover the current gc.json") || why.contains("another"),
        "{why}"
    );
}

/// A retention record with a path that leaves the run directory: gc leaves the run alone and
/// touches nothing outside; verify refuses the record.
#[test]
fn a_hostile_retention_record_is_refused_and_nothing_outside_is_touched() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    let store = tempfile::tempdir().unwrap();
    let run = sealed_run(&store.path().join("runs"), &key);
    let outside = store.path().join("victim.txt");
    std::fs::write(&outside, b"keep me").unwrap();
    let record = serde_json::json!({
        "schema": "yardstick.gc/v1",
        "run_id": yardstick_store::read_manifest(&run).unwrap().run_id,
        "dropped": [{"path": "../../victim.txt", "sha256": "00", "size": 1, "kind": "samples",
                     "dropped_at": "2026-01-01T00:00:00Z", "policy": "keep-raw 1d"}]
    });
    std::fs::write(run.join(GC_RECORD), serde_json::to_vec(&record).unwrap()).unwrap();
    let r = gc_two_days_on(store.path(), Some(&key));
    assert!(r.pruned.is_empty());
    assert!(
        r.skipped[0].reason.contains("../../victim.txt"),
        "{:?}",
        r.skipped
    );
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
    let v = verify_run(&run, &trusting(&key)).unwrap();
    let why = v.retention.unwrap().reason.unwrap();
    assert!(why.contains("../../victim.txt"), "{why}");
}
