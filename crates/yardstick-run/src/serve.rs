//! The serve executor: one replicate of one (scenario, load) point is one `ServeBench` with a fresh
//! connection pool; raw request records become a Parquet table.

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use yardstick_load::summary::CostModel;
use yardstick_load::{
    Arrival, ErrorClass, LoadModel, Progress, PromptTokenSource, RequestRecord, ServeBench,
    TokenSource,
};
use yardstick_store::samples::{Column, Table};

use crate::RunError;
use crate::facts::Figures;
use crate::placement::ServeShards;
use crate::plan::PointWork;
use crate::replicate::ReplicateOutcome;
use crate::step::StepContext;
use yardstick_spec::metrics::{Measured, Measurement, id};

/// The outcome of one serve replicate run in this process: the point summary as JSON (the shape
/// `bench serve --json` prints per point), its figures from the typed summary, one sample row
/// per request, and the server's metrics, one row per scrape, kept beside the logs as
/// `server-metrics.parquet`.
fn outcome(
    summary: serde_json::Value,
    measurements: Vec<Measurement>,
    samples: Table,
    server_series: Option<Table>,
) -> ReplicateOutcome {
    let out = ReplicateOutcome::new(summary, Figures::new(measurements)).with_samples(samples);
    match server_series {
        Some(t) => out.with_log_table("server-metrics.parquet", t),
        None => out,
    }
}

/// One row per scrape of the server's metrics: seconds since the first scrape and each
/// reading (empty cells where the server does not export it).
pub fn server_series_table(rows: &[yardstick_load::scrape::Reading]) -> Option<Table> {
    if rows.is_empty() {
        return None;
    }
    let col = |f: fn(&yardstick_load::scrape::Reading) -> Option<f64>| {
        Column::OptF64(rows.iter().map(f).collect())
    };
    Some(
        Table::new()
            .with(
                "t_s",
                Column::OptF64(rows.iter().map(|r| Some(r.t_s)).collect()),
            )
            .with("running", col(|r| r.running))
            .with("waiting", col(|r| r.waiting))
            .with("kv_cache_usage", col(|r| r.kv_usage))
            .with("preemptions_total", col(|r| r.preemptions))
            .with("prefix_cache_hits_total", col(|r| r.prefix_hits))
            .with("prefix_cache_queries_total", col(|r| r.prefix_queries))
            .with("ttft_seconds_sum", col(|r| r.ttft_sum_s))
            .with("ttft_seconds_count", col(|r| r.ttft_count))
            .with("queue_seconds_sum", col(|r| r.queue_sum_s))
            .with("queue_seconds_count", col(|r| r.queue_count)),
    )
}

/// Runs one replicate of a serve point (`cx`'s): split across the engine's processes and
/// merged when its placement does that (MLPerf scenarios and capacity searches are not split),
/// in this process otherwise.
pub(crate) fn run_point(cx: &mut StepContext<'_>) -> Result<ReplicateOutcome, RunError> {
    let work = &cx.point.work;
    let PointWork::Serve { url, .. } = work else {
        return Err(RunError::Internal("not a serve point".into()));
    };
    let url = cx.run.target(url.as_ref());
    if work.spans_group() {
        let shards = ServeShards {
            work,
            step: cx.name(),
            url: &url,
            seed: cx.seed,
            exe: cx.run.exe,
        };
        if let Some(out) = cx.placement.serve_shards(&shards) {
            return out;
        }
    }
    let progress = Arc::new(Progress::with_gauges(cx.run.gauges.clone()));
    // Hot metrics and traces while the step runs, labelled with the step's join keys; spans of
    // requests over the point's SLO are always kept.
    let PointWork::Serve { point, .. } = work else {
        return Err(RunError::Internal("not a serve point".into()));
    };
    let hot: Vec<_> = cx
        .run
        .hot
        .iter()
        .map(|sink| {
            let mut sink = sink.clone();
            sink.labels = vec![
                ("benchmark".into(), cx.run.benchmark.to_string()),
                ("run_id".into(), cx.run.run_id.to_string()),
                ("replicate".into(), cx.step.replicate.to_string()),
            ];
            // The node, and the Slurm job or pod when there is one.
            sink.labels.extend(
                yardstick_env::join::present()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v)),
            );
            sink.sampling.slo_ttft_ms = point.slo_ttft_ms;
            sink.sampling.slo_e2e_ms = point.slo_e2e_ms;
            sink
        })
        .collect();
    let tasks = {
        let _enter = cx.run.rt.enter();
        yardstick_load::hot::spawn_all(
            &hot,
            &progress,
            &Arc::new(std::sync::Mutex::new(cx.point.id.clone())),
        )
    };
    let out = run_replicate(
        cx.run.rt,
        work,
        &url,
        cx.seed,
        cx.run.cancel.clone(),
        progress,
    );
    let stats = cx.run.rt.block_on(yardstick_load::hot::finish_all(tasks));
    out.map(|mut o| {
        if !stats.is_empty() {
            o.summary["hot_metrics"] = serde_json::to_value(stats).expect("JSON");
        }
        o
    })
}

