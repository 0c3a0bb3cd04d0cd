//! The eval executor: one replicate of one eval point runs every item of its task `repeat` times
//! (or measures perplexity over its shard) through `yardstick-eval` with a fresh connection pool,
//! and turns the result into a replicate summary whose facts the gate knows: `accuracy/value`
//! (a fraction in [0, 1]), `perplexity/value`, `determinism/value` (with `repeat` ≥ 2).
//!
//! Task files are read once, before the run starts ([`EvalInputs::load`]): a bad task file is
//! invalid input (exit 2, naming `file:line`), not a failed replicate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use yardstick_eval::backend::HttpBackend;
use yardstick_eval::{Decoding, EvalError, EvalReport, Shard, Task};
use yardstick_load::Api;
use yardstick_spec::metrics::{Measurement, id, push_stats};
use yardstick_store::summary::{AccuracyInterval, EvalPointSummary};

use crate::RunError;
use crate::facts::Figures;
use crate::plan::{Plan, PointWork};
use crate::replicate::ReplicateOutcome;

/// The tasks and shards of a plan's eval points, read before anything runs.
#[derive(Debug, Default)]
pub struct EvalInputs {
    tasks: BTreeMap<String, Task>,
    shards: BTreeMap<String, Shard>,
    /// Task and text files read (as named in the spec, resolved path), to store with the run.
    pub files: Vec<(String, PathBuf)>,
}

fn invalid(e: EvalError) -> RunError {
    RunError::Invalid(match e {
        EvalError::Task { .. } | EvalError::Io { .. } => {
            format!("{e} (see docs/eval.md for the task format)")
        }
        other => other.to_string(),
    })
}

impl EvalInputs {
    /// Reads every task and perplexity text the plan's eval points name; files are relative to
    /// `base` (the spec's directory; the working directory when `None`), or read from the
    /// frozen copies of the run directory `frozen` (see [`crate::RunOptions::inputs_from`]).
    pub fn load(
        plan: &Plan,
        base: Option<&Path>,
        frozen: Option<&Path>,
    ) -> Result<EvalInputs, RunError> {
        let mut inputs = EvalInputs::default();
        for p in &plan.points {
            let PointWork::Eval {
                task, perplexity, ..
            } = &p.work
            else {
                continue;
            };
            if let Some(t) = task
                && !inputs.tasks.contains_key(t)
            {
                let loaded = if yardstick_spec::rules::task_is_file(t) {
                    let path = crate::resolve_input(base, frozen, "eval", t);
                    let task = Task::load(&path.display().to_string()).map_err(invalid)?;
                    inputs.files.push((t.clone(), path));
                    task
                } else {
                    Task::load(t).map_err(invalid)?
                };
                inputs.tasks.insert(t.clone(), loaded);
            }
            if let Some(s) = perplexity
                && !inputs.shards.contains_key(s)
            {
                let shard = if s == "builtin" {
                    Shard::load("builtin")
                } else {
                    let path = crate::resolve_input(base, frozen, "eval", s);
                    inputs.files.push((s.clone(), path.clone()));
                    Shard::load(&path.display().to_string())
                }
                .map_err(invalid)?;
                inputs.shards.insert(s.clone(), shard);
            }
        }
        Ok(inputs)
    }
}

