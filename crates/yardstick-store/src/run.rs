//! Run directories: `<store>/runs/<run_id>/` with the spec, environment, raw samples, logs,
//! summary, a manifest listing every artifact with its sha256, and (when signing) an attestation.
//!
//! The manifest is rewritten atomically after every artifact, so a crash leaves a run whose
//! manifest lists exactly the artifacts that were completely written (status `running`, read back
//! as incomplete). Artifacts are sealed (read-only) as soon as they are written.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::fsutil::{seal_file, sha256_bytes, write_atomic};
use crate::layout::MANIFEST;

/// Manifest schema identifier.
pub const MANIFEST_SCHEMA: &str = "yardstick.manifest/v1";
/// File name of the attestation.
pub const ATTESTATION: &str = "attestation.dsse.json";

/// Lifecycle of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Being written (a crashed run stays in this state and reads as incomplete).
    Running,
    /// Stopped before every point finished (Ctrl-C, crash); resumable.
    Incomplete,
    /// Every point finished; the manifest is sealed.
    Complete,
}

impl RunStatus {
    /// `running`, `incomplete`, `complete`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Complete => "complete",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunStatus {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "running" => Ok(RunStatus::Running),
            "incomplete" => Ok(RunStatus::Incomplete),
            "complete" => Ok(RunStatus::Complete),
            _ => Err(UnknownStatus(s.to_string())),
        }
    }
}

/// How one replicate ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReplicateStatus {
    /// It measured.
    Complete,
    /// Its workload could not run (the error is in the run's results).
    Failed,
}

impl ReplicateStatus {
    /// `complete`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicateStatus::Complete => "complete",
            ReplicateStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for ReplicateStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReplicateStatus {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "complete" => Ok(ReplicateStatus::Complete),
            "failed" => Ok(ReplicateStatus::Failed),
            _ => Err(UnknownStatus(s.to_string())),
        }
    }
}

/// A status string the store does not know (a warehouse written by something else).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown status `{0}`")]
pub struct UnknownStatus(pub String);

/// The tool that produced a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ToolInfo {
    /// `yardstick`.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Git commit of the working directory the run was started from, if any.
    pub git_commit: Option<String>,
}

/// One file of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Artifact {
    /// Path relative to the run directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256, hex.
    pub sha256: String,
    /// What it is: `spec`, `env`, `samples`, `telemetry`, `log`, `summary`, `other`.
    pub kind: String,
}

/// The manifest: identity, provenance and every artifact of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Manifest {
    /// [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// ULID of the run.
    pub run_id: String,
    /// The spec's `metadata.name`.
    pub name: String,
    /// Lifecycle state.
    pub status: RunStatus,
    /// sha256 of the spec as given.
    pub spec_sha256: String,
    /// The tool.
    pub tool: ToolInfo,
    /// Machine profile key of the environment capture.
    pub machine_profile: Option<String>,
    /// sha256 of `env.json`.
    pub env_sha256: Option<String>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time (complete or incomplete runs).
    pub ended_at: Option<String>,
    /// Every artifact, in the order written.
    pub artifacts: Vec<Artifact>,
    /// Free-form notes (e.g. "machine profile changed mid-run", "resumed at ...").
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Manifest {
    /// The effective status: a run left `running` by a process that is gone is incomplete.
    pub fn effective_status(&self) -> RunStatus {
        match self.status {
            RunStatus::Running => RunStatus::Incomplete,
            s => s,
        }
    }

    /// The artifact at `path`, if listed.
    pub fn artifact(&self, path: &str) -> Option<&Artifact> {
        self.artifacts.iter().find(|a| a.path == path)
    }
}

/// Writes into one run directory.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    manifest: Manifest,
}

