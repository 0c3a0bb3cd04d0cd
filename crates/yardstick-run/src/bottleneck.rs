//! The bottleneck of a run's training points, from the run's own layers: the micro layer
//! measures the machine's ceilings (best `gemm.<dtype>.N` of the workload's precision as the
//! peak — `gemm.bf16.N` for a bf16 workload, f32 otherwise or as the noted fallback —
//! `memory.triad` as the
//! bandwidth; when the micro layer measured a GPU, the GPU's `gpu.gemm.<dtype>.peak` and
//! `gpu.hbm.copy` instead, as `yardstick_analysis::roofline` documents), the e2e layer's training analysis gives each point's FLOPs, bytes and time per
//! step (and input wait, exposed collective time and its bus bandwidth when the workload
//! reports them), the command's timeline its start-up and teardown against its wall time
//! (control-plane time, mean over replicates), and `yardstick_analysis::roofline` places and
//! classifies each point with its evidence. A data-loader layer in the same run adds its
//! measured supply: a loader slower than the trainer's demand makes the step input-bound.

use yardstick_analysis::bottleneck::{ControlPlaneShare, PointBottleneck, RunBottlenecks};
use yardstick_analysis::roofline::{self, Ceilings, Observation};
use yardstick_spec::metrics::id as metric_id;
use yardstick_spec::model::Precision;
use yardstick_store::warehouse::FactRow;

use crate::plan::Plan;

fn fact(facts: &[FactRow], point: &str, metric: &str, statistic: &str) -> Option<f64> {
    facts
        .iter()
        .find(|f| f.point_id == point && f.metric == metric && f.statistic == statistic)
        .map(|f| f.value)
        .filter(|v| v.is_finite())
}

/// The shares of a profiled step (`profile.*` facts) spent loading data and in collectives not
/// overlapped with compute.
fn profile_shares(facts: &[FactRow], point: &str) -> Option<(f64, f64)> {
    let step = fact(facts, point, metric_id::PROFILE_STEP_S, "value").filter(|s| *s > 0.0)?;
    let data = fact(facts, point, "profile.data_s", "value").unwrap_or(0.0);
    let comm = fact(facts, point, "profile.communication_s", "value").unwrap_or(0.0);
    let overlap = fact(facts, point, metric_id::PROFILE_COMM_OVERLAP, "value").unwrap_or(0.0);
    Some((data / step, comm * (1.0 - overlap) / step))
}

