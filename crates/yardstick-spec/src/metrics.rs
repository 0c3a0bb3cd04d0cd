//! The metric catalogue: every metric yardstick measures, with its unit, which way is better,
//! its gate class, the statistics it is reported with, and what it means.
//!
//! The gate, the report, the facts layer and the warehouse look metrics up here instead of
//! spelling their names: [`lookup`] resolves an id (`ttft_ms`, `memory.triad`,
//! `nccl.all_reduce.busbw.8589934592`) to its [`MetricDef`]. Ids with a `<placeholder>` segment
//! (`gemm.<dtype>.<n>`) stand for a family; a placeholder matches within one dot-separated
//! segment (`<percentile>_us` matches `p99_us`). A placeholder is never empty unless its name
//! ends in `?`: `gpu<i?>` matches `gpu` (a node with one GPU) as well as `gpu0`, `gpu1`, ... (a
//! node with several).
//!
//! A metric that is not here — a micro benchmark given a name of its own, an imported result — is
//! stored with the unit its producer declares (a summary's `units` map) and is never gated. A
//! workload's own metric-protocol key is the family `custom.<name>`, in the unit and direction its
//! `declare` line gives; never gated either.

use serde::Serialize;

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More is better (throughput, accuracy).
    HigherIsBetter,
    /// Less is better (latency, memory).
    LowerIsBetter,
    /// Describes the measurement (a count, a configuration); never compared.
    Neither,
    /// Nobody said: reported, never gated.
    Unknown,
}

impl Direction {
    /// The direction as written in the catalogue and `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher",
            Direction::LowerIsBetter => "lower",
            Direction::Neither => "neither",
            Direction::Unknown => "unknown",
        }
    }
}

/// What a metric measures, for the gate: picks its default tolerance. Which way is better is
/// the metric's own [`Direction`] (its catalogue entry's), not its class's.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MetricClass {
    /// Work per unit time; a drop beyond the tolerance FAILs.
    Throughput,
    /// Time a request or an operation takes; an increase beyond the tolerance FAILs.
    Latency,
    /// A tail percentile of a latency, gated on request (a spec's `gates.tails`; no catalogue
    /// entry has this class): an increase beyond the tail tolerance FAILs, and too few samples
    /// per replicate for the percentile is INCONCLUSIVE.
    Tail,
    /// Time of one training step; an increase beyond the tolerance FAILs.
    StepTime,
    /// Bytes held; an increase beyond the tolerance WARNs.
    Memory,
    /// Fraction of probes answered correctly; a drop beyond the tolerance, in points, FAILs.
    Accuracy,
    /// Perplexity of a reference text; a relative increase beyond the tolerance FAILs.
    Perplexity,
    /// A graded quality score of an eval task (corpus BLEU 0–100, mean ROUGE-L or token F1
    /// 0–1); a drop beyond the tolerance, in points on the 0–100 scale, FAILs.
    Quality,
    /// The slope of the training loss: a positive slope (loss rising) FAILs, whatever the
    /// baseline.
    LossSlope,
    /// Money per unit of work (dollars per million tokens, per thousand requests); an increase
    /// beyond the tolerance FAILs.
    Cost,
    /// Describes the run; never gated.
    Descriptive,
}

impl MetricClass {
    /// The class as written in the catalogue and `--json`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricClass::Throughput => "throughput",
            MetricClass::Latency => "latency",
            MetricClass::Tail => "tail",
            MetricClass::StepTime => "step_time",
            MetricClass::Memory => "memory",
            MetricClass::Accuracy => "accuracy",
            MetricClass::Perplexity => "perplexity",
            MetricClass::Quality => "quality",
            MetricClass::LossSlope => "loss_slope",
            MetricClass::Cost => "cost",
            MetricClass::Descriptive => "descriptive",
        }
    }

    /// The direction the class's metrics usually have (what the gate's policy table shows per
    /// class). The gate takes a metric's direction from its catalogue entry, which may differ.
    pub fn usual_direction(self) -> Direction {
        match self {
            MetricClass::Throughput | MetricClass::Accuracy | MetricClass::Quality => {
                Direction::HigherIsBetter
            }
            MetricClass::Descriptive => Direction::Neither,
            _ => Direction::LowerIsBetter,
        }
    }

    /// True when going beyond the tolerance only warns (memory).
    pub fn warn_only(self) -> bool {
        self == MetricClass::Memory
    }
}

/// How the interval of a figure's mean over replicates is computed (docs/stats.md, "Intervals
/// over replicates").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalMethod {
    /// A positive quantity on a ratio scale (a time, a rate, a throughput, bytes, energy,
    /// money): Student's t on the logarithms, so the aggregate is the geometric mean and its
    /// interval is multiplicative and never leaves the positive axis. With a value of zero or
    /// less among the replicates, the arithmetic mean with its t interval cut at zero.
    LogT,
    /// Any other figure (counts, fractions, scores, slopes): the arithmetic mean with Student's
    /// t interval.
    T,
}

/// Units of positive quantities on a ratio scale: their intervals are [`IntervalMethod::LogT`].
const RATIO_UNITS: &[&str] = &[
    "s",
    "ms",
    "us",
    "ns",
    "GB/s",
    "MB/s",
    "Gbit/s",
    "tok/s",
    "req/s",
    "samples/s",
    "sessions/s",
    "items/s",
    "GFLOP/s",
    "TFLOP/s",
    "IOPS",
    "x",
    "J",
    "W",
    "bytes",
    "FLOP",
    "$",
];

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl IntervalMethod {
    /// The method for a figure in `unit` (a unit of [`RATIO_UNITS`]: log-t; else t).
    pub const fn for_unit(unit: &str) -> IntervalMethod {
        let mut i = 0;
        while i < RATIO_UNITS.len() {
            if same(RATIO_UNITS[i], unit) {
                return IntervalMethod::LogT;
            }
            i += 1;
        }
        IntervalMethod::T
    }
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MetricDef {
    /// The id, or a family of ids with `<placeholder>` segments.
    pub id: &'static str,
    /// The unit facts carry (`ms`, `tok/s`, `GB/s`, `fraction`; empty for a plain number).
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// Its gate class.
    pub class: MetricClass,
    /// The statistics it is reported with (`p50`, `p99`, `value`, `aggregate`, ...).
    pub statistics: &'static [&'static str],
    /// The statistic the gate compares by default, if it is gated by default.
    pub gated: Option<&'static str>,
    /// What it means, in one sentence.
    pub definition: &'static str,
    /// The statistics a report's summary leads with, in order (empty: not a headline metric).
    /// Reports list headline metrics in catalogue order.
    pub headline: &'static [&'static str],
    /// How the interval of its mean over replicates is computed (from its unit).
    pub interval: IntervalMethod,
}

