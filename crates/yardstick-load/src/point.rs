//! One serve point as data: what a planned run measures at one (scenario, load level), typed,
//! and serialisable — the plan carries it, a sharded replicate hands it to each shard as a file
//! (`yardstick bench serve --point-file`), and [`ServePoint::bench`] is the one place it becomes
//! a [`ServeBench`].
//!
//! Its JSON is the point's `params` in the warehouse and in `yardstick run --dry-run --json`:
//! flat fields (`api`, `scenario`, `load_mode`, `load_value`, `arrival`, `slo_ttft_ms`, ...), as
//! reports and queries read them.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use yardstick_spec::{Arrival as ArrivalKind, LoadMode, MlperfScenario, ServingSessions};

/// What a point varies, as its `params.load_mode` says: a load mode of the spec, or the MLPerf
/// scenario that sets the load itself (`mlperf-server`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointMode {
    /// Closed loop: `load_value` streams.
    Concurrency,
    /// Open loop: `load_value` requests per second.
    Rate,
    /// A capacity search under the SLO.
    Capacity,
    /// MLPerf single-stream.
    MlperfSingleStream,
    /// MLPerf multi-stream: `load_value` samples per query.
    MlperfMultiStream,
    /// MLPerf server: `load_value` queries per second.
    MlperfServer,
    /// MLPerf offline.
    MlperfOffline,
    /// A request trace replayed on its own clock: `load_value` is the speed-up.
    Trace,
}

impl PointMode {
    /// The mode of a point of a serve layer with `mode` and, when it runs one, `mlperf`.
    pub fn of(mode: Option<LoadMode>, mlperf: Option<MlperfScenario>) -> PointMode {
        match (mlperf, mode) {
            (Some(MlperfScenario::SingleStream), _) => PointMode::MlperfSingleStream,
            (Some(MlperfScenario::MultiStream), _) => PointMode::MlperfMultiStream,
            (Some(MlperfScenario::Server), _) => PointMode::MlperfServer,
            (Some(MlperfScenario::Offline), _) => PointMode::MlperfOffline,
            (None, Some(LoadMode::Rate)) => PointMode::Rate,
            (None, Some(LoadMode::Capacity)) => PointMode::Capacity,
            (None, Some(LoadMode::Trace)) => PointMode::Trace,
            (None, Some(LoadMode::Concurrency) | None) => PointMode::Concurrency,
        }
    }
}

use crate::mlperf::{DEFAULT_TPOT_BOUND_MS, DEFAULT_TTFT_BOUND_MS, Mlperf};
use crate::session::{SessionConfig, ThinkTime, Turns};
use crate::{Api, Arrival, ClientConfig, LoadModel, ServeBench, Slo, StopRule};

/// The time a request of a planned point may take before it counts as timed out.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// One serve point of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServePoint {
    /// The API.
    pub api: Api,
    /// The model name sent in requests.
    pub model: String,
    /// The traffic scenario as written (`D(100,100)`).
    pub scenario: String,
    /// What is varied: `concurrency`, `rate`, `capacity` (a search; the level is then 0), or
    /// an MLPerf scenario (`mlperf-server`, ...).
    pub load_mode: PointMode,
    /// The level: streams, requests per second, an MLPerf multi-stream's samples per query or
    /// server scenario's QPS.
    pub load_value: f64,
    /// The arrival process of a rate (Poisson when not said).
    pub arrival: Option<ArrivalKind>,
    /// The gamma shape of `arrival: gamma` (1 when not said).
    pub burstiness: Option<f64>,
    /// Stop after this many measured requests.
    pub max_requests: Option<u64>,
    /// Stop after this long (seconds in JSON).
    #[serde(with = "secs_opt")]
    pub max_duration: Option<Duration>,
    /// Warm-up requests excluded from metrics.
    pub warmup_requests: u64,
    /// TTFT SLO for goodput, ms.
    pub slo_ttft_ms: Option<f64>,
    /// TPOT SLO for goodput, ms.
    pub slo_tpot_ms: Option<f64>,
    /// E2E SLO for goodput, ms.
    pub slo_e2e_ms: Option<f64>,
    /// The environment variable holding a bearer token (never the token).
    pub api_key_env: Option<String>,
    /// Extra CA certificates (PEM) for an https target.
    pub ca_cert: Option<String>,
    /// A `tokenizer.json` for exact prompt lengths and local token counts.
    pub tokenizer: Option<String>,
    /// An MLPerf LoadGen scenario instead of a plain load point.
    pub mlperf: Option<MlperfScenario>,
    /// Multi-turn sessions: turns, think time, shared prefix, or a conversation dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<ServingSessions>,
    /// The trace a `trace` point replays (`trace_file`, `trace_format`, `trace_window`; the
    /// speed-up is `load_value`).
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TracePoint>,
    /// A model mix (`target.models`): `[name, weight]` pairs; `model` then names the mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<(String, f64)>>,
    /// A file of model names (`target.modelsFrom`), resolved and read into `models` before any
    /// work, with `model_zipf`'s weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models_from: Option<String>,
    /// The Zipf exponent of `models_from`'s weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_zipf: Option<f64>,
    /// Objectives of single models of the mix (`target.models[].slo`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub model_slos: std::collections::BTreeMap<String, crate::summary::SloBounds>,
    /// Request kinds (`requestKinds`): `[kind, weight]` pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kinds: Option<Vec<(crate::kinds::Kind, f64)>>,
    /// The tools file of `tool-call` requests (resolved before any work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// The schema file of `json` requests (resolved before any work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<String>,
    /// Images every request carries (`512x512,2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<String>,
    /// Eval items mixed into the load (`evalMix`); the caller builds them into the bench
    /// ([`crate::ServeBench::eval`]): this crate does not read eval tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_mix: Option<EvalMixPoint>,
    /// Refused requests tried again (`retry`): statuses, attempts, `Retry-After`, backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<crate::RetryPolicy>,
}

