//! `verify`: recompute every artifact's hash, find missing and unlisted files, check the
//! attestation, and say exactly what differs.

use std::path::Path;

use serde::Serialize;

use crate::StoreError;
use crate::fsutil::{sha256_bytes, sha256_in};
use crate::gc::{DroppedArtifact, GC_ENVELOPE, GC_RECORD, RetentionCheck};
use crate::layout::MANIFEST;
use crate::run::{ATTESTATION, RunStatus, read_manifest};
use crate::sign::{SignatureCheck, SignatureState, TrustSet};

/// One finding about one file.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FileProblem {
    /// Path relative to the run directory.
    pub path: String,
    /// `modified`, `missing`, `unlisted`, `symlink` or `refused` (a listed path that is not a
    /// regular file inside the run directory).
    pub problem: &'static str,
    /// What the manifest says (sha256), when listed.
    pub expected: Option<String>,
    /// What is on disk (sha256), when present.
    pub actual: Option<String>,
    /// Why, when the problem needs words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl FileProblem {
    fn new(path: &str, problem: &'static str) -> Self {
        FileProblem {
            path: path.into(),
            problem,
            expected: None,
            actual: None,
            detail: None,
        }
    }
}

/// What a verifier trusts and demands.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// Public keys whose signature makes a run verified.
    pub trust: TrustSet,
    /// Fail a run that is not signed by a trusted key. Giving any trusted key implies it.
    pub require_signature: bool,
}

impl VerifyOptions {
    /// Trust these keys (and so require a signature by one of them).
    pub fn trusting(trust: TrustSet) -> Self {
        VerifyOptions {
            trust,
            require_signature: false,
        }
    }

    /// Whether a run must carry a signature by a trusted key to pass.
    pub fn signature_required(&self) -> bool {
        self.require_signature || !self.trust.is_empty()
    }
}

/// What `yardstick verify RUN --json` prints: the report with its two conclusions, or why the run
/// could not be checked at all (a manifest that is not one, or names paths outside the run).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum VerifyOutput {
    /// The run was checked.
    Checked {
        /// The report.
        #[serde(flatten)]
        report: VerifyReport,
        /// No problem: every artifact matches the manifest and any required signature checks.
        ok: bool,
        /// Signed by a trusted key over this manifest.
        verified: bool,
    },
    /// The run could not be checked.
    Unreadable {
        /// The run as the user named it.
        run: String,
        /// Always false.
        ok: bool,
        /// Why.
        error: String,
    },
}

impl VerifyOutput {
    /// The output of a checked run.
    pub fn checked(report: VerifyReport) -> Self {
        VerifyOutput::Checked {
            ok: report.ok(),
            verified: report.verified(),
            report,
        }
    }
}

/// The outcome of verifying a run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct VerifyReport {
    /// Run id.
    pub run_id: String,
    /// Effective status.
    pub status: RunStatus,
    /// Number of artifacts checked.
    pub artifacts: usize,
    /// Every problem found.
    pub problems: Vec<FileProblem>,
    /// Signature state.
    pub signature: SignatureState,
    /// Whether a signature by a trusted key was required (a trusted key was given, or
    /// `--require-signature`, or the store demands it).
    pub signature_required: bool,
    /// How many keys were trusted.
    pub trusted_keys: usize,
    /// The retention record (`gc.json`), when retention touched the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<RetentionCheck>,
    /// Raw artifacts that are missing because retention dropped them, under a record that
    /// checks out; their hashes are still in the manifest.
    pub dropped_by_retention: Vec<DroppedArtifact>,
}