impl MetricDef {
    /// True when `id` is this metric or a member of this family.
    pub fn matches(&self, id: &str) -> bool {
        let mut want = self.id.split('.');
        let mut have = id.split('.');
        loop {
            match (want.next(), have.next()) {
                (None, None) => return true,
                (Some(w), Some(h)) => {
                    // `<name>` is any non-empty segment; `<name>_us` any that ends in `_us`;
                    // `gpu<i?>` is `gpu` followed by anything, nothing included.
                    let ok = match (w.find('<'), w.find('>')) {
                        (Some(a), Some(z)) if a < z => {
                            let (pre, post) = (&w[..a], &w[z + 1..]);
                            let least =
                                pre.len() + post.len() + usize::from(!w[..z].ends_with('?'));
                            h.len() >= least && h.starts_with(pre) && h.ends_with(post)
                        }
                        _ => w == h,
                    };
                    if !ok {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }

    /// True when this is a family (`gemm.<dtype>.<n>`), not one metric.
    pub fn is_family(&self) -> bool {
        self.id.contains('<')
    }
}

const DIST: &[&str] = &["count", "min", "mean", "p50", "p90", "p95", "p99", "max"];
const STEP: &[&str] = &["n", "mean", "stddev", "min", "p10", "p50", "p90", "max"];
const RATE: &[&str] = &["mean", "p10", "p50", "aggregate"];
const MICRO: &[&str] = &["value", "mean", "min", "max", "cv"];
const VALUE: &[&str] = &["value"];

/// Whether a spec may gate the tail statistics (`gates.tails: [p99]`) of `metric`: the per-request
/// latency distributions of serving (TTFT, TPOT, end-to-end).
pub fn tail_gated(metric: &str) -> bool {
    [id::TTFT_MS, id::TPOT_MS, id::E2E_MS].contains(&metric)
}

/// The ids code refers to by name (columns, JSON fields, plots), so each is spelled once: here.
/// Every one is also a [`CATALOGUE`] entry.
pub mod id {
    /// `request_throughput`.
    pub const REQUEST_THROUGHPUT: &str = "request_throughput";
    /// `output_token_throughput`.
    pub const OUTPUT_TOKEN_THROUGHPUT: &str = "output_token_throughput";
    /// `input_token_throughput`.
    pub const INPUT_TOKEN_THROUGHPUT: &str = "input_token_throughput";
    /// `goodput`.
    pub const GOODPUT: &str = "goodput";
    /// `server_scrape_failures`.
    pub const SERVER_SCRAPE_FAILURES: &str = "server_scrape_failures";
    /// `capacity_cost_per_1m_output_tokens`.
    pub const CAPACITY_COST_PER_1M_OUTPUT_TOKENS: &str = "capacity_cost_per_1m_output_tokens";
    /// `capacity_rps`.
    pub const CAPACITY_RPS: &str = "capacity_rps";
    /// `capacity_concurrency`.
    pub const CAPACITY_CONCURRENCY: &str = "capacity_concurrency";
    /// `capacity_output_token_throughput`.
    pub const CAPACITY_OUTPUT_TOKEN_THROUGHPUT: &str = "capacity_output_token_throughput";
    /// `capacity_probes`.
    pub const CAPACITY_PROBES: &str = "capacity_probes";
    /// `ttft_ms`.
    pub const TTFT_MS: &str = "ttft_ms";
    /// `tpot_ms`.
    pub const TPOT_MS: &str = "tpot_ms";
    /// `itl_ms`.
    pub const ITL_MS: &str = "itl_ms";
    /// `e2e_ms`.
    pub const E2E_MS: &str = "e2e_ms";
    /// `client_queue_ms`.
    pub const CLIENT_QUEUE_MS: &str = "client_queue_ms";
    /// `schedule_lateness_ms`.
    pub const SCHEDULE_LATENESS_MS: &str = "schedule_lateness_ms";
    /// `answer_ttft_ms`.
    pub const ANSWER_TTFT_MS: &str = "answer_ttft_ms";
    /// `reasoning_tokens`.
    pub const REASONING_TOKENS: &str = "reasoning_tokens";
    /// `prompt_cache_hit_rate`.
    pub const PROMPT_CACHE_HIT_RATE: &str = "prompt_cache_hit_rate";
    /// `valid_rate`.
    pub const VALID_RATE: &str = "valid_rate";
    /// `image_bytes_per_request`.
    pub const IMAGE_BYTES_PER_REQUEST: &str = "image_bytes_per_request";
    /// `prompt_token_check`.
    pub const PROMPT_TOKEN_CHECK: &str = "prompt_token_check";
    /// `quality_goodput`.
    pub const QUALITY_GOODPUT: &str = "quality_goodput";
    /// `session_duration_s`.
    pub const SESSION_DURATION_S: &str = "session_duration_s";
    /// `sessions`.
    pub const SESSIONS: &str = "sessions";
    /// `requests`.
    pub const REQUESTS: &str = "requests";
    /// `duration_s`.
    pub const DURATION_S: &str = "duration_s";
    /// `output_tokens_source`.
    pub const OUTPUT_TOKENS_SOURCE: &str = "output_tokens_source";
    /// `warmup`.
    pub const WARMUP: &str = "warmup";
    /// `mlperf`.
    pub const MLPERF: &str = "mlperf";
    /// `time_to_ready_s`.
    pub const TIME_TO_READY_S: &str = "time_to_ready_s";
    /// `time_to_first_output_s`.
    pub const TIME_TO_FIRST_OUTPUT_S: &str = "time_to_first_output_s";
    /// `time_to_listen_s`.
    pub const TIME_TO_LISTEN_S: &str = "time_to_listen_s";
    /// `shutdown_s`.
    pub const SHUTDOWN_S: &str = "shutdown_s";
    /// `startup_peak_rss_bytes`.
    pub const STARTUP_PEAK_RSS_BYTES: &str = "startup_peak_rss_bytes";
    /// `loader_samples_per_s`.
    pub const LOADER_SAMPLES_PER_S: &str = "loader_samples_per_s";
    /// `loader_mb_per_s`.
    pub const LOADER_MB_PER_S: &str = "loader_mb_per_s";
    /// `loader_batch_ms`.
    pub const LOADER_BATCH_MS: &str = "loader_batch_ms";
    /// `loader_first_batch_s`.
    pub const LOADER_FIRST_BATCH_S: &str = "loader_first_batch_s";
    /// `loader_batches`.
    pub const LOADER_BATCHES: &str = "loader_batches";
    /// `step_time_s`.
    pub const STEP_TIME_S: &str = "step_time_s";
    /// `tokens_per_s`.
    pub const TOKENS_PER_S: &str = "tokens_per_s";
    /// `samples_per_s`.
    pub const SAMPLES_PER_S: &str = "samples_per_s";
    /// `mfu`.
    pub const MFU: &str = "mfu";
    /// `loss`.
    pub const LOSS: &str = "loss";
    /// `data_wait_s`.
    pub const DATA_WAIT_S: &str = "data_wait_s";
    /// `comm_s`.
    pub const COMM_S: &str = "comm_s";
    /// `comm_busbw_gbps`.
    pub const COMM_BUSBW_GBPS: &str = "comm_busbw_gbps";
    /// `flops_per_step`.
    pub const FLOPS_PER_STEP: &str = "flops_per_step";
    /// `bytes_per_step`.
    pub const BYTES_PER_STEP: &str = "bytes_per_step";
    /// `steps`.
    pub const STEPS: &str = "steps";
    /// `world_size`.
    pub const WORLD_SIZE: &str = "world_size";
    /// `startup_s`.
    pub const STARTUP_S: &str = "startup_s";
    /// `between_steps_s`.
    pub const BETWEEN_STEPS_S: &str = "between_steps_s";
    /// `teardown_s`.
    pub const TEARDOWN_S: &str = "teardown_s";
    /// `service_s`.
    pub const SERVICE_S: &str = "service_s";
    /// `wall_s`.
    pub const WALL_S: &str = "wall_s";
    /// `user_s`.
    pub const USER_S: &str = "user_s";
    /// `sys_s`.
    pub const SYS_S: &str = "sys_s";
    /// `max_rss_bytes`.
    pub const MAX_RSS_BYTES: &str = "max_rss_bytes";
    /// `peak_mem_bytes`.
    pub const PEAK_MEM_BYTES: &str = "peak_mem_bytes";
    /// `exit_code`.
    pub const EXIT_CODE: &str = "exit_code";
    /// `accuracy`.
    pub const ACCURACY: &str = "accuracy";
    /// `accuracy_ci`.
    pub const ACCURACY_CI: &str = "accuracy_ci";
    /// `correct`.
    pub const CORRECT: &str = "correct";
    /// `errors`.
    pub const ERRORS: &str = "errors";
    /// `mean_score`.
    pub const MEAN_SCORE: &str = "mean_score";
    /// `determinism`.
    pub const DETERMINISM: &str = "determinism";
    /// `items_per_s`.
    pub const ITEMS_PER_S: &str = "items_per_s";
    /// `output_tokens`.
    pub const OUTPUT_TOKENS: &str = "output_tokens";
    /// `latency_ms`.
    pub const LATENCY_MS: &str = "latency_ms";
    /// `bleu`.
    pub const BLEU: &str = "bleu";
    /// `mean_rouge_l`.
    pub const MEAN_ROUGE_L: &str = "mean_rouge_l";
    /// `mean_f1`.
    pub const MEAN_F1: &str = "mean_f1";
    /// `perplexity`.
    pub const PERPLEXITY: &str = "perplexity";
    /// `nll`.
    pub const NLL: &str = "nll";
    /// `perplexity_tokens`.
    pub const PERPLEXITY_TOKENS: &str = "perplexity_tokens";
    /// `memory.triad`.
    pub const MEMORY_TRIAD: &str = "memory.triad";
    /// `ranks`.
    pub const RANKS: &str = "ranks";
    /// `profile.step_s`.
    pub const PROFILE_STEP_S: &str = "profile.step_s";
    /// `profile.comm_overlap`.
    pub const PROFILE_COMM_OVERLAP: &str = "profile.comm_overlap";
    /// `session_throughput`.
    pub const SESSION_THROUGHPUT: &str = "session_throughput";
    /// `first_turn_ttft_ms`.
    pub const FIRST_TURN_TTFT_MS: &str = "first_turn_ttft_ms";
    /// `later_turn_ttft_ms`.
    pub const LATER_TURN_TTFT_MS: &str = "later_turn_ttft_ms";
    /// `short_ttft_ms`.
    pub const SHORT_TTFT_MS: &str = "short_ttft_ms";
    /// `long_ttft_ms`.
    pub const LONG_TTFT_MS: &str = "long_ttft_ms";
    /// `head_of_line_ttft_ms`.
    pub const HEAD_OF_LINE_TTFT_MS: &str = "head_of_line_ttft_ms";
    /// `head_of_line_share`.
    pub const HEAD_OF_LINE_SHARE: &str = "head_of_line_share";
    /// `refused_share`.
    pub const REFUSED_SHARE: &str = "refused_share";
    /// `retry_after_share`.
    pub const RETRY_AFTER_SHARE: &str = "retry_after_share";
    /// `attempts_per_request`.
    pub const ATTEMPTS_PER_REQUEST: &str = "attempts_per_request";
    /// `token_count_disagreements`.
    pub const TOKEN_COUNT_DISAGREEMENTS: &str = "token_count_disagreements";
    /// `cost_per_1m_output_tokens`.
    pub const COST_PER_1M_OUTPUT_TOKENS: &str = "cost_per_1m_output_tokens";
    /// `cost_per_1k_requests`.
    pub const COST_PER_1K_REQUESTS: &str = "cost_per_1k_requests";
    /// `energy_j_per_output_token`.
    pub const ENERGY_J_PER_OUTPUT_TOKEN: &str = "energy_j_per_output_token";
    /// `server_scrapes`.
    pub const SERVER_SCRAPES: &str = "server_scrapes";
    /// `server_running`.
    pub const SERVER_RUNNING: &str = "server_running";
    /// `server_waiting`.
    pub const SERVER_WAITING: &str = "server_waiting";
    /// `server_kv_cache_usage`.
    pub const SERVER_KV_CACHE_USAGE: &str = "server_kv_cache_usage";
    /// `server_preemptions`.
    pub const SERVER_PREEMPTIONS: &str = "server_preemptions";
    /// `server_prefix_cache_hit_rate`.
    pub const SERVER_PREFIX_CACHE_HIT_RATE: &str = "server_prefix_cache_hit_rate";
    /// `server_ttft_ms`.
    pub const SERVER_TTFT_MS: &str = "server_ttft_ms";
    /// `server_queue_ms`.
    pub const SERVER_QUEUE_MS: &str = "server_queue_ms";
    /// `ttft_client_minus_server_ms`.
    pub const TTFT_CLIENT_MINUS_SERVER_MS: &str = "ttft_client_minus_server_ms";
    /// `measured_steps`.
    pub const MEASURED_STEPS: &str = "measured_steps";
    /// `energy_j`.
    pub const ENERGY_J: &str = "energy_j";
    /// `energy_j_per_step`.
    pub const ENERGY_J_PER_STEP: &str = "energy_j_per_step";
    /// `records`.
    pub const RECORDS: &str = "records";
    /// `malformed_lines`.
    pub const MALFORMED_LINES: &str = "malformed_lines";
    /// `cost`.
    pub const COST: &str = "cost";
}

macro_rules! m {
    ($id:expr, $unit:literal, $dir:ident, $class:ident, $stats:expr, $gated:expr, $def:literal) => {
        m!($id, $unit, $dir, $class, $stats, $gated, $def, &[])
    };
    ($id:expr, $unit:literal, $dir:ident, $class:ident, $stats:expr, $gated:expr, $def:literal, $headline:expr) => {
        MetricDef {
            id: $id,
            unit: $unit,
            direction: Direction::$dir,
            class: MetricClass::$class,
            statistics: $stats,
            gated: $gated,
            definition: $def,
            headline: $headline,
            interval: IntervalMethod::for_unit($unit),
        }
    };
}

/// The catalogue, in the order `yardstick metrics` lists it. Exact ids come before the families
/// they would also match (`memory.triad` before `memory.<kernel>`): [`lookup`] takes the first
/// match.
pub const CATALOGUE: &[MetricDef] = &[
    // Serving (bench serve, component.serve).
    m!(
        id::REQUEST_THROUGHPUT,
        "req/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        Some("value"),
        "Completed requests per second, first scheduled send to last completion.",
        &["value"]
    ),
    m!(
        id::OUTPUT_TOKEN_THROUGHPUT,
        "tok/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        Some("value"),
        "Output tokens of completed requests per second.",
        &["value"]
    ),
    m!(
        id::INPUT_TOKEN_THROUGHPUT,
        "tok/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Prompt tokens of completed requests per second."
    ),
    m!(
        id::GOODPUT,
        "req/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Requests per second that met every SLO.",
        &["value"]
    ),
    m!(
        id::SERVER_SCRAPES,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Scrapes of the server's Prometheus endpoint that answered during a point."
    ),
    m!(
        id::SERVER_SCRAPE_FAILURES,
        "count",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Scrapes of the server's Prometheus endpoint that failed during a point."
    ),
    m!(
        id::SERVER_RUNNING,
        "requests",
        Neither,
        Descriptive,
        &["p50", "max"],
        None,
        "Requests the server was running (vllm:num_requests_running and its peers), over the point's scrapes."
    ),
    m!(
        id::SERVER_WAITING,
        "requests",
        Neither,
        Descriptive,
        &["p50", "max"],
        None,
        "Requests waiting in the server's queue (vllm:num_requests_waiting and its peers), over the point's scrapes."
    ),
    m!(
        id::SERVER_KV_CACHE_USAGE,
        "fraction",
        Neither,
        Descriptive,
        VALUE,
        None,
        "The server's largest KV-cache usage during the point (0-1)."
    ),
    m!(
        id::SERVER_PREEMPTIONS,
        "count",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Sequences the server preempted during the point."
    ),
    m!(
        id::SERVER_PREFIX_CACHE_HIT_RATE,
        "fraction",
        HigherIsBetter,
        Descriptive,
        VALUE,
        None,
        "Prefix-cache hits over queries during the point, as the server counts them."
    ),
    m!(
        id::SERVER_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "The server's own mean time to first token during the point (its histogram's sum over count), from when it received each request."
    ),
    m!(
        id::SERVER_QUEUE_MS,
        "ms",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "The server's mean time requests waited in its queue before running (vllm:request_queue_time_seconds), beside the client's own queue."
    ),
    m!(
        id::TTFT_CLIENT_MINUS_SERVER_MS,
        "ms",
        Neither,
        Descriptive,
        VALUE,
        None,
        "The client's mean TTFT minus the server's: the measurement path outside the server (network, client delays, and the gap between the scheduled send and the server's receipt)."
    ),
    m!(
        id::COST_PER_1M_OUTPUT_TOKENS,
        "$",
        LowerIsBetter,
        Cost,
        VALUE,
        Some("value"),
        "Dollars per million output tokens: the deployment's price per second (cost.perAcceleratorHour × accelerators / 3600) over its output token throughput.",
        &["value"]
    ),
    m!(
        id::COST_PER_1K_REQUESTS,
        "$",
        LowerIsBetter,
        Cost,
        VALUE,
        None,
        "Dollars per thousand completed requests at the point's request throughput."
    ),
    m!(
        id::CAPACITY_COST_PER_1M_OUTPUT_TOKENS,
        "$",
        LowerIsBetter,
        Cost,
        VALUE,
        Some("value"),
        "Dollars per million output tokens at the capacity found under the SLO."
    ),
    m!(
        id::ENERGY_J_PER_OUTPUT_TOKEN,
        "J",
        LowerIsBetter,
        Cost,
        VALUE,
        None,
        "Energy per output token over the point: this machine's GPUs' total-energy counters (NVML) or, without them, the CPU's RAPL counters (/sys/class/powercap); absent where there are none."
    ),
    m!(
        id::ENERGY_J,
        "J",
        LowerIsBetter,
        Cost,
        VALUE,
        None,
        "Energy a training replicate's process used from launch to exit: this machine's GPUs' total-energy counters (NVML) or, without them, the CPU's RAPL counters; absent where there are none."
    ),
    m!(
        id::ENERGY_J_PER_STEP,
        "J",
        LowerIsBetter,
        Cost,
        VALUE,
        None,
        "energy_j over the training steps the replicate ran (start-up and warm-up steps included, so a short run overstates it)."
    ),
    m!(
        id::CAPACITY_RPS,
        "req/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        Some("value"),
        "Capacity under the SLO (`load: {mode: capacity}` over rates): the highest open-loop request rate at which every objective was shown to hold.",
        &["value"]
    ),
    m!(
        id::CAPACITY_CONCURRENCY,
        "streams",
        HigherIsBetter,
        Throughput,
        VALUE,
        Some("value"),
        "Capacity under the SLO over concurrency: the most concurrent streams at which every objective was shown to hold.",
        &["value"]
    ),
    m!(
        id::CAPACITY_OUTPUT_TOKEN_THROUGHPUT,
        "tok/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Output tokens per second measured at the capacity's probe."
    ),
    m!(
        id::CAPACITY_PROBES,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Probes the capacity search measured."
    ),
    m!(
        id::TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        Some("p50"),
        "Time to first token: scheduled send to the first streamed event carrying content or reasoning.",
        &["p50", "p99"]
    ),
    m!(
        id::TPOT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        Some("p50"),
        "Time per output token after the first: (E2E - TTFT) / (output tokens - 1).",
        &["p50"]
    ),
    m!(
        id::ITL_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Inter-token latency: every gap between consecutive content events.",
        &["p50"]
    ),
    m!(
        id::E2E_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        Some("p50"),
        "End-to-end latency: scheduled send to the last content event.",
        &["p50", "p99"]
    ),
    m!(
        id::CLIENT_QUEUE_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Time a request waited inside the client: actual send minus scheduled send."
    ),
    m!(
        id::SCHEDULE_LATENESS_MS,
        "ms",
        LowerIsBetter,
        Descriptive,
        &[
            "count",
            "p50",
            "p99",
            "max",
            "late",
            "median_gap_ms",
            "threshold_ms"
        ],
        None,
        "Schedule fidelity of an open-loop point (a rate or a replayed trace): actual send time minus due time of each measured request (p50, p99, max), with `late` the requests sent more than 10 ms late (a count) and the median gap between due times. The point warns (`schedule_warning`) when the p99 exceeds `threshold_ms`: 5 % of the median gap, clamped to 1..10 ms. Absent for closed loops."
    ),
    m!(
        id::ANSWER_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        Some("p50"),
        "Time to the first answer token: scheduled send to the first streamed content that is not reasoning (`reasoning_content`); reported when the model reasoned."
    ),
    m!(
        id::REASONING_TOKENS,
        "tokens",
        Neither,
        Descriptive,
        DIST,
        None,
        "Output tokens per request that were reasoning (usage.completion_tokens_details.reasoning_tokens, else reasoning events), counted apart from the answer."
    ),
    m!(
        id::PROMPT_CACHE_HIT_RATE,
        "fraction",
        HigherIsBetter,
        Descriptive,
        VALUE,
        None,
        "Prompt tokens the server served from its prefix cache over all prompt tokens, from each response's usage.prompt_tokens_details.cached_tokens."
    ),
    m!(
        id::VALID_RATE,
        "fraction",
        HigherIsBetter,
        Descriptive,
        VALUE,
        None,
        "Completed requests of a structured kind (tool call, JSON schema) whose answer was valid: a call of a named tool with arguments that match its parameters, or JSON that matches the schema."
    ),
    m!(
        id::IMAGE_BYTES_PER_REQUEST,
        "bytes",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Mean bytes of the images a request carried (PNG, before base64), when the run sent images (--image)."
    ),
    m!(
        id::PROMPT_TOKEN_CHECK,
        "tokens",
        Neither,
        Descriptive,
        &[
            "prompts",
            "planned_tokens",
            "server_tokens",
            "gap_pct",
            "max_prompt_gap_pct"
        ],
        None,
        "The server's own count of the point's first prompts at its tokenize endpoint beside the plan's: `prompts` counted, their `planned_tokens` and `server_tokens`, and the gap (server − planned) / planned in percent over all (`gap_pct`) and for the prompt furthest off (`max_prompt_gap_pct`). Present where the server has a tokenize endpoint (vLLM, SGLang, llama.cpp); a gap beyond 1 % is a warning."
    ),
    m!(
        id::QUALITY_GOODPUT,
        "req/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Requests per second that met every SLO and whose answer was valid (requests of a structured kind; plain text counts as valid)."
    ),
    m!(
        id::SESSION_DURATION_S,
        "s",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "A multi-turn session's duration: its first turn's scheduled send to its last turn's completion, think times included."
    ),
    m!(
        id::SESSION_THROUGHPUT,
        "sessions/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Completed sessions per second over the point's measured window."
    ),
    m!(
        id::SESSIONS,
        "count",
        Neither,
        Descriptive,
        &["completed", "failed", "cut", "turns"],
        None,
        "Sessions of a point: completed (every turn answered), failed (a turn failed, later turns not sent), cut short by the end of the point, and turns sent in all."
    ),
    m!(
        id::FIRST_TURN_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Time to first token of sessions' first turns (no conversation history to reuse)."
    ),
    m!(
        id::LATER_TURN_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Time to first token of sessions' later turns, whose prompts repeat the conversation so far (where prefix caching helps)."
    ),
    m!(
        id::SHORT_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Time to first token of a mixed scenario's class with the shortest prompts (`0.8*D(64,16) + 0.2*D(2048,16)`: the D(64,16) requests)."
    ),
    m!(
        id::LONG_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Time to first token of a mixed scenario's class with the longest prompts."
    ),
    m!(
        id::HEAD_OF_LINE_TTFT_MS,
        "ms",
        LowerIsBetter,
        Latency,
        &["behind", "clear"],
        None,
        "Mean time to first token of a mix's shortest-prompt requests sent while a longest-prompt request was still waiting for its first token (behind), and of the others (clear): head-of-line blocking shows as behind above clear."
    ),
    m!(
        id::HEAD_OF_LINE_SHARE,
        "ratio",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Share of a mix's shortest-prompt requests sent while a longest-prompt request was still waiting for its first token."
    ),
    m!(
        id::REFUSED_SHARE,
        "ratio",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Share of attempts the server turned away with 429 (too many requests) or 503 (unavailable), retries included; reported when any was."
    ),
    m!(
        id::RETRY_AFTER_SHARE,
        "ratio",
        HigherIsBetter,
        Descriptive,
        VALUE,
        None,
        "Share of the server's refusals (429, 503) that said when to come back with a `Retry-After` header."
    ),
    m!(
        id::ATTEMPTS_PER_REQUEST,
        "ratio",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Attempts per measured request under a retry policy (`retry`, `--retry-on`): 1 when nothing was tried again."
    ),
    m!(
        id::REQUESTS,
        "count",
        Neither,
        Descriptive,
        &["completed", "failed", "warmup"],
        None,
        "Requests of a point: completed, failed, and sent as warm-up (not measured)."
    ),
    m!(
        id::DURATION_S,
        "s",
        Neither,
        Descriptive,
        VALUE,
        None,
        "The measured window of a point: first scheduled send to last completion."
    ),
    m!(
        id::OUTPUT_TOKENS_SOURCE,
        "count",
        Neither,
        Descriptive,
        &["server_usage", "tokenizer", "events"],
        None,
        "Completed requests by where their output token count came from."
    ),
    m!(
        id::TOKEN_COUNT_DISAGREEMENTS,
        "count",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Requests whose server-reported output tokens differ by more than 10 % from the local count."
    ),
    m!(
        id::WARMUP,
        "count",
        Neither,
        Descriptive,
        &["trimmed"],
        None,
        "Warm-up samples trimmed before the statistics."
    ),
    m!(
        id::MLPERF,
        "",
        Neither,
        Descriptive,
        &[
            "queries",
            "queries_completed",
            "samples_per_query",
            "samples_completed",
            "samples_failed",
            "duration_s",
            "samples_per_s"
        ],
        None,
        "An MLPerf scenario's counts and sample rate for a point (its PASS/FAIL and validity are in the run's summary)."
    ),
    // Start-up (component layers of kind startup).
    m!(
        id::TIME_TO_READY_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        Some("value"),
        "From starting the command to its readiness check passing (HTTP status, log line or exit).",
        &["value"]
    ),
    m!(
        id::TIME_TO_FIRST_OUTPUT_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "From starting the command to its first byte on stdout or stderr."
    ),
    m!(
        id::TIME_TO_LISTEN_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "From starting the command to the first TCP connection its port accepts."
    ),
    m!(
        id::SHUTDOWN_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "From SIGTERM to the ready process's exit (SIGKILL after the grace period counts in full)."
    ),
    m!(
        id::STARTUP_PEAK_RSS_BYTES,
        "bytes",
        LowerIsBetter,
        Memory,
        VALUE,
        Some("value"),
        "Peak resident set size of the started process (or its largest waited-for descendant) up to its stop after ready."
    ),
    // Data loaders (component layers of kind dataloader).
    m!(
        id::LOADER_SAMPLES_PER_S,
        "samples/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        Some("value"),
        "Samples an input pipeline supplies per second in the steady state: the samples of every batch after the first over the time the loop waited for them.",
        &["value"]
    ),
    m!(
        id::LOADER_MB_PER_S,
        "MB/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Megabytes (10^6 bytes) of stored data an input pipeline reads per second, same span as loader_samples_per_s."
    ),
    m!(
        id::LOADER_BATCH_MS,
        "ms",
        LowerIsBetter,
        Latency,
        DIST,
        None,
        "Time the loop waited for each batch after the first."
    ),
    m!(
        id::LOADER_FIRST_BATCH_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "From the start of a pass to its first batch: opening files and, cold, reading them from storage."
    ),
    m!(
        id::LOADER_BATCHES,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Batches a pass delivered."
    ),
    // A workload's own metrics (metric protocol keys it defines itself).
    m!(
        "custom.<name>",
        "",
        Unknown,
        Descriptive,
        &["mean", "p50", "last"],
        None,
        "A workload's own metric from the metric protocol, in the unit and with the direction it declares (a `declare` line); reported, never gated."
    ),
    // Training (bench train, e2e command layers speaking the metric protocol).
    m!(
        id::STEP_TIME_S,
        "s",
        LowerIsBetter,
        StepTime,
        STEP,
        Some("p50"),
        "Time of one synchronised training step (forward, backward, optimizer, communication); the slowest rank decides.",
        &["p50"]
    ),
    m!(
        id::TOKENS_PER_S,
        "tok/s",
        HigherIsBetter,
        Throughput,
        RATE,
        Some("p50"),
        "Training tokens per second: the global batch's tokens over the step time.",
        &["aggregate"]
    ),
    m!(
        id::SAMPLES_PER_S,
        "samples/s",
        HigherIsBetter,
        Throughput,
        RATE,
        None,
        "Training samples (sequences) per second.",
        &["aggregate"]
    ),
    m!(
        id::MFU,
        "fraction",
        HigherIsBetter,
        Throughput,
        &[
            "p50",
            "p10",
            "aggregate",
            "peak_flops_per_device",
            "devices"
        ],
        None,
        "Model FLOP utilisation: achieved FLOP/s over the devices' peak FLOP/s.",
        &["aggregate"]
    ),
    m!(
        id::LOSS,
        "",
        LowerIsBetter,
        LossSlope,
        &["first", "last", "slope", "slope_stderr", "non_finite_steps"],
        Some("slope"),
        "Training loss over the measured steps; a rising slope fails the gate.",
        &["last"]
    ),
    m!(
        id::DATA_WAIT_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "Seconds of a step spent waiting for input, as the workload reported."
    ),
    m!(
        id::COMM_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "Seconds of a step in collectives not overlapped with compute, as the workload reported."
    ),
    m!(
        id::COMM_BUSBW_GBPS,
        "GB/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Bus bandwidth the step's collectives achieved, as the workload reported."
    ),
    m!(
        id::FLOPS_PER_STEP,
        "FLOP",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Floating-point operations of one step (reported by the workload or estimated from the model's shape)."
    ),
    m!(
        id::BYTES_PER_STEP,
        "bytes",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Memory bytes one step moves (reported by the workload or estimated), the roofline's denominator."
    ),
    m!(
        id::MEASURED_STEPS,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Steps left after the warm-up was trimmed."
    ),
    m!(
        id::STEPS,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Steps the workload reported."
    ),
    m!(
        id::RECORDS,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Metric-protocol records read."
    ),
    m!(
        id::MALFORMED_LINES,
        "count",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Metric-protocol lines that were not valid records (counted and skipped)."
    ),
    m!(
        id::WORLD_SIZE,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Ranks in the job."
    ),
    m!(
        id::STARTUP_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "Launch to the first step record: process start-up, imports, data and model loading."
    ),
    m!(
        id::BETWEEN_STEPS_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "First to last step record: the time spent in steps."
    ),
    m!(
        id::TEARDOWN_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "Last step record to process exit."
    ),
    m!(
        id::SERVICE_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "Time the workload spent serving its steps (wall time less start-up and teardown)."
    ),
    // Whole processes (bench exec, command layers).
    m!(
        id::WALL_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "Wall-clock time of the process, launch to exit.",
        &["value"]
    ),
    m!(
        id::USER_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "CPU time in user mode of the process and its children."
    ),
    m!(
        id::SYS_S,
        "s",
        LowerIsBetter,
        Latency,
        VALUE,
        None,
        "CPU time in the kernel of the process and its children."
    ),
    m!(
        id::MAX_RSS_BYTES,
        "bytes",
        LowerIsBetter,
        Memory,
        VALUE,
        Some("value"),
        "Peak resident memory of the process tree.",
        &["value"]
    ),
    m!(
        id::PEAK_MEM_BYTES,
        "bytes",
        LowerIsBetter,
        Memory,
        VALUE,
        Some("value"),
        "Peak device (or host) memory the workload reported.",
        &["value"]
    ),
    m!(
        id::EXIT_CODE,
        "",
        Neither,
        Descriptive,
        VALUE,
        None,
        "The process's exit code."
    ),
    // Accuracy and quality (bench eval, eval layers).
    m!(
        id::ACCURACY,
        "fraction",
        HigherIsBetter,
        Accuracy,
        VALUE,
        Some("value"),
        "Fraction of probes answered correctly.",
        &["value"]
    ),
    m!(
        id::ACCURACY_CI,
        "fraction",
        Neither,
        Descriptive,
        &["lo", "hi"],
        None,
        "Wilson interval of the accuracy."
    ),
    m!(
        id::CORRECT,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Probes answered correctly."
    ),
    m!(
        id::ERRORS,
        "count",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Probe requests that failed."
    ),
    m!(
        id::MEAN_SCORE,
        "fraction",
        HigherIsBetter,
        Quality,
        VALUE,
        None,
        "Mean per-item score of a task."
    ),
    m!(
        id::DETERMINISM,
        "fraction",
        HigherIsBetter,
        Quality,
        VALUE,
        None,
        "Fraction of probes answered identically on every repeat.",
        &["value"]
    ),
    m!(
        id::ITEMS_PER_S,
        "req/s",
        HigherIsBetter,
        Throughput,
        VALUE,
        None,
        "Probe requests answered per second."
    ),
    m!(
        id::OUTPUT_TOKENS,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Output tokens of a task's answers."
    ),
    m!(
        id::LATENCY_MS,
        "ms",
        LowerIsBetter,
        Latency,
        &["mean", "p50", "max"],
        None,
        "Latency of a probe request."
    ),
    m!(
        id::BLEU,
        "BLEU",
        HigherIsBetter,
        Quality,
        VALUE,
        Some("value"),
        "Corpus BLEU of a task's answers against its references (0-100)."
    ),
    m!(
        id::MEAN_ROUGE_L,
        "fraction",
        HigherIsBetter,
        Quality,
        VALUE,
        Some("value"),
        "Mean ROUGE-L F-measure of a task's answers against its references."
    ),
    m!(
        id::MEAN_F1,
        "fraction",
        HigherIsBetter,
        Quality,
        VALUE,
        Some("value"),
        "Mean token F1 of a task's answers against its references."
    ),
    m!(
        id::PERPLEXITY,
        "",
        LowerIsBetter,
        Perplexity,
        VALUE,
        Some("value"),
        "Perplexity of a reference text from the server's prompt log-probabilities.",
        &["value"]
    ),
    m!(
        id::NLL,
        "nats",
        LowerIsBetter,
        Perplexity,
        VALUE,
        None,
        "Mean negative log-likelihood per token of the reference text (the log of the perplexity)."
    ),
    m!(
        id::PERPLEXITY_TOKENS,
        "count",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Tokens the perplexity was computed over."
    ),
    // Micro benchmarks (bench micro, micro layers, import).
    m!(
        id::MEMORY_TRIAD,
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "STREAM triad bandwidth (a = b + s*c): the memory bandwidth a streaming kernel gets."
    ),
    m!(
        id::COST,
        "$",
        LowerIsBetter,
        Cost,
        &[
            "per_device_hour",
            "devices",
            "per_1k_samples",
            "per_1m_tokens"
        ],
        None,
        "What a training run's devices cost: the price per device-hour given, the devices, and the dollars per thousand samples and per million tokens at its throughput."
    ),
    m!(
        id::RANKS,
        "ratio",
        Neither,
        Descriptive,
        &["slowest_rank", "median_spread", "waiting_share"],
        None,
        "A multi-rank step's straggler analysis: the slowest rank (its index), the spread of the ranks' median step times ((slowest - fastest) / fastest), and the share of rank-time spent waiting for the slowest rank."
    ),
    // Profiles (the profiled replicate of an e2e point; descriptive, never gated).
    m!(
        id::PROFILE_STEP_S,
        "s",
        Neither,
        Descriptive,
        VALUE,
        None,
        "Mean duration of a profiled step (ProfilerStep#N), from the profiled replicate, which the profiler slows: compare with step_time_s for its overhead."
    ),
    m!(
        "profile.phase.<name>_s",
        "s",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Seconds per profiled step inside one phase the training loop marked (data, forward, backward, optimizer, communication), or `unattributed`: the rest of the step."
    ),
    m!(
        id::PROFILE_COMM_OVERLAP,
        "fraction",
        HigherIsBetter,
        Descriptive,
        VALUE,
        None,
        "Share of collective communication time during which compute also ran (0 to 1)."
    ),
    m!(
        "profile.<category>_s",
        "s",
        LowerIsBetter,
        Descriptive,
        VALUE,
        None,
        "Seconds per profiled step by kind: compute (operator self time), communication (NCCL/gloo/c10d collectives), memcpy, data (the loader's phase), idle (nothing running)."
    ),
    m!(
        "memory.<kernel>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "STREAM bandwidth of one kernel: copy, scale, add."
    ),
    m!(
        "gemm.bf16_vs_f32.<n>",
        "x",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "bf16 GEMM throughput over f32 at size n."
    ),
    m!(
        "gemm.<dtype>.peak",
        "GFLOP/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "The best GEMM throughput of a data type over the sizes measured."
    ),
    m!(
        "gemm.<dtype>.<n>",
        "GFLOP/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "Square GEMM throughput of a data type at size n."
    ),
    m!(
        "gpu<i?>.hbm.copy",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "GPU memory (HBM) bandwidth of a device-to-device copy at the largest buffer measured, counting bytes read plus bytes written; the GPU roofline's bandwidth (`gpu` on a node with one GPU, `gpu0`, `gpu1`, ... with several)."
    ),
    m!(
        "gpu<i?>.hbm.<kernel>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "GPU memory (HBM) bandwidth of a read-only or write-only kernel at the largest buffer measured."
    ),
    m!(
        "gpu<i?>.hbm.<kernel>.<bytes>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "GPU memory (HBM) bandwidth of one kernel (copy, read, write) at one buffer size in bytes, bytes read plus written per second."
    ),
    m!(
        "gpu<i?>.pcie.<direction>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "Bandwidth of copies between host memory and the GPU: h2d (host to device) or d2h (device to host)."
    ),
    m!(
        "gpu<i?>.p2p.<pair>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "Bandwidth of copies from one GPU to another (`<i>to<j>`), over whatever path joins them (NVLink, PCIe)."
    ),
    m!(
        "gpu<i?>.gemm.<dtype>.peak",
        "TFLOP/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "The best GPU GEMM throughput of a data type (bf16, fp16, tf32, fp8) over the shapes measured, its shape in params m, n, k; the GPU roofline's peak. Operands are random, since zeros make tensor cores look faster; fp8 accumulates in the fast, reduced-precision mode."
    ),
    m!(
        "gpu<i?>.gemm.<dtype>.<n>",
        "TFLOP/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        Some("value"),
        "GPU GEMM throughput of a data type for an n x n x n product (2n^3 FLOPs), on random operands."
    ),
    m!(
        "storage.<pattern>.<percentile>_us",
        "us",
        LowerIsBetter,
        Latency,
        MICRO,
        None,
        "Latency of one I/O of an access pattern, at a percentile."
    ),
    m!(
        "storage.<pattern>",
        "MB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "Storage bandwidth of an access pattern: seq_read, seq_write, rand_read, rand_write."
    ),
    m!(
        "network.bandwidth",
        "Gbit/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "TCP bandwidth between two endpoints."
    ),
    m!(
        "network.rtt",
        "us",
        LowerIsBetter,
        Latency,
        MICRO,
        None,
        "Round-trip time of a small message between two endpoints (median)."
    ),
    m!(
        "network.rtt.p99",
        "us",
        LowerIsBetter,
        Latency,
        MICRO,
        None,
        "Round-trip time of a small message between two endpoints (99th percentile)."
    ),
    m!(
        "nccl.<op>.busbw.avg",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "nccl-tests' average bus bandwidth of a collective over the sizes run."
    ),
    m!(
        "nccl.<op>.busbw.<bytes>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "nccl-tests' bus bandwidth of a collective at a message size (algorithm bandwidth times the collective's factor)."
    ),
    m!(
        "nccl.<op>.algbw.<bytes>",
        "GB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "nccl-tests' algorithm bandwidth of a collective at a message size (bytes / time)."
    ),
    m!(
        "nccl.<op>.time_us.<bytes>",
        "us",
        LowerIsBetter,
        Latency,
        MICRO,
        None,
        "nccl-tests' time of a collective at a message size."
    ),
    m!(
        "fio.<job>.<direction>.iops",
        "IOPS",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "fio's I/O operations per second of a job and direction."
    ),
    m!(
        "fio.<job>.<direction>.<percentile>_us",
        "us",
        LowerIsBetter,
        Latency,
        MICRO,
        None,
        "fio's completion latency of a job and direction, at a percentile."
    ),
    m!(
        "fio.<job>.<direction>",
        "MB/s",
        HigherIsBetter,
        Throughput,
        MICRO,
        None,
        "fio's bandwidth of a job and direction."
    ),
];

/// One figure a result measured: a metric of the catalogue (or a producer's own), one of its
/// statistics, and the value. Runners produce these from their typed results ([`Measured`]);
/// the facts of the warehouse are built from them, and a replicate's sealed result record keeps
/// them (`measurements`) so that a store can be re-indexed without reading its summaries' shape.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Measurement {
    /// The metric id (`ttft_ms`, `memory.triad`, `custom.grad_norm`).
    pub metric: String,
    /// The statistic (`p50`, `value`, `mean`, `completed`, ...).
    pub statistic: String,
    /// The value, in the metric's unit.
    pub value: f64,
    /// The unit its producer declares (a micro result's, a workload's custom metric's); absent
    /// when the catalogue's applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl Measurement {
    /// `metric`'s single figure (statistic `value`).
    pub fn value(metric: impl Into<String>, value: f64) -> Measurement {
        Measurement::stat(metric, "value", value)
    }

    /// One statistic of `metric`.
    pub fn stat(
        metric: impl Into<String>,
        statistic: impl Into<String>,
        value: f64,
    ) -> Measurement {
        Measurement {
            metric: metric.into(),
            statistic: statistic.into(),
            value,
            unit: None,
        }
    }

    /// The same figure in the unit its producer declares.
    pub fn in_unit(mut self, unit: Option<impl Into<String>>) -> Measurement {
        self.unit = unit.map(Into::into);
        self
    }

    /// The unit facts carry: the declared one, else the catalogue's ("" when neither says).
    pub fn unit(&self) -> &str {
        self.unit
            .as_deref()
            .unwrap_or_else(|| unit_of(&self.metric))
    }
}

/// A typed result that knows its figures: a serving point's summary, a micro report, a
/// command's process and training analysis, an eval, a start-up, a data-loader pass.
pub trait Measured {
    /// Every figure, in a stable order. A value that is not finite is left out by whoever
    /// stores the figures (it has no fact).
    fn measurements(&self) -> Vec<Measurement>;
}

/// Pushes the figures of `stats` (statistic, value) of `metric`, skipping absent ones: the
/// common shape of a distribution's or a rate's figures.
pub fn push_stats(
    out: &mut Vec<Measurement>,
    metric: &str,
    stats: impl IntoIterator<Item = (&'static str, Option<f64>)>,
) {
    for (s, v) in stats {
        if let Some(v) = v {
            out.push(Measurement::stat(metric, s, v));
        }
    }
}

/// The catalogue's entry for `id`: the first exact id or family that matches.
pub fn lookup(id: &str) -> Option<&'static MetricDef> {
    CATALOGUE.iter().find(|d| d.matches(id))
}

/// The unit of `id` as the facts store it: the catalogue's, else "".
pub fn unit_of(id: &str) -> &'static str {
    lookup(id).map_or("", |d| d.unit)
}

/// The gate class and direction of `(id, statistic)` when the gate compares it by default.
pub fn gated(id: &str, statistic: &str) -> Option<&'static MetricDef> {
    lookup(id).filter(|d| d.gated == Some(statistic))
}

/// The catalogue as a Markdown table (what docs/metrics.md's catalogue section holds, checked
/// by a test).
pub fn markdown_table() -> String {
    let mut s = String::from(
        "| metric | unit | better | gate class | statistics | gated by default | definition |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for d in CATALOGUE {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            d.id,
            if d.unit.is_empty() { "-" } else { d.unit },
            d.direction.as_str(),
            d.class.as_str(),
            d.statistics.join(", "),
            d.gated.unwrap_or("-"),
            d.definition
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_ids_and_families_resolve_to_the_first_match() {
        assert_eq!(lookup("ttft_ms").unwrap().unit, "ms");
        assert_eq!(lookup("memory.triad").unwrap().gated, Some("value"));
        assert_eq!(lookup("memory.copy").unwrap().id, "memory.<kernel>");
        assert_eq!(lookup("memory.copy").unwrap().gated, None);
        assert_eq!(lookup("gemm.f32.1024").unwrap().id, "gemm.<dtype>.<n>");
        assert_eq!(lookup("gemm.bf16.peak").unwrap().id, "gemm.<dtype>.peak");
        assert_eq!(
            lookup("gemm.bf16_vs_f32.64").unwrap().id,
            "gemm.bf16_vs_f32.<n>"
        );
        assert_eq!(
            lookup("nccl.all_reduce.busbw.8589934592").unwrap().id,
            "nccl.<op>.busbw.<bytes>"
        );
        assert_eq!(
            lookup("nccl.all_reduce.busbw.avg").unwrap().id,
            "nccl.<op>.busbw.avg"
        );
        assert_eq!(
            lookup("storage.seq_read.p99_us").unwrap().id,
            "storage.<pattern>.<percentile>_us"
        );
        assert_eq!(lookup("storage.seq_read").unwrap().unit, "MB/s");
        // GPU results: one GPU (`gpu.`) or several (`gpu<i>.`) alike.
        for (id, family) in [
            ("gpu.hbm.copy", "gpu<i?>.hbm.copy"),
            ("gpu3.hbm.copy", "gpu<i?>.hbm.copy"),
            ("gpu.hbm.read", "gpu<i?>.hbm.<kernel>"),
            ("gpu.hbm.copy.4294967296", "gpu<i?>.hbm.<kernel>.<bytes>"),
            ("gpu1.pcie.h2d", "gpu<i?>.pcie.<direction>"),
            ("gpu.p2p.0to1", "gpu<i?>.p2p.<pair>"),
            ("gpu.gemm.bf16.peak", "gpu<i?>.gemm.<dtype>.peak"),
            ("gpu7.gemm.fp8.8192", "gpu<i?>.gemm.<dtype>.<n>"),
        ] {
            assert_eq!(lookup(id).unwrap().id, family, "{id}");
        }
        assert_eq!(lookup("gpu.hbm.copy").unwrap().gated, Some("value"));
        assert_eq!(lookup("gpu.hbm.read").unwrap().gated, None);
        assert_eq!(lookup("gpu0.gemm.bf16.peak").unwrap().unit, "TFLOP/s");
        assert_eq!(
            lookup("gpu0.gemm.bf16.peak").unwrap().interval,
            IntervalMethod::LogT
        );
        assert!(lookup("gpu.gemm.bf16").is_none());
        assert!(lookup("gp.hbm.copy").is_none());
        // A placeholder matches one whole segment, never none (unless it says `?`) or several.
        assert!(lookup("gemm.f32").is_none());
        assert!(lookup("memory.").is_none());
        assert!(lookup("gemm.f32.1024.extra").is_none());
        assert!(lookup("my_custom_loss").is_none());
    }

    #[test]
    fn unknown_metrics_and_tails_are_not_gated_by_default() {
        assert!(gated("my_metric", "value").is_none());
        assert!(
            gated("ttft_ms", "p99").is_none(),
            "tails are gated on request only"
        );
        assert_eq!(gated("ttft_ms", "p50").unwrap().class, MetricClass::Latency);
    }

    #[test]
    fn every_entry_is_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for d in CATALOGUE {
            assert!(seen.insert(d.id), "{} twice", d.id);
            assert!(d.definition.ends_with('.'), "{}: a sentence", d.id);
            if let Some(g) = d.gated {
                assert!(d.statistics.contains(&g), "{}: gates {g}", d.id);
                assert!(
                    matches!(
                        d.direction,
                        Direction::HigherIsBetter | Direction::LowerIsBetter
                    ) && d.class != MetricClass::Descriptive,
                    "{}: gated without a direction",
                    d.id
                );
            }
            assert_ne!(
                d.class,
                MetricClass::Tail,
                "{}: tail is a gate-only class",
                d.id
            );
            // An exact id is not shadowed by a family listed before it.
            if !d.is_family() {
                assert_eq!(lookup(d.id).unwrap().id, d.id, "{} is shadowed", d.id);
            }
        }
    }

    /// Reports lead with these (metric, statistic) pairs in this order (the list the report
    /// crate kept before the catalogue owned it).
    #[test]
    fn headline_statistics_in_reading_order() {
        let got: Vec<(&str, &str)> = CATALOGUE
            .iter()
            .flat_map(|d| d.headline.iter().map(move |s| (d.id, *s)))
            .collect();
        let want = [
            ("request_throughput", "value"),
            ("output_token_throughput", "value"),
            ("goodput", "value"),
            ("cost_per_1m_output_tokens", "value"),
            ("capacity_rps", "value"),
            ("capacity_concurrency", "value"),
            ("ttft_ms", "p50"),
            ("ttft_ms", "p99"),
            ("tpot_ms", "p50"),
            ("itl_ms", "p50"),
            ("e2e_ms", "p50"),
            ("e2e_ms", "p99"),
            ("time_to_ready_s", "value"),
            ("loader_samples_per_s", "value"),
            ("step_time_s", "p50"),
            ("tokens_per_s", "aggregate"),
            ("samples_per_s", "aggregate"),
            ("mfu", "aggregate"),
            ("loss", "last"),
            ("wall_s", "value"),
            ("max_rss_bytes", "value"),
            ("peak_mem_bytes", "value"),
            ("accuracy", "value"),
            ("determinism", "value"),
            ("perplexity", "value"),
        ];
        assert_eq!(got, want);
        for d in CATALOGUE {
            for s in d.headline {
                assert!(d.statistics.contains(s), "{}: headline {s}", d.id);
            }
        }
    }
}
