//! Roofline placement and bottleneck classification (seed 000, "Bottleneck Taxonomy"; seed 003,
//! "comparative roofline").
//!
//! The ceilings come from measurements (`gemm.f32.peak`, `memory.triad`, nccl-tests busbw,
//! storage or network throughput) or from a datasheet; the workload gives its FLOPs and bytes
//! per step (from the training analysis, or stated). [`place`] puts it on the roofline:
//! arithmetic intensity I = FLOPs / bytes, ridge point R = peak / bandwidth, attainable
//! performance min(peak, bandwidth · I). [`classify`] names the bottleneck with its evidence,
//! checking the causes that a roofline cannot see first — waiting for input, collectives,
//! queueing — because "do not over-index on GPU utilisation": a step that waits for data is
//! input-bound however its kernels would sit on the roofline.

use serde::{Deserialize, Serialize};

/// The ceilings of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// What they describe (a machine profile, or "datasheet H100 SXM").
    pub label: String,
    /// Peak compute, FLOP/s.
    pub peak_flops: f64,
    /// Memory bandwidth, bytes/s.
    pub memory_bw: f64,
    /// Interconnect bus bandwidth of collectives (nccl-tests busbw peak), bytes/s.
    pub link_bw: Option<f64>,
}

/// Where a workload sits on a roofline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placement {
    /// Arithmetic intensity, FLOP/byte.
    pub intensity: f64,
    /// Ridge point of the machine, FLOP/byte.
    pub ridge: f64,
    /// min(peak, bandwidth · intensity), FLOP/s.
    pub attainable_flops: f64,
    /// `memory` below the ridge, `compute` at or above it.
    pub roof: &'static str,
    /// Achieved FLOP/s, when a step time was given.
    pub achieved_flops: Option<f64>,
    /// Achieved / attainable.
    pub efficiency: Option<f64>,
}

/// Places a workload of `flops` and `bytes` per step (and, optionally, its measured step time)
/// on the roofline of `c`. `None` when an input is not positive and finite.
pub fn place(c: &Ceilings, flops: f64, bytes: f64, step_s: Option<f64>) -> Option<Placement> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if !(ok(flops) && ok(bytes) && ok(c.peak_flops) && ok(c.memory_bw)) {
        return None;
    }
    let intensity = flops / bytes;
    let ridge = c.peak_flops / c.memory_bw;
    let attainable = c.peak_flops.min(c.memory_bw * intensity);
    let achieved = step_s.filter(|s| ok(*s)).map(|s| flops / s);
    Some(Placement {
        intensity,
        ridge,
        attainable_flops: attainable,
        roof: if intensity < ridge {
            "memory"
        } else {
            "compute"
        },
        achieved_flops: achieved,
        efficiency: achieved.map(|a| a / attainable),
    })
}

/// What one step (or one request) of a workload was observed to do. Every field is optional;
/// the more is given, the more causes can be told apart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// FLOPs per step.
    pub flops: Option<f64>,
    /// Memory bytes moved per step.
    pub bytes: Option<f64>,
    /// Step time, s.
    pub step_s: Option<f64>,
    /// Time per step waiting for input (data loader, storage, network), s.
    pub data_wait_s: Option<f64>,
    /// Time per step in collectives not overlapped with compute, s.
    pub comm_s: Option<f64>,
    /// Achieved collective bus bandwidth, bytes/s.
    pub comm_busbw: Option<f64>,
    /// Time requests spend queued or being scheduled (serving, job start), s.
    pub queue_s: Option<f64>,
    /// Time requests spend being served, s.
    pub service_s: Option<f64>,
}

/// The bottleneck classes of seed 000 (memory split out of compute, as a roofline does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    /// Arithmetic throughput: at or above the ridge point.
    Compute,
    /// Memory bandwidth: below the ridge point.
    Memory,
    /// Collectives and interconnect.
    Communication,
    /// Data loading, storage, network input.
    Input,
    /// Scheduling, queueing, job start-up.
    ControlPlane,
    /// Not enough evidence.
    Undetermined,
}

/// A classification with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    /// The bottleneck.
    pub bottleneck: Bottleneck,
    /// Sentences a reader can check, strongest first.
    pub evidence: Vec<String>,
    /// The roofline placement, when FLOPs and bytes were given.
    pub placement: Option<Placement>,
}

/// Share of step time waiting for input above which a step is input-bound.
pub const INPUT_SHARE: f64 = 0.2;
/// Share of step time in exposed collectives above which a step is communication-bound.
pub const COMM_SHARE: f64 = 0.3;
/// Lower exposed-communication share that suffices when the link is near its peak.
pub const COMM_SHARE_SATURATED: f64 = 0.15;
/// Fraction of the link peak that counts as saturated.
pub const LINK_SATURATED: f64 = 0.8;
/// Queue share of (queue + service) above which the control plane is the bottleneck.
pub const QUEUE_SHARE: f64 = 0.5;

