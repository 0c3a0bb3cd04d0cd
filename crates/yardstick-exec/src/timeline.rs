//! The timeline of one command run, for the control-plane part of the bottleneck taxonomy
//! (scheduler timing, queue depth, job start-up; docs/methodology.md#bottleneck-taxonomy).
//!
//! yardstick notes when each metric-protocol line arrives — the FIFO reader stamps every read
//! (`--metrics-fifo`), and without a FIFO a watcher polls the metrics file's length every
//! [`POLL_INTERVAL`] — and splits the run's wall time into:
//!
//! * **start-up**: process launch → the start of the first step (the arrival of the first
//!   record with `step_time_s`, minus that step's own time): interpreter and library imports,
//!   model construction, rendezvous, scheduler and container start;
//! * **service**: the steps themselves, Σ `step_time_s` (the largest per-rank sum when several
//!   ranks report);
//! * **between steps**: the rest of the span from the first step to the last (logging,
//!   checkpoints, evaluation not reported as steps);
//! * **teardown**: the arrival of the last step record → process exit.
//!
//! Start-up plus teardown is control-plane time; when it is at least
//! [`yardstick_analysis::roofline::QUEUE_SHARE`] (50 %) of the wall time the run is
//! control-plane-bound: a faster step would barely change the job's wall time.
//!
//! The arrival time is only evidence when the lines are written as the steps finish. A workload
//! that buffers its output (Python without `buffering=1`) delivers every line at exit; a burst
//! far shorter than the steps it reports is detected and the timeline refused rather than
//! misread as a long start-up.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use yardstick_analysis::bottleneck::JobTimeline;
use yardstick_analysis::protocol::ParsedMetrics;

/// How often the metrics file is polled when it is not a FIFO.
pub const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// Lines of steps shorter than this in total may arrive in one read or poll without being
/// called buffered (a pipe read takes every line written since the last one).
pub const BURST_SLACK_S: f64 = 0.05;

/// When the bytes of a metrics stream were first seen: `(bytes so far, instant)`, both
/// ascending.
#[derive(Debug, Clone, Default)]
pub struct Arrivals {
    points: Vec<(u64, Instant)>,
    /// How late a stamp can be (the poll interval; zero for FIFO reads).
    pub resolution: Duration,
    /// `fifo` or `file-poll`.
    pub source: &'static str,
}

impl Arrivals {
    /// An empty record of a stream seen through `source` with `resolution`.
    pub fn new(source: &'static str, resolution: Duration) -> Self {
        Arrivals {
            points: Vec::new(),
            resolution,
            source,
        }
    }

    /// Notes that `total` bytes had arrived by `at` (ignored unless the total grew).
    pub fn record(&mut self, total: u64, at: Instant) {
        if self.points.last().is_none_or(|&(n, _)| total > n) {
            self.points.push((total, at));
        }
    }

    /// When the first `offset` bytes had all arrived.
    pub fn at(&self, offset: u64) -> Option<Instant> {
        let i = self.points.partition_point(|&(n, _)| n < offset);
        self.points.get(i).map(|&(_, t)| t)
    }
}

/// Polls a metrics file's length on a background thread while a workload runs.
#[derive(Debug)]
pub struct FileWatch {
    stop: Arc<AtomicBool>,
    seen: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<JoinHandle<Arrivals>>,
}

impl FileWatch {
    /// Starts polling `path` (which need not exist yet) every `interval`.
    pub fn start(path: &Path, interval: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen2 = seen.clone();
        let path: PathBuf = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("yardstick-metrics-watch".into())
            .spawn(move || {
                let mut arrivals = Arrivals::new("file-poll", interval);
                loop {
                    // Read the flag first: the poll after it sees every byte written before
                    // the stop (the workload has exited by then).
                    let stopping = stop2.load(Ordering::Acquire);
                    if let Ok(m) = std::fs::metadata(&path) {
                        arrivals.record(m.len(), Instant::now());
                        seen2.store(m.len(), Ordering::Release);
                    }
                    if stopping {
                        return arrivals;
                    }
                    std::thread::sleep(interval);
                }
            })?;
        Ok(FileWatch {
            stop,
            seen,
            thread: Some(thread),
        })
    }

    /// The file's length at the last poll.
    pub fn seen(&self) -> u64 {
        self.seen.load(Ordering::Acquire)
    }