/// Runs one replicate of a serve point against `url`.
pub fn run_replicate(
    rt: &tokio::runtime::Runtime,
    work: &PointWork,
    url: &str,
    seed: u64,
    cancel: CancellationToken,
    progress: Arc<Progress>,
) -> Result<ReplicateOutcome, RunError> {
    let PointWork::Serve {
        point,
        capacity,
        cost,
        ..
    } = work
    else {
        return Err(RunError::Internal("not a serve point".into()));
    };
    let mut bench = point
        .bench(url, seed, cancel)
        .map_err(|e| RunError::Workload(e.to_string()))?;
    bench.cost = cost.map(cost_model);
    bench.energy = Some(energy());
    bench.eval = eval_mix_of(point).map_err(|e| RunError::Workload(e.to_string()))?;
    // The server's own metrics, when its base URL serves them (`/metrics`).
    bench.server_metrics = rt.block_on(yardstick_load::scrape::resolve(
        "auto",
        url,
        yardstick_load::scrape::DEFAULT_INTERVAL,
    ));
    if let Some(c) = capacity {
        return run_capacity(rt, &bench, c, progress);
    }
    if let Some(scenario) = point.mlperf_scenario() {
        let mut runs = rt
            .block_on(yardstick_load::mlperf::run(
                &bench,
                scenario,
                progress,
                |_, _, _| {},
            ))
            .map_err(|e| RunError::Workload(e.to_string()))?;
        let run = runs
            .pop()
            .ok_or_else(|| RunError::Workload("the MLPerf scenario produced no result".into()))?;
        let mut summary = serde_json::to_value(&run.point.summary).expect("summary is JSON");
        drop_timestamps(&mut summary);
        summary[id::MLPERF] = serde_json::to_value(&run.result).expect("result is JSON");
        let mut measurements = run.point.summary.measurements();
        measurements.extend(run.result.measurements());
        return Ok(outcome(
            summary,
            measurements,
            records_table(&run.point.records),
            server_series_table(&run.point.summary.server_series),
        ));
    }
    let mut results = rt
        .block_on(bench.run(progress, |_, _, _| {}))
        .map_err(|e| RunError::Workload(e.to_string()))?;
    let result = results
        .pop()
        .ok_or_else(|| RunError::Workload("the serve point produced no result".into()))?;
    let mut summary = serde_json::to_value(&result.summary).expect("summary is JSON");
    drop_timestamps(&mut summary);
    Ok(outcome(
        summary,
        result.summary.measurements(),
        records_table(&result.records),
        server_series_table(&result.summary.server_series),
    ))
}

/// One replicate of a capacity point: the whole search (`yardstick_load::capacity`), its answer
/// as facts (`capacity_rps` or `capacity_concurrency`, 0 when the SLO held at no load probed;
/// the throughput at the capacity; the probes) and the search itself under `capacity`.
fn run_capacity(
    rt: &tokio::runtime::Runtime,
    bench: &ServeBench,
    c: &crate::plan::CapacityPlan,
    progress: Arc<Progress>,
) -> Result<ReplicateOutcome, RunError> {
    use yardstick_load::capacity::{self, Axis, CapacityConfig, Criterion};
    let axis = if c.axis == "concurrency" {
        Axis::Concurrency
    } else {
        let arrival = match bench.loads.first() {
            Some(LoadModel::Rate { arrival, .. }) => *arrival,
            _ => Arrival::Poisson,
        };
        Axis::Rate {
            arrival,
            max_in_flight: None,
        }
    };
    let cfg = CapacityConfig {
        axis,
        slo: bench.slo.clone(),
        criterion: match c.attainment {
            Some(a) => Criterion::Attainment(a),
            None => Criterion::Percentile(c.percentile / 100.0),
        },
        confidence: c.confidence,
        start: c.start,
        max: c.max,
        min: (c.start / 1024.0).min(0.01),
        precision: c.precision,
        probe_requests: c.probe_requests,
        max_probe_requests: c.max_probe_requests,
        probe_duration: bench.stop.max_duration,
        max_probes: c.max_probes as usize,
    };
    let result = rt
        .block_on(capacity::find_capacity(bench, &cfg, progress, |_, _| {}))
        .map_err(|e| RunError::Workload(e.to_string()))?;
    let metric = if c.axis == "concurrency" {
        id::CAPACITY_CONCURRENCY
    } else {
        id::CAPACITY_RPS
    };
    let requests: u64 = result.probes.iter().map(|p| p.requests).sum();
    // The throughput at the capacity and (with a cost model) its price, when the search found
    // one: plain values in the summary as in the figures.
    let mut at_capacity = Vec::new();
    if let Some(t) = result.output_token_throughput {
        at_capacity.push(Measurement::value(id::CAPACITY_OUTPUT_TOKEN_THROUGHPUT, t));
        if let Some(c) = &bench.cost
            && let (Some(per_m), _) = c.of(t, 0.0)
        {
            at_capacity.push(Measurement::value(
                id::CAPACITY_COST_PER_1M_OUTPUT_TOKENS,
                per_m,
            ));
        }
    }
    let mut summary = serde_json::json!({
        metric: result.capacity.unwrap_or(0.0),
        (id::CAPACITY_PROBES): result.probes.len(),
        (id::REQUESTS): {"completed": requests},
        "load": {"mode": "capacity", "axis": c.axis},
        "capacity": result,
    });
    for m in &at_capacity {
        summary[&m.metric] = m.value.into();
    }
    // The figures of the search: the capacity, the probes it took, their requests, and those.
    let mut measurements = vec![
        Measurement::value(metric, result.capacity.unwrap_or(0.0)),
        Measurement::value(id::CAPACITY_PROBES, result.probes.len() as f64),
        Measurement::stat(id::REQUESTS, "completed", requests as f64),
    ];
    measurements.extend(at_capacity);
    if let Some(probes) = summary["capacity"]["probes"].as_array_mut() {
        for p in probes {
            drop_timestamps(&mut p["summary"]);
        }
    }
    Ok(outcome(summary, measurements, records_table(&[]), None))
}

