//! Property tests: hostile stored evidence — artifact paths, manifests, DSSE envelopes and
//! retention records — gives a clear error, never a panic, a hang, a read or a write outside
//! the run directory, and never a "verified".
//!
//! Case counts follow proptest's `PROPTEST_CASES` (default 256; CI sets thousands). Each test
//! prints how many cases it ran.

use crate::props;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use ed25519_dalek::SigningKey;
use proptest::prelude::*;
use yardstick_store::fsutil::{resolve_in, unsafe_relative};
use yardstick_store::gc::{GC_RECORD, GcOptions, gc_with};
use yardstick_store::layout::MANIFEST;
use yardstick_store::run::{RunWriter, ToolInfo, read_manifest};
use yardstick_store::sign::{SignatureCheck, TrustSet, check};
use yardstick_store::verify::{VerifyOptions, verify_run};

/// Path components an attacker would try, mixed with ordinary ones.
fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just(String::new()),
        Just("link".to_string()),
        Just("samples".to_string()),
        Just("a.parquet".to_string()),
        Just("C:".to_string()),
        Just("\\..".to_string()),
        Just("x\0y".to_string()),
        Just("\u{202e}evil".to_string()),
        Just("outside".to_string()),
        "[a-z]{1,6}",
        any::<String>(),
    ]
}

fn hostile_path() -> impl Strategy<Value = String> {
    (prop::bool::ANY, prop::collection::vec(component(), 1..6)).prop_map(|(abs, parts)| {
        let p = parts.join("/");
        if abs { format!("/{p}") } else { p }
    })
}