impl VerifyReport {
    /// The verification as `yardstick verify` prints it: the run, one line per problem, the
    /// retention record, the signature, and `OK (verified)`, `OK (integrity only: ...)` or
    /// `FAILED`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write_text(&mut out).expect("writing to a String");
        out
    }

    fn write_text(&self, out: &mut String) -> std::fmt::Result {
        use std::fmt::Write;
        writeln!(
            out,
            "run {} ({}): {} artifact(s)",
            self.run_id,
            self.status.as_str(),
            self.artifacts
        )?;
        for p in &self.problems {
            match p.problem {
                "modified" => writeln!(
                    out,
                    "  MODIFIED  {} (manifest sha256 {}, now {})",
                    p.path,
                    p.expected.as_deref().unwrap_or("?"),
                    p.actual.as_deref().unwrap_or("?")
                )?,
                "missing" => writeln!(out, "  MISSING   {}", p.path)?,
                "symlink" => writeln!(out, "  SYMLINK   {} (not followed)", p.path)?,
                "refused" => writeln!(
                    out,
                    "  REFUSED   {}: {}",
                    p.path,
                    p.detail.as_deref().unwrap_or("")
                )?,
                _ => writeln!(out, "  UNLISTED  {} (not in the manifest)", p.path)?,
            }
        }
        if !self.dropped_by_retention.is_empty() {
            writeln!(
                out,
                "  {} raw file(s) dropped by the retention policy (gc.json); their hashes are kept",
                self.dropped_by_retention.len()
            )?;
        }
        if let Some(r) = &self.retention
            && let Some(why) = &r.reason
        {
            writeln!(out, "  retention record REFUSED: {why}")?;
        }
        writeln!(out, "  signature: {}", self.signature_line())?;
        writeln!(
            out,
            "{}",
            match (self.ok(), self.verified()) {
                (true, true) => "OK (verified)",
                (true, false) => "OK (integrity only: not verified by a trusted key)",
                (false, _) => "FAILED",
            }
        )?;
        Ok(())
    }

    /// True when every hash matches, nothing is missing (other than raw files dropped under a
    /// valid retention record) or unlisted, and the signature is acceptable: verified by a
    /// trusted key, or — only when no signature is required — absent or by a key nobody
    /// vouched for. An invalid signature, or one by another key, always fails.
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.signature_ok()
    }

    /// Whether the signature state passes (see [`VerifyReport::ok`]).
    pub fn signature_ok(&self) -> bool {
        signature_passes(&self.signature, self.signature_required)
    }

    /// Whether a trusted key verified the run's signature.
    pub fn verified(&self) -> bool {
        matches!(&self.signature, SignatureState::Signed { check } if check.is_verified())
    }

    /// One line about the signature, for people.
    pub fn signature_line(&self) -> String {
        signature_line(&self.signature, self.signature_required)
    }
}

/// Whether a signature state passes: verified by a trusted key, or — only when no signature is
/// `required` — absent or by a key nobody vouched for. An invalid signature, or one by a key
/// other than the trusted ones, never passes.
pub fn signature_passes(state: &SignatureState, required: bool) -> bool {
    match state {
        SignatureState::Unsigned => !required,
        SignatureState::Signed { check } => match check {
            SignatureCheck::Verified { .. } => true,
            SignatureCheck::Untrusted { .. } => !required,
            SignatureCheck::OtherKey { .. } | SignatureCheck::Invalid { .. } => false,
        },
    }
}

/// One line about a signature state, for people.
pub fn signature_line(state: &SignatureState, required: bool) -> String {
    match state {
        SignatureState::Unsigned if required => {
            "UNSIGNED: no attestation.dsse.json, and a signature by a trusted key is required"
                .into()
        }
        SignatureState::Unsigned => {
            "unsigned (no attestation.dsse.json): integrity only, nothing vouches for the run"
                .into()
        }
        SignatureState::Signed { check } => check.describe(),
    }
}

/// The signature state of a manifest (its exact bytes) and its attestation (`None`: unsigned),
/// checked against `trust`: what [`verify_run`] finds, without a run directory (a server checks
/// a pushed run's signature before accepting any of its files).
pub fn signature_state(
    manifest_bytes: &[u8],
    attestation: Option<&[u8]>,
    trust: &TrustSet,
) -> SignatureState {
    match attestation {
        None => SignatureState::Unsigned,
        Some(bytes) => SignatureState::Signed {
            check: crate::sign::check(bytes, manifest_bytes, trust),
        },
    }
}

