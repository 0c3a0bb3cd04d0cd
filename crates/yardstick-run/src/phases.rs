//! A run is phases: [`execute`] prepares it (the plan, its inputs, the run directory, the
//! environment, the warehouse's rows, the engine's start), runs and seals each step, and
//! finishes it (aggregate, analyses, summary, the environment after, sealed and signed), or
//! stores it as incomplete when it was interrupted.
//!
//! A step is one replicate of one point: [`run_step`] hands it to the runner of its kind (one
//! arm per kind), and [`seal_step`] stores whatever the runner returned the same way for every
//! kind. What differs between engines is the run's [`Placement`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use yardstick_spec::model::Requirement;
use yardstick_spec::{BenchmarkRun, Trials};
use yardstick_store::warehouse::{PointRow, RunRow, Warehouse};
use yardstick_store::{RunStatus, RunWriter, StoreError};

use crate::facts::{self, Figures, run_row};
use crate::placement::{Placement, Start, StepName};
use crate::replicate::{ReplicateOutcome, ReplicateStatus};
use crate::step::{RunContext, StepContext};
use crate::{
    EmbeddedSim, Event, Plan, Point, PointWork, RunError, RunOptions, RunOutcome, Step, bottleneck,
    e2e, eval, index, loader, micro, plan, profile, scaling, serve, startup,
};
use yardstick_store::record::ReplicateRecord;
use yardstick_store::summary::ProfileEntry;

/// The placement `opts` asks for: a pod group's member 0, a Slurm allocation, or this machine.
fn placement_of(opts: &RunOptions) -> Result<Box<dyn Placement>, RunError> {
    Ok(match (&opts.pods, &opts.slurm) {
        (Some(_), Some(_)) => {
            return Err(RunError::Invalid(
                "a pod group's member (`--shard I/N`) does not run inside a Slurm allocation's \
                 inner run"
                    .into(),
            ));
        }
        (Some(g), None) => Box::new(crate::pods::PodPlacement::new(g.clone())),
        (None, Some(a)) => Box::new(crate::slurm::SlurmPlacement::new(a.clone())),
        (None, None) => Box::new(crate::local::Local),
    })
}

/// Runs one step with the runner of its point's kind. A runner kind is one module and one arm
/// here; none of them knows which engine runs it.
fn run_step(cx: &mut StepContext<'_>) -> Result<ReplicateOutcome, RunError> {
    let run = cx.run;
    let work = &cx.point.work;
    match work {
        PointWork::Serve { .. } => serve::run_point(cx),
        PointWork::Eval { url, .. } => {
            eval::run_replicate(run.rt, work, run.eval_inputs, &run.target(url.as_ref()))
        }
        PointWork::Micro {
            micro: kind,
            sizes,
            dtype,
        } => micro::run_replicate(kind, sizes.as_ref(), *dtype, run.trials, cx.seed),
        PointWork::Train { .. } => e2e::run_train(cx),
        PointWork::Startup { layer, argv, cache } => {
            let entry = run
                .component_layers
                .get(*layer)
                .cloned()
                .unwrap_or_default();
            startup::run_replicate(&entry, argv, cache, run.scratch, run.cancel.clone())
        }
        PointWork::Dataloader { .. } => loader::run_replicate(
            work,
            run.spec_dir,
            run.scratch,
            cx.step.replicate,
            run.cancel.clone(),
        ),
        PointWork::Command { .. } => e2e::run_command(cx),
    }
}

/// A run between its phases: what `prepare` made, the steps run on, `finish` reads.
struct Prepared {
    key: Option<ed25519_dalek::SigningKey>,
    plan: Plan,
    runs_dir: PathBuf,
    writer: RunWriter,
    wh: Box<dyn Warehouse>,
    /// The warehouse's location (recorded in the run's row).
    location: String,
    mode: Option<String>,
    run_id: String,
    trials: Trials,
    eval_inputs: eval::EvalInputs,
    rt: tokio::runtime::Runtime,
    sim: Option<EmbeddedSim>,
    sampler: Option<yardstick_env::telemetry::Sampler>,
    /// The telemetry's last readings, mirrored into serve steps' hot metrics.
    gauges: Arc<yardstick_load::hot::Gauges>,
    scratch: PathBuf,
    placement: Box<dyn Placement>,
    /// The engine's node-to-node consistency check (`Null` without one).
    nodes_report: Option<yardstick_analysis::nodes::NodesReport>,
}

