//! Signed provenance: an in-toto Statement (v1) whose subject is the run's manifest, wrapped in a
//! DSSE envelope and signed with ed25519.
//!
//! Key files are 32 raw secret bytes, hex-encoded, in a file with mode 0600; the public key sits
//! beside it with the `.pub` extension. The key id is the first 16 hex digits of the sha256 of the
//! public key.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer, Verifier};
/// The ed25519 key types signing and verification take.
pub use ed25519_dalek::{SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};

use crate::StoreError;
use crate::fsutil::sha256_bytes;
use crate::layout::MANIFEST;

/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// in-toto Statement type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate type of a yardstick run attestation.
pub const PREDICATE_TYPE: &str = "https://yardstick.dev/attestation/run/v1";

/// A DSSE envelope, exactly as the DSSE specification has it: `payloadType`, `payload` and
/// `signatures` of `{keyid, sig}`, and nothing else (unknown fields are refused, so nothing that
/// no signature covers can influence a verifier).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    /// Key id, a hint only: trust is decided by which trusted public key verifies `sig`, never
    /// by this field (see module docs for how yardstick derives it).
    #[serde(default)]
    pub keyid: String,
    /// Base64 ed25519 signature over the PAE.
    pub sig: String,
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

/// One subject of an in-toto Statement: a named file and its sha256.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Subject {
    /// File name (relative to the run directory).
    pub name: String,
    /// Digests by algorithm; yardstick uses `sha256`.
    pub digest: std::collections::BTreeMap<String, String>,
}

impl Subject {
    /// A subject with a sha256 digest.
    pub fn sha256(name: &str, sha256: &str) -> Self {
        Subject {
            name: name.into(),
            digest: [("sha256".to_string(), sha256.to_string())].into(),
        }
    }
}

/// An in-toto Statement v1: exactly these four fields.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// What the statement is about.
    pub subject: Vec<Subject>,
    /// What kind of claim the predicate makes.
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The claim.
    pub predicate: serde_json::Value,
}

impl Statement {
    /// The sha256 the statement records for `name`.
    pub fn digest_of(&self, name: &str) -> Option<&str> {
        self.subject
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.digest.get("sha256"))
            .map(String::as_str)
    }
}

/// Signs an in-toto statement into a DSSE envelope.
pub fn sign_statement(statement: &Statement, key: &SigningKey) -> Envelope {
    let payload = serde_json::to_vec(statement).expect("statement is JSON");
    let sig: Signature = key.sign(&pae(PAYLOAD_TYPE, &payload));
    Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: B64.encode(&payload),
        signatures: vec![EnvelopeSignature {
            keyid: key_id(&key.verifying_key()),
            sig: B64.encode(sig.to_bytes()),
        }],
    }
}

/// Builds the in-toto statement for a manifest and signs it.
pub fn attest(manifest_bytes: &[u8], predicate: serde_json::Value, key: &SigningKey) -> Envelope {
    let statement = Statement {
        statement_type: STATEMENT_TYPE.into(),
        subject: vec![Subject::sha256(MANIFEST, &sha256_bytes(manifest_bytes))],
        predicate_type: PREDICATE_TYPE.into(),
        predicate,
    };
    sign_statement(&statement, key)
}

/// A public key a verifier trusts, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustedKey {
    /// The key.
    pub key: VerifyingKey,
    /// Its yardstick key id.
    pub keyid: String,
    /// The file it was read from (or another description).
    pub source: String,
}

/// The public keys a verifier trusts: given with `--key` (repeatable), read from a directory of
/// `.pub` files, or a store's own trusted keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustSet {
    keys: Vec<TrustedKey>,
}

impl TrustSet {
    /// No trusted keys.
    pub fn new() -> Self {
        TrustSet::default()
    }

    /// Trusts one key (a key already present is not added twice).
    pub fn add(&mut self, key: VerifyingKey, source: impl Into<String>) {
        if self.keys.iter().any(|k| k.key == key) {
            return;
        }
        self.keys.push(TrustedKey {
            keyid: key_id(&key),
            key,
            source: source.into(),
        });
    }

    /// Trusts the public key in `path` (64 hex digits, as `yardstick keygen` writes).
    pub fn add_file(&mut self, path: &Path) -> Result<(), StoreError> {
        let key = load_verifying_key(path)?;
        self.add(key, path.display().to_string());
        Ok(())
    }

