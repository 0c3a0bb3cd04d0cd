//! The e2e executor: one replicate of a command point (a training script speaking the metric
//! protocol, or any program) is one measured run through yardstick-exec — its own process
//! group, rusage, timeout, logs — followed by the training analysis of its metric records
//! (yardstick-analysis).
//! The built-in trainer runs the same way, as `yardstick bench train` in a child process, so
//! it is measured exactly like a user's script.

use std::path::Path;

use yardstick_exec::{CancellationToken, ExecConfig};
use yardstick_spec::metrics::{Measured, Measurement, id};
use yardstick_spec::{E2eLayer, Trials};
use yardstick_store::samples::{Column, Table};

use crate::RunError;
use crate::facts::Figures;
use crate::plan::{PointWork, Step};
use crate::replicate::ReplicateOutcome;
use crate::step::{RunContext, StepContext};

/// What a profiled replicate leaves: the profiler's files (name relative to the profile
/// directory, contents) and what they say.
pub struct ProfileOutcome {
    /// The profiler's files.
    pub files: Vec<(String, Vec<u8>)>,
    /// The analysis, or why there is none.
    pub analysis:
        Result<yardstick_analysis::profiler::ProfilerAnalysis, crate::profile::ProfileError>,
}

/// One e2e replicate to run.
pub struct E2eRequest<'a> {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// The spec's e2e entry (timeout, env, model shape, cost).
    pub layer: &'a E2eLayer,
    /// The trial policy (warm-up steps, confidence).
    pub trials: &'a Trials,
    /// Warn when the workload writes no metric records.
    pub expect_metrics: bool,
    /// A scratch directory for logs while the command runs.
    pub scratch: &'a Path,
    /// Exported as `YARDSTICK_RUN_ID`.
    pub run_id: &'a str,
    /// Seed.
    pub seed: u64,
    /// Cancelled on Ctrl-C: the child's process group is terminated.
    pub cancel: CancellationToken,
    /// Take this profile (the profiled replicate only).
    pub profile: Option<&'a yardstick_spec::ProfilerSpec>,
}

/// The request of one replicate (of `cx`'s step) of e2e layer `entry`: `argv` with the layer's
/// timeout, environment and analysis settings, its profile when the step is the profiled one.
fn request<'a>(
    cx: (&'a RunContext<'a>, &Step, u64),
    entry: &'a E2eLayer,
    argv: Vec<String>,
    expect_metrics: bool,
) -> E2eRequest<'a> {
    let (run, step, seed) = cx;
    E2eRequest {
        argv,
        layer: entry,
        trials: run.trials,
        expect_metrics,
        scratch: run.scratch,
        run_id: run.run_id,
        seed,
        cancel: run.cancel.clone(),
        profile: entry.profile.as_ref().filter(|_| step.profile),
    }
}

/// One replicate of the built-in trainer (`yardstick bench train --preset P`), launched on
/// every rank the placement has (`bench train` takes its rank and world size from them).
pub(crate) fn run_train(cx: &mut StepContext<'_>) -> Result<ReplicateOutcome, RunError> {
    let PointWork::Train {
        layer,
        preset,
        steps,
        ..
    } = &cx.point.work
    else {
        return Err(RunError::Internal("not a trainer point".into()));
    };
    let mut argv = cx.placement.launcher(&cx.name());
    argv.extend([
        cx.run.exe.display().to_string(),
        "bench".into(),
        "train".into(),
        "--preset".into(),
        preset.clone(),
    ]);
    if let Some(n) = steps {
        argv.extend(["--steps".into(), n.to_string()]);
    }
    let entry = cx.run.e2e_layers.get(*layer).cloned().unwrap_or_default();
    run_replicate(request((cx.run, cx.step, cx.seed), &entry, argv, true))
}

/// One replicate of a command point: launched on every rank the placement has, as this
/// process's rank of the step (a rank that fails fails the replicate).
pub(crate) fn run_command(cx: &mut StepContext<'_>) -> Result<ReplicateOutcome, RunError> {
    let PointWork::Command { layer, argv, .. } = &cx.point.work else {
        return Err(RunError::Internal("not a command point".into()));
    };
    let mut full = cx.placement.launcher(&cx.name());
    full.extend(argv.iter().cloned());
    let entry = cx.run.e2e_layers.get(*layer).cloned().unwrap_or_default();
    let step = (cx.run, cx.step, cx.seed);
    cx.placement.as_rank(&cx.name(), &mut || {
        run_replicate(request(step, &entry, full.clone(), false))
    })
}