/// The file every shard of one replicate of `work` reads (`yardstick bench serve --point-file`):
/// the point as it is planned, the target and the replicate's seed, written to `path`. Each
/// shard runs its `--shard I/N` of the same plan and arrivals.
pub fn write_shard_job(
    work: &PointWork,
    url: &str,
    seed: u64,
    path: &std::path::Path,
) -> Result<(), RunError> {
    let PointWork::Serve { point, .. } = work else {
        return Err(RunError::Internal("not a serve point".into()));
    };
    yardstick_load::point::ShardJob {
        url: url.to_string(),
        seed,
        point: point.clone(),
    }
    .write(path)
    .map_err(RunError::io(format!("writing {}", path.display())))
}

/// The command line of a shard of the job at `job` (before `--shard`, `--start-at`, `--output`).
pub fn shard_args(job: &std::path::Path) -> Vec<std::ffi::OsString> {
    vec![
        "--quiet".into(),
        "bench".into(),
        "serve".into(),
        "--point-file".into(),
        job.into(),
    ]
}

/// A common start a moment ahead (unix seconds), so every shard's schedule has the same origin.
pub fn start_ahead() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
        + 2.0
}

/// Merges the shard directories `dirs` (each `bench serve --output` of one shard) exactly into
/// one point: the same summary and samples as one process would give, `load.shards` set.
/// The cost model of a serve point's `cost` (dollars per accelerator-hour, accelerators).
fn cost_model((per_accelerator_hour, accelerators): (f64, u32)) -> CostModel {
    CostModel {
        per_accelerator_hour,
        accelerators,
    }
}

/// The shards of one replicate of `work` merged into its outcome, priced like one process's
/// point when `work` has a cost. The shards' scrapes of the server's metrics are not kept.
pub fn merge_shards(
    work: &PointWork,
    dirs: &[std::path::PathBuf],
) -> Result<ReplicateOutcome, RunError> {
    let n = dirs.len();
    let merged = yardstick_load::shard_files::merge_dirs(dirs, &ParquetRecords)
        .map_err(|e| RunError::Workload(format!("merging the {n} shards: {e}")))?;
    let mut result = merged
        .results
        .into_iter()
        .next()
        .ok_or_else(|| RunError::Workload("the shards hold no point".into()))?;
    if let PointWork::Serve {
        cost: Some(cost), ..
    } = work
    {
        result.summary.price(&cost_model(*cost));
    }
    let mut summary = serde_json::to_value(&result.summary).expect("summary is JSON");
    drop_timestamps(&mut summary);
    if let Some(load) = summary.get_mut("load").and_then(|l| l.as_object_mut()) {
        load.insert("shards".into(), n.into());
    }
    Ok(
        ReplicateOutcome::new(summary, Figures::new(result.summary.measurements()))
            .with_samples(records_table(&result.records)),
    )
}

/// A point's schedule origin is a wall-clock timestamp, not a measurement: it stays in the raw
/// samples (`scheduled_ns`) and out of the facts.
fn drop_timestamps(summary: &mut serde_json::Value) {
    if let Some(o) = summary.as_object_mut() {
        o.remove("schedule_origin_ns");
    }
}

