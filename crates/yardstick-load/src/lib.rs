//! `yardstick-load`: an OpenAI-compatible load generator that measures the server, not itself.
//!
//! * [`client`]: hyper 1.x HTTP/1.1 connections polled inside the requesting task, keep-alive
//!   pool, TCP_NODELAY, rustls (ring) for HTTPS, optional bearer token from an environment
//!   variable; every SSE read is timestamped on arrival, before parsing ([`sse`]).
//! * [`runner`]: closed-loop concurrency and open-loop arrivals (constant, Poisson, gamma) by
//!   absolute deadlines; warm-up, stop rules, draining cool-down.
//! * [`plan`]: seeded request plans from genai-bench traffic scenarios
//!   ([`yardstick_spec::scenario::Scenario`]).
//! * [`summary`]: TTFT, TPOT, ITL, E2E and client queueing, all from the *scheduled* time;
//!   throughput and goodput (docs/metrics.md).
//! * [`merge`] and [`shard_files`]: the output directory of a run or shard, read back, and the
//!   exact merge of N shards.
//! * [`text`]: points and MLPerf results as people read them.

#![deny(missing_docs)]

pub mod capacity;
pub mod client;
pub mod corpus;
mod error;
pub mod evalmix;
pub mod hot;
pub mod images;
pub mod kinds;
pub mod merge;
pub mod mlperf;
pub mod openai;
pub mod otlp;
pub mod plan;
pub mod point;
pub mod record;
use yardstick_timing::rng;
pub mod power;
pub mod runner;
pub mod scrape;
pub mod session;
pub mod shard_files;
pub mod sse;
pub mod summary;
pub mod text;
pub mod tokcount;
pub mod tokenizer;
pub mod trace;

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use yardstick_spec::scenario::{Scenario, ScenarioError};

pub use client::{Client, ClientConfig, ClientError, RetryPolicy};
pub use error::PlanError;
pub use mlperf::{Mlperf, MlperfKind, MlperfRequest, MlperfResult, MlperfRun};
pub use openai::{Api, BodyOptions};
pub use plan::Planner;
pub use record::{Clock, ErrorClass, PromptTokenSource, RequestRecord, TokenSource};
pub use runner::{Arrival, LoadModel, PointOptions, Progress, StopReason, StopRule};
pub use summary::{Distribution, LoadLevel, PointSummary, ShardInfo, Slo, UnknownStopReason};

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A traffic scenario did not parse.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A scenario does not fit the API.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The client could not be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The tokenizer could not be loaded.
    #[error(transparent)]
    Tokenizer(#[from] tokenizer::TokenizerError),
    /// A request trace cannot be replayed.
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    /// Some other setting is out of range.
    #[error("{0}")]
    Config(String),
    /// Settings that do not combine, with how to fix them.
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: Option<&'static str>,
    },
}

impl yardstick_error::UserFacing for LoadError {
    /// Always: `bench serve` has always reported a load error as the user's setup or input to
    /// fix (exit 2), a server it cannot reach included.
    fn is_invalid_input(&self) -> bool {
        true
    }

    /// How to fix it, when there is more to say than the message.
    fn hint(&self) -> Option<String> {
        match self {
            LoadError::Scenario(_) => Some(ScenarioError::hint()),
            LoadError::Invalid { hint, .. } => hint.map(str::to_string),
            LoadError::Trace(e) => yardstick_error::UserFacing::hint(e),
            _ => None,
        }
    }
}

