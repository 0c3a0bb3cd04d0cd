//! Hot metrics: live series pushed to time-series storage while a benchmark runs, so a run can
//! be watched in Grafana next to the server's own metrics, and request traces for a tracing
//! backend. Three kinds of sink ([`SinkKind`]):
//!
//! * Prometheus remote-write 1.0: protobuf, snappy-compressed, POSTed every `interval`;
//! * OTLP/HTTP metrics: the same series as OpenTelemetry metrics ([`crate::otlp`]);
//! * OTLP/HTTP traces: one client span per sampled request, exported every `interval`.
//!
//! The series are snapshots of the load generator's live counters ([`Progress`]): requests
//! completed and failed (by error class), in flight, output tokens, and TTFT and end-to-end
//! latency as classic histograms. Their labels are the low-cardinality join keys a run gives
//! (benchmark, run id, point, replicate, node) — never a request id. A sink runs on a task of
//! its own and only reads atomics (spans wait in a bounded queue): a sink that is down or slow
//! never slows the load. A push that fails or takes longer than the interval is dropped
//! (counted, with its samples), never queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::otlp::{SpanQueue, TraceSampling};
use crate::record::ErrorClass;
use crate::runner::Progress;

/// Upper bounds of the latency histograms' buckets, seconds (then `+Inf`).
pub const BUCKETS_S: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Every error class, in the order of [`Progress::errors`].
pub const ERROR_CLASSES: [ErrorClass; 7] = ErrorClass::ALL;

/// This machine's name (the `node` label).
pub fn node() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A latency histogram updated without locks: a count per bucket, the sum and the count.
#[derive(Debug, Default)]
pub struct LiveHistogram {
    buckets: [AtomicU64; BUCKETS_S.len() + 1],
    sum_us: AtomicU64,
    count: AtomicU64,
}

