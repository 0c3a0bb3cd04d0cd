//! Where a step's time goes, read from a profiler's own output: PyTorch's Chrome/Perfetto trace
//! (`torch.profiler`, [`torch_trace`]), py-spy's speedscope profile ([`speedscope`]), Linux
//! perf's report ([`perf_report`]) and Nsight Systems' SQLite export (read in `yardstick-run`,
//! which opens the database, and summarised here by [`from_intervals`]).
//!
//! Every reader is a pure function of the profiler's text; the result is a [`ProfilerAnalysis`]:
//!
//! * **phases** per step: the time inside each named range the training loop marked (`data`,
//!   `forward`, `backward`, `optimizer`, `communication`: the metric protocol's phases), and the
//!   rest of the step (`unattributed`), so the phases and the rest add up to the step exactly;
//! * **categories** per step: compute (operator self time), communication (collectives:
//!   NCCL, gloo, c10d), memory copies, the data loader, and idle (no operator running);
//! * the **overlap** of communication with compute (the share of collective time during which
//!   compute also ran);
//! * the **top operators** (or kernels, functions, symbols) by self time, with their share.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The phases a training loop marks with `record_function` (the metric protocol's names).
pub const PHASES: [&str; 5] = ["data", "forward", "backward", "optimizer", "communication"];

/// Top entries kept.
pub const TOP_N: usize = 15;

/// Time per step in one phase or category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Share {
    /// Phase or category name.
    pub name: String,
    /// Seconds per step.
    pub s_per_step: f64,
    /// Share of the step, 0–1.
    pub share: f64,
}

/// One operator, kernel, function or symbol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TopEntry {
    /// Its name.
    pub name: String,
    /// Self time over the profile, seconds (py-spy and perf: sampled time).
    pub self_s: f64,
    /// Share of all self time, 0–1.
    pub share: f64,
    /// Calls (events), where the profiler counts them.
    pub calls: Option<u64>,
}

/// What a profile says about where the time went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ProfileAnalysis")] // the published schema name
pub struct ProfilerAnalysis {
    /// The profiler: `torch`, `py-spy`, `perf` or `nsys`.
    pub tool: String,
    /// Steps the profile covers (0 when the profiler does not see steps).
    pub steps: u64,
    /// Mean duration of a profiled step, seconds.
    pub step_s: Option<f64>,
    /// The numbers of the profiled steps (`ProfilerStep#N`), where the profiler names them:
    /// the training loop's own step numbers, to line the profile up with its metric records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_ids: Vec<u64>,
    /// Time per step in each marked phase, then `unattributed`.
    pub phases: Vec<Share>,
    /// Time per step by kind: compute, communication, memcpy, data, idle.
    pub categories: Vec<Share>,
    /// Share of communication time during which compute also ran (None without
    /// communication).
    pub comm_overlap: Option<f64>,
    /// The top entries by self time.
    pub top: Vec<TopEntry>,
    /// What the reader could not do, for people.
    pub notes: Vec<String>,
}

/// Why a profile could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ProfilerError(pub String);

/// A timed event: `[start, end)` in seconds on one thread or stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Name.
    pub name: String,
    /// Kind: `step`, `phase`, `op`, `kernel`, `memcpy`.
    pub kind: Kind,
    /// Thread, stream or device lane: nesting is computed within one lane.
    pub lane: String,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
}

/// What an interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A training step (`ProfilerStep#N`, an NVTX step range).
    Step,
    /// A marked phase (`record_function("forward")`, an NVTX range).
    Phase,
    /// A CPU operator or runtime call.
    Op,
    /// A device kernel.
    Kernel,
    /// A memory copy.
    Memcpy,
}

/// Collective communication, by name: NCCL, gloo and c10d collectives.
pub fn is_communication(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "nccl",
        "gloo",
        "c10d::",
        "allreduce",
        "all_reduce",
        "allgather",
        "all_gather",
        "reduce_scatter",
        "reducescatter",
        "broadcast",
        "alltoall",
        "all_to_all",
    ]
    .iter()
    .any(|k| n.contains(k))
}

/// Memory copies, by name: host/device copies and tensor conversions.
pub fn is_memcpy(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("memcpy") || n == "aten::copy_" || n == "aten::_to_copy" || n == "aten::to"
}