/// Raw request records as a table: timestamps in unix nanoseconds, derived latencies in ms
/// (from the scheduled time, docs/metrics.md), the inter-token gaps as a list column.
pub fn records_table(records: &[RequestRecord]) -> Table {
    let ns = |f: fn(&RequestRecord) -> Option<u64>| -> Column {
        Column::OptI64(records.iter().map(|r| f(r).map(|v| v as i64)).collect())
    };
    let since_sched = |f: fn(&RequestRecord) -> Option<u64>| -> Column {
        Column::OptF64(
            records
                .iter()
                .map(|r| f(r).map(|t| (t as f64 - r.scheduled_ns as f64) / 1e6))
                .collect(),
        )
    };
    let table = Table::new()
        .with(
            "index",
            Column::I64(records.iter().map(|r| r.index as i64).collect()),
        )
        .with(
            "request_id",
            Column::Str(records.iter().map(|r| r.request_id.clone()).collect()),
        )
        .with(
            "warmup",
            Column::Bool(records.iter().map(|r| r.warmup).collect()),
        )
        .with(
            "planned_input_tokens",
            Column::I64(
                records
                    .iter()
                    .map(|r| r.planned_input_tokens as i64)
                    .collect(),
            ),
        )
        .with(
            "planned_output_tokens",
            Column::OptI64(
                records
                    .iter()
                    .map(|r| r.planned_output_tokens.map(|v| v as i64))
                    .collect(),
            ),
        )
        .with(
            "scheduled_ns",
            Column::I64(records.iter().map(|r| r.scheduled_ns as i64).collect()),
        )
        .with("sent_ns", ns(|r| r.sent_ns))
        .with("first_byte_ns", ns(|r| r.first_byte_ns))
        .with("first_content_ns", ns(|r| r.first_content_ns))
        .with("last_content_ns", ns(|r| r.last_content_ns))
        .with("done_ns", ns(|r| r.done_ns))
        .with(id::TTFT_MS, since_sched(|r| r.first_content_ns))
        // As the summary counts it: a stream's last content event, else (non-streamed,
        // embeddings) the response's completion.
        .with(
            id::E2E_MS,
            Column::OptF64(records.iter().map(RequestRecord::e2e_ms).collect()),
        )
        .with(id::CLIENT_QUEUE_MS, since_sched(|r| r.sent_ns))
        .with(
            "status",
            Column::OptI64(records.iter().map(|r| r.status.map(i64::from)).collect()),
        )
        .with(
            "error",
            Column::OptStr(
                records
                    .iter()
                    .map(|r| r.error.map(|e| e.name().to_string()))
                    .collect(),
            ),
        )
        .with(
            "prompt_tokens",
            Column::OptI64(
                records
                    .iter()
                    .map(|r| r.prompt_tokens.map(|v| v as i64))
                    .collect(),
            ),
        )
        .with(
            "output_tokens",
            Column::OptI64(
                records
                    .iter()
                    .map(|r| r.output_tokens.map(|v| v as i64))
                    .collect(),
            ),
        )
        .with(
            "prompt_tokens_source",
            Column::OptStr(
                records
                    .iter()
                    .map(|r| r.prompt_tokens_source.map(|s| s.name().to_string()))
                    .collect(),
            ),
        )
        .with(
            "output_tokens_source",
            Column::OptStr(
                records
                    .iter()
                    .map(|r| {
                        r.output_tokens_source.map(|s| {
                            serde_json::to_value(s)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_owned))
                                .unwrap_or_default()
                        })
                    })
                    .collect(),
            ),
        )
        .with(
            id::ITL_MS,
            Column::ListF64(
                records
                    .iter()
                    .map(|r| {
                        r.content_event_ns
                            .windows(2)
                            .map(|w| (w[1] as f64 - w[0] as f64) / 1e6)
                            .collect()
                    })
                    .collect(),
            ),
        )
        // Lossless extras, so the records can be read back exactly (`records_from_rows`,
        // merging shards): content event arrivals as offsets from the first one (whole
        // nanoseconds, exact in a double), and the counts the summary uses.
        .with(
            "content_event_offsets_ns",
            Column::ListF64(
                records
                    .iter()
                    .map(|r| {
                        let t0 = r.content_event_ns.first().copied().unwrap_or(0);
                        r.content_event_ns
                            .iter()
                            .map(|t| t.saturating_sub(t0) as f64)
                            .collect()
                    })
                    .collect(),
            ),
        )
        .with(
            "content_events",
            Column::I64(records.iter().map(|r| r.content_events as i64).collect()),
        )
        .with(
            "content_bytes",
            Column::I64(records.iter().map(|r| r.content_bytes as i64).collect()),
        )
        .with(
            "local_output_tokens",
            Column::OptI64(
                records
                    .iter()
                    .map(|r| r.local_output_tokens.map(|v| v as i64))
                    .collect(),
            ),
        )
        .with(
            "error_message",
            Column::OptStr(records.iter().map(|r| r.error_message.clone()).collect()),
        )
        // Sessions, reasoning and the prefix cache.
        .with("session", opt(records, |r| r.session))
        .with("turn", opt(records, |r| r.turn.map(u64::from)))
        .with(
            "session_turns",
            opt(records, |r| r.session_turns.map(u64::from)),
        )
        .with("first_answer_ns", ns(|r| r.first_answer_ns))
        .with(id::ANSWER_TTFT_MS, since_sched(|r| r.first_answer_ns))
        .with(id::REASONING_TOKENS, opt(records, |r| r.reasoning_tokens))
        .with(
            "reasoning_events",
            Column::I64(records.iter().map(|r| r.reasoning_events as i64).collect()),
        )
        .with(
            "cached_prompt_tokens",
            opt(records, |r| r.cached_prompt_tokens),
        );
    // The model of each request, only when the run mixed models (a single model's table is
    // as it always was).
    let table = if records.iter().any(|r| r.model.is_some()) {
        table.with(
            "model",
            Column::OptStr(records.iter().map(|r| r.model.clone()).collect()),
        )
    } else {
        table
    };
    let table = if records.iter().any(|r| r.image_bytes.is_some()) {
        table.with("image_bytes", opt(records, |r| r.image_bytes))
    } else {
        table
    };
    // The kind of each request and the check of its answer (`valid` is 1 or 0, so
    // `avg(valid)` is the valid rate), only when the run mixed request kinds.
    // Join keys with the server's traces and logs.
    let table = if records.iter().any(|r| r.trace_id.is_some()) {
        table.with(
            "trace_id",
            Column::OptStr(records.iter().map(|r| r.trace_id.clone()).collect()),
        )
    } else {
        table
    };
    let table = if records.iter().any(|r| r.response_id.is_some()) {
        table.with(
            "response_id",
            Column::OptStr(records.iter().map(|r| r.response_id.clone()).collect()),
        )
    } else {
        table
    };
    let table = if records.iter().any(|r| r.eval_task.is_some()) {
        table.with(
            "eval_task",
            Column::OptStr(records.iter().map(|r| r.eval_task.clone()).collect()),
        )
    } else {
        table
    };
    if records.iter().any(|r| r.kind.is_some()) {
        table
            .with(
                "kind",
                Column::OptStr(
                    records
                        .iter()
                        .map(|r| r.kind.map(|k| k.name().to_string()))
                        .collect(),
                ),
            )
            .with("valid", opt(records, |r| r.valid.map(u64::from)))
            .with(
                "invalid_reason",
                Column::OptStr(records.iter().map(|r| r.invalid_reason.clone()).collect()),
            )
    } else {
        table
    }
}

