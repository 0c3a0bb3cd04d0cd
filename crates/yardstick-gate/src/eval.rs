//! `bench eval --compare`: two eval result files compared for significance (McNemar on paired
//! correctness, a paired bootstrap of BLEU / ROUGE-L / F1 — crate `yardstick-eval`) and judged
//! with the regression gate's verdict per task — the same paired item bootstrap of the ratio
//! against a tolerance in points, the same Holm correction and the same verdict rules as
//! [`crate::gate()`] applies to eval points, by the same code.

use serde::Serialize;
use yardstick_eval::TaskComparison;
use yardstick_spec::Tolerances;
use yardstick_spec::metrics::id;

use crate::compare as cmp;
use crate::error::GateError;
use crate::gate::{
    MetricClass, MetricVerdict, Verdict, decide, direction_of, metric_tolerance, ratio_bound,
};
use crate::paired::{ItemStatistic, Items, paired};

/// How to judge an eval comparison.
#[derive(Debug, Clone)]
pub struct EvalGateOptions {
    /// Tolerances (accuracy and quality scores in points; `None`: the gate's defaults).
    pub tolerances: Option<Tolerances>,
    /// Confidence level of the paired intervals (the gate's default is 0.95).
    pub level: f64,
}

impl Default for EvalGateOptions {
    fn default() -> Self {
        EvalGateOptions {
            tolerances: None,
            level: 0.95,
        }
    }
}

/// One task of an eval comparison: the significance evidence and the gate's verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EvalTaskComparison {
    /// McNemar on paired correctness and the paired bootstrap of the graded metric.
    #[serde(flatten)]
    pub significance: TaskComparison,
    /// The gate's verdict of the task: the worst of its gated metrics.
    pub gate_verdict: Verdict,
    /// The gated metrics of the task (`accuracy`, and `bleu`, `mean_rouge_l` or `mean_f1` for
    /// graded tasks), as `yardstick gate` reports them (`point` is the task name).
    pub gate: Vec<MetricVerdict>,
}

/// Two eval result files compared (A = baseline, B = candidate).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EvalComparison {
    /// Significance level of the McNemar / bootstrap verdicts (`same`, `a_better`, `b_better`).
    pub alpha: f64,
    /// Confidence level of the gate's paired intervals.
    pub level: f64,
    /// The overall gate verdict: the worst task's.
    pub gate_verdict: Verdict,
    /// Per task present in both files.
    pub tasks: Vec<EvalTaskComparison>,
}

/// The fact metric name of a graded comparison metric of `yardstick-eval`.
fn quality_metric(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "bleu" => id::BLEU,
        "rouge_l" => id::MEAN_ROUGE_L,
        "f1" => id::MEAN_F1,
        _ => return None,
    })
}

