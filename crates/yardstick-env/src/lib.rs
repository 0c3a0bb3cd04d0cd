//! Environment capture, machine profiles, GPU state and telemetry for yardstick.
//!
//! * [`capture`]: one [`Capture`] of the machine — OS, CPU, memory, container limits, software
//!   versions (probed quietly, in parallel, with timeouts), allow-listed environment variables
//!   and NVIDIA GPUs through NVML loaded at run time. No NVML is a recorded fact, not an error.
//! * [`profile`]: the coarse, stable machine-profile key (`H100x8_drv580_cuda13.0_torch2.11_sm90`,
//!   `cpu-EPYC-7B13x2c_linux6.1`) and the full hash of the stable part of the capture. Baselines
//!   are compared only within one key.
//! * [`telemetry`]: a background sampler of CPU, memory and per-GPU utilisation, clocks, power,
//!   temperature and throttle reasons, written as a tidy Parquet time series, with a summary of
//!   time throttled and clock drop (sustained versus peak).
//! * [`text`]: the capture as `yardstick env` prints it.
//!
//! What the machine's measured ceilings mean for a workload (the roofline, bottlenecks) is
//! analysis, not capture: `yardstick-analysis`.
//!
//! `docs/env.md` lists every captured field and the rules of the profile key.
#![deny(missing_docs)]

pub mod capture;
pub mod cpu;
mod error;
pub mod gpu;
pub mod join;
pub mod pagecache;
pub mod profile;
pub mod software;
pub mod system;
pub mod telemetry;
pub mod text;

pub use capture::{Capture, CaptureOptions, capture, now_rfc3339};
pub use error::EnvError;
pub use profile::{MachineProfile, ProfileBasis};
