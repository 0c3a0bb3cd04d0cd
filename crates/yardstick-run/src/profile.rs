//! Profiles of e2e points: how the profiled replicate's command is wrapped (or told, through
//! the environment, to profile itself), and how its traces are read back
//! ([`yardstick_analysis::profiler`]).
//!
//! * `torch`: the command runs as it is, with `YARDSTICK_PROFILE`, `YARDSTICK_PROFILE_DIR` and
//!   `YARDSTICK_PROFILE_SCHEDULE` set; the repository's `python/yardstick_profile` module turns
//!   them into a `torch.profiler.profile` with that schedule and `record_function` ranges.
//! * `py-spy`: `py-spy record --format speedscope --subprocesses -- COMMAND`.
//! * `perf`: `perf record -g -- COMMAND`, then `perf report --stdio` for the top symbols.
//! * `nsys`: `nsys profile --trace cuda,nvtx,osrt --export sqlite -- COMMAND`, then the
//!   SQLite export's kernel, copy and NVTX tables.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use yardstick_analysis::profiler::{self, Interval, Kind, ProfilerAnalysis};
use yardstick_spec::{ProfilerMode, ProfilerSpec, ProfilerTool};
use yardstick_store::summary::ProfileEntry;

/// Why a profile could not be taken, or what it left could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profiler asked for is not installed.
    #[error("profile tool `{tool}` is not installed ({how})")]
    NotInstalled {
        /// The profiler.
        tool: &'static str,
        /// How to get it.
        how: &'static str,
    },
    /// A torch profile left no trace.
    #[error(
        "the workload wrote no PyTorch trace: does it use the \
         yardstick_profile module (python/yardstick_profile) and run at least \
         wait + warmup + active steps?"
    )]
    NoTorchTrace,
    /// A trace file could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        error: std::io::Error,
    },
    /// A PyTorch trace is not one.
    #[error("{file}: {error}")]
    Trace {
        /// The trace's file name.
        file: String,
        /// What is wrong with it.
        error: profiler::ProfilerError,
    },
    /// py-spy left no profile.
    #[error("py-spy wrote no profile ({}: {error})", path.display())]
    NoPySpy {
        /// The file looked for.
        path: PathBuf,
        /// The operating system's reason.
        error: std::io::Error,
    },
    /// perf left no data.
    #[error(
        "perf wrote no perf.data (perf_event_paranoid, or no permission: \
         run as root or lower /proc/sys/kernel/perf_event_paranoid)"
    )]
    NoPerfData,
    /// `perf report` could not be run.
    #[error("perf report: {0}")]
    PerfReport(std::io::Error),
    /// A profile (speedscope, perf report) could not be analysed.
    #[error("{0}")]
    Analysis(profiler::ProfilerError),
    /// The Nsight Systems export could not be opened.
    #[error("{}: {error}", path.display())]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// SQLite's reason.
        error: rusqlite::Error,
    },
    /// The database is not an Nsight Systems export.
    #[error(
        "{}: no CUPTI_ACTIVITY_KIND_KERNEL or NVTX_EVENTS table: not an Nsight Systems \
         SQLite export",
        path.display()
    )]
    NotNsys {
        /// The database.
        path: PathBuf,
    },
    /// A query of the export failed.
    #[error("{sql}: {error}")]
    Query {
        /// The query.
        sql: String,
        /// SQLite's reason.
        error: rusqlite::Error,
    },
    /// A row of the export could not be read.
    #[error("{0}")]
    Row(rusqlite::Error),
}

