//! What the server says while it is measured: its Prometheus `/metrics`, scraped at a fixed
//! interval during a point, read for the gauges and counters that explain latency.
//!
//! The parser reads the text exposition format's sample lines (`name{labels} value
//! [timestamp]`, names `[a-zA-Z_:][a-zA-Z0-9_:]*`, quoted label values with `\"`, `\\` and `\n`
//! escapes); comments and `# TYPE`/`# HELP` lines are skipped, as the families are known by
//! name. It is written here because the crates on crates.io that parse this format either reject
//! the `:` in vLLM's names (`vllm:num_requests_running`) or carry a licence this project cannot
//! take.
//!
//! Engines and the names read (from their documentation):
//!
//! | what | vLLM | SGLang | TGI | llama.cpp |
//! | --- | --- | --- | --- | --- |
//! | running | `vllm:num_requests_running` | `sglang:num_running_reqs` | `tgi_batch_current_size` | `llamacpp:requests_processing` |
//! | waiting | `vllm:num_requests_waiting` | `sglang:num_queue_reqs` | `tgi_queue_size` | `llamacpp:requests_deferred` |
//! | KV-cache usage (0–1) | `vllm:gpu_cache_usage_perc` (`vllm:kv_cache_usage_perc`) | `sglang:token_usage` | – | `llamacpp:kv_cache_usage_ratio` |
//! | preemptions | `vllm:num_preemptions_total` | – | – | – |
//! | prefix-cache hits / queries | `vllm:gpu_prefix_cache_hits_total` / `…_queries_total` (`vllm:prefix_cache_*`) | `sglang:cache_hit_rate` | – | – |
//! | server TTFT (histogram) | `vllm:time_to_first_token_seconds` | `sglang:time_to_first_token_seconds` | – | – |

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use yardstick_spec::metrics::{Measurement, id, push_stats};

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Metric name (a histogram's series carry `_bucket`, `_sum`, `_count`).
    pub name: String,
    /// Labels, sorted.
    pub labels: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
}

/// Parses the sample lines of a Prometheus text exposition; malformed lines are counted, not
/// fatal.
pub fn parse(text: &str) -> (Vec<Line>, usize) {
    let mut out = Vec::new();
    let mut bad = 0;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Some(l) => out.push(l),
            None => bad += 1,
        }
    }
    (out, bad)
}

fn parse_line(line: &str) -> Option<Line> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(r) = rest.strip_prefix('{') {
        let mut chars = r.char_indices().peekable();
        let end;
        loop {
            // Skip separators.
            while let Some((_, c)) = chars.peek() {
                if *c == ',' || c.is_whitespace() {
                    chars.next();
                } else {
                    break;
                }
            }
            let (i, c) = chars.next()?;
            if c == '}' {
                end = i + 1;
                break;
            }
            let mut key = String::from(c);
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            let (_, q) = chars.next()?;
            if q != '"' {
                return None;
            }
            let mut value = String::new();
            loop {
                let (_, c) = chars.next()?;
                match c {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    c => value.push(c),
                }
            }
            labels.insert(key.trim().to_string(), value);
        }
        rest = &r[end..];
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" | "nan" => f64::NAN,
        v => v.parse().ok()?,
    };
    Some(Line {
        name: name.to_string(),
        labels,
        value,
    })
}

/// The engine families read, by what they say.
const RUNNING: &[&str] = &[
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "tgi_batch_current_size",
    "llamacpp:requests_processing",
];
const WAITING: &[&str] = &[
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "tgi_queue_size",
    "llamacpp:requests_deferred",
];
const KV_USAGE: &[&str] = &[
    "vllm:gpu_cache_usage_perc",
    "vllm:kv_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
];
const PREEMPTIONS: &[&str] = &["vllm:num_preemptions_total"];
const PREFIX_HITS: &[&str] = &[
    "vllm:gpu_prefix_cache_hits_total",
    "vllm:prefix_cache_hits_total",
];
const PREFIX_QUERIES: &[&str] = &[
    "vllm:gpu_prefix_cache_queries_total",
    "vllm:prefix_cache_queries_total",
];
const QUEUE_HIST: &[&str] = &["vllm:request_queue_time_seconds"];
const TTFT_HIST: &[&str] = &[
    "vllm:time_to_first_token_seconds",
    "sglang:time_to_first_token_seconds",
];

