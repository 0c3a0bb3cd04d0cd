//! A background telemetry sampler: CPU utilisation and clock, memory, and per-GPU utilisation,
//! memory, SM clock, power, temperature and throttle reasons, at a fixed rate (default 1 Hz).
//!
//! Samples are taken at absolute deadlines (`start + k·interval`), so a slow sample does not
//! shift the ones after it, and carry Unix-millisecond timestamps, so they line up with a run's
//! samples. The series is tidy — one row per (time, device, metric) — and is written as Parquet
//! (zstd) with columns `timestamp_ms` (TIMESTAMP millis, UTC), `elapsed_s`, `device` (`host`,
//! `gpu0`, …), `metric` and `value`, then the join keys ([`JoinKeys`]: the run, the node, the
//! Slurm job or pod, each GPU's UUID); DuckDB, pandas and Spark read it as is.
//!
//! The summary answers "peak versus sustained" (docs/methodology.md#peak-versus-sustained): the
//! mean clock of the first window against the last (windows of 60 s, or a third of the run when
//! it is shorter than 3 min), and the time any GPU spent throttled (power cap, thermal or
//! hardware slowdown; idle does not count).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use serde::{Deserialize, Serialize};

use crate::EnvError;
use crate::gpu::{NvmlSession, is_throttling};

/// Sampler settings.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Time between samples (default 1 s; at least 10 ms).
    pub interval: Duration,
    /// Sample NVIDIA GPUs through NVML when it loads.
    pub gpus: bool,
    /// Called with each sample's rows as it is taken (hot metrics mirror them).
    pub on_sample: Option<OnSample>,
}

/// What [`OnSample`] calls.
pub type SampleFn = dyn Fn(&[Row]) + Send + Sync;

/// A callback of each sample's rows, on the sampling thread (keep it short).
#[derive(Clone)]
pub struct OnSample(pub Arc<SampleFn>);

impl std::fmt::Debug for OnSample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnSample")
    }
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            gpus: true,
            on_sample: None,
        }
    }
}

/// One reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Unix time, ms.
    pub timestamp_ms: i64,
    /// Seconds since the sampler started.
    pub elapsed_s: f64,
    /// `host` or `gpu<N>`.
    pub device: String,
    /// Metric name (`cpu_util_pct`, `sm_clock_mhz`, `throttle_reasons`, ...).
    pub metric: String,
    /// Value (throttle reasons: the NVML bit mask).
    pub value: f64,
}

/// Summary of one GPU's series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct GpuSummary {
    /// NVML index.
    pub index: u32,
    /// Mean utilisation, %.
    pub util_mean_pct: Option<f64>,
    /// Mean power, W.
    pub power_mean_w: Option<f64>,
    /// Highest temperature, °C.
    pub temperature_max_c: Option<f64>,
    /// Mean SM clock over the first window, MHz (peak).
    pub sm_clock_first_mhz: Option<f64>,
    /// Mean SM clock over the last window, MHz (sustained).
    pub sm_clock_last_mhz: Option<f64>,
    /// (first − last) / first, %.
    pub clock_drop_pct: Option<f64>,
    /// Seconds with a throttle reason other than idle.
    pub throttled_s: f64,
}

/// Summary of a telemetry series (a run's `summary.json` keeps it as `telemetry`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct TelemetrySummary {
    /// Samples taken.
    pub samples: usize,
    /// Sampling interval, s.
    pub interval_s: f64,
    /// Seconds from the first to the last sample.
    pub duration_s: f64,
    /// Length of the first/last comparison windows, s.
    pub window_s: f64,
    /// Mean CPU utilisation over all CPUs, %.
    pub cpu_util_mean_pct: Option<f64>,
    /// Highest CPU utilisation, %.
    pub cpu_util_max_pct: Option<f64>,
    /// Highest memory in use, bytes.
    pub memory_used_max_bytes: Option<f64>,
    /// Mean CPU clock over the first window, MHz.
    pub cpu_clock_first_mhz: Option<f64>,
    /// Mean CPU clock over the last window, MHz.
    pub cpu_clock_last_mhz: Option<f64>,
    /// (first − last) / first, %.
    pub cpu_clock_drop_pct: Option<f64>,
    /// Per-GPU summaries (empty without NVML).
    pub gpus: Vec<GpuSummary>,
    /// Why GPUs were not sampled, when they were not.
    pub gpu_note: Option<String>,
}

/// A telemetry series and its summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Telemetry {
    /// Unix time of the first sample, ms.
    pub started_ms: i64,
    /// All readings.
    pub rows: Vec<Row>,
    /// The summary.
    pub summary: TelemetrySummary,
    /// `gpu<N>` → the GPU's UUID, for the GPUs sampled.
    pub gpu_uuids: BTreeMap<String, String>,
}

