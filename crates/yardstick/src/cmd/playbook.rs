//! `yardstick playbook list | show NAME | NAME`: one command per question. A playbook writes a
//! spec (shown by `show`, runnable by `run`), runs it as a normal stored run, and ends with a
//! diagnosis — verdict, confidence, evidence, actions — in the run's `summary.json`; see
//! `yardstick_run::playbook` and docs/playbooks.md.

use std::path::PathBuf;
use std::time::Duration;

use yardstick_run::playbook::{
    self, Backpressure, PLAYBOOKS, RankEngine, SchedulerBurst, Starvation, Stragglers, TailLatency,
};

use crate::cli::{GlobalOpts, verbosity};
use crate::cmd::run::{Execution, execute_spec};
use crate::exit::{Status, invalid};
use crate::output::{self, outln};

/// Answer one question with a designed experiment and a diagnosis.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick playbook list\n  \
yardstick playbook tail-latency --url http://127.0.0.1:8000 --model m --slo-ttft-ms 500\n  \
yardstick playbook starvation --url http://127.0.0.1:8000 --model m\n  \
yardstick playbook stragglers --engine slurm --nodes 4 --tasks 8 -- python train.py\n  \
yardstick playbook backpressure --url http://127.0.0.1:8000 --model m\n  \
yardstick playbook readiness --nodes 4 --gpus-per-node 8\n  \
yardstick playbook triage --url http://127.0.0.1:8000 --model m\n  \
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
    /// Print the spec a playbook would run (a probe runs first unless its rate is given).
    #[command(
        subcommand,
        after_help = "Examples:\n  \
yardstick playbook show tail-latency --url http://127.0.0.1:8000 --model m --max-rate 40\n  \
yardstick playbook show starvation --url http://127.0.0.1:8000 --model m --rate 10\n  \
yardstick playbook show stragglers --tasks 2 > ranks.yaml\n  \
yardstick playbook show backpressure --url http://127.0.0.1:8000 --model m --capacity 12"
    )]
    Show(ShowCommand),
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
        #[command(flatten)]
        out: RunOut,
    },
    /// Do short requests starve behind long prompts (or long behind short)? Short and long
    /// requests are mixed at one open-loop rate, and each class runs alone at its share of it;
    /// each class's p99 TTFT in the mix is compared with its own, and short requests sent while
    /// a long one was in prefill with the rest (head-of-line blocking).
    #[command(after_help = "Examples:\n  \
yardstick playbook starvation --url http://127.0.0.1:8000 --model m\n  \
yardstick playbook starvation --url http://gpu:8000 --model m --long 'D(8192,64)' --rate 8\n  \
yardstick playbook starvation --url http://gpu:8000 --model m --rate 12 --json")]
    Starvation {
        #[command(flatten)]
        starve: StarveArgs,
        #[command(flatten)]
        out: RunOut,
    },
    /// Is one rank (one node, one device) slower than the others, persistently? A command runs
    /// as N ranks (the reference trainer by default), here or on a Slurm allocation; a rank is a
    /// straggler when it is the slowest in most steps of every replicate, by more than 5 %. Its
    /// node is named with the command that drains it, run only with --apply.
    #[command(after_help = "Examples:\n  \
yardstick playbook stragglers --tasks 2\n  \
yardstick playbook stragglers --engine slurm --nodes 4 --tasks 8 -- python train.py --steps 60\n  \
yardstick playbook stragglers --engine slurm --nodes 4 --tasks 8 --apply -- ./train.sh")]
    Stragglers {
        #[command(flatten)]
        ranks: RankArgs,
        /// Run the remedy the diagnosis names (Slurm: `scontrol update nodename=N state=drain`)
        /// when it finds a straggler; without it, the command is printed, never run.
        #[arg(long)]
        apply: bool,
        #[command(flatten)]
        out: RunOut,
    },
    /// What does the server do when offered more than it can serve? A probe finds what it
    /// sustains; then it is offered half of that, and --overload times it from a client that
    /// takes a refusal (429, 503) as final and from one that retries as Retry-After says. It
    /// sheds load (and says when to come back, or not), or queues without bound. With
    /// --engine slurm, the scheduler instead: a burst of short jobs at --rate; it keeps up, is
    /// backlogged, or slows submission.
    #[command(after_help = "Examples:\n  \
yardstick playbook backpressure --url http://127.0.0.1:8000 --model m\n  \
yardstick playbook backpressure --url http://gpu:8000 --model m --capacity 12 --overload 3\n  \
yardstick playbook backpressure --url http://gpu:8000 --model m --scenario 'D(1024,128)' --json\n  \
yardstick playbook backpressure --engine slurm --jobs 40 --rate 4 --hold 2")]
    Backpressure {
        #[command(flatten)]
        pressure: PressureArgs,
        #[command(flatten)]
        out: RunOut,
    },
    /// The intake bundle in one command: the environment, the micro layer, the reference
    /// trainer (or the command after --) classified against the ceilings measured, a short
    /// serve when --url is given; the diagnosis is the bottleneck class, and one HTML report
    /// holds it all, to attach to a ticket.
    #[command(after_help = "Examples:\n  \
