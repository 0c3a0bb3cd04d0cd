//! Indexing a stored run directory into a warehouse: the rows `yardstick run` (or `yardstick
//! import`) wrote while it measured, rebuilt from the sealed files alone — the manifest, the
//! spec, and each replicate's result record (`results/<point>/rN.json`). The team server indexes
//! a pushed run this way; any store can rebuild its warehouse from its run directories.
//!
//! The rows are computed first ([`read_run_dir`]), without touching a warehouse, so that a run
//! whose records do not read is refused before anything is written; [`RunRows::write`] then
//! upserts them (idempotent: indexing a run twice leaves one run).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use yardstick_store::record::ReplicateRecord;
use yardstick_store::summary::RunSummary;
use yardstick_store::warehouse::{FactRow, PointRow, ReplicateRow, RunRow, RunRows, Warehouse};
use yardstick_store::{ReplicateStatus, StoreError};

use crate::RunError;
use crate::facts::Figures;
use crate::plan::{PointWork, plan};

/// The point's `kind` column: the micro benchmark's name, or what runs (`serve`, `eval`, ...).
pub(crate) fn point_kind(work: &PointWork) -> String {
    match work {
        PointWork::Micro { micro, .. } => micro.clone(),
        PointWork::Serve { .. } => "serve".into(),
        PointWork::Eval { .. } => "eval".into(),
        PointWork::Train { .. } => "train".into(),
        PointWork::Command { .. } => "command".into(),
        PointWork::Startup { .. } => "startup".into(),
        PointWork::Dataloader { .. } => "dataloader".into(),
    }
}

/// The replicate row, facts and figures of one sealed result record, as `yardstick run` writes
/// them when the replicate finishes; an error names what of the record does not read.
pub(crate) fn replicate_rows(
    run_id: &str,
    point_id: &str,
    replicate: u32,
    record: &ReplicateRecord,
    started_fallback: &str,
) -> (ReplicateRow, Vec<FactRow>, Figures) {
    // A measured replicate names its raw samples; an imported one the file it came from.
    let artifact = record.artifact().map(str::to_string);
    let figures = record.figures();
    let facts =
        crate::facts::replicate_facts(run_id, point_id, replicate, &figures, artifact.as_deref());
    let row = ReplicateRow {
        run_id: run_id.to_string(),
        point_id: point_id.to_string(),
        replicate,
        status: if record.failed() {
            ReplicateStatus::Failed
        } else {
            ReplicateStatus::Complete
        },
        started_at: record
            .started_at
            .clone()
            .unwrap_or_else(|| started_fallback.to_string()),
        ended_at: record
            .ended_at
            .clone()
            .or_else(|| Some(started_fallback.to_string())),
        artifact,
    };
    (row, facts, figures)
}

fn bad(dir: &Path, what: impl std::fmt::Display) -> RunError {
    RunError::Invalid(format!("{}: {what}", dir.display()))
}

