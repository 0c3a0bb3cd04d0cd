//! `yardstick bench train` as a library call: the ceilings (given, from a micro report, or
//! measured here), the training run, the analysis of its steps and the bottleneck verdict.

use serde_json::json;
use yardstick_analysis::bottleneck::TrainingBottleneck;
use yardstick_analysis::protocol::ParsedMetrics;
use yardstick_analysis::roofline::Ceilings;
use yardstick_analysis::training::{TrainingConfig, TrainingReport, WarmupPolicy};

use super::{TrainConfig, TrainError, TrainRun, invalid};
use crate::micro::{self, MicroConfig, TrialPolicy};

/// What to run and against which ceilings.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The trainer's settings.
    pub train: TrainConfig,
    /// The peak FLOP/s MFU is measured against; `None`: from `micro`, else measured.
    pub peak_flops: Option<f64>,
    /// The memory bandwidth of the roofline, bytes/s; `None`: from `micro`, else measured.
    pub memory_bw: Option<f64>,
    /// Ceilings read from a `bench micro` report, with where they came from.
    pub micro: Option<(Ceilings, String)>,
    /// Warm-up steps to drop; `None`: MSER-5 decides.
    pub warmup_steps: Option<u64>,
}

/// A phase worth telling the user about before it takes a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Measuring the f32 GEMM peak (no peak given).
    MeasuringPeak,
    /// Measuring the memory bandwidth (no bandwidth given).
    MeasuringBandwidth,
}

impl Phase {
    /// What the phase does, for a progress line.
    pub fn text(self) -> &'static str {
        match self {
            Phase::MeasuringPeak => "measuring the f32 GEMM peak (1024³, best of 5)...",
            Phase::MeasuringBandwidth => {
                "measuring the memory bandwidth (STREAM triad, 5 iterations)..."
            }
        }
    }
}

/// What a `bench train` found.
#[derive(Debug)]
pub struct BenchOutcome {
    /// What the trainer did.
    pub run: TrainRun,
    /// The analysis of its steps.
    pub report: TrainingReport,
    /// The peak FLOP/s MFU is measured against.
    pub peak: f64,
    /// `{"source": "given" | "measured" | <micro report>}`, with the GEMM measurement when
    /// measured.
    pub peak_source: serde_json::Value,
    /// The bottleneck verdict with its evidence.
    pub bottleneck: TrainingBottleneck,
}

impl BenchOutcome {
    /// Whether the loss rose or went non-finite: the run trained nothing.
    pub fn diverged(&self) -> bool {
        self.report
            .loss
            .as_ref()
            .is_some_and(|l| l.rising || l.non_finite_steps > 0)
    }

    /// What people read: the model and its work per step, step times, throughput, MFU against
    /// its peak, the loss, the peak memory, warnings, then the bottleneck verdict.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        use yardstick_spec::units::format_seconds as fmt_s;
        use yardstick_stats::text::style::{BOLD, DIM, RESET, WARN};
        let (b, x, d, w) = (BOLD, RESET, DIM, WARN);
        let (run, r) = (&self.run, &self.report);
        let mut out = String::new();
        let s = &run.shape;
        let _ = writeln!(
            out,
            "{b}Reference trainer{x}: V {} H {} L {} heads {} S {} batch {} — {:.2}M params \
             ({:.2}M in matmuls), {:.3} GFLOP/step, {} thread(s)",
            s.vocab,
            s.hidden,
            s.layers,
            s.heads,
            s.seq_len,
            run.batch,
            run.total_params as f64 / 1e6,
            run.matmul_params as f64 / 1e6,
            run.flops_per_step / 1e9,
            run.threads
        );
        let _ = writeln!(
            out,
            "  steps {} ({} measured after warm-up of {})",
            r.steps, r.measured_steps, r.warmup.trimmed
        );
        let _ = writeln!(
            out,
            "  step time   p50 {}  p90 {}  mean {}",
            fmt_s(r.step_time_s.p50),
            fmt_s(r.step_time_s.p90),
            fmt_s(r.step_time_s.mean)
        );
        if let Some(t) = &r.tokens_per_s {
            let _ = writeln!(
                out,
                "  tokens/s    p50 {:.0}  p10 {:.0}  aggregate {:.0}",
                t.p50, t.p10, t.aggregate
            );
        }
        if let Some(m) = &r.mfu {
            let src = self.peak_source["source"].as_str().unwrap_or("given");
            let _ = writeln!(
                out,
                "  MFU         p50 {:.1} %  p10 {:.1} %  {d}(peak {:.2} GFLOP/s, {src}){x}",
                m.p50 * 100.0,
                m.p10 * 100.0,
                self.peak / 1e9
            );
        }
        if let Some(l) = &r.loss {
            let _ = writeln!(
                out,
                "  loss        {:.4} → {:.4}  slope {:+.3e}/step",
                l.first, l.last, l.slope
            );
        }
        if let Some(m) = r.peak_mem_bytes {
            let _ = writeln!(out, "  peak RSS    {:.1} MiB", m / (1024.0 * 1024.0));
        }
        for warning in &r.warnings {
            let _ = writeln!(out, "  {w}warning{x}: {warning}");
        }
        out.push_str(&self.bottleneck.text("  "));
        out
    }
}