/// The sum over label sets of the first family of `names` the scrape has.
fn total(lines: &[Line], names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| {
        let v: Vec<f64> = lines
            .iter()
            .filter(|l| l.name == *n)
            .map(|l| l.value)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    })
}

/// One scrape, reduced to what is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Reading {
    /// Seconds since the point's first scrape.
    pub t_s: f64,
    /// Requests running.
    pub running: Option<f64>,
    /// Requests waiting.
    pub waiting: Option<f64>,
    /// KV-cache usage, 0–1.
    pub kv_usage: Option<f64>,
    /// Preemptions so far (counter).
    pub preemptions: Option<f64>,
    /// Prefix-cache hits so far (counter).
    pub prefix_hits: Option<f64>,
    /// Prefix-cache queries so far (counter).
    pub prefix_queries: Option<f64>,
    /// Server TTFT histogram sum so far, seconds.
    pub ttft_sum_s: Option<f64>,
    /// Server TTFT histogram count so far.
    pub ttft_count: Option<f64>,
    /// Server queue-time histogram sum so far, seconds.
    pub queue_sum_s: Option<f64>,
    /// Server queue-time histogram count so far.
    pub queue_count: Option<f64>,
}

impl Reading {
    /// Sets the hot metrics' mirror of the server's metrics: `yardstick_server_requests_running`,
    /// `_requests_waiting`, `yardstick_server_kv_cache_usage_ratio` and
    /// `yardstick_server_preemptions_total`, where the server exports them.
    pub fn mirror(&self, g: &crate::hot::Gauges) {
        for (name, v) in [
            ("yardstick_server_requests_running", self.running),
            ("yardstick_server_requests_waiting", self.waiting),
            ("yardstick_server_kv_cache_usage_ratio", self.kv_usage),
            ("yardstick_server_preemptions_total", self.preemptions),
        ] {
            if let Some(v) = v {
                g.set(name, &[], v);
            }
        }
    }

    /// Reads one scrape's lines.
    pub fn of(lines: &[Line], t_s: f64) -> Reading {
        let suffixed = |names: &[&str], suffix: &str| -> Option<f64> {
            names.iter().find_map(|n| {
                let full = format!("{n}{suffix}");
                let v: Vec<f64> = lines
                    .iter()
                    .filter(|l| l.name == full)
                    .map(|l| l.value)
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum())
            })
        };
        Reading {
            t_s,
            running: total(lines, RUNNING),
            waiting: total(lines, WAITING),
            kv_usage: KV_USAGE.iter().find_map(|n| {
                lines
                    .iter()
                    .filter(|l| l.name == *n)
                    .map(|l| l.value)
                    .reduce(f64::max)
            }),
            preemptions: total(lines, PREEMPTIONS),
            prefix_hits: total(lines, PREFIX_HITS),
            prefix_queries: total(lines, PREFIX_QUERIES),
            ttft_sum_s: suffixed(TTFT_HIST, "_sum"),
            ttft_count: suffixed(TTFT_HIST, "_count"),
            queue_sum_s: suffixed(QUEUE_HIST, "_sum"),
            queue_count: suffixed(QUEUE_HIST, "_count"),
        }
    }
}

/// p50 and max of a gauge over a point's scrapes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct GaugeStat {
    /// Median over the scrapes.
    pub p50: f64,
    /// Largest.
    pub max: f64,
}

fn gauge(v: &[f64]) -> Option<GaugeStat> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    Some(GaugeStat {
        p50: yardstick_stats::percentile::percentile_sorted(&s, 0.5),
        max: s[s.len() - 1],
    })
}

