//! Whole-process benchmarks: `yardstick bench exec`.
//!
//! Each parameter combination is one *benchmark*. Warm-up runs come first, then the measured
//! runs, interleaved across benchmarks (A B C A B C …) so that drift — thermal, background
//! load, caches — affects every benchmark alike instead of whichever ran last. Every run sets
//! the metric protocol's environment; when the workload reports steps, each run also gets a
//! training analysis, and a `worldSize` sweep gets a scaling analysis.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use yardstick_stats::bootstrap::{self, BootstrapConfig, Method};
use yardstick_stats::descriptive::Descriptive;
use yardstick_stats::outliers;
use yardstick_stats::report::default_resamples;
use yardstick_stats::statistic::Statistic;

use yardstick_analysis::bottleneck::{self, JobTimeline, TrainingBottleneck};
use yardstick_analysis::protocol::{MalformedLine, parse_metrics};
use yardstick_analysis::roofline::Ceilings;
use yardstick_analysis::scaling::{self, ScalingInput, ScalingReport};
use yardstick_analysis::training::{self, TrainingConfig, TrainingReport};

use crate::ExecError;
use crate::process::{self, ProcessOutcome, ProcessSpec};
use crate::protocol::{self, ENV_METRICS, ENV_REPLICATE, ENV_RUN_ID};
use crate::timeline;
use tokio_util::sync::CancellationToken;

/// The placeholder name of world-size sweeps (`{worldSize}`).
pub const WORLD_SIZE_PARAM: &str = "worldSize";

/// A parameter scanned over values; `{name}` in the command is replaced by each value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Parameter {
    /// Name used in `{name}` placeholders.
    pub name: String,
    /// Values, in order.
    pub values: Vec<String>,
}

impl Parameter {
    /// Parses `NAME=v1,v2,...`.
    pub fn parse(s: &str) -> Result<Self, ExecError> {
        let hint = "write NAME=v1,v2,... and use {NAME} in the command";
        let (name, values) = s
            .split_once('=')
            .ok_or_else(|| ExecError::invalid(format!("parameter `{s}` has no `=`"), hint))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ExecError::invalid(
                format!("parameter name `{name}` must be letters, digits and `_`"),
                hint,
            ));
        }
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(ExecError::invalid(
                format!("parameter `{name}` has an empty value"),
                hint,
            ));
        }
        Ok(Parameter {
            name: name.to_string(),
            values,
        })
    }
}

/// Everything `bench exec` needs; the orchestrator builds one per e2e entry of a spec.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// Program and arguments; `{NAME}` placeholders are substituted. No shell.
    pub command: Vec<String>,
    /// Measured runs per benchmark.
    pub runs: usize,
    /// Warm-up runs per benchmark (run and logged, not measured).
    pub warmup: usize,
    /// Shell snippet run before every run (warm-up and measured), untimed.
    pub prepare: Option<String>,
    /// Shell snippet run once per benchmark after its last run.
    pub cleanup: Option<String>,
    /// Parameter scans; the benchmarks are their Cartesian product.
    pub params: Vec<Parameter>,
    /// Kill a run's process group after this long (counts as a failed run).
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Treat non-zero exits as results instead of stopping the benchmark.
    pub ignore_failure: bool,
    /// Extra environment for the command.
    pub env: Vec<(String, String)>,
    /// Working directory of the command.
    pub cwd: Option<PathBuf>,
    /// Where stdout, stderr and metrics files of every run are kept.
    pub log_dir: PathBuf,
    /// Exported as `YARDSTICK_RUN_ID`.
    pub run_id: String,
    /// Analyse metric-protocol records of every run (`None`: analyse only if some appear,
    /// with [`TrainingConfig::default`]).
    pub training: Option<TrainingConfig>,
    /// Whether a run that writes no metric records deserves a warning.
    pub expect_metrics: bool,
    /// One device's ceilings (peak FLOP/s, memory bandwidth, link) and where they came from,
    /// for the bottleneck classification of the training analysis.
    pub ceilings: Option<(Ceilings, String)>,
    /// Make `$YARDSTICK_METRICS` a FIFO read live ([`protocol::LiveMetrics`]) instead of a
    /// file read after the run; the lines are still copied to `<run>.metrics.jsonl`.
    pub metrics_fifo: bool,
    /// Confidence level of the interval of the mean wall time.
    pub confidence_level: f64,
    /// Bootstrap seed.
    pub seed: u64,
    /// Cancellation (Ctrl-C): the current run is stopped and the report covers what finished.
    pub cancel: Option<CancellationToken>,
    /// Test-only: fake wall times (seconds, cycled) instead of spawning anything; a negative
    /// value is a run that exits with code 1. Honoured only in builds with the `mock-times`
    /// feature ([`MOCK_TIMES_COMPILED`]); elsewhere it is refused.
    #[doc(hidden)]
    pub mock_wall_times: Option<Vec<f64>>,
}

