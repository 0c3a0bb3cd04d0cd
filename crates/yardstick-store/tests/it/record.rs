//! Replicate records written before records became a type still read, and a record read and
//! written again is the same JSON: the fixtures under `tests/fixtures/records` were written by
//! the yardstick of the day (see their README).

use serde_json::Value;
use yardstick_store::record::{Figures, ReplicateRecord};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/records/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Figures as comparable rows: (metric, statistic, value bits, unit), sorted.
fn rows(f: &Figures) -> Vec<(String, String, u64, String)> {
    let mut v: Vec<_> = f
        .measurements
        .iter()
        .map(|m| {
            (
                m.metric.clone(),
                m.statistic.clone(),
                m.value.to_bits(),
                m.unit().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn records_of_todays_format_read_and_write_back_the_same() {
    for name in [
        "serve.json",
        "command.json",
        "command-failed.json",
        "import-stream.json",
    ] {
        let bytes = fixture(name);
        let record = ReplicateRecord::read(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let original: Value = serde_json::from_slice(&bytes).unwrap();
        let again: Value = serde_json::from_slice(&record.to_bytes()).unwrap();
        assert_eq!(again, original, "{name} written back");
        assert_eq!(ReplicateRecord::read(&record.to_bytes()).unwrap(), record);
        assert!(record.figures.is_some(), "{name}");
    }

    let serve = ReplicateRecord::read(&fixture("serve.json")).unwrap();
    assert_eq!(serve.point, "component.0.serve/D(16,8)/concurrency=2");
    assert_eq!(serve.replicate, 0);
    assert!(!serve.failed());
    assert_eq!(
        serve.artifact(),
        Some("samples/component.0.serve_D_16_8_concurrency_2/r0.parquet")
    );
    let figures = serve.figures();
    assert_eq!(figures.n, 12);
    assert_eq!(figures.get("ttft_ms", "p50"), Some(51.202816));
    assert_eq!(figures.get("requests", "warmup"), Some(2.0));
    assert!(serve.started_at.is_some() && serve.ended_at.is_some());

    let ok = ReplicateRecord::read(&fixture("command.json")).unwrap();
    assert_eq!((ok.error(), ok.failed()), (None, false));
    let failed = ReplicateRecord::read(&fixture("command-failed.json")).unwrap();
    assert!(failed.failed());
    assert_eq!(failed.error(), Some("the command exited with status 5"));
    assert_eq!(failed.figures().get("exit_code", "value"), Some(5.0));

    let import = ReplicateRecord::read(&fixture("import-stream.json")).unwrap();
    assert_eq!(import.point, "import.stream");
    assert_eq!(import.artifact(), Some("imports/0-stream_omp.txt"));
    assert_eq!(import.samples, None);
    assert_eq!(import.started_at, None);
    assert!(!import.results.is_empty());
}

#[test]
fn a_record_of_yardstick_0_1_reads_its_figures_from_its_summary() {
    let old = ReplicateRecord::read(&fixture("serve-0.1.json")).unwrap();
    assert_eq!(old.figures, None);
    let today = ReplicateRecord::read(&fixture("serve.json")).unwrap();
    let (from_summary, recorded) = (old.figures(), today.figures());
    assert_eq!(from_summary.n, recorded.n);
    assert_eq!(rows(&from_summary), rows(&recorded));
    // Written back, it stays a record without figures.
    let again: Value = serde_json::from_slice(&old.to_bytes()).unwrap();
    assert!(again.get("figures").is_none());
}

#[test]
fn a_record_that_does_not_read_says_what_of_it() {
    let err = |bytes: &[u8]| ReplicateRecord::read(bytes).unwrap_err().to_string();
    assert!(
        err(b"{not json").starts_with("not JSON"),
        "{}",
        err(b"{not json")
    );
    assert_eq!(err(br#"{"replicate": 0, "summary": {}}"#), "no `point`");
    assert_eq!(err(br#"{"point": "p", "summary": {}}"#), "no `replicate`");
    let e = err(
        br#"{"point": "p", "replicate": 0, "figures": {"n": 1, "measurements": [{"metric": "m"}]}}"#,
    );
    assert!(e.starts_with("`figures`: measurements[0]"), "{e}");
    let e = err(br#"{"point": "p", "replicate": -1}"#);
    assert!(e.starts_with("`replicate`"), "{e}");
}
