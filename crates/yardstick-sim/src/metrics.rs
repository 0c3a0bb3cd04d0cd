//! Prometheus counters and gauges, rendered by hand in the text exposition format.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::log::Outcome;

/// Live counters of the simulator.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Requests received (parsed or not).
    pub received: AtomicU64,
    /// Requests by outcome, indexed by [`outcome_index`].
    pub outcomes: [AtomicU64; 7],
    /// Sequences generating now.
    pub running: AtomicI64,
    /// Requests waiting for a running slot.
    pub waiting: AtomicI64,
    /// Prompt tokens of admitted requests.
    pub prompt_tokens: AtomicU64,
    /// Output tokens written.
    pub generation_tokens: AtomicU64,
    /// Time to first token, received to first token: counts per bucket of [`TTFT_BUCKETS`]
    /// (the last is +Inf), and the sum in nanoseconds.
    pub ttft_buckets: [AtomicU64; TTFT_BUCKETS.len() + 1],
    /// Sum of the observed times to first token, ns.
    pub ttft_sum_ns: AtomicU64,
    /// Running slots (`--max-running`), for the KV-cache usage gauge; 0 = unlimited.
    pub slots: AtomicU64,
    /// Requests admitted to a running slot, and their summed time waiting for it, ns.
    pub queued: AtomicU64,
    /// Sum of the times requests waited for a running slot, ns.
    pub queue_sum_ns: AtomicU64,
    /// Prompt tokens looked up in the prefix cache.
    pub prefix_queries: AtomicU64,
    /// Prompt tokens found there.
    pub prefix_hits: AtomicU64,
}

/// Upper bounds (seconds) of the time-to-first-token histogram: vLLM's buckets.
pub const TTFT_BUCKETS: [f64; 18] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0,
];

const OUTCOMES: [(Outcome, &str); 7] = [
    (Outcome::Ok, "ok"),
    (Outcome::Error, "error"),
    (Outcome::Timeout, "timeout"),
    (Outcome::Disconnect, "disconnect"),
    (Outcome::Cancelled, "cancelled"),
    (Outcome::BadRequest, "bad_request"),
    (Outcome::Refused, "refused"),
];

/// The slot of `o` in [`Metrics::outcomes`].
pub fn outcome_index(o: Outcome) -> usize {
    OUTCOMES.iter().position(|(x, _)| *x == o).unwrap_or(0)
}