impl RunWriter {
    /// Creates `<runs>/<new ULID>/`, writes the spec (sealed) and a `running` manifest.
    pub fn create(
        runs_dir: &Path,
        name: &str,
        spec_text: &str,
        tool: ToolInfo,
    ) -> Result<Self, StoreError> {
        let run_id = ulid::Ulid::new().to_string();
        let dir = runs_dir.join(&run_id);
        std::fs::create_dir_all(&dir)?;
        let mut w = RunWriter {
            dir,
            manifest: Manifest {
                schema: MANIFEST_SCHEMA.into(),
                run_id,
                name: name.into(),
                status: RunStatus::Running,
                spec_sha256: sha256_bytes(spec_text.as_bytes()),
                tool,
                machine_profile: None,
                env_sha256: None,
                started_at: yardstick_env::now_rfc3339(),
                ended_at: None,
                artifacts: Vec::new(),
                notes: Vec::new(),
            },
        };
        w.add("spec.yaml", spec_text.as_bytes(), "spec")?;
        Ok(w)
    }

    /// Reopens an incomplete run to continue it. Every listed artifact is checked first; a run
    /// whose artifacts changed is refused.
    pub fn resume(dir: &Path) -> Result<Self, StoreError> {
        let manifest = read_manifest(dir)?;
        if manifest.status == RunStatus::Complete {
            return Err(StoreError::Invalid(format!(
                "run {} is complete; there is nothing to resume",
                manifest.run_id
            )));
        }
        for a in &manifest.artifacts {
            let (sha, _) = crate::fsutil::sha256_in(dir, &a.path)?.ok_or_else(|| {
                StoreError::Integrity(format!("{}: missing; refusing to resume", a.path))
            })?;
            if sha != a.sha256 {
                return Err(StoreError::Integrity(format!(
                    "{} changed since it was written; refusing to resume",
                    a.path
                )));
            }
        }
        let mut w = RunWriter {
            dir: dir.to_path_buf(),
            manifest,
        };
        w.manifest.status = RunStatus::Running;
        w.manifest
            .notes
            .push(format!("resumed at {}", yardstick_env::now_rfc3339()));
        w.write_manifest()?;
        Ok(w)
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.manifest.run_id
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest as it stands.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Records the environment capture (`env.json`) and its machine profile.
    pub fn set_env(&mut self, env_json: &[u8], machine_profile: &str) -> Result<(), StoreError> {
        let a = self.add("env.json", env_json, "env")?;
        self.manifest.env_sha256 = Some(a.sha256);
        self.manifest.machine_profile = Some(machine_profile.to_string());
        self.write_manifest().map(drop)
    }

    /// Adds a note to the manifest.
    pub fn note(&mut self, note: impl Into<String>) -> Result<(), StoreError> {
        self.manifest.notes.push(note.into());
        self.write_manifest().map(drop)
    }

    /// Whether an artifact is already recorded (e.g. a replicate finished before a resume).
    pub fn has(&self, rel: &str) -> bool {
        self.manifest.artifact(rel).is_some()
    }

    /// Writes an artifact atomically, seals it, and records it in the manifest.
    pub fn add(&mut self, rel: &str, bytes: &[u8], kind: &str) -> Result<Artifact, StoreError> {
        check_rel(rel)?;
        if self.has(rel) {
            return Err(StoreError::Invalid(format!(
                "artifact {rel} already exists in run {}; sealed artifacts are never rewritten",
                self.manifest.run_id
            )));
        }
        let path = self.dir.join(rel);
        write_atomic(&path, bytes)?;
        seal_file(&path)?;
        let a = Artifact {
            path: rel.to_string(),
            size: bytes.len() as u64,
            sha256: sha256_bytes(bytes),
            kind: kind.to_string(),
        };
        self.manifest.artifacts.push(a.clone());
        self.write_manifest()?;
        Ok(a)
    }

    /// Adds a file that was produced in place (e.g. a log written by a child process): hashes it,
    /// seals it, records it.
    pub fn adopt(&mut self, rel: &str, kind: &str) -> Result<Artifact, StoreError> {
        check_rel(rel)?;
        // A child process wrote this file: it may have left a symlink there, which must not be
        // hashed or sealed (chmod follows links) in place of the file.
        let path = crate::fsutil::resolve_in(&self.dir, rel)?;
        let (sha256, size) = crate::fsutil::sha256_in(&self.dir, rel)?
            .ok_or_else(|| StoreError::NotFound(format!("{rel} was not written")))?;
        seal_file(&path)?;
        let a = Artifact {
            path: rel.into(),
            size,
            sha256,
            kind: kind.into(),
        };
        self.manifest.artifacts.push(a.clone());
        self.write_manifest()?;
        Ok(a)
    }

    /// Removes the artifacts of a replicate that did not finish (a kill landed after some of its
    /// files were sealed but before its result was): they leave the manifest and the disk, with a
    /// note, so that the replicate can be measured again under the same names. Only a run that is
    /// not complete has a writer, so a complete run's artifacts are never touched. Returns the
    /// paths removed.
    pub fn discard_unfinished(&mut self, prefixes: &[String]) -> Result<Vec<String>, StoreError> {
        let (gone, kept): (Vec<Artifact>, Vec<Artifact>) =
            std::mem::take(&mut self.manifest.artifacts)
                .into_iter()
                .partition(|a| prefixes.iter().any(|p| a.path.starts_with(p.as_str())));
        self.manifest.artifacts = kept;
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        let paths: Vec<String> = gone.into_iter().map(|a| a.path).collect();
        self.manifest.notes.push(format!(
            "discarded the artifacts of an unfinished replicate, measured again: {}",
            paths.join(", ")
        ));
        // The manifest first: a crash between the two leaves unlisted files (which the next
        // attempt at the replicate overwrites under the same names), never a listed file that
        // is missing.
        self.write_manifest()?;
        for p in &paths {
            match std::fs::remove_file(self.dir.join(p)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(paths)
    }

    /// Ends the run as incomplete (interrupted); it can be resumed.
    pub fn interrupt(mut self, why: &str) -> Result<Manifest, StoreError> {
        self.manifest.status = RunStatus::Incomplete;
        self.manifest.ended_at = Some(yardstick_env::now_rfc3339());
        self.manifest.notes.push(format!("interrupted: {why}"));
        self.write_manifest()?;
        Ok(self.manifest)
    }

    /// Completes the run: seals the manifest and, given a key, writes the attestation.
    pub fn complete(
        mut self,
        key: Option<&ed25519_dalek::SigningKey>,
    ) -> Result<Manifest, StoreError> {
        self.manifest.status = RunStatus::Complete;
        self.manifest.ended_at = Some(yardstick_env::now_rfc3339());
        let bytes = self.write_manifest()?;
        seal_file(&self.dir.join(MANIFEST))?;
        if let Some(key) = key {
            let predicate = serde_json::json!({
                "run_id": self.manifest.run_id,
                "name": self.manifest.name,
                "spec_sha256": self.manifest.spec_sha256,
                "machine_profile": self.manifest.machine_profile,
                "tool": self.manifest.tool,
                "started_at": self.manifest.started_at,
                "ended_at": self.manifest.ended_at,
            });
            let env = crate::sign::attest(&bytes, predicate, key);
            let path = self.dir.join(ATTESTATION);
            write_atomic(&path, &serde_json::to_vec_pretty(&env).expect("JSON"))?;
            seal_file(&path)?;
        }
        Ok(self.manifest)
    }

    fn write_manifest(&mut self) -> Result<Vec<u8>, StoreError> {
        let bytes = serde_json::to_vec_pretty(&self.manifest).expect("manifest is JSON");
        write_atomic(&self.dir.join(MANIFEST), &bytes)?;
        Ok(bytes)
    }
}

fn check_rel(rel: &str) -> Result<(), StoreError> {
    if let Some(why) = crate::fsutil::unsafe_relative(rel) {
        return Err(StoreError::Invalid(format!(
            "invalid artifact path `{rel}`: {why}"
        )));
    }
    if rel == MANIFEST || rel == ATTESTATION {
        return Err(StoreError::Invalid(format!(
            "invalid artifact path `{rel}`: the name is reserved"
        )));
    }
    Ok(())
}

/// Why `id` cannot be a run id (a directory name under `runs/`): `None` when it can. Run ids
/// are ULIDs; any name of ASCII letters, digits, `-` and `_` up to 64 characters is accepted,
/// so a run id read from a warehouse or a request can never name a path elsewhere.
pub fn unsafe_run_id(id: &str) -> Option<&'static str> {
    if id.is_empty() || id.len() > 64 {
        Some("a run id has 1 to 64 characters")
    } else if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Some("a run id has only ASCII letters, digits, `-` and `_`")
    } else {
        None
    }
}

/// `<store>/runs/<run_id>`, refusing a run id that could name anything else.
pub fn run_dir(store: &Path, run_id: &str) -> Result<PathBuf, StoreError> {
    match unsafe_run_id(run_id) {
        Some(why) => Err(StoreError::Invalid(format!(
            "`{run_id}` is not a run id: {why}"
        ))),
        None => Ok(store.join("runs").join(run_id)),
    }
}

/// Why [`crate::warehouse::find_run`] or [`resolve_dir`] found no single run.
#[derive(Debug, thiserror::Error)]
pub enum FindRunError {
    /// No run has that id or starts with it.
    #[error("no run `{0}` in the warehouse")]
    NotFound(String),
    /// No run directory has that id or starts with it ([`resolve_dir`]).
    #[error("no run `{id}` under {}", runs.display())]
    NoDirectory {
        /// The id or prefix asked for.
        id: String,
        /// The store's `runs/` directory.
        runs: std::path::PathBuf,
    },
    /// Several runs start with it.
    #[error("`{id}` matches {count} runs")]
    Ambiguous {
        /// The id or prefix asked for.
        id: String,
        /// How many runs it matches.
        count: usize,
    },
    /// The warehouse failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl FindRunError {
    /// What to do about it, for a person.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            FindRunError::NotFound(_) => Some("`yardstick runs list` shows the stored runs"),
            FindRunError::NoDirectory { .. } => Some(
                "pass a run id (or a unique prefix) with --store, or the run directory itself; \
                 `yardstick runs list` shows the stored runs",
            ),
            FindRunError::Ambiguous { .. } => Some("give more characters of the run id"),
            FindRunError::Store(_) => None,
        }
    }

    /// The message with its hint in one sentence, for errors that carry no separate hint.
    pub fn with_hint(&self) -> String {
        match (self, self.hint()) {
            (FindRunError::NotFound(_), Some(h)) => format!("{self} ({h})"),
            (_, Some(h)) => format!("{self}; {h}"),
            (_, None) => self.to_string(),
        }
    }
}