    /// Trusts every `*.pub` file in `dir`; other files are ignored. A missing directory or a
    /// `.pub` file that is not a public key is an error (a typo must not silently trust
    /// nothing). Returns how many keys were read.
    pub fn add_dir(&mut self, dir: &Path) -> Result<usize, StoreError> {
        let rd = std::fs::read_dir(dir).map_err(|e| {
            StoreError::Invalid(format!(
                "cannot read the trusted-key directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pub") && p.is_file())
            .collect();
        files.sort();
        for f in &files {
            self.add_file(f)?;
        }
        Ok(files.len())
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[TrustedKey] {
        &self.keys
    }

    /// Whether no key is trusted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The trusted key with this key id.
    pub fn by_keyid(&self, keyid: &str) -> Option<&TrustedKey> {
        self.keys.iter().find(|k| k.keyid == keyid)
    }
}

/// What checking an envelope found.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SignatureCheck {
    /// A trusted key verifies a signature over a statement that covers the subject.
    Verified {
        /// Key id of the trusted key that verified it.
        keyid: String,
        /// Where that key came from.
        key_source: String,
    },
    /// The statement covers the subject, but no key was trusted, so the signature could not be
    /// checked: "signed by an untrusted key", never "verified".
    Untrusted {
        /// The key ids the envelope names (hints, not proof).
        keyids: Vec<String>,
    },
    /// Trusted keys were given and none of them made any signature in the envelope.
    OtherKey {
        /// The key ids the envelope names.
        keyids: Vec<String>,
    },
    /// The envelope is malformed, its statement does not cover the subject, or a signature
    /// that names a trusted key does not verify.
    Invalid {
        /// Why.
        reason: String,
    },
}

impl SignatureCheck {
    /// Whether the check is a verification by a trusted key.
    pub fn is_verified(&self) -> bool {
        matches!(self, SignatureCheck::Verified { .. })
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            SignatureCheck::Verified { keyid, key_source } => {
                format!("verified: signed by trusted key {keyid} ({key_source})")
            }
            SignatureCheck::Untrusted { keyids } => format!(
                "signed by an untrusted key (key id {}): NOT verified; pass the signer's public key with --key or --trusted DIR",
                list_or_none(keyids)
            ),
            SignatureCheck::OtherKey { keyids } => format!(
                "signed by another key (key id {}), not by any trusted key",
                list_or_none(keyids)
            ),
            SignatureCheck::Invalid { reason } => format!("INVALID: {reason}"),
        }
    }
}

/// The signature state of a run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
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

fn list_or_none(ids: &[String]) -> String {
    let ids: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    if ids.is_empty() {
        "not given".into()
    } else {
        ids.join(", ")
    }
}

/// Decodes base64 as DSSE allows: standard or URL-safe alphabet, padded or not.
fn b64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    B64.decode(s)
        .or_else(|_| URL_SAFE.decode(s))
        .or_else(|_| STANDARD_NO_PAD.decode(s))
        .or_else(|_| URL_SAFE_NO_PAD.decode(s))
        .ok()
}

/// Why an envelope does not parse strictly.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    /// Not JSON with exactly the DSSE fields.
    #[error(
        "not a DSSE envelope (payloadType, payload, signatures[{{keyid, sig}}] and nothing else): {0}"
    )]
    NotDsse(serde_json::Error),
    /// A payload type other than yardstick's.
    #[error("payloadType is `{0}`, expected `{PAYLOAD_TYPE}`")]
    PayloadType(String),
    /// The payload is not base64.
    #[error("the payload is not base64")]
    PayloadNotBase64,
    /// The payload is not an in-toto Statement v1.
    #[error("the payload is not an in-toto Statement v1: {0}")]
    NotStatement(serde_json::Error),
    /// A statement type other than in-toto's v1.
    #[error("the statement's _type is `{0}`, expected `{STATEMENT_TYPE}`")]
    StatementType(String),
    /// No signature at all.
    #[error("the envelope has no signature")]
    Unsigned,
    /// A signature that is not one.
    #[error("signature with key id `{0}` is not a base64 ed25519 signature")]
    BadSignature(String),
}

