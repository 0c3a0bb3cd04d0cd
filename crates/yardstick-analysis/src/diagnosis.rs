//! Diagnoses: the answer a playbook gives to its question — a verdict from a stated rule over
//! measured figures with their intervals, the evidence, and what to do next. "Inconclusive" is
//! an answer.
//!
//! * [`tail_latency`]: where p99 time to first token departs from its unloaded level as the
//!   offered rate grows (the knee), and which part of the request grew there: the client's own
//!   queue, the server's queue, time outside the server, or the server's service time.
//! * [`starvation`]: whether one class of a mix (short prompts, long prompts) is slowed by the
//!   other beyond what it sees alone, and whether short requests wait behind long prefills.
//! * [`stragglers`]: whether one rank of a distributed job is slower than the others in most of
//!   its steps, in every replicate, by more than the node-to-node band — and on which node.
//! * [`backpressure`]: whether a server offered more than it sustains turns requests away (and
//!   says when to come back) or queues them without bound; [`scheduler_backpressure`]: whether
//!   a scheduler keeps up with a burst of jobs.
//! * [`readiness`]: whether every node of an allocation is fit for a multi-node workload, and
//!   which to drain.
//! * [`triage`]: the intake bundle's answer: the machine, its ceilings, the workload's
//!   bottleneck class.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A playbook's answer, stored in the run's `summary.json` as `diagnosis`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Diagnosis {
    /// The playbook (`tail-latency`).
    pub playbook: String,
    /// The question it answers.
    pub question: String,
    /// The answer, one word or phrase (`queueing`, `service-time`, `client`, `network`,
    /// `no-knee`, `inconclusive`).
    pub verdict: String,
    /// How sure the rule is: `high`, `medium` or `low`.
    pub confidence: String,
    /// One sentence a person reads first.
    pub summary: String,
    /// The rule the verdict came from, stated.
    pub rule: String,
    /// What was measured that says so.
    pub evidence: Vec<Evidence>,
    /// What to do next (commands are printed, never run).
    pub actions: Vec<String>,
}

/// One claim with the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    /// What the figures show.
    pub claim: String,
    /// The figures, by name (units in the name).
    pub figures: BTreeMap<String, f64>,
    /// Where they were measured (a point id).
    #[serde(rename = "where")]
    pub at: String,
}

/// A figure with its interval over replicates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Estimate {
    /// Mean over replicates.
    pub mean: f64,
    /// The interval's lower bound.
    pub lo: f64,
    /// The interval's upper bound.
    pub hi: f64,
}

/// What one load level of a tail-latency sweep measured (means over replicates).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadLevel {
    /// The point id.
    pub point: String,
    /// The offered rate, requests/s.
    pub offered_rps: f64,
    /// The rate achieved, requests/s, with its interval.
    pub achieved_rps: Option<Estimate>,
    /// Mean TTFT, ms.
    pub ttft_mean_ms: Option<f64>,
    /// Mean end-to-end latency, ms.
    pub e2e_mean_ms: Option<f64>,
    /// Requests measured per replicate.
    pub requests: Option<f64>,
    /// TTFT p99, ms, with its interval.
    pub ttft_p99_ms: Option<Estimate>,
    /// TTFT p50, ms.
    pub ttft_p50_ms: Option<f64>,
    /// TPOT p50, ms, with its interval.
    pub tpot_p50_ms: Option<Estimate>,
    /// The client's own queue (sent − scheduled) mean, ms.
    pub client_queue_mean_ms: Option<f64>,
    /// The server's mean queue time, ms (its metrics).
    pub server_queue_ms: Option<f64>,
    /// The server's mean waiting requests (its metrics).
    pub server_waiting: Option<f64>,
    /// The client's mean TTFT minus the server's, ms (its metrics).
    pub ttft_client_minus_server_ms: Option<f64>,
}

/// The least relative growth of p99 TTFT that counts as a knee (besides the intervals).
pub const KNEE_MIN_GROWTH: f64 = 0.10;

/// A level whose achieved rate is below this share of its offered rate is over-saturated.
pub const SATURATED_SHARE: f64 = 0.9;

/// The rule of [`tail_latency`], as stated in the diagnosis.
pub const TAIL_LATENCY_RULE: &str = "The knee is the lowest offered rate whose p99 TTFT interval \
lies wholly above the lowest rate's interval and whose mean is at least 10 % above it; without a \
knee, the tail is flat (no-knee) only when the highest rate's p99 is within 10 % of the lowest's, \
and inconclusive otherwise. At the \
knee, the growth of mean TTFT over the lowest rate is split into the client's own queue (its \
mean), the server's queue (its mean queue time, or its waiting requests when it exports no \
queue time), time outside the server (client minus server mean TTFT) and the rest (service \
time), all means so that the parts add up; a server that exports no queue figures has the rest \
counted as queueing when its TPOT p50 held (intervals overlapping) while mean TTFT grew by at \
least its unloaded level; the largest share is the verdict, with high \
confidence at 60 % or more of the growth with the server's metrics, medium at 40 % or more or \
without them, inconclusive below. A level whose achieved rate's interval lies below 90 % of what \
an unsaturated server achieves (its requests sent at the offered rate, the last finishing its \
mean latency later) is over-saturated.";

fn fig(pairs: &[(&str, Option<f64>)]) -> BTreeMap<String, f64> {
    pairs
        .iter()
        .filter_map(|(k, v)| {
            v.filter(|v| v.is_finite())
                .map(|v| ((*k).to_string(), round(v)))
        })
        .collect()
}

/// A claim about one load level with its offered rate and p99 TTFT (mean and interval), and
/// `extra` figures.
fn p99_evidence(claim: String, l: &LoadLevel, extra: &[(&str, Option<f64>)]) -> Evidence {
    let e = l.ttft_p99_ms;
    let mut figures = fig(&[
        ("offered_rps", Some(l.offered_rps)),
        ("ttft_p99_ms", e.map(|e| e.mean)),
        ("ttft_p99_ms_lo", e.map(|e| e.lo)),
        ("ttft_p99_ms_hi", e.map(|e| e.hi)),
    ]);
    figures.extend(fig(extra));
    Evidence {
        claim,
        figures,
        at: l.point.clone(),
    }
}

fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The tail-latency diagnosis of a sweep over offered rates (any order).
pub fn tail_latency(levels: &[LoadLevel], slo_ttft_ms: Option<f64>) -> Diagnosis {
    let mut levels: Vec<&LoadLevel> = levels.iter().filter(|l| l.ttft_p99_ms.is_some()).collect();
    levels.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    let mut d = Diagnosis {
        playbook: "tail-latency".into(),
        question: "Why is my p99 TTFT bad, and from what load on?".into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: TAIL_LATENCY_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    let Some(base) = levels.first().copied() else {
        d.summary = "No load level measured a p99 TTFT: nothing to diagnose.".into();
        d.actions
            .push("Check the server answers (`yardstick bench serve --url URL --model M --max-requests 10`) and run again.".into());
        return d;
    };
    let b = base.ttft_p99_ms.expect("filtered");
    d.evidence.push(p99_evidence(
        format!(
            "At the lowest rate ({:.3} req/s) p99 TTFT is {:.1} ms [{:.1}, {:.1}]: the unloaded level.",
            base.offered_rps, b.mean, b.lo, b.hi
        ),
        base,
        &[("achieved_rps", base.achieved_rps.map(|a| a.mean))],
    ));
    // What an unsaturated server achieves: n requests sent over n/λ, the last one finishing
    // its latency later.
    let expected = |l: &LoadLevel| match (l.requests, l.e2e_mean_ms) {
        (Some(n), Some(e2e)) if n > 0.0 && l.offered_rps > 0.0 => {
            n / (n / l.offered_rps + e2e / 1e3)
        }
        _ => l.offered_rps,
    };
    let saturated = levels.iter().find(|l| {
        l.achieved_rps
            .is_some_and(|a| a.hi < SATURATED_SHARE * expected(l))
    });
    if let Some(s) = saturated {
        let a = s.achieved_rps.expect("found by it");
        d.evidence.push(Evidence {
            claim: format!(
                "From {:.3} req/s the server is over-saturated: it achieved {:.3} req/s [{:.3}, {:.3}].",
                s.offered_rps, a.mean, a.lo, a.hi
            ),
            figures: fig(&[
                ("offered_rps", Some(s.offered_rps)),
                ("achieved_rps", Some(a.mean)),
                ("achieved_rps_lo", Some(a.lo)),
                ("achieved_rps_hi", Some(a.hi)),
            ]),
            at: s.point.clone(),
        });
    }
    let knee = levels.iter().skip(1).copied().find(|l| {
        let e = l.ttft_p99_ms.expect("filtered");
        e.lo > b.hi && e.mean >= b.mean * (1.0 + KNEE_MIN_GROWTH)
    });
    let Some(knee) = knee else {
        let top = levels.last().copied().expect("non-empty");
        let t = top.ttft_p99_ms.expect("filtered");
        if t.mean > b.mean * (1.0 + KNEE_MIN_GROWTH) {
            // It grew, but not beyond the intervals: too noisy to say where or whether.
            d.summary = format!(
                "p99 TTFT grew from {:.1} ms to {:.1} ms up to {:.3} req/s, but its intervals overlap: the sweep cannot tell a knee from noise.",
                b.mean, t.mean, top.offered_rps
            );
            d.evidence.push(p99_evidence(
                "The highest rate's p99 TTFT is more than 10 % above the unloaded level, but its interval overlaps the unloaded one.".into(),
                top,
                &[],
            ));
            d.actions.push("Narrow the intervals: more replicates or requests per rate (--replicates 5, --requests 1000), on a quieter client machine.".into());
            return d;
        }
        d.verdict = "no-knee".into();
        d.confidence = if levels.len() >= 3 { "high" } else { "medium" }.into();
        d.summary = format!(
            "p99 TTFT stays at its unloaded level up to {:.3} req/s, the highest rate measured ({:.1} ms against {:.1} ms): no tail problem in this range.",
            top.offered_rps, t.mean, b.mean
        );
        d.evidence.push(p99_evidence(
            "The highest rate's p99 TTFT interval overlaps the unloaded level, or grew by less than 10 %.".into(),
            top,
            &[],
        ));
        d.actions.push(format!(
            "Run higher rates to find where the tail starts: yardstick playbook tail-latency --url URL --model M --max-rate {:.1}",
            top.offered_rps * 4.0
        ));
        return d;
    };
    let k = knee.ttft_p99_ms.expect("filtered");
    let growth = k.mean - b.mean;
    d.evidence.push(p99_evidence(
        format!(
            "The knee is at {:.3} req/s: p99 TTFT {:.1} ms [{:.1}, {:.1}], {:+.0} % over the unloaded level, beyond its interval.",
            knee.offered_rps,
            k.mean,
            k.lo,
            k.hi,
            growth / b.mean * 100.0
        ),
        knee,
        &[
            ("achieved_rps", knee.achieved_rps.map(|a| a.mean)),
            ("ttft_p99_growth_ms", Some(growth)),
        ],
    ));
    // The parts of the growth, all means so that they add up.
    let delta = |f: fn(&LoadLevel) -> Option<f64>| match (f(knee), f(base)) {
        (Some(a), Some(z)) => Some((a - z).max(0.0)),
        (Some(a), None) => Some(a.max(0.0)),
        _ => None,
    };
    let mean_growth = delta(|l| l.ttft_mean_ms).unwrap_or(0.0);
    let client = delta(|l| l.client_queue_mean_ms);
    let server_queue = delta(|l| l.server_queue_ms);
    let outside = delta(|l| l.ttft_client_minus_server_ms);
    let waiting = knee.server_waiting;
    let has_server = server_queue.is_some() || outside.is_some() || waiting.is_some();
    let mut parts: Vec<(&str, f64)> = Vec::new();
    if let Some(c) = client {
        parts.push(("client", c));
    }
    if let Some(q) = server_queue {
        parts.push(("queueing", q));
    }
    if let Some(o) = outside {
        parts.push(("network", o));
    }
    let explained: f64 = parts.iter().map(|(_, v)| v).sum();
    let service = (mean_growth - explained).max(0.0);
    let tpot_steady = match (knee.tpot_p50_ms, base.tpot_p50_ms) {
        (Some(a), Some(z)) => Some(a.lo <= z.hi && z.lo <= a.hi),
        _ => None,
    };
    // A server that exports no queue figures (llama-cpp-python's): decode speed held while the
    // time to first token grew by at least its unloaded level means the extra time was spent
    // before service began.
    let inferred_queue = server_queue.is_none()
        && waiting.is_none()
        && tpot_steady == Some(true)
        && base.ttft_mean_ms.is_some_and(|t| mean_growth >= t.max(1.0));
    // Without a queue time, the server's waiting requests say whether it queued at all.
    let (service_name, service_share) =
        if server_queue.is_none() && (waiting.is_some_and(|w| w >= 1.0) || inferred_queue) {
            ("queueing", service)
        } else {
            ("service-time", service)
        };
    parts.push((service_name, service_share));
    if inferred_queue {
        d.evidence.push(Evidence {
            claim: format!(
                "The server exports no queue figures; its decode speed held (TPOT p50 {:.1} ms against {:.1} ms unloaded) while mean TTFT grew by {mean_growth:.1} ms, more than its unloaded {:.1} ms: the growth is waiting before service began (queueing, from the client's timings).",
                knee.tpot_p50_ms.map_or(0.0, |e| e.mean),
                base.tpot_p50_ms.map_or(0.0, |e| e.mean),
                base.ttft_mean_ms.unwrap_or(0.0)
            ),
            figures: Default::default(),
            at: knee.point.clone(),
        });
    }
    d.evidence.push(Evidence {
        claim: format!(
            "At the knee the mean TTFT grew by {mean_growth:.1} ms: client queue {}, server queue {}, outside the server {}, the rest (service time) {service:.1} ms.",
            client.map_or("not measured".into(), |v| format!("{v:.1} ms")),
            server_queue.map_or("not exported".into(), |v| format!("{v:.1} ms")),
            outside.map_or("not exported".into(), |v| format!("{v:.1} ms")),
        ),
        figures: fig(&[
            ("ttft_mean_growth_ms", Some(mean_growth)),
            ("client_queue_mean_growth_ms", client),
            ("server_queue_growth_ms", server_queue),
            ("outside_server_growth_ms", outside),
            ("service_time_growth_ms", Some(service)),
            ("server_waiting", waiting),
            ("tpot_p50_ms", knee.tpot_p50_ms.map(|e| e.mean)),
            ("tpot_p50_ms_unloaded", base.tpot_p50_ms.map(|e| e.mean)),
        ]),
        at: knee.point.clone(),
    });
    let (verdict, share) =
        parts.iter().copied().fold(
            ("inconclusive", 0.0),
            |best, p| if p.1 > best.1 { p } else { best },
        );
    // The parts may add up to more than the growth of the mean (a queue the slowest requests
    // met): shares are of whichever is larger.
    let whole = mean_growth.max(explained + service);
    let share = if whole > 0.0 { share / whole } else { 0.0 };
    d.verdict = verdict.into();
    d.confidence = match (share >= 0.6, has_server) {
        (true, true) => "high",
        (true, false) | (false, true) if share >= 0.4 => "medium",
        _ => "low",
    }
    .into();
    if share < 0.4 {
        d.verdict = "inconclusive".into();
    }
    let rate = knee.offered_rps;
    let below = levels
        .iter()
        .take_while(|l| l.offered_rps < rate)
        .last()
        .map_or(base.offered_rps, |l| l.offered_rps);
    d.summary = match d.verdict.as_str() {
        "queueing" => format!(
            "p99 TTFT departs from its unloaded level at {rate:.3} req/s because requests wait in the server's queue ({:.0} % of the growth).",
            share * 100.0
        ),
        "service-time" => format!(
            "p99 TTFT departs at {rate:.3} req/s because each request's own work slows under load ({:.0} % of the growth is neither queue nor network){}.",
            share * 100.0,
            match tpot_steady {
                Some(false) => ", and TPOT grew too: batches interfere",
                _ => "",
            }
        ),
        "client" => format!(
            "p99 TTFT departs at {rate:.3} req/s because the load generator itself fell behind its schedule ({:.0} % of the growth): this measures the client, not the server.",
            share * 100.0
        ),
        "network" => format!(
            "p99 TTFT departs at {rate:.3} req/s because time outside the server grows ({:.0} % of the growth): the network or a proxy.",
            share * 100.0
        ),
        _ => format!(
            "p99 TTFT departs at {rate:.3} req/s, but no part explains at least 40 % of its growth: inconclusive."
        ),
    };
    match d.verdict.as_str() {
        "queueing" => {
            d.actions.push(format!(
                "Keep each replica below {below:.3} req/s (the highest rate before the knee), or add replicas: a target rate R needs ceil(R / {below:.3})."
            ));
            d.actions.push("If memory allows, raise the batch budget (vLLM --max-num-seqs, SGLang --max-running-requests, TGI --max-batch-total-tokens) so more requests run instead of waiting.".into());
        }
        "service-time" => {
            d.actions.push("Long prefills stall running decodes: enable chunked prefill (vLLM --enable-chunked-prefill with --max-num-batched-tokens), or lower the batch budget.".into());
            d.actions.push("Check the accelerator's clocks and power during the run (the run's telemetry) for throttling.".into());
        }
        "client" => {
            d.actions.push("Spread the load over more client processes (`yardstick bench serve --shard`), or run the client on its own machine; figures past this rate include the client's queue.".into());
        }
        "network" => {
            d.actions.push("Run the client next to the server to confirm; then look at the path between them (load balancer, proxy, TLS termination, bandwidth).".into());
        }
        _ => {
            d.actions.push("Run the playbook with more replicates or requests per level (--replicates, --requests) to narrow the intervals, and expose the server's /metrics so its queue can be told from its service time.".into());
        }
    }
    if let Some(slo) = slo_ttft_ms {
        let meets: Vec<&&LoadLevel> = levels
            .iter()
            .filter(|l| l.ttft_p99_ms.is_some_and(|e| e.hi <= slo))
            .collect();
        if let Some(best) = meets
            .iter()
            .max_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps))
        {
            d.actions.push(format!(
                "Under the SLO (p99 TTFT ≤ {slo} ms) this server holds {:.3} req/s of the rates measured; find the exact capacity with `yardstick bench serve --url URL --model M --find-capacity --slo-ttft-ms {slo}`.",
                best.offered_rps
            ));
        } else {
            d.actions.push(format!(
                "No rate measured meets the SLO (p99 TTFT ≤ {slo} ms), not even the lowest: the SLO needs a faster configuration, not less load."
            ));
        }
    }
    if !has_server {
        d.actions.push("Expose the server's Prometheus /metrics (vLLM, SGLang, TGI, llama.cpp --metrics): with its queue time the diagnosis separates queueing from service time directly.".into());
    }
    d
}

/// What one class of a starvation experiment measured: in the mix, and alone at its share of
/// the mix's rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassFigures {
    /// Its scenario (`D(64,16)`).
    pub scenario: String,
    /// Mean TTFT in the mix, ms.
    pub mix_mean_ms: Option<Estimate>,
    /// TTFT p50 in the mix, ms.
    pub mix_p50_ms: Option<Estimate>,
    /// TTFT p99 in the mix, ms.
    pub mix_p99_ms: Option<Estimate>,
    /// The point that ran it alone.
    pub alone_point: Option<String>,
    /// Mean TTFT alone, ms.
    pub alone_mean_ms: Option<Estimate>,
    /// TTFT p50 alone, ms.
    pub alone_p50_ms: Option<Estimate>,
    /// TTFT p99 alone, ms.
    pub alone_p99_ms: Option<Estimate>,
}

/// What the mixed point of a starvation experiment measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MixFigures {
    /// The mixed point.
    pub point: String,
    /// Its offered rate, requests/s.
    pub offered_rps: f64,
    /// The class with the shortest prompts.
    pub short: ClassFigures,
    /// The class with the longest prompts.
    pub long: ClassFigures,
    /// Mean TTFT of short requests sent while a long one waited for its first token, ms.
    pub behind_ms: Option<Estimate>,
    /// Mean TTFT of the other short requests, ms.
    pub clear_ms: Option<Estimate>,
    /// Share of short requests sent behind a long one.
    pub behind_share: Option<f64>,
}

/// The least relative growth that counts as a class slowed by the mix, or as head-of-line
/// blocking (besides the intervals).
pub const STARVED_MIN_GROWTH: f64 = 0.20;

/// Jain's fairness index at or above which a slowdown both classes share is called fair.
pub const FAIR_JAIN: f64 = 0.9;

/// The rule of [`starvation`], as stated in the diagnosis.
pub const STARVATION_RULE: &str = "A class is slowed by the mix when its p99 TTFT, or its mean TTFT, in the mix has an interval wholly above the same figure alone (at its share of the mix's rate) and is at least 20 % above it. Short requests wait head-of-line when the mean TTFT of those sent while a long request still awaited its first token has an interval wholly above that of the others and is at least 20 % above it. Jain's fairness index is taken over the classes' mean-TTFT speeds in the mix relative to alone (alone / mix): 1 when both slow alike, 0.5 when one bears it all. Verdicts: the short class slowed with head-of-line waits is head-of-line (high confidence), and so is head-of-line waiting with the short class's mean TTFT in the mix at least 20 % above alone though not beyond the intervals (medium); the short class slowed without head-of-line waits, short-starved (medium); only the long class slowed, long-starved (medium); both slowed with a fairness index of 0.9 or more, or neither slowed and both within 20 %, fair; anything else inconclusive.";

fn wholly_above(a: Option<Estimate>, b: Option<Estimate>) -> Option<bool> {
    let (a, b) = (a?, b?);
    Some(a.lo > b.hi && a.mean >= b.mean * (1.0 + STARVED_MIN_GROWTH))
}

