//! Training analysis of one replicate's metric records.
//!
//! Records are grouped by step. In a distributed job every rank reports its own step; the step
//! takes as long as its slowest rank (docs/methodology.md#the-slowest-rank-wins), and the step's
//! tokens and samples are the sum over ranks. A record without `rank` speaks for the whole job.
//!
//! Then: warm-up trim (fixed steps or MSER-5), step time mean/p50/p90, per-step tokens/s and
//! samples/s (p50 and the slow tail p10) and their aggregate (Σ tokens / Σ time), MFU by every
//! estimator the inputs allow, peak memory, loss trend, cost, and per-rank straggler analysis.

use std::collections::BTreeMap;

use serde::Serialize;
use yardstick_spec::metrics::{Measured, Measurement, id, push_stats};
use yardstick_stats::descriptive::Descriptive;
use yardstick_stats::percentile::percentile_sorted;
use yardstick_stats::{outliers, steady_state};

use crate::AnalysisError;
use crate::flops;
use crate::protocol::{MetricRecord, ParsedMetrics};

/// Which steps are warm-up and excluded from the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "policy", content = "steps")]
pub enum WarmupPolicy {
    /// Keep every step.
    None,
    /// Drop the first N steps.
    Steps(u64),
    /// Find the truncation point with MSER-5 on the step times.
    #[default]
    Mser5,
}

/// The model's shape, for FLOP estimates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default, schemars::JsonSchema)]
pub struct ModelDims {
    /// Parameters that take part in matrix multiplies (N of 6·N·T).
    pub parameters: f64,
    /// Transformer layers (for the transformer-aware estimator).
    pub layers: Option<u32>,
    /// Hidden size (for the transformer-aware estimator).
    pub hidden: Option<u32>,
    /// Training sequence length (transformer-aware estimator; tokens from samples).
    pub sequence_length: Option<u32>,
}

/// How to analyse a replicate.
#[derive(Debug, Clone, PartialEq, Serialize, Default, schemars::JsonSchema)]
pub struct TrainingConfig {
    /// Warm-up policy.
    pub warmup: WarmupPolicy,
    /// Model shape for 6·N·T and the transformer-aware MFU.
    pub model: Option<ModelDims>,
    /// Peak FLOP/s of one device (from [`flops::peak_flops`], a measured GEMM peak, or given).
    pub peak_flops_per_device: Option<f64>,
    /// Devices the job ran on (default: the reported world size, else 1).
    pub devices: Option<u32>,
    /// Price of one device-hour, for cost per 1K samples and per 1M tokens.
    pub cost_per_device_hour: Option<f64>,
    /// Attention heads, for the activation term of the memory-traffic estimate.
    pub attention_heads: Option<u32>,
    /// Bytes per activation/weight element for the memory-traffic estimate (default 4, fp32).
    pub bytes_per_element: Option<f64>,
}

/// Mean, median and tail of a per-step quantity.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StepStats {
    /// Steps summarised.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 10th percentile.
    pub p10: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (`None` for one step).
    pub stddev: Option<f64>,
}

impl StepStats {
    fn of(values: &[f64]) -> Option<Self> {
        let d = Descriptive::of(values).ok()?;
        let mut s = values.to_vec();
        s.sort_unstable_by(f64::total_cmp);
        Some(StepStats {
            n: d.n,
            mean: d.mean,
            p50: d.median,
            p90: percentile_sorted(&s, 0.9),
            p10: percentile_sorted(&s, 0.1),
            min: d.min,
            max: d.max,
            stddev: d.stddev,
        })
    }
}

/// Throughput per step and over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Throughput {
    /// Median of the per-step rates.
    pub p50: f64,
    /// 10th percentile of the per-step rates (the slow tail).
    pub p10: f64,
    /// Mean of the per-step rates.
    pub mean: f64,
    /// Σ units / Σ step time over the measured steps: the figure to quote.
    pub aggregate: f64,
}

/// What the warm-up trim did.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WarmupReport {
    /// The policy applied.
    pub policy: WarmupPolicy,
    /// Steps dropped from the start.
    pub trimmed: usize,
    /// MSER-5 only: whether a steady state was found (`false`: "no steady state").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<bool>,
}

/// Model FLOPs utilisation by one estimator.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MfuEstimate {
    /// Median over measured steps.
    pub p50: f64,
    /// 10th percentile (slow steps).
    pub p10: f64,
    /// Over the whole measured window (Σ FLOPs / Σ time / peak).
    pub aggregate: f64,
    /// FLOPs of a median step by this estimator.
    pub flops_per_step: f64,
}

/// MFU by every estimator the inputs allow; the headline uses the most specific one.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MfuReport {
    /// Headline median (from `estimator`).
    pub p50: f64,
    /// Headline 10th percentile.
    pub p10: f64,
    /// `reported` (the workload's own `flops`), `transformer` or `6nt`.
    pub estimator: &'static str,
    /// Peak FLOP/s per device used.
    pub peak_flops_per_device: f64,
    /// Devices counted.
    pub devices: u32,
    /// Each available estimator.
    pub by_estimator: BTreeMap<&'static str, MfuEstimate>,
}

/// Loss trend over the training steps (warm-up included: it is training too).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LossReport {
    /// Loss of the first step that reported one.
    pub first: f64,
    /// Loss of the last step that reported one.
    pub last: f64,
    /// Least-squares slope of loss against step number (per step).
    pub slope: f64,
    /// Standard error of the slope (`None` with fewer than 3 points).
    pub slope_stderr: Option<f64>,
    /// The loss rises: the slope is positive and more than 2 standard errors from 0.
    pub rising: bool,
    /// Steps whose loss was NaN or infinite.
    pub non_finite_steps: usize,
}

