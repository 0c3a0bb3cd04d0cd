//! `yardstick playbook list | show NAME | NAME`: one command per question. A playbook writes a
//! spec (shown by `show`, runnable by `run`), runs it as a normal stored run, and ends with a
//! diagnosis — verdict, confidence, evidence, actions — in the run's `summary.json`; see
//! `yardstick_run::playbook` and docs/playbooks.md.

use std::path::PathBuf;
use std::time::Duration;

use yardstick_run::playbook::{self, PLAYBOOKS, TailLatency};

use crate::cli::{GlobalOpts, verbosity};
use crate::cmd::run::{Execution, execute_spec};
use crate::exit::{Status, invalid};
use crate::output::{self, outln};

/// Answer one question with a designed experiment and a diagnosis.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick playbook list\n  \
yardstick playbook tail-latency --url http://127.0.0.1:8000 --model m --slo-ttft-ms 500\n  \
yardstick playbook show tail-latency --url http://127.0.0.1:8000 --model m --max-rate 40")]
pub struct PlaybookArgs {
    #[command(subcommand)]
    pub command: PlaybookCommand,
}

/// The playbook subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PlaybookCommand {
    /// The playbooks, each with its question and what it runs.
    #[command(
        after_help = "Examples:\n  yardstick playbook list\n  yardstick playbook list --json"
    )]
    List,
    /// Print the spec a playbook would run (a probe runs first unless --max-rate is given).
    #[command(after_help = "Examples:\n  \
yardstick playbook show tail-latency --url http://127.0.0.1:8000 --model m --max-rate 40\n  \
yardstick playbook show tail-latency --url http://127.0.0.1:8000 --model m > tail.yaml")]
    Show {
        /// The playbook.
        #[arg(value_name = "NAME")]
        name: String,
        #[command(flatten)]
        tail: TailArgs,
    },
    /// Why is p99 TTFT bad, and from what load on? A probe finds the throughput the server
    /// sustains; an open-loop sweep of rates up to it finds the knee, where p99 TTFT leaves its
    /// unloaded level beyond its interval; the growth there is split into the client's queue,
    /// the server's queue, time outside the server and service time.
    #[command(
        name = "tail-latency",
        after_help = "Examples:\n  \
yardstick playbook tail-latency --url http://127.0.0.1:8000 --model m\n  \
yardstick playbook tail-latency --url http://127.0.0.1:8000 --model m --slo-ttft-ms 500\n  \
yardstick playbook tail-latency --url http://gpu:8000 --model m --max-rate 40 --json"
    )]
    TailLatency {
        #[command(flatten)]
        tail: TailArgs,
        /// Write the spec it runs here too.
        #[arg(long, value_name = "FILE")]
        spec_out: Option<PathBuf>,
        /// Store directory.
        #[arg(
            long,
            env = "YARDSTICK_STORE",
            default_value = "yardstick-store",
            value_name = "DIR"
        )]
        store: PathBuf,
    },
}

/// The settings of the tail-latency experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct TailArgs {
    /// The server's base URL (OpenAI-compatible).
    #[arg(long)]
    pub url: Option<String>,
    /// The model to request.
    #[arg(long)]
    pub model: Option<String>,
    /// `chat` or `completions`.
    #[arg(long, default_value = "chat")]
    pub api: String,
    /// The precision the server runs (`bf16`, `fp16`, `fp8`, `int4`...), recorded with the run
    /// so runs compare like with like.
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// The traffic: prompt and output tokens (`D(256,128)`, `N(480,240)/(300,150)`).
    #[arg(long, default_value = "D(256,128)")]
    pub scenario: String,
    /// The SLO on p99 TTFT, ms: the diagnosis says which rates meet it.
    #[arg(long, value_name = "MS")]
    pub slo_ttft_ms: Option<f64>,
    /// The highest rate of the sweep, requests/s (default: the probe's sustained throughput).
    #[arg(long, value_name = "RPS")]
    pub max_rate: Option<f64>,
    /// Rates in the sweep, evenly spaced up to the highest.
    #[arg(long, default_value_t = 6)]
    pub levels: usize,
    /// Replicates per rate (at least 3).
    #[arg(long, default_value_t = 3)]
    pub replicates: u32,
    /// Requests per replicate at most.
    #[arg(long, default_value_t = 300)]
    pub requests: u64,
    /// Seconds per replicate at most.
    #[arg(long, default_value_t = 20.0, value_name = "SECONDS")]
    pub duration: f64,
    /// The probe's concurrency (closed loop): enough streams to fill the server.
    #[arg(long, default_value_t = 32)]
    pub probe_concurrency: u32,
}

