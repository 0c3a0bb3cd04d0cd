//! DSSE and in-toto interoperability with an implementation nobody here wrote: Python's
//! `securesystemslib` (DSSE envelopes, ed25519) and `in-toto-attestation` (the in-toto
//! Statement v1 schema), from PyPI.
//!
//! - A run signed by yardstick verifies with securesystemslib's DSSE verifier, and its payload
//!   parses and validates as an in-toto Statement v1; a tampered copy does not verify there.
//! - An envelope securesystemslib signed with its own ed25519 key over a run's manifest verifies
//!   with `yardstick verify --key`, and fails with another key.
//!
//! The interpreter is `$YARDSTICK_PYTHON` (CI makes a virtualenv with both packages), else
//! `python3` if it can import them. Without one the test says so; under
//! `YARDSTICK_REQUIRE_EXTERNAL=1` (CI) that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use yardstick_store::run::{RunWriter, ToolInfo};

const VERIFY_PY: &str = r#"
import base64, hashlib, json, sys
from google.protobuf import json_format
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

envelope_path, manifest_path, pub_hex, keyid = sys.argv[1:5]
with open(envelope_path) as f:
    data = json.load(f)
assert sorted(data) == ["payload", "payloadType", "signatures"], sorted(data)
for s in data["signatures"]:
    assert sorted(s) == ["keyid", "sig"], sorted(s)
env = Envelope.from_dict(data)
key = SSlibKey(keyid, "ed25519", "ed25519", {"public": pub_hex})
try:
    accepted = env.verify([key], 1)
except Exception as e:
    print("DSSE-REJECTED", type(e).__name__, e)
    sys.exit(3)
assert keyid in accepted
# The payload is an in-toto Statement v1: strict protobuf JSON parsing (unknown fields are
# errors) and the reference validator.
pb = json_format.Parse(env.payload.decode(), statement_pb2.Statement())
Statement.copy_from_pb(pb).validate()
st = json.loads(env.payload)
digest = hashlib.sha256(open(manifest_path, "rb").read()).hexdigest()
assert st["subject"][0]["name"] == "manifest.json"
assert st["subject"][0]["digest"]["sha256"] == digest, "statement names another manifest"
print("VERIFIED", st["predicateType"])
"#;

const SIGN_PY: &str = r#"
import hashlib, json, sys
from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner

manifest_path, out_envelope, out_pub = sys.argv[1:4]
signer = CryptoSigner.generate_ed25519()
digest = hashlib.sha256(open(manifest_path, "rb").read()).hexdigest()
statement = {
    "_type": "https://in-toto.io/Statement/v1",
    "subject": [{"name": "manifest.json", "digest": {"sha256": digest}}],
    "predicateType": "https://yardstick.dev/attestation/run/v1",
    "predicate": {"signed_by": "securesystemslib"},
}
env = Envelope(json.dumps(statement).encode(), "application/vnd.in-toto+json", {})
env.sign(signer)
with open(out_envelope, "w") as f:
    json.dump(env.to_dict(), f)
with open(out_pub, "w") as f:
    f.write(signer.public_key.keyval["public"])
print("SIGNED", signer.public_key.keyid)
"#;

/// A Python that can import securesystemslib and in-toto-attestation, or why there is none.
fn python(test: &str) -> Option<PathBuf> {
    crate::common::python_importing(
        "securesystemslib",
        test,
        "securesystemslib.dsse, securesystemslib.signer, in_toto_attestation.v1.statement",
        "a Python with securesystemslib[crypto] and in-toto-attestation from PyPI; set \
         YARDSTICK_PYTHON to its interpreter (.ci/run makes one)",
    )
}

fn yardstick() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yardstick"));
    c.env("NO_COLOR", "1").env_remove("YARDSTICK_TRUSTED_KEYS");
    c
}

fn tool() -> ToolInfo {
    ToolInfo {
        name: "yardstick".into(),
        version: "test".into(),
        git_commit: None,
    }
}

fn make_run(store: &Path, key: Option<&ed25519_dalek::SigningKey>) -> PathBuf {
    let mut w = RunWriter::create(&store.join("runs"), "interop", "spec: x\n", tool()).unwrap();
    w.set_env(b"{\"os\":\"linux\"}", "cpu-test").unwrap();
    w.add("samples/p0/r0.parquet", b"not really parquet", "samples")
        .unwrap();
    w.add("summary.json", b"{\"points\":[]}", "summary")
        .unwrap();
    let dir = w.dir().to_path_buf();
    w.complete(key).unwrap();
    dir
}

fn py(python: &Path, script: &str, args: &[&Path]) -> std::process::Output {
    Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn yardstick_envelopes_verify_with_securesystemslib_and_validate_as_in_toto_statements() {
    let Some(python) = python("yardstick_envelopes_verify_with_securesystemslib") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("keys/signing.key");
    let o = yardstick().arg("keygen").arg(&secret).output().unwrap();
    assert!(o.status.success());
    let key = yardstick_store::sign::load_signing_key(&secret).unwrap();
    let pub_hex = std::fs::read_to_string(dir.path().join("keys/signing.key.pub")).unwrap();
    let keyid = yardstick_store::sign::key_id(&key.verifying_key());
    let run = make_run(&dir.path().join("store"), Some(&key));
    let envelope = run.join("attestation.dsse.json");
    let manifest = run.join("manifest.json");

    let o = py(
        &python,
        VERIFY_PY,
        &[
            &envelope,
            &manifest,
            Path::new(pub_hex.trim()),
            Path::new(&keyid),
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("VERIFIED https://yardstick.dev/attestation/run/v1"),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The Python verifier is not vacuous: a payload altered after signing is rejected there.
    let mut env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&envelope).unwrap()).unwrap();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut st: serde_json::Value =
        serde_json::from_slice(&b64.decode(env["payload"].as_str().unwrap()).unwrap()).unwrap();
    st["predicate"]["name"] = "forged".into();
    env["payload"] = b64.encode(serde_json::to_vec(&st).unwrap()).into();
    let forged = dir.path().join("forged.dsse.json");
    std::fs::write(&forged, serde_json::to_vec(&env).unwrap()).unwrap();
    let o = py(
        &python,
        VERIFY_PY,
        &[
            &forged,
            &manifest,
            Path::new(pub_hex.trim()),
            Path::new(&keyid),
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn envelopes_signed_by_securesystemslib_verify_with_yardstick() {
    let Some(python) = python("envelopes_signed_by_securesystemslib_verify_with_yardstick") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let run = make_run(&store, None);
    let run_id = run.file_name().unwrap().to_string_lossy().into_owned();
    let py_pub = dir.path().join("python-signer.pub");
    let o = py(
        &python,
        SIGN_PY,
        &[
            &run.join("manifest.json"),
            &run.join("attestation.dsse.json"),
            &py_pub,
        ],
    );
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let verify = |extra: &[&str]| {
        yardstick()
            .args(["--json", "verify", &run_id, "--store"])
            .arg(&store)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = verify(&["--key", &py_pub.display().to_string()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(o.status.success(), "{v:#}");
    assert_eq!(v["verified"], true);
    assert_eq!(v["signature"]["check"]["status"], "verified");

    // Another trusted key: signed by another key, exit 1.
    let other = dir.path().join("other.key");
    assert!(
        yardstick()
            .arg("keygen")
            .arg(&other)
            .output()
            .unwrap()
            .status
            .success()
    );
    let o = verify(&["--key", &format!("{}.pub", other.display())]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["signature"]["check"]["status"], "other_key");
}
