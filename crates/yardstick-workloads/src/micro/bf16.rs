//! A small bf16 GEMM — bf16 inputs, f32 accumulation — on AVX-512 BF16 (`vdpbf16ps`).
//!
//! No crate in the dependency tree has a CPU bf16 kernel that uses the bf16 instructions
//! (`gemm` 0.19 has none; candle's CPU bf16 matmul widens to f32), so timing one of them would
//! report an f32 figure under a bf16 name. This is a textbook (BLIS-style) cache-blocked,
//! packed GEMM, just good enough to show what the instructions deliver:
//!
//! * `B` is packed once per product into `KC`-deep blocks of `NR`-wide panels whose k-pairs
//!   are interleaved the way `vdpbf16ps` reads them (`B[k][j], B[k+1][j]` adjacent), zero-padded
//!   at the edges; packing is inside the timing, as in every GEMM library.
//! * Rows of `C` are split into tasks of at most `MC_MAX` rows on a rayon pool of the
//!   benchmark's thread count (the f32 benchmark's `gemm` crate also runs on rayon); each task
//!   packs its `MC × KC` block of `A` (k-pairs as one `u32`, broadcast by the kernel) so it
//!   stays in L2 while an `NR`-wide panel of `B` (16 KiB) stays in L1.
//! * The micro-kernel keeps an `MR × NR` = 8 × 32 tile of `C` in 16 zmm accumulators: per
//!   k-pair, 2 loads of `B`, 8 broadcasts of `A`, 16 `vdpbf16ps` (64 FLOPs each).
//!
//! [`Bf16Kernel`] can only be obtained on a CPU with `avx512_bf16` and `avx512f` (checked at run
//! time), which is what makes calling the `#[target_feature]` functions sound.

use rayon::prelude::*;

/// Rows of the micro-kernel's tile.
pub const MR: usize = 8;
/// Columns of the micro-kernel's tile (two zmm vectors of f32).
pub const NR: usize = 32;
/// Depth of one block of k (even: the kernel consumes k in pairs).
const KC: usize = 256;
/// Most rows of `C` in one task (the packed `A` block, `MC_MAX × KC` bf16 = 64 KiB, sits in L2).
const MC_MAX: usize = 128;

/// Setting this environment variable (to anything but `0` or empty) makes [`Bf16Kernel::detect`]
/// behave as on a CPU without `avx512_bf16`: to test that path, or to compare without it.
pub const DISABLE_ENV: &str = "YARDSTICK_GEMM_NO_BF16";

/// Rounds an f32 to the nearest bf16 (ties to even), as `vcvtneps2bf16` does; NaN stays NaN.
pub fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) as u16) | 0x0040;
    }
    let round = 0x7FFF + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// The f32 value of a bf16 (exact).
pub fn from_bf16(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// Why there is no bf16 kernel on this machine (`gemm.bf16` is reported as skipped with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoBf16 {
    /// [`DISABLE_ENV`] is set.
    #[error("CPU lacks avx512_bf16 (forced by ${DISABLE_ENV})")]
    Disabled,
    /// An x86-64 CPU without `avx512_bf16` (or `avx512f`).
    #[error("CPU lacks avx512_bf16")]
    Missing,
    /// Not an x86-64 CPU.
    #[error("CPU lacks avx512_bf16 (not an x86-64 CPU; no bf16 kernel for this architecture)")]
    OtherArch,
}

/// Proof that this CPU runs the bf16 kernel (`avx512_bf16` and `avx512f`).
#[derive(Debug, Clone, Copy)]
pub struct Bf16Kernel {
    _private: (),
}

impl Bf16Kernel {
    /// The kernel when this CPU has `avx512_bf16` (and [`DISABLE_ENV`] is not set), else why not.
    pub fn detect() -> Result<Self, NoBf16> {
        if std::env::var(DISABLE_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
            return Err(NoBf16::Disabled);
        }
        Self::detect_cpu()
    }