/// What the server said during a point: its gauges over the scrapes and its counters' growth
/// from the first scrape to the last. Each is absent when the server does not export it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ServerMetrics {
    /// Scrapes that answered.
    pub server_scrapes: u64,
    /// Scrapes that failed (no answer, not 200, unreadable).
    pub server_scrape_failures: u64,
    /// Requests running in the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_running: Option<GaugeStat>,
    /// Requests waiting in the server's queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_waiting: Option<GaugeStat>,
    /// KV-cache usage (0–1), its largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_kv_cache_usage: Option<f64>,
    /// Preemptions during the point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_preemptions: Option<f64>,
    /// Prefix-cache hits over queries during the point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_prefix_cache_hit_rate: Option<f64>,
    /// The server's own mean time to first token during the point, ms (its histogram's sum
    /// over count, first scrape to last).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_ttft_ms: Option<f64>,
    /// The server's mean time requests waited in its queue before running, ms
    /// (`vllm:request_queue_time_seconds`): beside the client's own queue (`client_queue_ms`),
    /// where a request's wait happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_queue_ms: Option<f64>,
    /// The client's mean TTFT minus the server's, ms: time outside the server (network, the
    /// client's own delays) and the difference in where the clocks start (the client counts
    /// from the scheduled send, the server from when it received the request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_client_minus_server_ms: Option<f64>,
}

impl yardstick_spec::metrics::Measured for ServerMetrics {
    fn measurements(&self) -> Vec<Measurement> {
        let mut out = vec![
            Measurement::value(id::SERVER_SCRAPES, self.server_scrapes as f64),
            Measurement::value(
                id::SERVER_SCRAPE_FAILURES,
                self.server_scrape_failures as f64,
            ),
        ];
        for (metric, g) in [
            (id::SERVER_RUNNING, self.server_running),
            (id::SERVER_WAITING, self.server_waiting),
        ] {
            if let Some(g) = g {
                push_stats(
                    &mut out,
                    metric,
                    [("p50", Some(g.p50)), ("max", Some(g.max))],
                );
            }
        }
        for (metric, v) in [
            (id::SERVER_KV_CACHE_USAGE, self.server_kv_cache_usage),
            (id::SERVER_PREEMPTIONS, self.server_preemptions),
            (
                id::SERVER_PREFIX_CACHE_HIT_RATE,
                self.server_prefix_cache_hit_rate,
            ),
            (id::SERVER_TTFT_MS, self.server_ttft_ms),
            (id::SERVER_QUEUE_MS, self.server_queue_ms),
            (
                id::TTFT_CLIENT_MINUS_SERVER_MS,
                self.ttft_client_minus_server_ms,
            ),
        ] {
            out.extend(v.map(|v| Measurement::value(metric, v)));
        }
        out
    }
}

impl ServerMetrics {
    /// Reduces a point's readings; `client_ttft_ms` is the client's mean TTFT over the same
    /// requests, when it has one.
    pub fn of(readings: &[Reading], failures: u64, client_ttft_ms: Option<f64>) -> ServerMetrics {
        let col = |f: fn(&Reading) -> Option<f64>| -> Vec<f64> {
            readings.iter().filter_map(f).collect()
        };
        let growth = |f: fn(&Reading) -> Option<f64>| -> Option<f64> {
            let v = col(f);
            Some(v.last()? - v.first()?).map(|d| d.max(0.0))
        };
        let prefix = match (growth(|r| r.prefix_hits), growth(|r| r.prefix_queries)) {
            (Some(h), Some(q)) if q > 0.0 => Some(h / q),
            _ => None,
        };
        let server_ttft_ms = match (growth(|r| r.ttft_sum_s), growth(|r| r.ttft_count)) {
            (Some(s), Some(n)) if n > 0.0 => Some(s / n * 1000.0),
            _ => None,
        };
        let server_queue_ms = match (growth(|r| r.queue_sum_s), growth(|r| r.queue_count)) {
            (Some(s), Some(n)) if n > 0.0 => Some(s / n * 1000.0),
            _ => None,
        };
        ServerMetrics {
            server_queue_ms,
            server_scrapes: readings.len() as u64,
            server_scrape_failures: failures,
            server_running: gauge(&col(|r| r.running)),
            server_waiting: gauge(&col(|r| r.waiting)),
            server_kv_cache_usage: col(|r| r.kv_usage).into_iter().reduce(f64::max),
            server_preemptions: growth(|r| r.preemptions),
            server_prefix_cache_hit_rate: prefix,
            server_ttft_ms,
            ttft_client_minus_server_ms: server_ttft_ms.zip(client_ttft_ms).map(|(s, c)| c - s),
        }
    }
}

