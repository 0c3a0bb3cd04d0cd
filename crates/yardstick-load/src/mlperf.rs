//! MLPerf LoadGen scenarios (docs/methodology.md#mlperf-scenarios) on top of the ordinary runner.
//!
//! * **SingleStream**: one query at a time, the next one when the previous completes
//!   (closed loop at concurrency 1); reports the p90 query latency (TTFT for streamed LLM
//!   answers, else end-to-end) with its distribution-free order-statistic CI and LoadGen's
//!   early-stopping estimate.
//! * **MultiStream**: fixed batches of `samples_per_query` requests issued together; the next
//!   batch goes when the whole batch has completed. A query's latency is the batch's: issue →
//!   last sample complete. Reports the p99.
//! * **Server**: Poisson arrivals at the target QPS; PASS/FAIL on the p99 TTFT and TPOT bounds,
//!   and LoadGen early stopping says whether the run may claim the p99 (VALID/INVALID).
//! * **Offline**: every query issued at once; reports samples per second.
//!
//! The JSON shape is documented in docs/metrics.md, "MLPerf scenarios".

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde::Serialize;
use yardstick_spec::scenario::Scenario;
use yardstick_stats::early_stopping::{
    EarlyStoppingEstimate, EarlyStoppingVerdict, LOADGEN_CONFIDENCE, early_stopping,
    early_stopping_estimate,
};
use yardstick_stats::percentile::{OrderStatisticCi, quantile_ci};

use crate::runner::{Progress, StopReason};
use crate::summary::{Distribution, LoadLevel};
use crate::{
    Api, BodyOptions, Client, Clock, ErrorClass, LoadError, LoadModel, Planner, PointResult,
    RequestRecord, ServeBench, plan, summary, tokenizer,
};

/// Confidence level of the order-statistic CI reported with a percentile.
pub const CI_LEVEL: f64 = 0.95;
/// Server scenario TTFT bound when none is given (MLPerf Llama-2-70B Server).
pub const DEFAULT_TTFT_BOUND_MS: f64 = 2000.0;
/// Server scenario TPOT bound when none is given (MLPerf Llama-2-70B Server).
pub const DEFAULT_TPOT_BOUND_MS: f64 = 200.0;
/// The percentile the Server scenario bounds.
pub const SERVER_PERCENTILE: f64 = 0.99;

/// An MLPerf LoadGen scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mlperf {
    /// One query at a time; p90.
    SingleStream,
    /// Fixed batches issued together; p99 of per-batch latency.
    MultiStream {
        /// Requests per query (batch).
        samples_per_query: usize,
    },
    /// Poisson arrivals at `qps`; p99 TTFT/TPOT against bounds.
    Server {
        /// Target queries per second.
        qps: f64,
        /// Bound on p99 TTFT, ms.
        ttft_bound_ms: f64,
        /// Bound on p99 TPOT, ms.
        tpot_bound_ms: f64,
    },
    /// Everything at once; samples/s.
    Offline,
}

/// The MLPerf scenario a user named, before it is checked against the other settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MlperfKind {
    /// `single-stream`.
    SingleStream,
    /// `multi-stream`.
    MultiStream,
    /// `server`.
    Server,
    /// `offline`.
    Offline,
}

/// The settings of a `bench serve` run an MLPerf scenario is checked against: the scenario sets
/// the load itself, so most load settings must be absent, and its bounds apply to `server`
/// only.
#[derive(Debug, Clone, Default)]
pub struct MlperfRequest<'a> {
    /// The scenario named, if any.
    pub kind: Option<MlperfKind>,
    /// The open-loop rates given (`server` takes exactly one: its target QPS).
    pub rates: &'a [f64],
    /// Closed-loop concurrency was given.
    pub concurrency_given: bool,
    /// The run is one shard of several.
    pub sharded: bool,
    /// Requests per query of `multi-stream`.
    pub samples_per_query: usize,
    /// Bound on p99 TTFT of `server`, ms (default [`DEFAULT_TTFT_BOUND_MS`]).
    pub ttft_bound_ms: Option<f64>,
    /// Bound on p99 TPOT of `server`, ms (default [`DEFAULT_TPOT_BOUND_MS`]).
    pub tpot_bound_ms: Option<f64>,
    /// The request budget (`offline` needs one).
    pub max_requests: Option<u64>,
}

