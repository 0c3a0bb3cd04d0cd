//! Connections: the one accept loop of plain HTTP and HTTPS, with a cap on open connections and
//! a bound on every wait a client can impose ([`HttpLimits`]).
//!
//! Each connection is in one of three phases, tracked from its bytes and its requests:
//!
//! * *head*: from the accept (or the first byte after an idle spell) until a request's head has
//!   been read. It must end within [`HttpLimits::header_timeout`]: a silent connection, or one
//!   that sends a header line a second, is closed.
//! * *busy*: a request is being answered. Its body, while the handler reads it, must keep
//!   coming ([`HttpLimits::body_timeout`] without a byte, or below
//!   [`HttpLimits::body_min_rate`] on average, ends it with a 408 and the connection); a
//!   response the client does not read for [`HttpLimits::idle_timeout`] ends the connection.
//! * *idle*: a kept-alive connection between requests, closed after
//!   [`HttpLimits::idle_timeout`].
//!
//! hyper's own `header_read_timeout` stays on as a backstop (the longer of the two waits).
//! When shutdown is asked for, the listener closes, connections finish the request they are
//! answering and close, and whatever is left after [`HttpLimits::shutdown_grace`] is dropped.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;

use crate::ServerError;

/// Bounds on what one client (or many) can hold of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// How long a request's head (request line and headers) may take to arrive, from the
    /// connection's accept or from its first byte after an idle spell; the TLS handshake gets
    /// as long. `--header-timeout`, 10 s.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request, and how long a response
    /// may wait for the client to read it. `--idle-timeout`, 60 s.
    pub idle_timeout: Duration,
    /// How long a request body may go without a byte while the server waits for it; also the
    /// time after which [`HttpLimits::body_min_rate`] applies. `--body-timeout`, 30 s.
    pub body_timeout: Duration,
    /// The slowest average rate a request body may arrive at, in bytes per second of waiting,
    /// once it has been waited for longer than [`HttpLimits::body_timeout`]; 0: no minimum.
    /// `--body-min-rate`, 1 KiB/s.
    pub body_min_rate: u64,
    /// How many connections may be open at once; the next ones wait in the kernel's accept
    /// queue until one closes. `--max-connections`, 1024.
    pub max_connections: usize,
    /// How long requests in flight may take to finish once shutdown is asked for.
    /// `--shutdown-grace`, 30 s.
    pub shutdown_grace: Duration,
}