/// Executes a spec as a new run (`resume: None`) or continues an incomplete one.
pub fn execute(
    spec_text: &str,
    spec: &BenchmarkRun,
    resume: Option<&str>,
    mut opts: RunOptions,
) -> Result<RunOutcome, RunError> {
    let mut run = prepare(spec_text, spec, resume, &mut opts)?;
    let interrupted = run_steps(&mut run, spec, &mut opts)?;
    let telemetry = stop_services(&mut run, &mut opts)?;
    if interrupted {
        return store_incomplete(run);
    }
    finish(run, spec, &mut opts, telemetry)
}

/// The plan of `spec` as `opts` restricts it, refused when there is nothing to run or the
/// engine cannot run it.
fn checked_plan(
    spec: &BenchmarkRun,
    opts: &RunOptions,
    placement: &dyn Placement,
) -> Result<Plan, RunError> {
    if spec
        .spec
        .as_ref()
        .and_then(|s| s.requires.as_ref())
        .is_some_and(|r| r.has(Requirement::Gpu))
        && let Err(reason) = yardstick_workloads::micro::gpu_available()
    {
        return Err(RunError::Invalid(format!(
            "this spec requires a GPU (`requires: gpu`) and none can be used here: {reason}"
        )));
    }
    let mut plan = plan::plan(spec);
    if let Some(why) = crate::nothing_to_run(&plan)
        .or_else(|| crate::engine_unsupported(spec).filter(|_| opts.pods.is_none()))
    {
        return Err(RunError::Invalid(why));
    }
    if let Some(only) = &opts.only_points {
        plan.restrict(only)
            .map_err(|e| RunError::Invalid(e.to_string()))?;
    }
    placement.check(&plan)?;
    for server in plan.treatments.iter().filter_map(|t| t.server.as_ref()) {
        if let Some(program) = server.argv.first()
            && !program_found(program)
        {
            return Err(RunError::Invalid(format!(
                "the server's command `{program}` is not found{}: no treatment could start \
                 (give a path, or put it on PATH)",
                if program.contains('/') {
                    ""
                } else {
                    " on PATH"
                }
            )));
        }
    }
    Ok(plan)
}

/// Whether `program` names an executable file: a path as given, else one on `PATH`.
fn program_found(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(program))))
}

/// The run directory: a new one, or the incomplete run `resume` names, started from this same
/// spec.
fn open_writer(
    runs_dir: &Path,
    plan: &Plan,
    spec_text: &str,
    resume: Option<&str>,
    opts: &RunOptions,
) -> Result<RunWriter, RunError> {
    let Some(id) = resume else {
        return Ok(RunWriter::create(
            runs_dir,
            &plan.name,
            spec_text,
            opts.tool.clone(),
        )?);
    };
    if let Some(why) = yardstick_store::run::unsafe_run_id(id) {
        return Err(RunError::Invalid(format!("`{id}` is not a run id: {why}")));
    }
    let dir = runs_dir.join(id);
    if !dir.join(yardstick_store::layout::MANIFEST).exists() {
        return Err(RunError::Invalid(format!(
            "no run {id} in {}",
            runs_dir.display()
        )));
    }
    let w = RunWriter::resume(&dir)?;
    if w.manifest().spec_sha256 != yardstick_store::fsutil::sha256_bytes(spec_text.as_bytes()) {
        return Err(RunError::Invalid(format!(
            "run {id} was started from a different spec; resume it with the same spec file"
        )));
    }
    Ok(w)
}

/// The environment, captured exactly the same way before and after the run.
fn capture_env(spec: &BenchmarkRun, opts: &RunOptions) -> yardstick_env::Capture {
    yardstick_env::capture(&yardstick_env::CaptureOptions {
        tool_version: Some(opts.tool.version.clone()),
        secret_env: crate::secret_env_names(spec),
        ..Default::default()
    })
}

/// Notes (and warns) that the machine profile of the run is no longer `now`'s: `when` is
/// `since the run started` or `during the run`.
fn note_profile_change(
    writer: &mut RunWriter,
    now: &str,
    when: &str,
    opts: &mut RunOptions,
) -> Result<(), RunError> {
    if writer.manifest().machine_profile.as_deref() == Some(now) {
        return Ok(());
    }
    let msg = format!(
        "machine profile changed {when}: {} -> {now}",
        writer
            .manifest()
            .machine_profile
            .clone()
            .unwrap_or_default(),
    );
    (opts.on_event)(Event::Warning(msg.clone()));
    writer.note(msg)?;
    Ok(())
}

/// The environment before the run: stored once (a resumed run warns when the machine is not
/// the one it started on).
fn store_env_before(
    writer: &mut RunWriter,
    spec: &BenchmarkRun,
    opts: &mut RunOptions,
) -> Result<(), RunError> {
    let env_before = capture_env(spec, opts);
    if !writer.has("env.json") {
        let bytes = serde_json::to_vec_pretty(&env_before).expect("JSON");
        writer.set_env(&bytes, &env_before.machine_profile)?;
        return Ok(());
    }
    note_profile_change(
        writer,
        &env_before.machine_profile,
        "since the run started",
        opts,
    )
}

