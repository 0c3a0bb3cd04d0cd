//! Eval metrics gated on paired items: the eval layer's `items.jsonl` of both runs (or the
//! items of two `bench eval` result files), item by item.
//!
//! Replicates of a deterministic server repeat the same answers, so replicate-level accuracies
//! are identical and their bootstrap interval has zero width: one item answered differently
//! would FAIL a 25-item probe against a 2-point tolerance. Resampling items instead gives the
//! interval the probe's size warrants, and pairing them (the same item under both runs) keeps
//! it as narrow as the agreement between the runs allows. The same holds for the graded
//! quality scores (token F1, ROUGE-L: a mean over items; BLEU: a corpus statistic recomputed
//! from the resampled items' n-gram counts).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use yardstick_eval::bleu::BleuStats;
use yardstick_spec::metrics::id;
use yardstick_stats::bootstrap::{BootstrapConfig, Method, paired_ratio_of_sums_ci};
use yardstick_stats::hypothesis::{McNemarMethod, mcnemar};

use crate::error::GateError;

/// The statistic of a set of eval items that a gated metric is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatistic {
    /// The share of items judged correct (`accuracy`).
    Accuracy,
    /// The mean graded score per item (`mean_f1`, `mean_rouge_l`).
    MeanScore,
    /// Corpus BLEU (0–100) from the items' segment statistics (`bleu`).
    CorpusBleu,
}

impl ItemStatistic {
    /// The item statistic behind an eval fact's metric name, if it is one.
    pub fn of_metric(metric: &str) -> Option<ItemStatistic> {
        Some(match metric {
            id::ACCURACY => ItemStatistic::Accuracy,
            id::MEAN_F1 | id::MEAN_ROUGE_L => ItemStatistic::MeanScore,
            id::BLEU => ItemStatistic::CorpusBleu,
            _ => return None,
        })
    }

    fn describe(self) -> &'static str {
        match self {
            ItemStatistic::Accuracy => "accuracy",
            ItemStatistic::MeanScore => "mean score",
            ItemStatistic::CorpusBleu => "corpus BLEU",
        }
    }
}

/// The paired evidence behind an eval metric's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct PairedItems {
    /// What was resampled.
    pub statistic: ItemStatistic,
    /// Items present in both runs.
    pub items: usize,
    /// Items the baseline got right (by majority over replicates and repeats) and the
    /// candidate wrong.
    pub baseline_only: u64,
    /// Items the candidate got right and the baseline wrong.
    pub candidate_only: u64,
    /// Two-sided McNemar p-value of the discordant items (no difference in accuracy).
    pub mcnemar_p: f64,
    /// The statistic over the paired items under the baseline (a fraction, or BLEU 0–100).
    #[serde(skip)]
    pub baseline: f64,
    /// The same under the candidate.
    #[serde(skip)]
    pub candidate: f64,
    /// Lower bound of the paired bootstrap CI of the ratio candidate/baseline.
    #[serde(skip)]
    pub ci_lo: f64,
    /// Upper bound of it.
    #[serde(skip)]
    pub ci_hi: f64,
    /// The sorted bootstrap replicates of that ratio.
    #[serde(skip)]
    pub replicates: Vec<f64>,
}

impl PairedItems {
    /// One-sided bootstrap p-value of "not below `bound`": the share of replicates at or above
    /// it, floored at one replicate.
    pub fn p_below(&self, bound: f64) -> f64 {
        let n = self.replicates.len().max(1) as f64;
        let above = self.replicates.iter().filter(|r| **r >= bound).count() as f64;
        (above / n).max(1.0 / n)
    }

    /// The sentence the gate appends to the metric's reason.
    pub fn describe(&self) -> String {
        let what = match self.statistic {
            ItemStatistic::Accuracy => String::new(),
            s => format!(" ({} resampled over items)", s.describe()),
        };
        format!(
            "paired on {} items{what}: {} right only in the baseline, {} only in the candidate \
             (McNemar p = {:.3})",
            self.items, self.baseline_only, self.candidate_only, self.mcnemar_p
        )
    }
}