/// The warehouse rows of the run stored in `dir`, recorded as stored at `location` (the store
/// directory or warehouse URL the run row names). Nothing is written. A result record that is
/// not JSON, or names no point or replicate, is [`RunError::Invalid`].
///
/// Points come from the spec's plan when `spec.yaml` is a BenchmarkRun (only the points the run
/// has results for, as `run --only` stores them), else from `summary.json` (imports); the
/// aggregates over replicates are computed from the result records at the spec's confidence
/// level, exactly as `yardstick run` computes them.
pub fn read_run_dir(dir: &Path, location: &str) -> Result<RunRows, RunError> {
    let manifest = yardstick_store::read_manifest(dir)?;
    let run_id = manifest.run_id.clone();
    let read = |rel: &str| -> Result<Vec<u8>, RunError> {
        yardstick_store::fsutil::read_in(dir, rel).map_err(|e| bad(dir, format!("{rel}: {e}")))
    };
    let started = manifest.ended_at.as_deref().unwrap_or(&manifest.started_at);

    // Every replicate's sealed record, by point.
    let mut by_point: BTreeMap<String, BTreeMap<u32, ReplicateRecord>> = BTreeMap::new();
    for a in manifest.artifacts.iter().filter(|a| {
        a.kind == "result" && a.path.starts_with("results/") && a.path.ends_with(".json")
    }) {
        let record = ReplicateRecord::read(&read(&a.path)?)
            .map_err(|e| bad(dir, format!("{}: {e}", a.path)))?;
        by_point
            .entry(record.point.clone())
            .or_default()
            .insert(record.replicate, record);
    }

    let spec = read("spec.yaml")
        .ok()
        .and_then(|b| yardstick_spec::check_bytes(&b).spec);
    let summary: Option<RunSummary> = read("summary.json")
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    // Points of the spec's plan (a BenchmarkRun), as `yardstick run` stores them.
    let mut points: Vec<PointRow> = spec
        .as_ref()
        .map(|spec| {
            plan(spec)
                .points
                .iter()
                .filter(|p| by_point.contains_key(&p.id))
                .map(|p| PointRow {
                    run_id: run_id.clone(),
                    point_id: p.id.clone(),
                    layer: p.layer.clone(),
                    kind: point_kind(&p.work),
                    params: serde_json::to_value(&p.work).expect("JSON"),
                })
                .collect()
        })
        .unwrap_or_default();
    let planned = !points.is_empty();
    let (mode, level) = match spec.as_ref().and_then(|s| s.spec.as_ref()) {
        Some(s) if planned => (
            s.mode.map(|m| m.to_string()),
            s.trials
                .as_ref()
                .and_then(|t| t.confidence_level)
                .unwrap_or(0.95),
        ),
        _ => (None, summary.as_ref().map_or(0.95, |s| s.confidence_level)),
    };
    // Points the plan does not have (an import): its summary names the point, its layer and
    // what was imported.
    for p in summary.iter().flat_map(|s| &s.points) {
        let id = p.id.as_str();
        if !by_point.contains_key(id) || points.iter().any(|q| q.point_id == id) {
            continue;
        }
        let work = p.work.clone();
        // A serving import's points say their kind (`serve`), as the plan's do.
        let kind = work["kind"].as_str().unwrap_or_else(|| {
            [
                crate::import::Tool::Nccl,
                crate::import::Tool::Fio,
                crate::import::Tool::Stream,
            ]
            .into_iter()
            .find(|t| work["import"].as_str() == Some(t.display()))
            .map_or("import", |t| t.name())
        });
        points.push(PointRow {
            run_id: run_id.clone(),
            point_id: id.to_string(),
            layer: p.layer.clone(),
            kind: kind.to_string(),
            params: work,
        });
    }
    // A point with results that neither the plan nor the summary describes still gets a row,
    // so that its facts have one to belong to.
    for id in by_point.keys() {
        if !points.iter().any(|p| &p.point_id == id) {
            points.push(PointRow {
                run_id: run_id.clone(),
                point_id: id.clone(),
                layer: id.split('.').next().unwrap_or("unknown").to_string(),
                kind: "unknown".into(),
                params: Value::Null,
            });
        }
    }

    let mut replicates = Vec::new();
    let mut facts = Vec::new();
    let mut per_point = Vec::new();
    for p in &points {
        let records = &by_point[&p.point_id];
        let mut figures = Vec::with_capacity(records.len());
        for (r, record) in records {
            let (row, f, fig) = replicate_rows(&run_id, &p.point_id, *r, record, started);
            figures.push((row.status != ReplicateStatus::Failed).then_some(fig));
            replicates.push(row);
            facts.extend(f);
        }
        per_point.push((p.point_id.clone(), figures));
    }
    facts.extend(crate::facts::aggregate(&run_id, &per_point, level));
    let run = RunRow {
        run_id: run_id.clone(),
        name: manifest.name.clone(),
        status: manifest.effective_status(),
        mode,
        spec_sha256: manifest.spec_sha256.clone(),
        machine_profile: manifest.machine_profile.clone(),
        env_sha256: manifest.env_sha256.clone(),
        started_at: manifest.started_at.clone(),
        ended_at: manifest.ended_at.clone(),
        tool_version: manifest.tool.version.clone(),
        git_commit: manifest.tool.git_commit.clone(),
        location: location.to_string(),
    };
    Ok(RunRows {
        run,
        points,
        replicates,
        facts,
    })
}

