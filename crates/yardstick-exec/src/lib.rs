//! Command workloads: everything `yardstick bench exec` and the e2e layer of a BenchmarkRun need
//! to run a workload as a child process, as plain library functions the CLI and the orchestrator
//! both call. What the measurements mean — MFU, scaling, ranks, bottlenecks — is
//! `yardstick-analysis`; this crate runs the process, collects what it reported and hands it
//! there.
//!
//! * [`process`]: run one child in its own process group; wall, user, sys and max RSS from
//!   `wait4`; the whole group killed on timeout or cancellation (SIGTERM, then SIGKILL after a
//!   grace period); stdout and stderr kept as log files.
//! * [`command`]: whole-process benchmarks with hyperfine-grade rigour: warm-up runs, parameter
//!   scans with interleaved runs, prepare/cleanup hooks, statistics and warnings
//!   ([`run_command_benchmark`]).
//!   Each run's metric records get the training analysis (`yardstick_analysis::training`), the
//!   last counted run its bottleneck, and a `worldSize` scan its scaling.
//! * [`protocol`]: the metric protocol's transport — `$YARDSTICK_METRICS` as a file read after
//!   the run or a FIFO read live (`docs/metric-protocol.md`); the records and their parse are
//!   `yardstick_analysis::protocol`.
//! * [`timeline`]: when each metric line arrived, and the run's wall time split into start-up,
//!   steps and teardown from it.
//! * [`spec`]: the command benchmark of a `kind: command` e2e entry of a BenchmarkRun.
//! * [`startup`]: how long a started process takes to become ready (first output, listen,
//!   ready, shutdown, peak RSS), cold or warm.
//!
//! Unix only: process groups, `wait4` and signals are POSIX.
#![deny(missing_docs)]

pub mod command;
mod error;
pub mod process;
pub mod protocol;
pub mod spec;
pub mod startup;
pub mod text;
pub mod timeline;

pub use command::{ExecConfig, ExecReport, run_command_benchmark};
pub use error::ExecError;
pub use process::kill_supervised_group;
/// The token that asks a running benchmark to stop (Ctrl-C): pass one to [`ExecConfig::cancel`].
pub use tokio_util::sync::CancellationToken;
