//! Per-point metrics, exactly as docs/metrics.md defines them.

use std::collections::BTreeMap;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use yardstick_spec::metrics::{Measured, Measurement, id, push_stats};

use crate::record::{RequestRecord, TokenSource};

/// Why a point stopped. In JSON it is one string: `max_requests`, `max_duration`,
/// `interrupted`, `target_unreachable: MESSAGE`, or, for a merged point whose shards stopped for
/// different reasons, those reasons joined with `, `.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// The request budget was spent.
    MaxRequests,
    /// The time budget was spent.
    MaxDuration,
    /// Every recent request failed to connect: the target is gone.
    TargetUnreachable(String),
    /// Asked to stop from outside (Ctrl-C, a cancelled run).
    Interrupted,
    /// A replayed trace had no more requests.
    TraceEnd,
    /// The shards of a merged point stopped for these different reasons.
    Shards(Vec<StopReason>),
}

impl StopReason {
    /// The point ended before its budget: its results cover only the requests made before.
    pub fn is_early(&self) -> bool {
        match self {
            StopReason::TargetUnreachable(_) | StopReason::Interrupted => true,
            StopReason::MaxRequests | StopReason::MaxDuration | StopReason::TraceEnd => false,
            StopReason::Shards(v) => v.iter().any(StopReason::is_early),
        }
    }

    /// The target stopped answering (here or in one of the shards).
    pub fn is_unreachable(&self) -> bool {
        match self {
            StopReason::TargetUnreachable(_) => true,
            StopReason::Shards(v) => v.iter().any(StopReason::is_unreachable),
            _ => false,
        }
    }

    /// The one reason of several shards' points: the single reason when they agree, else
    /// [`StopReason::Shards`] with each different reason once, in shard order.
    pub fn of_shards<'a>(reasons: impl IntoIterator<Item = &'a StopReason>) -> StopReason {
        let mut distinct: Vec<StopReason> = Vec::new();
        for r in reasons {
            let parts = match r {
                StopReason::Shards(v) => v.clone(),
                one => vec![one.clone()],
            };
            for p in parts {
                if !distinct.contains(&p) {
                    distinct.push(p);
                }
            }
        }
        match distinct.len() {
            1 => distinct.remove(0),
            _ => StopReason::Shards(distinct),
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::MaxRequests => f.write_str("max_requests"),
            StopReason::MaxDuration => f.write_str("max_duration"),
            StopReason::TargetUnreachable(m) => write!(f, "target_unreachable: {m}"),
            StopReason::Interrupted => f.write_str("interrupted"),
            StopReason::TraceEnd => f.write_str("trace_end"),
            StopReason::Shards(v) => {
                for (i, r) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{r}")?;
                }
                Ok(())
            }
        }
    }
}

/// A stop reason that is none of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a stop reason (max_requests, max_duration, interrupted, trace_end, target_unreachable: ...)"
)]
pub struct UnknownStopReason(pub String);

impl std::str::FromStr for StopReason {
    type Err = UnknownStopReason;

    /// Reads one point's reason as [`Display`](std::fmt::Display) writes it. A
    /// `target_unreachable` message is everything after its colon, so a joined (merged) string is
    /// read as its parts only when no part is a `target_unreachable`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let one = |s: &str| match s {
            "max_requests" => Some(StopReason::MaxRequests),
            "max_duration" => Some(StopReason::MaxDuration),
            "interrupted" => Some(StopReason::Interrupted),
            "trace_end" => Some(StopReason::TraceEnd),
            _ => s
                .strip_prefix("target_unreachable:")
                .map(|m| StopReason::TargetUnreachable(m.trim_start().to_string())),
        };
        if let Some(r) = one(s) {
            return Ok(r);
        }
        let parts: Option<Vec<StopReason>> = s.split(", ").map(one).collect();
        match parts {
            Some(v) if v.len() > 1 => Ok(StopReason::Shards(v)),
            _ => Err(UnknownStopReason(s.to_string())),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl schemars::JsonSchema for StopReason {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StopReason".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Why a point stopped: max_requests, max_duration, interrupted, trace_end, \
                target_unreachable: MESSAGE, or a merged point's different reasons joined with \
                ', '.",
            "pattern": "^(max_requests|max_duration|interrupted|trace_end|target_unreachable: .*)(, .+)*$"
        })
    }
}

impl<'de> serde::Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Summary of one latency metric, in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Distribution {
    /// Number of samples.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

impl Distribution {
    /// Its figures as statistics of `metric` (count, mean, p50, p90, p95, p99, min, max).
    pub fn push_to(&self, out: &mut Vec<Measurement>, metric: &str) {
        push_stats(
            out,
            metric,
            [
                ("count", Some(self.count as f64)),
                ("mean", Some(self.mean)),
                ("p50", Some(self.p50)),
                ("p90", Some(self.p90)),
                ("p95", Some(self.p95)),
                ("p99", Some(self.p99)),
                ("min", Some(self.min)),
                ("max", Some(self.max)),
            ],
        );
    }
}

impl Measured for PointSummary {
    /// Every figure of the point. The load level, the stop reason, the per-turn table, the
    /// shard and the schedule origin describe the point and are not figures.
    fn measurements(&self) -> Vec<Measurement> {
        let mut out = Vec::new();
        let r = &self.requests;
        push_stats(
            &mut out,
            id::REQUESTS,
            [
                ("completed", Some(r.completed as f64)),
                ("failed", Some(r.failed as f64)),
                ("warmup", Some(r.warmup as f64)),
            ],
        );
        for (metric, v) in [
            (id::DURATION_S, Some(self.duration_s)),
            (id::REQUEST_THROUGHPUT, Some(self.request_throughput)),
            (
                id::OUTPUT_TOKEN_THROUGHPUT,
                Some(self.output_token_throughput),
            ),
            (
                id::INPUT_TOKEN_THROUGHPUT,
                Some(self.input_token_throughput),
            ),
            (id::GOODPUT, self.goodput),
        ] {
            out.extend(v.map(|v| Measurement::value(metric, v)));
        }
        for (metric, d) in [
            (id::TTFT_MS, &self.ttft_ms),
            (id::TPOT_MS, &self.tpot_ms),
            (id::ITL_MS, &self.itl_ms),
            (id::E2E_MS, &self.e2e_ms),
            (id::CLIENT_QUEUE_MS, &self.client_queue_ms),
            (id::ANSWER_TTFT_MS, &self.answer_ttft_ms),
            (id::REASONING_TOKENS, &self.reasoning_tokens),
        ] {
            if let Some(d) = d {
                d.push_to(&mut out, metric);
            }
        }
        out.extend(
            self.prompt_cache_hit_rate
                .map(|v| Measurement::value(id::PROMPT_CACHE_HIT_RATE, v)),
        );
        out.extend(
            self.valid_rate
                .map(|v| Measurement::value(id::VALID_RATE, v)),
        );
        if let Some(a) = &self.eval_mix {
            out.push(Measurement::value(id::ACCURACY, a.accuracy));
            out.push(Measurement::stat(id::ACCURACY_CI, "lo", a.ci95[0]));
            out.push(Measurement::stat(id::ACCURACY_CI, "hi", a.ci95[1]));
            out.push(Measurement::value(id::CORRECT, a.correct as f64));
        }
        out.extend(
            self.image_bytes_per_request
                .map(|v| Measurement::value(id::IMAGE_BYTES_PER_REQUEST, v)),
        );
        if let Some(c) = &self.prompt_token_check {
            push_stats(
                &mut out,
                id::PROMPT_TOKEN_CHECK,
                [
                    ("prompts", Some(c.prompts as f64)),
                    ("planned_tokens", Some(c.planned_tokens as f64)),
                    ("server_tokens", Some(c.server_tokens as f64)),
                    ("gap_pct", Some(c.gap_pct)),
                    ("max_prompt_gap_pct", Some(c.max_prompt_gap_pct)),
                ],
            );
        }
        out.extend(
            self.quality_goodput
                .map(|v| Measurement::value(id::QUALITY_GOODPUT, v)),
        );
        if let Some(l) = &self.schedule_lateness_ms {
            push_stats(
                &mut out,
                id::SCHEDULE_LATENESS_MS,
                [
                    ("count", Some(l.count as f64)),
                    ("p50", Some(l.p50)),
                    ("p99", Some(l.p99)),
                    ("max", Some(l.max)),
                    ("late", Some(l.late as f64)),
                    ("median_gap_ms", l.median_gap_ms),
                    ("threshold_ms", Some(l.threshold_ms)),
                ],
            );
        }
        if let Some(s) = &self.sessions {
            push_stats(
                &mut out,
                id::SESSIONS,
                [
                    ("completed", Some(s.completed as f64)),
                    ("failed", Some(s.failed as f64)),
                    ("cut", Some(s.cut as f64)),
                    ("turns", Some(s.turns as f64)),
                ],
            );
        }
        out.extend(
            self.session_throughput
                .map(|v| Measurement::value(id::SESSION_THROUGHPUT, v)),
        );
        if let Some(h) = &self.head_of_line {
            push_stats(
                &mut out,
                id::HEAD_OF_LINE_TTFT_MS,
                [
                    ("behind", h.behind_ttft_ms_mean),
                    ("clear", h.clear_ttft_ms_mean),
                ],
            );
            out.push(Measurement::value(id::HEAD_OF_LINE_SHARE, h.behind_share));
        }
        if let Some(r) = &self.refusals {
            out.push(Measurement::value(id::REFUSED_SHARE, r.refused_share));
            if r.refused > 0 {
                out.push(Measurement::value(
                    id::RETRY_AFTER_SHARE,
                    r.with_retry_after as f64 / r.refused as f64,
                ));
            }
            out.push(Measurement::value(
                id::ATTEMPTS_PER_REQUEST,
                r.attempts as f64 / r.requests.max(1) as f64,
            ));
        }
        for (metric, d) in [
            (id::SESSION_DURATION_S, &self.session_duration_s),
            (id::FIRST_TURN_TTFT_MS, &self.first_turn_ttft_ms),
            (id::LATER_TURN_TTFT_MS, &self.later_turn_ttft_ms),
            (id::SHORT_TTFT_MS, &self.short_ttft_ms),
            (id::LONG_TTFT_MS, &self.long_ttft_ms),
        ] {
            if let Some(d) = d {
                d.push_to(&mut out, metric);
            }
        }
        for (source, n) in &self.output_tokens_source {
            out.push(Measurement::stat(
                id::OUTPUT_TOKENS_SOURCE,
                source.as_ref(),
                *n as f64,
            ));
        }
        out.push(Measurement::value(
            id::TOKEN_COUNT_DISAGREEMENTS,
            self.token_count_disagreements as f64,
        ));
        for (metric, v) in [
            (
                id::COST_PER_1M_OUTPUT_TOKENS,
                self.cost_per_1m_output_tokens,
            ),
            (id::COST_PER_1K_REQUESTS, self.cost_per_1k_requests),
            (
                id::ENERGY_J_PER_OUTPUT_TOKEN,
                self.energy_j_per_output_token,
            ),
        ] {
            out.extend(v.map(|v| Measurement::value(metric, v)));
        }
        if let Some(s) = &self.server {
            out.extend(s.measurements());
        }
        out
    }
}

