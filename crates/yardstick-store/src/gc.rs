//! Retention: raw artifacts of old runs are dropped, curated facts and provenance are kept.
//!
//! The tiers of docs/methodology.md#retention: **hot** — a recent run, everything on disk; **warm** — past the `keep_raw`
//! window, the raw samples (`samples/`, `telemetry.parquet`) and logs (`logs/`) are deleted while
//! the spec, environment, summary, manifest (with every artifact's sha256 and size), attestation
//! and the warehouse facts stay; **cold** — the export (`yardstick export --parquet`) in
//! low-cost storage.
//!
//! What was dropped is recorded in `gc.json` beside the manifest (the manifest itself is sealed
//! and signed, so it is never rewritten). A signed run's record is signed too: `gc.dsse.json` is
//! a DSSE envelope over an in-toto statement naming `gc.json` and every dropped artifact with
//! its sha256, chained to the run (its predicate holds the sha256 of the manifest and of the
//! run's attestation), made with the key that signed the run. `verify` reads it through
//! [`check_retention`]: only raw artifacts may ever be excused, and only by a record that checks
//! out. Only complete runs are pruned: an incomplete run is resumable, and resuming re-checks
//! every artifact.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::fsutil::{resolve_in, sha256_bytes, sha256_in, unsafe_relative, write_atomic};
use crate::layout::MANIFEST;
use crate::run::{ATTESTATION, Artifact, Manifest, RunStatus, read_manifest};
use crate::sign::{SignatureCheck, SignatureState, Statement, Subject, TrustSet};

/// File name of the retention record, beside `manifest.json`.
pub const GC_RECORD: &str = "gc.json";
/// File name of the signed retention record (DSSE envelope over `gc.json`).
pub const GC_ENVELOPE: &str = "gc.dsse.json";
/// The predicate type of a retention statement.
pub const RETENTION_PREDICATE_TYPE: &str = "https://yardstick.dev/attestation/retention/v1";
/// Files retention never drops, whatever their kind says: the evidence a run is read by.
pub const PROTECTED: [&str; 5] = [
    "spec.yaml",
    "env.json",
    "summary.json",
    MANIFEST,
    ATTESTATION,
];
/// Schema identifier of the record.
pub const GC_SCHEMA: &str = "yardstick.gc/v1";

/// One artifact dropped by retention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DroppedArtifact {
    /// Path relative to the run directory.
    pub path: String,
    /// sha256 the manifest lists (the dropped file had it).
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Artifact kind (`samples`, `telemetry`, `log`).
    pub kind: String,
    /// RFC 3339 time of the drop.
    pub dropped_at: String,
    /// The policy that dropped it, e.g. `keep-raw 30d`.
    pub policy: String,
}

/// `gc.json`: everything retention dropped from one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GcRecord {
    /// [`GC_SCHEMA`].
    pub schema: String,
    /// The run.
    pub run_id: String,
    /// Dropped artifacts, in the order dropped.
    pub dropped: Vec<DroppedArtifact>,
}

impl GcRecord {
    /// The record of `path`, if retention dropped it.
    pub fn dropped(&self, path: &str) -> Option<&DroppedArtifact> {
        self.dropped.iter().find(|d| d.path == path)
    }
}

/// Reads a run's retention record; `None` when retention never touched the run.
pub fn read_record(run_dir: &Path) -> Result<Option<GcRecord>, StoreError> {
    let path = run_dir.join(GC_RECORD);
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
        Ok(bytes) => parse_record(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Integrity(format!("{}: {e}", path.display()))),
    }
}

/// Why a retention record is refused (the message completes "gc.json ...").
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error("not a retention record: {0}")]
    NotRecord(serde_json::Error),
    #[error("names the artifact path {path:?}, which is refused: {why}")]
    UnsafePath { path: String, why: &'static str },
}

fn parse_record(bytes: &[u8]) -> Result<GcRecord, RecordError> {
    let r: GcRecord = serde_json::from_slice(bytes).map_err(RecordError::NotRecord)?;
    for d in &r.dropped {
        if let Some(why) = unsafe_relative(&d.path) {
            return Err(RecordError::UnsafePath {
                path: d.path.clone(),
                why,
            });
        }
    }
    Ok(r)
}