/// A `bench serve` run: a sweep over scenarios × load levels.
#[derive(Debug, Clone)]
pub struct ServeBench {
    /// Server and API.
    pub client: ClientConfig,
    /// Model name sent in requests.
    pub model: String,
    /// Traffic scenarios as written (genai-bench grammar); may be empty with a dataset.
    pub scenarios: Vec<String>,
    /// Load levels, each a point per scenario.
    pub loads: Vec<LoadModel>,
    /// Stop rule of every point.
    pub stop: StopRule,
    /// SLOs for goodput.
    pub slo: Slo,
    /// Seed of plans and arrivals.
    pub seed: u64,
    /// Send `ignore_eos`/`min_tokens` to force output lengths.
    pub force_output: bool,
    /// `(i, n)` shard of every point's plan: open loop, every n-th arrival of the same seeded
    /// sequence; closed loop, every n-th plan index with `concurrency / n` streams (the first
    /// `concurrency % n` shards one more), so the shards together run the whole point.
    pub shard: (u64, u64),
    /// The first point's schedule starts at this wall-clock time (shards on several machines
    /// start together); later points start when the previous one has drained.
    pub start_at: Option<std::time::SystemTime>,
    /// Cancelled to stop scheduling (Ctrl-C): requests in flight drain.
    pub cancel: CancellationToken,
    /// Prompts from a dataset (JSONL or ShareGPT JSON) instead of the synthetic corpus; with
    /// `sessions`, conversations ([`session::load_conversations`]).
    pub dataset: Option<std::path::PathBuf>,
    /// Multi-turn sessions instead of single requests ([`session`]): plan units, the stop
    /// rule's request counts and an open loop's arrivals are sessions.
    pub sessions: Option<session::SessionConfig>,
    /// A `tokenizer.json` for exact prompt lengths and local output counts (feature
    /// `tokenizer`).
    pub tokenizer: Option<std::path::PathBuf>,
    /// Scrape the server's Prometheus endpoint during every point ([`scrape`]).
    pub server_metrics: Option<scrape::ScrapeConfig>,
    /// The deployment's price: dollars per million output tokens and per thousand requests
    /// in every point's summary.
    pub cost: Option<summary::CostModel>,
    /// Measure energy per output token from accelerators' or the CPU's counters ([`power`]);
    /// unavailable is said, not estimated.
    pub energy: Option<power::Energy>,
    /// Replay this trace ([`trace`]): its requests' lengths and shared prompt blocks, each sent
    /// at its time under a load of `Rate { arrival: Arrival::Trace { .. } }`; no scenario.
    pub trace: Option<Arc<trace::Trace>>,
    /// Send each plan unit to a model drawn from this mix (`--model NAME=WEIGHT`, repeated);
    /// `None`, or a mix of one model, sends every request to `model`. Summaries then report
    /// every model beside the whole ([`PointSummary::per_model`]).
    pub models: Option<Arc<plan::ModelMix>>,
    /// Send each request as a kind drawn from this mix (`--kind KIND=WEIGHT`, repeated):
    /// structured kinds' answers are checked, and summaries report every kind's validity
    /// ([`PointSummary::per_kind`]).
    pub kinds: Option<Arc<kinds::KindMix>>,
    /// Images every chat request carries after its text (`--image WxH[,COUNT]`): distinct
    /// synthetic PNGs, their bytes reported ([`images`]).
    pub images: Option<images::ImageSpec>,
    /// Before each point, count its first prompts at the server's tokenize endpoint, where it
    /// has one, and report the gap to the planned counts ([`tokcount`]).
    pub token_check: bool,
    /// Send a W3C `traceparent` with every request (its trace id in the record's `trace_id`);
    /// `--no-trace-context` turns it off.
    pub trace_context: bool,
    /// Eval items mixed into the load (`--eval-mix TASKS:SHARE`): each is graded, and
    /// summaries report accuracy at every load level ([`PointSummary::accuracy`]).
    pub eval: Option<Arc<evalmix::EvalMix>>,
}

/// One finished point.
#[derive(Debug)]
pub struct PointResult {
    /// The metrics.
    pub summary: PointSummary,
    /// The raw records (warm-up included, flagged).
    pub records: Vec<RequestRecord>,
}