/// The warehouse, with the run (`running`) and its points.
fn open_warehouse(
    writer: &RunWriter,
    plan: &Plan,
    location: &str,
    mode: Option<String>,
) -> Result<Box<dyn Warehouse>, RunError> {
    let mut wh = yardstick_store::warehouse::open_warehouse(location)?;
    let m = writer.manifest();
    wh.upsert_run(&RunRow {
        status: RunStatus::Running,
        ..run_row(m, mode, location)
    })?;
    wh.upsert_points(
        &plan
            .points
            .iter()
            .map(|p| PointRow {
                run_id: m.run_id.clone(),
                point_id: p.id.clone(),
                layer: p.layer.clone(),
                kind: index::point_kind(&p.work),
                params: serde_json::to_value(&p.work).expect("JSON"),
            })
            .collect::<Vec<_>>(),
    )?;
    Ok(wh)
}

/// The nccl-tests outputs `expect.ncclTests` names, read before any work: each must exist and
/// parse (its wrong data is a finding, not an error).
fn nccl_inputs(
    spec: &BenchmarkRun,
    base: Option<&Path>,
    frozen: Option<&Path>,
) -> Result<Vec<(String, PathBuf)>, RunError> {
    let names = spec
        .spec
        .as_ref()
        .and_then(|s| s.expect.as_ref())
        .and_then(|e| e.nccl_tests.clone())
        .unwrap_or_default();
    names
        .into_iter()
        .map(|name| {
            let path = crate::resolve_input(base, frozen, "nccl", &name);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                RunError::Invalid(format!(
                    "expect.ncclTests: {}: {e} (give the output file of an nccl-tests run)",
                    path.display()
                ))
            })?;
            yardstick_workloads::micro::ingest::nccl::parse_checked(&text).map_err(|e| {
                RunError::Invalid(format!(
                    "expect.ncclTests: {} is not nccl-tests output: {e}",
                    path.display()
                ))
            })?;
            Ok((name, path))
        })
        .collect()
}

/// The task files and texts an eval read, the CA and tokenizer files of the targets, and the
/// nccl-tests outputs a readiness check reads, stored with the run (frozen content, hashed; a re-run reads these copies).
fn freeze_inputs(
    writer: &mut RunWriter,
    eval_inputs: &eval::EvalInputs,
    target_files: &[(String, PathBuf)],
    nccl_files: &[(String, PathBuf)],
) -> Result<(), RunError> {
    let inputs = (eval_inputs.files.iter().map(|f| ("eval", f)))
        .chain(target_files.iter().map(|f| ("target", f)))
        .chain(nccl_files.iter().map(|f| ("nccl", f)));
    for (kind, (name, path)) in inputs {
        let rel = crate::input_artifact(kind, name);
        if !writer.has(&rel) {
            let bytes = std::fs::read(path)
                .map_err(|e| RunError::Invalid(format!("{}: {e}", path.display())))?;
            writer.add(&rel, &bytes, "input")?;
        }
    }
    Ok(())
}

/// Telemetry throughout (CPU, memory, GPUs when NVML loads), at the run's interval, each
/// reading mirrored into `mirror` (as `yardstick_telemetry_<metric>{device}`) when given; `None`
/// (with a warning) when it cannot start.
fn start_telemetry(
    opts: &mut RunOptions,
    mirror: Option<Arc<yardstick_load::hot::Gauges>>,
) -> Option<yardstick_env::telemetry::Sampler> {
    let on_sample = mirror.map(|g| {
        yardstick_env::telemetry::OnSample(Arc::new(move |rows| {
            for r in rows {
                g.set(
                    &format!("yardstick_telemetry_{}", r.metric),
                    &[("device", &r.device)],
                    r.value,
                );
            }
        }))
    });
    match yardstick_env::telemetry::Sampler::start(yardstick_env::telemetry::SamplerConfig {
        interval: opts.telemetry_interval,
        on_sample,
        ..Default::default()
    }) {
        Ok(s) => Some(s),
        Err(e) => {
            (opts.on_event)(Event::Warning(format!("telemetry is off: {e}")));
            None
        }
    }
}