fn opt(records: &[RequestRecord], f: impl Fn(&RequestRecord) -> Option<u64>) -> Column {
    Column::OptI64(records.iter().map(|r| f(r).map(|v| v as i64)).collect())
}

/// Why a row of a [`records_table`] Parquet file is not a request record.
#[derive(Debug, thiserror::Error)]
#[error("row {row}: {problem}")]
pub struct RecordRowError {
    /// The row's index.
    pub row: usize,
    /// What is wrong with it.
    pub problem: RecordRowProblem,
}

/// What is wrong with a row of a [`records_table`] Parquet file.
#[derive(Debug, thiserror::Error)]
pub enum RecordRowProblem {
    /// A required column is missing or not an integer.
    #[error("no `{0}`")]
    Missing(String),
    /// An error class this version does not know.
    #[error("unknown error class `{0}`")]
    ErrorClass(String),
    /// A prompt token source this version does not know.
    #[error("unknown prompt token source `{0}`")]
    PromptTokenSource(String),
    /// An output token source this version does not know.
    #[error("unknown token source `{0}`")]
    TokenSource(String),
}

/// Reads records back from the rows of a [`records_table`] Parquet file
/// (`yardstick_store::samples::read_rows`), exactly: every timestamp and count the summary
/// uses. Files written before the lossless columns existed rebuild content events from the
/// inter-token gaps (to the nanosecond's rounding).
pub fn records_from_rows(rows: &[serde_json::Value]) -> Result<Vec<RequestRecord>, RecordRowError> {
    use serde_json::Value;
    let mut out = Vec::with_capacity(rows.len());
    for (k, row) in rows.iter().enumerate() {
        let bad = |problem: RecordRowProblem| RecordRowError { row: k, problem };
        let u = |name: &str| row.get(name).and_then(Value::as_i64).map(|v| v as u64);
        let req = |name: &str| u(name).ok_or_else(|| bad(RecordRowProblem::Missing(name.into())));
        let s = |name: &str| row.get(name).and_then(Value::as_str).map(str::to_owned);
        let mut r = RequestRecord::new(
            req("index")?,
            s("request_id").unwrap_or_default(),
            row.get("warmup").and_then(Value::as_bool).unwrap_or(false),
            req("planned_input_tokens")?,
            u("planned_output_tokens"),
            req("scheduled_ns")?,
        );
        r.sent_ns = u("sent_ns");
        r.first_byte_ns = u("first_byte_ns");
        r.first_content_ns = u("first_content_ns");
        r.last_content_ns = u("last_content_ns");
        r.done_ns = u("done_ns");
        r.status = u("status").map(|v| v as u16);
        r.error = match s("error").as_deref() {
            None => None,
            Some(name) => Some(
                ErrorClass::ALL
                    .into_iter()
                    .find(|e| e.name() == name)
                    .ok_or_else(|| bad(RecordRowProblem::ErrorClass(name.into())))?,
            ),
        };
        r.error_message = s("error_message");
        r.prompt_tokens = u("prompt_tokens");
        // Absent from records written before it existed.
        r.prompt_tokens_source = match s("prompt_tokens_source").as_deref() {
            None => None,
            Some(name) => Some(
                PromptTokenSource::from_name(name)
                    .ok_or_else(|| bad(RecordRowProblem::PromptTokenSource(name.into())))?,
            ),
        };
        r.output_tokens = u("output_tokens");
        r.output_tokens_source = match s("output_tokens_source").as_deref() {
            None => None,
            Some("server_usage") => Some(TokenSource::ServerUsage),
            Some("tokenizer") => Some(TokenSource::Tokenizer),
            Some("content_events") => Some(TokenSource::ContentEvents),
            Some(other) => return Err(bad(RecordRowProblem::TokenSource(other.into()))),
        };
        r.local_output_tokens = u("local_output_tokens");
        r.content_bytes = u("content_bytes").unwrap_or(0);
        let list = |name: &str| -> Option<Vec<f64>> {
            row.get(name)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
        };
        if let (Some(t0), Some(offsets)) = (r.first_content_ns, list("content_event_offsets_ns")) {
            r.content_event_ns = offsets.iter().map(|o| t0 + *o as u64).collect();
        } else if let (Some(t0), Some(gaps)) = (r.first_content_ns, list(id::ITL_MS)) {
            let mut t = t0 as f64;
            r.content_event_ns.push(t0);
            for g in gaps {
                t += g * 1e6;
                r.content_event_ns.push(t.round() as u64);
            }
        }
        r.content_events = u("content_events").unwrap_or(r.content_event_ns.len() as u64);
        r.session = u("session");
        r.turn = u("turn").map(|v| v as u32);
        r.session_turns = u("session_turns").map(|v| v as u32);
        r.first_answer_ns = u("first_answer_ns");
        r.reasoning_tokens = u(id::REASONING_TOKENS);
        r.reasoning_events = u("reasoning_events").unwrap_or(0);
        r.cached_prompt_tokens = u("cached_prompt_tokens");
        r.model = s("model");
        r.kind = s("kind").and_then(|k| k.parse().ok());
        r.valid = u("valid").map(|v| v != 0);
        r.invalid_reason = s("invalid_reason");
        r.eval_task = s("eval_task");
        r.trace_id = s("trace_id");
        r.response_id = s("response_id");
        r.image_bytes = u("image_bytes");
        out.push(r);
    }
    Ok(out)
}