impl MlperfRequest<'_> {
    /// The scenario, checked against the other settings; `None` when none was named (and no
    /// scenario-only setting was given).
    pub fn resolve(&self) -> Result<Option<Mlperf>, LoadError> {
        let bounds = self.ttft_bound_ms.is_some() || self.tpot_bound_ms.is_some();
        let server_only = || LoadError::Invalid {
            message: "--ttft-bound-ms/--tpot-bound-ms apply to --mlperf server".into(),
            hint: None,
        };
        let Some(kind) = self.kind else {
            return if bounds { Err(server_only()) } else { Ok(None) };
        };
        if self.concurrency_given {
            return Err(LoadError::Invalid {
                message: "--mlperf sets the load itself: drop --concurrency".into(),
                hint: Some("accepted: single-stream, multi-stream, server, offline"),
            });
        }
        if self.sharded {
            return Err(LoadError::Invalid {
                message: "--mlperf does not combine with --shard".into(),
                hint: None,
            });
        }
        let m = match kind {
            MlperfKind::SingleStream => Mlperf::SingleStream,
            MlperfKind::MultiStream => Mlperf::MultiStream {
                samples_per_query: self.samples_per_query,
            },
            MlperfKind::Server => {
                let [qps] = self.rates[..] else {
                    return Err(LoadError::Invalid {
                        message:
                            "--mlperf server needs exactly one --rate (target queries per second)"
                                .into(),
                        hint: Some(
                            "e.g. --mlperf server --rate 10 --ttft-bound-ms 2000 --tpot-bound-ms 200",
                        ),
                    });
                };
                if !(qps.is_finite() && qps > 0.0) {
                    return Err(LoadError::Invalid {
                        message: format!("--rate must be > 0, got {qps}"),
                        hint: None,
                    });
                }
                Mlperf::Server {
                    qps,
                    ttft_bound_ms: self.ttft_bound_ms.unwrap_or(DEFAULT_TTFT_BOUND_MS),
                    tpot_bound_ms: self.tpot_bound_ms.unwrap_or(DEFAULT_TPOT_BOUND_MS),
                }
            }
            MlperfKind::Offline => Mlperf::Offline,
        };
        let server = matches!(m, Mlperf::Server { .. });
        if !server && !self.rates.is_empty() {
            return Err(LoadError::Invalid {
                message: format!("--mlperf {} sets the load itself: drop --rate", m.name()),
                hint: None,
            });
        }
        if bounds && !server {
            return Err(server_only());
        }
        m.load_model(self.max_requests)?;
        Ok(Some(m))
    }
}

impl Mlperf {
    /// The scenario's name as written on the command line and in JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Mlperf::SingleStream => "single-stream",
            Mlperf::MultiStream { .. } => "multi-stream",
            Mlperf::Server { .. } => "server",
            Mlperf::Offline => "offline",
        }
    }

    /// The runner load model of the scenario (MultiStream has its own loop; its model here is
    /// only the connection width). Offline needs `max_requests`.
    pub fn load_model(&self, max_requests: Option<u64>) -> Result<LoadModel, LoadError> {
        Ok(match *self {
            Mlperf::SingleStream => LoadModel::Concurrency(1),
            Mlperf::MultiStream { samples_per_query } => {
                if samples_per_query == 0 {
                    return Err(LoadError::Config(
                        "--samples-per-query must be at least 1".into(),
                    ));
                }
                LoadModel::Concurrency(samples_per_query)
            }
            Mlperf::Server {
                qps,
                ttft_bound_ms,
                tpot_bound_ms,
            } => {
                for (what, b) in [("TTFT", ttft_bound_ms), ("TPOT", tpot_bound_ms)] {
                    if !(b.is_finite() && b > 0.0) {
                        return Err(LoadError::Config(format!(
                            "the {what} bound must be > 0 ms, got {b}"
                        )));
                    }
                }
                LoadModel::Rate {
                    rate: qps,
                    arrival: crate::Arrival::Poisson,
                    max_in_flight: None,
                }
            }
            Mlperf::Offline => {
                let n = max_requests.ok_or_else(|| {
                    LoadError::Config(
                        "the offline scenario issues every query at once: give --max-requests"
                            .into(),
                    )
                })?;
                LoadModel::Concurrency(n.max(1) as usize)
            }
        })
    }
}

