//! Retention: raw artifacts of old runs are dropped, curated facts and provenance are kept.
//!
//! Seed 000's tiers: **hot** — a recent run, everything on disk; **warm** — past the `keep_raw`
//! window, the raw samples (`samples/`, `telemetry.parquet`) and logs (`logs/`) are deleted while
//! the spec, environment, summary, manifest (with every artifact's sha256 and size), attestation
//! and the warehouse facts stay; **cold** — the export (`yardstick export --parquet`) in
//! low-cost storage.
//!
//! What was dropped is recorded in `gc.json` beside the manifest (the manifest itself is sealed
//! and signed, so it is never rewritten). [`explain_missing`] lets `verify` tell files dropped by
//! this policy from files that went missing. Only complete runs are pruned: an incomplete run is
//! resumable, and resuming re-checks every artifact.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::fsutil::{sha256_file, write_atomic};
use crate::run::{Artifact, RunStatus, read_manifest};
use crate::verify::VerifyReport;

/// File name of the retention record, beside `manifest.json`.
pub const GC_RECORD: &str = "gc.json";
/// Schema identifier of the record.
pub const GC_SCHEMA: &str = "yardstick.gc/v1";

/// One artifact dropped by retention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            StoreError::Integrity(format!("{} is not a retention record: {e}", path.display()))
        }),
    }
}

/// For `verify`: removes from `report` the `missing` problems of files retention dropped (same
/// path and sha256 as recorded) and the `unlisted` problem of `gc.json` itself, and returns the
/// dropped artifacts so the caller can say "dropped by retention policy". A file that is missing
/// but not recorded, or recorded with another hash, stays a problem.
pub fn explain_missing(
    report: &mut VerifyReport,
    run_dir: &Path,
) -> Result<Vec<DroppedArtifact>, StoreError> {
    let Some(record) = read_record(run_dir)? else {
        return Ok(Vec::new());
    };
    let mut explained = Vec::new();
    report.problems.retain(|p| {
        if p.problem == "unlisted" && p.path == GC_RECORD {
            return false;
        }
        if p.problem == "missing"
            && let Some(d) = record.dropped(&p.path)
            && p.expected.as_deref() == Some(d.sha256.as_str())
        {
            explained.push(d.clone());
            return false;
        }
        true
    });
    Ok(explained)
}

/// Whether an artifact is raw (dropped by retention): samples, telemetry and logs.
pub fn is_raw(a: &Artifact) -> bool {
    matches!(a.kind.as_str(), "samples" | "telemetry" | "log")
        || a.path.starts_with("samples/")
        || a.path.starts_with("logs/")
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
}

impl GcOptions {
    /// Drop raw artifacts older than `keep_raw`, now, for real.
    pub fn new(keep_raw: Duration) -> Self {
        GcOptions {
            keep_raw,
            now: time::OffsetDateTime::now_utc(),
            dry_run: false,
        }
    }
}

/// What retention did to one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedRun {
    /// The run directory's name.
    pub run: String,
    /// Why.
    pub reason: String,
}

/// The outcome of a retention pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        let mut record = read_record(&dir)?.unwrap_or(GcRecord {
            schema: GC_SCHEMA.into(),
            run_id: manifest.run_id.clone(),
            dropped: Vec::new(),
        });
        let mut now_dropped = Vec::new();
        for a in manifest.artifacts.iter().filter(|a| is_raw(a)) {
            let path = dir.join(&a.path);
            if !path.exists() || record.dropped(&a.path).is_some() {
                continue;
            }
            // A raw file whose bytes differ from the manifest is evidence of tampering or
            // corruption: leave it for `verify` to report instead of deleting the evidence.
            match sha256_file(&path) {
                Ok((sha, _)) if sha == a.sha256 => {}
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
            // Record first, then delete: a crash in between leaves files that are listed as
            // dropped yet still present and intact, which verify accepts.
            record.dropped.extend(now_dropped.iter().cloned());
            let json = serde_json::to_vec_pretty(&record).expect("record is JSON");
            write_atomic(&dir.join(GC_RECORD), &json)?;
            for d in &now_dropped {
                let p = dir.join(&d.path);
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
