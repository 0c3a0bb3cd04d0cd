//! Pushing runs: a run directory made anywhere (a CI runner, a laptop) sent to the server's
//! store, verified, stored and indexed.
//!
//! The protocol is manifest first, content addressed, then commit:
//!
//! 1. `POST /api/v1/pushes` with the run's `manifest.json` (its exact bytes, which a signature
//!    covers) and `attestation.dsse.json` if it is signed. Before anything is uploaded the
//!    server checks the manifest (well formed, complete, every path inside the run directory,
//!    every sha256 a digest), the size limit, the signature against the store's trusted keys,
//!    and whether the run id is taken. It answers with a push id and the sha256 of each content
//!    it still needs (`missing`), or `stored` when it already has this very run.
//! 2. `PUT /api/v1/pushes/{id}/blobs/{sha256}` for each missing content: streamed to disk,
//!    hashed on the way, refused (and dropped) when the bytes do not hash to the digest or
//!    exceed the size the manifest declares.
//! 3. `POST /api/v1/pushes/{id}/commit`: the run directory is assembled in the staging area,
//!    verified like `yardstick verify` under the store's trust policy, its warehouse rows
//!    computed, then it is renamed into `runs/<id>` (atomic) and indexed.
//!
//! Uploads land in `<store>/.push/<push id>/` and stay there until the commit, so a push cut off
//! midway leaves nothing in `runs/` and nothing in the warehouse, and its retry uploads only
//! what is still missing. The staging area has a quota ([`StagingLimits`]): the bytes every
//! open push declared, and the number of open pushes. Staging areas untouched for
//! [`StagingLimits::expiry`] are abandoned: removed when the server starts and whenever a push
//! starts.
//!
//! A run id names one run. A stored run is never replaced: a push of a run id the store already
//! has is `already stored` when its manifest is byte for byte the stored one, and `409 Conflict`
//! otherwise. When the warehouse knows the run but its directory is not in this store (a shared
//! PostgreSQL warehouse a runner wrote to directly), the push is stored only if the warehouse
//! rows computed from it are exactly the rows already there: it brings the files, it changes no
//! fact.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use yardstick_store::layout::MANIFEST;
use yardstick_store::run::{ATTESTATION, MANIFEST_SCHEMA};
use yardstick_store::verify::{VerifyOptions, signature_line, signature_passes, signature_state};
use yardstick_store::warehouse::{RunRows, Warehouse};
use yardstick_store::{Manifest, RunStatus};

use super::extract::{ApiPath, JsonBody, RawBody};
use super::gate::PushGate;
use crate::ApiError;
use crate::state::AppState;

/// The staging directory inside the store.
pub const PUSH_DIR: &str = ".push";
/// The default of `--max-push-bytes`: the largest run (sum of its artifacts) a push may carry.
pub const DEFAULT_MAX_PUSH_BYTES: u64 = 1 << 30;
/// Largest body of `POST /api/v1/pushes` (the manifest and attestation).
pub const START_BODY_LIMIT: usize = 16 * 1024 * 1024;
/// Most artifacts one pushed run may list.
pub const MAX_ARTIFACTS: usize = 100_000;
/// The default of `--max-staged-bytes`: the bytes all open pushes together may declare.
pub const DEFAULT_MAX_STAGED_BYTES: u64 = 4 << 30;
/// The default of `--max-open-pushes`: how many pushes may be staged at once.
pub const DEFAULT_MAX_OPEN_PUSHES: usize = 16;
/// The default of `--push-expiry`: a staged push untouched this long is abandoned.
pub const DEFAULT_PUSH_EXPIRY: Duration = Duration::from_secs(24 * 3600);
/// Longest component (file or directory name) of an artifact path, in bytes: what file systems
/// take (ext4, XFS, APFS, NTFS: 255).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Longest artifact path, in bytes, so that `<store>/.push/<push id>/run.<random>/<path>` stays
/// well inside the 4096 bytes a path may have.
pub const MAX_PATH_BYTES: usize = 1024;
/// The reservation file of a staging area: the bytes its push declared.
const RESERVATION: &str = "push.json";
/// Leftovers inside a staging area (a half-written upload, a half-assembled run) untouched this
/// long are removed when the server starts (younger ones may be another server's work).
const LEFTOVER_AFTER: Duration = Duration::from_secs(3600);

/// The quota of the staging area (`yardstick server --max-staged-bytes`, `--max-open-pushes`,
/// `--push-expiry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagingLimits {
    /// The bytes all open pushes together may declare (each reserves the size of the distinct
    /// contents its manifest lists when it starts): `507` beyond.
    pub max_bytes: u64,
    /// How many pushes may be open (started, not committed, not abandoned) at once: `429`
    /// beyond.
    pub max_pushes: usize,
    /// A staged push nobody touched for this long is abandoned and removed.
    pub expiry: Duration,
}

impl Default for StagingLimits {
    fn default() -> StagingLimits {
        StagingLimits {
            max_bytes: DEFAULT_MAX_STAGED_BYTES,
            max_pushes: DEFAULT_MAX_OPEN_PUSHES,
            expiry: DEFAULT_PUSH_EXPIRY,
        }
    }
}

/// Held while the staging area is counted, created or removed, so that two pushes starting at
/// once cannot both take the last of the quota, and a commit never removes a staging area under
/// a push that is starting in it.
static STAGING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn staging_lock() -> std::sync::MutexGuard<'static, ()> {
    STAGING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The body of `POST /api/v1/pushes`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushStart {
    /// The run's `manifest.json`, byte for byte (its sha256 is what a signature covers).
    pub manifest: String,
    /// The run's `attestation.dsse.json`, when it is signed.
    #[serde(default)]
    pub attestation: Option<String>,
}

/// Where a push stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PushState {
    /// Staged: upload the `missing` contents, then commit.
    Uploading,
    /// The run is stored and indexed.
    Stored,
}