/// A percentile of query latency with its uncertainty.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PercentileReport {
    /// What a query's latency is: `ttft`, `e2e` or `batch_e2e` (MultiStream).
    pub metric: &'static str,
    /// The percentile, e.g. 0.9.
    pub percentile: f64,
    /// The sample percentile (linear interpolation), ms.
    pub value_ms: Option<f64>,
    /// Level of `ci`.
    pub ci_level: f64,
    /// Distribution-free order-statistic CI of the percentile, ms (`null` with too few queries).
    pub ci: Option<OrderStatisticCi>,
    /// LoadGen's early-stopping estimate at confidence 0.99 (`null` with too few queries).
    pub early_stopping: Option<EarlyStoppingEstimate>,
    /// The whole distribution of query latency, ms.
    pub distribution: Option<Distribution>,
}

/// One Server-scenario latency bound.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BoundCheck {
    /// `ttft` or `tpot`.
    pub metric: &'static str,
    /// The bound, ms.
    pub bound_ms: f64,
    /// The sample p99 over completed queries, ms.
    pub p99_ms: Option<f64>,
    /// Queries over the bound (failed queries count as over).
    pub over_bound: u64,
    /// Whether the sample p99 is within the bound (and no query failed).
    pub within: bool,
    /// LoadGen early stopping for the claim "p99 ≤ bound".
    pub early_stopping: Option<EarlyStoppingVerdict>,
}

/// What the Server scenario adds.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ServerReport {
    /// The target QPS.
    pub target_qps: f64,
    /// Completed queries per second.
    pub achieved_qps: f64,
    /// The bounds and how the run met them.
    pub bounds: Vec<BoundCheck>,
}

/// The result of one MLPerf scenario run on one traffic scenario.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MlperfResult {
    /// `single-stream`, `multi-stream`, `server` or `offline`.
    pub scenario: &'static str,
    /// The traffic scenario (genai-bench grammar or `dataset:…`).
    pub traffic: String,
    /// Measured queries issued (MultiStream: batches).
    pub queries: u64,
    /// Queries with every sample completed.
    pub queries_completed: u64,
    /// Requests per query (1 except MultiStream).
    pub samples_per_query: u64,
    /// Measured samples (requests) completed.
    pub samples_completed: u64,
    /// Measured samples failed.
    pub samples_failed: u64,
    /// First scheduled → last completion, s.
    pub duration_s: f64,
    /// Completed samples per second.
    pub samples_per_s: f64,
    /// SingleStream: p90; MultiStream: p99 (other scenarios: `null`).
    pub latency: Option<PercentileReport>,
    /// Server scenario details.
    pub server: Option<ServerReport>,
    /// Server: `PASS` when every sample p99 meets its bound, else `FAIL`; `null` otherwise.
    pub result: Option<&'static str>,
    /// `VALID` or `INVALID`.
    pub validity: &'static str,
    /// Why the run is INVALID (empty when VALID).
    pub reasons: Vec<String>,
    /// Why the run stopped.
    pub stop_reason: StopReason,
}

impl yardstick_spec::metrics::Measured for MlperfResult {
    /// The run's counts and rate as statistics of `mlperf` (the latency bound checks are in
    /// the result itself, not figures).
    fn measurements(&self) -> Vec<yardstick_spec::metrics::Measurement> {
        let mut out = Vec::new();
        yardstick_spec::metrics::push_stats(
            &mut out,
            yardstick_spec::metrics::id::MLPERF,
            [
                ("queries", Some(self.queries as f64)),
                ("queries_completed", Some(self.queries_completed as f64)),
                ("samples_per_query", Some(self.samples_per_query as f64)),
                ("samples_completed", Some(self.samples_completed as f64)),
                ("samples_failed", Some(self.samples_failed as f64)),
                ("duration_s", Some(self.duration_s)),
                ("samples_per_s", Some(self.samples_per_s)),
            ],
        );
        out
    }
}

/// A finished scenario: the MLPerf result and the ordinary point (summary and raw records).
#[derive(Debug)]
pub struct MlperfRun {
    /// The MLPerf view.
    pub result: MlperfResult,
    /// The ordinary `bench serve` point.
    pub point: PointResult,
}