impl ServeBench {
    /// Checks every setting that can be checked without the server; returns the scenarios.
    pub fn validate(&self) -> Result<Vec<(String, Scenario)>, LoadError> {
        if self.scenarios.is_empty() && self.dataset.is_none() && self.trace.is_none() {
            return Err(LoadError::Config("at least one scenario is needed".into()));
        }
        match (&self.dataset, &self.sessions) {
            (Some(d), Some(_)) => {
                session::load_conversations(d)?;
            }
            (Some(d), None) => {
                plan::load_dataset(d)?;
            }
            _ => {}
        }
        if self.images.is_some() && self.client.api != Api::Chat {
            return Err(LoadError::Invalid {
                message: "images are parts of chat messages, but the API is not chat".into(),
                hint: Some("use --api chat (the default) with --image"),
            });
        }
        if self.images.is_some() && self.sessions.is_some() {
            return Err(LoadError::Invalid {
                message: "images are sent with single requests, not sessions".into(),
                hint: Some("drop --image, or --turns/--sessions"),
            });
        }
        if let Some(k) = &self.kinds {
            k.check_api(self.client.api)
                .map_err(|e| LoadError::Invalid {
                    message: e.to_string(),
                    hint: Some("tool calls and structured output are chat requests"),
                })?;
            if self.sessions.is_some() && !k.is_plain() {
                return Err(LoadError::Invalid {
                    message: "request kinds are single requests, not sessions".into(),
                    hint: Some("drop --kind, or --turns/--sessions"),
                });
            }
        }
        if self.eval.is_some() && self.sessions.is_some() {
            return Err(LoadError::Invalid {
                message: "eval items are single requests, not sessions".into(),
                hint: Some("drop --eval-mix, or --turns/--sessions"),
            });
        }
        if self.eval.is_some() && self.client.api == Api::Embeddings {
            return Err(LoadError::Invalid {
                message: "eval items ask for answers, but the API is embeddings".into(),
                hint: Some("use --api chat or --api completions with --eval-mix"),
            });
        }
        if self.sessions.is_some() && self.client.api != Api::Chat {
            return Err(LoadError::Invalid {
                message: "sessions are chat conversations, but the API is not chat".into(),
                hint: Some("use --api chat (the default) with --turns or --sessions"),
            });
        }
        if let Some(t) = &self.tokenizer {
            tokenizer::LocalTokenizer::from_file(t)?;
        }
        if self.loads.is_empty() {
            return Err(LoadError::Config(
                "at least one load level is needed".into(),
            ));
        }
        let n = self.shard.1.max(1);
        for l in &self.loads {
            match l {
                LoadModel::Concurrency(0) => {
                    return Err(LoadError::Config("concurrency must be at least 1".into()));
                }
                LoadModel::Concurrency(c) if (*c as u64) < n => {
                    return Err(LoadError::Config(format!(
                        "concurrency {c} cannot be split over {n} shards (each needs a stream)"
                    )));
                }
                LoadModel::Rate {
                    rate,
                    arrival,
                    max_in_flight,
                } => {
                    if !(rate.is_finite() && *rate > 0.0) {
                        return Err(LoadError::Config(format!("rate must be > 0, got {rate}")));
                    }
                    if let Some(m) = max_in_flight
                        && (*m as u64) < n
                    {
                        return Err(LoadError::Config(format!(
                            "max in flight {m} cannot be split over {n} shards"
                        )));
                    }
                    if let Arrival::Gamma { burstiness } = arrival
                        && !(burstiness.is_finite() && *burstiness > 0.0)
                    {
                        return Err(LoadError::Config("burstiness must be > 0".into()));
                    }
                }
                _ => {}
            }
        }
        if self.stop.max_requests == Some(0) {
            return Err(LoadError::Config("max requests must be at least 1".into()));
        }
        if self.shard.1 == 0 || self.shard.0 >= self.shard.1 {
            return Err(LoadError::Config(format!(
                "shard {}/{} is out of range (i/N with i < N)",
                self.shard.0, self.shard.1
            )));
        }
        client::endpoint(&self.client.url, self.client.api)?;
        let mut out = Vec::new();
        if self.scenarios.is_empty()
            && let Some(d) = &self.dataset
        {
            // Lengths come from the dataset alone: a scenario that forces no output.
            let name = d.file_name().map(|n| n.to_string_lossy().into_owned());
            let sc = if self.client.api == Api::Embeddings {
                Scenario::Embedding { tokens: 1 }
            } else {
                Scenario::Uniform {
                    input: (1, 1),
                    output: None,
                }
            };
            out.push((format!("dataset:{}", name.unwrap_or_default()), sc));
        }
        if let Some(t) = &self.trace {
            // Lengths come from the trace: the scenario is only the point's name.
            let name = t.file.file_name().map(|n| n.to_string_lossy().into_owned());
            let sc = Scenario::Uniform {
                input: (1, 1),
                output: None,
            };
            out.push((format!("trace:{}", name.unwrap_or_default()), sc));
            return Ok(out);
        }
        for s in &self.scenarios {
            let sc: Scenario = s.parse()?;
            Planner::new(
                sc.clone(),
                s,
                self.client.api,
                &self.model,
                self.seed,
                self.body_options(),
            )?;
            out.push((s.clone(), sc));
        }
        Ok(out)
    }

