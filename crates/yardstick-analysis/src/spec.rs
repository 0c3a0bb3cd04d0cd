//! From an e2e entry of a BenchmarkRun to the settings of the training analysis.
//!
//! The orchestrator calls [`training_config_from_spec`] for the analysis of any training
//! workload (a `kind: command` entry and the built-in trainer alike); `yardstick_exec::spec`
//! builds the rest of a command entry's configuration around it.

use yardstick_spec::model::{E2eLayer, Precision, Trials};

use crate::training::{ModelDims, TrainingConfig, WarmupPolicy};

/// The warm-up policy a trial policy declares for training steps: `{steps: N}` or
/// `{auto: mser5}`; anything else (requests, runs, duration) leaves the steps untrimmed here.
pub fn warmup_policy(trials: Option<&Trials>) -> WarmupPolicy {
    let Some(w) = trials.and_then(|t| t.warmup.as_ref()) else {
        return WarmupPolicy::Mser5;
    };
    if let Some(s) = w.steps {
        WarmupPolicy::Steps(s)
    } else if w.auto.is_some() {
        WarmupPolicy::Mser5
    } else {
        WarmupPolicy::None
    }
}

/// The precision name used by the peak table (`bf16`, `fp32`, ...).
pub fn precision_name(p: Precision) -> &'static str {
    match p {
        Precision::Fp64 => "fp64",
        Precision::Fp32 => "fp32",
        Precision::Tf32 => "tf32",
        Precision::Bf16 | Precision::Mixed => "bf16",
        Precision::Fp16 => "fp16",
        Precision::Fp8 => "fp8",
        Precision::Fp6 => "fp6",
        Precision::Fp4 => "fp4",
        Precision::Int8 => "int8",
        Precision::Int4 => "int4",
        Precision::Nf4 => "nf4",
    }
}

/// The training analysis settings of an e2e entry. `peak_flops_per_device` comes from the
/// environment (the GPU found, or a measured CPU GEMM peak) and is passed in.
pub fn training_config_from_spec(
    layer: &E2eLayer,
    trials: Option<&Trials>,
    peak_flops_per_device: Option<f64>,
) -> TrainingConfig {
    let model = layer.model.as_ref().and_then(|m| {
        Some(ModelDims {
            parameters: m.parameters?,
            layers: m.layers,
            hidden: m.hidden,
            sequence_length: m.sequence_length,
        })
    });
    TrainingConfig {
        warmup: warmup_policy(trials),
        model,
        peak_flops_per_device,
        devices: None,
        cost_per_device_hour: layer.cost_per_device_hour,
        attention_heads: None,
        bytes_per_element: None,
    }
}