/// Runs `scenario` once per traffic scenario of `bench` (its `loads` are ignored; its stop rule,
/// SLOs, seed and client settings apply). `on_point` hears of each run before it starts.
pub async fn run(
    bench: &ServeBench,
    scenario: Mlperf,
    progress: Arc<Progress>,
    mut on_point: impl FnMut(usize, &str, &LoadLevel),
) -> Result<Vec<MlperfRun>, LoadError> {
    let load = scenario.load_model(bench.stop.max_requests)?;
    let mut b = bench.clone();
    b.loads = vec![load];
    let traffic = b.validate()?;
    let ttft_metric = if b.client.stream && b.client.api != Api::Embeddings {
        "ttft"
    } else {
        "e2e"
    };
    let mut out = Vec::new();
    match scenario {
        Mlperf::MultiStream { samples_per_query } => {
            for (k, (text, sc)) in traffic.iter().enumerate() {
                let level = LoadLevel {
                    mode: "multi-stream".into(),
                    value: samples_per_query as f64,
                    arrival: None,
                };
                on_point(k, text, &level);
                progress.reset();
                let (records, stop) =
                    multi_stream(&b, k, text, sc, samples_per_query, progress.clone()).await?;
                let summary = summary::summarize(text, level, &records, &b.slo, stop.clone());
                let result = multi_stream_result(text, &records, samples_per_query, &stop);
                let halt = matches!(
                    stop,
                    StopReason::Interrupted | StopReason::TargetUnreachable(_)
                );
                out.push(MlperfRun {
                    result,
                    point: PointResult { summary, records },
                });
                if halt {
                    break;
                }
            }
        }
        _ => {
            let points = b.run(progress, on_point).await?;
            for (p, (text, _)) in points.into_iter().zip(traffic.iter()) {
                let result = match scenario {
                    Mlperf::SingleStream => single_stream_result(text, &p, ttft_metric),
                    Mlperf::Server {
                        qps,
                        ttft_bound_ms,
                        tpot_bound_ms,
                    } => server_result(text, &p, qps, ttft_bound_ms, tpot_bound_ms),
                    _ => offline_result(text, &p),
                };
                out.push(MlperfRun { result, point: p });
            }
        }
    }
    Ok(out)
}

fn base(text: &str, scenario: &'static str, p: &PointResult) -> MlperfResult {
    let s = &p.summary;
    let mut reasons = Vec::new();
    if s.requests.failed > 0 {
        reasons.push(format!("{} queries failed", s.requests.failed));
    }
    if s.requests.completed == 0 {
        reasons.push("no query completed".into());
    }
    if s.stop_reason.is_early() {
        reasons.push(format!("the run ended early: {}", s.stop_reason));
    }
    MlperfResult {
        scenario,
        traffic: text.to_string(),
        queries: s.requests.completed + s.requests.failed,
        queries_completed: s.requests.completed,
        samples_per_query: 1,
        samples_completed: s.requests.completed,
        samples_failed: s.requests.failed,
        duration_s: s.duration_s,
        samples_per_s: s.request_throughput,
        latency: None,
        server: None,
        result: None,
        validity: "VALID",
        reasons,
        stop_reason: s.stop_reason.clone(),
    }
}

fn finish(mut r: MlperfResult) -> MlperfResult {
    r.validity = if r.reasons.is_empty() {
        "VALID"
    } else {
        "INVALID"
    };
    r
}

/// The percentile report of query latencies `xs` (ms) at `q`; reasons for missing parts are
/// pushed to `reasons`.
fn percentile_report(
    metric: &'static str,
    xs: Vec<f64>,
    q: f64,
    reasons: &mut Vec<String>,
) -> PercentileReport {
    let distribution = Distribution::of(xs.clone());
    let mut sorted = xs;
    sorted.retain(|x| x.is_finite());
    sorted.sort_by(f64::total_cmp);
    let value_ms =
        (!sorted.is_empty()).then(|| yardstick_stats::percentile::percentile_sorted(&sorted, q));
    let ci = quantile_ci(&sorted, q, CI_LEVEL).ok();
    let early = match early_stopping_estimate(&sorted, q, LOADGEN_CONFIDENCE) {
        Ok(e) => Some(e),
        Err(e) => {
            reasons.push(format!("too few queries for early stopping: {e}"));
            None
        }
    };
    PercentileReport {
        metric,
        percentile: q,
        value_ms,
        ci_level: CI_LEVEL,
        ci,
        early_stopping: early,
        distribution,
    }
}

