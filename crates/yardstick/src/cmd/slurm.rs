//! `yardstick run SPEC` with `execution.engine: slurm`: write the batch script, submit it with
//! `sbatch`, follow the job (Ctrl-C cancels it with `scancel`), and report the run the job
//! stored (`yardstick_run::slurm`).

use std::path::{Path, PathBuf};

use yardstick_run::slurm::{JobInfo, batch_script, follow, sbatch};
use yardstick_spec::Execution;

use super::run::{RunArgs, SlurmJobOut};
use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};
use crate::output;

/// A batch job about to be submitted.
pub struct Job {
    /// The batch script.
    pub script: String,
}

impl Job {
    /// The job of `args` for `x` in `dir`.
    pub fn new(args: &RunArgs, x: &Execution, name: &str, dir: &Path) -> anyhow::Result<Job> {
        if args.spec_file().as_os_str() == "-" {
            return Err(invalid(
                "engine slurm runs the spec again inside the job, so it must be a file, not \
                 standard input",
                Some("save the spec to a file on a file system the nodes share"),
            ));
        }
        let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("yardstick"));
        let mut inner = vec![
            "--seed".to_string(),
            args.seed.to_string(),
            "--telemetry-interval".into(),
            args.telemetry_interval.clone(),
        ];
        if let Some(r) = &args.resume {
            inner.extend(["--resume".into(), r.clone()]);
        }
        if let Some(w) = &args.warehouse {
            inner.extend(["--warehouse".into(), w.clone()]);
        }
        for o in &args.only {
            inner.extend(["--only".into(), o.clone()]);
        }
        if let Some(p) = &args.push {
            inner.extend([
                "--push".into(),
                p.clone(),
                "--push-token-env".into(),
                args.push_token_env.clone(),
            ]);
            if let Some(c) = &args.push_ca_cert {
                inner.extend(["--push-ca-cert".into(), abs(c).display().to_string()]);
            }
        }
        let script = batch_script(
            x,
            name,
            &exe,
            &abs(args.spec_file()),
            &abs(&args.store),
            dir,
            &inner,
        );
        Ok(Job { script })
    }
}

/// Submits the run as a batch job and follows it to the end.
pub fn submit(args: &RunArgs, g: &GlobalOpts, x: &Execution, name: &str) -> anyhow::Result<Status> {
    let store = std::path::absolute(&args.store).unwrap_or_else(|_| args.store.clone());
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dir = store
        .join("slurm")
        .join(format!("{stamp}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let job = Job::new(args, x, name, &dir)?;
    let script = dir.join("job.sh");
    std::fs::write(&script, &job.script)?;
    let id = sbatch(&script).map_err(|e| match e {
        yardstick_run::RunError::Invalid(m) => invalid(m, Some("run where Slurm's commands are")),
        other => anyhow::anyhow!("submitting {}: {other}", script.display()),
    })?;
    output::info(&format!(
        "submitted batch job {id} (script {}); following it — Ctrl-C cancels it",
        script.display()
    ));
    let cancel = crate::interrupt::token("interrupted: cancelling the Slurm job (scancel)");
    let followed = follow(&id, &dir, &cancel, &mut |s| output::info(s), &mut |w| {
        output::warn(w)
    })
    .map_err(anyhow::Error::new)?;
    let info = followed.info;
    let state = info
        .as_ref()
        .map_or_else(|| "UNKNOWN".to_string(), |i| i.state.clone());
    let slurm = SlurmJobOut {
        job_id: id.clone(),
        state: state.clone(),
        nodes: info.as_ref().and_then(|i| i.nodes.clone()),
        job_dir: dir.clone(),
    };
    let log = dir.join(format!("slurm-{id}.out"));
    let inner = followed.run;
    let exit = info.as_ref().and_then(JobInfo::exit);
    let Some(mut run) = inner else {
        output::error(&format!(
            "job {id} ended {state} without a run (its output: {})",
            log.display()
        ));
        return Ok(Status::Failure);
    };
    run["slurm"] = serde_json::to_value(&slurm)?;
    if g.json {
        output::json(&run)?;
    } else {
        let outcome: yardstick_run::RunOutcome = serde_json::from_value(run.clone())?;
        output::text(&outcome.text())?;
        crate::output::outln!(
            "  slurm job {id}: {state}{}; script and logs in {}",
            slurm
                .nodes
                .as_deref()
                .map_or_else(String::new, |n| format!(" on {n}")),
            dir.display()
        )?;
        if outcome.status == yardstick_store::RunStatus::Incomplete {
            crate::output::outln!(
                "  continue with: yardstick run {} --store {} --resume {}",
                args.spec_file().display(),
                args.store.display(),
                outcome.run_id
            )?;
        }
    }
    Ok(match exit {
        Some(0) if state == "COMPLETED" || state == "UNKNOWN" => Status::Ok,
        Some(5) => Status::PushFailed,
        _ => Status::Failure,
    })
}