/// Cost of the measured throughput.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CostReport {
    /// The price given, per device-hour.
    pub per_device_hour: f64,
    /// Devices paid for.
    pub devices: u32,
    /// Dollars per 1,000 samples.
    pub per_1k_samples: Option<f64>,
    /// Dollars per 1,000,000 tokens.
    pub per_1m_tokens: Option<f64>,
}

/// One rank's step times.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RankStats {
    /// The rank.
    pub rank: u32,
    /// Its step-time distribution over the measured steps.
    pub step_time_s: StepStats,
    /// How often it was the slowest rank of a step.
    pub slowest_in_steps: usize,
}

/// The straggler analysis across ranks.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RankReport {
    /// Per-rank distributions, by rank.
    pub ranks: Vec<RankStats>,
    /// The rank with the highest median step time.
    pub slowest_rank: u32,
    /// Ranks whose median step time is a MAD outlier among the ranks' medians (|z| > 3.5).
    pub outlier_ranks: Vec<u32>,
    /// (slowest − fastest median) / fastest median: node-to-node consistency (within ±5 % is
    /// ordinary; docs/methodology.md#the-slowest-rank-wins).
    pub median_spread: f64,
    /// Share of rank-time spent waiting for the slowest rank: Σ(max − tᵣ) / Σ max over steps
    /// where every rank reported.
    pub waiting_share: f64,
}

/// The analysis of one replicate.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrainingReport {
    /// Training steps seen (distinct step numbers with a step time).
    pub steps: usize,
    /// Steps after the warm-up trim.
    pub measured_steps: usize,
    /// Well-formed records read.
    pub records: usize,
    /// Malformed lines in the metrics file.
    pub malformed_lines: usize,
    /// Ranks that reported.
    pub ranks_reporting: Vec<u32>,
    /// World size (largest reported, or the number of reporting ranks).
    pub world_size: u32,
    /// The warm-up trim.
    pub warmup: WarmupReport,
    /// Step time in seconds (slowest rank per step).
    pub step_time_s: StepStats,
    /// Tokens per second (all ranks).
    pub tokens_per_s: Option<Throughput>,
    /// Samples per second (all ranks).
    pub samples_per_s: Option<Throughput>,
    /// FLOPs of the median measured step by the headline estimator.
    pub flops_per_step: Option<f64>,
    /// Memory bytes moved by the median measured step: reported by the workload (`bytes`), else
    /// estimated from the model's shape ([`flops::training_bytes`]).
    pub bytes_per_step: Option<f64>,
    /// `reported` or `estimated`.
    pub bytes_source: Option<&'static str>,
    /// Median over measured steps of the time waiting for input (`data_wait_s`, mean over ranks).
    pub data_wait_s: Option<f64>,
    /// Median over measured steps of the exposed collective time (`comm_s`, mean over ranks).
    pub comm_s: Option<f64>,
    /// Median over measured steps of the collectives' bus bandwidth (`comm_busbw_gbps`, mean
    /// over ranks), GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm_busbw_gbps: Option<f64>,
    /// MFU, when a peak and a FLOP count are known.
    pub mfu: Option<MfuReport>,
    /// Largest `mem_bytes` reported by any rank.
    pub peak_mem_bytes: Option<f64>,
    /// Loss trend.
    pub loss: Option<LossReport>,
    /// Cost, when a price was given.
    pub cost: Option<CostReport>,
    /// Straggler analysis, when more than one rank reported.
    pub ranks: Option<RankReport>,
    /// Custom metric keys seen (kept in the raw records).
    pub custom_keys: Vec<String>,
    /// The custom metrics with numeric values, by name: their statistics over every record
    /// that reported them, with the unit and direction the workload declared (facts
    /// `custom.NAME`; never gated).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_metrics: BTreeMap<String, CustomMetric>,
    /// Things to know before quoting the numbers.
    pub warnings: Vec<String>,
}

