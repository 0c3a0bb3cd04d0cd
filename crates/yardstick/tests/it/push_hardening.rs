//! The push path under attack (issue 38), against a real `yardstick server` on loopback, with
//! hand-made requests where the CLI would never send them: a forged run under a stored run's id
//! (409, the stored facts unchanged), manifests no run directory can hold (400 at the start,
//! nothing staged), the staging quota (429, 507) and its cleanup at start-up, the loser of a
//! race between two identical pushes (`already stored`, never 404), and what the docs say an
//! artifact traversal is answered.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::common::{command_spec, json as out_json, run_spec, yardstick};
use crate::push::{auth, push, push_at_once, quick_run, run_ids, scratch, stderr, stored, token};
use crate::server::{ServerProc, copy_dir, fixture, sha256_hex};

/// `POST /api/v1/pushes` of `manifest` (its exact text).
fn start(s: &ServerProc, tok: &str, manifest: &str) -> crate::server::Resp {
    s.request(
        "POST",
        "/api/v1/pushes",
        &[
            ("Authorization", &auth(tok)),
            ("Content-Type", "application/json"),
        ],
        json!({ "manifest": manifest }).to_string().as_bytes(),
    )
}

/// The facts of run `id` as the server lists them.
fn facts(s: &ServerProc, id: &str) -> Value {
    let r = s.get(&format!("/api/v1/runs/{id}/facts"));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["facts"].clone()
}

/// Entries of `<store>/.push` and everything under them, as relative paths.
fn staged_files(store: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&store.join(".push"), &store.join(".push"), &mut out);
    out.sort();
    out
}

/// A copy of run directory `run` at `to` whose every result record says 999999 for every figure:
/// the same run id, spec hash and start time, other facts, its manifest rewritten to match (what
/// anyone who can read the API and holds a push token can make).
fn forge(run: &Path, to: &Path) {
    copy_dir(run, to);
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(to.join("manifest.json")).unwrap()).unwrap();
    let mut forged = 0;
    for a in m["artifacts"].as_array_mut().unwrap() {
        let path = a["path"].as_str().unwrap().to_string();
        if !(path.starts_with("results/") && path.ends_with(".json")) {
            continue;
        }
        let file = to.join(&path);
        let mut rec: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        for meas in rec["figures"]["measurements"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            meas["value"] = json!(999999.0);
            forged += 1;
        }
        let bytes = serde_json::to_vec_pretty(&rec).unwrap();
        let mut perm = std::fs::metadata(&file).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(&file, perm).unwrap();
        std::fs::write(&file, &bytes).unwrap();
        a["sha256"] = json!(sha256_hex(&bytes));
        a["size"] = json!(bytes.len());
    }
    assert!(forged > 0, "no figures to forge in {}", run.display());
    let mpath = to.join("manifest.json");
    let mut perm = std::fs::metadata(&mpath).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&mpath, perm).unwrap();
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