/// Runs the trainer and analyses it. `on_phase` hears about slow measurements before they
/// start; `progress` sees every step's record.
pub fn bench(
    cfg: &BenchConfig,
    on_phase: &mut dyn FnMut(Phase),
    progress: &mut (dyn FnMut(&yardstick_analysis::MetricRecord) + Send),
) -> Result<BenchOutcome, TrainError> {
    for (flag, v, hint) in [
        ("--peak-flops", cfg.peak_flops, "e.g. --peak-flops 1.2e11"),
        (
            "--memory-bw",
            cfg.memory_bw,
            "bytes per second, e.g. --memory-bw 1.5e10",
        ),
    ] {
        if let Some(x) = v
            && !(x.is_finite() && x > 0.0)
        {
            return Err(invalid(format!("{flag} must be positive, got {x}"), hint));
        }
    }
    cfg.train.validate()?;
    let threads = cfg.train.threads;
    let (peak, peak_source) = match (cfg.peak_flops, &cfg.micro) {
        (Some(p), _) => (p, json!({"source": "given"})),
        (None, Some((c, src))) => (c.peak_flops, json!({"source": src})),
        (None, None) => {
            on_phase(Phase::MeasuringPeak);
            let gp = super::measure_gemm_peak(1024, 5, threads)?;
            (gp.flops, json!({"source": "measured", "gemm": gp}))
        }
    };
    let (memory_bw, bw_source) = match (cfg.memory_bw, &cfg.micro) {
        (Some(b), _) => (b, "given".to_string()),
        (None, Some((c, src))) => (c.memory_bw, src.clone()),
        (None, None) => {
            on_phase(Phase::MeasuringBandwidth);
            let bw = measure_triad(threads).map_err(|e| {
                TrainError::Measure(format!(
                    "measuring the memory bandwidth: {e} (give --memory-bw)"
                ))
            })?;
            (
                bw,
                "measured (STREAM triad, 32 MiB arrays, 1 replicate of 5 iterations)".to_string(),
            )
        }
    };
    let run = super::train(&cfg.train, progress)?;
    let parsed = ParsedMetrics {
        records: run.records.clone(),
        ..ParsedMetrics::default()
    };
    let tcfg = TrainingConfig {
        warmup: cfg
            .warmup_steps
            .map_or(WarmupPolicy::Mser5, WarmupPolicy::Steps),
        peak_flops_per_device: Some(peak),
        devices: Some(1),
        ..TrainingConfig::default()
    };
    let report = yardstick_analysis::analyze_training(&parsed, &tcfg)
        .map_err(|e| TrainError::Analysis(e.to_string()))?;
    let peak_src = match &peak_source["source"] {
        serde_json::Value::String(s) if s == "measured" => {
            "measured (f32 GEMM 1024³ with the trainer's library)".to_string()
        }
        serde_json::Value::String(s) => s.clone(),
        _ => "given".to_string(),
    };
    let ceilings = Ceilings {
        label: "this machine".into(),
        peak_flops: peak,
        memory_bw,
        link_bw: None,
    };
    let mut bottleneck = yardstick_analysis::bottleneck::classify_training(
        &report,
        &ceilings,
        format!("peak {peak_src}; bandwidth {bw_source}"),
    );
    bottleneck.classification.evidence.push(
        "the trainer's bytes per step are its analytic estimate (weights, AdamW states, \
         activations; flops::training_bytes), not a measured memory traffic"
            .into(),
    );
    Ok(BenchOutcome {
        run,
        report,
        peak,
        peak_source,
        bottleneck,
    })
}

/// A short STREAM triad (one replicate, 5 iterations, 32 MiB arrays) on the trainer's
/// threads: the bandwidth ceiling of the roofline.
fn measure_triad(threads: Option<usize>) -> Result<f64, micro::MicroError> {
    let mut config = MicroConfig::new(yardstick_spec::MicroKind::Memory);
    config.threads = threads;
    // 3 arrays of 32 MiB: past the last-level cache of most CPUs, and quick.
    config.sizes = vec![32 << 20];
    let policy = TrialPolicy {
        replicates: 1,
        iterations: Some(5),
        ..TrialPolicy::default()
    };
    let report = micro::run(&config, &policy)?;
    report
        .results
        .iter()
        .find(|r| r.name == yardstick_spec::metrics::id::MEMORY_TRIAD)
        .map(|r| r.value * 1e9)
        .ok_or_else(|| micro::MicroError::InvalidConfig("no triad result".into()))
}