/// A running sampler; [`Sampler::stop`] ends it and returns the series.
#[derive(Debug)]
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Telemetry>>,
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Sampler {
    /// Starts sampling on a background thread.
    pub fn start(config: SamplerConfig) -> Result<Self, EnvError> {
        if config.interval < Duration::from_millis(10) {
            return Err(EnvError::InvalidParameter(format!(
                "telemetry interval {:?} is below 10 ms",
                config.interval
            )));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("yardstick-telemetry".into())
            .spawn(move || sample_loop(&config, &flag))
            .map_err(|e| EnvError::Sampler(e.to_string()))?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops sampling (takes one last sample) and returns the series.
    pub fn stop(mut self) -> Result<Telemetry, EnvError> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .expect("joined once")
            .join()
            .map_err(|_| EnvError::Sampler("the sampling thread panicked".into()))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn sample_loop(config: &SamplerConfig, stop: &AtomicBool) -> Telemetry {
    use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};
    let mut sys = System::new_with_specifics(
        RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::nothing().with_cpu_usage().with_frequency())
            .with_memory(MemoryRefreshKind::nothing().with_ram()),
    );
    let (nvml, gpu_note) = if config.gpus {
        match NvmlSession::open() {
            Ok(s) => (Some(s), None),
            Err(reason) => (None, Some(reason.to_string())),
        }
    } else {
        (None, Some("GPU sampling disabled".to_owned()))
    };
    let started = Instant::now();
    let started_ms = unix_ms();
    let mut rows = Vec::new();
    let mut k: u32 = 0;
    let mut first = true;
    loop {
        let deadline = started + config.interval * k;
        // Sleep in short steps so stop() returns promptly.
        while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
            let left = deadline.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        let last = stop.load(Ordering::Relaxed);
        let from = rows.len();
        let ts = unix_ms();
        let elapsed = started.elapsed().as_secs_f64();
        let mut push = |device: &str, metric: &str, value: Option<f64>| {
            if let Some(v) = value.filter(|v| v.is_finite()) {
                rows.push(Row {
                    timestamp_ms: ts,
                    elapsed_s: elapsed,
                    device: device.to_owned(),
                    metric: metric.to_owned(),
                    value: v,
                });
            }
        };
        sys.refresh_cpu_specifics(CpuRefreshKind::nothing().with_cpu_usage().with_frequency());
        sys.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
        // CPU usage is a difference between two refreshes: the first sample has none.
        if !first {
            push(
                "host",
                "cpu_util_pct",
                Some(f64::from(sys.global_cpu_usage())),
            );
        }
        let cpus = sys.cpus();
        if !cpus.is_empty() {
            let mhz = cpus.iter().map(|c| c.frequency() as f64).sum::<f64>() / cpus.len() as f64;
            push("host", "cpu_clock_mhz", (mhz > 0.0).then_some(mhz));
        }
        push(
            "host",
            "memory_used_bytes",
            Some(sys.total_memory().saturating_sub(sys.available_memory()) as f64),
        );
        if let Some(n) = &nvml {
            for i in 0..n.count() {
                let s = n.sample(i);
                let dev = format!("gpu{i}");
                push(&dev, "util_pct", s.utilization_pct);
                push(&dev, "memory_util_pct", s.memory_utilization_pct);
                push(&dev, "memory_used_bytes", s.memory_used_bytes);
                push(&dev, "sm_clock_mhz", s.sm_clock_mhz);
                push(&dev, "mem_clock_mhz", s.mem_clock_mhz);
                push(&dev, "energy_mj", s.energy_mj);
                push(&dev, "power_w", s.power_w);
                push(&dev, "temperature_c", s.temperature_c);
                push(
                    &dev,
                    "throttle_reasons",
                    s.throttle_reasons.map(|b| b as f64),
                );
            }
        }
        if let Some(f) = &config.on_sample {
            (f.0)(&rows[from..]);
        }
        first = false;
        if last {
            break;
        }
        k += 1;
        // A slow sample (NVML on a busy machine) skips missed deadlines instead of bursting.
        let next = started + config.interval * k;
        if Instant::now() > next {
            k = (started.elapsed().as_secs_f64() / config.interval.as_secs_f64()).ceil() as u32;
        }
    }
    let mut summary = summarize(&rows, config.interval);
    summary.gpu_note = gpu_note;
    let gpu_uuids = nvml.as_ref().map(NvmlSession::uuids).unwrap_or_default();
    Telemetry {
        started_ms,
        rows,
        summary,
        gpu_uuids,
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Summarises a series sampled every `interval`.
pub fn summarize(rows: &[Row], interval: Duration) -> TelemetrySummary {
    let mut series: BTreeMap<(&str, &str), Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        series
            .entry((r.device.as_str(), r.metric.as_str()))
            .or_default()
            .push((r.elapsed_s, r.value));
    }
    let mut times: Vec<f64> = rows.iter().map(|r| r.elapsed_s).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let duration = match (times.first(), times.last()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    };
    let window = 60.0f64.min(duration / 3.0);
    let values = |dev: &str, metric: &str| -> Vec<f64> {
        series
            .get(&(dev, metric))
            .map(|v| v.iter().map(|(_, x)| *x).collect())
            .unwrap_or_default()
    };
    let first_last = |dev: &str, metric: &str| -> (Option<f64>, Option<f64>, Option<f64>) {
        let Some(s) = series.get(&(dev, metric)) else {
            return (None, None, None);
        };
        let t0 = times.first().copied().unwrap_or(0.0);
        let t1 = times.last().copied().unwrap_or(0.0);
        let head: Vec<f64> = s
            .iter()
            .filter(|(t, _)| *t <= t0 + window)
            .map(|p| p.1)
            .collect();
        let tail: Vec<f64> = s
            .iter()
            .filter(|(t, _)| *t >= t1 - window)
            .map(|p| p.1)
            .collect();
        let (a, b) = (mean(&head), mean(&tail));
        let drop = match (a, b) {
            (Some(a), Some(b)) if a > 0.0 => Some((a - b) / a * 100.0),
            _ => None,
        };
        (a, b, drop)
    };
    let cpu = values("host", "cpu_util_pct");
    let (cf, cl, cd) = first_last("host", "cpu_clock_mhz");
    let mut gpu_indices: Vec<u32> = rows
        .iter()
        .filter_map(|r| r.device.strip_prefix("gpu")?.parse().ok())
        .collect();
    gpu_indices.sort_unstable();
    gpu_indices.dedup();
    let gpus = gpu_indices
        .into_iter()
        .map(|i| {
            let dev = format!("gpu{i}");
            let (f, l, d) = first_last(&dev, "sm_clock_mhz");
            let throttled = values(&dev, "throttle_reasons")
                .iter()
                .filter(|b| is_throttling(**b as u64))
                .count();
            GpuSummary {
                index: i,
                util_mean_pct: mean(&values(&dev, "util_pct")),
                power_mean_w: mean(&values(&dev, "power_w")),
                temperature_max_c: values(&dev, "temperature_c").into_iter().reduce(f64::max),
                sm_clock_first_mhz: f,
                sm_clock_last_mhz: l,
                clock_drop_pct: d,
                throttled_s: throttled as f64 * interval.as_secs_f64(),
            }
        })
        .collect();
    TelemetrySummary {
        samples: times.len(),
        interval_s: interval.as_secs_f64(),
        duration_s: duration,
        window_s: window,
        cpu_util_mean_pct: mean(&cpu),
        cpu_util_max_pct: cpu.iter().copied().reduce(f64::max),
        memory_used_max_bytes: values("host", "memory_used_bytes")
            .into_iter()
            .reduce(f64::max),
        cpu_clock_first_mhz: cf,
        cpu_clock_last_mhz: cl,
        cpu_clock_drop_pct: cd,
        gpus,
        gpu_note: None,
    }
}

/// Join keys stored in every row of a telemetry file (docs/warehouse.md): constants of the run
/// (`run_id`, `benchmark`, `node`, Slurm job and step, Kubernetes namespace and pod; null where
/// they do not apply), and each GPU's UUID for its rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JoinKeys {
    /// (column, value) of every row, in column order.
    pub constant: Vec<(String, Option<String>)>,
    /// `gpu<N>` → the GPU's UUID (the `gpu_uuid` column; null for `host` rows).
    pub gpu_uuids: BTreeMap<String, String>,
}

/// Writes rows as a Parquet file (zstd): `timestamp_ms`, `elapsed_s`, `device`, `metric`,
/// `value`, then the constant join keys and `gpu_uuid`.
pub fn write_parquet(path: &Path, rows: &[Row], keys: &JoinKeys) -> Result<(), EnvError> {
    let err = |e: parquet::errors::ParquetError| EnvError::Parquet {
        path: PathBuf::from(path),
        message: e.to_string(),
    };
    let mut schema = String::from(
        "message telemetry {
    REQUIRED INT64 timestamp_ms (TIMESTAMP(MILLIS,true));
    REQUIRED DOUBLE elapsed_s;
    REQUIRED BYTE_ARRAY device (UTF8);
    REQUIRED BYTE_ARRAY metric (UTF8);
    REQUIRED DOUBLE value;
",
    );
    for (name, _) in &keys.constant {
        schema.push_str(&format!("    OPTIONAL BYTE_ARRAY {name} (UTF8);\n"));
    }
    schema.push_str("    OPTIONAL BYTE_ARRAY gpu_uuid (UTF8);\n}");
    let schema = Arc::new(parse_message_type(&schema).map_err(err)?);
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build(),
    );
    let file = File::create(path).map_err(|source| EnvError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut writer = SerializedFileWriter::new(file, schema, props).map_err(err)?;
    let mut group = writer.next_row_group().map_err(err)?;
    let mut index = 0;
    // An optional string column: its values and definition levels.
    let optional = |values: Vec<Option<&str>>| {
        let def: Vec<i16> = values.iter().map(|v| i16::from(v.is_some())).collect();
        let present: Vec<ByteArray> = values.into_iter().flatten().map(ByteArray::from).collect();
        (present, def)
    };
    while let Some(mut col) = group.next_column().map_err(err)? {
        match index {
            0 => {
                let v: Vec<i64> = rows.iter().map(|r| r.timestamp_ms).collect();
                col.typed::<Int64Type>()
                    .write_batch(&v, None, None)
                    .map_err(err)?;
            }
            1 | 4 => {
                let v: Vec<f64> = rows
                    .iter()
                    .map(|r| if index == 1 { r.elapsed_s } else { r.value })
                    .collect();
                col.typed::<DoubleType>()
                    .write_batch(&v, None, None)
                    .map_err(err)?;
            }
            2 | 3 => {
                let v: Vec<ByteArray> = rows
                    .iter()
                    .map(|r| {
                        ByteArray::from(if index == 2 {
                            r.device.as_str()
                        } else {
                            r.metric.as_str()
                        })
                    })
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, None, None)
                    .map_err(err)?;
            }
            i => {
                let values: Vec<Option<&str>> = match keys.constant.get(i - 5) {
                    Some((_, v)) => vec![v.as_deref(); rows.len()],
                    None => rows
                        .iter()
                        .map(|r| keys.gpu_uuids.get(&r.device).map(String::as_str))
                        .collect(),
                };
                let (present, def) = optional(values);
                col.typed::<ByteArrayType>()
                    .write_batch(&present, Some(&def), None)
                    .map_err(err)?;
            }
        }
        col.close().map_err(err)?;
        index += 1;
    }
    group.close().map_err(err)?;
    writer.close().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, dev: &str, metric: &str, v: f64) -> Row {
        Row {
            timestamp_ms: (t * 1e3) as i64,
            elapsed_s: t,
            device: dev.into(),
            metric: metric.into(),
            value: v,
        }
    }

    #[test]
    fn sustained_versus_peak_and_throttle_time() {
        // 10 minutes at 1 Hz: the SM clock sags from 1980 to 1755 MHz after 5 minutes while the
        // power cap (bit 0x4) is active.
        let mut rows = Vec::new();
        for s in 0..600 {
            let t = f64::from(s);
            let (clock, bits) = if s < 300 {
                (1980.0, 0.0)
            } else {
                (1755.0, 4.0)
            };
            rows.push(row(t, "gpu0", "sm_clock_mhz", clock));
            rows.push(row(t, "gpu0", "throttle_reasons", bits));
            rows.push(row(t, "gpu0", "util_pct", 97.0));
            rows.push(row(t, "host", "cpu_util_pct", 50.0));
        }
        let s = summarize(&rows, Duration::from_secs(1));
        assert_eq!(s.samples, 600);
        assert_eq!(s.window_s, 60.0);
        let g = &s.gpus[0];
        assert_eq!(g.sm_clock_first_mhz, Some(1980.0));
        assert_eq!(g.sm_clock_last_mhz, Some(1755.0));
        let drop = g.clock_drop_pct.unwrap();
        assert!((drop - 11.363_636).abs() < 1e-3, "{drop}");
        assert_eq!(g.throttled_s, 300.0);
        assert_eq!(s.cpu_util_mean_pct, Some(50.0));
    }

    #[test]
    fn idle_is_not_throttling() {
        let rows = vec![
            row(0.0, "gpu0", "throttle_reasons", 1.0), // GPU_IDLE
            row(1.0, "gpu0", "throttle_reasons", 1.0),
        ];
        assert_eq!(
            summarize(&rows, Duration::from_secs(1)).gpus[0].throttled_s,
            0.0
        );
    }

    #[test]
    fn rejects_a_tiny_interval() {
        let cfg = SamplerConfig {
            interval: Duration::from_millis(1),
            gpus: false,
            on_sample: None,
        };
        assert!(Sampler::start(cfg).is_err());
    }
}