/// `requests.parquet` of a `bench serve --output` directory: [`records_table`] over every
/// point's records, tagged with the point's index, scenario and load (`yardstick.kind = serve`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ParquetRecords;

impl yardstick_load::shard_files::RecordsFormat for ParquetRecords {
    fn encode(
        &self,
        results: &[yardstick_load::PointResult],
    ) -> Result<Vec<u8>, yardstick_load::shard_files::RecordsFormatError> {
        let all: Vec<RequestRecord> = results
            .iter()
            .flat_map(|r| r.records.iter().cloned())
            .collect();
        let mut points = Vec::new();
        let mut scenarios = Vec::new();
        let mut modes = Vec::new();
        let mut values = Vec::new();
        for (k, r) in results.iter().enumerate() {
            for _ in &r.records {
                points.push(k as i64);
                scenarios.push(r.summary.scenario.clone());
                modes.push(r.summary.load.mode.to_string());
                values.push(r.summary.load.value);
            }
        }
        records_table(&all)
            .with("point", Column::I64(points))
            .with("scenario", Column::Str(scenarios))
            .with("load_mode", Column::Str(modes))
            .with("load_value", Column::F64(values))
            .to_parquet(&[("yardstick.kind", "serve")])
            .map_err(Into::into)
    }

    fn server_series(
        &self,
        dir: &std::path::Path,
        k: usize,
    ) -> Option<Vec<yardstick_load::scrape::Reading>> {
        let bytes = std::fs::read(dir.join(format!("server-metrics-p{k}.parquet"))).ok()?;
        let rows = yardstick_store::samples::read_rows(bytes).ok()?;
        let readings: Vec<_> = rows
            .iter()
            .map(|r| {
                let f = |name: &str| r.get(name).and_then(serde_json::Value::as_f64);
                yardstick_load::scrape::Reading {
                    t_s: f("t_s").unwrap_or(0.0),
                    running: f("running"),
                    waiting: f("waiting"),
                    kv_usage: f("kv_cache_usage"),
                    preemptions: f("preemptions_total"),
                    prefix_hits: f("prefix_cache_hits_total"),
                    prefix_queries: f("prefix_cache_queries_total"),
                    ttft_sum_s: f("ttft_seconds_sum"),
                    ttft_count: f("ttft_seconds_count"),
                    queue_sum_s: f("queue_seconds_sum"),
                    queue_count: f("queue_seconds_count"),
                }
            })
            .collect();
        (!readings.is_empty()).then_some(readings)
    }

    fn decode(
        &self,
        bytes: Vec<u8>,
    ) -> Result<
        yardstick_load::shard_files::PointRecords,
        yardstick_load::shard_files::RecordsFormatError,
    > {
        let rows = yardstick_store::samples::read_rows(bytes)?;
        let recs = records_from_rows(&rows)?;
        Ok(rows
            .iter()
            .zip(recs)
            .map(|(row, rec)| (row["point"].as_u64(), rec))
            .collect())
    }
}