/// Total length of the union of `[start, end)` intervals.
fn union_len(mut v: Vec<(f64, f64)>) -> f64 {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (s, e) in v {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total += ce - cs;
    }
    total
}

/// Length of `a ∩ (union of b)`, for interval lists.
fn overlap_len(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let mut merged = b.to_vec();
    merged.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut u: Vec<(f64, f64)> = Vec::new();
    for (s, e) in merged {
        match u.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(e),
            _ => u.push((s, e)),
        }
    }
    a.iter()
        .map(|(s, e)| {
            u.iter()
                .map(|(us, ue)| (e.min(*ue) - s.max(*us)).max(0.0))
                .sum::<f64>()
        })
        .sum()
}

/// Self time of each op or kernel: its duration minus its direct children's on the same lane.
fn self_times(events: &[&Interval]) -> Vec<(usize, f64)> {
    let mut by_lane: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        by_lane.entry(e.lane.as_str()).or_default().push(i);
    }
    let mut out = vec![(0usize, 0.0f64); events.len()];
    for idx in by_lane.values() {
        let mut idx = idx.clone();
        // Parents first: earlier start, then the longer one.
        idx.sort_by(|&a, &b| {
            events[a]
                .start
                .total_cmp(&events[b].start)
                .then(events[b].end.total_cmp(&events[a].end))
        });
        let mut stack: Vec<usize> = Vec::new();
        for &i in &idx {
            let e = events[i];
            while let Some(&top) = stack.last() {
                if events[top].end <= e.start + 1e-12 {
                    stack.pop();
                } else {
                    break;
                }
            }
            out[i] = (i, e.end - e.start);
            if let Some(&parent) = stack.last() {
                out[parent].1 -= e.end.min(events[parent].end) - e.start;
            }
            stack.push(i);
        }
    }
    for o in &mut out {
        o.1 = o.1.max(0.0);
    }
    out
}

