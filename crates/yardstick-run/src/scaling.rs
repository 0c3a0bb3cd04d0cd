//! Scaling across the world sizes of an e2e entry (`worldSizes: [1, 2, 4]`): each world size is
//! a point; its replicates' throughputs (samples/s, else tokens/s, from the training analysis)
//! go to `yardstick_analysis::scaling::analyze_scaling` for the efficiency T(N) / (N·T(1)) and
//! Amdahl's serial fraction, as `bench exec --world-sizes` reports them.

use std::collections::BTreeMap;

use serde_json::Value;
use yardstick_analysis::scaling::{ScalingInput, analyze_scaling};

use yardstick_store::summary::LayerScaling;

use crate::plan::{Plan, PointWork};

/// The scaling of every e2e entry swept over two or more world sizes whose replicates reported
/// throughput (empty when there is none).
pub fn scaling(plan: &Plan, per_point: &[(String, Vec<Value>)]) -> Vec<LayerScaling> {
    let mut by_layer: BTreeMap<usize, Vec<(u32, &str)>> = BTreeMap::new();
    for p in &plan.points {
        if let PointWork::Command {
            layer,
            world_size: Some(n),
            ..
        } = &p.work
        {
            by_layer
                .entry(*layer)
                .or_default()
                .push((*n, p.id.as_str()));
        }
    }
    let mut out = Vec::new();
    for (layer, sizes) in by_layer {
        if sizes.len() < 2 {
            continue;
        }
        let replicates = |id: &str| {
            per_point
                .iter()
                .find(|(p, _)| p == id)
                .map(|(_, r)| r.as_slice())
                .unwrap_or_default()
        };
        let pick = |metric: &str| -> Option<Vec<ScalingInput>> {
            sizes
                .iter()
                .map(|(n, id)| {
                    let t: Vec<f64> = replicates(id)
                        .iter()
                        .filter(|r| r.get("error").is_none())
                        .filter_map(|r| r[metric]["aggregate"].as_f64())
                        .collect();
                    (!t.is_empty()).then_some(ScalingInput {
                        world_size: *n,
                        throughputs: t,
                    })
                })
                .collect()
        };
        let Some((metric, inputs)) = pick(yardstick_spec::metrics::id::SAMPLES_PER_S)
            .map(|i| (yardstick_spec::metrics::id::SAMPLES_PER_S, i))
            .or_else(|| {
                pick(yardstick_spec::metrics::id::TOKENS_PER_S)
                    .map(|i| (yardstick_spec::metrics::id::TOKENS_PER_S, i))
            })
        else {
            continue;
        };
        if let Ok(report) = analyze_scaling(metric, &inputs) {
            out.push(LayerScaling { layer, report });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Point;
    use serde_json::json;

    #[test]
    fn two_world_sizes_give_the_efficiency() {
        let point = |n: u32| Point {
            id: format!("e2e.0.command/ws={n}"),
            slug: format!("ws{n}"),
            layer: "e2e".into(),
            work: PointWork::Command {
                layer: 0,
                argv: vec!["train".into()],
                world_size: Some(n),
                timeout: None,
            },
            treatment: None,
        };
        let plan = Plan {
            name: "t".into(),
            points: vec![point(1), point(8)],
            replicates: 3,
            steps: Vec::new(),
            estimate_upper_s: None,
            treatments: Vec::new(),
        };
        let reps = |xs: &[f64]| -> Vec<Value> {
            xs.iter()
                .map(|x| json!({"samples_per_s": {"aggregate": x}}))
                .collect()
        };
        // 100 samples/s on 1 GPU, 650 on 8: 650 / (8 * 100) = 81.25 % (docs/methodology.md#training).
        let per_point = vec![
            (
                "e2e.0.command/ws=1".to_string(),
                reps(&[99.0, 100.0, 101.0]),
            ),
            (
                "e2e.0.command/ws=8".to_string(),
                reps(&[640.0, 650.0, 660.0]),
            ),
        ];
        let v = scaling(&plan, &per_point);
        let s = &v[0];
        assert_eq!(s.report.metric, "samples_per_s");
        assert_eq!(s.layer, 0);
        let eff = s.report.points[1].efficiency;
        assert!((eff - 0.8125).abs() < 1e-12, "{s:?}");
        // In summary.json the layer sits beside the report's fields.
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(
            (json["layer"].clone(), json["metric"].clone()),
            (json!(0), json!("samples_per_s"))
        );
        // One world size: nothing to say.
        let one = Plan {
            points: vec![point(1)],
            ..plan.clone()
        };
        assert!(scaling(&one, &per_point).is_empty());
    }
}