impl Distribution {
    /// Summarises `xs` (NaNs dropped); `None` when there are no samples.
    pub fn of(mut xs: Vec<f64>) -> Option<Distribution> {
        xs.retain(|x| x.is_finite());
        if xs.is_empty() {
            return None;
        }
        xs.sort_by(f64::total_cmp);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let p = |q: f64| yardstick_stats::percentile::percentile_sorted(&xs, q / 100.0);
        Some(Distribution {
            count: xs.len(),
            mean,
            p50: p(50.0),
            p90: p(90.0),
            p95: p(95.0),
            p99: p(99.0),
            min: xs[0],
            max: xs[xs.len() - 1],
        })
    }
}

/// Service-level objectives a request must meet to count toward goodput.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Slo {
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Time per output token, ms.
    pub tpot_ms: Option<f64>,
    /// End-to-end latency, ms.
    pub e2e_ms: Option<f64>,
    /// Objectives of single models of a mix (`--model-slo`): each bound set there replaces the
    /// point's for that model's requests; bounds it leaves unset are the point's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_model: BTreeMap<String, SloBounds>,
}

/// The bounds of one model's objectives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SloBounds {
    /// Time to first token, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Time per output token, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// End-to-end latency, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
}

impl SloBounds {
    fn is_set(&self) -> bool {
        self.ttft_ms.is_some() || self.tpot_ms.is_some() || self.e2e_ms.is_some()
    }

    /// Parses `NAME:ttft=MS[,tpot=MS][,e2e=MS]` (`--model-slo`): the model and its bounds.
    pub fn parse_for_model(s: &str) -> Result<(String, SloBounds), String> {
        let (name, bounds) = s
            .rsplit_once(':')
            .filter(|(n, _)| !n.trim().is_empty())
            .ok_or_else(|| format!("`{s}`: expected MODEL:ttft=MS[,tpot=MS][,e2e=MS]"))?;
        let mut b = SloBounds::default();
        for part in bounds.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected ttft=MS, tpot=MS or e2e=MS"))?;
            let v: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| *v > 0.0 && v.is_finite())
                .ok_or_else(|| format!("`{part}`: a bound is a positive number of milliseconds"))?;
            let slot = match k.trim() {
                "ttft" => &mut b.ttft_ms,
                "tpot" => &mut b.tpot_ms,
                "e2e" => &mut b.e2e_ms,
                other => {
                    return Err(format!("`{other}` is not an objective (ttft, tpot or e2e)"));
                }
            };
            if slot.replace(v).is_some() {
                return Err(format!("`{}` is given twice in `{s}`", k.trim()));
            }
        }
        if !b.is_set() {
            return Err(format!("`{s}` sets no bound"));
        }
        Ok((name.trim().to_string(), b))
    }
}

impl Slo {
    /// Whether any objective is set (the point's, or a model's).
    pub fn is_set(&self) -> bool {
        self.ttft_ms.is_some()
            || self.tpot_ms.is_some()
            || self.e2e_ms.is_some()
            || self.per_model.values().any(SloBounds::is_set)
    }

    /// The bounds requests to `model` must meet: the model's own where it sets them, else the
    /// point's.
    pub fn for_model(&self, model: Option<&str>) -> SloBounds {
        let own = model
            .and_then(|m| self.per_model.get(m))
            .copied()
            .unwrap_or_default();
        SloBounds {
            ttft_ms: own.ttft_ms.or(self.ttft_ms),
            tpot_ms: own.tpot_ms.or(self.tpot_ms),
            e2e_ms: own.e2e_ms.or(self.e2e_ms),
        }
    }

    /// Whether a successful request meets every objective of its model (a metric that is
    /// undefined for the request, e.g. TPOT of a one-token answer, does not fail it).
    pub fn met_by(&self, r: &RequestRecord) -> bool {
        let ok = |limit: Option<f64>, v: Option<f64>| match (limit, v) {
            (Some(l), Some(v)) => v <= l,
            _ => true,
        };
        let b = self.for_model(r.model.as_deref());
        r.ok()
            && ok(b.ttft_ms, r.ttft_ms())
            && ok(b.tpot_ms, r.tpot_ms())
            && ok(b.e2e_ms, r.e2e_ms())
    }
}

/// A serving deployment's price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CostModel {
    /// Dollars per accelerator-hour.
    pub per_accelerator_hour: f64,
    /// Accelerators the deployment uses.
    pub accelerators: u32,
}

impl CostModel {
    /// Dollars per second of the whole deployment.
    pub fn dollars_per_s(&self) -> f64 {
        self.per_accelerator_hour * f64::from(self.accelerators) / 3600.0
    }

    /// Dollars per million output tokens at `tokens_per_s`, and per thousand requests at
    /// `requests_per_s` (none at a zero rate).
    pub fn of(&self, tokens_per_s: f64, requests_per_s: f64) -> (Option<f64>, Option<f64>) {
        let per = |rate: f64, unit: f64| (rate > 0.0).then(|| self.dollars_per_s() / rate * unit);
        (per(tokens_per_s, 1e6), per(requests_per_s, 1e3))
    }
}

impl PointSummary {
    /// Prices the point with `c`: dollars per million output tokens and per thousand requests
    /// at its throughputs (one process's point or shards merged into one).
    pub fn price(&mut self, c: &CostModel) {
        let (tok, req) = c.of(self.output_token_throughput, self.request_throughput);
        self.cost_per_1m_output_tokens = tok;
        self.cost_per_1k_requests = req;
    }
}

/// Beyond this p99 of the time requests waited in the client before being sent (ms), with
/// nothing capping the requests in flight, the client is the bottleneck.
pub const CLIENT_LAG_MS: f64 = 10.0;

/// The warning for a point whose requests waited `p99_ms` (p99) in the client before being sent,
/// when nothing capped the requests in flight (`capped`: a `max_in_flight` makes the wait part
/// of the load model).
pub fn client_lag_warning(p99_ms: f64, capped: bool) -> Option<String> {
    (!capped && p99_ms > CLIENT_LAG_MS).then(|| {
        format!(
            "the client fell behind its schedule: p99 of the time requests waited in the \
             client before being sent is {p99_ms:.1} ms (over {CLIENT_LAG_MS} ms), so the \
             latencies include the load generator's own delay; give it more cores \
             (--workers), or split the load over several clients (--shard)"
        )
    })
}

/// A request sent more than this long after its due time (ms) counts as late in
/// [`ScheduleLateness::late`].
pub const LATE_MS: f64 = 10.0;

/// The floor of the lateness threshold, ms: below it, scheduling jitter is not worth a warning.
pub const LATENESS_FLOOR_MS: f64 = 1.0;

/// The share of the median gap between due times that the p99 lateness may reach.
pub const LATENESS_GAP_SHARE: f64 = 0.05;

/// Schedule fidelity of an open-loop point (a rate or a replayed trace): how late each measured
/// request was sent, actual send time − due time, in milliseconds. Closed loops have no
/// schedule and no such block.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ScheduleLateness {
    /// Requests sent (measured ones).
    pub count: usize,
    /// Median lateness.
    pub p50: f64,
    /// 99th percentile of the lateness.
    pub p99: f64,
    /// Largest lateness.
    pub max: f64,
    /// Requests sent more than [`LATE_MS`] (10 ms) after their due time.
    pub late: u64,
    /// The median gap between consecutive due times (`null` with fewer than two requests).
    pub median_gap_ms: Option<f64>,
    /// The p99 lateness beyond which the point warns: [`LATENESS_GAP_SHARE`] (5 %) of the
    /// median gap, clamped to [[`LATENESS_FLOOR_MS`], [`LATE_MS`]] (1..10 ms).
    pub threshold_ms: f64,
}

/// A replayed trace, as a point's summary describes it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TraceInfo {
    /// The trace file's name.
    pub file: String,
    /// Its format.
    pub format: String,
    /// Its requests (after the window).
    pub requests: u64,
    /// First to last arrival as recorded, seconds.
    pub span_s: f64,
    /// The replay's speed-up.
    pub speedup: f64,
    /// The share of prompt tokens a prefix cache keeping every block could serve, from the
    /// trace's hash ids (`null` without them): an upper bound for `prompt_cache_hit_rate`.
    pub theoretical_prefix_hit_rate: Option<f64>,
}

impl TraceInfo {
    /// The description of `trace` replayed at `speedup`.
    pub fn of(trace: &crate::trace::Trace, speedup: f64) -> TraceInfo {
        TraceInfo {
            file: trace
                .file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            format: trace.format.as_str().to_string(),
            requests: trace.requests.len() as u64,
            span_s: trace.span_s(),
            speedup,
            theoretical_prefix_hit_rate: trace.prefix_hit_rate(None),
        }
    }
}

/// The p99 lateness beyond which a point did not keep its schedule: 5 % of the median gap
/// between due times, at least 1 ms and at most 10 ms (10 ms without a gap).
pub fn lateness_threshold_ms(median_gap_ms: Option<f64>) -> f64 {
    match median_gap_ms {
        Some(g) if g.is_finite() => (LATENESS_GAP_SHARE * g).clamp(LATENESS_FLOOR_MS, LATE_MS),
        _ => LATE_MS,
    }
}