yardstick playbook triage\n  \
yardstick playbook triage --url http://127.0.0.1:8000 --model m --html ticket-1234.html\n  \
yardstick playbook triage --profile perf\n  \
yardstick playbook triage -- python train.py --steps 50")]
    Triage {
        #[command(flatten)]
        triage: TriageArgs,
        /// Write the HTML report here (default: `<store>/triage/<run id>.html`).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        #[command(flatten)]
        out: RunOut,
    },
    /// Is every node of the allocation fit for a multi-node workload? A Slurm batch job over
    /// --nodes nodes captures each node's environment and runs the micro layer on each; a node
    /// missing GPUs, with a degraded link, another driver, or micro figures off the others' is
    /// not ready, named with the command that drains it (run only with --apply).
    #[command(after_help = "Examples:\n  \
yardstick playbook readiness --nodes 4\n  \
yardstick playbook readiness --nodes 16 --gpus-per-node 8 --partition gpu\n  \
yardstick playbook readiness --nodes 16 --gpus-per-node 8 --apply\n  \
yardstick playbook readiness --nodes 2 --nccl-tests ar.txt --nccl-min-busbw 350")]
    Readiness {
        #[command(flatten)]
        ready: ReadyArgs,
        /// Drain the nodes that are not ready (Slurm: `scontrol update nodename=N
        /// state=drain`); without it, the commands are printed, never run.
        #[arg(long)]
        apply: bool,
        #[command(flatten)]
        out: RunOut,
    },
}

/// The settings of the triage bundle.
#[derive(Debug, Clone, clap::Args)]
pub struct TriageArgs {
    /// A server to measure too (OpenAI-compatible), with --model.
    #[arg(long)]
    pub url: Option<String>,
    /// The model the server serves.
    #[arg(long)]
    pub model: Option<String>,
    /// Steps of the reference trainer (without a command).
    #[arg(long, default_value_t = 40)]
    pub steps: u64,
    /// Profile the workload in one extra replicate (never measured) with this tool: `perf` or
    /// `nsys` for any workload, `py-spy` for a Python one, `torch` for a PyTorch one (not the
    /// reference trainer); its top entries join the evidence and the report.
    #[arg(long, value_name = "TOOL", value_parser = ["perf", "nsys", "py-spy", "torch"])]
    pub profile: Option<String>,
    /// Replicates (at least 3).
    #[arg(long, default_value_t = 3)]
    pub replicates: u32,
    /// The workload (after `--`), reporting its steps through the metric protocol; default:
    /// the reference trainer.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl TriageArgs {
    fn settings(&self) -> anyhow::Result<playbook::Triage> {
        check_replicates(self.replicates)?;
        let serve = match (&self.url, &self.model) {
            (None, None) => None,
            (Some(u), Some(m)) if u.starts_with("http://") || u.starts_with("https://") => {
                Some((u.clone(), m.clone()))
            }
            _ => {
                return Err(invalid(
                    "--url and --model go together, the URL http(s)",
                    Some("e.g. --url http://127.0.0.1:8000 --model my-model, or neither"),
                ));
            }
        };
        if self.steps < 10 {
            return Err(invalid(
                format!("--steps {}: the trainer needs at least 10", self.steps),
                Some("e.g. --steps 40"),
            ));
        }
        Ok(playbook::Triage {
            name: "playbook-triage".into(),
            serve,
            command: self.command.clone(),
            steps: self.steps,
            profile: self.profile.clone(),
            replicates: self.replicates,
        })
    }
}

/// The settings of the readiness check.
#[derive(Debug, Clone, clap::Args)]
pub struct ReadyArgs {
    /// Nodes of the allocation.
    #[arg(long, default_value_t = 2)]
    pub nodes: u32,
    /// The partition (default: the cluster's default).
    #[arg(long)]
    pub partition: Option<String>,
    /// GPUs every node must show; a node with fewer (a GPU fallen off the bus) is not ready.
    #[arg(long, value_name = "N")]
    pub gpus_per_node: Option<u32>,
    /// Replicates of the micro layer (at least 3).
    #[arg(long, default_value_t = 3)]
    pub replicates: u32,
    /// nccl-tests output of these nodes (`srun all_reduce_perf -b 8 -e 8G -f 2 -g 8 > FILE`;
    /// repeatable), stored with the run: wrong data, or an average bus bandwidth below
    /// --nccl-min-busbw, makes the hosts it ran on not ready.
    #[arg(long = "nccl-tests", value_name = "FILE")]
    pub nccl_tests: Vec<std::path::PathBuf>,
    /// The average bus bandwidth (GB/s) each --nccl-tests output must reach.
    #[arg(long, value_name = "GBPS", requires = "nccl_tests")]
    pub nccl_min_busbw: Option<f64>,
}

