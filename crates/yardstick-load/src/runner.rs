//! Load models: closed-loop concurrency and open-loop arrivals by absolute deadlines, with
//! warm-up, stop conditions and a draining cool-down.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use tokio::sync::Semaphore;

use crate::client::Client;
use crate::plan::{PlannedRequest, Planner};
use crate::record::{ErrorClass, RequestRecord};
use crate::rng::Rng;
pub use crate::summary::StopReason;

/// How inter-arrival gaps of an open-loop rate are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Exactly `1/rate` apart.
    Constant,
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// Gamma gaps with shape `burstiness` (1 = Poisson; below 1 burstier, above 1 smoother).
    Gamma {
        /// The shape parameter.
        burstiness: f64,
    },
    /// Each request at its time in the planner's trace ([`Planner::with_trace`]), divided by
    /// `speedup`; the point ends with the trace.
    Trace {
        /// How many times faster than the trace's own pace (1: as recorded).
        speedup: f64,
    },
}

impl Arrival {
    /// The name used in summaries.
    pub fn name(&self) -> String {
        match self {
            Arrival::Constant => "constant".into(),
            Arrival::Poisson => "poisson".into(),
            Arrival::Gamma { burstiness } => format!("gamma({burstiness})"),
            Arrival::Trace { speedup } => format!("trace(x{speedup})"),
        }
    }

    /// The next gap in seconds at `rate` requests per second.
    pub fn gap(&self, rate: f64, rng: &mut Rng) -> f64 {
        match self {
            Arrival::Constant => 1.0 / rate,
            Arrival::Poisson => rng.exp1() / rate,
            Arrival::Gamma { burstiness } => rng.gamma(*burstiness) / (rate * burstiness),
            // The open loop takes a trace's times from the trace; this is its mean gap.
            Arrival::Trace { .. } => 1.0 / rate,
        }
    }
}

/// The load model of a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadModel {
    /// Closed loop: `n` requests in flight; each starts when the previous one of its slot ends.
    Concurrency(usize),
    /// Open loop: requests scheduled at `rate` per second, whatever the server does.
    Rate {
        /// Requests per second.
        rate: f64,
        /// Inter-arrival distribution.
        arrival: Arrival,
        /// Cap on requests in flight (waiting for the cap counts as client queueing).
        max_in_flight: Option<usize>,
    },
}

/// When a point stops scheduling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// Measured requests (after warm-up).
    pub max_requests: Option<u64>,
    /// Time from the first scheduled request.
    pub max_duration: Option<Duration>,
    /// Requests at the start excluded from metrics.
    pub warmup_requests: u64,
    /// Requests scheduled within this time of the start are excluded from metrics too (they do
    /// not count toward `max_requests`).
    pub warmup_duration: Option<Duration>,
}

/// Live counters for a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Requests finished successfully (including warm-up).
    pub completed: AtomicU64,
    /// Requests failed (including warm-up).
    pub failed: AtomicU64,
    /// Requests in flight.
    pub in_flight: AtomicU64,
    /// Output tokens received by finished requests.
    pub output_tokens: AtomicU64,
    /// When the counters were last reset: the start of the point (or probe) they count.
    pub started: Mutex<Option<Instant>>,
    /// Failed requests by error class ([`crate::hot::ERROR_CLASSES`] order).
    pub errors: [AtomicU64; 7],
    /// TTFT of finished requests, seconds (from the scheduled send).
    pub ttft: crate::hot::LiveHistogram,
    /// End-to-end latency of finished requests, seconds (from the scheduled send).
    pub e2e: crate::hot::LiveHistogram,
    /// Inter-token latencies of finished requests, seconds.
    pub itl: crate::hot::LiveHistogram,
    /// How late requests were sent against their schedule (the client's queue), seconds.
    pub lateness: crate::hot::LiveHistogram,
    /// Gauges mirrored into hot metrics (the server's scraped metrics, the node's telemetry).
    pub gauges: Arc<crate::hot::Gauges>,
    /// Unix nanoseconds of the last reset (0 before the first): the start of the counters'
    /// cumulative interval.
    pub started_unix_ns: AtomicU64,
    /// Where finished requests' spans go, when an OTLP trace sink is running.
    pub spans: std::sync::OnceLock<Arc<crate::otlp::SpanQueue>>,
}

