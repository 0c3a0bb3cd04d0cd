//! Results: per-task accuracy with Wilson intervals, determinism, latency; paired comparisons.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use yardstick_load::Api;
use yardstick_stats::hypothesis::{McNemarMethod, holm, mcnemar};

use crate::EvalError;
use crate::run::Decoding;

/// One request's outcome (a line of `items.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// Latency per item, milliseconds (successful requests only).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// Maximum.
    pub max: f64,
}

/// One task's summary. Accuracy and CI are over the first repeat's items.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    if n == 0 {
        return [0.0, 1.0];
    }
    let z = Normal::standard().inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    let n_f = n as f64;
    let p = k as f64 / n_f;
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let center = (p + z2 / (2.0 * n_f)) / denom;
    let half = z / denom * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt();
    [(center - half).max(0.0), (center + half).min(1.0)]
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
            p50: if lat.len() % 2 == 1 {
                lat[lat.len() / 2]
            } else {
                (lat[lat.len() / 2 - 1] + lat[lat.len() / 2]) / 2.0
            },
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// One task in a comparison of two runs (paired on item ids, first repeat).
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub verdict: String,
}

/// A comparison of two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Significance level used for verdicts.
    pub alpha: f64,
    /// Tasks present in both runs.
    pub tasks: Vec<TaskComparison>,
}

/// Per task: item id -> correct (first repeat).
type Correctness = Vec<(String, HashMap<String, bool>)>;

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
        let mut m = HashMap::new();
        for i in items {
            if i["repeat"].as_u64().unwrap_or(0) != 0 {
                continue;
            }
            let id = i["id"].as_str().ok_or_else(|| bad("an item has no id"))?;
            m.insert(id.to_string(), i["correct"].as_bool().unwrap_or(false));
        }
        out.push((name.to_string(), m));
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
    let cb: HashMap<String, HashMap<String, bool>> = correctness(b, b_path)?.into_iter().collect();
    let mut rows = Vec::new();
    for (name, ma) in ca {
        let Some(mb) = cb.get(&name) else { continue };
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
            verdict: String::new(),
        });
    }
    if !rows.is_empty() {
        let adj = holm(&rows.iter().map(|r| r.p_value).collect::<Vec<_>>())?;
        for (r, p) in rows.iter_mut().zip(adj) {
            r.p_holm = p;
            r.verdict = if p >= alpha || r.a_only == r.b_only {
                "same"
            } else if r.a_only > r.b_only {
                "a_better"
            } else {
                "b_better"
            }
            .to_string();
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
        assert_eq!(t.verdict, "a_better");
        let same = compare(&a, "a", &a, "a", 0.05).unwrap();
        assert_eq!(same.tasks[0].verdict, "same");
        assert_eq!(same.tasks[0].p_value, 1.0);
        assert!(compare(&serde_json::json!({}), "x", &a, "a", 0.05).is_err());
    }
}