/// Prepares a run: the plan and its inputs (a bad one is invalid input, before anything is
/// created), the run directory, the environment before, the warehouse's rows, the simulator,
/// telemetry and the engine's start.
fn prepare(
    spec_text: &str,
    spec: &BenchmarkRun,
    resume: Option<&str>,
    opts: &mut RunOptions,
) -> Result<Prepared, RunError> {
    let key = crate::admitted_key(spec, &opts.store)?;
    let mut placement = placement_of(opts)?;
    let mut plan = checked_plan(spec, opts, placement.as_ref())?;
    let runs_dir = opts.store.join("runs");
    // Input files are read before anything is created: a bad one is invalid input. A resumed run
    // reads its own frozen copies, so every replicate sees the content the run started with.
    let frozen = opts.inputs_from.clone().or_else(|| {
        resume
            .filter(|id| yardstick_store::run::unsafe_run_id(id).is_none())
            .map(|id| runs_dir.join(id))
    });
    let eval_inputs = eval::EvalInputs::load(&plan, opts.spec_dir.as_deref(), frozen.as_deref())?;
    loader::check_sources(&plan, opts.spec_dir.as_deref())?;
    let target_files =
        serve::resolve_target_files(&mut plan, opts.spec_dir.as_deref(), frozen.as_deref())?;
    let nccl_files = nccl_inputs(spec, opts.spec_dir.as_deref(), frozen.as_deref())?;
    let mut writer = open_writer(&runs_dir, &plan, spec_text, resume, opts)?;
    let spec_body = spec.spec.as_ref();
    let mode = spec_body.and_then(|s| s.mode).map(|m| m.to_string());
    let trials = spec_body.and_then(|s| s.trials.clone()).unwrap_or_default();
    store_env_before(&mut writer, spec, opts)?;
    let location = opts
        .warehouse
        .clone()
        .unwrap_or_else(|| opts.store.display().to_string());
    let wh = open_warehouse(&writer, &plan, &location, mode.clone())?;
    let run_id = writer.run_id().to_string();

    // Profiles are taken by one process: not across a pod group or a Slurm allocation.
    if !placement.single_process() && plan.steps.iter().any(|s| s.profile) {
        plan.steps.retain(|s| !s.profile);
        (opts.on_event)(Event::Warning(
            "profiles are taken in single-process runs only: not across pods or Slurm tasks              (profile the command with `yardstick run` on one machine)"
                .into(),
        ));
    }
    let done = plan
        .steps
        .iter()
        .filter(|s| writer.has(&crate::step_paths(&plan.points[s.point], s).1))
        .count();
    (opts.on_event)(Event::Started {
        run_id: run_id.clone(),
        dir: writer.dir().to_path_buf(),
        steps: plan.steps.len(),
        done,
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Internal(format!("async runtime: {e}")))?;
    let needs_sim = plan.points.iter().any(|p| {
        matches!(
            &p.work,
            PointWork::Serve { url: None, .. } | PointWork::Eval { url: None, .. }
        )
    });
    let sim = needs_sim
        .then(|| crate::start_sim(&rt, &plan))
        .transpose()?;
    let _ = yardstick_load::raise_nofile_limit();
    freeze_inputs(&mut writer, &eval_inputs, &target_files, &nccl_files)?;
    let scratch = opts.store.join("tmp").join(&run_id);
    let gauges = Arc::new(yardstick_load::hot::Gauges::default());
    let sampler = start_telemetry(opts, (!opts.hot.is_empty()).then(|| gauges.clone()));
    // The engine's start: every node's or pod's environment and micro figures.
    let nodes_report = placement.start(Start {
        writer: &mut writer,
        exe: &opts.self_exe,
        plan: &plan,
        trials: &trials,
        tool_version: &opts.tool.version,
        secret_env: crate::secret_env_names(spec),
        on_event: &mut *opts.on_event,
    })?;
    Ok(Prepared {
        key,
        plan,
        runs_dir,
        writer,
        wh,
        location,
        mode,
        run_id,
        trials,
        eval_inputs,
        rt,
        sim,
        sampler,
        gauges,
        scratch,
        placement,
        nodes_report,
    })
}

/// The layers of a kind of the spec (`e2e` or `component`), empty when it has none.
fn layers<T: Clone>(
    spec: &BenchmarkRun,
    pick: impl Fn(&yardstick_spec::Layers) -> Option<&Vec<T>>,
) -> Vec<T> {
    spec.spec
        .as_ref()
        .and_then(|s| s.layers.as_ref())
        .and_then(pick)
        .cloned()
        .unwrap_or_default()
}

/// Where a step's results go: the run directory and the warehouse.
struct Sink<'a> {
    writer: &'a mut RunWriter,
    wh: &'a mut dyn Warehouse,
    run_id: &'a str,
}