impl Measured for TrainingReport {
    /// The analysis's figures: step counts, the step-time distribution, throughputs, MFU,
    /// loss, memory, cost, rank spread, and each custom metric as `custom.NAME` in its declared
    /// unit. Warm-up policy, rank lists and warnings describe the analysis and are not figures.
    fn measurements(&self) -> Vec<Measurement> {
        let mut out = Vec::new();
        for (metric, v) in [
            (id::STEPS, Some(self.steps as f64)),
            (id::MEASURED_STEPS, Some(self.measured_steps as f64)),
            (id::RECORDS, Some(self.records as f64)),
            (id::MALFORMED_LINES, Some(self.malformed_lines as f64)),
            (id::WORLD_SIZE, Some(f64::from(self.world_size))),
        ] {
            out.extend(v.map(|v| Measurement::value(metric, v)));
        }
        out.push(Measurement::stat(
            id::WARMUP,
            "trimmed",
            self.warmup.trimmed as f64,
        ));
        let s = &self.step_time_s;
        push_stats(
            &mut out,
            id::STEP_TIME_S,
            [
                ("n", Some(s.n as f64)),
                ("mean", Some(s.mean)),
                ("p50", Some(s.p50)),
                ("p90", Some(s.p90)),
                ("p10", Some(s.p10)),
                ("min", Some(s.min)),
                ("max", Some(s.max)),
                ("stddev", s.stddev),
            ],
        );
        for (metric, t) in [
            (id::TOKENS_PER_S, &self.tokens_per_s),
            (id::SAMPLES_PER_S, &self.samples_per_s),
        ] {
            if let Some(t) = t {
                push_stats(
                    &mut out,
                    metric,
                    [
                        ("p50", Some(t.p50)),
                        ("p10", Some(t.p10)),
                        ("mean", Some(t.mean)),
                        ("aggregate", Some(t.aggregate)),
                    ],
                );
            }
        }
        for (metric, v) in [
            (id::FLOPS_PER_STEP, self.flops_per_step),
            (id::BYTES_PER_STEP, self.bytes_per_step),
            (id::DATA_WAIT_S, self.data_wait_s),
            (id::COMM_S, self.comm_s),
            (id::COMM_BUSBW_GBPS, self.comm_busbw_gbps),
        ] {
            out.extend(v.map(|v| Measurement::value(metric, v)));
        }
        if let Some(m) = &self.mfu {
            push_stats(
                &mut out,
                id::MFU,
                [
                    ("p50", Some(m.p50)),
                    ("p10", Some(m.p10)),
                    ("peak_flops_per_device", Some(m.peak_flops_per_device)),
                    ("devices", Some(f64::from(m.devices))),
                ],
            );
        }
        out.extend(
            self.peak_mem_bytes
                .map(|v| Measurement::value(id::PEAK_MEM_BYTES, v)),
        );
        if let Some(l) = &self.loss {
            push_stats(
                &mut out,
                id::LOSS,
                [
                    ("first", Some(l.first)),
                    ("last", Some(l.last)),
                    ("slope", Some(l.slope)),
                    ("slope_stderr", l.slope_stderr),
                    ("non_finite_steps", Some(l.non_finite_steps as f64)),
                ],
            );
        }
        if let Some(c) = &self.cost {
            push_stats(
                &mut out,
                id::COST,
                [
                    ("per_device_hour", Some(c.per_device_hour)),
                    ("devices", Some(f64::from(c.devices))),
                    ("per_1k_samples", c.per_1k_samples),
                    ("per_1m_tokens", c.per_1m_tokens),
                ],
            );
        }
        if let Some(r) = &self.ranks {
            push_stats(
                &mut out,
                id::RANKS,
                [
                    ("slowest_rank", Some(f64::from(r.slowest_rank))),
                    ("median_spread", Some(r.median_spread)),
                    ("waiting_share", Some(r.waiting_share)),
                ],
            );
        }
        out.extend(custom_measurements(&self.custom_metrics));
        out
    }
}

/// A workload's own metric (a key the protocol does not define), over the records that reported
/// it as a number, in file order.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CustomMetric {
    /// Declared unit, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Declared direction; `unknown` when not declared (reported, never gated).
    pub direction: yardstick_spec::metrics::Direction,
    /// Records with a numeric value.
    pub n: usize,
    /// Mean of the values.
    pub mean: f64,
    /// Median of the values.
    pub p50: f64,
    /// The last value reported (what a validation accuracy or a final score is read as).
    pub last: f64,
}

impl CustomMetric {
    /// The fact id of custom metric `name`: `custom.NAME`.
    pub fn fact_id(name: &str) -> String {
        format!("custom.{name}")
    }
}

/// The facts of custom metrics: `custom.NAME` with `mean`, `p50` and `last`, in their declared
/// unit.
pub fn custom_measurements(metrics: &BTreeMap<String, CustomMetric>) -> Vec<Measurement> {
    let mut out = Vec::new();
    for (name, m) in metrics {
        let metric = CustomMetric::fact_id(name);
        for (s, v) in [("mean", m.mean), ("p50", m.p50), ("last", m.last)] {
            out.push(Measurement::stat(&metric, s, v).in_unit(m.unit.as_ref()));
        }
    }
    out
}

/// The custom metrics of `parsed` with numeric values, each with its declaration.
pub fn custom_metrics(parsed: &ParsedMetrics) -> BTreeMap<String, CustomMetric> {
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &parsed.records {
        for (k, v) in &r.custom {
            if let Some(x) = v.as_f64().filter(|x| x.is_finite()) {
                values.entry(k).or_default().push(x);
            }
        }
    }
    values
        .into_iter()
        .map(|(name, v)| {
            let declared = parsed.declarations.get(name);
            let m = CustomMetric {
                unit: declared.and_then(|d| d.unit.clone()),
                direction: declared
                    .map_or(yardstick_spec::metrics::Direction::Unknown, |d| d.direction),
                n: v.len(),
                mean: v.iter().sum::<f64>() / v.len() as f64,
                p50: yardstick_stats::percentile::percentile(&v, 0.5).unwrap_or(f64::NAN),
                last: *v.last().expect("non-empty"),
            };
            (name.to_string(), m)
        })
        .collect()
}

/// One step of the job, merged over ranks.
#[derive(Debug, Clone, Default)]
struct Step {
    step: u64,
    /// Step time per rank.
    per_rank: BTreeMap<u32, f64>,
    tokens: Option<f64>,
    samples: Option<f64>,
    flops: Option<f64>,
    flops_missing: bool,
    bytes: Option<f64>,
    bytes_missing: bool,
    data_wait: BTreeMap<u32, f64>,
    comm: BTreeMap<u32, f64>,
    /// Collective bus bandwidth per rank, GB/s (the last record's when a rank reports twice).
    busbw: BTreeMap<u32, f64>,
    loss: Option<(u32, f64)>,
    loss_non_finite: bool,
}

impl Step {
    fn time(&self) -> f64 {
        self.per_rank.values().copied().fold(0.0, f64::max)
    }
}

fn add(acc: &mut Option<f64>, v: Option<f64>) {
    if let Some(v) = v {
        *acc = Some(acc.unwrap_or(0.0) + v);
    }
}

