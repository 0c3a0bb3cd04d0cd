//! The server under test at run time (`spec.server`): started for a treatment on a free port,
//! waited for, kept while consecutive steps measure the same treatment, and stopped (the signal
//! to its process group, SIGKILL after the grace) when the treatment changes or the run ends.
//! Each start's output and record are stored under `server/<treatment>/<n>/`. A server that does
//! not become ready — it exits, times out, runs out of memory — makes its treatment infeasible
//! for the rest of the run: its steps are stored as failed with the reason and the log's tail,
//! and the run goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use yardstick_exec::startup::{Cache, Readiness, Started, StartupOutcome, StartupSpec, start};
use yardstick_spec::StopSignal;
use yardstick_store::RunWriter;

use crate::plan::{Point, PointWork};
use crate::sweep::{ServerPlan, Treatment, address_values};
use crate::{Event, RunError};

/// How the error of a step of an infeasible treatment begins.
pub const INFEASIBLE: &str = "infeasible: ";

/// Lines of the server's output kept in an infeasible treatment's reason.
const TAIL_LINES: usize = 12;

/// What a step of a treatment gets.
pub(crate) enum ForStep {
    /// The server is up on this port; `startup_s` is its time to ready when it was started for
    /// this step.
    Up {
        /// Its port.
        port: u16,
        /// Seconds from spawn to ready, for the first step after a start.
        startup_s: Option<f64>,
    },
    /// The treatment cannot be measured: why.
    Infeasible(String),
}

struct Live {
    treatment: usize,
    started: Started,
    port: u16,
    dir: PathBuf,
    record: StartRecord,
    plan: ServerPlan,
}

/// `server/<treatment>/<n>/server.json`: one start of the server.
#[derive(Debug, Clone, Serialize)]
struct StartRecord {
    treatment: String,
    values: BTreeMap<String, String>,
    argv: Vec<String>,
    /// Names only: values may be secrets.
    env: Vec<String>,
    port: u16,
    pid: u32,
    started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<StartupOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    infeasible: Option<String>,
}

/// The server under test of a run.
pub(crate) struct ServerUnderTest {
    live: Option<Live>,
    infeasible: BTreeMap<usize, String>,
    starts: u32,
    /// `{host}`: where clients reach the server.
    host: String,
}

impl ServerUnderTest {
    /// The server under test of a run whose clients reach it at `host` (`{host}`).
    pub(crate) fn new(host: String) -> ServerUnderTest {
        ServerUnderTest {
            live: None,
            infeasible: BTreeMap::new(),
            starts: 0,
            host,
        }
    }

    /// `point` with `{host}` and `{port}` filled in its target or command.
    pub(crate) fn with_address(&self, point: &Point, port: u16) -> Point {
        with_address(point, &self.host, port)
    }