/// A run directory with a link `link` to a directory outside it, and that outside directory.
struct Arena {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn arena() -> Arena {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store/runs/R");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("samples")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("a.parquet"), b"outside").unwrap();
    std::fs::write(root.join("samples/a.parquet"), b"inside").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
    Arena {
        _tmp: tmp,
        root,
        outside,
    }
}

/// Lexically normalised: whether `p` stays under `root` without following anything.
fn lexically_inside(root: &Path, p: &Path) -> bool {
    let Ok(rest) = p.strip_prefix(root) else {
        return false;
    };
    rest.components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
}

#[test]
fn resolved_paths_never_leave_the_run_directory() {
    let a = arena();
    let cases = std::cell::Cell::new(0usize);
    props::runner()
        .run(&hostile_path(), |rel| {
            cases.set(cases.get() + 1);
            match resolve_in(&a.root, &rel) {
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(msg.contains("refusing artifact path"), "{msg}");
                }
                Ok(p) => {
                    prop_assert!(unsafe_relative(&rel).is_none(), "{rel:?} accepted");
                    prop_assert!(lexically_inside(&a.root, &p), "{rel:?} -> {}", p.display());
                    // Nothing on the way is a link: canonicalising what exists stays inside.
                    let mut q = a.root.clone();
                    for c in rel.split('/') {
                        q.push(c);
                        if let Ok(m) = std::fs::symlink_metadata(&q) {
                            prop_assert!(!m.file_type().is_symlink(), "{rel:?} via a link");
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    // The property is not vacuous: the plain path resolves, the link is refused.
    assert!(resolve_in(&a.root, "samples/a.parquet").is_ok());
    assert!(resolve_in(&a.root, "link/a.parquet").is_err());
    assert!(a.outside.join("a.parquet").exists());
    props::report("artifact paths", cases.get());
}

fn tool() -> ToolInfo {
    ToolInfo {
        name: "yardstick".into(),
        version: "0".into(),
        git_commit: None,
    }
}

#[test]
fn hostile_manifests_are_refused_and_nothing_outside_is_read_or_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), b"keep me").unwrap();
    #[cfg(unix)]
    {
        // A FIFO outside: any reader that opens it blocks, which the hang detector catches.
        let fifo = std::ffi::CString::new(outside.join("fifo").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    }
    // Unsigned, so that gc prunes it on the hostile manifest's word.
    let store = tmp.path().join("store");
    let mut w = RunWriter::create(&store.join("runs"), "p", "spec", tool()).unwrap();
    w.add("samples/r0.parquet", b"raw", "samples").unwrap();
    let run = w.dir().to_path_buf();
    w.complete(None).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, run.join("link")).unwrap();
    let pristine = std::fs::read(run.join(MANIFEST)).unwrap();
    let victim_sha = yardstick_store::fsutil::sha256_bytes(b"keep me");
    let depth_to_tmp = "../../../";

    let targets = prop_oneof![
        hostile_path(),
        Just(format!("{depth_to_tmp}outside/victim")),
        Just(format!("{depth_to_tmp}outside/fifo")),
        Just("link/victim".to_string()),
        Just("link/fifo".to_string()),
        Just(outside.join("victim").display().to_string()),
        Just(outside.join("fifo").display().to_string()),
        Just("samples/r0.parquet\0.txt".to_string()),
    ];
    let cases = std::cell::Cell::new(0usize);
    let refused = std::cell::Cell::new(0usize);
    props::runner()
        .run(
            &(targets, "[a-z]{1,10}", prop::bool::ANY),
            |(rel, kind, true_hash)| {
                cases.set(cases.get() + 1);
                let mp = run.join(MANIFEST);
                // With the victim's true hash, an old gc would have deleted it as a raw sample.
                let sha = if true_hash {
                    victim_sha.clone()
                } else {
                    "00".to_string()
                };
                let kind = if true_hash {
                    "samples".to_string()
                } else {
                    kind
                };
                let mut m: serde_json::Value = serde_json::from_slice(&pristine).unwrap();
                m["artifacts"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({
                        "path": rel, "size": 7, "sha256": sha, "kind": kind,
                    }));
                let mut perm = std::fs::metadata(&mp).unwrap().permissions();
                #[allow(clippy::permissions_set_readonly_false)]
                perm.set_readonly(false);
                std::fs::set_permissions(&mp, perm).unwrap();
                std::fs::write(&mp, serde_json::to_vec(&m).unwrap()).unwrap();

                let r = run.clone();
                let read =
                    props::within("read_manifest", 60, move || read_manifest(&r).map(|_| ()));
                if let Err(e) = &read {
                    refused.set(refused.get() + 1);
                    let msg = e.to_string();
                    prop_assert!(!msg.is_empty());
                }
                let r = run.clone();
                let v = props::within("verify", 60, move || {
                    verify_run(&r, &VerifyOptions::default())
                });
                match v {
                    Err(e) => prop_assert!(read.is_err(), "verify refused what read accepted: {e}"),
                    Ok(rep) => prop_assert!(!rep.ok(), "an artifact that is not there verified"),
                }
                let s = store.clone();
                let g = props::within("gc", 60, move || {
                    gc_with(
                        &s,
                        &GcOptions {
                            keep_raw: Duration::from_secs(1),
                            now: time::OffsetDateTime::now_utc() + time::Duration::days(1),
                            dry_run: false,
                            key: None,
                        },
                    )
                });
                prop_assert!(g.is_ok(), "{g:?}");
                prop_assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep me");
                prop_assert!(outside.join("fifo").exists());
                Ok(())
            },
        )
        .unwrap();
    assert!(
        refused.get() > 0,
        "no hostile path was refused: the generator is broken"
    );
    props::report("manifest reader (verify, gc)", cases.get());
}

fn signed_envelope(manifest: &[u8], key: &SigningKey) -> serde_json::Value {
    serde_json::to_value(yardstick_store::sign::attest(
        manifest,
        serde_json::json!({"run_id": "R"}),
        key,
    ))
    .unwrap()
}

#[test]
fn envelope_bytes_never_panic_and_mutations_never_verify() {
    let key = SigningKey::from_bytes(&[4u8; 32]);
    let mut trust = TrustSet::new();
    trust.add(key.verifying_key(), "test");
    let manifest = br#"{"run_id":"R"}"#.to_vec();
    let env = signed_envelope(&manifest, &key);
    let valid = serde_json::to_vec(&env).unwrap();
    assert!(check(&valid, &manifest, &trust).is_verified());

    // Arbitrary bytes, and valid bytes with random edits.
    let bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..400),
        (0..valid.len(), any::<u8>()).prop_map({
            let valid = valid.clone();
            move |(i, b)| {
                let mut v = valid.clone();
                v[i] = b;
                v
            }
        }),
        (0..valid.len()).prop_map({
            let valid = valid.clone();
            move |n| valid[..n].to_vec()
        }),
    ];
    let cases = std::cell::Cell::new(0usize);
    props::runner()
        .run(&bytes, |b| {
            cases.set(cases.get() + 1);
            let c = check(&b, &manifest, &trust);
            if c.is_verified() {
                // Only an edit that leaves the signed content as it was may verify (e.g. in
                // insignificant whitespace or an equivalent base64 spelling).
                let e: yardstick_store::sign::Envelope = serde_json::from_slice(&b).unwrap();
                let orig: yardstick_store::sign::Envelope = serde_json::from_slice(&valid).unwrap();
                let d = |s: &str| base64::engine::general_purpose::STANDARD.decode(s).ok();
                prop_assert_eq!(d(&e.payload), d(&orig.payload));
            }
            if let SignatureCheck::Invalid { reason } = &c {
                prop_assert!(!reason.is_empty());
            }
            Ok(())
        })
        .unwrap();
    props::report("DSSE envelope reader", cases.get());

    // Structured forgeries: any change to the statement, re-encoded with the old signature.
    let cases = std::cell::Cell::new(0usize);
    let statement: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(env["payload"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    props::runner()
        .run(&("[a-z_]{1,8}", any::<i64>()), |(field, value)| {
            cases.set(cases.get() + 1);
            let mut st = statement.clone();
            st["predicate"][&field] = value.into();
            let mut e = env.clone();
            e["payload"] = base64::engine::general_purpose::STANDARD
                .encode(serde_json::to_vec(&st).unwrap())
                .into();
            let c = check(&serde_json::to_vec(&e).unwrap(), &manifest, &trust);
            prop_assert!(!c.is_verified(), "a forged statement verified: {st}");
            Ok(())
        })
        .unwrap();
    props::report("DSSE forged statements", cases.get());
}

#[test]
fn hostile_retention_records_never_panic_and_never_excuse_a_missing_file() {
    let tmp = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[2u8; 32]);
    let mut w = RunWriter::create(&tmp.path().join("runs"), "p", "spec", tool()).unwrap();
    w.add("samples/r0.parquet", b"raw", "samples").unwrap();
    w.add("summary.json", b"{}", "summary").unwrap();
    let run = w.dir().to_path_buf();
    let m = w.complete(Some(&key)).unwrap();
    // The summary goes missing; no gc.json may excuse that.
    let sp = run.join("summary.json");
    let mut perm = std::fs::metadata(&sp).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&sp, perm).unwrap();
    std::fs::remove_file(&sp).unwrap();
    let summary_sha = m.artifact("summary.json").unwrap().sha256.clone();
    let mut trust = TrustSet::new();
    trust.add(key.verifying_key(), "test");
    let opts = VerifyOptions::trusting(trust);

    let entry = (hostile_path(), prop::bool::ANY).prop_map(move |(p, real)| {
        serde_json::json!({
            "path": if real { "summary.json".to_string() } else { p },
            "sha256": summary_sha.clone(), "size": 2, "kind": "samples",
            "dropped_at": "2026-01-01T00:00:00Z", "policy": "keep-raw 1d",
        })
    });
    let record = prop_oneof![
        prop::collection::vec(entry, 0..4).prop_map({
            let id = m.run_id.clone();
            move |d| {
                serde_json::to_vec(
                    &serde_json::json!({"schema": "yardstick.gc/v1", "run_id": id, "dropped": d}),
                )
                .unwrap()
            }
        }),
        prop::collection::vec(any::<u8>(), 0..200),
    ];
    let cases = std::cell::Cell::new(0usize);
    props::runner()
        .run(&record, |bytes| {
            cases.set(cases.get() + 1);
            std::fs::write(run.join(GC_RECORD), &bytes).unwrap();
            let r = verify_run(&run, &opts).unwrap();
            prop_assert!(!r.ok());
            prop_assert!(
                r.problems
                    .iter()
                    .any(|p| p.path == "summary.json" && p.problem == "missing"),
                "{:?}",
                r.problems
            );
            Ok(())
        })
        .unwrap();
    props::report("retention records", cases.get());
}