impl Metrics {
    /// Observes one time to first token.
    pub fn observe_ttft(&self, ns: u64) {
        let s = ns as f64 / 1e9;
        let i = TTFT_BUCKETS
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(TTFT_BUCKETS.len());
        self.ttft_buckets[i].fetch_add(1, Ordering::Relaxed);
        self.ttft_sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Observes one request's wait for a running slot.
    pub fn observe_queue(&self, ns: u64) {
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.queue_sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Observes one prefix-cache lookup: `queried` prompt tokens, `hit` of them cached.
    pub fn observe_prefix(&self, queried: u64, hit: u64) {
        self.prefix_queries.fetch_add(queried, Ordering::Relaxed);
        self.prefix_hits.fetch_add(hit, Ordering::Relaxed);
    }

    /// Counts one finished request.
    pub fn finish(&self, o: Outcome) {
        self.outcomes[outcome_index(o)].fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self, model: &str) -> String {
        let mut s = String::with_capacity(1024);
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            s,
            "# HELP yardstick_sim_requests_received_total Requests received.\n\
             # TYPE yardstick_sim_requests_received_total counter\n\
             yardstick_sim_requests_received_total{{model_name=\"{model}\"}} {}",
            r(&self.received)
        );
        let _ = writeln!(
            s,
            "# HELP yardstick_sim_requests_finished_total Requests finished, by outcome.\n\
             # TYPE yardstick_sim_requests_finished_total counter"
        );
        for (i, (_, name)) in OUTCOMES.iter().enumerate() {
            let _ = writeln!(
                s,
                "yardstick_sim_requests_finished_total{{model_name=\"{model}\",outcome=\"{name}\"}} {}",
                r(&self.outcomes[i])
            );
        }
        let _ = writeln!(
            s,
            "# HELP yardstick_sim_num_requests_running Sequences generating now.\n\
             # TYPE yardstick_sim_num_requests_running gauge\n\
             yardstick_sim_num_requests_running{{model_name=\"{model}\"}} {}\n\
             # HELP yardstick_sim_num_requests_waiting Requests queued for a running slot.\n\
             # TYPE yardstick_sim_num_requests_waiting gauge\n\
             yardstick_sim_num_requests_waiting{{model_name=\"{model}\"}} {}",
            self.running.load(Ordering::Relaxed),
            self.waiting.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP yardstick_sim_prompt_tokens_total Prompt tokens admitted.\n\
             # TYPE yardstick_sim_prompt_tokens_total counter\n\
             yardstick_sim_prompt_tokens_total{{model_name=\"{model}\"}} {}\n\
             # HELP yardstick_sim_generation_tokens_total Output tokens written.\n\
             # TYPE yardstick_sim_generation_tokens_total counter\n\
             yardstick_sim_generation_tokens_total{{model_name=\"{model}\"}} {}",
            r(&self.prompt_tokens),
            r(&self.generation_tokens)
        );
        self.render_vllm(&mut s, model);
        s
    }

    /// The same state under vLLM's metric names (`vllm:*`), so that tools reading a vLLM
    /// server's `/metrics` read the simulator's: requests running and waiting, token counters,
    /// KV-cache usage (running sequences over slots), preemptions (none), and the time to
    /// first token histogram.
    fn render_vllm(&self, s: &mut String, model: &str) {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let l = format!("model_name=\"{model}\"");
        let running = self.running.load(Ordering::Relaxed).max(0);
        let slots = r(&self.slots);
        let usage = if slots > 0 {
            (running as f64 / slots as f64).min(1.0)
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{{{l}}} {running}\n\
             # HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n\
             # TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting{{{l}}} {}\n\
             # HELP vllm:gpu_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n\
             # TYPE vllm:gpu_cache_usage_perc gauge\n\
             vllm:gpu_cache_usage_perc{{{l}}} {usage}\n\
             # HELP vllm:num_preemptions_total Cumulative number of preemptions.\n\
             # TYPE vllm:num_preemptions_total counter\n\
             vllm:num_preemptions_total{{{l}}} 0\n\
             # HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n\
             # TYPE vllm:prefix_cache_queries_total counter\n\
             vllm:prefix_cache_queries_total{{{l}}} {}\n\
             # HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n\
             # TYPE vllm:prefix_cache_hits_total counter\n\
             vllm:prefix_cache_hits_total{{{l}}} {}\n\
             # HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n\
             # TYPE vllm:prompt_tokens_total counter\n\
             vllm:prompt_tokens_total{{{l}}} {}\n\
             # HELP vllm:generation_tokens_total Number of generation tokens processed.\n\
             # TYPE vllm:generation_tokens_total counter\n\
             vllm:generation_tokens_total{{{l}}} {}\n\
             # HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n\
             # TYPE vllm:time_to_first_token_seconds histogram",
            self.waiting.load(Ordering::Relaxed).max(0),
            r(&self.prefix_queries),
            r(&self.prefix_hits),
            r(&self.prompt_tokens),
            r(&self.generation_tokens),
        );
        let mut cumulative = 0;
        for (i, b) in TTFT_BUCKETS.iter().enumerate() {
            cumulative += r(&self.ttft_buckets[i]);
            let _ = writeln!(
                s,
                "vllm:time_to_first_token_seconds_bucket{{{l},le=\"{b}\"}} {cumulative}"
            );
        }
        cumulative += r(&self.ttft_buckets[TTFT_BUCKETS.len()]);
        let _ = writeln!(
            s,
            "vllm:time_to_first_token_seconds_bucket{{{l},le=\"+Inf\"}} {cumulative}\n\
             vllm:time_to_first_token_seconds_sum{{{l}}} {}\n\
             vllm:time_to_first_token_seconds_count{{{l}}} {cumulative}",
            r(&self.ttft_sum_ns) as f64 / 1e9
        );
        // The queue time as a histogram with no finite bucket: its sum and count are what is
        // read.
        let _ = writeln!(
            s,
            "# HELP vllm:request_queue_time_seconds Histogram of time spent in WAITING phase for request.\n\
             # TYPE vllm:request_queue_time_seconds histogram\n\
             vllm:request_queue_time_seconds_bucket{{{l},le=\"+Inf\"}} {}\n\
             vllm:request_queue_time_seconds_sum{{{l}}} {}\n\
             vllm:request_queue_time_seconds_count{{{l}}} {}",
            r(&self.queued),
            r(&self.queue_sum_ns) as f64 / 1e9,
            r(&self.queued)
        );
    }
}