/// Analyses one replicate's parsed metrics file.
pub fn analyze_training(
    parsed: &ParsedMetrics,
    cfg: &TrainingConfig,
) -> Result<TrainingReport, AnalysisError> {
    let mut warnings = Vec::new();
    if let Some(s) = parsed.malformed_summary() {
        warnings.push(s);
    }
    for (name, d) in &parsed.declarations {
        if !parsed.records.iter().any(|r| r.custom.contains_key(name)) {
            warnings.push(format!(
                "custom metric `{name}` was declared (line {}) but never reported",
                d.line
            ));
        }
    }
    let (steps, ranks, world, custom_keys, peak_mem) = group_steps(&parsed.records);
    let timed: Vec<&Step> = steps.values().filter(|s| !s.per_rank.is_empty()).collect();
    if timed.is_empty() {
        return Err(AnalysisError::invalid(
            format!(
                "no training step reported a step time ({} records, {} malformed lines)",
                parsed.records.len(),
                parsed.malformed_count
            ),
            "each step's record needs `step_time_s` (seconds, > 0) and `phase` absent or \"train\"",
        ));
    }
    let world_size = world.unwrap_or(ranks.len().max(1) as u32);
    if ranks.len() > 1 && (ranks.len() as u32) < world_size {
        warnings.push(format!(
            "only {} of {world_size} ranks reported: throughput counts their tokens only",
            ranks.len()
        ));
    }

    let times: Vec<f64> = timed.iter().map(|s| s.time()).collect();
    let warmup = trim(&times, cfg.warmup, &mut warnings);
    let measured: Vec<&Step> = timed[warmup.trimmed..].to_vec();
    let m_times: Vec<f64> = measured.iter().map(|s| s.time()).collect();
    let step_time_s = StepStats::of(&m_times).expect("measured steps are non-empty and finite");
    if measured.len() < 10 {
        warnings.push(format!(
            "only {} measured steps: percentiles are rough; run more steps",
            measured.len()
        ));
    }

    let seq_len = cfg.model.and_then(|m| m.sequence_length);
    let tokens_of = |s: &Step| s.tokens.or_else(|| Some(s.samples? * f64::from(seq_len?)));
    let tokens_per_s = throughput(&measured, tokens_of);
    let samples_per_s = throughput(&measured, |s| s.samples);

    let devices = cfg.devices.unwrap_or(world_size).max(1);
    let mfu = mfu_report(&measured, cfg, devices, tokens_of, &mut warnings);
    // Without a peak there is no MFU, but the FLOPs per step are still known from the workload
    // or the model's shape (the roofline needs them).
    let flops_per_step = mfu
        .as_ref()
        .map(|m| m.by_estimator[m.estimator].flops_per_step)
        .or_else(|| median_of(measured.iter().filter_map(|s| s.flops)))
        .or_else(|| {
            let m = cfg.model?;
            median_of(measured.iter().filter_map(|s| {
                let t = tokens_of(s)?;
                Some(match (m.layers, m.hidden, m.sequence_length) {
                    (Some(l), Some(h), Some(seq)) => {
                        flops::transformer_flops(m.parameters, l, h, seq, t)
                    }
                    _ => flops::six_n_t(m.parameters, t),
                })
            }))
        });

    let (bytes_per_step, bytes_source) = bytes_report(&measured, cfg, &tokens_of);
    let mean_over_ranks =
        |m: &BTreeMap<u32, f64>| (!m.is_empty()).then(|| m.values().sum::<f64>() / m.len() as f64);
    let data_wait_s = median_of(
        measured
            .iter()
            .filter_map(|s| mean_over_ranks(&s.data_wait)),
    );
    let comm_s = median_of(measured.iter().filter_map(|s| mean_over_ranks(&s.comm)));
    let comm_busbw_gbps = median_of(measured.iter().filter_map(|s| mean_over_ranks(&s.busbw)));

    let loss = loss_report(&timed, &mut warnings);
    let cost = cfg.cost_per_device_hour.map(|price| {
        let per_second = price * f64::from(devices) / 3600.0;
        CostReport {
            per_device_hour: price,
            devices,
            per_1k_samples: samples_per_s
                .as_ref()
                .map(|t| per_second * 1000.0 / t.aggregate),
            per_1m_tokens: tokens_per_s
                .as_ref()
                .map(|t| per_second * 1e6 / t.aggregate),
        }
    });
    let ranks_report = rank_report(&measured, &ranks, &mut warnings);

    Ok(TrainingReport {
        steps: timed.len(),
        measured_steps: measured.len(),
        records: parsed.records.len(),
        malformed_lines: parsed.malformed_count,
        ranks_reporting: ranks,
        world_size,
        warmup,
        step_time_s,
        tokens_per_s,
        samples_per_s,
        flops_per_step,
        bytes_per_step,
        bytes_source,
        data_wait_s,
        comm_s,
        comm_busbw_gbps,
        mfu,
        peak_mem_bytes: peak_mem,
        loss,
        cost,
        ranks: ranks_report,
        custom_keys,
        custom_metrics: custom_metrics(parsed),
        warnings,
    })
}

type Grouped = (
    BTreeMap<u64, Step>,
    Vec<u32>,
    Option<u32>,
    Vec<String>,
    Option<f64>,
);

