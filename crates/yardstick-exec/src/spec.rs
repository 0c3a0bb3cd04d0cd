//! From an e2e entry of a BenchmarkRun to the configuration of a command benchmark.
//!
//! The orchestrator calls [`exec_config_from_spec`] for every `kind: command` entry; the
//! training analysis settings inside it come from
//! `yardstick_analysis::spec::training_config_from_spec`.

use std::path::PathBuf;

use yardstick_analysis::spec::training_config_from_spec;
use yardstick_spec::model::{E2eKind, E2eLayer, Trials};

use crate::ExecError;
use crate::command::{ExecConfig, Parameter, WORLD_SIZE_PARAM};

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
    use yardstick_analysis::training::WarmupPolicy;
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
