//! The server's own metrics, in Prometheus' text exposition format (`GET /metrics`): requests
//! by method, route and status, and a latency histogram by route.
//!
//! Every label comes from a closed set, whatever clients send: the method is one of
//! [`METHODS`] or `other`, the route is a route template (or `unmatched`), the status is one the
//! server answered. A client cannot add series (nor memory) by inventing methods or paths.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in seconds.
pub const BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Count per bucket (not cumulative), then the overflow.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// The methods counted under their own name; any other is counted as `other`.
pub const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];

/// The metrics label of a request method: itself when one of [`METHODS`], else `other`.
pub fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// Request counters and latency histograms.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    requests: BTreeMap<(&'static str, String, u16), u64>,
    latency: BTreeMap<String, Histogram>,
}

impl Metrics {
    /// Records one request: `method` as its [`method_label`], `route` as given (callers pass a
    /// route template, never a client's path).
    pub fn observe(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let mut m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *m.requests
            .entry((method_label(method), route.to_string(), status))
            .or_default() += 1;
        let h = m
            .latency
            .entry(route.to_string())
            .or_insert_with(|| Histogram {
                counts: vec![0; BUCKETS.len() + 1],
                ..Histogram::default()
            });
        let secs = elapsed.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        h.counts[i] += 1;
        h.sum += secs;
        h.count += 1;
    }

    /// The metrics in Prometheus' text format (version 0.0.4).
    pub fn render(&self) -> String {
        let m = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        out.push_str("# HELP yardstick_server_requests_total Requests answered, by method, route and status.\n");
        out.push_str("# TYPE yardstick_server_requests_total counter\n");
        for ((method, route, status), n) in &m.requests {
            let _ = writeln!(
                out,
                "yardstick_server_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(method),
                escape(route)
            );
        }
        out.push_str("# HELP yardstick_server_request_duration_seconds Time to the response head, by route.\n");
        out.push_str("# TYPE yardstick_server_request_duration_seconds histogram\n");
        for (route, h) in &m.latency {
            let route = escape(route);
            let mut cumulative = 0;
            for (b, c) in BUCKETS.iter().zip(&h.counts) {
                cumulative += c;
                let _ = writeln!(
                    out,
                    "yardstick_server_request_duration_seconds_bucket{{route=\"{route}\",le=\"{b}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "yardstick_server_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "yardstick_server_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "yardstick_server_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
        out
    }
}

/// Escapes a label value (backslash, double quote, newline).
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.observe("GET", "/api/v1/runs", 200, Duration::from_micros(500));
        m.observe("GET", "/api/v1/runs", 200, Duration::from_millis(30));
        m.observe("GET", "unmatched", 404, Duration::from_secs(20));
        let text = m.render();
        assert!(text.contains(
            "yardstick_server_requests_total{method=\"GET\",route=\"/api/v1/runs\",status=\"200\"} 2"
        ));
        assert!(text.contains(
            "yardstick_server_request_duration_seconds_bucket{route=\"/api/v1/runs\",le=\"0.001\"} 1"
        ));
        assert!(text.contains(
            "yardstick_server_request_duration_seconds_bucket{route=\"/api/v1/runs\",le=\"0.05\"} 2"
        ));
        assert!(text.contains(
            "yardstick_server_request_duration_seconds_bucket{route=\"unmatched\",le=\"10\"} 0"
        ));
        assert!(
            text.contains("yardstick_server_request_duration_seconds_count{route=\"unmatched\"} 1")
        );
        assert_eq!(escape("a\"b\\"), "a\\\"b\\\\");
    }

    #[test]
    fn invented_methods_share_one_series() {
        let m = Metrics::default();
        for i in 0..100 {
            let method = format!("X{}", "A".repeat(i * 1000));
            m.observe(&method, "unmatched", 405, Duration::from_millis(1));
        }
        m.observe("PATCH", "unmatched", 405, Duration::from_millis(1));
        let text = m.render();
        assert!(text.len() < 4096, "{} bytes", text.len());
        assert!(text.contains(
            "yardstick_server_requests_total{method=\"other\",route=\"unmatched\",status=\"405\"} 100"
        ));
        assert!(text.contains("method=\"PATCH\""));
        assert_eq!(method_label("get"), "other");
    }
}
