//! Built-in reference workloads of yardstick.
//!
//! * [`micro`]: the micro layer — memory bandwidth (STREAM), GEMM FLOP/s, storage and network
//!   throughput and latency, each under the trial policy (warm-up, replicates, confidence
//!   intervals); and parsers that ingest the output of the standard tools (nccl-tests, fio,
//!   STREAM) into the same results.
#![deny(missing_docs)]

pub mod micro;
