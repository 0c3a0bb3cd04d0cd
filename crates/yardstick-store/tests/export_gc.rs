//! Parquet export of the warehouse (Hive layout, values read back) and retention (`gc`) on real
//! run directories, with `verify` telling dropped-by-policy from missing.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{fixture, write};
use yardstick_store::export::{NULL_PARTITION, export_parquet};
use yardstick_store::gc::{self, GC_RECORD, GcOptions};
use yardstick_store::run::{RunWriter, ToolInfo};
use yardstick_store::samples::read_rows;
use yardstick_store::verify::verify_run;
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
            GC_RECORD,
            "manifest.json",
            "spec.yaml",
            "summary.json"
        ]
    );
    let record = gc::read_record(&old).unwrap().unwrap();
    assert_eq!(record.dropped.len(), 4);
    assert_eq!(record.dropped[0].policy, "keep-raw 30d");

    // verify alone reports them missing; explained by the retention record, the run verifies.
    let mut v = verify_run(&old, Some(&key.verifying_key())).unwrap();
    assert!(!v.ok());
    let explained = gc::explain_missing(&mut v, &old).unwrap();
    assert_eq!(explained.len(), 4);
    assert!(v.ok(), "{:?}", v.problems);

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

    let r = gc::gc_with(
        store.path(),
        &GcOptions {
            keep_raw: Duration::from_secs(86_400),
            now: time::OffsetDateTime::now_utc() + time::Duration::days(2),
            dry_run: false,
        },
    )
    .unwrap();
    assert_eq!(r.pruned[0].dropped.len(), 3);
    assert!(r.skipped[0].reason.contains("p0-r1"), "{:?}", r.skipped);
    assert!(p.exists());

    let mut v = verify_run(&run, None).unwrap();
    gc::explain_missing(&mut v, &run).unwrap();
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