/// Finding 4: a team warehouse a runner wrote a run into directly (`run --warehouse`), served by
/// a server whose store does not hold that run's directory. Before the fix a push of a forged
/// run under the same id, spec hash and start time (all public) replaced the stored facts.
#[test]
fn a_forged_push_under_a_stored_run_id_is_409_and_changes_no_fact() {
    let tmp = scratch();
    let team = tmp.path().join("team-warehouse");
    std::fs::create_dir_all(&team).unwrap();
    let local = tmp.path().join("local");
    let spec = tmp.path().join("victim.yaml");
    std::fs::write(&spec, command_spec("victim", "[\"true\"]", &[])).unwrap();
    let out = run_spec(&spec, &local, &["--warehouse", team.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = out_json(&out)["run_id"].as_str().unwrap().to_string();

    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &["--warehouse", team.to_str().unwrap()]);
    let before = facts(&s, &id);
    assert!(!before.as_array().unwrap().is_empty());

    // The forged run: same id, spec hash and start time, every figure 999999.
    let forged = tmp.path().join("forged");
    forge(&local.join("runs").join(&id), &forged);
    let o = push(forged.to_str().unwrap(), &s.url, &local, Some(&tok));
    assert_eq!(o.status.code(), Some(2), "{}\n{}", stderr(&o), s.stderr());
    assert!(stderr(&o).contains("409"), "{}", stderr(&o));
    assert_eq!(facts(&s, &id), before, "the stored facts are unchanged");
    assert!(stored(&srv_store).is_empty(), "nothing stored");
    assert!(staged_files(&srv_store).is_empty(), "nothing left staged");

    // The very run stored in the warehouse is taken: it brings its files, changes no fact.
    let o = push(&id, &s.url, &local, Some(&tok));
    assert!(o.status.success(), "{}\n{}", stderr(&o), s.stderr());
    assert_eq!(out_json(&o)["state"], "stored");
    assert_eq!(facts(&s, &id), before);
    assert_eq!(stored(&srv_store), [id.as_str()]);

    // Now that the server holds the run, the forgery is refused at the start, with a hint.
    let manifest = std::fs::read_to_string(forged.join("manifest.json")).unwrap();
    let r = start(&s, &tok, &manifest);
    let (status, msg) = r.error();
    assert_eq!(status, 409, "{msg}");
    assert!(
        r.json()["hint"]
            .as_str()
            .is_some_and(|h| h.contains("new id"))
    );
    let o = push(forged.to_str().unwrap(), &s.url, &local, Some(&tok));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(facts(&s, &id), before);
    // The identical re-push is still `already stored`.
    let o = push(&id, &s.url, &local, Some(&tok));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(out_json(&o)["already_stored"], true);
    assert!(!s.stderr().contains("\"status\":5"), "{}", s.stderr());
}

/// Finding 8: manifests no run directory can hold are refused when the push starts (they were
/// taken, then answered 500 at the commit with a half-built `run.*` left in staging).
#[test]
fn manifests_no_directory_can_hold_are_400_at_the_start_with_nothing_staged() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let id = &f.runs[0];
    let text =
        std::fs::read_to_string(f.store.join("runs").join(id).join("manifest.json")).unwrap();
    let with = |extra: &[(&str, u64)]| {
        let mut m: Value = serde_json::from_str(&text).unwrap();
        for (path, size) in extra {
            m["artifacts"].as_array_mut().unwrap().push(json!({
                "path": path, "size": size, "sha256": "ab".repeat(32), "kind": "log"
            }));
        }
        serde_json::to_string_pretty(&m).unwrap()
    };
    let long_path = format!("logs/{}", "n".repeat(300));
    let deep = vec!["d".repeat(200); 6].join("/");
    for (what, extra, named) in [
        (
            "a file and a directory of the same name",
            vec![("logs/x", 1), ("logs/x/y", 1)],
            "logs/x",
        ),
        (
            "a directory under the manifest",
            vec![("manifest.json/x", 1)],
            "manifest.json/x",
        ),
        (
            "a 300-byte name",
            vec![(long_path.as_str(), 1)],
            "300 bytes",
        ),
        ("a path over 1024 bytes", vec![(deep.as_str(), 1)], "1024"),
    ] {
        let r = start(&s, &tok, &with(&extra));
        let (status, msg) = r.error();
        assert_eq!(status, 400, "{what}: {msg}");
        assert!(msg.contains(named), "{what}: {msg}");
    }
    assert!(
        staged_files(&srv_store).is_empty(),
        "{:?}",
        staged_files(&srv_store)
    );
    assert!(stored(&srv_store).is_empty());
    assert!(!s.stderr().contains("\"status\":5"), "{}", s.stderr());
}

/// A manifest of a run that is not stored anywhere (a made-up id), declaring `bytes` in one
/// artifact.
fn made_up(id: &str, bytes: u64) -> String {
    serde_json::to_string(&json!({
        "schema": "yardstick.manifest/v1", "run_id": id, "name": "made-up", "status": "complete",
        "spec_sha256": "0".repeat(64),
        "tool": {"name": "yardstick", "version": "0", "git_commit": null},
        "machine_profile": null, "env_sha256": null, "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:00:01Z",
        "artifacts": [{"path": "spec.yaml", "size": bytes, "sha256": sha256_hex(id.as_bytes()), "kind": "spec"}],
    }))
    .unwrap()
}

