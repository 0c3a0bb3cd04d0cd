//! The bottleneck of a training replicate: its step (FLOPs, bytes, time, input wait, exposed
//! collectives) from the training analysis, placed on the roofline of the machine it ran on
//! ([`crate::roofline`]), with the evidence.
//!
//! The machine's ceilings are the job's: peak FLOP/s and memory bandwidth of one device times
//! the devices, because the step's FLOPs and bytes are the whole job's.
//!
//! A command run also has a [`JobTimeline`] (measured by `yardstick_exec::timeline`): its
//! start-up (launch → first step) and teardown (last step → exit) are control-plane time, Σ step
//! times is service time; when control-plane time is at least half the wall time the run is
//! control-plane-bound ([`classify_job`]).

use serde::{Deserialize, Serialize};

use crate::roofline::{self, CeilingSources, Ceilings, Classification, InputBalance, Observation};
use crate::training::TrainingReport;

/// Where one run's wall time went (seconds). `yardstick_exec::timeline::job_timeline` measures
/// it from when the run's metric lines arrived.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct JobTimeline {
    /// Process launch → exit.
    pub wall_s: f64,
    /// Launch → arrival of the first step record.
    pub first_step_reported_s: f64,
    /// Launch → start of the first step (`first_step_reported_s` minus that step's time).
    pub startup_s: f64,
    /// Σ step times (the largest per-rank sum).
    pub service_s: f64,
    /// Time between the first step's start and the last step's report not covered by steps.
    pub between_steps_s: f64,
    /// Arrival of the last step record → exit.
    pub teardown_s: f64,
    /// `startup_s + teardown_s`.
    pub control_plane_s: f64,
    /// `control_plane_s / wall_s`.
    pub control_plane_share: f64,
    /// Records with `step_time_s`.
    pub step_records: usize,
    /// `fifo` (every read stamped) or `file-poll` (the file's length polled).
    pub source: &'static str,
    /// How late an arrival stamp can be, s.
    pub resolution_s: f64,
}

/// A classification with what it was computed from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrainingBottleneck {
    /// The bottleneck and its evidence (and the roofline placement when FLOPs and bytes were
    /// known).
    #[serde(flatten)]
    pub classification: Classification,
    /// The job's ceilings.
    pub ceilings: Ceilings,
    /// Where the ceilings came from (`measured: gemm.f32.2048, memory.triad`, `given`, ...).
    pub ceilings_source: String,
    /// What the step was observed to do.
    pub observation: Observation,
    /// `reported` or `estimated` bytes per step.
    pub bytes_source: Option<&'static str>,
    /// Where the run's wall time went (start-up, steps, teardown), when the metric lines were
    /// timed as they arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<JobTimeline>,
}

/// The bottlenecks of a run's training points, classified on the run's own micro ceilings
/// (`summary.json`'s `bottlenecks`, written by `yardstick run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunBottlenecks {
    /// One device's ceilings from the run's micro layer; `null` without a micro layer (then
    /// only input, communication and control-plane stalls are told apart).
    pub ceilings: Option<Ceilings>,
    /// Which micro results the ceilings came from; `null` with them.
    pub ceilings_source: Option<CeilingSources>,
    /// Every e2e point that reported training steps and could be classified, in plan order.
    pub points: Vec<PointBottleneck>,
}

/// One training point of a run, classified.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointBottleneck {
    /// The point id.
    pub point: String,
    /// The bottleneck, its evidence and the roofline placement (on the job's ceilings: one
    /// device's times `devices`) when FLOPs and bytes per step were known.
    #[serde(flatten)]
    pub classification: Classification,
    /// What the point's step was observed to do (aggregates over its replicates).
    pub observation: Observation,
    /// The devices of the job.
    pub devices: u32,
    /// Start-up and teardown against the wall time, when the command's timeline was measured;
    /// `null` otherwise.
    pub control_plane: Option<ControlPlaneShare>,
    /// The trainer's input demand against the data loader the run measured; `null` without
    /// a data-loader layer.
    pub input: Option<InputBalance>,
}