/// The analysis of a profile given as intervals (any profiler that records when things ran:
/// PyTorch's trace, Nsight Systems' tables).
pub fn from_intervals(tool: &str, all: &[Interval]) -> ProfilerAnalysis {
    let mut notes = Vec::new();
    let mut steps: Vec<(f64, f64)> = all
        .iter()
        .filter(|e| e.kind == Kind::Step)
        .map(|e| (e.start, e.end))
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    if steps.is_empty() {
        // No step marks: the whole profile is one "step".
        let s = all.iter().map(|e| e.start).fold(f64::INFINITY, f64::min);
        let e = all.iter().map(|e| e.end).fold(f64::NEG_INFINITY, f64::max);
        if s.is_finite() && e > s {
            steps.push((s, e));
            notes.push(
                "no step marks (ProfilerStep#N): the whole profile is taken as one step".into(),
            );
        }
    }
    let in_steps = |s: f64, e: f64| steps.iter().any(|(a, b)| s < *b && e > *a);
    let clip = |s: f64, e: f64| -> f64 {
        steps
            .iter()
            .map(|(a, b)| (e.min(*b) - s.max(*a)).max(0.0))
            .sum()
    };
    let n = steps.len() as f64;
    let step_total: f64 = steps.iter().map(|(a, b)| b - a).sum();
    let per = |x: f64| if n > 0.0 { x / n } else { 0.0 };
    let share = |x: f64| {
        if step_total > 0.0 {
            x / step_total
        } else {
            0.0
        }
    };

    // Phases: marked ranges inside steps (nested ranges of the same name counted once).
    let mut phases = Vec::new();
    let mut attributed: Vec<(f64, f64)> = Vec::new();
    for name in PHASES {
        let spans: Vec<(f64, f64)> = all
            .iter()
            .filter(|e| e.kind == Kind::Phase && e.name == name && in_steps(e.start, e.end))
            .map(|e| (e.start, e.end))
            .collect();
        if spans.is_empty() {
            continue;
        }
        let t: f64 = spans.iter().map(|(s, e)| clip(*s, *e)).sum();
        attributed.extend(spans);
        phases.push(Share {
            name: name.into(),
            s_per_step: per(t),
            share: share(t),
        });
    }
    if !phases.is_empty() {
        let covered: f64 = union_len(
            attributed
                .iter()
                .flat_map(|(s, e)| {
                    steps
                        .iter()
                        .filter(move |(a, b)| s < b && e > a)
                        .map(move |(a, b)| (s.max(*a), e.min(*b)))
                })
                .collect(),
        );
        let rest = (step_total - covered).max(0.0);
        phases.push(Share {
            name: "unattributed".into(),
            s_per_step: per(rest),
            share: share(rest),
        });
    } else if tool == "torch" {
        notes.push(
            "no phase ranges: mark data, forward, backward and optimizer with the \
             yardstick_profile module (or record_function)"
                .into(),
        );
    }

    // Operators and kernels inside steps.
    let work: Vec<&Interval> = all
        .iter()
        .filter(|e| matches!(e.kind, Kind::Op | Kind::Kernel | Kind::Memcpy))
        .filter(|e| in_steps(e.start, e.end))
        .collect();
    let selfs = self_times(&work);
    let mut by_name: BTreeMap<&str, (f64, u64)> = BTreeMap::new();
    let (mut compute, mut comm, mut memcpy) = (0.0, 0.0, 0.0);
    let mut comm_iv = Vec::new();
    let mut compute_iv = Vec::new();
    for (i, s) in &selfs {
        let e = work[*i];
        let entry = by_name.entry(e.name.as_str()).or_default();
        entry.0 += s;
        entry.1 += 1;
        if e.kind == Kind::Memcpy || is_memcpy(&e.name) {
            memcpy += s;
        } else if is_communication(&e.name) {
            comm += s;
            comm_iv.push((e.start, e.end, e.lane.as_str()));
        } else {
            compute += s;
            compute_iv.push((e.start, e.end));
        }
    }
    let data: f64 = all
        .iter()
        .filter(|e| e.kind == Kind::Phase && e.name == "data")
        .map(|e| clip(e.start, e.end))
        .sum();
    let busy = union_len(
        work.iter()
            .map(|e| (e.start, e.end))
            .chain(
                all.iter()
                    .filter(|e| e.kind == Kind::Phase && e.name == "data")
                    .map(|e| (e.start, e.end)),
            )
            .flat_map(|(s, e)| {
                steps
                    .iter()
                    .filter(move |(a, b)| s < *b && e > *a)
                    .map(move |(a, b)| (s.max(*a), e.min(*b)))
                    .collect::<Vec<_>>()
            })
            .collect(),
    );
    let idle = (step_total - busy).max(0.0);
    // Operators inside the data phase are the loader's: counted once, as data.
    let data_ops: f64 = selfs
        .iter()
        .filter(|(i, _)| {
            let e = work[*i];
            all.iter().any(|p| {
                p.kind == Kind::Phase && p.name == "data" && e.start >= p.start && e.end <= p.end
            })
        })
        .map(|(_, s)| s)
        .sum();
    let compute = (compute - data_ops).max(0.0);
    let categories = [
        ("compute", compute),
        ("communication", comm),
        ("memcpy", memcpy),
        ("data", data),
        ("idle", idle),
    ]
    .into_iter()
    .map(|(name, t)| Share {
        name: name.into(),
        s_per_step: per(t),
        share: share(t),
    })
    .collect();
    let comm_overlap = if comm_iv.is_empty() {
        None
    } else {
        let total: f64 = comm_iv.iter().map(|(s, e, _)| e - s).sum();
        // Compute while the collectives ran (not the collectives' own children on their lane).
        let other: Vec<(f64, f64)> = work
            .iter()
            .filter(|e| !is_communication(&e.name) && e.kind != Kind::Memcpy)
            .filter(|e| {
                !comm_iv
                    .iter()
                    .any(|(s, en, lane)| e.lane == *lane && e.start >= *s && e.end <= *en)
            })
            .map(|e| (e.start, e.end))
            .collect();
        let comm: Vec<(f64, f64)> = comm_iv.iter().map(|(s, e, _)| (*s, *e)).collect();
        (total > 0.0).then(|| (overlap_len(&comm, &other) / total).min(1.0))
    };
    let all_self: f64 = by_name.values().map(|v| v.0).sum();
    let mut top: Vec<TopEntry> = by_name
        .into_iter()
        .map(|(name, (s, calls))| TopEntry {
            name: name.to_string(),
            self_s: s,
            share: if all_self > 0.0 { s / all_self } else { 0.0 },
            calls: Some(calls),
        })
        .collect();
    top.sort_by(|a, b| b.self_s.total_cmp(&a.self_s));
    top.truncate(TOP_N);
    let mut step_ids: Vec<u64> = all
        .iter()
        .filter(|e| e.kind == Kind::Step)
        .filter_map(|e| e.name.strip_prefix("ProfilerStep#")?.parse().ok())
        .collect();
    step_ids.sort_unstable();
    step_ids.dedup();
    ProfilerAnalysis {
        tool: tool.into(),
        steps: steps.len() as u64,
        step_s: (n > 0.0).then(|| step_total / n),
        step_ids,
        phases,
        categories,
        comm_overlap,
        top,
        notes,
    }
}