/// The answer to starting or committing a push.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PushStatus {
    /// The push's id: upload to `/api/v1/pushes/{push_id}/blobs/{sha256}`, then commit.
    pub push_id: String,
    /// The run's id.
    pub run_id: String,
    /// `uploading` or `stored`.
    pub state: PushState,
    /// The server had this very run already (same manifest): nothing was uploaded again.
    pub already_stored: bool,
    /// Artifacts the manifest lists.
    pub artifacts: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The sha256 of every content the server still needs, each to be sent once.
    pub missing: Vec<String>,
    /// The bytes still to upload.
    pub missing_bytes: u64,
    /// The signature, as the server checked it against its trusted keys.
    pub signature: String,
    /// Whether a key the server trusts signed the run.
    pub verified: bool,
    /// What the gate said when the server gated the stored run against the baseline of its
    /// machine profile and benchmark (null when none is set, or before the commit).
    #[serde(default)]
    pub gate: Option<PushGate>,
}

/// The answer to one upload.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BlobStored {
    /// The content's sha256.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// How many contents the push still needs before it can be committed.
    pub missing: usize,
}

/// A push named in the path.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PushPath {
    /// The push id `POST /api/v1/pushes` answered.
    pub id: String,
}

/// One content of a push.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BlobPath {
    /// The push id `POST /api/v1/pushes` answered.
    pub id: String,
    /// The content's sha256 (64 lower-case hex digits), as the manifest lists it.
    pub sha256: String,
}

fn unprocessable(error: impl Into<String>, hint: Option<&str>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, error, hint)
}

fn too_large(error: impl Into<String>, hint: Option<&str>) -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, error, hint)
}

fn conflict(error: impl Into<String>, hint: Option<&str>) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, error, hint)
}

fn is_digest(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn random_hex() -> String {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    hex::encode(b)
}

/// The store a push goes into.
fn store_of(st: &AppState) -> Result<&Path, ApiError> {
    st.config.store_dir.as_deref().ok_or_else(|| {
        unprocessable(
            "this server has no store directory to push runs into",
            Some("start it with --store DIR"),
        )
    })
}

/// The store's trust policy, with `--require-signature` on top.
fn verify_options(st: &AppState, store: &Path) -> Result<VerifyOptions, ApiError> {
    let trust = yardstick_store::trust::load(store).map_err(ApiError::internal)?;
    let mut opts = trust.verify_options();
    opts.require_signature |= st.config.require_signature;
    Ok(opts)
}

/// A manifest as pushed, checked.
struct Pushed {
    manifest: Manifest,
    manifest_bytes: Vec<u8>,
    attestation: Option<Vec<u8>>,
    push_id: String,
    bytes: u64,
}

impl Pushed {
    /// Every distinct content: (sha256, size), in manifest order.
    fn contents(&self) -> Vec<(&str, u64)> {
        let mut seen = std::collections::HashSet::new();
        self.manifest
            .artifacts
            .iter()
            .filter(|a| seen.insert(a.sha256.as_str()))
            .map(|a| (a.sha256.as_str(), a.size))
            .collect()
    }

    /// The bytes of the distinct contents: what staging this push may take on disk.
    fn distinct_bytes(&self) -> u64 {
        self.contents()
            .iter()
            .fold(0u64, |n, (_, size)| n.saturating_add(*size))
    }

    fn paths_of(&self, sha: &str) -> Vec<&str> {
        self.manifest
            .artifacts
            .iter()
            .filter(|a| a.sha256 == sha)
            .map(|a| a.path.as_str())
            .collect()
    }
}

/// Checks a pushed manifest before anything is staged.
fn check_pushed(
    manifest_bytes: Vec<u8>,
    attestation: Option<Vec<u8>>,
    max_bytes: u64,
) -> Result<Pushed, ApiError> {
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes).map_err(|e| {
        ApiError::bad_request(
            format!("malformed manifest: {e}"),
            Some("send the run's manifest.json as it is stored"),
        )
    })?;
    if manifest.schema != MANIFEST_SCHEMA {
        return Err(ApiError::bad_request(
            format!(
                "malformed manifest: schema {:?}, expected {MANIFEST_SCHEMA:?}",
                manifest.schema
            ),
            None,
        ));
    }
    yardstick_store::run::check_manifest(&manifest)
        .map_err(|e| ApiError::bad_request(format!("malformed manifest: {e}"), None))?;
    check_paths(&manifest)?;
    if manifest.artifacts.len() > MAX_ARTIFACTS {
        return Err(too_large(
            format!(
                "run {} lists {} artifacts; a push carries at most {MAX_ARTIFACTS}",
                manifest.run_id,
                manifest.artifacts.len()
            ),
            None,
        ));
    }
    let mut sizes = std::collections::HashMap::new();
    let mut bytes = 0u64;
    for a in &manifest.artifacts {
        if !is_digest(&a.sha256) {
            return Err(ApiError::bad_request(
                format!(
                    "malformed manifest: artifact {:?} has sha256 {:?}, not 64 lower-case hex digits",
                    a.path, a.sha256
                ),
                None,
            ));
        }
        if *sizes.entry(a.sha256.as_str()).or_insert(a.size) != a.size {
            return Err(ApiError::bad_request(
                format!(
                    "malformed manifest: sha256 {} is listed with two different sizes",
                    a.sha256
                ),
                None,
            ));
        }
        bytes = bytes.saturating_add(a.size);
    }
    if bytes > max_bytes {
        return Err(too_large(
            format!(
                "run {} has {bytes} bytes of artifacts; this server takes at most {max_bytes} per push",
                manifest.run_id
            ),
            Some(
                "the server's --max-push-bytes sets the limit; `yardstick gc --keep-raw` drops raw samples of old runs",
            ),
        ));
    }
    if manifest.status != RunStatus::Complete {
        return Err(unprocessable(
            format!(
                "run {} is {}: only complete runs can be pushed",
                manifest.run_id,
                manifest.effective_status()
            ),
            Some("finish it first (`yardstick run SPEC --resume RUN`)"),
        ));
    }
    let push_id = format!("{}-{}", manifest.run_id, &sha256_hex(&manifest_bytes)[..24]);
    Ok(Pushed {
        manifest,
        manifest_bytes,
        attestation,
        push_id,
        bytes,
    })
}

