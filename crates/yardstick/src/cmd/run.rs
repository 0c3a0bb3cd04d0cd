//! `yardstick run SPEC`: execute a BenchmarkRun into the store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use yardstick_run::{Event, RunOptions};
use yardstick_store::{RunStatus, ToolInfo};

use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{Status, invalid};
use crate::output;

/// Execute a BenchmarkRun: validate it, print the plan, capture the environment, run every
/// point × replicate (interleaved unless the spec says otherwise), and store immutable, hashed
/// (and, with a key, signed) artifacts and facts.
///
/// A serve target with `url: sim` (or no url) runs against the bundled simulator on a loopback
/// port. Ctrl-C stops after the current replicate: the run is kept as `incomplete` with every
/// finished replicate sealed, and `--resume RUN_ID` continues it.
///
/// A replicate whose workload could not run at all (a refused connection for an eval, a command
/// that crashed) is stored as failed and listed at the end; the run still completes. When every
/// replicate of a point failed, that point measured nothing and the command exits 1.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick run examples/quickstart.yaml\n  \
yardstick run bench.yaml --dry-run\n  yardstick run bench.yaml --resume 01JD...\n  \
yardstick run --preset health\n  \
yardstick run --preset llm-eval --url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B\n  \
yardstick run --preset multinode-readiness --nodes 4\n  \
yardstick verify 01JD...\n  \
YARDSTICK_TOKEN=ysk_… yardstick run bench.yaml --push https://yardstick.internal:8686\n  \
yardstick run /spec/spec.yaml --shard \"$JOB_COMPLETION_INDEX/2\" --shard-dir /results/job-1\n\n\
With --shard I/N (what the pods of `yardstick k8s render`'s Indexed Job run), N processes that \
share --shard-dir run the spec together: each captures its environment (and micro layer); serve \
points are split into N shards with a common start time, command points run once per process as \
one rank; process 0 merges the shards and stores (and pushes) ONE run, the others store nothing \
and exit 0 once their parts are written. A process that never shows up within --shard-timeout \
makes the run incomplete, with the missing one named.\n\n\
Exit status: 0 complete (and pushed, with --push); 1 interrupted (resume it) or a point whose \
every replicate failed (its failures are stored and listed); 2 invalid spec or input (nothing \
runs); 5 the run completed and is stored locally, but --push failed (push it again with \
`yardstick push RUN --to URL`).")]
pub struct RunArgs {
    /// The spec (`-` reads standard input).
    #[arg(
        value_name = "SPEC",
        required_unless_present = "preset",
        conflicts_with = "preset"
    )]
    pub spec: Option<PathBuf>,
    /// Run a preset instead of a spec: `health` (fast health signal, about 1 min),
    /// `cluster-eval` (a cluster machine: micro, GPU probes, trainer, serving; about 2.5 min),
    /// `llm-eval` (an LLM endpoint: traffic shapes, capacity under an SLO, accuracy; 20-40 min),
    /// `multinode-readiness` (every node of a Slurm allocation). The filled spec is written to
    /// `<store>/presets/NAME.yaml`, so `--resume` and `yardstick run` of that file work as usual;
    /// `yardstick init --preset NAME` writes it to edit.
    #[arg(long, value_name = "NAME", value_parser = preset_names())]
    pub preset: Option<String>,
    /// With --preset: the server's base URL (default: the embedded simulator).
    #[arg(long, requires = "preset")]
    pub url: Option<String>,
    /// With --preset: the model to request (default `sim-llama`, the simulator's).
    #[arg(long, requires = "preset")]
    pub model: Option<String>,
    /// With --preset multinode-readiness: the nodes of the allocation.
    #[arg(long, requires = "preset", default_value_t = 2)]
    pub nodes: u32,
    /// Store directory (runs and the SQLite warehouse), or set YARDSTICK_STORE.
    #[arg(
        long,
        env = "YARDSTICK_STORE",
        default_value = "yardstick-store",
        value_name = "DIR"
    )]
    pub store: PathBuf,
    /// Warehouse URL when not the store's SQLite (postgres://...).
    #[arg(long, value_name = "URL")]
    pub warehouse: Option<String>,
    /// Print the plan and its duration estimate, run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Continue an incomplete run (same spec) instead of starting a new one. For a tuned spec,
    /// name any run of the interrupted search: its finished rounds are taken as stored.
    #[arg(long, value_name = "RUN_ID")]
    pub resume: Option<String>,
    /// Seed of traffic plans and arrivals.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Run only this point of the plan (repeatable; ids as `--dry-run` lists them), e.g. to
    /// re-measure the points a gate failed.
    #[arg(long, value_name = "POINT")]
    pub only: Vec<String>,
    /// Time between telemetry samples (CPU, memory, GPU clocks/power/throttling), e.g. 250ms;
    /// between 10ms and 1h.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub telemetry_interval: String,
    /// After a complete run, push it to this team server (`yardstick push RUN --to URL`). A
    /// failed push keeps the local run and exits 5.
    #[arg(long, value_name = "URL")]
    pub push: Option<String>,
    /// The variable holding the server's token (scope push) for --push.
    #[arg(
        long,
        default_value = "YARDSTICK_TOKEN",
        value_name = "VAR",
        requires = "push"
    )]
    pub push_token_env: String,
    /// Also trust this CA certificate (PEM) for an https:// --push server.
    #[arg(long, value_name = "FILE", requires = "push")]
    pub push_ca_cert: Option<PathBuf>,
    /// Run as process I of N sharing --shard-dir (the pods of an Indexed Job:
    /// `$(JOB_COMPLETION_INDEX)/N`); process 0 stores the run.
    #[arg(long, value_name = "I/N", requires = "shard_dir")]
    pub shard: Option<String>,
    /// The directory the N processes of --shard share (a volume every pod mounts; one per run).
    #[arg(long, value_name = "DIR", requires = "shard")]
    pub shard_dir: Option<PathBuf>,
    /// With --shard: the longest wait for another process (a barrier, a shard) before the run
    /// is stored as incomplete.
    #[arg(
        long,
        default_value = "10m",
        value_name = "DURATION",
        env = "YARDSTICK_SHARD_TIMEOUT"
    )]
    pub shard_timeout: String,
    #[command(flatten)]
    pub hot: crate::cmd::hot::HotArgs,
}

