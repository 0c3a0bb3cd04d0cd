//! A scheduler under a burst of submissions: N short jobs submitted to Slurm at an open-loop
//! rate, each stamping the moment it starts. What a user of a busy cluster feels: how long
//! `sbatch` takes to answer (the controller's admission), how long a job waits from its
//! submission to its first instruction (queue wait plus launch), and how many jobs per second
//! the cluster starts against how many were submitted.
//!
//! Times: the submitter's wall clock at each `sbatch` call and the job's (`date +%s%N`) at its
//! start; on one machine they are one clock, across nodes they differ by the nodes' clock
//! offset (NTP keeps it to milliseconds, far below the seconds a backlog costs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::RunError;
use crate::slurm::shell_quote;

/// A burst of submissions.
#[derive(Debug, Clone)]
pub struct Burst {
    /// Jobs submitted.
    pub jobs: u32,
    /// Submissions per second (open loop: job `i` is due at `i / rate`).
    pub rate: f64,
    /// Seconds each job holds its allocation after it stamps its start (0: it ends at once).
    pub hold_s: f64,
    /// The partition, when not the cluster's default.
    pub partition: Option<String>,
    /// Where jobs stamp their start: a directory every node of the partition can write and
    /// this machine can read (a shared file system across nodes).
    pub dir: PathBuf,
    /// Give up on jobs not started this long after the last submission (they are cancelled).
    pub timeout: Duration,
}

/// One job of a burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BurstJob {
    /// Its index in the burst, from 0.
    pub index: u32,
    /// Slurm's job id (`None` when `sbatch` refused it).
    pub job_id: Option<String>,
    /// Seconds after the burst began that its submission was due.
    pub due_s: f64,
    /// Seconds late its `sbatch` call started (the submitter fell behind an earlier slow one).
    pub late_s: f64,
    /// Seconds `sbatch` took to answer.
    pub submit_s: f64,
    /// Seconds from the `sbatch` call to the job's first instruction: the wait the user feels.
    pub start_latency_s: Option<f64>,
    /// Why `sbatch` refused it.
    pub error: Option<String>,
}

/// What a burst measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BurstResult {
    /// Every job.
    pub jobs: Vec<BurstJob>,
    /// Submissions per second asked for.
    pub offered_per_s: f64,
    /// Submissions per second achieved: (accepted − 1) over the first to the last call.
    pub submitted_per_s: Option<f64>,
    /// Jobs started per second: (started − 1) over the first start to the last.
    pub started_per_s: Option<f64>,
    /// Jobs `sbatch` accepted.
    pub accepted: u32,
    /// Jobs that started before the timeout.
    pub started: u32,
    /// Mean start latency of the first and the last quarter of the started jobs (by
    /// submission): a backlog shows as the last far above the first.
    pub start_latency_first_quarter_s: Option<f64>,
    /// See `start_latency_first_quarter_s`.
    pub start_latency_last_quarter_s: Option<f64>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The `sbatch` arguments of job `index`: a wrapped one-liner that stamps its start into
/// `dir/start.<job id>` (written aside, then renamed, so a reader never sees half a stamp), then
/// holds for `hold_s`.
pub fn sbatch_args(b: &Burst, index: u32) -> Vec<String> {
    let dir = shell_quote(&b.dir.display().to_string());
    let mut wrap = format!(
        "t=$(date +%s%N); echo $t > {dir}/.start.$SLURM_JOB_ID && mv {dir}/.start.$SLURM_JOB_ID {dir}/start.$SLURM_JOB_ID"
    );
    if b.hold_s > 0.0 {
        wrap.push_str(&format!("; sleep {}", b.hold_s));
    }
    let mut args = vec![
        "--parsable".to_string(),
        format!("--job-name=yardstick-burst-{index}"),
        "--output=/dev/null".to_string(),
        "--ntasks=1".to_string(),
        // Minutes: enough for any hold this tool accepts.
        format!("--time={}", (b.hold_s / 60.0).ceil().max(1.0) as u64 + 1),
    ];
    if let Some(p) = &b.partition {
        args.push(format!("--partition={p}"));
    }
    args.push(format!("--wrap={wrap}"));
    args
}