/// Refuses artifact paths no run directory can hold, before anything is staged: a component
/// longer than a file name may be, a path too long, or a path that needs a directory where the
/// manifest lists a file (`logs/x` and `logs/x/y`; `manifest.json/x`).
fn check_paths(m: &Manifest) -> Result<(), ApiError> {
    let bad = |path: &str, why: String| {
        ApiError::bad_request(
            format!("malformed manifest: artifact path {path:?} is refused: {why}"),
            Some("no run directory `yardstick run` writes has such a path"),
        )
    };
    let mut files: std::collections::HashSet<&str> =
        m.artifacts.iter().map(|a| a.path.as_str()).collect();
    files.insert(MANIFEST);
    files.insert(ATTESTATION);
    for a in &m.artifacts {
        let path = a.path.as_str();
        if path.len() > MAX_PATH_BYTES {
            return Err(bad(
                path,
                format!(
                    "it has {} bytes; a path has at most {MAX_PATH_BYTES}",
                    path.len()
                ),
            ));
        }
        if let Some(c) = path.split('/').find(|c| c.len() > MAX_COMPONENT_BYTES) {
            return Err(bad(
                path,
                format!(
                    "its component {:?}... has {} bytes; a file or directory name has at most {MAX_COMPONENT_BYTES}",
                    c.chars().take(32).collect::<String>(),
                    c.len()
                ),
            ));
        }
        for (i, _) in path.match_indices('/') {
            let dir = &path[..i];
            if files.contains(dir) {
                return Err(bad(
                    path,
                    format!("it needs {dir:?} to be a directory, but {dir:?} is a file of the run"),
                ));
            }
        }
    }
    Ok(())
}

/// Refuses a run the store's trust policy does not admit; returns the signature line and whether
/// a trusted key verified it.
fn check_signature(opts: &VerifyOptions, p: &Pushed) -> Result<(String, bool), ApiError> {
    let state = signature_state(&p.manifest_bytes, p.attestation.as_deref(), &opts.trust);
    let required = opts.signature_required();
    let line = signature_line(&state, required);
    if !signature_passes(&state, required) {
        return Err(unprocessable(
            format!("run {} is refused: {line}", p.manifest.run_id),
            Some(
                "this server admits only runs signed by a key it trusts (`yardstick trust list` on its store): sign the run with `provenance: {signing: required, key: PATH}`",
            ),
        ));
    }
    let verified = matches!(
        &state,
        yardstick_store::sign::SignatureState::Signed { check } if check.is_verified()
    );
    Ok((line, verified))
}

fn location(store: &Path) -> String {
    std::path::absolute(store)
        .unwrap_or_else(|_| store.to_path_buf())
        .display()
        .to_string()
}

/// What the store knows of a pushed run's id.
enum Known {
    /// Nothing: a new run. Or a run the warehouse knows whose directory, where its row says,
    /// has this very manifest.
    New,
    /// This very run (the same manifest, byte for byte) is stored, and indexed (again, if the
    /// warehouse had lost it).
    Stored,
    /// The warehouse has a run under this id, and this server cannot read its manifest (its
    /// directory is in another store, on another machine): the push is stored only if the rows
    /// computed from it are exactly the stored ones (checked by the commit, [`same_rows`]).
    RowsOnly,
}

/// 409: the run id is taken by a run this push cannot be proven to be.
fn taken(id: &str, why: &str) -> ApiError {
    conflict(
        format!(
            "run {id} is already stored with different content ({why}); a push never replaces a stored run"
        ),
        Some(
            "a run id names one run: push the very run that was stored under it (it is then `already stored`), or run the benchmark again (a new run gets a new id); to replace the stored run, an admin removes it from the server's store first",
        ),
    )
}

/// Whether the store already has the pushed run: [`Known`], or a 409 when the id names a run
/// the push is not.
fn existing(
    st: &AppState,
    store: &Path,
    w: &mut dyn Warehouse,
    p: &Pushed,
) -> Result<Known, ApiError> {
    let id = &p.manifest.run_id;
    let dest = yardstick_store::run::run_dir(store, id)?;
    if dest.join(MANIFEST).is_file() {
        let stored = std::fs::read(dest.join(MANIFEST)).map_err(ApiError::internal)?;
        if stored != p.manifest_bytes {
            return Err(taken(
                id,
                &format!(
                    "its manifest has sha256 {}, the pushed one {}",
                    sha256_hex(&stored),
                    sha256_hex(&p.manifest_bytes)
                ),
            ));
        }
        // A push cut off between the rename and the index left the run unindexed: index it.
        let indexed = w.run(id)?.is_some_and(|r| {
            r.status == RunStatus::Complete && r.spec_sha256 == p.manifest.spec_sha256
        });
        if !indexed {
            index(st, &dest, &location(store))?.write(w)?;
        }
        return Ok(Known::Stored);
    }
    if std::fs::symlink_metadata(&dest).is_ok() {
        return Err(taken(id, "its directory in the store has no manifest"));
    }
    let Some(row) = w.run(id)? else {
        return Ok(Known::New);
    };
    // The run's directory where its warehouse row says (another store this server can read):
    // its manifest decides.
    if let Some(dir) = crate::state::run_dir(Some(store), &row)
        && let Ok(stored) = std::fs::read(dir.join(MANIFEST))
    {
        if stored == p.manifest_bytes {
            return Ok(Known::New);
        }
        return Err(taken(
            id,
            &format!(
                "the manifest in {} has sha256 {}, the pushed one {}",
                dir.display(),
                sha256_hex(&stored),
                sha256_hex(&p.manifest_bytes)
            ),
        ));
    }
    // Only the rows: a run that differs in what its row says is refused now; whether its facts
    // are the stored ones is known once its rows are computed (the commit).
    let canon =
        |t: &str| yardstick_store::warehouse::canonical_time(t).unwrap_or_else(|_| t.into());
    if row.spec_sha256 != p.manifest.spec_sha256
        || canon(&row.started_at) != canon(&p.manifest.started_at)
        || row.name != p.manifest.name
    {
        return Err(taken(
            id,
            "the warehouse's row of it names another spec, start time or benchmark",
        ));
    }
    Ok(Known::RowsOnly)
}