/// The e2e points that reported training steps, classified (`summary.json`'s `bottlenecks`);
/// `None` when there are none. Without micro ceilings only input, communication and
/// control-plane stalls can be told apart. `precision` is the workload's
/// (`spec.workload.precision`; fp32 when not given).
pub fn bottlenecks(
    plan: &Plan,
    aggregate: &[FactRow],
    precision: Option<Precision>,
) -> Option<RunBottlenecks> {
    let micro_points: Vec<&str> = plan
        .points
        .iter()
        .filter(|p| p.layer == "micro")
        .map(|p| p.id.as_str())
        .collect();
    let triples: Vec<(&str, f64, &str)> = aggregate
        .iter()
        .filter(|f| micro_points.contains(&f.point_id.as_str()) && f.statistic == "value")
        .map(|f| (f.metric.as_str(), f.value, f.unit.as_str()))
        .collect();
    let precision = precision.map_or("fp32", yardstick_analysis::spec::precision_name);
    let label = "this run's micro layer";
    // A command may run on the node's GPUs (their ceilings when the micro layer measured
    // them); the built-in reference trainer runs on the CPU, so its ceilings are the CPU's.
    let on_any = Ceilings::from_micro_for(label, precision, triples.iter().copied());
    let on_cpu = Ceilings::from_micro_on(
        label,
        precision,
        yardstick_analysis::roofline::Target::Cpu,
        triples.iter().copied(),
    );
    // The data loader's steady-state supply, when the run measured one (its warm pass when it
    // has both: a trainer reads its data more than once).
    let supply = plan
        .points
        .iter()
        .filter(|p| matches!(p.work, crate::plan::PointWork::Dataloader { .. }))
        .filter_map(|p| {
            let rate = fact(aggregate, &p.id, metric_id::LOADER_SAMPLES_PER_S, "value")?;
            Some((p.id.clone(), rate))
        })
        .min_by_key(|(id, _)| !id.ends_with("/warm"));
    let mut points = Vec::new();
    for p in plan.points.iter().filter(|p| p.layer == "e2e") {
        let id = p.id.as_str();
        let ceilings = if matches!(p.work, crate::plan::PointWork::Train { .. }) {
            &on_cpu
        } else {
            &on_any
        };
        let Some(step_s) = fact(aggregate, id, metric_id::STEP_TIME_S, "p50") else {
            continue;
        };
        let startup = fact(aggregate, id, metric_id::STARTUP_S, "value");
        let teardown = fact(aggregate, id, metric_id::TEARDOWN_S, "value");
        let wall = fact(aggregate, id, metric_id::WALL_S, "value");
        let timed = startup.is_some() && teardown.is_some() && wall.is_some();
        // A profile (the point's profiled replicate) sharpens what the workload did not
        // report: its shares of the step in the data loader and in exposed collectives, applied
        // to the measured step time (the profiled step itself is slowed by the profiler).
        let profiled = profile_shares(aggregate, id);
        let reported_wait = fact(aggregate, id, metric_id::DATA_WAIT_S, "value");
        let reported_comm = fact(aggregate, id, metric_id::COMM_S, "value");
        let obs = Observation {
            flops: fact(aggregate, id, metric_id::FLOPS_PER_STEP, "value"),
            bytes: fact(aggregate, id, metric_id::BYTES_PER_STEP, "value"),
            step_s: Some(step_s),
            data_wait_s: reported_wait.or(profiled.map(|(d, _)| d * step_s)),
            comm_s: reported_comm.or(profiled.map(|(_, c)| c * step_s)),
            comm_busbw: fact(aggregate, id, metric_id::COMM_BUSBW_GBPS, "value").map(|g| g * 1e9),
            queue_s: timed.then(|| startup.unwrap_or(0.0) + teardown.unwrap_or(0.0)),
            service_s: timed
                .then(|| fact(aggregate, id, metric_id::SERVICE_S, "value"))
                .flatten(),
            wall_s: timed.then_some(wall).flatten(),
        };
        let devices = fact(aggregate, id, metric_id::MFU, "devices")
            .or_else(|| fact(aggregate, id, metric_id::WORLD_SIZE, "value"))
            .map_or(1, |d| d.round().max(1.0) as u32);
        let job = match &ceilings {
            Some((c, _)) => yardstick_analysis::bottleneck::job_ceilings(c, devices),
            None if obs.data_wait_s.is_some()
                || obs.comm_s.is_some()
                || timed
                || supply.is_some() =>
            {
                Ceilings {
                    label: "no micro ceilings".into(),
                    peak_flops: 0.0,
                    memory_bw: 0.0,
                    link_bw: None,
                }
            }
            None => continue,
        };
        let mut k = roofline::classify(&job, &obs);
        let input = supply.as_ref().and_then(|(point, rate)| {
            let consumed = fact(aggregate, id, metric_id::SAMPLES_PER_S, "aggregate")?;
            roofline::InputBalance::new(consumed, Some(step_s), obs.data_wait_s, *rate, point)
        });
        if let Some(b) = &input {
            k.cite_input_supply(b);
        }
        if let Some((d, c)) = profiled
            && (reported_wait.is_none() || reported_comm.is_none())
        {
            k.evidence.push(format!(
                "the profile (one profiled replicate) puts {:.1} % of the step in the data \
                 loader and {:.1} % in collectives not overlapped with compute",
                d * 100.0,
                c * 100.0
            ));
        }
        let control_plane = match (startup, teardown, obs.wall_s) {
            (Some(s), Some(t), Some(w)) if timed && w > 0.0 => {
                let split = format!(
                    "start-up (launch to the first step) {s:.3} s, teardown (last step to exit) \
                     {t:.3} s of {w:.3} s wall (means over replicates)"
                );
                k.cite_job_split(split, (s + t) / w, "");
                Some(ControlPlaneShare {
                    startup_s: s,
                    teardown_s: t,
                    wall_s: w,
                    share: (s + t) / w,
                })
            }
            _ => None,
        };
        points.push(PointBottleneck {
            point: id.to_string(),
            classification: k,
            observation: obs,
            devices,
            control_plane,
            input,
        });
    }
    if points.is_empty() {
        return None;
    }
    // The run's ceilings are those its training points were placed against: the CPU's when
    // they are all the built-in trainer's.
    let all_builtin = plan
        .points
        .iter()
        .filter(|p| p.layer == "e2e")
        .all(|p| matches!(p.work, crate::plan::PointWork::Train { .. }));
    let (ceilings, ceilings_source) = if all_builtin { on_cpu } else { on_any }.unzip();
    Some(RunBottlenecks {
        ceilings,
        ceilings_source,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Point, PointWork};
    use yardstick_analysis::roofline::Bottleneck;

    fn row(point: &str, metric: &str, statistic: &str, value: f64, unit: &str) -> FactRow {
        FactRow {
            run_id: "r".into(),
            point_id: point.into(),
            replicate: None,
            metric: metric.into(),
            statistic: statistic.into(),
            value,
            ci_lo: None,
            ci_hi: None,
            unit: unit.into(),
            n: 3,
            artifact: None,
            row_group: None,
        }
    }

    fn plan() -> Plan {
        let point = |id: &str, layer: &str, work: PointWork| Point {
            id: id.into(),
            slug: crate::plan::slug(id),
            layer: layer.into(),
            work,
            treatment: None,
        };
        Plan {
            name: "t".into(),
            points: vec![
                point(
                    "micro.0.memory",
                    "micro",
                    PointWork::Micro {
                        micro: "memory".into(),
                        sizes: None,
                        dtype: None,
                    },
                ),
                point(
                    "micro.1.gemm",
                    "micro",
                    PointWork::Micro {
                        micro: "gemm".into(),
                        sizes: None,
                        dtype: None,
                    },
                ),
                point(
                    "e2e.0.train",
                    "e2e",
                    PointWork::Train {
                        layer: 0,
                        preset: "tiny".into(),
                        steps: Some(50),
                        warmup_steps: 5,
                    },
                ),
            ],
            replicates: 3,
            steps: Vec::new(),
            estimate_upper_s: None,
            treatments: Vec::new(),
        }
    }

    #[test]
    fn micro_ceilings_place_the_training_point() {
        let facts = vec![
            row("micro.0.memory", "memory.triad", "value", 14.6, "GB/s"),
            row("micro.1.gemm", "gemm.f32.1024", "value", 120.0, "GFLOP/s"),
            row("micro.1.gemm", "gemm.f32.2048", "value", 131.0, "GFLOP/s"),
            row("e2e.0.train", "step_time_s", "p50", 0.05, "s"),
            row("e2e.0.train", "flops_per_step", "value", 1.31e9, ""),
            row("e2e.0.train", "bytes_per_step", "value", 1e7, ""),
        ];
        let v = bottlenecks(&plan(), &facts, Some(Precision::Fp32)).unwrap();
        assert_eq!(v.ceilings.as_ref().unwrap().peak_flops, 131e9);
        assert_eq!(v.ceilings_source.as_ref().unwrap().peak, "gemm.f32.2048");
        let p = &v.points[0];
        assert_eq!(p.point, "e2e.0.train");
        // 131 FLOP/B against a ridge of 131/14.6 = 8.97: compute-bound, at 20 % of the peak.
        let k = &p.classification;
        assert_eq!(k.bottleneck, Bottleneck::Compute);
        let placement = k.placement.as_ref().unwrap();
        assert!((placement.efficiency.unwrap() - 0.2).abs() < 1e-12);
        assert!(k.evidence[0].contains("this run's micro layer"));
        // Written as summary.json has it: the classification beside the point, every field.
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["points"][0]["bottleneck"], "compute");
        assert_eq!(j["points"][0]["placement"]["roof"], "compute");
        assert!(j["points"][0]["control_plane"].is_null() && j["points"][0]["input"].is_null());
        assert_eq!(j["ceilings_source"]["memory"], "memory.triad");
    }

    /// On a GPU node (the micro layer measured an H200 beside the CPU), the built-in trainer —
    /// which runs on the CPU — is still placed against the CPU's ceilings: a GPU roof would
    /// call it "0 % of attainable" and memory-bound for no reason it could act on.
    #[test]
    fn the_builtin_trainer_is_placed_on_the_cpu_roof_on_a_gpu_node() {
        let facts = vec![
            row("micro.0.memory", "memory.triad", "value", 14.6, "GB/s"),
            row("micro.1.gemm", "gemm.f32.2048", "value", 131.0, "GFLOP/s"),
            row("micro.0.memory", "gpu.hbm.copy", "value", 4230.0, "GB/s"),
            row(
                "micro.1.gemm",
                "gpu.gemm.tf32.peak",
                "value",
                360.0,
                "TFLOP/s",
            ),
            row("e2e.0.train", "step_time_s", "p50", 0.05, "s"),
            row("e2e.0.train", "flops_per_step", "value", 1.31e9, ""),
            row("e2e.0.train", "bytes_per_step", "value", 1e7, ""),
        ];
        let v = bottlenecks(&plan(), &facts, Some(Precision::Fp32)).unwrap();
        assert_eq!(v.ceilings.as_ref().unwrap().peak_flops, 131e9);
        assert_eq!(v.ceilings_source.as_ref().unwrap().memory, "memory.triad");
        assert_eq!(v.points[0].classification.bottleneck, Bottleneck::Compute);
    }

    /// A workload that reports no input wait or collective time: its profile's shares of the
    /// step decide, applied to the measured step time, and are cited.
    #[test]
    fn a_profile_sharpens_the_verdict_where_the_workload_reported_nothing() {
        let facts = vec![
            row("e2e.0.train", "step_time_s", "p50", 1.0, "s"),
            row("e2e.0.train", "profile.step_s", "value", 1.2, "s"),
            row("e2e.0.train", "profile.data_s", "value", 0.06, "s"),
            // 0.6 s of collectives, a third overlapped: 0.4 s exposed, a third of the step.
            row("e2e.0.train", "profile.communication_s", "value", 0.6, "s"),
            row(
                "e2e.0.train",
                "profile.comm_overlap",
                "value",
                1.0 / 3.0,
                "fraction",
            ),
        ];
        let v = bottlenecks(&plan(), &facts, None).unwrap();
        let p = &v.points[0];
        assert_eq!(
            p.classification.bottleneck,
            Bottleneck::Communication,
            "{p:?}"
        );
        assert!((p.observation.comm_s.unwrap() - 1.0 / 3.0).abs() < 1e-9);
        let cited = p.classification.evidence.iter().any(|e| {
            e.contains("the profile (one profiled replicate) puts 5.0 % of the step in the data loader and 33.3 %")
        });
        assert!(cited, "{p:?}");
    }

    #[test]
    fn without_micro_only_stalls_are_classified() {
        let mut facts = vec![
            row("e2e.0.train", "step_time_s", "p50", 1.0, "s"),
            row("e2e.0.train", "flops_per_step", "value", 1e9, ""),
        ];
        assert_eq!(bottlenecks(&plan(), &facts, None), None);
        facts.push(row("e2e.0.train", "data_wait_s", "value", 0.4, "s"));
        let v = bottlenecks(&plan(), &facts, None).unwrap();
        assert_eq!((&v.ceilings, &v.ceilings_source), (&None, &None));
        assert_eq!(v.points[0].classification.bottleneck, Bottleneck::Input);
        // Without ceilings they are written as null, as before.
        let j = serde_json::to_value(&v).unwrap();
        assert!(j["ceilings"].is_null() && j["ceilings_source"].is_null());
        assert!(j.as_object().unwrap().contains_key("ceilings"));
    }

    #[test]
    fn a_command_point_that_mostly_starts_up_is_control_plane_bound() {
        let mut facts = vec![
            row("e2e.0.train", "step_time_s", "p50", 0.01, "s"),
            row("e2e.0.train", "startup_s", "value", 1.5, "s"),
            row("e2e.0.train", "teardown_s", "value", 0.1, "s"),
            row("e2e.0.train", "service_s", "value", 0.2, "s"),
            row("e2e.0.train", "wall_s", "value", 1.8, "s"),
        ];
        // No micro layer: start-up against wall time needs no ceilings.
        let v = bottlenecks(&plan(), &facts, None).unwrap();
        let p = &v.points[0];
        let evidence = &p.classification.evidence;
        assert_eq!(
            p.classification.bottleneck,
            Bottleneck::ControlPlane,
            "{p:?}"
        );
        assert!(
            evidence[0].starts_with("89% of the job's wall time (1.600 s of 1.800 s)"),
            "{p:?}"
        );
        assert!(evidence[1].contains("start-up (launch to the first step) 1.500 s"));
        assert_eq!(p.control_plane.as_ref().unwrap().startup_s, 1.5);
        assert_eq!(p.observation.queue_s, Some(1.6));
        let j = serde_json::to_value(p).unwrap();
        assert_eq!(j["control_plane"]["startup_s"], 1.5);
        assert_eq!(j["bottleneck"], "control-plane");
        // A long run with the same start-up: the steps decide (here, their input wait).
        for f in facts.iter_mut() {
            match f.metric.as_str() {
                "wall_s" => f.value = 20.0,
                "service_s" => f.value = 18.4,
                _ => {}
            }
        }
        facts.push(row("e2e.0.train", "data_wait_s", "value", 0.004, "s"));
        let v = bottlenecks(&plan(), &facts, None).unwrap();
        let p = &v.points[0];
        assert_eq!(p.classification.bottleneck, Bottleneck::Input, "{p:?}");
        assert!(
            p.classification
                .evidence
                .iter()
                .any(|e| e.starts_with("start-up and teardown are 8% of the wall time"))
        );
    }

    #[test]
    fn a_bf16_workload_is_placed_under_the_bf16_peak() {
        let mut facts = vec![
            row("micro.0.memory", "memory.triad", "value", 14.6, "GB/s"),
            row("micro.1.gemm", "gemm.f32.1024", "value", 120.0, "GFLOP/s"),
            row("e2e.0.train", "step_time_s", "p50", 0.05, "s"),
            row("e2e.0.train", "flops_per_step", "value", 1.31e9, ""),
            row("e2e.0.train", "bytes_per_step", "value", 1e7, ""),
        ];
        // No bf16 figure (a CPU without avx512_bf16): the f32 peak, with the reason.
        let source = |p: Option<Precision>, facts: &[FactRow]| {
            bottlenecks(&plan(), facts, p)
                .and_then(|v| v.ceilings_source)
                .unwrap()
        };
        let s = source(Some(Precision::Bf16), &facts);
        assert_eq!(s.peak, "gemm.f32.1024");
        assert!(s.note.unwrap().contains("no gemm.bf16 figure"));
        facts.push(row(
            "micro.1.gemm",
            "gemm.bf16.1024",
            "value",
            262.0,
            "GFLOP/s",
        ));
        for p in [Precision::Bf16, Precision::Mixed] {
            let v = bottlenecks(&plan(), &facts, Some(p)).unwrap();
            assert_eq!(v.ceilings.as_ref().unwrap().peak_flops, 262e9);
            let s = v.ceilings_source.as_ref().unwrap();
            assert_eq!((s.peak.as_str(), &s.note), ("gemm.bf16.1024", &None));
            // 26.2 GFLOP/s achieved against 262: 10 % of the bf16 peak.
            let placement = v.points[0].classification.placement.as_ref().unwrap();
            let eff = placement.efficiency.unwrap();
            assert!((eff - 0.1).abs() < 1e-12, "{eff}");
        }
        // An fp32 workload keeps the f32 peak.
        assert_eq!(source(None, &facts).peak, "gemm.f32.1024");
    }
}