/// The starvation diagnosis of a mix and its classes alone.
pub fn starvation(mix: Option<&MixFigures>) -> Diagnosis {
    let mut d = Diagnosis {
        playbook: "starvation".into(),
        question: "Does one class of requests starve when short and long prompts share the server?"
            .into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: STARVATION_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    let Some(m) = mix else {
        d.summary =
            "The run has no mixed point with both classes measured: nothing to diagnose.".into();
        d.actions.push("Check the server answers (`yardstick bench serve --url URL --model M --max-requests 10`) and run again.".into());
        return d;
    };
    let class_evidence = |name: &str, c: &ClassFigures| -> Option<Evidence> {
        let (mix, alone) = (c.mix_p99_ms?, c.alone_p99_ms?);
        Some(Evidence {
            claim: format!(
                "{name} requests ({}): p99 TTFT {:.1} ms [{:.1}, {:.1}] in the mix against {:.1} ms [{:.1}, {:.1}] alone ({:+.0} %).",
                c.scenario,
                mix.mean,
                mix.lo,
                mix.hi,
                alone.mean,
                alone.lo,
                alone.hi,
                (mix.mean / alone.mean - 1.0) * 100.0
            ),
            figures: fig(&[
                ("mix_ttft_p99_ms", Some(mix.mean)),
                ("mix_ttft_p99_ms_lo", Some(mix.lo)),
                ("mix_ttft_p99_ms_hi", Some(mix.hi)),
                ("alone_ttft_p99_ms", Some(alone.mean)),
                ("alone_ttft_p99_ms_lo", Some(alone.lo)),
                ("alone_ttft_p99_ms_hi", Some(alone.hi)),
                ("mix_ttft_p50_ms", c.mix_p50_ms.map(|e| e.mean)),
                ("alone_ttft_p50_ms", c.alone_p50_ms.map(|e| e.mean)),
                ("mix_ttft_mean_ms", c.mix_mean_ms.map(|e| e.mean)),
                ("alone_ttft_mean_ms", c.alone_mean_ms.map(|e| e.mean)),
            ]),
            at: m.point.clone(),
        })
    };
    let (Some(short_ev), Some(long_ev)) = (
        class_evidence("Short", &m.short),
        class_evidence("Long", &m.long),
    ) else {
        d.summary = format!(
            "The mix at {:.3} req/s or a class alone measured no TTFT: nothing to compare.",
            m.offered_rps
        );
        d.actions.push("Check every point completed requests (`yardstick report RUN`); a class whose requests all failed is its own finding.".into());
        return d;
    };
    d.evidence.push(short_ev);
    d.evidence.push(long_ev);
    // The p99 of three short replicates swings widely; the mean, over every request, less.
    let slowed = |c: &ClassFigures| {
        wholly_above(c.mix_p99_ms, c.alone_p99_ms).unwrap_or(false)
            || wholly_above(c.mix_mean_ms, c.alone_mean_ms).unwrap_or(false)
    };
    let (short_slowed, long_slowed) = (slowed(&m.short), slowed(&m.long));
    let speed = |c: &ClassFigures| match (c.alone_mean_ms, c.mix_mean_ms) {
        (Some(a), Some(x)) if x.mean > 0.0 => Some(a.mean / x.mean),
        _ => None,
    };
    let jain = match (speed(&m.short), speed(&m.long)) {
        (Some(a), Some(b)) if a + b > 0.0 => Some((a + b).powi(2) / (2.0 * (a * a + b * b))),
        _ => None,
    };
    if let Some(j) = jain {
        d.evidence.push(Evidence {
            claim: format!(
                "Jain's fairness index over the classes' speed in the mix relative to alone (mean TTFT alone / in the mix): {j:.2} (1 when both slow alike, 0.5 when one bears it all)."
            ),
            figures: fig(&[
                ("jain_index", Some(j)),
                ("short_speed", speed(&m.short)),
                ("long_speed", speed(&m.long)),
            ]),
            at: m.point.clone(),
        });
    }
    let hol = wholly_above(m.behind_ms, m.clear_ms).unwrap_or(false);
    if let (Some(b), Some(c)) = (m.behind_ms, m.clear_ms) {
        d.evidence.push(Evidence {
            claim: format!(
                "Short requests sent while a long one awaited its first token ({:.0} % of them) took {:.1} ms [{:.1}, {:.1}] to their first token; the others {:.1} ms [{:.1}, {:.1}]{}.",
                m.behind_share.unwrap_or(0.0) * 100.0,
                b.mean,
                b.lo,
                b.hi,
                c.mean,
                c.lo,
                c.hi,
                if hol { ": they wait behind long prefills" } else { "" }
            ),
            figures: fig(&[
                ("behind_ttft_mean_ms", Some(b.mean)),
                ("behind_ttft_mean_ms_lo", Some(b.lo)),
                ("behind_ttft_mean_ms_hi", Some(b.hi)),
                ("clear_ttft_mean_ms", Some(c.mean)),
                ("clear_ttft_mean_ms_lo", Some(c.lo)),
                ("clear_ttft_mean_ms_hi", Some(c.hi)),
                ("behind_share", m.behind_share),
            ]),
            at: m.point.clone(),
        });
    }
    let within = |c: &ClassFigures| match (c.mix_p99_ms, c.alone_p99_ms) {
        (Some(x), Some(a)) => x.mean <= a.mean * (1.0 + STARVED_MIN_GROWTH),
        _ => false,
    };
    let rate = m.offered_rps;
    let (verdict, confidence) = match (short_slowed, long_slowed) {
        (true, false) if hol => ("head-of-line", "high"),
        (true, false) => ("short-starved", "medium"),
        (false, true) => ("long-starved", "medium"),
        (true, true) if jain.is_some_and(|j| j >= FAIR_JAIN) => ("fair", "medium"),
        (true, true) if hol => ("head-of-line", "medium"),
        (true, true) => ("inconclusive", "low"),
        (false, false)
            if hol
                && matches!((m.short.mix_mean_ms, m.short.alone_mean_ms),
                    (Some(x), Some(a)) if x.mean >= a.mean * (1.0 + STARVED_MIN_GROWTH)) =>
        {
            ("head-of-line", "medium")
        }
        (false, false) if within(&m.short) && within(&m.long) => ("fair", "high"),
        (false, false) => ("inconclusive", "low"),
    };
    d.verdict = verdict.into();
    d.confidence = confidence.into();
    let (s, l) = (&m.short.scenario, &m.long.scenario);
    d.summary = match verdict {
        "head-of-line" => format!(
            "At {rate:.3} req/s the short requests ({s}) starve: their p99 TTFT in the mix is far above their own, and those sent while a long request ({l}) was in prefill waited for it."
        ),
        "short-starved" => format!(
            "At {rate:.3} req/s the short requests ({s}) are slowed by the long ones ({l}) beyond what they see alone, though not visibly behind long prefills: they wait for the server's capacity the long requests hold."
        ),
        "long-starved" => format!(
            "At {rate:.3} req/s the long requests ({l}) are slowed by the mix while the short ones ({s}) are not: the scheduler favours short requests."
        ),
        "fair" if short_slowed => format!(
            "At {rate:.3} req/s both classes slow in the mix by similar factors (Jain's index {:.2}): the mix's total load, not starvation.",
            jain.unwrap_or(1.0)
        ),
        "fair" => format!(
            "At {rate:.3} req/s neither class is slowed by the other: each keeps its p99 TTFT within 20 % of its own."
        ),
        _ => format!(
            "At {rate:.3} req/s the classes' TTFT moved, but not beyond their intervals or the 20 % the rule asks: inconclusive."
        ),
    };
    match verdict {
        "head-of-line" | "short-starved" => {
            d.actions.push("Split long prefills so short requests are not held behind them: vLLM --enable-chunked-prefill with --max-num-batched-tokens 2048 (or less), SGLang --chunked-prefill-size, TGI --max-batch-prefill-tokens.".into());
            d.actions.push("Give short, interactive requests priority (vLLM --scheduling-policy priority with a per-request priority), or route long prompts to their own replicas (prefill/decode disaggregation).".into());
            d.actions.push("Confirm the fix with this playbook's spec (`yardstick playbook show starvation ...`) and `yardstick compare` of the two runs.".into());
        }
        "long-starved" => {
            d.actions.push("Check the scheduler's priority or shortest-first settings and add an age bound, so long requests are admitted after a wait instead of indefinitely overtaken.".into());
        }
        "fair" => {
            d.actions.push(format!(
                "No starvation at this rate; to see where either class's tail starts, run `yardstick playbook tail-latency --url URL --model M --scenario \"{s}\"` (and the long class)."
            ));
        }
        _ => {
            d.actions.push("Narrow the intervals: more replicates or requests (--replicates 5, --requests 600), on a quieter client machine.".into());
        }
    }
    d
}

/// What one rank of a multi-rank job measured, per replicate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankFigures {
    /// The rank.
    pub rank: u32,
    /// The node it ran on, when known.
    pub node: Option<String>,
    /// Per replicate: measured steps in which it was the slowest rank.
    pub slowest_steps: Vec<u64>,
    /// Per replicate: measured steps it reported.
    pub steps: Vec<u64>,
    /// Per replicate: its median step time over the median of the other ranks' medians.
    pub median_ratio: Vec<f64>,
}

/// The least excess of a straggler's median step time over the others' (the node-to-node band).
pub const STRAGGLER_MIN_EXCESS: f64 = 0.05;

/// The rule of [`stragglers`], as stated in the diagnosis.
pub const STRAGGLERS_RULE: &str = "With N ranks, a rank is a straggler when (1) pooled over the \
replicates, the Wilson 95 % interval of the share of steps in which it was the slowest rank lies \
wholly above twice its fair share (2/N, at most 1/2); (2) persistently: in every replicate it was \
the slowest in more than 1/N of the steps; and (3) materially: its median step time is at least \
5 % above the median of the other ranks' medians (the mean over replicates). No rank meeting (1) \
and every rank's median within 5 % of the others' is no-straggler; anything else is \
inconclusive.";

