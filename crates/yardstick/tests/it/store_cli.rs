//! `yardstick runs|query|export|gc` driven through the built binary against a real store: a
//! SQLite warehouse filled through the library, and run directories written by `RunWriter`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use yardstick_store::run::{RunWriter, ToolInfo};
use yardstick_store::warehouse::{
    FactRow, PointRow, ReplicateRow, RunRow, open_warehouse, resolve_since,
};

fn yardstick(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yardstick"));
    c.env("NO_COLOR", "1").env("YARDSTICK_STORE", store);
    c
}

fn run(store: &Path, args: &[&str]) -> Output {
    yardstick(store).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_ok(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// Three runs: two `serve` on cpu-a (one 10 days old), one `train` on cpu-b.
fn store_with_runs(store: &Path) {
    let mut w = open_warehouse(store.to_str().unwrap()).unwrap();
    let runs = [
        ("01JAAAAAAAAAAAAAAAAAAAAAAA", "serve", "cpu-a", "10d"),
        ("01JBBBBBBBBBBBBBBBBBBBBBBB", "serve", "cpu-a", "2h"),
        ("01JCCCCCCCCCCCCCCCCCCCCCCC", "train", "cpu-b", "1h"),
    ];
    for (i, (id, name, profile, age)) in runs.into_iter().enumerate() {
        let t = resolve_since(age).unwrap();
        w.upsert_run(&RunRow {
            run_id: id.into(),
            name: name.into(),
            status: yardstick_store::RunStatus::Complete,
            mode: Some("publication".into()),
            spec_sha256: format!("{name:0>64}"),
            machine_profile: Some(profile.into()),
            env_sha256: None,
            started_at: t.clone(),
            ended_at: Some(t.clone()),
            tool_version: "0.1.0".into(),
            git_commit: None,
            location: store.display().to_string(),
        })
        .unwrap();
        w.upsert_points(&[PointRow {
            run_id: id.into(),
            point_id: "component.0/c=8".into(),
            layer: "component".into(),
            kind: "serve".into(),
            params: json!({"concurrency": 8}),
        }])
        .unwrap();
        w.upsert_replicate(&ReplicateRow {
            run_id: id.into(),
            point_id: "component.0/c=8".into(),
            replicate: 0,
            status: yardstick_store::ReplicateStatus::Complete,
            started_at: t.clone(),
            ended_at: Some(t),
            artifact: Some("samples/r0.parquet".into()),
        })
        .unwrap();
        let fact = |replicate: Option<u32>, value: f64| FactRow {
            run_id: id.into(),
            point_id: "component.0/c=8".into(),
            replicate,
            metric: "ttft_ms".into(),
            statistic: "p50".into(),
            value,
            ci_lo: Some(value - 1.0),
            ci_hi: Some(value + 1.0),
            unit: "ms".into(),
            n: 300,
            artifact: replicate.map(|_| "samples/r0.parquet".into()),
            row_group: replicate,
        };
        w.upsert_facts(&[fact(Some(0), 50.0 + i as f64), fact(None, 50.5 + i as f64)])
            .unwrap();
    }
}

#[test]
fn runs_list_filters_and_prints_tables_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    store_with_runs(&store);

    let all = json_ok(&run(&store, &["runs", "list", "--json"]));
    crate::schema_cli::assert_conforms("runs-list", &all);
    let ids: Vec<&str> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "01JCCCCCCCCCCCCCCCCCCCCCCC",
            "01JBBBBBBBBBBBBBBBBBBBBBBB",
            "01JAAAAAAAAAAAAAAAAAAAAAAA"
        ]
    );
    assert_eq!(all["runs"][0]["machine_profile"], "cpu-b");
    // The table: a header, then one row per run in the same order, styles off a terminal.
    let table = run(&store, &["runs", "list"]);
    assert!(table.status.success(), "{}", stderr(&table));
    let text = stdout(&table);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["RUN", "NAME", "STATUS", "PROFILE", "STARTED", "(UTC)"],
        "{text}"
    );
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[1].starts_with("01JCCCCCCCCCCCCCCCCCCCCCCC") && lines[1].contains("cpu-b"));
    assert!(!text.contains('\x1b'), "{text:?}");

    let recent = json_ok(&run(
        &store,
        &[
            "runs",
            "list",
            "--profile",
            "cpu-a",
            "--since",
            "7d",
            "--json",
        ],
    ));
    assert_eq!(recent["runs"].as_array().unwrap().len(), 1);
    assert_eq!(recent["runs"][0]["run_id"], "01JBBBBBBBBBBBBBBBBBBBBBBB");
    let named = json_ok(&run(
        &store,
        &["runs", "list", "--name", "serve", "--limit", "1", "--json"],
    ));
    assert_eq!(named["runs"][0]["run_id"], "01JBBBBBBBBBBBBBBBBBBBBBBB");
    assert_eq!(named["runs"].as_array().unwrap().len(), 1);

    let table = run(&store, &["runs", "list", "--name", "serve"]);
    assert!(table.status.success(), "{}", stderr(&table));
    let text = stdout(&table);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("RUN") && lines[0].contains("PROFILE"),
        "{text}"
    );
    assert!(lines[1].starts_with("01JBBBBBBBBBBBBBBBBBBBBBBB  serve  complete  cpu-a"));

    let bad = run(&store, &["runs", "list", "--since", "last tuesday"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("last tuesday"));

    let none = dir.path().join("no-store");
    let missing = run(&none, &["runs", "list"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no warehouse"),
        "{}",
        stderr(&missing)
    );
    assert!(stderr(&missing).contains("hint:"));
    assert!(!none.exists(), "reading commands never create a store");
}

#[test]
fn runs_show_prints_a_run_by_id_or_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    store_with_runs(&store);
    let shown = json_ok(&run(
        &store,
        &["runs", "show", "01JBBBBBBBBBBBBBBBBBBBBBBB", "--json"],
    ));
    crate::schema_cli::assert_conforms("runs-show", &shown);
    assert_eq!(shown["run"]["name"], "serve");
    assert_eq!(shown["points"][0]["params"]["concurrency"], 8);
    assert_eq!(shown["replicates"].as_array().unwrap().len(), 1);
    assert_eq!(shown["facts"].as_array().unwrap().len(), 2);
    assert_eq!(
        shown["facts"][0]["replicate"],
        Value::Null,
        "aggregate first"
    );
    assert_eq!(shown["facts"][0]["value"], 51.5);

    let text = run(&store, &["runs", "show", "01jc"]);
    assert!(text.status.success(), "{}", stderr(&text));
    let out = stdout(&text);
    assert!(out.contains("01JCCCCCCCCCCCCCCCCCCCCCCC"), "{out}");
    assert!(out.contains("1 points, 1/1 replicates complete"), "{out}");
    // The aggregate in its unit, its interval as ± % of it (1 of 52.5 ms is 1.9 %).
    let fact_line = out.lines().find(|l| l.contains("ttft_ms")).unwrap();
    assert!(
        fact_line.contains("all") && fact_line.contains("52.5 ms"),
        "{out}"
    );
    assert!(fact_line.contains("± 1.9 %"), "{out}");
    assert!(stderr(&text).contains("1 per-replicate facts not shown"));

    let ambiguous = run(&store, &["runs", "show", "01J"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    assert!(stderr(&ambiguous).contains("matches 3 runs"));
    let unknown = run(&store, &["runs", "show", "01ZZZ"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("runs list"));
}

#[test]
fn query_is_read_only_and_prints_rows() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    store_with_runs(&store);
    let trend = "SELECT r.name, COUNT(*) AS runs, AVG(f.value) AS p50_ttft_ms FROM facts f \
                 JOIN runs r USING (run_id) WHERE f.metric = 'ttft_ms' AND f.statistic = 'p50' \
                 AND f.replicate = -1 GROUP BY r.name ORDER BY r.name";
    let q = json_ok(&run(&store, &["query", trend, "--json"]));
    crate::schema_cli::assert_conforms("query", &q);
    assert_eq!(q["columns"], json!(["name", "runs", "p50_ttft_ms"]));
    assert_eq!(q["rows"], json!([["serve", 2, 51.0], ["train", 1, 52.5]]));

    let table = run(&store, &["query", trend]);
    assert!(table.status.success());
    assert_eq!(
        stdout(&table),
        "name   runs  p50_ttft_ms\nserve     2           51\ntrain     1         52.5\n"
    );
    assert!(stderr(&table).contains("(2 rows)"));

    for bad in [
        "DELETE FROM facts",
        "DROP TABLE runs",
        "SELECT * FROM nowhere",
        "",
    ] {
        let o = run(&store, &["query", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
    }
    let count = json_ok(&run(
        &store,
        &["query", "SELECT COUNT(*) FROM facts", "--json"],
    ));
    assert_eq!(count["rows"][0][0], 6, "nothing was deleted");
}

#[test]
fn export_writes_the_parquet_lake() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    store_with_runs(&store);
    let lake = dir.path().join("lake");
    let r = json_ok(&run(
        &store,
        &["export", "--parquet", lake.to_str().unwrap(), "--json"],
    ));
    crate::schema_cli::assert_conforms("export", &r);
    assert_eq!(r["facts"], 6);
    assert_eq!(r["runs"], 3);
    let files: Vec<&str> = r["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(!files.is_empty());
    for f in &files {
        assert!(f.starts_with("facts/profile=cpu-"), "{f}");
        assert!(f.ends_with("/part-0.parquet"), "{f}");
        let bytes = std::fs::read(lake.join(f)).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
    }
    let human = run(&store, &["export", "--parquet", lake.to_str().unwrap()]);
    assert!(human.status.success(), "{}", stderr(&human));
    assert!(stderr(&human).contains("exported 6 facts of 3 runs"));
    let missing = run(&store, &["export"]);
    assert_eq!(missing.status.code(), Some(2), "--parquet is required");
}

#[test]
fn gc_drops_raw_files_of_old_runs_and_refuses_urls_and_bad_ages() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let tool = ToolInfo {
        name: "yardstick".into(),
        version: "0.1.0".into(),
        git_commit: None,
    };
    let mut w = RunWriter::create(&store.join("runs"), "serve", "spec", tool).unwrap();
    w.add("samples/r0.parquet", &[1u8; 1000], "samples")
        .unwrap();
    w.add("logs/server.log", b"log\n", "log").unwrap();
    w.add("summary.json", b"{}", "summary").unwrap();
    let run_dir = w.dir().to_path_buf();
    w.complete(None).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));

    let kept = json_ok(&run(&store, &["gc", "--keep-raw", "30d", "--json"]));
    assert_eq!(kept["pruned"], json!([]));
    let dry = json_ok(&run(
        &store,
        &["gc", "--keep-raw", "0s", "--dry-run", "--json"],
    ));
    assert_eq!(dry["bytes_freed"], 1004);
    crate::schema_cli::assert_conforms("gc", &kept);
    crate::schema_cli::assert_conforms("gc", &dry);
    assert!(run_dir.join("samples/r0.parquet").exists());

    let human = run(&store, &["gc", "--keep-raw", "0s"]);
    assert!(human.status.success(), "{}", stderr(&human));
    assert!(stdout(&human).contains("RUN"), "{}", stdout(&human));
    assert!(
        stderr(&human).contains("1004 bytes freed"),
        "{}",
        stderr(&human)
    );
    assert!(!run_dir.join("samples").exists());
    assert!(run_dir.join("summary.json").exists());
    assert!(run_dir.join("gc.json").exists());

    let url = run(
        &store,
        &[
            "gc",
            "--keep-raw",
            "30d",
            "--store",
            "postgresql://u@127.0.0.1:1/db",
        ],
    );
    assert_eq!(url.status.code(), Some(2));
    assert!(stderr(&url).contains("store directory"));
    let age = run(&store, &["gc", "--keep-raw", "30 days"]);
    assert_eq!(age.status.code(), Some(2));
    assert!(stderr(&age).contains("30d"), "{}", stderr(&age));
}
