//! `yardstick push`, `run --push` and `gate --server` against a real `yardstick server` on
//! loopback: runs made by `yardstick run` (against the in-process simulator, or a `true`
//! command) pushed into an empty server store, listed and checked through the API against the
//! CLI's own view of the pushing store; every refusal (token, tampered file, signature, size,
//! paths, another run under the same id) answered 4xx with nothing stored; a push cut off midway
//! leaves nothing and its retry sends only what is missing; concurrent pushes all land.

use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::common::{command_spec, json as out_json, run_spec, yardstick};
use crate::server::{ServerProc, cli_json, copy_dir, fixture, http, sha256_hex};

/// A scratch directory under cargo's target directory (kept small; removed on drop).
pub(crate) fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ys-push-it-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// An empty server store and a token of `scope` for it.
pub(crate) fn token(store: &Path, scope: &str) -> String {
    std::fs::create_dir_all(store).unwrap();
    let out = yardstick()
        .args([
            "server", "token", "create", "-q", "--scope", scope, "--store",
        ])
        .arg(store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `yardstick --json push RUN --to URL --store STORE` with `token` in YARDSTICK_TOKEN.
pub(crate) fn push(run: &str, url: &str, store: &Path, token: Option<&str>) -> Output {
    let mut c = yardstick();
    c.args(["--json", "push", run, "--to", url, "--store"])
        .arg(store)
        .env_remove("YARDSTICK_TOKEN");
    if let Some(t) = token {
        c.env("YARDSTICK_TOKEN", t);
    }
    c.output().unwrap()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn run_ids(s: &ServerProc) -> Vec<String> {
    let r = s.get("/api/v1/runs?limit=1000");
    assert_eq!(r.status, 200);
    r.json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

/// The run directories of a store.
pub(crate) fn stored(store: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(store.join("runs"))
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A quick run (a `true` command, 3 replicates) into `store`, signed with `key` if given.
pub(crate) fn quick_run(dir: &Path, store: &Path, name: &str, key: Option<&Path>) -> String {
    let mut spec = command_spec(name, "[\"true\"]", &[]);
    if let Some(k) = key {
        spec.push_str(&format!(
            "  provenance: {{signing: required, key: {}}}\n",
            k.display()
        ));
    }
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, spec).unwrap();
    let out = run_spec(&path, store, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    out_json(&out)["run_id"].as_str().unwrap().to_string()
}

/// Pushes the runs with one `yardstick push` process each, all at once; every one must land as
/// `stored`.
pub(crate) fn push_at_once(runs: &[&str], s: &ServerProc, local: &Path, token: &str) {
    let children: Vec<_> = runs
        .iter()
        .map(|id| {
            yardstick()
                .args(["--json", "push", id, "--to", &s.url, "--store"])
                .arg(local)
                .env("YARDSTICK_TOKEN", token)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}\n{}", stderr(&o), s.stderr());
        assert_eq!(out_json(&o)["state"], "stored");
    }
}

pub(crate) fn auth(t: &str) -> String {
    format!("Bearer {t}")
}

#[test]
fn push_stores_indexes_and_lists_a_run_once_with_the_facts_the_cli_has() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let id = &f.runs[0];

    let out = push(id, &s.url, &f.store, Some(&tok));
    assert!(out.status.success(), "{}\n{}", stderr(&out), s.stderr());
    let v = out_json(&out);
    crate::schema_cli::assert_conforms("push", &v);
    assert_eq!(v["run_id"], id.as_str());
    assert_eq!(v["state"], "stored");
    assert_eq!(v["already_stored"], false);
    let manifest = yardstick_store::read_manifest(&f.store.join("runs").join(id)).unwrap();
    assert_eq!(v["artifacts"], manifest.artifacts.len());
    let distinct: std::collections::HashSet<&str> = manifest
        .artifacts
        .iter()
        .map(|a| a.sha256.as_str())
        .collect();
    assert_eq!(v["uploaded"], distinct.len());
    eprintln!(
        "pushed run {id}: {} artifacts, {} bytes in {:.3} s",
        v["artifacts"], v["bytes"], v["seconds"]
    );

    // Listed, with the rows and facts `runs show --json` has in the pushing store.
    assert_eq!(run_ids(&s), [id.as_str()]);
    let local = cli_json(&["runs", "show", id, "--store", f.store.to_str().unwrap()]);
    let shown = s.get(&format!("/api/v1/runs/{id}")).json();
    assert_eq!(shown["points"], local["points"]);
    assert_eq!(shown["replicates"], local["replicates"]);
    let facts = s.get(&format!("/api/v1/runs/{id}/facts")).json();
    assert!(!facts["facts"].as_array().unwrap().is_empty());
    assert_eq!(facts["facts"], local["facts"]);
    let mut run = shown["run"].clone();
    let mut want = local["run"].clone();
    run["location"] = Value::Null;
    want["location"] = Value::Null;
    assert_eq!(run, want);
    assert_eq!(shown["manifest"]["run_id"], id.as_str());

    // The server's copy verifies on its own.
    let verify = yardstick()
        .args(["verify", id, "--store"])
        .arg(&srv_store)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", stderr(&verify));

    // Twice: already stored, one copy, nothing sent but the manifest.
    let again = push(id, &s.url, &f.store, Some(&tok));
    assert!(again.status.success(), "{}", stderr(&again));
    let v = out_json(&again);
    assert_eq!(v["already_stored"], true);
    assert_eq!(v["uploaded"], 0);
    assert_eq!(stored(&srv_store), [id.as_str()]);
    assert_eq!(run_ids(&s), [id.as_str()]);
    // A run directory given by path is the same run.
    let by_path = push(
        f.store.join("runs").join(id).to_str().unwrap(),
        &s.url,
        Path::new("/nonexistent"),
        Some(&tok),
    );
    assert!(by_path.status.success(), "{}", stderr(&by_path));
    assert_eq!(out_json(&by_path)["already_stored"], true);
    // Nothing is left staged, and the token is in no log or output.
    assert!(
        std::fs::read_dir(srv_store.join(".push"))
            .map(|rd| rd.count() == 0)
            .unwrap_or(true)
    );
    for text in [
        s.stderr(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    ] {
        assert!(!text.contains(&tok), "the token leaked: {text}");
    }
}

#[test]
fn push_refuses_bad_tokens_tampered_files_bad_manifests_and_another_run_under_the_same_id() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let read = token(&srv_store, "read");
    let s = ServerProc::start(&srv_store, &[]);
    let id = &f.runs[1];

    // Tokens: none is 401, a read token 403, an unknown one 401; each exits 2 with the
    // server's word and a hint in the command line's terms (the variable, the scope).
    let o = push(id, &s.url, &f.store, None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("401"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("$YARDSTICK_TOKEN is not set") && stderr(&o).contains("--token-env"),
        "{}",
        stderr(&o)
    );
    let o = push(id, &s.url, &f.store, Some(&read));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("403"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("lacks the scope `push`")
            && stderr(&o).contains("yardstick server token create --scope push"),
        "{}",
        stderr(&o)
    );
    let o = push(
        id,
        &s.url,
        &f.store,
        Some("ysk_not_a_token_this_server_made"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("does not know the token in $YARDSTICK_TOKEN"),
        "{}",
        stderr(&o)
    );
    let r = s.request("POST", "/api/v1/pushes", &[], b"{}");
    assert_eq!(r.error().0, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));

    // A file changed after the run was sealed: refused while uploading, nothing indexed.
    let copy = tmp.path().join("tampered");
    copy_dir(&f.store.join("runs").join(id), &copy);
    let victim = copy.join("summary.json");
    let mut perm = std::fs::metadata(&victim).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&victim, perm).unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[0] ^= 0x20;
    std::fs::write(&victim, &bytes).unwrap();
    let o = push(copy.to_str().unwrap(), &s.url, &f.store, Some(&tok));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("422") && stderr(&o).contains("summary.json"),
        "{}",
        stderr(&o)
    );
    assert!(run_ids(&s).is_empty());
    assert!(stored(&srv_store).is_empty());

    // Hand-made requests: malformed manifests and paths leaving the run are 400.
    let manifest_text =
        std::fs::read_to_string(f.store.join("runs").join(id).join("manifest.json")).unwrap();
    let start = |manifest: &str| {
        s.request(
            "POST",
            "/api/v1/pushes",
            &[
                ("Authorization", &auth(&tok)),
                ("Content-Type", "application/json"),
            ],
            json!({"manifest": manifest}).to_string().as_bytes(),
        )
    };
    for (what, body) in [
        ("not JSON", "{nope".to_string()),
        (
            "a traversal",
            manifest_text.replacen("\"path\": \"spec.yaml\"", "\"path\": \"../../evil\"", 1),
        ),
        (
            "an absolute path",
            manifest_text.replacen("\"path\": \"spec.yaml\"", "\"path\": \"/etc/passwd\"", 1),
        ),
        (
            "a bad digest",
            manifest_text.replacen("\"sha256\": \"", "\"sha256\": \"../", 1),
        ),
    ] {
        let (status, msg) = start(&body).error();
        assert_eq!(status, 400, "{what}: {msg}");
    }
    let (status, _) = s
        .request(
            "POST",
            "/api/v1/pushes",
            &[("Authorization", &auth(&tok))],
            b"[1, 2",
        )
        .error();
    assert_eq!(status, 400);

    // Bytes that do not hash to the digest, or too many of them, are refused and dropped.
    let started = start(&manifest_text);
    assert_eq!(
        started.status,
        200,
        "{}",
        String::from_utf8_lossy(&started.body)
    );
    let started = started.json();
    let push_id = started["push_id"].as_str().unwrap();
    let sha = started["missing"][0].as_str().unwrap();
    let put = |body: &[u8]| {
        s.request(
            "PUT",
            &format!("/api/v1/pushes/{push_id}/blobs/{sha}"),
            &[("Authorization", &auth(&tok))],
            body,
        )
    };
    let size = manifest_text.len() * 1000; // larger than any artifact of the run
    assert_eq!(put(&vec![b'x'; size]).error().0, 413);
    let m: Value = serde_json::from_str(&manifest_text).unwrap();
    let a = m["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["sha256"] == sha)
        .unwrap();
    let wrong = vec![b'x'; a["size"].as_u64().unwrap() as usize];
    let (status, msg) = put(&wrong).error();
    assert_eq!(status, 422, "{msg}");
    assert!(msg.contains("hash"), "{msg}");
    let (status, _) = s
        .request(
            "PUT",
            &format!("/api/v1/pushes/{push_id}/blobs/{}", "0".repeat(64)),
            &[("Authorization", &auth(&tok))],
            b"x",
        )
        .error();
    assert_eq!(status, 404);
    // Committing with contents missing is refused; nothing stored.
    let (status, msg) = s
        .request(
            "POST",
            &format!("/api/v1/pushes/{push_id}/commit"),
            &[("Authorization", &auth(&tok))],
            b"",
        )
        .error();
    assert_eq!(status, 422, "{msg}");
    assert!(run_ids(&s).is_empty());

    // Stored for real, then another run under the same id is a conflict.
    let o = push(id, &s.url, &f.store, Some(&tok));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut other: Value = serde_json::from_str(&manifest_text).unwrap();
    other["notes"]
        .as_array_mut()
        .unwrap()
        .push(json!("another run"));
    let other = serde_json::to_string_pretty(&other).unwrap();
    let (status, msg) = start(&other).error();
    assert_eq!(status, 409, "{msg}");
    assert_eq!(run_ids(&s), [id.as_str()]);

    // Too large for the server's limit: 413 before anything is sent.
    let small_store = tmp.path().join("small");
    let tok2 = token(&small_store, "push");
    let small = ServerProc::start(&small_store, &["--max-push-bytes", "1KiB"]);
    let o = push(id, &small.url, &f.store, Some(&tok2));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("413"), "{}", stderr(&o));
    assert!(stored(&small_store).is_empty());
    // Never a 5xx.
    for log in [s.stderr(), small.stderr()] {
        assert!(!log.contains("\"status\":5"), "{log}");
    }
}

#[test]
fn push_with_require_signature_admits_only_runs_a_trusted_key_signed() {
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let keygen = |name: &str| {
        let k = tmp.path().join(name);
        let o = yardstick().arg("keygen").arg(&k).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        k
    };
    let ci = keygen("ci.key");
    let other = keygen("other.key");
    // No trusted key: --require-signature could admit nothing, so it does not start.
    let o = yardstick()
        .args([
            "server",
            "--listen",
            "127.0.0.1:0",
            "--require-signature",
            "--store",
        ])
        .arg(&srv_store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("trusts no key"), "{}", stderr(&o));
    let o = yardstick()
        .args(["trust", "add"])
        .arg(format!("{}.pub", ci.display()))
        .arg("--store")
        .arg(&srv_store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let s = ServerProc::start(&srv_store, &["--require-signature"]);

    let local = tmp.path().join("local");
    let unsigned = quick_run(tmp.path(), &local, "unsigned", None);
    let by_other = quick_run(tmp.path(), &local, "by-other", Some(&other));
    let by_ci = quick_run(tmp.path(), &local, "by-ci", Some(&ci));

    let o = push(&unsigned, &s.url, &local, Some(&tok));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("UNSIGNED"), "{}", stderr(&o));
    let o = push(&by_other, &s.url, &local, Some(&tok));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("422"), "{}", stderr(&o));
    assert!(run_ids(&s).is_empty());
    assert!(stored(&srv_store).is_empty());

    let o = push(&by_ci, &s.url, &local, Some(&tok));
    assert!(o.status.success(), "{}", stderr(&o));
    let v = out_json(&o);
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(run_ids(&s), [by_ci.as_str()]);
    assert!(
        srv_store
            .join("runs")
            .join(&by_ci)
            .join("attestation.dsse.json")
            .is_file()
    );
}

/// The server store's own policy (`yardstick trust require on`), without `--require-signature`,
/// is enough: the push path admits runs through the store's trust check like every other path
/// that writes a run into it.
#[test]
fn a_store_that_requires_signatures_refuses_an_unsigned_push_without_the_server_flag() {
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let ci = tmp.path().join("ci.key");
    let o = yardstick().arg("keygen").arg(&ci).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for args in [
        vec![
            "trust".to_string(),
            "add".into(),
            format!("{}.pub", ci.display()),
        ],
        vec!["trust".into(), "require".into(), "on".into()],
    ] {
        let o = yardstick()
            .args(&args)
            .arg("--store")
            .arg(&srv_store)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    let s = ServerProc::start(&srv_store, &[]);
    let local = tmp.path().join("local");
    let unsigned = quick_run(tmp.path(), &local, "unsigned", None);
    let by_ci = quick_run(tmp.path(), &local, "by-ci", Some(&ci));

    let o = push(&unsigned, &s.url, &local, Some(&tok));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("UNSIGNED"), "{}", stderr(&o));
    assert!(run_ids(&s).is_empty());
    assert!(stored(&srv_store).is_empty());
    let o = push(&by_ci, &s.url, &local, Some(&tok));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(run_ids(&s), [by_ci.as_str()]);
}

#[test]
fn concurrent_pushes_of_four_runs_all_land() {
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let local = tmp.path().join("local");
    let ids: Vec<String> = (0..4)
        .map(|i| quick_run(tmp.path(), &local, &format!("many-{i}"), None))
        .collect();
    let runs: Vec<&str> = ids.iter().map(String::as_str).collect();
    push_at_once(&runs, &s, &local, &tok);
    let mut listed = run_ids(&s);
    listed.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(listed, want);
    assert_eq!(stored(&srv_store), want);
    for id in &ids {
        let facts = s.get(&format!("/api/v1/runs/{id}/facts")).json();
        assert!(!facts["facts"].as_array().unwrap().is_empty(), "{id}");
    }
}

#[test]
fn a_push_cut_off_midway_leaves_nothing_and_its_retry_sends_only_what_is_missing() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let id = &f.runs[0];
    let dir = f.store.join("runs").join(id);
    let manifest_text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest: Value = serde_json::from_str(&manifest_text).unwrap();
    let started = s
        .request(
            "POST",
            "/api/v1/pushes",
            &[("Authorization", &auth(&tok))],
            json!({"manifest": manifest_text}).to_string().as_bytes(),
        )
        .json();
    assert_eq!(started["state"], "uploading", "{started}");
    let push_id = started["push_id"].as_str().unwrap().to_string();
    let missing: Vec<String> = started["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    assert!(missing.len() >= 2);
    let file_of = |sha: &str| -> PathBuf {
        let a = manifest["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["sha256"] == sha)
            .unwrap();
        dir.join(a["path"].as_str().unwrap())
    };
    // The first content arrives whole.
    let first = std::fs::read(file_of(&missing[0])).unwrap();
    assert_eq!(sha256_hex(&first), missing[0]);
    let r = s.request(
        "PUT",
        &format!("/api/v1/pushes/{push_id}/blobs/{}", missing[0]),
        &[("Authorization", &auth(&tok))],
        &first,
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["missing"], missing.len() - 1);
    // The second is cut off halfway: the connection closes with half the bytes sent.
    let second = std::fs::read(file_of(&missing[1])).unwrap();
    {
        let mut c = TcpStream::connect(&s.addr).unwrap();
        write!(
            c,
            "PUT /api/v1/pushes/{push_id}/blobs/{} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {tok}\r\nContent-Length: {}\r\n\r\n",
            missing[1],
            s.addr,
            second.len()
        )
        .unwrap();
        c.write_all(&second[..second.len() / 2]).unwrap();
        c.flush().unwrap();
    }
    // Nothing is visible: no run listed, no run directory, the commit refused.
    let commit = http(
        &s.addr,
        "POST",
        &format!("/api/v1/pushes/{push_id}/commit"),
        &[("Authorization", &auth(&tok))],
        b"",
    );
    assert_eq!(commit.error().0, 422);
    assert!(run_ids(&s).is_empty());
    assert!(stored(&srv_store).is_empty());
    assert_eq!(
        s.get(&format!("/api/v1/runs/{id}")).status,
        404,
        "not visible"
    );

    // The retry sends only what is still missing.
    let o = push(id, &s.url, &f.store, Some(&tok));
    assert!(o.status.success(), "{}\n{}", stderr(&o), s.stderr());
    let v = out_json(&o);
    assert_eq!(v["uploaded"], missing.len() - 1, "{v}");
    assert_eq!(run_ids(&s), [id.as_str()]);
    // The staging area is gone (no half-uploaded file left behind).
    assert!(
        std::fs::read_dir(srv_store.join(".push"))
            .map(|rd| rd.count() == 0)
            .unwrap_or(true)
    );
}

#[test]
fn run_push_pushes_a_complete_run_and_a_failed_push_keeps_it_with_exit_5() {
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let local = tmp.path().join("local");
    let spec = tmp.path().join("spec.yaml");
    std::fs::write(&spec, command_spec("run-push", "[\"true\"]", &[])).unwrap();
    let o = yardstick()
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&local)
        .args(["--push", &s.url])
        .env("YARDSTICK_TOKEN", &tok)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = out_json(&o);
    crate::schema_cli::assert_conforms("run", &v);
    let id = v["run_id"].as_str().unwrap();
    assert_eq!(v["push"]["state"], "stored", "{v}");
    assert_eq!(run_ids(&s), [id.to_string()]);

    // A server that is not there: the run completes and stays local, exit 5.
    let o = yardstick()
        .args(["run", "--json", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&local)
        .args(["--push", "http://127.0.0.1:1"])
        .env("YARDSTICK_TOKEN", &tok)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    let v = out_json(&o);
    crate::schema_cli::assert_conforms("run", &v);
    assert_eq!(v["status"], "complete");
    assert!(v["push_error"].is_string(), "{v}");
    assert!(stderr(&o).contains("yardstick push"), "{}", stderr(&o));
    let kept = v["run_id"].as_str().unwrap();
    assert!(stored(&local).contains(&kept.to_string()));
    // A URL that is not one: exit 2 before anything runs.
    let o = yardstick()
        .args(["run", "-q"])
        .arg(&spec)
        .arg("--store")
        .arg(&local)
        .args(["--push", "ftp://nowhere"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stored(&local).len(), 2);
}

#[test]
fn gate_server_gates_a_local_run_against_the_servers_baseline() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let tok = token(&srv_store, "push");
    let s = ServerProc::start(&srv_store, &[]);
    let (a, b) = (&f.runs[0], &f.runs[1]);
    let st = f.store.to_str().unwrap();
    let o = push(a, &s.url, &f.store, Some(&tok));
    assert!(o.status.success(), "{}", stderr(&o));

    // No baseline on the server yet: exit 2 saying so.
    let gate = |extra: &[&str]| {
        yardstick()
            .args(["--json", "gate", b, "--store", st, "--server", &s.url])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = gate(&["--baseline", "auto"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no baseline"), "{}", stderr(&o));

    let saved = yardstick()
        .args(["baseline", "save", a, "--store"])
        .arg(&srv_store)
        .output()
        .unwrap();
    assert!(saved.status.success(), "{}", stderr(&saved));
    let o = gate(&["--baseline", "auto"]);
    assert!(matches!(o.status.code(), Some(0 | 3 | 4)), "{}", stderr(&o));
    let remote = out_json(&o);
    crate::schema_cli::assert_conforms("gate", &remote);
    assert_eq!(remote["comparison"]["baseline_run"], a.as_str());
    assert_eq!(remote["comparison"]["candidate_run"], b.as_str());
    // The same verdicts as gating against the same run in the local store.
    let local = yardstick()
        .args(["--json", "gate", b, "--baseline", a, "--store", st])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), local.status.code());
    let local = out_json(&local);
    assert_eq!(remote["verdict"], local["verdict"]);
    assert_eq!(remote["metrics"], local["metrics"]);
    // An explicit run id on the server works too; one it does not have is exit 2.
    let o = gate(&["--baseline", a]);
    assert_eq!(out_json(&o)["comparison"]["baseline_run"], a.as_str());
    let o = gate(&["--baseline", "01NOSUCHRUN"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// The verdict a trend gives run `id`'s point, and the baseline it was gated against.
fn trend_verdict(t: &Value, id: &str) -> (Value, Value) {
    let p = t["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap())
        .find(|p| p["run_id"] == id)
        .unwrap_or_else(|| panic!("no point of {id} in {t}"));
    (p["verdict"].clone(), p["gated_against"].clone())
}

#[test]
fn baselines_are_set_over_http_by_admins_and_pushed_runs_are_gated_for_trends() {
    let f = fixture();
    let tmp = scratch();
    let srv_store = tmp.path().join("server");
    let pusher = token(&srv_store, "push");
    let admin = token(&srv_store, "admin");
    let s = ServerProc::start(&srv_store, &[]);
    let (a, b) = (&f.runs[0], &f.runs[1]);
    let o = push(a, &s.url, &f.store, Some(&pusher));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        out_json(&o)["gate"],
        Value::Null,
        "no baseline yet: not gated"
    );

    let put = |tok: Option<&str>, body: Value| {
        let h = tok.map(auth);
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(h) = &h {
            headers.push(("Authorization", h.as_str()));
        }
        s.request(
            "PUT",
            "/api/v1/baselines",
            &headers,
            body.to_string().as_bytes(),
        )
    };
    // Only an admin token sets a baseline; bad bodies are 400; nothing is set meanwhile.
    assert_eq!(put(None, json!({"run": a})).error().0, 401);
    assert_eq!(put(Some(&pusher), json!({"run": a})).error().0, 403);
    for bad in [
        json!({"run": "../../etc/passwd"}),
        json!({"run": a, "bogus": 1}),
        json!({"force": true}),
        json!({"run": a, "note": "x".repeat(5000)}),
    ] {
        let (status, msg) = put(Some(&admin), bad.clone()).error();
        assert_eq!(status, 400, "{bad}: {msg}");
    }
    let (status, msg) = put(Some(&admin), json!({"run": "01NOSUCHRUN"})).error();
    assert_eq!(status, 404, "{msg}");
    assert!(
        s.get("/api/v1/baselines").json()["baselines"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let set = put(Some(&admin), json!({"run": a, "note": "first"}));
    assert_eq!(set.status, 200, "{}", String::from_utf8_lossy(&set.body));
    assert_eq!(set.json()["run_id"], a.as_str());
    assert_eq!(set.json()["note"], "first");
    let cli =
        crate::server::cli_json(&["baseline", "list", "--store", srv_store.to_str().unwrap()]);
    assert_eq!(cli["baselines"][0]["run_id"], a.as_str(), "the CLI sees it");

    // A pushed run is gated against it, and the verdicts are recorded for the trend.
    let o = push(b, &s.url, &f.store, Some(&pusher));
    assert!(o.status.success(), "{}", stderr(&o));
    let pushed = out_json(&o);
    crate::schema_cli::assert_conforms("push", &pushed);
    assert_eq!(pushed["gate"]["baseline_run"], a.as_str());
    let gate = s.get(&format!("/api/v1/runs/{b}/gate")).json();
    assert_eq!(pushed["gate"]["verdict"], gate["verdict"]);
    let human = yardstick()
        .args(["push", b, "--to", &s.url, "--store"])
        .arg(&f.store)
        .env("YARDSTICK_TOKEN", &pusher)
        .output()
        .unwrap();
    assert!(human.status.success(), "{}", stderr(&human));
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("already stored"),
        "{}",
        String::from_utf8_lossy(&human.stdout)
    );
    let t = s
        .get("/api/v1/trend?benchmark=server-tiny&metric=ttft_ms")
        .json();
    let statistic = t["statistic"].as_str().unwrap().to_string();
    let metric_verdict = gate["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "ttft_ms" && m["statistic"] == statistic.as_str())
        .unwrap_or_else(|| panic!("the gate has ttft_ms {statistic}: {gate}"))["verdict"]
        .clone();
    assert_eq!(
        trend_verdict(&t, b),
        (metric_verdict, json!(a)),
        "the trend shows what the gate said of b"
    );
    assert_eq!(
        trend_verdict(&t, a),
        (Value::Null, Value::Null),
        "a was never gated"
    );

    // Several metrics at once, one with its statistic named.
    let many = s
        .get("/api/v1/trends?benchmark=server-tiny&metrics=ttft_ms,tpot_ms:p50")
        .json();
    let trends = many["trends"].as_array().unwrap();
    assert_eq!(trends.len(), 2, "{many}");
    assert_eq!(trends[0], t, "the first is the single trend");
    assert_eq!(trends[1]["metric"], "tpot_ms");
    assert_eq!(trends[1]["statistic"], "p50");
    let (status, _) = s
        .get("/api/v1/trends?benchmark=server-tiny&metrics=")
        .error();
    assert_eq!(status, 400);

    // Replacing another run's baseline needs force: 409, then 200.
    let (status, msg) = put(Some(&admin), json!({"run": b})).error();
    assert_eq!(status, 409, "{msg}");
    assert_eq!(
        s.get("/api/v1/baselines").json()["baselines"][0]["run_id"],
        a.as_str()
    );
    let set = put(Some(&admin), json!({"run": b, "force": true}));
    assert_eq!(set.status, 200, "{}", String::from_utf8_lossy(&set.body));
    assert_eq!(
        s.get("/api/v1/baselines").json()["baselines"][0]["run_id"],
        b.as_str()
    );
}