/// Parses an envelope strictly: exactly the DSSE fields, yardstick's payload type, a base64
/// payload that is an in-toto Statement v1, and at least one well-formed signature.
pub fn parse_envelope(bytes: &[u8]) -> Result<(Envelope, Statement), EnvelopeError> {
    let envelope: Envelope = serde_json::from_slice(bytes).map_err(EnvelopeError::NotDsse)?;
    if envelope.payload_type != PAYLOAD_TYPE {
        return Err(EnvelopeError::PayloadType(envelope.payload_type));
    }
    let payload = b64_decode(&envelope.payload).ok_or(EnvelopeError::PayloadNotBase64)?;
    let statement: Statement =
        serde_json::from_slice(&payload).map_err(EnvelopeError::NotStatement)?;
    if statement.statement_type != STATEMENT_TYPE {
        return Err(EnvelopeError::StatementType(statement.statement_type));
    }
    if envelope.signatures.is_empty() {
        return Err(EnvelopeError::Unsigned);
    }
    for s in &envelope.signatures {
        if b64_decode(&s.sig).is_none_or(|b| b.len() != 64) {
            return Err(EnvelopeError::BadSignature(s.keyid.clone()));
        }
    }
    Ok((envelope, statement))
}

/// Checks an envelope: it must parse strictly, its statement must have `predicate_type` and
/// name `subject` with digest `subject_sha256`, and a trusted key must verify a signature.
/// Key ids are hints: every trusted key is tried against every signature.
pub fn check_envelope(
    bytes: &[u8],
    predicate_type: &str,
    subject: &str,
    subject_sha256: &str,
    trust: &TrustSet,
) -> (SignatureCheck, Option<Statement>) {
    let invalid = |r: String| (SignatureCheck::Invalid { reason: r }, None);
    let (envelope, statement) = match parse_envelope(bytes) {
        Ok(x) => x,
        Err(e) => return invalid(e.to_string()),
    };
    if statement.predicate_type != predicate_type {
        return invalid(format!(
            "the statement's predicateType is `{}`, expected `{predicate_type}`",
            statement.predicate_type
        ));
    }
    match statement.digest_of(subject) {
        None => {
            return invalid(format!(
                "the statement does not name {subject} with a sha256 digest"
            ));
        }
        Some(d) if d != subject_sha256 => {
            return invalid(format!(
                "the signature does not cover the current {subject} (it was changed after signing)"
            ));
        }
        Some(_) => {}
    }
    let keyids: Vec<String> = envelope
        .signatures
        .iter()
        .map(|s| s.keyid.clone())
        .collect();
    if trust.is_empty() {
        return (SignatureCheck::Untrusted { keyids }, Some(statement));
    }
    let payload = b64_decode(&envelope.payload).expect("checked by parse_envelope");
    let message = pae(&envelope.payload_type, &payload);
    for s in &envelope.signatures {
        let bytes: [u8; 64] = b64_decode(&s.sig)
            .and_then(|b| b.try_into().ok())
            .expect("checked by parse_envelope");
        let sig = Signature::from_bytes(&bytes);
        if let Some(k) = trust
            .keys()
            .iter()
            .find(|k| k.key.verify(&message, &sig).is_ok())
        {
            return (
                SignatureCheck::Verified {
                    keyid: k.keyid.clone(),
                    key_source: k.source.clone(),
                },
                Some(statement),
            );
        }
    }
    if let Some(k) = keyids.iter().find_map(|id| trust.by_keyid(id)) {
        return invalid(format!(
            "the signature names trusted key {} but does not verify with it (the envelope was altered)",
            k.keyid
        ));
    }
    (SignatureCheck::OtherKey { keyids }, Some(statement))
}

