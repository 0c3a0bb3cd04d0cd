//! Accuracy gated on paired items: the eval layer's `items.jsonl` of both runs, item by item.
//!
//! Replicates of a deterministic server repeat the same answers, so replicate-level accuracies
//! are identical and their bootstrap interval has zero width: one item answered differently
//! would FAIL a 25-item probe against a 2-point tolerance. Resampling items instead gives the
//! interval the probe's size warrants, and pairing them (the same item under both runs) keeps
//! it as narrow as the agreement between the runs allows.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use yardstick_stats::bootstrap::{BootstrapConfig, Method, paired_ratio_of_means_ci};
use yardstick_stats::hypothesis::{McNemarMethod, mcnemar};

use crate::GateError;

/// The paired evidence behind an accuracy verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedItems {
    /// Items present in both runs.
    pub items: usize,
    /// Items the baseline got right (by majority over replicates and repeats) and the
    /// candidate wrong.
    pub baseline_only: u64,
    /// Items the candidate got right and the baseline wrong.
    pub candidate_only: u64,
    /// Two-sided McNemar p-value of the discordant items (no difference in accuracy).
    pub mcnemar_p: f64,
    /// Lower bound of the paired bootstrap CI of the accuracy ratio candidate/baseline.
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
}

/// Per item (task, id): (correct, answered) summed over replicates and repeats.
type Tally = BTreeMap<(String, String), (u32, u32)>;

/// Reads `<run>/eval/<slug>/r*/items.jsonl`; `None` when the run has none for this point
/// (no eval layer, or a baseline imported from a file).
fn tally(run_dir: &Path, point: &str) -> Result<Option<Tally>, GateError> {
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
    let mut out = Tally::new();
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
            let (Some(task), Some(id), Some(correct)) =
                (v["task"].as_str(), v["id"].as_str(), v["correct"].as_bool())
            else {
                return Err(bad("an item needs `task`, `id` and `correct`".into()));
            };
            let e = out.entry((task.to_string(), id.to_string())).or_default();
            e.0 += u32::from(correct);
            e.1 += 1;
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Pairs the items of one eval point across the two runs and bootstraps the accuracy ratio
/// over items at `level`. `None` when either run has no items for the point, none are shared,
/// or the baseline got none right (no ratio; the caller's bound handles a zero baseline).
pub fn accuracy(
    baseline_dir: &Path,
    candidate_dir: &Path,
    point: &str,
    level: f64,
    seed: u64,
    resamples: usize,
) -> Result<Option<PairedItems>, GateError> {
    let (Some(a), Some(b)) = (tally(baseline_dir, point)?, tally(candidate_dir, point)?) else {
        return Ok(None);
    };
    let frac = |(k, n): (u32, u32)| f64::from(k) / f64::from(n.max(1));
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    let (mut baseline_only, mut candidate_only) = (0u64, 0u64);
    for (key, &ta) in &a {
        let Some(&tb) = b.get(key) else { continue };
        let (pa, pb) = (frac(ta), frac(tb));
        match (pa > 0.5, pb > 0.5) {
            (true, false) => baseline_only += 1,
            (false, true) => candidate_only += 1,
            _ => {}
        }
        xa.push(pa);
        xb.push(pb);
    }
    if xa.is_empty() || xa.iter().all(|x| *x == 0.0) {
        return Ok(None);
    }
    let cfg = BootstrapConfig {
        resamples,
        level,
        seed,
        method: Method::Percentile,
    };
    let r = paired_ratio_of_means_ci(&xa, &xb, &cfg)
        .map_err(|e| GateError::Invalid(format!("paired accuracy of {point}: {e}")))?;
    let mcnemar_p = mcnemar(baseline_only, candidate_only, McNemarMethod::Auto)
        .map_err(|e| GateError::Invalid(format!("McNemar of {point}: {e}")))?
        .p_value;
    Ok(Some(PairedItems {
        items: xa.len(),
        baseline_only,
        candidate_only,
        mcnemar_p,
        ci_lo: r.ci.lower,
        ci_hi: r.ci.upper,
        replicates: r.replicates,
    }))
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
}
