//! OpenTelemetry (OTLP/HTTP, protobuf) for hot metrics and request traces, with the message
//! types of the official protobuf definitions (`opentelemetry-proto`).
//!
//! * Metrics: the same series as remote-write ([`crate::hot::series`]), with the same names —
//!   counters as cumulative monotonic sums, in flight as a gauge, TTFT and end-to-end latency as
//!   explicit-bucket histograms. Join keys are attributes of every data point (so a collector
//!   that exports to Prometheus makes them labels), and `service.name` is `yardstick`.
//! * Traces: one client span per request, its trace and span ids those of the `traceparent`
//!   header the request carried (so the server's span is its child), from the scheduled send to
//!   the last byte, with events at each timestamp the record keeps. Sampled by a ratio of trace
//!   ids (the same requests on every run of a plan), and always for a failed request or one over
//!   the SLO.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, InstrumentationScope, KeyValue, any_value::Value,
};
use opentelemetry_proto::tonic::metrics::v1 as m;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1 as t;

use crate::hot::{BUCKETS_S, ERROR_CLASSES};
use crate::record::RequestRecord;
use crate::runner::Progress;

/// Spans a queue holds between exports; more are dropped (counted).
pub const SPAN_QUEUE_CAPACITY: usize = 16_384;

/// Which requests get a span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSampling {
    /// The share of requests traced, chosen by trace id (0 to 1).
    pub ratio: f64,
    /// A request whose TTFT exceeds this (ms) is always traced.
    pub slo_ttft_ms: Option<f64>,
    /// A request whose end-to-end latency exceeds this (ms) is always traced.
    pub slo_e2e_ms: Option<f64>,
}

impl Default for TraceSampling {
    fn default() -> Self {
        TraceSampling {
            ratio: 0.1,
            slo_ttft_ms: None,
            slo_e2e_ms: None,
        }
    }
}

impl TraceSampling {
    /// Why `rec` is traced (`error`, `slo` or `ratio`), or `None`.
    pub fn reason(&self, rec: &RequestRecord, trace_id: u128) -> Option<&'static str> {
        if !rec.ok() {
            return Some("error");
        }
        let over =
            |v: Option<f64>, slo: Option<f64>| matches!((v, slo), (Some(v), Some(s)) if v > s);
        if over(rec.ttft_ms(), self.slo_ttft_ms) || over(rec.e2e_ms(), self.slo_e2e_ms) {
            return Some("slo");
        }
        (self.ratio >= 1.0 || unit_of(trace_id) < self.ratio).then_some("ratio")
    }
}