/// Runs every step of the plan in order, each sealed as it finishes; a step sealed before an
/// interruption is indexed again and skipped. Whether the run was interrupted (Ctrl-C, or the
/// engine cannot go on).
fn run_steps(
    run: &mut Prepared,
    spec: &BenchmarkRun,
    opts: &mut RunOptions,
) -> Result<bool, RunError> {
    let e2e_layers = layers(spec, |l| l.e2e.as_ref());
    let component_layers = layers(spec, |l| l.component.as_ref());
    let Prepared {
        plan,
        writer,
        wh,
        run_id,
        trials,
        eval_inputs,
        rt,
        sim,
        scratch,
        placement,
        gauges,
        ..
    } = run;
    let cx = RunContext {
        rt,
        sim: sim.as_ref().map(|s| s.addr),
        eval_inputs,
        trials,
        e2e_layers: &e2e_layers,
        component_layers: &component_layers,
        scratch,
        spec_dir: opts.spec_dir.as_deref(),
        run_id,
        exe: &opts.self_exe,
        cancel: &opts.cancel,
        hot: &opts.hot,
        gauges,
        benchmark: &plan.name,
    };
    let mut sink = Sink {
        writer,
        wh: wh.as_mut(),
        run_id,
    };
    let mut sut = crate::sut::ServerUnderTest::new(server_host(opts));
    let interrupted = steps_loop(
        &mut sink,
        &mut sut,
        plan,
        &cx,
        placement.as_mut(),
        &mut *opts.on_event,
        opts.seed,
    );
    // The server stops (and its output is stored) whatever ended the loop.
    let stopped = sut.stop(sink.writer);
    let interrupted = interrupted?;
    stopped?;
    Ok(interrupted)
}

/// `{host}` of the server under test: where its clients reach it. This machine's loopback; inside
/// a Slurm allocation, this node's name (the run inside the job is the batch step, on the first
/// node); in a group of pods, pod 0's address (`MASTER_ADDR`: the rendered Job names it through
/// the headless Service), where member 0 starts it.
fn server_host(opts: &RunOptions) -> String {
    let var = |k: &str| std::env::var(k).ok().filter(|h| !h.is_empty());
    if opts.slurm.is_some() {
        var("SLURMD_NODENAME").unwrap_or_else(yardstick_env::join::hostname)
    } else if opts.pods.as_ref().is_some_and(|g| g.count > 1) {
        var("MASTER_ADDR").unwrap_or_else(yardstick_env::join::hostname)
    } else {
        "127.0.0.1".into()
    }
}

/// [`run_steps`]' loop: each step in order, the server under test started for its treatment.
fn steps_loop(
    sink: &mut Sink<'_>,
    sut: &mut crate::sut::ServerUnderTest,
    plan: &Plan,
    cx: &RunContext<'_>,
    placement: &mut dyn Placement,
    on_event: &mut dyn FnMut(Event),
    seed: u64,
) -> Result<bool, RunError> {
    for (n, step) in plan.steps.iter().enumerate() {
        if cx.cancel.is_cancelled() {
            return Ok(true);
        }
        let mut point = &plan.points[step.point];
        if reindex_if_sealed(sink, point, step)? {
            continue;
        }
        // Files an unfinished attempt at this replicate sealed before a kill are not a finished
        // measurement (the result record is what finishes one): drop them and measure again.
        let mut unfinished = vec![
            crate::step_paths(point, step).0,
            format!("eval/{}/r{}/", point.slug, step.replicate),
            logs_prefix(point, step),
        ];
        if step.profile {
            unfinished.push(format!("profile/{}/", point.slug));
        }
        sink.writer.discard_unfinished(&unfinished)?;
        on_event(Event::Step {
            n: n + 1,
            of: plan.steps.len(),
            point: point.id.clone(),
            replicate: step.replicate,
        });
        let mut server_startup_s = None;
        let mut infeasible = None;
        let filled;
        if let Some(t) = point.treatment {
            match sut.for_step(
                &plan.treatments,
                t,
                cx.scratch,
                sink.writer,
                cx.cancel,
                &mut *on_event,
            )? {
                crate::sut::ForStep::Up { port, startup_s } => {
                    if port > 0 {
                        filled = sut.with_address(point, port);
                        point = &filled;
                    }
                    server_startup_s = startup_s;
                }
                crate::sut::ForStep::Infeasible(why) => infeasible = Some(why),
            }
            if cx.cancel.is_cancelled() {
                return Ok(true);
            }
        }
        let started_at = yardstick_env::now_rfc3339();
        let outcome = match infeasible {
            Some(why) => {
                placement.skipped(point, step, &why);
                Ok(ReplicateOutcome::failed(why))
            }
            None => run_step(&mut StepContext {
                run: cx,
                placement,
                point,
                step,
                seed: seed ^ (u64::from(step.replicate) << 32),
            }),
        };
        let outcome = outcome.map(|mut o| {
            if let Some(s) = server_startup_s {
                // The server's start for this treatment, as a startup layer measures it.
                o.summary[yardstick_spec::metrics::id::TIME_TO_READY_S] =
                    serde_json::json!({ "value": s });
                o.figures
                    .measurements
                    .push(yardstick_spec::metrics::Measurement::value(
                        yardstick_spec::metrics::id::TIME_TO_READY_S,
                        s,
                    ));
            }
            o
        });
        let name = StepName::of(point, step);
        if cx.cancel.is_cancelled() {
            // A replicate cut short by Ctrl-C is not a finished measurement: keep nothing of it
            // (the engine records its step as cancelled).
            placement.step_ended(&name, None, true);
            return Ok(true);
        }
        if let Some(why) = placement.stop_reason() {
            on_event(Event::Warning(format!(
                "{}: {why}; the run stops here",
                name.what()
            )));
            return Ok(true);
        }
        let outcome = match outcome {
            Ok(x) => x,
            // A workload that cannot run is measured as a failed replicate, not a crash.
            Err(RunError::Workload(msg)) => ReplicateOutcome::failed(msg),
            Err(e) => return Err(e),
        };
        if let ReplicateStatus::Failed(e) = &outcome.status {
            on_event(Event::Warning(format!("{}: {e}", name.what())));
        }
        let cancelled = cx.cancel.is_cancelled();
        placement.step_ended(&name, Some(&outcome.summary), cancelled);
        seal_step(sink, &mut *on_event, (point, step), &started_at, outcome)?;
    }
    Ok(false)
}