/// What `yardstick run --json` prints: the run's outcome and, with --push, the push.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct RunOut {
    /// The run.
    #[serde(flatten)]
    pub outcome: yardstick_run::RunOutcome,
    /// The push to a server (`--push`), when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push: Option<yardstick_server::client::PushOutput>,
    /// Why the push (`--push`) failed; the run is stored locally all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_error: Option<String>,
    /// The Slurm job the run executed in (`execution.engine: slurm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmJobOut>,
    /// A tuned spec's search and answer (`spec.tune`; the run is its final run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tune: Option<yardstick_run::tune::TuneReport>,
}

/// The Slurm job of a run submitted with `execution.engine: slurm`.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SlurmJobOut {
    /// Job id.
    pub job_id: String,
    /// Its final state (`COMPLETED`, `CANCELLED`, `FAILED`, `TIMEOUT`, `NODE_FAIL`, ...), or
    /// `UNKNOWN` when Slurm had already forgotten it.
    pub state: String,
    /// Nodes it ran on.
    pub nodes: Option<String>,
    /// The job directory: the batch script, Slurm's output, the inner run's output.
    pub job_dir: PathBuf,
}

/// Parses `--telemetry-interval`: a duration (`250ms`, `1s`, `2m`, plain seconds) within
/// [10 ms, 1 h].
fn parse_interval(s: &str) -> anyhow::Result<Duration> {
    let d = super::parse_duration("telemetry-interval", s).ok();
    match d {
        Some(d) if (Duration::from_millis(10)..=Duration::from_secs(3600)).contains(&d) => Ok(d),
        _ => Err(invalid(
            format!("--telemetry-interval: `{s}` is not a duration between 10ms and 1h"),
            Some("write e.g. 250ms, 1s, 5s"),
        )),
    }
}

/// The names `--preset` accepts.
fn preset_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(yardstick_spec::PRESETS.iter().map(|p| p.name))
}

