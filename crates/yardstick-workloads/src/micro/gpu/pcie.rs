//! Host↔device bandwidth with page-locked (pinned) host memory, both directions, and
//! peer-to-peer bandwidth between the GPUs of a node (direct where the driver allows peer
//! access, said in the result's `direct` parameter).

use super::super::trial::{MetricSamples, Stat, summarize};
use super::super::{MicroConfig, MicroError, MicroReport, TrialPolicy};
use super::driver::{DevBuf, Device, Pinned, cu};
use super::{batches, device_params};
use cudarc::driver::{result, sys};

/// Default bytes per transfer: 256 MiB (far past any staging effect).
pub const DEFAULT_BYTES: u64 = 256 << 20;
/// Default measured batches per replicate.
pub const DEFAULT_ITERATIONS: usize = 10;
const BATCH_S: f64 = 0.005;

pub(super) fn size(config: &MicroConfig) -> Result<u64, MicroError> {
    let bytes = config.sizes.first().copied().unwrap_or(DEFAULT_BYTES);
    if bytes < 1 << 16 {
        return Err(MicroError::InvalidConfig(format!(
            "gpu-pcie size {bytes} bytes is too small: give at least 64 KiB"
        )));
    }
    Ok(bytes)
}

pub(super) fn run(
    device: &Device,
    prefix: &str,
    config: &MicroConfig,
    policy: &TrialPolicy,
    report: &mut MicroReport,
) -> Result<(), MicroError> {
    let bytes = size(config)?;
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let mut h2d = MetricSamples::new(format!("{prefix}.pcie.h2d"), "GB/s", true, Stat::Median);
    let mut d2h = MetricSamples::new(format!("{prefix}.pcie.d2h"), "GB/s", true, Stat::Median);
    for m in [&mut h2d, &mut d2h] {
        m.param("bytes", bytes);
        m.param("host_memory", "pinned");
        device_params(m, device);
    }
    for _ in 0..policy.replicates {
        let mut host = Pinned::new(bytes as usize)?;
        let dev = DevBuf::new(bytes as usize)?;
        for (i, b) in host.as_mut_slice().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        let host_slice = host.as_mut_slice();
        let mut up = || {
            cu(
                unsafe { result::memcpy_htod_async(dev.ptr, &*host_slice, device.stream) },
                "cuMemcpyHtoDAsync",
            )
        };
        let (up_s, warm) = batches(
            device,
            policy,
            measured,
            BATCH_S,
            bytes as f64 / 1e9,
            &mut up,
        )?;
        h2d.push_replicate(up_s, warm);
        // The device now holds the pattern: check a few bytes made it.
        let mut probe = [0u8; 8];
        let at = (bytes as usize / 2) & !7;
        dev.read(at, &mut probe)?;
        for (k, &b) in probe.iter().enumerate() {
            if b != ((at + k) % 251) as u8 {
                return Err(MicroError::Validation(format!(
                    "gpu-pcie: byte {} on the GPU is {b}, expected {}",
                    at + k,
                    (at + k) % 251
                )));
            }
        }
        let host_slice = host.as_mut_slice();
        host_slice.fill(0);
        let mut down = || {
            cu(
                unsafe { result::memcpy_dtoh_async(&mut *host_slice, dev.ptr, device.stream) },
                "cuMemcpyDtoHAsync",
            )
        };
        let (down_s, warm) = batches(
            device,
            policy,
            measured,
            BATCH_S,
            bytes as f64 / 1e9,
            &mut down,
        )?;
        d2h.push_replicate(down_s, warm);
        let back = host.as_mut_slice();
        if back[at] != (at % 251) as u8 {
            return Err(MicroError::Validation(format!(
                "gpu-pcie: byte {at} copied back is {}, expected {}",
                back[at],
                at % 251
            )));
        }
    }
    report.results.push(summarize(&h2d, policy)?);
    report.results.push(summarize(&d2h, policy)?);
    Ok(())
}

/// Peer-to-peer bandwidth from each GPU to each other one (`gpu.p2p.<i>to<j>`).
pub(super) fn peers(
    count: usize,
    base: &str,
    config: &MicroConfig,
    policy: &TrialPolicy,
    report: &mut MicroReport,
) -> Result<(), MicroError> {
    let bytes = size(config)?;
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let devices: Vec<Device> = (0..count).map(Device::open).collect::<Result<_, _>>()?;
    for src in &devices {
        for dst in &devices {
            if src.ordinal == dst.ordinal {
                continue;
            }
            let mut can = 0i32;
            let direct =
                unsafe { sys::cuDeviceCanAccessPeer(&mut can, src.cu_device(), dst.cu_device()) }
                    == sys::CUresult::CUDA_SUCCESS
                    && can == 1;
            if direct {
                src.bind()?;
                let rc = unsafe { sys::cuCtxEnablePeerAccess(dst.ctx, 0) };
                if rc != sys::CUresult::CUDA_SUCCESS
                    && rc != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
                {
                    return Err(MicroError::Unsupported(format!(
                        "CUDA driver: enabling peer access {} -> {}: {rc:?}",
                        src.ordinal, dst.ordinal
                    )));
                }
            }
            let mut m = MetricSamples::new(
                format!("{base}.p2p.{}to{}", src.ordinal, dst.ordinal),
                "GB/s",
                true,
                Stat::Median,
            );
            m.param("bytes", bytes);
            m.param("direct", direct);
            device_params(&mut m, src);
            for _ in 0..policy.replicates {
                dst.bind()?;
                let to = DevBuf::new(bytes as usize)?;
                src.bind()?;
                let from = DevBuf::new(bytes as usize)?;
                let mut op = || {
                    cu(
                        unsafe {
                            result::memcpy_peer_async(
                                dst.ctx,
                                to.ptr,
                                src.ctx,
                                from.ptr,
                                bytes as usize,
                                src.stream,
                            )
                        },
                        "cuMemcpyPeerAsync",
                    )
                };
                let (s, warm) =
                    batches(src, policy, measured, BATCH_S, bytes as f64 / 1e9, &mut op)?;
                m.push_replicate(s, warm);
                drop(from);
                dst.bind()?;
                drop(to);
            }
            report.results.push(summarize(&m, policy)?);
        }
    }
    Ok(())
}