/// Where a step's logs go.
fn logs_prefix(point: &Point, step: &Step) -> String {
    if step.profile {
        format!("profile/{}/logs/", point.slug)
    } else {
        format!("logs/{}/r{}/", point.slug, step.replicate)
    }
}

/// Whether `step` finished before an interruption. The warehouse is an index of the stored run,
/// and a kill can land after the result is sealed but before its facts are written: a sealed
/// replicate is indexed again from its record (upserts, so nothing is duplicated).
fn reindex_if_sealed(sink: &mut Sink<'_>, point: &Point, step: &Step) -> Result<bool, RunError> {
    let result_path = crate::step_paths(point, step).1;
    if !sink.writer.has(&result_path) {
        return Ok(false);
    }
    let record = crate::read_record(&sink.writer.dir().join(&result_path))?;
    if !step.profile {
        crate::index_replicate(sink.wh, sink.run_id, &point.id, step.replicate, &record)?;
    }
    Ok(true)
}

/// Seals a finished step: its eval files, logs and profile, its samples as Parquet, and its
/// record (`results/<point>/rN.json`, what finishes a replicate), then indexes it in the
/// warehouse (a profiled replicate's figures stay out of the facts).
fn seal_step(
    sink: &mut Sink<'_>,
    on_event: &mut dyn FnMut(Event),
    (point, step): (&Point, &Step),
    started_at: &str,
    outcome: ReplicateOutcome,
) -> Result<(), RunError> {
    let ReplicateOutcome {
        mut summary,
        figures,
        samples,
        logs,
        log_tables,
        eval_files,
        profile,
        ..
    } = outcome;
    let writer = &mut *sink.writer;
    if let Some(why) = summary.get("unsupported").and_then(|e| e.as_str()) {
        on_event(Event::Warning(format!(
            "{} r{}: perplexity unsupported by this server: {why}",
            point.id, step.replicate
        )));
    }
    for (name, bytes) in &eval_files {
        let rel = format!("eval/{}/r{}/{name}", point.slug, step.replicate);
        writer.add(&rel, bytes, "eval")?;
    }
    let logs_prefix = logs_prefix(point, step);
    for (name, bytes) in &logs {
        writer.add(&format!("{logs_prefix}{name}"), bytes, "log")?;
    }
    let keys = yardstick_env::join::from_env();
    for (name, table) in log_tables {
        let bytes = table
            .with_join_keys(sink.run_id, &point.id, step.replicate, &keys)
            .to_parquet(&[])?;
        writer.add(&format!("{logs_prefix}{name}"), &bytes, "log")?;
    }
    if let Some(p) = profile {
        for (name, bytes) in &p.files {
            writer.add(&format!("profile/{}/{name}", point.slug), bytes, "profile")?;
        }
        match p.analysis {
            Ok(a) => summary["profile"] = serde_json::to_value(&a).expect("JSON"),
            Err(why) => {
                on_event(Event::Warning(format!("{} profile: {why}", point.id)));
                summary["profile_error"] = why.to_string().into();
            }
        }
    }
    let (samples_path, result_path) = crate::step_paths(point, step);
    let mut sample_artifact = None;
    if let Some(table) = samples {
        let table = table.with_join_keys(sink.run_id, &point.id, step.replicate, &keys);
        let bytes = table.to_parquet(&[
            ("yardstick.run_id", sink.run_id),
            ("yardstick.point", &point.id),
            ("yardstick.replicate", &step.replicate.to_string()),
        ])?;
        writer.add(&samples_path, &bytes, "samples")?;
        sample_artifact = Some(samples_path);
    }
    // The progress line's headline, from the figures before the record holds them.
    let headline = facts::headline(&summary, &figures);
    let record = ReplicateRecord {
        point: point.id.clone(),
        replicate: step.replicate,
        started_at: Some(started_at.to_string()),
        ended_at: Some(yardstick_env::now_rfc3339()),
        samples: sample_artifact,
        source: None,
        summary,
        figures: Some(figures),
        results: Vec::new(),
    };
    writer.add(&result_path, &record.to_bytes(), "result")?;
    if step.profile {
        // The profiled replicate perturbs timing: its figures stay out of the facts.
        return Ok(());
    }
    crate::index_replicate(sink.wh, sink.run_id, &point.id, step.replicate, &record)?;
    on_event(Event::StepDone {
        point: point.id.clone(),
        replicate: step.replicate,
        headline,
    });
    Ok(())
}

