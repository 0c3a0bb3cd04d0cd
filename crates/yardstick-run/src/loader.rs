//! One replicate of a `kind: dataloader` component point: one pass of the built-in reader over
//! the layer's `source` (`yardstick_workloads::loader`), or one run of the user's loader
//! command reporting its batches through the metric protocol, summarised as facts.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use yardstick_spec::metrics::{Measured, id};
use yardstick_spec::{CacheMode, LoaderFormat, LoaderSource};
use yardstick_workloads::loader::{Batch, ReaderConfig, list_files, read_pass, supply};

use yardstick_store::samples::{Column, Table};

use crate::RunError;
use crate::facts::Figures;
use crate::plan::{DATALOADER_TIMEOUT, Plan, PointWork};
use crate::replicate::ReplicateOutcome;

/// Default samples per batch of the built-in reader.
pub const DEFAULT_BATCH: u32 = 32;
/// Default reader threads of the built-in reader.
pub const DEFAULT_WORKERS: u32 = 2;

fn batch_table(batches: &[Batch]) -> Table {
    Table::new()
        .with("batch", Column::I64((0..batches.len() as i64).collect()))
        .with(
            "wait_ms",
            Column::F64(batches.iter().map(|b| b.wait_s * 1e3).collect()),
        )
        .with(
            "samples",
            Column::I64(batches.iter().map(|b| b.samples as i64).collect()),
        )
        .with(
            "bytes",
            Column::I64(batches.iter().map(|b| b.bytes as i64).collect()),
        )
}

fn reader_config(src: &LoaderSource, spec_dir: Option<&Path>, cache: &str) -> ReaderConfig {
    let path = PathBuf::from(src.path.clone().unwrap_or_default());
    ReaderConfig {
        dir: match spec_dir {
            Some(d) if path.is_relative() => d.join(path),
            _ => path,
        },
        pattern: src.pattern.clone(),
        format: src.format.unwrap_or(LoaderFormat::Raw),
        batch: src.batch.unwrap_or(DEFAULT_BATCH) as usize,
        workers: src.workers.unwrap_or(DEFAULT_WORKERS) as usize,
        cache: cache_mode(cache),
    }
}

fn cache_mode(cache: &str) -> CacheMode {
    if cache == "cold" {
        CacheMode::Cold
    } else {
        CacheMode::Warm
    }
}

/// Refuses a plan whose built-in readers have nothing to read (a missing directory, no file
/// matching the pattern) before anything runs.
pub fn check_sources(plan: &Plan, spec_dir: Option<&Path>) -> Result<(), RunError> {
    for p in &plan.points {
        if let PointWork::Dataloader {
            source: Some(src),
            cache,
            ..
        } = &p.work
        {
            list_files(&reader_config(src, spec_dir, cache)).map_err(|e| {
                RunError::Invalid(format!(
                    "{}: {e} (source.path is relative to the spec's directory)",
                    p.id
                ))
            })?;
        }
    }
    Ok(())
}

/// Runs one pass of `work` (a [`PointWork::Dataloader`]). Its summary's facts are
/// `loader_samples_per_s`, `loader_mb_per_s`, `loader_first_batch_s`, `loader_batches` (each
/// `{"value": x}`) and `loader_batch_ms` (a distribution); `pass` describes what was read and how
/// cold it was; `error` when the pass failed. Its figures come from the batches' supply, one
/// sample row per batch the loop received (`batch`, `wait_ms`, `samples`, `bytes`), and a loader
/// command's `stdout.log` and `stderr.log` are its logs.
pub fn run_replicate(
    work: &PointWork,
    spec_dir: Option<&Path>,
    scratch: &Path,
    replicate: u32,
    cancel: CancellationToken,
) -> Result<ReplicateOutcome, RunError> {
    let PointWork::Dataloader {
        source,
        argv,
        cache,
        timeout,
        ..
    } = work
    else {
        return Err(RunError::Internal("not a dataloader point".into()));
    };
    let timeout = timeout.unwrap_or(DATALOADER_TIMEOUT);
    match source {
        Some(src) => Ok(builtin(
            &reader_config(src, spec_dir, cache),
            timeout,
            &cancel,
        )),
        None => command(argv, cache, timeout, scratch, replicate, cancel),
    }
}