impl LiveHistogram {
    /// Counts one observation of `secs`.
    pub fn observe(&self, secs: f64) {
        if !secs.is_finite() || secs < 0.0 {
            return;
        }
        let i = BUCKETS_S
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(BUCKETS_S.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_us
            .fetch_add((secs * 1e6).round() as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Cumulative counts per bucket (the last is `+Inf`), the sum in seconds and the count.
    pub fn snapshot(&self) -> (Vec<u64>, f64, u64) {
        let mut acc = 0;
        let cumulative = self
            .buckets
            .iter()
            .map(|b| {
                acc += b.load(Ordering::Relaxed);
                acc
            })
            .collect();
        (
            cumulative,
            self.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
            self.count.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn reset(&self) {
        for b in &self.buckets {
            b.store(0, Ordering::Relaxed);
        }
        self.sum_us.store(0, Ordering::Relaxed);
        self.count.store(0, Ordering::Relaxed);
    }
}

/// A series' labels besides its name.
pub type Labels = Vec<(String, String)>;

/// One mirrored gauge: its name, labels and value.
pub type Gauge = (String, Labels, f64);

/// Gauges mirrored into the hot series from elsewhere: the server's scraped metrics and the
/// telemetry sampler's CPU and GPU readings, each the last value set.
#[derive(Debug, Default)]
pub struct Gauges {
    values: std::sync::Mutex<std::collections::BTreeMap<(String, Labels), f64>>,
}

impl Gauges {
    /// Sets series `name` with `labels` to `value` (a value that is not finite is ignored).
    pub fn set(&self, name: &str, labels: &[(&str, &str)], value: f64) {
        if !value.is_finite() {
            return;
        }
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        self.values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((name.to_string(), labels), value);
    }

    /// Every series: (name, labels, value), ordered by name and labels.
    pub fn snapshot(&self) -> Vec<Gauge> {
        self.values
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|((n, l), v)| (n.clone(), l.clone(), *v))
            .collect()
    }
}

/// What a sink receives.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum SinkKind {
    /// Prometheus remote-write 1.0.
    #[default]
    RemoteWrite,
    /// OTLP/HTTP metrics (protobuf).
    OtlpMetrics,
    /// OTLP/HTTP traces (protobuf): a span per sampled request.
    OtlpTraces,
}

/// Where and how hot metrics (or traces) go.
#[derive(Debug, Clone)]
pub struct HotSink {
    /// What it receives.
    pub kind: SinkKind,
    /// The receiver's URL (`http://prometheus:9090/api/v1/write`,
    /// `http://collector:4318/v1/metrics`).
    pub url: String,
    /// Extra headers (an `Authorization` read from the environment, a tenant id); their values
    /// never appear in logs or results.
    pub headers: Vec<(String, String)>,
    /// Time between pushes.
    pub interval: Duration,
    /// Labels of every series (the join keys), besides `__name__`; the resource attributes of
    /// spans.
    pub labels: Vec<(String, String)>,
    /// Which requests get a span (traces only).
    pub sampling: TraceSampling,
}

impl HotSink {
    /// A sink of `kind` at `url` with no headers or labels, pushing every 5 s.
    pub fn new(kind: SinkKind, url: impl Into<String>) -> Self {
        HotSink {
            kind,
            url: url.into(),
            headers: Vec::new(),
            interval: Duration::from_secs(5),
            labels: Vec::new(),
            sampling: TraceSampling::default(),
        }
    }
}

/// What a sink did, for the summary (`hot_metrics`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct HotStats {
    /// What the sink received.
    #[serde(default)]
    pub sink: SinkKind,
    /// The receiver, without credentials.
    pub url: String,
    /// Pushes the receiver accepted.
    pub pushes: u64,
    /// Samples in them (OTLP metrics: data points; traces: spans).
    pub samples: u64,
    /// Pushes dropped: the receiver refused them, did not answer within the interval, or could
    /// not be reached.
    pub dropped_pushes: u64,
    /// Samples in them, and spans dropped because the queue was full.
    pub dropped_samples: u64,
    /// Why the last dropped push was dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// A running sink; [`HotTask::finish`] pushes a last snapshot and says what it did.
pub struct HotTask {
    stop: CancellationToken,
    handle: tokio::task::JoinHandle<HotStats>,
}

impl HotTask {
    /// Stops the sink after one last push.
    pub async fn finish(self) -> HotStats {
        self.stop.cancel();
        self.handle.await.unwrap_or_default()
    }
}

/// Starts every sink of `sinks` on `progress` (see [`spawn`]).
pub fn spawn_all(
    sinks: &[HotSink],
    progress: &Arc<Progress>,
    point: &Arc<std::sync::Mutex<String>>,
) -> Vec<HotTask> {
    sinks
        .iter()
        .map(|s| spawn(s.clone(), progress.clone(), point.clone()))
        .collect()
}

/// Stops every task after its last push: what each did.
pub async fn finish_all(tasks: Vec<HotTask>) -> Vec<HotStats> {
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.finish().await);
    }
    out
}

/// Starts pushing `progress`'s counters (or, for traces, the spans of the requests it sees) to
/// `sink` every `sink.interval` (call within a tokio runtime). `point` is the `point` label's
/// value at each push (empty: no such label), so one sink follows a sweep from point to point.
pub fn spawn(
    sink: HotSink,
    progress: Arc<Progress>,
    point: Arc<std::sync::Mutex<String>>,
) -> HotTask {
    let stop = CancellationToken::new();
    let token = stop.clone();
    let queue = (sink.kind == SinkKind::OtlpTraces).then(|| {
        progress
            .spans
            .get_or_init(|| Arc::new(SpanQueue::new(sink.sampling, point.clone())))
            .clone()
    });
    let handle = tokio::spawn(async move {
        let mut stats = HotStats {
            sink: sink.kind,
            url: redact(&sink.url),
            ..HotStats::default()
        };
        let client = match http_client() {
            Ok(c) => c,
            Err(e) => {
                stats.last_error = Some(e);
                return stats;
            }
        };
        let since = now_ns();
        let mut tick = tokio::time::interval(sink.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let last = tokio::select! {
                _ = tick.tick() => false,
                _ = token.cancelled() => true,
            };
            let mut labels = sink.labels.clone();
            let p = point.lock().map(|p| p.clone()).unwrap_or_default();
            if !p.is_empty() && sink.kind != SinkKind::OtlpTraces {
                labels.push(("point".into(), p));
            }
            let body = match (&sink.kind, &queue) {
                (SinkKind::RemoteWrite, _) => {
                    let series = series(&progress, &labels, now_ms());
                    let n = series.iter().map(|s| s.samples.len() as u64).sum::<u64>();
                    encode(series).map(|b| (b, n))
                }
                (SinkKind::OtlpMetrics, _) => {
                    let start = match progress.started_unix_ns.load(Ordering::Relaxed) {
                        0 => since,
                        t => t,
                    };
                    let (req, n) =
                        crate::otlp::metrics_request(&progress, &labels, start, now_ns());
                    Ok((prost::Message::encode_to_vec(&req), n))
                }
                (SinkKind::OtlpTraces, Some(q)) => {
                    let spans = q.drain();
                    let n = spans.len() as u64;
                    Ok((
                        prost::Message::encode_to_vec(&crate::otlp::traces_request(spans, &labels)),
                        n,
                    ))
                }
                (SinkKind::OtlpTraces, None) => Ok((Vec::new(), 0)),
            };
            match body {
                // Nothing to export (no span since the last push).
                Ok((_, 0)) if sink.kind == SinkKind::OtlpTraces => {}
                Ok((body, n)) => match push(&client, &sink, body).await {
                    Ok(()) => {
                        stats.pushes += 1;
                        stats.samples += n;
                    }
                    Err(e) => {
                        stats.dropped_pushes += 1;
                        stats.dropped_samples += n;
                        stats.last_error = Some(e);
                    }
                },
                Err(e) => {
                    stats.dropped_pushes += 1;
                    stats.last_error = Some(e);
                }
            }
            if last {
                if let Some(q) = &queue
                    && q.overflowed() > 0
                {
                    stats.dropped_samples += q.overflowed();
                    stats.last_error.get_or_insert_with(|| {
                        format!(
                            "the span queue ({} spans) was full",
                            crate::otlp::SPAN_QUEUE_CAPACITY
                        )
                    });
                }
                return stats;
            }
        }
    });
    HotTask { stop, handle }
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

fn http_client() -> Result<Client, String> {
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(2)));
    let tls = crate::client::tls_config(None).map_err(|e| e.to_string())?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

/// One push of `body` (remote-write: snappy-compressed already), within the interval (at least
/// a second).
async fn push(client: &Client, sink: &HotSink, body: Vec<u8>) -> Result<(), String> {
    let mut req = http::Request::post(&sink.url)
        .header("Content-Type", "application/x-protobuf")
        .header(
            "User-Agent",
            concat!("yardstick/", env!("CARGO_PKG_VERSION")),
        );
    if sink.kind == SinkKind::RemoteWrite {
        req = req
            .header("Content-Encoding", "snappy")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0");
    }
    for (k, v) in &sink.headers {
        let mut value = http::HeaderValue::from_str(v)
            .map_err(|_| format!("header {k}: not a valid header value"))?;
        value.set_sensitive(true);
        req = req.header(k.as_str(), value);
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("the request: {e}"))?;
    let timeout = sink.interval.max(Duration::from_secs(1));
    let resp = tokio::time::timeout(timeout, client.request(req))
        .await
        .map_err(|_| format!("no answer within {:.1} s", timeout.as_secs_f64()))?
        .map_err(|e| format!("{e}"))?;
    let status = resp.status();
    if status.is_success() {
        let _ = tokio::time::timeout(timeout, resp.into_body().collect()).await;
        Ok(())
    } else {
        let body = tokio::time::timeout(timeout, resp.into_body().collect())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).trim().to_string())
            .unwrap_or_default();
        Err(format!(
            "the receiver answered {status}{}",
            if body.is_empty() {
                String::new()
            } else {
                format!(": {}", body.chars().take(200).collect::<String>())
            }
        ))
    }
}

