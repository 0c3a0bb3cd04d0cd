//! One replicate of a `kind: startup` component point: start the command, time it to ready, stop
//! it (`yardstick_exec::startup`), and summarise the times as facts.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use yardstick_exec::startup::{Cache, Readiness, StartupSpec, measure_startup};
use yardstick_spec::ComponentLayer;
use yardstick_spec::metrics::{Measurement, id as metric_id};

use crate::RunError;
use crate::facts::Figures;
use crate::plan::STARTUP_TIMEOUT;
use crate::replicate::ReplicateOutcome;

/// Runs one start of `layer`'s command in page-cache state `cache`. Its summary's facts are
/// `time_to_ready_s`, `time_to_first_output_s`, `time_to_listen_s`, `shutdown_s` and
/// `startup_peak_rss_bytes` (each `{"value": x}`), with the cache state and warnings, and `error`
/// when it never became ready; its figures the times and the peak memory; its logs the measured
/// start's `stdout.log` and `stderr.log`. No samples.
pub fn run_replicate(
    layer: &ComponentLayer,
    argv: &[String],
    cache: &str,
    scratch: &Path,
    cancel: CancellationToken,
) -> Result<ReplicateOutcome, RunError> {
    let ready = layer.ready.clone().unwrap_or_default();
    let ready = match (ready.http, ready.log, ready.exit) {
        (Some(url), _, _) => Readiness::Http {
            url,
            expect: ready.expect.unwrap_or(200),
        },
        (None, Some(text), _) => Readiness::Log(text),
        _ => Readiness::Exit,
    };
    let dir = scratch.join("startup");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| RunError::Internal(e.to_string()))?;
    let spec = StartupSpec {
        argv: argv.to_vec(),
        env: Vec::new(),
        ready,
        port: layer.port,
        timeout: layer.timeout.map_or(STARTUP_TIMEOUT, |t| t.0),
        grace: layer.grace.map_or(Duration::from_secs(10), |g| g.0),
        cache: if cache == "cold" {
            Cache::Cold
        } else {
            Cache::Warm
        },
        stdout: Some(dir.join("stdout.log")),
        stderr: Some(dir.join("stderr.log")),
    };
    let o = measure_startup(&spec, Some(&cancel)).map_err(|e| RunError::Workload(e.to_string()))?;
    let mut s = serde_json::Map::new();
    let mut measurements = Vec::new();
    for (id, v) in [
        (metric_id::TIME_TO_READY_S, o.ready_s),
        (metric_id::TIME_TO_FIRST_OUTPUT_S, o.first_output_s),
        (metric_id::TIME_TO_LISTEN_S, o.listen_s),
        (metric_id::SHUTDOWN_S, o.shutdown_s),
    ] {
        if let Some(v) = v {
            s.insert(id.into(), json!({ "value": v }));
            measurements.push(Measurement::value(id, v));
        }
    }
    measurements.push(Measurement::value(
        metric_id::STARTUP_PEAK_RSS_BYTES,
        o.peak_rss_bytes as f64,
    ));
    s.insert(
        metric_id::STARTUP_PEAK_RSS_BYTES.into(),
        json!({ "value": o.peak_rss_bytes }),
    );
    s.insert("cache".into(), json!(o.cache));
    if let Some(d) = o.cache_dropped {
        s.insert("cache_dropped".into(), d.into());
    }
    if o.killed {
        s.insert("killed".into(), true.into());
    }
    if !o.warnings.is_empty() {
        s.insert("warnings".into(), o.warnings.clone().into());
    }
    if let Some(e) = &o.error {
        s.insert("error".into(), e.clone().into());
    }
    let mut logs = Vec::new();
    for name in ["stdout.log", "stderr.log"] {
        if let Ok(bytes) = std::fs::read(dir.join(name)) {
            logs.push((name.to_string(), bytes));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ReplicateOutcome::new(s.into(), Figures::new(measurements)).with_logs(logs))
}