/// Scraping settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrapeConfig {
    /// The metrics URL (`http://host:port/metrics`).
    pub url: String,
    /// Time between scrapes.
    pub interval: Duration,
}

/// Default interval between scrapes.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(500);

/// One GET of `url` over plain HTTP/1.1 (loopback and cluster-internal metrics endpoints),
/// bounded by `timeout`: the body when the answer is 200.
pub async fn fetch(url: &str, timeout: Duration) -> Option<String> {
    use http_body_util::{BodyExt, Empty};
    let uri: http::Uri = url.parse().ok()?;
    if uri.scheme_str() != Some("http") {
        return None;
    }
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let get = async {
        let resp = client.get(uri).await.ok()?;
        if resp.status() != http::StatusCode::OK {
            return None;
        }
        let body = resp.into_body().collect().await.ok()?.to_bytes();
        String::from_utf8(body.to_vec()).ok()
    };
    tokio::time::timeout(timeout, get).await.ok().flatten()
}

/// `<scheme>://<host:port>/metrics` of a server's base URL (`http://h:8000/v1` →
/// `http://h:8000/metrics`): where vLLM, SGLang, TGI and llama.cpp serve their metrics.
pub fn metrics_url_of(base: &str) -> Option<String> {
    let uri: http::Uri = base.parse().ok()?;
    Some(format!(
        "{}://{}/metrics",
        uri.scheme_str()?,
        uri.authority()?
    ))
}

/// What `--server-metrics` asks for, resolved: `off`, an explicit URL, or (`auto`, the
/// default) the base URL's `/metrics` when it answers like a Prometheus endpoint.
pub async fn resolve(choice: &str, base: &str, interval: Duration) -> Option<ScrapeConfig> {
    let url = match choice {
        "off" | "none" => return None,
        "auto" | "" => {
            let url = metrics_url_of(base)?;
            if !answers(&url).await {
                return None;
            }
            url
        }
        url => url.to_string(),
    };
    Some(ScrapeConfig { url, interval })
}

/// Whether `url` answers like a Prometheus endpoint (a 200 with at least one sample line).
pub async fn answers(url: &str) -> bool {
    fetch(url, Duration::from_secs(2))
        .await
        .is_some_and(|t| !parse(&t).0.is_empty())
}