    fn body_options(&self) -> BodyOptions {
        BodyOptions {
            stream: self.client.stream && self.client.api != Api::Embeddings,
            force_output: self.force_output,
        }
    }

    /// Runs every point in order (scenario-major), each with a fresh connection pool.
    /// `on_point` hears of each point before it starts (index, scenario, load).
    pub async fn run(
        &self,
        progress: Arc<Progress>,
        mut on_point: impl FnMut(usize, &str, &LoadLevel),
    ) -> Result<Vec<PointResult>, LoadError> {
        let scenarios = self.validate()?;
        let (dataset, conversations) = match (&self.dataset, &self.sessions) {
            (Some(d), Some(_)) => (None, Some(Arc::new(session::load_conversations(d)?))),
            (Some(d), None) => (Some(Arc::new(plan::load_dataset(d)?)), None),
            _ => (None, None),
        };
        let tok = match &self.tokenizer {
            Some(t) => Some(Arc::new(tokenizer::LocalTokenizer::from_file(t)?)),
            None => None,
        };
        // The wall-clock start as an instant of this process's monotonic clock.
        let start = self.start_at.map(|t| {
            let now = (std::time::SystemTime::now(), std::time::Instant::now());
            match t.duration_since(now.0) {
                Ok(ahead) => now.1 + ahead,
                Err(_) => now.1,
            }
        });
        let run_tag = format!("ys{:x}", Clock::new().now_ns() / 1_000_000 % 0xFFFF_FFFF);
        let mut results = Vec::new();
        let mut k = 0;
        for (text, sc) in &scenarios {
            for load in &self.loads {
                let level = level_of(load);
                on_point(k, text, &level);
                progress.reset();
                // This shard's part of the load: its share of the streams (or of the cap on
                // requests in flight); an open loop's rate is the whole point's, of which the
                // shard sends every n-th arrival.
                let sharded = self.shard.1 > 1;
                let load = &match *load {
                    LoadModel::Concurrency(c) if sharded => {
                        LoadModel::Concurrency(merge::shard_share(c, self.shard))
                    }
                    LoadModel::Rate {
                        rate,
                        arrival,
                        max_in_flight,
                    } if sharded => LoadModel::Rate {
                        rate,
                        arrival,
                        max_in_flight: max_in_flight.map(|m| merge::shard_share(m, self.shard)),
                    },
                    other => other,
                };
                let width = match load {
                    LoadModel::Concurrency(n) => *n,
                    LoadModel::Rate {
                        rate,
                        max_in_flight,
                        ..
                    } => max_in_flight.unwrap_or(
                        ((rate / self.shard.1.max(1) as f64).ceil() as usize).clamp(1, 4096),
                    ),
                };
                let mut cc = self.client.clone();
                cc.max_idle = cc.max_idle.max(width);
                let client = Client::new(&cc, Clock::new(), &format!("{run_tag}-p{k}"))?;
                let client = match &tok {
                    Some(t) => client.with_tokenizer(t.clone()),
                    None => client,
                };
                let client = if self.trace_context {
                    client
                } else {
                    client.without_trace_context()
                };
                let client = Arc::new(if self.sessions.is_some() {
                    client.keeping_text()
                } else {
                    client
                });
                client.prewarm(width.min(1024)).await;
                let planner = Planner::new(
                    sc.clone(),
                    text,
                    self.client.api,
                    &self.model,
                    self.seed,
                    self.body_options(),
                )?;
                let planner = match &self.trace {
                    Some(t) => planner.with_trace(t.clone()),
                    None => planner,
                };
                let planner = match &dataset {
                    Some(items) => planner.with_dataset(items.clone()),
                    None => planner,
                };
                let planner = match &tok {
                    Some(t) => planner.with_tokenizer(t.clone()),
                    None => planner,
                };
                let planner = match &self.sessions {
                    Some(s) => planner.with_sessions(s.clone(), conversations.clone())?,
                    None => planner,
                };
                let planner = match &self.models {
                    Some(m) => planner.with_models(m.clone()),
                    None => planner,
                };
                let planner = match &self.kinds {
                    Some(k) => planner.with_kinds(k.clone()),
                    None => planner,
                };
                let planner = match self.images {
                    Some(i) => planner.with_images(i),
                    None => planner,
                };
                let planner = match &self.eval {
                    Some(e) => planner.with_eval(e.clone()),
                    None => planner,
                };
                // The server's own count of the point's first prompts, where it has a tokenize
                // endpoint (one process's points only: a shard must not delay its start).
                let token_check = if self.token_check
                    && self.shard.1 <= 1
                    && !planner.has_sessions()
                    && self.client.api != Api::Embeddings
                {
                    // The prompts' text is what is counted: their images need not be drawn.
                    let text = planner.clone().without_images();
                    tokcount::check(
                        &client,
                        &self.client.url,
                        &self.model,
                        (0..2 * tokcount::SAMPLE as u64).map(|i| text.request(i)),
                    )
                    .await
                } else {
                    None
                };
                // Energy counters at the start of the point, when asked for and readable.
                let rapl = self.energy.as_ref().map(power::Energy::open);
                let energy_start = match &rapl {
                    Some(Ok(r)) => r.read(),
                    _ => None,
                };
                // The server's metrics, scraped beside the point on the same runtime.
                let scraper = self.server_metrics.clone().map(|cfg| {
                    let stop = CancellationToken::new();
                    let gauges = progress.gauges.clone();
                    let task = tokio::spawn({
                        let stop = stop.clone();
                        async move { scrape::scrape_until(&cfg, stop, Some(&gauges)).await }
                    });
                    (stop, task)
                });
                let run = runner::run_point(
                    client,
                    planner,
                    *load,
                    PointOptions {
                        stop: self.stop,
                        seed: self.seed,
                        shard: self.shard,
                        cancel: self.cancel.clone(),
                        start: if k == 0 { start } else { None },
                    },
                    progress.clone(),
                )
                .await;
                let label = match &self.sessions {
                    Some(s) => format!("{text} sessions({})", s.describe()),
                    None => text.clone(),
                };
                let mut summary =
                    summary::summarize(&label, level, &run.records, &self.slo, run.stop.clone());
                summary.prompt_token_check = token_check;
                if let Some(c) = &self.cost {
                    summary.price(c);
                }
                match (&rapl, energy_start) {
                    (Some(Ok(r)), Some(start)) => {
                        let out_tokens = summary.output_token_throughput * summary.duration_s;
                        match r.read() {
                            Some(end) if out_tokens > 0.0 => {
                                summary.energy_j_per_output_token =
                                    Some(r.joules(&start, &end) / out_tokens);
                                summary.energy_source = Some(r.source().into());
                            }
                            _ => {
                                summary.energy_unavailable = Some(format!(
                                    "the {} counters could not be read again, or no output tokens",
                                    r.source()
                                ));
                            }
                        }
                    }
                    (Some(Err(why)), _) => summary.energy_unavailable = Some(why.to_string()),
                    (Some(Ok(r)), None) => {
                        summary.energy_unavailable =
                            Some(format!("the {} counters could not be read", r.source()))
                    }
                    (None, _) => {}
                }
                let capped = matches!(
                    load,
                    LoadModel::Rate {
                        max_in_flight: Some(_),
                        ..
                    }
                );
                summary.client_bottleneck = summary
                    .client_queue_ms
                    .as_ref()
                    .and_then(|d| summary::client_lag_warning(d.p99, capped));
                if let Some((stop, task)) = scraper {
                    stop.cancel();
                    if let Ok((readings, failures)) = task.await {
                        summary.server = Some(scrape::ServerMetrics::of(
                            &readings,
                            failures,
                            summary.ttft_ms.as_ref().map(|d| d.mean),
                        ));
                        summary.server_series = readings;
                    }
                }
                summary.schedule_origin_ns = Some(run.origin_ns);
                if let (
                    Some(t),
                    LoadModel::Rate {
                        arrival: Arrival::Trace { speedup },
                        ..
                    },
                ) = (&self.trace, load)
                {
                    summary.trace = Some(summary::TraceInfo::of(t, *speedup));
                }
                if sharded {
                    summary.shard = Some(ShardInfo {
                        index: self.shard.0,
                        count: self.shard.1,
                        streams: match load {
                            LoadModel::Concurrency(n) => Some(*n),
                            LoadModel::Rate { .. } => None,
                        },
                    });
                }
                results.push(PointResult {
                    summary,
                    records: run.records,
                });
                k += 1;
                if matches!(
                    run.stop,
                    StopReason::Interrupted | StopReason::TargetUnreachable(_)
                ) {
                    return Ok(results);
                }
            }
        }
        Ok(results)
    }
}