/// Classifies the bottleneck of an observation on the machine `c`.
pub fn classify(c: &Ceilings, o: &Observation) -> Classification {
    let pct = |x: f64| x * 100.0;
    let placement = match (o.flops, o.bytes) {
        (Some(f), Some(b)) => place(c, f, b, o.step_s),
        _ => None,
    };
    let mut evidence = Vec::new();
    let step = o.step_s.filter(|s| s.is_finite() && *s > 0.0);
    if let (Some(step), Some(wait)) = (step, o.data_wait_s) {
        let share = wait / step;
        if share >= INPUT_SHARE {
            evidence.push(format!(
                "{:.0}% of the step ({wait:.4} s of {step:.4} s) waits for input (threshold {:.0}%)",
                pct(share),
                pct(INPUT_SHARE)
            ));
            return Classification {
                bottleneck: Bottleneck::Input,
                evidence,
                placement,
            };
        }
    }
    if let (Some(step), Some(comm)) = (step, o.comm_s) {
        let share = comm / step;
        let saturation = match (o.comm_busbw, c.link_bw) {
            (Some(bw), Some(peak)) if peak > 0.0 => Some(bw / peak),
            _ => None,
        };
        let saturated = saturation.is_some_and(|s| s >= LINK_SATURATED);
        if share >= COMM_SHARE || (saturated && share >= COMM_SHARE_SATURATED) {
            evidence.push(format!(
                "{:.0}% of the step ({comm:.4} s) is in exposed collectives",
                pct(share)
            ));
            if let Some(s) = saturation {
                evidence.push(format!(
                    "collective bus bandwidth is {:.0}% of the link peak",
                    pct(s)
                ));
            }
            return Classification {
                bottleneck: Bottleneck::Communication,
                evidence,
                placement,
            };
        }
    }
    if let (Some(q), Some(s)) = (o.queue_s, o.service_s)
        && q + s > 0.0
        && q / (q + s) >= QUEUE_SHARE
    {
        evidence.push(format!(
            "requests spend {q:.4} s queued or scheduled against {s:.4} s served ({:.0}% queueing)",
            pct(q / (q + s))
        ));
        return Classification {
            bottleneck: Bottleneck::ControlPlane,
            evidence,
            placement,
        };
    }
    match &placement {
        Some(p) => {
            evidence.push(format!(
                "arithmetic intensity {:.2} FLOP/B is {} the ridge point {:.2} FLOP/B of {}",
                p.intensity,
                if p.roof == "memory" {
                    "below"
                } else {
                    "at or above"
                },
                p.ridge,
                c.label
            ));
            if let Some(e) = p.efficiency {
                evidence.push(format!(
                    "achieved {:.3e} FLOP/s = {:.0}% of the attainable {:.3e} FLOP/s",
                    p.achieved_flops.unwrap_or(0.0),
                    pct(e),
                    p.attainable_flops
                ));
            }
            Classification {
                bottleneck: if p.roof == "memory" {
                    Bottleneck::Memory
                } else {
                    Bottleneck::Compute
                },
                evidence,
                placement,
            }
        }
        None => {
            evidence.push(
                "neither time shares above their thresholds nor FLOPs and bytes per step were given"
                    .into(),
            );
            Classification {
                bottleneck: Bottleneck::Undetermined,
                evidence,
                placement: None,
            }
        }
    }
}

/// Two machines' rooflines at one workload's intensity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflineComparison {
    /// The intensity compared at, FLOP/byte.
    pub intensity: f64,
    /// Attainable FLOP/s on A.
    pub attainable_a: f64,
    /// Attainable FLOP/s on B.
    pub attainable_b: f64,
    /// attainable_b / attainable_a.
    pub ratio_b_over_a: f64,
    /// The intensity where the two rooflines cross, when one machine has the higher peak and
    /// the other the higher bandwidth: below it the high-bandwidth machine wins.
    pub crossover_intensity: Option<f64>,
}

