//! The matmul peak: cuBLASLt GEMMs over a sweep of N×N×N shapes, per element type, and the
//! best achieved (MAMF-style: the maximum achievable matmul FLOP/s, and the shape it was reached
//! at).
//!
//! - `bf16` and `fp16`: inputs and output of the type, fp32 accumulation;
//! - `tf32`: fp32 inputs and output, `CUBLAS_COMPUTE_32F_FAST_TF32`;
//! - `fp32`: plain fp32 (asked for by name only);
//! - `fp8`: e4m3 inputs, bf16 output, fp32 compute with fast accumulation (compute capability
//!   8.9 and later; skipped with the reason elsewhere).
//!
//! Operands are stored as cuBLASLt's FP8 kernels require ("TN": A transposed), for every type
//! alike, with cuBLASLt's first heuristic choice and a 32 MiB workspace. The data is random
//! (magnitudes between 1/16 and 1, random signs): matrices of zeros make a GPU draw less power
//! and clock higher, which flatters the figure by 10 % and more. Each replicate fills fresh
//! buffers and, after timing, checks several elements of the product against a host
//! computation, so a wrong kernel cannot report a figure. FLOPs counted: 2·M·N·K per product.

use std::ffi::c_void;

use cudarc::cublaslt::{result as lt, sys as lts};
use rand::{Rng, SeedableRng};
use yardstick_spec::model::Precision;

use super::super::trial::{MetricSamples, Stat, summarize};
use super::super::{MicroConfig, MicroError, MicroReport, Skipped, TrialPolicy};
use super::driver::{DevBuf, Device};
use super::{batches, device_params};

/// Default shapes N (N×N×N).
pub const DEFAULT_SIZES: [u64; 5] = [1024, 2048, 4096, 8192, 16384];
/// Default measured batches per replicate.
pub const DEFAULT_ITERATIONS: usize = 10;
const BATCH_S: f64 = 0.01;
const WORKSPACE: usize = 32 << 20;
/// Elements of the random tile the operands repeat (large enough that no two rows of A or
/// columns of B coincide at the default shapes' row lengths... in most positions).
const TILE: usize = 1 << 22;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Bf16,
    Fp16,
    Tf32,
    Fp32,
    Fp8,
}

