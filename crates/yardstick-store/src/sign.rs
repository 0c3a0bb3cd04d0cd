//! Signed provenance: an in-toto Statement (v1) whose subject is the run's manifest, wrapped in a
//! DSSE envelope and signed with ed25519.
//!
//! Key files are 32 raw secret bytes, hex-encoded, in a file with mode 0600; the public key sits
//! beside it with the `.pub` extension. The key id is the first 16 hex digits of the sha256 of the
//! public key.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::fsutil::sha256_bytes;

/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// in-toto Statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate type of a yardstick run attestation.
pub const PREDICATE_TYPE: &str = "https://yardstick.dev/attestation/run/v1";

/// A DSSE envelope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Envelope {
    /// Always [`PAYLOAD_TYPE`].
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Base64 of the serialised statement.
    pub payload: String,
    /// Signatures over the pre-authentication encoding.
    pub signatures: Vec<EnvelopeSignature>,
}

/// One DSSE signature.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EnvelopeSignature {
    /// Key id (see module docs).
    pub keyid: String,
    /// Base64 ed25519 signature.
    pub sig: String,
    /// Base64 public key, so a verifier without the key file can still check integrity (trust
    /// requires comparing the key id with a known key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
}

/// DSSE pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    v.extend_from_slice(payload);
    v
}

/// The key id of a public key.
pub fn key_id(key: &VerifyingKey) -> String {
    sha256_bytes(key.as_bytes())[..16].to_string()
}

/// Creates a new key pair at `path` (secret, mode 0600) and `path.pub`. Refuses to overwrite.
pub fn keygen(path: &Path) -> Result<(PathBuf, String), StoreError> {
    if path.exists() {
        return Err(StoreError::Invalid(format!(
            "{} already exists; refusing to overwrite a signing key",
            path.display()
        )));
    }
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| StoreError::Invalid(format!("no randomness: {e}")))?;
    let key = SigningKey::from_bytes(&secret);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_private(path, hex::encode(secret).as_bytes())?;
    let public = pub_path(path);
    crate::fsutil::write_atomic(
        &public,
        hex::encode(key.verifying_key().as_bytes()).as_bytes(),
    )?;
    Ok((public, key_id(&key.verifying_key())))
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

/// The public-key file next to a secret key file.
pub fn pub_path(secret: &Path) -> PathBuf {
    let mut s = secret.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// Expands a leading `~/` to the home directory.
pub fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// Loads a secret key file.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, StoreError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        StoreError::Invalid(format!("cannot read signing key {}: {e}", path.display()))
    })?;
    let bytes: [u8; 32] = hex::decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            StoreError::Invalid(format!(
                "{} is not a yardstick signing key (64 hex digits)",
                path.display()
            ))
        })?;
    Ok(SigningKey::from_bytes(&bytes))
}

/// Loads a public key file (`.pub`: 64 hex digits).
pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey, StoreError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| StoreError::Invalid(format!("cannot read key {}: {e}", path.display())))?;
    let bytes: [u8; 32] = hex::decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| StoreError::Invalid(format!("{} is not a public key", path.display())))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|e| StoreError::Invalid(format!("{}: {e}", path.display())))
}

/// Builds the in-toto statement for a manifest and signs it.
pub fn attest(manifest_bytes: &[u8], predicate: serde_json::Value, key: &SigningKey) -> Envelope {
    let statement = serde_json::json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": "manifest.json", "digest": {"sha256": sha256_bytes(manifest_bytes)}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    });
    let payload = serde_json::to_vec(&statement).expect("statement is JSON");
    let sig: Signature = key.sign(&pae(PAYLOAD_TYPE, &payload));
    Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: B64.encode(&payload),
        signatures: vec![EnvelopeSignature {
            keyid: key_id(&key.verifying_key()),
            sig: B64.encode(sig.to_bytes()),
            public_key: Some(B64.encode(key.verifying_key().as_bytes())),
        }],
    }
}

/// What checking an envelope found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SignatureCheck {
    /// Valid signature over a statement whose subject digest matches the manifest.
    Valid {
        /// Key id that signed.
        keyid: String,
        /// Whether the key is the trusted key given by the caller (`None`: no key given).
        trusted: Option<bool>,
    },
    /// The signature does not verify, or the statement does not name this manifest.
    Invalid {
        /// Why.
        reason: String,
    },
}

/// Verifies an envelope against the manifest bytes, optionally against a trusted key.
pub fn check(
    envelope: &Envelope,
    manifest_bytes: &[u8],
    trusted: Option<&VerifyingKey>,
) -> SignatureCheck {
    let invalid = |r: &str| SignatureCheck::Invalid {
        reason: r.to_string(),
    };
    if envelope.payload_type != PAYLOAD_TYPE {
        return invalid("unexpected payload type");
    }
    let Ok(payload) = B64.decode(&envelope.payload) else {
        return invalid("payload is not base64");
    };
    let Ok(statement) = serde_json::from_slice::<serde_json::Value>(&payload) else {
        return invalid("payload is not a JSON statement");
    };
    let digest = statement["subject"][0]["digest"]["sha256"]
        .as_str()
        .unwrap_or("");
    if digest != sha256_bytes(manifest_bytes) {
        return invalid(
            "the attestation names a different manifest (manifest.json changed after signing)",
        );
    }
    let Some(s) = envelope.signatures.first() else {
        return invalid("no signature in the envelope");
    };
    let key = match (trusted, &s.public_key) {
        (Some(k), _) => *k,
        (None, Some(pk)) => match B64
            .decode(pk)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        {
            Some(k) => k,
            None => return invalid("embedded public key is malformed"),
        },
        (None, None) => return invalid("no key to verify with (pass the public key)"),
    };
    let Some(sig) = B64
        .decode(&s.sig)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b))
    else {
        return invalid("signature is malformed");
    };
    match key.verify(&pae(&envelope.payload_type, &payload), &sig) {
        Ok(()) => SignatureCheck::Valid {
            keyid: key_id(&key),
            trusted: trusted.map(|t| key_id(t) == s.keyid),
        },
        Err(_) if trusted.is_some() => {
            invalid("the signature does not verify with the trusted key")
        }
        Err(_) => invalid("the signature does not verify"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_and_verify_round_trip_and_tamper() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        let (public, id) = keygen(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        assert!(keygen(&path).is_err(), "never overwrites a key");
        let key = load_signing_key(&path).unwrap();
        let vk = load_verifying_key(&public).unwrap();
        assert_eq!(key_id(&vk), id);
        let manifest = br#"{"run_id":"x"}"#;
        let env = attest(manifest, serde_json::json!({"a": 1}), &key);
        assert_eq!(
            check(&env, manifest, Some(&vk)),
            SignatureCheck::Valid {
                keyid: id.clone(),
                trusted: Some(true)
            }
        );
        assert!(matches!(
            check(&env, b"{}", None),
            SignatureCheck::Invalid { .. }
        ));
        let mut forged = env.clone();
        forged.payload = B64.encode(br#"{"subject":[]}"#);
        assert!(matches!(
            check(&forged, manifest, Some(&vk)),
            SignatureCheck::Invalid { .. }
        ));
        // Another key does not verify.
        let other = SigningKey::from_bytes(&[7u8; 32]);
        assert!(matches!(
            check(&env, manifest, Some(&other.verifying_key())),
            SignatureCheck::Invalid { .. }
        ));
        // The PAE is the one DSSE specifies.
        assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab".to_vec());
    }
}
