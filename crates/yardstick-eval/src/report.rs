//! Results: per-task accuracy with Wilson intervals, determinism, latency; paired comparisons.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use yardstick_load::Api;
use yardstick_stats::hypothesis::{McNemarMethod, holm, mcnemar};

use crate::EvalError;
use crate::decoding::Decoding;

/// One request's outcome (a line of `items.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ItemRecord {
    /// Task name.
    pub task: String,
    /// Item id.
    pub id: String,
    /// Repeat index, from 0.
    pub repeat: usize,
    /// The output text; absent when the request failed.
    pub output: Option<String>,
    /// Judged correct.
    pub correct: bool,
    /// Graded score in [0, 1].
    pub score: f64,
    /// Latency, milliseconds.
    pub latency_ms: Option<f64>,
    /// Output tokens reported by the server.
    pub output_tokens: Option<u64>,
    /// Why the request failed.
    pub error: Option<String>,
    /// BLEU sufficient statistics of this output (tasks scored with `bleu`), for corpus BLEU
    /// and paired bootstrap comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bleu_stats: Option<crate::bleu::BleuStats>,
}

/// Latency per item, milliseconds (successful requests only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// Maximum.
    pub max: f64,
}

/// One task's summary. Accuracy and CI are over the first repeat's items.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TaskResult {
    /// Task name.
    pub name: String,
    /// Items.
    pub n: usize,
    /// Items judged correct (first repeat).
    pub correct: usize,
    /// correct / n.
    pub accuracy: f64,
    /// Wilson score interval at the report's confidence.
    pub ci: [f64; 2],
    /// Fraction of items whose repeats all gave identical outputs; `None` without repeats.
    pub determinism: Option<f64>,
    /// Mean token F1 (tasks scored with `f1`).
    pub mean_f1: Option<f64>,
    /// Mean ROUGE-L F (tasks scored with `rouge-l`).
    pub mean_rouge_l: Option<f64>,
    /// Corpus BLEU, 0–100 (tasks scored with `bleu`; first repeat, failed requests as empty).
    pub bleu: Option<f64>,
    /// Mean graded score.
    pub mean_score: f64,
    /// Failed requests (all repeats).
    pub errors: usize,
    /// Latency per item.
    pub latency_ms: Option<Latency>,
    /// Output tokens reported by the server, summed over the first repeat.
    pub output_tokens: Option<u64>,
    /// Every request, in order.
    pub items: Vec<ItemRecord>,
}

/// The Wilson score interval for `k` successes in `n` trials at `confidence` (two-sided).
/// `n = 0` gives [0, 1].
pub fn wilson(k: u64, n: u64, confidence: f64) -> [f64; 2] {
    yardstick_stats::proportion::wilson(k, n, confidence)
}

impl TaskResult {
    /// Summarises `records` (all repeats of all items of one task); `scorer` is the scorer all
    /// items share, if they do.
    pub fn summarise(
        name: &str,
        records: Vec<ItemRecord>,
        repeat: usize,
        confidence: f64,
        scorer: Option<&str>,
    ) -> Result<TaskResult, EvalError> {
        let first: Vec<&ItemRecord> = records.iter().filter(|r| r.repeat == 0).collect();
        let n = first.len();
        let correct = first.iter().filter(|r| r.correct).count();
        let accuracy = if n == 0 {
            0.0
        } else {
            correct as f64 / n as f64
        };
        let mean_score = if n == 0 {
            0.0
        } else {
            first.iter().map(|r| r.score).sum::<f64>() / n as f64
        };
        let determinism = (repeat > 1 && n > 0).then(|| {
            let mut outs: HashMap<&str, Vec<Option<&str>>> = HashMap::new();
            for r in &records {
                outs.entry(r.id.as_str())
                    .or_default()
                    .push(r.output.as_deref());
            }
            let same = outs
                .values()
                .filter(|o| o.iter().all(|x| x.is_some() && *x == o[0]))
                .count();
            same as f64 / outs.len() as f64
        });
        let mut lat: Vec<f64> = records.iter().filter_map(|r| r.latency_ms).collect();
        lat.sort_by(f64::total_cmp);
        let latency_ms = (!lat.is_empty()).then(|| Latency {
            mean: lat.iter().sum::<f64>() / lat.len() as f64,
            p50: yardstick_stats::percentile::percentile_sorted(&lat, 0.5),
            max: lat[lat.len() - 1],
        });
        let toks: Vec<u64> = first.iter().filter_map(|r| r.output_tokens).collect();
        Ok(TaskResult {
            name: name.to_string(),
            n,
            correct,
            accuracy,
            ci: wilson(correct as u64, n as u64, confidence),
            determinism,
            mean_f1: (scorer == Some("f1")).then_some(mean_score),
            mean_rouge_l: (scorer == Some("rouge-l")).then_some(mean_score),
            bleu: None,
            mean_score,
            errors: records.iter().filter(|r| r.error.is_some()).count(),
            latency_ms,
            output_tokens: (!toks.is_empty()).then(|| toks.iter().sum()),
            items: records,
        })
    }
}