impl TailArgs {
    fn settings(&self, max_rate: f64) -> TailLatency {
        TailLatency {
            name: "playbook-tail-latency".into(),
            url: self.url.clone().unwrap_or_default(),
            model: self.model.clone().unwrap_or_default(),
            api: self.api.clone(),
            precision: self.precision.clone(),
            scenario: self.scenario.clone(),
            slo_ttft_ms: self.slo_ttft_ms,
            max_rate,
            levels: self.levels,
            replicates: self.replicates,
            requests: self.requests,
            duration_s: self.duration,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        let url = self.url.as_deref().unwrap_or_default();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(invalid(
                "tail-latency needs --url, an http(s) URL of the server",
                Some("e.g. --url http://127.0.0.1:8000 --model my-model"),
            ));
        }
        if self.model.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(
                "tail-latency needs --model",
                Some("the model name the server serves, e.g. --model meta-llama/Llama-3.1-8B"),
            ));
        }
        if !matches!(self.api.as_str(), "chat" | "completions") {
            return Err(invalid(
                format!("--api `{}`: expected chat or completions", self.api),
                None,
            ));
        }
        if self.levels < 2 || self.levels > 20 {
            return Err(invalid(
                format!("--levels {}: a sweep needs 2 to 20 rates", self.levels),
                Some("e.g. --levels 6"),
            ));
        }
        if self.replicates < 3 {
            return Err(invalid(
                "--replicates: a result needs at least 3 independent replicates",
                Some("e.g. --replicates 3 (5 gives tighter intervals)"),
            ));
        }
        if self.max_rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(invalid(
                "--max-rate must be above 0",
                Some("e.g. --max-rate 40"),
            ));
        }
        if !(self.duration > 0.0 && self.duration.is_finite()) || self.requests < 10 {
            return Err(invalid(
                "--duration must be above 0 and --requests at least 10",
                Some("e.g. --requests 300 --duration 20"),
            ));
        }
        Ok(())
    }
}

fn execution(store: &std::path::Path) -> Execution {
    Execution {
        store: std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf()),
        warehouse: None,
        resume: None,
        seed: 42,
        only: None,
        spec_dir: None,
        inputs_from: None,
        telemetry_interval: Duration::from_secs(1),
        pods: None,
        hot: Vec::new(),
    }
}

/// Runs a written spec: checked like `yardstick validate`, then executed into the store.
fn run_text(text: &str, how: &Execution) -> anyhow::Result<yardstick_run::RunOutcome> {
    let checked = yardstick_spec::check_str(text);
    let Some(spec) = checked.valid_spec() else {
        let why: Vec<String> = checked
            .diagnostics
            .iter()
            .map(|d| format!("{}:{}: {}", d.line, d.col, d.message))
            .collect();
        return Err(invalid(
            format!(
                "the playbook wrote a spec that does not validate: {}",
                why.join("; ")
            ),
            Some("check --scenario and --model"),
        ));
    };
    execute_spec(text, spec, how)
}

/// The highest rate: `--max-rate`, or what a closed-loop probe run sustains.
fn max_rate(t: &TailArgs, store: &std::path::Path) -> anyhow::Result<f64> {
    if let Some(r) = t.max_rate {
        return Ok(r);
    }
    if verbosity() >= 0 {
        output::info(&format!(
            "probe: the throughput {} sustains at concurrency {}",
            t.url.as_deref().unwrap_or_default(),
            t.probe_concurrency
        ));
    }
    let text = playbook::probe_spec(&t.settings(1.0), t.probe_concurrency);
    let out = run_text(&text, &execution(store))?;
    let rate = out
        .summary
        .as_ref()
        .and_then(playbook::probe_throughput)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the probe run {} measured no throughput: does the server answer? (its summary: {})",
                out.run_id,
                out.dir.join("summary.json").display()
            )
        })?;
    if verbosity() >= 0 {
        output::info(&format!(
            "probe: {rate:.3} req/s sustained (run {}); the sweep goes up to it",
            out.run_id
        ));
    }
    Ok(rate)
}

pub fn run(args: PlaybookArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        PlaybookCommand::List => {
            if g.json {
                output::json(&PLAYBOOKS)?;
            } else {
                for p in PLAYBOOKS {
                    outln!(
                        "{}\n  {}\n  runs: {}\n  verdicts: {}",
                        p.name,
                        p.question,
                        p.experiment,
                        p.verdicts.join(", ")
                    )?;
                }
            }
            Ok(Status::Ok)
        }
        PlaybookCommand::Show { name, tail } => {
            if name != "tail-latency" {
                return Err(unknown(&name));
            }
            tail.check()?;
            let store =
                std::env::temp_dir().join(format!("yardstick-playbook-{}", std::process::id()));
            let rate = max_rate(&tail, &store);
            let _ = std::fs::remove_dir_all(&store);
            output::text(&playbook::tail_latency_spec(&tail.settings(rate?)))?;
            Ok(Status::Ok)
        }
        PlaybookCommand::TailLatency {
            tail,
            spec_out,
            store,
        } => {
            tail.check()?;
            let rate = max_rate(&tail, &store)?;
            let text = playbook::tail_latency_spec(&tail.settings(rate));
            if let Some(p) = &spec_out {
                std::fs::write(p, &text)
                    .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
            }
            let out = run_text(&text, &execution(&store))?;
            let diagnosis = out.summary.as_ref().and_then(|s| s.diagnosis.clone());
            if g.json {
                output::json(&serde_json::json!({
                    "run_id": out.run_id,
                    "dir": out.dir,
                    "status": out.status,
                    "diagnosis": diagnosis,
                }))?;
            } else {
                outln!("run {} -> {}", out.run_id, out.dir.display())?;
                match &diagnosis {
                    Some(d) => output::text(&playbook::text(d))?,
                    None => outln!("no diagnosis: the run stored no summary")?,
                }
            }
            Ok(match out.status {
                yardstick_store::RunStatus::Complete => Status::Ok,
                _ => Status::Failure,
            })
        }
    }
}

fn unknown(name: &str) -> anyhow::Error {
    invalid(
        format!("no playbook `{name}`"),
        Some(&format!(
            "one of: {} (`yardstick playbook list`)",
            PLAYBOOKS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    )
}
