//! From an e2e entry of a BenchmarkRun to the configurations of this crate.
//!
//! The orchestrator calls [`exec_config_from_spec`] for every `kind: command` entry and
//! [`training_config_from_spec`] for the analysis of any training workload (the built-in
//! trainer included).

use std::path::PathBuf;

use yardstick_spec::model::{E2eKind, E2eLayer, Precision, Trials};

use crate::ExecError;
use crate::command::{ExecConfig, Parameter, WORLD_SIZE_PARAM};
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

/// The `bench exec` configuration of a `kind: command` entry: its command, `worldSizes` as a
/// `{worldSize}` scan, `replicates` as runs, `warmup: {runs: N}` as warm-up runs, `timeout`,
/// `env`, and the training analysis.
pub fn exec_config_from_spec(
    layer: &E2eLayer,
    trials: Option<&Trials>,
    log_dir: PathBuf,
    peak_flops_per_device: Option<f64>,
) -> Result<ExecConfig, ExecError> {
    if layer.kind != Some(E2eKind::Command) {
        return Err(ExecError::invalid(
            "this e2e entry is not `kind: command`",
            "the built-in trainer (`kind: train`) runs through yardstick-workloads",
        ));
    }
    let command = layer.command.clone().unwrap_or_default();
    let mut cfg = ExecConfig::new(command, log_dir);
    if let Some(t) = trials {
        cfg.runs = t.replicates.unwrap_or(3).max(1) as usize;
        cfg.confidence_level = t.confidence_level.unwrap_or(0.95);
        if let Some(w) = &t.warmup {
            cfg.warmup = w.runs.unwrap_or(0) as usize;
        }
    }
    if let Some(sizes) = &layer.world_sizes {
        cfg.params.push(Parameter {
            name: WORLD_SIZE_PARAM.into(),
            values: sizes.iter().map(u32::to_string).collect(),
        });
        if !cfg.command.iter().any(|a| a.contains("{worldSize}")) {
            cfg.params.clear();
        }
    }
    cfg.timeout = layer.timeout.as_ref().map(|d| d.0);
    cfg.env = layer
        .env
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    cfg.training = Some(training_config_from_spec(
        layer,
        trials,
        peak_flops_per_device,
    ));
    cfg.expect_metrics = layer.model.is_some();
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_spec::model::{ModelShape, Warmup};

    #[test]
    fn command_entry_becomes_a_world_size_scan() {
        let layer = E2eLayer {
            kind: Some(E2eKind::Command),
            command: Some(vec![
                "torchrun".into(),
                "--nproc-per-node".into(),
                "{worldSize}".into(),
                "train.py".into(),
            ]),
            world_sizes: Some(vec![1, 2]),
            model: Some(ModelShape {
                parameters: Some(1e8),
                layers: Some(12),
                hidden: Some(768),
                sequence_length: Some(512),
                vocab: None,
            }),
            cost_per_device_hour: Some(2.0),
            ..E2eLayer::default()
        };
        let trials = Trials {
            replicates: Some(5),
            warmup: Some(Warmup {
                steps: Some(10),
                ..Warmup::default()
            }),
            confidence_level: Some(0.99),
            ..Trials::default()
        };
        let cfg =
            exec_config_from_spec(&layer, Some(&trials), "/tmp/x".into(), Some(1e12)).unwrap();
        assert_eq!(cfg.runs, 5);
        assert_eq!(cfg.confidence_level, 0.99);
        assert_eq!(cfg.params[0].values, vec!["1", "2"]);
        let t = cfg.training.unwrap();
        assert_eq!(t.warmup, WarmupPolicy::Steps(10));
        assert_eq!(t.model.unwrap().hidden, Some(768));
        assert_eq!(t.cost_per_device_hour, Some(2.0));
        assert!(cfg.expect_metrics);
    }
}