/// The spec to run: the path given, or the preset filled and written to
/// `<store>/presets/NAME.yaml`.
fn spec_path(args: &RunArgs) -> anyhow::Result<PathBuf> {
    let Some(name) = &args.preset else {
        return Ok(args
            .spec
            .clone()
            .expect("clap requires SPEC without --preset"));
    };
    if let Some(url) = &args.url
        && !(url.starts_with("http://") || url.starts_with("https://") || url == "sim")
    {
        return Err(invalid(
            format!("--url `{url}`: expected an http(s) URL, or `sim` for the embedded simulator"),
            Some("e.g. --url http://127.0.0.1:8000 --model my-model"),
        ));
    }
    if args.nodes == 0 {
        return Err(invalid(
            "--nodes must be at least 1",
            Some("e.g. --nodes 2"),
        ));
    }
    let text = yardstick_spec::preset(name, args.url.as_deref(), args.model.as_deref(), args.nodes)
        .expect("clap accepts only preset names");
    let dir = args.store.join("presets");
    let path = dir.join(format!("{name}.yaml"));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, &text))
        .map_err(|e| anyhow::anyhow!("writing the preset's spec to {}: {e}", path.display()))?;
    if verbosity() >= 0 {
        output::info(&format!("preset {name}: the spec is {}", path.display()));
    }
    Ok(path)
}

impl RunArgs {
    /// The spec file, once `run` resolved a preset to its file.
    pub fn spec_file(&self) -> &Path {
        self.spec
            .as_deref()
            .expect("run resolves the spec before it is used")
    }
}