/// The stragglers diagnosis of a multi-rank job's replicates.
pub fn stragglers(ranks: &[RankFigures]) -> Diagnosis {
    let mut d = Diagnosis {
        playbook: "stragglers".into(),
        question: "Is one rank (one node, one device) slower than the others, persistently?".into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: STRAGGLERS_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    let n = ranks.len();
    if n < 2 {
        d.summary = format!(
            "{n} rank(s) reported step times: a straggler needs at least two ranks to compare."
        );
        d.actions.push("Run the job with two or more ranks (`--tasks 2`), each reporting `rank` and `step_time_s` (docs/metric-protocol.md).".into());
        return d;
    }
    let fair = 1.0 / n as f64;
    let bar = (2.0 * fair).min(0.5);
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let mut stragglers = Vec::new();
    let mut flagged_any = false;
    let mut spread_ok = true;
    for r in ranks {
        let (k, total) = (
            r.slowest_steps.iter().sum::<u64>(),
            r.steps.iter().sum::<u64>(),
        );
        if total == 0 {
            continue;
        }
        let [lo, hi] = yardstick_stats::proportion::wilson(k, total, 0.95);
        let share = k as f64 / total as f64;
        let persistent = r
            .slowest_steps
            .iter()
            .zip(&r.steps)
            .all(|(&k, &t)| t > 0 && k as f64 / t as f64 > fair);
        let ratio = mean(&r.median_ratio).unwrap_or(1.0);
        let material = ratio >= 1.0 + STRAGGLER_MIN_EXCESS;
        if ratio > 1.0 + STRAGGLER_MIN_EXCESS {
            spread_ok = false;
        }
        let often = lo > bar;
        flagged_any |= often;
        if often || material {
            d.evidence.push(Evidence {
                claim: format!(
                    "Rank {}{} was the slowest in {:.0} % of {} steps [{:.0} %, {:.0} %] (fair share {:.0} %), {} replicate, and its median step time is {:+.1} % against the other ranks'.",
                    r.rank,
                    r.node.as_ref().map(|n| format!(" (node {n})")).unwrap_or_default(),
                    share * 100.0,
                    total,
                    lo * 100.0,
                    hi * 100.0,
                    fair * 100.0,
                    if persistent { "above its fair share in every" } else { "not above its fair share in every" },
                    (ratio - 1.0) * 100.0
                ),
                figures: fig(&[
                    ("rank", Some(f64::from(r.rank))),
                    ("slowest_share", Some(share)),
                    ("slowest_share_lo", Some(lo)),
                    ("slowest_share_hi", Some(hi)),
                    ("fair_share", Some(fair)),
                    ("steps", Some(total as f64)),
                    ("median_step_time_ratio", Some(ratio)),
                ]),
                at: format!("rank {}", r.rank),
            });
        }
        if often && persistent && material {
            stragglers.push(r);
        }
    }
    if !stragglers.is_empty() {
        let names: Vec<String> = stragglers
            .iter()
            .map(|r| match &r.node {
                Some(n) => format!("rank {} on {n}", r.rank),
                None => format!("rank {}", r.rank),
            })
            .collect();
        d.verdict = "straggler".into();
        d.confidence = if stragglers[0].steps.len() >= 3 {
            "high"
        } else {
            "medium"
        }
        .into();
        d.summary = format!(
            "{} is a straggler: the slowest rank in most steps of every replicate, its median step {:.0} % above the others'; every step waits for it.",
            names.join(", "),
            (mean(&stragglers[0].median_ratio).unwrap_or(1.0) - 1.0) * 100.0
        );
        for r in &stragglers {
            match &r.node {
                Some(node) => {
                    d.actions.push(format!(
                        "Drain the node (Slurm): scontrol update nodename={node} state=drain reason=\"yardstick: rank {} straggler\"",
                        r.rank
                    ));
                    d.actions.push(format!("Or cordon it (Kubernetes): kubectl cordon {node}"));
                }
                None => d.actions.push(format!(
                    "Find the device or node rank {} ran on and isolate it; then re-run to see the job return to its baseline.",
                    r.rank
                )),
            }
        }
        d.actions.push("Check the node before returning it: its telemetry in this run (clocks, temperature, throttling), then `yardstick run --preset multinode-readiness` and `yardstick nodes check` against its peers.".into());
        return d;
    }
    if !flagged_any && spread_ok {
        d.verdict = "no-straggler".into();
        d.confidence = if ranks.iter().all(|r| r.steps.len() >= 3) {
            "high"
        } else {
            "medium"
        }
        .into();
        d.summary = format!(
            "No rank is a straggler: none was the slowest in more than {:.0} % of the steps with confidence, and every rank's median step time is within 5 % of the others'.",
            bar * 100.0
        );
        d.actions.push("Nothing to drain. If the job is still slower than expected, look at the step itself: `yardstick bench exec --profile torch -- CMD`.".into());
        return d;
    }
    d.summary = "A rank is slower in some steps or replicates, but not persistently and materially enough for the rule: inconclusive.".into();
    d.actions.push("Run more steps or replicates (--steps, --replicates) to tell an intermittent slowdown from noise, and watch the node's telemetry during the run.".into());
    d
}

/// What one point of a backpressure experiment measured (means over replicates, intervals
/// where the rule reads them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PressurePoint {
    /// The point id.
    pub point: String,
    /// The offered rate, requests/s.
    pub offered_rps: f64,
    /// The rate served, requests/s, with its interval.
    pub achieved_rps: Option<Estimate>,
    /// p99 TTFT of the requests answered, ms, with its interval (waits to retry included).
    pub ttft_p99_ms: Option<Estimate>,
    /// Share of attempts turned away with 429 or 503, with its interval (`None`: none was).
    pub refused_share: Option<Estimate>,
    /// Share of the refusals that carried `Retry-After`.
    pub retry_after_share: Option<f64>,
    /// Answered requests over measured requests.
    pub served_share: Option<f64>,
    /// Attempts per request (the retrying client).
    pub attempts_per_request: Option<f64>,
    /// The server's waiting requests, median and largest over its scrapes.
    pub server_waiting_p50: Option<f64>,
    /// The largest.
    pub server_waiting_max: Option<f64>,
}

/// The points of a backpressure experiment: below what the server sustains, above it with a
/// client that takes a refusal as final, and above it with one that retries as told.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PressureFigures {
    /// Below capacity, no retries.
    pub below: Option<PressurePoint>,
    /// Above capacity, no retries.
    pub over: Option<PressurePoint>,
    /// Above capacity, retrying refusals (honouring `Retry-After`).
    pub retrying: Option<PressurePoint>,
}

/// The least share of attempts turned away that counts as shedding load (besides its interval).
pub const SHED_MIN_SHARE: f64 = 0.01;

/// The rule of [`backpressure`], as stated in the diagnosis.
pub const BACKPRESSURE_RULE: &str = "The overloaded point offers more than the server sustains, \
from a client that takes a refusal as final. The server sheds load when the interval of the share \
of attempts it turned away (429 or 503) lies wholly above 0 and its mean is at least 1 %; it says \
when to come back when at least half of those refusals carried Retry-After (sheds-load), \
otherwise sheds-without-retry-after. Turning nothing away, it queues without bound \
(unbounded-queue) when the overloaded point's served rate falls below 90 % of the offered rate \
(its interval wholly below) or its p99 TTFT interval lies wholly above the below-capacity \
point's and at least twice it; otherwise it kept up (not-overloaded: offer more). Confidence is \
high when the deciding interval clears its threshold by a factor of 2 (the refused share's lower \
bound above 1 %, or the p99 at least 4 times), medium otherwise.";