    /// Makes sure treatment `t`'s server runs (stopping another treatment's first).
    pub(crate) fn for_step(
        &mut self,
        treatments: &[Treatment],
        t: usize,
        scratch: &Path,
        writer: &mut RunWriter,
        cancel: &CancellationToken,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<ForStep, RunError> {
        if let Some(why) = self.infeasible.get(&t) {
            return Ok(ForStep::Infeasible(why.clone()));
        }
        let Some(plan) = treatments.get(t).and_then(|x| x.server.as_ref()) else {
            // A sweep without a server: nothing to start.
            return Ok(ForStep::Up {
                port: 0,
                startup_s: None,
            });
        };
        if let Some(live) = &self.live
            && live.treatment == t
        {
            if live.started.alive() {
                return Ok(ForStep::Up {
                    port: live.port,
                    startup_s: None,
                });
            }
            let (outcome, tail) = self.stop(writer)?;
            let why = format!(
                "{INFEASIBLE}the server exited while it was measured{}{}",
                outcome
                    .and_then(|o| o.error)
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
                tail_text(&tail)
            );
            on_event(Event::Warning(format!("{}: {why}", label(&treatments[t]))));
            self.infeasible.insert(t, why.clone());
            return Ok(ForStep::Infeasible(why));
        }
        self.stop(writer)?;
        let port = free_port()?;
        let live_plan = plan.with_address(&self.host, port);
        self.starts += 1;
        let dir = scratch.join("server").join(self.starts.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| RunError::Internal(e.to_string()))?;
        let ready = match (&live_plan.ready_http, &live_plan.ready_log) {
            (Some(url), _) => Readiness::Http {
                url: url.clone(),
                expect: live_plan.expect,
            },
            (None, Some(text)) => Readiness::Log(text.clone()),
            (None, None) => Readiness::Exit,
        };
        let spec = StartupSpec {
            argv: live_plan.argv.clone(),
            env: live_plan.env.clone(),
            ready,
            port: Some(port),
            timeout: live_plan.timeout,
            grace: live_plan.grace,
            cache: Cache::Warm,
            stdout: Some(dir.join("stdout.log")),
            stderr: Some(dir.join("stderr.log")),
        };
        on_event(Event::Note(format!(
            "starting the server for {} on port {port}: {}",
            label(&treatments[t]),
            live_plan.argv.join(" ")
        )));
        let record = StartRecord {
            treatment: treatments[t].id.clone(),
            values: treatments[t].values.clone(),
            argv: live_plan.argv.clone(),
            env: live_plan.env.iter().map(|(k, _)| k.clone()).collect(),
            port,
            pid: 0,
            started_at: yardstick_env::now_rfc3339(),
            stopped_at: None,
            outcome: None,
            infeasible: None,
        };
        let started = match start(&spec, Some(cancel), true) {
            Ok(s) => s,
            Err(e) => {
                let why = format!("{INFEASIBLE}the server could not be started: {e}");
                self.store_start(
                    writer,
                    &dir,
                    &StartRecord {
                        infeasible: Some(why.clone()),
                        ..record
                    },
                )?;
                self.infeasible.insert(t, why.clone());
                return Ok(ForStep::Infeasible(why));
            }
        };
        let mut record = record;
        record.pid = started.pid();
        match started.ready_s() {
            Some(ready_s) => {
                on_event(Event::Note(format!(
                    "the server is ready after {ready_s:.2} s"
                )));
                self.live = Some(Live {
                    treatment: t,
                    started,
                    port,
                    dir,
                    record,
                    plan: live_plan,
                });
                Ok(ForStep::Up {
                    port,
                    startup_s: Some(ready_s),
                })
            }
            None if cancel.is_cancelled() => {
                let outcome = started.finish(libc_signal(live_plan.signal), live_plan.grace);
                record.outcome = outcome.ok();
                record.stopped_at = Some(yardstick_env::now_rfc3339());
                self.store_start(writer, &dir, &record)?;
                Ok(ForStep::Infeasible(
                    "cancelled before the server was ready".into(),
                ))
            }
            None => {
                let outcome = started
                    .finish(libc_signal(live_plan.signal), live_plan.grace)
                    .map_err(|e| RunError::Internal(e.to_string()))?;
                let tail = log_tail(&dir);
                let error = outcome.error.clone().unwrap_or_else(|| "not ready".into());
                let oom = tail.iter().any(|l| {
                    let l = l.to_ascii_lowercase();
                    l.contains("out of memory") || l.contains("outofmemory") || l.contains("oom")
                });
                let why = format!(
                    "{INFEASIBLE}{}{error}{}",
                    if oom { "out of memory: " } else { "" },
                    tail_text(&tail)
                );
                record.outcome = Some(outcome);
                record.stopped_at = Some(yardstick_env::now_rfc3339());
                record.infeasible = Some(why.clone());
                self.store_start(writer, &dir, &record)?;
                self.infeasible.insert(t, why.clone());
                Ok(ForStep::Infeasible(why))
            }
        }
    }

    /// Stops the running server, if any, and stores its output and record; what its start
    /// measured and its log's last lines.
    pub(crate) fn stop(
        &mut self,
        writer: &mut RunWriter,
    ) -> Result<(Option<StartupOutcome>, Vec<String>), RunError> {
        let Some(mut live) = self.live.take() else {
            return Ok((None, Vec::new()));
        };
        let outcome = live
            .started
            .finish(libc_signal(live.plan.signal), live.plan.grace)
            .map_err(|e| RunError::Internal(e.to_string()))?;
        live.record.outcome = Some(outcome.clone());
        live.record.stopped_at = Some(yardstick_env::now_rfc3339());
        let tail = log_tail(&live.dir);
        self.store_start(writer, &live.dir, &live.record)?;
        Ok((Some(outcome), tail))
    }

    /// `server/<treatment>/<n>/`: the start's record and its output.
    fn store_start(
        &self,
        writer: &mut RunWriter,
        dir: &Path,
        record: &StartRecord,
    ) -> Result<(), RunError> {
        let treatment = if record.treatment.is_empty() {
            "server".to_string()
        } else {
            crate::plan::slug(&record.treatment)
        };
        let mut n = self.starts;
        let prefix = loop {
            let p = format!("server/{treatment}/{n}/");
            if !writer.has(&format!("{p}server.json")) {
                break p;
            }
            n += 1;
        };
        for name in ["stdout.log", "stderr.log"] {
            if let Ok(bytes) = std::fs::read(dir.join(name)) {
                writer.add(&format!("{prefix}{name}"), &bytes, "log")?;
            }
        }
        let json = serde_json::to_vec_pretty(record).expect("JSON");
        writer.add(&format!("{prefix}server.json"), &json, "server")?;
        let _ = std::fs::remove_dir_all(dir);
        Ok(())
    }
}

fn label(t: &Treatment) -> String {
    if t.id.is_empty() {
        "the server under test".into()
    } else {
        format!("treatment {}", t.id)
    }
}

fn libc_signal(s: StopSignal) -> i32 {
    match s {
        StopSignal::SIGTERM => libc::SIGTERM,
        StopSignal::SIGINT => libc::SIGINT,
        StopSignal::SIGKILL => libc::SIGKILL,
    }
}

/// A port nothing listens on now (the kernel's pick).
fn free_port() -> Result<u16, RunError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| RunError::Internal(format!("no free port for the server: {e}")))
}