/// Whether this build can make up wall times for tests (`mock-times` feature, which only the
/// test builds turn on): a shipped binary cannot produce timings that look real but are not.
pub const MOCK_TIMES_COMPILED: bool = cfg!(any(test, feature = "mock-times"));

impl ExecConfig {
    /// A configuration with hyperfine-like defaults: 10 runs, no warm-up, logs in `log_dir`.
    pub fn new(command: Vec<String>, log_dir: PathBuf) -> Self {
        ExecConfig {
            command,
            runs: 10,
            warmup: 0,
            prepare: None,
            cleanup: None,
            params: Vec::new(),
            timeout: None,
            kill_grace: Duration::from_secs(5),
            ignore_failure: false,
            env: Vec::new(),
            cwd: None,
            log_dir,
            run_id: String::new(),
            training: None,
            expect_metrics: false,
            ceilings: None,
            metrics_fifo: false,
            confidence_level: 0.95,
            seed: 0,
            cancel: None,
            mock_wall_times: None,
        }
    }
}

/// Summary of one measured quantity across runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "RunSummary")] // the published schema name
pub struct QuantitySummary {
    /// Runs summarised.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation (`None` for one run).
    pub stddev: Option<f64>,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// BCa bootstrap interval of the mean (`None` when n < 3 or degenerate).
    pub ci: Option<[f64; 2]>,
    /// Confidence level of `ci`.
    pub ci_level: f64,
}

fn summarize(values: &[f64], level: f64, seed: u64) -> Option<QuantitySummary> {
    let d = Descriptive::of(values).ok()?;
    let ci = (values.len() >= 3)
        .then(|| {
            let cfg = BootstrapConfig {
                resamples: default_resamples(values.len()),
                level,
                seed,
                method: Method::Bca,
            };
            bootstrap::bootstrap_ci(values, Statistic::Mean, &cfg).ok()
        })
        .flatten()
        .filter(|c| c.lower.is_finite() && c.upper.is_finite())
        .map(|c| [c.lower, c.upper]);
    Some(QuantitySummary {
        n: d.n,
        mean: d.mean,
        median: d.median,
        stddev: d.stddev,
        min: d.min,
        max: d.max,
        ci,
        ci_level: level,
    })
}

/// What the metric protocol produced in one run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RunMetrics {
    /// The metrics file (`$YARDSTICK_METRICS`).
    pub file: PathBuf,
    /// Well-formed records.
    pub records: usize,
    /// Malformed lines (exact count).
    pub malformed_count: usize,
    /// Malformed lines with reasons (the first 100).
    pub malformed: Vec<MalformedLine>,
}

/// One run of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RunRecord {
    /// 0-based index among the benchmark's measured (or warm-up) runs.
    pub index: usize,
    /// Warm-up run (not in the statistics).
    pub warmup: bool,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// User CPU seconds (child and waited-for descendants).
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Peak resident set size in bytes.
    pub max_rss_bytes: u64,
    /// Exit code (`None` when killed by a signal).
    pub exit_code: Option<i32>,
    /// Terminating signal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Killed at the timeout.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Killed by cancellation.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// stdout log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<PathBuf>,
    /// stderr log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<PathBuf>,
    /// Metric-protocol output, when any was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<RunMetrics>,
    /// Training analysis of this run's metric records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingReport>,
    /// Where the wall time went — start-up, steps, teardown — from when the step records
    /// arrived (successful measured runs whose steps were reported as they happened).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<JobTimeline>,
    /// The workload's own metrics when it reported no training step (records of custom keys
    /// only: a burst of jobs, a probe); with steps they are in `training`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub custom_metrics: BTreeMap<String, training::CustomMetric>,
}

impl RunRecord {
    /// Exited 0, not killed.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }

    fn describe_failure(&self) -> String {
        if self.timed_out {
            "timed out".into()
        } else if self.cancelled {
            "cancelled".into()
        } else if let Some(s) = self.signal {
            format!("killed by signal {s}")
        } else {
            format!("exit {}", self.exit_code.unwrap_or(-1))
        }
    }
}

/// Training metrics across the runs (replicates) of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrainingAcrossRuns {
    /// Runs with a training analysis.
    pub replicates: usize,
    /// Median step time per run, summarised across runs.
    pub step_time_p50_s: Option<QuantitySummary>,
    /// Aggregate tokens/s per run, summarised across runs.
    pub tokens_per_s: Option<QuantitySummary>,
    /// Aggregate samples/s per run, summarised across runs.
    pub samples_per_s: Option<QuantitySummary>,
    /// Headline MFU p50 per run, summarised across runs.
    pub mfu_p50: Option<QuantitySummary>,
}