/// Where a job's wall time went outside its steps (means over replicates, seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ControlPlaneShare {
    /// Launch to the first step.
    pub startup_s: f64,
    /// The last step to exit.
    pub teardown_s: f64,
    /// Launch to exit.
    pub wall_s: f64,
    /// `(startup_s + teardown_s) / wall_s`.
    pub share: f64,
}

/// The observation of a training replicate: median measured step.
pub fn observation(report: &TrainingReport) -> Observation {
    Observation {
        flops: report.flops_per_step,
        bytes: report.bytes_per_step,
        step_s: Some(report.step_time_s.p50),
        data_wait_s: report.data_wait_s,
        comm_s: report.comm_s,
        comm_busbw: report.comm_busbw_gbps.map(|g| g * 1e9),
        ..Observation::default()
    }
}

/// Scales one device's ceilings to `devices` devices (the link bandwidth is per link already).
pub fn job_ceilings(per_device: &Ceilings, devices: u32) -> Ceilings {
    let d = f64::from(devices.max(1));
    Ceilings {
        label: if devices > 1 {
            format!("{} x{devices}", per_device.label)
        } else {
            per_device.label.clone()
        },
        peak_flops: per_device.peak_flops * d,
        memory_bw: per_device.memory_bw * d,
        link_bw: per_device.link_bw,
    }
}

/// Classifies a training replicate on one device's ceilings (scaled to the job's devices).
pub fn classify_training(
    report: &TrainingReport,
    per_device: &Ceilings,
    ceilings_source: impl Into<String>,
) -> TrainingBottleneck {
    classify_job(report, None, per_device, ceilings_source)
}

/// [`classify_training`] of a command run with its timeline: start-up plus teardown is the
/// observation's control-plane (`queue_s`) time, Σ step times its service time, against the
/// run's wall time.
pub fn classify_job(
    report: &TrainingReport,
    timeline: Option<&JobTimeline>,
    per_device: &Ceilings,
    ceilings_source: impl Into<String>,
) -> TrainingBottleneck {
    let devices = report.mfu.as_ref().map_or(report.world_size, |m| m.devices);
    let ceilings = job_ceilings(per_device, devices);
    let mut obs = observation(report);
    if let Some(t) = timeline {
        obs.queue_s = Some(t.control_plane_s);
        obs.service_s = Some(t.service_s);
        obs.wall_s = Some(t.wall_s);
    }
    let mut classification = roofline::classify(&ceilings, &obs);
    if let Some(t) = timeline {
        let split = format!(
            "start-up (launch to the first step) {:.3} s, teardown (last step to exit) {:.3} s, \
             {:.3} s in {} step records, {:.3} s between steps (arrivals by {}, ±{:.3} s)",
            t.startup_s,
            t.teardown_s,
            t.service_s,
            t.step_records,
            t.between_steps_s,
            t.source,
            t.resolution_s
        );
        classification.cite_job_split(split, t.control_plane_share, &format!(" {:.3} s", t.wall_s));
    }
    if report.bytes_source == Some("estimated") && classification.placement.is_some() {
        classification.evidence.push(
            "bytes per step are estimated from the model's shape (weights, AdamW states, \
             activations), not measured: report `bytes` per step for a measured placement"
                .into(),
        );
    }
    if obs.data_wait_s.is_none() && obs.comm_s.is_none() {
        classification.evidence.push(
            "the workload reported neither `data_wait_s` nor `comm_s`: input and communication \
             stalls could not be checked"
                .into(),
        );
    }
    TrainingBottleneck {
        classification,
        ceilings,
        ceilings_source: ceilings_source.into(),
        observation: obs,
        bytes_source: report.bytes_source,
        control_plane: timeline.cloned(),
    }
}