impl Kind {
    fn of(p: Precision) -> Result<Self, MicroError> {
        Ok(match p {
            Precision::Bf16 => Kind::Bf16,
            Precision::Fp16 => Kind::Fp16,
            Precision::Tf32 => Kind::Tf32,
            Precision::Fp32 => Kind::Fp32,
            Precision::Fp8 => Kind::Fp8,
            other => {
                return Err(MicroError::InvalidConfig(format!(
                    "gpu-gemm has no {other:?} GEMM: give bf16, fp16, tf32, fp32 or fp8"
                )));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Bf16 => "bf16",
            Kind::Fp16 => "fp16",
            Kind::Tf32 => "tf32",
            Kind::Fp32 => "fp32",
            Kind::Fp8 => "fp8",
        }
    }

    fn in_type(self) -> lts::cudaDataType {
        match self {
            Kind::Bf16 => lts::cudaDataType::CUDA_R_16BF,
            Kind::Fp16 => lts::cudaDataType::CUDA_R_16F,
            Kind::Tf32 | Kind::Fp32 => lts::cudaDataType::CUDA_R_32F,
            Kind::Fp8 => lts::cudaDataType::CUDA_R_8F_E4M3,
        }
    }

    fn out_type(self) -> lts::cudaDataType {
        match self {
            Kind::Fp8 => lts::cudaDataType::CUDA_R_16BF,
            k => k.in_type(),
        }
    }

    fn in_bytes(self) -> usize {
        match self {
            Kind::Bf16 | Kind::Fp16 => 2,
            Kind::Tf32 | Kind::Fp32 => 4,
            Kind::Fp8 => 1,
        }
    }

    fn out_bytes(self) -> usize {
        match self {
            Kind::Fp8 => 2,
            k => k.in_bytes(),
        }
    }

    fn compute(self) -> lts::cublasComputeType_t {
        match self {
            Kind::Tf32 => lts::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
            _ => lts::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        }
    }

    /// A random input element: its bytes (little-endian) and its exact value. Magnitudes lie
    /// in [1/16, 2) and every value is exactly representable in the type.
    fn random(self, rng: &mut impl Rng) -> (u32, f64) {
        let neg = rng.random::<bool>();
        let octave = rng.random_range(0..4i32) - 4; // 2^-4 .. 2^-1
        let sign = if neg { -1.0 } else { 1.0 };
        match self {
            Kind::Bf16 => {
                let m = rng.random_range(0..128u32);
                let e = (127 + octave) as u32;
                let bits = (u32::from(neg) << 15) | (e << 7) | m;
                (
                    bits,
                    sign * (1.0 + f64::from(m) / 128.0) * 2f64.powi(octave),
                )
            }
            Kind::Fp16 => {
                let m = rng.random_range(0..1024u32);
                let e = (15 + octave) as u32;
                let bits = (u32::from(neg) << 15) | (e << 10) | m;
                (
                    bits,
                    sign * (1.0 + f64::from(m) / 1024.0) * 2f64.powi(octave),
                )
            }
            Kind::Tf32 | Kind::Fp32 => {
                let m = rng.random_range(0..(1u32 << 23));
                let e = (127 + octave) as u32;
                let bits = (u32::from(neg) << 31) | (e << 23) | m;
                (bits, f64::from(f32::from_bits(bits)))
            }
            Kind::Fp8 => {
                let m = rng.random_range(0..8u32);
                let e = (7 + octave) as u32;
                let bits = (u32::from(neg) << 7) | (e << 3) | m;
                (bits, sign * (1.0 + f64::from(m) / 8.0) * 2f64.powi(octave))
            }
        }
    }

    /// The value of an output element's bytes.
    fn decode_out(self, raw: &[u8]) -> f64 {
        match self.out_type() {
            lts::cudaDataType::CUDA_R_16BF => {
                let b = u16::from_le_bytes([raw[0], raw[1]]);
                f64::from(f32::from_bits(u32::from(b) << 16))
            }
            lts::cudaDataType::CUDA_R_16F => {
                let b = u16::from_le_bytes([raw[0], raw[1]]);
                let (s, e, m) = (b >> 15, (b >> 10) & 31, b & 1023);
                let mag = match e {
                    0 => f64::from(m) * 2f64.powi(-24),
                    31 => f64::NAN,
                    _ => (1.0 + f64::from(m) / 1024.0) * 2f64.powi(i32::from(e) - 15),
                };
                if s == 1 { -mag } else { mag }
            }
            _ => f64::from(f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])),
        }
    }
}

/// A random tile: its bytes as the device stores them, and its values.
struct Tile {
    bytes: Vec<u8>,
    values: Vec<f64>,
}

impl Tile {
    fn new(kind: Kind, seed: u64) -> Self {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let width = kind.in_bytes();
        let mut bytes = Vec::with_capacity(TILE * width);
        let mut values = Vec::with_capacity(TILE);
        for _ in 0..TILE {
            let (bits, v) = kind.random(&mut rng);
            bytes.extend_from_slice(&bits.to_le_bytes()[..width]);
            values.push(v);
        }
        Tile { bytes, values }
    }

    fn at(&self, index: usize) -> f64 {
        self.values[index % TILE]
    }
}

/// cuBLASLt objects of one (type, shape), destroyed on drop.
struct Plan {
    desc: lts::cublasLtMatmulDesc_t,
    a: lts::cublasLtMatrixLayout_t,
    b: lts::cublasLtMatrixLayout_t,
    d: lts::cublasLtMatrixLayout_t,
    pref: lts::cublasLtMatmulPreference_t,
    algo: Option<lts::cublasLtMatmulAlgo_t>,
}

impl Drop for Plan {
    fn drop(&mut self) {
        unsafe {
            let _ = lt::destroy_matmul_pref(self.pref);
            let _ = lt::destroy_matrix_layout(self.d);
            let _ = lt::destroy_matrix_layout(self.b);
            let _ = lt::destroy_matrix_layout(self.a);
            let _ = lt::destroy_matmul_desc(self.desc);
        }
    }
}