impl Progress {
    /// Counters whose hot metrics also mirror `gauges` (shared with the telemetry sampler).
    pub fn with_gauges(gauges: Arc<crate::hot::Gauges>) -> Progress {
        Progress {
            gauges,
            ..Progress::default()
        }
    }

    /// How long the point the counters count has been running (since the last [`reset`]),
    /// seconds; `None` before the first.
    ///
    /// [`reset`]: Progress::reset
    pub fn elapsed_s(&self) -> Option<f64> {
        let started = *self.started.lock().unwrap_or_else(|e| e.into_inner());
        started.map(|t| t.elapsed().as_secs_f64())
    }

    /// Resets every counter (between points) and notes when.
    pub fn reset(&self) {
        *self.started.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.started_unix_ns
            .store(crate::hot::now_ns(), Ordering::Relaxed);
        for a in [
            &self.completed,
            &self.failed,
            &self.in_flight,
            &self.output_tokens,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        for a in &self.errors {
            a.store(0, Ordering::Relaxed);
        }
        self.ttft.reset();
        self.e2e.reset();
        self.itl.reset();
        self.lateness.reset();
    }
}

/// The raw result of one point.
#[derive(Debug)]
pub struct PointRun {
    /// Every request, warm-up included, in plan order.
    pub records: Vec<RequestRecord>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Unix-epoch nanoseconds of the schedule's origin (open loop: the deadline of plan index
    /// 0, whichever shard owns it; closed loop: the start).
    pub origin_ns: u64,
}

struct Ctx {
    client: Arc<Client>,
    planner: Planner,
    stop: StopRule,
    limit: u64,
    /// Plan indices spent on time-based warm-up (they extend `limit`).
    time_warm: AtomicU64,
    next: AtomicU64,
    halt: AtomicBool,
    reason: Mutex<Option<StopReason>>,
    connect_failures: AtomicU64,
    unreachable_after: u64,
    progress: Arc<Progress>,
    cancel: CancellationToken,
    shard: (u64, u64),
}

impl Ctx {
    fn halt(&self, r: StopReason) {
        let mut g = self.reason.lock().expect("reason lock");
        if g.is_none() {
            *g = Some(r);
        }
        self.halt.store(true, Ordering::Release);
    }

    fn halted(&self) -> bool {
        if self.cancel.is_cancelled() {
            self.halt(StopReason::Interrupted);
        }
        self.halt.load(Ordering::Acquire)
    }

    /// The next plan index this shard owns, or `None` when the budget is spent. `warm` says
    /// the request falls in the time-based warm-up.
    fn take(&self, warm: bool) -> Option<u64> {
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        let i = k * self.shard.1 + self.shard.0;
        if warm {
            self.time_warm.fetch_add(self.shard.1, Ordering::Relaxed);
            return Some(i);
        }
        if i >= self
            .limit
            .saturating_add(self.time_warm.load(Ordering::Relaxed))
        {
            self.halt(StopReason::MaxRequests);
            None
        } else {
            Some(i)
        }
    }

