//! The ground-truth log: one JSON line per request with server-side timestamps.
//!
//! Lines are handed to a dedicated writer thread so the serving path never blocks on the disk;
//! the writer flushes whenever its queue runs dry, so a killed simulator loses at most the lines
//! of the last instant.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use serde::Serialize;

/// What happened to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Served completely.
    Ok,
    /// Answered with an injected HTTP error.
    Error,
    /// Held without an answer (injected timeout).
    Timeout,
    /// The stream was cut on purpose (injected disconnect).
    Disconnect,
    /// The client went away before the response was complete.
    Cancelled,
    /// The request was malformed (HTTP 4xx).
    BadRequest,
    /// Turned away: the waiting queue was full (`max_waiting`).
    Refused,
}

/// One line of the log. Timestamps are unix-epoch nanoseconds.
#[derive(Debug, Clone, Serialize)]
pub struct LogRecord {
    /// The client's `X-Request-Id`, or `sim-<seq>`.
    pub request_id: String,
    /// The client's W3C `traceparent` header, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Arrival order, from 0.
    pub seq: u64,
    /// `chat`, `completions` or `embeddings`.
    pub api: &'static str,
    /// Whether the response was streamed (SSE).
    pub stream: bool,
    /// What happened.
    pub outcome: Outcome,
    /// HTTP status sent (0 when none was).
    pub status: u16,
    /// Prompt tokens by the simulator's count.
    pub prompt_tokens: u64,
    /// Prompt tokens found in the prefix cache (no prefill charged for them).
    pub cached_tokens: u64,
    /// Output tokens written.
    pub output_tokens: u64,
    /// When the request had reached the server: the kernel's receive timestamp of its last
    /// bytes where the platform gives one, else when it had been read. Latencies count from
    /// here.
    pub received_ns: u64,
    /// When the simulator had read and started handling the request (after `received_ns`
    /// by however long the process took to get to it).
    pub handled_ns: u64,
    /// When a running slot was granted (after queueing under `max_running`).
    pub admitted_ns: u64,
    /// When the first content token was written to the connection.
    pub first_token_ns: Option<u64>,
    /// When the last content token was written to the connection.
    pub last_token_ns: Option<u64>,
    /// `first_token_ns - received_ns` in milliseconds.
    pub ttft_ms: Option<f64>,
    /// `last_token_ns - received_ns` in milliseconds.
    pub e2e_ms: Option<f64>,
    /// A structured answer's kind (`json` or `tool-call`); absent for text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<&'static str>,
    /// The structured answer was broken on purpose (`--invalid-rate`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub broken: bool,
    /// The answer oracle's verdict on a prompt of its table: `right` or `wrong`; absent for
    /// other prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<&'static str>,
}

/// The sending half of the log; cheap to clone.
#[derive(Debug, Clone)]
pub struct LogSink(Option<mpsc::Sender<String>>);

impl LogSink {
    /// A sink that drops everything.
    pub fn disabled() -> Self {
        LogSink(None)
    }

    /// Queues one record.
    pub fn write(&self, rec: &LogRecord) {
        if let Some(tx) = &self.0
            && let Ok(mut line) = serde_json::to_string(rec)
        {
            line.push('\n');
            let _ = tx.send(line);
        }
    }
}

/// The writer thread; dropping every [`LogSink`] ends it after a final flush.
#[derive(Debug)]
pub struct LogWriter {
    thread: Option<JoinHandle<()>>,
}

impl LogWriter {
    /// Creates (truncates) `path` and starts the writer thread.
    pub fn create(path: &Path) -> std::io::Result<(LogSink, LogWriter)> {
        let file = File::create(path)?;
        let (tx, rx) = mpsc::channel::<String>();
        let thread = std::thread::Builder::new()
            .name("sim-log".into())
            .spawn(move || {
                let mut out = BufWriter::with_capacity(1 << 16, file);
                while let Ok(line) = rx.recv() {
                    let _ = out.write_all(line.as_bytes());
                    while let Ok(line) = rx.try_recv() {
                        let _ = out.write_all(line.as_bytes());
                    }
                    let _ = out.flush();
                }
                let _ = out.flush();
            })?;
        Ok((
            LogSink(Some(tx)),
            LogWriter {
                thread: Some(thread),
            },
        ))
    }

    /// Waits for the writer to finish (after every sink is dropped).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Lets the writer run on its own; it ends after the last sink is dropped.
    pub fn detach(mut self) {
        self.thread.take();
    }
}