/// Resolves each serve and eval target's `caCert` and `tokenizer` (the frozen copy in `frozen`'s
/// run directory when it has one, else relative to `base`, the spec's directory) and reads each
/// file once, before any work: a CA file without a usable certificate or a tokenizer that does not
/// load is invalid input (exit 2), not a failure of every replicate. The points then carry the
/// resolved paths. Returns the files read (as the spec names them, resolved path) to store with
/// the run as `inputs/target/<slug>`.
pub fn resolve_target_files(
    plan: &mut crate::plan::Plan,
    base: Option<&std::path::Path>,
    frozen: Option<&std::path::Path>,
) -> Result<Vec<(String, std::path::PathBuf)>, RunError> {
    let mut read: Vec<(String, std::path::PathBuf)> = Vec::new();
    for p in &mut plan.points {
        if let PointWork::Serve { point, .. } = &mut p.work
            && point.request_kinds.is_some()
        {
            // The tools and schema: resolved and read now (a file that is not JSON or not a
            // schema refuses the run, exit 2), stored with the run.
            for file in [&mut point.tools, &mut point.json_schema]
                .into_iter()
                .flatten()
            {
                let spec_name = file.clone();
                let abs = crate::resolve_input(base, frozen, "target", &spec_name);
                *file = abs.display().to_string();
                if !read.iter().any(|(n, _)| *n == spec_name) {
                    read.push((spec_name, abs));
                }
            }
            point
                .kind_mix()
                .map_err(|e| RunError::Invalid(format!("{}: {e}", p.id)))?;
        }
        if let PointWork::Serve { point, .. } = &mut p.work
            && let Some(file) = &mut point.models_from
        {
            // The names: read now (an empty file or a name given twice refuses the run, exit
            // 2), weighted, stored with the run; the point then carries them as its mix.
            let spec_name = file.clone();
            let abs = crate::resolve_input(base, frozen, "target", &spec_name);
            *file = abs.display().to_string();
            let pairs = yardstick_load::plan::read_model_names(&abs, point.model_zipf)
                .map_err(|e| RunError::Invalid(format!("target.modelsFrom of {}: {e}", p.id)))?;
            point.models = Some(pairs);
            if !read.iter().any(|(n, _)| *n == spec_name) {
                read.push((spec_name, abs));
            }
        }
        if let PointWork::Serve { point, .. } = &mut p.work
            && let Some(m) = &mut point.eval_mix
        {
            // Task files: resolved, read and checked now (a bad line refuses the run, exit 2,
            // naming the file and line), stored with the run.
            for t in &mut m.tasks {
                if !yardstick_spec::rules::task_is_file(t) {
                    continue;
                }
                let spec_name = t.clone();
                let abs = crate::resolve_input(base, frozen, "target", &spec_name);
                *t = abs.display().to_string();
                if !read.iter().any(|(n, _)| *n == spec_name) {
                    read.push((spec_name, abs));
                }
            }
            eval_mix_of(point)
                .map_err(|e| RunError::Invalid(format!("evalMix of {}: {e}", p.id)))?;
        }
        let (ca_cert, tokenizer, dataset, trace) = match &mut p.work {
            PointWork::Serve { point, .. } => (
                &mut point.ca_cert,
                Some(&mut point.tokenizer),
                point.sessions.as_mut().map(|s| &mut s.dataset),
                point.trace.as_mut(),
            ),
            PointWork::Eval { ca_cert, .. } => (ca_cert, None, None, None),
            _ => continue,
        };
        if let Some(t) = trace {
            // The trace: read and checked whole now (a bad line refuses the run, exit 2, with
            // its file, line and column), then replayed from the resolved path.
            let spec_name = t.trace_file.clone();
            let abs = crate::resolve_input(base, frozen, "target", &spec_name);
            t.trace_file = abs.display().to_string();
            if !read.iter().any(|(n, _)| *n == spec_name) {
                t.load()
                    .map_err(|e| RunError::Invalid(format!("load.trace.file of {}: {e}", p.id)))?;
                read.push((spec_name, abs));
            }
        }
        let fields = [(ca_cert, "caCert")]
            .into_iter()
            .chain(tokenizer.map(|t| (t, "tokenizer")))
            .chain(dataset.map(|d| (d, "sessions.dataset")));
        for (field, name) in fields {
            let Some(path) = field.as_mut() else {
                continue;
            };
            let spec_name = path.clone();
            let abs = crate::resolve_input(base, frozen, "target", &spec_name);
            *path = abs.display().to_string();
            if read.iter().any(|(n, _)| *n == spec_name) {
                continue;
            }
            let checked = if name == "caCert" {
                yardstick_load::client::check_ca_cert(&abs).map_err(|e| e.to_string())
            } else if name == "sessions.dataset" {
                yardstick_load::session::load_conversations(&abs)
                    .map(drop)
                    .map_err(|e| e.to_string())
            } else {
                yardstick_load::tokenizer::LocalTokenizer::from_file(&abs)
                    .map(drop)
                    .map_err(|e| e.to_string())
            };
            let field = if name == "sessions.dataset" {
                name.to_string()
            } else {
                format!("target.{name}")
            };
            checked.map_err(|e| RunError::Invalid(format!("{field} of {}: {e}", p.id)))?;
            read.push((spec_name, abs));
        }
    }
    Ok(read)
}

/// The eval items of a point's `evalMix` (its task files already resolved), built into what
/// [`yardstick_load::ServeBench::eval`] sends.
pub fn eval_mix_of(
    point: &yardstick_load::point::ServePoint,
) -> Result<Option<Arc<yardstick_load::evalmix::EvalMix>>, yardstick_eval::EvalError> {
    let Some(m) = &point.eval_mix else {
        return Ok(None);
    };
    yardstick_eval::load_mix(&m.tasks, m.share, m.max_tokens, Vec::new())
        .map(|mix| Some(Arc::new(mix)))
}