/// The last lines of the server's output (stderr's, then stdout's when stderr is empty).
fn log_tail(dir: &Path) -> Vec<String> {
    for name in ["stderr.log", "stdout.log"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
            let lines: Vec<String> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect();
            if !lines.is_empty() {
                return lines[lines.len().saturating_sub(TAIL_LINES)..].to_vec();
            }
        }
    }
    Vec::new()
}

fn tail_text(tail: &[String]) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its output ended with:\n  {}", tail.join("\n  "))
    }
}

/// `point` with `{host}` and `{port}` filled in its target and commands.
fn with_address(point: &Point, host: &str, port: u16) -> Point {
    let v = address_values(host, port);
    let fill = |s: &mut String| *s = yardstick_spec::sweep::fill(s, &v);
    let mut p = point.clone();
    match &mut p.work {
        PointWork::Serve { url, .. } | PointWork::Eval { url, .. } => url.iter_mut().for_each(fill),
        PointWork::Command { argv, .. }
        | PointWork::Startup { argv, .. }
        | PointWork::Dataloader { argv, .. } => argv.iter_mut().for_each(fill),
        PointWork::Micro { .. } | PointWork::Train { .. } => {}
    }
    p
}

/// `summary.json`'s `sweep`: each treatment, measured or infeasible (every replicate of every
/// point failed with [`INFEASIBLE`]), with its server's start times. `None` without treatments.
pub(crate) fn sweep_summary(
    plan: &crate::Plan,
    per_point: &[(String, Vec<serde_json::Value>)],
) -> Option<Vec<yardstick_store::summary::TreatmentSummary>> {
    if plan.treatments.is_empty() {
        return None;
    }
    let out = plan
        .treatments
        .iter()
        .enumerate()
        // A run restricted to some treatments (`--only`, a tuner's round) says nothing of the
        // others.
        .filter(|(t, _)| plan.points.iter().any(|p| p.treatment == Some(*t)))
        .map(|(t, treatment)| {
            let ids: Vec<&String> = plan
                .points
                .iter()
                .filter(|p| p.treatment == Some(t))
                .map(|p| &p.id)
                .collect();
            let reps: Vec<&serde_json::Value> = per_point
                .iter()
                .filter(|(id, _)| ids.contains(&id))
                .flat_map(|(_, r)| r)
                .collect();
            let reason = reps
                .iter()
                .map(|r| r["error"].as_str())
                .collect::<Option<Vec<&str>>>()
                .filter(|errors| !errors.is_empty())
                .and_then(|errors| {
                    errors
                        .iter()
                        .all(|e| e.starts_with(INFEASIBLE))
                        .then(|| errors[0].trim_start_matches(INFEASIBLE).to_string())
                });
            yardstick_store::summary::TreatmentSummary {
                id: treatment.id.clone(),
                values: treatment.values.clone(),
                points: ids.iter().map(|s| s.to_string()).collect(),
                status: if reason.is_some() {
                    "infeasible"
                } else {
                    "measured"
                }
                .into(),
                reason,
                time_to_ready_s: reps
                    .iter()
                    .filter_map(|r| {
                        r[yardstick_spec::metrics::id::TIME_TO_READY_S]["value"].as_f64()
                    })
                    .collect(),
            }
        })
        .collect();
    Some(out)
}
