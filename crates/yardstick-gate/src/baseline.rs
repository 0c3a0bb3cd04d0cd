//! Baselines: one reference run per (machine profile, benchmark name), stored in the warehouse.
//! Saving is explicit; replacing another run's baseline needs `force`.

use std::path::Path;

use yardstick_store::warehouse::{BaselineRow, RunRow, Warehouse};

use crate::error::GateError;
use crate::file::load_run;
use crate::load::{RunData, find_run};

/// Saves `run_id` (or a unique prefix) as the baseline of its machine profile and benchmark.
/// Only complete runs with a machine profile can be baselines.
pub fn save(
    w: &mut dyn Warehouse,
    run_id: &str,
    force: bool,
    note: Option<String>,
) -> Result<BaselineRow, GateError> {
    let run = find_run(w, run_id)?;
    if run.status != yardstick_store::RunStatus::Complete {
        return Err(GateError::Invalid(format!(
            "run {} is `{}`; only a complete run can be a baseline",
            run.run_id, run.status
        )));
    }
    let profile = run.machine_profile.clone().ok_or_else(|| {
        GateError::Invalid(format!(
            "run {} has no machine profile; a baseline is keyed by one",
            run.run_id
        ))
    })?;
    let row = BaselineRow {
        machine_profile: profile,
        benchmark: run.name.clone(),
        run_id: run.run_id.clone(),
        created_at: yardstick_env::now_rfc3339(),
        note,
    };
    w.set_baseline(&row, force)?;
    Ok(row)
}

/// Whether `run_id` may become a baseline under the trust policy of the store directory
/// `store` (`None`: a database without run directories, which has no trust policy). A store
/// that requires signatures (`yardstick trust require on`) makes only runs a trusted key
/// signed, and that verify intact, baselines: a baseline is what every later run is judged
/// against.
pub fn admit(store: Option<&Path>, run_id: &str) -> Result<(), GateError> {
    let Some(dir) = store.filter(|d| d.is_dir()) else {
        return Ok(());
    };
    if !yardstick_store::trust::load(dir)?.require_signature {
        return Ok(());
    }
    let one = yardstick_store::run::resolve_dir(dir, run_id).map_err(|e| match e {
        yardstick_store::run::FindRunError::Store(e) => GateError::Store(e),
        e @ yardstick_store::run::FindRunError::NoDirectory { .. } => GateError::Invalid(format!(
            "{e}: this store requires signed runs, so a baseline needs the run's directory \
                 to verify"
        )),
        e => GateError::Invalid(e.with_hint()),
    })?;
    yardstick_store::trust::admit(dir, &one)?;
    Ok(())
}

/// [`admit`], then [`save`]: what `yardstick baseline save` and the server's
/// `PUT /api/v1/baselines` do.
pub fn save_admitted(
    w: &mut dyn Warehouse,
    store: Option<&Path>,
    run_id: &str,
    force: bool,
    note: Option<String>,
) -> Result<BaselineRow, GateError> {
    let run = find_run(w, run_id)?;
    admit(store, &run.run_id)?;
    save(w, &run.run_id, force, note)
}

/// Every stored baseline.
pub fn list(w: &mut dyn Warehouse) -> Result<Vec<BaselineRow>, GateError> {
    Ok(w.baselines()?)
}

/// The stored baseline of a machine profile and benchmark, if any.
pub fn find(
    w: &mut dyn Warehouse,
    profile: &str,
    benchmark: &str,
) -> Result<Option<BaselineRow>, GateError> {
    Ok(w.baselines()?
        .into_iter()
        .find(|b| b.machine_profile == profile && b.benchmark == benchmark))
}

/// `--baseline auto`: the stored baseline of the candidate's machine profile and name.
pub fn resolve_auto(w: &mut dyn Warehouse, candidate: &RunRow) -> Result<BaselineRow, GateError> {
    let profile = candidate.machine_profile.clone().unwrap_or_default();
    find(w, &profile, &candidate.name)?.ok_or(GateError::NoBaseline {
        profile,
        benchmark: candidate.name.clone(),
    })
}