    fn after(&self, rec: &RequestRecord) {
        let p = &self.progress;
        p.in_flight.fetch_sub(1, Ordering::Relaxed);
        if rec.ok() {
            p.completed.fetch_add(1, Ordering::Relaxed);
            p.output_tokens
                .fetch_add(rec.output_tokens.unwrap_or(0), Ordering::Relaxed);
            if let Some(ms) = rec.ttft_ms() {
                p.ttft.observe(ms / 1e3);
            }
            if let Some(done) = rec.done_ns {
                p.e2e
                    .observe(done.saturating_sub(rec.scheduled_ns) as f64 / 1e9);
            }
            for ms in rec.itl_ms() {
                p.itl.observe(ms / 1e3);
            }
        } else {
            p.failed.fetch_add(1, Ordering::Relaxed);
            if let Some(e) = rec.error
                && let Some(i) = crate::hot::ERROR_CLASSES.iter().position(|c| *c == e)
            {
                p.errors[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(ms) = rec.client_queue_ms() {
            p.lateness.observe(ms / 1e3);
        }
        if let Some(q) = p.spans.get() {
            q.offer(rec);
        }
        if rec.error == Some(ErrorClass::Connect) {
            let n = self.connect_failures.fetch_add(1, Ordering::Relaxed) + 1;
            if n >= self.unreachable_after {
                self.halt(StopReason::TargetUnreachable(
                    rec.error_message.clone().unwrap_or_default(),
                ));
            }
        } else {
            self.connect_failures.store(0, Ordering::Relaxed);
        }
    }

    /// A session stops between turns when the point is cut short: out of time, interrupted,
    /// or the target gone (not when the request budget is spent: sessions already started
    /// finish).
    fn cut(&self) -> bool {
        if self.cancel.is_cancelled() {
            self.halt(StopReason::Interrupted);
            return true;
        }
        matches!(
            *self.reason.lock().expect("reason lock"),
            Some(
                StopReason::MaxDuration
                    | StopReason::Interrupted
                    | StopReason::TargetUnreachable(_)
            )
        )
    }

    /// The request of plan unit `i`, built before it is due (its images and body are the
    /// client's work, not the server's latency); `None` for a session, whose turns are built
    /// as their answers arrive.
    fn prepare(&self, i: u64) -> Option<PlannedRequest> {
        (!self.planner.has_sessions()).then(|| self.planner.request(i))
    }

    /// Plan unit `i`, due at `scheduled`: one request (`plan`, built by [`Ctx::prepare`]), or a
    /// whole session's turns.
    async fn one(
        &self,
        i: u64,
        plan: Option<PlannedRequest>,
        scheduled: Instant,
        warm: bool,
    ) -> Vec<RequestRecord> {
        let warm = warm || i < self.stop.warmup_requests;
        if self.planner.has_sessions() {
            return self.session(i, scheduled, warm).await;
        }
        let plan = plan.unwrap_or_else(|| self.planner.request(i));
        self.progress.in_flight.fetch_add(1, Ordering::Relaxed);
        let mut rec = self.client.execute(&plan, scheduled, warm).await;
        rec.model = self.planner.model_of(i).map(str::to_owned);
        self.after(&rec);
        vec![rec]
    }

    /// Runs session `i`: each turn after the previous answer and the user's think time, from
    /// which its latencies count. A failed turn ends the session.
    async fn session(&self, i: u64, scheduled: Instant, warm: bool) -> Vec<RequestRecord> {
        let s = self.planner.session(i);
        let mut out = Vec::with_capacity(s.turns.len());
        let mut answers: Vec<String> = Vec::with_capacity(s.turns.len());
        let mut due = scheduled;
        for (t, turn) in s.turns.iter().enumerate() {
            if t > 0 {
                due = Instant::now() + Duration::from_secs_f64(turn.think_ms.max(0.0) / 1e3);
                // Sleeps in slices so a cut point does not wait out a long think time.
                loop {
                    let now = Instant::now();
                    if now >= due || self.cut() {
                        break;
                    }
                    tokio::time::sleep((due - now).min(Duration::from_millis(50))).await;
                }
                if self.cut() {
                    break;
                }
            }
            let plan = self.planner.turn_request(&s, t, &answers);
            self.progress.in_flight.fetch_add(1, Ordering::Relaxed);
            let mut rec = self.client.execute(&plan, due, warm).await;
            rec.session = Some(i);
            rec.model = self.planner.model_of(i).map(str::to_owned);
            rec.turn = Some(t as u32);
            rec.session_turns = Some(s.turns.len() as u32);
            self.after(&rec);
            let ok = rec.ok();
            answers.push(rec.answer_text.take().unwrap_or_default());
            out.push(rec);
            if !ok {
                break;
            }
        }
        out
    }
}

/// Options of [`run_point`] beyond the load model.
#[derive(Debug, Clone)]
pub struct PointOptions {
    /// Stop rule.
    pub stop: StopRule,
    /// Seed of the arrival process.
    pub seed: u64,
    /// `(i, n)`: run only plan indices `≡ i (mod n)` (sharding; `(0, 1)` runs everything).
    pub shard: (u64, u64),
    /// Cancelled to stop scheduling (Ctrl-C): requests in flight drain.
    pub cancel: CancellationToken,
    /// Start the schedule at this instant instead of now (shards starting together).
    pub start: Option<Instant>,
}

/// Runs one point to its stop rule, then drains requests in flight.
pub async fn run_point(
    client: Arc<Client>,
    planner: Planner,
    load: LoadModel,
    opts: PointOptions,
    progress: Arc<Progress>,
) -> PointRun {
    let stop = opts.stop;
    let limit = match stop.max_requests {
        Some(n) => stop.warmup_requests + n,
        None => u64::MAX,
    };
    let width = match load {
        LoadModel::Concurrency(n) => n as u64,
        LoadModel::Rate { rate, .. } => rate.ceil() as u64,
    };
    let ctx = Arc::new(Ctx {
        client,
        planner,
        stop,
        limit,
        time_warm: AtomicU64::new(0),
        next: AtomicU64::new(0),
        halt: AtomicBool::new(false),
        reason: Mutex::new(None),
        connect_failures: AtomicU64::new(0),
        unreachable_after: width.clamp(8, 64),
        progress,
        cancel: opts.cancel.clone(),
        shard: (opts.shard.0, opts.shard.1.max(1)),
    });
    let clock = ctx.client.clock();
    let (origin, mut records) = match load {
        LoadModel::Concurrency(n) => closed_loop(ctx.clone(), n, opts.start).await,
        LoadModel::Rate {
            rate,
            arrival,
            max_in_flight,
        } => {
            open_loop(
                ctx.clone(),
                rate,
                arrival,
                max_in_flight,
                opts.seed,
                opts.start,
            )
            .await
        }
    };
    records.sort_by_key(|r| r.index);
    let stop = ctx
        .reason
        .lock()
        .expect("reason lock")
        .clone()
        .unwrap_or(StopReason::MaxRequests);
    PointRun {
        records,
        stop,
        origin_ns: clock.ns(origin),
    }
}

fn arm_timer(ctx: &Arc<Ctx>, start: Instant) -> Option<tokio::task::JoinHandle<()>> {
    let d = ctx.stop.max_duration?;
    let ctx = ctx.clone();
    Some(tokio::spawn(async move {
        tokio::time::sleep_until((start + d).into()).await;
        ctx.halt(StopReason::MaxDuration);
    }))
}

async fn closed_loop(
    ctx: Arc<Ctx>,
    n: usize,
    at: Option<Instant>,
) -> (Instant, Vec<RequestRecord>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
    let start = at.map_or_else(Instant::now, |at| at.max(Instant::now()));
    let timer = arm_timer(&ctx, start);
    let warm_until = ctx.stop.warmup_duration.map(|d| start + d);
    let workers: Vec<_> = (0..n.max(1))
        .map(|_| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let mut out = Vec::new();
                while !ctx.halted() {
                    let now = Instant::now();
                    let warm = warm_until.is_some_and(|w| now < w);
                    let Some(i) = ctx.take(warm) else { break };
                    let plan = ctx.prepare(i);
                    // Closed loop: the slot is free and the request built, so it is due now.
                    let scheduled = Instant::now();
                    out.extend(ctx.one(i, plan, scheduled, warm).await);
                }
                out
            })
        })
        .collect();
    let mut all = Vec::new();
    for w in workers {
        if let Ok(v) = w.await {
            all.extend(v);
        }
    }
    if let Some(t) = timer {
        t.abort();
    }
    (start, all)
}

async fn open_loop(
    ctx: Arc<Ctx>,
    rate: f64,
    arrival: Arrival,
    max_in_flight: Option<usize>,
    seed: u64,
    at: Option<Instant>,
) -> (Instant, Vec<RequestRecord>) {
    let handle = tokio::runtime::Handle::current();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<RequestRecord>>();
    // A small lead so the first deadline is not already late when the dispatcher starts.
    let start = at.unwrap_or_else(|| Instant::now() + Duration::from_millis(5));
    let end = ctx.stop.max_duration.map(|d| start + d);
    let warm_until = ctx.stop.warmup_duration.map(|d| start + d);
    let gate = max_in_flight.map(|n| Arc::new(Semaphore::new(n.max(1))));
    let dctx = ctx.clone();
    // The dispatcher is an OS thread: `thread::sleep` to an absolute deadline is precise to
    // tens of microseconds, where tokio's timer wheel rounds up to whole milliseconds.
    let dispatcher = std::thread::Builder::new()
        .name("yardstick-arrivals".into())
        .spawn(move || {
            let ctx = dctx;
            let mut rng = Rng::new(seed, u64::MAX);
            let mut offset = 0.0f64;
            let mut seq = 0u64;
            while !ctx.halted() {
                // Every shard draws the same arrival sequence and keeps its own indices.
                let i = seq;
                seq += 1;
                let deadline = match arrival {
                    Arrival::Trace { speedup } => {
                        // A replayed trace: the request's own time; none left ends the point.
                        let Some(due) = ctx.planner.trace_due_s(i, speedup) else {
                            ctx.halt(StopReason::TraceEnd);
                            break;
                        };
                        start + Duration::from_secs_f64(due)
                    }
                    _ => {
                        let gap = arrival.gap(rate, &mut rng);
                        let deadline = start + Duration::from_secs_f64(offset);
                        offset += gap;
                        deadline
                    }
                };
                let warm = warm_until.is_some_and(|w| deadline < w);
                if warm {
                    ctx.time_warm.fetch_add(1, Ordering::Relaxed);
                } else if i
                    >= ctx
                        .limit
                        .saturating_add(ctx.time_warm.load(Ordering::Relaxed))
                {
                    ctx.halt(StopReason::MaxRequests);
                    break;
                }
                if let Some(e) = end
                    && deadline >= e
                {
                    ctx.halt(StopReason::MaxDuration);
                    break;
                }
                if i % ctx.shard.1 != ctx.shard.0 {
                    continue;
                }
                // Built before its deadline, while the dispatcher would only sleep.
                let plan = ctx.prepare(i);
                loop {
                    let now = Instant::now();
                    if now >= deadline || ctx.halted() {
                        break;
                    }
                    std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
                }
                if ctx.halted() {
                    break;
                }
                let (ctx2, tx, gate) = (ctx.clone(), tx.clone(), gate.clone());
                handle.spawn(async move {
                    let _permit = match &gate {
                        Some(g) => g.clone().acquire_owned().await.ok(),
                        None => None,
                    };
                    let rec = ctx2.one(i, plan, deadline, warm).await;
                    let _ = tx.send(rec);
                });
            }
        })
        .expect("spawning the arrivals thread");
    let mut out = Vec::new();
    while let Some(r) = rx.recv().await {
        out.extend(r);
    }
    let _ = tokio::task::spawn_blocking(move || dispatcher.join()).await;
    (start, out)
}
