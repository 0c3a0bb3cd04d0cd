//! `yardstick bench serve --find-capacity`: the capacity search of `yardstick_load::capacity`
//! wired to the CLI (flags, progress, the probe table, `--json` and `capacity.json`).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use yardstick_load::{Arrival, Progress, ServeBench};

use super::serve::{CapacityAxisArg, ServeArgs, progress_ticker};
use crate::cli::{GlobalOpts, verbosity};
use crate::exit::{self, Status};
use crate::output;

/// `bench serve --find-capacity`: the search, its probes as they are decided, the answer.
pub fn find_capacity(
    args: &ServeArgs,
    g: &GlobalOpts,
    bench: &ServeBench,
    arrival: Arrival,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Status> {
    use yardstick_load::capacity::{self, Axis, CapacityConfig, Criterion};
    let share = |what: &str, v: f64| {
        if v > 0.0 && v < 1.0 {
            Ok(v)
        } else {
            Err(exit::invalid(
                format!("{what} must be between 0 and 1 (exclusive), got {v}"),
                Some("e.g. --slo-percentile 99 or --slo-attainment 0.99"),
            ))
        }
    };
    let criterion = match (args.slo_percentile, args.slo_attainment) {
        (_, Some(a)) => Criterion::Attainment(share("--slo-attainment", a)?),
        (p, None) => {
            Criterion::Percentile(share("--slo-percentile / 100", p.unwrap_or(99.0) / 100.0)?)
        }
    };
    let axis = match args.capacity_axis {
        CapacityAxisArg::Rate => Axis::Rate {
            arrival,
            max_in_flight: args.max_in_flight,
        },
        CapacityAxisArg::Concurrency => Axis::Concurrency,
    };
    let start = args.capacity_start.unwrap_or(match axis {
        Axis::Rate { .. } => 10.0,
        Axis::Concurrency => 4.0,
    });
    let cfg = CapacityConfig {
        axis,
        slo: bench.slo.clone(),
        criterion,
        confidence: args.confidence,
        start,
        max: args.capacity_max,
        min: (start / 1024.0).min(0.01),
        precision: args.capacity_precision,
        probe_requests: args.probe_requests,
        max_probe_requests: args
            .max_probe_requests
            .unwrap_or(args.probe_requests.saturating_mul(4)),
        probe_duration: bench.stop.max_duration,
        max_probes: args.max_probes,
    };
    cfg.validate().map_err(|e| {
        exit::invalid(
            e.to_string(),
            Some("e.g. --find-capacity --slo-ttft-ms 200 --slo-tpot-ms 50 --slo-percentile 99"),
        )
    })?;
    let progress = Arc::new(Progress::default());
    let show = verbosity() >= 0;
    let started = Instant::now();
    let result = rt.block_on(async {
        let ticker = show.then(|| tokio::spawn(progress_ticker(progress.clone())));
        let mut n = 0;
        let res = capacity::find_capacity(bench, &cfg, progress.clone(), |load, probe| {
            if !show {
                return;
            }
            match probe {
                None => {
                    n += 1;
                    output::info(&format!("probe {n}: {} {load}", cfg.axis.name()));
                }
                Some(p) => output::info(&format!(
                    "probe {n}: {} {load}: {:?} after {} requests",
                    cfg.axis.name(),
                    p.outcome,
                    p.requests
                )),
            }
        })
        .await;
        if let Some(t) = ticker {
            t.abort();
            if std::io::stderr().is_terminal() {
                eprintln!();
            }
        }
        res
    });
    let result = result.map_err(exit::lib_error)?;
    let out = capacity::CapacityOutput {
        capacity: result,
        wall_s: started.elapsed().as_secs_f64(),
    };
    if let Some(dir) = &args.output {
        std::fs::write(dir.join("capacity.json"), serde_json::to_vec_pretty(&out)?)
            .with_context(|| format!("writing {}", dir.join("capacity.json").display()))?;
    }
    if g.json {
        output::json(&out)?;
    } else {
        output::text(&yardstick_load::text::capacity(&out.capacity))?;
        output::info(&format!(
            "{} probes in {:.1} s",
            out.capacity.probes.len(),
            out.wall_s
        ));
    }
    Ok(if out.capacity.end == capacity::SearchEnd::Interrupted {
        Status::Failure
    } else {
        Status::Ok
    })
}