impl ReadyArgs {
    fn settings(&self) -> anyhow::Result<playbook::Readiness> {
        check_replicates(self.replicates)?;
        if !(1..=4096).contains(&self.nodes) {
            return Err(invalid(
                format!("--nodes {}: must be 1 to 4096", self.nodes),
                Some("e.g. --nodes 4"),
            ));
        }
        if let Some(m) = self.nccl_min_busbw
            && !(m.is_finite() && m > 0.0)
        {
            return Err(invalid(
                format!("--nccl-min-busbw {m}: a bandwidth in GB/s above 0"),
                Some("e.g. --nccl-min-busbw 350 for 8 H100s on NVLink"),
            ));
        }
        let mut nccl_tests = Vec::new();
        for f in &self.nccl_tests {
            // The spec is written elsewhere (the store's playbooks/): it names the file whole.
            let path = std::path::absolute(f).unwrap_or_else(|_| f.clone());
            let text = std::fs::read_to_string(&path).map_err(|e| {
                invalid(
                    format!("--nccl-tests {}: {e}", f.display()),
                    Some("give the output file of an nccl-tests run (all_reduce_perf > FILE)"),
                )
            })?;
            yardstick_workloads::micro::ingest::nccl::parse_checked(&text).map_err(|e| {
                invalid(
                    format!("--nccl-tests {}: {e}", f.display()),
                    Some(
                        "give the output of all_reduce_perf (or another nccl-tests binary) as it printed it",
                    ),
                )
            })?;
            nccl_tests.push(path.display().to_string());
        }
        Ok(playbook::Readiness {
            name: "playbook-readiness".into(),
            nodes: self.nodes,
            partition: self.partition.clone(),
            gpus_per_node: self.gpus_per_node,
            replicates: self.replicates,
            nccl_tests,
            nccl_min_busbw: self.nccl_min_busbw,
        })
    }
}

/// The settings of the backpressure experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct PressureArgs {
    /// What is pushed: `server` (the OpenAI-compatible server at --url) or `slurm` (the
    /// scheduler: a burst of short jobs at --rate).
    #[arg(long, default_value = "server", value_parser = ["server", "slurm"])]
    pub engine: String,
    #[command(flatten)]
    pub common: Common,
    /// Slurm: jobs per burst (one burst per replicate).
    #[arg(long, default_value_t = 20)]
    pub jobs: u32,
    /// Slurm: submissions per second.
    #[arg(long, default_value_t = 2.0, value_name = "PER_S")]
    pub rate: f64,
    /// Slurm: seconds each job holds its allocation after it starts.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub hold: f64,
    /// Slurm: the partition (default: the cluster's default).
    #[arg(long)]
    pub partition: Option<String>,
    /// Slurm: where jobs stamp their start, a directory every node can write (default:
    /// `<store>/playbooks/burst`).
    #[arg(long, value_name = "DIR")]
    pub stamp_dir: Option<PathBuf>,
    /// The traffic: prompt and output tokens.
    #[arg(long, default_value = "D(128,32)")]
    pub scenario: String,
    /// What the server sustains, requests/s (default: what a closed-loop probe measures).
    #[arg(long, value_name = "RPS")]
    pub capacity: Option<f64>,
    /// The overloaded points offer this many times the capacity (above 1).
    #[arg(long, default_value_t = 2.0, value_name = "FACTOR")]
    pub overload: f64,
    /// Attempts per request at most of the retrying client, the first included (2 to 20).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_attempts: u32,
}

impl PressureArgs {
    fn settings(&self, capacity: f64) -> Backpressure {
        let c = &self.common;
        Backpressure {
            name: "playbook-backpressure".into(),
            url: c.url.clone().unwrap_or_default(),
            model: c.model.clone().unwrap_or_default(),
            api: c.api.clone(),
            precision: c.precision.clone(),
            scenario: self.scenario.clone(),
            capacity,
            overload: self.overload,
            max_attempts: self.max_attempts,
            replicates: c.replicates,
            requests: c.requests,
            duration_s: c.duration,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.engine == "slurm" {
            check_replicates(self.common.replicates)?;
            if self.common.url.is_some() {
                return Err(invalid(
                    "--url: with --engine slurm the scheduler is pushed, not a server",
                    Some("drop --url, or drop --engine slurm to push the server"),
                ));
            }
            return self.burst_args(std::path::Path::new(".")).burst().map(drop);
        }
        self.common.check("backpressure")?;
        if !(self.overload > 1.0 && self.overload <= 100.0) {
            return Err(invalid(
                format!(
                    "--overload {}: must be above 1 (and at most 100)",
                    self.overload
                ),
                Some("e.g. --overload 2: twice what the server sustains"),
            ));
        }
        if !(2..=20).contains(&self.max_attempts) {
            return Err(invalid(
                format!("--max-attempts {}: must be 2 to 20", self.max_attempts),
                Some("e.g. --max-attempts 4: one attempt and three retries"),
            ));
        }
        if self.capacity.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(invalid(
                "--capacity must be above 0",
                Some("e.g. --capacity 12"),
            ));
        }
        if self
            .scenario
            .parse::<yardstick_spec::scenario::Scenario>()
            .is_err()
        {
            return Err(invalid(
                format!("--scenario `{}`: not a scenario", self.scenario),
                Some("e.g. --scenario 'D(128,32)'"),
            ));
        }
        Ok(())
    }