/// Compares two `bench eval` result documents: [`yardstick_eval::compare`] for significance,
/// and per task the gate's verdict of its accuracy and graded quality score, each a paired
/// bootstrap of the ratio B/A over the items both files have ([`crate::paired::paired`]: an
/// item's outcomes averaged over its repeats), its bound the tolerance in points below A's
/// value, Holm-corrected across every gated metric of the comparison.
pub fn compare_eval(
    a: &serde_json::Value,
    a_path: &str,
    b: &serde_json::Value,
    b_path: &str,
    alpha: f64,
    opts: &EvalGateOptions,
) -> Result<EvalComparison, GateError> {
    if !(opts.level > 0.0 && opts.level < 1.0) {
        return Err(GateError::Invalid(format!(
            "confidence level {} is not in (0, 1)",
            opts.level
        )));
    }
    let significance = yardstick_eval::compare(a, a_path, b, b_path, alpha)?;
    let (items_a, items_b) = (
        Items::from_eval_json(a, a_path)?,
        Items::from_eval_json(b, b_path)?,
    );
    let empty = Items::default();
    let mut metrics = Vec::new();
    for t in &significance.tasks {
        let (ia, ib) = (
            items_a.get(&t.name).unwrap_or(&empty),
            items_b.get(&t.name).unwrap_or(&empty),
        );
        let mut gated = vec![(id::ACCURACY, MetricClass::Accuracy, ItemStatistic::Accuracy)];
        if let Some(m) = t.quality.as_ref().and_then(|q| quality_metric(&q.metric)) {
            let stat = ItemStatistic::of_metric(m).unwrap_or(ItemStatistic::MeanScore);
            gated.push((m, MetricClass::Quality, stat));
        }
        for (metric, class, stat) in gated {
            let tol = metric_tolerance(metric, "value", class, opts.tolerances.as_ref());
            let p = paired(ia, ib, stat, opts.level, cmp::SEED, cmp::RESAMPLES)?;
            let (base, cand) = match (&p, metric, &t.quality) {
                (Some(p), _, _) => (p.baseline, p.candidate),
                (None, id::ACCURACY, _) => (t.accuracy_a, t.accuracy_b),
                (None, _, Some(q)) => (q.a, q.b),
                (None, _, None) => (0.0, 0.0),
            };
            let bound = ratio_bound(class, direction_of(metric, class), metric, tol, base, None);
            metrics.push(MetricVerdict {
                point: t.name.clone(),
                metric: metric.to_string(),
                statistic: "value".to_string(),
                class,
                tolerance_pct: tol,
                noise_floor_pct: None,
                bound,
                baseline: base,
                candidate: cand,
                ratio: (base > 0.0).then(|| cand / base),
                ci_lo: p.as_ref().map(|p| p.ci_lo),
                ci_hi: p.as_ref().map(|p| p.ci_hi),
                p_value: bound.zip(p.as_ref()).map(|(bnd, p)| p.p_below(bnd)),
                p_test: p.as_ref().map(|_| "paired_items_bootstrap".to_string()),
                ratio_test: None,
                paired: p,
                n: (1, 1),
                min_samples: None,
                required_samples: None,
                p_holm: None,
                verdict: Verdict::Inconclusive,
                reason: String::new(),
                to_decide: None,
            });
        }
    }
    decide(&mut metrics, &[], opts.level)?;
    for m in &mut metrics {
        if m.paired.is_none() && m.bound.is_some() {
            m.verdict = Verdict::Inconclusive;
            m.reason = "no items both files answered: nothing to pair".to_string();
            m.to_decide = None;
        }
    }
    let mut tasks = Vec::new();
    for t in significance.tasks {
        let gate: Vec<MetricVerdict> = metrics
            .iter()
            .filter(|m| m.point == t.name)
            .cloned()
            .collect();
        let gate_verdict = gate
            .iter()
            .map(|m| m.verdict)
            .max()
            .unwrap_or(Verdict::Inconclusive);
        tasks.push(EvalTaskComparison {
            significance: t,
            gate_verdict,
            gate,
        });
    }
    let gate_verdict = tasks
        .iter()
        .map(|t| t.gate_verdict)
        .max()
        .unwrap_or(Verdict::Inconclusive);
    Ok(EvalComparison {
        alpha,
        level: opts.level,
        gate_verdict,
        tasks,
    })
}

/// The comparison as `yardstick bench eval --compare` prints it: one row per task (accuracies,
/// discordant items, McNemar p before and after Holm), quality metrics with their paired
/// bootstrap interval, then the gate's verdict per metric. `tolerance_points` is the accuracy
/// drop the gate allowed.
pub fn text(c: &EvalComparison, tolerance_points: f64) -> String {
    let mut out = String::new();
    write_text(&mut out, c, tolerance_points).expect("writing to a String");
    out
}