/// A whole eval run (`eval.json`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EvalReport {
    /// Model name requested.
    pub model: String,
    /// API called.
    pub api: Api,
    /// Decoding settings.
    pub decoding: Decoding,
    /// Runs per item.
    pub repeat: usize,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// Per-task results.
    pub tasks: Vec<TaskResult>,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Wall time of all requests, seconds.
    pub elapsed_s: f64,
    /// Requests (items × repeats) per second.
    pub requests_per_s: f64,
    /// Perplexity on the shard, when asked for (`value` null and `unsupported` set when the
    /// server cannot give one).
    pub perplexity: Option<crate::perplexity::Perplexity>,
}

impl EvalReport {
    /// The JSON document (`--json`, `eval.json`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Every request as JSON lines (`items.jsonl`).
    pub fn items_jsonl(&self) -> String {
        let mut s = String::new();
        for t in &self.tasks {
            for r in &t.items {
                s.push_str(&serde_json::to_string(r).unwrap_or_default());
                s.push('\n');
            }
        }
        s
    }

    /// Writes `eval.json` and `items.jsonl` into `dir` (created if need be).
    pub fn write_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        let named = |what: &std::path::Path| {
            let what = what.display().to_string();
            move |e: std::io::Error| std::io::Error::new(e.kind(), format!("writing {what}: {e}"))
        };
        std::fs::create_dir_all(dir).map_err(named(dir))?;
        let doc = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        let json = dir.join("eval.json");
        std::fs::write(&json, doc + "\n").map_err(named(&json))?;
        let items = dir.join("items.jsonl");
        std::fs::write(&items, self.items_jsonl()).map_err(named(&items))
    }

    /// The table people read: per task its accuracy with its `confidence` interval,
    /// determinism, errors and median latency; then perplexity and the request rate.
    pub fn text(&self, confidence: f64) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let pct = (confidence * 100.0).round();
        let _ = writeln!(
            out,
            "{:<16} {:>5} {:>9} {:>19} {:>12} {:>7} {:>12}",
            "task",
            "n",
            "accuracy",
            format!("{pct}% CI"),
            "determinism",
            "errors",
            "p50 latency"
        );
        for t in &self.tasks {
            let _ = writeln!(
                out,
                "{:<16} {:>5} {:>8.1}% {:>19} {:>12} {:>7} {:>12}",
                t.name,
                t.n,
                t.accuracy * 100.0,
                format!("[{:.1}%, {:.1}%]", t.ci[0] * 100.0, t.ci[1] * 100.0),
                t.determinism
                    .map(|d| format!("{:.1}%", d * 100.0))
                    .unwrap_or_else(|| "-".into()),
                t.errors,
                t.latency_ms
                    .map(|l| format!("{:.1} ms", l.p50))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        if let Some(p) = &self.perplexity {
            let _ = match p.value {
                Some(v) => writeln!(
                    out,
                    "perplexity {v:.3} over {} tokens of {} ({} paragraphs)",
                    p.tokens, p.source, p.paragraphs
                ),
                None => writeln!(
                    out,
                    "perplexity: unsupported by this server ({})",
                    p.unsupported.as_deref().unwrap_or("")
                ),
            };
        }
        let _ = writeln!(
            out,
            "{} requests in {:.2} s ({:.1} requests/s, concurrency {})",
            self.tasks.iter().map(|t| t.items.len()).sum::<usize>(),
            self.elapsed_s,
            self.requests_per_s,
            self.concurrency
        );
        out
    }
}

