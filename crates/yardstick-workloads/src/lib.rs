//! Built-in reference workloads of yardstick.
//!
//! * [`loader`]: the data-loader layer's built-in reader — a directory of Parquet, JSON Lines or
//!   raw files read in batches by worker threads as a training loop's input pipeline would,
//!   cold or warm, timed per batch.
//! * [`micro`]: the micro layer — memory bandwidth (STREAM), GEMM FLOP/s, storage and network
//!   throughput and latency, each under the trial policy (warm-up, replicates, confidence
//!   intervals); and parsers that ingest the output of the standard tools (nccl-tests, fio,
//!   STREAM) into the same results.
//! * [`train`] (feature `train`): the reference trainer — a small decoder-only transformer
//!   trained on CPU with candle (f32, AdamW) on seeded synthetic tokens, emitting the metric
//!   protocol; its FLOPs per step are known exactly, so its MFU is meaningful.
#![deny(missing_docs)]

pub mod loader;
pub mod micro;
#[cfg(feature = "train")]
pub mod train;