impl ScheduleLateness {
    /// The lateness of requests given as (due, sent) in nanoseconds of one clock; `None`
    /// without any. A request sent early (never, by the dispatcher) counts as 0.
    pub fn of(due_sent: &[(u64, u64)]) -> Option<ScheduleLateness> {
        if due_sent.is_empty() {
            return None;
        }
        let mut late: Vec<f64> = due_sent
            .iter()
            .map(|&(due, sent)| sent.saturating_sub(due) as f64 / 1e6)
            .collect();
        late.sort_by(f64::total_cmp);
        let p = |q: f64| yardstick_stats::percentile::percentile_sorted(&late, q);
        let mut due: Vec<u64> = due_sent.iter().map(|&(d, _)| d).collect();
        due.sort_unstable();
        let mut gaps: Vec<f64> = due.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e6).collect();
        gaps.sort_by(f64::total_cmp);
        let median_gap_ms =
            (!gaps.is_empty()).then(|| yardstick_stats::percentile::percentile_sorted(&gaps, 0.5));
        Some(ScheduleLateness {
            count: late.len(),
            p50: p(0.5),
            p99: p(0.99),
            max: late[late.len() - 1],
            late: late.iter().filter(|&&x| x > LATE_MS).count() as u64,
            median_gap_ms,
            threshold_ms: lateness_threshold_ms(median_gap_ms),
        })
    }

    /// The warning for a client that did not keep its schedule: p99 lateness beyond
    /// [`ScheduleLateness::threshold_ms`].
    pub fn warning(&self) -> Option<String> {
        (self.p99 > self.threshold_ms).then(|| {
            format!(
                "the client did not keep the schedule: p99 lateness {:.2} ms is over {:.2} ms                  (5 % of the median gap between due times{}, within 1..10 ms); {} of {}                  requests were sent more than {LATE_MS} ms late, and every latency counts from                  the due time, so it includes this delay; give the client more cores                  (--workers), split the load (--shard), or lift a --max-in-flight cap",
                self.p99,
                self.threshold_ms,
                self.median_gap_ms
                    .map(|g| format!(", {g:.2} ms"))
                    .unwrap_or_default(),
                self.late,
                self.count,
            )
        })
    }
}

/// Beyond this share of an open-loop point's duration spent draining (the last responses after
/// the last send), its throughput says more about its length than about the rate.
pub const DRAIN_SHARE: f64 = 0.2;

/// The warning for an open-loop point of `requests` measured requests over `duration_s` at the
/// offered rate `load.value`: sending them takes `requests / rate` seconds; when the rest of
/// the duration (the drain) exceeds [`DRAIN_SHARE`] of it, the measured throughput is well
/// below the rate (a `--rate 20` point of 40 requests: 2 s of sending, about 1 s of drain,
/// 12.5 req/s). Says how many requests would make the drain 5 % of the point.
pub fn short_point_warning(load: &LoadLevel, requests: u64, duration_s: f64) -> Option<String> {
    let rate = load.value;
    if load.mode != "rate" || rate <= 0.0 || requests == 0 || duration_s <= 0.0 {
        return None;
    }
    let sending = requests as f64 / rate;
    let drain = duration_s - sending;
    if drain <= DRAIN_SHARE * duration_s {
        return None;
    }
    let enough = (drain * 19.0 * rate - 1e-9).ceil() as u64;
    Some(format!(
        "the point is too short to reach its rate: {requests} requests take {sending:.2} s to \
         send at {rate} req/s, and the last responses took {drain:.2} s more ({:.0} % of the \
         point), so its throughput ({:.3} req/s) counts that drain; for a steady-state figure \
         measure about {enough} requests or more (--max-requests, stop.maxRequests)",
        drain / duration_s * 100.0,
        requests as f64 / duration_s,
    ))
}

/// The load level of a point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct LoadLevel {
    /// `concurrency` or `rate`.
    pub mode: Cow<'static, str>,
    /// Concurrent requests, or requests per second (a whole number prints as one: `256`).
    #[serde(serialize_with = "whole_as_integer")]
    pub value: f64,
    /// Arrival process of a rate (`constant`, `poisson`, `gamma`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
}

/// A whole number as a JSON integer (`256`, not `256.0`); anything else as a float.
fn whole_as_integer<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

/// Request counts of a point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RequestCounts {
    /// Measured requests that succeeded.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Warm-up requests (excluded from every metric).
    pub warmup: u64,
    /// Failed measured requests by error class.
    pub errors: BTreeMap<Cow<'static, str>, u64>,
}

/// Everything reported for one (scenario, load level) point.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointSummary {
    /// The traffic scenario as written.
    pub scenario: String,
    /// The load level.
    pub load: LoadLevel,
    /// Request counts.
    pub requests: RequestCounts,
    /// First scheduled send → last response completed, among measured requests.
    pub duration_s: f64,
    /// Completed requests per second.
    pub request_throughput: f64,
    /// Output tokens of completed requests per second.
    pub output_token_throughput: f64,
    /// Prompt tokens of completed requests per second.
    pub input_token_throughput: f64,
    /// Requests per second meeting every SLO (`null` when no SLO is set).
    pub goodput: Option<f64>,
    /// Time to first token.
    pub ttft_ms: Option<Distribution>,
    /// Time per output token.
    pub tpot_ms: Option<Distribution>,
    /// Inter-token latency: every gap between content events.
    pub itl_ms: Option<Distribution>,
    /// End-to-end latency.
    pub e2e_ms: Option<Distribution>,
    /// Send − scheduled.
    pub client_queue_ms: Option<Distribution>,
    /// Time to the first answer token, after any reasoning (present when the model reasoned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_ttft_ms: Option<Distribution>,
    /// Reasoning tokens per completed request (present when the model reasoned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<Distribution>,
    /// Prompt tokens served from the server's prefix cache over all prompt tokens, by the
    /// responses' `usage.prompt_tokens_details.cached_tokens` (present when the server says).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_hit_rate: Option<f64>,
    /// Session counts (a session workload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionCounts>,
    /// Completed sessions per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_throughput: Option<f64>,
    /// Duration of completed sessions, first scheduled send to last completion, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_duration_s: Option<Distribution>,
    /// TTFT of first turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_turn_ttft_ms: Option<Distribution>,
    /// TTFT of later turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub later_turn_ttft_ms: Option<Distribution>,
    /// Per turn index: requests, TTFT and prompt sizes (a session workload).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnStats>,
    /// Completed requests by the source of their output token count.
    pub output_tokens_source: BTreeMap<Cow<'static, str>, u64>,
    /// Completed requests whose server-reported output tokens differ by more than 10 % from the
    /// local count (tokenizer when configured, else content events).
    pub token_count_disagreements: u64,
    /// Why the point stopped.
    pub stop_reason: StopReason,
    /// Unix-epoch nanoseconds of the point's schedule origin (an open loop's offset 0; a
    /// closed loop's start). Shards of one plan started together share it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_origin_ns: Option<u64>,
    /// This process's part of a sharded point (`--shard i/N`); absent for whole points and
    /// merged ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Set when the client itself fell behind its schedule: requests waited in the client
    /// before being sent (`client_queue_ms` p99 beyond [`CLIENT_LAG_MS`]) though nothing capped
    /// the requests in flight, so the latencies include the load generator's own delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_bottleneck: Option<String>,
    /// The replayed trace (a `trace` point): what it holds, as `bench serve --trace` prints
    /// before sending; it describes the point's input, not a measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceInfo>,
    /// Schedule fidelity of an open-loop point (rate or trace): actual send − due time of each
    /// measured request; absent for closed loops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_lateness_ms: Option<ScheduleLateness>,
    /// Set when an open-loop point's client did not keep its schedule (p99 lateness beyond
    /// [`ScheduleLateness::threshold_ms`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_warning: Option<String>,
    /// Set when an open-loop point was too short to reach its rate: the responses still
    /// arriving after the last send (the drain) are a large share of its duration, so its
    /// throughput is below the offered rate ([`short_point_warning`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_point: Option<String>,
    /// Dollars per million output tokens at this point's throughput (with a cost model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_1m_output_tokens: Option<f64>,
    /// Dollars per thousand completed requests (with a cost model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_1k_requests: Option<f64>,
    /// Joules per output token over the point, from accelerators' counters (NVML) or the CPU's
    /// RAPL counters (`energy_source`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j_per_output_token: Option<f64>,
    /// Where the energy was measured: `nvml` (the accelerators of this machine) or `rapl` (its
    /// CPU packages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_source: Option<Cow<'static, str>>,
    /// Why there is no energy figure, when one was asked for and there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_unavailable: Option<String>,
    /// What the server's Prometheus endpoint said during the point (`--server-metrics`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::scrape::ServerMetrics>,
    /// Every scrape of the point, for storing as a series (not part of the summary's JSON).
    #[serde(skip)]
    #[schemars(skip)]
    pub server_series: Vec<crate::scrape::Reading>,
    /// The first error message seen, if any.
    pub first_error: Option<String>,
    /// Each model's part of the point, when the run mixed models (`--model NAME=WEIGHT`,
    /// repeated): computed from the same records as the whole, by the same functions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_model: BTreeMap<String, ModelSummary>,
    /// Each request kind's part, when the run mixed kinds (`--kind`): how many were answered
    /// and, for the structured kinds, how many answers were valid.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_kind: BTreeMap<crate::kinds::Kind, KindSummary>,
    /// Each class of a mixed scenario (`0.8*D(64,16) + 0.2*D(2048,16)`) on its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_class: Vec<ClassPart>,
    /// TTFT of the mix's class with the shortest prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_ttft_ms: Option<Distribution>,
    /// TTFT of the mix's class with the longest prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_ttft_ms: Option<Distribution>,
    /// Whether the mix's short requests waited behind long ones ([`HeadOfLine`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_of_line: Option<HeadOfLine>,
    /// Attempts the server turned away (429, 503), whether it said when to come back, and what
    /// retrying did; absent when nothing was turned away or retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusals: Option<Refusals>,
    /// Valid answers over checked answers of every structured kind (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_rate: Option<f64>,
    /// Correct answers of the eval items mixed into the load (`--eval-mix`), overall and per
    /// task, with Wilson intervals: accuracy at this load. Its headline figures are also at
    /// the top of the point as the catalogued `accuracy`, `accuracy_ci` and `correct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_mix: Option<Accuracy>,
    /// Correct answers over completed eval items (`eval_mix.accuracy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// The Wilson 95 % interval of `accuracy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy_ci: Option<LoHi>,
    /// Correct answers of the eval items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<u64>,
    /// Requests per second that met every SLO and whose answer was valid and, for an eval item,
    /// correct (plain text counts as valid); absent without a structured kind or eval items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_goodput: Option<f64>,
    /// Mean bytes of images per measured request (PNG, before base64's third more), when the
    /// run sent images (`--image`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_bytes_per_request: Option<f64>,
    /// The server's count of the point's first prompts at its tokenize endpoint beside the
    /// plan's, where it has one ([`crate::tokcount`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_check: Option<crate::tokcount::PromptTokenCheck>,
}