/// Verifies the run in `dir`: every listed artifact is hashed (inside the run directory only:
/// a listed path that leaves it is refused before anything is read), every file on disk must
/// be listed, files missing under a valid retention record are explained, and the attestation
/// is checked against `opts`.
pub fn verify_run(dir: &Path, opts: &VerifyOptions) -> Result<VerifyReport, StoreError> {
    let manifest = read_manifest(dir)?;
    let manifest_bytes = std::fs::read(dir.join(MANIFEST))?;
    let mut problems = Vec::new();
    for a in &manifest.artifacts {
        match sha256_in(dir, &a.path) {
            Ok(Some((sha, _))) if sha == a.sha256 => {}
            Ok(Some((sha, _))) => problems.push(FileProblem {
                expected: Some(a.sha256.clone()),
                actual: Some(sha),
                ..FileProblem::new(&a.path, "modified")
            }),
            Ok(None) => problems.push(FileProblem {
                expected: Some(a.sha256.clone()),
                ..FileProblem::new(&a.path, "missing")
            }),
            Err(e) => problems.push(FileProblem {
                expected: Some(a.sha256.clone()),
                detail: Some(e.to_string()),
                ..FileProblem::new(&a.path, "refused")
            }),
        }
    }
    // Every file on disk: walk without following symbolic links (a link to `/` must not make
    // verify read the machine), and report links themselves.
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let p = entry.path();
            let rel = p
                .strip_prefix(dir)
                .expect("inside the run")
                .to_string_lossy()
                .replace('\\', "/");
            let ft = entry.file_type()?;
            if ft.is_symlink() {
                if manifest.artifact(&rel).is_none() {
                    problems.push(FileProblem {
                        detail: Some(
                            "a symbolic link inside the run directory; not followed".into(),
                        ),
                        ..FileProblem::new(&rel, "symlink")
                    });
                }
                continue;
            }
            if ft.is_dir() {
                stack.push(p);
                continue;
            }
            let known = [MANIFEST, ATTESTATION, GC_RECORD, GC_ENVELOPE];
            if !known.contains(&rel.as_str()) && manifest.artifact(&rel).is_none() {
                let actual = if ft.is_file() {
                    sha256_in(dir, &rel).ok().flatten().map(|(s, _)| s)
                } else {
                    None
                };
                problems.push(FileProblem {
                    actual,
                    ..FileProblem::new(&rel, "unlisted")
                });
            }
        }
    }
    let attestation = match std::fs::symlink_metadata(dir.join(ATTESTATION)) {
        Err(_) => None,
        Ok(m) if !m.is_file() => Some(Err(
            "attestation.dsse.json is not a regular file".to_string()
        )),
        Ok(_) => Some(std::fs::read(dir.join(ATTESTATION)).map_err(|e| e.to_string())),
    };
    let signature = match &attestation {
        None => SignatureState::Unsigned,
        Some(Err(e)) => SignatureState::Signed {
            check: SignatureCheck::Invalid { reason: e.clone() },
        },
        Some(Ok(bytes)) => signature_state(&manifest_bytes, Some(bytes), &opts.trust),
    };
    let attestation_bytes = attestation.and_then(Result::ok);
    let (retention, dropped) = crate::gc::check_retention(
        dir,
        &manifest,
        &sha256_bytes(&manifest_bytes),
        attestation_bytes.as_deref(),
        &signature,
        &opts.trust,
    )?;
    problems.retain(|p| {
        !(p.problem == "missing"
            && dropped
                .iter()
                .any(|d| d.path == p.path && p.expected.as_deref() == Some(d.sha256.as_str())))
    });
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(VerifyReport {
        run_id: manifest.run_id.clone(),
        status: manifest.effective_status(),
        artifacts: manifest.artifacts.len(),
        problems,
        signature,
        signature_required: opts.signature_required(),
        trusted_keys: opts.trust.keys().len(),
        retention,
        dropped_by_retention: dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{RunWriter, ToolInfo};
    use ed25519_dalek::SigningKey;

    fn tool() -> ToolInfo {
        ToolInfo {
            name: "yardstick".into(),
            version: "0".into(),
            git_commit: None,
        }
    }

    fn writable(p: &Path) {
        let mut perm = std::fs::metadata(p).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(p, perm).unwrap();
    }

    fn flip(p: &Path) {
        writable(p);
        let mut b = std::fs::read(p).unwrap();
        b[0] ^= 0xff;
        std::fs::write(p, b).unwrap();
    }

    fn trusting(keys: &[&SigningKey]) -> VerifyOptions {
        let mut t = TrustSet::new();
        for k in keys {
            t.add(k.verifying_key(), "test");
        }
        VerifyOptions::trusting(t)
    }

    fn signed_run(root: &Path, key: Option<&SigningKey>) -> std::path::PathBuf {
        let mut w = RunWriter::create(root, "v", "spec", tool()).unwrap();
        w.add("samples/a.bin", &[1, 2, 3, 4], "samples").unwrap();
        w.add("logs/x.log", b"log", "log").unwrap();
        let run = w.dir().to_path_buf();
        w.complete(key).unwrap();
        run
    }

    /// Re-lists `rel` in the manifest with the hash of its current bytes, as an attacker who
    /// edits a sample would, and rewrites the manifest.
    fn rehash_manifest(run: &Path, rel: &str) {
        let mp = run.join(MANIFEST);
        let mut m = read_manifest(run).unwrap();
        let (sha, size) = crate::fsutil::sha256_file(&run.join(rel)).unwrap();
        let a = m.artifacts.iter_mut().find(|a| a.path == rel).unwrap();
        a.sha256 = sha;
        a.size = size;
        writable(&mp);
        std::fs::write(&mp, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    }

    #[test]
    fn finds_flipped_bytes_missing_and_unlisted_files() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let run = signed_run(dir.path(), Some(&key));
        let r = verify_run(&run, &trusting(&[&key])).unwrap();
        assert!(r.ok() && r.verified(), "{r:?}");
        assert_eq!(r.artifacts, 3);

        flip(&run.join("samples/a.bin"));
        writable(&run.join("logs/x.log"));
        std::fs::remove_file(run.join("logs/x.log")).unwrap();
        std::fs::write(run.join("extra.txt"), b"?").unwrap();
        let r = verify_run(&run, &VerifyOptions::default()).unwrap();
        assert!(!r.ok());
        let found: Vec<(&str, &str)> = r
            .problems
            .iter()
            .map(|p| (p.path.as_str(), p.problem))
            .collect();
        assert_eq!(
            found,
            vec![
                ("extra.txt", "unlisted"),
                ("logs/x.log", "missing"),
                ("samples/a.bin", "modified")
            ]
        );
    }

    /// The forgery of the review: delete the attestation, edit a sample, recompute its hash in
    /// the manifest. With a trusted key (or `require_signature`) that is a failure; without,
    /// it is "unsigned", never "verified".
    #[test]
    fn an_unsigned_forgery_fails_when_a_trusted_key_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let run = signed_run(dir.path(), Some(&key));
        writable(&run.join(ATTESTATION));
        std::fs::remove_file(run.join(ATTESTATION)).unwrap();
        flip(&run.join("samples/a.bin"));
        rehash_manifest(&run, "samples/a.bin");

        let r = verify_run(&run, &trusting(&[&key])).unwrap();
        assert!(r.problems.is_empty(), "the hashes were made to match");
        assert_eq!(r.signature, SignatureState::Unsigned);
        assert!(!r.ok(), "an unsigned run fails when a trusted key is given");
        assert!(
            r.signature_line().contains("UNSIGNED"),
            "{}",
            r.signature_line()
        );
        let required = VerifyOptions {
            require_signature: true,
            ..Default::default()
        };
        assert!(!verify_run(&run, &required).unwrap().ok());
        let r = verify_run(&run, &VerifyOptions::default()).unwrap();
        assert!(r.ok() && !r.verified(), "integrity only, and it says so");
        assert!(r.signature_line().contains("unsigned"));
    }

    #[test]
    fn another_key_and_a_stale_signature_fail_and_say_which() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let other = SigningKey::from_bytes(&[1u8; 32]);
        // Signed by another key.
        let run = signed_run(dir.path(), Some(&other));
        let r = verify_run(&run, &trusting(&[&key])).unwrap();
        assert!(!r.ok());
        assert!(
            matches!(
                &r.signature,
                SignatureState::Signed {
                    check: SignatureCheck::OtherKey { .. }
                }
            ),
            "{:?}",
            r.signature
        );
        assert!(r.signature_line().contains("another key"));
        // Several trusted keys: one of them is enough.
        assert!(verify_run(&run, &trusting(&[&key, &other])).unwrap().ok());
        // Without a trusted key: "signed by an untrusted key", not verified, and only passes
        // when no signature is required.
        let r = verify_run(&run, &VerifyOptions::default()).unwrap();
        assert!(r.ok() && !r.verified());
        assert!(
            r.signature_line().contains("untrusted key"),
            "{}",
            r.signature_line()
        );
        let required = VerifyOptions {
            require_signature: true,
            ..Default::default()
        };
        assert!(!verify_run(&run, &required).unwrap().ok());

        // A signature that does not cover the current manifest (edited after signing).
        let run = signed_run(dir.path(), Some(&key));
        flip(&run.join("samples/a.bin"));
        rehash_manifest(&run, "samples/a.bin");
        for opts in [trusting(&[&key]), VerifyOptions::default()] {
            let r = verify_run(&run, &opts).unwrap();
            assert!(r.problems.is_empty());
            assert!(!r.ok(), "a stale signature always fails");
            assert!(
                r.signature_line().contains("does not cover"),
                "{}",
                r.signature_line()
            );
        }
    }

    #[test]
    fn symlinks_are_reported_and_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"outside").unwrap();
        let run = signed_run(dir.path(), None);
        #[cfg(unix)]
        {
            // A link to a directory outside: reported, not walked.
            std::os::unix::fs::symlink(outside.path(), run.join("escape")).unwrap();
            let r = verify_run(&run, &VerifyOptions::default()).unwrap();
            let found: Vec<(&str, &str)> = r
                .problems
                .iter()
                .map(|p| (p.path.as_str(), p.problem))
                .collect();
            assert_eq!(found, vec![("escape", "symlink")]);
            std::fs::remove_file(run.join("escape")).unwrap();
            // A listed artifact replaced by a link to a file outside: refused, not hashed.
            writable(&run.join("logs/x.log"));
            std::fs::remove_file(run.join("logs/x.log")).unwrap();
            std::os::unix::fs::symlink(outside.path().join("secret"), run.join("logs/x.log"))
                .unwrap();
            let r = verify_run(&run, &VerifyOptions::default()).unwrap();
            assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
            assert_eq!(r.problems[0].problem, "refused");
            assert_eq!(r.problems[0].actual, None);
            assert!(
                r.problems[0]
                    .detail
                    .as_deref()
                    .unwrap()
                    .contains("symbolic link")
            );
        }
    }
}
