//! Exact merges of a sharded point.
//!
//! `--shard i/N` runs plan indices `≡ i (mod N)` of the same seeded plan (open loop: the same
//! arrival sequence, every N-th request; closed loop: each shard runs its share of the
//! streams). Each shard keeps its raw records and HDR histograms; merging takes the union of
//! the records (no index twice, every shard present) and recomputes the summary from it, so
//! the merged summary is exactly the one a single machine would compute from the same
//! requests: exact percentiles of the union, never an average of percentiles. The shards'
//! histograms add (counts per bucket) and are checked against histograms rebuilt from the
//! union of the records.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use yardstick_stats::histogram::LatencyHistogram;

use crate::record::RequestRecord;
use crate::summary::{LoadLevel, PointSummary, Slo, StopReason, summarize};

/// Significant decimal digits of the latency histograms.
pub const HIST_DIGITS: u8 = 3;

/// Why shards could not be merged.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    /// The parts are not the N shards of one point.
    #[error("cannot merge: {0}")]
    Mismatch(String),
    /// A histogram file could not be understood.
    #[error("histograms: {0}")]
    Histogram(String),
}

/// HDR histograms (nanoseconds, [`HIST_DIGITS`] significant digits) of one point's latencies,
/// over the same requests as its summary: measured, successful ones (client queueing: every
/// measured one).
#[derive(Debug, Clone, PartialEq)]
pub struct PointHistograms {
    /// Time to first token.
    pub ttft: LatencyHistogram,
    /// Time per output token (rounded to whole nanoseconds).
    pub tpot: LatencyHistogram,
    /// Every inter-token gap.
    pub itl: LatencyHistogram,
    /// End-to-end latency.
    pub e2e: LatencyHistogram,
    /// Send − scheduled.
    pub client_queue: LatencyHistogram,
}

const NAMES: [&str; 5] = ["ttft", "tpot", "itl", "e2e", "client_queue"];

fn new_hist() -> LatencyHistogram {
    LatencyHistogram::new(HIST_DIGITS).expect("3 significant digits are valid")
}

fn ns(x_ms: f64) -> u64 {
    (x_ms * 1e6).round().max(0.0) as u64
}

impl PointHistograms {
    fn empty() -> Self {
        PointHistograms {
            ttft: new_hist(),
            tpot: new_hist(),
            itl: new_hist(),
            e2e: new_hist(),
            client_queue: new_hist(),
        }
    }

    fn parts(&self) -> [&LatencyHistogram; 5] {
        [
            &self.ttft,
            &self.tpot,
            &self.itl,
            &self.e2e,
            &self.client_queue,
        ]
    }

    fn parts_mut(&mut self) -> [&mut LatencyHistogram; 5] {
        [
            &mut self.ttft,
            &mut self.tpot,
            &mut self.itl,
            &mut self.e2e,
            &mut self.client_queue,
        ]
    }

    /// Histograms of `records` (warm-up excluded, as in the summary).
    pub fn of(records: &[RequestRecord]) -> Self {
        let mut h = PointHistograms::empty();
        let put = |h: &mut LatencyHistogram, v: Option<u64>| {
            if let Some(v) = v {
                // Auto-resizing histograms accept any u64.
                let _ = h.record(v);
            }
        };
        for r in records.iter().filter(|r| !r.warmup) {
            put(
                &mut h.client_queue,
                r.sent_ns.map(|s| s.saturating_sub(r.scheduled_ns)),
            );
            if !r.ok() {
                continue;
            }
            put(
                &mut h.ttft,
                r.first_content_ns.map(|t| t.saturating_sub(r.scheduled_ns)),
            );
            put(&mut h.e2e, r.e2e_ms().map(ns));
            put(&mut h.tpot, r.tpot_ms().map(ns));
            for w in r.content_event_ns.windows(2) {
                put(&mut h.itl, Some(w[1].saturating_sub(w[0])));
            }
        }
        h
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &PointHistograms) {
        for (a, b) in self.parts_mut().into_iter().zip(other.parts()) {
            let _ = a.merge(b);
        }
    }

