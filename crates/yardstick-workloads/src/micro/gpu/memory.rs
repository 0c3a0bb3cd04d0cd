//! HBM bandwidth: a device-to-device copy (`cuMemcpyDtoDAsync`, what `tensor.copy_` does), a
//! read-only kernel and a write-only kernel, over sizes from L2-resident to several GB.
//!
//! Bytes are counted as moved: a copy of S bytes reads S and writes S (2S), the read kernel
//! reads S, the write kernel writes S. After each replicate the destination is read back and
//! checked (the copy must equal its source, the write kernel's value must be there), so a
//! broken probe cannot report a figure.

use std::ffi::c_void;

use super::super::trial::{MetricSamples, Stat, summarize};
use super::super::{MicroConfig, MicroError, MicroReport, TrialPolicy};
use super::driver::{DevBuf, Device, Module, cu, launch};
use super::{KERNELS_PTX, batches, device_params};

/// Default sizes of one buffer: L2-resident (16 MiB), then 256 MiB, 1 GiB and 4 GiB.
pub const DEFAULT_SIZES: [u64; 4] = [16 << 20, 256 << 20, 1 << 30, 4 << 30];
/// Default measured batches per replicate.
pub const DEFAULT_ITERATIONS: usize = 10;
/// How long one timed batch lasts, at least.
const BATCH_S: f64 = 0.002;
const OPS: [&str; 3] = ["copy", "read", "write"];

pub(super) fn run(
    device: &Device,
    prefix: &str,
    config: &MicroConfig,
    policy: &TrialPolicy,
    report: &mut MicroReport,
) -> Result<(), MicroError> {
    let mut sizes: Vec<u64> = if config.sizes.is_empty() {
        DEFAULT_SIZES.to_vec()
    } else {
        config.sizes.clone()
    };
    sizes.sort_unstable();
    sizes.dedup();
    check_sizes(&sizes)?;
    // Two buffers per size; leave a tenth of the memory to the driver and others.
    let free = device.free_bytes()?;
    let fits = |s: u64| 2 * s <= free / 10 * 9;
    for &s in sizes.iter().filter(|&&s| !fits(s)) {
        report.warnings.push(format!(
            "{prefix}.hbm: two buffers of {s} bytes do not fit in the GPU's free memory \
             ({free} bytes): size skipped"
        ));
    }
    sizes.retain(|&s| fits(s));
    let Some(&largest) = sizes.last() else {
        return Ok(());
    };
    let module = Module::load(KERNELS_PTX)?;
    let read = module.function("ys_read")?;
    let write = module.function("ys_write")?;
    let grid = device.sms.max(1) * 8;
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let mut headline = Vec::new();
    for &bytes in &sizes {
        if 2 * bytes <= device.l2_bytes {
            report.warnings.push(format!(
                "{prefix}.hbm.*.{bytes}: two buffers of {bytes} bytes fit in the {} MB L2 \
                 cache: this size measures L2, not HBM",
                device.l2_bytes >> 20
            ));
        }
        let mut metrics: Vec<MetricSamples> = OPS
            .iter()
            .map(|op| {
                let mut m = MetricSamples::new(
                    format!("{prefix}.hbm.{op}.{bytes}"),
                    "GB/s",
                    true,
                    Stat::Median,
                );
                m.param("bytes", bytes);
                m.param(
                    "bytes_counted",
                    if *op == "copy" {
                        "read + written (2 x size)"
                    } else {
                        "size"
                    },
                );
                device_params(&mut m, device);
                m
            })
            .collect();
        for _ in 0..policy.replicates {
            let src = DevBuf::new(bytes as usize)?;
            let dst = DevBuf::new(bytes as usize)?;
            let sink = DevBuf::new(16)?;
            let n4 = bytes / 16;
            // Source: 1.0 everywhere (the write kernel fills it), destination zeroed.
            write_kernel(device, write, grid, &src, n4, 1.0)?;
            write_kernel(device, write, grid, &dst, n4, 0.0)?;
            device.sync()?;
            let mut copy_op = || {
                cu(
                    unsafe {
                        cudarc::driver::result::memcpy_dtod_async(
                            dst.ptr,
                            src.ptr,
                            bytes as usize,
                            device.stream,
                        )
                    },
                    "cuMemcpyDtoDAsync",
                )
            };
            let copy_samples = batches(
                device,
                policy,
                measured,
                BATCH_S,
                2.0 * bytes as f64 / 1e9,
                &mut copy_op,
            )?;
            check(&dst, 1.0, "copy")?;
            let mut read_op = || read_kernel(device, read, grid, &src, n4, &sink);
            let read_samples = batches(
                device,
                policy,
                measured,
                BATCH_S,
                bytes as f64 / 1e9,
                &mut read_op,
            )?;
            let mut write_op = || write_kernel(device, write, grid, &dst, n4, 2.0);
            let write_samples = batches(
                device,
                policy,
                measured,
                BATCH_S,
                bytes as f64 / 1e9,
                &mut write_op,
            )?;
            check(&dst, 2.0, "write")?;
            for (m, (samples, warm)) in
                metrics
                    .iter_mut()
                    .zip([copy_samples, read_samples, write_samples])
            {
                m.push_replicate(samples, warm);
            }
        }
        for m in &metrics {
            let r = summarize(m, policy)?;
            if bytes == largest {
                let mut h = r.clone();
                h.name = h
                    .name
                    .rsplit_once('.')
                    .map(|(n, _)| n.to_owned())
                    .unwrap_or(h.name);
                headline.push(h);
            }
            report.results.push(r);
        }
    }
    // The headline figures (the largest size, the one furthest beyond the caches) lead.
    let at = report.results.len() - sizes.len() * OPS.len();
    for (i, h) in headline.into_iter().enumerate() {
        report.results.insert(at + i, h);
    }
    Ok(())
}

