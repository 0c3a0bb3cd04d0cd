//! Baseline files: `baselines/<machine profile>.json`, for repositories that keep their
//! baselines in git. Each holds, per benchmark, the baseline run's row, spec, env and headline
//! facts (aggregate and per replicate) — enough to gate against without the warehouse.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use yardstick_store::warehouse::{FactRow, PointRow, RunRow, Warehouse};

use crate::compare::classify;
use crate::error::GateError;
use crate::load::{RunData, find_run, load_stored};

/// Format version of baseline files.
pub const SCHEMA: u32 = 1;

/// One `baselines/<profile>.json`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaselineFile {
    /// Format version ([`SCHEMA`]).
    pub schema: u32,
    /// The machine profile every entry was measured on.
    pub machine_profile: String,
    /// One entry per benchmark.
    pub baselines: Vec<BaselineEntry>,
}

/// The baseline of one benchmark.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaselineEntry {
    /// Benchmark name.
    pub benchmark: String,
    /// When it was made the baseline (RFC 3339).
    pub created_at: String,
    /// Why.
    pub note: Option<String>,
    /// The run's warehouse row.
    pub run: RunRow,
    /// The decoded spec (JSON).
    pub spec: Value,
    /// `env.json`.
    pub env: Value,
    /// Headline facts (aggregates and replicates).
    pub facts: Vec<FactRow>,
}

