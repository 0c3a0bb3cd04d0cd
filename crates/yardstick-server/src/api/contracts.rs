//! `GET /api/benchmark/contracts`: the methodology contract as data.

use axum::Json;
use schemars::JsonSchema;
use serde::Serialize;
use yardstick_gate::MetricClass;
use yardstick_spec::metrics::{CATALOGUE, MetricDef};
use yardstick_spec::rules::{RULES, RuleInfo};
use yardstick_spec::{Template, template};

/// The contract every run is held to.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Contracts {
    /// The JSON Schema (draft 2020-12) of a BenchmarkRun spec, as `yardstick schema` prints it.
    pub schema: serde_json::Value,
    /// Every rule `yardstick validate` applies.
    pub rules: Vec<RuleInfo>,
    /// The specs `yardstick init --template NAME` writes.
    pub templates: Vec<TemplateOut>,
    /// The metric catalogue, as `yardstick metrics --json` prints it.
    pub metrics: Vec<MetricDef>,
    /// How the regression gate decides.
    pub gate: GatePolicy,
}

/// One `init` template.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TemplateOut {
    /// Its name (`--template NAME`).
    pub name: &'static str,
    /// The YAML text.
    pub text: &'static str,
}

/// The gate's policy: default tolerances per metric class, and its fixed rules.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GatePolicy {
    /// Default tolerance of each class (a spec's `gates.tolerances` overrides them).
    pub tolerances: Vec<ClassTolerance>,
    /// Fewest replicates per side for a verdict other than INCONCLUSIVE.
    pub min_replicates: usize,
    /// The verdicts, best first; the overall verdict is the worst of the metrics'.
    pub verdicts: Vec<&'static str>,
    /// How the verdict is reached, in one paragraph.
    pub rule: &'static str,
}

/// The default tolerance of one metric class.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ClassTolerance {
    /// The class.
    pub class: MetricClass,
    /// `higher_is_better` or `lower_is_better`.
    pub direction: &'static str,
    /// The tolerance.
    pub tolerance: f64,
    /// What the tolerance counts: `percent`, `points` (on a 0-100 scale) or `none`.
    pub unit: &'static str,
    /// Going beyond it only warns (memory) instead of failing.
    pub warn_only: bool,
}

const CLASSES: [MetricClass; 9] = [
    MetricClass::Throughput,
    MetricClass::Latency,
    MetricClass::Tail,
    MetricClass::StepTime,
    MetricClass::Memory,
    MetricClass::Accuracy,
    MetricClass::Perplexity,
    MetricClass::Quality,
    MetricClass::LossSlope,
];

/// The gate policy, from `yardstick-gate`'s own functions.
pub fn gate_policy() -> GatePolicy {
    let tolerances = CLASSES
        .iter()
        .map(|&class| ClassTolerance {
            class,
            direction: match class.usual_direction() {
                yardstick_spec::metrics::Direction::HigherIsBetter => "higher_is_better",
                _ => "lower_is_better",
            },
            tolerance: yardstick_gate::tolerance_pct(class, None),
            unit: match class {
                MetricClass::Accuracy | MetricClass::Quality => "points",
                MetricClass::LossSlope => "none",
                _ => "percent",
            },
            warn_only: class.warn_only(),
        })
        .collect();
    GatePolicy {
        tolerances,
        min_replicates: yardstick_gate::MIN_REPLICATES,
        verdicts: vec!["PASS", "WARN", "INCONCLUSIVE", "FAIL"],
        rule: "per gated metric, the confidence interval of the ratio candidate/baseline (over \
               replicate values) must clear both the tolerance and the machine profile's noise \
               floor to FAIL, and stay inside them to PASS; otherwise INCONCLUSIVE. Holm's \
               correction applies across metrics; the overall verdict is the worst.",
    }
}

/// The contract, assembled from the libraries that enforce it.
pub fn build() -> Contracts {
    Contracts {
        schema: yardstick_spec::json_schema(),
        rules: RULES.to_vec(),
        templates: Template::ALL
            .iter()
            .map(|&t| TemplateOut {
                name: t.name(),
                text: template(t),
            })
            .collect(),
        metrics: CATALOGUE.to_vec(),
        gate: gate_policy(),
    }
}

pub(super) async fn contracts() -> Json<Contracts> {
    Json(build())
}