/// The ends of an interval.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct LoHi {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// Accuracy of the eval items of a point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Accuracy {
    /// Completed eval items (failed requests are errors, not wrong answers).
    pub completed: u64,
    /// Of them, the correct ones.
    pub correct: u64,
    /// `correct / completed`.
    pub accuracy: f64,
    /// The Wilson 95 % interval of `accuracy`.
    pub ci95: [f64; 2],
    /// Eval items that failed (HTTP errors, timeouts): not counted in `completed`.
    pub failed: u64,
    /// Each task's part.
    pub per_task: BTreeMap<String, TaskAccuracy>,
}

/// One eval task's part of a point's accuracy.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TaskAccuracy {
    /// Completed items of the task.
    pub completed: u64,
    /// Of them, the correct ones.
    pub correct: u64,
    /// `correct / completed`.
    pub accuracy: f64,
    /// The Wilson 95 % interval of `accuracy`.
    pub ci95: [f64; 2],
    /// Why the first wrong answer was wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_wrong: Option<String>,
}

impl Accuracy {
    /// The accuracy of the measured eval items among `records` (`None` without any completed).
    fn of(records: &[RequestRecord]) -> Option<Accuracy> {
        use crate::kinds::Kind;
        let evals: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| !r.warmup && r.kind == Some(Kind::Eval))
            .collect();
        let ok: Vec<&RequestRecord> = evals.iter().copied().filter(|r| r.ok()).collect();
        let completed = ok.len() as u64;
        if completed == 0 {
            return None;
        }
        let wilson = |c: u64, n: u64| yardstick_stats::proportion::wilson(c, n, 0.95);
        let correct = ok.iter().filter(|r| r.valid == Some(true)).count() as u64;
        let mut by_task: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
        for r in &ok {
            by_task
                .entry(r.eval_task.as_deref().unwrap_or(""))
                .or_default()
                .push(r);
        }
        let per_task = by_task
            .into_iter()
            .map(|(task, rs)| {
                let n = rs.len() as u64;
                let c = rs.iter().filter(|r| r.valid == Some(true)).count() as u64;
                let first_wrong = rs
                    .iter()
                    .filter(|r| r.valid == Some(false))
                    .min_by_key(|r| r.done_ns)
                    .and_then(|r| r.invalid_reason.clone());
                (
                    task.to_string(),
                    TaskAccuracy {
                        completed: n,
                        correct: c,
                        accuracy: c as f64 / n as f64,
                        ci95: wilson(c, n),
                        first_wrong,
                    },
                )
            })
            .collect();
        Some(Accuracy {
            completed,
            correct,
            accuracy: correct as f64 / completed as f64,
            ci95: wilson(correct, completed),
            failed: evals.len() as u64 - completed,
            per_task,
        })
    }
}

/// One request kind's part of a point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct KindSummary {
    /// Measured requests of the kind (completed and failed).
    pub requests: u64,
    /// Of them, the completed ones.
    pub completed: u64,
    /// Completed ones whose answer was valid (`null` for plain text, which is not checked).
    pub valid: Option<u64>,
    /// `valid / completed`.
    pub valid_rate: Option<f64>,
    /// The Wilson 95 % interval of `valid_rate`.
    pub valid_rate_ci95: Option<[f64; 2]>,
    /// Time to first token (the first piece of a tool call counts).
    pub ttft_ms: Option<P50P99>,
    /// Median end-to-end latency.
    pub e2e_ms_p50: Option<f64>,
    /// Median output tokens of completed requests.
    pub output_tokens_p50: Option<f64>,
    /// Why the first invalid answer was invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_invalid: Option<String>,
}

impl KindSummary {
    fn of(records: &[&RequestRecord], checked: bool) -> Self {
        let measured: Vec<&RequestRecord> = records.iter().copied().filter(|r| !r.warmup).collect();
        let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.ok()).collect();
        let completed = ok.len() as u64;
        let valid = checked.then(|| ok.iter().filter(|r| r.valid == Some(true)).count() as u64);
        let dist = |f: &dyn Fn(&RequestRecord) -> Option<f64>| {
            Distribution::of(ok.iter().filter_map(|r| f(r)).collect())
        };
        KindSummary {
            requests: measured.len() as u64,
            completed,
            valid,
            valid_rate: valid
                .filter(|_| completed > 0)
                .map(|v| v as f64 / completed as f64),
            valid_rate_ci95: valid
                .filter(|_| completed > 0)
                .map(|v| yardstick_stats::proportion::wilson(v, completed, 0.95)),
            ttft_ms: dist(&RequestRecord::ttft_ms).map(|d| P50P99 {
                p50: d.p50,
                p99: d.p99,
            }),
            e2e_ms_p50: dist(&RequestRecord::e2e_ms).map(|d| d.p50),
            output_tokens_p50: dist(&|r| r.output_tokens.map(|n| n as f64)).map(|d| d.p50),
            first_invalid: ok
                .iter()
                .filter(|r| r.valid == Some(false))
                .min_by_key(|r| r.done_ns)
                .and_then(|r| r.invalid_reason.clone()),
        }
    }
}

/// Median and 99th percentile of a latency, ms.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct P50P99 {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// One model's part of a point that mixed models.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ModelSummary {
    /// Measured requests sent to the model (completed and failed).
    pub requests: u64,
    /// Of them, the completed ones.
    pub completed: u64,
    /// Time to first token.
    pub ttft_ms: Option<P50P99>,
    /// Median inter-token latency.
    pub itl_ms_p50: Option<f64>,
    /// Median time per output token.
    pub tpot_ms_p50: Option<f64>,
    /// Median end-to-end latency.
    pub e2e_ms_p50: Option<f64>,
    /// The model's output tokens per second of the whole point's duration (the models' add
    /// up to the point's).
    pub output_token_throughput: f64,
    /// Share of the model's measured requests that met every SLO (`null` without an SLO).
    pub slo_attainment: Option<f64>,
    /// The objectives its requests had to meet, when the model has its own (`--model-slo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloBounds>,
}

impl ModelSummary {
    /// The model's figures from the summary of its requests alone (`part`), the whole point's
    /// duration and the SLO.
    fn of(
        part: &PointSummary,
        records: &[&RequestRecord],
        duration_s: f64,
        slo: &Slo,
        name: &str,
    ) -> Self {
        let measured: Vec<&&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
        let out_tokens: u64 = measured
            .iter()
            .filter(|r| r.ok())
            .filter_map(|r| r.output_tokens)
            .sum();
        let requests = part.requests.completed + part.requests.failed;
        ModelSummary {
            requests,
            completed: part.requests.completed,
            ttft_ms: part.ttft_ms.as_ref().map(|d| P50P99 {
                p50: d.p50,
                p99: d.p99,
            }),
            itl_ms_p50: part.itl_ms.as_ref().map(|d| d.p50),
            tpot_ms_p50: part.tpot_ms.as_ref().map(|d| d.p50),
            e2e_ms_p50: part.e2e_ms.as_ref().map(|d| d.p50),
            output_token_throughput: if duration_s > 0.0 {
                out_tokens as f64 / duration_s
            } else {
                0.0
            },
            slo_attainment: (slo.is_set() && requests > 0).then(|| {
                measured.iter().filter(|r| slo.met_by(r)).count() as f64 / requests as f64
            }),
            slo: slo
                .per_model
                .contains_key(name)
                .then(|| slo.for_model(Some(name))),
        }
    }
}

/// Sessions of a point (measured ones).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct SessionCounts {
    /// Sessions whose every turn was answered.
    pub completed: u64,
    /// Sessions with a failed turn (the turns after it were not sent).
    pub failed: u64,
    /// Sessions cut short by the end of the point (time budget, interruption).
    pub cut: u64,
    /// Turns sent in all.
    pub turns: u64,
}

/// One turn index of a session workload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct TurnStats {
    /// The turn, from 1.
    pub turn: u32,
    /// Completed requests at this turn.
    pub requests: u64,
    /// Median time to first token, ms.
    pub ttft_ms_p50: Option<f64>,
    /// 99th percentile of the time to first token, ms.
    pub ttft_ms_p99: Option<f64>,
    /// Mean prompt tokens (the conversation so far).
    pub prompt_tokens_mean: f64,
    /// Prompt tokens served from the prefix cache over prompt tokens, when the server says.
    pub prompt_cache_hit_rate: Option<f64>,
}

/// The turns shown per turn index at most (later turns are summed into the session facts
/// only).
pub const MAX_TURN_ROWS: u32 = 64;

/// Prompt-cache hits over prompt tokens of `recs` that report cached tokens.
fn cache_rate<'a>(recs: impl Iterator<Item = &'a &'a RequestRecord>) -> Option<f64> {
    let (mut hit, mut all) = (0u64, 0u64);
    for r in recs {
        if let (Some(c), Some(p)) = (r.cached_prompt_tokens, r.prompt_tokens) {
            hit += c;
            all += p;
        }
    }
    (all > 0).then(|| hit as f64 / all as f64)
}