/// The intervals of a PyTorch profiler trace (Chrome trace JSON, as `export_chrome_trace` and
/// `tensorboard_trace_handler` write it): `ProfilerStep#N` ranges are steps, other
/// `user_annotation` ranges named like a phase are phases, `cpu_op` (and `cuda_runtime`) events
/// are operators, `kernel` events kernels and `gpu_memcpy` events copies. Times are µs.
pub fn torch_intervals(text: &str) -> Result<Vec<Interval>, ProfilerError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| ProfilerError(format!("not a Chrome trace (JSON): {e}")))?;
    let events = v
        .get("traceEvents")
        .and_then(Value::as_array)
        .or_else(|| v.as_array())
        .ok_or_else(|| ProfilerError("no `traceEvents` array: not a PyTorch trace".into()))?;
    let mut out = Vec::new();
    for e in events {
        if e.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let (Some(name), Some(ts), Some(dur)) = (
            e.get("name").and_then(Value::as_str),
            e.get("ts").and_then(Value::as_f64),
            e.get("dur").and_then(Value::as_f64),
        ) else {
            continue;
        };
        let cat = e.get("cat").and_then(Value::as_str).unwrap_or("");
        let kind = match cat {
            "user_annotation" | "gpu_user_annotation" if name.starts_with("ProfilerStep#") => {
                if cat == "gpu_user_annotation" {
                    continue;
                }
                Kind::Step
            }
            "user_annotation" if PHASES.contains(&name) => Kind::Phase,
            // A process group's own ranges (`gloo:all_reduce` on its worker threads) are the
            // collectives' real time; the `c10d::allreduce_` op on the caller only enqueues.
            "user_annotation" if is_communication(name) => Kind::Op,
            "cpu_op" | "cuda_runtime" | "cuda_driver" => Kind::Op,
            "kernel" => Kind::Kernel,
            "gpu_memcpy" | "gpu_memset" => Kind::Memcpy,
            _ => continue,
        };
        let lane = format!(
            "{}:{}",
            e.get("pid").map(Value::to_string).unwrap_or_default(),
            e.get("tid").map(Value::to_string).unwrap_or_default()
        );
        out.push(Interval {
            name: name.to_string(),
            kind,
            lane,
            start: ts / 1e6,
            end: (ts + dur) / 1e6,
        });
    }
    if out.is_empty() {
        return Err(ProfilerError(
            "the trace has no operator, kernel or step events".into(),
        ));
    }
    Ok(out)
}

/// A PyTorch trace's analysis ([`torch_intervals`] then [`from_intervals`]).
pub fn torch_trace(text: &str) -> Result<ProfilerAnalysis, ProfilerError> {
    Ok(from_intervals("torch", &torch_intervals(text)?))
}

