//! One child process, measured and contained.
//!
//! The child runs in its own process group (so a timeout or Ctrl-C reaches its whole tree, and
//! the terminal's Ctrl-C does not reach it behind our back). It is reaped with `wait4`, whose
//! `rusage` gives user and system CPU time and the peak resident set size of the child and of the
//! descendants it waited for. Waiting uses a pidfd (Linux ≥ 5.3) so the parent wakes the moment
//! the child exits and still honours a deadline without a watchdog thread; elsewhere it polls.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::ExecError;

/// The process group of the child being supervised (0 when none), so a second Ctrl-C can kill it
/// before the program exits (see [`kill_supervised_group`]).
static CURRENT_GROUP: AtomicI32 = AtomicI32::new(0);

/// Kills (SIGKILL) the process group of the child being supervised, if any: what a program does
/// on a second Ctrl-C before it exits, so no child outlives it. Cancellation itself is the
/// [`CancellationToken`] passed to [`run_process`]: the group then gets SIGTERM, and SIGKILL after
/// the grace period.
pub fn kill_supervised_group() {
    for group in [
        CURRENT_GROUP.load(Ordering::SeqCst),
        SERVER_GROUP.load(Ordering::SeqCst),
    ] {
        if group > 0 {
            // SAFETY: plain kill(2) on the supervised child's own process group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
    }
}

/// The process group of the server under test while it runs (0 when none).
static SERVER_GROUP: AtomicI32 = AtomicI32::new(0);

pub(crate) fn set_server_group(pid: libc::pid_t) {
    SERVER_GROUP.store(pid, Ordering::SeqCst);
}

/// The child gets SIGKILL when this process dies (Linux), so a killed run leaves no server
/// behind.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

/// What to run and how to contain it.
#[derive(Debug, Clone, Default)]
pub struct ProcessSpec {
    /// Program and arguments (no shell; use `sh -c` for shell syntax).
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory (default: ours).
    pub cwd: Option<PathBuf>,
    /// File that receives stdout (`None`: discarded).
    pub stdout: Option<PathBuf>,
    /// File that receives stderr (`None`: discarded).
    pub stderr: Option<PathBuf>,
    /// Kill the group after this long.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
}

/// How one child ended and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessOutcome {
    /// Wall-clock time from just before spawning to reaping.
    pub wall_s: f64,
    /// User CPU time of the child and the descendants it waited for.
    pub user_s: f64,
    /// System CPU time of the child and the descendants it waited for.
    pub sys_s: f64,
    /// Peak resident set size of the child (or its largest waited-for descendant).
    pub max_rss_bytes: u64,
    /// Exit code when the child exited normally.
    pub exit_code: Option<i32>,
    /// Signal number when the child was killed by a signal.
    pub signal: Option<i32>,
    /// Killed because it ran past the timeout.
    pub timed_out: bool,
    /// Killed because the benchmark was cancelled (Ctrl-C).
    pub cancelled: bool,
}