fn pressure_evidence(claim: String, p: &PressurePoint) -> Evidence {
    let e = |x: Option<Estimate>| x.map(|x| (x.mean, x.lo, x.hi));
    let (a, t, r) = (e(p.achieved_rps), e(p.ttft_p99_ms), e(p.refused_share));
    Evidence {
        claim,
        figures: fig(&[
            ("offered_rps", Some(p.offered_rps)),
            ("achieved_rps", a.map(|x| x.0)),
            ("achieved_rps_lo", a.map(|x| x.1)),
            ("achieved_rps_hi", a.map(|x| x.2)),
            ("ttft_p99_ms", t.map(|x| x.0)),
            ("ttft_p99_ms_lo", t.map(|x| x.1)),
            ("ttft_p99_ms_hi", t.map(|x| x.2)),
            ("refused_share", Some(r.map_or(0.0, |x| x.0))),
            ("refused_share_lo", r.map(|x| x.1)),
            ("refused_share_hi", r.map(|x| x.2)),
            ("retry_after_share", p.retry_after_share),
            ("served_share", p.served_share),
            ("attempts_per_request", p.attempts_per_request),
            ("server_waiting_p50", p.server_waiting_p50),
            ("server_waiting_max", p.server_waiting_max),
        ]),
        at: p.point.clone(),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

/// The backpressure diagnosis of a server offered more than it sustains.
pub fn backpressure(f: &PressureFigures) -> Diagnosis {
    let mut d = Diagnosis {
        playbook: "backpressure".into(),
        question: "What does the server do when offered more than it can serve: turn requests away and say when to come back, or queue them without bound?".into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: BACKPRESSURE_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    let (Some(below), Some(over)) = (&f.below, &f.over) else {
        d.summary = "The run lacks a point below or above capacity: nothing to compare.".into();
        d.actions.push("Let `yardstick playbook show backpressure --url URL --model M` write the spec, and check the server answers.".into());
        return d;
    };
    let waiting = |p: &PressurePoint| match (p.server_waiting_p50, p.server_waiting_max) {
        (Some(m), Some(x)) => {
            format!("; the server held {m:.0} requests waiting (median, {x:.0} at most)")
        }
        _ => String::new(),
    };
    let p99 = |p: &PressurePoint| {
        p.ttft_p99_ms.map_or("no p99 TTFT".to_string(), |t| {
            format!("p99 TTFT {:.1} ms [{:.1}, {:.1}]", t.mean, t.lo, t.hi)
        })
    };
    let served = |p: &PressurePoint| {
        p.achieved_rps.map_or("nothing".to_string(), |a| {
            format!("{:.3} req/s [{:.3}, {:.3}]", a.mean, a.lo, a.hi)
        })
    };
    d.evidence.push(pressure_evidence(
        format!(
            "Below capacity, {:.3} req/s offered: {} served, {}{}.",
            below.offered_rps,
            served(below),
            p99(below),
            waiting(below)
        ),
        below,
    ));
    let refused = over.refused_share.unwrap_or(Estimate {
        mean: 0.0,
        lo: 0.0,
        hi: 0.0,
    });
    let sheds = refused.lo > 0.0 && refused.mean >= SHED_MIN_SHARE;
    d.evidence.push(pressure_evidence(
        format!(
            "Overloaded, {:.3} req/s offered and refusals taken as final: {} served, {} of attempts turned away [{}, {}]{}, {} of the answered{}.",
            over.offered_rps,
            served(over),
            pct(refused.mean),
            pct(refused.lo),
            pct(refused.hi),
            over.retry_after_share.map_or(String::new(), |s| format!(" ({} with Retry-After)", pct(s))),
            p99(over),
            waiting(over)
        ),
        over,
    ));
    if let Some(r) = &f.retrying {
        d.evidence.push(pressure_evidence(
            format!(
                "Overloaded, {:.3} req/s offered by a client that retries as told: {} of requests answered in the end (against {} without retrying), {:.2} attempts per request, {} including the waits.",
                r.offered_rps,
                pct(r.served_share.unwrap_or(0.0)),
                pct(over.served_share.unwrap_or(0.0)),
                r.attempts_per_request.unwrap_or(1.0),
                p99(r)
            ),
            r,
        ));
    }
    let capacity = below.achieved_rps.map_or(below.offered_rps, |a| a.mean);
    if sheds {
        let told = over.retry_after_share.unwrap_or(0.0) >= 0.5;
        d.verdict = if told {
            "sheds-load"
        } else {
            "sheds-without-retry-after"
        }
        .into();
        d.confidence = if refused.lo >= 2.0 * SHED_MIN_SHARE {
            "high"
        } else {
            "medium"
        }
        .into();
        d.summary = format!(
            "Offered {:.3} req/s, more than it sustains, the server turned away {} of attempts{}.",
            over.offered_rps,
            pct(refused.mean),
            if told {
                " and said when to come back (Retry-After): clients can back off as told"
            } else {
                " without saying when to come back (no Retry-After): clients can only guess, and naive ones retry at once"
            }
        );
        if let (Some(o), Some(b)) = (over.ttft_p99_ms, below.ttft_p99_ms)
            && o.lo > b.hi
            && o.mean >= 4.0 * b.mean
        {
            d.evidence.push(Evidence {
                claim: format!(
                    "The requests it admitted still waited: p99 TTFT {:.1} ms overloaded against {:.1} ms below capacity ({:.1}x). Its queue is long for its service rate.",
                    o.mean,
                    b.mean,
                    o.mean / b.mean
                ),
                figures: fig(&[("ttft_p99_growth", Some(o.mean / b.mean))]),
                at: over.point.clone(),
            });
            d.actions.push("Shorten the server's waiting queue (fewer waiting requests admitted before refusing), so admitted requests keep their latency and the rest are told to come back.".into());
        }
        if !told {
            d.actions.push("Have the server or its gateway send Retry-After with 429/503, so clients wait as long as needed and no longer.".into());
            d.actions.push("Clients: back off exponentially with jitter (measure one with `yardstick bench serve --retry-on 429,503 --ignore-retry-after`).".into());
        } else {
            d.actions.push("Clients should honour Retry-After (the OpenAI SDKs do; measure yours with `yardstick bench serve --retry-on 429,503`).".into());
        }
        d.actions.push(format!(
            "Plan capacity: below about {capacity:.3} req/s per replica at this traffic nothing is turned away; add replicas before the offered load reaches it."
        ));
    } else {
        let short = over
            .achieved_rps
            .is_some_and(|a| a.hi < SATURATED_SHARE * over.offered_rps);
        let grew = match (over.ttft_p99_ms, below.ttft_p99_ms) {
            (Some(o), Some(b)) => o.lo > b.hi && o.mean >= 2.0 * b.mean,
            _ => false,
        };
        if short || grew {
            d.verdict = "unbounded-queue".into();
            let strong = over
                .ttft_p99_ms
                .zip(below.ttft_p99_ms)
                .is_some_and(|(o, b)| o.mean >= 4.0 * b.mean);
            d.confidence = if strong { "high" } else { "medium" }.into();
            d.summary = format!(
                "Offered {:.3} req/s, more than it sustains, the server turned nothing away: it queued the excess, so {} instead of a refusal clients could act on.",
                over.offered_rps,
                if grew {
                    format!(
                        "p99 TTFT grew from {:.1} ms to {:.1} ms",
                        below.ttft_p99_ms.map_or(0.0, |t| t.mean),
                        over.ttft_p99_ms.map_or(0.0, |t| t.mean)
                    )
                } else {
                    "it served less than offered".to_string()
                }
            );
            d.actions.push("Put admission control in front: a queue limit that answers 429 with Retry-After once it is full (the server's own, e.g. TGI --max-concurrent-requests, or a gateway's rate limit).".into());
            d.actions.push(format!(
                "Until then keep the offered load below about {capacity:.3} req/s per replica; `yardstick playbook tail-latency` finds where p99 TTFT departs."
            ));
        } else {
            d.verdict = "not-overloaded".into();
            d.confidence = "medium".into();
            d.summary = format!(
                "Offered {:.3} req/s, the server kept up: nothing turned away, the served rate and p99 TTFT held. This load does not exceed what it sustains.",
                over.offered_rps
            );
            d.actions.push("Offer more: a higher --overload, or --capacity with the rate the server really sustains.".into());
        }
    }
    d
}

/// What a scheduler burst measured (a command point of `yardstick bench scheduler`; figures
/// over replicates).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SchedulerFigures {
    /// The point id.
    pub point: String,
    /// Submissions per second asked for.
    pub offered_per_s: f64,
    /// Submissions per second achieved.
    pub submitted_per_s: Option<Estimate>,
    /// Jobs started per second.
    pub started_per_s: Option<Estimate>,
    /// Jobs started before the timeout, over jobs submitted.
    pub started_share: Option<Estimate>,
    /// Median seconds `sbatch` took.
    pub submit_p50_s: Option<Estimate>,
    /// Median seconds from submission to a job's first instruction.
    pub start_latency_p50_s: Option<Estimate>,
    /// Mean start latency of the first quarter of the jobs, seconds.
    pub first_quarter_s: Option<Estimate>,
    /// Mean start latency of the last quarter, seconds.
    pub last_quarter_s: Option<Estimate>,
}

/// The rule of [`scheduler_backpressure`], as stated in the diagnosis.
pub const SCHEDULER_RULE: &str = "A burst of short jobs is submitted at an open-loop rate, each \
stamping its start. The scheduler is backlogged when jobs did not all start before the timeout, \
when the interval of jobs started per second lies wholly below 90 % of the submitted rate, or \
when the last quarter's start latency has an interval wholly above the first quarter's, at least \
twice it and 1 s more (each job waits longer than the one before: a queue builds); high \
confidence with two of these, medium with one. Otherwise submission is slow when the submitted \
rate's interval lies wholly below 90 % of the offered rate (sbatch answers slower than the \
burst asks: the controller pushes back at admission). Otherwise the scheduler keeps up when the \
last quarter's start latency is within twice the first quarter's or 1 s of it; anything else is \
inconclusive.";

/// The backpressure diagnosis of a scheduler burst.
pub fn scheduler_backpressure(f: Option<&SchedulerFigures>) -> Diagnosis {
    let mut d = Diagnosis {
        playbook: "backpressure".into(),
        question: "Does the scheduler keep up with a burst of submissions, or do jobs queue?"
            .into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: SCHEDULER_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    let Some(f) = f else {
        d.summary = "The run has no scheduler burst with figures: nothing to diagnose.".into();
        d.actions.push("Check that Slurm answers (`sbatch --wrap true`) and run `yardstick bench scheduler --jobs 5 --rate 1` by hand.".into());
        return d;
    };
    let m = |e: Option<Estimate>| e.map(|e| e.mean);
    let show = |e: Option<Estimate>| {
        e.map_or("-".to_string(), |e| {
            format!("{:.3} [{:.3}, {:.3}]", e.mean, e.lo, e.hi)
        })
    };
    d.evidence.push(Evidence {
        claim: format!(
            "Offered {:.3} jobs/s: {} submitted and {} started per second; {} of the jobs started before the timeout.",
            f.offered_per_s,
            show(f.submitted_per_s),
            show(f.started_per_s),
            f.started_share.map_or("-".to_string(), |s| pct(s.mean))
        ),
        figures: fig(&[
            ("offered_per_s", Some(f.offered_per_s)),
            ("submitted_per_s", m(f.submitted_per_s)),
            ("submitted_per_s_lo", f.submitted_per_s.map(|e| e.lo)),
            ("started_per_s", m(f.started_per_s)),
            ("started_per_s_lo", f.started_per_s.map(|e| e.lo)),
            ("started_per_s_hi", f.started_per_s.map(|e| e.hi)),
            ("started_share", m(f.started_share)),
        ]),
        at: f.point.clone(),
    });
    d.evidence.push(Evidence {
        claim: format!(
            "sbatch answered in {} s (median); a job waited {} s from its submission to its first instruction (median): {} s for the first quarter of the jobs, {} s for the last.",
            show(f.submit_p50_s),
            show(f.start_latency_p50_s),
            show(f.first_quarter_s),
            show(f.last_quarter_s)
        ),
        figures: fig(&[
            ("submit_p50_s", m(f.submit_p50_s)),
            ("start_latency_p50_s", m(f.start_latency_p50_s)),
            ("first_quarter_s", m(f.first_quarter_s)),
            ("first_quarter_s_hi", f.first_quarter_s.map(|e| e.hi)),
            ("last_quarter_s", m(f.last_quarter_s)),
            ("last_quarter_s_lo", f.last_quarter_s.map(|e| e.lo)),
        ]),
        at: f.point.clone(),
    });
    let unstarted = f.started_share.is_some_and(|s| s.mean < 1.0);
    let slower = match (f.started_per_s, f.submitted_per_s) {
        (Some(st), Some(su)) => st.hi < SATURATED_SHARE * su.mean,
        _ => false,
    };
    let growing = match (f.first_quarter_s, f.last_quarter_s) {
        (Some(a), Some(z)) => z.lo > a.hi && z.mean >= 2.0 * a.mean && z.mean >= a.mean + 1.0,
        _ => false,
    };
    let signs = [unstarted, slower, growing].iter().filter(|x| **x).count();
    let throttled = f
        .submitted_per_s
        .is_some_and(|su| su.hi < SATURATED_SHARE * f.offered_per_s);
    let steady = match (f.first_quarter_s, f.last_quarter_s) {
        (Some(a), Some(z)) => z.mean <= 2.0 * a.mean || z.mean <= a.mean + 1.0,
        _ => false,
    };
    if signs > 0 {
        d.verdict = "backlogged".into();
        d.confidence = if signs >= 2 { "high" } else { "medium" }.into();
        d.summary = format!(
            "Submitted at {:.3} jobs/s, the cluster started {} per second: jobs queue, each waiting longer than the one before{}.",
            m(f.submitted_per_s).unwrap_or(f.offered_per_s),
            m(f.started_per_s).map_or("fewer".to_string(), |x| format!("{x:.3}")),
            if unstarted {
                ", and some never started before the timeout"
            } else {
                ""
            }
        );
        d.actions.push("See why jobs pend: `squeue -t PD -o '%i %r'` (Resources, Priority, a QOS or partition limit) and `sdiag` (the main and backfill scheduler's cycle times).".into());
        d.actions.push("Submit many short tasks as one job array (`sbatch --array=0-N`): one submission and one scheduling decision instead of N.".into());
        d.actions.push("Size bursts to the partition's free slots (`sinfo -o '%P %C'`), or give short jobs a partition or QOS of their own.".into());
    } else if throttled {
        d.verdict = "slow-submission".into();
        d.confidence = "medium".into();
        d.summary = format!(
            "The burst asked for {:.3} submissions per second but sbatch answered slower ({} s median): the controller pushes back at admission.",
            f.offered_per_s,
            show(f.submit_p50_s)
        );
        d.actions.push("Look at the controller's RPC load with `sdiag` (server thread count, RPC counts by type and user) and `SchedulerParameters` (`max_rpc_cnt`, `defer`).".into());
        d.actions.push("Submit job arrays instead of single jobs; cut polling (`squeue` in loops) that competes for the controller.".into());
    } else if steady {
        d.verdict = "keeps-up".into();
        d.confidence = "medium".into();
        d.summary = format!(
            "The scheduler kept up with {:.3} submissions per second: jobs started as fast as they came, the last ones as soon as the first.",
            f.offered_per_s
        );
        d.actions.push("Raise --rate or --hold (jobs that keep their slots) to find where it stops keeping up.".into());
    } else {
        d.summary = "Start latency moved, but not beyond its intervals or the thresholds of the rule: inconclusive.".into();
        d.actions.push(
            "Narrow the intervals: more jobs or replicates (--jobs 60, --replicates 5).".into(),
        );
    }
    d
}

/// What one node of a readiness run showed: its environment capture, reduced to what must hold
/// on every node of a multi-node job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NodeState {
    /// The node.
    pub node: String,
    /// Whether its environment was captured.
    pub captured: bool,
    /// GPUs NVML saw.
    pub gpus: u32,
    /// The GPU driver version, when there is one.
    pub driver: Option<String>,
    /// The highest CUDA version the driver supports.
    pub cuda_driver: Option<String>,
    /// GPUs whose PCIe link trained narrower than its maximum (`GPU 3: x8 of x16`).
    pub narrow_links: Vec<String>,
    /// GPUs with NVLink links down (`GPU 1: 10 of 18 active`).
    pub nvlink_down: Vec<String>,
    /// GPUs with uncorrected ECC errors since the driver loaded (`GPU 0: 2`).
    pub ecc_uncorrected: Vec<String>,
}

/// What a readiness run measured: each node's state, the nodes check's flags over the micro
/// figures (node → why), how many nodes it compared, and what every node must have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReadinessFigures {
    /// Every node of the allocation, as captured.
    pub nodes: Vec<NodeState>,
    /// Nodes the micro figures compared.
    pub compared: usize,
    /// Nodes whose micro figures the nodes check flagged, with its reasons.
    pub flagged: BTreeMap<String, Vec<String>>,
    /// GPUs every node must have (`expect.gpusPerNode`).
    pub gpus_per_node: Option<u32>,
    /// The nccl-tests outputs read (`expect.ncclTests`).
    pub nccl: Vec<NcclFigures>,
    /// The average bus bandwidth each must reach, GB/s (`expect.ncclMinBusbw`).
    pub nccl_min_busbw: Option<f64>,
}

/// What one nccl-tests output showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NcclFigures {
    /// The file, as the spec names it.
    pub file: String,
    /// The collective (`all_reduce`...).
    pub op: String,
    /// The hosts its ranks ran on (its device lines).
    pub hosts: Vec<String>,
    /// Ranks.
    pub ranks: usize,
    /// `# Avg bus bandwidth`, GB/s.
    pub avg_busbw: Option<f64>,
    /// The largest bus bandwidth of any message size, GB/s, and that size in bytes.
    pub peak_busbw: Option<(f64, u64)>,
    /// Why its collectives cannot be trusted: wrong elements, out-of-bounds values.
    pub failed: Option<String>,
}

