//! `--remote-write`, `--otlp`, `--otlp-traces`: hot metrics and request traces pushed while a
//! benchmark runs (shared by `bench serve` and `run`); see `yardstick_load::hot`.

use std::time::Duration;

use yardstick_load::hot::{HotSink, HotStats, SinkKind};
use yardstick_load::otlp::{self, TraceSampling};

use crate::exit;
use crate::output;

/// Where live metrics and traces go while the benchmark runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HotArgs {
    /// Push live metrics to this Prometheus remote-write URL while the benchmark runs
    /// (`http://prometheus:9090/api/v1/write`): requests completed and failed (by class), in
    /// flight, output tokens, TTFT and end-to-end latency histograms, labelled with the
    /// benchmark, run, point, replicate and node. A receiver that is down or slow never slows
    /// the load: its pushes are dropped and counted. docs/observability.md.
    #[arg(long, value_name = "URL", help_heading = "Hot metrics")]
    pub remote_write: Option<String>,
    /// A header of every push, its value read from an environment variable: `NAME=ENV_VAR`
    /// (`Authorization=PROM_AUTH`, `X-Scope-OrgID=TENANT`); repeat for more. Values never
    /// appear in logs or results.
    #[arg(
        long = "remote-write-header",
        value_name = "NAME=ENV",
        help_heading = "Hot metrics"
    )]
    pub remote_write_headers: Vec<String>,
    /// Push the same live metrics as OpenTelemetry metrics (OTLP/HTTP, protobuf) to this
    /// collector: `http://collector:4318` (metrics go to `/v1/metrics`) or a full endpoint URL.
    /// The series keep their Prometheus-style names; the join keys are attributes of every
    /// data point.
    #[arg(long, value_name = "URL", help_heading = "Hot metrics")]
    pub otlp: Option<String>,
    /// Export a client span per request (OTLP/HTTP traces) to this collector:
    /// `http://collector:4318` (spans go to `/v1/traces`) or a full endpoint URL. A span's ids
    /// are those of the request's `traceparent`, so the server's spans are its children; its
    /// events are the request's timeline (scheduled, sent, first byte, first token, last token).
    #[arg(long, value_name = "URL", help_heading = "Hot metrics")]
    pub otlp_traces: Option<String>,
    /// The share of requests that get a span (0 to 1; by trace id). Failed requests and requests
    /// over the SLO (--slo-ttft-ms, --slo-e2e-ms, a spec's `slo`) always get one.
    #[arg(
        long,
        default_value_t = 0.1,
        value_name = "RATIO",
        help_heading = "Hot metrics"
    )]
    pub otlp_trace_ratio: f64,
    /// A header of every OTLP export (metrics and traces), its value read from an environment
    /// variable: `NAME=ENV_VAR` (`Authorization=OTLP_AUTH`); repeat for more.
    #[arg(
        long = "otlp-header",
        value_name = "NAME=ENV",
        help_heading = "Hot metrics"
    )]
    pub otlp_headers: Vec<String>,
    /// Time between pushes.
    #[arg(
        long,
        default_value = "5s",
        value_name = "DURATION",
        help_heading = "Hot metrics"
    )]
    pub hot_interval: String,
}

/// `url` when it is an http(s) URL with a host, else the user's mistake naming `flag`.
fn check_url(flag: &str, url: &str, example: &str) -> anyhow::Result<()> {
    let ok = url
        .parse::<http::Uri>()
        .is_ok_and(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some());
    if ok {
        Ok(())
    } else {
        Err(exit::invalid(
            format!("{flag}: `{url}` is not an http(s) URL"),
            Some(&format!("e.g. {flag} {example}")),
        ))
    }
}

/// `NAME=ENV_VAR` flags: each header with its value read from the environment.
fn headers(flag: &str, given: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for h in given {
        let Some((name, var)) = h.split_once('=') else {
            return Err(exit::invalid(
                format!("{flag} `{h}`: expected NAME=ENV_VAR"),
                Some(&format!("e.g. {flag} Authorization=MY_TOKEN")),
            ));
        };
        if http::HeaderName::from_bytes(name.trim().as_bytes()).is_err() {
            return Err(exit::invalid(
                format!("{flag}: `{name}` is not a header name"),
                None,
            ));
        }
        let value = std::env::var(var.trim()).map_err(|_| {
            exit::invalid(
                format!("{flag} {name}: the environment variable `{var}` is not set"),
                Some(
                    "export it (the value is read from the environment, never from the command line)",
                ),
            )
        })?;
        out.push((name.trim().to_string(), value));
    }
    Ok(out)
}