/// What `verify` made of a run's retention record.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RetentionCheck {
    /// Artifacts the record says were dropped.
    pub recorded: usize,
    /// The signed record's check; `None` when the record is not signed (no `gc.dsse.json`).
    pub signature: Option<SignatureCheck>,
    /// Whether the record may excuse missing raw artifacts.
    pub accepted: bool,
    /// Why not, when it may not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// For `verify`: reads `gc.json` (and `gc.dsse.json`) and decides which missing artifacts it
/// excuses. A record excuses nothing unless: it is about this run; it names only raw artifacts
/// (never the spec, environment, summary, manifest or attestation) listed in the manifest with
/// the same sha256; and, for a signed run, it is signed by the key that verified the run's
/// attestation (or, when no key is trusted, it is at least signed and chained), with a
/// statement that covers the current `gc.json`, this manifest and this attestation. Returns the
/// check and the artifacts it excuses.
pub fn check_retention(
    run_dir: &Path,
    manifest: &Manifest,
    manifest_sha256: &str,
    attestation: Option<&[u8]>,
    run_signature: &SignatureState,
    trust: &TrustSet,
) -> Result<(Option<RetentionCheck>, Vec<DroppedArtifact>), StoreError> {
    let bytes = match read_regular(run_dir, GC_RECORD)? {
        None => return Ok((None, Vec::new())),
        Some(b) => b,
    };
    let mut check = RetentionCheck {
        recorded: 0,
        signature: None,
        accepted: false,
        reason: None,
    };
    let refuse = |mut c: RetentionCheck, why: String| {
        c.reason = Some(format!("{why}; it excuses no missing file"));
        Ok((Some(c), Vec::new()))
    };
    let record = match parse_record(&bytes) {
        Ok(r) => r,
        Err(e) => return refuse(check, format!("gc.json {e}")),
    };
    check.recorded = record.dropped.len();
    if record.run_id != manifest.run_id {
        let why = format!("gc.json is about run {}, not this run", record.run_id);
        return refuse(check, why);
    }
    for d in &record.dropped {
        let listed = manifest.artifact(&d.path);
        if PROTECTED.contains(&d.path.as_str()) || !listed.is_some_and(is_raw) {
            let why = format!(
                "gc.json names {}, which retention never drops (only raw samples, telemetry and logs are)",
                d.path
            );
            return refuse(check, why);
        }
        if listed.is_some_and(|a| a.sha256 != d.sha256) {
            let why = format!(
                "gc.json records {} with another sha256 than the manifest",
                d.path
            );
            return refuse(check, why);
        }
    }
    // Which key may sign the record: the one that verified the run.
    let record_trust = match run_signature {
        SignatureState::Signed {
            check: SignatureCheck::Verified { keyid, .. },
        } => {
            let mut t = TrustSet::new();
            if let Some(k) = trust.by_keyid(keyid) {
                t.add(k.key, k.source.clone());
            }
            Some(t)
        }
        SignatureState::Signed {
            check: SignatureCheck::Untrusted { .. },
        } => Some(TrustSet::new()),
        SignatureState::Signed { .. } => {
            return refuse(check, "the run's own signature does not verify".into());
        }
        SignatureState::Unsigned => None,
    };
    match read_regular(run_dir, GC_ENVELOPE)? {
        None if record_trust.is_some() => {
            return refuse(
                check,
                "the run is signed but gc.json is not (no gc.dsse.json)".into(),
            );
        }
        None => {}
        Some(env) => {
            let (sig, statement) = crate::sign::check_envelope(
                &env,
                RETENTION_PREDICATE_TYPE,
                GC_RECORD,
                &sha256_bytes(&bytes),
                record_trust.as_ref().unwrap_or(trust),
            );
            check.signature = Some(sig.clone());
            match (&sig, &record_trust) {
                (SignatureCheck::Verified { .. }, _) => {}
                (SignatureCheck::Untrusted { .. }, Some(t)) if t.is_empty() => {}
                (SignatureCheck::Untrusted { .. }, None) => {}
                (SignatureCheck::OtherKey { .. }, Some(_)) => {
                    return refuse(
                        check,
                        "gc.dsse.json is not signed by the key that signed the run".into(),
                    );
                }
                (_, _) => {
                    let why = format!("gc.dsse.json: {}", sig.describe());
                    return refuse(check, why);
                }
            }
            let statement = statement.expect("a checked envelope has its statement");
            if let Err(why) = chained(&statement, manifest, manifest_sha256, attestation) {
                return refuse(check, format!("gc.dsse.json {why}"));
            }
        }
    }
    check.accepted = true;
    Ok((Some(check), record.dropped))
}