/// The URL without user and password.
fn redact(url: &str) -> String {
    match url.parse::<http::Uri>() {
        Ok(u) => match u.authority() {
            Some(a) if a.as_str().contains('@') => {
                let host = a.as_str().rsplit('@').next().unwrap_or_default();
                format!(
                    "{}://{host}{}",
                    u.scheme_str().unwrap_or("http"),
                    u.path_and_query().map_or("", |p| p.as_str())
                )
            }
            _ => url.to_string(),
        },
        Err(_) => url.to_string(),
    }
}

fn now_ms() -> i64 {
    (now_ns() / 1_000_000) as i64
}

/// Unix time, nanoseconds.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The series of one snapshot, each with one sample at `ts` (ms), labels sorted.
pub fn series(progress: &Progress, labels: &[(String, String)], ts: i64) -> Vec<TimeSeries> {
    let mut out = Vec::new();
    let mut one = |name: &str, extra: &[(&str, String)], value: f64| {
        let mut l: Vec<Label> = labels
            .iter()
            .map(|(k, v)| Label {
                name: k.clone(),
                value: v.clone(),
            })
            .chain(extra.iter().map(|(k, v)| Label {
                name: (*k).to_string(),
                value: v.clone(),
            }))
            .chain(std::iter::once(Label {
                name: "__name__".into(),
                value: name.into(),
            }))
            .collect();
        l.sort_by(|a, b| a.name.cmp(&b.name));
        out.push(TimeSeries {
            labels: l,
            samples: vec![Sample {
                value,
                timestamp: ts,
            }],
        });
    };
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
    one(
        "yardstick_requests_completed_total",
        &[],
        load(&progress.completed),
    );
    one(
        "yardstick_requests_failed_total",
        &[],
        load(&progress.failed),
    );
    for (class, n) in ERROR_CLASSES.iter().zip(&progress.errors) {
        one(
            "yardstick_request_errors_total",
            &[("class", class.name().to_string())],
            load(n),
        );
    }
    one(
        "yardstick_requests_in_flight",
        &[],
        load(&progress.in_flight),
    );
    one(
        "yardstick_output_tokens_total",
        &[],
        load(&progress.output_tokens),
    );
    for (name, labels, value) in progress.gauges.snapshot() {
        let extra: Vec<(&str, String)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        one(&name, &extra, value);
    }
    for (name, h) in [
        ("yardstick_ttft_seconds", &progress.ttft),
        ("yardstick_itl_seconds", &progress.itl),
        ("yardstick_e2e_seconds", &progress.e2e),
        ("yardstick_schedule_lateness_seconds", &progress.lateness),
    ] {
        let (cumulative, sum, count) = h.snapshot();
        for (i, c) in cumulative.iter().enumerate() {
            let le = BUCKETS_S
                .get(i)
                .map_or_else(|| "+Inf".to_string(), |b| b.to_string());
            one(&format!("{name}_bucket"), &[("le", le)], *c as f64);
        }
        one(&format!("{name}_sum"), &[], sum);
        one(&format!("{name}_count"), &[], count as f64);
    }
    out
}