impl TrainingBottleneck {
    /// The verdict as people read it: `bottleneck: NAME (ceilings ...)` and one line per piece
    /// of evidence, each line starting with `indent`. ANSI styles mark the name; the caller
    /// strips them when the output is not a terminal.
    pub fn text(&self, indent: &str) -> String {
        use std::fmt::Write;
        let (bold, dim, reset) = ("\x1b[1m", "\x1b[2m", "\x1b[0m");
        let name = serde_json::to_value(self.classification.bottleneck)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{indent}bottleneck: {bold}{name}{reset}  {dim}(ceilings: {:.3e} FLOP/s, {:.3e} B/s, {}){reset}",
            self.ceilings.peak_flops, self.ceilings.memory_bw, self.ceilings_source,
        );
        for e in &self.classification.evidence {
            let _ = writeln!(out, "{indent}  - {e}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::parse_metrics;
    use crate::roofline::Bottleneck;
    use crate::training::{ModelDims, TrainingConfig, WarmupPolicy, analyze_training};

    fn vm() -> Ceilings {
        Ceilings {
            label: "vm".into(),
            peak_flops: 100e9,
            memory_bw: 10e9,
            link_bw: None,
        }
    }

    fn report(lines: &str, cfg: &TrainingConfig) -> TrainingReport {
        analyze_training(&parse_metrics(lines), cfg).unwrap()
    }

    #[test]
    fn reported_flops_and_bytes_place_the_step() {
        // 1e10 FLOPs and 1e8 bytes per step (100 FLOP/B, ridge 10): compute-bound; 0.2 s per
        // step is 5e10 FLOP/s, half the peak.
        let lines: String = (0..12)
            .map(|i| {
                format!(
                    "{{\"step\":{i},\"step_time_s\":0.2,\"flops\":1e10,\"bytes\":1e8,\"data_wait_s\":0.01}}\n"
                )
            })
            .collect();
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::None,
            ..TrainingConfig::default()
        };
        let r = report(&lines, &cfg);
        assert_eq!(r.bytes_per_step, Some(1e8));
        assert_eq!(r.bytes_source, Some("reported"));
        assert_eq!(r.data_wait_s, Some(0.01));
        let b = classify_training(&r, &vm(), "given");
        assert_eq!(b.classification.bottleneck, Bottleneck::Compute);
        let p = b.classification.placement.as_ref().unwrap();
        assert_eq!(p.intensity, 100.0);
        assert_eq!(p.efficiency, Some(0.5));
        assert!(b.classification.evidence[0].contains("at or above the ridge point 10.00"));
    }

    #[test]
    fn waiting_for_data_is_input_bound_and_estimated_bytes_say_so() {
        // 30 % of every step waits for the loader.
        let lines: String = (0..12)
            .map(|i| {
                format!(
                    "{{\"step\":{i},\"step_time_s\":0.5,\"tokens\":4096,\"data_wait_s\":0.15}}\n"
                )
            })
            .collect();
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::None,
            model: Some(ModelDims {
                parameters: 1e6,
                layers: Some(2),
                hidden: Some(64),
                sequence_length: Some(32),
            }),
            peak_flops_per_device: Some(100e9),
            ..TrainingConfig::default()
        };
        let r = report(&lines, &cfg);
        assert_eq!(r.bytes_source, Some("estimated"));
        assert_eq!(
            r.bytes_per_step,
            Some(crate::flops::training_bytes(
                1e6, 2, 64, 32, None, 4096.0, 4.0
            ))
        );
        let b = classify_training(&r, &vm(), "given");
        assert_eq!(b.classification.bottleneck, Bottleneck::Input);
        assert!(b.classification.evidence[0].starts_with("30% of the step"));
        assert!(
            b.classification
                .evidence
                .iter()
                .any(|e| e.contains("estimated from the model's shape"))
        );
    }

