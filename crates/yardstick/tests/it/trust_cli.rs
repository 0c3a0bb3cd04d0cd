//! `yardstick trust`: a store that pins its signers' keys and refuses runs they did not sign —
//! for imports, `yardstick run`, `verify` and `baseline save`, through the built binary.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{command_spec, json, yardstick};

fn stream_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../yardstick-workloads/tests/fixtures/stream_omp.txt")
}

fn run(store: &Path, args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn import(store: &Path, key: Option<&Path>) -> Output {
    let fixture = stream_fixture();
    let mut args = vec![
        "--json",
        "import",
        "stream",
        fixture.to_str().unwrap(),
        "--profile",
        "cpu-test",
    ];
    let k;
    if let Some(key) = key {
        k = key.display().to_string();
        args.extend(["--key", k.as_str()]);
    }
    run(store, &args)
}

#[test]
fn a_store_that_requires_signatures_refuses_what_its_keys_did_not_sign() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let ci = dir.path().join("keys/ci.key");
    let other = dir.path().join("keys/other.key");
    for k in [&ci, &other] {
        assert!(
            yardstick()
                .arg("keygen")
                .arg(k)
                .output()
                .unwrap()
                .status
                .success()
        );
    }
    // Before any policy: an unsigned import is stored and verifies (integrity only).
    let o = import(&store, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let unsigned = json(&o)["run_id"].as_str().unwrap().to_string();

    // Requiring signatures with no trusted key is refused; then pin the CI key and require.
    let o = run(&store, &["trust", "require", "on"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(&store, &["trust", "add", &format!("{}.pub", ci.display())]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A secret key is not a public key to trust.
    let o = run(
        &store,
        &[
            "trust",
            "add",
            &format!("{}", dir.path().join("nope.pub").display()),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(run(&store, &["trust", "require", "on"]).status.success());
    let listed = json(&run(&store, &["--json", "trust", "list"]));
    assert_eq!(listed["require_signature"], true);
    crate::schema_cli::assert_conforms("trust", &listed);
    assert_eq!(listed["keys"].as_array().unwrap().len(), 1);

    // Imports: unsigned or signed by another key are refused before anything is stored.
    let runs_before = std::fs::read_dir(store.join("runs")).unwrap().count();
    for key in [None, Some(other.as_path())] {
        let o = import(&store, key);
        assert_eq!(o.status.code(), Some(2), "{key:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("admits only runs signed"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(
        std::fs::read_dir(store.join("runs")).unwrap().count(),
        runs_before
    );
    let o = import(&store, Some(&ci));
    assert!(o.status.success(), "{}", stderr(&o));
    let signed = json(&o)["run_id"].as_str().unwrap().to_string();

    // verify of a run in the store uses the store's keys and policy.
    let o = run(&store, &["--json", "verify", &signed]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(json(&o)["verified"], true);
    let o = run(&store, &["--json", "verify", &unsigned]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&o)["signature"]["state"], "unsigned");
    assert_eq!(json(&o)["signature_required"], true);

    // baseline save refuses the unsigned run and takes the signed one.
    let o = run(&store, &["baseline", "save", &unsigned]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("refuses run"), "{}", stderr(&o));
    let o = run(&store, &["baseline", "save", &signed]);
    assert!(o.status.success(), "{}", stderr(&o));

    // yardstick run: a spec that does not sign with a trusted key is refused before any work.
    let spec = dir.path().join("spec.yaml");
    std::fs::write(&spec, command_spec("trusted", "[\"true\"]", &[])).unwrap();
    let o = run(&store, &["run", spec.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not sign"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_dir(store.join("runs")).unwrap().count(),
        runs_before + 1
    );

    // Turning the requirement off takes unsigned imports again.
    assert!(run(&store, &["trust", "require", "off"]).status.success());
    assert!(import(&store, None).status.success());
}

/// A manifest that names a file outside the run: `verify` fails naming the path (exit 1) and
/// `gc` leaves the run, and the file, alone.
#[test]
fn a_manifest_naming_a_file_outside_the_run_is_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let o = import(&store, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let run_id = json(&o)["run_id"].as_str().unwrap().to_string();
    let run_dir = store.join("runs").join(&run_id);
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let manifest = run_dir.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m["artifacts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "path": "../../../victim.txt", "size": 7, "kind": "samples",
            "sha256": yardstick_store::fsutil::sha256_bytes(b"keep me"),
        }));
    let mut perm = std::fs::metadata(&manifest).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&manifest, perm).unwrap();
    std::fs::write(&manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();

    let o = run(&store, &["--json", "verify", &run_id]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["ok"], false);
    assert!(
        v["error"].as_str().unwrap().contains("../../../victim.txt"),
        "{v}"
    );
    let o = run(&store, &["--json", "gc", "--keep-raw", "0s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let skipped = json(&o)["skipped"].to_string();
    assert!(skipped.contains("victim.txt"), "{skipped}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}