impl ProcessOutcome {
    /// Exited normally with status 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

fn open_log(path: &Option<PathBuf>) -> Result<Stdio, ExecError> {
    match path {
        None => Ok(Stdio::null()),
        Some(p) => File::create(p)
            .map(Stdio::from)
            .map_err(|source| ExecError::Io {
                path: p.clone(),
                source,
            }),
    }
}

/// `argv` as a command in a process group of its own (so signals reach its whole tree and the
/// terminal's Ctrl-C does not), with `env` added and no stdin, and its program's name; `hint`
/// says what to give when `argv` is empty.
pub(crate) fn group_command(
    argv: &[String],
    env: &[(String, String)],
    hint: &str,
) -> Result<(Command, String), ExecError> {
    use std::os::unix::process::CommandExt;
    let Some((program, args)) = argv.split_first() else {
        return Err(ExecError::invalid("empty command", hint));
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .process_group(0);
    Ok((cmd, program.clone()))
}

/// Runs one child to completion (or until the timeout or cancellation), and measures it.
pub fn run_process(
    spec: &ProcessSpec,
    cancel: Option<&CancellationToken>,
) -> Result<ProcessOutcome, ExecError> {
    let (mut cmd, program) = group_command(&spec.argv, &spec.env, "give a program after `--`")?;
    cmd.stdout(open_log(&spec.stdout)?)
        .stderr(open_log(&spec.stderr)?);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|source| ExecError::Spawn { program, source })?;
    let pid = child.id() as libc::pid_t;
    // We reap with wait4 ourselves; std's Child never waits on drop.
    drop(child);
    CURRENT_GROUP.store(pid, Ordering::SeqCst);
    let result = supervise(pid, start, spec, cancel);
    CURRENT_GROUP.store(0, Ordering::SeqCst);
    result
}

/// Why the supervisor stopped waiting politely.
#[derive(Clone, Copy, PartialEq)]
enum Stop {
    Exited,
    TimedOut,
    Cancelled,
}

fn supervise(
    pid: libc::pid_t,
    start: Instant,
    spec: &ProcessSpec,
    cancel: Option<&CancellationToken>,
) -> Result<ProcessOutcome, ExecError> {
    let waiter = Waiter::new(pid);
    let deadline = spec.timeout.map(|t| start + t);
    let stop = loop {
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            break Stop::Cancelled;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break Stop::TimedOut;
        }
        // Wake at least every 50 ms to notice cancellation requested from another thread.
        let mut slice = deadline.map_or(Duration::MAX, |d| d - now);
        if cancel.is_some() {
            slice = slice.min(Duration::from_millis(50));
        }
        if waiter.wait_exit(slice)? {
            break Stop::Exited;
        }
    };
    if stop != Stop::Exited {
        terminate_group(pid, &waiter, spec.kill_grace)?;
    }
    let (status, usage) = reap(pid)?;
    let wall_s = start.elapsed().as_secs_f64();
    if stop != Stop::Exited {
        // Descendants may outlive the leader and ignore SIGTERM: give them the grace period too.
        let until = Instant::now() + spec.kill_grace;
        while group_alive(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: plain kill(2) on the child's own process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let signal = libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
    Ok(ProcessOutcome {
        wall_s,
        user_s: timeval_s(usage.ru_utime),
        sys_s: timeval_s(usage.ru_stime),
        max_rss_bytes: max_rss_bytes(usage.ru_maxrss),
        exit_code,
        signal,
        timed_out: stop == Stop::TimedOut,
        cancelled: stop == Stop::Cancelled,
    })
}

/// SIGTERM to the group, up to `grace` for the leader to exit, then SIGKILL to the group.
fn terminate_group(pid: libc::pid_t, waiter: &Waiter, grace: Duration) -> Result<(), ExecError> {
    // SAFETY: plain kill(2) on the child's own process group.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let until = Instant::now() + grace;
    loop {
        let now = Instant::now();
        if now >= until {
            break;
        }
        if waiter.wait_exit(until - now)? {
            return Ok(());
        }
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    Ok(())
}

fn group_alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-pid, 0) == 0 }
}

pub(crate) fn reap(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage), ExecError> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(ExecError::Sys {
                call: "wait4",
                source: err,
            });
        }
    }
}