/// The eval items of a point (`evalMix`): task files resolved before any work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalMixPoint {
    /// Bundled probe names or task files.
    pub tasks: Vec<String>,
    /// The share of requests that are eval items.
    pub share: f64,
    /// Maximum output tokens of each item.
    pub max_tokens: u64,
}

/// The trace of a `trace` point: the file (resolved before any work), its format and window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracePoint {
    /// The trace file.
    pub trace_file: String,
    /// Its format.
    pub trace_format: crate::trace::TraceFormat,
    /// `FROM..TO` after its first request, as the spec wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_window: Option<String>,
    /// Send each request to the model its line names (`trace.models`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace_models: bool,
    /// Renames of the trace's models (`trace.modelMap`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub trace_model_map: std::collections::BTreeMap<String, String>,
}

impl TracePoint {
    /// Reads, checks and windows the trace: the one reading of a spec's trace, before any work
    /// (to refuse a bad one) and by each replicate.
    pub fn load(&self) -> Result<crate::trace::Trace, crate::LoadError> {
        let t =
            crate::trace::Trace::load(std::path::Path::new(&self.trace_file), self.trace_format)?;
        let t = match &self.trace_window {
            None => t,
            Some(w) => {
                let (from, to) = yardstick_spec::parse_trace_window(w)
                    .map_err(|e| crate::LoadError::Config(format!("trace: {e}")))?;
                t.window(from, to)?
            }
        };
        if self.trace_models {
            return Ok(t.send_models(&self.trace_model_map)?);
        }
        Ok(t)
    }
}

impl ServePoint {
    /// The request kinds of the point, their tools and schema read (`None` without kinds).
    pub fn kind_mix(&self) -> Result<Option<crate::kinds::KindMix>, crate::LoadError> {
        let Some(kinds) = &self.request_kinds else {
            return Ok(None);
        };
        let items: Vec<String> = kinds.iter().map(|(k, w)| format!("{k}={w}")).collect();
        let files = crate::kinds::KindFiles {
            tools: self.tools.as_deref().map(std::path::Path::new),
            schema: self.json_schema.as_deref().map(std::path::Path::new),
        };
        crate::kinds::KindMix::parse(&items, &files)
            .map(Some)
            .map_err(|e| crate::LoadError::Config(format!("requestKinds: {e}")))
    }

    /// The load model of the point (a capacity search's probes set their own; a trace point's
    /// is [`crate::trace_load`] of its trace).
    pub fn load_model(&self) -> LoadModel {
        if self.load_mode == PointMode::Rate {
            let arrival = match self.arrival {
                Some(ArrivalKind::Constant) => Arrival::Constant,
                Some(ArrivalKind::Gamma) => Arrival::Gamma {
                    burstiness: self.burstiness.unwrap_or(1.0),
                },
                Some(ArrivalKind::Poisson) | None => Arrival::Poisson,
            };
            LoadModel::Rate {
                rate: self.load_value,
                arrival,
                max_in_flight: None,
            }
        } else {
            LoadModel::Concurrency(self.load_value.round().max(1.0) as usize)
        }
    }