/// A trace id mapped to [0, 1): SplitMix64 of its two halves folded (request ids, and so trace
/// ids, count up with the request's index, so their bits cannot be used as they are). The same
/// trace id always maps to the same number: a ratio keeps the same requests on every run.
pub fn unit_of(trace_id: u128) -> f64 {
    let mut z = (trace_id as u64) ^ ((trace_id >> 64) as u64);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Spans waiting for the next export, filled by the load generator as requests finish.
#[derive(Debug)]
pub struct SpanQueue {
    sampling: TraceSampling,
    point: Arc<Mutex<String>>,
    spans: Mutex<Vec<t::Span>>,
    overflow: AtomicU64,
}

impl SpanQueue {
    /// An empty queue; `point` is the point label at each request's end.
    pub fn new(sampling: TraceSampling, point: Arc<Mutex<String>>) -> Self {
        SpanQueue {
            sampling,
            point,
            spans: Mutex::new(Vec::new()),
            overflow: AtomicU64::new(0),
        }
    }

    /// Takes a finished request: its span is queued when it is sampled (and the queue has room).
    pub fn offer(&self, rec: &RequestRecord) {
        let (trace_id, span_id) = ids(rec);
        let Some(reason) = self.sampling.reason(rec, trace_id) else {
            return;
        };
        let point = self.point.lock().map(|p| p.clone()).unwrap_or_default();
        let span = span(rec, trace_id, span_id, reason, &point);
        let mut q = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= SPAN_QUEUE_CAPACITY {
            self.overflow.fetch_add(1, Ordering::Relaxed);
        } else {
            q.push(span);
        }
    }

    /// The queued spans, leaving the queue empty.
    pub fn drain(&self) -> Vec<t::Span> {
        std::mem::take(&mut *self.spans.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Spans dropped because the queue was full.
    pub fn overflowed(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }
}

/// The trace and span ids of the request's `traceparent` (the same ones when it sent none).
fn ids(rec: &RequestRecord) -> (u128, u64) {
    let (trace, header) = crate::client::traceparent(&rec.request_id, rec.index);
    let trace_id = u128::from_str_radix(&trace, 16).unwrap_or(0);
    let span_id = header
        .split('-')
        .nth(2)
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .unwrap_or(1);
    (trace_id, span_id)
}

fn kv(key: &str, value: Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn s(v: impl Into<String>) -> Value {
    Value::StringValue(v.into())
}

/// The span of one request.
fn span(rec: &RequestRecord, trace_id: u128, span_id: u64, reason: &str, point: &str) -> t::Span {
    let mut attrs = vec![
        kv("http.request.method", s("POST")),
        kv("yardstick.request_id", s(&rec.request_id)),
        kv("yardstick.index", Value::IntValue(rec.index as i64)),
        kv("yardstick.sampled", s(reason)),
        kv("yardstick.warmup", Value::BoolValue(rec.warmup)),
        kv(
            "yardstick.planned_input_tokens",
            Value::IntValue(rec.planned_input_tokens as i64),
        ),
    ];
    if !point.is_empty() {
        attrs.push(kv("yardstick.point", s(point)));
    }
    if let Some(code) = rec.status {
        attrs.push(kv(
            "http.response.status_code",
            Value::IntValue(code.into()),
        ));
    }
    if let Some(model) = &rec.model {
        attrs.push(kv("gen_ai.request.model", s(model)));
    }
    if let Some(id) = &rec.response_id {
        attrs.push(kv("gen_ai.response.id", s(id)));
    }
    if let Some(n) = rec.prompt_tokens {
        attrs.push(kv("gen_ai.usage.input_tokens", Value::IntValue(n as i64)));
    }
    if let Some(n) = rec.output_tokens {
        attrs.push(kv("gen_ai.usage.output_tokens", Value::IntValue(n as i64)));
    }
    for (key, v) in [
        ("yardstick.ttft_ms", rec.ttft_ms()),
        ("yardstick.e2e_ms", rec.e2e_ms()),
        ("yardstick.client_queue_ms", rec.client_queue_ms()),
    ] {
        if let Some(v) = v {
            attrs.push(kv(key, Value::DoubleValue(v)));
        }
    }
    if let Some(e) = rec.error {
        attrs.push(kv("error.type", s(e.name())));
    }
    let events = [
        ("scheduled", Some(rec.scheduled_ns)),
        ("sent", rec.sent_ns),
        ("first_byte", rec.first_byte_ns),
        ("first_token", rec.first_content_ns),
        ("last_token", rec.last_content_ns),
    ]
    .into_iter()
    .filter_map(|(name, t)| {
        t.map(|t| t::span::Event {
            time_unix_nano: t,
            name: name.into(),
            ..t::span::Event::default()
        })
    })
    .collect();
    let end = rec
        .done_ns
        .or(rec.last_content_ns)
        .unwrap_or(rec.scheduled_ns)
        .max(rec.scheduled_ns);
    let status = match rec.error {
        Some(e) => t::Status {
            code: t::status::StatusCode::Error as i32,
            message: rec
                .error_message
                .clone()
                .unwrap_or_else(|| e.name().to_string()),
        },
        None => t::Status::default(),
    };
    t::Span {
        trace_id: trace_id.to_be_bytes().to_vec(),
        span_id: span_id.to_be_bytes().to_vec(),
        flags: 1,
        name: match &rec.model {
            Some(model) => format!("chat {model}"),
            None => "chat".into(),
        },
        kind: t::span::SpanKind::Client as i32,
        start_time_unix_nano: rec.scheduled_ns,
        end_time_unix_nano: end,
        attributes: attrs,
        events,
        status: Some(status),
        ..t::Span::default()
    }
}

fn resource(labels: &[(String, String)]) -> Resource {
    let mut attributes = vec![kv("service.name", s("yardstick"))];
    attributes.extend(labels.iter().map(|(k, v)| kv(k, s(v))));
    Resource {
        attributes,
        ..Resource::default()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: "yardstick".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..InstrumentationScope::default()
    }
}

/// The export of `spans`: one resource (the run's join keys) and one scope.
pub fn traces_request(
    spans: Vec<t::Span>,
    labels: &[(String, String)],
) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![t::ResourceSpans {
            resource: Some(resource(labels)),
            scope_spans: vec![t::ScopeSpans {
                scope: Some(scope()),
                spans,
                ..t::ScopeSpans::default()
            }],
            ..t::ResourceSpans::default()
        }],
    }
}

/// The export of one snapshot of `progress` at `now_ns` (its counters cumulative since
/// `start_ns`); `labels` are attributes of every data point. Returns it with its number of
/// data points.
pub fn metrics_request(
    progress: &Progress,
    labels: &[(String, String)],
    start_ns: u64,
    now_ns: u64,
) -> (ExportMetricsServiceRequest, u64) {
    let attrs = |extra: &[(&str, &str)]| -> Vec<KeyValue> {
        labels
            .iter()
            .map(|(k, v)| kv(k, s(v)))
            .chain(extra.iter().map(|(k, v)| kv(k, s(*v))))
            .collect()
    };
    let point = |extra: &[(&str, &str)], v: f64| m::NumberDataPoint {
        attributes: attrs(extra),
        start_time_unix_nano: start_ns,
        time_unix_nano: now_ns,
        value: Some(m::number_data_point::Value::AsDouble(v)),
        ..m::NumberDataPoint::default()
    };
    let sum = |name: &str, unit: &str, desc: &str, points: Vec<m::NumberDataPoint>| m::Metric {
        name: name.into(),
        unit: unit.into(),
        description: desc.into(),
        data: Some(m::metric::Data::Sum(m::Sum {
            data_points: points,
            aggregation_temporality: m::AggregationTemporality::Cumulative as i32,
            is_monotonic: true,
        })),
        ..m::Metric::default()
    };
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
    let mut metrics = vec![
        sum(
            "yardstick_requests_completed_total",
            "{request}",
            "Requests that finished successfully.",
            vec![point(&[], load(&progress.completed))],
        ),
        sum(
            "yardstick_requests_failed_total",
            "{request}",
            "Requests that failed.",
            vec![point(&[], load(&progress.failed))],
        ),
        sum(
            "yardstick_request_errors_total",
            "{request}",
            "Failed requests by error class.",
            ERROR_CLASSES
                .iter()
                .zip(&progress.errors)
                .map(|(c, n)| point(&[("class", c.name())], load(n)))
                .collect(),
        ),
        m::Metric {
            name: "yardstick_requests_in_flight".into(),
            unit: "{request}".into(),
            description: "Requests sent and not yet finished.".into(),
            data: Some(m::metric::Data::Gauge(m::Gauge {
                data_points: vec![point(&[], load(&progress.in_flight))],
            })),
            ..m::Metric::default()
        },
        sum(
            "yardstick_output_tokens_total",
            "{token}",
            "Output tokens of finished requests.",
            vec![point(&[], load(&progress.output_tokens))],
        ),
    ];
    for (name, labels, value) in progress.gauges.snapshot() {
        let extra: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        metrics.push(m::Metric {
            name,
            data: Some(m::metric::Data::Gauge(m::Gauge {
                data_points: vec![point(&extra, value)],
            })),
            ..m::Metric::default()
        });
    }
    for (name, desc, h) in [
        (
            "yardstick_ttft_seconds",
            "Time to first token, from the scheduled send.",
            &progress.ttft,
        ),
        (
            "yardstick_itl_seconds",
            "Inter-token latency.",
            &progress.itl,
        ),
        (
            "yardstick_e2e_seconds",
            "End-to-end latency, from the scheduled send.",
            &progress.e2e,
        ),
        (
            "yardstick_schedule_lateness_seconds",
            "How late requests were sent against their schedule.",
            &progress.lateness,
        ),
    ] {
        let (cumulative, total, count) = h.snapshot();
        let mut prev = 0;
        let bucket_counts = cumulative
            .iter()
            .map(|&c| {
                let n = c - prev;
                prev = c;
                n
            })
            .collect();
        metrics.push(m::Metric {
            name: name.into(),
            unit: "s".into(),
            description: desc.into(),
            data: Some(m::metric::Data::Histogram(m::Histogram {
                data_points: vec![m::HistogramDataPoint {
                    attributes: attrs(&[]),
                    start_time_unix_nano: start_ns,
                    time_unix_nano: now_ns,
                    count,
                    sum: Some(total),
                    bucket_counts,
                    explicit_bounds: BUCKETS_S.to_vec(),
                    ..m::HistogramDataPoint::default()
                }],
                aggregation_temporality: m::AggregationTemporality::Cumulative as i32,
            })),
            ..m::Metric::default()
        });
    }
    let n = metrics
        .iter()
        .map(|m| match &m.data {
            Some(m::metric::Data::Sum(s)) => s.data_points.len(),
            Some(m::metric::Data::Gauge(g)) => g.data_points.len(),
            Some(m::metric::Data::Histogram(h)) => h.data_points.len(),
            _ => 0,
        } as u64)
        .sum();
    let req = ExportMetricsServiceRequest {
        resource_metrics: vec![m::ResourceMetrics {
            resource: Some(resource(&[])),
            scope_metrics: vec![m::ScopeMetrics {
                scope: Some(scope()),
                metrics,
                ..m::ScopeMetrics::default()
            }],
            ..m::ResourceMetrics::default()
        }],
    };
    (req, n)
}

/// The OTLP/HTTP endpoint of `signal` (`metrics`, `traces`) at `url`: a URL with no path gets
/// the standard `/v1/<signal>`; one with a path is used as given.
pub fn endpoint(url: &str, signal: &str) -> String {
    match url.parse::<http::Uri>() {
        Ok(u) if matches!(u.path(), "" | "/") && u.query().is_none() => {
            format!("{}/v1/{signal}", url.trim_end_matches('/'))
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn record(index: u64, ttft_ms: u64, error: bool) -> RequestRecord {
        let mut r = RequestRecord::new(
            index,
            crate::client::request_id("run-tag", index),
            false,
            8,
            None,
            1_000_000_000,
        );
        r.sent_ns = Some(1_000_100_000);
        r.first_byte_ns = Some(1_000_000_000 + ttft_ms * 1_000_000);
        r.first_content_ns = r.first_byte_ns;
        r.last_content_ns = Some(1_000_000_000 + (ttft_ms + 50) * 1_000_000);
        r.done_ns = r.last_content_ns;
        r.output_tokens = Some(6);
        if error {
            r.error = Some(crate::record::ErrorClass::Http5xx);
            r.status = Some(503);
        } else {
            r.status = Some(200);
        }
        r
    }

    #[test]
    fn spans_carry_the_traceparent_ids_and_the_request_timeline() {
        let q = SpanQueue::new(
            TraceSampling {
                ratio: 1.0,
                ..TraceSampling::default()
            },
            Arc::new(Mutex::new("p/rate=2".into())),
        );
        let r = record(3, 40, false);
        q.offer(&r);
        let spans = q.drain();
        assert_eq!(spans.len(), 1);
        let sp = &spans[0];
        let (trace, header) = crate::client::traceparent(&r.request_id, 3);
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(&sp.trace_id), trace);
        assert_eq!(header.split('-').nth(2).unwrap(), hex(&sp.span_id));
        assert_eq!(sp.start_time_unix_nano, 1_000_000_000);
        assert_eq!(sp.end_time_unix_nano, 1_090_000_000);
        let names: Vec<&str> = sp.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "scheduled",
                "sent",
                "first_byte",
                "first_token",
                "last_token"
            ]
        );
        assert!(q.drain().is_empty());
        // The encoding round-trips.
        let req = traces_request(spans, &[("run_id".into(), "r1".into())]);
        let back = ExportTraceServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, req);
    }

    #[test]
    fn sampling_keeps_the_ratio_and_every_failure_and_slo_miss() {
        let sampling = TraceSampling {
            ratio: 0.1,
            slo_ttft_ms: Some(100.0),
            slo_e2e_ms: None,
        };
        let q = SpanQueue::new(sampling, Arc::new(Mutex::new(String::new())));
        for i in 0..2000 {
            q.offer(&record(i, 10, false));
        }
        let by_ratio = q.drain().len();
        assert!((120..=280).contains(&by_ratio), "{by_ratio} of 2000 at 0.1");
        for i in 0..50 {
            q.offer(&record(10_000 + i, 150, false));
            q.offer(&record(20_000 + i, 10, true));
        }
        let spans = q.drain();
        assert_eq!(spans.len(), 100);
        let errors = spans
            .iter()
            .filter(|s| s.status.as_ref().unwrap().code == t::status::StatusCode::Error as i32)
            .count();
        assert_eq!(errors, 50);
    }

    #[test]
    fn histograms_are_per_bucket_and_counters_cumulative() {
        let p = Progress::default();
        p.completed.store(5, Ordering::Relaxed);
        for v in [0.001, 0.02, 0.02, 0.7] {
            p.ttft.observe(v);
        }
        let (req, n) = metrics_request(&p, &[("benchmark".into(), "b".into())], 10, 20);
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        assert_eq!(n, 8 + ERROR_CLASSES.len() as u64);
        let ttft = metrics
            .iter()
            .find(|m| m.name == "yardstick_ttft_seconds")
            .unwrap();
        let Some(m::metric::Data::Histogram(h)) = &ttft.data else {
            panic!("a histogram")
        };
        let dp = &h.data_points[0];
        assert_eq!(dp.count, 4);
        assert_eq!(dp.bucket_counts.iter().sum::<u64>(), 4);
        assert_eq!(dp.bucket_counts.len(), dp.explicit_bounds.len() + 1);
        assert_eq!(dp.bucket_counts[0], 1);
        assert_eq!(dp.bucket_counts[2], 2);
        assert_eq!(dp.attributes[0].key, "benchmark");
    }

    #[test]
    fn endpoints_get_the_signal_path_only_when_they_have_none() {
        assert_eq!(
            endpoint("http://c:4318", "metrics"),
            "http://c:4318/v1/metrics"
        );
        assert_eq!(
            endpoint("http://c:4318/", "traces"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            endpoint("http://c:4318/otlp/v1/traces", "traces"),
            "http://c:4318/otlp/v1/traces"
        );
    }
}