pub fn run(mut args: RunArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    // Read once (the spec may be standard input), check, and keep the exact bytes: the run
    // stores and hashes the spec as given. A resumed run reads the input files it froze when it
    // started (inputs/), so the files the spec names need not exist any more.
    let spec_file = spec_path(&args)?;
    args.spec = Some(spec_file.clone());
    let spec_dir = spec_dir(&spec_file);
    let files_base = args.resume.is_none().then_some(spec_dir.as_path());
    let (name, text, spec) = super::validate::checked_spec(&spec_file, files_base, "run")?;
    let telemetry_interval = parse_interval(&args.telemetry_interval)?;
    let pods = match (&args.shard, &args.shard_dir) {
        (Some(s), Some(dir)) => {
            let (index, count) = yardstick_run::pods::parse_shard(s).map_err(|e| {
                invalid(
                    format!("--shard: {e}"),
                    Some("write the process's index and the count, e.g. --shard 0/2"),
                )
            })?;
            let timeout = super::parse_duration("shard-timeout", &args.shard_timeout)?;
            Some(yardstick_run::pods::PodGroup {
                index,
                count,
                dir: std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
                timeout,
            })
        }
        _ => None,
    };
    // A server to push to is checked (URL, CA file) before anything runs.
    let remote = match &args.push {
        Some(url) => Some(
            super::push::RemoteOpts {
                token_env: args.push_token_env.clone(),
                ca_cert: args.push_ca_cert.clone(),
            }
            .remote(url)?,
        ),
        None => None,
    };
    let mut plan = yardstick_run::plan(&spec);
    // `engine: slurm` outside an allocation: this process submits the run as a batch job.
    let submit = spec
        .spec
        .as_ref()
        .and_then(|s| s.execution.as_ref())
        .filter(|x| x.engine == Some(yardstick_spec::Engine::Slurm))
        .filter(|_| yardstick_run::slurm::Allocation::from_env().is_none())
        .cloned();
    if let Some(why) =
        yardstick_run::engine_unsupported(&spec).filter(|_| submit.is_none() && pods.is_none())
    {
        let k8s = format!(
            "render its manifests with `yardstick k8s render {} --push URL` (then `kubectl apply \
             -f` them) or submit them with `yardstick k8s submit {}` (docs/kubernetes.md); \
             `engine: local` runs here",
            spec_file.display(),
            spec_file.display()
        );
        let is_k8s = spec
            .spec
            .as_ref()
            .and_then(|s| s.execution.as_ref())
            .and_then(|x| x.engine)
            == Some(yardstick_spec::Engine::Kubernetes);
        return Err(invalid(
            format!("{name}: {why}; nothing was run"),
            Some(if is_k8s {
                &k8s
            } else {
                "set `engine: local` to run here or `engine: slurm` to submit to Slurm"
            }),
        ));
    }
    if let Some(why) = yardstick_run::nothing_to_run(&plan) {
        return Err(invalid(
            format!("{name}: {why}; nothing was run"),
            Some(
                "add a micro, component or e2e layer; `yardstick run SPEC --dry-run` lists what \
                 would run",
            ),
        ));
    }
    if !args.only.is_empty() {
        plan.restrict(&args.only).map_err(|e| {
            invalid(
                e.to_string(),
                Some("list the point ids with `yardstick run SPEC --dry-run`"),
            )
        })?;
    }
    // The key is read, and the store's trust policy asked whether it would admit what the key
    // signs, before anything runs (`execute` asks again; a dry run is told too).
    yardstick_run::admitted_key(&spec, &args.store).map_err(crate::exit::lib_error)?;
    // Processes of a group other than 0 take their part in the steps that span the group and
    // store nothing.
    if let Some(group) = pods.as_ref().filter(|p| !p.leader())
        && !args.dry_run
    {
        return run_member(&args, group, &spec, spec_dir, telemetry_interval, g.json);
    }
    // How long the last run of this benchmark in the store took, point by point: the plan's
    // estimate of what to expect (an absent or unreadable store has no history).
    let history = {
        let store = args
            .warehouse
            .clone()
            .unwrap_or_else(|| args.store.display().to_string());
        yardstick_store::warehouse::open_existing_warehouse(&store)
            .map(|mut w| yardstick_run::estimate::history(w.as_mut(), &plan.name))
            .unwrap_or_default()
    };
    if args.dry_run {
        if g.json {
            output::json(&plan)?;
        } else {
            output::info(&plan.text_with(&history));
            if let Some(line) = yardstick_run::tune::plan_line(&spec, &plan) {
                output::info(&line);
            }
            if let Some(x) = &submit {
                let job = super::slurm::Job::new(&args, x, &plan.name, Path::new("<job dir>"))?;
                output::info(&format!("batch script (engine slurm):\n{}", job.script));
            }
        }
        return Ok(Status::Ok);
    }
    if let Some(x) = &submit {
        return super::slurm::submit(&args, g, x, &plan.name);
    }
    if verbosity() >= 0 && !g.json {
        output::info(&plan.text_with(&history));
        if let Some(line) = yardstick_run::tune::plan_line(&spec, &plan) {
            output::info(&line);
        }
    }
    // The warehouse records where the run directory is; a relative path would only resolve from
    // this working directory.
    let store = std::path::absolute(&args.store).unwrap_or_else(|_| args.store.clone());
    output::set_context(
        "benchmark",
        spec.metadata
            .as_ref()
            .and_then(|m| m.name.clone())
            .map(Into::into),
    );
    let how = Execution {
        store,
        warehouse: args.warehouse.clone(),
        resume: args.resume.clone(),
        seed: args.seed,
        only: (!args.only.is_empty()).then(|| args.only.clone()),
        spec_dir: Some(spec_dir),
        inputs_from: None,
        telemetry_interval,
        pods,
        hot: crate::cmd::hot::sinks_for_run(&args.hot, &spec)?,
    };
    let (outcome, tune) = if yardstick_run::tune::is_tuned(&spec) {
        let (outcome, report) = execute_tuned(&spec, &how)?;
        (outcome, Some(report))
    } else {
        (execute_spec(&text, &spec, &how)?, None)
    };
    // Points whose every replicate failed measured nothing: the run is complete (each failure is
    // stored), but the command fails (exit 1) so that a script or CI job does not take it for a
    // measurement.
    let empty = outcome.points_that_measured_nothing();
    // A complete run is pushed; a failed push keeps the local run (exit 5).
    let mut pushed = None;
    let mut push_error = None;
    if let Some(remote) = &remote
        && outcome.status == RunStatus::Complete
    {
        match yardstick_server::client::push(remote, &outcome.dir) {
            Ok(p) => pushed = Some(p),
            Err(e) => push_error = Some(format!("{:#}", crate::exit::lib_error(e))),
        }
    }
    if g.json {
        output::json(&RunOut {
            outcome: outcome.clone(),
            push: pushed.clone(),
            push_error: push_error.clone(),
            slurm: None,
            tune,
        })?;
    } else {
        let mut text = tune.as_ref().map(|t| t.text()).unwrap_or_default();
        text.push_str(&outcome.text());
        let (id, store) = (&outcome.run_id, args.store.display());
        if outcome.status == RunStatus::Incomplete {
            text.push_str(&format!(
                "  continue with: yardstick run {} --store {store} --resume {id}\n",
                spec_file.display(),
            ));
        } else {
            // The run ends on its answer: each point's headline figures, then what to do next.
            let headlines = outcome
                .summary
                .as_ref()
                .map(yardstick_report::headlines::table)
                .unwrap_or_default();
            if !headlines.is_empty() {
                text.push('\n');
                text.push_str(&headlines);
            }
            if let Some(d) = outcome.summary.as_ref().and_then(|s| s.diagnosis.as_ref()) {
                text.push('\n');
                text.push_str(&yardstick_run::playbook::text(d));
            }
            text.push_str(&format!(
                "\nnext:\n  yardstick report {id} --store {store} --html report.html\n  \
                 yardstick verify {id} --store {store}\n  \
                 yardstick gate {id} --store {store}   # against the stored baseline; \
                 `yardstick baseline save {id}` makes this run the baseline\n"
            ));
        }
        output::text(&text)?;
    }
    if let Some(p) = &pushed
        && !g.json
    {
        crate::output::outln!("  {}", p.text())?;
    }
    if let Some(e) = &push_error {
        crate::output::error(&format!(
            "the run is complete and stored locally, but pushing it failed: {e}\n  hint: push it again with: yardstick push {} --to {} --store {}",
            outcome.run_id,
            args.push.as_deref().unwrap_or_default(),
            args.store.display()
        ));
        return Ok(Status::PushFailed);
    }
    if !empty.is_empty() {
        eprintln!(
            "error: {} measured nothing: every replicate failed (the errors are in the run's results/ and in summary.json's failures)",
            empty.join(", ")
        );
        return Ok(Status::Failure);
    }
    Ok(if outcome.status == RunStatus::Complete {
        Status::Ok
    } else {
        Status::Failure
    })
}