/// The load model that replays `trace` at `speedup`: an open loop whose times are the trace's;
/// its mean rate (at least 1 req/s) only sizes the connection pool. `bench serve --trace` and a
/// spec's `load: {mode: trace}` both replay a trace through it.
pub fn trace_load(trace: &trace::Trace, speedup: f64, max_in_flight: Option<usize>) -> LoadModel {
    LoadModel::Rate {
        rate: (trace.requests.len() as f64 / trace.span_s().max(1e-3) * speedup).max(1.0),
        arrival: Arrival::Trace { speedup },
        max_in_flight,
    }
}

/// The summary's description of a load model.
pub fn level_of(load: &LoadModel) -> LoadLevel {
    match load {
        LoadModel::Concurrency(n) => LoadLevel {
            mode: "concurrency".into(),
            value: *n as f64,
            arrival: None,
        },
        LoadModel::Rate {
            arrival: Arrival::Trace { speedup },
            ..
        } => LoadLevel {
            mode: "trace".into(),
            value: *speedup,
            arrival: Some(arrival_name(*speedup)),
        },
        LoadModel::Rate { rate, arrival, .. } => LoadLevel {
            mode: "rate".into(),
            value: *rate,
            arrival: Some(arrival.name()),
        },
    }
}

fn arrival_name(speedup: f64) -> String {
    Arrival::Trace { speedup }.name()
}

/// Raises the soft open-file limit to the hard limit (many connections need many descriptors).
/// Returns the new soft limit.
pub fn raise_nofile_limit() -> std::io::Result<u64> {
    #[cfg(unix)]
    {
        // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
        unsafe {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if lim.rlim_cur < lim.rlim_max {
                lim.rlim_cur = lim.rlim_max;
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
            Ok(lim.rlim_cur as u64)
        }
    }
    #[cfg(not(unix))]
    {
        Ok(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn the_open_file_limit_is_raised_to_the_hard_limit() {
        let soft = super::raise_nofile_limit().unwrap();
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct we pass.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        #[allow(clippy::unnecessary_cast)]
        let (cur, max) = (lim.rlim_cur as u64, lim.rlim_max as u64);
        assert_eq!((soft, cur), (max, max));
    }
}