    /// JSON: per metric, count, quantiles in ms (p50, p90, p99, p99.9, max) and the buckets
    /// (`[highest equivalent value in ns, count]`, lossless).
    pub fn to_json(&self) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("unit".into(), "ns".into());
        o.insert("significant_digits".into(), HIST_DIGITS.into());
        for (name, h) in NAMES.iter().zip(self.parts()) {
            let q = |q: f64| (!h.is_empty()).then(|| h.quantile(q) as f64 / 1e6);
            o.insert(
                (*name).into(),
                json!({
                    "count": h.len(),
                    "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99),
                    "p999_ms": q(0.999), "max_ms": q(1.0),
                    "buckets": h.buckets(),
                }),
            );
        }
        Value::Object(o)
    }

    /// Reads [`PointHistograms::to_json`] back (buckets only; the quantiles are recomputed).
    pub fn from_json(v: &Value) -> Result<Self, MergeError> {
        let bad = |m: String| MergeError::Histogram(m);
        let digits = v
            .get("significant_digits")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("no significant_digits".into()))?;
        if v.get("unit").and_then(Value::as_str) != Some("ns") {
            return Err(bad("unit is not ns".into()));
        }
        let mut h = PointHistograms::empty();
        for (name, slot) in NAMES.iter().zip(h.parts_mut()) {
            let buckets: Vec<(u64, u64)> = v
                .get(*name)
                .and_then(|m| m.get("buckets"))
                .map(|b| serde_json::from_value(b.clone()))
                .transpose()
                .map_err(|e| bad(format!("{name}: {e}")))?
                .ok_or_else(|| bad(format!("no {name} buckets")))?;
            *slot = LatencyHistogram::from_buckets(digits as u8, &buckets)
                .map_err(|e| bad(format!("{name}: {e}")))?;
        }
        Ok(h)
    }
}

/// One shard's part of a point, as read back from its output directory.
#[derive(Debug, Clone)]
pub struct ShardPart {
    /// `(i, N)` of `--shard i/N`.
    pub shard: (u64, u64),
    /// The scenario as written.
    pub scenario: String,
    /// The point's (whole) load level.
    pub load: LoadLevel,
    /// Why this shard's point stopped.
    pub stop_reason: StopReason,
    /// The shard's schedule origin.
    pub schedule_origin_ns: Option<u64>,
    /// Its raw records.
    pub records: Vec<RequestRecord>,
    /// Its histograms, when it wrote them.
    pub histograms: Option<PointHistograms>,
}

/// A merged point.
#[derive(Debug)]
pub struct MergedPoint {
    /// Recomputed from the union of the records.
    pub summary: PointSummary,
    /// The union of the records, in plan order.
    pub records: Vec<RequestRecord>,
    /// The shards' histograms added (equal to those of the union of the records).
    pub histograms: PointHistograms,
}

