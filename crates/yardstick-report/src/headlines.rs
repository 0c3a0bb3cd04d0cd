//! What `yardstick run` prints last: each point's headline figures with their intervals, in
//! plan order, so a run ends on its answer rather than on a path.

use yardstick_store::summary::RunSummary;

use crate::format::{human, human_ci, metric_unit};
use crate::terminal::plain_table;

/// The headline table of a run's summary: per point (plan order) its first headline figure —
/// of the catalogue's headline statistics (`yardstick metrics`), in catalogue order — and the
/// first of another class (a serve point's request rate and its TTFT p50, a training point's
/// step time and tokens/s), each as the mean over replicates with its interval in human units.
/// A point that measured nothing says so. Empty when the summary has no points.
pub fn table(summary: &RunSummary) -> String {
    let mut rows = Vec::new();
    for p in &summary.points {
        let mut picked: Vec<(String, &yardstick_store::summary::Aggregate)> = Vec::new();
        let mut first_class = None;
        for d in yardstick_spec::metrics::CATALOGUE {
            for s in d.headline {
                let Some(a) = p.metrics.get(d.id).and_then(|m| m.get(*s)) else {
                    continue;
                };
                if first_class.is_some_and(|c| c == d.class) || picked.len() == 2 {
                    continue;
                }
                first_class.get_or_insert(d.class);
                let name = if *s == "value" {
                    d.id.to_string()
                } else {
                    format!("{} {s}", d.id)
                };
                picked.push((name, a));
            }
        }
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
        for (i, (name, a)) in picked.into_iter().enumerate() {
            let metric = name.split(' ').next().unwrap_or(&name);
            let unit = metric_unit(metric, &a.unit);
            let ci = a.ci.map(|[lo, hi]| (lo, hi));
            rows.push(vec![
                if i == 0 { p.id.clone() } else { String::new() },
                name,
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
}