impl HotArgs {
    /// The sinks these flags ask for, without labels or SLOs (empty without `--remote-write`,
    /// `--otlp` or `--otlp-traces`); a bad URL, header, ratio or interval is the user's mistake
    /// (exit 2).
    pub fn sinks(&self) -> anyhow::Result<Vec<HotSink>> {
        if self.remote_write.is_none() && !self.remote_write_headers.is_empty() {
            return Err(exit::invalid(
                "--remote-write-header needs --remote-write",
                Some("add --remote-write http://HOST:9090/api/v1/write"),
            ));
        }
        if self.otlp.is_none() && self.otlp_traces.is_none() && !self.otlp_headers.is_empty() {
            return Err(exit::invalid(
                "--otlp-header needs --otlp or --otlp-traces",
                Some("add --otlp http://HOST:4318"),
            ));
        }
        if !(0.0..=1.0).contains(&self.otlp_trace_ratio) {
            return Err(exit::invalid(
                format!(
                    "--otlp-trace-ratio {} is not between 0 and 1",
                    self.otlp_trace_ratio
                ),
                Some("e.g. --otlp-trace-ratio 0.1 (a tenth of the requests, and every failure)"),
            ));
        }
        let interval = yardstick_spec::units::parse_duration(&self.hot_interval)
            .map_err(|e| crate::cmd::flag_error("hot-interval", e))?;
        if interval < Duration::from_millis(100) {
            return Err(exit::invalid(
                "--hot-interval is below 100ms",
                Some("e.g. --hot-interval 5s (Prometheus scrapes every 15s by default)"),
            ));
        }
        let mut out = Vec::new();
        if let Some(url) = &self.remote_write {
            check_url("--remote-write", url, "http://127.0.0.1:9090/api/v1/write")?;
            let mut s = HotSink::new(SinkKind::RemoteWrite, url);
            s.headers = headers("--remote-write-header", &self.remote_write_headers)?;
            out.push(s);
        }
        let otlp_headers = headers("--otlp-header", &self.otlp_headers)?;
        if let Some(url) = &self.otlp {
            check_url("--otlp", url, "http://127.0.0.1:4318")?;
            let mut s = HotSink::new(SinkKind::OtlpMetrics, otlp::endpoint(url, "metrics"));
            s.headers = otlp_headers.clone();
            out.push(s);
        }
        if let Some(url) = &self.otlp_traces {
            check_url("--otlp-traces", url, "http://127.0.0.1:4318")?;
            let mut s = HotSink::new(SinkKind::OtlpTraces, otlp::endpoint(url, "traces"));
            s.headers = otlp_headers;
            s.sampling = TraceSampling {
                ratio: self.otlp_trace_ratio,
                ..TraceSampling::default()
            };
            out.push(s);
        }
        for s in &mut out {
            s.interval = interval;
        }
        Ok(out)
    }

    /// Whether any sink flag was given.
    fn any(&self) -> bool {
        self.remote_write.is_some() || self.otlp.is_some() || self.otlp_traces.is_some()
    }
}

/// The sinks of `run SPEC`: the command line's when it names any, else the spec's
/// `observability`.
pub fn sinks_for_run(
    args: &HotArgs,
    spec: &yardstick_spec::BenchmarkRun,
) -> anyhow::Result<Vec<HotSink>> {
    if args.any() {
        args.sinks()
    } else {
        from_spec(spec)
    }
}

/// Header values of a spec's `headersEnv`, read from the environment (a variable that is not
/// set is the user's mistake).
fn spec_headers(
    at: &str,
    headers_env: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (name, var) in headers_env {
        let value = std::env::var(var).map_err(|_| {
            exit::invalid(
                format!(
                    "observability.{at}.headersEnv.{name}: the environment variable `{var}` is not set"
                ),
                Some("export it before the run (the value is read from the environment only)"),
            )
        })?;
        out.push((name.clone(), value));
    }
    Ok(out)
}

/// The sinks of a spec's `observability` (remote-write, OTLP metrics and traces).
pub fn from_spec(spec: &yardstick_spec::BenchmarkRun) -> anyhow::Result<Vec<HotSink>> {
    let Some(o) = spec.spec.as_ref().and_then(|s| s.observability.as_ref()) else {
        return Ok(Vec::new());
    };
    let interval = o.interval.map_or(Duration::from_secs(5), |i| i.0);
    let mut out = Vec::new();
    if let Some(rw) = &o.remote_write
        && let Some(url) = &rw.url
    {
        let mut s = HotSink::new(SinkKind::RemoteWrite, url);
        s.headers = spec_headers("remoteWrite", &rw.headers_env)?;
        out.push(s);
    }
    if let Some(ot) = &o.otlp
        && let Some(url) = &ot.url
    {
        let headers = spec_headers("otlp", &ot.headers_env)?;
        if ot.metrics.unwrap_or(true) {
            let mut s = HotSink::new(SinkKind::OtlpMetrics, otlp::endpoint(url, "metrics"));
            s.headers = headers.clone();
            out.push(s);
        }
        if ot.traces.unwrap_or(false) {
            let mut s = HotSink::new(SinkKind::OtlpTraces, otlp::endpoint(url, "traces"));
            s.headers = headers;
            s.sampling.ratio = ot.trace_ratio.unwrap_or(s.sampling.ratio);
            out.push(s);
        }
    }
    for s in &mut out {
        s.interval = interval;
    }
    Ok(out)
}

/// Says what a sink did: a line, and a warning when pushes were dropped.
pub fn report(stats: &HotStats) {
    let what = match stats.sink {
        SinkKind::RemoteWrite => "hot metrics",
        SinkKind::OtlpMetrics => "OTLP metrics",
        SinkKind::OtlpTraces => "OTLP traces",
    };
    let unit = match stats.sink {
        SinkKind::RemoteWrite => "samples",
        SinkKind::OtlpMetrics => "data points",
        SinkKind::OtlpTraces => "spans",
    };
    output::info(&format!(
        "{what}: {} push(es), {} {unit} to {}",
        stats.pushes, stats.samples, stats.url
    ));
    if stats.dropped_pushes > 0 || stats.dropped_samples > 0 {
        output::warn(&format!(
            "{what}: {} push(es) ({} {unit}) dropped: {}",
            stats.dropped_pushes,
            stats.dropped_samples,
            stats.last_error.as_deref().unwrap_or("no answer")
        ));
    }
}