/// After the last step (or an interruption): the simulator stops, telemetry is stored, the
/// scratch directory goes. The telemetry's summary (`None` without any).
fn stop_services(
    run: &mut Prepared,
    opts: &mut RunOptions,
) -> Result<Option<yardstick_env::telemetry::TelemetrySummary>, RunError> {
    if let Some(s) = run.sim.take() {
        s.stop(&run.rt);
    }
    let mut telemetry_summary = None;
    if let Some(sampler) = run.sampler.take() {
        match sampler.stop() {
            Ok(t) if !t.rows.is_empty() => {
                std::fs::create_dir_all(&run.scratch).map_err(StoreError::from)?;
                let tmp = run.scratch.join("telemetry.parquet");
                let keys = yardstick_env::telemetry::JoinKeys {
                    constant: [
                        ("run_id", Some(run.run_id.clone())),
                        ("benchmark", Some(run.plan.name.clone())),
                    ]
                    .into_iter()
                    .chain(yardstick_env::join::from_env())
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                    gpu_uuids: t.gpu_uuids.clone(),
                };
                match yardstick_env::telemetry::write_parquet(&tmp, &t.rows, &keys) {
                    Ok(()) => {
                        let bytes = std::fs::read(&tmp).map_err(StoreError::from)?;
                        run.writer.add(
                            &format!("telemetry/{}.parquet", t.started_ms),
                            &bytes,
                            "telemetry",
                        )?;
                    }
                    Err(e) => (opts.on_event)(Event::Warning(format!("telemetry not stored: {e}"))),
                }
                telemetry_summary = Some(t.summary);
            }
            Ok(_) => {}
            Err(e) => (opts.on_event)(Event::Warning(format!("telemetry lost: {e}"))),
        }
    }
    let _ = std::fs::remove_dir_all(&run.scratch);
    let _ = std::fs::remove_dir(opts.store.join("tmp"));
    Ok(telemetry_summary)
}

/// An interrupted run: the engine's record, the manifest marked incomplete (`resume` continues
/// it), and the engine's other processes told to stop.
fn store_incomplete(mut run: Prepared) -> Result<RunOutcome, RunError> {
    run.placement.record(&mut run.writer)?;
    let why = run
        .placement
        .stop_reason()
        .unwrap_or_else(|| "interrupted before every replicate finished".into());
    let m = run.writer.interrupt(&why)?;
    run.placement.stopped(&why);
    run.wh
        .upsert_run(&run_row(&m, run.mode.clone(), &run.location))?;
    Ok(RunOutcome {
        dir: run.runs_dir.join(&m.run_id),
        run_id: run.run_id,
        status: RunStatus::Incomplete,
        signed: false,
        summary: None,
    })
}

/// Every point's replicate summaries and figures, read from the stored results (so a resumed
/// run aggregates everything); a failed replicate's figures are `None`.
type Stored = (
    Vec<(String, Vec<serde_json::Value>)>,
    Vec<(String, Vec<Option<Figures>>)>,
);