/// py-spy's speedscope profile (`py-spy record --format speedscope`): sampled stacks; the top
/// functions by self (leaf) time. py-spy sees no steps or phases, so only the top is filled,
/// plus `idle` where py-spy recorded idle samples.
pub fn speedscope(text: &str) -> Result<ProfilerAnalysis, ProfilerError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| ProfilerError(format!("not a speedscope profile (JSON): {e}")))?;
    let frames = v["shared"]["frames"]
        .as_array()
        .ok_or_else(|| ProfilerError("no `shared.frames`: not a speedscope profile".into()))?;
    let name_of = |i: usize| -> String {
        let f = &frames[i];
        let name = f["name"].as_str().unwrap_or("?");
        match (f["file"].as_str(), f["line"].as_u64()) {
            (Some(file), Some(line)) => {
                let short = file.rsplit('/').next().unwrap_or(file);
                format!("{name} ({short}:{line})")
            }
            _ => name.to_string(),
        }
    };
    let mut self_w: BTreeMap<usize, (f64, u64)> = BTreeMap::new();
    let mut total = 0.0;
    for p in v["profiles"].as_array().into_iter().flatten() {
        let samples = p["samples"].as_array().cloned().unwrap_or_default();
        let weights = p["weights"].as_array().cloned().unwrap_or_default();
        // py-spy writes weights in seconds per sample ("unit": "seconds"); anything else counts
        // samples.
        let unit = p["unit"].as_str().unwrap_or("none");
        for (k, s) in samples.iter().enumerate() {
            let w = weights.get(k).and_then(Value::as_f64).unwrap_or(1.0);
            let w = if unit == "seconds" { w } else { w.max(0.0) };
            total += w;
            if let Some(leaf) = s.as_array().and_then(|a| a.last()).and_then(Value::as_u64) {
                let e = self_w.entry(leaf as usize).or_default();
                e.0 += w;
                e.1 += 1;
            }
        }
    }
    if self_w.is_empty() {
        return Err(ProfilerError(
            "the speedscope profile has no samples".into(),
        ));
    }
    let mut top: Vec<TopEntry> = self_w
        .into_iter()
        .filter(|(i, _)| *i < frames.len())
        .map(|(i, (w, n))| TopEntry {
            name: name_of(i),
            self_s: w,
            share: if total > 0.0 { w / total } else { 0.0 },
            calls: Some(n),
        })
        .collect();
    top.sort_by(|a, b| b.self_s.total_cmp(&a.self_s));
    Ok(ProfilerAnalysis::top_only(
        "py-spy",
        top,
        "py-spy samples Python stacks: the top functions by sampled self time; it sees no steps \
         or phases",
    ))
}

/// `perf report --stdio --no-children --sort symbol` output: the top symbols by their share of
/// samples (`total_s`, the profiled wall time, turns shares into seconds).
pub fn perf_report(text: &str, total_s: f64) -> Result<ProfilerAnalysis, ProfilerError> {
    let mut top = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((pct, rest)) = l.split_once('%') else {
            continue;
        };
        let Ok(pct) = pct.trim().parse::<f64>() else {
            continue;
        };
        // `[.] symbol` (user) or `[k] symbol` (kernel); perf pads the symbol column, and may
        // follow it with more columns after a run of spaces.
        let sym = rest.split_once("] ").map_or(rest.trim(), |(_, s)| s.trim());
        let name = sym.split("  ").next().unwrap_or(sym).trim().to_string();
        if name.is_empty() {
            continue;
        }
        top.push(TopEntry {
            name,
            self_s: pct / 100.0 * total_s,
            share: pct / 100.0,
            calls: None,
        });
    }
    if top.is_empty() {
        return Err(ProfilerError(
            "perf report printed no symbol lines (no samples?)".into(),
        ));
    }
    top.sort_by(|a, b| b.share.total_cmp(&a.share));
    Ok(ProfilerAnalysis::top_only(
        "perf",
        top,
        "perf samples the CPU: the top symbols by their share of samples; it sees no steps",
    ))
}

impl ProfilerAnalysis {
    /// The analysis of a sampling profiler that sees no steps: the first [`TOP_N`] of `top`
    /// (sorted) and a note.
    fn top_only(tool: &str, mut top: Vec<TopEntry>, note: &str) -> Self {
        top.truncate(TOP_N);
        ProfilerAnalysis {
            tool: tool.into(),
            steps: 0,
            step_s: None,
            step_ids: Vec::new(),
            phases: Vec::new(),
            categories: Vec::new(),
            comm_overlap: None,
            top,
            notes: vec![note.into()],
        }
    }