    /// The `bench scheduler` arguments of a burst.
    fn burst_args(&self, store: &std::path::Path) -> crate::cmd::bench::scheduler::SchedulerArgs {
        crate::cmd::bench::scheduler::SchedulerArgs {
            engine: "slurm".into(),
            jobs: self.jobs,
            rate: self.rate,
            hold: self.hold,
            partition: self.partition.clone(),
            dir: Some(
                self.stamp_dir
                    .clone()
                    .unwrap_or_else(|| store.join("playbooks").join("burst")),
            ),
            timeout: "120s".into(),
        }
    }

    /// The scheduler burst's settings.
    fn burst(&self, store: &std::path::Path) -> anyhow::Result<SchedulerBurst> {
        let b = self.burst_args(store).burst()?;
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("finding this program to submit the burst: {e}"))?;
        Ok(SchedulerBurst {
            name: "playbook-backpressure-slurm".into(),
            exe: exe.display().to_string(),
            jobs: b.jobs,
            rate: b.rate,
            hold_s: b.hold_s,
            partition: b.partition,
            dir: b.dir.display().to_string(),
            replicates: self.common.replicates,
            timeout_s: b.timeout.as_secs_f64(),
        })
    }

    /// The spec the playbook runs (a probe first for a server without --capacity).
    fn spec(&self, store: &std::path::Path) -> anyhow::Result<String> {
        if self.engine == "slurm" {
            let store = std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf());
            return Ok(playbook::scheduler_spec(&self.burst(&store)?));
        }
        Ok(playbook::backpressure_spec(
            &self.settings(self.capacity(store)?),
        ))
    }

    /// `--capacity`, or what a closed-loop probe sustains.
    fn capacity(&self, store: &std::path::Path) -> anyhow::Result<f64> {
        match self.capacity {
            Some(r) => Ok(r),
            None => probe(
                &self.common,
                &self.common.probe("playbook-backpressure", &self.scenario),
                store,
            ),
        }
    }
}

/// The settings of the stragglers experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct RankArgs {
    /// Where the ranks run: `local` (N processes here) or `slurm` (a batch job).
    #[arg(long, default_value = "local", value_parser = ["local", "slurm"])]
    pub engine: String,
    /// Nodes of the Slurm allocation.
    #[arg(long, default_value_t = 1)]
    pub nodes: u32,
    /// Ranks per node.
    #[arg(long, default_value_t = 2)]
    pub tasks: u32,
    /// Steps of the default command (the reference trainer).
    #[arg(long, default_value_t = 40)]
    pub steps: u64,
    /// Steps dropped from each replicate before measuring.
    #[arg(long, default_value_t = 3)]
    pub warmup_steps: u64,
    /// Replicates (at least 3).
    #[arg(long, default_value_t = 3)]
    pub replicates: u32,
    /// Kill a replicate after this many seconds.
    #[arg(long, default_value_t = 600.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// The command each rank runs (after `--`); it reports `rank` and `step_time_s` per step
    /// (docs/metric-protocol.md). Default: `yardstick bench train --preset tiny`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl RankArgs {
    fn check(&self) -> anyhow::Result<()> {
        check_replicates(self.replicates)?;
        if self.tasks * self.nodes < 2 {
            return Err(invalid(
                "a straggler needs at least 2 ranks to compare",
                Some("e.g. --tasks 2"),
            ));
        }
        if self.engine == "local" && self.nodes != 1 {
            return Err(invalid(
                "--nodes: the local engine runs on this one machine",
                Some("use --engine slurm for several nodes, or drop --nodes"),
            ));
        }
        if !(self.timeout > 0.0 && self.timeout.is_finite()) || self.steps < 2 {
            return Err(invalid(
                "--timeout must be above 0 and --steps at least 2",
                Some("e.g. --steps 40 --timeout 600"),
            ));
        }
        Ok(())
    }

    fn settings(&self) -> anyhow::Result<Stragglers> {
        let command = if self.command.is_empty() {
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("finding this program to run as the ranks: {e}"))?;
            vec![
                exe.display().to_string(),
                "bench".into(),
                "train".into(),
                "--preset".into(),
                "tiny".into(),
                "--steps".into(),
                self.steps.to_string(),
                "--threads".into(),
                "1".into(),
            ]
        } else {
            self.command.clone()
        };
        Ok(Stragglers {
            name: "playbook-stragglers".into(),
            engine: if self.engine == "slurm" {
                RankEngine::Slurm
            } else {
                RankEngine::Local
            },
            nodes: self.nodes,
            tasks: self.tasks,
            replicates: self.replicates,
            warmup_steps: self.warmup_steps,
            command,
            timeout_s: self.timeout,
        })
    }
}

