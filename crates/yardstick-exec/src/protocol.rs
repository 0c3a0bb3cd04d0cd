//! The metric protocol's transport: how a workload's step records reach yardstick
//! (`docs/metric-protocol.md`).
//!
//! yardstick sets `YARDSTICK_METRICS` to a file path (or, with `--metrics-fifo`, a named pipe
//! read as the workload writes, [`LiveMetrics`]); the workload appends one JSON object per line.
//! The records and the parse of their text are `yardstick_analysis::protocol`
//! ([`parse_metrics`]), which the training analysis reads.

use std::path::Path;

use yardstick_analysis::protocol::{ParsedMetrics, parse_metrics};

use crate::ExecError;

/// Environment variable holding the path the workload appends JSON lines to.
pub const ENV_METRICS: &str = "YARDSTICK_METRICS";
/// Environment variable holding the run id.
pub const ENV_RUN_ID: &str = "YARDSTICK_RUN_ID";
/// Environment variable holding the 0-based replicate (run) index.
pub const ENV_REPLICATE: &str = "YARDSTICK_REPLICATE";

/// Reads and parses a metrics file; a missing file reads as empty (the workload never opened it).
pub fn read_metrics(path: &Path) -> Result<ParsedMetrics, ExecError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(parse_metrics(&String::from_utf8_lossy(&bytes))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ParsedMetrics::default()),
        Err(source) => Err(ExecError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_metrics_from_a_fifo_keep_every_line_and_a_copy() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("m.fifo");
        let copy = dir.path().join("m.jsonl");
        let live = LiveMetrics::start(&fifo, &copy).unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        // A writer that opens the pipe per line (like `echo >> $YARDSTICK_METRICS`) and one
        // that keeps it open; a malformed line in between.
        for i in 0..3 {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&fifo)
                .unwrap();
            writeln!(f, "{{\"step\":{i},\"step_time_s\":0.1}}").unwrap();
        }
        let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        writeln!(f, "not json").unwrap();
        writeln!(f, "{{\"step\":3,\"step_time_s\":0.1,\"loss\":1.5}}").unwrap();
        // The reader takes lines as they arrive, before anyone closes anything.
        while live.lines() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        drop(f);
        let parsed = live.finish().unwrap();
        assert_eq!(parsed.records.len(), 4);
        assert_eq!(parsed.malformed_count, 1);
        assert_eq!(parsed.malformed[0].line, 4);
        assert_eq!(parsed.records[3].loss, Some(1.5));
        assert!(!fifo.exists());
        assert_eq!(std::fs::read_to_string(&copy).unwrap().lines().count(), 5);
    }

    #[test]
    fn nothing_written_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read_metrics(&dir.path().join("never-written"))
                .unwrap()
                .is_empty()
        );
    }
}

/// Metric records read live from a FIFO (`bench exec --metrics-fifo`): yardstick creates a named
/// pipe at `$YARDSTICK_METRICS` and a reader thread takes every line the moment the workload
/// writes it, copying the bytes to a regular file for the record. Nothing waits on the disk,
/// the progress of a long run is visible while it runs ([`LiveMetrics::lines`]), and the steps a
/// workload finished before it hung or was killed are kept however it died.
///
/// Writes of up to `PIPE_BUF` (4096) bytes to a pipe are atomic, so ranks writing one line
/// each do not interleave. The reader also holds a write end open itself, so a workload that
/// opens and closes the pipe for every line (`echo ... > "$YARDSTICK_METRICS"`) never makes it
/// see end-of-file early.
#[derive(Debug)]
pub struct LiveMetrics {
    fifo: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    lines: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    thread: Option<std::thread::JoinHandle<std::io::Result<FifoBytes>>>,
}

/// Every byte read from the FIFO, and when each read arrived.
type FifoBytes = (Vec<u8>, crate::timeline::Arrivals);