    /// The kernel when this CPU has `avx512_bf16`, ignoring [`DISABLE_ENV`].
    pub fn detect_cpu() -> Result<Self, NoBf16> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512bf16")
                && std::arch::is_x86_feature_detected!("avx512f")
            {
                Ok(Self { _private: () })
            } else {
                Err(NoBf16::Missing)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Err(NoBf16::OtherArch)
        }
    }

    /// C = A·B for row-major `A` (m×k), `B` (k×n) of bf16 bits and `C` (m×n) of f32, on
    /// `pool`'s threads. `packed_b` is scratch space, reused between calls.
    ///
    /// # Panics
    /// When a slice is shorter than its matrix.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: &[u16],
        b: &[u16],
        c: &mut [f32],
        pool: &rayon::ThreadPool,
        packed_b: &mut Vec<u16>,
    ) {
        assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
        if m == 0 || n == 0 {
            return;
        }
        if k == 0 {
            c[..m * n].fill(0.0);
            return;
        }
        let panels = n.div_ceil(NR);
        pool.install(|| {
            pack_b(k, n, b, packed_b);
            let packed_b: &[u16] = packed_b;
            let threads = pool.current_num_threads().max(1);
            // At least two tasks per thread (work stealing evens them out), at most MC_MAX rows.
            let mc = m
                .div_ceil(2 * threads)
                .next_multiple_of(MR)
                .clamp(MR, MC_MAX);
            c[..m * n]
                .par_chunks_mut(mc * n)
                .enumerate()
                .for_each(|(t, c_rows)| {
                    let i0 = t * mc;
                    let rows = c_rows.len() / n;
                    let mut packed_a = vec![0u32; rows.next_multiple_of(MR) * KC / 2];
                    for (bi, k0) in (0..k).step_by(KC).enumerate() {
                        let kc = KC.min(k - k0);
                        let kp = kc.div_ceil(2);
                        pack_a(&a[i0 * k..], k, rows, k0, kc, &mut packed_a);
                        let block = &packed_b[bi * panels * KC * NR..];
                        for jr in 0..panels {
                            let b_panel = &block[jr * kp * 2 * NR..(jr + 1) * kp * 2 * NR];
                            let cols = NR.min(n - jr * NR);
                            for ir in 0..rows.div_ceil(MR) {
                                let a_panel = &packed_a[ir * kp * MR..(ir + 1) * kp * MR];
                                let tile_rows = MR.min(rows - ir * MR);
                                let offset = ir * MR * n + jr * NR;
                                // SAFETY: a `Bf16Kernel` exists only where the CPU has
                                // avx512_bf16 and avx512f. The panels hold kp k-pairs of MR
                                // (A) and NR (B) entries; the tile of C starts at `offset` and
                                // spans tile_rows rows of stride n and cols columns, inside
                                // `c_rows` (rows × n).
                                unsafe {
                                    kernel(
                                        kp,
                                        a_panel.as_ptr(),
                                        b_panel.as_ptr(),
                                        c_rows.as_mut_ptr().add(offset),
                                        n,
                                        tile_rows,
                                        cols,
                                        bi > 0,
                                    );
                                }
                            }
                        }
                    }
                });
        });
    }
}

/// Packs `B` (k×n): for each KC-block of k, for each NR-wide panel, k-pairs × NR columns with
/// `B[k][j]`, `B[k+1][j]` adjacent; zero-padded past k and n.
fn pack_b(k: usize, n: usize, b: &[u16], out: &mut Vec<u16>) {
    let panels = n.div_ceil(NR);
    let blocks = k.div_ceil(KC);
    let last_kp = (k - (blocks - 1) * KC).div_ceil(2);
    let len = (blocks - 1) * panels * KC * NR + panels * last_kp * 2 * NR;
    out.clear();
    out.resize(len, 0);
    for (bi, k0) in (0..k).step_by(KC).enumerate() {
        let kc = KC.min(k - k0);
        let kp = kc.div_ceil(2);
        let start = bi * panels * KC * NR;
        out[start..start + panels * kp * 2 * NR]
            .par_chunks_mut(kp * 2 * NR)
            .enumerate()
            .for_each(|(jr, dst)| {
                let j0 = jr * NR;
                let cols = NR.min(n - j0);
                for q in 0..kp {
                    let row = &mut dst[q * 2 * NR..(q + 1) * 2 * NR];
                    let ka = k0 + 2 * q;
                    let src_a = &b[ka * n + j0..ka * n + j0 + cols];
                    for (jj, &v) in src_a.iter().enumerate() {
                        row[2 * jj] = v;
                    }
                    if 2 * q + 1 < kc {
                        let src_b = &b[(ka + 1) * n + j0..(ka + 1) * n + j0 + cols];
                        for (jj, &v) in src_b.iter().enumerate() {
                            row[2 * jj + 1] = v;
                        }
                    }
                }
            });
    }
}