/// Where the profile goes and what the profiled command needs.
pub struct Wrapped {
    /// The command to run.
    pub argv: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

/// The profiler `p` asks for (torch unless said).
pub fn tool_of(p: &ProfilerSpec) -> ProfilerTool {
    p.tool.unwrap_or(ProfilerTool::Torch)
}

/// The command and environment of the profiled replicate, writing into `dir`; `Err` names a
/// profiler that is not installed, with how to get it.
pub fn wrap(argv: &[String], p: &ProfilerSpec, dir: &Path) -> Result<Wrapped, ProfileError> {
    let d = dir.display().to_string();
    let tool = tool_of(p);
    let need = |prog: &str, how: &'static str| -> Result<String, ProfileError> {
        yardstick_env::software::which(prog)
            .map(|p| p.display().to_string())
            .ok_or(ProfileError::NotInstalled {
                tool: tool.name(),
                how,
            })
    };
    let mut out = Wrapped {
        argv: Vec::new(),
        env: Vec::new(),
    };
    match tool {
        ProfilerTool::Torch => {
            let mode = match p.mode {
                Some(ProfilerMode::Tb) => "tb",
                _ => "trace",
            };
            out.env = vec![
                ("YARDSTICK_PROFILE".into(), mode.into()),
                ("YARDSTICK_PROFILE_DIR".into(), d),
                (
                    "YARDSTICK_PROFILE_SCHEDULE".into(),
                    p.schedule.clone().unwrap_or_default().text(),
                ),
            ];
        }
        ProfilerTool::PySpy => {
            let exe = need("py-spy", "pip install py-spy")?;
            out.argv = vec![
                exe,
                "record".into(),
                "--format".into(),
                "speedscope".into(),
                "--rate".into(),
                "200".into(),
                "--subprocesses".into(),
                "--output".into(),
                format!("{d}/py-spy.speedscope.json"),
                "--".into(),
            ];
        }
        ProfilerTool::Perf => {
            let exe = need("perf", "apt-get install linux-perf")?;
            out.argv = vec![
                exe,
                "record".into(),
                "-g".into(),
                "-F".into(),
                "499".into(),
                "-o".into(),
                format!("{d}/perf.data"),
                "--".into(),
            ];
        }
        ProfilerTool::Nsys => {
            let exe = need("nsys", "NVIDIA Nsight Systems, with the CUDA toolkit")?;
            out.argv = vec![
                exe,
                "profile".into(),
                "--trace".into(),
                "cuda,nvtx,osrt".into(),
                "--export".into(),
                "sqlite".into(),
                "--force-overwrite".into(),
                "true".into(),
                "--output".into(),
                format!("{d}/nsys"),
                "--".into(),
            ];
        }
    }
    out.argv.extend(argv.iter().cloned());
    Ok(out)
}

