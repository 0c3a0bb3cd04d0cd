//! Dense matrix multiply FLOP/s: the measured CPU peak that MFU uses when no GPU table entry
//! applies.
//!
//! f32 and f64 run on the `gemm` crate (pure Rust, runtime dispatch to AVX2/FMA and AVX-512
//! micro-kernels, rayon threads; the same kernels candle uses); bf16 (bf16 inputs, f32
//! accumulation) on this crate's AVX-512 BF16 kernel ([`super::bf16`]), only where the CPU has
//! `avx512_bf16` — elsewhere `gemm.bf16` is listed as skipped with the reason. The kernel's name
//! is reported with every figure; `docs/micro.md` has an A/B against `matrixmultiply`.
//! C = A·B on row-major N×N matrices of seeded uniform values in [-1, 1]; FLOPs are counted as
//! 2·N³. A sample is at least ~20 ms of back-to-back products (small sizes repeat), and every
//! replicate's result is checked against an `f64` dot product at 16 random positions, so a
//! wrong kernel cannot report a figure.

use std::collections::BTreeMap;
use std::time::Instant;

use gemm::Parallelism;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yardstick_spec::model::Precision;

use yardstick_stats::bootstrap::{BootstrapConfig, Method, ratio_of_medians_ci};
use yardstick_stats::report::default_resamples;

use super::bf16::{self, Bf16Kernel};
use super::trial::{MetricSamples, Stat, iterate, summarize};
use super::{
    MicroConfig, MicroError, MicroReport, MicroResult, OutlierCounts, Skipped, TrialPolicy,
};

/// Default matrix sizes N.
pub const DEFAULT_SIZES: [u64; 3] = [512, 1024, 2048];

/// Default measured iterations per replicate and size.
pub const DEFAULT_ITERATIONS: usize = 10;

/// Element types measured when none is given: f32, and bf16 where the CPU has it.
pub const DEFAULT_DTYPES: [Precision; 2] = [Precision::Fp32, Precision::Bf16];

/// The implementation reported with every f32/f64 figure.
pub const IMPLEMENTATION: &str = "gemm 0.19 (pure Rust, runtime-dispatched SIMD, rayon)";

/// The implementation reported with every bf16 figure.
pub const IMPLEMENTATION_BF16: &str =
    "yardstick bf16 kernel (AVX-512 BF16 vdpbf16ps, 8x32 tile, packed, cache-blocked, rayon)";

const MIN_SAMPLE_SECS: f64 = 0.02;

/// An element type the benchmark runs.
trait Element: Copy + Default + Send + Sync + 'static {
    const NAME: &'static str;
    const EPSILON: f64;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn zero() -> Self;
    fn one() -> Self;
}

impl Element for f32 {
    const NAME: &'static str = "f32";
    const EPSILON: f64 = f32::EPSILON as f64;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    const EPSILON: f64 = f64::EPSILON;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

/// Runs the GEMM benchmark on this CPU (bf16 where it has `avx512_bf16`).
pub fn run(config: &MicroConfig, policy: &TrialPolicy) -> Result<MicroReport, MicroError> {
    run_with(config, policy, Bf16Kernel::detect())
}

/// An element type measured in one run.
#[derive(Debug, Clone, Copy)]
enum Measured {
    F32,
    F64,
    Bf16(Bf16Kernel),
}

impl Measured {
    fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::Bf16(_) => "bf16",
        }
    }

    fn implementation(self) -> &'static str {
        match self {
            Self::F32 | Self::F64 => IMPLEMENTATION,
            Self::Bf16(_) => IMPLEMENTATION_BF16,
        }
    }
}

