//! Node-to-node consistency: the same micro benchmarks measured on every node of a fleet (or an
//! allocation), each node's figures against the fleet's, and the nodes that stand out flagged
//! with the evidence. One slow node sets the speed of every synchronised job it is part of
//! ("the slowest rank wins"), so a scheduler prologue wants to drain it before a job starts.
//!
//! The reference is the fleet median of each metric (with two nodes, the better one: a median
//! of two says nothing about which is off). A node is flagged when its figure lies outside the
//! metric's tolerance band around the reference *and* its own confidence interval does too, so
//! a noisy measurement that merely could be out is reported, not flagged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One figure of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeFigure {
    /// Metric (`gemm.f32.peak`, `memory.triad`).
    pub metric: String,
    /// The estimate.
    pub value: f64,
    /// Its confidence interval, when the measurement has one.
    pub ci: Option<[f64; 2]>,
    /// Unit.
    pub unit: String,
    /// Larger is better (bandwidths, FLOP/s) or smaller (latencies).
    pub higher_is_better: bool,
}

/// Tolerances, in percent of the reference, by kind of figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tolerances {
    /// Compute (`gemm.*`, GPU `gpu*.gemm.*`), storage and network throughput and latency
    /// (default 5 %).
    pub throughput_pct: f64,
    /// Memory bandwidth (`memory.*`, default 2 %): nodes of one model barely differ there, so
    /// a small gap already means a bad DIMM or a wrong NUMA setting. The GPU bandwidths get it
    /// too — HBM (`gpu*.hbm.*`), host to device (`gpu*.pcie.*`) and device to device
    /// (`gpu*.p2p.*`): a slower HBM stack, a link trained at a lower PCIe generation or width,
    /// or a peer path through the host instead of NVLink is a node fault, not noise.
    pub memory_pct: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            throughput_pct: 5.0,
            memory_pct: 2.0,
        }
    }
}

impl Tolerances {
    /// The tolerance of `metric`, in percent: the memory tolerance for `memory.*` and the GPU
    /// bandwidths (`gpu.hbm.*`, `gpu.pcie.*`, `gpu.p2p.*`, or `gpu<i>.…` on a node with several
    /// GPUs), the throughput tolerance for the rest (GPU GEMM `gpu*.gemm.*` included).
    pub fn of(&self, metric: &str) -> f64 {
        let gpu_bandwidth = crate::roofline::split_gpu(metric).is_some_and(|(_, rest)| {
            ["hbm", "pcie", "p2p"].contains(&rest.split('.').next().unwrap_or_default())
        });
        if metric.starts_with("memory.") || gpu_bandwidth {
            self.memory_pct
        } else {
            self.throughput_pct
        }
    }
}

/// One node's figure against the fleet's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeCell {
    /// Node.
    pub node: String,
    /// Its figure.
    pub value: f64,
    /// Its interval.
    pub ci: Option<[f64; 2]>,
    /// `(value - reference) / reference`, in percent.
    pub deviation_pct: f64,
    /// Outside the band, interval included.
    pub flagged: bool,
    /// Outside the band by its value, but its interval reaches into it: worth a re-run.
    pub uncertain: bool,
}

/// One metric across the fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MetricRow {
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// The reference: the fleet median (two nodes: the better one).
    pub reference: f64,
    /// How the reference was taken: `median` or `best of two`.
    pub reference_kind: String,
    /// The band's half-width, percent.
    pub tolerance_pct: f64,
    /// Every node that measured the metric, in node order.
    pub nodes: Vec<NodeCell>,
}

/// The check of a fleet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodesReport {
    /// The nodes, in the order given.
    pub nodes: Vec<String>,
    /// Tolerances applied.
    pub tolerances: Tolerances,
    /// One row per metric measured on at least two nodes.
    pub metrics: Vec<MetricRow>,
    /// The flagged nodes, each with its evidence (one sentence per flagged figure).
    pub flagged: BTreeMap<String, Vec<String>>,
    /// Metrics some node lacks, and similar remarks.
    pub warnings: Vec<String>,
}

impl NodesReport {
    /// Whether every node passed.
    pub fn passed(&self) -> bool {
        self.flagged.is_empty()
    }
}