/// Where and how [`execute_spec`] runs a spec.
pub struct Execution {
    /// Store directory.
    pub store: PathBuf,
    /// Warehouse URL when not the store's SQLite.
    pub warehouse: Option<String>,
    /// Run id to continue.
    pub resume: Option<String>,
    /// Seed of traffic plans and arrivals.
    pub seed: u64,
    /// Only these points.
    pub only: Option<Vec<String>>,
    /// The spec's directory (eval task files are relative to it); `None`: the working
    /// directory.
    pub spec_dir: Option<PathBuf>,
    /// A run directory whose frozen eval inputs replace the spec's files (`gate --confirm`).
    pub inputs_from: Option<PathBuf>,
    /// Time between telemetry samples.
    pub telemetry_interval: Duration,
    /// This process's place in a group of processes sharing a directory (`--shard`).
    pub pods: Option<yardstick_run::pods::PodGroup>,
    /// Where serve steps push hot metrics and traces (`--remote-write`, `--otlp`).
    pub hot: Vec<yardstick_load::hot::HotSink>,
}

/// A process of a group other than 0 (`--shard I/N`, I > 0): its part of every step that spans
/// the group; exit 0 once every part was run and reported, failed or not — process 0 records a
/// failed part in the run (a Job's pods ending early or failing would take process 0 down with
/// them). Exit 1 when it could not take part (process 0 gave up, a wait timed out).
fn run_member(
    args: &RunArgs,
    group: &yardstick_run::pods::PodGroup,
    spec: &yardstick_spec::BenchmarkRun,
    spec_dir: PathBuf,
    telemetry_interval: Duration,
    json: bool,
) -> anyhow::Result<Status> {
    let how = Execution {
        store: args.store.clone(),
        warehouse: None,
        resume: None,
        seed: args.seed,
        only: (!args.only.is_empty()).then(|| args.only.clone()),
        spec_dir: Some(spec_dir),
        inputs_from: None,
        telemetry_interval,
        pods: Some(group.clone()),
        hot: Vec::new(),
    };
    let out = yardstick_run::execute_member(spec, &options(&how)).map_err(|e| match e {
        e if yardstick_error::UserFacing::is_invalid_input(&e) => crate::exit::lib_error(e),
        other => anyhow::anyhow!(
            "process {} of {}: {other} (process 0 records the run)",
            group.index,
            group.count
        ),
    })?;
    if json {
        output::json(&out)?;
    } else {
        output::text(&out.text())?;
    }
    Ok(Status::Ok)
}