/// The directory of the run a person names, the way [`crate::warehouse::find_run`] finds its
/// row: `name` is a run directory itself (it holds a `manifest.json`), a run id under
/// `<store>/runs/`, or a unique prefix of one in any case (run ids are upper-case ULIDs).
pub fn resolve_dir(store: &Path, name: &str) -> Result<PathBuf, FindRunError> {
    let as_dir = Path::new(name);
    if as_dir.join(MANIFEST).is_file() {
        return Ok(as_dir.to_path_buf());
    }
    if let Some(why) = unsafe_run_id(name) {
        return Err(FindRunError::Store(StoreError::Invalid(format!(
            "`{name}` is neither a run directory nor a run id: {why}"
        ))));
    }
    let runs = store.join("runs");
    let exact = runs.join(name);
    if exact.join(MANIFEST).is_file() {
        return Ok(exact);
    }
    let want = name.to_ascii_uppercase();
    let mut matches: Vec<PathBuf> = std::fs::read_dir(&runs)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join(MANIFEST).is_file())
                .filter(|p| {
                    p.file_name().is_some_and(|n| {
                        n.to_string_lossy().to_ascii_uppercase().starts_with(&want)
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    match matches.len() {
        1 => Ok(matches.remove(0)),
        0 => Err(FindRunError::NoDirectory {
            id: name.to_string(),
            runs,
        }),
        count => Err(FindRunError::Ambiguous {
            id: name.to_string(),
            count,
        }),
    }
}

/// Reads a run's manifest.
pub fn read_manifest(dir: &Path) -> Result<Manifest, StoreError> {
    let path = dir.join(MANIFEST);
    let bytes = std::fs::read(&path)
        .map_err(|e| StoreError::NotFound(format!("{}: {e}", path.display())))?;
    let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        StoreError::Integrity(format!("{} is not a valid manifest: {e}", path.display()))
    })?;
    check_manifest(&m).map_err(|e| StoreError::Integrity(format!("{}: {e}", path.display())))?;
    Ok(m)
}

/// Checks what a manifest names before anything is read, hashed, exported or deleted on its
/// word: every artifact path stays inside the run directory ([`crate::fsutil::unsafe_relative`])
/// and is listed once, and the run id is a plain name.
pub fn check_manifest(m: &Manifest) -> Result<(), ManifestError> {
    if let Some(why) = unsafe_run_id(&m.run_id) {
        return Err(ManifestError::RunId {
            run_id: m.run_id.clone(),
            why,
        });
    }
    let mut seen = std::collections::HashSet::new();
    for a in &m.artifacts {
        if let Some(why) = crate::fsutil::unsafe_relative(&a.path) {
            return Err(ManifestError::UnsafePath {
                path: a.path.clone(),
                why,
            });
        }
        if a.path == MANIFEST || a.path == ATTESTATION {
            return Err(ManifestError::Reserved(a.path.clone()));
        }
        if !seen.insert(a.path.as_str()) {
            return Err(ManifestError::Duplicate(a.path.clone()));
        }
    }
    Ok(())
}

/// What a manifest names that is refused ([`check_manifest`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// The run id is not a plain name.
    #[error("run id {run_id:?} is refused: {why}")]
    RunId {
        /// The run id.
        run_id: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// An artifact path that leaves the run directory.
    #[error("artifact path {path:?} is refused: {why} (paths must stay inside the run directory)")]
    UnsafePath {
        /// The path.
        path: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// An artifact path the run directory keeps for itself.
    #[error("artifact path {0:?} is reserved")]
    Reserved(String),
    /// An artifact listed twice.
    #[error("artifact {0:?} is listed twice")]
    Duplicate(String),
}

/// A file-system-safe slug of a point id: the directory name of its artifacts
/// (`samples/<slug>/`, `eval/<slug>/`...).
pub fn slug(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while s.contains("__") {
        s = s.replace("__", "_");
    }
    s.trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_directory_is_found_by_path_id_or_unique_prefix_in_any_case() {
        let store = tempfile::tempdir().unwrap();
        let runs = store.path().join("runs");
        for id in ["01JD8YAAAA", "01JD8YBBBB", "01JD9ZCCCC"] {
            std::fs::create_dir_all(runs.join(id)).unwrap();
            std::fs::write(runs.join(id).join(MANIFEST), "{}").unwrap();
        }
        // A directory without a manifest is not a run.
        std::fs::create_dir_all(runs.join("01JD9ZDDDD")).unwrap();
        let found = |name: &str| resolve_dir(store.path(), name);
        assert_eq!(found("01JD8YAAAA").unwrap(), runs.join("01JD8YAAAA"));
        assert_eq!(found("01jd9z").unwrap(), runs.join("01JD9ZCCCC"));
        let by_path = runs.join("01JD8YBBBB");
        assert_eq!(found(&by_path.to_string_lossy()).unwrap(), by_path);
        assert!(matches!(
            found("01JD8Y"),
            Err(FindRunError::Ambiguous { count: 2, .. })
        ));
        let missing = found("01JE").unwrap_err();
        assert!(matches!(missing, FindRunError::NoDirectory { .. }));
        assert!(
            missing.to_string().contains("no run `01JE` under"),
            "{missing}"
        );
        assert!(matches!(
            found("../../etc"),
            Err(FindRunError::Store(StoreError::Invalid(_)))
        ));
        // A store with no runs directory at all.
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            resolve_dir(empty.path(), "01JD"),
            Err(FindRunError::NoDirectory { .. })
        ));
    }

    fn tool() -> ToolInfo {
        ToolInfo {
            name: "yardstick".into(),
            version: "0.1.0".into(),
            git_commit: None,
        }
    }

    #[test]
    fn writes_seals_and_lists_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(dir.path(), "demo", "spec: x\n", tool()).unwrap();
        w.set_env(b"{}", "cpu-test").unwrap();
        w.add("samples/a.parquet", b"data", "samples").unwrap();
        assert!(w.add("samples/a.parquet", b"again", "samples").is_err());
        assert!(w.add("../escape", b"x", "other").is_err());
        let run_dir = w.dir().to_path_buf();
        let m = w.complete(None).unwrap();
        assert_eq!(m.status, RunStatus::Complete);
        assert_eq!(m.artifacts.len(), 3);
        assert_eq!(read_manifest(&run_dir).unwrap(), m);
        assert!(
            std::fs::metadata(run_dir.join("samples/a.parquet"))
                .unwrap()
                .permissions()
                .readonly()
        );
    }

    #[test]
    fn a_manifest_naming_paths_outside_the_run_is_refused_on_read_and_resume() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(dir.path(), "demo", "spec", tool()).unwrap();
        w.add("samples/r1.parquet", b"one", "samples").unwrap();
        let run_dir = w.dir().to_path_buf();
        w.interrupt("ctrl-c").unwrap();
        let pristine = std::fs::read(run_dir.join(MANIFEST)).unwrap();
        for bad in [
            "../../etc/passwd",
            "/etc/passwd",
            "samples/../../x",
            "a\\\\..\\\\b",
            "x\\u0000y",
        ] {
            let text = String::from_utf8(pristine.clone())
                .unwrap()
                .replace("samples/r1.parquet", bad);
            std::fs::write(run_dir.join(MANIFEST), text).unwrap();
            let e = read_manifest(&run_dir).unwrap_err().to_string();
            assert!(
                e.contains("refused") && e.contains("inside the run directory"),
                "{bad}: {e}"
            );
            let e = RunWriter::resume(&run_dir).unwrap_err().to_string();
            assert!(e.contains("refused"), "{bad}: {e}");
        }
        let text = String::from_utf8(pristine)
            .unwrap()
            .replace("\"run_id\": \"", "\"run_id\": \"../");
        std::fs::write(run_dir.join(MANIFEST), text).unwrap();
        assert!(
            read_manifest(&run_dir)
                .unwrap_err()
                .to_string()
                .contains("run id")
        );
    }

    #[test]
    fn interrupted_runs_resume_and_changed_artifacts_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = RunWriter::create(dir.path(), "demo", "spec", tool()).unwrap();
        w.add("samples/r1.parquet", b"one", "samples").unwrap();
        let run_dir = w.dir().to_path_buf();
        let m = w.interrupt("ctrl-c").unwrap();
        assert_eq!(m.effective_status(), RunStatus::Incomplete);
        let mut w = RunWriter::resume(&run_dir).unwrap();
        assert!(w.has("samples/r1.parquet"));
        w.add("samples/r2.parquet", b"two", "samples").unwrap();
        let m = w.complete(None).unwrap();
        assert_eq!(m.artifacts.len(), 3);
        assert!(
            RunWriter::resume(&run_dir).is_err(),
            "complete runs do not resume"
        );

        let mut w = RunWriter::create(dir.path(), "demo2", "spec", tool()).unwrap();
        w.add("samples/r1.parquet", b"one", "samples").unwrap();
        let run_dir = w.dir().to_path_buf();
        drop(w); // a crash: status stays `running`
        let p = run_dir.join("samples/r1.parquet");
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(&p, perm).unwrap();
        std::fs::write(&p, b"tampered").unwrap();
        let err = RunWriter::resume(&run_dir).unwrap_err();
        assert!(err.to_string().contains("changed"), "{err}");
    }
}