/// Runs one replicate with the layer's timeout, environment and analysis settings: its summary
/// is the process's figures and the training analysis (`error` when the run failed), one sample
/// row for the process run, its log files, and the profile for the profiled replicate.
pub fn run_replicate(req: E2eRequest<'_>) -> Result<ReplicateOutcome, RunError> {
    let E2eRequest {
        argv,
        layer,
        trials,
        expect_metrics,
        scratch,
        run_id,
        seed,
        cancel,
        profile,
    } = req;
    let log_dir = scratch.join("logs");
    let _ = std::fs::remove_dir_all(&log_dir);
    std::fs::create_dir_all(&log_dir).map_err(|e| RunError::Internal(e.to_string()))?;
    let prof_dir = scratch.join("profile");
    let _ = std::fs::remove_dir_all(&prof_dir);
    let (argv, prof_env) = match profile {
        Some(p) => {
            std::fs::create_dir_all(&prof_dir).map_err(|e| RunError::Internal(e.to_string()))?;
            let w = crate::profile::wrap(&argv, p, &prof_dir)
                .map_err(|e| RunError::Workload(e.to_string()))?;
            (w.argv, w.env)
        }
        None => (argv, Vec::new()),
    };
    let mut cfg = ExecConfig::new(argv, log_dir.clone());
    cfg.runs = 1;
    cfg.warmup = 0;
    cfg.timeout = layer.timeout.map(|d| d.0);
    cfg.env = layer.env.clone().unwrap_or_default().into_iter().collect();
    cfg.env.extend(prof_env);
    cfg.run_id = run_id.to_string();
    cfg.training = Some(yardstick_analysis::spec::training_config_from_spec(
        layer,
        Some(trials),
        None,
    ));
    cfg.expect_metrics = expect_metrics;
    cfg.confidence_level = trials.confidence_level.unwrap_or(0.95);
    cfg.seed = seed;
    cfg.ignore_failure = true;
    cfg.cancel = Some(cancel);
    // The accelerators' (else the CPU's) energy counters around the whole process.
    let counter = crate::serve::energy().open().ok();
    let energy_start = counter.as_ref().and_then(|c| c.read());
    let report = yardstick_exec::run_command_benchmark(&cfg);
    let energy = match (&counter, energy_start) {
        (Some(c), Some(start)) => c.read().map(|end| (c.source(), c.joules(&start, &end))),
        _ => None,
    };
    let report = report.map_err(|e| RunError::Workload(e.to_string()))?;
    let bench = report
        .benchmarks
        .first()
        .ok_or_else(|| RunError::Workload("the command produced no result".into()))?;
    let run = bench
        .runs
        .first()
        .ok_or_else(|| RunError::Workload("the command did not run".into()))?;

    // The figures: the process's, where its wall time went, and the training analysis's.
    let mut measurements = vec![
        Measurement::value(id::WALL_S, run.wall_s),
        Measurement::value(id::USER_S, run.user_s),
        Measurement::value(id::SYS_S, run.sys_s),
        Measurement::value(id::MAX_RSS_BYTES, run.max_rss_bytes as f64),
    ];
    measurements.extend(
        run.exit_code
            .map(|c| Measurement::value(id::EXIT_CODE, f64::from(c))),
    );
    // Where the wall time went (start-up and teardown are control-plane time; the bottleneck
    // of the point compares them with the wall time).
    let timeline: Vec<(&str, f64)> = run
        .timeline
        .iter()
        .flat_map(|t| {
            [
                (id::STARTUP_S, t.startup_s),
                (id::TEARDOWN_S, t.teardown_s),
                (id::SERVICE_S, t.service_s),
                (id::BETWEEN_STEPS_S, t.between_steps_s),
            ]
        })
        .collect();
    measurements.extend(timeline.iter().map(|&(k, v)| Measurement::value(k, v)));
    if let Some(t) = &run.training {
        measurements.extend(t.measurements());
    }
    measurements.extend(yardstick_analysis::training::custom_measurements(
        &run.custom_metrics,
    ));
    let steps = run.training.as_ref().map_or(0, |t| t.steps);
    if let Some((_, joules)) = energy {
        measurements.push(Measurement::value(id::ENERGY_J, joules));
        if steps > 0 {
            measurements.push(Measurement::value(
                id::ENERGY_J_PER_STEP,
                joules / steps as f64,
            ));
        }
    }

    let mut summary = serde_json::Map::new();
    summary.insert(id::WALL_S.into(), serde_json::json!({"value": run.wall_s}));
    summary.insert(id::USER_S.into(), serde_json::json!({"value": run.user_s}));
    summary.insert(id::SYS_S.into(), serde_json::json!({"value": run.sys_s}));
    summary.insert(
        id::MAX_RSS_BYTES.into(),
        serde_json::json!({"value": run.max_rss_bytes}),
    );
    summary.insert(id::EXIT_CODE.into(), run.exit_code.into());
    if let Some((source, joules)) = energy {
        summary.insert(id::ENERGY_J.into(), serde_json::json!({ "value": joules }));
        if steps > 0 {
            summary.insert(
                id::ENERGY_J_PER_STEP.into(),
                serde_json::json!({ "value": joules / steps as f64 }),
            );
        }
        summary.insert("energy_source".into(), source.into());
    }
    for (k, v) in &timeline {
        summary.insert((*k).into(), serde_json::json!({ "value": v }));
    }
    if let Some(t) = &run.training
        && let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(t)
    {
        for (k, v) in fields {
            summary.entry(k).or_insert(v);
        }
    }
    // A workload's own metrics become facts `custom.NAME` with their declared unit, from its
    // training analysis or, without steps, on their own.
    let custom = run
        .training
        .as_ref()
        .map_or(&run.custom_metrics, |t| &t.custom_metrics);
    let mut units = serde_json::Map::new();
    for (name, m) in custom {
        let id = yardstick_analysis::training::CustomMetric::fact_id(name);
        summary.insert(
            id.clone(),
            serde_json::json!({"mean": m.mean, "p50": m.p50, "last": m.last}),
        );
        if let Some(u) = &m.unit {
            units.insert(id, u.clone().into());
        }
    }
    if !units.is_empty() {
        summary.insert("units".into(), units.into());
    }
    // The command's warnings and its training analysis's (a declared metric never reported,
    // ranks missing), each once.
    let mut warnings = bench.warnings.clone();
    for w in run.training.iter().flat_map(|t| &t.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    if warnings.is_empty() {
        summary.remove("warnings");
    } else {
        summary.insert("warnings".into(), warnings.into());
    }
    if !run.success() {
        let why = if run.timed_out {
            "timed out".to_string()
        } else if let Some(s) = run.signal {
            format!("killed by signal {s}")
        } else {
            format!("exited with status {}", run.exit_code.unwrap_or(-1))
        };
        summary.insert("error".into(), format!("the command {why}").into());
    }

    let logs = read_tree(&log_dir)?;
    let _ = std::fs::remove_dir_all(&log_dir);
    let profile = profile.map(|p| {
        let analysis = crate::profile::analyze(&prof_dir, p, run.wall_s);
        let files = read_tree(&prof_dir).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&prof_dir);
        ProfileOutcome { files, analysis }
    });

    let samples = Table::new()
        .with(id::WALL_S, Column::F64(vec![run.wall_s]))
        .with(id::USER_S, Column::F64(vec![run.user_s]))
        .with(id::SYS_S, Column::F64(vec![run.sys_s]))
        .with(
            id::MAX_RSS_BYTES,
            Column::I64(vec![run.max_rss_bytes as i64]),
        )
        .with(
            id::EXIT_CODE,
            Column::OptI64(vec![run.exit_code.map(i64::from)]),
        );
    let mut out = ReplicateOutcome::new(summary.into(), Figures::new(measurements))
        .with_samples(samples)
        .with_logs(logs);
    out.profile = profile;
    Ok(out)
}

/// Every readable file under `dir`, with its path relative to `dir` (`/`-separated), sorted.
fn read_tree(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, RunError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| RunError::Internal(e.to_string()))? {
            let p = entry.map_err(|e| RunError::Internal(e.to_string()))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let rel = p
                    .strip_prefix(dir)
                    .expect("inside")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, bytes));
            }
        }
    }
    out.sort();
    Ok(out)
}