/// Scrapes `cfg.url` every `cfg.interval` until `stop` is cancelled (then once more), and
/// returns the readings and the count of failed scrapes; each reading is also mirrored into
/// `gauges` (hot metrics) when given.
pub async fn scrape_until(
    cfg: &ScrapeConfig,
    stop: tokio_util::sync::CancellationToken,
    gauges: Option<&crate::hot::Gauges>,
) -> (Vec<Reading>, u64) {
    let start = std::time::Instant::now();
    let mut readings = Vec::new();
    let mut failures = 0;
    let mut tick = tokio::time::interval(cfg.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let last = tokio::select! {
            _ = tick.tick() => false,
            _ = stop.cancelled() => true,
        };
        match fetch(&cfg.url, cfg.interval.max(Duration::from_secs(1))).await {
            Some(text) => {
                let (lines, _) = parse(&text);
                let r = Reading::of(&lines, start.elapsed().as_secs_f64());
                if let Some(g) = gauges {
                    r.mirror(g);
                }
                readings.push(r);
            }
            None => failures += 1,
        }
        if last {
            break;
        }
    }
    (readings, failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_colons_quotes_escapes_and_special_values() {
        let text = "# HELP vllm:num_requests_running Number of requests.\n\
                    # TYPE vllm:num_requests_running gauge\n\
                    vllm:num_requests_running{model_name=\"/models/llama, 8B\",engine=\"0\"} 3\n\
                    tgi_queue_size 2 1700000000000\n\
                    odd{a=\"x\\\"y\\\\z\\n\"} +Inf\n\
                    vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 7\n\
                    nan_metric NaN\n\
                    1bad 3\n\
                    broken{a=\"x} 1\n\
                    novalue\n";
        let (lines, bad) = parse(text);
        assert_eq!(bad, 3, "{lines:?}");
        assert_eq!(lines[0].name, "vllm:num_requests_running");
        assert_eq!(lines[0].labels["model_name"], "/models/llama, 8B");
        assert_eq!(lines[0].labels["engine"], "0");
        assert_eq!(lines[0].value, 3.0);
        assert_eq!(
            (lines[1].name.as_str(), lines[1].value),
            ("tgi_queue_size", 2.0)
        );
        assert_eq!(lines[2].labels["a"], "x\"y\\z\n");
        assert_eq!(lines[2].value, f64::INFINITY);
        assert_eq!(lines[3].labels["le"], "0.1");
        assert!(lines[4].value.is_nan());
    }

    #[test]
    fn readings_reduce_to_gauges_counter_growth_and_the_ttft_difference() {
        let scrape = |running: f64, waiting: f64, sum: f64, count: f64, hits: f64, q: f64| {
            let text = format!(
                "vllm:num_requests_running{{model_name=\"m\"}} {running}\n\
                 vllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\n\
                 vllm:gpu_cache_usage_perc{{model_name=\"m\"}} {}\n\
                 vllm:num_preemptions_total{{model_name=\"m\"}} {count}\n\
                 vllm:gpu_prefix_cache_hits_total {hits}\n\
                 vllm:gpu_prefix_cache_queries_total {q}\n\
                 vllm:time_to_first_token_seconds_sum{{model_name=\"m\"}} {sum}\n\
                 vllm:time_to_first_token_seconds_count{{model_name=\"m\"}} {count}\n",
                running / 10.0
            );
            Reading::of(&parse(&text).0, 0.0)
        };
        let r = [
            scrape(2.0, 0.0, 1.0, 10.0, 0.0, 0.0),
            scrape(8.0, 4.0, 1.5, 20.0, 30.0, 40.0),
            scrape(6.0, 1.0, 2.0, 30.0, 60.0, 80.0),
        ];
        let m = ServerMetrics::of(&r, 1, Some(51.0));
        assert_eq!(m.server_scrapes, 3);
        assert_eq!(m.server_scrape_failures, 1);
        assert_eq!(m.server_running, Some(GaugeStat { p50: 6.0, max: 8.0 }));
        assert_eq!(m.server_waiting.unwrap().max, 4.0);
        assert_eq!(m.server_kv_cache_usage, Some(0.8));
        assert_eq!(m.server_preemptions, Some(20.0));
        assert_eq!(m.server_prefix_cache_hit_rate, Some(0.75));
        // (2.0 − 1.0) s over (30 − 10) requests = 50 ms; the client saw 51 ms.
        assert!((m.server_ttft_ms.unwrap() - 50.0).abs() < 1e-9);
        assert!((m.ttft_client_minus_server_ms.unwrap() - 1.0).abs() < 1e-9);
        // A server exporting none of these: nothing but the scrape counts.
        let none = ServerMetrics::of(&[Reading::of(&parse("other 1\n").0, 0.0)], 0, Some(1.0));
        assert_eq!(none.server_running, None);
        assert_eq!(none.server_ttft_ms, None);
        assert_eq!(none.ttft_client_minus_server_ms, None);
    }
}