/// Runs one replicate of an eval point against `url`: its figures ([`measurements`]) count
/// the items (task) or tokens (perplexity) behind them, and `eval.json` and `items.jsonl` are
/// its files.
pub fn run_replicate(
    rt: &tokio::runtime::Runtime,
    work: &PointWork,
    inputs: &EvalInputs,
    url: &str,
) -> Result<ReplicateOutcome, RunError> {
    let PointWork::Eval {
        api,
        model,
        task,
        perplexity,
        repeat,
        confidence,
        max_tokens,
        seed,
        stop,
        concurrency,
        timeout,
        api_key_env,
        ca_cert,
        ..
    } = work
    else {
        return Err(RunError::Internal("not an eval point".into()));
    };
    let timeout = timeout.unwrap_or(Duration::from_secs(120));
    let decoding = Decoding {
        model: model.clone(),
        max_tokens: *max_tokens,
        seed: *seed,
        stop: stop.clone(),
    };
    let backend = |api: Api, idle: usize| {
        let ca_cert = ca_cert.as_deref().map(std::path::Path::new);
        HttpBackend::new(url, api, timeout, api_key_env.as_deref(), ca_cert, idle)
            .map_err(|e| RunError::Workload(e.to_string()))
    };
    let tasks: Vec<Task> = task
        .iter()
        .map(|t| {
            inputs
                .tasks
                .get(t)
                .cloned()
                .ok_or_else(|| RunError::Internal(format!("task {t} was not loaded")))
        })
        .collect::<Result<_, _>>()?;
    let api: Api = if api == "completions" {
        Api::Completions
    } else {
        Api::Chat
    };
    let mut report = if tasks.is_empty() {
        EvalReport {
            model: model.clone(),
            api,
            decoding: decoding.clone(),
            repeat: *repeat as usize,
            confidence: *confidence,
            tasks: Vec::new(),
            concurrency: *concurrency as usize,
            elapsed_s: 0.0,
            requests_per_s: 0.0,
            perplexity: None,
        }
    } else {
        let b = backend(api, *concurrency as usize)?;
        rt.block_on(yardstick_eval::run_eval(
            &b,
            &decoding,
            &tasks,
            yardstick_eval::RunOptions {
                repeat: *repeat as usize,
                confidence: *confidence,
                concurrency: *concurrency as usize,
            },
        ))
        .map_err(|e| RunError::Workload(e.to_string()))?
    };
    if let Some(s) = perplexity {
        let shard = inputs
            .shards
            .get(s)
            .ok_or_else(|| RunError::Internal(format!("shard {s} was not loaded")))?;
        let b = backend(Api::Completions, 1)?;
        let started = std::time::Instant::now();
        let p = rt
            .block_on(yardstick_eval::perplexity::measure(&b, model, shard))
            .map_err(|e| RunError::Workload(e.to_string()))?;
        report.elapsed_s = started.elapsed().as_secs_f64();
        report.perplexity = Some(p);
    }
    let summary = summarize(&report);
    let (measurements, n) = measurements(&report);
    let mut eval_json = serde_json::to_vec_pretty(&report.to_json()).expect("JSON");
    eval_json.push(b'\n');
    let mut out = ReplicateOutcome::new(summary, Figures::with_n(measurements, n));
    out.eval_files = vec![
        ("eval.json".into(), eval_json),
        ("items.jsonl".into(), report.items_jsonl().into_bytes()),
    ];
    Ok(out)
}

/// The units a task's summary declares for its figures.
const TASK_UNITS: &[(&str, &str)] = &[
    (id::ACCURACY, "fraction"),
    (id::ACCURACY_CI, "fraction"),
    (id::DETERMINISM, "fraction"),
    (id::MEAN_SCORE, "fraction"),
    (id::CORRECT, "count"),
    (id::ERRORS, "count"),
    (id::OUTPUT_TOKENS, "count"),
    (id::ITEMS_PER_S, "req/s"),
    (id::BLEU, "BLEU"),
];

/// The units a perplexity summary declares.
const PERPLEXITY_UNITS: &[(&str, &str)] = &[
    (id::PERPLEXITY, ""),
    (id::NLL, "nats"),
    (id::PERPLEXITY_TOKENS, "count"),
];