fn blas<T>(r: Result<T, lt::CublasError>, what: &str) -> Result<T, MicroError> {
    r.map_err(|e| MicroError::Unsupported(format!("cuBLASLt: {what}: {:?}", e.0)))
}

impl Plan {
    /// Descriptors of D(m×n) = Aᵀ(m×k) · B(k×n), A stored k×m, all column-major; `Ok(None)`
    /// algo when cuBLASLt has no kernel for it on this GPU.
    fn new(handle: lts::cublasLtHandle_t, kind: Kind, n: u64) -> Result<Self, MicroError> {
        let (m, k) = (n, n);
        let desc = blas(
            lt::create_matmul_desc(kind.compute(), lts::cudaDataType::CUDA_R_32F),
            "matmul descriptor",
        )?;
        let mut plan = Plan {
            desc,
            a: blas(
                lt::create_matrix_layout(kind.in_type(), k, m, k as i64),
                "layout A",
            )?,
            b: blas(
                lt::create_matrix_layout(kind.in_type(), k, n, k as i64),
                "layout B",
            )?,
            d: blas(
                lt::create_matrix_layout(kind.out_type(), m, n, m as i64),
                "layout D",
            )?,
            pref: blas(lt::create_matmul_pref(), "preference")?,
            algo: None,
        };
        // cublasOperation_t's CUBLAS_OP_T (cuBLAS's enum; cuBLASLt takes it as an int32).
        let trans: i32 = 1;
        blas(
            unsafe {
                lt::set_matmul_desc_attribute(
                    plan.desc,
                    lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                    (&raw const trans).cast(),
                    std::mem::size_of_val(&trans),
                )
            },
            "TRANSA",
        )?;
        if kind == Kind::Fp8 {
            let fast: i8 = 1;
            blas(
                unsafe {
                    lt::set_matmul_desc_attribute(
                        plan.desc,
                        lts::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                        (&raw const fast).cast(),
                        1,
                    )
                },
                "FAST_ACCUM",
            )?;
        }
        let ws = WORKSPACE as u64;
        blas(
            unsafe {
                lt::set_matmul_pref_attribute(
                    plan.pref,
                    lts::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&raw const ws).cast(),
                    std::mem::size_of_val(&ws),
                )
            },
            "workspace preference",
        )?;
        plan.algo = match unsafe {
            lt::get_matmul_algo_heuristic(
                handle, plan.desc, plan.a, plan.b, plan.d, plan.d, plan.pref,
            )
        } {
            Ok(h) => Some(h.algo),
            Err(_) => None,
        };
        Ok(plan)
    }
}

struct Handle(lts::cublasLtHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        unsafe {
            let _ = lt::destroy_handle(self.0);
        }
    }
}

/// The types and shapes `config` asks for, checked: types this probe has, shapes multiples of
/// 16, sorted.
pub(super) fn check(config: &MicroConfig) -> Result<(Vec<Kind>, Vec<u64>), MicroError> {
    let kinds: Vec<Kind> = if config.dtypes.is_empty() {
        vec![Kind::Bf16, Kind::Fp16, Kind::Tf32, Kind::Fp8]
    } else {
        config
            .dtypes
            .iter()
            .map(|&p| Kind::of(p))
            .collect::<Result<_, _>>()?
    };
    let mut sizes: Vec<u64> = if config.sizes.is_empty() {
        DEFAULT_SIZES.to_vec()
    } else {
        config.sizes.clone()
    };
    sizes.sort_unstable();
    sizes.dedup();
    if let Some(&n) = sizes.iter().find(|&&n| n < 16 || n % 16 != 0) {
        return Err(MicroError::InvalidConfig(format!(
            "gpu-gemm size {n} is not a multiple of 16 (cuBLASLt's FP8 and tensor-core kernels \
             need it): give e.g. 1024,4096,8192"
        )));
    }
    Ok((kinds, sizes))
}