/// Submits the burst and waits for its jobs to start (at most `timeout` after the last
/// submission); jobs not started by then are cancelled. `progress` hears each submission.
pub fn run_burst(b: &Burst, mut progress: impl FnMut(&BurstJob)) -> Result<BurstResult, RunError> {
    std::fs::create_dir_all(&b.dir)
        .map_err(|e| RunError::Invalid(format!("creating {}: {e}", b.dir.display())))?;
    let t0 = Instant::now();
    let mut jobs = Vec::with_capacity(b.jobs as usize);
    let mut called_ns = Vec::with_capacity(b.jobs as usize);
    for i in 0..b.jobs {
        let due = Duration::from_secs_f64(f64::from(i) / b.rate);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        let late = t0.elapsed().saturating_sub(due);
        let at = now_ns();
        let start = Instant::now();
        let out = Command::new("sbatch").args(sbatch_args(b, i)).output();
        let submit_s = start.elapsed().as_secs_f64();
        let (job_id, error) = match out {
            Err(e) => {
                return Err(RunError::Invalid(format!(
                    "sbatch: {e} (the Slurm burst needs Slurm's commands on the PATH)"
                )));
            }
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let id = text
                    .trim()
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                if id.is_empty() {
                    (
                        None,
                        Some(format!("sbatch answered {text:?}, not a job id")),
                    )
                } else {
                    (Some(id), None)
                }
            }
            Ok(o) => (
                None,
                Some(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            ),
        };
        let job = BurstJob {
            index: i,
            job_id,
            due_s: due.as_secs_f64(),
            late_s: late.as_secs_f64(),
            submit_s,
            start_latency_s: None,
            error,
        };
        progress(&job);
        jobs.push(job);
        called_ns.push(at);
    }
    // Wait for every accepted job's stamp.
    let deadline = Instant::now() + b.timeout;
    let mut starts: Vec<Option<u64>> = vec![None; jobs.len()];
    loop {
        for (k, job) in jobs.iter().enumerate() {
            if starts[k].is_some() {
                continue;
            }
            if let Some(id) = &job.job_id {
                starts[k] = std::fs::read_to_string(b.dir.join(format!("start.{id}")))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok());
            }
        }
        let waiting = jobs
            .iter()
            .zip(&starts)
            .any(|(j, s)| j.job_id.is_some() && s.is_none());
        if !waiting || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for (job, s) in jobs.iter().zip(&starts) {
        if let (Some(id), None) = (&job.job_id, s) {
            let _ = Command::new("scancel").arg(id).output();
        }
    }
    for ((job, s), at) in jobs.iter_mut().zip(&starts).zip(&called_ns) {
        job.start_latency_s = s.map(|s| (s as f64 - *at as f64) / 1e9);
    }
    Ok(summarise(b.rate, jobs, &called_ns, &starts))
}

/// The burst's rates and quarters from its jobs, their `sbatch` call times and start stamps
/// (unix ns).
pub fn summarise(
    offered: f64,
    jobs: Vec<BurstJob>,
    called_ns: &[u64],
    starts: &[Option<u64>],
) -> BurstResult {
    let rate = |mut ts: Vec<u64>| {
        ts.sort_unstable();
        match (ts.first(), ts.last()) {
            (Some(a), Some(z)) if z > a => Some((ts.len() - 1) as f64 / ((z - a) as f64 / 1e9)),
            _ => None,
        }
    };
    let accepted: Vec<u64> = jobs
        .iter()
        .zip(called_ns)
        .filter(|(j, _)| j.job_id.is_some())
        .map(|(_, t)| *t)
        .collect();
    let started: Vec<u64> = starts.iter().flatten().copied().collect();
    let latencies: Vec<f64> = jobs.iter().filter_map(|j| j.start_latency_s).collect();
    let quarter = latencies.len().div_ceil(4);
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    BurstResult {
        offered_per_s: offered,
        submitted_per_s: rate(accepted.clone()),
        started_per_s: rate(started.clone()),
        accepted: accepted.len() as u32,
        started: started.len() as u32,
        start_latency_first_quarter_s: (latencies.len() >= 4)
            .then(|| mean(&latencies[..quarter]))
            .flatten(),
        start_latency_last_quarter_s: (latencies.len() >= 4)
            .then(|| mean(&latencies[latencies.len() - quarter..]))
            .flatten(),
        jobs,
    }
}