/// One task in a comparison of two runs (paired on item ids, first repeat).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TaskComparison {
    /// Task name.
    pub name: String,
    /// Items present in both runs.
    pub n: usize,
    /// Accuracy of A on the paired items.
    pub accuracy_a: f64,
    /// Accuracy of B on the paired items.
    pub accuracy_b: f64,
    /// Items right under A only.
    pub a_only: u64,
    /// Items right under B only.
    pub b_only: u64,
    /// McNemar p-value (exact under 25 discordant pairs, chi-square otherwise).
    pub p_value: f64,
    /// Holm-adjusted p-value over the compared tasks.
    pub p_holm: f64,
    /// `same`, `a_better` or `b_better` at `alpha` (on the Holm-adjusted p).
    pub verdict: Difference,
    /// Paired bootstrap of the task's graded metric (corpus BLEU, mean ROUGE-L or mean F1),
    /// when both runs report the same one.
    pub quality: Option<QualityComparison>,
}

/// A paired bootstrap comparison of a graded metric: items are resampled with replacement, the
/// same indices for both runs, and the metric recomputed on each resample (corpus BLEU from
/// the segments' statistics, as sacreBLEU's paired bootstrap does).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct QualityComparison {
    /// `bleu` (0–100), `rouge_l` or `f1` (0–1).
    pub metric: String,
    /// The metric under A on the paired items.
    pub a: f64,
    /// The metric under B on the paired items.
    pub b: f64,
    /// b − a.
    pub delta: f64,
    /// Percentile interval of b − a at 1 − alpha.
    pub ci: [f64; 2],
    /// Two-sided bootstrap p-value: 2 × the smaller fraction of resampled deltas on either side
    /// of 0 (capped at 1).
    pub p_value: f64,
    /// Resamples drawn (seeded: the same files give the same numbers).
    pub resamples: usize,
    /// `same` when p ≥ alpha, else `a_better` or `b_better`.
    pub verdict: Difference,
}

/// Which of two runs did better on a task, at the comparison's significance level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// No significant difference.
    Same,
    /// Run A is significantly better.
    ABetter,
    /// Run B is significantly better.
    BBetter,
}

impl Difference {
    /// `same`, `a_better`, `b_better`.
    pub fn as_str(self) -> &'static str {
        match self {
            Difference::Same => "same",
            Difference::ABetter => "a_better",
            Difference::BBetter => "b_better",
        }
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Resamples of the paired bootstrap.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// One item's graded outcome, as read back from a result file.
#[derive(Debug, Clone, Copy)]
struct Graded {
    score: f64,
    bleu: Option<crate::bleu::BleuStats>,
}

/// An item's graded outcome as the summed statistics the metric is computed from: for BLEU the
/// n-gram matches and totals and the two lengths (10 values), else the score (1 value).
fn units(kind: &str, items: &[Graded]) -> (usize, Vec<f64>) {
    if kind == "bleu" {
        let v = items
            .iter()
            .flat_map(|g| {
                let s = g.bleu.unwrap_or_default();
                s.correct
                    .into_iter()
                    .chain(s.total)
                    .chain([s.hyp_len, s.ref_len])
                    .map(|x| x as f64)
            })
            .collect();
        (10, v)
    } else {
        (1, items.iter().map(|g| g.score).collect())
    }
}

/// The metric from summed unit statistics ([`units`]) of `n` items.
fn metric_of_sums(kind: &str, sums: &[f64], n: usize) -> f64 {
    if kind == "bleu" {
        let c = |i: usize| sums[i].round() as u64;
        let stats = crate::bleu::BleuStats {
            correct: [c(0), c(1), c(2), c(3)],
            total: [c(4), c(5), c(6), c(7)],
            hyp_len: c(8),
            ref_len: c(9),
        };
        crate::bleu::corpus(&[stats])
    } else {
        sums[0] / n as f64
    }
}

/// Paired bootstrap of `kind` over the items both runs have (`a[i]` and `b[i]` the same item):
/// yardstick-stats' paired difference, percentile interval at 1 − alpha.
fn paired_bootstrap(
    kind: &str,
    a: &[Graded],
    b: &[Graded],
    alpha: f64,
    resamples: usize,
    seed: u64,
) -> QualityComparison {
    use yardstick_stats::bootstrap::{
        BootstrapConfig, Method, paired_difference_of_sums, unit_sums,
    };
    let n = a.len();
    let (width, ua) = units(kind, a);
    let (_, ub) = units(kind, b);
    let cfg = BootstrapConfig {
        resamples,
        level: 1.0 - alpha,
        seed,
        method: Method::Percentile,
    };
    let stat = |s: &[f64]| metric_of_sums(kind, s, n);
    let (ma, mb) = (stat(&unit_sums(&ua, width)), stat(&unit_sums(&ub, width)));
    // Items are non-empty and finite here; a failure (none) reads as "no evidence".
    let (ci, p_value) = match paired_difference_of_sums(&ua, &ub, width, stat, &cfg) {
        Ok(d) => ([d.lower, d.upper], d.p_value()),
        Err(_) => ([0.0, 0.0], 1.0),
    };
    let delta = mb - ma;
    let verdict = if p_value >= alpha || delta == 0.0 {
        Difference::Same
    } else if delta < 0.0 {
        Difference::ABetter
    } else {
        Difference::BBetter
    };
    QualityComparison {
        metric: kind.to_string(),
        a: ma,
        b: mb,
        delta,
        ci,
        p_value,
        resamples,
        verdict,
    }
}

/// A comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    /// Significance level used for verdicts.
    pub alpha: f64,
    /// Tasks present in both runs.
    pub tasks: Vec<TaskComparison>,
}