/// The baseline to gate `candidate` against, as `gate --baseline` names it: `auto` (the stored
/// baseline of the candidate's machine profile and benchmark), a directory of baseline files
/// (`baseline export`; the file of the candidate's profile), a baseline file, or a run id (or
/// unique prefix).
pub fn resolve(
    w: &mut dyn Warehouse,
    which: &str,
    candidate: &RunData,
) -> Result<RunData, GateError> {
    let as_file = Path::new(which);
    if which == "auto" {
        let id = resolve_auto(w, &candidate.run)?.run_id;
        load_run(w, &id)
    } else if as_file.is_dir() {
        let profile = candidate
            .run
            .machine_profile
            .as_deref()
            .unwrap_or("unknown");
        let file = as_file.join(crate::file::file_name(profile));
        if !file.is_file() {
            return Err(GateError::NoBaselineFile {
                profile: profile.to_string(),
                dir: as_file.to_path_buf(),
                file,
            });
        }
        crate::file::load(&file, &candidate.run.name)
    } else if as_file.is_file() {
        crate::file::load(as_file, &candidate.run.name)
    } else {
        load_run(w, which)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run_row as row;
    use yardstick_error::UserFacing;
    use yardstick_store::warehouse::open_warehouse;

    fn data(run: RunRow) -> RunData {
        RunData {
            dir: Path::new(&run.location).join("runs").join(&run.run_id),
            run,
            spec: None,
            spec_value: serde_json::Value::Null,
            env: serde_json::Value::Null,
            facts: Vec::new(),
        }
    }

    #[test]
    fn baselines_resolve_from_auto_a_directory_a_file_or_a_run() {
        let dir =
            std::env::temp_dir().join(format!("yardstick-gate-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = dir.to_str().unwrap();
        let mut w = open_warehouse(store).unwrap();
        let base = row("01BASE00000000000000000000", store);
        let cand = data(row("01CAND00000000000000000000", store));
        w.upsert_run(&base).unwrap();
        w.upsert_run(&cand.run).unwrap();

        // auto: nothing stored yet, then the stored baseline.
        let e = resolve(w.as_mut(), "auto", &cand).unwrap_err();
        assert!(matches!(e, GateError::NoBaseline { .. }), "{e}");
        save(w.as_mut(), "01BASE", false, None).unwrap();
        let got = resolve(w.as_mut(), "auto", &cand).unwrap();
        assert_eq!(got.run.run_id, base.run_id);
        // A run id prefix.
        let got = resolve(w.as_mut(), "01base", &cand).unwrap();
        assert_eq!(got.run.run_id, base.run_id);
        let e = resolve(w.as_mut(), "01NONE", &cand).unwrap_err();
        assert!(e.is_invalid_input(), "{e}");

        // A directory without the profile's file, then with it; the file itself.
        let files = dir.join("baselines");
        std::fs::create_dir_all(&files).unwrap();
        let e = resolve(w.as_mut(), files.to_str().unwrap(), &cand).unwrap_err();
        assert!(e.is_invalid_input());
        assert_eq!(
            e.to_string(),
            format!(
                "no baseline file for machine profile cpu-test in {} (looked for {})",
                files.display(),
                files.join("cpu-test.json").display()
            )
        );
        assert!(e.hint().unwrap().contains("baseline export --dir DIR"));
        let written = crate::file::export(w.as_mut(), &files).unwrap();
        assert_eq!(written, [files.join("cpu-test.json")]);
        for which in [&files, &written[0]] {
            let got = resolve(w.as_mut(), which.to_str().unwrap(), &cand).unwrap();
            assert_eq!(got.run.run_id, base.run_id);
            assert_eq!(got.dir, written[0]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