/// How a retention statement is not chained to its run (the message completes
/// "gc.dsse.json ...").
#[derive(Debug, thiserror::Error)]
enum Unchained {
    #[error("is about another run")]
    Run,
    #[error("names another manifest")]
    Manifest,
    #[error("is not chained to this run's attestation")]
    Attestation,
}

/// Whether a retention statement is chained to this run: its predicate names the run id, the
/// manifest's sha256 and the attestation's sha256 (null for an unsigned run).
fn chained(
    statement: &Statement,
    manifest: &Manifest,
    manifest_sha256: &str,
    attestation: Option<&[u8]>,
) -> Result<(), Unchained> {
    let p = &statement.predicate;
    if p["run_id"].as_str() != Some(manifest.run_id.as_str()) {
        return Err(Unchained::Run);
    }
    if p["manifest_sha256"].as_str() != Some(manifest_sha256) {
        return Err(Unchained::Manifest);
    }
    let want = attestation.map(sha256_bytes);
    if p["attestation_sha256"].as_str().map(str::to_owned) != want {
        return Err(Unchained::Attestation);
    }
    Ok(())
}

/// Reads a small file of the run (a record) if it exists as a regular file; a symlink or other
/// non-file in its place is an integrity error.
fn read_regular(run_dir: &Path, rel: &str) -> Result<Option<Vec<u8>>, StoreError> {
    let path = resolve_in(run_dir, rel)?;
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
        Ok(b) => Ok(Some(b)),
    }
}

/// Whether an artifact is raw (dropped by retention): samples, telemetry and logs.
pub fn is_raw(a: &Artifact) -> bool {
    !PROTECTED.contains(&a.path.as_str())
        && (matches!(a.kind.as_str(), "samples" | "telemetry" | "log")
            || a.path.starts_with("samples/")
            || a.path.starts_with("logs/"))
}

/// Retention settings.
#[derive(Debug, Clone)]
pub struct GcOptions {
    /// Raw artifacts of runs that ended longer ago than this are dropped.
    pub keep_raw: Duration,
    /// "Now" (injectable for tests).
    pub now: time::OffsetDateTime,
    /// Report what would be dropped without deleting anything.
    pub dry_run: bool,
    /// The key that signs retention records. A signed run is pruned only with the key that
    /// signed it (its record must be signed by the same key to excuse anything); without it the
    /// run is left alone and reported.
    pub key: Option<ed25519_dalek::SigningKey>,
}

impl GcOptions {
    /// Drop raw artifacts older than `keep_raw`, now, for real.
    pub fn new(keep_raw: Duration) -> Self {
        GcOptions {
            keep_raw,
            now: time::OffsetDateTime::now_utc(),
            dry_run: false,
            key: None,
        }
    }
}

/// What retention did to one run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PrunedRun {
    /// The run.
    pub run_id: String,
    /// When it ended (or started, when it has no end).
    pub ended_at: String,
    /// Artifacts dropped now.
    pub dropped: Vec<DroppedArtifact>,
    /// Bytes freed.
    pub bytes: u64,
}

/// A run retention left alone although it is old, and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SkippedRun {
    /// The run directory's name.
    pub run: String,
    /// Why.
    pub reason: String,
}

/// The outcome of a retention pass.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GcReport {
    /// The runs directory.
    pub runs_dir: PathBuf,
    /// The policy, e.g. `keep-raw 30d`.
    pub policy: String,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Runs looked at.
    pub runs_checked: usize,
    /// Runs with raw artifacts dropped.
    pub pruned: Vec<PrunedRun>,
    /// Old runs left alone.
    pub skipped: Vec<SkippedRun>,
    /// Total bytes freed.
    pub bytes_freed: u64,
}

/// Drops raw artifacts of complete runs in `<store_dir>/runs/` that ended more than `keep_raw`
/// ago, recording them in each run's `gc.json`.
pub fn gc(store_dir: &Path, keep_raw: Duration) -> Result<GcReport, StoreError> {
    gc_with(store_dir, &GcOptions::new(keep_raw))
}