/// The directory files named in a spec are relative to: the spec's own (the working directory
/// for standard input).
pub fn spec_dir(spec: &std::path::Path) -> PathBuf {
    let dir = if spec.as_os_str() == "-" {
        PathBuf::from(".")
    } else {
        spec.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf)
    };
    std::path::absolute(&dir).unwrap_or(dir)
}

/// Executes a checked spec with progress on standard error (unless `-q`) and Ctrl-C stopping
/// after the current replicate. Shared by `run` and `gate --confirm`.
pub fn execute_spec(
    text: &str,
    spec: &yardstick_spec::BenchmarkRun,
    how: &Execution,
) -> anyhow::Result<yardstick_run::RunOutcome> {
    yardstick_run::execute(text, spec, how.resume.as_deref(), options(how))
        .map_err(crate::exit::lib_error)
}

/// A tuned spec (`spec.tune`): probe runs, then the final run, which carries the answer.
fn execute_tuned(
    spec: &yardstick_spec::BenchmarkRun,
    how: &Execution,
) -> anyhow::Result<(yardstick_run::RunOutcome, yardstick_run::tune::TuneReport)> {
    if how.only.is_some() {
        return Err(invalid(
            "a tuned spec runs whole: `--only` does not apply to `tune`",
            Some("drop `tune` to walk the sweep's points with --only"),
        ));
    }
    if let Some(w) = yardstick_run::tune::goal_warning(spec) {
        output::warn(&w);
    }
    let show = verbosity() >= 0;
    yardstick_run::tune::execute_tuned(
        spec,
        how.resume.as_deref(),
        &mut || options(how),
        &mut |e| {
            if show && let Event::Note(n) = e {
                output::info(&n);
            }
        },
    )
    .map_err(crate::exit::lib_error)
}

/// The options of a run of `how`: progress on standard error (unless `-q`), Ctrl-C stopping
/// after the current replicate.
fn options(how: &Execution) -> RunOptions {
    let cancel = crate::interrupt::token(
        "interrupted: finishing the current replicate, then stopping (Ctrl-C again to abort)",
    );
    let show = verbosity() >= 0;
    RunOptions {
        store: how.store.clone(),
        warehouse: how.warehouse.clone(),
        tool: tool_info(),
        cancel,
        seed: how.seed,
        self_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("yardstick")),
        only_points: how.only.clone(),
        spec_dir: how.spec_dir.clone(),
        inputs_from: how.inputs_from.clone(),
        telemetry_interval: how.telemetry_interval,
        slurm: yardstick_run::slurm::Allocation::from_env(),
        pods: how.pods.clone(),
        before_seal: None,
        hot: how.hot.clone(),
        on_event: Box::new(move |e| {
            // The join keys of JSON log lines follow the run and its steps.
            match &e {
                Event::Started { run_id, .. } => {
                    output::set_context("run_id", Some(run_id.as_str().into()));
                }
                Event::Step {
                    point, replicate, ..
                } => {
                    output::set_context("point", Some(point.as_str().into()));
                    output::set_context("replicate", Some((*replicate).into()));
                }
                _ => {}
            }
            if !show {
                return;
            }
            match e {
                Event::Started {
                    run_id,
                    dir,
                    steps,
                    done,
                } => output::info(&format!(
                    "run {run_id} ({steps} steps{}) -> {}",
                    if done > 0 {
                        format!(", {done} already done")
                    } else {
                        String::new()
                    },
                    dir.display()
                )),
                Event::Step {
                    n,
                    of,
                    point,
                    replicate,
                } => output::info(&format!("[{n}/{of}] {point} r{replicate}")),
                Event::StepDone { headline, .. } => output::info(&format!("        {headline}")),
                Event::Warning(w) => output::warn(&w),
                Event::Note(n) => output::info(&format!("        {n}")),
            }
        }),
    }
}

/// The tool's identity for manifests: version and the git commit of the working directory.
pub fn tool_info() -> ToolInfo {
    let git_commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    ToolInfo {
        name: "yardstick".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit,
    }
}