/// `playbook show NAME`: the spec each playbook runs.
#[derive(Debug, clap::Subcommand)]
pub enum ShowCommand {
    /// The tail-latency sweep.
    #[command(
        name = "tail-latency",
        after_help = "Examples:\n  \
yardstick playbook show tail-latency --url http://127.0.0.1:8000 --model m --max-rate 40\n  \
yardstick playbook show tail-latency --url http://127.0.0.1:8000 --model m > tail.yaml"
    )]
    TailLatency(TailArgs),
    /// The starvation experiment.
    #[command(after_help = "Examples:\n  \
yardstick playbook show starvation --url http://127.0.0.1:8000 --model m --rate 10\n  \
yardstick playbook show starvation --url http://127.0.0.1:8000 --model m > starve.yaml")]
    Starvation(StarveArgs),
    /// The stragglers experiment.
    #[command(after_help = "Examples:\n  \
yardstick playbook show stragglers --tasks 2\n  \
yardstick playbook show stragglers --engine slurm --nodes 4 -- python train.py > ranks.yaml")]
    Stragglers(RankArgs),
    /// The backpressure experiment.
    #[command(after_help = "Examples:\n  \
yardstick playbook show backpressure --url http://127.0.0.1:8000 --model m --capacity 12\n  \
yardstick playbook show backpressure --url http://127.0.0.1:8000 --model m > pressure.yaml")]
    Backpressure(PressureArgs),
    /// The readiness check.
    #[command(after_help = "Examples:\n  \
yardstick playbook show readiness --nodes 4 --gpus-per-node 8 > ready.yaml")]
    Readiness(ReadyArgs),
    /// The triage bundle.
    #[command(after_help = "Examples:\n  \
yardstick playbook show triage --url http://127.0.0.1:8000 --model m > triage.yaml")]
    Triage(TriageArgs),
}

/// Where a playbook's run goes.
#[derive(Debug, Clone, clap::Args)]
pub struct RunOut {
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
}

impl RunOut {
    /// `--spec-out`: the spec a playbook runs, written there too.
    fn write_spec(&self, text: &str) -> anyhow::Result<()> {
        if let Some(p) = &self.spec_out {
            std::fs::write(p, text).map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
        }
        Ok(())
    }
}

/// The server and how long each replicate runs: every playbook's options.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
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
    /// Replicates per point (at least 3).
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

/// The settings of the tail-latency experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct TailArgs {
    #[command(flatten)]
    pub common: Common,
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
}

/// The settings of the starvation experiment.
#[derive(Debug, Clone, clap::Args)]
pub struct StarveArgs {
    #[command(flatten)]
    pub common: Common,
    /// The short class: prompt and output tokens.
    #[arg(long, default_value = "D(64,16)")]
    pub short: String,
    /// The long class: prompt and output tokens (a longer prompt than the short class's).
    #[arg(long, default_value = "D(2048,16)")]
    pub long: String,
    /// The long class's share of the mix's requests, in (0, 1).
    #[arg(long, default_value_t = 0.2, value_name = "SHARE")]
    pub long_share: f64,
    /// The mix's rate, requests/s (default: --load-share of what a closed-loop probe of the mix
    /// sustains).
    #[arg(long, value_name = "RPS")]
    pub rate: Option<f64>,
    /// Without --rate: the share of the probe's sustained throughput to offer, in (0, 1].
    #[arg(long, default_value_t = 0.6, value_name = "SHARE")]
    pub load_share: f64,
}

/// A result needs at least 3 independent replicates.
fn check_replicates(n: u32) -> anyhow::Result<()> {
    if n < 3 {
        return Err(invalid(
            "--replicates: a result needs at least 3 independent replicates",
            Some("e.g. --replicates 3 (5 gives tighter intervals)"),
        ));
    }
    Ok(())
}

impl Common {
    fn check(&self, playbook: &str) -> anyhow::Result<()> {
        let url = self.url.as_deref().unwrap_or_default();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(invalid(
                format!("{playbook} needs --url, an http(s) URL of the server"),
                Some("e.g. --url http://127.0.0.1:8000 --model my-model"),
            ));
        }
        if self.model.as_deref().is_none_or(str::is_empty) {
            return Err(invalid(
                format!("{playbook} needs --model"),
                Some("the model name the server serves, e.g. --model meta-llama/Llama-3.1-8B"),
            ));
        }
        if !matches!(self.api.as_str(), "chat" | "completions") {
            return Err(invalid(
                format!("--api `{}`: expected chat or completions", self.api),
                None,
            ));
        }
        check_replicates(self.replicates)?;
        if !(self.duration > 0.0 && self.duration.is_finite()) || self.requests < 10 {
            return Err(invalid(
                "--duration must be above 0 and --requests at least 10",
                Some("e.g. --requests 300 --duration 20"),
            ));
        }
        Ok(())
    }

    /// The settings of a closed-loop probe of `scenario`.
    fn probe(&self, name: &str, scenario: &str) -> TailLatency {
        TailLatency {
            name: name.into(),
            url: self.url.clone().unwrap_or_default(),
            model: self.model.clone().unwrap_or_default(),
            api: self.api.clone(),
            precision: self.precision.clone(),
            scenario: scenario.into(),
            slo_ttft_ms: None,
            max_rate: 1.0,
            levels: 2,
            replicates: self.replicates,
            requests: self.requests,
            duration_s: self.duration,
        }
    }
}

