//! Start-up time: how long a process takes to become useful — the figure autoscaling and
//! failover depend on.
//!
//! The command is started in its own process group with its output piped (and copied to log
//! files). From the spawn, yardstick notes the first byte of output, the first accepted TCP
//! connection on the port (time to listen), and the moment it is ready: an HTTP probe answering
//! the expected status, a line of output containing a text, or the process exiting with status 0.
//! A ready process is then stopped as a supervisor would (SIGTERM to the group, SIGKILL after the
//! grace period) and the time that took is its shutdown time. The peak RSS is `wait4`'s: the
//! largest resident set of the process (or a waited-for descendant) over its life, which ends
//! right after it became ready.
//!
//! `cold` starts drop the page cache first (`/proc/sys/vm/drop_caches`, which needs root; when it
//! is not permitted the result says so and is not a cold start); `warm` starts come after a
//! discarded warm-up start of the same command.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::ExecError;
use crate::process::{Waiter, group_command, max_rss_bytes, reap};

/// When the started process counts as ready.
#[derive(Debug, Clone, PartialEq)]
pub enum Readiness {
    /// `GET url` answers with status `expect`.
    Http {
        /// An `http://host:port/path` URL.
        url: String,
        /// The expected status.
        expect: u16,
    },
    /// A line of stdout or stderr contains this text.
    Log(String),
    /// The process exits with status 0.
    Exit,
}

/// The page-cache state a start asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Cache {
    /// Drop the page cache first.
    Cold,
    /// Start once, discard it, then measure.
    Warm,
}

/// One start to measure.
#[derive(Debug, Clone)]
pub struct StartupSpec {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Readiness check.
    pub ready: Readiness,
    /// The port whose first accepted connection is the time to listen (default: `ready`'s).
    pub port: Option<u16>,
    /// Give up when not ready after this long.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL when stopping it.
    pub grace: Duration,
    /// Page-cache state.
    pub cache: Cache,
    /// Files that receive the measured start's stdout and stderr.
    pub stdout: Option<PathBuf>,
    /// See `stdout`.
    pub stderr: Option<PathBuf>,
}

/// What one start measured. Times are seconds from the spawn.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StartupOutcome {
    /// First byte on stdout or stderr.
    pub first_output_s: Option<f64>,
    /// First accepted TCP connection on the port (when there is one to watch).
    pub listen_s: Option<f64>,
    /// Ready (absent when it never was).
    pub ready_s: Option<f64>,
    /// From SIGTERM to the process's exit, when it was stopped after ready.
    pub shutdown_s: Option<f64>,
    /// It needed SIGKILL after the grace period.
    pub killed: bool,
    /// Peak resident set size over the process's life, bytes.
    pub peak_rss_bytes: u64,
    /// The cache state asked for.
    pub cache: Cache,
    /// For a cold start: whether the page cache was actually dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_dropped: Option<bool>,
    /// Why it is not a measurement, when it is not: exited before ready, timed out, cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Things to know before quoting the numbers.
    pub warnings: Vec<String>,
}

/// Measures one start (after the warm-up start or cache drop its `cache` asks for).
pub fn measure_startup(
    spec: &StartupSpec,
    cancel: Option<&CancellationToken>,
) -> Result<StartupOutcome, ExecError> {
    let mut warnings = Vec::new();
    let mut cache_dropped = None;
    match spec.cache {
        Cache::Warm => {
            let warm = StartupSpec {
                stdout: None,
                stderr: None,
                ..spec.clone()
            };
            let w = start_once(&warm, cancel)?;
            if let Some(e) = w.error {
                warnings.push(format!("the discarded warm-up start failed: {e}"));
            }
        }
        Cache::Cold => match yardstick_env::pagecache::drop_page_cache() {
            Ok(()) => cache_dropped = Some(true),
            Err(why) => {
                cache_dropped = Some(false);
                warnings.push(format!(
                    "cold start asked for, but the page cache could not be dropped ({why}): \
                     this start is not cold (run as root, or where /proc/sys/vm is writable)"
                ));
            }
        },
    }
    let mut out = start_once(spec, cancel)?;
    out.cache_dropped = cache_dropped;
    warnings.append(&mut out.warnings);
    out.warnings = warnings;
    Ok(out)
}

/// What the output readers saw.
#[derive(Default)]
struct Seen {
    first_output: Option<Instant>,
    log_match: Option<Instant>,
}

