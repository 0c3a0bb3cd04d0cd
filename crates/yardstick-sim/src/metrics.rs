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
    pub outcomes: [AtomicU64; 6],
    /// Sequences generating now.
    pub running: AtomicI64,
    /// Requests waiting for a running slot.
    pub waiting: AtomicI64,
    /// Prompt tokens of admitted requests.
    pub prompt_tokens: AtomicU64,
    /// Output tokens written.
    pub generation_tokens: AtomicU64,
}

const OUTCOMES: [(Outcome, &str); 6] = [
    (Outcome::Ok, "ok"),
    (Outcome::Error, "error"),
    (Outcome::Timeout, "timeout"),
    (Outcome::Disconnect, "disconnect"),
    (Outcome::Cancelled, "cancelled"),
    (Outcome::BadRequest, "bad_request"),
];

/// The slot of `o` in [`Metrics::outcomes`].
pub fn outcome_index(o: Outcome) -> usize {
    OUTCOMES.iter().position(|(x, _)| *x == o).unwrap_or(0)
}

impl Metrics {
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
        s
    }
}
