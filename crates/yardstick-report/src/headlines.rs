//! What `yardstick run` prints last: each point's headline figures with their intervals, in
//! plan order, so a run ends on its answer rather than on a path.

use yardstick_spec::metrics::{CATALOGUE, MetricClass};
use yardstick_store::summary::RunSummary;

use crate::format::{human, human_ci, metric_unit};
use crate::terminal::plain_table;

/// A figure a point leads with: its metric, statistic and gate class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick<'a> {
    /// The metric (`ttft_ms`, `memory.triad`).
    pub metric: &'a str,
    /// The statistic (`p50`, `value`).
    pub statistic: &'a str,
    /// Its class in the catalogue.
    pub class: MetricClass,
}

impl Pick<'_> {
    /// `ttft_ms p50`, or the metric alone for a `value`.
    pub fn name(&self) -> String {
        if self.statistic == "value" {
            self.metric.to_string()
        } else {
            format!("{} {}", self.metric, self.statistic)
        }
    }
}

/// The figures a point leads with, in reading order, from the (metric, statistic) pairs it has:
/// the catalogue's headline statistics (`yardstick metrics`), in catalogue order. A point with
/// none of them (a micro benchmark's: `memory.triad`, `gemm.f32.peak`) leads with its `value`
/// figures of catalogue metrics instead: those the gate compares by default first, a sweep's
/// summary (`gemm.f32.peak`) rather than its sizes (`gemm.f32.1024`, left out when a summary
/// is there), then catalogue order, then the point's own order.
pub fn picks<'a>(have: &[(&'a str, &'a str)]) -> Vec<Pick<'a>> {
    let mut out = Vec::new();
    for d in CATALOGUE {
        for s in d.headline {
            if let Some((m, st)) = have.iter().find(|(m, st)| *m == d.id && st == s) {
                out.push(Pick {
                    metric: m,
                    statistic: st,
                    class: d.class,
                });
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    // (per size, not gated, catalogue position, point position)
    let mut values: Vec<((bool, bool, usize, usize), Pick<'a>)> = have
        .iter()
        .enumerate()
        .filter(|(_, (_, s))| *s == "value")
        .filter_map(|(i, (m, s))| {
            let pos = CATALOGUE.iter().position(|d| d.matches(m))?;
            let d = &CATALOGUE[pos];
            let sized = m
                .rsplit('.')
                .next()
                .is_some_and(|last| last.parse::<f64>().is_ok());
            let key = (sized, d.gated != Some("value"), pos, i);
            Some((
                key,
                Pick {
                    metric: m,
                    statistic: s,
                    class: d.class,
                },
            ))
        })
        .collect();
    values.sort_by_key(|v| v.0);
    if values.iter().any(|v| !v.0.0) {
        values.retain(|v| !v.0.0);
    }
    values.into_iter().map(|v| v.1).collect()
}

/// The first figure of `picks` and the first of another class (a serve point's request rate
/// and its TTFT p50, a training point's step time and tokens/s).
pub fn first_two<'a>(picks: &[Pick<'a>]) -> Vec<Pick<'a>> {
    let mut out: Vec<Pick<'a>> = Vec::new();
    for p in picks {
        if out.len() == 2 || out.first().is_some_and(|f| f.class == p.class) {
            continue;
        }
        out.push(*p);
    }
    out
}

/// The headline table of a run's summary: per point (plan order) its first headline figure
/// ([`picks`]) and the first of another class ([`first_two`]), each as the mean over
/// replicates with its interval in human units. A point that measured nothing says so. Empty
/// when the summary has no points.
pub fn table(summary: &RunSummary) -> String {
    let mut rows = Vec::new();
    for p in &summary.points {
        let have: Vec<(&str, &str)> = p
            .metrics
            .iter()
            .flat_map(|(m, stats)| stats.keys().map(move |s| (m.as_str(), s.as_str())))
            .collect();
        let picked = first_two(&picks(&have));
        if picked.is_empty() {
            let any = p.metrics.is_empty();
            rows.push(vec![
                p.id.clone(),
                if any {
                    "(measured nothing)".into()
                } else {
                    "(no headline metric; see the report)".into()
                },
                String::new(),
                String::new(),
            ]);
            continue;
        }
        for (i, pick) in picked.into_iter().enumerate() {
            let a = &p.metrics[pick.metric][pick.statistic];
            let unit = metric_unit(pick.metric, &a.unit);
            let ci = a.ci.map(|[lo, hi]| (lo, hi));
            rows.push(vec![
                if i == 0 { p.id.clone() } else { String::new() },
                pick.name(),
                human(a.mean, unit),
                human_ci(a.mean, ci, unit),
            ]);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let level = format!("{:.0} % CI", summary.confidence_level * 100.0);
    plain_table(&["POINT", "HEADLINE", "MEAN", &level], &rows)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use yardstick_store::summary::{Aggregate, PointAggregates, RunSummary};

    fn agg(mean: f64, ci: Option<[f64; 2]>, unit: &str) -> Aggregate {
        Aggregate {
            mean,
            ci,
            n: 3,
            unit: unit.into(),
        }
    }

    #[test]
    fn each_point_leads_with_its_headline_figures_in_human_units() {
        let mut serve = BTreeMap::new();
        serve.insert(
            "ttft_ms".to_string(),
            [("p50".to_string(), agg(51.3, Some([50.0, 52.6]), "ms"))].into(),
        );
        serve.insert(
            "tpot_ms".to_string(),
            [("p50".to_string(), agg(10.2, Some([10.0, 10.4]), "ms"))].into(),
        );
        serve.insert(
            "request_throughput".to_string(),
            [(
                "value".to_string(),
                agg(19.848, Some([19.0, 20.7]), "req/s"),
            )]
            .into(),
        );
        serve.insert(
            "output_token_throughput".to_string(),
            [(
                "value".to_string(),
                agg(1984.8, Some([1900.0, 2070.0]), "tok/s"),
            )]
            .into(),
        );
        let summary = RunSummary {
            confidence_level: 0.95,
            points: vec![
                PointAggregates {
                    id: "serve.D(64,16).c=8".into(),
                    layer: "component".into(),
                    metrics: serve,
                    ..Default::default()
                },
                PointAggregates {
                    id: "e2e.train".into(),
                    layer: "e2e".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let t = super::table(&summary);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].contains("POINT") && lines[0].contains("95 % CI"),
            "{t}"
        );
        // The serve point: its request rate, then the first figure of another class (TTFT p50,
        // not the token rate); its id on the first line only.
        assert!(lines[1].starts_with("serve.D(64,16).c=8"), "{t}");
        assert!(
            lines[1].contains("request_throughput") && lines[1].contains("req/s"),
            "{t}"
        );
        assert!(
            lines[2].starts_with(' ') && lines[2].contains("ttft_ms p50"),
            "{t}"
        );
        assert!(
            lines[2].contains("51.3 ms") && lines[2].contains("± 2.5 %"),
            "{t}"
        );
        assert!(
            !t.contains("output_token_throughput") && !t.contains("tpot"),
            "{t}"
        );
        assert!(
            lines[3].contains("e2e.train") && lines[3].contains("measured nothing"),
            "{t}"
        );
        assert_eq!(lines.len(), 4, "{t}");
        assert_eq!(super::table(&RunSummary::default()), "");
    }

    #[test]
    fn micro_points_lead_with_their_value_figures() {
        let names = |have: &[(&'static str, &'static str)]| -> Vec<String> {
            super::picks(have).iter().map(|p| p.name()).collect()
        };
        // STREAM: triad (gated) first, then the other kernels in the point's order.
        assert_eq!(
            names(&[
                ("memory.copy", "value"),
                ("memory.copy", "cv"),
                ("memory.scale", "value"),
                ("memory.add", "value"),
                ("memory.triad", "value"),
            ]),
            ["memory.triad", "memory.copy", "memory.scale", "memory.add"]
        );
        // GEMM: the peaks, not the sizes or the ratios per size.
        assert_eq!(
            names(&[
                ("gemm.f32.40", "value"),
                ("gemm.f32.peak", "value"),
                ("gemm.bf16.40", "value"),
                ("gemm.bf16.peak", "value"),
                ("gemm.bf16_vs_f32.40", "value"),
            ]),
            ["gemm.f32.peak", "gemm.bf16.peak"]
        );
        // Sizes alone: the sizes.
        assert_eq!(
            names(&[("gemm.f32.64", "value"), ("gemm.f32.40", "value")]),
            ["gemm.f32.64", "gemm.f32.40"]
        );
        // A point with a catalogue headline leads with it, micro values or not.
        assert_eq!(
            names(&[("memory.triad", "value"), ("wall_s", "value")]),
            ["wall_s"]
        );
        // GPU probes: the HBM copy (gated) at the largest size, not each size; the matmul
        // peaks; PCIe both ways; with several GPUs, each GPU's.
        assert_eq!(
            names(&[
                ("gpu.hbm.copy", "value"),
                ("gpu.hbm.read", "value"),
                ("gpu.hbm.write", "value"),
                ("gpu.hbm.copy.16777216", "value"),
            ])[0],
            "gpu.hbm.copy"
        );
        assert_eq!(
            names(&[
                ("gpu.gemm.bf16.4096", "value"),
                ("gpu.gemm.bf16.peak", "value"),
                ("gpu.gemm.fp8.4096", "value"),
                ("gpu.gemm.fp8.peak", "value"),
            ]),
            ["gpu.gemm.bf16.peak", "gpu.gemm.fp8.peak"]
        );
        assert_eq!(
            names(&[("gpu.pcie.h2d", "value"), ("gpu.pcie.d2h", "value")]),
            ["gpu.pcie.h2d", "gpu.pcie.d2h"]
        );
        assert_eq!(
            names(&[
                ("gpu1.gemm.bf16.peak", "value"),
                ("gpu1.gemm.bf16.8192", "value")
            ]),
            ["gpu1.gemm.bf16.peak"]
        );
        assert!(names(&[("no.such.metric", "value")]).is_empty());
        assert_eq!(
            super::first_two(&super::picks(&[
                ("memory.triad", "value"),
                ("memory.copy", "value")
            ]))
            .len(),
            1,
            "one class: one figure"
        );
    }
}
