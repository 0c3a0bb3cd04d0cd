//! A store whose trust policy requires signatures (`yardstick trust require on`) is enforced by
//! the library calls that write runs into it, not only by the command line: `execute` (and so
//! `gate --confirm`'s re-run, which goes through it) and the importers refuse a run no trusted
//! key would sign, before anything is stored, and admit one a trusted key signs.

use std::path::{Path, PathBuf};

use yardstick_run::import::{EnvSource, ImportFile, ImportOptions, Tool, import};
use yardstick_run::{RunError, Writer, execute};
use yardstick_store::trust::Refusal;
use yardstick_store::{RunStatus, ToolInfo};

use crate::execute::{checked, files, options, serve_spec};

/// Two key pairs under `root/keys` (`ci`, `other`) and a store under `root` that trusts `ci`'s
/// public key and requires signatures: (ci's secret key, other's, the store).
fn strict_store(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ci = root.join("keys/ci.key");
    let other = root.join("keys/other.key");
    yardstick_store::sign::keygen(&ci).unwrap();
    yardstick_store::sign::keygen(&other).unwrap();
    let store = root.join("store");
    yardstick_store::trust::add_key(&store, &yardstick_store::sign::pub_path(&ci)).unwrap();
    yardstick_store::trust::set_required(&store, true).unwrap();
    (ci, other, store)
}

/// What is under `store/runs` (nothing, when the directory does not exist).
fn stored_runs(store: &Path) -> Vec<String> {
    std::fs::read_dir(store.join("runs"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `serve_spec()` signed with the key at `key`.
fn signed_serve_spec(key: &Path) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&serve_spec()).unwrap();
    v["spec"]["provenance"] =
        serde_json::json!({"signing": "required", "key": key.display().to_string()});
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn execute_refuses_a_run_the_store_would_not_admit_and_stores_one_a_trusted_key_signs() {
    let dir = tempfile::tempdir().unwrap();
    let (ci, other, store) = strict_store(dir.path());

    // Unsigned, then signed by a key the store does not trust: refused before any work.
    for (text, refusal) in [
        (serve_spec(), Refusal::Unsigned),
        (signed_serve_spec(&other), Refusal::UntrustedKey),
    ] {
        let (opts, events) = options(&store, None);
        let err = execute(&text, &checked(&text), None, opts).unwrap_err();
        match &err {
            RunError::Untrusted {
                writer: Writer::Spec,
                refusal: r,
                ..
            } => assert_eq!(*r, refusal),
            e => panic!("expected a refusal, got {e}"),
        }
        assert!(
            err.to_string()
                .contains("admits only runs signed by a key it trusts"),
            "{err}"
        );
        assert!(yardstick_error::UserFacing::is_invalid_input(&err));
        assert!(events.lock().unwrap().is_empty(), "{:?}", events.lock());
        assert_eq!(stored_runs(&store), Vec::<String>::new());
    }

    // Signed by the trusted key: stored, signed, and admitted by the store's own check.
    let text = signed_serve_spec(&ci);
    let (opts, _) = options(&store, None);
    let out = execute(&text, &checked(&text), None, opts).expect("a trusted run executes");
    assert_eq!(out.status, RunStatus::Complete);
    assert!(out.signed);
    assert!(files(&out.dir).contains(&"attestation.dsse.json".to_string()));
    assert!(
        yardstick_store::trust::admit(&store, &out.dir)
            .unwrap()
            .verified()
    );
}

#[test]
fn import_refuses_a_run_the_store_would_not_admit_and_stores_one_a_trusted_key_signs() {
    let dir = tempfile::tempdir().unwrap();
    let (ci, other, store) = strict_store(dir.path());
    let stream = std::fs::read(format!(
        "{}/../yardstick-workloads/tests/fixtures/stream_omp.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let opts = |key: Option<&Path>| ImportOptions {
        store: store.clone(),
        warehouse: None,
        tool_info: ToolInfo {
            name: "yardstick".into(),
            version: "0.0.0-test".into(),
            git_commit: None,
        },
        name: None,
        env: EnvSource::Unknown,
        confidence_level: 0.95,
        key: key.map(|k| yardstick_store::sign::load_signing_key(k).unwrap()),
    };
    let files = [ImportFile {
        name: "stream.txt".into(),
        bytes: stream,
    }];

    for (key, refusal) in [
        (None, Refusal::Unsigned),
        (Some(other.as_path()), Refusal::UntrustedKey),
    ] {
        let err = import(Tool::Stream, &files, &opts(key)).unwrap_err();
        match &err {
            RunError::Untrusted {
                writer: Writer::Import,
                refusal: r,
                ..
            } => assert_eq!(*r, refusal),
            e => panic!("expected a refusal, got {e}"),
        }
        assert!(err.to_string().contains("this import"), "{err}");
        assert_eq!(stored_runs(&store), Vec::<String>::new());
    }

    let out = import(Tool::Stream, &files, &opts(Some(&ci))).expect("a trusted import");
    assert_eq!(stored_runs(&store), vec![out.run_id.clone()]);
    assert!(
        yardstick_store::trust::admit(&store, &store.join("runs").join(&out.run_id))
            .unwrap()
            .verified()
    );
}
