//! The GPU micro layer: HBM bandwidth, host↔device (PCIe) and peer bandwidth, and the matmul
//! peak, per GPU of the node.
//!
//! | kind | results | unit |
//! | --- | --- | --- |
//! | `gpu-memory` | `gpu.hbm.copy`, `gpu.hbm.read`, `gpu.hbm.write` (largest size), and `.<bytes>` per size | GB/s (bytes read + written) |
//! | `gpu-pcie` | `gpu.pcie.h2d`, `gpu.pcie.d2h` (pinned memory); `gpu.p2p.<i>to<j>` with several GPUs | GB/s |
//! | `gpu-gemm` | `gpu.gemm.<dtype>.<N>` per N×N×N and `gpu.gemm.<dtype>.peak` (best shape), dtype `bf16`, `fp16`, `tf32`, `fp8` | TFLOP/s |
//!
//! On a node with several GPUs the prefix names the GPU: `gpu0.hbm.copy`, `gpu1.…`.
//!
//! Nothing CUDA is linked: the driver (`libcuda.so.1`) and cuBLASLt (`libcublasLt.so.13`, `.12`
//! or `.11`) are loaded when a GPU probe runs, so the binary builds and runs everywhere. Where
//! they or a GPU are missing, the probe measures nothing and says why in `skipped` (which
//! library, and where it was looked for). The memory kernels ship as PTX (`kernels.cu`, compiled
//! by `scripts/gen-gpu-ptx.py`) that the driver compiles for the GPU at hand.
//!
//! Every figure is timed with CUDA events around a batch of back-to-back operations lasting a
//! few milliseconds, under the same trial policy as the CPU probes: warm-up batches discarded,
//! replicates with fresh buffers, the median with a cluster-bootstrap interval.

mod driver;
mod gemm;
mod memory;
mod pcie;

use std::path::PathBuf;

use yardstick_spec::model::MicroKind;

use super::{MicroConfig, MicroError, MicroReport, Skipped, TrialPolicy};
use driver::Device;

/// The memory probe's kernels, PTX for compute_70 and later.
pub(crate) const KERNELS_PTX: &str = include_str!("kernels.ptx");

/// Directories searched for CUDA libraries beyond the dynamic loader's own path: the toolkit
/// named by `CUDA_HOME`, `CUDA_PATH` or `CUDA_ROOT`, and `/usr/local/cuda`.
fn extra_lib_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            let root = PathBuf::from(root);
            dirs.push(root.join("lib64"));
            dirs.push(root.join("lib"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib"));
    dirs
}

/// Loads the first of `sonames` found in [`extra_lib_dirs`] by its full path, so that the
/// later load by name (cudarc's) finds it already in the process: the dynamic loader matches a
/// bare name against the SONAME of libraries already loaded.
fn preload(sonames: &[&str]) {
    for dir in extra_lib_dirs() {
        for name in sonames {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
                continue;
            };
            // SAFETY: dlopen of a shared library by path; the handle is kept for the process's
            // life on purpose (never closed).
            let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !handle.is_null() {
                return;
            }
        }
    }
}

fn where_looked(names: &[&str]) -> String {
    let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let extra: Vec<String> = extra_lib_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    format!(
        "looked for {} on the loader's path (LD_LIBRARY_PATH={}, the ldconfig cache) and in {}",
        names.join(", "),
        if ld.is_empty() { "unset" } else { &ld },
        extra.join(", ")
    )
}

const DRIVER_LIBS: [&str; 2] = ["libcuda.so.1", "libcuda.so"];
const CUBLASLT_LIBS: [&str; 3] = [
    "libcublasLt.so.13",
    "libcublasLt.so.12",
    "libcublasLt.so.11",
];

/// Why the GPU probes cannot run here, or the number of GPUs they can use.
pub fn gpu_count() -> Result<usize, String> {
    preload(&DRIVER_LIBS);
    // SAFETY: only tries to open the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(format!(
            "no CUDA driver library: {}; install the NVIDIA driver, or add its directory to \
             LD_LIBRARY_PATH",
            where_looked(&DRIVER_LIBS)
        ));
    }
    if let Err(e) = cudarc::driver::result::init() {
        return Err(format!(
            "the CUDA driver did not initialise (cuInit: {:?}): no usable GPU here",
            e.0
        ));
    }
    match cudarc::driver::result::device::get_count() {
        Ok(0) => Err("the CUDA driver sees no GPU (CUDA_VISIBLE_DEVICES may hide them)".into()),
        Ok(n) => Ok(n as usize),
        Err(e) => Err(format!("the CUDA driver could not count GPUs: {:?}", e.0)),
    }
}

/// Whether cuBLASLt can be loaded; the reason when not.
pub(crate) fn cublaslt_available() -> Result<(), String> {
    preload(&CUBLASLT_LIBS);
    // SAFETY: only tries to open the library.
    if unsafe { cudarc::cublaslt::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(format!(
            "no cuBLASLt library: {}; install CUDA's cuBLAS (or `pip install nvidia-cublas`) and \
             put its lib directory on LD_LIBRARY_PATH",
            where_looked(&CUBLASLT_LIBS)
        ))
    }
}

/// The lower-case name of a GPU kind (`gpu-memory`, …), the stem of its skip entries.
fn stem(kind: MicroKind) -> &'static str {
    match kind {
        MicroKind::GpuMemory => "gpu.hbm",
        MicroKind::GpuPcie => "gpu.pcie",
        _ => "gpu.gemm",
    }
}