impl TailArgs {
    fn settings(&self, max_rate: f64) -> TailLatency {
        TailLatency {
            slo_ttft_ms: self.slo_ttft_ms,
            max_rate,
            levels: self.levels,
            ..self.common.probe("playbook-tail-latency", &self.scenario)
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        self.common.check("tail-latency")?;
        if self.levels < 2 || self.levels > 20 {
            return Err(invalid(
                format!("--levels {}: a sweep needs 2 to 20 rates", self.levels),
                Some("e.g. --levels 6"),
            ));
        }
        if self.max_rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(invalid(
                "--max-rate must be above 0",
                Some("e.g. --max-rate 40"),
            ));
        }
        Ok(())
    }

    /// The highest rate: `--max-rate`, or what a closed-loop probe sustains.
    fn max_rate(&self, store: &std::path::Path) -> anyhow::Result<f64> {
        match self.max_rate {
            Some(r) => Ok(r),
            None => probe(&self.common, &self.settings(1.0), store),
        }
    }
}

impl StarveArgs {
    fn settings(&self, rate: f64) -> Starvation {
        let c = &self.common;
        Starvation {
            name: "playbook-starvation".into(),
            url: c.url.clone().unwrap_or_default(),
            model: c.model.clone().unwrap_or_default(),
            api: c.api.clone(),
            precision: c.precision.clone(),
            short: self.short.clone(),
            long: self.long.clone(),
            long_share: self.long_share,
            rate,
            replicates: c.replicates,
            requests: c.requests,
            duration_s: c.duration,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        self.common.check("starvation")?;
        let parse = |flag: &str, s: &str| {
            s.parse::<yardstick_spec::scenario::Scenario>()
                .ok()
                .filter(|sc| sc.parts().is_none() && !sc.is_embedding())
                .ok_or_else(|| {
                    invalid(
                        format!("{flag} `{s}`: not a single text scenario"),
                        Some("e.g. --short 'D(64,16)' --long 'D(2048,16)'"),
                    )
                })
        };
        let (short, long) = (parse("--short", &self.short)?, parse("--long", &self.long)?);
        if short.mean_input() >= long.mean_input() {
            return Err(invalid(
                format!(
                    "--long `{}` has no longer prompts than --short `{}`",
                    self.long, self.short
                ),
                Some(
                    "the long class's prompts must be longer, e.g. --short 'D(64,16)' --long 'D(2048,16)'",
                ),
            ));
        }
        if !(self.long_share > 0.0 && self.long_share < 1.0) {
            return Err(invalid(
                format!("--long-share {}: must be between 0 and 1", self.long_share),
                Some("e.g. --long-share 0.2"),
            ));
        }
        if !(self.load_share > 0.0 && self.load_share <= 1.0) {
            return Err(invalid(
                format!("--load-share {}: must be in (0, 1]", self.load_share),
                Some("e.g. --load-share 0.6"),
            ));
        }
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(invalid("--rate must be above 0", Some("e.g. --rate 10")));
        }
        Ok(())
    }

    /// The mix's rate: `--rate`, or `--load-share` of what a closed-loop probe of the mix
    /// sustains.
    fn rate(&self, store: &std::path::Path) -> anyhow::Result<f64> {
        match self.rate {
            Some(r) => Ok(r),
            None => {
                let mix = self.settings(1.0).mix();
                let probe_of = self.common.probe("playbook-starvation", &mix);
                Ok(probe(&self.common, &probe_of, store)? * self.load_share)
            }
        }
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
            Some(
                "check the options given (--scenario, --model, a command after --); `yardstick playbook show NAME ... > spec.yaml` and `yardstick validate spec.yaml` show where",
            ),
        ));
    };
    execute_spec(text, spec, how)
}

/// What a closed-loop probe run of `settings` sustains, requests/s.
fn probe(c: &Common, settings: &TailLatency, store: &std::path::Path) -> anyhow::Result<f64> {
    if verbosity() >= 0 {
        output::info(&format!(
            "probe: the throughput {} sustains at concurrency {}",
            settings.url, c.probe_concurrency
        ));
    }
    let text = playbook::probe_spec(settings, c.probe_concurrency);
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
            "probe: {rate:.3} req/s sustained (run {})",
            out.run_id
        ));
    }
    Ok(rate)
}

/// A scratch store for `show`'s probe, removed afterwards.
fn show_with(
    write: impl FnOnce(&std::path::Path) -> anyhow::Result<String>,
) -> anyhow::Result<Status> {
    let store = std::env::temp_dir().join(format!("yardstick-playbook-{}", std::process::id()));
    let text = write(&store);
    let _ = std::fs::remove_dir_all(&store);
    output::text(&text?)?;
    Ok(Status::Ok)
}