/// Packs rows `0..rows` of `a` (row stride `k`), columns `k0..k0+kc`, into MR-row panels of
/// k-pairs: entry (panel, q, i) is `A[i][k0+2q] | A[i][k0+2q+1] << 16`; zero-padded.
fn pack_a(a: &[u16], k: usize, rows: usize, k0: usize, kc: usize, out: &mut [u32]) {
    let kp = kc.div_ceil(2);
    for ir in 0..rows.div_ceil(MR) {
        let panel = &mut out[ir * kp * MR..(ir + 1) * kp * MR];
        for ii in 0..MR {
            let i = ir * MR + ii;
            if i >= rows {
                for q in 0..kp {
                    panel[q * MR + ii] = 0;
                }
                continue;
            }
            let src = &a[i * k + k0..i * k + k0 + kc];
            for q in 0..kp {
                let lo = u32::from(src[2 * q]);
                let hi = src.get(2 * q + 1).map_or(0, |&v| u32::from(v));
                panel[q * MR + ii] = lo | (hi << 16);
            }
        }
    }
}

/// The MR × NR micro-kernel: C[0..rows][0..cols] (+)= A_panel · B_panel over `kp` k-pairs.
///
/// # Safety
/// The CPU must have avx512_bf16 and avx512f. `a` must hold `kp * MR` entries, `b` `kp * 2 *
/// NR`, and `c` must be valid for `rows` rows of stride `ldc`, `cols` columns each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bf16,avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn kernel(
    kp: usize,
    a: *const u32,
    b: *const u16,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    // SAFETY (whole body): the caller guarantees the features and the extents above; every
    // pointer below stays within them. The transmutes reinterpret 512 bits as 32 bf16.
    unsafe {
        for q in 0..kp {
            let b0: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(b.add(q * 2 * NR).cast::<__m512i>()));
            let b1: __m512bh =
                std::mem::transmute(_mm512_loadu_si512(b.add(q * 2 * NR + NR).cast::<__m512i>()));
            let ap = a.add(q * MR);
            for (i, row) in acc.iter_mut().enumerate() {
                let ai: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ap.add(i) as i32));
                row[0] = _mm512_dpbf16_ps(row[0], ai, b0);
                row[1] = _mm512_dpbf16_ps(row[1], ai, b1);
            }
        }
        if rows == MR && cols == NR {
            for (i, row) in acc.iter().enumerate() {
                let p = c.add(i * ldc);
                let (mut v0, mut v1) = (row[0], row[1]);
                if accumulate {
                    v0 = _mm512_add_ps(v0, _mm512_loadu_ps(p));
                    v1 = _mm512_add_ps(v1, _mm512_loadu_ps(p.add(16)));
                }
                _mm512_storeu_ps(p, v0);
                _mm512_storeu_ps(p.add(16), v1);
            }
        } else {
            let mut tile = [0f32; MR * NR];
            for (i, row) in acc.iter().enumerate() {
                _mm512_storeu_ps(tile.as_mut_ptr().add(i * NR), row[0]);
                _mm512_storeu_ps(tile.as_mut_ptr().add(i * NR + 16), row[1]);
            }
            for i in 0..rows {
                for j in 0..cols {
                    let p = c.add(i * ldc + j);
                    let v = tile[i * NR + j];
                    *p = if accumulate { *p + v } else { v };
                }
            }
        }
    }
}

