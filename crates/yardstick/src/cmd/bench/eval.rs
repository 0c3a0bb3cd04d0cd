//! `yardstick bench eval`: wiring of the accuracy eval (crate `yardstick-eval`) to the CLI.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use yardstick_error::UserFacing;
use yardstick_eval::backend::HttpBackend;
use yardstick_eval::{Decoding, EvalError, Task};
use yardstick_load::Api;

use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{self, Status};
use crate::output;

/// Run a small deterministic accuracy eval against an OpenAI-compatible server.
///
/// Every item is sent with temperature 0, a fixed seed, fixed max tokens and stop sequences.
/// Reports per task: n, accuracy with a Wilson score CI, determinism across --repeat, latency.
/// With --compare A.json B.json: McNemar on paired per-item correctness (and a paired bootstrap
/// of BLEU / ROUGE-L / F1) as the significance evidence, and per task the verdict `yardstick
/// gate` would give (PASS/WARN/FAIL/INCONCLUSIVE: a paired item bootstrap of the ratio B/A
/// against --tolerance-points).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick bench eval --url http://127.0.0.1:8000 --model m\n  \
yardstick bench eval --url http://localhost:8000 --model m --tasks arith,my.jsonl --repeat 3\n  \
yardstick bench eval --url http://localhost:8000 --model m --tasks none --perplexity builtin\n  \
yardstick bench eval --compare eval-a/eval.json eval-b/eval.json"
)]
pub struct EvalArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:8000 (`/v1` is added when missing).
    #[arg(long, required_unless_present = "compare")]
    pub url: Option<String>,
    /// Model name to request.
    #[arg(long, required_unless_present = "compare")]
    pub model: Option<String>,
    /// Tasks, comma-separated: bundled probes (arith, format, extract, code) or paths to .jsonl
    /// files; `none` for none (e.g. perplexity only).
    #[arg(long, value_delimiter = ',', default_value = "arith,format")]
    pub tasks: Vec<String>,
    /// API: chat or completions.
    #[arg(long, default_value = "chat")]
    pub api: String,
    /// Run every item N times and report the determinism rate.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Requests in flight at once (results keep file order).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Confidence level of the accuracy intervals (with --compare: of the gate's paired
    /// intervals).
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Maximum output tokens per item.
    #[arg(long, default_value_t = 128)]
    pub max_tokens: u64,
    /// Sampling seed sent with every request.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop sequence (repeatable).
    #[arg(long = "stop", value_name = "S")]
    pub stop: Vec<String>,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Environment variable holding a bearer token.
    #[arg(long)]
    pub bearer_env: Option<String>,
    /// PEM file of CA certificates to trust for an https URL, beside the public (webpki) roots:
    /// a private CA or a self-signed endpoint. Certificates are always verified.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<std::path::PathBuf>,
    /// Perplexity over a text shard through /v1/completions with echo + logprobs: `builtin` (the
    /// bundled shard) or a text file (paragraphs separated by blank lines).
    #[arg(long, value_name = "builtin|FILE")]
    pub perplexity: Option<String>,
    /// Write eval.json and items.jsonl into DIR.
    #[arg(long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Compare two eval.json files (A = baseline, B = candidate) instead of running.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "url")]
    pub compare: Option<Vec<PathBuf>>,
    /// Significance level of --compare's McNemar / bootstrap verdicts.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// With --compare: the drop of accuracy (and of BLEU, ROUGE-L or F1, on the 0-100 scale),
    /// in points, beyond which the gate's verdict is FAIL (the gate's default, 2).
    #[arg(long, default_value_t = 2.0, value_name = "POINTS")]
    pub tolerance_points: f64,
}

fn task_error(e: EvalError) -> anyhow::Error {
    match e {
        EvalError::Task { .. }
        | EvalError::UnknownTask { .. }
        | EvalError::Io { .. }
        | EvalError::Config(_) => {
            exit::invalid(e.to_string(), Some("see docs/eval.md for the task format"))
        }
        other => anyhow::Error::new(other),
    }
}