/// Indexes the run stored in `dir` into `w` ([`read_run_dir`], then [`RunRows::write`]).
pub fn index_run_dir(
    dir: &Path,
    location: &str,
    w: &mut dyn Warehouse,
) -> Result<RunRows, RunError> {
    let rows = read_run_dir(dir, location)?;
    rows.write(w).map_err(|e: StoreError| RunError::Store(e))?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{EnvSource, ImportFile, ImportOptions, Tool, import};
    use yardstick_store::ToolInfo;
    use yardstick_store::warehouse::open_warehouse;

    fn tool() -> ToolInfo {
        ToolInfo {
            name: "yardstick".into(),
            version: "0".into(),
            git_commit: None,
        }
    }

    fn stream_output() -> Vec<u8> {
        std::fs::read(format!(
            "{}/../yardstick-workloads/tests/fixtures/stream_omp.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn an_imported_run_indexes_into_another_warehouse_as_import_indexed_it() {
        let a = tempfile::tempdir().unwrap();
        let files: Vec<ImportFile> = (0..3)
            .map(|i| ImportFile {
                name: format!("stream-{i}.txt"),
                bytes: stream_output(),
            })
            .collect();
        let out = import(
            Tool::Stream,
            &files,
            &ImportOptions {
                store: a.path().to_path_buf(),
                warehouse: None,
                tool_info: tool(),
                name: None,
                env: EnvSource::Profile("cpu-test".into()),
                confidence_level: 0.9,
                key: None,
            },
        )
        .unwrap();
        let a_loc = a.path().display().to_string();
        let mut wa = open_warehouse(&a_loc).unwrap();

        let b = tempfile::tempdir().unwrap();
        let b_loc = b.path().display().to_string();
        let mut wb = open_warehouse(&b_loc).unwrap();
        let rows = index_run_dir(&out.dir, &b_loc, wb.as_mut()).unwrap();
        // Twice: upserts, one run.
        index_run_dir(&out.dir, &b_loc, wb.as_mut()).unwrap();

        let id = &out.run_id;
        let run_a = wa.run(id).unwrap().unwrap();
        let run_b = wb.run(id).unwrap().unwrap();
        assert_eq!(
            RunRow {
                location: a_loc.clone(),
                ..run_b.clone()
            },
            run_a
        );
        assert_eq!(run_b.location, b_loc);
        assert_eq!(wb.runs(&Default::default()).unwrap().len(), 1);
        assert_eq!(wb.points(id).unwrap(), wa.points(id).unwrap());
        assert_eq!(wb.facts(id).unwrap(), wa.facts(id).unwrap());
        assert!(!rows.facts.is_empty());
        let strip = |mut r: Vec<ReplicateRow>| {
            for x in &mut r {
                x.started_at.clear();
                x.ended_at = None;
            }
            r
        };
        assert_eq!(
            strip(wb.replicates(id).unwrap()),
            strip(wa.replicates(id).unwrap())
        );
    }

    #[test]
    fn a_spec_run_indexes_its_planned_points_and_a_bad_record_is_refused() {
        let store = tempfile::tempdir().unwrap();
        let spec = "apiVersion: yardstick/v1
kind: BenchmarkRun
metadata: {name: idx}
spec:
  mode: exploratory
  trials: {replicates: 3, confidenceLevel: 0.95}
  layers:
    micro: [{kind: memory}]
";
        let checked = yardstick_spec::check_bytes(spec.as_bytes());
        let plan = plan(checked.spec.as_ref().expect("a valid spec"));
        let point = &plan.points[0];
        // A sealed run of `spec` holding these result files.
        let sealed = |results: Vec<(String, Vec<u8>)>| {
            let mut w =
                yardstick_store::RunWriter::create(&store.path().join("runs"), "idx", spec, tool())
                    .unwrap();
            for (path, bytes) in &results {
                w.add(path, bytes, "result").unwrap();
            }
            let dir = w.dir().to_path_buf();
            w.complete(None).unwrap();
            dir
        };
        let result = |r: u64, record: serde_json::Value| {
            (
                format!("results/{}/r{r}.json", point.slug),
                serde_json::to_vec(&record).unwrap(),
            )
        };
        let dir = sealed(
            [10.0, 12.0, 11.0]
                .into_iter()
                .zip(0..)
                .map(|(v, r)| {
                    result(
                        r,
                        serde_json::json!({
                            "point": point.id, "replicate": r,
                            "started_at": "2026-01-01T00:00:00Z",
                            "ended_at": "2026-01-01T00:00:01Z", "samples": null,
                            "summary": {"memory.triad": {"mean": v, "unit": "GB/s"}},
                        }),
                    )
                })
                .collect(),
        );
        let rows = read_run_dir(&dir, "here").unwrap();
        assert_eq!(rows.run.mode.as_deref(), Some("exploratory"));
        assert_eq!(rows.points.len(), 1);
        assert_eq!(rows.points[0].kind, point_kind(&point.work));
        assert_eq!(rows.replicates.len(), 3);
        let aggregate: Vec<_> = rows
            .facts
            .iter()
            .filter(|f| f.replicate.is_none())
            .collect();
        assert!(!aggregate.is_empty(), "{:?}", rows.facts);
        assert!(aggregate.iter().all(|f| f.n == 3));
        let mean = aggregate
            .iter()
            .find(|f| f.metric == "memory.triad" && f.statistic == "mean")
            .unwrap();
        // A bandwidth: the geometric mean of 10, 12 and 11 GB/s, as `yardstick run` aggregates.
        assert!((mean.value - 1320f64.cbrt()).abs() < 1e-9, "{mean:?}");

        // A record that is not JSON: refused, nothing to write.
        let dir = sealed(vec![("results/x/r0.json".into(), b"{not json".to_vec())]);
        let e = read_run_dir(&dir, "here").unwrap_err();
        assert!(matches!(e, RunError::Invalid(_)), "{e}");
        assert!(e.to_string().contains("results/x/r0.json"), "{e}");

        // A record whose figures do not read: refused, naming the record's file and the field.
        let dir = sealed(vec![result(
            0,
            serde_json::json!({
                "point": point.id, "replicate": 0, "summary": {},
                "figures": {"n": 1, "measurements": [{"metric": "memory.triad"}]},
            }),
        )]);
        let e = read_run_dir(&dir, "here").unwrap_err();
        assert!(matches!(e, RunError::Invalid(_)), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("results/{}/r0.json", point.slug)) && msg.contains("`figures`"),
            "{msg}"
        );
    }
}