    /// The analysis as facts: `profile.phase.<name>_s` and `profile.<category>_s` (seconds per
    /// step), `profile.step_s`, `profile.comm_overlap`.
    pub fn facts(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Some(s) = self.step_s {
            out.push((yardstick_spec::metrics::id::PROFILE_STEP_S.to_string(), s));
        }
        for p in &self.phases {
            out.push((format!("profile.phase.{}_s", p.name), p.s_per_step));
        }
        for c in &self.categories {
            out.push((format!("profile.{}_s", c.name), c.s_per_step));
        }
        if let Some(o) = self.comm_overlap {
            out.push((
                yardstick_spec::metrics::id::PROFILE_COMM_OVERLAP.to_string(),
                o,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(name: &str, kind: Kind, lane: &str, start: f64, end: f64) -> Interval {
        Interval {
            name: name.into(),
            kind,
            lane: lane.into(),
            start,
            end,
        }
    }

    #[test]
    fn phases_and_the_rest_add_up_to_the_step_and_self_time_excludes_children() {
        let e = vec![
            iv("ProfilerStep#1", Kind::Step, "t", 0.0, 1.0),
            iv("data", Kind::Phase, "t", 0.0, 0.1),
            iv("forward", Kind::Phase, "t", 0.1, 0.4),
            iv("backward", Kind::Phase, "t", 0.4, 0.9),
            iv("aten::linear", Kind::Op, "t", 0.1, 0.4),
            iv("aten::mm", Kind::Op, "t", 0.15, 0.35),
            iv("nccl:all_reduce", Kind::Op, "t", 0.5, 0.7),
            iv("aten::mm", Kind::Op, "u", 0.55, 0.65),
            iv("aten::copy_", Kind::Op, "t", 0.8, 0.85),
        ];
        let a = from_intervals("torch", &e);
        assert_eq!(a.steps, 1);
        let phase = |n: &str| a.phases.iter().find(|p| p.name == n).unwrap().s_per_step;
        assert!((phase("forward") - 0.3).abs() < 1e-9);
        assert!((phase("unattributed") - 0.1).abs() < 1e-9);
        let sum: f64 = a.phases.iter().map(|p| p.s_per_step).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        let top = |n: &str| a.top.iter().find(|t| t.name == n).unwrap().clone();
        // linear's self time excludes mm; mm runs twice (two lanes).
        assert!((top("aten::linear").self_s - 0.1).abs() < 1e-9);
        assert!((top("aten::mm").self_s - 0.3).abs() < 1e-9);
        assert_eq!(top("aten::mm").calls, Some(2));
        let cat = |n: &str| {
            a.categories
                .iter()
                .find(|c| c.name == n)
                .unwrap()
                .s_per_step
        };
        assert!((cat("communication") - 0.2).abs() < 1e-9);
        assert!((cat("memcpy") - 0.05).abs() < 1e-9);
        // Half the all-reduce ran beside compute on another lane.
        assert!((a.comm_overlap.unwrap() - 0.5).abs() < 1e-9);
        assert!(
            a.facts()
                .iter()
                .any(|(k, _)| k == "profile.phase.backward_s")
        );
    }

    #[test]
    fn speedscope_and_perf_give_their_top_and_bad_input_is_refused() {
        let ss = r#"{"shared":{"frames":[{"name":"main","file":"/x/t.py","line":1},{"name":"matmul","file":"/x/t.py","line":9}]},
            "profiles":[{"type":"sampled","unit":"seconds","samples":[[0,1],[0,1],[0]],"weights":[0.01,0.01,0.01]}]}"#;
        let a = speedscope(ss).unwrap();
        assert_eq!(a.top[0].name, "matmul (t.py:9)");
        assert!((a.top[0].share - 2.0 / 3.0).abs() < 1e-9);
        let perf = "# Samples: 1K\n#\n    62.50%  python  libtorch.so  [.] sgemm_kernel            -      -\n    12.00%  python  [kernel]  [k] clear_page\n";
        let p = perf_report(perf, 2.0).unwrap();
        assert_eq!(p.top[0].name, "sgemm_kernel");
        assert!((p.top[0].self_s - 1.25).abs() < 1e-9);
        assert!(torch_trace("{}").is_err());
        assert!(speedscope("[]").is_err());
        assert!(perf_report("# nothing\n", 1.0).is_err());
    }
}
