//! A gate or comparison result, read from the JSON that `yardstick gate RUN --json` (a
//! serialized `GateReport`) or `yardstick compare A B --json` (a `Comparison`) printed.
//!
//! Read as plain JSON with defaults rather than through the gate crate's types, so a report
//! keeps working on files saved by older or newer versions that add fields.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::ReportError;

/// Which command produced the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// `yardstick gate --json`: verdicts per metric.
    Gate,
    /// `yardstick compare --json`: ratios without verdicts.
    Comparison,
}

/// One field that differs between the two runs.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FieldDiff {
    /// Dotted path.
    pub path: String,
    /// The baseline's value, as JSON text.
    pub baseline: String,
    /// The candidate's value, as JSON text.
    pub candidate: String,
}

/// One point × metric of the result.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GateRow {
    /// Point id.
    pub point: String,
    /// Metric.
    pub metric: String,
    /// Statistic.
    pub statistic: String,
    /// `throughput`, `latency`, `step_time`, `memory`.
    pub class: String,
    /// Unit, when the result names it.
    pub unit: String,
    /// Baseline aggregate.
    pub baseline: f64,
    /// Candidate aggregate.
    pub candidate: f64,
    /// candidate / baseline.
    pub ratio: Option<f64>,
    /// CI of the ratio.
    pub ci: Option<(f64, f64)>,
    /// Tolerance in percent, or in points for accuracy and quality scores (gate results only).
    pub tolerance_pct: Option<f64>,
    /// The profile's noise floor in percent, when the gate knew one.
    pub noise_floor_pct: Option<f64>,
    /// The ratio beyond which the metric regressed, as the gate computed it (the farther of
    /// the tolerance's and the noise floor's bounds).
    pub gate_bound: Option<f64>,
    /// Replicates (baseline, candidate).
    pub n: (usize, usize),
    /// Holm-adjusted p-value (gate) or Mann–Whitney p-value (comparison).
    pub p_value: Option<f64>,
    /// `PASS`, `WARN`, `FAIL`, `INCONCLUSIVE` (gate results only).
    pub verdict: Option<String>,
    /// Why, in a sentence (gate results only).
    pub reason: Option<String>,
}

impl GateRow {
    /// True when a higher ratio is better (throughput, accuracy, quality scores).
    pub fn higher_is_better(&self) -> bool {
        matches!(self.class.as_str(), "throughput" | "accuracy" | "quality")
    }

    /// True when the tolerance is in points (accuracy; BLEU / ROUGE-L / F1 quality scores).
    fn in_points(&self) -> bool {
        matches!(self.class.as_str(), "accuracy" | "quality")
    }

    /// `3 %`, or `2 pts` for accuracy and quality scores.
    pub fn tolerance_label(&self) -> String {
        match self.tolerance_pct {
            Some(t) if self.in_points() => format!("{} pts", crate::format::num(t)),
            Some(t) => format!("{} %", crate::format::num(t)),
            None => "-".into(),
        }
    }

    /// The ratio beyond which the metric regressed: the gate's own bound when the result
    /// carries it, else `1 ± tolerance` (not for accuracy and quality scores, whose tolerance
    /// is in points).
    pub fn bound(&self) -> Option<f64> {
        if self.gate_bound.is_some() {
            return self.gate_bound;
        }
        if self.in_points() {
            return None;
        }
        let t = self.tolerance_pct? / 100.0;
        Some(if self.higher_is_better() {
            1.0 - t
        } else {
            1.0 + t
        })
    }

    /// `ttft_ms p50`.
    pub fn label(&self) -> String {
        format!("{} {}", self.metric, self.statistic)
    }
}

/// A gate or comparison result.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct GateView {
    /// Gate or comparison.
    pub kind: GateKind,
    /// Overall verdict (gate results only).
    pub verdict: Option<String>,
    /// Why the verdict is not enforced, when it is not.
    pub exploratory_reason: Option<String>,
    /// Baseline run id.
    pub baseline_run: String,
    /// Candidate run id.
    pub candidate_run: String,
    /// Baseline machine profile.
    pub baseline_profile: Option<String>,
    /// Candidate machine profile.
    pub candidate_profile: Option<String>,
    /// Confidence level of the CIs.
    pub level: f64,
    /// Spec fields that differ.
    pub spec_diffs: Vec<FieldDiff>,
    /// Environment fields that differ.
    pub env_diffs: Vec<FieldDiff>,
    /// The comparison's warnings.
    pub warnings: Vec<String>,
    /// Per point × metric.
    pub rows: Vec<GateRow>,
}