/// Runs one GPU micro benchmark on every GPU of the node.
pub fn run(config: &MicroConfig, policy: &TrialPolicy) -> Result<MicroReport, MicroError> {
    // Bad settings are refused on every machine, GPU or not.
    match config.kind {
        MicroKind::GpuMemory => memory::check_sizes(&config.sizes)?,
        MicroKind::GpuPcie => {
            pcie::size(config)?;
        }
        _ => {
            gemm::check(config)?;
        }
    }
    let mut report = MicroReport::default();
    let count = match gpu_count() {
        Ok(n) => n,
        Err(reason) => {
            report.skipped.push(Skipped {
                name: stem(config.kind).into(),
                reason: format!("skipped: {reason}"),
            });
            return Ok(report);
        }
    };
    if config.kind == MicroKind::GpuGemm
        && let Err(reason) = cublaslt_available()
    {
        report.skipped.push(Skipped {
            name: stem(config.kind).into(),
            reason: format!("skipped: {reason}"),
        });
        return Ok(report);
    }
    let base = config.name.clone().unwrap_or_else(|| "gpu".into());
    if config.kind == MicroKind::GpuPcie && count > 1 {
        pcie::peers(count, &base, config, policy, &mut report)?;
    }
    for ordinal in 0..count {
        let device = Device::open(ordinal)?;
        let prefix = if count > 1 {
            format!("{base}{ordinal}")
        } else {
            base.clone()
        };
        match config.kind {
            MicroKind::GpuMemory => memory::run(&device, &prefix, config, policy, &mut report)?,
            MicroKind::GpuPcie => pcie::run(&device, &prefix, config, policy, &mut report)?,
            _ => gemm::run(&device, &prefix, config, policy, &mut report)?,
        }
    }
    Ok(report)
}

/// The warm-up batches of a replicate under `policy` (a duration counts as batches of
/// `batch_s` each; MSER-5 discards none up front).
pub(crate) fn warm_batches(policy: &TrialPolicy, batch_s: f64) -> usize {
    match policy.warmup {
        super::Warmup::Iterations(n) => n,
        super::Warmup::Duration(d) => ((d.as_secs_f64() / batch_s).ceil() as usize).max(1),
        super::Warmup::Mser5 => 0,
    }
}

/// One replicate's batches of `op`: warm-up batches, then `measured` timed ones, each batch
/// repeating `op` back to back for at least `batch_s`. Returns `work_per_op` per second of
/// each batch (GB or TFLOP per op gives GB/s or TFLOP/s) and the warm-up count at the front.
pub(crate) fn batches(
    device: &Device,
    policy: &TrialPolicy,
    measured: usize,
    batch_s: f64,
    work_per_op: f64,
    op: &mut dyn FnMut() -> Result<(), MicroError>,
) -> Result<(Vec<f64>, usize), MicroError> {
    device.bind()?;
    let reps = device.reps_for(batch_s, &mut *op)?;
    let warm = warm_batches(policy, batch_s);
    let mut out = Vec::with_capacity(warm + measured);
    for _ in 0..warm + measured {
        let s = device.time(reps, &mut *op)?;
        out.push(work_per_op / s);
    }
    Ok((out, warm))
}

/// Labels a result with the GPU it came from.
pub(crate) fn device_params(m: &mut super::MetricSamples, device: &Device) {
    m.param("gpu", device.ordinal);
    m.param("gpu_name", device.name.clone());
    m.param(
        "compute_capability",
        format!("{}.{}", device.cc.0, device.cc.1),
    );
    m.param("gpu_memory_bytes", device.total_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded PTX names both memory kernels and a PTX ISA every driver since CUDA 11
    /// JIT-compiles (a newer `.version` would make older drivers refuse the module).
    #[test]
    fn the_embedded_ptx_declares_its_kernels_at_isa_7() {
        assert!(KERNELS_PTX.contains(".visible .entry ys_read("));
        assert!(KERNELS_PTX.contains(".visible .entry ys_write("));
        assert!(
            KERNELS_PTX.contains("\n.version 7.0\n"),
            "ISA version changed"
        );
        assert!(KERNELS_PTX.contains("\n.target sm_70\n"));
    }

    /// Where no GPU can be used (these test machines), every GPU probe measures nothing and
    /// says why, naming what it looked for; with a GPU, it measures.
    #[test]
    fn without_a_gpu_each_probe_is_skipped_with_the_reason() {
        let policy = TrialPolicy {
            replicates: 1,
            iterations: Some(1),
            ..TrialPolicy::default()
        };
        for kind in [MicroKind::GpuMemory, MicroKind::GpuPcie, MicroKind::GpuGemm] {
            let mut config = MicroConfig::new(kind);
            config.sizes = if kind == MicroKind::GpuGemm {
                vec![256]
            } else {
                vec![1 << 20]
            };
            let report = run(&config, &policy).unwrap();
            match gpu_count() {
                Ok(_) => assert!(
                    !report.results.is_empty() || !report.skipped.is_empty(),
                    "{kind:?}"
                ),
                Err(reason) => {
                    assert!(report.results.is_empty());
                    assert_eq!(report.skipped.len(), 1, "{kind:?}");
                    assert!(report.skipped[0].reason.starts_with("skipped: "));
                    assert!(report.skipped[0].reason.contains(&reason));
                    assert_eq!(report.skipped[0].name, stem(kind));
                }
            }
        }
    }

    #[test]
    fn a_missing_driver_names_the_libraries_and_where_it_looked() {
        let text = where_looked(&DRIVER_LIBS);
        assert!(text.contains("libcuda.so.1"), "{text}");
        assert!(text.contains("/usr/local/cuda/lib64"), "{text}");
        assert!(text.contains("LD_LIBRARY_PATH="), "{text}");
    }
}