/// Compares two machines at `intensity` (seed 003: "high peak, low bandwidth versus low peak,
/// high bandwidth").
pub fn compare(a: &Ceilings, b: &Ceilings, intensity: f64) -> Option<RooflineComparison> {
    let att = |c: &Ceilings| c.peak_flops.min(c.memory_bw * intensity);
    if !(intensity.is_finite() && intensity > 0.0) {
        return None;
    }
    let (aa, ab) = (att(a), att(b));
    if !(aa > 0.0 && ab > 0.0) {
        return None;
    }
    // With A higher in peak and B in bandwidth (or the reverse), the rooflines meet where the
    // sloped part of the low-bandwidth machine reaches the flat part of the low-peak machine:
    // I* = lower peak / lower bandwidth.
    let crossover = if (a.peak_flops - b.peak_flops) * (a.memory_bw - b.memory_bw) < 0.0 {
        Some(a.peak_flops.min(b.peak_flops) / a.memory_bw.min(b.memory_bw))
    } else {
        None
    };
    Some(RooflineComparison {
        intensity,
        attainable_a: aa,
        attainable_b: ab,
        ratio_b_over_a: ab / aa,
        crossover_intensity: crossover,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The development VM: 131 GFLOP/s f32 GEMM, 14.6 GB/s triad.
    fn vm() -> Ceilings {
        Ceilings {
            label: "cpu-EPYC-f25m17x2c".into(),
            peak_flops: 131e9,
            memory_bw: 14.6e9,
            link_bw: None,
        }
    }

    #[test]
    fn placement_against_the_ridge() {
        let c = vm();
        // Triad-like: 2 FLOPs per 24 bytes.
        let p = place(&c, 2.0, 24.0, None).unwrap();
        assert_eq!(p.roof, "memory");
        assert!((p.attainable_flops - 14.6e9 / 12.0).abs() < 1.0);
        // GEMM 1024: 2n³ FLOPs over 3n² * 4 bytes.
        let n = 1024.0f64;
        let p = place(&c, 2.0 * n.powi(3), 12.0 * n * n, Some(0.02)).unwrap();
        assert_eq!(p.roof, "compute");
        assert_eq!(p.attainable_flops, 131e9);
        assert!((p.efficiency.unwrap() - 2.0 * n.powi(3) / 0.02 / 131e9).abs() < 1e-12);
        assert!(place(&c, 0.0, 1.0, None).is_none());
    }

    #[test]
    fn input_and_comm_and_queueing_come_before_the_roofline() {
        let mut c = vm();
        c.link_bw = Some(400e9);
        let compute_heavy = Observation {
            flops: Some(1e12),
            bytes: Some(1e9),
            step_s: Some(1.0),
            ..Observation::default()
        };
        assert_eq!(classify(&c, &compute_heavy).bottleneck, Bottleneck::Compute);
        let starved = Observation {
            data_wait_s: Some(0.35),
            ..compute_heavy.clone()
        };
        let k = classify(&c, &starved);
        assert_eq!(k.bottleneck, Bottleneck::Input);
        assert!(
            k.evidence[0].starts_with("35% of the step"),
            "{:?}",
            k.evidence
        );
        let chatty = Observation {
            comm_s: Some(0.2),
            comm_busbw: Some(360e9),
            ..compute_heavy.clone()
        };
        let k = classify(&c, &chatty);
        assert_eq!(k.bottleneck, Bottleneck::Communication);
        assert!(k.evidence[1].contains("90% of the link peak"));
        let quiet_link = Observation {
            comm_s: Some(0.2),
            comm_busbw: Some(100e9),
            ..compute_heavy.clone()
        };
        assert_eq!(classify(&c, &quiet_link).bottleneck, Bottleneck::Compute);
        let queued = Observation {
            queue_s: Some(0.3),
            service_s: Some(0.1),
            ..Observation::default()
        };
        assert_eq!(classify(&c, &queued).bottleneck, Bottleneck::ControlPlane);
        assert_eq!(
            classify(&c, &Observation::default()).bottleneck,
            Bottleneck::Undetermined
        );
        let streaming = Observation {
            flops: Some(2.0),
            bytes: Some(24.0),
            ..Observation::default()
        };
        assert_eq!(classify(&c, &streaming).bottleneck, Bottleneck::Memory);
    }

    #[test]
    fn high_peak_low_bandwidth_versus_low_peak_high_bandwidth() {
        // System A: 2 PFLOP/s, 2 TB/s. System B: 1 PFLOP/s, 4 TB/s.
        let a = Ceilings {
            label: "A".into(),
            peak_flops: 2e15,
            memory_bw: 2e12,
            link_bw: None,
        };
        let b = Ceilings {
            label: "B".into(),
            peak_flops: 1e15,
            memory_bw: 4e12,
            link_bw: None,
        };
        // A decode-like workload at 100 FLOP/B: B attains 2x A.
        let cmp = compare(&a, &b, 100.0).unwrap();
        assert_eq!(cmp.attainable_a, 2e14);
        assert_eq!(cmp.attainable_b, 4e14);
        assert_eq!(cmp.ratio_b_over_a, 2.0);
        // They cross at 1e15 / 2e12 = 500 FLOP/B; above it A wins.
        assert_eq!(cmp.crossover_intensity, Some(500.0));
        let above = compare(&a, &b, 2000.0).unwrap();
        assert!(above.ratio_b_over_a < 1.0);
        let at = compare(&a, &b, 500.0).unwrap();
        assert_eq!(at.attainable_a, at.attainable_b);
        // A machine better in both has no crossover.
        assert_eq!(compare(&a, &a, 10.0).unwrap().crossover_intensity, None);
    }
}