/// Reads every point's stored replicates.
fn read_results(run: &Prepared) -> Result<Stored, RunError> {
    let (mut per_point, mut per_point_figures) = (Vec::new(), Vec::new());
    for p in &run.plan.points {
        let (mut reps, mut figures_per_point) = (Vec::new(), Vec::new());
        for r in 0..run.plan.replicates {
            let record = crate::read_record(&run.writer.dir().join(crate::artifact_paths(p, r).1))?;
            figures_per_point.push((!record.failed()).then(|| record.figures()));
            reps.push(record.summary);
        }
        per_point.push((p.id.clone(), reps));
        per_point_figures.push((p.id.clone(), figures_per_point));
    }
    Ok((per_point, per_point_figures))
}

/// Profiles: their analysis is the point's `profile.*` facts (one profiled replicate, no
/// interval), added to `aggregate`, and the `profiles` section of the summary, returned.
fn profile_facts(
    run: &Prepared,
    per_point: &[(String, Vec<serde_json::Value>)],
    aggregate: &mut Vec<yardstick_store::warehouse::FactRow>,
) -> Result<BTreeMap<String, ProfileEntry>, RunError> {
    let mut profiles = BTreeMap::new();
    for p in &run.plan.points {
        let path = run
            .writer
            .dir()
            .join(format!("profile/{}/result.json", p.slug));
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| RunError::Internal(format!("{}: {e}", path.display())))?;
        let entry = profile::summary_entry(&v["summary"], per_point, &p.id, &p.slug);
        aggregate.extend(profile::fact_rows(&run.run_id, &p.id, &v["summary"]));
        profiles.insert(p.id.clone(), entry);
    }
    Ok(profiles)
}

/// Finishes a run whose every step is sealed: the aggregate over replicates (with confidence
/// intervals) and its facts, `summary.json` with the failures and analyses, the environment
/// after, the engine's record, the sealed (and signed) manifest.
fn finish(
    mut run: Prepared,
    spec: &BenchmarkRun,
    opts: &mut RunOptions,
    telemetry: Option<yardstick_env::telemetry::TelemetrySummary>,
) -> Result<RunOutcome, RunError> {
    let spec_body = spec.spec.as_ref();
    let level = spec_body
        .and_then(|s| s.trials.as_ref())
        .and_then(|t| t.confidence_level)
        .unwrap_or(0.95);
    let (per_point, per_point_figures) = read_results(&run)?;
    let mut aggregate = facts::aggregate(&run.run_id, &per_point_figures, level);
    let profiles = profile_facts(&run, &per_point, &mut aggregate)?;
    run.wh.upsert_facts(&aggregate)?;
    let plan = &run.plan;
    let mut summary = facts::summary(plan, &aggregate, level);
    summary.failures = Some(facts::failures(&per_point));
    summary.profiles = Some(profiles).filter(|p| !p.is_empty());
    summary.telemetry = telemetry;
    summary.scaling = Some(scaling::scaling(plan, &per_point)).filter(|s| !s.is_empty());
    summary.nodes = run.nodes_report.clone();
    summary.eval = eval::eval_summary(plan, &per_point);
    let precision = spec_body.and_then(|s| s.workload.as_ref()?.precision);
    summary.bottlenecks = bottleneck::bottlenecks(plan, &aggregate, precision);
    summary.sweep = crate::sut::sweep_summary(plan, &per_point);
    summary.diagnosis =
        crate::playbook::diagnose(spec, &summary, &per_point, Some(run.writer.dir()));
    run.writer.add(
        "summary.json",
        &serde_json::to_vec_pretty(&summary).expect("JSON"),
        "summary",
    )?;
    if let Some(hook) = opts.before_seal.take() {
        let dir = run.writer.dir().to_path_buf();
        for (name, bytes) in hook(&summary, &dir) {
            run.writer.add(&name, &bytes, "result")?;
        }
    }

    // Environment after: a changed profile mid-run is flagged. Captured exactly like the one
    // before (Python probe included): the key has the torch version when torch is installed, so
    // skipping the probe here reported a "changed" profile on every machine with torch.
    let env_after = capture_env(spec, opts);
    note_profile_change(
        &mut run.writer,
        &env_after.machine_profile,
        "during the run",
        opts,
    )?;
    run.writer.add(
        "env.after.json",
        &serde_json::to_vec_pretty(&env_after).expect("JSON"),
        "env",
    )?;
    run.placement.record(&mut run.writer)?;
    let m = run.writer.complete(run.key.as_ref())?;
    run.wh
        .upsert_run(&run_row(&m, run.mode.clone(), &run.location))?;
    Ok(RunOutcome {
        run_id: run.run_id,
        dir: run.runs_dir.join(&m.run_id),
        status: RunStatus::Complete,
        signed: run.key.is_some(),
        summary: Some(summary),
    })
}