/// Runs the GEMM benchmark with the bf16 kernel given (or the reason there is none), so that
/// the path of a CPU without `avx512_bf16` can be taken on any machine.
///
/// Every requested element type is measured at every size; with several, their replicates
/// are interleaved (f32 replicate 1, bf16 replicate 1, f32 replicate 2, ...) so that both see
/// the same machine, and when f32 and bf16 are both measured `gemm.bf16_vs_f32.<N>` is the
/// ratio of their medians with a bootstrap CI.
pub fn run_with(
    config: &MicroConfig,
    policy: &TrialPolicy,
    bf16: Result<Bf16Kernel, bf16::NoBf16>,
) -> Result<MicroReport, MicroError> {
    let sizes: Vec<u64> = if config.sizes.is_empty() {
        DEFAULT_SIZES.to_vec()
    } else {
        config.sizes.clone()
    };
    if let Some(&bad) = sizes.iter().find(|&&n| n == 0 || n > 32_768) {
        return Err(MicroError::InvalidConfig(format!(
            "GEMM size {bad} is out of range: give N between 1 and 32768"
        )));
    }
    let requested: Vec<Precision> = if config.dtypes.is_empty() {
        DEFAULT_DTYPES.to_vec()
    } else {
        config.dtypes.clone()
    };
    let prefix = config.prefix();
    let mut report = MicroReport::default();
    let mut kinds: Vec<Measured> = Vec::new();
    for dtype in requested {
        let kind = match dtype {
            Precision::Fp32 => Measured::F32,
            Precision::Fp64 => Measured::F64,
            Precision::Bf16 => match &bf16 {
                Ok(k) => Measured::Bf16(*k),
                Err(reason) => {
                    report.skipped.push(Skipped {
                        name: format!("{prefix}.bf16"),
                        reason: format!("skipped: {reason}"),
                    });
                    continue;
                }
            },
            other => {
                let name = format!("{other:?}").to_ascii_lowercase();
                report.skipped.push(Skipped {
                    name: format!("{prefix}.{name}"),
                    reason: format!(
                        "skipped: no {name} CPU GEMM kernel; measure fp32, fp64 or bf16"
                    ),
                });
                continue;
            }
        };
        if !kinds.iter().any(|k| k.name() == kind.name()) {
            kinds.push(kind);
        }
    }
    let threads = config.threads_or_default().max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| MicroError::Unsupported(format!("cannot start {threads} threads: {e}")))?;
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    // per_kind[k][size]: the summarised result of kind k at size i.
    let mut per_kind: Vec<Vec<MicroResult>> = vec![Vec::new(); kinds.len()];
    for (i, &n) in sizes.iter().enumerate() {
        let n = n as usize;
        let mut metrics: Vec<MetricSamples> = kinds
            .iter()
            .map(|kind| {
                let mut m = MetricSamples::new(
                    format!("{prefix}.{}.{n}", kind.name()),
                    "GFLOP/s",
                    true,
                    Stat::Median,
                );
                m.param("n", n);
                m.param("threads", threads);
                m.param("dtype", kind.name());
                m.param("implementation", kind.implementation());
                if matches!(kind, Measured::Bf16(_)) {
                    m.param("accumulate", "f32");
                }
                m
            })
            .collect();
        for rep in 0..policy.replicates {
            let seed = policy.seed ^ ((i as u64) << 32) ^ rep as u64;
            for (kind, m) in kinds.iter().zip(&mut metrics) {
                let (samples, warm, calls) = match *kind {
                    Measured::F32 => replicate::<f32>(n, threads, seed, policy, measured)?,
                    Measured::F64 => replicate::<f64>(n, threads, seed, policy, measured)?,
                    Measured::Bf16(k) => replicate_bf16(k, n, &pool, seed, policy, measured)?,
                };
                m.param("products_per_sample", calls);
                m.push_replicate(samples, warm);
            }
        }
        for (m, out) in metrics.iter().zip(&mut per_kind) {
            out.push(summarize(m, policy)?);
        }
    }
    for (kind, results) in kinds.iter().zip(&per_kind) {
        report.results.extend(results.iter().cloned());
        if let Some(best) = results.iter().max_by(|a, b| a.value.total_cmp(&b.value)) {
            let mut peak = best.clone();
            peak.name = format!("{prefix}.{}.peak", kind.name());
            report.results.push(peak);
        }
    }
    let f32_at = kinds.iter().position(|k| matches!(k, Measured::F32));
    let bf16_at = kinds.iter().position(|k| matches!(k, Measured::Bf16(_)));
    if let (Some(f), Some(b)) = (f32_at, bf16_at) {
        for ((fr, br), &n) in per_kind[f].iter().zip(&per_kind[b]).zip(&sizes) {
            report.results.push(speedup(
                &format!("{prefix}.bf16_vs_f32.{n}"),
                fr,
                br,
                policy,
            )?);
        }
    }
    Ok(report)
}