/// JSON with every number as an f64, so that rows read back from two warehouses (SQLite,
/// PostgreSQL) compare by value, not by how each wrote a number.
fn by_value(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(a) => Value::Array(a.into_iter().map(by_value).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, by_value(v))).collect()),
        v => v,
    }
}

/// Everything the warehouse holds of run `id` but where it is: its row, points, replicates and
/// facts, in key order, as comparable JSON.
fn rows_of(w: &mut dyn Warehouse, id: &str) -> Result<Vec<serde_json::Value>, ApiError> {
    let json =
        |v: serde_json::Result<serde_json::Value>| v.map(by_value).map_err(ApiError::internal);
    let mut out = Vec::new();
    let run = w.run(id)?.map(|mut run| {
        run.location = String::new();
        run
    });
    out.push(json(serde_json::to_value(run))?);
    let mut points = w.points(id)?;
    points.sort_by(|a, b| a.point_id.cmp(&b.point_id));
    out.push(json(serde_json::to_value(points))?);
    let mut replicates = w.replicates(id)?;
    replicates.sort_by(|a, b| (&a.point_id, a.replicate).cmp(&(&b.point_id, b.replicate)));
    out.push(json(serde_json::to_value(replicates))?);
    let mut facts: Vec<serde_json::Value> = w
        .facts(id)?
        .into_iter()
        .map(|f| json(serde_json::to_value(f)))
        .collect::<Result<_, _>>()?;
    facts.sort_by_key(|f| {
        (
            f["point_id"].to_string(),
            f["replicate"].to_string(),
            f["metric"].to_string(),
            f["statistic"].to_string(),
        )
    });
    out.push(serde_json::Value::Array(facts));
    Ok(out)
}

/// Whether writing `rows` would change nothing the warehouse holds of their run: they are
/// written to a scratch SQLite warehouse in `scratch` (so that they read back the way stored
/// rows do) and compared with the stored ones. `Some(what differs)` when they are not the same.
fn same_rows(
    w: &mut dyn Warehouse,
    rows: &RunRows,
    scratch: &Path,
) -> Result<Option<String>, ApiError> {
    let db = scratch.join(format!("rows.{}.db", random_hex()));
    let pushed = (|| {
        let mut check = yardstick_store::warehouse::SqliteWarehouse::open(&db)?;
        rows.write(&mut check)?;
        rows_of(&mut check, &rows.run.run_id)
    })();
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    let pushed = pushed?;
    let stored = rows_of(w, &rows.run.run_id)?;
    let names = ["run", "points", "replicates", "facts"];
    Ok(names
        .iter()
        .zip(stored.iter().zip(&pushed))
        .find(|(_, (a, b))| a != b)
        .map(|(what, _)| (*what).to_string()))
}

fn index(
    st: &AppState,
    dir: &Path,
    location: &str,
) -> Result<yardstick_store::warehouse::RunRows, ApiError> {
    let indexer = st.config.index.as_ref().ok_or_else(|| {
        ApiError::internal("this server was started without a run indexer; it cannot take pushes")
    })?;
    indexer(dir, location).map_err(|e| {
        unprocessable(
            format!("the run's records cannot be indexed: {e}"),
            Some("the run directory was not written by `yardstick run` or `yardstick import`"),
        )
    })
}

fn staging(store: &Path, push_id: &str) -> Result<PathBuf, ApiError> {
    let ok = !push_id.is_empty()
        && push_id.len() <= 100
        && push_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !ok {
        return Err(ApiError::not_found(
            format!("no push {push_id:?}"),
            Some("start one with POST /api/v1/pushes"),
        ));
    }
    Ok(store.join(PUSH_DIR).join(push_id))
}

/// A push named in a path.
enum Staged {
    /// In progress: its staging area and its checked manifest.
    Open(PathBuf, Pushed),
    /// Committed: its run is stored (by this push, or by an identical one that won a race).
    Stored(Pushed),
}

/// The push `push_id`: open, or committed (its run stored), or 404.
fn staged(st: &AppState, store: &Path, push_id: &str) -> Result<Staged, ApiError> {
    let dir = staging(store, push_id)?;
    let Ok(manifest) = std::fs::read(dir.join(MANIFEST)) else {
        if let Some(p) = stored_push(store, push_id) {
            return Ok(Staged::Stored(p));
        }
        return Err(ApiError::not_found(
            format!("no push {push_id} in progress (never started, refused, or abandoned)"),
            Some("start it again with POST /api/v1/pushes"),
        ));
    };
    let attestation = std::fs::read(dir.join(ATTESTATION)).ok();
    let p = check_pushed(manifest, attestation, st.config.max_push_bytes)?;
    Ok(Staged::Open(dir, p))
}

/// The stored run push `push_id` carried, when it is stored: the push id is the run id and the
/// start of its manifest's sha256, so a push whose staging area is gone because it (or an
/// identical push) was committed finds its run.
fn stored_push(store: &Path, push_id: &str) -> Option<Pushed> {
    let (run_id, digest) = push_id.rsplit_once('-')?;
    if digest.len() != 24 {
        return None;
    }
    let dir = yardstick_store::run::run_dir(store, run_id).ok()?;
    let manifest = std::fs::read(dir.join(MANIFEST)).ok()?;
    if !sha256_hex(&manifest).starts_with(digest) {
        return None;
    }
    let attestation = std::fs::read(dir.join(ATTESTATION)).ok();
    check_pushed(manifest, attestation, u64::MAX)
        .ok()
        .filter(|p| p.push_id == push_id)
}

fn missing(dir: &Path, p: &Pushed) -> (Vec<String>, u64) {
    let blobs = dir.join("blobs");
    let mut out = Vec::new();
    let mut bytes = 0;
    for (sha, size) in p.contents() {
        if !blobs.join(sha).is_file() {
            out.push(sha.to_string());
            bytes += size;
        }
    }
    (out, bytes)
}