/// Finding 8: staged pushes had no quota (any number, each up to --max-push-bytes, kept a day).
#[test]
fn the_staging_quota_refuses_too_many_open_pushes_429_and_too_many_bytes_507() {
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(
        &srv_store,
        &["--max-open-pushes", "2", "--max-staged-bytes", "1000"],
    );
    for (i, id) in ["01QUOTA0", "01QUOTA1"].iter().enumerate() {
        let r = start(&s, &tok, &made_up(id, 400));
        assert_eq!(r.status, 200, "{i}: {}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.json()["state"], "uploading");
    }
    // A retry of an open push takes no more room.
    assert_eq!(start(&s, &tok, &made_up("01QUOTA0", 400)).status, 200);
    // A third open push is one too many.
    let r = start(&s, &tok, &made_up("01QUOTA2", 10));
    let (status, msg) = r.error();
    assert_eq!(status, 429, "{msg}");
    assert!(
        r.json()["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--max-open-pushes")),
        "{}",
        r.json()
    );
    assert_eq!(
        staged_files(&srv_store).len(),
        2 * 4,
        "{:?}",
        staged_files(&srv_store)
    );

    // Room for bytes: 800 of 1000 are reserved.
    let roomy = tmp.path().join("roomy");
    let tok2 = token(&roomy, "push");
    let s2 = ServerProc::start(&roomy, &["--max-staged-bytes", "1000"]);
    assert_eq!(start(&s2, &tok2, &made_up("01BYTES0", 800)).status, 200);
    let r = start(&s2, &tok2, &made_up("01BYTES1", 201));
    let (status, msg) = r.error();
    assert_eq!(status, 507, "{msg}");
    assert!(msg.contains("201"), "{msg}");
    assert!(
        r.json()["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--max-staged-bytes")),
        "{}",
        r.json()
    );
    assert_eq!(start(&s2, &tok2, &made_up("01BYTES1", 200)).status, 200);
    for log in [s.stderr(), s2.stderr()] {
        assert!(!log.contains("\"status\":500"), "{log}");
    }

    // The flags are documented; a zero cap does not start.
    let help = yardstick().args(["server", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--max-staged-bytes", "--max-open-pushes", "--push-expiry"] {
        assert!(help.contains(flag), "{flag} in {help}");
    }
    let o = yardstick()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--max-open-pushes",
            "0",
            "--store",
        ])
        .arg(&roomy)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

fn age(path: &Path, by: Duration) {
    let f = std::fs::File::open(path).unwrap();
    f.set_modified(SystemTime::now() - by).unwrap();
}

/// Finding 8: abandoned staging was removed only when a push started; a server that restarts
/// now cleans it at once (and the leftovers of a stopped server's uploads and commits).
#[test]
fn abandoned_staging_is_removed_when_the_server_starts_and_when_a_push_starts() {
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let push_dir = srv_store.join(".push");
    let area = |name: &str| -> PathBuf {
        let d = push_dir.join(name);
        std::fs::create_dir_all(d.join("blobs")).unwrap();
        std::fs::write(d.join("manifest.json"), made_up("01ABANDONED", 3)).unwrap();
        std::fs::write(d.join("blobs").join("x"), b"abc").unwrap();
        d
    };
    // Abandoned two days ago.
    let old = area("01ABANDONED-000000000000000000000000");
    // Open, with a half-assembled run and a half-written upload of a server stopped 2 h ago,
    // and an upload being written now.
    let live = area("01LIVE-111111111111111111111111");
    std::fs::create_dir_all(live.join("run.deadbeef/logs")).unwrap();
    std::fs::write(live.join("run.deadbeef/logs/x"), b"x").unwrap();
    std::fs::write(live.join("blobs/.part-0123"), b"half").unwrap();
    std::fs::write(live.join("blobs/.part-4567"), b"being written").unwrap();
    age(&live.join("run.deadbeef"), Duration::from_secs(7200));
    age(&live.join("blobs/.part-0123"), Duration::from_secs(7200));
    for d in [old.join("blobs"), old.clone()] {
        age(&d, Duration::from_secs(48 * 3600));
    }

    let s = ServerProc::start(&srv_store, &[]);
    assert!(!old.exists(), "abandoned staging removed at start-up");
    assert!(live.join("manifest.json").is_file(), "an open push is kept");
    assert!(live.join("blobs/x").is_file());
    assert!(live.join("blobs/.part-4567").is_file(), "young upload kept");
    assert!(
        !live.join("run.deadbeef").exists(),
        "half-built run removed"
    );
    assert!(
        !live.join("blobs/.part-0123").exists(),
        "stale upload removed"
    );

    // While the server runs, a push that starts removes what was abandoned meanwhile.
    let old = area("01ABANDONED-222222222222222222222222");
    for d in [old.join("blobs"), old.clone()] {
        age(&d, Duration::from_secs(25 * 3600));
    }
    assert_eq!(start(&s, &tok, &made_up("01FRESH", 3)).status, 200);
    assert!(!old.exists());
    // A shorter expiry is a flag.
    drop(s);
    for d in [live.join("blobs"), live.clone()] {
        age(&d, Duration::from_secs(3 * 3600));
    }
    let _s = ServerProc::start(&srv_store, &["--push-expiry", "2h"]);
    assert!(!live.exists(), "untouched for 3 h, expired after 2 h");
}