fn builtin(cfg: &ReaderConfig, timeout: Duration, cancel: &CancellationToken) -> ReplicateOutcome {
    let files = match list_files(cfg) {
        Ok(f) => f,
        Err(e) => {
            return ReplicateOutcome::new(
                json!({ "error": e.to_string() }),
                Figures::new(Vec::new()),
            )
            .with_samples(batch_table(&[]));
        }
    };
    let start = Instant::now();
    let timed_out = std::cell::Cell::new(false);
    let stop = || {
        if start.elapsed() > timeout {
            timed_out.set(true);
        }
        timed_out.get() || cancel.is_cancelled()
    };
    let mut pass = read_pass(cfg, &files, &stop);
    if timed_out.get() {
        pass.error = Some(format!(
            "the pass did not finish within the timeout ({})",
            humantime::format_duration(timeout)
        ));
    }
    let described = json!({
        "reader": "built-in",
        "format": cfg.format.as_str(),
        "files": pass.files,
        "file_bytes": pass.file_bytes,
        "batch": cfg.batch,
        "workers": cfg.workers,
        "elapsed_s": pass.elapsed_s,
        "resident_before": pass.resident_before,
    });
    let mut s = summarise(&pass.batches, described);
    s.insert(
        "cache".into(),
        json!(match cfg.cache {
            CacheMode::Cold => "cold",
            CacheMode::Warm => "warm",
        }),
    );
    if cfg.cache == CacheMode::Cold {
        // The reader evicts its own files (no privilege needed) and checks how many pages stayed.
        s.insert(
            "cache_dropped".into(),
            json!(
                pass.resident_before
                    .is_some_and(|r| r <= yardstick_workloads::loader::COLD_RESIDENT_MAX)
            ),
        );
    }
    finish(s, pass.warnings, pass.error, &pass.batches, Vec::new())
}

/// The summary of a pass's batches, `pass` describing it.
fn summarise(batches: &[Batch], mut described: Value) -> Map<String, Value> {
    let mut s = Map::new();
    if let Some(sup) = supply(batches) {
        s.insert(
            id::LOADER_SAMPLES_PER_S.into(),
            json!({ "value": sup.samples_per_s }),
        );
        if let Some(mb) = sup.mb_per_s {
            s.insert(id::LOADER_MB_PER_S.into(), json!({ "value": mb }));
        }
        s.insert(
            id::LOADER_FIRST_BATCH_S.into(),
            json!({ "value": sup.first_batch_s }),
        );
        s.insert(id::LOADER_BATCHES.into(), json!({ "value": sup.batches }));
        if let Some(d) = &sup.batch_ms {
            s.insert(
                id::LOADER_BATCH_MS.into(),
                serde_json::to_value(d).expect("JSON"),
            );
        }
        described["samples"] = sup.samples.into();
        described["bytes"] = sup.bytes.into();
    }
    s.insert("pass".into(), described);
    s
}

fn finish(
    mut s: Map<String, Value>,
    mut warnings: Vec<String>,
    error: Option<String>,
    batches: &[Batch],
    logs: Vec<(String, Vec<u8>)>,
) -> ReplicateOutcome {
    let measured = s.contains_key(id::LOADER_SAMPLES_PER_S);
    match error {
        Some(e) => {
            s.insert("error".into(), e.into());
        }
        None if !measured => {
            s.insert(
                "error".into(),
                "the pass delivered no batch with time: nothing was measured".into(),
            );
        }
        None => {}
    }
    if s["pass"]["samples"].as_u64().is_some_and(|n| n > 0)
        && s[id::LOADER_BATCHES]["value"].as_u64() == Some(1)
    {
        warnings.push(
            "the pass delivered a single batch: there is no steady state apart from the first \
             batch (use more files or a smaller batch)"
                .into(),
        );
    }
    if !warnings.is_empty() {
        s.insert("warnings".into(), warnings.into());
    }
    let figures = Figures::new(
        supply(batches)
            .map(|s| s.measurements())
            .unwrap_or_default(),
    );
    ReplicateOutcome::new(s.into(), figures)
        .with_samples(batch_table(batches))
        .with_logs(logs)
}