fn group_steps(records: &[MetricRecord]) -> Grouped {
    let mut steps: BTreeMap<u64, Step> = BTreeMap::new();
    let mut next_implicit: BTreeMap<u32, u64> = BTreeMap::new();
    let mut ranks = std::collections::BTreeSet::new();
    let mut world: Option<u32> = None;
    let mut custom = std::collections::BTreeSet::new();
    let mut peak_mem: Option<f64> = None;
    for r in records {
        if let Some(m) = r.mem_bytes {
            peak_mem = Some(peak_mem.map_or(m, |p: f64| p.max(m)));
        }
        custom.extend(r.custom.keys().cloned());
        if let Some(w) = r.world_size {
            world = Some(world.map_or(w, |x| x.max(w)));
        }
        if !r.is_train() {
            continue;
        }
        let rank = r.rank.unwrap_or(0);
        ranks.insert(rank);
        // Without step numbers, a rank's records are its steps in order.
        let implicit = next_implicit.entry(rank).or_insert(0);
        let number = r.step.unwrap_or(*implicit);
        *implicit = number + 1;
        let step = steps.entry(number).or_insert_with(|| Step {
            step: number,
            ..Step::default()
        });
        if let Some(t) = r.step_time_s {
            let e = step.per_rank.entry(rank).or_insert(0.0);
            *e = e.max(t);
        }
        add(&mut step.tokens, r.tokens);
        add(&mut step.samples, r.samples);
        if r.step_time_s.is_some() {
            match r.flops {
                Some(f) => add(&mut step.flops, Some(f)),
                None => step.flops_missing = true,
            }
            match r.bytes {
                Some(b) => add(&mut step.bytes, Some(b)),
                None => step.bytes_missing = true,
            }
        }
        if let Some(w) = r.data_wait_s {
            *step.data_wait.entry(rank).or_insert(0.0) += w;
        }
        if let Some(c) = r.comm_s {
            *step.comm.entry(rank).or_insert(0.0) += c;
        }
        if let Some(b) = r.comm_busbw_gbps {
            step.busbw.insert(rank, b);
        }
        if r.loss_non_finite {
            step.loss_non_finite = true;
        }
        if let Some(l) = r.loss
            && step.loss.is_none_or(|(lr, _)| rank < lr)
        {
            step.loss = Some((rank, l));
        }
    }
    (
        steps,
        ranks.into_iter().collect(),
        world,
        custom.into_iter().collect(),
        peak_mem,
    )
}

fn trim(times: &[f64], policy: WarmupPolicy, warnings: &mut Vec<String>) -> WarmupReport {
    let n = times.len();
    match policy {
        WarmupPolicy::None => WarmupReport {
            policy,
            trimmed: 0,
            steady: None,
        },
        WarmupPolicy::Steps(k) => {
            let k = usize::try_from(k).unwrap_or(usize::MAX);
            let trimmed = if k >= n {
                warnings.push(format!(
                    "warm-up of {k} steps leaves nothing of {n} steps: keeping the last step only"
                ));
                n - 1
            } else {
                k
            };
            WarmupReport {
                policy,
                trimmed,
                steady: None,
            }
        }
        WarmupPolicy::Mser5 => match steady_state::mser5(times) {
            Ok(m) => {
                if !m.steady {
                    warnings.push(format!(
                        "no steady state: MSER-5 found the step time still drifting (best cut at \
                         step {} of {n}); run more steps",
                        m.truncation
                    ));
                }
                WarmupReport {
                    policy,
                    trimmed: m.truncation.min(n - 1),
                    steady: Some(m.steady),
                }
            }
            Err(_) => {
                warnings.push(format!(
                    "MSER-5 needs at least 10 steps, have {n}: no warm-up trimmed"
                ));
                WarmupReport {
                    policy,
                    trimmed: 0,
                    steady: None,
                }
            }
        },
    }
}

/// Bytes per step: the workload's own count when every measured step has one, else the
/// estimate from the model's shape (needs parameters, layers, hidden size, sequence length).
fn bytes_report(
    steps: &[&Step],
    cfg: &TrainingConfig,
    tokens_of: &impl Fn(&Step) -> Option<f64>,
) -> (Option<f64>, Option<&'static str>) {
    if !steps.is_empty() && steps.iter().all(|s| s.bytes.is_some() && !s.bytes_missing) {
        return (
            median_of(steps.iter().filter_map(|s| s.bytes)),
            Some("reported"),
        );
    }
    let Some(m) = cfg.model else {
        return (None, None);
    };
    let (Some(l), Some(h), Some(seq)) = (m.layers, m.hidden, m.sequence_length) else {
        return (None, None);
    };
    let b = cfg.bytes_per_element.unwrap_or(4.0);
    let est = median_of(steps.iter().filter_map(|s| {
        Some(flops::training_bytes(
            m.parameters,
            l,
            h,
            seq,
            cfg.attention_heads,
            tokens_of(s)?,
            b,
        ))
    }));
    (est, est.map(|_| "estimated"))
}

fn median_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    yardstick_stats::percentile::percentile(&v, 0.5).ok()
}

/// Per-step rates of `units` and the aggregate; `None` unless every measured step has units.
fn throughput(steps: &[&Step], units: impl Fn(&Step) -> Option<f64>) -> Option<Throughput> {
    let mut rates = Vec::with_capacity(steps.len());
    let (mut total, mut time) = (0.0, 0.0);
    for s in steps {
        let u = units(s)?;
        let t = s.time();
        rates.push(u / t);
        total += u;
        time += t;
    }
    let st = StepStats::of(&rates)?;
    Some(Throughput {
        p50: st.p50,
        p10: st.p10,
        mean: st.mean,
        aggregate: total / time,
    })
}