/// One benchmark: one parameter combination and its runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BenchmarkResult {
    /// The command as run (placeholders substituted), shell-quoted for display.
    pub command: String,
    /// The command as argv.
    pub argv: Vec<String>,
    /// Parameter values of this benchmark.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// Measured runs, in order.
    pub runs: Vec<RunRecord>,
    /// Warm-up runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warmup_runs: Vec<RunRecord>,
    /// Wall time of the runs in the statistics (successful ones, or all with
    /// `ignore_failure`).
    pub wall_s: Option<QuantitySummary>,
    /// User CPU time.
    pub user_s: Option<QuantitySummary>,
    /// System CPU time.
    pub sys_s: Option<QuantitySummary>,
    /// Peak RSS in bytes.
    pub max_rss_bytes: Option<QuantitySummary>,
    /// Measured runs that failed (non-zero exit, signal, timeout).
    pub failed_runs: usize,
    /// The benchmark stopped early (a failure without `ignore_failure`, or cancellation).
    pub stopped_early: bool,
    /// Training metrics across runs, when the workload spoke the metric protocol.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<TrainingAcrossRuns>,
    /// The bottleneck of the last counted run's training steps (roofline and time shares), when
    /// the machine's ceilings were given or the workload reported input or collective time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<TrainingBottleneck>,
    /// Things to know before quoting the numbers.
    pub warnings: Vec<String>,
}

impl BenchmarkResult {
    /// Whether every run it attempted succeeded (or failures were accepted).
    pub fn ok(&self, ignore_failure: bool) -> bool {
        (ignore_failure || self.failed_runs == 0)
            && !self.stopped_early
            && self
                .warmup_runs
                .iter()
                .all(|r| ignore_failure || r.success())
    }
}

/// What `yardstick bench exec --json` prints: one command without parameters reads as its one
/// benchmark (with the report's `logs_dir` and `interrupted`); a parameter scan as the whole
/// report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ExecOutput<'a> {
    /// One command, no parameters.
    Single {
        /// Its benchmark.
        #[serde(flatten)]
        benchmark: &'a BenchmarkResult,
        /// Where the logs are.
        logs_dir: &'a std::path::Path,
        /// Cancelled before the end.
        interrupted: bool,
        /// Made up by a test build's mock executor (present only then).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        mocked: bool,
        /// The profile of one more run after the measured ones (`--profile`): the analysis,
        /// where the traces are, the profiler's overhead.
        #[serde(skip_serializing_if = "Option::is_none")]
        profile: Option<serde_json::Value>,
    },
    /// A parameter scan (or a world-size sweep).
    Scan(&'a ExecReport),
}

impl<'a> ExecOutput<'a> {
    /// The output of `report`.
    pub fn of(report: &'a ExecReport) -> Self {
        match &report.benchmarks[..] {
            [one] if one.parameters.is_empty() => ExecOutput::Single {
                benchmark: one,
                logs_dir: &report.logs_dir,
                interrupted: report.interrupted,
                mocked: report.mocked,
                profile: None,
            },
            _ => ExecOutput::Scan(report),
        }
    }
}

/// The result of [`run_command_benchmark`].
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ExecReport {
    /// One entry per parameter combination, in scan order.
    pub benchmarks: Vec<BenchmarkResult>,
    /// Scaling across `worldSize` values, when scanned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<ScalingReport>,
    /// Where the logs are; empty when they were not kept (`bench exec` without `--logs`
    /// removes its temporary log directory when every run succeeded).
    pub logs_dir: PathBuf,
    /// Cancelled before the end: the report covers what finished.
    pub interrupted: bool,
    /// Whether non-zero exits were accepted.
    pub ignore_failure: bool,
    /// The timings were made up by a test build's mock executor, not measured: such a report is
    /// never evidence (`"mocked": true` in JSON, and nothing stores it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mocked: bool,
}

impl ExecReport {
    /// Whether every benchmark ran to the end without unaccepted failures.
    pub fn ok(&self) -> bool {
        !self.interrupted && self.benchmarks.iter().all(|b| b.ok(self.ignore_failure))
    }
}

/// Progress events, for a caller that wants to show them.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A run finished.
    RunDone {
        /// Benchmark index.
        benchmark: usize,
        /// Number of benchmarks.
        of: usize,
        /// The run.
        run: &'a RunRecord,
        /// Measured runs per benchmark.
        runs: usize,
    },
}

/// Runs the benchmark described by `cfg` (no progress output).
pub fn run_command_benchmark(cfg: &ExecConfig) -> Result<ExecReport, ExecError> {
    run_command_benchmark_with_progress(cfg, &mut |_| {})
}