/// The request body: the protobuf `WriteRequest`, snappy block-compressed.
fn encode(series: Vec<TimeSeries>) -> Result<Vec<u8>, String> {
    use prost::Message;
    let raw = WriteRequest { timeseries: series }.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .map_err(|e| format!("snappy: {e}"))
}

/// Prometheus remote-write 1.0 `prometheus.WriteRequest` (the fields a sender fills).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Labels, sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Samples, oldest first.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Unix time, milliseconds.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_with_an_infinite_bucket() {
        let h = LiveHistogram::default();
        for s in [0.001, 0.02, 0.02, 0.7, 500.0] {
            h.observe(s);
        }
        h.observe(f64::NAN);
        let (c, sum, n) = h.snapshot();
        assert_eq!(n, 5);
        assert_eq!(c.len(), BUCKETS_S.len() + 1);
        assert_eq!(c[0], 1); // <= 5 ms
        assert_eq!(c[2], 3); // <= 25 ms
        assert_eq!(c[BUCKETS_S.len() - 1], 4); // <= 120 s
        assert_eq!(c[BUCKETS_S.len()], 5); // +Inf
        assert!((sum - 500.741).abs() < 1e-6);
    }

    #[test]
    fn a_snapshot_has_sorted_labels_and_no_request_ids() {
        let p = Progress::default();
        p.completed.store(7, Ordering::Relaxed);
        p.ttft.observe(0.03);
        let s = series(
            &p,
            &[
                ("point".into(), "p".into()),
                ("benchmark".into(), "b".into()),
            ],
            1,
        );
        let done = s
            .iter()
            .find(|t| {
                t.labels
                    .iter()
                    .any(|l| l.value == "yardstick_requests_completed_total")
            })
            .unwrap();
        let names: Vec<&str> = done.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "benchmark", "point"]);
        assert_eq!(done.samples[0].value, 7.0);
        assert!(
            s.iter()
                .all(|t| t.labels.iter().all(|l| l.name != "request_id"))
        );
        // The encoding round-trips through snappy and protobuf.
        let body = encode(s.clone()).unwrap();
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let back = <WriteRequest as prost::Message>::decode(raw.as_slice()).unwrap();
        assert_eq!(back.timeseries, s);
    }

    #[test]
    fn credentials_never_leave_the_url() {
        assert_eq!(
            redact("https://user:secret@prom.example:9090/api/v1/write"),
            "https://prom.example:9090/api/v1/write"
        );
        assert_eq!(
            redact("http://127.0.0.1:9090/api/v1/write"),
            "http://127.0.0.1:9090/api/v1/write"
        );
    }
}