fn untouched_for(path: &Path, now: SystemTime) -> Option<Duration> {
    let t = std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()?;
    Some(now.duration_since(t).unwrap_or_default())
}

/// Removes staging areas nobody touched for `expiry` (abandoned pushes). With the staging lock
/// held.
fn sweep(store: &Path, expiry: Duration) {
    let Ok(rd) = std::fs::read_dir(store.join(PUSH_DIR)) else {
        return;
    };
    let now = SystemTime::now();
    for e in rd.flatten() {
        let p = e.path();
        let newest = [p.clone(), p.join("blobs")]
            .iter()
            .filter_map(|d| untouched_for(d, now))
            .min();
        if newest.is_some_and(|t| t > expiry) {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// Cleans the staging area when the server starts: abandoned pushes (untouched for
/// `limits.expiry`) go, and so do the leftovers a stopped server left in the others (half-written
/// uploads, half-assembled runs, scratch files) untouched for an hour. The rest resume.
pub fn clean_staging(store: &Path, limits: &StagingLimits) {
    let _held = staging_lock();
    sweep(store, limits.expiry);
    let Ok(rd) = std::fs::read_dir(store.join(PUSH_DIR)) else {
        return;
    };
    let now = SystemTime::now();
    let leftover = |name: &str| {
        name.starts_with("run.")
            || name.starts_with("rows.")
            || name.starts_with(".part-")
            || name.contains(".tmp-")
    };
    for area in rd.flatten() {
        for d in [area.path(), area.path().join("blobs")] {
            let Ok(inner) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in inner.flatten() {
                let path = e.path();
                if !leftover(&e.file_name().to_string_lossy())
                    || untouched_for(&path, now).is_none_or(|t| t <= LEFTOVER_AFTER)
                {
                    continue;
                }
                let _ = if e.file_type().is_ok_and(|t| t.is_dir()) {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
    }
}

/// The open pushes but `except`: how many, and the bytes they reserved. With the staging lock
/// held.
fn reserved(store: &Path, except: &str) -> (usize, u64) {
    let Ok(rd) = std::fs::read_dir(store.join(PUSH_DIR)) else {
        return (0, 0);
    };
    let (mut open, mut bytes) = (0usize, 0u64);
    for e in rd.flatten() {
        if e.file_name().to_str() == Some(except) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        open += 1;
        let declared = std::fs::read(e.path().join(RESERVATION))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["bytes"].as_u64());
        // A staging area without its reservation (an older server's): what it holds.
        let n = declared.unwrap_or_else(|| {
            std::fs::read_dir(e.path().join("blobs"))
                .map(|rd| {
                    rd.flatten()
                        .filter_map(|f| f.metadata().ok())
                        .map(|m| m.len())
                        .sum()
                })
                .unwrap_or(0)
        });
        bytes = bytes.saturating_add(n);
    }
    (open, bytes)
}

/// `24h`, `90m`, `45s`.
fn human(d: Duration) -> String {
    match d.as_secs() {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Refuses a push the staging quota has no room for.
fn check_quota(store: &Path, limits: &StagingLimits, p: &Pushed) -> Result<(), ApiError> {
    let (open, bytes) = reserved(store, &p.push_id);
    let hint = format!(
        "retry later: a push is open until it is committed, and abandoned after {} untouched; the server's --max-open-pushes and --max-staged-bytes set the quota",
        human(limits.expiry)
    );
    if open >= limits.max_pushes {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{open} pushes are open on this server, the most it stages at once (--max-open-pushes {})",
                limits.max_pushes
            ),
            Some(&hint),
        ));
    }
    let need = p.distinct_bytes();
    if bytes.saturating_add(need) > limits.max_bytes {
        return Err(ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            format!(
                "run {} needs {need} bytes of staging; open pushes hold {bytes} of the {} this server stages at once (--max-staged-bytes)",
                p.manifest.run_id, limits.max_bytes
            ),
            Some(&hint),
        ));
    }
    Ok(())
}

/// Removes a push's staging area (committed, or refused for good).
fn drop_staging(dir: &Path) {
    let _held = staging_lock();
    let _ = std::fs::remove_dir_all(dir);
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<(), ApiError> {
    let tmp = path.with_extension(format!("tmp-{}", random_hex()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            ApiError::internal(format!("staging {}: {e}", path.display()))
        })
}

fn status(
    p: &Pushed,
    state: PushState,
    already_stored: bool,
    missing: (Vec<String>, u64),
    signature: (String, bool),
) -> PushStatus {
    PushStatus {
        push_id: p.push_id.clone(),
        run_id: p.manifest.run_id.clone(),
        state,
        already_stored,
        artifacts: p.manifest.artifacts.len(),
        bytes: p.bytes,
        missing: missing.0,
        missing_bytes: missing.1,
        signature: signature.0,
        verified: signature.1,
        gate: None,
    }
}

pub(super) async fn start(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<PushStart>,
) -> Result<Json<PushStatus>, ApiError> {
    state
        .blocking(move |st, w| {
            let store = store_of(st)?;
            let p = check_pushed(
                body.manifest.into_bytes(),
                body.attestation.map(String::into_bytes),
                st.config.max_push_bytes,
            )?;
            let opts = verify_options(st, store)?;
            let sig = check_signature(&opts, &p)?;
            if let Known::Stored = existing(st, store, w, &p)? {
                return Ok(Json(status(
                    &p,
                    PushState::Stored,
                    true,
                    (Vec::new(), 0),
                    sig,
                )));
            }
            let limits = &st.config.staging;
            let _held = staging_lock();
            sweep(store, limits.expiry);
            let dir = staging(store, &p.push_id)?;
            check_quota(store, limits, &p)?;
            std::fs::create_dir_all(dir.join("blobs")).map_err(ApiError::internal)?;
            if std::fs::read(dir.join(MANIFEST)).ok().as_deref() != Some(&p.manifest_bytes[..]) {
                write_new(&dir.join(MANIFEST), &p.manifest_bytes)?;
            }
            match &p.attestation {
                Some(a) => write_new(&dir.join(ATTESTATION), a)?,
                None => {
                    let _ = std::fs::remove_file(dir.join(ATTESTATION));
                }
            }
            // The reservation, written anew at every (re)start: it marks the push as touched.
            let reservation = serde_json::json!({"bytes": p.distinct_bytes()}).to_string();
            write_new(&dir.join(RESERVATION), reservation.as_bytes())?;
            let m = missing(&dir, &p);
            Ok(Json(status(&p, PushState::Uploading, false, m, sig)))
        })
        .await
}

/// Reads and drops a request body, up to a little more than the `size` it should have (a longer
/// one is left: its connection closes, which is all such a client deserves).
async fn drain(body: &mut axum::body::Body, size: u64) {
    let mut seen = 0u64;
    while seen <= size {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    seen += data.len() as u64;
                }
            }
            _ => return,
        }
    }
}

pub(super) async fn upload(
    State(state): State<Arc<AppState>>,
    ApiPath(path): ApiPath<BlobPath>,
    headers: HeaderMap,
    RawBody(mut body): RawBody,
) -> Result<Json<BlobStored>, ApiError> {
    if !is_digest(&path.sha256) {
        return Err(ApiError::bad_request(
            format!(
                "{:?} is not a sha256 (64 lower-case hex digits)",
                path.sha256
            ),
            None,
        ));
    }
    let st = state.clone();
    let id = path.id.clone();
    let sha = path.sha256.clone();
    let (dir, size, paths, have) = tokio::task::spawn_blocking(move || {
        let store = store_of(&st)?;
        let (dir, p) = match staged(&st, store, &id)? {
            Staged::Open(dir, p) => (Some(dir), p),
            // Committed meanwhile (an identical push won the race): nothing is missing.
            Staged::Stored(p) => (None, p),
        };
        let Some(size) = p.contents().iter().find(|(s, _)| *s == sha).map(|c| c.1) else {
            return Err(ApiError::not_found(
                format!("push {id} lists no artifact with sha256 {sha}"),
                Some("upload the contents POST /api/v1/pushes answered as missing"),
            ));
        };
        let paths = p.paths_of(&sha).join(", ");
        let left = dir.as_ref().map(|d| missing(d, &p).0).unwrap_or_default();
        Ok((dir, size, paths, left))
    })
    .await
    .map_err(ApiError::internal)??;
    let done = |left: usize| {
        Json(BlobStored {
            sha256: path.sha256.clone(),
            size,
            missing: left,
        })
    };
    // Nothing to write when the push was committed meanwhile or the content is here already (a
    // retry, or an identical push's upload): the body is read to its end anyway, so that the
    // answer does not cut off a client still sending it (hyper closes a connection whose
    // request body was left unread, and the client's upload fails "connection closed").
    let Some(dir) = dir else {
        drain(&mut body, size).await;
        return Ok(done(0));
    };
    if !have.contains(&path.sha256) {
        drain(&mut body, size).await;
        return Ok(done(have.len()));
    }
    if let Some(n) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && n > size
    {
        return Err(too_large(
            format!("{n} bytes sent for {paths}; its manifest says {size}"),
            None,
        ));
    }
    let blobs = dir.join("blobs");
    let part = blobs.join(format!(".part-{}", random_hex()));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(8);
    let part2 = part.clone();
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<(String, u64)> {
        use std::io::Write;
        let mut f = std::fs::File::create(&part2)?;
        let mut h = Sha256::new();
        let mut n = 0u64;
        while let Some(chunk) = rx.blocking_recv() {
            h.update(&chunk);
            n += chunk.len() as u64;
            f.write_all(&chunk)?;
        }
        f.sync_all()?;
        Ok((hex::encode(h.finalize()), n))
    });
    let mut received = 0u64;
    let mut failure = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                received += data.len() as u64;
                if received > size {
                    failure = Some(too_large(
                        format!(
                            "more than {size} bytes sent for {paths}; its manifest says {size}"
                        ),
                        None,
                    ));
                    break;
                }
                if tx.send(data).await.is_err() {
                    break;
                }
            }
            Err(e) => {
                failure = Some(ApiError::bad_request(
                    format!("the upload of {paths} was cut off: {e}"),
                    Some("retry the push: only what is missing is sent again"),
                ));
                break;
            }
        }
    }
    drop(tx);
    let written = writer.await.map_err(ApiError::internal)?;
    let outcome = match (failure, written) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(ApiError::internal(format!("staging {paths}: {e}"))),
        (None, Ok((_, n))) if n != size => Err(ApiError::bad_request(
            format!(
                "{n} bytes received for {paths}; its manifest says {size} (the upload was cut off?)"
            ),
            Some("retry the push: only what is missing is sent again"),
        )),
        (None, Ok((got, _))) if got != path.sha256 => Err(unprocessable(
            format!(
                "the bytes sent for {paths} hash to {got}, not to {} as the manifest says: the file changed after the run was sealed",
                path.sha256
            ),
            Some("`yardstick verify RUN` on the pushing machine shows what changed"),
        )),
        (None, Ok(_)) => Ok(()),
    };
    let outcome = outcome.and_then(|()| {
        std::fs::rename(&part, blobs.join(&path.sha256))
            .map_err(|e| ApiError::internal(format!("staging {paths}: {e}")))
    });
    match outcome {
        Ok(()) => {
            let left = have.len().saturating_sub(1);
            Ok(done(left))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            if !e.status.is_server_error() {
                return Err(e);
            }
            // The staging area went away under the upload: an identical push was committed
            // (then nothing is missing), or the push was refused or abandoned.
            let store = store_of(&state)?.to_path_buf();
            let id = path.id.clone();
            let committed = tokio::task::spawn_blocking(move || stored_push(&store, &id))
                .await
                .map_err(ApiError::internal)?;
            if committed.is_some() {
                return Ok(done(0));
            }
            if !dir.join(MANIFEST).is_file() {
                return Err(ApiError::not_found(
                    format!(
                        "push {} ended while {paths} was uploaded (refused or abandoned)",
                        path.id
                    ),
                    Some("start it again with POST /api/v1/pushes"),
                ));
            }
            Err(e)
        }
    }
}