struct SessionPart {
    counts: SessionCounts,
    duration: Option<Distribution>,
    first: Option<Distribution>,
    later: Option<Distribution>,
    turns: Vec<TurnStats>,
}

fn sessions_of(measured: &[&RequestRecord], ok: &[&RequestRecord]) -> Option<SessionPart> {
    let mut by: BTreeMap<u64, Vec<&RequestRecord>> = BTreeMap::new();
    for r in measured {
        if let Some(s) = r.session {
            by.entry(s).or_default().push(r);
        }
    }
    if by.is_empty() {
        return None;
    }
    let mut counts = SessionCounts {
        completed: 0,
        failed: 0,
        cut: 0,
        turns: 0,
    };
    let mut durations = Vec::new();
    for recs in by.values() {
        counts.turns += recs.len() as u64;
        let planned = recs
            .iter()
            .filter_map(|r| r.session_turns)
            .max()
            .unwrap_or(0);
        if recs.iter().any(|r| !r.ok()) {
            counts.failed += 1;
        } else if recs.len() as u32 >= planned {
            counts.completed += 1;
            let start = recs.iter().map(|r| r.scheduled_ns).min();
            let end = recs.iter().filter_map(|r| r.done_ns).max();
            if let (Some(s), Some(e)) = (start, end) {
                durations.push(e.saturating_sub(s) as f64 / 1e9);
            }
        } else {
            counts.cut += 1;
        }
    }
    let ttft = |f: &dyn Fn(u32) -> bool| {
        Distribution::of(
            ok.iter()
                .filter(|r| r.turn.is_some_and(f))
                .filter_map(|r| r.ttft_ms())
                .collect(),
        )
    };
    let last = ok.iter().filter_map(|r| r.turn).max().unwrap_or(0);
    let turns = (0..=last.min(MAX_TURN_ROWS - 1))
        .map(|t| {
            let at: Vec<&RequestRecord> =
                ok.iter().copied().filter(|r| r.turn == Some(t)).collect();
            let d = Distribution::of(at.iter().filter_map(|r| r.ttft_ms()).collect());
            let prompts: Vec<u64> = at
                .iter()
                .map(|r| r.prompt_tokens.unwrap_or(r.planned_input_tokens))
                .collect();
            TurnStats {
                turn: t + 1,
                requests: at.len() as u64,
                ttft_ms_p50: d.as_ref().map(|d| d.p50),
                ttft_ms_p99: d.as_ref().map(|d| d.p99),
                prompt_tokens_mean: if prompts.is_empty() {
                    0.0
                } else {
                    prompts.iter().sum::<u64>() as f64 / prompts.len() as f64
                },
                prompt_cache_hit_rate: cache_rate(at.iter()),
            }
        })
        .collect();
    Some(SessionPart {
        counts,
        duration: Distribution::of(durations),
        first: ttft(&|t| t == 0),
        later: ttft(&|t| t > 0),
        turns,
    })
}

/// One shard's part of a point.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct ShardInfo {
    /// `i` of `i/N`.
    pub index: u64,
    /// `N` of `i/N`.
    pub count: u64,
    /// Closed-loop streams this shard ran (its share of the point's concurrency); `null` for
    /// open-loop points.
    pub streams: Option<usize>,
}

/// Computes a point's summary from its raw records; when they were sent to more than one
/// model, also each model's part ([`PointSummary::per_model`]).
pub fn summarize(
    scenario: &str,
    load: LoadLevel,
    records: &[RequestRecord],
    slo: &Slo,
    stop_reason: StopReason,
) -> PointSummary {
    let all: Vec<&RequestRecord> = records.iter().collect();
    let mut whole = summarize_refs(scenario, load.clone(), &all, slo, stop_reason.clone());
    let mut by_model: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for r in records {
        if let Some(m) = &r.model {
            by_model.entry(m.as_str()).or_default().push(r);
        }
    }
    if by_model.len() > 1 {
        whole.per_model = by_model
            .into_iter()
            .map(|(name, recs)| {
                let part = summarize_refs(scenario, load.clone(), &recs, slo, stop_reason.clone());
                let m = ModelSummary::of(&part, &recs, whole.duration_s, slo, name);
                (name.to_string(), m)
            })
            .collect();
    }
    whole.refusals = Refusals::of(records);
    if let Ok(mix) = scenario.parse::<yardstick_spec::scenario::Scenario>()
        && let Some(parts) = mix.parts()
    {
        classes(&mut whole, parts, records);
    }
    let mut by_kind: BTreeMap<crate::kinds::Kind, Vec<&RequestRecord>> = BTreeMap::new();
    for r in records {
        if let Some(k) = r.kind {
            by_kind.entry(k).or_default().push(r);
        }
    }
    if !by_kind.is_empty() {
        use crate::kinds::Kind;
        whole.per_kind = by_kind
            .iter()
            .map(|(k, recs)| (*k, KindSummary::of(recs, *k != Kind::Text)))
            .collect();
        let (valid, checked) = whole
            .per_kind
            .iter()
            .filter(|(k, _)| **k != Kind::Eval)
            .filter_map(|(_, k)| k.valid.map(|v| (v, k.completed)))
            .fold((0, 0), |(a, b), (v, c)| (a + v, b + c));
        whole.valid_rate = (checked > 0).then(|| valid as f64 / checked as f64);
        whole.eval_mix = Accuracy::of(records);
        if let Some(a) = &whole.eval_mix {
            whole.accuracy = Some(a.accuracy);
            whole.accuracy_ci = Some(LoHi {
                lo: a.ci95[0],
                hi: a.ci95[1],
            });
            whole.correct = Some(a.correct);
        }
        if (whole.valid_rate.is_some() || whole.eval_mix.is_some()) && whole.duration_s > 0.0 {
            let good = records
                .iter()
                .filter(|r| !r.warmup && r.ok() && r.valid != Some(false))
                .filter(|r| !slo.is_set() || slo.met_by(r))
                .count();
            whole.quality_goodput = Some(good as f64 / whole.duration_s);
        }
    }
    whole
}

/// The statuses that count as the server turning a request away: too many requests, and
/// unavailable (what servers answer when their queue is full).
pub const REFUSAL_STATUSES: [u16; 2] = [429, 503];

/// Attempts the server turned away, over a point's measured requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Refusals {
    /// Measured requests.
    pub requests: u64,
    /// Attempts made, retries included.
    pub attempts: u64,
    /// Attempts answered 429 or 503.
    pub refused: u64,
    /// `refused / attempts`.
    pub refused_share: f64,
    /// Refusals that said when to come back (`Retry-After`).
    pub with_retry_after: u64,
    /// Mean `Retry-After` of those, seconds.
    pub retry_after_s_mean: Option<f64>,
    /// Requests tried again at least once.
    pub retried: u64,
    /// Of those, the ones answered in the end.
    pub served_after_retry: u64,
    /// Mean time spent waiting to retry, over the retried requests, ms.
    pub retry_wait_ms_mean: Option<f64>,
}

impl Refusals {
    /// From a point's records (warm-up excluded); `None` when nothing was refused or retried.
    pub fn of(records: &[RequestRecord]) -> Option<Refusals> {
        let measured = || records.iter().filter(|r| !r.warmup);
        let refusal = |s: Option<u16>| s.is_some_and(|s| REFUSAL_STATUSES.contains(&s));
        let mut r = Refusals {
            requests: 0,
            attempts: 0,
            refused: 0,
            refused_share: 0.0,
            with_retry_after: 0,
            retry_after_s_mean: None,
            retried: 0,
            served_after_retry: 0,
            retry_wait_ms_mean: None,
        };
        let (mut after, mut waits) = (Vec::new(), Vec::new());
        for rec in measured() {
            r.requests += 1;
            r.attempts += rec.attempts();
            let refused = rec
                .retries
                .iter()
                .filter(|t| refusal(Some(t.status)))
                .map(|t| t.retry_after_s)
                .chain(refusal(rec.status).then_some(rec.retry_after_s));
            for ra in refused {
                r.refused += 1;
                if let Some(s) = ra {
                    r.with_retry_after += 1;
                    after.push(s);
                }
            }
            if !rec.retries.is_empty() {
                r.retried += 1;
                r.served_after_retry += u64::from(rec.ok());
                waits.push(rec.retries.iter().map(|t| t.waited_ms).sum::<f64>());
            }
        }
        if r.refused == 0 && r.retried == 0 {
            return None;
        }
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        r.refused_share = r.refused as f64 / r.attempts.max(1) as f64;
        r.retry_after_s_mean = mean(&after);
        r.retry_wait_ms_mean = mean(&waits);
        Some(r)
    }
}

/// One class of a mixed scenario: its requests on their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassPart {
    /// Its index in the mix, from 0.
    pub class: u8,
    /// Its scenario (`D(64,16)`).
    pub scenario: String,
    /// Its share of the requests, normalised over the mix.
    pub share: f64,
    /// Measured requests that succeeded.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Time to first token.
    pub ttft_ms: Option<Distribution>,
    /// End-to-end latency.
    pub e2e_ms: Option<Distribution>,
}

/// Head-of-line blocking in a mix, from the client's timings alone: a request of the
/// shortest-prompt class is *behind* when, at its send, a request of the longest-prompt class
/// had been sent and had not yet received its first token (it was queued or in prefill).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HeadOfLine {
    /// Completed short requests sent behind a long one.
    pub behind: u64,
    /// Completed short requests sent with no long request waiting.
    pub clear: u64,
    /// Mean TTFT of those behind, ms.
    pub behind_ttft_ms_mean: Option<f64>,
    /// Mean TTFT of the others, ms.
    pub clear_ttft_ms_mean: Option<f64>,
    /// `behind / (behind + clear)`.
    pub behind_share: f64,
}