/// One item's outcomes in one run, summed over replicates and repeats.
#[derive(Debug, Clone, Default)]
struct Tally {
    correct: u32,
    answered: u32,
    score: f64,
    bleu: [f64; 10],
    bleu_missing: bool,
}

/// The items of one run (one eval point, or one task of a result file), by (task, id).
#[derive(Debug, Clone, Default)]
pub struct Items(BTreeMap<(String, String), Tally>);

impl Items {
    /// Adds one record (an item × replicate × repeat).
    pub fn add(
        &mut self,
        task: &str,
        id: &str,
        correct: bool,
        score: f64,
        bleu: Option<&BleuStats>,
    ) {
        let e = self
            .0
            .entry((task.to_string(), id.to_string()))
            .or_default();
        e.correct += u32::from(correct);
        e.answered += 1;
        e.score += if score.is_finite() { score } else { 0.0 };
        match bleu {
            Some(b) => {
                for n in 0..4 {
                    e.bleu[n] += b.correct[n] as f64;
                    e.bleu[4 + n] += b.total[n] as f64;
                }
                e.bleu[8] += b.hyp_len as f64;
                e.bleu[9] += b.ref_len as f64;
            }
            None => e.bleu_missing = true,
        }
    }

    /// Number of distinct items.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True without items.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds one JSON item record (`items.jsonl` line or an `eval.json` task's item);
    /// `task` is used when the record has none.
    fn add_json(
        &mut self,
        v: &serde_json::Value,
        task: Option<&str>,
    ) -> Result<(), IncompleteItem> {
        let (Some(task), Some(id), Some(correct)) = (
            v["task"].as_str().or(task),
            v["id"].as_str(),
            v["correct"].as_bool(),
        ) else {
            return Err(IncompleteItem);
        };
        let bleu: Option<BleuStats> = serde_json::from_value(v["bleu_stats"].clone()).ok();
        self.add(
            task,
            id,
            correct,
            v["score"].as_f64().unwrap_or(0.0),
            bleu.as_ref(),
        );
        Ok(())
    }