/// A run directory assembled in a staging area, removed when dropped unless it was moved into
/// the store ([`Assembly::stored`]): a commit that fails at any point leaves no half-built
/// directory behind.
struct Assembly(Option<PathBuf>);

impl Assembly {
    fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new(""))
    }

    /// Moves it to `dest` (atomic); it is then the store's.
    fn store_at(mut self, dest: &Path) -> std::io::Result<()> {
        std::fs::rename(self.path(), dest)?;
        self.0 = None;
        Ok(())
    }
}

impl Drop for Assembly {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// An I/O failure of the server's own disk: 507 when it is full, else 500.
fn disk_error(what: &str, e: std::io::Error) -> ApiError {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return ApiError::new(
            StatusCode::INSUFFICIENT_STORAGE,
            format!("{what}: the server's disk is full"),
            Some("retry later; the server's operator frees space"),
        );
    }
    ApiError::internal(format!("{what}: {e}"))
}

/// Puts the run together from its staged contents in `<staging>/run.<random>`.
fn assemble(dir: &Path, p: &Pushed) -> Result<Assembly, ApiError> {
    // Leftovers of an earlier commit that failed halfway (a server stopped mid-commit).
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("run.") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let run = Assembly(Some(dir.join(format!("run.{}", random_hex()))));
    let io = |e: std::io::Error| disk_error("assembling the run", e);
    std::fs::create_dir_all(run.path()).map_err(io)?;
    let blobs = dir.join("blobs");
    for a in &p.manifest.artifacts {
        // The paths were checked with the manifest (relative, no `..`, no control characters,
        // names and lengths a file system takes, no file where a directory is needed).
        let dest = run.path().join(&a.path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let src = blobs.join(&a.sha256);
        std::fs::hard_link(&src, &dest)
            .or_else(|_| std::fs::copy(&src, &dest).map(drop))
            .map_err(io)?;
        yardstick_store::fsutil::seal_file(&dest).map_err(io)?;
    }
    std::fs::write(run.path().join(MANIFEST), &p.manifest_bytes).map_err(io)?;
    yardstick_store::fsutil::seal_file(&run.path().join(MANIFEST)).map_err(io)?;
    if let Some(a) = &p.attestation {
        std::fs::write(run.path().join(ATTESTATION), a).map_err(io)?;
        yardstick_store::fsutil::seal_file(&run.path().join(ATTESTATION)).map_err(io)?;
    }
    Ok(run)
}

pub(super) async fn commit(
    State(state): State<Arc<AppState>>,
    ApiPath(path): ApiPath<PushPath>,
) -> Result<Json<PushStatus>, ApiError> {
    // One commit at a time: two pushes of the same run cannot both rename, and the warehouse
    // has one writer from this server.
    let _guard = state.push_lock.lock().await;
    state
        .blocking(move |st, w| {
            let store = store_of(st)?;
            let opts = verify_options(st, store)?;
            let (dir, p) = match staged(st, store, &path.id)? {
                Staged::Open(dir, p) => (dir, p),
                Staged::Stored(p) => {
                    // Committed already (a retry, or an identical push that won the race): the
                    // same answer as pushing the stored run again.
                    let sig = check_signature(&opts, &p)?;
                    existing(st, store, w, &p)?;
                    return Ok(Json(status(
                        &p,
                        PushState::Stored,
                        true,
                        (Vec::new(), 0),
                        sig,
                    )));
                }
            };
            let sig = check_signature(&opts, &p)?;
            let known = match existing(st, store, w, &p) {
                Ok(k) => k,
                Err(e) => {
                    if e.status == StatusCode::CONFLICT {
                        // The id is taken by another run: this push can never be stored.
                        drop_staging(&dir);
                    }
                    return Err(e);
                }
            };
            if let Known::Stored = known {
                drop_staging(&dir);
                return Ok(Json(status(
                    &p,
                    PushState::Stored,
                    true,
                    (Vec::new(), 0),
                    sig,
                )));
            }
            let (left, left_bytes) = missing(&dir, &p);
            if !left.is_empty() {
                let first = p.paths_of(&left[0]).join(", ");
                return Err(unprocessable(
                    format!(
                        "push {} still needs {} content(s), {left_bytes} bytes (first: {first})",
                        p.push_id,
                        left.len()
                    ),
                    Some("PUT each to /api/v1/pushes/{id}/blobs/{sha256}, then commit again"),
                ));
            }
            let run = assemble(&dir, &p)?;
            let report = yardstick_store::verify_run(run.path(), &opts).map_err(|e| {
                unprocessable(
                    format!("run {} does not verify: {e}", p.manifest.run_id),
                    None,
                )
            })?;
            if !report.ok() {
                let why = match report.problems.first() {
                    Some(f) => format!(
                        "{} artifact problem(s), first: {} {}",
                        report.problems.len(),
                        f.problem,
                        f.path
                    ),
                    None => report.signature_line(),
                };
                return Err(unprocessable(
                    format!("run {} is refused: {why}", p.manifest.run_id),
                    None,
                ));
            }
            let loc = location(store);
            let rows = index(st, run.path(), &loc)?;
            if let Known::RowsOnly = known
                && let Some(what) = same_rows(w, &rows, &dir)?
            {
                drop(run);
                drop_staging(&dir);
                return Err(taken(
                    &p.manifest.run_id,
                    &format!("the warehouse's {what} of it differ from the pushed run's"),
                ));
            }
            let runs = store.join("runs");
            std::fs::create_dir_all(&runs).map_err(|e| disk_error("creating runs/", e))?;
            let dest = yardstick_store::run::run_dir(store, &p.manifest.run_id)?;
            if std::fs::symlink_metadata(&dest).is_ok() {
                return Err(conflict(
                    format!("run {} appeared in the store meanwhile", p.manifest.run_id),
                    Some("push again: the same run is then `already stored`"),
                ));
            }
            run.store_at(&dest)
                .map_err(|e| disk_error("storing the run", e))?;
            let _ = yardstick_store::fsutil::sync_dir(&runs);
            rows.write(w)?;
            drop_staging(&dir);
            let mut out = status(&p, PushState::Stored, false, (Vec::new(), 0), sig);
            out.gate = super::gate::gate_stored(st, w, &p.manifest.run_id);
            Ok(Json(out))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(artifacts: serde_json::Value, status: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema": MANIFEST_SCHEMA, "run_id": "01TESTRUN", "name": "t", "status": status,
            "spec_sha256": "0".repeat(64), "tool": {"name": "yardstick", "version": "0", "git_commit": null},
            "machine_profile": null, "env_sha256": null, "started_at": "2026-01-01T00:00:00Z",
            "ended_at": null, "artifacts": artifacts,
        }))
        .unwrap()
    }

    fn art(path: &str, sha: &str, size: u64) -> serde_json::Value {
        serde_json::json!({"path": path, "size": size, "sha256": sha, "kind": "other"})
    }

    #[test]
    fn pushed_manifests_are_checked_before_anything_is_staged() {
        let d = "a".repeat(64);
        let ok = check_pushed(
            manifest(
                serde_json::json!([art("x", &d, 3), art("y", &d, 3)]),
                "complete",
            ),
            None,
            100,
        )
        .unwrap();
        assert_eq!(ok.contents(), vec![(d.as_str(), 3)]);
        assert_eq!(ok.paths_of(&d), ["x", "y"]);
        assert_eq!(ok.bytes, 6);
        assert!(ok.push_id.starts_with("01TESTRUN-"));
        let status_of = |m: Vec<u8>, max: u64| check_pushed(m, None, max).err().map(|e| e.status);
        assert_eq!(
            status_of(b"{not json".to_vec(), 100),
            Some(StatusCode::BAD_REQUEST)
        );
        for bad in ["../etc/passwd", "/abs", "a/../../b", "manifest.json"] {
            assert_eq!(
                status_of(
                    manifest(serde_json::json!([art(bad, &d, 1)]), "complete"),
                    100
                ),
                Some(StatusCode::BAD_REQUEST),
                "{bad}"
            );
        }
        assert_eq!(
            status_of(
                manifest(serde_json::json!([art("x", "../../x", 1)]), "complete"),
                100
            ),
            Some(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            status_of(
                manifest(
                    serde_json::json!([art("x", &d, 1), art("y", &d, 2)]),
                    "complete"
                ),
                100
            ),
            Some(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            status_of(
                manifest(serde_json::json!([art("x", &d, 101)]), "complete"),
                100
            ),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
        assert_eq!(
            status_of(
                manifest(serde_json::json!([art("x", &d, 1)]), "running"),
                100
            ),
            Some(StatusCode::UNPROCESSABLE_ENTITY)
        );
        assert!(staging(Path::new("/s"), "../x").is_err());
        assert!(staging(Path::new("/s"), "01ABC-0123abcd").is_ok());
    }

    #[test]
    fn paths_no_directory_can_hold_are_refused_with_the_path_named() {
        let d = "a".repeat(64);
        let refused = |paths: &[&str]| {
            let arts: Vec<_> = paths.iter().map(|p| art(p, &d, 1)).collect();
            check_pushed(manifest(serde_json::json!(arts), "complete"), None, 1 << 20)
                .err()
                .map(|e| (e.status, e.body.error))
        };
        let long = "x".repeat(MAX_COMPONENT_BYTES + 1);
        let deep = vec!["d".repeat(200); 6].join("/");
        for (paths, named) in [
            (vec!["logs/x", "logs/x/y"], "logs/x/y"),
            (vec!["logs/x/y", "logs/x"], "logs/x/y"),
            (vec!["attestation.dsse.json/k"], "attestation.dsse.json/k"),
            (vec![long.as_str()], "256 bytes"),
            (vec![deep.as_str()], "1024"),
        ] {
            let (status, msg) = refused(&paths).unwrap_or_else(|| panic!("{paths:?} taken"));
            assert_eq!(status, StatusCode::BAD_REQUEST, "{msg}");
            assert!(msg.contains(named), "{msg}");
        }
        let fine = "x".repeat(MAX_COMPONENT_BYTES);
        assert_eq!(
            refused(&["logs/x", "logs/xy/z", "logs/y/x", fine.as_str()]),
            None
        );
    }

    #[test]
    fn an_assembly_that_fails_leaves_no_directory_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let d = "b".repeat(64);
        let p = check_pushed(
            manifest(serde_json::json!([art("a/b/c", &d, 1)]), "complete"),
            None,
            100,
        )
        .unwrap();
        // The content was never uploaded: the link fails halfway through.
        std::fs::create_dir_all(tmp.path().join("blobs")).unwrap();
        assert!(assemble(tmp.path(), &p).is_err());
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["blobs"], "{left:?}");
        // And a run put together is removed when it is not stored.
        std::fs::write(tmp.path().join("blobs").join(&d), b"x").unwrap();
        let run = assemble(tmp.path(), &p).unwrap();
        let built = run.path().to_path_buf();
        assert!(built.join("a/b/c").is_file());
        drop(run);
        assert!(!built.exists());
    }

    #[test]
    fn a_push_id_finds_its_run_only_by_the_digest_of_the_stored_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let bytes = manifest(serde_json::json!([]), "complete");
        let p = check_pushed(bytes.clone(), None, 100).unwrap();
        assert!(stored_push(tmp.path(), &p.push_id).is_none(), "not stored");
        let dir = tmp.path().join("runs").join("01TESTRUN");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(MANIFEST), &bytes).unwrap();
        assert_eq!(
            stored_push(tmp.path(), &p.push_id).map(|s| s.push_id),
            Some(p.push_id.clone())
        );
        let other = format!("01TESTRUN-{}", "0".repeat(24));
        assert!(
            stored_push(tmp.path(), &other).is_none(),
            "another manifest"
        );
    }
}