/// [`gc`] with every setting explicit.
pub fn gc_with(store_dir: &Path, opts: &GcOptions) -> Result<GcReport, StoreError> {
    use time::format_description::well_known::Rfc3339;
    let runs_dir = store_dir.join("runs");
    if !store_dir.is_dir() {
        return Err(StoreError::NotFound(format!(
            "no store directory at {}",
            store_dir.display()
        )));
    }
    let policy = format!("keep-raw {}", format_age(opts.keep_raw));
    let keep = time::Duration::try_from(opts.keep_raw)
        .map_err(|_| StoreError::Invalid("the keep-raw window is too long".into()))?;
    let cutoff = opts
        .now
        .checked_sub(keep)
        .unwrap_or(time::PrimitiveDateTime::MIN.assume_utc());
    let mut report = GcReport {
        runs_dir: runs_dir.clone(),
        policy: policy.clone(),
        dry_run: opts.dry_run,
        runs_checked: 0,
        pruned: Vec::new(),
        skipped: Vec::new(),
        bytes_freed: 0,
    };
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&runs_dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect(),
    };
    dirs.sort();
    let dropped_at = yardstick_env::now_rfc3339();
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        report.runs_checked += 1;
        let manifest = match read_manifest(&dir) {
            Ok(m) => m,
            Err(e) => {
                report.skipped.push(SkippedRun {
                    run: name,
                    reason: format!("unreadable manifest: {e}"),
                });
                continue;
            }
        };
        let ended = manifest
            .ended_at
            .clone()
            .unwrap_or_else(|| manifest.started_at.clone());
        let Ok(ended_t) = time::OffsetDateTime::parse(&ended, &Rfc3339) else {
            report.skipped.push(SkippedRun {
                run: name,
                reason: format!("end time `{ended}` is not RFC 3339"),
            });
            continue;
        };
        if ended_t >= cutoff {
            continue; // hot
        }
        if manifest.effective_status() != RunStatus::Complete {
            report.skipped.push(SkippedRun {
                run: name,
                reason: "incomplete (resumable); finish it with `yardstick run --resume` first"
                    .into(),
            });
            continue;
        }
        let mut record = match read_record(&dir) {
            Ok(r) => r.unwrap_or(GcRecord {
                schema: GC_SCHEMA.into(),
                run_id: manifest.run_id.clone(),
                dropped: Vec::new(),
            }),
            Err(e) => {
                report.skipped.push(SkippedRun {
                    run: name,
                    reason: format!("its retention record is refused: {e}"),
                });
                continue;
            }
        };
        // A signed run is pruned only by the key that signed it: the record that excuses the
        // missing files must carry the same signature, or verify would (rightly) call them
        // missing.
        let attestation = match read_regular(&dir, ATTESTATION) {
            Ok(a) => a,
            Err(e) => {
                report.skipped.push(SkippedRun {
                    run: name,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        let manifest_bytes = std::fs::read(dir.join(MANIFEST))?;
        if let Some(att) = &attestation {
            let signer = match &opts.key {
                None => Err(
                    "signed: pass --key with the key that signed it to prune it (its retention record must be signed by the same key)".to_string(),
                ),
                Some(k) => {
                    let mut t = TrustSet::new();
                    t.add(k.verifying_key(), "gc key");
                    match crate::sign::check(att, &manifest_bytes, &t) {
                        SignatureCheck::Verified { .. } => Ok(()),
                        c => Err(format!(
                            "signed, but not by the --key given ({}); left alone",
                            c.describe()
                        )),
                    }
                }
            };
            if let Err(reason) = signer {
                report.skipped.push(SkippedRun { run: name, reason });
                continue;
            }
        }
        let mut now_dropped = Vec::new();
        for a in manifest.artifacts.iter().filter(|a| is_raw(a)) {
            if record.dropped(&a.path).is_some() {
                continue;
            }
            // A raw file whose bytes differ from the manifest (or a link or other non-file in
            // its place) is evidence of tampering or corruption: leave it for `verify` to
            // report instead of deleting the evidence.
            match sha256_in(&dir, &a.path) {
                Ok(None) => continue,
                Ok(Some((sha, _))) if sha == a.sha256 => {}
                _ => {
                    report.skipped.push(SkippedRun {
                        run: name.clone(),
                        reason: format!("{} does not match its manifest hash; kept", a.path),
                    });
                    continue;
                }
            }
            now_dropped.push(DroppedArtifact {
                path: a.path.clone(),
                sha256: a.sha256.clone(),
                size: a.size,
                kind: a.kind.clone(),
                dropped_at: dropped_at.clone(),
                policy: policy.clone(),
            });
        }
        if now_dropped.is_empty() {
            continue;
        }
        let bytes: u64 = now_dropped.iter().map(|d| d.size).sum();
        if !opts.dry_run {
            // Record (and sign) first, then delete: a crash in between leaves files that are
            // listed as dropped yet still present and intact, which verify accepts; a crash
            // between the record and its signature leaves an envelope over the previous record,
            // which excuses nothing, while nothing is missing yet.
            record.dropped.extend(now_dropped.iter().cloned());
            let json = serde_json::to_vec_pretty(&record).expect("record is JSON");
            write_atomic(&dir.join(GC_RECORD), &json)?;
            if let Some(key) = &opts.key {
                let env = sign_record(
                    &record,
                    &json,
                    &manifest,
                    &manifest_bytes,
                    attestation.as_deref(),
                    &policy,
                    key,
                );
                write_atomic(
                    &dir.join(GC_ENVELOPE),
                    &serde_json::to_vec_pretty(&env).expect("envelope is JSON"),
                )?;
            }
            for d in &now_dropped {
                let p = resolve_in(&dir, &d.path)?;
                std::fs::remove_file(&p).map_err(|e| {
                    StoreError::Io(std::io::Error::new(
                        e.kind(),
                        format!("removing {}: {e}", p.display()),
                    ))
                })?;
                remove_empty_parents(&dir, &p);
            }
        }
        report.bytes_freed += bytes;
        report.pruned.push(PrunedRun {
            run_id: manifest.run_id.clone(),
            ended_at: ended,
            dropped: now_dropped,
            bytes,
        });
    }
    Ok(report)
}

/// The signed retention record: an in-toto statement naming `gc.json` and every artifact it
/// records as dropped, chained to the run by the sha256 of its manifest and attestation.
fn sign_record(
    record: &GcRecord,
    record_json: &[u8],
    manifest: &Manifest,
    manifest_bytes: &[u8],
    attestation: Option<&[u8]>,
    policy: &str,
    key: &ed25519_dalek::SigningKey,
) -> crate::sign::Envelope {
    let mut subject = vec![Subject::sha256(GC_RECORD, &sha256_bytes(record_json))];
    subject.extend(
        record
            .dropped
            .iter()
            .map(|d| Subject::sha256(&d.path, &d.sha256)),
    );
    let statement = Statement {
        statement_type: crate::sign::STATEMENT_TYPE.into(),
        subject,
        predicate_type: RETENTION_PREDICATE_TYPE.into(),
        predicate: serde_json::json!({
            "run_id": manifest.run_id,
            "manifest_sha256": sha256_bytes(manifest_bytes),
            "attestation_sha256": attestation.map(sha256_bytes),
            "policy": policy,
            "dropped": record.dropped.len(),
        }),
    };
    crate::sign::sign_statement(&statement, key)
}

/// Removes directories left empty by a deletion, up to (not including) the run directory.
fn remove_empty_parents(run_dir: &Path, file: &Path) {
    let mut d = file.parent();
    while let Some(dir) = d {
        if dir == run_dir || !dir.starts_with(run_dir) || std::fs::remove_dir(dir).is_err() {
            break;
        }
        d = dir.parent();
    }
}

/// `30d`, `12h`, `90s`: the largest unit that divides the duration.
pub fn format_age(d: Duration) -> String {
    let s = d.as_secs();
    for (unit, secs) in [("w", 7 * 86_400), ("d", 86_400), ("h", 3600), ("m", 60)] {
        if s > 0 && s.is_multiple_of(secs) {
            return format!("{}{unit}", s / secs);
        }
    }
    format!("{s}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_format_in_the_largest_whole_unit() {
        assert_eq!(format_age(Duration::from_secs(30 * 86_400)), "30d");
        assert_eq!(format_age(Duration::from_secs(14 * 86_400)), "2w");
        assert_eq!(format_age(Duration::from_secs(5400)), "90m");
        assert_eq!(format_age(Duration::from_secs(0)), "0s");
    }
}
