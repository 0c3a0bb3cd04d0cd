//! Command workloads and training metrics: everything `yardstick bench exec` and the e2e layer
//! of a BenchmarkRun need, as plain library functions the CLI and the orchestrator both call.
//!
//! * [`process`]: run one child in its own process group; wall, user, sys and max RSS from
//!   `wait4`; the whole group killed on timeout or cancellation (SIGTERM, then SIGKILL after a
//!   grace period); stdout and stderr kept as log files.
//! * [`command`]: whole-process benchmarks with hyperfine-grade rigour: warm-up runs, parameter
//!   scans with interleaved runs, prepare/cleanup hooks, statistics and warnings
//!   ([`run_command_benchmark`]).
//! * [`protocol`]: the metric protocol — JSON lines a workload appends to `$YARDSTICK_METRICS`
//!   (`docs/metric-protocol.md`). Malformed lines are counted with their line numbers, never fatal.
//! * [`flops`]: FLOPs per step (6·N·T and the transformer-aware estimator) and peak FLOP/s tables.
//! * [`training`]: per-replicate training analysis: warm-up trim, step time, tokens/s, MFU, memory,
//!   loss slope, cost, and the per-rank straggler analysis ([`analyze_training`]).
//! * [`bottleneck`]: a training replicate on the roofline of its machine, classified
//!   (compute, memory, communication, input, control plane) with the evidence.
//! * [`scaling`]: scaling efficiency T(N)/(N·T(1)) across world sizes and Amdahl's serial
//!   fraction fit ([`scaling::analyze_scaling`]).
//! * [`spec`]: building the configurations above from an e2e entry of a BenchmarkRun.
//!
//! Unix only: process groups, `wait4` and signals are POSIX.
#![deny(missing_docs)]

pub mod bottleneck;
pub mod command;
mod error;
pub mod flops;
pub mod process;
pub mod protocol;
pub mod scaling;
pub mod spec;
pub mod timeline;
pub mod training;

pub use command::{ExecConfig, ExecReport, run_command_benchmark};
pub use error::ExecError;
pub use process::kill_supervised_group;
pub use protocol::{MetricRecord, ParsedMetrics, parse_metrics};
/// The token that asks a running benchmark to stop (Ctrl-C): pass one to [`ExecConfig::cancel`].
pub use tokio_util::sync::CancellationToken;
pub use training::{TrainingConfig, TrainingReport, analyze_training};