/// Finding 9: two identical pushes racing: the one whose commit comes second found its staging
/// area gone and answered 404; it is `already stored`, for its uploads and its commit.
#[test]
fn the_loser_of_two_identical_pushes_is_already_stored_never_404() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let id = &f.runs[1];
    let dir = f.store.join("runs").join(id);
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    // Both start: the same push.
    let a = start(&s, &tok, &text).json();
    let b = start(&s, &tok, &text).json();
    assert_eq!(a["push_id"], b["push_id"]);
    let push_id = a["push_id"].as_str().unwrap();
    let put = |sha: &str| {
        let art = manifest["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["sha256"] == sha)
            .unwrap();
        let bytes = std::fs::read(dir.join(art["path"].as_str().unwrap())).unwrap();
        s.request(
            "PUT",
            &format!("/api/v1/pushes/{push_id}/blobs/{sha}"),
            &[("Authorization", &auth(&tok))],
            &bytes,
        )
    };
    let commit = || {
        s.request(
            "POST",
            &format!("/api/v1/pushes/{push_id}/commit"),
            &[("Authorization", &auth(&tok))],
            b"",
        )
    };
    let missing: Vec<&str> = a["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    // A uploads everything and commits first.
    for sha in &missing {
        assert_eq!(put(sha).status, 200);
    }
    let won = commit();
    assert_eq!(won.status, 200, "{}", String::from_utf8_lossy(&won.body));
    assert_eq!(won.json()["already_stored"], false);
    // B is still uploading, then commits.
    let r = put(missing[0]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["missing"], 0);
    let lost = commit();
    assert_eq!(lost.status, 200, "{}", String::from_utf8_lossy(&lost.body));
    let lost = lost.json();
    assert_eq!(lost["state"], "stored");
    assert_eq!(lost["already_stored"], true);
    assert_eq!(lost["run_id"], id.as_str());
    assert_eq!(run_ids(&s), [id.as_str()]);

    // The same with real pushes racing: every one lands as `stored`.
    let other = tmp.path().join("other");
    let tok2 = token(&other, "push");
    let s2 = ServerProc::start(&other, &[]);
    let local = tmp.path().join("local");
    let run = quick_run(tmp.path(), &local, "race", None);
    push_at_once(&[run.as_str(); 4], &s2, &local, &tok2);
    assert_eq!(stored(&other), [run.as_str()]);
    assert!(
        staged_files(&other).is_empty(),
        "{:?}",
        staged_files(&other)
    );
}

/// Finding 9: docs/server.md said an artifact path with `..`, an absolute path or a backslash is
/// `400` in one place and `404` in another; the server answers 404 (a path that names no
/// artifact of the run), and the docs now say so everywhere.
#[test]
fn an_artifact_traversal_is_404_as_the_docs_say() {
    let f = fixture();
    let s = ServerProc::start(&f.store, &[]);
    let id = &f.runs[0];
    for path in [
        "../../yardstick.db",
        "%2e%2e/%2e%2e/yardstick.db",
        "%2Fetc%2Fpasswd",
        "a%5C..%5C..%5Cyardstick.db",
    ] {
        let (status, msg) = s
            .get(&format!("/api/v1/runs/{id}/artifacts/{path}"))
            .error();
        assert_eq!(status, 404, "{path}: {msg}");
    }
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/server.md"))
            .unwrap();
    let artifacts = docs
        .split("### Artifacts")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("an Artifacts section");
    let flat = artifacts.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!flat.contains("is `400`"), "{flat}");
    assert!(
        flat.contains("a backslash") && flat.contains("is `404`"),
        "{flat}"
    );
}