    /// Reads `<run>/eval/<slug>/r*/items.jsonl`; `None` when the run has none for this point
    /// (no eval layer, or a baseline imported from a file).
    pub fn from_run(run_dir: &Path, point: &str) -> Result<Option<Items>, GateError> {
        let dir = run_dir.join("eval").join(yardstick_store::run::slug(point));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(None);
        };
        let mut files: Vec<_> = entries
            .filter_map(Result::ok)
            .map(|e| e.path().join("items.jsonl"))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        let mut out = Items::default();
        for f in files {
            let path = f.display().to_string();
            let text = std::fs::read_to_string(&f).map_err(|source| GateError::Io {
                path: path.clone(),
                source,
            })?;
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let bad = |message: String| GateError::Malformed {
                    path: format!("{path}:{}", n + 1),
                    message,
                };
                let v: serde_json::Value =
                    serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
                out.add_json(&v, None).map_err(|e| bad(e.to_string()))?;
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// The items of every task of a `bench eval` result document (`eval.json`), by task name.
    pub fn from_eval_json(
        doc: &serde_json::Value,
        path: &str,
    ) -> Result<BTreeMap<String, Items>, GateError> {
        let bad = |message: String| GateError::Malformed {
            path: path.to_string(),
            message,
        };
        let mut out = BTreeMap::new();
        for t in doc["tasks"]
            .as_array()
            .ok_or_else(|| bad("no `tasks` array".into()))?
        {
            let name = t["name"]
                .as_str()
                .ok_or_else(|| bad("a task has no name".into()))?;
            let items: &mut Items = out.entry(name.to_string()).or_default();
            for i in t["items"].as_array().into_iter().flatten() {
                items
                    .add_json(i, Some(name))
                    .map_err(|m| bad(format!("task {name}: {m}")))?;
            }
        }
        Ok(out)
    }
}

/// An item record that lacks what pairing needs.
#[derive(Debug, thiserror::Error)]
#[error("an item needs `task`, `id` and `correct`")]
struct IncompleteItem;

fn corpus_bleu(s: &[f64]) -> f64 {
    let u = |x: f64| x.round().max(0.0) as u64;
    yardstick_eval::bleu::corpus(&[BleuStats {
        correct: [u(s[0]), u(s[1]), u(s[2]), u(s[3])],
        total: [u(s[4]), u(s[5]), u(s[6]), u(s[7])],
        hyp_len: u(s[8]),
        ref_len: u(s[9]),
    }])
}

/// Pairs two runs' items by (task, id) and bootstraps the ratio candidate/baseline of
/// `statistic` over the items at `level` (the same resampled items for both runs). Each item
/// counts once, its outcomes averaged (BLEU: its n-gram counts summed) over replicates and
/// repeats. `None` when no item is shared, the baseline's statistic is 0 (no ratio; the
/// caller's bound handles a zero baseline), or BLEU is asked of items without segment
/// statistics.
pub fn paired(
    baseline: &Items,
    candidate: &Items,
    statistic: ItemStatistic,
    level: f64,
    seed: u64,
    resamples: usize,
) -> Result<Option<PairedItems>, GateError> {
    let frac = |t: &Tally| f64::from(t.correct) / f64::from(t.answered.max(1));
    let width = if statistic == ItemStatistic::CorpusBleu {
        10
    } else {
        1
    };
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    let (mut baseline_only, mut candidate_only, mut items) = (0u64, 0u64, 0usize);
    for (key, ta) in &baseline.0 {
        let Some(tb) = candidate.0.get(key) else {
            continue;
        };
        items += 1;
        match (frac(ta) > 0.5, frac(tb) > 0.5) {
            (true, false) => baseline_only += 1,
            (false, true) => candidate_only += 1,
            _ => {}
        }
        for (t, x) in [(ta, &mut xa), (tb, &mut xb)] {
            match statistic {
                ItemStatistic::Accuracy => x.push(frac(t)),
                ItemStatistic::MeanScore => x.push(t.score / f64::from(t.answered.max(1))),
                ItemStatistic::CorpusBleu => {
                    if t.bleu_missing {
                        return Ok(None);
                    }
                    x.extend_from_slice(&t.bleu);
                }
            }
        }
    }
    // Means resample as sums (the ratio of sums is the ratio of means, bit for bit).
    let stat = |s: &[f64]| match statistic {
        ItemStatistic::CorpusBleu => corpus_bleu(s),
        _ => s[0],
    };
    let total = |x: &[f64]| -> Vec<f64> {
        let mut s = vec![0.0; width];
        for u in x.chunks_exact(width) {
            s.iter_mut().zip(u).for_each(|(t, v)| *t += v);
        }
        s
    };
    if items == 0 {
        return Ok(None);
    }
    let per_item = |x: f64| match statistic {
        ItemStatistic::CorpusBleu => x,
        _ => x / items as f64,
    };
    let (va, vb) = (per_item(stat(&total(&xa))), per_item(stat(&total(&xb))));
    if va <= 0.0 || !va.is_finite() {
        return Ok(None);
    }
    let cfg = BootstrapConfig {
        resamples,
        level,
        seed,
        method: Method::Percentile,
    };
    let r = paired_ratio_of_sums_ci(&xa, &xb, width, stat, &cfg)
        .map_err(|e| GateError::Invalid(format!("paired {}: {e}", statistic.describe())))?;
    let mcnemar_p = mcnemar(baseline_only, candidate_only, McNemarMethod::Auto)?.p_value;
    Ok(Some(PairedItems {
        statistic,
        items,
        baseline_only,
        candidate_only,
        mcnemar_p,
        baseline: va,
        candidate: vb,
        ci_lo: r.ci.lower,
        ci_hi: r.ci.upper,
        replicates: r.replicates,
    }))
}

/// Pairs the items of one eval point across the two runs' directories and bootstraps the
/// ratio of `statistic` ([`paired`]). `None` when either run has no items for the point.
pub fn from_runs(
    baseline_dir: &Path,
    candidate_dir: &Path,
    point: &str,
    statistic: ItemStatistic,
    level: f64,
    seed: u64,
    resamples: usize,
) -> Result<Option<PairedItems>, GateError> {
    let (Some(a), Some(b)) = (
        Items::from_run(baseline_dir, point)?,
        Items::from_run(candidate_dir, point)?,
    ) else {
        return Ok(None);
    };
    paired(&a, &b, statistic, level, seed, resamples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_run(dir: &Path, point: &str, reps: &[&[bool]]) {
        for (k, items) in reps.iter().enumerate() {
            let d = dir
                .join("eval")
                .join(yardstick_store::run::slug(point))
                .join(format!("r{k}"));
            std::fs::create_dir_all(&d).unwrap();
            let lines: String = items
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    format!(
                        "{{\"task\":\"arith\",\"id\":\"q{i}\",\"repeat\":0,\"output\":\"x\",\
                         \"correct\":{c},\"score\":{}}}\n",
                        u8::from(*c)
                    )
                })
                .collect();
            std::fs::write(d.join("items.jsonl"), lines).unwrap();
        }
    }

