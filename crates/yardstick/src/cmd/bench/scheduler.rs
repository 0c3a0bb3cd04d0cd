//! `yardstick bench scheduler`: a burst of short jobs submitted to Slurm at an open-loop rate;
//! how long `sbatch` takes, how long each job waits to start, and how many jobs per second the
//! cluster starts against how many were submitted (`yardstick_run::scheduler`).

use std::path::PathBuf;

use yardstick_run::scheduler::{self, Burst};

use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{Status, invalid};
use crate::output::{self, outln};

/// Submit a burst of short jobs to a scheduler and measure its admission.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
yardstick bench scheduler --jobs 20 --rate 2\n  \
yardstick bench scheduler --jobs 40 --rate 5 --hold 2 --partition debug --json\n  \
yardstick bench scheduler --jobs 100 --rate 10 --dir /shared/scratch/burst")]
pub struct SchedulerArgs {
    /// The scheduler: `slurm` (sbatch; the jobs stamp their start in --dir).
    #[arg(long, default_value = "slurm", value_parser = ["slurm"])]
    pub engine: String,
    /// Jobs submitted (2 to 10000).
    #[arg(long, default_value_t = 20)]
    pub jobs: u32,
    /// Submissions per second, open loop: job i is due at i / rate, whatever the previous did.
    #[arg(long, default_value_t = 2.0, value_name = "PER_S")]
    pub rate: f64,
    /// Seconds each job holds its allocation after it starts (0: it ends at once). Jobs that
    /// hold longer than the cluster's free slots can absorb build a queue.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub hold: f64,
    /// The partition (default: the cluster's default partition).
    #[arg(long)]
    pub partition: Option<String>,
    /// Where jobs stamp their start: a directory every node can write and this machine can read
    /// (default: `./yardstick-burst`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Cancel jobs not started this long after the last submission.
    #[arg(long, default_value = "120s", value_name = "DURATION")]
    pub timeout: String,
}

impl SchedulerArgs {
    /// The burst these arguments describe, checked.
    pub fn burst(&self) -> anyhow::Result<Burst> {
        if !(2..=10_000).contains(&self.jobs) {
            return Err(invalid(
                format!("--jobs {}: must be 2 to 10000", self.jobs),
                Some("e.g. --jobs 20"),
            ));
        }
        if !(self.rate > 0.0 && self.rate <= 1000.0) {
            return Err(invalid(
                format!(
                    "--rate {}: must be above 0 and at most 1000 per second",
                    self.rate
                ),
                Some("e.g. --rate 2"),
            ));
        }
        if !(self.hold >= 0.0 && self.hold <= 3600.0) {
            return Err(invalid(
                format!("--hold {}: must be 0 to 3600 seconds", self.hold),
                Some("e.g. --hold 2"),
            ));
        }
        let dir = self
            .dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("yardstick-burst"));
        Ok(Burst {
            jobs: self.jobs,
            rate: self.rate,
            hold_s: self.hold,
            partition: self.partition.clone(),
            dir: std::path::absolute(&dir).unwrap_or(dir),
            timeout: crate::cmd::parse_duration("timeout", &self.timeout)?,
        })
    }
}

pub fn run(args: SchedulerArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let burst = args.burst()?;
    // Each burst stamps into its own directory, so runs never read each other's stamps.
    let burst = Burst {
        dir: burst.dir.join(format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
        )),
        ..burst
    };
    let quiet = g.json || verbosity() < 0;
    if !quiet {
        output::info(&format!(
            "submitting {} jobs at {} per second (each holds {} s)",
            burst.jobs, burst.rate, burst.hold_s
        ));
    }
    let result = scheduler::run_burst(&burst, |j| {
        if !quiet && (j.index + 1) % 10 == 0 {
            output::info(&format!("  {} submitted", j.index + 1));
        }
        if let Some(e) = &j.error {
            output::info(&format!("  job {}: sbatch refused it: {e}", j.index));
        }
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let _ = std::fs::remove_dir_all(&burst.dir);
    if let Ok(path) = std::env::var("YARDSTICK_METRICS")
        && !path.is_empty()
    {
        scheduler::append_lines(
            std::path::Path::new(&path),
            &scheduler::protocol_lines(&result),
        )
        .map_err(|e| anyhow::anyhow!("writing the metric records to {path}: {e}"))?;
    }
    if g.json {
        output::json(&result)?;
    } else {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3}"));
        let mut lat: Vec<f64> = result
            .jobs
            .iter()
            .filter_map(|j| j.start_latency_s)
            .collect();
        lat.sort_by(f64::total_cmp);
        let p = |q: f64| {
            (!lat.is_empty()).then(|| yardstick_stats::percentile::percentile_sorted(&lat, q))
        };
        let mut sub: Vec<f64> = result.jobs.iter().map(|j| j.submit_s).collect();
        sub.sort_by(f64::total_cmp);
        outln!(
            "jobs: {} submitted, {} accepted, {} started",
            result.jobs.len(),
            result.accepted,
            result.started
        )?;
        outln!(
            "rate: {} offered, {} submitted, {} started (jobs/s)",
            f(Some(result.offered_per_s)),
            f(result.submitted_per_s),
            f(result.started_per_s)
        )?;
        outln!(
            "sbatch: p50 {} s, max {} s",
            f(Some(yardstick_stats::percentile::percentile_sorted(
                &sub, 0.5
            ))),
            f(sub.last().copied())
        )?;
        outln!(
            "start latency: p50 {} s, p99 {} s; first quarter {} s, last quarter {} s",
            f(p(0.5)),
            f(p(0.99)),
            f(result.start_latency_first_quarter_s),
            f(result.start_latency_last_quarter_s)
        )?;
    }
    Ok(if result.accepted == 0 {
        Status::Failure
    } else {
        Status::Ok
    })
}