/// Substitutes `{NAME}` placeholders.
pub fn substitute(arg: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = arg.to_string();
    for (k, v) in values {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// Quotes an argv for display the way a POSIX shell would read it back.
pub fn shell_join(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn combinations(params: &[Parameter]) -> Vec<BTreeMap<String, String>> {
    let mut out = vec![BTreeMap::new()];
    for p in params {
        out = out
            .into_iter()
            .flat_map(|base| {
                p.values.iter().map(move |v| {
                    let mut m = base.clone();
                    m.insert(p.name.clone(), v.clone());
                    m
                })
            })
            .collect();
    }
    out
}

fn validate(cfg: &ExecConfig) -> Result<(), ExecError> {
    if cfg.command.is_empty() || cfg.command[0].is_empty() {
        return Err(ExecError::invalid(
            "no command to benchmark",
            "put the command after `--`, e.g. `yardstick bench exec -- sleep 0.1`",
        ));
    }
    if cfg.runs == 0 {
        return Err(ExecError::invalid(
            "--runs must be at least 1",
            "use 3 or more runs for a confidence interval",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for p in &cfg.params {
        if !seen.insert(&p.name) {
            return Err(ExecError::invalid(
                format!("parameter `{}` is given twice", p.name),
                "give each parameter once with all its values: NAME=v1,v2",
            ));
        }
        let placeholder = format!("{{{}}}", p.name);
        let used = cfg
            .command
            .iter()
            .chain(&cfg.prepare)
            .chain(&cfg.cleanup)
            .any(|a| a.contains(&placeholder));
        if !used {
            return Err(ExecError::invalid(
                format!(
                    "parameter `{}` is not used: no `{placeholder}` in the command",
                    p.name
                ),
                format!("put `{placeholder}` where the value goes"),
            ));
        }
    }
    if !(cfg.confidence_level > 0.0 && cfg.confidence_level < 1.0) {
        return Err(ExecError::invalid(
            format!(
                "confidence level {} is outside (0, 1)",
                cfg.confidence_level
            ),
            "e.g. 0.95",
        ));
    }
    Ok(())
}

struct Bench {
    values: BTreeMap<String, String>,
    argv: Vec<String>,
    result: BenchmarkResult,
    done: bool,
}

/// Runs the benchmark, calling `progress` after every run.
pub fn run_command_benchmark_with_progress(
    cfg: &ExecConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ExecReport, ExecError> {
    validate(cfg)?;
    std::fs::create_dir_all(&cfg.log_dir).map_err(|source| ExecError::Io {
        path: cfg.log_dir.clone(),
        source,
    })?;
    let mut benches: Vec<Bench> = combinations(&cfg.params)
        .into_iter()
        .map(|values| {
            let argv: Vec<String> = cfg.command.iter().map(|a| substitute(a, &values)).collect();
            Bench {
                result: BenchmarkResult {
                    command: shell_join(&argv),
                    argv: argv.clone(),
                    parameters: values.clone(),
                    runs: Vec::new(),
                    warmup_runs: Vec::new(),
                    wall_s: None,
                    user_s: None,
                    sys_s: None,
                    max_rss_bytes: None,
                    failed_runs: 0,
                    stopped_early: false,
                    training: None,
                    bottleneck: None,
                    warnings: Vec::new(),
                },
                values,
                argv,
                done: false,
            }
        })
        .collect();
    if cfg.mock_wall_times.is_some() && !MOCK_TIMES_COMPILED {
        return Err(ExecError::Invalid {
            message: "mock wall times are compiled only into test builds".into(),
            hint: Some("remove --debug-mock-times: this binary measures real runs only".into()),
        });
    }
    let of = benches.len();
    let mut mock_index = 0usize;
    let mut interrupted = false;
    let rounds = (0..cfg.warmup)
        .map(|i| (true, i))
        .chain((0..cfg.runs).map(|i| (false, i)));
    'rounds: for (warmup, index) in rounds {
        for (b, bench) in benches.iter_mut().enumerate() {
            if bench.done {
                continue;
            }
            if cfg
                .cancel
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
            {
                interrupted = true;
                break 'rounds;
            }
            let record = one_run(cfg, b, bench, warmup, index, &mut mock_index)?;
            progress(Progress::RunDone {
                benchmark: b,
                of,
                run: &record,
                runs: cfg.runs,
            });
            let failed = !record.success();
            if record.cancelled {
                interrupted = true;
            }
            if warmup {
                bench.result.warmup_runs.push(record);
            } else {
                if failed {
                    bench.result.failed_runs += 1;
                }
                bench.result.runs.push(record);
            }
            if interrupted {
                break 'rounds;
            }
            if failed && !cfg.ignore_failure {
                bench.done = true;
                bench.result.stopped_early = true;
            }
        }
    }
    for (b, bench) in benches.iter_mut().enumerate() {
        if let Some(snippet) = &cfg.cleanup
            && !interrupted
        {
            let snippet = substitute(snippet, &bench.values);
            let log = cfg.log_dir.join(format!("b{b}-cleanup.log"));
            let o = process::run_shell(&snippet, &cfg.env, Some(&log), cfg.timeout, None)?;
            if !o.success() {
                bench.result.warnings.push(format!(
                    "--cleanup failed ({}); see {}",
                    describe(&o),
                    log.display()
                ));
            }
        }
        finish(cfg, &mut bench.result, interrupted);
    }
    let results: Vec<BenchmarkResult> = benches.into_iter().map(|b| b.result).collect();
    let scaling = scaling_of(&results);
    Ok(ExecReport {
        benchmarks: results,
        scaling,
        logs_dir: cfg.log_dir.clone(),
        interrupted,
        ignore_failure: cfg.ignore_failure,
        mocked: cfg.mock_wall_times.is_some(),
    })
}

fn describe(o: &ProcessOutcome) -> String {
    if o.timed_out {
        "timed out".into()
    } else if let Some(s) = o.signal {
        format!("signal {s}")
    } else {
        format!("exit {}", o.exit_code.unwrap_or(-1))
    }
}

fn one_run(
    cfg: &ExecConfig,
    b: usize,
    bench: &mut Bench,
    warmup: bool,
    index: usize,
    mock_index: &mut usize,
) -> Result<RunRecord, ExecError> {
    let tag = format!("b{b}-{}{index}", if warmup { "w" } else { "r" });
    let metrics_file = cfg.log_dir.join(format!("{tag}.metrics.jsonl"));
    let fifo = cfg
        .metrics_fifo
        .then(|| cfg.log_dir.join(format!("{tag}.metrics.fifo")));
    let mut env = cfg.env.clone();
    env.push((
        ENV_METRICS.into(),
        fifo.as_ref().unwrap_or(&metrics_file).display().to_string(),
    ));
    env.push((ENV_RUN_ID.into(), cfg.run_id.clone()));
    env.push((ENV_REPLICATE.into(), index.to_string()));
    env.push(("YARDSTICK_WARMUP".into(), u8::from(warmup).to_string()));
    for (k, v) in &bench.values {
        env.push((format!("YARDSTICK_PARAM_{k}"), v.clone()));
    }

    #[cfg(not(any(test, feature = "mock-times")))]
    let _ = mock_index;
    #[cfg(any(test, feature = "mock-times"))]
    if let Some(times) = &cfg.mock_wall_times {
        let t = times[*mock_index % times.len().max(1)];
        *mock_index += 1;
        return Ok(RunRecord {
            index,
            warmup,
            wall_s: t.abs(),
            user_s: t.abs() * 0.9,
            sys_s: t.abs() * 0.1,
            max_rss_bytes: 1 << 20,
            exit_code: Some(if t < 0.0 { 1 } else { 0 }),
            signal: None,
            timed_out: false,
            cancelled: false,
            stdout: None,
            stderr: None,
            metrics: None,
            training: None,
            timeline: None,
            custom_metrics: BTreeMap::new(),
        });
    }

    // A stale file from an earlier invocation with the same log dir must not be read as ours.
    let _ = std::fs::remove_file(&metrics_file);
    if let Some(snippet) = &cfg.prepare {
        let snippet = substitute(snippet, &bench.values);
        let log = cfg.log_dir.join(format!("{tag}.prepare.log"));
        let o = process::run_shell(&snippet, &env, Some(&log), cfg.timeout, cfg.cancel.as_ref())?;
        if !o.success() && !o.cancelled {
            return Err(ExecError::invalid(
                format!(
                    "--prepare failed ({}) before {tag}; see {}",
                    describe(&o),
                    log.display()
                ),
                "the prepare command must exit 0; try it in a shell",
            ));
        }
    }
    let stdout = cfg.log_dir.join(format!("{tag}.stdout"));
    let stderr = cfg.log_dir.join(format!("{tag}.stderr"));
    let spec = ProcessSpec {
        argv: bench.argv.clone(),
        env,
        cwd: cfg.cwd.clone(),
        stdout: Some(stdout.clone()),
        stderr: Some(stderr.clone()),
        timeout: cfg.timeout,
        kill_grace: cfg.kill_grace,
    };
    let live = fifo
        .as_deref()
        .map(|f| protocol::LiveMetrics::start(f, &metrics_file))
        .transpose()?;
    // Without a FIFO, the file's growth is polled to time the step records' arrivals.
    let watch = match live {
        Some(_) => None,
        None => Some(
            timeline::FileWatch::start(&metrics_file, timeline::POLL_INTERVAL).map_err(
                |source| ExecError::Io {
                    path: metrics_file.clone(),
                    source,
                },
            )?,
        ),
    };
    let launch = std::time::Instant::now();
    let o = process::run_process(&spec, cfg.cancel.as_ref());
    let (bytes, arrivals) = match (live, watch) {
        (Some(live), _) => live.finish_raw()?,
        (None, watch) => {
            let arrivals = watch.map(timeline::FileWatch::finish).unwrap_or_default();
            let bytes = match std::fs::read(&metrics_file) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(source) => {
                    return Err(ExecError::Io {
                        path: metrics_file.clone(),
                        source,
                    });
                }
            };
            (bytes, arrivals)
        }
    };
    let o = o?;
    let parsed = parse_metrics(&String::from_utf8_lossy(&bytes));
    let wrote = !parsed.records.is_empty() || parsed.malformed_count > 0;
    let metrics = wrote.then(|| RunMetrics {
        file: metrics_file.clone(),
        records: parsed.records.len(),
        malformed_count: parsed.malformed_count,
        malformed: parsed.malformed.clone(),
    });
    let mut training = None;
    let mut custom_metrics = BTreeMap::new();
    let mut run_timeline = None;
    if !warmup && o.success() {
        match timeline::job_timeline(&bytes, &parsed, &arrivals, launch, o.wall_s) {
            Ok(t) => run_timeline = t,
            Err(why) => bench.result.warnings.push(format!("run {index}: {why}")),
        }
    }
    if !warmup {
        if let Some(s) = parsed.malformed_summary() {
            bench
                .result
                .warnings
                .push(format!("run {index}: {s} ({})", metrics_file.display()));
        }
        if !parsed.records.is_empty() {
            let tcfg = cfg.training.clone().unwrap_or_default();
            let custom = training::custom_metrics(&parsed);
            let stepped = parsed.records.iter().any(|r| r.step_time_s.is_some());
            if !stepped && !custom.is_empty() {
                // Custom metrics alone are a whole report: no step to analyse, no warning.
                custom_metrics = custom;
            } else {
                match training::analyze_training(&parsed, &tcfg) {
                    Ok(r) => training = Some(r),
                    Err(e) => bench.result.warnings.push(format!("run {index}: {e}")),
                }
            }
        } else if cfg.expect_metrics && o.success() {
            bench.result.warnings.push(format!(
                "run {index}: {}",
                ExecError::NoMetrics {
                    path: metrics_file.clone()
                }
            ));
        }
    }
    Ok(RunRecord {
        index,
        warmup,
        wall_s: o.wall_s,
        user_s: o.user_s,
        sys_s: o.sys_s,
        max_rss_bytes: o.max_rss_bytes,
        exit_code: o.exit_code,
        signal: o.signal,
        timed_out: o.timed_out,
        cancelled: o.cancelled,
        stdout: Some(stdout),
        stderr: Some(stderr),
        metrics,
        training,
        timeline: run_timeline,
        custom_metrics,
    })
}

fn finish(cfg: &ExecConfig, r: &mut BenchmarkResult, interrupted: bool) {
    let counted: Vec<&RunRecord> = r
        .runs
        .iter()
        .filter(|x| !x.cancelled && (cfg.ignore_failure || x.success()))
        .collect();
    let (level, seed) = (cfg.confidence_level, cfg.seed);
    let walls: Vec<f64> = counted.iter().map(|x| x.wall_s).collect();
    r.wall_s = summarize(&walls, level, seed);
    r.user_s = summarize(
        &counted.iter().map(|x| x.user_s).collect::<Vec<_>>(),
        level,
        seed,
    );
    r.sys_s = summarize(
        &counted.iter().map(|x| x.sys_s).collect::<Vec<_>>(),
        level,
        seed,
    );
    r.max_rss_bytes = summarize(
        &counted
            .iter()
            .map(|x| x.max_rss_bytes as f64)
            .collect::<Vec<_>>(),
        level,
        seed,
    );
    let mut warnings = Vec::new();
    // Failures first: they change what the numbers mean.
    for w in r
        .warmup_runs
        .iter()
        .filter(|x| !x.success() && !x.cancelled)
    {
        warnings.push(format!(
            "warm-up run {} failed ({})",
            w.index,
            w.describe_failure()
        ));
    }
    let failed: Vec<&RunRecord> = r
        .runs
        .iter()
        .filter(|x| !x.success() && !x.cancelled)
        .collect();
    if !failed.is_empty() {
        let list: Vec<String> = failed
            .iter()
            .take(10)
            .map(|x| format!("run {}: {}", x.index, x.describe_failure()))
            .collect();
        warnings.push(format!(
            "{} of {} runs failed ({}){}",
            failed.len(),
            r.runs.len(),
            list.join(", "),
            if cfg.ignore_failure {
                "; they are included in the statistics (--ignore-failure)"
            } else {
                "; stopped this benchmark: pass --ignore-failure to measure failing runs"
            }
        ));
    }
    if interrupted {
        warnings.push("interrupted: the statistics cover the runs that finished".into());
    }
    if walls.len() < 3 && !walls.is_empty() {
        warnings.push(format!(
            "{} measured run(s): no confidence interval (the methodology floor is 3)",
            walls.len()
        ));
    }
    if walls.len() >= 3 {
        let first_slow = first_run_slower(&walls);
        if let Some((first, median)) = first_slow {
            warnings.push(format!(
                "the first run was slower than the rest ({} vs median {}): caches were probably \
                 cold; use --warmup 1 or --prepare to start every run from the same state",
                fmt_s(first),
                fmt_s(median)
            ));
        }
        if let Ok(m) = outliers::mad_z(&walls) {
            let idx: Vec<usize> = m
                .indices
                .into_iter()
                .filter(|&i| !(i == 0 && first_slow.is_some()))
                .collect();
            if !idx.is_empty() {
                warnings.push(format!(
                    "{} statistical outlier(s) among {} runs (MAD modified z > 3.5: runs {:?}): \
                     other programs or I/O probably interfered; re-run on a quiet machine",
                    idx.len(),
                    walls.len(),
                    idx.iter().map(|&i| counted[i].index).collect::<Vec<_>>()
                ));
            }
        }
    }
    if let Some(w) = &r.wall_s
        && w.mean < 0.005
    {
        warnings.push(format!(
            "the command takes {} on average: process start-up dominates below 5 ms, so results \
             are noisy and mostly measure the OS",
            fmt_s(w.mean)
        ));
    }
    r.training = training_across(&counted, level, seed);
    r.bottleneck = counted
        .iter()
        .rev()
        .find(|x| x.training.is_some())
        .and_then(|x| {
            bottleneck_of(
                x.training.as_ref()?,
                x.timeline.as_ref(),
                cfg.ceilings.as_ref(),
            )
        });
    warnings.append(&mut r.warnings);
    r.warnings = warnings;
}

/// Classifies a training report (and the run's timeline) on the given ceilings; without
/// ceilings only when the workload reported input or collective time or the run was timed (the
/// roofline needs the machine; time shares do not).
fn bottleneck_of(
    t: &TrainingReport,
    timeline: Option<&JobTimeline>,
    ceilings: Option<&(Ceilings, String)>,
) -> Option<TrainingBottleneck> {
    match ceilings {
        Some((c, source)) => Some(bottleneck::classify_job(t, timeline, c, source.clone())),
        None if t.data_wait_s.is_some() || t.comm_s.is_some() || timeline.is_some() => {
            let none = Ceilings {
                label: "unknown machine".into(),
                peak_flops: 0.0,
                memory_bw: 0.0,
                link_bw: None,
            };
            Some(bottleneck::classify_job(
                t,
                timeline,
                &none,
                "none given (pass --peak-flops/--gpu and --memory-bw, or --micro FILE)",
            ))
        }
        None => None,
    }
}

/// `Some((first, median of the rest))` when the first run is a MAD outlier on the slow side.
fn first_run_slower(walls: &[f64]) -> Option<(f64, f64)> {
    let m = outliers::mad_z(walls).ok()?;
    let rest_median = yardstick_stats::percentile::percentile(&walls[1..], 0.5).ok()?;
    (m.indices.first() == Some(&0) && walls[0] > rest_median).then_some((walls[0], rest_median))
}

/// Seconds for people: `12.3 ms`, `1.234 s`.
pub fn fmt_s(s: f64) -> String {
    yardstick_spec::units::format_seconds(s)
}

fn training_across(runs: &[&RunRecord], level: f64, seed: u64) -> Option<TrainingAcrossRuns> {
    let reports: Vec<&TrainingReport> = runs.iter().filter_map(|r| r.training.as_ref()).collect();
    if reports.is_empty() {
        return None;
    }
    let collect = |f: &dyn Fn(&TrainingReport) -> Option<f64>| {
        let v: Vec<f64> = reports.iter().filter_map(|r| f(r)).collect();
        summarize(&v, level, seed)
    };
    Some(TrainingAcrossRuns {
        replicates: reports.len(),
        step_time_p50_s: collect(&|r| Some(r.step_time_s.p50)),
        tokens_per_s: collect(&|r| r.tokens_per_s.as_ref().map(|t| t.aggregate)),
        samples_per_s: collect(&|r| r.samples_per_s.as_ref().map(|t| t.aggregate)),
        mfu_p50: collect(&|r| r.mfu.as_ref().map(|m| m.p50)),
    })
}

/// Scaling across the `worldSize` parameter: samples/s (else tokens/s) from the metric protocol,
/// else 1 / wall time (a fixed amount of work per run assumed).
fn scaling_of(results: &[BenchmarkResult]) -> Option<ScalingReport> {
    let sized: Vec<(u32, &BenchmarkResult)> = results
        .iter()
        .filter_map(|b| Some((b.parameters.get(WORLD_SIZE_PARAM)?.parse().ok()?, b)))
        .collect();
    if sized.len() < 2 {
        return None;
    }
    type Pick = fn(&TrainingReport) -> Option<f64>;
    let samples: Pick = |t| t.samples_per_s.as_ref().map(|x| x.aggregate);
    let tokens: Pick = |t| t.tokens_per_s.as_ref().map(|x| x.aggregate);
    let from_metrics = |pick: Pick| -> Option<Vec<ScalingInput>> {
        sized
            .iter()
            .map(|(n, b)| {
                let v: Vec<f64> = b
                    .runs
                    .iter()
                    .filter(|r| r.success())
                    .filter_map(|r| pick(r.training.as_ref()?))
                    .collect();
                (!v.is_empty()).then_some(ScalingInput {
                    world_size: *n,
                    throughputs: v,
                })
            })
            .collect()
    };
    let (metric, inputs) = if let Some(i) = from_metrics(samples) {
        (yardstick_spec::metrics::id::SAMPLES_PER_S, i)
    } else if let Some(i) = from_metrics(tokens) {
        (yardstick_spec::metrics::id::TOKENS_PER_S, i)
    } else {
        let inputs = sized
            .iter()
            .map(|(n, b)| ScalingInput {
                world_size: *n,
                throughputs: b
                    .runs
                    .iter()
                    .filter(|r| r.success())
                    .map(|r| 1.0 / r.wall_s)
                    .collect(),
            })
            .collect();
        ("runs_per_s", inputs)
    };
    let mut report = scaling::analyze_scaling(metric, &inputs).ok()?;
    if metric == "runs_per_s" {
        report.warnings.push(
            "no throughput in the metric protocol: scaling from wall time, assuming every run \
             does the same total work (strong scaling)"
                .into(),
        );
    }
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_error::UserFacing;

    fn mock(times: &[f64], runs: usize) -> ExecConfig {
        let dir = std::env::temp_dir().join("yardstick-exec-unit");
        let mut cfg = ExecConfig::new(vec!["mock".into()], dir);
        cfg.runs = runs;
        cfg.mock_wall_times = Some(times.to_vec());
        cfg
    }

    #[test]
    fn parameters_parse_and_combine() {
        let p = Parameter::parse("threads=1,2, 4").unwrap();
        assert_eq!(p.values, vec!["1", "2", "4"]);
        assert!(Parameter::parse("threads").is_err());
        assert!(Parameter::parse("a b=1").is_err());
        assert!(Parameter::parse("x=1,,2").is_err());
        let combos = combinations(&[p, Parameter::parse("mode=a,b").unwrap()]);
        assert_eq!(combos.len(), 6);
        assert_eq!(substitute("--t={threads}-{mode}", &combos[1]), "--t=1-b");
        assert_eq!(
            shell_join(&["echo".into(), "a b".into(), "it's".into()]),
            "echo 'a b' 'it'\\''s'"
        );
    }

    #[test]
    fn statistics_and_first_run_warning_from_the_mock() {
        let cfg = mock(&[0.5, 0.10, 0.11, 0.10, 0.12, 0.10, 0.11, 0.10], 8);
        let r = run_command_benchmark(&cfg).unwrap();
        let b = &r.benchmarks[0];
        let w = b.wall_s.as_ref().unwrap();
        assert_eq!(w.n, 8);
        assert!((w.median - 0.105).abs() < 1e-12, "{}", w.median);
        assert_eq!(w.max, 0.5);
        let ci = w.ci.unwrap();
        assert!(ci[0] <= w.mean && w.mean <= ci[1]);
        assert!(
            b.warnings
                .iter()
                .any(|x| x.contains("first run was slower")),
            "{:?}",
            b.warnings
        );
        assert!(!b.warnings.iter().any(|x| x.contains("statistical outlier")));
        assert!(r.ok());
    }

    #[test]
    fn failures_stop_a_benchmark_unless_ignored() {
        let mut cfg = mock(&[0.1, -0.1], 6);
        let r = run_command_benchmark(&cfg).unwrap();
        assert_eq!(r.benchmarks[0].runs.len(), 2);
        assert!(r.benchmarks[0].stopped_early && !r.ok());
        cfg.ignore_failure = true;
        let r = run_command_benchmark(&cfg).unwrap();
        let b = &r.benchmarks[0];
        assert_eq!((b.runs.len(), b.failed_runs), (6, 3));
        assert_eq!(b.wall_s.as_ref().unwrap().n, 6);
        assert!(
            b.warnings[0].starts_with("3 of 6 runs failed"),
            "{:?}",
            b.warnings
        );
        assert!(r.ok());
    }

    #[test]
    fn runs_interleave_across_parameter_values() {
        let mut cfg = mock(&[1.0, 2.0], 3);
        cfg.command = vec!["x".into(), "{n}".into()];
        cfg.params = vec![Parameter::parse("n=a,b").unwrap()];
        let r = run_command_benchmark(&cfg).unwrap();
        // Interleaved: a gets every odd draw (1.0), b every even one (2.0).
        assert!(r.benchmarks[0].runs.iter().all(|x| x.wall_s == 1.0));
        assert!(r.benchmarks[1].runs.iter().all(|x| x.wall_s == 2.0));
        assert_eq!(r.benchmarks[1].argv, vec!["x", "b"]);
    }

    #[test]
    fn world_size_scan_from_wall_time() {
        let mut cfg = mock(&[8.0, 2.0], 3);
        cfg.command = vec!["train".into(), "{worldSize}".into()];
        cfg.params = vec![Parameter::parse("worldSize=1,4").unwrap()];
        let s = run_command_benchmark(&cfg).unwrap().scaling.unwrap();
        assert_eq!(s.metric, "runs_per_s");
        assert_eq!(s.points[1].speedup, 4.0);
        assert_eq!(s.points[1].efficiency, 1.0);
    }

    #[test]
    fn bad_configs_are_invalid() {
        let mut cfg = mock(&[1.0], 0);
        assert!(run_command_benchmark(&cfg).unwrap_err().is_invalid_input());
        cfg.runs = 1;
        cfg.params = vec![Parameter::parse("n=1").unwrap()];
        let e = run_command_benchmark(&cfg).unwrap_err();
        assert!(e.to_string().contains("not used"), "{e}");
        cfg.params.clear();
        cfg.command.clear();
        assert!(run_command_benchmark(&cfg).is_err());
    }
}