/// Checks a run attestation against the manifest bytes.
pub fn check(envelope_bytes: &[u8], manifest_bytes: &[u8], trust: &TrustSet) -> SignatureCheck {
    check_envelope(
        envelope_bytes,
        PREDICATE_TYPE,
        MANIFEST,
        &sha256_bytes(manifest_bytes),
        trust,
    )
    .0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(keys: &[&VerifyingKey]) -> TrustSet {
        let mut t = TrustSet::new();
        for k in keys {
            t.add(**k, "test");
        }
        t
    }

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
        let env = serde_json::to_vec(&attest(manifest, serde_json::json!({"a": 1}), &key)).unwrap();
        assert_eq!(
            check(&env, manifest, &trust(&[&vk])),
            SignatureCheck::Verified {
                keyid: id.clone(),
                key_source: "test".into()
            }
        );
        // No trusted key: never "verified".
        assert_eq!(
            check(&env, manifest, &TrustSet::new()),
            SignatureCheck::Untrusted {
                keyids: vec![id.clone()]
            }
        );
        // Another manifest: the signature does not cover it, whatever the keys.
        for t in [TrustSet::new(), trust(&[&vk])] {
            let c = check(&env, b"{}", &t);
            assert!(
                matches!(&c, SignatureCheck::Invalid { reason } if reason.contains("does not cover")),
                "{c:?}"
            );
        }
        // A forged payload naming the manifest, keeping the old signature.
        let mut forged: Envelope = serde_json::from_slice(&env).unwrap();
        let mut st: Statement =
            serde_json::from_slice(&B64.decode(&forged.payload).unwrap()).unwrap();
        st.predicate = serde_json::json!({"a": 2});
        forged.payload = B64.encode(serde_json::to_vec(&st).unwrap());
        let c = check(
            &serde_json::to_vec(&forged).unwrap(),
            manifest,
            &trust(&[&vk]),
        );
        assert!(
            matches!(&c, SignatureCheck::Invalid { reason } if reason.contains("altered")),
            "{c:?}"
        );
        // Another trusted key: signed by another key.
        let other = SigningKey::from_bytes(&[7u8; 32]);
        assert_eq!(
            check(&env, manifest, &trust(&[&other.verifying_key()])),
            SignatureCheck::OtherKey {
                keyids: vec![id.clone()]
            }
        );
        // Several trusted keys: any one that verifies is enough; the key id is only a hint.
        let mut renamed: Envelope = serde_json::from_slice(&env).unwrap();
        renamed.signatures[0].keyid = "whatever".into();
        assert!(
            check(
                &serde_json::to_vec(&renamed).unwrap(),
                manifest,
                &trust(&[&other.verifying_key(), &vk])
            )
            .is_verified()
        );
        // The PAE is the one DSSE specifies.
        assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab".to_vec());
    }

    #[test]
    fn the_envelope_is_exactly_dsse() {
        let key = SigningKey::from_bytes(&[3u8; 32]);
        let manifest = b"m";
        let env = attest(manifest, serde_json::json!({}), &key);
        let v = serde_json::to_value(&env).unwrap();
        let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort();
        assert_eq!(fields, ["payload", "payloadType", "signatures"]);
        let mut sig_fields: Vec<&str> = v["signatures"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        sig_fields.sort();
        assert_eq!(sig_fields, ["keyid", "sig"]);
        // An extra field anywhere is refused: a verifier must not be steered by unsigned data.
        let mut extra = v.clone();
        extra["signatures"][0]["public_key"] = "AAAA".into();
        let c = check(
            &serde_json::to_vec(&extra).unwrap(),
            manifest,
            &trust(&[&key.verifying_key()]),
        );
        assert!(matches!(c, SignatureCheck::Invalid { .. }), "{c:?}");
        let mut extra = v.clone();
        extra["note"] = "x".into();
        assert!(parse_envelope(&serde_json::to_vec(&extra).unwrap()).is_err());
        // A statement with an extra top-level field is not an in-toto Statement v1.
        let mut st: serde_json::Value =
            serde_json::from_slice(&B64.decode(env.payload.as_bytes()).unwrap()).unwrap();
        st["extra"] = 1.into();
        let payload = serde_json::to_vec(&st).unwrap();
        let mut e2 = env.clone();
        e2.payload = B64.encode(&payload);
        assert!(parse_envelope(&serde_json::to_vec(&e2).unwrap()).is_err());
        // URL-safe base64 is accepted, as DSSE allows.
        let mut e3 = env.clone();
        e3.payload =
            base64::engine::general_purpose::URL_SAFE.encode(B64.decode(&env.payload).unwrap());
        assert!(
            check(
                &serde_json::to_vec(&e3).unwrap(),
                manifest,
                &trust(&[&key.verifying_key()])
            )
            .is_verified()
        );
    }

    #[test]
    fn a_trust_directory_reads_every_pub_file_and_refuses_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = keygen(&dir.path().join("a.key")).unwrap();
        let (_b, _) = keygen(&dir.path().join("b.key")).unwrap();
        let mut t = TrustSet::new();
        assert_eq!(t.add_dir(dir.path()).unwrap(), 2);
        assert_eq!(t.keys().len(), 2);
        t.add_file(&a).unwrap();
        assert_eq!(t.keys().len(), 2, "the same key is trusted once");
        std::fs::write(dir.path().join("c.pub"), "not a key").unwrap();
        assert!(TrustSet::new().add_dir(dir.path()).is_err());
        assert!(TrustSet::new().add_dir(&dir.path().join("nope")).is_err());
    }
}