fn timeval_s(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

pub(crate) fn max_rss_bytes(ru_maxrss: libc::c_long) -> u64 {
    // Linux reports kilobytes, macOS bytes.
    let v = ru_maxrss.max(0) as u64;
    if cfg!(target_os = "macos") {
        v
    } else {
        v * 1024
    }
}

/// Waits for a child to become reapable without reaping it.
pub(crate) struct Waiter {
    pid: libc::pid_t,
    /// A pidfd when the kernel has them: readable once the child has exited.
    pidfd: Option<libc::c_int>,
}

impl Waiter {
    pub(crate) fn new(pid: libc::pid_t) -> Self {
        #[cfg(target_os = "linux")]
        let pidfd = {
            // SAFETY: pidfd_open(pid, 0) has no memory arguments.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            (fd >= 0).then_some(fd as libc::c_int)
        };
        #[cfg(not(target_os = "linux"))]
        let pidfd = None;
        Self { pid, pidfd }
    }

    /// True once the child has exited; false when `timeout` passed first (or a signal arrived).
    pub(crate) fn wait_exit(&self, timeout: Duration) -> Result<bool, ExecError> {
        match self.pidfd {
            Some(fd) => {
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
                // Round a sub-millisecond remainder up so a deadline is never spun on.
                let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
                // SAFETY: one valid pollfd.
                let r = unsafe { libc::poll(&mut pfd, 1, ms) };
                if r < 0 {
                    let err = io::Error::last_os_error();
                    if err.kind() == io::ErrorKind::Interrupted {
                        return Ok(false);
                    }
                    return Err(ExecError::Sys {
                        call: "poll",
                        source: err,
                    });
                }
                Ok(r > 0)
            }
            None => {
                let until = Instant::now() + timeout.min(Duration::from_secs(3600));
                let mut nap = Duration::from_micros(50);
                loop {
                    if self.exited()? {
                        return Ok(true);
                    }
                    let now = Instant::now();
                    if now >= until {
                        return Ok(false);
                    }
                    std::thread::sleep(nap.min(until - now));
                    nap = (nap * 2).min(Duration::from_millis(5));
                }
            }
        }
    }

    /// Whether the child is a zombie, without reaping it (waitid with WNOWAIT).
    fn exited(&self) -> Result<bool, ExecError> {
        // SAFETY: siginfo_t is plain old data; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointer; WNOWAIT leaves the child reapable.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r < 0 {
            return Err(ExecError::Sys {
                call: "waitid",
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: si_pid is valid to read after a successful waitid.
        Ok(unsafe { info.si_pid() } != 0)
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(fd) = self.pidfd {
            // SAFETY: we own the descriptor.
            unsafe { libc::close(fd) };
        }
    }
}

/// Runs a shell snippet (`sh -c`) to completion, for `--prepare` and `--cleanup`; its output
/// goes to `log` when given.
pub fn run_shell(
    snippet: &str,
    env: &[(String, String)],
    log: Option<&Path>,
    timeout: Option<Duration>,
    cancel: Option<&CancellationToken>,
) -> Result<ProcessOutcome, ExecError> {
    let spec = ProcessSpec {
        argv: vec!["sh".into(), "-c".into(), snippet.into()],
        env: env.to_vec(),
        stdout: log.map(Path::to_path_buf),
        stderr: log.map(|p| p.with_extension("stderr")),
        timeout,
        kill_grace: Duration::from_secs(2),
        ..ProcessSpec::default()
    };
    run_process(&spec, cancel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_error::UserFacing;

    fn spec(argv: &[&str]) -> ProcessSpec {
        ProcessSpec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            kill_grace: Duration::from_millis(300),
            ..ProcessSpec::default()
        }
    }

    #[test]
    fn exit_codes_and_signals() {
        let ok = run_process(&spec(&["true"]), None).unwrap();
        assert!(ok.success());
        let fail = run_process(&spec(&["sh", "-c", "exit 3"]), None).unwrap();
        assert_eq!((fail.exit_code, fail.signal), (Some(3), None));
        let killed = run_process(&spec(&["sh", "-c", "kill -9 $$"]), None).unwrap();
        assert_eq!((killed.exit_code, killed.signal), (None, Some(9)));
    }

    #[test]
    fn measures_cpu_time_and_memory() {
        // A busy loop in the shell burns user time; 16 MiB of dd buffer raises the peak RSS.
        let o = run_process(
            &spec(&["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; dd if=/dev/zero of=/dev/null bs=16M count=1 2>/dev/null"]),
            None,
        )
        .unwrap();
        assert!(o.success());
        assert!(o.user_s + o.sys_s > 0.0, "{o:?}");
        assert!(o.max_rss_bytes >= 16 << 20, "{o:?}");
        assert!(o.wall_s > 0.0);
    }

    #[test]
    fn timeout_kills_the_whole_group_even_when_sigterm_is_ignored() {
        let mut s = spec(&["sh", "-c", "trap '' TERM; sleep 30 & sleep 30; wait"]);
        // Long enough for sh to reach its `trap` on a loaded machine before the SIGTERM.
        s.timeout = Some(Duration::from_secs(1));
        let t0 = Instant::now();
        let o = run_process(&s, None).unwrap();
        assert!(o.timed_out && !o.success());
        assert_eq!(o.signal, Some(libc::SIGKILL));
        // Not before the 1 s timeout, and not the 30 s sleep either.
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(10),
            "{took:?}"
        );
    }

    #[test]
    fn cancellation_stops_the_child() {
        let token = CancellationToken::new();
        let t = token.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            t.cancel();
        });
        let o = run_process(&spec(&["sleep", "30"]), Some(&token)).unwrap();
        h.join().unwrap();
        assert!(o.cancelled && !o.success());
        assert_eq!(o.signal, Some(libc::SIGTERM));
    }

    #[test]
    fn missing_program_is_a_spawn_error() {
        let e = run_process(&spec(&["/nonexistent/yardstick-nope"]), None).unwrap_err();
        assert!(matches!(e, ExecError::Spawn { .. }));
        assert!(e.is_invalid_input());
    }
}