pub(super) fn run(
    device: &Device,
    prefix: &str,
    config: &MicroConfig,
    policy: &TrialPolicy,
    report: &mut MicroReport,
) -> Result<(), MicroError> {
    let (kinds, sizes) = check(config)?;
    device.bind()?;
    let handle = Handle(blas(lt::create_handle(), "cublasLtCreate")?);
    let workspace = DevBuf::new(WORKSPACE)?;
    let measured = policy.iterations_or(DEFAULT_ITERATIONS);
    let free = device.free_bytes()?;
    for kind in kinds {
        if kind == Kind::Fp8 && device.cc < (8, 9) {
            report.skipped.push(Skipped {
                name: format!("{prefix}.gemm.fp8"),
                reason: format!(
                    "skipped: FP8 matmul needs compute capability 8.9 or later; {} is {}.{}",
                    device.name, device.cc.0, device.cc.1
                ),
            });
            continue;
        }
        let tiles = (
            Tile::new(kind, policy.seed ^ 0xA),
            Tile::new(kind, policy.seed ^ 0xB),
        );
        let mut best: Option<super::super::MicroResult> = None;
        for &n in &sizes {
            let nn = (n * n) as usize;
            let need = nn * (2 * kind.in_bytes() + kind.out_bytes());
            if need as u64 > free / 10 * 9 {
                report.warnings.push(format!(
                    "{prefix}.gemm.{}.{n}: the operands need {need} bytes, more than the GPU's \
                     free memory ({free} bytes): shape skipped",
                    kind.name()
                ));
                continue;
            }
            let plan = Plan::new(handle.0, kind, n)?;
            let Some(algo) = plan.algo else {
                report.skipped.push(Skipped {
                    name: format!("{prefix}.gemm.{}.{n}", kind.name()),
                    reason: format!(
                        "skipped: cuBLASLt offers no {} kernel for {n}x{n}x{n} on {} \
                         (compute capability {}.{})",
                        kind.name(),
                        device.name,
                        device.cc.0,
                        device.cc.1
                    ),
                });
                continue;
            };
            let mut m = MetricSamples::new(
                format!("{prefix}.gemm.{}.{n}", kind.name()),
                "TFLOP/s",
                true,
                Stat::Median,
            );
            for (key, v) in [("m", n), ("n", n), ("k", n)] {
                m.param(key, v);
            }
            m.param("dtype", kind.name());
            m.param("layout", "TN");
            m.param("data", "random, |x| in [1/16, 1)");
            if kind == Kind::Fp8 {
                m.param("accumulation", "fast");
            }
            device_params(&mut m, device);
            let flops = 2.0 * (n as f64).powi(3);
            for _ in 0..policy.replicates {
                let a = DevBuf::new(nn * kind.in_bytes())?;
                let b = DevBuf::new(nn * kind.in_bytes())?;
                let d = DevBuf::new(nn * kind.out_bytes())?;
                a.fill_tiled(&tiles.0.bytes)?;
                b.fill_tiled(&tiles.1.bytes)?;
                let alpha = 1.0f32;
                let beta = 0.0f32;
                let mut op = || {
                    blas(
                        unsafe {
                            lt::matmul(
                                handle.0,
                                plan.desc,
                                (&raw const alpha).cast(),
                                (&raw const beta).cast(),
                                a.ptr as *const c_void,
                                plan.a,
                                b.ptr as *const c_void,
                                plan.b,
                                d.ptr as *const c_void,
                                plan.d,
                                d.ptr as *mut c_void,
                                plan.d,
                                &raw const algo,
                                workspace.ptr as *mut c_void,
                                WORKSPACE,
                                device.stream as lts::cudaStream_t,
                            )
                        },
                        "cublasLtMatmul",
                    )
                };
                let (samples, warm) =
                    batches(device, policy, measured, BATCH_S, flops / 1e12, &mut op)?;
                device.sync()?;
                check_product(kind, n as usize, &tiles, &d)?;
                m.push_replicate(samples, warm);
            }
            let r = summarize(&m, policy)?;
            if best.as_ref().is_none_or(|b| r.value > b.value) {
                best = Some(r.clone());
            }
            report.results.push(r);
        }
        if let Some(mut peak) = best {
            peak.params.insert(
                "peak_of".into(),
                serde_json::Value::String(peak.name.clone()),
            );
            peak.name = format!("{prefix}.gemm.{}.peak", kind.name());
            report.results.push(peak);
        }
    }
    Ok(())
}