fn mfu_report(
    steps: &[&Step],
    cfg: &TrainingConfig,
    devices: u32,
    tokens_of: impl Fn(&Step) -> Option<f64>,
    warnings: &mut Vec<String>,
) -> Option<MfuReport> {
    let mut estimators: Vec<(&'static str, Vec<f64>)> = Vec::new();
    if steps.iter().all(|s| s.flops.is_some() && !s.flops_missing) {
        estimators.push(("reported", steps.iter().map(|s| s.flops.unwrap()).collect()));
    }
    let tokens: Option<Vec<f64>> = steps.iter().map(|s| tokens_of(s)).collect();
    if let (Some(m), Some(tokens)) = (cfg.model, tokens.as_ref()) {
        if let (Some(l), Some(h), Some(s)) = (m.layers, m.hidden, m.sequence_length) {
            let f = tokens
                .iter()
                .map(|&t| flops::transformer_flops(m.parameters, l, h, s, t))
                .collect();
            estimators.push(("transformer", f));
        }
        estimators.push((
            "6nt",
            tokens
                .iter()
                .map(|&t| flops::six_n_t(m.parameters, t))
                .collect(),
        ));
    }
    if estimators.is_empty() {
        return None;
    }
    let Some(peak) = cfg.peak_flops_per_device else {
        warnings.push(
            "no peak FLOP/s for the device: MFU not computed (give the GPU model or a peak)".into(),
        );
        return None;
    };
    let mut by_estimator = BTreeMap::new();
    for (name, fl) in &estimators {
        let per_step: Vec<f64> = fl
            .iter()
            .zip(steps)
            .map(|(f, s)| flops::mfu(*f, s.time(), devices, peak))
            .collect();
        let st = StepStats::of(&per_step)?;
        let total_time: f64 = steps.iter().map(|s| s.time()).sum();
        let total_flops: f64 = fl.iter().sum();
        let mut sorted = fl.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        by_estimator.insert(
            *name,
            MfuEstimate {
                p50: st.p50,
                p10: st.p10,
                aggregate: flops::mfu(total_flops, total_time, devices, peak),
                flops_per_step: percentile_sorted(&sorted, 0.5),
            },
        );
    }
    let headline = estimators[0].0;
    let h = &by_estimator[headline];
    if h.p50 > 1.0 {
        warnings.push(format!(
            "MFU above 100 % ({:.1} %): the peak or the FLOP count is wrong",
            h.p50 * 100.0
        ));
    }
    Some(MfuReport {
        p50: h.p50,
        p10: h.p10,
        estimator: headline,
        peak_flops_per_device: peak,
        devices,
        by_estimator,
    })
}

fn loss_report(steps: &[&Step], warnings: &mut Vec<String>) -> Option<LossReport> {
    let non_finite: Vec<u64> = steps
        .iter()
        .filter(|s| s.loss_non_finite)
        .map(|s| s.step)
        .collect();
    if let Some(first) = non_finite.first() {
        warnings.push(format!(
            "loss diverged: NaN or infinite at {} step(s), first at step {first}",
            non_finite.len()
        ));
    }
    let pts: Vec<(f64, f64)> = steps
        .iter()
        .filter_map(|s| Some((s.step as f64, s.loss?.1)))
        .collect();
    let (first, last) = (pts.first()?.1, pts.last()?.1);
    let n = pts.len() as f64;
    let (slope, stderr) = if pts.len() >= 2 {
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let stderr = (pts.len() >= 3 && sxx > 0.0).then(|| {
            let rss: f64 = pts
                .iter()
                .map(|p| (p.1 - (my + slope * (p.0 - mx))).powi(2))
                .sum();
            (rss / (n - 2.0) / sxx).sqrt()
        });
        (slope, stderr)
    } else {
        (0.0, None)
    };
    let rising = slope > 0.0 && stderr.is_none_or(|se| slope > 2.0 * se);
    if rising {
        warnings.push(format!(
            "loss is rising ({first:.4} → {last:.4}, slope {slope:+.3e} per step): the run is not \
             training"
        ));
    }
    Some(LossReport {
        first,
        last,
        slope,
        slope_stderr: stderr,
        rising,
        non_finite_steps: non_finite.len(),
    })
}

fn rank_report(steps: &[&Step], ranks: &[u32], warnings: &mut Vec<String>) -> Option<RankReport> {
    if ranks.len() < 2 {
        return None;
    }
    let mut per_rank: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut slowest_count: BTreeMap<u32, usize> = BTreeMap::new();
    let (mut waited, mut paid) = (0.0, 0.0);
    for s in steps {
        for (&r, &t) in &s.per_rank {
            per_rank.entry(r).or_default().push(t);
        }
        let max = s.time();
        if let Some((&r, _)) = s.per_rank.iter().max_by(|a, b| a.1.total_cmp(b.1)) {
            *slowest_count.entry(r).or_default() += 1;
        }
        if s.per_rank.len() == ranks.len() {
            waited += s.per_rank.values().map(|t| max - t).sum::<f64>();
            paid += max * s.per_rank.len() as f64;
        }
    }
    let stats: Vec<RankStats> = per_rank
        .iter()
        .filter_map(|(&rank, times)| {
            Some(RankStats {
                rank,
                step_time_s: StepStats::of(times)?,
                slowest_in_steps: slowest_count.get(&rank).copied().unwrap_or(0),
            })
        })
        .collect();
    let medians: Vec<f64> = stats.iter().map(|r| r.step_time_s.p50).collect();
    let slowest = stats
        .iter()
        .max_by(|a, b| a.step_time_s.p50.total_cmp(&b.step_time_s.p50))?;
    let fastest = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let outlier_ranks: Vec<u32> = if stats.len() >= 3 {
        outliers::mad_z(&medians)
            .ok()?
            .indices
            .into_iter()
            .map(|i| stats[i].rank)
            .collect()
    } else {
        Vec::new()
    };
    let spread = (slowest.step_time_s.p50 - fastest) / fastest;
    if !outlier_ranks.is_empty() {
        warnings.push(format!(
            "straggler rank(s) {outlier_ranks:?}: median step time is an outlier among ranks \
             (MAD z > 3.5); isolate the device or node and re-run"
        ));
    } else if spread > 0.05 {
        warnings.push(format!(
            "rank medians differ by {:.1} % (slowest rank {}): beyond the ±5 % node-to-node band",
            spread * 100.0,
            slowest.rank
        ));
    }
    Some(RankReport {
        slowest_rank: slowest.rank,
        outlier_ranks,
        median_spread: spread,
        waiting_share: if paid > 0.0 { waited / paid } else { 0.0 },
        ranks: stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::parse_metrics;

    fn lines(records: &[serde_json::Value]) -> ParsedMetrics {
        let text: Vec<String> = records.iter().map(|r| r.to_string()).collect();
        parse_metrics(&text.join("\n"))
    }

    #[test]
    fn custom_metrics_are_summarised_with_their_declarations() {
        let mut p = lines(&[
            serde_json::json!({"declare": "val_acc", "unit": "%", "direction": "higher_is_better"}),
            serde_json::json!({"declare": "unused", "direction": "lower_is_better"}),
            serde_json::json!({"step": 0, "step_time_s": 0.1, "val_acc": 70, "lr": 0.1, "tag": "a"}),
            serde_json::json!({"step": 1, "step_time_s": 0.1, "val_acc": 76, "lr": 0.2}),
            serde_json::json!({"step": 2, "step_time_s": 0.1, "val_acc": 73, "phase": "eval"}),
        ]);
        assert_eq!(p.declarations.len(), 2);
        let r = analyze_training(&p, &TrainingConfig::default()).unwrap();
        let acc = &r.custom_metrics["val_acc"];
        // Every record that reported it, eval phase included, in file order.
        assert_eq!((acc.n, acc.mean, acc.p50, acc.last), (3, 73.0, 73.0, 73.0));
        assert_eq!(acc.unit.as_deref(), Some("%"));
        assert_eq!(
            acc.direction,
            yardstick_spec::metrics::Direction::HigherIsBetter
        );
        let lr = &r.custom_metrics["lr"];
        assert_eq!((lr.n, lr.last), (2, 0.2));
        assert_eq!(lr.direction, yardstick_spec::metrics::Direction::Unknown);
        assert_eq!(lr.unit, None);
        // A string value is kept in the records, not summarised.
        assert!(!r.custom_metrics.contains_key("tag"));
        assert_eq!(r.custom_keys, ["lr", "tag", "val_acc"]);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("`unused` was declared (line 2) but never reported")),
            "{:?}",
            r.warnings
        );
        p.declarations.clear();
        let r = analyze_training(&p, &TrainingConfig::default()).unwrap();
        assert_eq!(
            r.custom_metrics["val_acc"].direction,
            yardstick_spec::metrics::Direction::Unknown
        );
        assert_eq!(CustomMetric::fact_id("val_acc"), "custom.val_acc");
    }

    #[test]
    fn single_rank_by_hand() {
        // 4 steps; the first is warm-up. Measured step times 0.5, 0.25, 0.25 with 1000 tokens
        // and 10 samples each: per-step tokens/s 2000, 4000, 4000; aggregate 3000/1 = 3000.
        let p = lines(&[
            serde_json::json!({"step":0,"step_time_s":2.0,"tokens":1000,"samples":10,"loss":4.0}),
            serde_json::json!({"step":1,"step_time_s":0.5,"tokens":1000,"samples":10,"loss":3.0}),
            serde_json::json!({"step":2,"step_time_s":0.25,"tokens":1000,"samples":10,"loss":2.0}),
            serde_json::json!({"step":3,"step_time_s":0.25,"tokens":1000,"samples":10,"loss":1.0,"mem_bytes":5e9}),
        ]);
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::Steps(1),
            model: Some(ModelDims {
                parameters: 1e6,
                layers: Some(2),
                hidden: Some(64),
                sequence_length: Some(100),
            }),
            peak_flops_per_device: Some(1e11),
            devices: None,
            cost_per_device_hour: Some(3.6),
            ..TrainingConfig::default()
        };
        let r = analyze_training(&p, &cfg).unwrap();
        assert_eq!((r.steps, r.measured_steps), (4, 3));
        assert_eq!(r.step_time_s.p50, 0.25);
        assert_eq!(r.step_time_s.p90, 0.45);
        let t = r.tokens_per_s.as_ref().unwrap();
        assert_eq!((t.p50, t.aggregate), (4000.0, 3000.0));
        assert_eq!(t.p10, 2400.0);
        assert_eq!(r.samples_per_s.as_ref().unwrap().aggregate, 30.0);
        // 6NT per step = 6e9; transformer adds 12*2*64*100*1000 = 1.536e8 → 6.1536e9.
        let m = r.mfu.as_ref().unwrap();
        assert_eq!(m.estimator, "transformer");
        assert_eq!(m.by_estimator["6nt"].flops_per_step, 6e9);
        assert_eq!(r.flops_per_step, Some(6.1536e9));
        // Median MFU: 6.1536e9 / 0.25 / 1e11 = 0.246144.
        assert!((m.p50 - 0.246144).abs() < 1e-12, "{}", m.p50);
        assert!((m.by_estimator["6nt"].aggregate - 0.18).abs() < 1e-12);
        // Loss 4,3,2,1 over steps 0..3: slope −1.
        let l = r.loss.as_ref().unwrap();
        assert_eq!(
            (l.first, l.last, l.slope, l.rising),
            (4.0, 1.0, -1.0, false)
        );
        // $3.6/h on 1 device = $0.001/s; 30 samples/s → 1000 samples cost 0.0333...
        let c = r.cost.as_ref().unwrap();
        assert!((c.per_1k_samples.unwrap() - 1.0 / 30.0).abs() < 1e-12);
        assert!((c.per_1m_tokens.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.peak_mem_bytes, Some(5e9));
        assert!(r.ranks.is_none());
    }

    #[test]
    fn slowest_rank_decides_and_stragglers_are_named() {
        // 4 ranks, 20 steps; rank 3 takes 0.13 s, the others 0.100..0.102.
        let mut recs = Vec::new();
        for step in 0..20u64 {
            for rank in 0..4u32 {
                let t = if rank == 3 {
                    0.13
                } else {
                    0.1 + 0.001 * f64::from(rank)
                };
                recs.push(serde_json::json!({"step":step,"rank":rank,"world_size":4,
                    "step_time_s":t,"tokens":512,"samples":4,"flops":1e9}));
            }
        }
        let r = analyze_training(
            &lines(&recs),
            &TrainingConfig {
                warmup: WarmupPolicy::None,
                peak_flops_per_device: Some(1e11),
                ..TrainingConfig::default()
            },
        )
        .unwrap();
        assert_eq!(r.world_size, 4);
        assert_eq!(r.step_time_s.p50, 0.13);
        // Tokens summed over ranks: 2048 per 0.13 s step.
        assert!((r.tokens_per_s.as_ref().unwrap().aggregate - 2048.0 / 0.13).abs() < 1e-9);
        // Reported FLOPs summed over ranks: 4e9 in 0.13 s on 4 devices of 1e11.
        let m = r.mfu.as_ref().unwrap();
        assert_eq!(m.estimator, "reported");
        assert!((m.p50 - 4e9 / 0.13 / 4e11).abs() < 1e-12);
        let rk = r.ranks.as_ref().unwrap();
        assert_eq!(rk.slowest_rank, 3);
        assert_eq!(rk.outlier_ranks, vec![3]);
        assert_eq!(rk.ranks[3].slowest_in_steps, 20);
        // Waiting: per step (0.03 + 0.029 + 0.028 + 0) / (4 * 0.13) = 0.087 / 0.52.
        assert!(
            (rk.waiting_share - 0.087 / 0.52).abs() < 1e-9,
            "{}",
            rk.waiting_share
        );
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("straggler rank(s) [3]"))
        );
    }

    #[test]
    fn rising_loss_and_nan_are_flagged() {
        let recs: Vec<_> = (0..12)
            .map(|i| serde_json::json!({"step":i,"step_time_s":0.1,"loss":1.0 + 0.1 * i as f64}))
            .collect();
        let mut text: Vec<String> = recs.iter().map(|r| r.to_string()).collect();
        text.push("{\"step\":12,\"step_time_s\":0.1,\"loss\":NaN}".into());
        let r =
            analyze_training(&parse_metrics(&text.join("\n")), &TrainingConfig::default()).unwrap();
        let l = r.loss.unwrap();
        assert!(l.rising && (l.slope - 0.1).abs() < 1e-12);
        assert_eq!(l.non_finite_steps, 1);
        assert!(r.warnings.iter().any(|w| w.contains("loss diverged")));
        assert!(r.warnings.iter().any(|w| w.contains("loss is rising")));
    }

    #[test]
    fn mser5_trims_a_slow_start() {
        let recs: Vec<_> = (0..60)
            .map(|i| {
                let t = if i < 10 {
                    1.0
                } else {
                    0.1 + 0.001 * (i % 3) as f64
                };
                serde_json::json!({"step":i,"step_time_s":t})
            })
            .collect();
        let r = analyze_training(&lines(&recs), &TrainingConfig::default()).unwrap();
        assert_eq!(r.warmup.trimmed, 10);
        assert_eq!(r.warmup.steady, Some(true));
        // The 50 steady steps remain, and the slow start is gone from them.
        assert_eq!(r.step_time_s.n, 50);
        assert!(r.step_time_s.max >= 0.1 && r.step_time_s.max < 0.2);
    }

    #[test]
    fn no_step_times_is_a_clear_error() {
        let e = analyze_training(
            &parse_metrics("{\"loss\":1}\nnoise\n"),
            &TrainingConfig::default(),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("1 records, 1 malformed lines"),
            "{e}"
        );
    }

    #[test]
    fn flops_per_step_from_the_model_without_a_peak() {
        // No peak: no MFU, but the roofline still gets the step's FLOPs from the shape.
        let text: String = (0..4)
            .map(|i| format!("{{\"step\":{i},\"step_time_s\":0.5,\"tokens\":1000}}\n"))
            .collect();
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::None,
            model: Some(ModelDims {
                parameters: 1e6,
                layers: Some(2),
                hidden: Some(64),
                sequence_length: Some(100),
            }),
            ..TrainingConfig::default()
        };
        let r = analyze_training(&crate::protocol::parse_metrics(&text), &cfg).unwrap();
        assert!(r.mfu.is_none());
        // 6 * 1e6 * 1000 + 12 * 2 * 64 * 100 * 1000 = 6.1536e9
        assert_eq!(r.flops_per_step, Some(6.1536e9));
        assert_eq!(r.bytes_source, Some("estimated"));
    }
}
