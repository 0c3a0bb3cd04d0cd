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
//! what is still missing. Staging areas untouched for a day are removed when a push starts.

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
use yardstick_store::run::{ATTESTATION, MANIFEST, MANIFEST_SCHEMA};
use yardstick_store::verify::{VerifyOptions, signature_line, signature_passes, signature_state};
use yardstick_store::warehouse::Warehouse;
use yardstick_store::{Manifest, RunStatus};

use super::extract::{ApiPath, JsonBody, RawBody};
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
/// Staging areas untouched this long are abandoned pushes, removed when another push starts.
const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

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

/// The server's gating of a pushed run, recorded for trends.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PushGate {
    /// `PASS`, `WARN`, `FAIL` or `INCONCLUSIVE`.
    pub verdict: String,
    /// The baseline run it was gated against.
    pub baseline_run: String,
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
        yardstick_store::verify::SignatureState::Signed { check } if check.is_verified()
    );
    Ok((line, verified))
}

fn location(store: &Path) -> String {
    std::path::absolute(store)
        .unwrap_or_else(|_| store.to_path_buf())
        .display()
        .to_string()
}

/// Whether the store already has this run: `Some(())` when it has exactly this one (indexed
/// again if the warehouse lost it), a 409 when the id names another run, `None` when it is new.
fn existing(
    st: &AppState,
    store: &Path,
    w: &mut dyn Warehouse,
    p: &Pushed,
) -> Result<Option<()>, ApiError> {
    let id = &p.manifest.run_id;
    let dest = yardstick_store::run::run_dir(store, id)?;
    let other = || {
        conflict(
            format!("run {id} is already stored, with a different manifest"),
            Some("a run id names one run; push the run under the id it was stored with"),
        )
    };
    if dest.join(MANIFEST).is_file() {
        let stored = std::fs::read(dest.join(MANIFEST)).map_err(ApiError::internal)?;
        if stored != p.manifest_bytes {
            return Err(other());
        }
        // A push cut off between the rename and the index left the run unindexed: index it.
        let indexed = w.run(id)?.is_some_and(|r| {
            r.status == RunStatus::Complete && r.spec_sha256 == p.manifest.spec_sha256
        });
        if !indexed {
            index(st, &dest, &location(store))?.write(w)?;
        }
        return Ok(Some(()));
    }
    if std::fs::symlink_metadata(&dest).is_ok() {
        return Err(other());
    }
    if let Some(row) = w.run(id)?
        && (row.spec_sha256 != p.manifest.spec_sha256 || row.started_at != p.manifest.started_at)
    {
        return Err(conflict(
            format!("the warehouse already has a different run {id}"),
            Some("a run id names one run"),
        ));
    }
    Ok(None)
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

/// The staged push `push_id`: its checked manifest.
fn staged(st: &AppState, store: &Path, push_id: &str) -> Result<(PathBuf, Pushed), ApiError> {
    let dir = staging(store, push_id)?;
    let manifest = match std::fs::read(dir.join(MANIFEST)) {
        Ok(b) => b,
        Err(_) => {
            return Err(ApiError::not_found(
                format!("no push {push_id} in progress (never started, committed, or abandoned)"),
                Some("start it again with POST /api/v1/pushes"),
            ));
        }
    };
    let attestation = std::fs::read(dir.join(ATTESTATION)).ok();
    let p = check_pushed(manifest, attestation, st.config.max_push_bytes)?;
    Ok((dir, p))
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

/// Removes staging areas nobody touched for [`STALE_AFTER`].
fn sweep(store: &Path) {
    let Ok(rd) = std::fs::read_dir(store.join(PUSH_DIR)) else {
        return;
    };
    let now = SystemTime::now();
    for e in rd.flatten() {
        let p = e.path();
        let newest = [p.clone(), p.join("blobs")]
            .iter()
            .filter_map(|d| std::fs::metadata(d).and_then(|m| m.modified()).ok())
            .max();
        if newest.is_some_and(|t| now.duration_since(t).unwrap_or_default() > STALE_AFTER) {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
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
            if existing(st, store, w, &p)?.is_some() {
                return Ok(Json(status(
                    &p,
                    PushState::Stored,
                    true,
                    (Vec::new(), 0),
                    sig,
                )));
            }
            sweep(store);
            let dir = staging(store, &p.push_id)?;
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
            let m = missing(&dir, &p);
            Ok(Json(status(&p, PushState::Uploading, false, m, sig)))
        })
        .await
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
        let (dir, p) = staged(&st, store, &id)?;
        let Some(size) = p.contents().iter().find(|(s, _)| *s == sha).map(|c| c.1) else {
            return Err(ApiError::not_found(
                format!("push {id} lists no artifact with sha256 {sha}"),
                Some("upload the contents POST /api/v1/pushes answered as missing"),
            ));
        };
        let paths = p.paths_of(&sha).join(", ");
        let (left, _) = missing(&dir, &p);
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
    if !have.contains(&path.sha256) {
        // Already here (a retry): nothing to write.
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
    match outcome {
        Ok(()) => {
            std::fs::rename(&part, blobs.join(&path.sha256)).map_err(ApiError::internal)?;
            let left = have.len().saturating_sub(1);
            Ok(done(left))
        }
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            Err(e)
        }
    }
}

/// Puts the run together from its staged contents in `<staging>/run.<random>`.
fn assemble(dir: &Path, p: &Pushed) -> Result<PathBuf, ApiError> {
    // Leftovers of an earlier commit that failed halfway.
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("run.") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let run = dir.join(format!("run.{}", random_hex()));
    let io = |e: std::io::Error| ApiError::internal(format!("assembling the run: {e}"));
    std::fs::create_dir_all(&run).map_err(io)?;
    let blobs = dir.join("blobs");
    for a in &p.manifest.artifacts {
        // The paths were checked (relative, no `..`, no control characters) with the manifest.
        let dest = run.join(&a.path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let src = blobs.join(&a.sha256);
        std::fs::hard_link(&src, &dest)
            .or_else(|_| std::fs::copy(&src, &dest).map(drop))
            .map_err(io)?;
        yardstick_store::fsutil::seal_file(&dest).map_err(io)?;
    }
    std::fs::write(run.join(MANIFEST), &p.manifest_bytes).map_err(io)?;
    yardstick_store::fsutil::seal_file(&run.join(MANIFEST)).map_err(io)?;
    if let Some(a) = &p.attestation {
        std::fs::write(run.join(ATTESTATION), a).map_err(io)?;
        yardstick_store::fsutil::seal_file(&run.join(ATTESTATION)).map_err(io)?;
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
            let (dir, p) = staged(st, store, &path.id)?;
            let opts = verify_options(st, store)?;
            let sig = check_signature(&opts, &p)?;
            if existing(st, store, w, &p)?.is_some() {
                let _ = std::fs::remove_dir_all(&dir);
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
            let report = yardstick_store::verify_run(&run, &opts).map_err(|e| {
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
                let _ = std::fs::remove_dir_all(&run);
                return Err(unprocessable(
                    format!("run {} is refused: {why}", p.manifest.run_id),
                    None,
                ));
            }
            let loc = location(store);
            let rows = match index(st, &run, &loc) {
                Ok(r) => r,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&run);
                    return Err(e);
                }
            };
            let runs = store.join("runs");
            std::fs::create_dir_all(&runs).map_err(ApiError::internal)?;
            let dest = yardstick_store::run::run_dir(store, &p.manifest.run_id)?;
            if std::fs::symlink_metadata(&dest).is_ok() {
                let _ = std::fs::remove_dir_all(&run);
                return Err(conflict(
                    format!("run {} appeared in the store meanwhile", p.manifest.run_id),
                    Some("push again: the same run is then `already stored`"),
                ));
            }
            std::fs::rename(&run, &dest).map_err(ApiError::internal)?;
            let _ = yardstick_store::fsutil::sync_dir(&runs);
            rows.write(w)?;
            let _ = std::fs::remove_dir_all(&dir);
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
}