fn units(table: &[(&str, &str)]) -> Value {
    table
        .iter()
        .map(|(k, u)| ((*k).to_string(), Value::from(*u)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The replicate summary of an eval report (one task, or the perplexity point). Every request
/// failing is a failed replicate (`error`), never an accuracy of 0.
pub fn summarize(report: &EvalReport) -> Value {
    if let Some(t) = report.tasks.first() {
        let requests = t.items.len();
        if requests > 0 && t.errors == requests {
            let first = t
                .items
                .iter()
                .find_map(|i| i.error.clone())
                .unwrap_or_default();
            return json!({"error": format!("every request of task {} failed; first error: {first}", t.name)});
        }
        let mut s = json!({
            "eval": {"task": t.name, "n": t.n, "repeat": report.repeat,
                     "confidence": report.confidence, "api": report.api},
            (id::ACCURACY): t.accuracy,
            (id::ACCURACY_CI): {"lo": t.ci[0], "hi": t.ci[1]},
            (id::CORRECT): t.correct,
            (id::ERRORS): t.errors,
            (id::MEAN_SCORE): t.mean_score,
            (id::ITEMS_PER_S): report.requests_per_s,
            "units": units(TASK_UNITS),
        });
        if let Some(d) = t.determinism {
            s[id::DETERMINISM] = json!(d);
        }
        if let Some(l) = t.latency_ms {
            s[id::LATENCY_MS] = json!({"mean": l.mean, "p50": l.p50, "max": l.max});
        }
        if let Some(n) = t.output_tokens {
            s[id::OUTPUT_TOKENS] = json!(n);
        }
        for (k, v) in [
            (id::MEAN_F1, t.mean_f1),
            (id::MEAN_ROUGE_L, t.mean_rouge_l),
            (id::BLEU, t.bleu),
        ] {
            if let Some(v) = v {
                s[k] = json!(v);
            }
        }
        return s;
    }
    let Some(p) = &report.perplexity else {
        return json!({"error": "the eval point measured nothing"});
    };
    let mut s = json!({
        "eval": {"perplexity": p.source, "n": p.tokens, "paragraphs": p.paragraphs},
        "units": units(PERPLEXITY_UNITS),
    });
    match (p.value, p.nll) {
        (Some(v), Some(nll)) => {
            s[id::PERPLEXITY] = json!(v);
            s[id::NLL] = json!(nll);
            s[id::PERPLEXITY_TOKENS] = json!(p.tokens);
        }
        _ => {
            s["unsupported"] = json!(
                p.unsupported
                    .clone()
                    .unwrap_or_else(|| "no value".to_string())
            );
        }
    }
    s
}

/// The figures of an eval report, with the items (a task) or tokens (perplexity) behind them,
/// in the units [`summarize`] declares; none when every request failed or nothing was measured.
pub fn measurements(report: &EvalReport) -> (Vec<Measurement>, u64) {
    let unit = |m: Measurement| {
        let declared = TASK_UNITS
            .iter()
            .chain(PERPLEXITY_UNITS)
            .find(|(k, _)| *k == m.metric)
            .map(|(_, u)| *u);
        m.in_unit(declared)
    };
    if let Some(t) = report.tasks.first() {
        if !t.items.is_empty() && t.errors == t.items.len() {
            return (Vec::new(), t.n as u64);
        }
        let mut out = vec![
            Measurement::value(id::ACCURACY, t.accuracy),
            Measurement::stat(id::ACCURACY_CI, "lo", t.ci[0]),
            Measurement::stat(id::ACCURACY_CI, "hi", t.ci[1]),
            Measurement::value(id::CORRECT, t.correct as f64),
            Measurement::value(id::ERRORS, t.errors as f64),
            Measurement::value(id::MEAN_SCORE, t.mean_score),
            Measurement::value(id::ITEMS_PER_S, report.requests_per_s),
        ];
        out.extend(
            t.determinism
                .map(|d| Measurement::value(id::DETERMINISM, d)),
        );
        if let Some(l) = t.latency_ms {
            push_stats(
                &mut out,
                id::LATENCY_MS,
                [
                    ("mean", Some(l.mean)),
                    ("p50", Some(l.p50)),
                    ("max", Some(l.max)),
                ],
            );
        }
        out.extend(
            t.output_tokens
                .map(|n| Measurement::value(id::OUTPUT_TOKENS, n as f64)),
        );
        for (k, v) in [
            (id::MEAN_F1, t.mean_f1),
            (id::MEAN_ROUGE_L, t.mean_rouge_l),
            (id::BLEU, t.bleu),
        ] {
            out.extend(v.map(|v| Measurement::value(k, v)));
        }
        return (out.into_iter().map(unit).collect(), t.n as u64);
    }
    match &report.perplexity {
        Some(p) => match (p.value, p.nll) {
            (Some(v), Some(nll)) => (
                [
                    Measurement::value(id::PERPLEXITY, v),
                    Measurement::value(id::NLL, nll),
                    Measurement::value(id::PERPLEXITY_TOKENS, p.tokens as f64),
                ]
                .into_iter()
                .map(unit)
                .collect(),
                p.tokens,
            ),
            _ => (Vec::new(), p.tokens),
        },
        None => (Vec::new(), 1),
    }
}

/// `summary.json`'s `eval` section: per eval point, the accuracy of every replicate, the Wilson
/// interval of the first, the determinism rates and the perplexity, from the replicate
/// summaries. `None` when the plan has no eval points.
pub fn eval_summary(
    plan: &Plan,
    per_point: &[(String, Vec<Value>)],
) -> Option<Vec<EvalPointSummary>> {
    let mut out = Vec::new();
    for (p, (id, reps)) in plan.points.iter().zip(per_point) {
        if !matches!(p.work, PointWork::Eval { .. }) {
            continue;
        }
        let ok: Vec<&Value> = reps.iter().filter(|r| r.get("error").is_none()).collect();
        let first = ok.first().copied().unwrap_or(&Value::Null);
        let all = |metric: &str| {
            let v: Vec<f64> = ok.iter().filter_map(|r| r[metric].as_f64()).collect();
            (!v.is_empty()).then_some(v)
        };
        let accuracy = all(id::ACCURACY);
        let end = |k: &str| first[id::ACCURACY_CI][k].as_f64().unwrap_or(f64::NAN);
        out.push(EvalPointSummary {
            point: id.clone(),
            task: first["eval"]["task"].as_str().map(str::to_owned),
            n: first["eval"]["n"].as_u64(),
            replicates: reps.len(),
            failed_replicates: reps.len() - ok.len(),
            replicates_agree: accuracy
                .as_deref()
                .unwrap_or_default()
                .windows(2)
                .all(|w| w[0] == w[1]),
            accuracy,
            wilson_ci_first_replicate: first.get(id::ACCURACY_CI).map(|_| AccuracyInterval {
                lo: end("lo"),
                hi: end("hi"),
            }),
            confidence: first["eval"]["confidence"].as_f64(),
            determinism: all(id::DETERMINISM),
            perplexity: all(id::PERPLEXITY),
            perplexity_unsupported: first["unsupported"].as_str().map(str::to_owned),
        });
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_eval::report::{ItemRecord, TaskResult};

    fn report(
        tasks: Vec<TaskResult>,
        perplexity: Option<yardstick_eval::Perplexity>,
    ) -> EvalReport {
        EvalReport {
            model: "m".into(),
            api: Api::Chat,
            decoding: Decoding {
                model: "m".into(),
                max_tokens: 8,
                seed: 0,
                stop: vec![],
            },
            repeat: 2,
            confidence: 0.95,
            tasks,
            concurrency: 1,
            elapsed_s: 1.0,
            requests_per_s: 4.0,
            perplexity,
        }
    }

    fn item(id: &str, repeat: usize, correct: bool, error: Option<&str>) -> ItemRecord {
        ItemRecord {
            task: "t".into(),
            id: id.into(),
            repeat,
            output: error.is_none().then(|| format!("{id}{correct}")),
            correct,
            score: if correct { 1.0 } else { 0.0 },
            latency_ms: error.is_none().then_some(2.0),
            output_tokens: None,
            error: error.map(str::to_owned),
            bleu_stats: None,
        }
    }

    #[test]
    fn a_task_summary_carries_the_gated_facts_and_all_failed_is_an_error() {
        let recs = vec![
            item("a", 0, true, None),
            item("b", 0, false, None),
            item("a", 1, true, None),
            item("b", 1, false, None),
        ];
        let t = TaskResult::summarise("t", recs, 2, 0.95, Some("exact")).unwrap();
        let r = report(vec![t], None);
        let s = summarize(&r);
        assert_eq!(s["accuracy"], 0.5);
        assert_eq!(s["determinism"], 1.0);
        assert_eq!(s["eval"]["n"], 2);
        let (m, n) = measurements(&r);
        let facts =
            crate::facts::replicate_facts("r", "p", 0, &crate::facts::Figures::with_n(m, n), None);
        let acc = facts.iter().find(|f| f.metric == "accuracy").unwrap();
        assert_eq!(
            (acc.statistic.as_str(), acc.unit.as_str(), acc.n),
            ("value", "fraction", 2)
        );
        assert!(!facts.iter().any(|f| f.metric == "eval"));
        assert!(
            crate::facts::eval_headline(&s)
                .unwrap()
                .starts_with("t: accuracy 0.500")
        );

        let failed = vec![
            item("a", 0, false, Some("connect")),
            item("b", 0, false, Some("x")),
        ];
        let t = TaskResult::summarise("t", failed, 1, 0.95, None).unwrap();
        let s = summarize(&report(vec![t], None));
        assert!(
            s["error"].as_str().unwrap().contains("every request"),
            "{s}"
        );
    }

    /// The `eval` section from replicate summaries: a task with a failed replicate, and a
    /// perplexity the server could not give; written with every field, `null` where missing.
    #[test]
    fn the_eval_section_pools_the_replicates_of_each_point() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval.yaml"),
        )
        .unwrap();
        let c = yardstick_spec::check_str(&text);
        let plan = crate::plan::plan(&c.spec.unwrap());
        let task = |acc: f64| {
            json!({"eval": {"task": "arith", "n": 4, "repeat": 2, "confidence": 0.95},
                   "accuracy": acc, "accuracy_ci": {"lo": 0.3, "hi": null}, "determinism": 1.0})
        };
        let ppl = json!({"eval": {"perplexity": "builtin", "n": 0, "paragraphs": 7},
                         "unsupported": "no logprobs"});
        let per_point = vec![
            (
                "component.0.eval/arith".to_string(),
                vec![task(0.75), json!({"error": "boom"}), task(0.5)],
            ),
            (
                "component.0.eval/format".to_string(),
                vec![json!({"error": "boom"})],
            ),
            ("component.0.eval/perplexity".to_string(), vec![ppl]),
        ];
        let e = eval_summary(&plan, &per_point).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].task.as_deref(), e[0].n), (Some("arith"), Some(4)));
        assert_eq!((e[0].replicates, e[0].failed_replicates), (3, 1));
        assert_eq!(e[0].accuracy.as_deref(), Some(&[0.75, 0.5][..]));
        assert!(!e[0].replicates_agree);
        let ci = e[0].wilson_ci_first_replicate.unwrap();
        assert!(ci.lo == 0.3 && ci.hi.is_nan());
        // Every replicate failed: nothing from a first good one.
        assert_eq!(
            (e[1].task.as_ref(), e[1].n, e[1].confidence),
            (None, None, None)
        );
        assert!(e[1].replicates_agree);
        assert_eq!(e[2].perplexity_unsupported.as_deref(), Some("no logprobs"));
        assert_eq!(
            (e[2].accuracy.as_ref(), e[2].wilson_ci_first_replicate),
            (None, None)
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v[0]["wilson_ci_first_replicate"],
            json!({"lo": 0.3, "hi": null})
        );
        assert_eq!(v[1].as_object().unwrap().len(), 12, "{v}");
        assert!(v[1]["task"].is_null() && v[1]["accuracy"].is_null());
        assert_eq!(v[2]["n"], 0);
    }

    #[test]
    fn an_unsupported_perplexity_gives_no_number() {
        let p = yardstick_eval::Perplexity {
            value: None,
            tokens: 0,
            nll: None,
            paragraphs: 7,
            source: "builtin".into(),
            unsupported: Some("shifted".into()),
        };
        let r = report(vec![], Some(p));
        let s = summarize(&r);
        assert!(s.get("perplexity").is_none(), "{s}");
        assert!(measurements(&r).0.is_empty());
        assert!(
            crate::facts::eval_headline(&s)
                .unwrap()
                .contains("unsupported")
        );
    }
}