/// `--apply`: drains the nodes `diagnosis` names (a straggler's, or those not ready) on Slurm;
/// nothing on the local engine.
fn remedy(
    diagnosis: Option<&yardstick_analysis::diagnosis::Diagnosis>,
    engine: RankEngine,
) -> anyhow::Result<()> {
    let Some(diagnosis) =
        diagnosis.filter(|d| matches!(d.verdict.as_str(), "straggler" | "not-ready"))
    else {
        output::info("--apply: nothing to drain");
        return Ok(());
    };
    if engine == RankEngine::Local {
        output::info("--apply: the local engine has no node to drain; isolate the device yourself");
        return Ok(());
    }
    for args in diagnosis.actions.iter().filter_map(|a| drain_argv(a)) {
        output::info(&format!("--apply: {}", args.join(" ")));
        let status = std::process::Command::new(&args[0])
            .args(&args[1..])
            .status()
            .map_err(|e| anyhow::anyhow!("--apply: running {}: {e}", args[0]))?;
        if !status.success() {
            anyhow::bail!("--apply: `{}` failed ({status})", args.join(" "));
        }
    }
    Ok(())
}

/// The argument vector of a diagnosis's Slurm drain action (`Drain the node (Slurm): scontrol
/// update nodename=N state=drain reason="..."`): the quoted reason is one argument.
fn drain_argv(action: &str) -> Option<Vec<String>> {
    let cmd = action.strip_prefix("Drain the node (Slurm): ")?;
    let (head, reason) = cmd.split_once(" reason=")?;
    let mut args: Vec<String> = head.split_whitespace().map(str::to_owned).collect();
    if args.first().map(String::as_str) != Some("scontrol") {
        return None;
    }
    args.push(format!("reason={}", reason.trim_matches('"')));
    Some(args)
}

/// Runs a playbook's spec into the store and prints its diagnosis.
fn run_playbook(
    text: &str,
    out: &RunOut,
    g: &GlobalOpts,
) -> anyhow::Result<(Status, Option<yardstick_analysis::diagnosis::Diagnosis>)> {
    out.write_spec(text)?;
    let run = run_text(text, &execution(&out.store))?;
    let diagnosis = run.summary.as_ref().and_then(|s| s.diagnosis.clone());
    let complete = run.status == yardstick_store::RunStatus::Complete;
    report(
        serde_json::json!({
            "run_id": run.run_id,
            "dir": run.dir,
            "status": run.status,
            "diagnosis": diagnosis,
        }),
        complete,
        g,
    )
}

/// Prints a playbook run's outcome (`{run_id, dir, status, diagnosis}`) and returns its status
/// and diagnosis.
fn report(
    outcome: serde_json::Value,
    complete: bool,
    g: &GlobalOpts,
) -> anyhow::Result<(Status, Option<yardstick_analysis::diagnosis::Diagnosis>)> {
    let diagnosis: Option<yardstick_analysis::diagnosis::Diagnosis> =
        serde_json::from_value(outcome["diagnosis"].clone()).ok();
    if g.json {
        output::json(&outcome)?;
    } else {
        outln!(
            "run {} -> {}",
            outcome["run_id"].as_str().unwrap_or("?"),
            outcome["dir"].as_str().unwrap_or("?")
        )?;
        match &diagnosis {
            Some(d) => output::text(&playbook::text(d))?,
            None => outln!("no diagnosis: the run stored no summary")?,
        }
    }
    let status = if complete {
        Status::Ok
    } else {
        Status::Failure
    };
    Ok((status, diagnosis))
}

