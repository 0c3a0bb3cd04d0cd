//! `--remote-write`: hot metrics pushed while a benchmark runs (shared by `bench serve` and
//! `run`); see `yardstick_load::hot`.

use std::time::Duration;

use yardstick_load::hot::{HotStats, RemoteWrite};

use crate::exit;
use crate::output;

/// Where live metrics go while the benchmark runs.
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
    /// Time between pushes.
    #[arg(
        long,
        default_value = "5s",
        value_name = "DURATION",
        help_heading = "Hot metrics"
    )]
    pub hot_interval: String,
}

impl HotArgs {
    /// The sink these flags ask for, without labels (`None` without `--remote-write`); a bad
    /// URL, header or interval is the user's mistake (exit 2).
    pub fn sink(&self) -> anyhow::Result<Option<RemoteWrite>> {
        let Some(url) = &self.remote_write else {
            if !self.remote_write_headers.is_empty() {
                return Err(exit::invalid(
                    "--remote-write-header needs --remote-write",
                    Some("add --remote-write http://HOST:9090/api/v1/write"),
                ));
            }
            return Ok(None);
        };
        let uri: http::Uri = url.parse().map_err(|_| {
            exit::invalid(
                format!("--remote-write: `{url}` is not a URL"),
                Some("e.g. http://127.0.0.1:9090/api/v1/write"),
            )
        })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(exit::invalid(
                format!("--remote-write: `{url}` is not an http(s) URL"),
                Some("e.g. http://127.0.0.1:9090/api/v1/write"),
            ));
        }
        let mut headers = Vec::new();
        for h in &self.remote_write_headers {
            let Some((name, var)) = h.split_once('=') else {
                return Err(exit::invalid(
                    format!("--remote-write-header `{h}`: expected NAME=ENV_VAR"),
                    Some("e.g. --remote-write-header Authorization=PROM_AUTH"),
                ));
            };
            if http::HeaderName::from_bytes(name.trim().as_bytes()).is_err() {
                return Err(exit::invalid(
                    format!("--remote-write-header: `{name}` is not a header name"),
                    None,
                ));
            }
            let value = std::env::var(var.trim()).map_err(|_| {
                exit::invalid(
                    format!(
                        "--remote-write-header {name}: the environment variable `{var}` is not set"
                    ),
                    Some("export it (the value is read from the environment, never from the command line)"),
                )
            })?;
            headers.push((name.trim().to_string(), value));
        }
        let interval = yardstick_spec::units::parse_duration(&self.hot_interval)
            .map_err(|e| crate::cmd::flag_error("hot-interval", e))?;
        if interval < Duration::from_millis(100) {
            return Err(exit::invalid(
                "--hot-interval is below 100ms",
                Some("e.g. --hot-interval 5s (Prometheus scrapes every 15s by default)"),
            ));
        }
        Ok(Some(RemoteWrite {
            url: url.clone(),
            headers,
            interval,
            labels: Vec::new(),
        }))
    }
}

/// The sink of a spec's `observability.remoteWrite`, when the command line names none: its
/// headers read from the environment (a variable that is not set is the user's mistake).
pub fn from_spec(spec: &yardstick_spec::BenchmarkRun) -> anyhow::Result<Option<RemoteWrite>> {
    let Some(o) = spec.spec.as_ref().and_then(|s| s.observability.as_ref()) else {
        return Ok(None);
    };
    let Some(url) = o.remote_write.as_ref().and_then(|r| r.url.clone()) else {
        return Ok(None);
    };
    let mut headers = Vec::new();
    for (name, var) in o.remote_write.iter().flat_map(|r| &r.headers_env) {
        let value = std::env::var(var).map_err(|_| {
            exit::invalid(
                format!(
                    "observability.remoteWrite.headersEnv.{name}: the environment variable `{var}` is not set"
                ),
                Some("export it before the run (the value is read from the environment only)"),
            )
        })?;
        headers.push((name.clone(), value));
    }
    Ok(Some(RemoteWrite {
        url,
        headers,
        interval: o.interval.map_or(Duration::from_secs(5), |i| i.0),
        labels: Vec::new(),
    }))
}

/// Says what a sink did: a line, and a warning when pushes were dropped.
pub fn report(stats: &HotStats) {
    output::info(&format!(
        "hot metrics: {} push(es), {} samples to {}",
        stats.pushes, stats.samples, stats.url
    ));
    if stats.dropped_pushes > 0 {
        output::warn(&format!(
            "hot metrics: {} push(es) ({} samples) dropped: {}",
            stats.dropped_pushes,
            stats.dropped_samples,
            stats.last_error.as_deref().unwrap_or("no answer")
        ));
    }
}