/// `bf16 / f32`: the ratio of the two medians, with a BCa interval that resamples the two
/// sets of measured samples independently (`yardstick_stats::bootstrap::ratio_of_medians_ci`).
fn speedup(
    name: &str,
    f32r: &MicroResult,
    bf16r: &MicroResult,
    policy: &TrialPolicy,
) -> Result<MicroResult, MicroError> {
    let a: Vec<f64> = f32r.samples.iter().flatten().copied().collect();
    let b: Vec<f64> = bf16r.samples.iter().flatten().copied().collect();
    let cfg = BootstrapConfig {
        resamples: default_resamples(a.len().min(b.len())),
        level: policy.confidence,
        seed: policy.seed,
        method: Method::Bca,
    };
    let (ci, method) = match ratio_of_medians_ci(&a, &b, &cfg) {
        Ok(ci) => (Some([ci.lower, ci.upper]), "ratio-bca"),
        Err(_) => (None, "none"),
    };
    let mut params = BTreeMap::new();
    params.insert(
        "n".to_owned(),
        f32r.params.get("n").cloned().unwrap_or_default(),
    );
    params.insert("numerator".to_owned(), bf16r.name.clone().into());
    params.insert("denominator".to_owned(), f32r.name.clone().into());
    Ok(MicroResult {
        name: name.to_owned(),
        value: bf16r.value / f32r.value,
        unit: "x".to_owned(),
        ci,
        n: a.len().min(b.len()),
        replicates: f32r.replicates.min(bf16r.replicates),
        level: policy.confidence,
        ci_method: method.to_owned(),
        higher_is_better: true,
        mean: bf16r.mean / f32r.mean,
        cv: None,
        // The extreme ratios any pair of samples could give.
        min: bf16r.min / f32r.max,
        max: bf16r.max / f32r.min,
        warmup_discarded: f32r.warmup_discarded + bf16r.warmup_discarded,
        outliers: OutlierCounts::default(),
        params,
        samples: Vec::new(),
    })
}

fn replicate<T: Element>(
    n: usize,
    threads: usize,
    seed: u64,
    policy: &TrialPolicy,
    measured: usize,
) -> Result<(Vec<f64>, usize, usize), MicroError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a: Vec<T> = (0..n * n)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let b: Vec<T> = (0..n * n)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let mut c: Vec<T> = vec![T::zero(); n * n];
    let parallelism = if threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    let (samples, warm, calls) = timed(n, policy, measured, || {
        product(n, &a, &b, &mut c, parallelism)
    })?;
    validate(
        n,
        |i, k| a[i * n + k].to_f64(),
        |k, j| b[k * n + j].to_f64(),
        |i, j| c[i * n + j].to_f64(),
        T::EPSILON,
        T::NAME,
        &mut rng,
    )?;
    Ok((samples, warm, calls))
}

/// One replicate of the bf16 kernel: fresh seeded bf16 matrices, f32 C.
fn replicate_bf16(
    kernel: Bf16Kernel,
    n: usize,
    pool: &rayon::ThreadPool,
    seed: u64,
    policy: &TrialPolicy,
    measured: usize,
) -> Result<(Vec<f64>, usize, usize), MicroError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a: Vec<u16> = (0..n * n)
        .map(|_| bf16::to_bf16(rng.random_range(-1.0f32..1.0)))
        .collect();
    let b: Vec<u16> = (0..n * n)
        .map(|_| bf16::to_bf16(rng.random_range(-1.0f32..1.0)))
        .collect();
    let mut c = vec![0f32; n * n];
    let mut packed = Vec::new();
    let (samples, warm, calls) = timed(n, policy, measured, || {
        kernel.gemm(n, n, n, &a, &b, &mut c, pool, &mut packed)
    })?;
    // The products of bf16 inputs are exact in f32 and accumulate in f32: the f32 bound
    // applies, against the exact dot product of the bf16-rounded inputs.
    validate(
        n,
        |i, k| f64::from(bf16::from_bf16(a[i * n + k])),
        |k, j| f64::from(bf16::from_bf16(b[k * n + j])),
        |i, j| f64::from(c[i * n + j]),
        f64::from(f32::EPSILON),
        "bf16",
        &mut rng,
    )?;
    Ok((samples, warm, calls))
}

/// Calibrates how many products make one sample of at least MIN_SAMPLE_SECS, then runs the
/// trial policy's iterations; a sample is GFLOP/s (2·N³ per product).
fn timed(
    n: usize,
    policy: &TrialPolicy,
    measured: usize,
    mut product: impl FnMut(),
) -> Result<(Vec<f64>, usize, usize), MicroError> {
    let flops = 2.0 * (n as f64).powi(3);
    let t = Instant::now();
    product();
    let one = t.elapsed().as_secs_f64().max(1e-9);
    let calls = ((MIN_SAMPLE_SECS / one).ceil() as usize).clamp(1, 1_000_000);
    let (samples, warm) = iterate(policy, measured, || {
        let t = Instant::now();
        for _ in 0..calls {
            product();
        }
        let secs = t.elapsed().as_secs_f64();
        Ok(flops * calls as f64 / secs / 1e9)
    })?;
    Ok((samples, warm, calls))
}

