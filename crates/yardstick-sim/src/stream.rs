//! Response bodies; above all the token stream, an SSE body that writes each token at its
//! absolute deadline from inside `poll_frame` (no channel, no extra task per stream).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Sleep;

use crate::log::{LogRecord, Outcome};
use crate::metrics::Metrics;
use crate::openai::{Api, ChunkWriter};
use crate::{Shared, SimConfig};
use yardstick_timing::Rng;

/// The error a body yields to make hyper abort the connection (an injected disconnect).
#[derive(Debug, thiserror::Error)]
#[error("stream cut by fault injection")]
pub struct StreamCut;

/// Counts a sequence as running for as long as it lives.
pub(crate) struct Running<'a>(&'a Metrics);

impl<'a> Running<'a> {
    pub(crate) fn enter(m: &'a Metrics) -> Self {
        m.running.fetch_add(1, Ordering::Relaxed);
        Running(m)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The gap before output token `k` (k >= 1) under the current load.
pub(crate) fn gap(cfg: &SimConfig, m: &Metrics, rng: &mut Rng, _k: u64) -> Duration {
    let running = m.running.load(Ordering::Relaxed).max(1) as f64;
    let mut g = cfg.itl.as_secs_f64() * (1.0 + cfg.itl_slowdown * (running - 1.0));
    let j = cfg.itl_jitter.as_secs_f64();
    if j > 0.0 {
        g += (rng.unit() * 2.0 - 1.0) * j;
    }
    Duration::from_secs_f64(g.max(0.0))
}

/// Every response body the simulator sends.
pub enum SimBody {
    /// A complete body.
    Full(Option<Bytes>),
    /// A token stream.
    Stream(Box<TokenStream>),
    /// A body that fails at once (the connection is cut).
    Broken,
}

impl SimBody {
    pub(crate) fn full(b: Bytes) -> Self {
        SimBody::Full(Some(b))
    }
    pub(crate) fn stream(s: TokenStream) -> Self {
        SimBody::Stream(Box::new(s))
    }
    pub(crate) fn broken() -> Self {
        SimBody::Broken
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = StreamCut;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamCut>>> {
        match self.get_mut() {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Stream(s) => s.poll_next(cx),
            SimBody::Broken => Poll::Ready(Some(Err(StreamCut))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            SimBody::Full(b) => b.is_none(),
            SimBody::Stream(s) => s.done,
            SimBody::Broken => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

/// What a streamed completion sends.
pub(crate) struct Shape {
    /// Output tokens.
    pub n: u64,
    /// The first this-many are reasoning (`reasoning_content`).
    pub reasoning: u64,
    /// Finish reason on the last token.
    pub finish: &'static str,
    /// Send a usage chunk at the end.
    pub include_usage: bool,
    /// Token details of the usage chunk.
    pub details: crate::openai::UsageDetails,
    /// A structured answer, streamed piece by piece instead of words.
    pub structured: Option<Arc<crate::structured::Answer>>,
}

/// One streamed completion.
pub struct TokenStream {
    shared: Arc<Shared>,
    writer: ChunkWriter,
    n: u64,
    reasoning: u64,
    next: u64,
    role_pending: bool,
    finish: &'static str,
    include_usage: bool,
    details: crate::openai::UsageDetails,
    structured: Option<Arc<crate::structured::Answer>>,
    deadline: Instant,
    sleep: Pin<Box<Sleep>>,
    rng: Rng,
    cut_after: Option<u64>,
    _permit: Option<OwnedSemaphorePermit>,
    rec: LogRecord,
    done: bool,
    logged: bool,
}

impl TokenStream {
    /// Starts a stream whose first token is due at `first`; counts it as running.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        shared: Arc<Shared>,
        api: Api,
        id: &str,
        created: u64,
        shape: Shape,
        first: Instant,
        rng: Rng,
        cut_after: Option<u64>,
        permit: Option<OwnedSemaphorePermit>,
        rec: LogRecord,
    ) -> Self {
        shared.metrics.running.fetch_add(1, Ordering::Relaxed);
        let writer = ChunkWriter::new(api, id, created, &shared.cfg.model);
        TokenStream {
            writer,
            n: shape.n,
            reasoning: shape.reasoning,
            next: 0,
            role_pending: api == Api::Chat,
            finish: shape.finish,
            include_usage: shape.include_usage,
            details: shape.details,
            structured: shape.structured,
            deadline: first,
            sleep: Box::pin(tokio::time::sleep_until(first.into())),
            rng,
            cut_after,
            _permit: permit,
            rec,
            done: false,
            logged: false,
            shared,
        }
    }

    fn finish_log(&mut self, outcome: Outcome) {
        if self.logged {
            return;
        }
        self.logged = true;
        self.rec.outcome = outcome;
        self.rec.output_tokens = self.next;
        if let (Some(f), Some(l)) = (self.rec.first_token_ns, self.rec.last_token_ns) {
            self.rec.ttft_ms = Some((f - self.rec.received_ns) as f64 / 1e6);
            self.rec.e2e_ms = Some((l - self.rec.received_ns) as f64 / 1e6);
        }
        self.shared.metrics.finish(outcome);
        self.shared.log.write(&self.rec);
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, StreamCut>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.role_pending {
            self.role_pending = false;
            let mut buf = BytesMut::with_capacity(256);
            self.writer.role(&mut buf);
            return Poll::Ready(Some(Ok(Frame::data(buf.freeze()))));
        }
        ready!(self.sleep.as_mut().poll(cx));
        let now = Instant::now();
        if Some(self.next) == self.cut_after {
            self.done = true;
            self.finish_log(Outcome::Disconnect);
            return Poll::Ready(Some(Err(StreamCut)));
        }
        let k = self.next;
        let last = k + 1 == self.n;
        let mut buf = BytesMut::with_capacity(if last { 640 } else { 256 });
        match &self.structured {
            Some(a) => self
                .writer
                .piece(&mut buf, a, k as usize, last.then_some(self.finish)),
            None => self
                .writer
                .token(&mut buf, k, last.then_some(self.finish), k < self.reasoning),
        }
        let now_ns = self.shared.clock.ns(now);
        if k == 0 {
            self.rec.first_token_ns = Some(now_ns);
            self.shared
                .metrics
                .observe_ttft(now_ns.saturating_sub(self.rec.received_ns));
        }
        self.rec.last_token_ns = Some(now_ns);
        self.next += 1;
        self.shared
            .metrics
            .generation_tokens
            .fetch_add(1, Ordering::Relaxed);
        if last {
            if self.include_usage {
                self.writer
                    .usage(&mut buf, self.rec.prompt_tokens, self.n, &self.details);
            }
            ChunkWriter::done(&mut buf);
            self.done = true;
            self.finish_log(Outcome::Ok);
        } else {
            let shared = self.shared.clone();
            self.deadline += gap(&shared.cfg, &shared.metrics, &mut self.rng, self.next);
            let d = self.deadline;
            self.sleep.as_mut().reset(d.into());
        }
        Poll::Ready(Some(Ok(Frame::data(buf.freeze()))))
    }
}

impl Drop for TokenStream {
    fn drop(&mut self) {
        self.shared.metrics.running.fetch_sub(1, Ordering::Relaxed);
        // Dropped before the end: the client went away.
        self.finish_log(Outcome::Cancelled);
    }
}