/// A node's figures from its `yardstick bench micro --json` output (`results[]`: name, value,
/// ci, unit, higher_is_better).
pub fn figures_from_micro_json(
    v: &serde_json::Value,
) -> Result<Vec<NodeFigure>, crate::MicroDocError> {
    let results = v["results"]
        .as_array()
        .ok_or(crate::MicroDocError::NoMicroResults)?;
    let mut figures = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let (Some(metric), Some(value)) = (r["name"].as_str(), r["value"].as_f64()) else {
            return Err(crate::MicroDocError::Unnamed(i));
        };
        let ci = match (r["ci"][0].as_f64(), r["ci"][1].as_f64()) {
            (Some(a), Some(b)) => Some([a, b]),
            _ => None,
        };
        figures.push(NodeFigure {
            metric: metric.to_string(),
            value,
            ci,
            unit: r["unit"].as_str().unwrap_or_default().to_string(),
            higher_is_better: r["higher_is_better"].as_bool().unwrap_or(true),
        });
    }
    Ok(figures)
}

/// Checks `fleet` (node name → its figures) against `tol`. Needs at least two nodes.
pub fn check(fleet: &[(String, Vec<NodeFigure>)], tol: Tolerances) -> NodesReport {
    let nodes: Vec<String> = fleet.iter().map(|(n, _)| n.clone()).collect();
    let mut by_metric: BTreeMap<&str, Vec<(&str, &NodeFigure)>> = BTreeMap::new();
    for (node, figures) in fleet {
        for f in figures.iter().filter(|f| f.value.is_finite()) {
            by_metric.entry(&f.metric).or_default().push((node, f));
        }
    }
    let mut metrics = Vec::new();
    let mut flagged: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut warnings = Vec::new();
    for (metric, cells) in by_metric {
        if cells.len() < 2 {
            continue;
        }
        if cells.len() < fleet.len() {
            let have: Vec<&str> = cells.iter().map(|c| c.0).collect();
            let missing: Vec<&str> = nodes
                .iter()
                .map(String::as_str)
                .filter(|n| !have.contains(n))
                .collect();
            warnings.push(format!(
                "{metric} was not measured on {}",
                missing.join(", ")
            ));
        }
        let higher = cells[0].1.higher_is_better;
        let values: Vec<f64> = cells.iter().map(|c| c.1.value).collect();
        let (reference, reference_kind) = if values.len() == 2 {
            let best = if higher {
                values[0].max(values[1])
            } else {
                values[0].min(values[1])
            };
            (best, "best of two")
        } else {
            (yardstick_stats::descriptive::median(&values), "median")
        };
        let t = tol.of(metric);
        let (lo, hi) = (reference * (1.0 - t / 100.0), reference * (1.0 + t / 100.0));
        let mut row = MetricRow {
            metric: metric.to_string(),
            unit: cells[0].1.unit.clone(),
            reference,
            reference_kind: reference_kind.into(),
            tolerance_pct: t,
            nodes: Vec::new(),
        };
        for (node, f) in cells {
            let deviation_pct = if reference != 0.0 {
                (f.value - reference) / reference * 100.0
            } else {
                0.0
            };
            let out = f.value < lo || f.value > hi;
            // The interval must lie outside the band too (on the same side) to flag.
            let ci_out = match f.ci {
                Some([a, b]) => b < lo || a > hi,
                None => out,
            };
            let cell = NodeCell {
                node: node.to_string(),
                value: f.value,
                ci: f.ci,
                deviation_pct,
                flagged: out && ci_out,
                uncertain: out && !ci_out,
            };
            if cell.flagged {
                let worse = (f.value < reference) == higher;
                flagged.entry(node.to_string()).or_default().push(format!(
                    "{metric} {} {} is {:.1}% {} the fleet {reference_kind} {} (tolerance ±{t}%){}",
                    fmt(f.value),
                    f.unit,
                    deviation_pct.abs(),
                    if f.value < reference {
                        "below"
                    } else {
                        "above"
                    },
                    fmt(reference),
                    match (f.ci, worse) {
                        (Some([a, b]), _) => format!(
                            ", its interval [{}, {}] entirely outside the band{}",
                            fmt(a),
                            fmt(b),
                            if worse {
                                ""
                            } else {
                                " (better, but not like the others)"
                            }
                        ),
                        (None, false) => " (better, but not like the others)".into(),
                        (None, true) => String::new(),
                    }
                ));
            }
            row.nodes.push(cell);
        }
        metrics.push(row);
    }
    if metrics.is_empty() {
        warnings.push("no metric was measured on two nodes or more: nothing to compare".into());
    }
    NodesReport {
        nodes,
        tolerances: tol,
        metrics,
        flagged,
        warnings,
    }
}

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(metric: &str, value: f64, ci: Option<[f64; 2]>) -> NodeFigure {
        NodeFigure {
            metric: metric.into(),
            value,
            ci,
            unit: if metric.starts_with("memory") {
                "GB/s".into()
            } else {
                "GFLOP/s".into()
            },
            higher_is_better: true,
        }
    }

    fn fleet(slow: f64, slow_ci: Option<[f64; 2]>) -> Vec<(String, Vec<NodeFigure>)> {
        let mut v: Vec<(String, Vec<NodeFigure>)> = ["n1", "n2", "n3", "n4"]
            .iter()
            .zip([100.0, 101.0, 99.5, 100.4])
            .map(|(n, g)| {
                (
                    n.to_string(),
                    vec![
                        fig("gemm.f32.peak", g, Some([g - 0.5, g + 0.5])),
                        fig("memory.triad", 20.0, Some([19.9, 20.1])),
                    ],
                )
            })
            .collect();
        v[2].1[0] = fig("gemm.f32.peak", slow, slow_ci);
        v
    }

    #[test]
    fn an_injected_slow_node_is_flagged_with_its_evidence() {
        let r = check(&fleet(82.0, Some([81.0, 83.0])), Tolerances::default());
        assert!(!r.passed());
        assert_eq!(r.flagged.keys().collect::<Vec<_>>(), ["n3"]);
        let e = &r.flagged["n3"][0];
        // Median of 100, 101, 82, 100.4 is 100.2: 82 is 18.2 % below.
        assert!(
            e.starts_with("gemm.f32.peak 82.000 GFLOP/s is 18.2% below the fleet median 100"),
            "{e}"
        );
        assert!(
            e.contains("interval [81.000, 83.000] entirely outside the band"),
            "{e}"
        );
        let gemm = r
            .metrics
            .iter()
            .find(|m| m.metric == "gemm.f32.peak")
            .unwrap();
        assert_eq!(gemm.reference_kind, "median");
        assert!(gemm.nodes.iter().filter(|c| c.flagged).count() == 1);
        // Memory bandwidth is even across the fleet: nobody flagged there.
        let mem = r
            .metrics
            .iter()
            .find(|m| m.metric == "memory.triad")
            .unwrap();
        assert_eq!(mem.tolerance_pct, 2.0);
        assert!(mem.nodes.iter().all(|c| !c.flagged && !c.uncertain));
    }

    #[test]
    fn a_noisy_node_that_only_might_be_slow_is_uncertain_not_flagged() {
        // 94 is 6 % below, but its interval reaches 99: it could be in the band.
        let r = check(&fleet(94.0, Some([89.0, 99.0])), Tolerances::default());
        assert!(r.passed(), "{:?}", r.flagged);
        let gemm = r
            .metrics
            .iter()
            .find(|m| m.metric == "gemm.f32.peak")
            .unwrap();
        let n3 = gemm.nodes.iter().find(|c| c.node == "n3").unwrap();
        assert!(n3.uncertain && !n3.flagged);
        // Within tolerance: neither.
        let r = check(&fleet(97.0, None), Tolerances::default());
        assert!(r.passed());
    }

    #[test]
    fn gpu_bandwidths_get_the_memory_tolerance_and_gpu_gemm_the_throughput_one() {
        let t = Tolerances::default();
        for bandwidth in [
            "gpu.hbm.copy",
            "gpu.hbm.read",
            "gpu.hbm.write.4294967296",
            "gpu.pcie.h2d",
            "gpu.pcie.d2h",
            "gpu.p2p.0to1",
            "gpu3.hbm.copy",
            "gpu7.p2p.7to0",
            "memory.triad",
        ] {
            assert_eq!(t.of(bandwidth), 2.0, "{bandwidth}");
        }
        for compute in [
            "gpu.gemm.bf16.peak",
            "gpu.gemm.fp8.8192",
            "gpu1.gemm.tf32.peak",
            "gemm.f32.peak",
            // Not GPU results: the throughput tolerance as any other figure.
            "gpus.hbm.copy",
            "gpux.pcie.h2d",
        ] {
            assert_eq!(t.of(compute), 5.0, "{compute}");
        }
        let custom = Tolerances {
            throughput_pct: 8.0,
            memory_pct: 1.0,
        };
        assert_eq!(custom.of("gpu0.hbm.copy"), 1.0);
        assert_eq!(custom.of("gpu0.gemm.bf16.peak"), 8.0);
    }

    /// Four H200 nodes: HBM copy ~4300 GB/s, bf16 GEMM peak ~790 TFLOP/s.
    fn h200_fleet(slow_hbm: f64, slow_gemm: f64) -> Vec<(String, Vec<NodeFigure>)> {
        let gpu = |metric: &str, value: f64, unit: &str| NodeFigure {
            metric: metric.into(),
            value,
            ci: Some([value * 0.998, value * 1.002]),
            unit: unit.into(),
            higher_is_better: true,
        };
        [
            ("h200-a", 4310.0, 791.0),
            ("h200-b", 4296.0, 787.0),
            ("h200-c", slow_hbm, slow_gemm),
            ("h200-d", 4303.0, 794.0),
        ]
        .into_iter()
        .map(|(node, hbm, gemm)| {
            (
                node.to_string(),
                vec![
                    gpu("gpu.hbm.copy", hbm, "GB/s"),
                    gpu("gpu.pcie.h2d", 53.8, "GB/s"),
                    gpu("gpu.gemm.bf16.peak", gemm, "TFLOP/s"),
                ],
            )
        })
        .collect()
    }

    #[test]
    fn a_slow_hbm_is_flagged_at_2_percent_and_gemm_tolerates_5() {
        // h200-c: HBM 3.4 % below the median, GEMM 3.8 % below: only the HBM is flagged.
        let r = check(&h200_fleet(4150.0, 760.0), Tolerances::default());
        assert_eq!(r.flagged.keys().collect::<Vec<_>>(), ["h200-c"]);
        let evidence = &r.flagged["h200-c"];
        assert_eq!(evidence.len(), 1, "{evidence:?}");
        // Median of 4310, 4296, 4150, 4303 is 4299.5.
        assert!(
            evidence[0].starts_with(
                "gpu.hbm.copy 4150 GB/s is 3.5% below the fleet median 4300 (tolerance ±2%)"
            ),
            "{}",
            evidence[0]
        );
        let row = |m: &str| r.metrics.iter().find(|x| x.metric == m).unwrap();
        assert_eq!(row("gpu.hbm.copy").tolerance_pct, 2.0);
        assert_eq!(row("gpu.pcie.h2d").tolerance_pct, 2.0);
        let gemm = row("gpu.gemm.bf16.peak");
        assert_eq!(gemm.tolerance_pct, 5.0);
        assert_eq!(gemm.unit, "TFLOP/s");
        assert!(gemm.nodes.iter().all(|c| !c.flagged && !c.uncertain));
        // A GEMM 8 % down is flagged too.
        let r = check(&h200_fleet(4300.0, 727.0), Tolerances::default());
        assert_eq!(r.flagged["h200-c"].len(), 1);
        assert!(r.flagged["h200-c"][0].starts_with("gpu.gemm.bf16.peak 727 TFLOP/s"));
    }

    #[test]
    fn two_nodes_compare_against_the_better_and_missing_metrics_are_said() {
        let fleet = vec![
            (
                "a".to_string(),
                vec![
                    fig("gemm.f32.peak", 100.0, None),
                    fig("memory.triad", 20.0, None),
                ],
            ),
            ("b".to_string(), vec![fig("gemm.f32.peak", 90.0, None)]),
        ];
        let r = check(&fleet, Tolerances::default());
        assert_eq!(r.flagged.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(r.metrics[0].reference_kind, "best of two");
        assert_eq!(r.metrics[0].reference, 100.0);
        // memory.triad on one node only: no row, and no warning that compares nothing.
        assert_eq!(r.metrics.len(), 1);
    }
}