fn write_text(out: &mut String, c: &EvalComparison, tolerance_points: f64) -> std::fmt::Result {
    use std::fmt::Write;
    writeln!(
        out,
        "{:<16} {:>5} {:>8} {:>8} {:>7} {:>7} {:>9} {:>9}  {:<9} gate",
        "task", "n", "acc A", "acc B", "A only", "B only", "p", "p (Holm)", "McNemar"
    )?;
    for t in &c.tasks {
        let s = &t.significance;
        writeln!(
            out,
            "{:<16} {:>5} {:>7.1}% {:>7.1}% {:>7} {:>7} {:>9.4} {:>9.4}  {:<9} {}",
            s.name,
            s.n,
            s.accuracy_a * 100.0,
            s.accuracy_b * 100.0,
            s.a_only,
            s.b_only,
            s.p_value,
            s.p_holm,
            s.verdict,
            t.gate_verdict
        )?;
    }
    for t in &c.tasks {
        if let Some(q) = &t.significance.quality {
            writeln!(
                out,
                "{:<16} {} A {:.4} B {:.4} delta {:+.4} [{:+.4}, {:+.4}] p {:.4} (paired bootstrap, {} resamples)  {}",
                t.significance.name,
                q.metric,
                q.a,
                q.b,
                q.delta,
                q.ci[0],
                q.ci[1],
                q.p_value,
                q.resamples,
                q.verdict
            )?;
        }
    }
    writeln!(
        out,
        "gate (as `yardstick gate`: paired item bootstrap of B/A at {}% confidence, \
         tolerance {} points, Holm across {} metrics): {}",
        (c.level * 100.0).round(),
        tolerance_points,
        c.tasks.iter().map(|t| t.gate.len()).sum::<usize>(),
        c.gate_verdict
    )?;
    for t in &c.tasks {
        for m in &t.gate {
            writeln!(
                out,
                "  {:<16} {:<13} {:<12} {}",
                m.point,
                m.metric,
                m.verdict.to_string(),
                m.reason
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_error::UserFacing;

    /// An eval.json with one task whose items are right unless listed in `wrong`.
    fn doc(n: usize, wrong: &[usize]) -> serde_json::Value {
        let items: Vec<_> = (0..n)
            .map(|i| {
                let c = !wrong.contains(&i);
                serde_json::json!({"task": "t", "id": format!("i{i}"), "repeat": 0,
                                   "correct": c, "score": f64::from(u8::from(c))})
            })
            .collect();
        serde_json::json!({"tasks": [{"name": "t", "items": items, "bleu": null,
                                      "mean_rouge_l": null, "mean_f1": null}]})
    }

    fn judge(a: &serde_json::Value, b: &serde_json::Value, points: f64) -> EvalComparison {
        let opts = EvalGateOptions {
            tolerances: Some(Tolerances {
                accuracy_drop_points: Some(points),
                ..Default::default()
            }),
            level: 0.95,
        };
        compare_eval(a, "a.json", b, "b.json", 0.05, &opts).unwrap()
    }

    #[test]
    fn the_text_has_a_row_per_task_and_the_gate_verdict_per_metric() {
        let base = doc(25, &[0, 5, 10, 15, 20]);
        let five = judge(&base, &doc(25, &[0, 1, 2, 3, 4, 5, 6, 10, 15, 20]), 2.0);
        let text = text(&five, 2.0);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("task") && lines[0].ends_with("gate"),
            "{text}"
        );
        let row: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(row[..4], ["t", "25", "80.0%", "60.0%"], "{text}");
        assert_eq!(row[row.len() - 2..], ["same", "FAIL"], "{text}");
        assert!(
            text.contains("tolerance 2 points, Holm across 1 metrics): FAIL"),
            "{text}"
        );
        assert!(lines.last().unwrap().contains("accuracy"), "{text}");
    }

    #[test]
    fn the_verdict_is_the_gates_paired_item_verdict() {
        // 25 items, 20 right in the baseline (0.8; the 2-point bound is 0.975).
        let base = doc(25, &[0, 5, 10, 15, 20]);
        let same = judge(&base, &base, 2.0);
        assert_eq!(same.gate_verdict, Verdict::Pass);
        let m = &same.tasks[0].gate[0];
        assert_eq!(
            (m.metric.as_str(), m.ci_lo, m.ci_hi),
            ("accuracy", Some(1.0), Some(1.0))
        );
        assert!((m.bound.unwrap() - 0.975).abs() < 1e-12);
        // One item lost: 25 items cannot resolve 2 points (docs/gate.md's example).
        let one = judge(&base, &doc(25, &[0, 1, 5, 10, 15, 20]), 2.0);
        let t = &one.tasks[0];
        assert_eq!(t.gate_verdict, Verdict::Inconclusive, "{t:#?}");
        assert_eq!((t.significance.a_only, t.significance.b_only), (1, 0));
        assert!(t.gate[0].reason.contains("McNemar"), "{}", t.gate[0].reason);
        // Five lost (ratio 0.75): FAIL, while McNemar alone (p = 0.0625) says `same`.
        let five = judge(&base, &doc(25, &[0, 1, 2, 3, 4, 5, 6, 10, 15, 20]), 2.0);
        let t = &five.tasks[0];
        assert_eq!(t.gate_verdict, Verdict::Fail, "{t:#?}");
        assert_eq!(t.significance.verdict, yardstick_eval::Difference::Same);
        assert_eq!(five.gate_verdict, Verdict::Fail);
        // A 50-point tolerance accepts the same loss.
        let loose = judge(&base, &doc(25, &[0, 1, 2, 3, 4, 5, 6, 10, 15, 20]), 50.0);
        assert_eq!(loose.gate_verdict, Verdict::Pass, "{loose:#?}");
        // The JSON keeps the significance fields and adds the gate's.
        let v = serde_json::to_value(&five).unwrap();
        assert_eq!(v["tasks"][0]["verdict"], "same");
        assert_eq!(v["tasks"][0]["gate_verdict"], "FAIL");
        assert_eq!(v["tasks"][0]["gate"][0]["paired"]["baseline_only"], 5);
        assert_eq!(v["gate_verdict"], "FAIL");
    }

    #[test]
    fn graded_tasks_also_gate_their_quality_score() {
        let graded = |scores: &[f64]| {
            let items: Vec<_> = scores
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    serde_json::json!({"id": format!("i{i}"), "repeat": 0,
                                                 "correct": *s >= 0.5, "score": s})
                })
                .collect();
            let mean = scores.iter().sum::<f64>() / scores.len() as f64;
            serde_json::json!({"tasks": [{"name": "sum", "items": items, "bleu": null,
                                          "mean_rouge_l": mean, "mean_f1": null}]})
        };
        let base: Vec<f64> = (0..40).map(|i| 0.55 + 0.01 * (i % 10) as f64).collect();
        // Every item 0.1 lower: 10 points of ROUGE-L lost, accuracy (score >= 0.5) too.
        let lower: Vec<f64> = base.iter().map(|x| x - 0.1).collect();
        let c = judge(&graded(&base), &graded(&lower), 2.0);
        let gate = &c.tasks[0].gate;
        assert_eq!(gate.len(), 2);
        let q = gate.iter().find(|m| m.metric == "mean_rouge_l").unwrap();
        assert_eq!(q.class, MetricClass::Quality);
        assert_eq!(q.verdict, Verdict::Fail, "{q:#?}");
        let same = judge(&graded(&base), &graded(&base), 2.0);
        assert!(
            same.tasks[0]
                .gate
                .iter()
                .all(|m| m.verdict == Verdict::Pass)
        );
    }

    #[test]
    fn bad_input_is_refused() {
        let a = doc(5, &[]);
        let e = compare_eval(
            &serde_json::json!({}),
            "x.json",
            &a,
            "a.json",
            0.05,
            &EvalGateOptions::default(),
        )
        .unwrap_err();
        assert!(
            e.is_invalid_input() && e.to_string().contains("x.json"),
            "{e}"
        );
        let bad_level = EvalGateOptions {
            level: 1.5,
            ..Default::default()
        };
        let e = compare_eval(&a, "a", &a, "a", 0.05, &bad_level).unwrap_err();
        assert!(e.is_invalid_input(), "{e}");
    }
}
