//! A store's trust policy: which public keys it trusts and whether it refuses runs they did
//! not sign.
//!
//! `<store>/trust/` holds the trusted public keys (`<keyid>.pub`, as `yardstick keygen` writes
//! them) and `policy.json` (`{"schema": "yardstick.trust/v1", "require_signature": true}`). A
//! team pins the keys of its CI signers here; with `require_signature` the store admits only
//! runs a trusted key signed ([`admit`]): `yardstick run` refuses to start a run it could not
//! sign with a trusted key, `baseline save` refuses an unverified run, and `verify` of a run in
//! the store uses these keys. The team server admits pushed runs through the same check.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::fsutil::write_atomic;
use crate::sign::{TrustSet, TrustedKey, key_id, load_verifying_key};
use crate::verify::{VerifyOptions, VerifyReport, verify_run};

/// The trust directory inside a store.
pub const TRUST_DIR: &str = "trust";
/// The policy file inside the trust directory.
pub const POLICY_FILE: &str = "policy.json";
/// Schema identifier of the policy file.
pub const POLICY_SCHEMA: &str = "yardstick.trust/v1";

/// `policy.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// [`POLICY_SCHEMA`].
    pub schema: String,
    /// Refuse runs that no trusted key signed.
    pub require_signature: bool,
}

/// A store's trusted keys and policy.
#[derive(Debug, Clone)]
pub struct StoreTrust {
    /// The trust directory (`<store>/trust`).
    pub dir: PathBuf,
    /// The trusted keys.
    pub keys: TrustSet,
    /// Whether the store refuses runs no trusted key signed.
    pub require_signature: bool,
}

/// What a run lacks for a store that requires a trusted signature (the message completes
/// "the run ...").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotAdmitted {
    /// Signed, but not by a trusted key.
    #[error("signs with a key the store does not trust")]
    Untrusted,
    /// Not signed.
    #[error("does not sign")]
    Unsigned,
}

impl StoreTrust {
    /// Whether the store admits a run signed by `signer` (`None`: unsigned): always, unless it
    /// requires a signature, and then only by a key it trusts. The error says which of the two
    /// the run lacks.
    pub fn admits(&self, signer: Option<&ed25519_dalek::VerifyingKey>) -> Result<(), NotAdmitted> {
        if !self.require_signature {
            return Ok(());
        }
        match signer {
            Some(k) if self.keys.keys().iter().any(|t| &t.key == k) => Ok(()),
            Some(_) => Err(NotAdmitted::Untrusted),
            None => Err(NotAdmitted::Unsigned),
        }
    }

    /// The verify options this store imposes.
    pub fn verify_options(&self) -> VerifyOptions {
        VerifyOptions {
            trust: self.keys.clone(),
            require_signature: self.require_signature,
        }
    }
}

/// Reads a store's trust policy; a store without one trusts no key and requires nothing.
pub fn load(store: &Path) -> Result<StoreTrust, StoreError> {
    let dir = store.join(TRUST_DIR);
    let mut keys = TrustSet::new();
    if dir.is_dir() {
        keys.add_dir(&dir)?;
    }
    let require_signature = match std::fs::read(dir.join(POLICY_FILE)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(e.into()),
        Ok(b) => {
            let p: Policy = serde_json::from_slice(&b).map_err(|e| {
                StoreError::Invalid(format!(
                    "{} is not a trust policy: {e}",
                    dir.join(POLICY_FILE).display()
                ))
            })?;
            p.require_signature
        }
    };
    Ok(StoreTrust {
        dir,
        keys,
        require_signature,
    })
}

/// Trusts the public key in `public` in this store (copied to `trust/<keyid>.pub`).
pub fn add_key(store: &Path, public: &Path) -> Result<TrustedKey, StoreError> {
    let key = load_verifying_key(public)?;
    let id = key_id(&key);
    let dest = store.join(TRUST_DIR).join(format!("{id}.pub"));
    write_atomic(&dest, hex::encode(key.as_bytes()).as_bytes())?;
    Ok(TrustedKey {
        key,
        keyid: id,
        source: dest.display().to_string(),
    })
}

/// Stops trusting the key with this key id; returns whether it was trusted.
pub fn remove_key(store: &Path, keyid: &str) -> Result<bool, StoreError> {
    let trust = load(store)?;
    let Some(k) = trust.keys.by_keyid(keyid) else {
        return Ok(false);
    };
    std::fs::remove_file(&k.source)?;
    Ok(true)
}

