//! `verify`: recompute every artifact's hash, find missing and unlisted files, check the
//! attestation, and say exactly what differs.

use std::path::Path;

use serde::Serialize;

use crate::StoreError;
use crate::fsutil::sha256_file;
use crate::run::{ATTESTATION, MANIFEST, RunStatus, read_manifest};
use crate::sign::{Envelope, SignatureCheck, check};

/// One finding about one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileProblem {
    /// Path relative to the run directory.
    pub path: String,
    /// `modified`, `missing` or `unlisted`.
    pub problem: &'static str,
    /// What the manifest says (sha256), when listed.
    pub expected: Option<String>,
    /// What is on disk (sha256), when present.
    pub actual: Option<String>,
}

/// The signature state of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SignatureState {
    /// No attestation file.
    Unsigned,
    /// An attestation exists; see the check.
    Signed {
        /// The result of checking it.
        check: SignatureCheck,
    },
}

/// The outcome of verifying a run.
#[derive(Debug, Clone, Serialize)]
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
}

impl VerifyReport {
    /// True when every hash matches, nothing is missing or unlisted, and a present signature
    /// verifies (and, when a trusted key was given, was made by it).
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
            && match &self.signature {
                SignatureState::Unsigned => true,
                SignatureState::Signed { check } => matches!(
                    check,
                    SignatureCheck::Valid {
                        trusted: None | Some(true),
                        ..
                    }
                ),
            }
    }
}

/// Verifies the run in `dir`, optionally against a trusted public key.
pub fn verify_run(
    dir: &Path,
    trusted: Option<&ed25519_dalek::VerifyingKey>,
) -> Result<VerifyReport, StoreError> {
    let manifest = read_manifest(dir)?;
    let mut problems = Vec::new();
    for a in &manifest.artifacts {
        match sha256_file(&dir.join(&a.path)) {
            Ok((sha, _)) if sha == a.sha256 => {}
            Ok((sha, _)) => problems.push(FileProblem {
                path: a.path.clone(),
                problem: "modified",
                expected: Some(a.sha256.clone()),
                actual: Some(sha),
            }),
            Err(_) => problems.push(FileProblem {
                path: a.path.clone(),
                problem: "missing",
                expected: Some(a.sha256.clone()),
                actual: None,
            }),
        }
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let p = entry?.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(dir)
                .expect("inside the run")
                .to_string_lossy()
                .replace('\\', "/");
            if rel != MANIFEST && rel != ATTESTATION && manifest.artifact(&rel).is_none() {
                let actual = sha256_file(&p).ok().map(|(s, _)| s);
                problems.push(FileProblem {
                    path: rel,
                    problem: "unlisted",
                    expected: None,
                    actual,
                });
            }
        }
    }
    problems.sort_by(|a, b| a.path.cmp(&b.path));
    let signature = match std::fs::read(dir.join(ATTESTATION)) {
        Err(_) => SignatureState::Unsigned,
        Ok(bytes) => {
            let manifest_bytes = std::fs::read(dir.join(MANIFEST))?;
            let check = match serde_json::from_slice::<Envelope>(&bytes) {
                Ok(env) => check(&env, &manifest_bytes, trusted),
                Err(e) => SignatureCheck::Invalid {
                    reason: format!("attestation is not a DSSE envelope: {e}"),
                },
            };
            SignatureState::Signed { check }
        }
    };
    Ok(VerifyReport {
        run_id: manifest.run_id.clone(),
        status: manifest.effective_status(),
        artifacts: manifest.artifacts.len(),
        problems,
        signature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{RunWriter, ToolInfo};

    #[test]
    fn finds_flipped_bytes_missing_and_unlisted_files_and_bad_signatures() {
        let dir = tempfile::tempdir().unwrap();
        let tool = ToolInfo {
            name: "yardstick".into(),
            version: "0".into(),
            git_commit: None,
        };
        let mut w = RunWriter::create(dir.path(), "v", "spec", tool).unwrap();
        w.add("samples/a.bin", &[1, 2, 3, 4], "samples").unwrap();
        w.add("logs/x.log", b"log", "log").unwrap();
        let key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
        let run = w.dir().to_path_buf();
        w.complete(Some(&key)).unwrap();

        let r = verify_run(&run, Some(&key.verifying_key())).unwrap();
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.artifacts, 3);

        let flip = |p: &std::path::Path| {
            let mut perm = std::fs::metadata(p).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(p, perm).unwrap();
            let mut b = std::fs::read(p).unwrap();
            b[0] ^= 0xff;
            std::fs::write(p, b).unwrap();
        };
        flip(&run.join("samples/a.bin"));
        std::fs::remove_file(run.join("logs/x.log")).unwrap_or_else(|_| {
            let mut perm = std::fs::metadata(run.join("logs/x.log"))
                .unwrap()
                .permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(run.join("logs/x.log"), perm).unwrap();
            std::fs::remove_file(run.join("logs/x.log")).unwrap();
        });
        std::fs::write(run.join("extra.txt"), b"?").unwrap();
        let r = verify_run(&run, None).unwrap();
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

        // A different trusted key: the signature is not from it.
        let other = ed25519_dalek::SigningKey::from_bytes(&[1u8; 32]);
        let r = verify_run(&run, Some(&other.verifying_key())).unwrap();
        assert!(matches!(
            r.signature,
            SignatureState::Signed {
                check: SignatureCheck::Invalid { .. }
            }
        ));

        // Editing the manifest breaks the signature.
        flip(&run.join(MANIFEST));
        assert!(verify_run(&run, None).is_err() || !verify_run(&run, None).unwrap().ok());

        // Deleting the attestation: unsigned.
        let mut w = RunWriter::create(
            dir.path(),
            "v2",
            "spec",
            ToolInfo {
                name: "y".into(),
                version: "0".into(),
                git_commit: None,
            },
        )
        .unwrap();
        w.add("a", b"1", "other").unwrap();
        let run2 = w.dir().to_path_buf();
        w.complete(Some(&key)).unwrap();
        std::fs::remove_file(run2.join(ATTESTATION)).unwrap();
        let r = verify_run(&run2, None).unwrap();
        assert_eq!(r.signature, SignatureState::Unsigned);
        assert!(r.ok());
    }
}