    #[test]
    fn one_flip_of_25_gives_a_wide_interval_and_identical_runs_a_point() {
        let accuracy = |a: &Path, b: &Path, point: &str, level, seed, resamples| {
            from_runs(a, b, point, ItemStatistic::Accuracy, level, seed, resamples)
        };
        let tmp = std::env::temp_dir().join(format!("ys-paired-{}", std::process::id()));
        let (a, b, c) = (tmp.join("a"), tmp.join("b"), tmp.join("c"));
        let point = "component.0.eval/arith";
        let base: Vec<bool> = (0..25).map(|i| i % 5 != 0).collect(); // 20/25
        let mut flipped = base.clone();
        flipped[1] = false; // 19/25
        write_run(&a, point, &[&base, &base, &base]);
        write_run(&b, point, &[&base, &base, &base]);
        write_run(&c, point, &[&flipped, &flipped, &flipped]);

        let same = accuracy(&a, &b, point, 0.95, 1, 2000).unwrap().unwrap();
        assert_eq!((same.items, same.ci_lo, same.ci_hi), (25, 1.0, 1.0));
        assert_eq!(same.p_below(0.975), 1.0);

        let one = accuracy(&a, &c, point, 0.95, 1, 2000).unwrap().unwrap();
        assert_eq!((one.baseline_only, one.candidate_only), (1, 0));
        assert!((one.mcnemar_p - 1.0).abs() < 1e-12, "{}", one.mcnemar_p);
        // The 2-point bound on a 0.8 baseline is 0.975: the interval straddles it.
        assert!(one.ci_lo < 0.975 && one.ci_hi >= 0.975, "{one:?}");
        let p = one.p_below(0.975);
        assert!(p > 0.2 && p < 0.6, "{p}");

        // A point the runs do not have: no paired evidence.
        assert!(accuracy(&a, &c, "other", 0.95, 1, 2000).unwrap().is_none());

        // A malformed line is named with its file and line.
        let bad = tmp.join("bad/eval/component.0.eval_arith/r0");
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("items.jsonl"), "{\"task\":\"arith\"}\n").unwrap();
        let err = accuracy(&a, &tmp.join("bad"), point, 0.95, 1, 2000).unwrap_err();
        assert!(err.to_string().contains("items.jsonl:1"), "{err}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    fn items(scores: &[f64], bleu: Option<&[BleuStats]>) -> Items {
        let mut it = Items::default();
        for (i, s) in scores.iter().enumerate() {
            let b = bleu.map(|b| b[i]);
            it.add("t", &format!("i{i}"), *s >= 0.5, *s, b.as_ref());
        }
        it
    }