/// Sets whether the store refuses runs that no trusted key signed. Requiring signatures with no
/// trusted key is refused: the store could then admit nothing.
pub fn set_required(store: &Path, required: bool) -> Result<(), StoreError> {
    let trust = load(store)?;
    if required && trust.keys.is_empty() {
        return Err(StoreError::Invalid(
            "the store trusts no key yet; add one with `yardstick trust add KEY.pub` first".into(),
        ));
    }
    let p = Policy {
        schema: POLICY_SCHEMA.into(),
        require_signature: required,
    };
    write_atomic(
        &trust.dir.join(POLICY_FILE),
        &serde_json::to_vec_pretty(&p).expect("policy is JSON"),
    )?;
    Ok(())
}

/// Verifies a run under the store's policy: `Ok` with the report when the store may take it
/// (every hash matches and, if the store requires it, a trusted key signed it), otherwise
/// [`StoreError::Refused`] saying why.
pub fn admit(store: &Path, run_dir: &Path) -> Result<VerifyReport, StoreError> {
    let trust = load(store)?;
    let report = verify_run(run_dir, &trust.verify_options())?;
    if report.ok() {
        return Ok(report);
    }
    let why = if !report.problems.is_empty() {
        let p = &report.problems[0];
        format!(
            "{} artifact problem(s), first: {} {}",
            report.problems.len(),
            p.problem,
            p.path
        )
    } else {
        report.signature_line()
    };
    Err(StoreError::Refused(format!(
        "the store refuses run {}: {why}",
        report.run_id
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{RunWriter, ToolInfo};
    use ed25519_dalek::SigningKey;

    fn run(store: &Path, key: Option<&SigningKey>) -> PathBuf {
        let tool = ToolInfo {
            name: "yardstick".into(),
            version: "0".into(),
            git_commit: None,
        };
        let mut w = RunWriter::create(&store.join("runs"), "t", "spec", tool).unwrap();
        w.add("samples/a", b"1", "samples").unwrap();
        let d = w.dir().to_path_buf();
        w.complete(key).unwrap();
        d
    }

    #[test]
    fn a_store_that_requires_signatures_admits_only_runs_its_keys_signed() {
        let store = tempfile::tempdir().unwrap();
        let s = store.path();
        let ci = SigningKey::from_bytes(&[1u8; 32]);
        let other = SigningKey::from_bytes(&[2u8; 32]);
        let unsigned = run(s, None);
        let by_ci = run(s, Some(&ci));
        let by_other = run(s, Some(&other));
        // No policy: everything intact is admitted.
        for r in [&unsigned, &by_ci, &by_other] {
            assert!(admit(s, r).is_ok());
        }
        assert!(set_required(s, true).is_err(), "no key trusted yet");
        let pubf = s.join("ci.pub");
        std::fs::write(&pubf, hex::encode(ci.verifying_key().as_bytes())).unwrap();
        let k = add_key(s, &pubf).unwrap();
        set_required(s, true).unwrap();
        let trust = load(s).unwrap();
        assert!(trust.require_signature);
        // Before anything runs, `yardstick run` asks whether the spec's key would be admitted.
        assert_eq!(trust.admits(Some(&ci.verifying_key())), Ok(()));
        assert_eq!(
            trust.admits(Some(&other.verifying_key())),
            Err(NotAdmitted::Untrusted)
        );
        assert_eq!(trust.admits(None), Err(NotAdmitted::Unsigned));
        assert_eq!(
            NotAdmitted::Untrusted.to_string(),
            "signs with a key the store does not trust"
        );
        assert_eq!(NotAdmitted::Unsigned.to_string(), "does not sign");
        assert!(admit(s, &by_ci).unwrap().verified());
        for r in [&unsigned, &by_other] {
            let e = admit(s, r).unwrap_err();
            assert!(matches!(e, StoreError::Refused(_)), "{e}");
        }
        let e = admit(s, &unsigned).unwrap_err().to_string();
        assert!(e.contains("UNSIGNED"), "{e}");
        let e = admit(s, &by_other).unwrap_err().to_string();
        assert!(e.contains("another key"), "{e}");
        assert!(remove_key(s, &k.keyid).unwrap());
        assert!(!remove_key(s, &k.keyid).unwrap());
        set_required(s, false).unwrap();
        assert!(admit(s, &unsigned).is_ok());
    }
}