/// Checks elements of D = Aᵀ·B against a host computation from the tiles.
fn check_product(kind: Kind, n: usize, tiles: &(Tile, Tile), d: &DevBuf) -> Result<(), MicroError> {
    let (m, k) = (n, n);
    let width = kind.out_bytes();
    for (i, j) in [
        (0, 0),
        (m - 1, n - 1),
        (m / 2, n / 3),
        (1, n - 1),
        (m - 1, 0),
    ] {
        let mut reference = 0.0f64;
        let mut magnitude = 0.0f64;
        for l in 0..k {
            let p = tiles.0.at(l + i * k) * tiles.1.at(l + j * k);
            reference += p;
            magnitude += p.abs();
        }
        let mut raw = [0u8; 4];
        d.read((i + j * m) * width, &mut raw[..width])?;
        let got = kind.decode_out(&raw[..width]);
        let tolerance = magnitude / 512.0 + reference.abs() / 128.0;
        // A NaN output fails too: it is not within any tolerance.
        let within = (got - reference).abs() <= tolerance;
        if !within {
            return Err(MicroError::Validation(format!(
                "gpu-gemm {}: element ({i}, {j}) of the {n}x{n}x{n} product is {got}, the host \
                 computes {reference} (tolerance {tolerance:.3})",
                kind.name()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every random input's bytes encode exactly the value the host reference uses, and output
    /// decoding reads the same encodings back (bf16, fp16, fp32), so a check failure means a
    /// wrong product, not a wrong reference.
    #[test]
    fn random_inputs_encode_their_values_exactly() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for kind in [Kind::Bf16, Kind::Fp16, Kind::Tf32, Kind::Fp32] {
            for _ in 0..1000 {
                let (bits, v) = kind.random(&mut rng);
                let raw = bits.to_le_bytes();
                assert_eq!(
                    kind.decode_out(&raw[..kind.out_bytes()]),
                    v,
                    "{kind:?} {bits:#x}"
                );
                assert!((1.0 / 16.0..2.0).contains(&v.abs()), "{kind:?} {v}");
            }
        }
        // e4m3: value = (1 + m/8) 2^(e-7); never the NaN pattern (e = 15, m = 7).
        for _ in 0..1000 {
            let (bits, v) = Kind::Fp8.random(&mut rng);
            let (e, m) = ((bits >> 3) & 15, bits & 7);
            assert!(bits < 256 && e < 15);
            let want = (1.0 + f64::from(m) / 8.0) * 2f64.powi(e as i32 - 7);
            assert_eq!(v.abs(), want);
        }
    }

    #[test]
    fn fp16_outputs_decode_subnormals_and_signs() {
        assert_eq!(Kind::Fp16.decode_out(&0x3C00u16.to_le_bytes()), 1.0);
        assert_eq!(Kind::Fp16.decode_out(&0xC000u16.to_le_bytes()), -2.0);
        assert_eq!(
            Kind::Fp16.decode_out(&0x0001u16.to_le_bytes()),
            2f64.powi(-24)
        );
        assert!(Kind::Fp16.decode_out(&0x7E00u16.to_le_bytes()).is_nan());
        assert_eq!(Kind::Bf16.decode_out(&0x3F80u16.to_le_bytes()), 1.0);
    }

    #[test]
    fn types_without_a_gpu_gemm_are_refused_by_name() {
        let e = Kind::of(Precision::Int4).unwrap_err().to_string();
        assert!(e.contains("give bf16, fp16, tf32, fp32 or fp8"), "{e}");
        assert_eq!(Kind::of(Precision::Bf16).unwrap(), Kind::Bf16);
    }
}