/// Per task: item id -> correct (first repeat), and the graded metric kind with item scores.
type Correctness = Vec<(
    String,
    HashMap<String, bool>,
    Option<String>,
    HashMap<String, Graded>,
)>;

fn correctness(doc: &serde_json::Value, path: &str) -> Result<Correctness, EvalError> {
    let bad = |why: &str| EvalError::BadResult {
        path: path.to_string(),
        why: why.to_string(),
    };
    let tasks = doc["tasks"]
        .as_array()
        .ok_or_else(|| bad("no `tasks` array"))?;
    let mut out = Vec::new();
    for t in tasks {
        let name = t["name"]
            .as_str()
            .ok_or_else(|| bad("a task has no name"))?;
        let items = t["items"]
            .as_array()
            .ok_or_else(|| bad("a task has no `items`"))?;
        let kind = if !t["bleu"].is_null() {
            Some("bleu")
        } else if !t["mean_rouge_l"].is_null() {
            Some("rouge_l")
        } else if !t["mean_f1"].is_null() {
            Some("f1")
        } else {
            None
        };
        let mut m = HashMap::new();
        let mut g = HashMap::new();
        for i in items {
            if i["repeat"].as_u64().unwrap_or(0) != 0 {
                continue;
            }
            let id = i["id"].as_str().ok_or_else(|| bad("an item has no id"))?;
            m.insert(id.to_string(), i["correct"].as_bool().unwrap_or(false));
            let bleu = serde_json::from_value(i["bleu_stats"].clone()).ok();
            g.insert(
                id.to_string(),
                Graded {
                    score: i["score"].as_f64().unwrap_or(0.0),
                    bleu,
                },
            );
        }
        // BLEU needs every item's statistics (files written before they were recorded have none).
        let kind = kind.filter(|k| *k != "bleu" || g.values().all(|x| x.bleu.is_some()));
        out.push((name.to_string(), m, kind.map(str::to_string), g));
    }
    Ok(out)
}