/// Runs a playbook's spec on Slurm as `yardstick run` does (it submits the batch job and follows
/// it): the spec is written to `<store>/playbooks/NAME.yaml`, where the job's nodes read it.
fn run_playbook_on_slurm(
    name: &str,
    text: &str,
    out: &RunOut,
    g: &GlobalOpts,
) -> anyhow::Result<(Status, Option<yardstick_analysis::diagnosis::Diagnosis>)> {
    out.write_spec(text)?;
    let dir = std::path::absolute(out.store.join("playbooks"))?;
    let spec = dir.join(format!("{name}.yaml"));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&spec, text))
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", spec.display()))?;
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("finding this program to submit the run: {e}"))?;
    let o = std::process::Command::new(exe)
        .args(["--json", "run"])
        .arg(&spec)
        .arg("--store")
        .arg(std::path::absolute(&out.store)?)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("running `yardstick run {}`: {e}", spec.display()))?;
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).map_err(|e| {
        anyhow::anyhow!(
            "`yardstick run {}` printed no outcome ({e}; exit {})",
            spec.display(),
            o.status
        )
    })?;
    report(
        serde_json::json!({
            "run_id": v["run_id"],
            "dir": v["dir"],
            "status": v["status"],
            "diagnosis": v["summary"]["diagnosis"],
        }),
        o.status.success() && v["status"] == "complete",
        g,
    )
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
        PlaybookCommand::Show(ShowCommand::TailLatency(tail)) => {
            tail.check()?;
            show_with(|store| {
                Ok(playbook::tail_latency_spec(
                    &tail.settings(tail.max_rate(store)?),
                ))
            })
        }
        PlaybookCommand::Show(ShowCommand::Starvation(starve)) => {
            starve.check()?;
            show_with(|store| {
                Ok(playbook::starvation_spec(
                    &starve.settings(starve.rate(store)?),
                ))
            })
        }
        PlaybookCommand::Show(ShowCommand::Backpressure(pressure)) => {
            pressure.check()?;
            if pressure.engine == "slurm" {
                let store = std::path::PathBuf::from("yardstick-store");
                output::text(&pressure.spec(&store)?)?;
                return Ok(Status::Ok);
            }
            show_with(|store| pressure.spec(store))
        }
        PlaybookCommand::Show(ShowCommand::Triage(triage)) => {
            output::text(&playbook::triage_spec(&triage.settings()?))?;
            Ok(Status::Ok)
        }
        PlaybookCommand::Triage { triage, html, out } => {
            let text = playbook::triage_spec(&triage.settings()?);
            out.write_spec(&text)?;
            let run = run_text(&text, &execution(&out.store))?;
            let path = html.unwrap_or_else(|| {
                out.store
                    .join("triage")
                    .join(format!("{}.html", run.run_id))
            });
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| anyhow::anyhow!("creating {}: {e}", parent.display()))?;
            }
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("finding this program to write the report: {e}"))?;
            let o = std::process::Command::new(exe)
                .args(["report", &run.run_id, "--html"])
                .arg(&path)
                .arg("--store")
                .arg(&out.store)
                .stdout(std::process::Stdio::null())
                .output()
                .map_err(|e| anyhow::anyhow!("writing the report: {e}"))?;
            if !o.status.success() {
                anyhow::bail!(
                    "writing the report {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&o.stderr).trim()
                );
            }
            let diagnosis = run.summary.as_ref().and_then(|s| s.diagnosis.clone());
            let complete = run.status == yardstick_store::RunStatus::Complete;
            if !g.json {
                output::info(&format!("report: {}", path.display()));
            }
            Ok(report(
                serde_json::json!({
                    "run_id": run.run_id,
                    "dir": run.dir,
                    "status": run.status,
                    "report": path,
                    "diagnosis": diagnosis,
                }),
                complete,
                g,
            )?
            .0)
        }
        PlaybookCommand::Show(ShowCommand::Readiness(ready)) => {
            output::text(&playbook::readiness_spec(&ready.settings()?))?;
            Ok(Status::Ok)
        }
        PlaybookCommand::Readiness { ready, apply, out } => {
            let text = playbook::readiness_spec(&ready.settings()?);
            let (status, diagnosis) = run_playbook_on_slurm("readiness", &text, &out, g)?;
            if apply {
                remedy(diagnosis.as_ref(), RankEngine::Slurm)?;
            }
            Ok(status)
        }
        PlaybookCommand::Show(ShowCommand::Stragglers(ranks)) => {
            ranks.check()?;
            output::text(&playbook::stragglers_spec(&ranks.settings()?))?;
            Ok(Status::Ok)
        }
        PlaybookCommand::Stragglers { ranks, apply, out } => {
            ranks.check()?;
            let settings = ranks.settings()?;
            let text = playbook::stragglers_spec(&settings);
            let (status, diagnosis) = match settings.engine {
                RankEngine::Slurm => run_playbook_on_slurm("stragglers", &text, &out, g)?,
                RankEngine::Local => run_playbook(&text, &out, g)?,
            };
            if apply {
                remedy(diagnosis.as_ref(), settings.engine)?;
            }
            Ok(status)
        }
        PlaybookCommand::TailLatency { tail, out } => {
            tail.check()?;
            let rate = tail.max_rate(&out.store)?;
            Ok(run_playbook(&playbook::tail_latency_spec(&tail.settings(rate)), &out, g)?.0)
        }
        PlaybookCommand::Backpressure { pressure, out } => {
            pressure.check()?;
            let text = pressure.spec(&out.store)?;
            Ok(run_playbook(&text, &out, g)?.0)
        }
        PlaybookCommand::Starvation { starve, out } => {
            starve.check()?;
            let rate = starve.rate(&out.store)?;
            Ok(run_playbook(&playbook::starvation_spec(&starve.settings(rate)), &out, g)?.0)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_drain_action_is_one_scontrol_call_with_the_reason_as_one_argument() {
        assert_eq!(
            super::drain_argv(
                "Drain the node (Slurm): scontrol update nodename=n1 state=drain reason=\"yardstick: rank 1 straggler\""
            )
            .unwrap(),
            [
                "scontrol",
                "update",
                "nodename=n1",
                "state=drain",
                "reason=yardstick: rank 1 straggler"
            ]
        );
        assert!(super::drain_argv("Or cordon it (Kubernetes): kubectl cordon n1").is_none());
    }
}