    /// Stops polling (after one last look) and returns what was seen.
    pub fn finish(mut self) -> Arrivals {
        self.stop.store(true, Ordering::Release);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Byte offset just past each line (1-based line `n` ends at `ends[n - 1]`).
fn line_ends(bytes: &[u8]) -> Vec<u64> {
    let mut ends: Vec<u64> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i as u64 + 1)
        .collect();
    if bytes.last().is_some_and(|b| *b != b'\n') {
        ends.push(bytes.len() as u64);
    }
    ends
}

/// The step records arrived too close together to time start-up and teardown by: the workload
/// buffered its output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the {step_records} step records arrived within {span:.3} s although they report \
     {later_steps:.3} s of steps after the first: the workload buffered its output, so \
     start-up and teardown were not timed (write each line when its step ends, e.g. \
     open(path, \"a\", buffering=1))"
)]
pub struct BufferedOutput {
    /// Records with a step time.
    pub step_records: usize,
    /// Seconds between the first record's arrival and the last's.
    pub span: f64,
    /// Seconds of steps the records after the first report.
    pub later_steps: f64,
}

/// The timeline of a run launched at `launch` that took `wall_s`, from the raw metric bytes,
/// their parse and when they arrived. `Ok(None)` when no record has `step_time_s`; `Err` with
/// the reason when the arrivals cannot be evidence (buffered output).
pub fn job_timeline(
    bytes: &[u8],
    parsed: &ParsedMetrics,
    arrivals: &Arrivals,
    launch: Instant,
    wall_s: f64,
) -> Result<Option<JobTimeline>, BufferedOutput> {
    let ends = line_ends(bytes);
    let mut first: Option<(f64, f64)> = None; // (arrival s, step time)
    let mut last: Option<f64> = None;
    let mut per_rank: std::collections::BTreeMap<u32, f64> = Default::default();
    let mut step_records = 0;
    for r in &parsed.records {
        let Some(t) = r.step_time_s else { continue };
        let Some(end) = ends.get(r.line.wrapping_sub(1)) else {
            continue;
        };
        let Some(at) = arrivals.at(*end) else {
            continue;
        };
        // A stamp says "arrived by then"; the poll (or read) after the exit can be later
        // than the exit, but the bytes were written before it.
        let at = at
            .saturating_duration_since(launch)
            .as_secs_f64()
            .min(wall_s);
        step_records += 1;
        *per_rank.entry(r.rank.unwrap_or(0)).or_default() += t;
        if first.is_none_or(|(a, _)| at < a) {
            first = Some((at, t));
        }
        if last.is_none_or(|l| at > l) {
            last = Some(at);
        }
    }
    let (Some((first_at, first_t)), Some(last_at)) = (first, last) else {
        return Ok(None);
    };
    let service = per_rank.values().copied().fold(0.0, f64::max);
    let resolution = arrivals.resolution.as_secs_f64();
    // Steps run one after another: from the first report to the last, at least the later
    // steps' time must pass. Lines that arrive much faster than that were held back.
    let later_steps = service - first_t;
    let span = last_at - first_at;
    if step_records >= 2 && span + 2.0 * resolution + BURST_SLACK_S < 0.5 * later_steps {
        return Err(BufferedOutput {
            step_records,
            span,
            later_steps,
        });
    }
    let startup = (first_at - first_t).max(0.0);
    let teardown = (wall_s - last_at).max(0.0);
    let control = startup + teardown;
    Ok(Some(JobTimeline {
        wall_s,
        first_step_reported_s: first_at,
        startup_s: startup,
        service_s: service,
        between_steps_s: (wall_s - startup - service - teardown).max(0.0),
        teardown_s: teardown,
        control_plane_s: control,
        control_plane_share: if wall_s > 0.0 { control / wall_s } else { 0.0 },
        step_records,
        source: arrivals.source,
        resolution_s: resolution,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_analysis::protocol::parse_metrics;

    /// Arrivals of whole lines at the given offsets from `launch` (ms).
    fn arrivals(bytes: &[u8], launch: Instant, at_ms: &[u64]) -> Arrivals {
        let mut a = Arrivals::new("fifo", Duration::ZERO);
        for (end, ms) in line_ends(bytes).into_iter().zip(at_ms) {
            a.record(end, launch + Duration::from_millis(*ms));
        }
        a
    }

    #[test]
    fn a_slow_start_is_control_plane_time() {
        // Launch, 2 s of imports, then three 0.1 s steps reported as they end, exit 0.2 s
        // after the last.
        let text = "{\"step\":0,\"step_time_s\":0.1}\n\
                    {\"step\":1,\"step_time_s\":0.1}\n\
                    {\"step\":2,\"step_time_s\":0.1}\n";
        let launch = Instant::now();
        let a = arrivals(text.as_bytes(), launch, &[2100, 2200, 2300]);
        let t = job_timeline(text.as_bytes(), &parse_metrics(text), &a, launch, 2.5)
            .unwrap()
            .unwrap();
        assert!((t.first_step_reported_s - 2.1).abs() < 1e-9);
        assert!((t.startup_s - 2.0).abs() < 1e-9, "{t:?}");
        assert!((t.teardown_s - 0.2).abs() < 1e-9, "{t:?}");
        assert!((t.service_s - 0.3).abs() < 1e-9);
        assert!(t.between_steps_s.abs() < 1e-9);
        assert!((t.control_plane_share - 2.2 / 2.5).abs() < 1e-9);
        assert_eq!(t.step_records, 3);
    }

    #[test]
    fn stamps_after_the_exit_are_the_exit() {
        // The last poll ran 4 ms after the process exited: the lines were there by the exit.
        let text = "{\"step_time_s\":0.001}\n";
        let launch = Instant::now();
        let a = arrivals(text.as_bytes(), launch, &[1004]);
        let t = job_timeline(text.as_bytes(), &parse_metrics(text), &a, launch, 1.0)
            .unwrap()
            .unwrap();
        assert_eq!(t.first_step_reported_s, 1.0);
        assert_eq!(t.teardown_s, 0.0);
        assert!((t.startup_s - 0.999).abs() < 1e-12);
        // Start-up is all of it but the one 1 ms step (was only `<= 1.0`, which 0 also passes).
        assert!((t.control_plane_share - 0.999).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn buffered_lines_are_refused_not_misread() {
        // Three 0.5 s steps whose lines all arrive at exit.
        let text = "{\"step_time_s\":0.5}\n{\"step_time_s\":0.5}\n{\"step_time_s\":0.5}\n";
        let launch = Instant::now();
        let a = arrivals(text.as_bytes(), launch, &[1600, 1600, 1600]);
        let e = job_timeline(text.as_bytes(), &parse_metrics(text), &a, launch, 1.6).unwrap_err();
        assert!(e.to_string().contains("buffered its output"), "{e}");
    }

    #[test]
    fn ranks_run_concurrently_and_non_step_records_are_ignored() {
        let text = "{\"config\":1}\n\
                    {\"step\":0,\"rank\":0,\"world_size\":2,\"step_time_s\":0.4}\n\
                    {\"step\":0,\"rank\":1,\"world_size\":2,\"step_time_s\":0.5}\n\
                    {\"step\":1,\"rank\":0,\"world_size\":2,\"step_time_s\":0.4}\n\
                    {\"step\":1,\"rank\":1,\"world_size\":2,\"step_time_s\":0.5}";
        let launch = Instant::now();
        let a = arrivals(text.as_bytes(), launch, &[10, 500, 600, 900, 1100]);
        let t = job_timeline(text.as_bytes(), &parse_metrics(text), &a, launch, 1.2)
            .unwrap()
            .unwrap();
        // Rank 1's 1.0 s is the service time; the first step record (rank 0 at 0.5 s, 0.4 s
        // long) started at 0.1 s; the last arrived at 1.1 s (no trailing newline).
        assert!((t.service_s - 1.0).abs() < 1e-9);
        assert!((t.startup_s - 0.1).abs() < 1e-9, "{t:?}");
        assert!((t.teardown_s - 0.1).abs() < 1e-9, "{t:?}");
        assert_eq!(t.step_records, 4);
        // No step records: no timeline.
        let none = "{\"config\":1}\n";
        let a = arrivals(none.as_bytes(), launch, &[5]);
        assert!(
            job_timeline(none.as_bytes(), &parse_metrics(none), &a, launch, 0.1)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_polled_file_is_stamped_as_it_grows() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let watch = FileWatch::start(&path, Duration::from_millis(1)).unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "{{\"step_time_s\":0.01}}").unwrap();
        // Wait until the watcher has seen the first line, then write the second.
        let len = std::fs::metadata(&path).unwrap().len();
        while watch.seen() < len {
            std::thread::sleep(Duration::from_millis(1));
        }
        writeln!(f, "{{\"step_time_s\":0.01}}").unwrap();
        let a = watch.finish();
        let first = a.at(len).unwrap();
        let second = a.at(2 * len).unwrap();
        assert!(second > first, "{a:?}");
        assert!(a.at(2 * len + 1).is_none());
        assert_eq!(a.source, "file-poll");
    }
}