fn start_once(
    spec: &StartupSpec,
    cancel: Option<&CancellationToken>,
) -> Result<StartupOutcome, ExecError> {
    start(spec, cancel, false)?.finish(libc::SIGTERM, spec.grace)
}

/// A started process, until [`Started::finish`] stops and reaps it: a server under test runs
/// between the two. Dropped unfinished, its group is killed and reaped.
pub struct Started {
    pid: libc::pid_t,
    waiter: Option<Waiter>,
    readers: Vec<std::thread::JoinHandle<()>>,
    seen: Arc<Mutex<Seen>>,
    start: Instant,
    ready_kind: Readiness,
    cache: Cache,
    listen: Option<Instant>,
    ready: Option<Instant>,
    exited: bool,
    error: Option<String>,
    /// Registered as the server group ([`crate::process::kill_supervised_group`] kills it).
    server: bool,
}

/// Starts `spec`'s command and waits until it is ready, exits, times out or `cancel` fires.
/// `server`: the process is a server under test, which must not outlive yardstick (its leader
/// gets SIGKILL when yardstick dies, and a second Ctrl-C kills its group).
pub fn start(
    spec: &StartupSpec,
    cancel: Option<&CancellationToken>,
    server: bool,
) -> Result<Started, ExecError> {
    let (mut cmd, program) = group_command(&spec.argv, &spec.env, "give the command to start")?;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if server {
        crate::process::die_with_parent(&mut cmd);
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|source| ExecError::Spawn { program, source })?;
    let pid = child.id() as libc::pid_t;
    if server {
        crate::process::set_server_group(pid);
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let needle = match &spec.ready {
        Readiness::Log(t) => Some(t.clone()),
        _ => None,
    };
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .zip([&spec.stdout, &spec.stderr])
    .filter_map(|(stream, log)| Some((stream?, log.clone())))
    .map(|(stream, log)| {
        let seen = seen.clone();
        let needle = needle.clone();
        std::thread::spawn(move || read_output(stream, log, &seen, needle.as_deref()))
    })
    .collect();
    // We reap with wait4 ourselves; std's Child never waits on drop.
    drop(child);

    let mut started = Started {
        pid,
        waiter: Some(Waiter::new(pid)),
        readers,
        seen,
        start,
        ready_kind: spec.ready.clone(),
        cache: spec.cache,
        listen: None,
        ready: None,
        exited: false,
        error: None,
        server,
    };
    started.wait_ready(spec, cancel)?;
    Ok(started)
}

impl Started {
    fn wait_ready(
        &mut self,
        spec: &StartupSpec,
        cancel: Option<&CancellationToken>,
    ) -> Result<(), ExecError> {
        let waiter = self.waiter.as_ref().expect("not finished");
        let port = spec.port.or(match &spec.ready {
            Readiness::Http { url, .. } => port_of(url),
            _ => None,
        });
        let listen_addr: Option<SocketAddr> = port.map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
        let deadline = self.start + spec.timeout;
        let mut last_probe = None::<Instant>;
        let poll = Duration::from_millis(2);
        loop {
            if cancel.is_some_and(CancellationToken::is_cancelled) {
                self.error = Some("cancelled before it was ready".to_string());
                break;
            }
            if waiter.wait_exit(poll)? {
                self.exited = true;
                break;
            }
            let now = Instant::now();
            if self.listen.is_none()
                && let Some(addr) = listen_addr
                && TcpStream::connect_timeout(&addr, Duration::from_millis(50)).is_ok()
            {
                self.listen = Some(Instant::now());
            }
            match &spec.ready {
                Readiness::Http { url, expect } => {
                    // Probe at most every 10 ms, and only once something listens when we know
                    // where.
                    let due = last_probe.is_none_or(|t| now - t >= Duration::from_millis(10));
                    if due && (listen_addr.is_none() || self.listen.is_some()) {
                        last_probe = Some(now);
                        if http_status(url) == Some(*expect) {
                            self.ready = Some(Instant::now());
                            break;
                        }
                    }
                }
                Readiness::Log(_) => {
                    if let Some(t) = self.seen.lock().expect("not poisoned").log_match {
                        self.ready = Some(t);
                        break;
                    }
                }
                Readiness::Exit => {}
            }
            if Instant::now() >= deadline {
                self.error = Some(format!(
                    "not ready within {:.0} s (the timeout)",
                    spec.timeout.as_secs_f64()
                ));
                break;
            }
        }
        Ok(())
    }

    /// The process group's leader.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Seconds from the spawn to ready, when it became ready (and has not exited).
    pub fn ready_s(&self) -> Option<f64> {
        (self.error.is_none() && !self.exited)
            .then(|| {
                self.ready
                    .map(|t| t.duration_since(self.start).as_secs_f64())
            })
            .flatten()
    }

    /// Whether the process is still running.
    pub fn alive(&self) -> bool {
        !self.exited
            && self
                .waiter
                .as_ref()
                .is_some_and(|w| matches!(w.wait_exit(Duration::ZERO), Ok(false)))
    }

    /// Stops the process (unless it exited): `signal` to its group, SIGKILL after `grace`;
    /// reaps it, and says what its start measured.
    pub fn finish(
        mut self,
        signal: libc::c_int,
        grace: Duration,
    ) -> Result<StartupOutcome, ExecError> {
        let waiter = self.waiter.take().expect("finished once");
        let pid = self.pid;
        let mut shutdown_s = None;
        let mut killed = false;
        let mut ready = self.ready;
        let mut error = self.error.take();
        let exited = self.exited || matches!(waiter.wait_exit(Duration::ZERO), Ok(true));
        if !exited {
            let term = Instant::now();
            killed = !terminate(pid, &waiter, signal, grace)?;
            if ready.is_some() {
                shutdown_s = Some(term.elapsed().as_secs_f64());
            }
        }
        let (status, usage) = reap(pid)?;
        let exit_time = Instant::now();
        // Descendants may outlive the leader: the whole group goes.
        // SAFETY: plain kill(2) on the child's own process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        if self.server {
            crate::process::set_server_group(0);
        }
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        if exited && ready.is_none() && error.is_none() {
            let log_match = self.seen.lock().expect("not poisoned").log_match;
            match (&self.ready_kind, exit_code, log_match) {
                (Readiness::Exit, Some(0), _) => ready = Some(exit_time),
                // A log line written just before exiting still counts.
                (Readiness::Log(_), _, Some(t)) => ready = Some(t),
                (_, Some(c), _) => {
                    error = Some(format!(
                        "the command exited with status {c} before it was ready"
                    ))
                }
                (_, None, _) => {
                    error = Some(format!(
                        "the command was killed by signal {} before it was ready",
                        libc::WTERMSIG(status)
                    ))
                }
            }
        }
        let start = self.start;
        let s = |t: Option<Instant>| t.map(|t| t.duration_since(start).as_secs_f64());
        let seen = self.seen.lock().expect("not poisoned");
        let mut warnings = Vec::new();
        if killed {
            warnings.push(format!(
                "it did not exit within {:.0} s of the stop signal and was killed",
                grace.as_secs_f64()
            ));
        }
        Ok(StartupOutcome {
            first_output_s: s(seen.first_output),
            listen_s: s(self.listen),
            ready_s: if error.is_some() { None } else { s(ready) },
            shutdown_s,
            killed,
            peak_rss_bytes: max_rss_bytes(usage.ru_maxrss),
            cache: self.cache,
            cache_dropped: None,
            error,
            warnings,
        })
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.waiter.take().is_some() {
            // SAFETY: plain kill(2) on the child's own process group.
            unsafe { libc::kill(-self.pid, libc::SIGKILL) };
            let _ = reap(self.pid);
            if self.server {
                crate::process::set_server_group(0);
            }
        }
    }
}