fn malformed(path: &Path, message: impl Into<String>) -> GateError {
    GateError::Malformed {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// File name of a profile's baseline file (path separators in a profile become `_`).
pub fn file_name(profile: &str) -> String {
    let safe: String = profile
        .chars()
        .map(|c| if c == '/' || c == '\\' { '_' } else { c })
        .collect();
    format!("{safe}.json")
}

/// Writes one `<profile>.json` per machine profile with a baseline into `dir` (created).
pub fn export(w: &mut dyn Warehouse, dir: &Path) -> Result<Vec<PathBuf>, GateError> {
    let mut by_profile: std::collections::BTreeMap<String, Vec<BaselineEntry>> = Default::default();
    for b in w.baselines()? {
        let run = load_run(w, &b.run_id)?;
        let facts = run
            .facts
            .into_iter()
            .filter(|f| classify(&f.metric, &f.statistic, &["p90", "p95", "p99"]).is_some())
            .collect();
        by_profile
            .entry(b.machine_profile.clone())
            .or_default()
            .push(BaselineEntry {
                benchmark: b.benchmark,
                created_at: b.created_at,
                note: b.note,
                run: run.run,
                spec: run.spec_value,
                env: run.env,
                facts,
            });
    }
    std::fs::create_dir_all(dir).map_err(|source| GateError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut written = Vec::new();
    for (profile, baselines) in by_profile {
        let path = dir.join(file_name(&profile));
        let file = BaselineFile {
            schema: SCHEMA,
            machine_profile: profile,
            baselines,
        };
        let mut text =
            serde_json::to_string_pretty(&file).map_err(|e| malformed(&path, e.to_string()))?;
        text.push('\n');
        std::fs::write(&path, text).map_err(|source| GateError::Io {
            path: path.display().to_string(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

/// Reads and checks a baseline file (its format version).
fn read(path: &Path) -> Result<BaselineFile, GateError> {
    let bytes = std::fs::read(path).map_err(|source| GateError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let file: BaselineFile = serde_json::from_slice(&bytes)
        .map_err(|e| GateError::Invalid(format!("{}: not a baseline file: {e}", path.display())))?;
    if file.schema != SCHEMA {
        return Err(GateError::Invalid(format!(
            "{}: baseline file schema {} (this yardstick reads {SCHEMA})",
            path.display(),
            file.schema
        )));
    }
    Ok(file)
}

/// The `runs.location` of a run imported from a baseline file: this prefix, then the file's
/// absolute path (spec and env are read from there).
pub const IMPORTED_PREFIX: &str = "baseline-file:";

/// What [`import`] did with one entry.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Imported {
    /// Benchmark.
    pub benchmark: String,
    /// Machine profile.
    pub machine_profile: String,
    /// The baseline run.
    pub run_id: String,
    /// False when the run was already in the warehouse (only the baseline was set).
    pub run_added: bool,
}

/// Imports every baseline of a baseline file into the warehouse: the run row and its facts
/// (unless the run is already there) and the baseline pointer. Replacing a different baseline
/// needs `force`, as with `baseline save`.
pub fn import(w: &mut dyn Warehouse, path: &Path, force: bool) -> Result<Vec<Imported>, GateError> {
    let file = read(path)?;
    let abs = std::fs::canonicalize(path).map_err(|source| GateError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut out = Vec::new();
    for e in file.baselines {
        let run_id = e.run.run_id.clone();
        let exists = w.run(&run_id)?.is_some();
        if !exists {
            let mut run = e.run.clone();
            run.machine_profile = Some(file.machine_profile.clone());
            run.location = format!("{IMPORTED_PREFIX}{}", abs.display());
            w.upsert_run(&run)?;
            let mut points: Vec<String> = e.facts.iter().map(|f| f.point_id.clone()).collect();
            points.sort();
            points.dedup();
            let rows: Vec<PointRow> = points
                .into_iter()
                .map(|p| PointRow {
                    run_id: run_id.clone(),
                    layer: p.split('.').next().unwrap_or("imported").to_string(),
                    kind: "imported".into(),
                    params: Value::Null,
                    point_id: p,
                })
                .collect();
            w.upsert_points(&rows)?;
            let facts: Vec<FactRow> = e
                .facts
                .iter()
                .cloned()
                .map(|mut f| {
                    f.run_id = run_id.clone();
                    f
                })
                .collect();
            w.upsert_facts(&facts)?;
        }
        w.set_baseline(
            &yardstick_store::warehouse::BaselineRow {
                machine_profile: file.machine_profile.clone(),
                benchmark: e.benchmark.clone(),
                run_id: run_id.clone(),
                created_at: e.created_at.clone(),
                note: e.note.clone(),
            },
            force,
        )?;
        out.push(Imported {
            benchmark: e.benchmark,
            machine_profile: file.machine_profile.clone(),
            run_id,
            run_added: !exists,
        });
    }
    Ok(out)
}

/// Loads a run (by id or unique prefix): facts from the warehouse, spec and env from its run
/// directory, or from the baseline file it was imported from ([`IMPORTED_PREFIX`]). A missing
/// `env.json` or undecodable spec leaves `Null` (the diff then says so).
pub fn load_run(w: &mut dyn Warehouse, id: &str) -> Result<RunData, GateError> {
    let run = find_run(w, id)?;
    let facts = w.facts(&run.run_id)?;
    if let Some(file) = run.location.strip_prefix(IMPORTED_PREFIX) {
        // A baseline imported from a baseline file: its spec and env live in that file.
        let mut data = load(Path::new(file), &run.name)?;
        data.run = run;
        data.facts = facts;
        return Ok(data);
    }
    load_stored(run, facts)
}

/// Reads the baseline of `benchmark` from a baseline file, as a run to gate against.
pub fn load(path: &Path, benchmark: &str) -> Result<RunData, GateError> {
    let file = read(path)?;
    let entry = file
        .baselines
        .into_iter()
        .find(|e| e.benchmark == benchmark)
        .ok_or_else(|| {
            GateError::Invalid(format!(
                "{}: no baseline for benchmark `{benchmark}`",
                path.display()
            ))
        })?;
    let spec = serde_json::from_value(entry.spec.clone()).ok();
    let mut run = entry.run;
    run.machine_profile = Some(file.machine_profile);
    Ok(RunData {
        dir: path.to_path_buf(),
        run,
        spec,
        spec_value: entry.spec,
        env: entry.env,
        facts: entry.facts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_error::UserFacing;

    #[test]
    fn profile_names_make_safe_file_names() {
        assert_eq!(
            file_name("cpu-EPYC-x2c_linux6.1"),
            "cpu-EPYC-x2c_linux6.1.json"
        );
        assert_eq!(file_name("a/b"), "a_b.json");
    }

    #[test]
    fn wrong_files_are_invalid_input() {
        let dir = std::env::temp_dir().join(format!("yardstick-gate-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.json");
        std::fs::write(&p, "{\"schema\": 1}").unwrap();
        let e = load(&p, "b").unwrap_err();
        assert!(e.is_invalid_input(), "{e}");
        std::fs::write(
            &p,
            "{\"schema\": 1, \"machine_profile\": \"p\", \"baselines\": []}",
        )
        .unwrap();
        let e = load(&p, "b").unwrap_err();
        assert!(
            e.to_string().contains("no baseline for benchmark `b`"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