/// Runs the eval (or the comparison).
pub fn run(args: EvalArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(exit::invalid(
            format!(
                "--confidence must be in (0, 1), e.g. 0.95 (got {})",
                args.confidence
            ),
            None,
        ));
    }
    if let Some(files) = &args.compare {
        return compare(files, &args, g);
    }
    let (Some(url), Some(model)) = (args.url.clone(), args.model.clone()) else {
        return Err(exit::invalid("--url and --model are required", None));
    };
    let api: Api = args
        .api
        .parse()
        .map_err(|e: yardstick_load::openai::UnknownApi| exit::invalid(e.to_string(), None))?;
    if api == Api::Embeddings {
        return Err(exit::invalid(
            "bench eval needs --api chat or completions",
            None,
        ));
    }
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        return Err(exit::invalid(
            "--timeout must be a positive number of seconds",
            None,
        ));
    }
    let tasks = args
        .tasks
        .iter()
        .map(|t| t.trim())
        .filter(|t| *t != "none" && !t.is_empty())
        .map(Task::load)
        .collect::<Result<Vec<_>, _>>()
        .map_err(task_error)?;
    let shard = args
        .perplexity
        .as_deref()
        .map(yardstick_eval::Shard::load)
        .transpose()
        .map_err(task_error)?;
    if tasks.is_empty() && shard.is_none() {
        return Err(exit::invalid(
            "nothing to do: --tasks none without --perplexity",
            None,
        ));
    }
    let backend = HttpBackend::new(
        &url,
        api,
        Duration::from_secs_f64(args.timeout),
        args.bearer_env.as_deref(),
        args.ca_cert.as_deref(),
        args.concurrency,
    )
    .map_err(task_error)?;
    let decoding = Decoding {
        model,
        max_tokens: args.max_tokens,
        seed: args.seed,
        stop: args.stop.clone(),
    };
    if verbosity() >= 0 {
        let n: usize = tasks.iter().map(|t| t.items.len()).sum();
        output::info(&format!(
            "evaluating {n} items × {} repeat(s) against {url}…",
            args.repeat.max(1)
        ));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut report = rt
        .block_on(yardstick_eval::run_eval(
            &backend,
            &decoding,
            &tasks,
            yardstick_eval::RunOptions {
                repeat: args.repeat,
                confidence: args.confidence,
                concurrency: args.concurrency,
            },
        ))
        .map_err(task_error)?;
    if let Some(shard) = &shard {
        let completions = HttpBackend::new(
            &url,
            Api::Completions,
            Duration::from_secs_f64(args.timeout),
            args.bearer_env.as_deref(),
            args.ca_cert.as_deref(),
            1,
        )
        .map_err(task_error)?;
        if verbosity() >= 0 {
            output::info(&format!(
                "perplexity over {} ({} paragraphs)…",
                shard.source,
                shard.paragraphs.len()
            ));
        }
        let p = rt
            .block_on(yardstick_eval::perplexity::measure(
                &completions,
                &decoding.model,
                shard,
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(why) = &p.unsupported {
            output::warn(&format!("perplexity: unsupported by this server: {why}"));
        }
        report.perplexity = Some(p);
    }
    if let Some(dir) = &args.output {
        report.write_dir(dir)?;
    }
    if g.json {
        output::json(&report.to_json())?;
    } else {
        output::text(&report.text(args.confidence))?;
    }
    let total: usize = report.tasks.iter().map(|t| t.items.len()).sum();
    let errors: usize = report.tasks.iter().map(|t| t.errors).sum();
    if total > 0 && errors == total {
        let first = report
            .tasks
            .iter()
            .flat_map(|t| &t.items)
            .find_map(|i| i.error.clone())
            .unwrap_or_default();
        output::error(&format!("every request failed; first error: {first}"));
        return Ok(Status::Failure);
    }
    if errors > 0 {
        output::warn(&format!(
            "{errors} of {total} requests failed (counted as wrong)"
        ));
    }
    Ok(Status::Ok)
}

fn compare(files: &[PathBuf], args: &EvalArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(exit::invalid("--alpha must be in (0, 1), e.g. 0.05", None));
    }
    if !(0.0..100.0).contains(&args.tolerance_points) {
        return Err(exit::invalid(
            format!(
                "--tolerance-points must be in [0, 100) (got {})",
                args.tolerance_points
            ),
            None,
        ));
    }
    let read = |p: &PathBuf| -> anyhow::Result<serde_json::Value> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| exit::invalid(format!("{}: not JSON: {e}", p.display()), None))
    };
    let (a, b) = (read(&files[0])?, read(&files[1])?);
    let opts = yardstick_gate::eval::EvalGateOptions {
        tolerances: Some(yardstick_spec::Tolerances {
            accuracy_drop_points: Some(args.tolerance_points),
            quality_drop_points: Some(args.tolerance_points),
            ..Default::default()
        }),
        level: args.confidence,
    };
    let c = yardstick_gate::eval::compare_eval(
        &a,
        &files[0].display().to_string(),
        &b,
        &files[1].display().to_string(),
        args.alpha,
        &opts,
    )
    .map_err(|e| {
        if e.is_invalid_input() || matches!(e, yardstick_gate::GateError::Malformed { .. }) {
            exit::invalid(e.to_string(), None)
        } else {
            anyhow::Error::new(e)
        }
    })?;
    if g.json {
        output::json(&c)?;
    } else {
        let text = yardstick_gate::eval::text(&c, args.tolerance_points);
        crate::output::outln!("{}", text.trim_end())?;
    }
    Ok(Status::Ok)
}
