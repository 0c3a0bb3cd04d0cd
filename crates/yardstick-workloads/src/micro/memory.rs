//! STREAM-style memory bandwidth: copy, scale, add and triad on three `f64` arrays, on all
//! threads.
//!
//! As in McCalpin's STREAM: each thread initialises (first-touches) its own contiguous slice of
//! every array, so pages land on its NUMA node; the kernels are `c = a`, `b = s·c`,
//! `c = a + b`, `a = b + s·c`; bytes counted are 16 per element for copy and scale and 24 for
//! add and triad (write-allocate traffic not counted); the final arrays are checked against a
//! scalar replay, so a miscompiled or skipped kernel cannot report a figure. Each timing spans
//! the release of the workers to the last worker's finish (a barrier on each side), so thread
//! wake-up counts against us, never for us.

use std::sync::Barrier;
use std::time::Instant;

use super::trial::{MetricSamples, Stat, summarize};
use super::{MicroConfig, MicroError, MicroReport, TrialPolicy, Warmup};

/// Default bytes per array: 128 MiB (three arrays: 384 MiB), at least 4× the last-level cache
/// of most single-socket machines, STREAM's sizing rule.
pub const DEFAULT_ARRAY_BYTES: u64 = 128 << 20;

/// Default measured iterations per replicate.
pub const DEFAULT_ITERATIONS: usize = 10;

const SCALAR: f64 = 3.0;
const KERNELS: [&str; 4] = ["copy", "scale", "add", "triad"];
const BYTES_PER_ELEMENT: [f64; 4] = [16.0, 16.0, 24.0, 24.0];

/// Runs the memory benchmark.
pub fn run(config: &MicroConfig, policy: &TrialPolicy) -> Result<MicroReport, MicroError> {
    let threads = config.threads_or_default().max(1);
    let sizes = if config.sizes.is_empty() {
        vec![DEFAULT_ARRAY_BYTES]
    } else {
        config.sizes.clone()
    };
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let prefix = config.prefix();
    let mut report = MicroReport::default();
    let l3_kib = yardstick_env::cpu::detect().cache.l3_kib;
    for &bytes in &sizes {
        let elements = (bytes / 8) as usize;
        if elements < 1024 {
            return Err(MicroError::InvalidConfig(format!(
                "memory size {bytes} bytes is too small: give at least 8192 bytes per array"
            )));
        }
        if let Some(l3) = l3_kib
            && (bytes as u128) * 3 < (l3 as u128) * 1024 * 4
        {
            report.warnings.push(format!(
                "memory: 3 arrays of {bytes} bytes are smaller than 4x the L3 cache ({l3} KiB): \
                 this measures cache bandwidth, not memory bandwidth"
            ));
        }
        let suffix = if sizes.len() > 1 {
            format!(".{bytes}")
        } else {
            String::new()
        };
        let mut metrics: Vec<MetricSamples> = KERNELS
            .iter()
            .map(|k| {
                let mut m =
                    MetricSamples::new(format!("{prefix}.{k}{suffix}"), "GB/s", true, Stat::Median);
                m.param("array_bytes", bytes);
                m.param("threads", threads);
                m.param("element", "f64");
                m
            })
            .collect();
        for _ in 0..policy.replicates {
            let (per_kernel, warm) = replicate(elements, threads, policy, measured)?;
            for (m, samples) in metrics.iter_mut().zip(per_kernel) {
                m.push_replicate(samples, warm);
            }
        }
        for m in &metrics {
            report.results.push(summarize(m, policy)?);
        }
    }
    Ok(report)
}

/// One replicate: fresh arrays, warm-up and measured iterations. Returns GB/s per kernel and
/// iteration, and the number of warm-up iterations at the front.
fn replicate(
    elements: usize,
    threads: usize,
    policy: &TrialPolicy,
    measured: usize,
) -> Result<([Vec<f64>; 4], usize), MicroError> {
    let threads = threads.min(elements / 512).max(1);
    // The schedule is fixed before the workers start, so a warm-up duration becomes a count,
    // assuming 50 GB/s (an overestimate of most machines: the warm-up lasts at least as long).
    let warm = match policy.warmup {
        Warmup::Iterations(n) => n,
        Warmup::Duration(d) => {
            let per_iter_ms = (elements as f64 * 80.0 / 50e9 * 1e3).max(0.001);
            ((d.as_secs_f64() * 1e3 / per_iter_ms).ceil() as usize).clamp(1, 10_000)
        }
        Warmup::Mser5 => 0,
    };
    let total = warm + measured;
    let mut a = vec![0.0f64; elements];
    let mut b = vec![0.0f64; elements];
    let mut c = vec![0.0f64; elements];
    let chunk = elements.div_ceil(threads);
    let barrier = Barrier::new(threads + 1);
    let mut times = [
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
    ];
    std::thread::scope(|s| {
        for ((a, b), c) in a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk))
        {
            let barrier = &barrier;
            s.spawn(move || {
                // First touch by the thread that will use the pages.
                a.fill(1.0);
                b.fill(2.0);
                c.fill(0.0);
                barrier.wait();
                for _ in 0..total {
                    for k in 0..4 {
                        barrier.wait();
                        match k {
                            0 => c.copy_from_slice(a),
                            1 => {
                                for (b, c) in b.iter_mut().zip(c.iter()) {
                                    *b = SCALAR * *c;
                                }
                            }
                            2 => {
                                for ((c, a), b) in c.iter_mut().zip(a.iter()).zip(b.iter()) {
                                    *c = *a + *b;
                                }
                            }
                            _ => {
                                for ((a, b), c) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                                    *a = *b + SCALAR * *c;
                                }
                            }
                        }
                        barrier.wait();
                    }
                }
            });
        }
        barrier.wait(); // initialisation done
        for _ in 0..total {
            for (k, t) in times.iter_mut().enumerate() {
                let t0 = Instant::now();
                barrier.wait();
                barrier.wait();
                let secs = t0.elapsed().as_secs_f64();
                t.push(BYTES_PER_ELEMENT[k] * elements as f64 / secs / 1e9);
            }
        }
    });
    validate(&a, &b, &c, total)?;
    Ok((times, warm))
}

/// Checks the arrays against a scalar replay of the kernels (as STREAM's `checkSTREAMresults`).
fn validate(a: &[f64], b: &[f64], c: &[f64], iterations: usize) -> Result<(), MicroError> {
    let (mut aj, mut bj, mut cj) = (1.0f64, 2.0f64, 0.0f64);
    for _ in 0..iterations {
        cj = aj;
        bj = SCALAR * cj;
        cj = aj + bj;
        aj = bj + SCALAR * cj;
    }
    if !(aj.is_finite() && bj.is_finite() && cj.is_finite()) {
        // The replay overflowed (hundreds of iterations): check only that nothing is NaN.
        return if [a, b, c].iter().any(|v| v.iter().any(|x| x.is_nan())) {
            Err(MicroError::Validation("memory: NaN in the arrays".into()))
        } else {
            Ok(())
        };
    }
    let n = a.len();
    let step = (n / 4099).max(1);
    for j in (0..n).step_by(step).chain([n - 1]) {
        for (name, got, want) in [("a", a[j], aj), ("b", b[j], bj), ("c", c[j], cj)] {
            if ((got - want) / want).abs() > 1e-13 {
                return Err(MicroError::Validation(format!(
                    "memory: {name}[{j}] = {got}, expected {want}"
                )));
            }
        }
    }
    Ok(())
}