/// The rule of [`readiness`], as stated in the diagnosis.
pub const READINESS_RULE: &str = "A node is not ready when its environment could not be \
captured; when it has fewer GPUs than every node must (expect.gpusPerNode); when a GPU's PCIe \
link trained narrower than its maximum, NVLink links are down, or uncorrected ECC errors were \
counted since the driver loaded; when its GPU driver or CUDA driver version differs from most \
nodes'; or when the nodes check flagged its micro figures (memory bandwidth, GEMM, GPU probes) \
beyond the tolerance against the other nodes' median. nccl-tests outputs given with the run \
(expect.ncclTests) count too: collectives that returned wrong data (or an output that cannot \
be read), or an average bus \
bandwidth below expect.ncclMinBusbw, make the hosts of that run not ready. Any node not ready \
makes the allocation not-ready, with that node to drain (high confidence). Otherwise it is ready: high confidence \
when the micro figures of two or more nodes were compared, medium with one node (nothing to \
compare it with). Nothing captured and nothing compared is inconclusive.";

/// The readiness diagnosis of an allocation checked before a multi-node workload.
pub fn readiness(f: &ReadinessFigures) -> Diagnosis {
    let mut d = Diagnosis {
        playbook: "readiness".into(),
        question: "Is every node of the allocation fit for a multi-node workload?".into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: READINESS_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    if f.nodes.iter().all(|n| !n.captured) && f.compared == 0 && f.nccl.is_empty() {
        d.summary = "No node's environment was captured and no micro figures were compared: nothing to judge.".into();
        d.actions.push("Check that the job ran (`yardstick report RUN`, the run's slurm/ folder) and that `yardstick env` runs on the nodes.".into());
        return d;
    }
    // The version most nodes run: a node on another is out of step.
    let majority = |pick: fn(&NodeState) -> Option<&String>| {
        let mut count: BTreeMap<&String, usize> = BTreeMap::new();
        for n in &f.nodes {
            if let Some(v) = pick(n) {
                *count.entry(v).or_default() += 1;
            }
        }
        count
            .into_iter()
            .max_by_key(|(_, c)| *c)
            .map(|(v, _)| v.clone())
    };
    let driver = majority(|n| n.driver.as_ref());
    let cuda = majority(|n| n.cuda_driver.as_ref());
    let mut bad: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in &f.nodes {
        let mut why = Vec::new();
        if !n.captured {
            why.push("its environment could not be captured".to_string());
        }
        if let Some(want) = f.gpus_per_node
            && n.captured
            && n.gpus < want
        {
            why.push(format!("{} GPUs where every node must have {want}", n.gpus));
        }
        for l in &n.narrow_links {
            why.push(format!("PCIe link narrower than its maximum ({l})"));
        }
        for l in &n.nvlink_down {
            why.push(format!("NVLink links down ({l})"));
        }
        for e in &n.ecc_uncorrected {
            why.push(format!("uncorrected ECC errors ({e})"));
        }
        if let (Some(v), Some(m)) = (&n.driver, &driver)
            && v != m
        {
            why.push(format!("GPU driver {v} where most nodes run {m}"));
        }
        if let (Some(v), Some(m)) = (&n.cuda_driver, &cuda)
            && v != m
        {
            why.push(format!("CUDA driver {v} where most nodes support {m}"));
        }
        if !why.is_empty() {
            bad.entry(n.node.clone()).or_default().extend(why);
        }
    }
    for (node, why) in &f.flagged {
        bad.entry(node.clone()).or_default().extend(
            why.iter()
                .map(|w| format!("the nodes check flagged it: {w}")),
        );
    }
    let mut nccl_evidence = Vec::new();
    let mut unplaced: Vec<String> = Vec::new();
    for n in &f.nccl {
        let problem = match (&n.failed, n.avg_busbw, f.nccl_min_busbw) {
            (Some(why), _, _) => Some(format!(
                "nccl-tests {} ({}) cannot be trusted: {why}",
                n.op, n.file
            )),
            (None, Some(avg), Some(min)) if avg < min => Some(format!(
                "nccl-tests {} ({}) averaged {avg:.1} GB/s of bus bandwidth, below the {min} GB/s required",
                n.op, n.file
            )),
            _ => None,
        };
        nccl_evidence.push(Evidence {
            claim: match &problem {
                Some(p) => format!("{p}."),
                None => format!(
                    "nccl-tests {} ({}): {} ranks on {}, average bus bandwidth {}, peak {}.",
                    n.op,
                    n.file,
                    n.ranks,
                    if n.hosts.is_empty() {
                        "unnamed hosts".to_string()
                    } else {
                        n.hosts.join(", ")
                    },
                    n.avg_busbw
                        .map_or("not printed".into(), |v| format!("{v:.1} GB/s")),
                    n.peak_busbw
                        .map_or("not measured".into(), |(v, size)| format!(
                            "{v:.1} GB/s at {size} B"
                        )),
                ),
            },
            figures: fig(&[
                ("avg_busbw_gbps", n.avg_busbw),
                ("peak_busbw_gbps", n.peak_busbw.map(|p| p.0)),
                ("min_busbw_gbps", f.nccl_min_busbw),
                ("ranks", Some(n.ranks as f64)),
            ]),
            at: "expect.ncclTests".into(),
        });
        match problem {
            // The hosts its ranks ran on are not ready; an output that names none speaks for
            // the allocation as a whole.
            Some(p) if n.hosts.is_empty() => unplaced.push(p),
            Some(p) => {
                for h in &n.hosts {
                    bad.entry(h.clone()).or_default().push(p.clone());
                }
            }
            None => {}
        }
    }
    d.evidence.push(Evidence {
        claim: format!(
            "{} nodes captured ({} with GPUs{}); the micro figures of {} nodes compared by the nodes check.",
            f.nodes.iter().filter(|n| n.captured).count(),
            f.nodes.iter().filter(|n| n.gpus > 0).count(),
            driver.as_ref().map_or(String::new(), |v| format!(", driver {v}")),
            f.compared
        ),
        figures: fig(&[
            ("nodes", Some(f.nodes.len() as f64)),
            ("compared", Some(f.compared as f64)),
            ("gpus_per_node_expected", f.gpus_per_node.map(f64::from)),
        ]),
        at: "nodes".into(),
    });
    d.evidence.extend(nccl_evidence);
    for (node, why) in &bad {
        d.evidence.push(Evidence {
            claim: format!("Node {node} is not ready: {}.", why.join("; ")),
            figures: fig(&[(
                "gpus",
                f.nodes
                    .iter()
                    .find(|n| &n.node == node)
                    .map(|n| f64::from(n.gpus)),
            )]),
            at: node.clone(),
        });
    }
    if !unplaced.is_empty() && bad.is_empty() {
        d.verdict = "not-ready".into();
        d.confidence = "high".into();
        d.summary = format!(
            "The allocation is not ready: {}. The output names no hosts, so no node is singled out.",
            unplaced.join("; ")
        );
        d.actions.push("Run nccl-tests again per node pair (`srun -N2 -w A,B all_reduce_perf ...`) to find the link or node at fault, then drain it.".into());
        return d;
    }
    if !bad.is_empty() {
        let names: Vec<&str> = bad.keys().map(String::as_str).collect();
        d.verdict = "not-ready".into();
        d.confidence = "high".into();
        d.summary = format!(
            "{} of {} nodes are not ready ({}): drain them before the multi-node workload, or it runs at the pace of the worst.",
            bad.len(),
            f.nodes.len().max(f.compared).max(bad.len()),
            names.join(", ")
        );
        for u in &unplaced {
            d.summary.push_str(&format!(" Also: {u}."));
        }
        for node in &names {
            d.actions.push(format!(
                "Drain the node (Slurm): scontrol update nodename={node} state=drain reason=\"yardstick readiness: not ready\""
            ));
        }
        d.actions.push(format!(
            "Or cordon them (Kubernetes): kubectl cordon {}",
            names.join(" ")
        ));
        d.actions.push("Run the workload on the nodes that are ready (`sbatch --exclude=...`), and run this playbook again after the repair.".into());
    } else {
        d.verdict = "ready".into();
        d.confidence = if f.compared >= 2 { "high" } else { "medium" }.into();
        d.summary = if f.compared >= 2 {
            format!(
                "All {} nodes are ready: environments consistent, micro figures within tolerance of each other.",
                f.nodes.len().max(f.compared)
            )
        } else {
            "The node is ready: its environment holds what a workload needs; with one node there is no other to compare its micro figures with.".to_string()
        };
        d.actions.push("Run the workload; keep this run: `yardstick nodes check` against it tells a node that degrades later.".into());
    }
    d
}

/// What a triage run gathered: the machine, its ceilings, the workload's bottleneck class and
/// the serving headline when a server was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TriageFigures {
    /// The machine profile the run was taken on.
    pub machine_profile: Option<String>,
    /// Peak compute the micro layer measured, FLOP/s.
    pub peak_flops: Option<f64>,
    /// Memory bandwidth the micro layer measured, bytes/s.
    pub memory_bw: Option<f64>,
    /// The workload point classified.
    pub point: Option<String>,
    /// Its bottleneck class (`compute`, `memory`, `communication`, `input`, `control-plane`,
    /// `undetermined`).
    pub bottleneck: Option<String>,
    /// The classification's evidence, strongest first.
    pub bottleneck_evidence: Vec<String>,
    /// The serving point's headline: its id, p99 TTFT (ms), throughput (req/s).
    pub serve: Option<(String, Option<f64>, Option<f64>)>,
    /// The workload's profile, when one was taken: the tool, and its top entries by self time
    /// (name, share of the profiled time).
    pub profile: Option<(String, Vec<(String, f64)>)>,
}