    /// The MLPerf scenario the point runs, when it is one.
    pub fn mlperf_scenario(&self) -> Option<Mlperf> {
        Some(match self.mlperf? {
            MlperfScenario::SingleStream => Mlperf::SingleStream,
            MlperfScenario::MultiStream => Mlperf::MultiStream {
                samples_per_query: self.load_value.round().max(1.0) as usize,
            },
            MlperfScenario::Server => Mlperf::Server {
                qps: self.load_value,
                ttft_bound_ms: self.slo_ttft_ms.unwrap_or(DEFAULT_TTFT_BOUND_MS),
                tpot_bound_ms: self.slo_tpot_ms.unwrap_or(DEFAULT_TPOT_BOUND_MS),
            },
            MlperfScenario::Offline => Mlperf::Offline,
        })
    }

    /// The SLOs of goodput.
    pub fn slo(&self) -> Slo {
        Slo {
            ttft_ms: self.slo_ttft_ms,
            tpot_ms: self.slo_tpot_ms,
            e2e_ms: self.slo_e2e_ms,
            per_model: self.model_slos.clone(),
        }
    }

    /// The bench that measures one replicate of this point against `url`, its plans and
    /// arrivals seeded by `seed`: one process, no server metrics, cost or energy (the caller
    /// sets those it wants), forced output lengths, [`REQUEST_TIMEOUT`]. A trace point reads its
    /// trace here (an error when it no longer reads).
    pub fn bench(
        &self,
        url: &str,
        seed: u64,
        cancel: CancellationToken,
    ) -> Result<ServeBench, crate::LoadError> {
        let trace = match &self.trace {
            Some(t) => Some(std::sync::Arc::new(t.load()?)),
            None => None,
        };
        let loads = match &trace {
            Some(t) => vec![crate::trace_load(t, self.load_value, None)],
            None => vec![self.load_model()],
        };
        Ok(ServeBench {
            client: ClientConfig {
                url: url.to_string(),
                api: self.api,
                stream: self.api != Api::Embeddings,
                request_timeout: REQUEST_TIMEOUT,
                bearer_env: self.api_key_env.clone(),
                max_idle: 1,
                ca_cert: self.ca_cert.clone().map(PathBuf::from),
                retry: self.retry.clone(),
            },
            model: self.model.clone(),
            models: match &self.models {
                Some(m) => Some(
                    crate::plan::ModelMix::new(m.clone())
                        .map_err(|e| crate::LoadError::Config(format!("target.models: {e}")))?,
                )
                .filter(|m| m.is_mix())
                .map(std::sync::Arc::new),
                None => None,
            },
            kinds: self.kind_mix()?.map(std::sync::Arc::new),
            token_check: true,
            trace_context: true,
            eval: None,
            images: match &self.images {
                Some(i) => Some(
                    i.parse()
                        .map_err(|e| crate::LoadError::Config(format!("images: {e}")))?,
                ),
                None => None,
            },
            scenarios: vec![self.scenario.clone()],
            loads,
            stop: StopRule {
                max_requests: self.max_requests,
                max_duration: self.max_duration,
                warmup_requests: self.warmup_requests,
                warmup_duration: None,
            },
            slo: self.slo(),
            seed,
            force_output: true,
            shard: (0, 1),
            start_at: None,
            cancel,
            dataset: self
                .sessions
                .as_ref()
                .and_then(|s| s.dataset.clone())
                .map(PathBuf::from),
            sessions: self.sessions.as_ref().map(|s| SessionConfig {
                turns: s.turns.unwrap_or(Turns { min: 1, max: 1 }),
                think: s.think_time.unwrap_or(ThinkTime::Constant(0.0)),
                shared_prefix: s.shared_prefix.unwrap_or(0),
            }),
            tokenizer: self.tokenizer.clone().map(PathBuf::from),
            server_metrics: None,
            cost: None,
            energy: None,
            trace,
        })
    }
}

/// One shard's part of a sharded replicate, as the file `yardstick bench serve --point-file`
/// reads: the point, the target and the seed every shard shares (each runs its `--shard I/N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardJob {
    /// The target's base URL.
    pub url: String,
    /// The seed of the replicate's plan and arrivals.
    pub seed: u64,
    /// The point.
    pub point: ServePoint,
}

impl ShardJob {
    /// Writes the job as JSON to `path` (whole or not at all: a temporary file renamed).
    pub fn write(&self, path: &std::path::Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_vec_pretty(self).expect("a job is JSON"),
        )?;
        std::fs::rename(&tmp, path)
    }

    /// Reads a job written by [`ShardJob::write`].
    pub fn read(path: &std::path::Path) -> Result<ShardJob, crate::LoadError> {
        let bytes = std::fs::read(path).map_err(|e| {
            crate::LoadError::Config(format!("cannot read {}: {e}", path.display()))
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            crate::LoadError::Config(format!("{} is not a serve point: {e}", path.display()))
        })
    }
}

mod secs_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|s| Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom))
            .transpose()
    }
}