/// Reads what the profiler left in `dir` after a run of `wall_s` seconds: the analysis, or why
/// there is none. perf's report is written beside its data first (`perf-report.txt`).
pub fn analyze(
    dir: &Path,
    p: &ProfilerSpec,
    wall_s: f64,
) -> Result<ProfilerAnalysis, ProfileError> {
    match tool_of(p) {
        ProfilerTool::Torch => {
            let mut intervals = Vec::new();
            let mut traces = files_ending(dir, ".pt.trace.json");
            if traces.is_empty() {
                return Err(ProfileError::NoTorchTrace);
            }
            // Rank 0's traces when the ranks are named; every trace otherwise.
            if traces.iter().any(|t| file_name(t).starts_with("rank0")) {
                traces.retain(|t| file_name(t).starts_with("rank0"));
            }
            for t in &traces {
                let text = std::fs::read_to_string(t).map_err(|error| ProfileError::Read {
                    path: t.clone(),
                    error,
                })?;
                intervals.extend(profiler::torch_intervals(&text).map_err(|error| {
                    ProfileError::Trace {
                        file: file_name(t),
                        error,
                    }
                })?);
            }
            Ok(profiler::from_intervals("torch", &intervals))
        }
        ProfilerTool::PySpy => {
            let f = dir.join("py-spy.speedscope.json");
            let text = std::fs::read_to_string(&f).map_err(|error| ProfileError::NoPySpy {
                path: f.clone(),
                error,
            })?;
            profiler::speedscope(&text).map_err(ProfileError::Analysis)
        }
        ProfilerTool::Perf => {
            let data = dir.join("perf.data");
            if !data.is_file() {
                return Err(ProfileError::NoPerfData);
            }
            let out = std::process::Command::new(
                yardstick_env::software::which("perf").unwrap_or_else(|| "perf".into()),
            )
            .args(["report", "--stdio", "--no-children", "-g", "none"])
            .args(["--sort", "symbol"])
            .args(["--percent-limit", "0.5", "-i"])
            .arg(&data)
            .output()
            .map_err(ProfileError::PerfReport)?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let _ = std::fs::write(dir.join("perf-report.txt"), &text);
            profiler::perf_report(&text, wall_s).map_err(ProfileError::Analysis)
        }
        ProfilerTool::Nsys => {
            let db = dir.join("nsys.sqlite");
            nsys_sqlite(&db).map(|iv| profiler::from_intervals("nsys", &iv))
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if file_name(&p).ends_with(suffix) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The intervals of an Nsight Systems SQLite export (`nsys export --type sqlite`, or
/// `nsys profile --export sqlite`): kernels (`CUPTI_ACTIVITY_KIND_KERNEL`, names through
/// `StringIds`), copies (`CUPTI_ACTIVITY_KIND_MEMCPY`) and NVTX ranges (`NVTX_EVENTS`: ranges
/// named `ProfilerStep#N` are steps, ranges named like a phase are phases). Times are ns.
pub fn nsys_sqlite(db: &Path) -> Result<Vec<Interval>, ProfileError> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|error| ProfileError::Sqlite {
        path: db.to_path_buf(),
        error,
    })?;
    let has = |t: &str| -> bool {
        c.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
        .unwrap_or(false)
    };
    if !has("CUPTI_ACTIVITY_KIND_KERNEL") && !has("NVTX_EVENTS") {
        return Err(ProfileError::NotNsys {
            path: db.to_path_buf(),
        });
    }
    let mut out = Vec::new();
    let query = |sql: &str| {
        let sql = sql.to_string();
        move |error| ProfileError::Query { sql, error }
    };
    let mut read = |sql: &str, kind: Kind| -> Result<(), ProfileError> {
        let mut q = c.prepare(sql).map_err(query(sql))?;
        let rows = q
            .query_map([], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(query(sql))?;
        for row in rows {
            let (name, start, end, lane) = row.map_err(ProfileError::Row)?;
            let name = name.unwrap_or_default();
            let kind = match kind {
                Kind::Phase if name.starts_with("ProfilerStep#") => Kind::Step,
                Kind::Phase if !profiler::PHASES.contains(&name.as_str()) => continue,
                k => k,
            };
            out.push(Interval {
                name,
                kind,
                lane: lane.unwrap_or_default(),
                start: start as f64 / 1e9,
                end: end as f64 / 1e9,
            });
        }
        Ok(())
    };
    if has("CUPTI_ACTIVITY_KIND_KERNEL") {
        read(
            "SELECT s.value, k.start, k.end, 'dev' || k.deviceId || ':stream' || k.streamId \
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName",
            Kind::Kernel,
        )?;
    }
    if has("CUPTI_ACTIVITY_KIND_MEMCPY") {
        read(
            "SELECT 'memcpy', start, end, 'dev' || deviceId || ':stream' || streamId \
             FROM CUPTI_ACTIVITY_KIND_MEMCPY",
            Kind::Memcpy,
        )?;
    }
    if has("NVTX_EVENTS") {
        read(
            "SELECT coalesce(e.text, s.value), e.start, e.end, 'nvtx' || e.globalTid \
             FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId \
             WHERE e.end IS NOT NULL",
            Kind::Phase,
        )?;
    }
    Ok(out)
}

/// The `profile.*` facts of a point from its profiled replicate's summary: one value each, no
/// interval (n = 1).
pub fn fact_rows(
    run_id: &str,
    point_id: &str,
    summary: &serde_json::Value,
) -> Vec<yardstick_store::warehouse::FactRow> {
    let Ok(a) = serde_json::from_value::<ProfilerAnalysis>(summary["profile"].clone()) else {
        return Vec::new();
    };
    a.facts()
        .into_iter()
        .map(|(metric, value)| yardstick_store::warehouse::FactRow {
            run_id: run_id.into(),
            point_id: point_id.into(),
            replicate: None,
            unit: yardstick_spec::metrics::unit_of(&metric).to_string(),
            metric,
            statistic: "value".into(),
            value,
            ci_lo: None,
            ci_hi: None,
            n: 1,
            artifact: None,
            row_group: None,
        })
        .collect()
}

/// A point's entry in the summary's `profiles`: the analysis (or why there is none), where the
/// traces are, and the profiler's overhead: the profiled replicate's median step time over the
/// measured replicates' (mean of their medians).
pub fn summary_entry(
    summary: &serde_json::Value,
    per_point: &[(String, Vec<serde_json::Value>)],
    point_id: &str,
    slug: &str,
) -> ProfileEntry {
    let p50 = |s: &serde_json::Value| s[yardstick_spec::metrics::id::STEP_TIME_S]["p50"].as_f64();
    let measured: Vec<f64> = per_point
        .iter()
        .find(|(id, _)| id == point_id)
        .map(|(_, reps)| reps.iter().filter_map(p50).collect())
        .unwrap_or_default();
    let unprofiled =
        (!measured.is_empty()).then(|| measured.iter().sum::<f64>() / measured.len() as f64);
    let profiled = p50(summary);
    ProfileEntry {
        dir: format!("profile/{slug}/"),
        step_time_s_profiled: profiled,
        step_time_s_unprofiled: unprofiled,
        overhead: match (profiled, unprofiled) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        },
        analysis: summary
            .get("profile")
            .and_then(|a| ProfilerAnalysis::deserialize(a).ok()),
        error: summary
            .get("profile_error")
            .map(|why| why.as_str().map_or_else(|| why.to_string(), str::to_owned)),
    }
}

/// Runs `argv` once more under `profile`, writes the profiler's files into `dir`, and returns
/// the profile's summary entry (analysis, where the traces are, overhead against `measured`
/// step-time medians).
pub fn take(
    argv: &[String],
    profile: &yardstick_spec::ProfilerSpec,
    timeout: Option<std::time::Duration>,
    env: &[(String, String)],
    dir: &std::path::Path,
    measured: Vec<serde_json::Value>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<ProfileEntry, crate::RunError> {
    let io = crate::RunError::io;
    let layer = yardstick_spec::E2eLayer {
        kind: Some(yardstick_spec::E2eKind::Command),
        command: Some(argv.to_vec()),
        timeout: timeout.map(yardstick_spec::DurationSpec),
        env: Some(env.iter().cloned().collect()),
        profile: Some(profile.clone()),
        ..Default::default()
    };
    let scratch = std::env::temp_dir().join(format!("yardstick-profile-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(io("creating a scratch directory".into()))?;
    let out = crate::e2e::run_replicate(crate::e2e::E2eRequest {
        argv: argv.to_vec(),
        layer: &layer,
        trials: &yardstick_spec::Trials::default(),
        expect_metrics: false,
        scratch: &scratch,
        run_id: "",
        seed: 0,
        cancel,
        profile: Some(profile),
    });
    // The scratch directory goes whether the run worked or not.
    let _ = std::fs::remove_dir_all(&scratch);
    let out = out?;
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let mut summary = out.summary;
    if let Some(p) = out.profile {
        for (name, bytes) in &p.files {
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(io(format!("creating {}", parent.display())))?;
            }
            std::fs::write(&path, bytes).map_err(io(format!("writing {}", path.display())))?;
        }
        match p.analysis {
            Ok(a) => {
                summary["profile"] = serde_json::to_value(&a)
                    .map_err(|e| crate::RunError::Internal(e.to_string()))?
            }
            Err(why) => summary["profile_error"] = why.to_string().into(),
        }
    }
    let mut entry = summary_entry(
        &summary,
        &[("command".to_string(), measured)],
        "command",
        "",
    );
    entry.dir = dir.display().to_string();
    Ok(entry)
}

/// A profile entry as people read it: the phases, the kinds of work and the top five.
pub fn text(e: &ProfileEntry) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let Some(a) = &e.analysis else {
        let _ = writeln!(
            s,
            "profile: none ({})",
            e.error.as_deref().unwrap_or("unreadable")
        );
        return s;
    };
    let _ = writeln!(
        s,
        "profile ({}, one more run, not measured): traces in {}{}",
        a.tool,
        e.dir,
        e.overhead
            .map(|o| format!("; profiled step ×{o:.2} of unprofiled"))
            .unwrap_or_default()
    );
    for (key, shares) in [("phases", &a.phases), ("categories", &a.categories)] {
        let parts: Vec<String> = shares
            .iter()
            .filter(|p| p.share > 0.0)
            .map(|p| {
                format!(
                    "{} {:.1} ms ({:.0} %)",
                    p.name,
                    p.s_per_step * 1e3,
                    p.share * 100.0
                )
            })
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(s, "  per step, {key}: {}", parts.join(", "));
        }
    }
    for t in a.top.iter().take(5) {
        let _ = writeln!(s, "  {:>5.1} %  {}", t.share * 100.0, t.name);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture built to the documented schema of `nsys export --type sqlite` (the tables and
    /// columns the reader uses: StringIds, CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    /// NVTX_EVENTS), not written by Nsight Systems: nsys cannot run without a GPU here.
    fn nsys_fixture(path: &Path) {
        let c = rusqlite::Connection::open(path).unwrap();
        c.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
                deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
                globalPid INTEGER, demangledName INTEGER, shortName INTEGER, mangledName INTEGER);
             CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
                deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
                globalPid INTEGER, bytes INTEGER, copyKind INTEGER);
             CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER,
                rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
                endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
             INSERT INTO StringIds VALUES (1, 'ampere_sgemm_128x64_tn'), (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'),
                (3, 'forward'), (4, 'ProfilerStep#7');
             -- One 10 ms step: forward 0-4 ms, a GEMM 1-4 ms on stream 7, an all-reduce 3-6 ms
             -- on stream 13 (1 ms of it beside the GEMM), a 1 ms copy at 7-8 ms.
             INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId)
                VALUES (0, 10000000, 59, NULL, 1, 4), (0, 4000000, 59, 'forward', 1, NULL);
             INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, shortName)
                VALUES (1000000, 4000000, 0, 7, 1), (3000000, 6000000, 0, 13, 2);
             INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, bytes, copyKind)
                VALUES (7000000, 8000000, 0, 7, 1048576, 1);",
        )
        .unwrap();
    }

    #[test]
    fn the_nsys_reader_splits_kernels_collectives_and_copies() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("nsys.sqlite");
        nsys_fixture(&db);
        let a = profiler::from_intervals("nsys", &nsys_sqlite(&db).unwrap());
        assert_eq!(a.steps, 1);
        assert!((a.step_s.unwrap() - 0.010).abs() < 1e-12);
        let cat = |n: &str| {
            a.categories
                .iter()
                .find(|c| c.name == n)
                .unwrap()
                .s_per_step
        };
        assert!((cat("compute") - 0.003).abs() < 1e-12);
        assert!((cat("communication") - 0.003).abs() < 1e-12);
        assert!((cat("memcpy") - 0.001).abs() < 1e-12);
        // Busy 1-6 ms and 7-8 ms: 4 ms idle.
        assert!((cat("idle") - 0.004).abs() < 1e-12);
        // One third of the all-reduce ran beside the GEMM.
        assert!((a.comm_overlap.unwrap() - 1.0 / 3.0).abs() < 1e-9);
        let forward = a.phases.iter().find(|p| p.name == "forward").unwrap();
        assert!((forward.s_per_step - 0.004).abs() < 1e-12);
        assert_eq!(a.top[0].name, "ampere_sgemm_128x64_tn");
        // Not an export: a clear error.
        let other = dir.path().join("other.sqlite");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        assert!(
            nsys_sqlite(&other)
                .unwrap_err()
                .to_string()
                .contains("not an Nsight Systems")
        );
    }
}