    #[test]
    fn reported_busbw_is_cited_against_the_link_peak() {
        // 35 % of each 1 s step in exposed all-reduce at 90 and 70 GB/s on two ranks (mean 80).
        let mut lines = String::new();
        for i in 0..12 {
            for (rank, bw) in [(0, 90), (1, 70)] {
                lines.push_str(&format!(
                    "{{\"step\":{i},\"rank\":{rank},\"world_size\":2,\"step_time_s\":1.0,\"comm_s\":0.35,\"comm_busbw_gbps\":{bw}}}\n"
                ));
            }
        }
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::None,
            ..TrainingConfig::default()
        };
        let r = report(&lines, &cfg);
        assert_eq!(r.comm_busbw_gbps, Some(80.0));
        let mut c = vm();
        c.link_bw = Some(100e9);
        let b = classify_training(&r, &c, "given");
        assert_eq!(b.classification.bottleneck, Bottleneck::Communication);
        assert_eq!(b.observation.comm_busbw, Some(80e9));
        assert!(
            b.classification.evidence[1].starts_with(
                "collective bus bandwidth 80.00 GB/s is 80% of the link peak 100.00 GB/s (saturated"
            ),
            "{:?}",
            b.classification.evidence
        );
    }

    #[test]
    fn a_run_that_mostly_starts_up_is_control_plane_bound() {
        let lines: String = (0..12)
            .map(|i| format!("{{\"step\":{i},\"step_time_s\":0.01,\"data_wait_s\":0.005}}\n"))
            .collect();
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::None,
            ..TrainingConfig::default()
        };
        let r = report(&lines, &cfg);
        let t = JobTimeline {
            wall_s: 2.0,
            first_step_reported_s: 1.81,
            startup_s: 1.8,
            service_s: 0.12,
            between_steps_s: 0.0,
            teardown_s: 0.08,
            control_plane_s: 1.88,
            control_plane_share: 0.94,
            step_records: 12,
            source: "fifo",
            resolution_s: 0.0,
        };
        let b = classify_job(&r, Some(&t), &vm(), "given");
        // Half of every step waits for input, but the job is 94 % start-up and teardown.
        assert_eq!(b.classification.bottleneck, Bottleneck::ControlPlane);
        assert!(b.classification.evidence[0].starts_with("94% of the job's wall time"));
        assert!(
            b.classification.evidence[1].starts_with(
                "start-up (launch to the first step) 1.800 s, teardown (last step to exit) 0.080 s"
            ),
            "{:?}",
            b.classification.evidence
        );
        assert_eq!(b.observation.queue_s, Some(1.88));
        assert_eq!(b.control_plane.as_ref(), Some(&t));
        // The same steps in a job that is mostly steps: input-bound, the share still shown.
        let busy = JobTimeline {
            wall_s: 0.2,
            startup_s: 0.05,
            teardown_s: 0.01,
            control_plane_s: 0.06,
            control_plane_share: 0.3,
            ..t
        };
        let b = classify_job(&r, Some(&busy), &vm(), "given");
        assert_eq!(b.classification.bottleneck, Bottleneck::Input);
        assert!(
            b.classification
                .evidence
                .iter()
                .any(|e| e.starts_with("start-up and teardown are 30% of the wall time 0.200 s"))
        );
    }

    #[test]
    fn exposed_collectives_over_two_ranks_scale_the_ceilings() {
        // Two ranks, 40 % of the step in exposed all-reduce.
        let mut lines = String::new();
        for i in 0..12 {
            for rank in 0..2 {
                lines.push_str(&format!(
                    "{{\"step\":{i},\"rank\":{rank},\"world_size\":2,\"step_time_s\":1.0,\"flops\":1e9,\"bytes\":1e9,\"comm_s\":0.4}}\n"
                ));
            }
        }
        let cfg = TrainingConfig {
            warmup: WarmupPolicy::None,
            ..TrainingConfig::default()
        };
        let r = report(&lines, &cfg);
        assert_eq!(r.comm_s, Some(0.4));
        assert_eq!(r.flops_per_step, Some(2e9));
        let b = classify_training(&r, &vm(), "given");
        assert_eq!(b.ceilings.peak_flops, 200e9);
        assert_eq!(b.ceilings.label, "vm x2");
        assert_eq!(b.classification.bottleneck, Bottleneck::Communication);
        // Without comm time the same step is memory-bound (1 FLOP/B < ridge 10).
        let quiet = lines.replace(",\"comm_s\":0.4", "");
        let b = classify_training(&report(&quiet, &cfg), &vm(), "given");
        assert_eq!(b.classification.bottleneck, Bottleneck::Memory);
        assert!(
            b.classification
                .evidence
                .iter()
                .any(|e| e.contains("neither `data_wait_s` nor `comm_s`"))
        );
    }
}