impl LiveMetrics {
    /// Creates the FIFO at `fifo` (replacing a stale file) and starts reading it; every byte
    /// read is also appended to `copy`.
    pub fn start(fifo: &Path, copy: &Path) -> Result<Self, ExecError> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let io_err = |source: std::io::Error| ExecError::Io {
            path: fifo.to_path_buf(),
            source,
        };
        let _ = std::fs::remove_file(fifo);
        let c = CString::new(fifo.as_os_str().as_bytes())
            .map_err(|_| io_err(std::io::Error::other("path contains a NUL byte")))?;
        // SAFETY: `c` is a valid NUL-terminated path.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            return Err(io_err(std::io::Error::last_os_error()));
        }
        let open = |flags: i32| -> std::io::Result<std::fs::File> {
            // SAFETY: valid path; the descriptor is owned by the File from here on.
            let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            use std::os::fd::FromRawFd;
            Ok(unsafe { std::fs::File::from_raw_fd(fd) })
        };
        // Non-blocking read end first (opening it never waits), then our own write end.
        let reader = open(libc::O_RDONLY | libc::O_NONBLOCK).map_err(io_err)?;
        let keepalive = open(libc::O_WRONLY | libc::O_NONBLOCK).map_err(io_err)?;
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(copy)
            .map_err(|source| ExecError::Io {
                path: copy.to_path_buf(),
                source,
            })?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let lines = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (stop2, lines2) = (stop.clone(), lines.clone());
        let thread = std::thread::Builder::new()
            .name("yardstick-metrics-fifo".into())
            .spawn(move || {
                use std::io::{Read, Write};
                use std::os::fd::AsRawFd;
                use std::sync::atomic::Ordering;
                let _keepalive = keepalive;
                let mut reader = reader;
                let mut all = Vec::new();
                let mut arrivals =
                    crate::timeline::Arrivals::new("fifo", std::time::Duration::ZERO);
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let stopping = stop2.load(Ordering::Acquire);
                    match reader.read(&mut buf) {
                        Ok(0) => {}
                        Ok(n) => {
                            out.write_all(&buf[..n])?;
                            lines2.fetch_add(
                                buf[..n].iter().filter(|&&b| b == b'\n').count(),
                                Ordering::Relaxed,
                            );
                            all.extend_from_slice(&buf[..n]);
                            arrivals.record(all.len() as u64, std::time::Instant::now());
                            continue;
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    }
                    // Nothing to read right now: done if asked to stop (the pipe is drained),
                    // else wait for data.
                    if stopping {
                        break;
                    }
                    let mut pfd = libc::pollfd {
                        fd: reader.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut pfd, 1, 50) };
                }
                out.flush()?;
                Ok((all, arrivals))
            })
            .map_err(io_err)?;
        Ok(LiveMetrics {
            fifo: fifo.to_path_buf(),
            stop,
            lines,
            thread: Some(thread),
        })
    }

    /// Complete lines read so far.
    pub fn lines(&self) -> usize {
        self.lines.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Drains what is left in the pipe, stops the reader, removes the FIFO and parses every
    /// line read.
    pub fn finish(self) -> Result<ParsedMetrics, ExecError> {
        let (bytes, _) = self.finish_raw()?;
        Ok(parse_metrics(&String::from_utf8_lossy(&bytes)))
    }

    /// [`LiveMetrics::finish`] without the parse: every byte read, and when each read
    /// arrived (for the run's start-up and teardown, [`crate::timeline`]).
    pub fn finish_raw(mut self) -> Result<FifoBytes, ExecError> {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        let out = match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(Ok(b))) => b,
            Some(Ok(Err(source))) => {
                return Err(ExecError::Io {
                    path: self.fifo.clone(),
                    source,
                });
            }
            _ => Default::default(),
        };
        let _ = std::fs::remove_file(&self.fifo);
        Ok(out)
    }
}

impl Drop for LiveMetrics {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.fifo);
    }
}