/// `signal` to the group, then SIGKILL after `grace`; true when the leader exited on `signal`.
fn terminate(
    pid: libc::pid_t,
    waiter: &Waiter,
    signal: libc::c_int,
    grace: Duration,
) -> Result<bool, ExecError> {
    // SAFETY: plain kill(2) on the child's own process group.
    unsafe { libc::kill(-pid, signal) };
    let until = Instant::now() + grace;
    loop {
        let now = Instant::now();
        if now >= until {
            break;
        }
        if waiter.wait_exit(until - now)? {
            return Ok(true);
        }
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    Ok(false)
}

fn read_output(
    stream: Box<dyn Read + Send>,
    log: Option<PathBuf>,
    seen: &Mutex<Seen>,
    needle: Option<&str>,
) {
    let mut file = log.and_then(|p| std::fs::File::create(p).ok());
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let now = Instant::now();
        {
            let mut s = seen.lock().expect("not poisoned");
            s.first_output.get_or_insert(now);
            if s.log_match.is_none()
                && let Some(n) = needle
                && String::from_utf8_lossy(&line).contains(n)
            {
                s.log_match = Some(now);
            }
        }
        if let Some(f) = file.as_mut() {
            let _ = f.write_all(&line);
        }
    }
}

/// The port of an `http://host:port/...` URL (80 when none is written).
fn port_of(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    match authority.rsplit_once(':') {
        Some((_, p)) if !p.contains(']') => p.parse().ok(),
        _ => Some(80),
    }
}