/// The rule of [`triage`], as stated in the diagnosis.
pub const TRIAGE_RULE: &str = "The verdict is the bottleneck class of the workload the bundle \
ran (the reference trainer, or the command given), from the run's bottleneck analysis: its \
step time against the ceilings this machine's micro layer measured (compute, memory), and the \
shares of the step spent waiting for input or in collectives, or of the wall time outside the \
steps (control-plane). High confidence with measured ceilings and a class other than \
undetermined; medium without ceilings; inconclusive when no point was classified.";

/// The triage diagnosis: the intake bundle's answer to "what is this machine and workload
/// limited by?".
pub fn triage(f: &TriageFigures) -> Diagnosis {
    let mut d = Diagnosis {
        playbook: "triage".into(),
        question: "What is this machine, what does it measure, and what limits the workload?"
            .into(),
        verdict: "inconclusive".into(),
        confidence: "low".into(),
        summary: String::new(),
        rule: TRIAGE_RULE.into(),
        evidence: Vec::new(),
        actions: Vec::new(),
    };
    d.evidence.push(Evidence {
        claim: format!(
            "Machine {}: the micro layer measured {} peak compute and {} memory bandwidth.",
            f.machine_profile.as_deref().unwrap_or("(unknown profile)"),
            f.peak_flops
                .map_or("no".to_string(), |x| format!("{:.1} GFLOP/s", x / 1e9)),
            f.memory_bw
                .map_or("no".to_string(), |x| format!("{:.1} GB/s", x / 1e9))
        ),
        figures: fig(&[
            ("peak_gflops", f.peak_flops.map(|x| x / 1e9)),
            ("memory_gbps", f.memory_bw.map(|x| x / 1e9)),
        ]),
        at: "micro".into(),
    });
    if let Some((point, p99, rps)) = &f.serve {
        d.evidence.push(Evidence {
            claim: format!(
                "Serving: {} req/s at p99 TTFT {} ms.",
                rps.map_or("-".to_string(), |x| format!("{x:.2}")),
                p99.map_or("-".to_string(), |x| format!("{x:.1}"))
            ),
            figures: fig(&[("ttft_p99_ms", *p99), ("request_throughput", *rps)]),
            at: point.clone(),
        });
    }
    let (Some(point), Some(class)) = (&f.point, &f.bottleneck) else {
        d.summary = "No workload point was classified: the bundle holds the environment and the micro figures only.".into();
        d.actions.push("Check the workload ran (`yardstick report RUN`); a command must report steps through the metric protocol to be classified.".into());
        return d;
    };
    if let Some((tool, top)) = &f.profile {
        d.evidence.push(Evidence {
            claim: if top.is_empty() {
                format!("A {tool} profile was taken; it could not be read into top entries (see the report).")
            } else {
                format!(
                    "The {tool} profile's top entries by self time: {}.",
                    top.iter()
                        .map(|(n, s)| format!("{n} {:.0} %", s * 100.0))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            figures: top
                .iter()
                .map(|(n, s)| (format!("self_share.{n}"), round(*s)))
                .collect(),
            at: point.clone(),
        });
    }
    for e in &f.bottleneck_evidence {
        d.evidence.push(Evidence {
            claim: e.clone(),
            figures: BTreeMap::new(),
            at: point.clone(),
        });
    }
    d.verdict = class.clone();
    d.confidence = if class == "undetermined" {
        "low"
    } else if f.peak_flops.is_some() && f.memory_bw.is_some() {
        "high"
    } else {
        "medium"
    }
    .into();
    d.summary = match class.as_str() {
        "compute" => "The workload is compute-bound on this machine: its steps run at or above the roofline's ridge; faster math (precision, kernels, more devices) is what moves it.".into(),
        "memory" => "The workload is memory-bound on this machine: its steps sit below the ridge, limited by memory bandwidth; fewer bytes per step (fusion, precision, batch) is what moves it.".into(),
        "communication" => "The workload is communication-bound: collectives take a large share of each step; the interconnect or the overlap of communication with compute is what moves it.".into(),
        "input" => "The workload is input-bound: its steps wait for data; the loader (workers, prefetch, storage) is what moves it.".into(),
        "control-plane" => "The job is control-plane-bound: start-up and teardown take a large share of its wall time; scheduling and launch, not the steps, are what moves it.".into(),
        _ => "The bottleneck analysis could not tell what limits the workload: see the evidence.".into(),
    };
    d.actions.push("Attach the bundle's HTML report (written next to the run, `yardstick report RUN --html FILE`) to the ticket: environment, micro figures, the workload and this diagnosis on one page.".into());
    match class.as_str() {
        "input" => d.actions.push("Measure the input pipeline alone with a data-loader layer (docs/training.md) and compare its rate with the trainer's demand.".into()),
        "communication" => d.actions.push("Check the fabric with nccl-tests (`all_reduce_perf`) and `yardstick playbook stragglers` for a slow rank.".into()),
        "control-plane" => d.actions.push("Look at the job's start-up (the run's timeline) and the scheduler: `yardstick playbook backpressure --engine slurm`.".into()),
        _ => d.actions.push("Compare with a known-good run of this machine profile: `yardstick compare BASELINE RUN`.".into()),
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(mean: f64, half: f64) -> Option<Estimate> {
        Some(Estimate {
            mean,
            lo: mean - half,
            hi: mean + half,
        })
    }

    fn level(rate: f64, p99: f64, queue: f64) -> LoadLevel {
        LoadLevel {
            point: format!("p/rate={rate}"),
            offered_rps: rate,
            achieved_rps: est(rate, 0.1),
            ttft_mean_ms: Some(p99 / 2.0 + queue),
            e2e_mean_ms: Some(p99),
            requests: Some(100.0),
            ttft_p99_ms: est(p99, 2.0),
            ttft_p50_ms: Some(p99 / 2.0),
            tpot_p50_ms: est(10.0, 0.5),
            client_queue_mean_ms: Some(0.2),
            server_queue_ms: Some(queue),
            server_waiting: Some(queue / 10.0),
            ttft_client_minus_server_ms: Some(1.0),
        }
    }

    #[test]
    fn a_growing_server_queue_is_queueing_at_the_knee() {
        let d = tail_latency(
            &[
                level(4.0, 50.0, 0.0),
                level(1.0, 50.0, 0.0),
                level(8.0, 120.0, 60.0),
                level(16.0, 400.0, 320.0),
            ],
            Some(100.0),
        );
        assert_eq!(d.verdict, "queueing", "{d:#?}");
        assert_eq!(d.confidence, "high", "{d:#?}");
        assert!(d.summary.contains("8.000 req/s"), "{}", d.summary);
        assert_eq!(d.evidence[1].at, "p/rate=8");
        assert!(d.actions[0].contains("4.000 req/s"), "{:?}", d.actions);
        assert!(d.actions.iter().any(|a| a.contains("holds 4.000 req/s")));
    }

    #[test]
    fn a_flat_tail_is_not_blamed() {
        let d = tail_latency(
            &[
                level(1.0, 50.0, 0.0),
                level(2.0, 51.0, 0.5),
                level(4.0, 52.0, 1.0),
            ],
            None,
        );
        assert_eq!(d.verdict, "no-knee", "{d:#?}");
        assert_eq!(d.confidence, "high");
    }

    #[test]
    fn growth_outside_any_queue_is_service_time_and_a_late_client_is_the_client() {
        let mut a = level(8.0, 150.0, 2.0);
        a.tpot_p50_ms = est(20.0, 0.5);
        let d = tail_latency(&[level(1.0, 50.0, 0.0), a], None);
        assert_eq!(d.verdict, "service-time", "{d:#?}");
        assert_eq!(d.confidence, "high");
        assert!(d.summary.contains("batches interfere"));
        let mut c = level(8.0, 150.0, 0.0);
        c.client_queue_mean_ms = Some(95.0);
        let d = tail_latency(&[level(1.0, 50.0, 0.0), c], None);
        assert_eq!(d.verdict, "client", "{d:#?}");
    }

    #[test]
    fn a_short_replicate_is_not_called_saturated_for_its_last_requests_latency() {
        // 100 requests at 250 req/s take 0.4 s to send, and the last finishes 84 ms later:
        // 207 req/s is what an unsaturated server achieves.
        let mut short = level(250.0, 50.0, 0.0);
        short.e2e_mean_ms = Some(84.0);
        short.achieved_rps = est(200.0, 10.0);
        let d = tail_latency(&[level(50.0, 50.0, 0.0), short.clone()], None);
        assert!(
            !d.evidence
                .iter()
                .any(|e| e.claim.contains("over-saturated")),
            "{d:#?}"
        );
        short.achieved_rps = est(120.0, 10.0);
        let d = tail_latency(&[level(50.0, 50.0, 0.0), short], None);
        assert!(
            d.evidence
                .iter()
                .any(|e| e.claim.contains("over-saturated")),
            "{d:#?}"
        );
    }

    #[test]
    fn a_tail_that_grows_within_wide_intervals_is_inconclusive_not_flat() {
        let mut top = level(8.0, 32.0, 0.0);
        top.ttft_p99_ms = est(32.0, 15.0);
        let mut base = level(1.0, 13.5, 0.0);
        base.ttft_p99_ms = est(13.5, 8.0);
        let d = tail_latency(&[base, top], None);
        assert_eq!(d.verdict, "inconclusive", "{d:#?}");
    }

    fn class(scenario: &str, mix: f64, alone: f64) -> ClassFigures {
        ClassFigures {
            scenario: scenario.into(),
            mix_mean_ms: est(mix / 2.0, 1.0),
            mix_p50_ms: est(mix / 3.0, 1.0),
            mix_p99_ms: est(mix, 3.0),
            alone_point: Some(format!("alone/{scenario}")),
            alone_mean_ms: est(alone / 2.0, 1.0),
            alone_p50_ms: est(alone / 3.0, 1.0),
            alone_p99_ms: est(alone, 3.0),
        }
    }

    fn mix(short: (f64, f64), long: (f64, f64), behind: f64, clear: f64) -> MixFigures {
        MixFigures {
            point: "mix".into(),
            offered_rps: 10.0,
            short: class("D(64,16)", short.0, short.1),
            long: class("D(2048,16)", long.0, long.1),
            behind_ms: est(behind, 2.0),
            clear_ms: est(clear, 2.0),
            behind_share: Some(0.3),
        }
    }

    #[test]
    fn short_requests_behind_long_prefills_are_head_of_line() {
        let d = starvation(Some(&mix((150.0, 20.0), (210.0, 200.0), 120.0, 15.0)));
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("head-of-line", "high"),
            "{d:#?}"
        );
        assert!(d.actions[0].contains("chunked-prefill"), "{:?}", d.actions);
        let jain = d.evidence[2].figures["jain_index"];
        assert!(jain < 0.8, "{jain}");
        let d = starvation(Some(&mix((150.0, 20.0), (210.0, 200.0), 20.0, 19.0)));
        assert_eq!(d.verdict, "short-starved", "{d:#?}");
    }

    #[test]
    fn a_mix_that_slows_neither_class_is_fair_and_the_long_class_can_starve() {
        let d = starvation(Some(&mix((21.0, 20.0), (205.0, 200.0), 21.0, 20.0)));
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("fair", "high"),
            "{d:#?}"
        );
        let d = starvation(Some(&mix((21.0, 20.0), (500.0, 200.0), 21.0, 20.0)));
        assert_eq!(d.verdict, "long-starved", "{d:#?}");
        // Both slowed alike: the total load, not starvation.
        let d = starvation(Some(&mix((60.0, 20.0), (600.0, 200.0), 61.0, 60.0)));
        assert_eq!(d.verdict, "fair", "{d:#?}");
        assert!(d.summary.contains("similar factors"), "{}", d.summary);
        assert_eq!(starvation(None).verdict, "inconclusive");
    }

    fn rank(rank: u32, slowest: [u64; 3], ratio: f64) -> RankFigures {
        RankFigures {
            rank,
            node: Some("node-a".into()),
            slowest_steps: slowest.to_vec(),
            steps: vec![30, 30, 30],
            median_ratio: vec![ratio; 3],
        }
    }

    #[test]
    fn a_rank_slowest_in_most_steps_of_every_replicate_is_a_straggler() {
        let d = stragglers(&[rank(0, [2, 3, 1], 0.9), rank(1, [28, 27, 29], 1.3)]);
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("straggler", "high"),
            "{d:#?}"
        );
        assert!(d.summary.contains("rank 1 on node-a"), "{}", d.summary);
        assert!(
            d.actions[0]
                .starts_with("Drain the node (Slurm): scontrol update nodename=node-a state=drain")
        );
        // Balanced ranks: no straggler.
        let d = stragglers(&[rank(0, [15, 14, 16], 1.0), rank(1, [15, 16, 14], 1.01)]);
        assert_eq!(d.verdict, "no-straggler", "{d:#?}");
        // Slow in one replicate only: not persistent.
        let d = stragglers(&[rank(0, [2, 3, 20], 0.95), rank(1, [28, 27, 10], 1.2)]);
        assert_eq!(d.verdict, "inconclusive", "{d:#?}");
        assert_eq!(
            stragglers(&[rank(0, [0, 0, 0], 1.0)]).verdict,
            "inconclusive"
        );
    }

    fn pressure(
        offered: f64,
        achieved: f64,
        p99: f64,
        refused: Option<(f64, f64)>,
        told: Option<f64>,
    ) -> PressurePoint {
        PressurePoint {
            point: format!("component.0.serve/D(16,8)/rate={offered}"),
            offered_rps: offered,
            achieved_rps: est(achieved, achieved * 0.02),
            ttft_p99_ms: est(p99, p99 * 0.1),
            refused_share: refused.map(|(m, h)| Estimate {
                mean: m,
                lo: m - h,
                hi: m + h,
            }),
            retry_after_share: told,
            served_share: Some(1.0 - refused.map_or(0.0, |r| r.0)),
            ..Default::default()
        }
    }

    #[test]
    fn backpressure_tells_shedding_from_an_unbounded_queue() {
        let below = pressure(29.0, 29.0, 40.0, None, None);
        // Half of the attempts turned away, every refusal with Retry-After.
        let d = backpressure(&PressureFigures {
            below: Some(below.clone()),
            over: Some(pressure(116.0, 58.0, 70.0, Some((0.5, 0.05)), Some(1.0))),
            retrying: Some(PressurePoint {
                attempts_per_request: Some(2.4),
                ..pressure(116.0, 70.0, 2100.0, Some((0.6, 0.05)), Some(1.0))
            }),
        });
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("sheds-load", "high"),
            "{d:#?}"
        );
        assert_eq!(d.evidence.len(), 3, "{d:#?}");
        assert!(d.actions[0].contains("honour Retry-After"), "{d:#?}");
        // The same without Retry-After.
        let d = backpressure(&PressureFigures {
            below: Some(below.clone()),
            over: Some(pressure(116.0, 58.0, 70.0, Some((0.5, 0.05)), Some(0.0))),
            retrying: None,
        });
        assert_eq!(d.verdict, "sheds-without-retry-after", "{d:#?}");
        // Nothing refused, p99 far above: the queue takes it all.
        let d = backpressure(&PressureFigures {
            below: Some(below.clone()),
            over: Some(pressure(116.0, 57.0, 3000.0, None, None)),
            retrying: None,
        });
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("unbounded-queue", "high"),
            "{d:#?}"
        );
        // Nothing refused, and it kept up: the load was not an overload.
        let d = backpressure(&PressureFigures {
            below: Some(below.clone()),
            over: Some(pressure(58.0, 58.0, 44.0, None, None)),
            retrying: None,
        });
        assert_eq!(d.verdict, "not-overloaded", "{d:#?}");
        // A refused share whose interval reaches 0 is not shedding.
        let d = backpressure(&PressureFigures {
            below: Some(below),
            over: Some(pressure(58.0, 58.0, 44.0, Some((0.004, 0.006)), Some(1.0))),
            retrying: None,
        });
        assert_eq!(d.verdict, "not-overloaded", "{d:#?}");
        assert_eq!(
            backpressure(&PressureFigures::default()).verdict,
            "inconclusive"
        );
    }

    #[test]
    fn a_scheduler_that_falls_behind_is_backlogged_and_one_that_keeps_up_is_not_blamed() {
        let figures = |started: f64, first: f64, last: f64| SchedulerFigures {
            point: "e2e.0.command/burst".into(),
            offered_per_s: 4.0,
            submitted_per_s: est(4.0, 0.05),
            started_per_s: est(started, started * 0.05),
            started_share: est(1.0, 0.0),
            submit_p50_s: est(0.01, 0.002),
            start_latency_p50_s: est((first + last) / 2.0, 0.1),
            first_quarter_s: est(first, first * 0.1),
            last_quarter_s: est(last, last * 0.1),
        };
        let d = scheduler_backpressure(Some(&figures(1.0, 0.4, 6.0)));
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("backlogged", "high"),
            "{d:#?}"
        );
        assert!(d.actions.iter().any(|a| a.contains("--array")), "{d:#?}");
        let d = scheduler_backpressure(Some(&figures(4.0, 0.2, 0.25)));
        assert_eq!(d.verdict, "keeps-up", "{d:#?}");
        let d = scheduler_backpressure(Some(&SchedulerFigures {
            submitted_per_s: est(1.5, 0.1),
            submit_p50_s: est(0.6, 0.05),
            ..figures(1.5, 0.2, 0.25)
        }));
        assert_eq!(d.verdict, "slow-submission", "{d:#?}");
        assert_eq!(scheduler_backpressure(None).verdict, "inconclusive");
    }

    #[test]
    fn readiness_names_the_nodes_to_drain_and_passes_a_healthy_allocation() {
        let node = |name: &str, gpus: u32, driver: &str| NodeState {
            node: name.into(),
            captured: true,
            gpus,
            driver: Some(driver.into()),
            cuda_driver: Some("13.0".into()),
            ..Default::default()
        };
        let healthy = ReadinessFigures {
            nodes: vec![
                node("a", 8, "580.65.06"),
                node("b", 8, "580.65.06"),
                node("c", 8, "580.65.06"),
            ],
            compared: 3,
            flagged: BTreeMap::new(),
            gpus_per_node: Some(8),
            ..Default::default()
        };
        let d = readiness(&healthy);
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("ready", "high"),
            "{d:#?}"
        );
        // A GPU fell off the bus on b, c runs another driver with a narrow link, and the nodes
        // check flagged a.
        let mut sick = healthy.clone();
        sick.nodes[1].gpus = 7;
        sick.nodes[2].driver = Some("570.1".into());
        sick.nodes[2].narrow_links = vec!["GPU 3: x8 of x16".into()];
        sick.flagged
            .insert("a".into(), vec!["gemm 20 % below the median".into()]);
        let d = readiness(&sick);
        assert_eq!(d.verdict, "not-ready", "{d:#?}");
        assert!(d.summary.contains("3 of 3 nodes"), "{}", d.summary);
        let claims: Vec<&str> = d.evidence.iter().map(|e| e.claim.as_str()).collect();
        assert!(
            claims
                .iter()
                .any(|c| c.contains("7 GPUs where every node must have 8"))
        );
        assert!(
            claims
                .iter()
                .any(|c| c.contains("GPU driver 570.1 where most nodes run 580.65.06"))
        );
        assert!(claims.iter().any(|c| c.contains("x8 of x16")));
        assert!(
            d.actions[0]
                .starts_with("Drain the node (Slurm): scontrol update nodename=a state=drain")
        );
        // One node, nothing to compare: ready with medium confidence.
        let one = ReadinessFigures {
            nodes: vec![node("a", 0, "x")],
            compared: 1,
            ..Default::default()
        };
        assert_eq!(readiness(&one).confidence, "medium");
        assert_eq!(
            readiness(&ReadinessFigures::default()).verdict,
            "inconclusive"
        );
        // nccl-tests: a fabric below the floor fails the hosts its ranks ran on, and only those.
        let nccl = |hosts: &[&str], avg: f64| NcclFigures {
            file: "ar.txt".into(),
            op: "all_reduce".into(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            ranks: 16,
            avg_busbw: Some(avg),
            peak_busbw: Some((avg * 2.0, 1 << 33)),
            failed: None,
        };
        let mut fabric = healthy.clone();
        fabric.nccl = vec![nccl(&["a", "b"], 380.0), nccl(&["b", "c"], 120.0)];
        fabric.nccl_min_busbw = Some(300.0);
        let d = readiness(&fabric);
        assert_eq!(d.verdict, "not-ready", "{d:#?}");
        assert!(
            d.summary.contains("2 of 3 nodes are not ready (b, c)"),
            "{}",
            d.summary
        );
        fabric.nccl_min_busbw = Some(100.0);
        assert_eq!(readiness(&fabric).verdict, "ready");
        // Wrong data fails it whatever the bandwidth; without hosts, the allocation as a whole.
        fabric.nccl[1].failed = Some("line 3: 12 wrong elements".into());
        fabric.nccl[1].hosts.clear();
        let d = readiness(&fabric);
        assert_eq!(d.verdict, "not-ready", "{d:#?}");
        assert!(
            d.summary.starts_with("The allocation is not ready"),
            "{}",
            d.summary
        );
        assert!(
            !d.actions.iter().any(|a| a.contains("scontrol")),
            "{:?}",
            d.actions
        );
    }

    #[test]
    fn triage_answers_with_the_bottleneck_class() {
        let f = TriageFigures {
            machine_profile: Some("cpu-x".into()),
            peak_flops: Some(50e9),
            memory_bw: Some(20e9),
            point: Some("e2e.0.train".into()),
            bottleneck: Some("compute".into()),
            bottleneck_evidence: vec!["achieved 40 GFLOP/s of 50".into()],
            serve: None,
            profile: None,
        };
        let d = triage(&f);
        assert_eq!(
            (d.verdict.as_str(), d.confidence.as_str()),
            ("compute", "high")
        );
        assert!(d.evidence[0].claim.contains("50.0 GFLOP/s"), "{d:#?}");
        assert_eq!(d.evidence[1].claim, "achieved 40 GFLOP/s of 50");
        let d = triage(&TriageFigures { point: None, ..f });
        assert_eq!(d.verdict, "inconclusive");
    }

    #[test]
    fn nothing_measured_is_inconclusive() {
        let d = tail_latency(&[], None);
        assert_eq!(d.verdict, "inconclusive");
    }
}