/// C = A·B, row-major.
fn product<T: Element>(n: usize, a: &[T], b: &[T], c: &mut [T], parallelism: Parallelism) {
    let n_i = n as isize;
    // SAFETY: the three buffers hold n*n elements each, the strides (column 1, row n) describe
    // row-major n×n matrices inside them, and `c` does not alias `a` or `b`.
    unsafe {
        gemm::gemm(
            n,
            n,
            n,
            c.as_mut_ptr(),
            1,
            n_i,
            false,
            a.as_ptr(),
            1,
            n_i,
            b.as_ptr(),
            1,
            n_i,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Checks 16 random entries of C against an `f64` dot product of the inputs, within
/// 2·N·ε·Σ|aᵢₖbₖⱼ| (ε of the accumulation type), so a wrong kernel cannot report a figure.
fn validate(
    n: usize,
    a: impl Fn(usize, usize) -> f64,
    b: impl Fn(usize, usize) -> f64,
    c: impl Fn(usize, usize) -> f64,
    epsilon: f64,
    name: &str,
    rng: &mut ChaCha8Rng,
) -> Result<(), MicroError> {
    for _ in 0..16 {
        let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
        let (mut exact, mut magnitude) = (0.0f64, 0.0f64);
        for k in 0..n {
            let p = a(i, k) * b(k, j);
            exact += p;
            magnitude += p.abs();
        }
        let got = c(i, j);
        let tolerance = 2.0 * n as f64 * epsilon * magnitude + f64::MIN_POSITIVE;
        if (got - exact).abs() > tolerance {
            return Err(MicroError::Validation(format!(
                "gemm {name}: C[{i}][{j}] = {got}, expected {exact} (tolerance {tolerance:e})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use yardstick_spec::model::MicroKind;

    fn quick() -> TrialPolicy {
        TrialPolicy {
            replicates: 3,
            iterations: Some(2),
            ..TrialPolicy::default()
        }
    }

    fn config(sizes: &[u64]) -> MicroConfig {
        let mut c = MicroConfig::new(MicroKind::Gemm);
        c.sizes = sizes.to_vec();
        c.threads = Some(2);
        c
    }

    fn names(r: &MicroReport) -> Vec<&str> {
        r.results.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn a_cpu_without_avx512_bf16_measures_f32_and_says_why_bf16_is_missing() {
        let r = run_with(&config(&[24]), &quick(), Err(bf16::NoBf16::Missing)).unwrap();
        assert_eq!(names(&r), ["gemm.f32.24", "gemm.f32.peak"]);
        assert_eq!(
            r.skipped,
            [Skipped {
                name: "gemm.bf16".into(),
                reason: "skipped: CPU lacks avx512_bf16".into()
            }]
        );
        // Asking for bf16 alone gives no figure at all, only the reason.
        let mut only = config(&[24]);
        only.dtypes = vec![Precision::Bf16];
        let r = run_with(&only, &quick(), Err(bf16::NoBf16::Missing)).unwrap();
        assert!(r.results.is_empty());
        assert_eq!(r.skipped.len(), 1);
    }

    #[test]
    fn f32_and_bf16_side_by_side_with_their_ratio() {
        let Ok(kernel) = Bf16Kernel::detect_cpu() else {
            // Not a bf16 CPU: the default run must then fall back to the skip record.
            let r = run(&config(&[24]), &quick()).unwrap();
            assert_eq!(r.skipped[0].name, "gemm.bf16");
            return;
        };
        let r = run_with(&config(&[40, 64]), &quick(), Ok(kernel)).unwrap();
        assert_eq!(
            names(&r),
            [
                "gemm.f32.40",
                "gemm.f32.64",
                "gemm.f32.peak",
                "gemm.bf16.40",
                "gemm.bf16.64",
                "gemm.bf16.peak",
                "gemm.bf16_vs_f32.40",
                "gemm.bf16_vs_f32.64"
            ]
        );
        assert!(r.skipped.is_empty());
        let get = |name: &str| r.results.iter().find(|x| x.name == name).unwrap();
        for n in [40, 64] {
            let (f, b) = (
                get(&format!("gemm.f32.{n}")),
                get(&format!("gemm.bf16.{n}")),
            );
            assert_eq!(b.n, 6, "3 replicates x 2 measured iterations");
            assert!(b.value.is_finite() && b.value > 0.0);
            assert_eq!(b.params["dtype"], "bf16");
            let ratio = get(&format!("gemm.bf16_vs_f32.{n}"));
            assert_eq!(ratio.unit, "x");
            assert_eq!(ratio.value, b.value / f.value);
            let [lo, hi] = ratio.ci.expect("a CI from 6 + 6 samples");
            assert!(lo <= ratio.value && ratio.value <= hi, "{ratio:?}");
        }
    }

    #[test]
    fn unknown_kernels_are_listed_not_measured() {
        let mut c = config(&[16]);
        c.dtypes = vec![Precision::Fp16, Precision::Fp64];
        let r = run_with(&c, &quick(), Err(bf16::NoBf16::Missing)).unwrap();
        assert_eq!(names(&r), ["gemm.f64.16", "gemm.f64.peak"]);
        assert_eq!(r.skipped[0].name, "gemm.fp16");
    }
}