/// Compares two `eval.json` documents (A = baseline, B = candidate) task by task with McNemar's
/// test on paired per-item correctness, Holm-adjusted across tasks.
pub fn compare(
    a: &serde_json::Value,
    a_path: &str,
    b: &serde_json::Value,
    b_path: &str,
    alpha: f64,
) -> Result<Comparison, EvalError> {
    let ca = correctness(a, a_path)?;
    let cb: HashMap<String, _> = correctness(b, b_path)?
        .into_iter()
        .map(|(n, m, k, g)| (n, (m, k, g)))
        .collect();
    let mut rows = Vec::new();
    for (name, ma, kind_a, ga) in ca {
        let Some((mb, kind_b, gb)) = cb.get(&name) else {
            continue;
        };
        // Paired items in a fixed order (sorted ids), so the bootstrap is reproducible.
        let mut ids: Vec<&String> = ma.keys().filter(|id| mb.contains_key(*id)).collect();
        ids.sort();
        let quality = match (&kind_a, kind_b) {
            (Some(ka), Some(kb)) if ka == kb && !ids.is_empty() => {
                let pa: Vec<Graded> = ids.iter().map(|id| ga[*id]).collect();
                let pb: Vec<Graded> = ids.iter().map(|id| gb[*id]).collect();
                Some(paired_bootstrap(
                    ka,
                    &pa,
                    &pb,
                    alpha,
                    BOOTSTRAP_RESAMPLES,
                    0x5eed_0e7a1,
                ))
            }
            _ => None,
        };
        let (mut n, mut ra, mut rb, mut a_only, mut b_only) = (0usize, 0usize, 0usize, 0u64, 0u64);
        for (id, &xa) in &ma {
            let Some(&xb) = mb.get(id) else { continue };
            n += 1;
            ra += xa as usize;
            rb += xb as usize;
            match (xa, xb) {
                (true, false) => a_only += 1,
                (false, true) => b_only += 1,
                _ => {}
            }
        }
        let p = mcnemar(a_only, b_only, McNemarMethod::Auto)?.p_value;
        let frac = |k: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
        rows.push(TaskComparison {
            name,
            n,
            accuracy_a: frac(ra),
            accuracy_b: frac(rb),
            a_only,
            b_only,
            p_value: p,
            p_holm: p,
            verdict: Difference::Same,
            quality,
        });
    }
    if !rows.is_empty() {
        let adj = holm(&rows.iter().map(|r| r.p_value).collect::<Vec<_>>())?;
        for (r, p) in rows.iter_mut().zip(adj) {
            r.p_holm = p;
            r.verdict = if p >= alpha || r.a_only == r.b_only {
                Difference::Same
            } else if r.a_only > r.b_only {
                Difference::ABetter
            } else {
                Difference::BBetter
            };
        }
    }
    Ok(Comparison { alpha, tasks: rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_known_values() {
        // statsmodels proportion_confint(8, 10, method="wilson")
        let [lo, hi] = wilson(8, 10, 0.95);
        assert!((lo - 0.4902).abs() < 1e-4, "{lo}");
        assert!((hi - 0.9433).abs() < 1e-4, "{hi}");
        // 0/10: [0, 0.2775]; 10/10: [0.7225, 1]
        let [lo, hi] = wilson(0, 10, 0.95);
        assert!(lo.abs() < 1e-12, "{lo}");
        assert!((hi - 0.2775).abs() < 1e-4, "{hi}");
        let [lo, hi] = wilson(10, 10, 0.95);
        assert!((lo - 0.7225).abs() < 1e-4, "{lo}");
        assert!((hi - 1.0).abs() < 1e-12);
        // wider at 99 %
        let [lo99, hi99] = wilson(8, 10, 0.99);
        assert!(lo99 < 0.4902 && hi99 > 0.9433);
        assert_eq!(wilson(0, 0, 0.95), [0.0, 1.0]);
    }

    fn doc(correct: &[bool]) -> serde_json::Value {
        let items: Vec<_> = correct
            .iter()
            .enumerate()
            .map(|(i, c)| serde_json::json!({"id": format!("i{i}"), "repeat": 0, "correct": c}))
            .collect();
        serde_json::json!({"tasks": [{"name": "t", "items": items}]})
    }

    fn graded(task: &str, scores: &[f64], kind: &str) -> serde_json::Value {
        let items: Vec<_> = scores
            .iter()
            .enumerate()
            .map(|(i, s)| serde_json::json!({"id": format!("i{i}"), "repeat": 0, "correct": *s >= 0.5, "score": s}))
            .collect();
        let mean = scores.iter().sum::<f64>() / scores.len() as f64;
        let mut t = serde_json::json!({"name": task, "items": items, "bleu": null, "mean_rouge_l": null, "mean_f1": null});
        t[kind] = serde_json::json!(mean);
        serde_json::json!({"tasks": [t]})
    }

    #[test]
    fn paired_bootstrap_of_graded_metrics() {
        let base: Vec<f64> = (0..40).map(|i| 0.3 + 0.01 * (i % 7) as f64).collect();
        let a = graded("sum", &base, "mean_rouge_l");
        // Identical runs: delta 0, p 1, same.
        let c = compare(&a, "a", &a, "a", 0.05).unwrap();
        let q = c.tasks[0].quality.as_ref().unwrap();
        assert_eq!(
            (q.metric.as_str(), q.delta, q.p_value),
            ("rouge_l", 0.0, 1.0)
        );
        assert_eq!(q.verdict, Difference::Same);
        // B better by 0.2 on every item: the whole bootstrap distribution is +0.2.
        let better: Vec<f64> = base.iter().map(|x| x + 0.2).collect();
        let b = graded("sum", &better, "mean_rouge_l");
        let c = compare(&a, "a", &b, "b", 0.05).unwrap();
        let q = c.tasks[0].quality.as_ref().unwrap();
        assert!((q.delta - 0.2).abs() < 1e-12);
        assert!((q.ci[0] - 0.2).abs() < 1e-9 && (q.ci[1] - 0.2).abs() < 1e-9);
        assert_eq!(q.p_value, 0.0);
        assert_eq!(q.verdict, Difference::BBetter);
        // Mixed: better on half, worse on half by the same amount: not significant.
        let mixed: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 2 == 0 { x + 0.1 } else { x - 0.1 })
            .collect();
        let m = graded("sum", &mixed, "mean_rouge_l");
        let q = compare(&a, "a", &m, "m", 0.05).unwrap().tasks[0]
            .quality
            .clone()
            .unwrap();
        assert!(q.ci[0] < 0.0 && q.ci[1] > 0.0, "{q:?}");
        assert_eq!(q.verdict, Difference::Same);
        // Reproducible: the same files give the same numbers.
        assert_eq!(
            q,
            compare(&a, "a", &m, "m", 0.05).unwrap().tasks[0]
                .quality
                .clone()
                .unwrap()
        );
        // Different metrics, or none: no quality comparison.
        let f = graded("sum", &base, "mean_f1");
        assert!(
            compare(&a, "a", &f, "f", 0.05).unwrap().tasks[0]
                .quality
                .is_none()
        );
    }

    #[test]
    fn paired_bootstrap_of_corpus_bleu_uses_segment_statistics() {
        let refs = [
            "the cat sat on the mat today",
            "a fast brown fox jumps high",
        ];
        let hyp_a = ["the cat sat on a mat", "a brown fox jumps"];
        let hyp_b = [
            "the cat sat on the mat today",
            "a fast brown fox jumps high",
        ];
        let doc = |hyps: &[&str]| {
            let mut items = Vec::new();
            let mut segs = Vec::new();
            for i in 0..20 {
                let k = i % 2;
                let st = crate::bleu::stats(hyps[k], &[refs[k].to_string()]);
                segs.push(st);
                items.push(serde_json::json!({"id": format!("s{i}"), "repeat": 0, "correct": true, "score": 0.5, "bleu_stats": st}));
            }
            let bleu = crate::bleu::corpus(&segs);
            (
                serde_json::json!({"tasks": [{"name": "mt", "items": items, "bleu": bleu, "mean_rouge_l": null, "mean_f1": null}]}),
                bleu,
            )
        };
        let ((a, bleu_a), (b, bleu_b)) = (doc(&hyp_a), doc(&hyp_b));
        let q = compare(&a, "a", &b, "b", 0.05).unwrap().tasks[0]
            .quality
            .clone()
            .unwrap();
        assert_eq!(q.metric, "bleu");
        assert!(
            (q.a - bleu_a).abs() < 1e-9 && (q.b - bleu_b).abs() < 1e-9,
            "{q:?}"
        );
        assert!((q.b - 100.0).abs() < 1e-9);
        assert_eq!(q.verdict, Difference::BBetter);
    }

    #[test]
    fn mcnemar_comparison() {
        let a = doc(&[true; 30]);
        let mut bv = vec![true; 30];
        for x in bv.iter_mut().take(12) {
            *x = false;
        }
        let b = doc(&bv);
        let c = compare(&a, "a", &b, "b", 0.05).unwrap();
        let t = &c.tasks[0];
        assert_eq!((t.n, t.a_only, t.b_only), (30, 12, 0));
        // exact binomial: 2 * 0.5^12
        assert!((t.p_value - 2.0 * 0.5f64.powi(12)).abs() < 1e-12);
        assert_eq!(t.verdict, Difference::ABetter);
        let same = compare(&a, "a", &a, "a", 0.05).unwrap();
        assert_eq!(same.tasks[0].verdict, Difference::Same);
        assert_eq!(same.tasks[0].p_value, 1.0);
        assert!(compare(&serde_json::json!({}), "x", &a, "a", 0.05).is_err());
    }
}