/// Why a JSON document is not `gate --json` or `compare --json` output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateDocError {
    /// It has the keys of neither.
    #[error(
        "neither `yardstick gate --json` nor `yardstick compare --json` output \
         (expected `verdict` and `comparison`, or `baseline_run` and \
         `candidate_run`)"
    )]
    NotGateOutput,
    /// Its `metrics` is not a list.
    #[error("`metrics` is not a list")]
    MetricsNotList,
}

impl GateView {
    /// Reads a saved `gate --json` or `compare --json` output.
    pub fn read(path: &Path) -> Result<GateView, ReportError> {
        let bytes = std::fs::read(path).map_err(|e| ReportError::io(path, e))?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| ReportError::Malformed {
            path: path.display().to_string(),
            message: format!("not JSON: {e}"),
        })?;
        GateView::from_json(&v).map_err(|e| ReportError::Malformed {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Interprets `gate --json` or `compare --json` output.
    pub fn from_json(v: &Value) -> Result<GateView, GateDocError> {
        let (kind, comparison) = if v.get("comparison").is_some() && v.get("verdict").is_some() {
            (GateKind::Gate, &v["comparison"])
        } else if v.get("baseline_run").is_some() && v.get("candidate_run").is_some() {
            (GateKind::Comparison, v)
        } else {
            return Err(GateDocError::NotGateOutput);
        };
        let s = |v: &Value| v.as_str().map(str::to_owned);
        let diffs = |v: &Value| -> Vec<FieldDiff> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|d| FieldDiff {
                            path: d["path"].as_str().unwrap_or_default().to_string(),
                            baseline: d["baseline"].to_string(),
                            candidate: d["candidate"].to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let ci = |m: &Value| m["ci_lo"].as_f64().zip(m["ci_hi"].as_f64());
        let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
        let units: Vec<(String, String, String, String)> = comparison["metrics"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|m| {
                        (
                            m["point"].as_str().unwrap_or_default().to_string(),
                            m["metric"].as_str().unwrap_or_default().to_string(),
                            m["statistic"].as_str().unwrap_or_default().to_string(),
                            m["unit"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let unit_of = |p: &str, m: &str, st: &str| {
            units
                .iter()
                .find(|u| u.0 == p && u.1 == m && u.2 == st)
                .map(|u| u.3.clone())
                .unwrap_or_default()
        };
        let rows_src = match kind {
            GateKind::Gate => &v["metrics"],
            GateKind::Comparison => &v["metrics"],
        };
        let rows = rows_src
            .as_array()
            .ok_or(GateDocError::MetricsNotList)?
            .iter()
            .map(|m| {
                let point = m["point"].as_str().unwrap_or_default().to_string();
                let metric = m["metric"].as_str().unwrap_or_default().to_string();
                let statistic = m["statistic"].as_str().unwrap_or_default().to_string();
                let n = match kind {
                    GateKind::Gate => (
                        m["n"][0].as_u64().unwrap_or(0) as usize,
                        m["n"][1].as_u64().unwrap_or(0) as usize,
                    ),
                    GateKind::Comparison => (
                        m["baseline_replicates"].as_array().map_or(0, Vec::len),
                        m["candidate_replicates"].as_array().map_or(0, Vec::len),
                    ),
                };
                GateRow {
                    unit: m["unit"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| unit_of(&point, &metric, &statistic)),
                    point,
                    metric,
                    statistic,
                    class: m["class"].as_str().unwrap_or_default().to_string(),
                    baseline: f(&m["baseline"]),
                    candidate: f(&m["candidate"]),
                    ratio: m["ratio"].as_f64(),
                    ci: ci(m),
                    tolerance_pct: m["tolerance_pct"].as_f64(),
                    noise_floor_pct: m["noise_floor_pct"].as_f64(),
                    gate_bound: m["bound"].as_f64(),
                    n,
                    p_value: m["p_holm"]
                        .as_f64()
                        .or_else(|| m["mann_whitney_p"].as_f64()),
                    verdict: s(&m["verdict"]),
                    reason: s(&m["reason"]),
                }
            })
            .collect();
        Ok(GateView {
            kind,
            verdict: s(&v["verdict"]),
            exploratory_reason: s(&v["exploratory_reason"]),
            baseline_run: comparison["baseline_run"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            candidate_run: comparison["candidate_run"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            baseline_profile: s(&comparison["baseline_profile"]),
            candidate_profile: s(&comparison["candidate_profile"]),
            level: comparison["level"].as_f64().unwrap_or(0.95),
            spec_diffs: diffs(&comparison["spec_diffs"]),
            env_diffs: diffs(&comparison["env_diffs"]),
            warnings: comparison["warnings"]
                .as_array()
                .map(|a| a.iter().filter_map(s).collect())
                .unwrap_or_default(),
            rows,
        })
    }

    /// Rows with a given verdict.
    pub fn count(&self, verdict: &str) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict.as_deref() == Some(verdict))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gate_and_compare_output_and_refuses_other_json() {
        let gate = serde_json::json!({
            "verdict": "FAIL", "exploratory": false, "exploratory_reason": null,
            "metrics": [{"point": "p", "metric": "ttft_ms", "statistic": "p50", "class": "latency",
                "tolerance_pct": 5.0, "baseline": 40.0, "candidate": 80.0, "ratio": 2.0,
                "ci_lo": 1.9, "ci_hi": 2.1, "n": [3, 3], "p_value": 1e-4, "p_holm": 2e-4,
                "verdict": "FAIL", "reason": "CI beyond"}],
            "comparison": {"baseline_run": "A", "candidate_run": "B", "level": 0.95,
                "baseline_profile": "cpu-x", "candidate_profile": "cpu-x",
                "spec_diffs": [{"path": "spec.x", "baseline": 1, "candidate": 2}],
                "env_diffs": [], "warnings": ["w"],
                "metrics": [{"point": "p", "metric": "ttft_ms", "statistic": "p50", "unit": "ms"}]}
        });
        let g = GateView::from_json(&gate).unwrap();
        assert_eq!(g.kind, GateKind::Gate);
        assert_eq!(g.verdict.as_deref(), Some("FAIL"));
        assert_eq!(g.rows[0].unit, "ms");
        assert_eq!(g.rows[0].bound(), Some(1.05));
        assert_eq!(g.rows[0].n, (3, 3));
        assert_eq!(g.rows[0].p_value, Some(2e-4));
        assert_eq!(g.spec_diffs[0].candidate, "2");
        assert_eq!(g.count("FAIL"), 1);

        let cmp = serde_json::json!({"baseline_run": "A", "candidate_run": "B", "level": 0.9,
            "spec_diffs": [], "env_diffs": [], "warnings": [],
            "metrics": [{"point": "p", "metric": "request_throughput", "statistic": "value",
                "unit": "req/s", "class": "throughput", "baseline": 10.0, "candidate": 9.0,
                "baseline_replicates": [10.0, 10.0], "candidate_replicates": [9.0, 9.0],
                "ratio": 0.9, "ci_lo": 0.88, "ci_hi": 0.92, "mann_whitney_p": 0.3}]});
        let c = GateView::from_json(&cmp).unwrap();
        assert_eq!(c.kind, GateKind::Comparison);
        assert!(c.verdict.is_none() && c.rows[0].verdict.is_none());
        assert_eq!(c.rows[0].n, (2, 2));
        assert!(c.rows[0].higher_is_better());
        assert_eq!(c.rows[0].bound(), None);

        assert!(GateView::from_json(&serde_json::json!({"runs": []})).is_err());

        // Accuracy: higher is better, tolerance in points, the gate's own bound wins.
        let mut acc = g.rows[0].clone();
        acc.class = "accuracy".into();
        acc.tolerance_pct = Some(2.0);
        assert!(acc.higher_is_better());
        assert_eq!(acc.tolerance_label(), "2 pts");
        assert_eq!(acc.bound(), None);
        acc.gate_bound = Some(0.97);
        assert_eq!(acc.bound(), Some(0.97));
        // Quality scores (BLEU, ROUGE-L, F1) likewise.
        let mut q = g.rows[0].clone();
        q.class = "quality".into();
        q.tolerance_pct = Some(2.0);
        assert!(q.higher_is_better());
        assert_eq!(q.tolerance_label(), "2 pts");
        assert_eq!(q.bound(), None);
    }
}
