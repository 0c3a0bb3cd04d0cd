//! `yardstick metrics`: the catalogue, for people and as JSON.

use crate::common::{json, yardstick};

#[test]
fn metrics_lists_the_catalogue_as_json_and_as_a_table() {
    let out = yardstick().args(["--json", "metrics"]).output().unwrap();
    assert!(out.status.success());
    let v = json(&out);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), yardstick_spec::metrics::CATALOGUE.len());
    let ttft = rows.iter().find(|r| r["id"] == "ttft_ms").unwrap();
    assert_eq!(ttft["unit"], "ms");
    assert_eq!(ttft["direction"], "lower_is_better");
    assert_eq!(ttft["class"], "latency");
    assert_eq!(ttft["gated"], "p50");
    assert!(
        ttft["statistics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "p99")
    );
    // Every gated metric names a direction the gate can use.
    for r in rows.iter().filter(|r| !r["gated"].is_null()) {
        assert!(
            r["direction"] == "higher_is_better" || r["direction"] == "lower_is_better",
            "{r}"
        );
    }

    // A filter, and the table a person reads.
    let out = yardstick().args(["metrics", "gemm"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("metric "), "{text}");
    // The CPU's three GEMM metrics and the GPU's two (`gpu<i?>.gemm.…`).
    assert_eq!(lines.len(), 1 + 3 + 2, "{text}");
    assert!(
        lines
            .iter()
            .skip(1)
            .all(|l| l.starts_with("gemm.") || l.starts_with("gpu<i?>.gemm.")),
        "{text}"
    );
    assert!(
        text.contains("GFLOP/s") && text.contains("TFLOP/s"),
        "{text}"
    );

    // Nothing matches: said on stderr, still exit 0.
    let out = yardstick().args(["metrics", "no-such"]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no metric matches"));
}