    #[test]
    fn mean_scores_pair_by_item() {
        let base: Vec<f64> = (0..30).map(|i| 0.3 + 0.02 * (i % 9) as f64).collect();
        let a = items(&base, None);
        let same = paired(&a, &a, ItemStatistic::MeanScore, 0.95, 3, 2000)
            .unwrap()
            .unwrap();
        assert_eq!((same.ci_lo, same.ci_hi, same.items), (1.0, 1.0, 30));
        // Every item 0.05 lower: the ratio is known exactly to lie near mean(b)/mean(a).
        let lower: Vec<f64> = base.iter().map(|x| x - 0.05).collect();
        let r = paired(
            &a,
            &items(&lower, None),
            ItemStatistic::MeanScore,
            0.95,
            3,
            2000,
        )
        .unwrap()
        .unwrap();
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        assert!((r.baseline - mean(&base)).abs() < 1e-12);
        assert!((r.candidate - mean(&lower)).abs() < 1e-12);
        assert!(r.ci_hi < 1.0 && r.ci_lo < r.candidate / r.baseline, "{r:?}");
        assert_eq!(r.p_below(1.0), 1.0 / 2000.0);
        // A zero baseline gives no ratio; no shared item gives no evidence.
        let zero = items(&[0.0; 30], None);
        assert!(
            paired(&zero, &a, ItemStatistic::MeanScore, 0.95, 3, 2000)
                .unwrap()
                .is_none()
        );
        let mut other = Items::default();
        other.add("t", "elsewhere", true, 1.0, None);
        assert!(
            paired(&a, &other, ItemStatistic::MeanScore, 0.95, 3, 2000)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn corpus_bleu_is_recomputed_from_resampled_segment_statistics() {
        let refs = [
            "the cat sat on the mat today",
            "a fast brown fox jumps high",
        ];
        let good = [
            "the cat sat on the mat today",
            "a fast brown fox jumps high",
        ];
        let poor = ["the cat sat on a mat", "a brown fox jumps"];
        let stats = |hyps: &[&str]| -> Vec<BleuStats> {
            (0..20)
                .map(|i| yardstick_eval::bleu::stats(hyps[i % 2], &[refs[i % 2].to_string()]))
                .collect()
        };
        let (sa, sb) = (stats(&good), stats(&poor));
        let a = items(&[1.0; 20], Some(&sa));
        let b = items(&[1.0; 20], Some(&sb));
        let r = paired(&a, &b, ItemStatistic::CorpusBleu, 0.95, 3, 1000)
            .unwrap()
            .unwrap();
        assert!((r.baseline - 100.0).abs() < 1e-9, "{r:?}");
        assert!((r.candidate - yardstick_eval::bleu::corpus(&sb)).abs() < 1e-9);
        // Every segment lost n-grams: the whole interval is below 1.
        assert!(r.ci_hi < 1.0 && r.ci_lo > 0.0, "{r:?}");
        let same = paired(&a, &a, ItemStatistic::CorpusBleu, 0.95, 3, 1000)
            .unwrap()
            .unwrap();
        assert_eq!((same.ci_lo, same.ci_hi), (1.0, 1.0));
        // Items without segment statistics cannot give corpus BLEU.
        let plain = items(&[1.0; 20], None);
        assert!(
            paired(&plain, &plain, ItemStatistic::CorpusBleu, 0.95, 3, 1000)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn eval_json_items_are_read_per_task() {
        let doc = serde_json::json!({"tasks": [
            {"name": "a", "items": [
                {"id": "1", "repeat": 0, "correct": true, "score": 1.0},
                {"id": "1", "repeat": 1, "correct": false, "score": 0.0},
                {"id": "2", "repeat": 0, "correct": false}
            ]},
            {"name": "b", "items": []}
        ]});
        let m = Items::from_eval_json(&doc, "x.json").unwrap();
        assert_eq!((m["a"].len(), m["b"].len()), (2, 0));
        let t = &m["a"].0[&("a".to_string(), "1".to_string())];
        assert_eq!((t.correct, t.answered, t.score), (1, 2, 1.0));
        let bad = serde_json::json!({"tasks": [{"name": "a", "items": [{"id": "1"}]}]});
        let e = Items::from_eval_json(&bad, "x.json").unwrap_err();
        assert!(
            e.to_string().contains("x.json") && e.to_string().contains("correct"),
            "{e}"
        );
    }
}