/// Never called: a [`Bf16Kernel`] cannot be made off x86-64.
#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn kernel(
    _kp: usize,
    _a: *const u32,
    _b: *const u16,
    _c: *mut f32,
    _ldc: usize,
    _rows: usize,
    _cols: usize,
    _accumulate: bool,
) {
    unreachable!("no bf16 kernel off x86-64")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn bf16_rounding_is_nearest_even() {
        assert_eq!(to_bf16(1.0), 0x3F80);
        assert_eq!(from_bf16(0x3F80), 1.0);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
        assert_eq!(to_bf16(1.0 + 2f32.powi(-8)), 0x3F80);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties go up to the even one.
        assert_eq!(to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 0x3F82);
        // Just above halfway rounds up.
        assert_eq!(to_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 0x3F81);
        assert_eq!(to_bf16(-2.5), 0xC020);
        assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
        assert_eq!(from_bf16(to_bf16(f32::INFINITY)), f32::INFINITY);
        // Every bf16 value survives the round trip.
        for bits in [0x0001u16, 0x3F81, 0x7F7F, 0x8080, 0xC2F7] {
            assert_eq!(to_bf16(from_bf16(bits)), bits);
        }
    }

    /// Reference: C = A·B in f32 (naive i-k-j loop) on the bf16-rounded inputs.
    fn reference(m: usize, n: usize, k: usize, a: &[u16], b: &[u16]) -> Vec<f32> {
        let mut c = vec![0f32; m * n];
        for i in 0..m {
            for p in 0..k {
                let av = from_bf16(a[i * k + p]);
                for j in 0..n {
                    c[i * n + j] += av * from_bf16(b[p * n + j]);
                }
            }
        }
        c
    }

    fn random_bf16(len: usize, rng: &mut ChaCha8Rng) -> Vec<u16> {
        (0..len)
            .map(|_| to_bf16(rng.random_range(-1.0f32..1.0)))
            .collect()
    }

    /// Shapes that hit every edge: k odd and spanning several KC blocks, m not a multiple of MR
    /// or of the task height, n not a multiple of NR, and tiny ones.
    #[test]
    fn matches_an_f32_reference_on_bf16_rounded_inputs() {
        let kernel = match Bf16Kernel::detect_cpu() {
            Ok(k) => k,
            Err(reason) => {
                // Off a bf16 CPU the kernel must refuse to exist, with the reason to report.
                assert!(reason.to_string().contains("avx512_bf16"), "{reason}");
                return;
            }
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut packed = Vec::new();
        for (m, n, k) in [
            (1, 1, 1),
            (8, 32, 2),
            (3, 5, 7),
            (37, 70, 515),
            (64, 64, 256),
            (130, 33, 300),
            (17, 96, 1),
        ] {
            let a = random_bf16(m * k, &mut rng);
            let b = random_bf16(k * n, &mut rng);
            let mut c = vec![f32::NAN; m * n];
            kernel.gemm(m, n, k, &a, &b, &mut c, &pool, &mut packed);
            let want = reference(m, n, k, &a, &b);
            for i in 0..m {
                for j in 0..n {
                    let magnitude: f32 = (0..k)
                        .map(|p| (from_bf16(a[i * k + p]) * from_bf16(b[p * n + j])).abs())
                        .sum();
                    // Both sides add the same exact products (a bf16×bf16 product has at most
                    // 16 significant bits, so it is exact in f32's 24) in f32, in different
                    // orders. Each recursive f32 sum of k terms is within (k-1)·u·Σ|terms| of
                    // the exact sum (u = 2^-24, Higham §4.2), so the two are within
                    // 2·k·u·Σ|aᵢₚbₚⱼ| of each other; k·ε (ε = 2^-23) is that bound. The
                    // instruction flushes denormals, but no product of these inputs is one.
                    let tol = k as f32 * f32::EPSILON * magnitude;
                    let (got, exp) = (c[i * n + j], want[i * n + j]);
                    assert!(
                        (got - exp).abs() <= tol,
                        "{m}x{n}x{k}: C[{i}][{j}] = {got}, reference {exp}, tolerance {tol:e}"
                    );
                }
            }
        }
    }
}