/// The user's loader: runs the command with `YARDSTICK_METRICS` set, one metric-protocol line
/// per batch (`samples`, and `step_time_s` or `data_wait_s` for the time the batch took;
/// `bytes` when known).
fn command(
    argv: &[String],
    cache: &str,
    timeout: Duration,
    scratch: &Path,
    replicate: u32,
    cancel: CancellationToken,
) -> Result<ReplicateOutcome, RunError> {
    use yardstick_exec::process::{ProcessSpec, run_process};
    let dir = scratch.join("dataloader");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| RunError::Internal(e.to_string()))?;
    let metrics = dir.join("metrics.jsonl");
    let spec = |metrics: &Path| ProcessSpec {
        argv: argv.to_vec(),
        env: vec![
            (
                yardstick_exec::protocol::ENV_METRICS.into(),
                metrics.display().to_string(),
            ),
            (
                yardstick_exec::protocol::ENV_REPLICATE.into(),
                replicate.to_string(),
            ),
        ],
        cwd: None,
        stdout: Some(dir.join("stdout.log")),
        stderr: Some(dir.join("stderr.log")),
        timeout: Some(timeout),
        kill_grace: Duration::from_secs(5),
    };
    let mut warnings = Vec::new();
    let mut dropped = None;
    match cache_mode(cache) {
        CacheMode::Warm => {
            // A discarded pass first: the loader's files are read in before the measured one.
            let warmup = dir.join("warmup.jsonl");
            match run_process(&spec(&warmup), Some(&cancel)) {
                Ok(o) if o.exit_code == Some(0) => {}
                Ok(o) => warnings.push(format!(
                    "the discarded warm-up pass did not exit cleanly (exit code {:?}, signal {:?})",
                    o.exit_code, o.signal
                )),
                Err(e) => warnings.push(format!("the discarded warm-up pass failed: {e}")),
            }
            let _ = std::fs::remove_file(&warmup);
        }
        CacheMode::Cold => match yardstick_env::pagecache::drop_page_cache() {
            Ok(()) => dropped = Some(true),
            Err(why) => {
                dropped = Some(false);
                warnings.push(format!(
                    "cold pass asked for, but the page cache could not be dropped ({why}): this \
                     pass is not cold (run as root, or give the layer a `source` so the \
                     built-in reader evicts its own files)"
                ));
            }
        },
    }
    let outcome =
        run_process(&spec(&metrics), Some(&cancel)).map_err(|e| RunError::Workload(e.to_string()));
    let mut logs = Vec::new();
    for name in ["stdout.log", "stderr.log"] {
        if let Ok(bytes) = std::fs::read(dir.join(name)) {
            logs.push((name.to_string(), bytes));
        }
    }
    let parsed = yardstick_exec::protocol::read_metrics(&metrics)
        .map_err(|e| RunError::Workload(e.to_string()));
    let _ = std::fs::remove_dir_all(&dir);
    let outcome = outcome?;
    let parsed = parsed?;
    let batches: Vec<Batch> = parsed
        .records
        .iter()
        .filter_map(|r| {
            Some(Batch {
                wait_s: r.step_time_s.or(r.data_wait_s)?,
                samples: r.samples?.max(0.0).round() as u64,
                bytes: r.bytes.unwrap_or(0.0).max(0.0).round() as u64,
            })
        })
        .collect();
    if parsed.malformed_count > 0 {
        warnings.push(format!(
            "{} metric line(s) could not be read (first: line {})",
            parsed.malformed_count,
            parsed.malformed.first().map_or(0, |m| m.line)
        ));
    }
    let skipped = parsed.records.len() - batches.len();
    if skipped > 0 {
        warnings.push(format!(
            "{skipped} metric record(s) lacked `samples` or a time (`step_time_s` or \
             `data_wait_s`) and are not batches"
        ));
    }
    let described = json!({
        "reader": "command",
        (id::WALL_S): outcome.wall_s,
        (id::MAX_RSS_BYTES): outcome.max_rss_bytes,
        (id::EXIT_CODE): outcome.exit_code,
    });
    let mut s = summarise(&batches, described);
    s.insert("cache".into(), cache.into());
    if let Some(d) = dropped {
        s.insert("cache_dropped".into(), d.into());
    }
    let error = if outcome.timed_out {
        Some(format!(
            "the loader did not finish within the timeout ({})",
            humantime::format_duration(timeout)
        ))
    } else if outcome.exit_code != Some(0) {
        Some(format!(
            "the loader exited with {}",
            match (outcome.exit_code, outcome.signal) {
                (Some(c), _) => format!("code {c}"),
                (None, Some(sig)) => format!("signal {sig}"),
                _ => "an unknown status".into(),
            }
        ))
    } else if batches.is_empty() {
        Some(
            "the loader reported no batch: write one metric-protocol line per batch to \
             $YARDSTICK_METRICS with `samples` and `step_time_s` (see docs/metric-protocol.md)"
                .into(),
        )
    } else {
        None
    };
    Ok(finish(s, warnings, error, &batches, logs))
}