/// Merges the N shards of one point; `parts` may come in any order.
pub fn merge_point(parts: Vec<ShardPart>, slo: &Slo) -> Result<MergedPoint, MergeError> {
    let mism = |m: String| Err(MergeError::Mismatch(m));
    let Some(first) = parts.first() else {
        return mism("no shards given".into());
    };
    let n = first.shard.1;
    let (scenario, load) = (first.scenario.clone(), first.load.clone());
    let mut seen = BTreeSet::new();
    for p in &parts {
        if p.shard.1 != n {
            return mism(format!(
                "shard {}/{} is not one of {n} shards",
                p.shard.0, p.shard.1
            ));
        }
        if p.scenario != scenario || p.load != load {
            return mism(format!(
                "shard {}/{n} ran `{}` at {} {}, not `{scenario}` at {} {}",
                p.shard.0, p.scenario, p.load.mode, p.load.value, load.mode, load.value
            ));
        }
        if !seen.insert(p.shard.0) {
            return mism(format!("shard {}/{n} given twice", p.shard.0));
        }
        if let Some(r) = p.records.iter().find(|r| r.plan_unit() % n != p.shard.0) {
            return mism(format!(
                "shard {}/{n} holds plan index {}, which belongs to shard {}",
                p.shard.0,
                r.plan_unit(),
                r.plan_unit() % n
            ));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !seen.contains(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return mism(format!("shards missing: {}", missing.join(", ")));
    }
    let mut records: Vec<RequestRecord> = parts.iter().flat_map(|p| p.records.clone()).collect();
    records.sort_by_key(|r| r.index);
    let histograms = PointHistograms::of(&records);
    if parts.iter().all(|p| p.histograms.is_some()) {
        let mut added = PointHistograms::empty();
        for p in &parts {
            added.merge(p.histograms.as_ref().expect("checked"));
        }
        if added != histograms {
            return mism(
                "the shards' histograms do not add up to the histograms of their records".into(),
            );
        }
    }
    let reason = StopReason::of_shards(parts.iter().map(|p| &p.stop_reason));
    let mut summary = summarize(&scenario, load, &records, slo, reason);
    summary.schedule_origin_ns = parts.iter().filter_map(|p| p.schedule_origin_ns).min();
    Ok(MergedPoint {
        summary,
        records,
        histograms,
    })
}

/// The streams shard `i` of `n` runs of a closed loop of `total`: `total / n`, plus one for the
/// first `total % n` shards, so the shards together run exactly `total`.
pub fn shard_share(total: usize, (i, n): (u64, u64)) -> usize {
    let n = n.max(1) as usize;
    total / n + usize::from((i as usize) < total % n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::TokenSource;

    fn rec(i: u64, sched_ms: u64, gaps: &[u64]) -> RequestRecord {
        let ms = 1_000_000;
        let mut r = RequestRecord::new(i, format!("r{i}"), i < 2, 4, Some(3), sched_ms * ms);
        r.sent_ns = Some(sched_ms * ms + (i % 5) * 1000);
        let mut t = sched_ms * ms + (20 + (i * 37) % 50) * ms;
        r.content_event_ns.push(t);
        for g in gaps {
            t += g * 1000 + i;
            r.content_event_ns.push(t);
        }
        r.first_content_ns = r.content_event_ns.first().copied();
        r.last_content_ns = r.content_event_ns.last().copied();
        r.done_ns = r.last_content_ns;
        r.content_events = r.content_event_ns.len() as u64;
        r.output_tokens = Some(r.content_events);
        r.output_tokens_source = Some(TokenSource::ServerUsage);
        if i % 11 == 7 {
            r.error = Some(crate::record::ErrorClass::Http5xx);
        }
        r
    }

    fn level() -> LoadLevel {
        LoadLevel {
            mode: "rate".into(),
            value: 10.0,
            arrival: Some("poisson".into()),
        }
    }

    fn parts(all: &[RequestRecord], n: u64) -> Vec<ShardPart> {
        (0..n)
            .map(|i| {
                let records: Vec<RequestRecord> =
                    all.iter().filter(|r| r.index % n == i).cloned().collect();
                ShardPart {
                    shard: (i, n),
                    scenario: "D(4,3)".into(),
                    load: level(),
                    stop_reason: StopReason::MaxRequests,
                    schedule_origin_ns: Some(0),
                    histograms: Some(PointHistograms::of(&records)),
                    records,
                }
            })
            .collect()
    }

    #[test]
    fn merged_shards_summarize_exactly_like_the_union() {
        let all: Vec<RequestRecord> = (0..200)
            .map(|i| rec(i, i * 3, &[9_000 + i * 13 % 900, 10_000, 11_000 - i]))
            .collect();
        let slo = Slo {
            ttft_ms: Some(50.0),
            ..Slo::default()
        };
        let whole = summarize("D(4,3)", level(), &all, &slo, StopReason::MaxRequests);
        let mut ps = parts(&all, 3);
        ps.reverse();
        let m = merge_point(ps, &slo).unwrap();
        let a = serde_json::to_value(&whole).unwrap();
        let mut b = serde_json::to_value(&m.summary).unwrap();
        b.as_object_mut().unwrap().remove("schedule_origin_ns");
        assert_eq!(a, b);
        assert_eq!(m.histograms, PointHistograms::of(&all));
        let back = PointHistograms::from_json(&m.histograms.to_json()).unwrap();
        assert_eq!(back, m.histograms);
        assert_eq!(
            m.records.iter().map(|r| r.index).collect::<Vec<_>>(),
            (0..200).collect::<Vec<_>>()
        );
    }

    #[test]
    fn refuses_what_is_not_the_n_shards_of_one_point() {
        let all: Vec<RequestRecord> = (0..30).map(|i| rec(i, i, &[1, 2])).collect();
        let slo = Slo::default();
        let mut ps = parts(&all, 3);
        ps.pop();
        let e = merge_point(ps, &slo).unwrap_err().to_string();
        assert!(e.contains("shards missing: 2/3"), "{e}");
        let mut ps = parts(&all, 3);
        ps[1] = ps[0].clone();
        assert!(
            merge_point(ps, &slo)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        let mut ps = parts(&all, 3);
        ps[2].load.value = 11.0;
        assert!(merge_point(ps, &slo).is_err());
        let mut ps = parts(&all, 3);
        ps[0].records.push(rec(31, 1, &[1]));
        assert!(
            merge_point(ps, &slo)
                .unwrap_err()
                .to_string()
                .contains("index 31")
        );
        let mut ps = parts(&all, 3);
        ps[0].histograms.as_mut().unwrap().ttft.record(1).unwrap();
        assert!(
            merge_point(ps, &slo)
                .unwrap_err()
                .to_string()
                .contains("add up")
        );
        assert!(merge_point(Vec::new(), &slo).is_err());
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        for total in [1usize, 2, 7, 256, 1000] {
            for n in 1..=5u64 {
                let s: usize = (0..n).map(|i| shard_share(total, (i, n))).sum();
                assert_eq!(s, total);
            }
        }
        assert_eq!(shard_share(7, (0, 3)), 3);
        assert_eq!(shard_share(7, (2, 3)), 2);
    }
}
