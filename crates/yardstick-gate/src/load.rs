//! Loading a stored run: its warehouse row and facts, and its run directory's spec and env.

use std::path::{Path, PathBuf};

use serde_json::Value;
use yardstick_spec::BenchmarkRun;
use yardstick_store::run::FindRunError;
use yardstick_store::warehouse::{FactRow, RunRow, Warehouse};

use crate::error::GateError;

/// Everything the comparison needs of one run.
#[derive(Debug, Clone)]
pub struct RunData {
    /// The warehouse row.
    pub run: RunRow,
    /// The run directory (`<store>/runs/<id>`).
    pub dir: PathBuf,
    /// The decoded spec (`spec.yaml`), when it decodes.
    pub spec: Option<BenchmarkRun>,
    /// The spec as JSON (for field-by-field diffs); `Null` when it does not decode.
    pub spec_value: Value,
    /// `env.json`; `Null` when missing.
    pub env: Value,
    /// Every fact of the run.
    pub facts: Vec<FactRow>,
}

/// Finds a run by id or a unique prefix of one ([`yardstick_store::warehouse::find_run`]).
pub fn find_run(w: &mut dyn Warehouse, id: &str) -> Result<RunRow, GateError> {
    yardstick_store::warehouse::find_run(w, id).map_err(|e| match e {
        FindRunError::Store(e) => GateError::Store(e),
        e => GateError::Invalid(e.with_hint()),
    })
}

/// Loads a run stored in a run directory: `facts` from the warehouse, spec and env from the run
/// directory `run.location` names. A missing `env.json` or undecodable spec leaves `Null` (the
/// diff then says so). A run imported from a baseline file is read by
/// [`crate::file::load_run`], which calls this for every other run.
pub fn load_stored(run: RunRow, facts: Vec<FactRow>) -> Result<RunData, GateError> {
    if let Some(why) = yardstick_store::run::unsafe_run_id(&run.run_id) {
        return Err(GateError::Malformed {
            path: run.location.clone(),
            message: format!("the warehouse names run {:?}: {why}", run.run_id),
        });
    }
    let dir = Path::new(&run.location).join("runs").join(&run.run_id);
    let spec_path = dir.join("spec.yaml");
    // Only regular files inside the run directory are read (never through `..` or a link).
    let (spec, spec_value) = match yardstick_store::fsutil::read_in(&dir, "spec.yaml") {
        Ok(bytes) => {
            let spec = yardstick_spec::check_bytes(&bytes).spec;
            let value = spec
                .as_ref()
                .and_then(|s| serde_json::to_value(s).ok())
                .unwrap_or(Value::Null);
            (spec, value)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, Value::Null),
        Err(source) => {
            return Err(GateError::Io {
                path: spec_path.display().to_string(),
                source,
            });
        }
    };
    let env_path = dir.join("env.json");
    let env = match yardstick_store::fsutil::read_in(&dir, "env.json") {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| GateError::Malformed {
            path: env_path.display().to_string(),
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
        Err(source) => {
            return Err(GateError::Io {
                path: env_path.display().to_string(),
                source,
            });
        }
    };
    Ok(RunData {
        run,
        dir,
        spec,
        spec_value,
        env,
        facts,
    })
}