/// Fills a mixed scenario's classes, the short and long classes' TTFT and the head-of-line
/// evidence into `whole` from the point's records.
fn classes(
    whole: &mut PointSummary,
    parts: &[(f64, yardstick_spec::scenario::Scenario)],
    records: &[RequestRecord],
) {
    let total: f64 = parts.iter().map(|(w, _)| w).sum();
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let of = |k: u8| measured.iter().copied().filter(move |r| r.class == Some(k));
    whole.per_class = parts
        .iter()
        .enumerate()
        .map(|(k, (w, sc))| {
            let k = k as u8;
            let ok: Vec<&RequestRecord> = of(k).filter(|r| r.ok()).collect();
            ClassPart {
                class: k,
                scenario: sc.to_string(),
                share: w / total,
                completed: ok.len() as u64,
                failed: of(k).filter(|r| !r.ok()).count() as u64,
                ttft_ms: Distribution::of(ok.iter().filter_map(|r| r.ttft_ms()).collect()),
                e2e_ms: Distribution::of(ok.iter().filter_map(|r| r.e2e_ms()).collect()),
            }
        })
        .collect();
    let by_input = |a: &&(usize, &(f64, yardstick_spec::scenario::Scenario)),
                    b: &&(usize, &(f64, yardstick_spec::scenario::Scenario))| {
        a.1.1.mean_input().total_cmp(&b.1.1.mean_input())
    };
    let indexed: Vec<(usize, &(f64, yardstick_spec::scenario::Scenario))> =
        parts.iter().enumerate().collect();
    let (Some(short), Some(long)) = (
        indexed.iter().min_by(by_input).map(|p| p.0 as u8),
        indexed.iter().max_by(by_input).map(|p| p.0 as u8),
    ) else {
        return;
    };
    if parts[short as usize].1.mean_input() >= parts[long as usize].1.mean_input() {
        return;
    }
    whole.short_ttft_ms = whole.per_class[short as usize].ttft_ms.clone();
    whole.long_ttft_ms = whole.per_class[long as usize].ttft_ms.clone();
    // Every long request (warm-up ones too: they load the server as much) waits from its send
    // to its first token, or to its end when it got none.
    let mut waits: Vec<(u64, u64)> = records
        .iter()
        .filter(|r| r.class == Some(long))
        .filter_map(|r| Some((r.sent_ns?, r.first_content_ns.or(r.done_ns)?)))
        .collect();
    waits.sort_unstable();
    let mut reach = Vec::with_capacity(waits.len());
    let mut furthest = 0;
    for (_, end) in &waits {
        furthest = furthest.max(*end);
        reach.push(furthest);
    }
    let behind = |t: u64| {
        let n = waits.partition_point(|(start, _)| *start <= t);
        n > 0 && reach[n - 1] > t
    };
    let (mut b, mut c) = (Vec::new(), Vec::new());
    for r in of(short).filter(|r| r.ok()) {
        let (Some(sent), Some(ttft)) = (r.sent_ns, r.ttft_ms()) else {
            continue;
        };
        if behind(sent) { &mut b } else { &mut c }.push(ttft);
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    if b.len() + c.len() > 0 {
        whole.head_of_line = Some(HeadOfLine {
            behind: b.len() as u64,
            clear: c.len() as u64,
            behind_ttft_ms_mean: mean(&b),
            clear_ttft_ms_mean: mean(&c),
            behind_share: b.len() as f64 / (b.len() + c.len()) as f64,
        });
    }
}

fn summarize_refs(
    scenario: &str,
    load: LoadLevel,
    records: &[&RequestRecord],
    slo: &Slo,
    stop_reason: StopReason,
) -> PointSummary {
    let measured: Vec<&RequestRecord> = records.iter().copied().filter(|r| !r.warmup).collect();
    let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.ok()).collect();
    let mut errors = BTreeMap::new();
    for r in measured.iter().filter(|r| !r.ok()) {
        if let Some(e) = r.error {
            *errors.entry(Cow::Borrowed(e.name())).or_insert(0) += 1;
        }
    }
    let start = measured.iter().map(|r| r.scheduled_ns).min();
    let end = ok
        .iter()
        .filter_map(|r| r.done_ns)
        .max()
        .or_else(|| measured.iter().filter_map(|r| r.done_ns).max());
    let duration_s = match (start, end) {
        (Some(s), Some(e)) if e > s => (e - s) as f64 / 1e9,
        _ => 0.0,
    };
    let per_s = |x: f64| {
        if duration_s > 0.0 {
            x / duration_s
        } else {
            0.0
        }
    };
    let out_tokens: u64 = ok.iter().filter_map(|r| r.output_tokens).sum();
    let in_tokens: u64 = ok
        .iter()
        .map(|r| r.prompt_tokens.unwrap_or(r.planned_input_tokens))
        .sum();
    let goodput = slo
        .is_set()
        .then(|| per_s(ok.iter().filter(|r| slo.met_by(r)).count() as f64));
    let mut sources = BTreeMap::new();
    let mut disagreements = 0;
    for r in &ok {
        if let Some(s) = r.output_tokens_source {
            let name = match s {
                TokenSource::ServerUsage => "server_usage",
                TokenSource::Tokenizer => "tokenizer",
                TokenSource::ContentEvents => "content_events",
            };
            *sources.entry(Cow::Borrowed(name)).or_insert(0) += 1;
            let local = r
                .local_output_tokens
                .or(Some(r.content_events).filter(|&n| n > 0));
            if s == TokenSource::ServerUsage
                && let (Some(n), Some(local)) = (r.output_tokens, local)
            {
                let diff = (n as f64 - local as f64).abs();
                if diff > 0.1 * n as f64 {
                    disagreements += 1;
                }
            }
        }
    }
    let dist = |f: &dyn Fn(&RequestRecord) -> Option<f64>| {
        Distribution::of(ok.iter().filter_map(|r| f(r)).collect())
    };
    let reasoned = ok.iter().any(|r| r.reasoning_tokens.is_some_and(|n| n > 0));
    let sessions = sessions_of(&measured, &ok);
    let short_point = short_point_warning(&load, measured.len() as u64, duration_s);
    let open_loop = load.mode == "rate" || load.mode == "trace";
    let schedule_lateness_ms = if open_loop {
        let due_sent: Vec<(u64, u64)> = measured
            .iter()
            .filter_map(|r| r.sent_ns.map(|s| (r.scheduled_ns, s)))
            .collect();
        ScheduleLateness::of(&due_sent)
    } else {
        None
    };
    let schedule_warning = schedule_lateness_ms.as_ref().and_then(|l| l.warning());
    PointSummary {
        answer_ttft_ms: if reasoned {
            dist(&RequestRecord::answer_ttft_ms)
        } else {
            None
        },
        reasoning_tokens: if reasoned {
            Distribution::of(
                ok.iter()
                    .map(|r| r.reasoning_tokens.unwrap_or(0) as f64)
                    .collect(),
            )
        } else {
            None
        },
        prompt_cache_hit_rate: cache_rate(ok.iter()),
        session_throughput: sessions.as_ref().map(|s| per_s(s.counts.completed as f64)),
        session_duration_s: sessions.as_ref().and_then(|s| s.duration.clone()),
        first_turn_ttft_ms: sessions.as_ref().and_then(|s| s.first.clone()),
        later_turn_ttft_ms: sessions.as_ref().and_then(|s| s.later.clone()),
        turns: sessions
            .as_ref()
            .map(|s| s.turns.clone())
            .unwrap_or_default(),
        sessions: sessions.map(|s| s.counts),
        scenario: scenario.to_string(),
        load,
        requests: RequestCounts {
            completed: ok.len() as u64,
            failed: (measured.len() - ok.len()) as u64,
            warmup: (records.len() - measured.len()) as u64,
            errors,
        },
        duration_s,
        request_throughput: per_s(ok.len() as f64),
        output_token_throughput: per_s(out_tokens as f64),
        input_token_throughput: per_s(in_tokens as f64),
        goodput,
        ttft_ms: dist(&RequestRecord::ttft_ms),
        tpot_ms: dist(&RequestRecord::tpot_ms),
        itl_ms: Distribution::of(ok.iter().flat_map(|r| r.itl_ms()).collect()),
        e2e_ms: dist(&RequestRecord::e2e_ms),
        client_queue_ms: Distribution::of(
            measured
                .iter()
                .filter_map(|r| r.client_queue_ms())
                .collect(),
        ),
        output_tokens_source: sources,
        token_count_disagreements: disagreements,
        stop_reason,
        schedule_origin_ns: None,
        shard: None,
        client_bottleneck: None,
        trace: None,
        schedule_lateness_ms,
        schedule_warning,
        short_point,
        cost_per_1m_output_tokens: None,
        cost_per_1k_requests: None,
        energy_j_per_output_token: None,
        energy_source: None,
        energy_unavailable: None,
        server_series: Vec::new(),
        server: None,
        first_error: measured
            .iter()
            .filter(|r| !r.ok())
            .min_by_key(|r| r.done_ns)
            .and_then(|r| r.error_message.clone()),
        per_model: BTreeMap::new(),
        per_kind: BTreeMap::new(),
        per_class: Vec::new(),
        short_ttft_ms: None,
        long_ttft_ms: None,
        head_of_line: None,
        refusals: None,
        valid_rate: None,
        eval_mix: None,
        accuracy: None,
        accuracy_ci: None,
        correct: None,
        quality_goodput: None,
        prompt_token_check: None,
        image_bytes_per_request: {
            let b: Vec<u64> = measured.iter().filter_map(|r| r.image_bytes).collect();
            (!b.is_empty()).then(|| b.iter().sum::<u64>() as f64 / b.len() as f64)
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {

    #[test]
    fn cost_is_the_deployments_price_over_its_rates() {
        let c = super::CostModel {
            per_accelerator_hour: 2.48,
            accelerators: 8,
        };
        // 8 × $2.48 / 3600 s = $0.005511/s; at 1,000 tok/s: $5.51 per million tokens.
        let (tok, req) = c.of(1000.0, 4.0);
        assert!((tok.unwrap() - 2.48 * 8.0 / 3600.0 / 1000.0 * 1e6).abs() < 1e-9);
        assert!((req.unwrap() - 2.48 * 8.0 / 3600.0 / 4.0 * 1e3).abs() < 1e-9);
        assert_eq!(c.of(0.0, 0.0), (None, None));
    }

    /// Lateness is send − due per request; its threshold is 5 % of the median gap between due
    /// times within 1..10 ms; closed loops have no schedule block.
    #[test]
    fn schedule_lateness_is_send_minus_due() {
        use super::ScheduleLateness;
        assert!(ScheduleLateness::of(&[]).is_none());
        // Due every 100 ms; sent 0, 1, 2, .. 99 ms late, the last one 250 ms late.
        let ms = 1_000_000u64;
        let mut pairs: Vec<(u64, u64)> = (0..100u64)
            .map(|i| (i * 100 * ms, i * 100 * ms + i * ms))
            .collect();
        pairs[99].1 = 99 * 100 * ms + 250 * ms;
        let l = ScheduleLateness::of(&pairs).unwrap();
        assert_eq!(l.count, 100);
        assert!((l.p50 - 49.5).abs() < 1e-9, "{l:?}");
        assert!(l.p99 >= l.p50 && l.max >= l.p99, "{l:?}");
        assert_eq!(l.max, 250.0);
        // 11..=98 and the last: 89 requests over 10 ms.
        assert_eq!(l.late, 89);
        assert_eq!(l.median_gap_ms, Some(100.0));
        assert_eq!(l.threshold_ms, 5.0);
        assert!(l.warning().unwrap().contains("did not keep the schedule"));
        // A client on time: no warning; an early send counts as 0.
        let on_time: Vec<(u64, u64)> = (0..50u64)
            .map(|i| (i * 10 * ms, i * 10 * ms + 20_000))
            .collect();
        let l = ScheduleLateness::of(&on_time).unwrap();
        assert!((l.p99 - 0.02).abs() < 1e-9 && l.late == 0, "{l:?}");
        assert_eq!(l.threshold_ms, 1.0); // 5 % of 10 ms is 0.5 ms: the 1 ms floor
        assert!(l.warning().is_none());
        assert_eq!(ScheduleLateness::of(&[(5, 3)]).unwrap().max, 0.0);
        assert_eq!(super::lateness_threshold_ms(Some(1e6)), 10.0);
        assert_eq!(super::lateness_threshold_ms(None), 10.0);
        // In a summary: open loops (rate, trace) get the block, closed loops do not.
        let recs: Vec<crate::RequestRecord> = (0..4u64)
            .map(|i| {
                let mut r =
                    crate::RequestRecord::new(i, format!("r{i}"), false, 7, Some(3), i * 100 * ms);
                r.sent_ns = Some(i * 100 * ms + 30 * ms);
                r.done_ns = Some(i * 100 * ms + 60 * ms);
                r
            })
            .collect();
        let level = |mode: &'static str| super::LoadLevel {
            mode: mode.into(),
            value: 1.0,
            arrival: None,
        };
        let stop = super::StopReason::MaxRequests;
        for mode in ["rate", "trace"] {
            let s = super::summarize("x", level(mode), &recs, &Default::default(), stop.clone());
            let l = s.schedule_lateness_ms.as_ref().unwrap();
            assert_eq!((l.count, l.p50, l.late), (4, 30.0, 4), "{mode}");
            assert!(s.schedule_warning.is_some());
        }
        let s = super::summarize("x", level("concurrency"), &recs, &Default::default(), stop);
        assert!(s.schedule_lateness_ms.is_none() && s.schedule_warning.is_none());
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("schedule_lateness_ms").is_none());
    }

    #[test]
    fn the_client_is_called_the_bottleneck_only_when_it_lags_uncapped() {
        assert!(super::client_lag_warning(3.0, false).is_none());
        // Issue 39: a `--rate 20` point of 40 requests that took 3.2 s (2 s of sending, 1.2 s
        // of drain) is flagged with the requests that would make it steady; a long point and a
        // closed loop are not.
        let rate = |v: f64| super::LoadLevel {
            mode: "rate".into(),
            value: v,
            arrival: None,
        };
        let w = super::short_point_warning(&rate(20.0), 40, 3.2).unwrap();
        assert!(w.contains("too short to reach its rate"), "{w}");
        assert!(
            w.contains("12.500 req/s") && w.contains("about 456 requests"),
            "{w}"
        );
        assert!(super::short_point_warning(&rate(20.0), 400, 21.2).is_none());
        let closed = super::LoadLevel {
            mode: "concurrency".into(),
            value: 8.0,
            arrival: None,
        };
        assert!(super::short_point_warning(&closed, 40, 3.2).is_none());
        let w = super::client_lag_warning(25.0, false).unwrap();
        assert!(w.contains("25.0 ms") && w.contains("--shard"), "{w}");
        // A cap on requests in flight makes the wait part of the load model.
        assert!(super::client_lag_warning(250.0, true).is_none());
    }
    use super::*;
    use crate::record::ErrorClass;

    #[test]
    fn stop_reasons_read_back_as_written() {
        let unreachable = StopReason::TargetUnreachable("connection refused (os error 111)".into());
        for r in [
            StopReason::MaxRequests,
            StopReason::MaxDuration,
            StopReason::Interrupted,
            unreachable.clone(),
            StopReason::Shards(vec![StopReason::MaxRequests, StopReason::Interrupted]),
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(
                serde_json::from_str::<StopReason>(&json).unwrap(),
                r,
                "{json}"
            );
        }
        assert_eq!(
            serde_json::to_value(&unreachable).unwrap(),
            "target_unreachable: connection refused (os error 111)"
        );
        assert!("finished".parse::<StopReason>().is_err());
        assert!("max_requests, finished".parse::<StopReason>().is_err());
        // Shards that agree give their one reason; different ones are kept once each.
        let same = [StopReason::MaxDuration, StopReason::MaxDuration];
        assert_eq!(StopReason::of_shards(&same), StopReason::MaxDuration);
        let mixed = [
            StopReason::MaxRequests,
            unreachable.clone(),
            StopReason::MaxRequests,
        ];
        let merged = StopReason::of_shards(&mixed);
        assert_eq!(
            merged.to_string(),
            "max_requests, target_unreachable: connection refused (os error 111)"
        );
        assert!(merged.is_early() && merged.is_unreachable());
        assert!(!StopReason::MaxDuration.is_early());
        assert!(StopReason::Interrupted.is_early() && !StopReason::Interrupted.is_unreachable());
    }

    #[test]
    fn percentiles_match_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4, 10], [50, 90, 99]) == [3.0, 7.6, 9.76]
        let d = Distribution::of(vec![10.0, 2.0, 4.0, 1.0, 3.0]).unwrap();
        assert_eq!(d.p50, 3.0);
        assert!((d.p90 - 7.6).abs() < 1e-12);
        assert!((d.p99 - 9.76).abs() < 1e-12);
        assert_eq!((d.min, d.max, d.mean), (1.0, 10.0, 4.0));
        assert!(Distribution::of(vec![]).is_none());
    }

    /// A streamed record scheduled at `sched_ms`, its content events at `content_ms`.
    pub(crate) fn rec(i: u64, sched_ms: u64, content_ms: &[u64], tokens: u64) -> RequestRecord {
        let ms = |x: u64| x * 1_000_000;
        let mut r = RequestRecord::new(i, format!("r{i}"), false, 10, Some(tokens), ms(sched_ms));
        r.sent_ns = Some(ms(sched_ms) + 500_000);
        r.content_event_ns = content_ms.iter().map(|&c| ms(c)).collect();
        r.first_content_ns = r.content_event_ns.first().copied();
        r.last_content_ns = r.content_event_ns.last().copied();
        r.done_ns = r.last_content_ns;
        r.content_events = content_ms.len() as u64;
        r.output_tokens = Some(tokens);
        r.output_tokens_source = Some(TokenSource::ServerUsage);
        r
    }

    /// A mixed scenario reports each class, the short and long classes' TTFT, and which short
    /// requests were sent while a long one still waited for its first token.
    #[test]
    fn refusals_count_every_attempt_turned_away_and_what_retrying_bought() {
        use crate::record::Retry;
        let refused = |mut r: RequestRecord, after: Option<f64>| {
            r.status = Some(429);
            r.error = Some(ErrorClass::Http4xx);
            r.retry_after_s = after;
            r
        };
        let retried = |mut r: RequestRecord, n: usize| {
            r.retries = (0..n)
                .map(|_| Retry {
                    status: 429,
                    retry_after_s: Some(1.0),
                    waited_ms: 1000.0,
                })
                .collect();
            r
        };
        let all = vec![
            rec(0, 0, &[10, 20], 2),
            // Refused for good, once with Retry-After and once without.
            refused(rec(1, 10, &[], 0), Some(2.0)),
            refused(rec(2, 20, &[], 0), None),
            // Served after two refusals, and refused after one more (three attempts each).
            retried(rec(3, 30, &[2040, 2050], 2), 2),
            retried(refused(rec(4, 40, &[], 0), Some(1.0)), 2),
        ];
        let r = Refusals::of(&all).unwrap();
        assert_eq!((r.requests, r.attempts), (5, 9));
        // 2 final refusals + 4 retried + 1 final after retries.
        assert_eq!(r.refused, 7);
        assert!((r.refused_share - 7.0 / 9.0).abs() < 1e-12);
        assert_eq!(r.with_retry_after, 6);
        assert!((r.retry_after_s_mean.unwrap() - 7.0 / 6.0).abs() < 1e-12);
        assert_eq!((r.retried, r.served_after_retry), (2, 1));
        assert_eq!(r.retry_wait_ms_mean, Some(2000.0));
        let level = LoadLevel {
            mode: "rate".into(),
            value: 2.0,
            arrival: None,
        };
        let s = summarize(
            "D(10,2)",
            level,
            &all,
            &Slo::default(),
            StopReason::MaxRequests,
        );
        let m = s.measurements();
        let stat = |metric: &str| {
            m.iter()
                .find(|x| x.metric == metric && x.statistic == "value")
                .map(|x| x.value)
        };
        assert!((stat(id::REFUSED_SHARE).unwrap() - 7.0 / 9.0).abs() < 1e-12);
        assert!((stat(id::RETRY_AFTER_SHARE).unwrap() - 6.0 / 7.0).abs() < 1e-12);
        assert!((stat(id::ATTEMPTS_PER_REQUEST).unwrap() - 9.0 / 5.0).abs() < 1e-12);
        // Nothing refused, nothing retried: no section.
        assert!(Refusals::of(&all[..1]).is_none());
    }

    #[test]
    fn a_mix_reports_its_classes_and_head_of_line_waits() {
        let class = |mut r: RequestRecord, k: u8| {
            r.class = Some(k);
            r
        };
        // Long requests (class 1) wait from 0.5 to 300 ms and from 1000.5 to 1300 ms.
        let mut all = vec![
            class(rec(0, 0, &[300, 310], 2), 1),
            class(rec(1, 1000, &[1300, 1310], 2), 1),
        ];
        // Short ones (class 0): at 100 and 200 ms behind the first long one (TTFT 200 ms and
        // 100 ms), at 500 and 600 ms clear (TTFT 10 ms), at 1100 ms behind the second (190 ms).
        for (i, (at, first)) in [(100, 300), (200, 300), (500, 510), (600, 610), (1100, 1290)]
            .into_iter()
            .enumerate()
        {
            all.push(class(rec(i as u64 + 2, at, &[first, first + 5], 2), 0));
        }
        let level = LoadLevel {
            mode: "rate".into(),
            value: 2.0,
            arrival: None,
        };
        let s = summarize(
            "0.8*D(10,2)+0.2*D(1000,2)",
            level.clone(),
            &all,
            &Slo::default(),
            StopReason::MaxRequests,
        );
        assert_eq!(s.per_class.len(), 2);
        assert_eq!(s.per_class[0].scenario, "D(10,2)");
        assert!((s.per_class[1].share - 0.2).abs() < 1e-12);
        assert_eq!((s.per_class[0].completed, s.per_class[1].completed), (5, 2));
        assert_eq!(s.short_ttft_ms.as_ref().unwrap().count, 5);
        assert_eq!(s.long_ttft_ms.as_ref().unwrap().p50, 300.0);
        let h = s.head_of_line.clone().unwrap();
        assert_eq!((h.behind, h.clear), (3, 2));
        assert!((h.behind_ttft_ms_mean.unwrap() - (200.0 + 100.0 + 190.0) / 3.0).abs() < 1e-9);
        assert!((h.clear_ttft_ms_mean.unwrap() - 10.0).abs() < 1e-9);
        assert!((h.behind_share - 0.6).abs() < 1e-12);
        let m = s.measurements();
        let stat = |metric: &str, st: &str| {
            m.iter()
                .find(|x| x.metric == metric && x.statistic == st)
                .map(|x| x.value)
        };
        assert_eq!(stat(id::HEAD_OF_LINE_SHARE, "value"), Some(0.6));
        assert_eq!(stat(id::LONG_TTFT_MS, "p50"), Some(300.0));
        // A single scenario has none of it.
        let plain = summarize(
            "D(10,2)",
            level,
            &all,
            &Slo::default(),
            StopReason::MaxRequests,
        );
        assert!(plain.per_class.is_empty() && plain.head_of_line.is_none());
    }

    /// A point that mixed models reports each model from its own records, with the same
    /// figures the whole would have if it were only that model's; a single model has no
    /// per-model part.
    #[test]
    fn per_model_parts_are_the_whole_summary_of_each_models_records() {
        let with = |mut r: RequestRecord, m: &str| {
            r.model = Some(m.into());
            r
        };
        // base: TTFT 10 ms; lora: TTFT 50 ms (one fails); 4 tokens each, 10 ms apart.
        let base: Vec<RequestRecord> = (0..4)
            .map(|i| {
                with(
                    rec(
                        i,
                        i * 100,
                        &[i * 100 + 10, i * 100 + 20, i * 100 + 30, i * 100 + 40],
                        4,
                    ),
                    "base",
                )
            })
            .collect();
        let mut lora: Vec<RequestRecord> = (4..7)
            .map(|i| {
                with(
                    rec(
                        i,
                        i * 100,
                        &[i * 100 + 50, i * 100 + 60, i * 100 + 70, i * 100 + 80],
                        4,
                    ),
                    "lora",
                )
            })
            .collect();
        lora[2].error = Some(ErrorClass::Http5xx);
        let level = LoadLevel {
            mode: "concurrency".into(),
            value: 1.0,
            arrival: None,
        };
        let slo = Slo {
            ttft_ms: Some(30.0),
            ..Slo::default()
        };
        let all: Vec<RequestRecord> = base.iter().chain(&lora).cloned().collect();
        let s = summarize(
            "D(10,4)",
            level.clone(),
            &all,
            &slo,
            StopReason::MaxRequests,
        );
        assert_eq!(s.per_model.len(), 2);
        let b = &s.per_model["base"];
        let l = &s.per_model["lora"];
        assert_eq!(
            (b.requests, b.completed, l.requests, l.completed),
            (4, 4, 3, 2)
        );
        // The same figures as a summary of that model's records alone.
        let alone = summarize(
            "D(10,4)",
            level.clone(),
            &lora,
            &slo,
            StopReason::MaxRequests,
        );
        assert!(alone.per_model.is_empty());
        let t = alone.ttft_ms.unwrap();
        assert_eq!(
            l.ttft_ms,
            Some(P50P99 {
                p50: t.p50,
                p99: t.p99
            })
        );
        assert_eq!(l.e2e_ms_p50, alone.e2e_ms.map(|d| d.p50));
        assert_eq!(
            b.ttft_ms,
            Some(P50P99 {
                p50: 10.0,
                p99: 10.0
            })
        );
        assert_eq!(b.itl_ms_p50, Some(10.0));
        assert_eq!(b.tpot_ms_p50, Some(10.0));
        // Throughputs are over the whole point's duration: they add up to the whole's.
        let sum = b.output_token_throughput + l.output_token_throughput;
        assert!((sum - s.output_token_throughput).abs() < 1e-9, "{sum}");
        // SLO attainment: base all meet 30 ms; lora none (one failed, two at 50 ms).
        assert_eq!((b.slo_attainment, l.slo_attainment), (Some(1.0), Some(0.0)));
        let no_slo = summarize(
            "D(10,4)",
            level.clone(),
            &all,
            &Slo::default(),
            StopReason::MaxRequests,
        );
        assert_eq!(no_slo.per_model["base"].slo_attainment, None);
        // Reads back from its JSON.
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["per_model"]["lora"]["ttft_ms"]["p50"], 50.0);
        let back: PointSummary = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.per_model, s.per_model);
        // One model: no per-model block, not even in the JSON.
        let one: Vec<RequestRecord> = base.to_vec();
        let s1 = summarize("D(10,4)", level, &one, &slo, StopReason::MaxRequests);
        assert!(s1.per_model.is_empty());
        assert!(
            serde_json::to_value(&s1)
                .unwrap()
                .get("per_model")
                .is_none()
        );
    }

    /// A summary reads back as the same summary: `summary.json` and `--json` outputs are typed
    /// both ways (the server's metrics flattened in, the error classes and token sources by
    /// name, the stop reason as its string).
    #[test]
    fn a_summary_reads_back_from_its_json() {
        let a = rec(1, 100, &[150, 160, 170], 3);
        let mut c = rec(2, 300, &[], 3);
        c.error = Some(ErrorClass::Http5xx);
        c.done_ns = Some(310_000_000);
        let mut s = summarize(
            "D(10,3)",
            LoadLevel {
                mode: "rate".into(),
                value: 4.0,
                arrival: Some("poisson".into()),
            },
            &[a, c],
            &Slo::default(),
            StopReason::Shards(vec![
                StopReason::MaxRequests,
                StopReason::TargetUnreachable("connection refused".into()),
            ]),
        );
        s.energy_source = Some("rapl".into());
        s.shard = Some(ShardInfo {
            index: 1,
            count: 2,
            streams: None,
        });
        s.server = Some(crate::scrape::ServerMetrics {
            server_scrapes: 3,
            server_ttft_ms: Some(41.5),
            ..Default::default()
        });
        let json = serde_json::to_value(&s).unwrap();
        let back: PointSummary = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        assert_eq!(back.requests.errors["http_5xx"], 1);
        assert_eq!(back.server.unwrap().server_ttft_ms, Some(41.5));
        assert!(back.stop_reason.is_unreachable());
        // Without the server's metrics there are none after reading back either.
        s.server = None;
        let json = serde_json::to_value(&s).unwrap();
        let back: PointSummary = serde_json::from_value(json).unwrap();
        assert!(back.server.is_none());
    }

    #[test]
    fn metrics_follow_the_definitions() {
        let mut warm = rec(0, 0, &[5, 6], 2);
        warm.warmup = true;
        let a = rec(1, 100, &[150, 160, 170], 3); // ttft 50, e2e 70, tpot 10
        let b = rec(2, 200, &[280, 300, 320], 3); // ttft 80, e2e 120, tpot 20
        let mut c = rec(3, 300, &[], 3);
        c.error = Some(ErrorClass::Http5xx);
        c.done_ns = Some(310_000_000);
        let slo = Slo {
            ttft_ms: Some(60.0),
            ..Slo::default()
        };
        let s = summarize(
            "D(10,3)",
            LoadLevel {
                mode: "concurrency".into(),
                value: 2.0,
                arrival: None,
            },
            &[warm, a, b, c],
            &slo,
            StopReason::MaxRequests,
        );
        assert_eq!(
            (s.requests.completed, s.requests.failed, s.requests.warmup),
            (2, 1, 1)
        );
        assert_eq!(s.requests.errors["http_5xx"], 1);
        // 100 ms (first measured schedule) → 320 ms (last completion).
        assert!((s.duration_s - 0.22).abs() < 1e-9);
        assert!((s.request_throughput - 2.0 / 0.22).abs() < 1e-9);
        assert!((s.output_token_throughput - 6.0 / 0.22).abs() < 1e-9);
        assert!((s.goodput.unwrap() - 1.0 / 0.22).abs() < 1e-9);
        assert_eq!(s.ttft_ms.as_ref().unwrap().mean, 65.0);
        assert_eq!(s.e2e_ms.as_ref().unwrap().max, 120.0);
        assert_eq!(s.tpot_ms.as_ref().unwrap().mean, 15.0);
        let itl = s.itl_ms.unwrap();
        assert_eq!((itl.count, itl.min, itl.max), (4, 10.0, 20.0));
        assert_eq!(s.client_queue_ms.unwrap().mean, 0.5);
    }
}