impl Default for HttpLimits {
    fn default() -> HttpLimits {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            body_min_rate: 1024,
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl HttpLimits {
    /// Refuses limits that would make the server unusable (a zero timeout, no connection).
    pub fn check(&self) -> Result<(), ServerError> {
        for (flag, d) in [
            ("--header-timeout", self.header_timeout),
            ("--idle-timeout", self.idle_timeout),
            ("--body-timeout", self.body_timeout),
        ] {
            if d.is_zero() {
                return Err(ServerError::config(
                    format!("{flag} must be longer than zero"),
                    Some("write e.g. 500ms, 10s, 2m"),
                ));
            }
        }
        if self.max_connections == 0 {
            return Err(ServerError::config(
                "--max-connections must be at least 1",
                Some("the default is 1024"),
            ));
        }
        Ok(())
    }
}

/// Set on a request whose body came too slowly ([`HttpLimits::body_timeout`],
/// [`HttpLimits::body_min_rate`]): the access layer answers 408 and closes the connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyTimedOut(pub(crate) Arc<AtomicBool>);

impl BodyTimedOut {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The request body arrived too slowly.
#[derive(Debug, thiserror::Error)]
#[error("the request body arrived too slowly ({0})")]
pub struct BodyTooSlow(String);

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request head since then.
    Head(Instant),
    /// Answering this many requests.
    Busy(usize),
    /// Between requests since then.
    Idle(Instant),
}

/// What the connection's task watches: its phase, and since when a write waits on the client.
#[derive(Debug)]
struct Watch {
    phase: Mutex<Phase>,
    write_blocked: Mutex<Option<Instant>>,
    wake: tokio::sync::Notify,
}

impl Watch {
    fn new() -> Watch {
        Watch {
            phase: Mutex::new(Phase::Head(Instant::now())),
            write_blocked: Mutex::new(None),
            wake: tokio::sync::Notify::new(),
        }
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bytes_read(&self) {
        let mut p = self.phase();
        if let Phase::Idle(_) = *p {
            *p = Phase::Head(Instant::now());
            drop(p);
            self.wake.notify_one();
        }
    }

    fn request_started(&self) {
        let mut p = self.phase();
        *p = match *p {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        };
    }

    fn request_ended(&self) {
        let mut p = self.phase();
        *p = match *p {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        };
        drop(p);
        self.wake.notify_one();
    }

    fn write_pending(&self, pending: bool) {
        let mut w = self.write_blocked.lock().unwrap_or_else(|e| e.into_inner());
        match (pending, w.is_some()) {
            (true, false) => {
                *w = Some(Instant::now());
                drop(w);
                self.wake.notify_one();
            }
            (false, true) => *w = None,
            _ => {}
        }
    }

    /// When the connection is to be closed unless something happens first.
    fn deadline(&self, limits: &HttpLimits) -> Option<Instant> {
        let phase = match *self.phase() {
            Phase::Head(since) => Some(since + limits.header_timeout),
            Phase::Idle(since) => Some(since + limits.idle_timeout),
            Phase::Busy(_) => None,
        };
        let write = self
            .write_blocked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|since| since + limits.idle_timeout);
        match (phase, write) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The connection's stream, reporting its reads and blocked writes to the [`Watch`].
struct Watched<T> {
    inner: T,
    watch: Arc<Watch>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.bytes_read();
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch.write_pending(polled.is_pending());
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch.write_pending(polled.is_pending());
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch.write_pending(polled.is_pending());
        polled
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request in flight: the connection is busy until its response body is done (or dropped).
struct InFlight(Arc<Watch>);

impl InFlight {
    fn new(watch: Arc<Watch>) -> InFlight {
        watch.request_started();
        InFlight(watch)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// A response body that keeps its request in flight until it is done.
struct Tracked {
    inner: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A request body that must keep coming: at most `body_timeout` without a byte, and (after
/// `body_timeout` of waiting) at least `body_min_rate` bytes per second of waiting on average.
/// Only the time spent waiting on the client counts, not the time the handler takes between
/// reads.
struct TimedBody {
    inner: Incoming,
    limits: Arc<HttpLimits>,
    received: u64,
    /// Time spent waiting on the client, before the current wait.
    waited: Duration,
    /// Since when the current wait runs.
    waiting_since: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
    timed_out: BodyTimedOut,
}

impl TimedBody {
    /// How long the client may be waited on in all, for what it has sent so far.
    fn allowed(&self) -> Duration {
        let by_rate = if self.limits.body_min_rate == 0 {
            Duration::MAX
        } else {
            Duration::from_secs_f64(self.received as f64 / self.limits.body_min_rate as f64)
        };
        by_rate.max(self.limits.body_timeout)
    }

    fn fail(&mut self, why: String) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        self.timed_out.0.store(true, Ordering::Relaxed);
        self.timer = None;
        Poll::Ready(Some(Err(Box::new(BodyTooSlow(why)))))
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        let this = &mut *self;
        if this.timed_out.is_set() {
            return Poll::Ready(None);
        }
        let now = Instant::now();
        let since = *this.waiting_since.get_or_insert(now);
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.waited += now.saturating_duration_since(since);
                this.waiting_since = None;
                if let Some(Ok(f)) = &frame
                    && let Some(data) = f.data_ref()
                {
                    this.received += data.len() as u64;
                }
                if this.waited > this.allowed() {
                    let why = format!(
                        "{} bytes in {:.1} s, below {} bytes/s",
                        this.received,
                        this.waited.as_secs_f64(),
                        this.limits.body_min_rate
                    );
                    return this.fail(why);
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let left = this.allowed().saturating_sub(this.waited);
                let stall = this.limits.body_timeout;
                let deadline = since + left.min(stall);
                match &mut this.timer {
                    Some(t) if t.deadline() == deadline => {}
                    Some(t) => t.as_mut().reset(deadline),
                    None => this.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
                }
                if let Some(t) = &mut this.timer {
                    ready!(t.as_mut().poll(cx));
                }
                let why = if left <= stall {
                    format!(
                        "{} bytes in {:.1} s, below {} bytes/s",
                        this.received,
                        (this.waited + now.saturating_duration_since(since)).as_secs_f64(),
                        this.limits.body_min_rate
                    )
                } else {
                    format!("nothing for {} s", stall.as_secs_f64())
                };
                this.fail(why)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.timed_out.is_set() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The application as hyper calls it on one connection.
#[derive(Clone)]
struct Service {
    app: axum::Router,
    /// The client's address, given to handlers as axum's `ConnectInfo` (the per-client query
    /// limit counts by it).
    peer: std::net::SocketAddr,
    watch: Arc<Watch>,
    limits: Arc<HttpLimits>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Service {
    type Response = hyper::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        use tower_service::Service as _;
        let in_flight = InFlight::new(self.watch.clone());
        let timed_out = BodyTimedOut::default();
        let (mut parts, body) = req.into_parts();
        parts.extensions.insert(timed_out.clone());
        parts
            .extensions
            .insert(axum::extract::ConnectInfo(self.peer));
        let body = TimedBody {
            inner: body,
            limits: self.limits.clone(),
            received: 0,
            waited: Duration::ZERO,
            waiting_since: None,
            timer: None,
            timed_out,
        };
        let req = hyper::Request::from_parts(parts, Body::new(body));
        let mut app = self.app.clone();
        Box::pin(async move {
            let response = app.call(req).await?;
            Ok(response.map(|inner| {
                Body::new(Tracked {
                    inner,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// Serves one connection until it ends, its client overstays a limit, or shutdown drains it.
async fn connection<T>(
    io: T,
    peer: std::net::SocketAddr,
    app: axum::Router,
    limits: Arc<HttpLimits>,
    graceful: hyper_util::server::graceful::Watcher,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let watch = Arc::new(Watch::new());
    let io = TokioIo::new(Watched {
        inner: io,
        watch: watch.clone(),
    });
    let service = Service {
        app,
        peer,
        watch: watch.clone(),
        limits: limits.clone(),
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout.max(limits.idle_timeout))
        .serve_connection(io, service);
    let conn = graceful.watch(conn);
    tokio::pin!(conn);
    loop {
        let deadline = watch.deadline(&limits);
        tokio::select! {
            _ = conn.as_mut() => return,
            () = watch.wake.notified() => {}
            () = sleep_until(deadline) => {
                // The phase may have moved on since the deadline was taken.
                if watch.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    return;
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Accepts connections (at most `limits.max_connections` open at once), plain or over TLS, and
/// serves `app` on each until `shutdown` completes; then drains for `limits.shutdown_grace`.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    tls: Option<TlsAcceptor>,
    app: axum::Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let limits = Arc::new(limits);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A failed accept (e.g. too many open files) must not end the server.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let app = app.clone();
        let limits = limits.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match tls {
                None => connection(tcp, peer, app, limits, watcher).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(limits.header_timeout, acceptor.accept(tcp)).await;
                    if let Ok(Ok(stream)) = handshake {
                        connection(stream, peer, app, limits, watcher).await;
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limits_are_refused() {
        assert!(HttpLimits::default().check().is_ok());
        let zero = HttpLimits {
            header_timeout: Duration::ZERO,
            ..HttpLimits::default()
        };
        assert!(
            zero.check()
                .unwrap_err()
                .to_string()
                .contains("--header-timeout")
        );
        let none = HttpLimits {
            max_connections: 0,
            ..HttpLimits::default()
        };
        assert!(none.check().is_err());
    }

    #[tokio::test]
    async fn phases_set_the_deadline() {
        let limits = HttpLimits::default();
        let w = Watch::new();
        let start = Instant::now();
        let head = w.deadline(&limits).unwrap();
        assert!(head <= start + limits.header_timeout + Duration::from_secs(1));
        w.request_started();
        assert_eq!(w.deadline(&limits), None);
        w.request_started();
        w.request_ended();
        assert_eq!(w.deadline(&limits), None, "one request still in flight");
        w.request_ended();
        let idle = w.deadline(&limits).unwrap();
        assert!(idle >= start + limits.idle_timeout);
        w.bytes_read();
        assert!(w.deadline(&limits).unwrap() < idle, "a new head is shorter");
        w.request_started();
        w.write_pending(true);
        assert!(w.deadline(&limits).is_some(), "a blocked write is bounded");
        w.write_pending(false);
        assert_eq!(w.deadline(&limits), None);
    }
}
