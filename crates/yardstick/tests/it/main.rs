//! The binary crate's integration tests, as one test binary: each module below was a
//! `tests/*.rs` file (and a test binary) of its own, and every test binary links the whole
//! workspace. Run one module with `cargo test -p yardstick --test it run_cli::`.

mod common;
use yardstick_testsupport::{chromium, external, prop as props};

mod bench_eval;
mod bench_exec;
mod bench_exec_control_plane;
mod bench_exec_live;
mod bench_micro;
mod bench_mlperf;
mod bench_serve;
mod bench_shard;
mod bench_train;
mod capacity;
mod cli_spec;
mod custom_metrics;
mod dashboard;
mod dsse_interop;
mod env_cli;
mod eval_perplexity;
mod eval_real_model;
mod gate_cli;
mod gpu_micro;
mod human_snapshots;
mod import_cli;
mod import_serving;
mod interrupt;
mod k8s;
mod mcp;
mod metrics_cli;
mod nodes_cli;
mod profile;
mod push;
mod push_hardening;
mod report_cli;
mod run_bottleneck;
mod run_cli;
mod run_dataloader;
mod run_eval;
mod run_failures;
mod run_scaling;
mod run_slurm;
mod run_startup;
mod schema_cli;
mod secrets_canary;
mod server;
mod server_http_hardening;
mod server_metrics;
mod server_query;
mod sessions;
mod shell;
mod sim_cli;
mod sim_flags;
mod stats_cli;
mod store_cli;
mod trust_cli;