/// The metric-protocol lines of a burst (docs/metric-protocol.md): one per job (its
/// `submit_s` and `start_latency_s`), then one with the burst's rates, counts and quarters,
/// declared with their units and directions.
pub fn protocol_lines(r: &BurstResult) -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut out = vec![
        json!({"declare": "submit_s", "unit": "s", "direction": "lower_is_better"}),
        json!({"declare": "start_latency_s", "unit": "s", "direction": "lower_is_better"}),
        json!({"declare": "started_per_s", "unit": "jobs/s", "direction": "higher_is_better"}),
        json!({"declare": "submitted_per_s", "unit": "jobs/s"}),
        json!({"declare": "offered_per_s", "unit": "jobs/s"}),
        json!({"declare": "started_share", "unit": "ratio", "direction": "higher_is_better"}),
        json!({"declare": "start_latency_first_quarter_s", "unit": "s", "direction": "lower_is_better"}),
        json!({"declare": "start_latency_last_quarter_s", "unit": "s", "direction": "lower_is_better"}),
    ];
    for j in &r.jobs {
        let mut v = json!({"job": j.index, "submit_s": j.submit_s});
        if let Some(l) = j.start_latency_s {
            v["start_latency_s"] = json!(l);
        }
        out.push(v);
    }
    let mut last = json!({
        "offered_per_s": r.offered_per_s,
        "started_share": f64::from(r.started) / f64::from(r.jobs.len().max(1) as u32),
    });
    for (k, v) in [
        ("submitted_per_s", r.submitted_per_s),
        ("started_per_s", r.started_per_s),
        (
            "start_latency_first_quarter_s",
            r.start_latency_first_quarter_s,
        ),
        (
            "start_latency_last_quarter_s",
            r.start_latency_last_quarter_s,
        ),
    ] {
        if let Some(v) = v {
            last[k] = json!(v);
        }
    }
    out.push(last);
    out
}

/// Appends `lines` to the metric-protocol file `path`, one write per line.
pub fn append_lines(path: &Path, lines: &[serde_json::Value]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    for l in lines {
        f.write_all(format!("{l}\n").as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(index: u32, latency: Option<f64>) -> BurstJob {
        BurstJob {
            index,
            job_id: Some(format!("{}", 100 + index)),
            due_s: f64::from(index) * 0.5,
            late_s: 0.0,
            submit_s: 0.01,
            start_latency_s: latency,
            error: None,
        }
    }

    #[test]
    fn a_burst_s_rates_and_quarters() {
        // Eight jobs submitted every 0.5 s; the scheduler starts one per second, so each waits
        // 0.5 s longer than the one before.
        let s = 1_000_000_000u64;
        let called: Vec<u64> = (0..8).map(|i| i * s / 2).collect();
        let starts: Vec<Option<u64>> = (0..8).map(|i| Some(i * s + s / 10)).collect();
        let jobs: Vec<BurstJob> = (0..8)
            .map(|i| {
                job(
                    i,
                    Some((starts[i as usize].unwrap() - called[i as usize]) as f64 / 1e9),
                )
            })
            .collect();
        let r = summarise(2.0, jobs, &called, &starts);
        assert_eq!((r.accepted, r.started), (8, 8));
        assert!((r.submitted_per_s.unwrap() - 2.0).abs() < 1e-9);
        assert!((r.started_per_s.unwrap() - 1.0).abs() < 1e-9);
        // First quarter: 0.1 and 0.6 s; last: 3.1 and 3.6 s.
        assert!((r.start_latency_first_quarter_s.unwrap() - 0.35).abs() < 1e-9);
        assert!((r.start_latency_last_quarter_s.unwrap() - 3.35).abs() < 1e-9);
        let lines = protocol_lines(&r);
        assert_eq!(lines.len(), 8 + 8 + 1);
        let last = lines.last().unwrap();
        assert_eq!(last["started_share"], 1.0);
        assert!((last["started_per_s"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_job_stamps_its_start_and_holds() {
        let b = Burst {
            jobs: 1,
            rate: 1.0,
            hold_s: 2.5,
            partition: Some("debug".into()),
            dir: PathBuf::from("/shared/burst dir"),
            timeout: Duration::from_secs(60),
        };
        let args = sbatch_args(&b, 3);
        assert!(args.contains(&"--job-name=yardstick-burst-3".to_string()));
        assert!(args.contains(&"--partition=debug".to_string()));
        let wrap = args.last().unwrap();
        assert!(
            wrap.starts_with(
                "--wrap=t=$(date +%s%N); echo $t > '/shared/burst dir'/.start.$SLURM_JOB_ID"
            ),
            "{wrap}"
        );
        assert!(wrap.ends_with("; sleep 2.5"), "{wrap}");
    }
}