/// Refuses buffer sizes below 64 KiB.
pub(super) fn check_sizes(sizes: &[u64]) -> Result<(), MicroError> {
    if let Some(&s) = sizes.iter().find(|&&s| s < 1 << 16) {
        return Err(MicroError::InvalidConfig(format!(
            "gpu-memory size {s} bytes is too small: give at least 64 KiB per buffer"
        )));
    }
    Ok(())
}

fn write_kernel(
    device: &Device,
    f: cudarc::driver::sys::CUfunction,
    grid: u32,
    buf: &DevBuf,
    n4: u64,
    value: f32,
) -> Result<(), MicroError> {
    let mut ptr = buf.ptr;
    let mut n = n4;
    let mut v = value;
    let mut args: [*mut c_void; 3] = [
        (&raw mut ptr).cast(),
        (&raw mut n).cast(),
        (&raw mut v).cast(),
    ];
    launch(device, f, grid, 256, &mut args)
}

fn read_kernel(
    device: &Device,
    f: cudarc::driver::sys::CUfunction,
    grid: u32,
    buf: &DevBuf,
    n4: u64,
    sink: &DevBuf,
) -> Result<(), MicroError> {
    let mut ptr = buf.ptr;
    let mut n = n4;
    let mut s = sink.ptr;
    let mut args: [*mut c_void; 3] = [
        (&raw mut ptr).cast(),
        (&raw mut n).cast(),
        (&raw mut s).cast(),
    ];
    launch(device, f, grid, 256, &mut args)
}

/// Reads back the first, a middle and the last float4 of `buf` and checks each holds `want`.
fn check(buf: &DevBuf, want: f32, what: &str) -> Result<(), MicroError> {
    let n = buf.bytes / 16 * 16;
    for off in [0, (n / 2) / 16 * 16, n - 16] {
        let mut raw = [0u8; 16];
        buf.read(off, &mut raw)?;
        for (i, c) in raw.chunks_exact(4).enumerate() {
            let got = f32::from_le_bytes(c.try_into().expect("4 bytes"));
            if got != want {
                return Err(MicroError::Validation(format!(
                    "gpu-memory {what}: float {} of the buffer is {got}, expected {want}",
                    off / 4 + i
                )));
            }
        }
    }
    Ok(())
}