/// `GET url` over plain HTTP/1.1 with a short timeout: the status code, or `None` when nothing
/// answered. Readiness probes only: no redirects, no body.
fn http_status(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let host_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.contains(']'))
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = host_port.to_socket_addrs().ok()?.next()?;
    let timeout = Duration::from_millis(500);
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: yardstick-startup-probe\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut status_line = String::new();
    BufReader::new(s).read_line(&mut status_line).ok()?;
    // "HTTP/1.1 200 OK"
    status_line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str], ready: Readiness) -> StartupSpec {
        StartupSpec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
            ready,
            port: None,
            timeout: Duration::from_secs(20),
            grace: Duration::from_secs(5),
            cache: Cache::Cold,
            stdout: None,
            stderr: None,
        }
    }

    #[test]
    fn urls_give_their_port() {
        assert_eq!(port_of("http://127.0.0.1:8000/health"), Some(8000));
        assert_eq!(port_of("http://localhost/health"), Some(80));
        assert_eq!(port_of("http://[::1]:9000/"), Some(9000));
        assert_eq!(port_of("https://x:1/"), None);
    }

    #[test]
    fn a_log_line_makes_it_ready_and_sigterm_stops_it() {
        let s = spec(
            &[
                "sh",
                "-c",
                "sleep 0.3; echo warming; sleep 0.2; echo 'server is up'; exec sleep 60",
            ],
            Readiness::Log("is up".into()),
        );
        let o = start_once(&s, None).unwrap();
        assert_eq!(o.error, None, "{o:?}");
        let first = o.first_output_s.unwrap();
        let ready = o.ready_s.unwrap();
        assert!((0.25..2.0).contains(&first), "{o:?}");
        assert!(ready >= first + 0.15, "{o:?}");
        assert!(o.shutdown_s.unwrap() < 2.0, "{o:?}");
        assert!(!o.killed);
        assert!(o.peak_rss_bytes > 0);
    }

    #[test]
    fn exit_zero_is_ready_and_a_failure_before_ready_is_an_error() {
        let ok = start_once(&spec(&["sh", "-c", "sleep 0.2"], Readiness::Exit), None).unwrap();
        assert!(ok.ready_s.unwrap() >= 0.15, "{ok:?}");
        assert_eq!(ok.shutdown_s, None);
        let bad = start_once(
            &spec(
                &["sh", "-c", "echo boom; exit 3"],
                Readiness::Log("never".into()),
            ),
            None,
        )
        .unwrap();
        assert_eq!(bad.ready_s, None);
        assert_eq!(
            bad.error.as_deref(),
            Some("the command exited with status 3 before it was ready")
        );
        assert!(bad.first_output_s.is_some());
    }

    #[test]
    fn a_process_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let mut s = spec(
            &[
                "sh",
                "-c",
                "trap '' TERM; echo ready; while true; do sleep 0.05; done",
            ],
            Readiness::Log("ready".into()),
        );
        s.grace = Duration::from_millis(300);
        let o = start_once(&s, None).unwrap();
        assert!(o.killed, "{o:?}");
        assert!(o.shutdown_s.unwrap() >= 0.25, "{o:?}");
        assert!(o.warnings[0].contains("was killed"), "{o:?}");
    }

    #[test]
    fn never_ready_times_out() {
        let mut s = spec(&["sleep", "30"], Readiness::Log("never".into()));
        s.timeout = Duration::from_millis(300);
        let o = start_once(&s, None).unwrap();
        assert_eq!(o.ready_s, None);
        assert!(o.error.unwrap().contains("not ready within"));
    }
}
