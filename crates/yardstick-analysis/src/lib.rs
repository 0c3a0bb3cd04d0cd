//! Training analysis: from what a training job measured to what it means.
//!
//! Every function here is a pure function of numbers: the step records a workload reported,
//! a machine's ceilings, a run's timeline. This crate starts no process, reads no file, no
//! clock and no environment — running the workload and timing when its lines arrive is
//! `yardstick-exec`'s job, capturing the machine `yardstick-env`'s, and deciding what to run and
//! storing the results `yardstick-run`'s. That is why the same analysis serves `bench exec`,
//! `bench train` and the e2e layer of a `yardstick run` alike.
//!
//! * [`protocol`]: the metric protocol's records (`docs/metric-protocol.md`) and the parse of
//!   their text ([`parse_metrics`]); malformed lines are counted with their line numbers.
//! * [`flops`]: FLOPs per step (6·N·T and the transformer-aware estimator), estimated memory
//!   traffic per step, MFU, and the peak FLOP/s table.
//! * [`training`]: per-replicate training analysis ([`analyze_training`]): warm-up trim, step
//!   time, tokens/s, MFU, memory, loss slope, cost, and the slowest-rank (straggler) analysis.
//! * [`scaling`]: scaling efficiency T(N)/(N·T(1)) across world sizes and Amdahl's serial
//!   fraction fit ([`scaling::analyze_scaling`]).
//! * [`roofline`]: roofline placement and bottleneck classification from measured ceilings
//!   (compute, memory, communication, input, control plane), and the comparative roofline of
//!   two machines.
//! * [`bottleneck`]: a training replicate (and its run's [`bottleneck::JobTimeline`]) on the
//!   roofline of the job's devices, classified with the evidence.
//! * [`nodes`]: node-to-node consistency of micro figures across a fleet, slow nodes flagged.
//! * [`spec`]: the training analysis settings of an e2e entry of a BenchmarkRun.
//! * [`diagnosis`]: the playbooks' answers — a verdict from a stated rule over measured figures,
//!   the evidence and the next actions (tail latency: the knee and what grew there).
#![deny(missing_docs)]

pub mod bottleneck;
pub mod diagnosis;
mod error;
pub mod flops;
pub mod nodes;
pub mod profiler;
pub mod protocol;
pub mod roofline;
pub mod scaling;
pub mod spec;
pub mod training;

pub use error::{AnalysisError, MicroDocError};
pub use protocol::{MetricRecord, ParsedMetrics, parse_metrics};
pub use training::{TrainingConfig, TrainingReport, analyze_training};