/// Writes the server's metrics of each point that scraped them into `dir`, as
/// `server-metrics-p<k>.parquet` (what `bench serve --output` keeps beside `summary.json`).
pub fn write_server_series(
    dir: &std::path::Path,
    results: &[yardstick_load::PointResult],
) -> Result<(), RunError> {
    for (k, r) in results.iter().enumerate() {
        if let Some(t) = server_series_table(&r.summary.server_series) {
            let path = dir.join(format!("server-metrics-p{k}.parquet"));
            let bytes = t.to_parquet(&[])?;
            std::fs::write(&path, bytes)
                .map_err(RunError::io(format!("writing {}", path.display())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_from_parquet_exactly() {
        let recs: Vec<RequestRecord> = (0..5u64)
            .map(|i| {
                let t = 1_763_000_000_123_456_789 + i * 1_000_003;
                let mut r = RequestRecord::new(i, format!("ys-{i}"), i == 0, 7, Some(3), t);
                r.sent_ns = Some(t + 17);
                if i == 3 {
                    r.error = Some(ErrorClass::StreamCut);
                    r.error_message = Some("cut".into());
                    r.done_ns = Some(t + 99);
                    return r;
                }
                r.content_event_ns = vec![t + 50_000_001, t + 60_000_007, t + 70_000_013 + i];
                r.first_content_ns = Some(r.content_event_ns[0]);
                r.last_content_ns = Some(r.content_event_ns[2]);
                r.done_ns = Some(t + 70_100_000);
                r.status = Some(200);
                r.content_events = 3;
                r.content_bytes = 12;
                r.output_tokens = Some(3);
                r.local_output_tokens = Some(4);
                r.output_tokens_source = Some(TokenSource::ServerUsage);
                r
            })
            .collect();
        let bytes = records_table(&recs).to_parquet(&[]).unwrap();
        let rows = yardstick_store::samples::read_rows(bytes).unwrap();
        let back = records_from_rows(&rows).unwrap();
        for (a, b) in recs.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json());
            assert_eq!(a.content_event_ns, b.content_event_ns);
            assert_eq!(a.tpot_ms(), b.tpot_ms());
        }
        assert!(back.iter().all(|r| r.model.is_none()));
        // A model mix's records carry their model (and only then have the column).
        let mixed: Vec<RequestRecord> = recs
            .iter()
            .cloned()
            .enumerate()
            .map(|(k, mut r)| {
                r.model = Some(if k % 2 == 0 { "base" } else { "lora" }.into());
                r
            })
            .collect();
        let bytes = records_table(&mixed).to_parquet(&[]).unwrap();
        let rows = yardstick_store::samples::read_rows(bytes).unwrap();
        let back = records_from_rows(&rows).unwrap();
        for (a, b) in mixed.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json());
            assert_eq!(a.model, b.model);
        }
    }

    #[test]
    fn shard_records_carry_their_point() {
        use yardstick_load::shard_files::RecordsFormat;
        let level = yardstick_load::LoadLevel {
            mode: "rate".into(),
            value: 2.0,
            arrival: Some("poisson".into()),
        };
        let points: Vec<yardstick_load::PointResult> = [(0..2u64), (2..5u64)]
            .into_iter()
            .map(|ix| {
                let records: Vec<RequestRecord> = ix
                    .map(|i| RequestRecord::new(i, format!("r{i}"), false, 4, None, 1000 * i))
                    .collect();
                let summary = yardstick_load::summary::summarize(
                    "D(4,2)",
                    level.clone(),
                    &records,
                    &yardstick_load::Slo::default(),
                    yardstick_load::StopReason::MaxRequests,
                );
                yardstick_load::PointResult { summary, records }
            })
            .collect();
        let bytes = ParquetRecords.encode(&points).unwrap();
        let rows = yardstick_store::samples::read_rows(bytes.clone()).unwrap();
        assert_eq!(rows[4]["scenario"], "D(4,2)");
        assert_eq!(rows[4]["load_mode"], "rate");
        let back = ParquetRecords.decode(bytes).unwrap();
        assert_eq!(
            back.iter().map(|(p, r)| (*p, r.index)).collect::<Vec<_>>(),
            [
                (Some(0), 0),
                (Some(0), 1),
                (Some(1), 2),
                (Some(1), 3),
                (Some(1), 4)
            ]
        );
        assert!(ParquetRecords.decode(b"not parquet".to_vec()).is_err());
    }
}

/// The accelerators' energy counters through NVML: each GPU's total energy since the driver
/// loaded, in millijoules.
#[derive(Debug)]
pub struct NvmlEnergy(yardstick_env::gpu::NvmlSession);

impl yardstick_load::power::EnergyCounter for NvmlEnergy {
    fn source(&self) -> &'static str {
        "nvml"
    }

    fn read(&self) -> Option<Vec<u64>> {
        self.0.total_energy_mj()
    }

    fn joules(&self, start: &[u64], end: &[u64]) -> f64 {
        start
            .iter()
            .zip(end)
            .map(|(a, b)| b.saturating_sub(*a) as f64 / 1e3)
            .sum()
    }
}

/// Where serving energy comes from on this machine: its NVIDIA GPUs' counters when NVML loads
/// and they report total energy, else the CPU's RAPL counters. Either measures this machine:
/// the server's energy only when the server runs here.
pub fn energy() -> yardstick_load::power::Energy {
    let root = std::path::PathBuf::from(yardstick_load::power::POWERCAP);
    match yardstick_env::gpu::NvmlSession::open() {
        Ok(s) if s.total_energy_mj().is_some() => {
            yardstick_load::power::Energy::Accelerators(std::sync::Arc::new(NvmlEnergy(s)), root)
        }
        _ => yardstick_load::power::Energy::Rapl(root),
    }
}