fn measured_ok(p: &PointResult) -> impl Iterator<Item = &RequestRecord> {
    p.records.iter().filter(|r| !r.warmup && r.ok())
}

fn single_stream_result(text: &str, p: &PointResult, metric: &'static str) -> MlperfResult {
    let mut r = base(text, "single-stream", p);
    let xs: Vec<f64> = measured_ok(p)
        .filter_map(|rec| {
            if metric == "ttft" {
                rec.ttft_ms()
            } else {
                rec.e2e_ms()
            }
        })
        .collect();
    r.latency = Some(percentile_report(metric, xs, 0.9, &mut r.reasons));
    finish(r)
}

/// A per-request latency, ms.
type Metric = dyn Fn(&RequestRecord) -> Option<f64>;

fn server_result(
    text: &str,
    p: &PointResult,
    qps: f64,
    ttft_bound_ms: f64,
    tpot_bound_ms: f64,
) -> MlperfResult {
    let mut r = base(text, "server", p);
    let n = r.queries;
    let failed = r.samples_failed;
    let mut bounds = Vec::new();
    // Non-streamed answers arrive whole: their first token comes with the end.
    let first_token = |rec: &RequestRecord| rec.ttft_ms().or_else(|| rec.e2e_ms());
    let checks: [(&'static str, f64, &Metric); 2] = [
        ("ttft", ttft_bound_ms, &first_token),
        ("tpot", tpot_bound_ms, &RequestRecord::tpot_ms),
    ];
    for (metric, bound, f) in checks {
        let xs: Vec<f64> = measured_ok(p).filter_map(f).collect();
        let p99 = Distribution::of(xs.clone()).map(|d| d.p99);
        let over = xs.iter().filter(|&&x| x > bound).count() as u64 + failed;
        let within = failed == 0 && p99.is_none_or(|v| v <= bound);
        let es = early_stopping(n, over, SERVER_PERCENTILE, LOADGEN_CONFIDENCE).ok();
        if !within {
            match p99 {
                Some(v) if v > bound => r.reasons.push(format!(
                    "p99 {} {v:.2} ms exceeds the {bound} ms bound",
                    metric.to_uppercase()
                )),
                _ => {}
            }
        } else if let Some(v) = &es
            && !v.passed
        {
            r.reasons.push(format!(
                "too few queries for early stopping: {} run, {} needed to claim p99 {} <= {bound} ms with {} over the bound",
                v.queries,
                v.required,
                metric.to_uppercase(),
                v.overlatency
            ));
        }
        bounds.push(BoundCheck {
            metric,
            bound_ms: bound,
            p99_ms: p99,
            over_bound: over,
            within,
            early_stopping: es,
        });
    }
    r.result = Some(if bounds.iter().all(|b| b.within) {
        "PASS"
    } else {
        "FAIL"
    });
    r.server = Some(ServerReport {
        target_qps: qps,
        achieved_qps: p.summary.request_throughput,
        bounds,
    });
    finish(r)
}

fn offline_result(text: &str, p: &PointResult) -> MlperfResult {
    finish(base(text, "offline", p))
}

fn multi_stream_result(
    text: &str,
    records: &[RequestRecord],
    n: usize,
    stop: &StopReason,
) -> MlperfResult {
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let mut batches: std::collections::BTreeMap<u64, Vec<&RequestRecord>> = Default::default();
    for r in &measured {
        batches.entry(r.index / n as u64).or_default().push(r);
    }
    let mut lat = Vec::new();
    let mut completed_q = 0;
    for b in batches.values() {
        if b.iter().all(|r| r.ok()) {
            completed_q += 1;
            if let Some(m) = b.iter().filter_map(|r| r.e2e_ms()).reduce(f64::max) {
                lat.push(m);
            }
        }
    }
    let ok = measured.iter().filter(|r| r.ok()).count() as u64;
    let failed = measured.len() as u64 - ok;
    let start = measured.iter().map(|r| r.scheduled_ns).min();
    let end = measured.iter().filter_map(|r| r.done_ns).max();
    let duration_s = match (start, end) {
        (Some(s), Some(e)) if e > s => (e - s) as f64 / 1e9,
        _ => 0.0,
    };
    let mut reasons = Vec::new();
    if failed > 0 {
        reasons.push(format!(
            "{} queries failed ({failed} samples)",
            batches.len() as u64 - completed_q
        ));
    }
    if completed_q == 0 {
        reasons.push("no query completed".into());
    }
    if matches!(
        stop,
        StopReason::Interrupted | StopReason::TargetUnreachable(_)
    ) {
        reasons.push(format!("the run ended early: {stop}"));
    }
    let latency = percentile_report("batch_e2e", lat, 0.99, &mut reasons);
    finish(MlperfResult {
        scenario: "multi-stream",
        traffic: text.to_string(),
        queries: batches.len() as u64,
        queries_completed: completed_q,
        samples_per_query: n as u64,
        samples_completed: ok,
        samples_failed: failed,
        duration_s,
        samples_per_s: if duration_s > 0.0 {
            ok as f64 / duration_s
        } else {
            0.0
        },
        latency: Some(latency),
        server: None,
        result: None,
        validity: "VALID",
        reasons,
        stop_reason: stop.clone(),
    })
}

/// MultiStream: batches of `n` plan indices `b·n … b·n+n−1`, all scheduled at the batch's issue
/// time; the next batch goes when every sample of this one has finished. Warm-up is whole
/// batches (the first `ceil(warmup_requests / n)`, and those issued within the warm-up
/// duration); `max_requests` counts samples, i.e. `max_requests / n` measured batches (at
/// least one).
async fn multi_stream(
    bench: &ServeBench,
    k: usize,
    text: &str,
    sc: &Scenario,
    n: usize,
    progress: Arc<Progress>,
) -> Result<(Vec<RequestRecord>, StopReason), LoadError> {
    let run_tag = format!("ys{:x}", Clock::new().now_ns() / 1_000_000 % 0xFFFF_FFFF);
    let mut cc = bench.client.clone();
    cc.max_idle = cc.max_idle.max(n);
    let mut client = Client::new(&cc, Clock::new(), &format!("{run_tag}-m{k}"))?;
    let mut planner = Planner::new(
        sc.clone(),
        text,
        bench.client.api,
        &bench.model,
        bench.seed,
        BodyOptions {
            stream: bench.client.stream && bench.client.api != Api::Embeddings,
            force_output: bench.force_output,
        },
    )?;
    if let Some(d) = &bench.dataset {
        planner = planner.with_dataset(Arc::new(plan::load_dataset(d)?));
    }
    if let Some(m) = &bench.models {
        planner = planner.with_models(m.clone());
    }
    if let Some(t) = &bench.tokenizer {
        let t = Arc::new(tokenizer::LocalTokenizer::from_file(t)?);
        client = client.with_tokenizer(t.clone());
        planner = planner.with_tokenizer(t);
    }
    let client = Arc::new(client);
    client.prewarm(n.min(1024)).await;
    let stop = bench.stop;
    let warm_batches = stop.warmup_requests.div_ceil(n as u64);
    let limit = stop.max_requests.map(|m| (m / n as u64).max(1));
    let start = Instant::now();
    let warm_until = stop.warmup_duration.map(|d| start + d);
    let end = stop.max_duration.map(|d| start + d);
    let mut records = Vec::new();
    let mut measured = 0u64;
    let mut connect_failures = 0u64;
    let mut b = 0u64;
    let reason = loop {
        if bench.cancel.is_cancelled() {
            break StopReason::Interrupted;
        }
        let scheduled = Instant::now();
        if end.is_some_and(|e| scheduled >= e) {
            break StopReason::MaxDuration;
        }
        let warm = b < warm_batches || warm_until.is_some_and(|w| scheduled < w);
        if !warm && limit.is_some_and(|l| measured >= l) {
            break StopReason::MaxRequests;
        }
        let tasks: Vec<_> = (0..n as u64)
            .map(|j| {
                let i = b * n as u64 + j;
                let plan = planner.request(i);
                let model = planner.model_of(i).map(str::to_owned);
                let client = client.clone();
                progress.in_flight.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    let mut rec = client.execute(&plan, scheduled, warm).await;
                    rec.model = model;
                    rec
                })
            })
            .collect();
        for t in tasks {
            let Ok(rec) = t.await else { continue };
            progress.in_flight.fetch_sub(1, Ordering::Relaxed);
            if rec.ok() {
                progress.completed.fetch_add(1, Ordering::Relaxed);
                progress
                    .output_tokens
                    .fetch_add(rec.output_tokens.unwrap_or(0), Ordering::Relaxed);
            } else {
                progress.failed.fetch_add(1, Ordering::Relaxed);
            }
            if rec.error == Some(ErrorClass::Connect) {
                connect_failures += 1;
            } else {
                connect_failures = 0;
            }
            records.push(rec);
        }
        if !warm {
            measured += 1;
        }
        b += 1;
        if connect_failures >= (n as u64).clamp(8, 64) {
            let msg = records
                .last()
                .and_then(|r| r.error_message.clone())
                .unwrap_or_default();
            break StopReason::TargetUnreachable(msg);
        }
    };
    records.sort_by_key(|r| r.index);
    Ok((records, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_scenario_is_checked_against_the_other_settings() {
        let req = |kind, rates: &'static [f64]| MlperfRequest {
            kind,
            rates,
            samples_per_query: 8,
            max_requests: Some(40),
            ..MlperfRequest::default()
        };
        assert_eq!(req(None, &[]).resolve().unwrap(), None);
        assert_eq!(
            req(Some(MlperfKind::Server), &[10.0]).resolve().unwrap(),
            Some(Mlperf::Server {
                qps: 10.0,
                ttft_bound_ms: DEFAULT_TTFT_BOUND_MS,
                tpot_bound_ms: DEFAULT_TPOT_BOUND_MS
            })
        );
        assert_eq!(
            req(Some(MlperfKind::MultiStream), &[]).resolve().unwrap(),
            Some(Mlperf::MultiStream {
                samples_per_query: 8
            })
        );
        let refused = |r: MlperfRequest<'_>| r.resolve().unwrap_err().to_string();
        assert!(refused(req(Some(MlperfKind::Server), &[])).contains("exactly one --rate"));
        assert!(refused(req(Some(MlperfKind::Server), &[-1.0])).contains("> 0"));
        assert!(refused(req(Some(MlperfKind::Offline), &[5.0])).contains("drop --rate"));
        let mut bounded = req(Some(MlperfKind::Offline), &[]);
        bounded.ttft_bound_ms = Some(100.0);
        assert!(refused(bounded.clone()).contains("apply to --mlperf server"));
        bounded.kind = None;
        assert!(refused(bounded).contains("apply to --mlperf server"));
        let mut sharded = req(Some(MlperfKind::SingleStream), &[]);
        sharded.sharded = true;
        assert!(refused(sharded).contains("--shard"));
        let mut offline = req(Some(MlperfKind::Offline), &[]);
        offline.max_requests = None;
        assert!(offline.resolve().is_err());
    }

    #[test]
    fn load_models_and_checks() {
        assert_eq!(
            Mlperf::SingleStream.load_model(None).unwrap(),
            LoadModel::Concurrency(1)
        );
        assert_eq!(
            Mlperf::Offline.load_model(Some(50)).unwrap(),
            LoadModel::Concurrency(50)
        );
        assert!(Mlperf::Offline.load_model(None).is_err());
        assert!(
            Mlperf::MultiStream {
                samples_per_query: 0
            }
            .load_model(None)
            .is_err()
        );
        assert!(
            Mlperf::Server {
                qps: 5.0,
                ttft_bound_ms: -1.0,
                tpot_bound_ms: 10.0
            }
            .load_model(None)
            .is_err()
        );
    }

    #[test]
    fn percentile_report_needs_enough_queries() {
        let mut reasons = Vec::new();
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let r = percentile_report("e2e", xs, 0.9, &mut reasons);
        assert!(reasons.is_empty(), "{reasons:?}");
        assert!((r.value_ms.unwrap() - 90.1).abs() < 1e-9);
        let ci = r.ci.unwrap();
        assert!(ci.lower <= 90.1 && ci.upper >= 90.1);
        assert!(r.early_stopping.unwrap().estimate >= 90.0);
        let r = percentile_report("e2e", vec![1.0; 10], 0.9, &mut reasons);
        assert!(r.early_stopping.is_none() && r.ci.is_none());
        assert_eq!(reasons.len(), 1);
    }
}
