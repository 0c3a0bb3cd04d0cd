//! FLOPs per training step and peak FLOP/s, the two halves of MFU.
//!
//! MFU (model FLOPs utilisation, Chowdhery et al. 2022, "PaLM", appendix B) is the FLOP/s the
//! *model* needs at the observed throughput divided by the devices' peak: recomputation,
//! padding and framework overhead do not count as useful work. Two estimators:
//!
//! * **6·N·T** (Kaplan et al. 2020): each token costs 2N FLOPs forward and 4N backward, where N
//!   is the number of parameters that take part in matrix multiplies.
//! * **transformer-aware** (PaLM): 6·N·T plus the attention score and value products, which
//!   have no parameters: 12·L·H·S per token for L layers, hidden size H and sequence length S
//!   (forward 2 matmuls × 2·S·H FLOPs per token per layer, times 3 for forward + backward).
//!
//! For a standard decoder whose N counts the attention and MLP weights and the output head (not
//! the embedding lookup), the transformer-aware figure is exactly the matmul FLOP count of the
//! step; `yardstick bench train` checks its own count against it.

use serde::Serialize;

/// 6·N·T: training FLOPs for `tokens` tokens through a model of `parameters` parameters.
pub fn six_n_t(parameters: f64, tokens: f64) -> f64 {
    6.0 * parameters * tokens
}

/// Attention FLOPs of training on `tokens` tokens (12·L·H·S per token; no parameters involved).
pub fn attention_flops(layers: u32, hidden: u32, sequence_length: u32, tokens: f64) -> f64 {
    12.0 * f64::from(layers) * f64::from(hidden) * f64::from(sequence_length) * tokens
}

/// The transformer-aware estimate: 6·N·T + 12·L·H·S·T.
pub fn transformer_flops(
    parameters: f64,
    layers: u32,
    hidden: u32,
    sequence_length: u32,
    tokens: f64,
) -> f64 {
    six_n_t(parameters, tokens) + attention_flops(layers, hidden, sequence_length, tokens)
}

/// Estimated memory traffic of one training step, in bytes, for the roofline: what the step
/// must at least move between the compute units and main memory when nothing stays in cache.
///
/// * **parameters** (mixed-precision AdamW, states in fp32): weights read in the forward and
///   again in the backward pass and their gradients written (3·N·b), then the optimizer reads
///   weight, gradient, first and second moment and writes weight and both moments (7·N·4);
/// * **activations** (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
///   Transformer Models", eq. 1): a layer stores s·b·h·(34 + 5·a·s/h) bytes of 16-bit
///   activations for s·b tokens, i.e. (34·H + 5·A·S)·(b/2) bytes per token and layer, written in
///   the forward and read in the backward pass (×2). Without the head count the 5·A·S score term
///   is left out (as with fused attention, which never stores the scores).
///
/// `bytes_per_element` is b (4 for fp32, 2 for bf16/fp16). An estimate to place a workload on
/// the roofline, not a measurement: caches make the real traffic lower for small models.
pub fn training_bytes(
    parameters: f64,
    layers: u32,
    hidden: u32,
    sequence_length: u32,
    heads: Option<u32>,
    tokens: f64,
    bytes_per_element: f64,
) -> f64 {
    let b = bytes_per_element;
    let params = parameters * (3.0 * b + 7.0 * 4.0);
    let score = heads.map_or(0.0, |a| 5.0 * f64::from(a) * f64::from(sequence_length));
    let per_token_layer = (34.0 * f64::from(hidden) + score) * (b / 2.0);
    params + 2.0 * tokens * f64::from(layers) * per_token_layer
}

/// Model FLOP/s utilisation: `flops` done in `seconds` on `devices` devices of `peak` FLOP/s.
pub fn mfu(flops: f64, seconds: f64, devices: u32, peak_flops_per_device: f64) -> f64 {
    flops / seconds / (f64::from(devices.max(1)) * peak_flops_per_device)
}

/// One row of the peak table: dense (no structured sparsity) vendor datasheet figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PeakEntry {
    /// Device name as matched (lower case).
    pub device: &'static str,
    /// Data type (`bf16`, `fp16`, `fp8`, `tf32`, `fp32`).
    pub dtype: &'static str,
    /// Peak FLOP/s per device.
    pub flops: f64,
}

/// Dense peak FLOP/s per device and data type, from vendor datasheets. Order matters: more
/// specific names (`h100 pcie`) come before the general ones (`h100`).
pub const PEAK_TABLE: &[PeakEntry] = &[
    e("h100 pcie", "fp8", 1513e12),
    e("h100 pcie", "bf16", 756e12),
    e("h100 pcie", "fp16", 756e12),
    e("h100 pcie", "tf32", 378e12),
    e("h100 pcie", "fp32", 51.2e12),
    e("h100", "fp8", 1979e12),
    e("h100", "bf16", 989.4e12),
    e("h100", "fp16", 989.4e12),
    e("h100", "tf32", 494.7e12),
    e("h100", "fp32", 66.9e12),
    e("h200", "fp8", 1979e12),
    e("h200", "bf16", 989.4e12),
    e("h200", "fp16", 989.4e12),
    e("h200", "tf32", 494.7e12),
    e("h200", "fp32", 66.9e12),
    e("b200", "fp8", 4500e12),
    e("b200", "bf16", 2250e12),
    e("b200", "fp16", 2250e12),
    e("a100", "bf16", 312e12),
    e("a100", "fp16", 312e12),
    e("a100", "tf32", 156e12),
    e("a100", "fp32", 19.5e12),
    e("a10g", "bf16", 70e12),
    e("a10g", "fp16", 70e12),
    e("a10g", "fp32", 31.2e12),
    e("a10", "bf16", 125e12),
    e("a10", "fp16", 125e12),
    e("a10", "tf32", 62.5e12),
    e("a10", "fp32", 31.2e12),
    e("l40s", "fp8", 733e12),
    e("l40s", "bf16", 362e12),
    e("l40s", "fp16", 362e12),
    e("l40s", "tf32", 183e12),
    e("l40s", "fp32", 91.6e12),
    e("l4", "fp8", 242e12),
    e("l4", "bf16", 121e12),
    e("l4", "fp16", 121e12),
    e("l4", "tf32", 60e12),
    e("l4", "fp32", 30.3e12),
    e("v100", "fp16", 125e12),
    e("v100", "fp32", 15.7e12),
    e("t4", "fp16", 65e12),
    e("t4", "fp32", 8.1e12),
    e("mi300x", "fp8", 2615e12),
    e("mi300x", "bf16", 1307e12),
    e("mi300x", "fp16", 1307e12),
    e("mi300x", "tf32", 654e12),
    e("mi300x", "fp32", 163.4e12),
];

const fn e(device: &'static str, dtype: &'static str, flops: f64) -> PeakEntry {
    PeakEntry {
        device,
        dtype,
        flops,
    }
}

/// Looks up the peak of a device name (e.g. `NVIDIA H100 80GB HBM3`, `a100`) for a data type
/// (`bf16`, `fp16`, `fp8`, `tf32`, `fp32`; `mixed` reads as bf16). `None` when unknown: pass the
/// figure explicitly then.
pub fn peak_flops(device: &str, dtype: &str) -> Option<PeakEntry> {
    let d = device.to_ascii_lowercase().replace(['-', '_'], " ");
    let dtype = match dtype.to_ascii_lowercase().as_str() {
        "mixed" | "amp" => "bf16".to_string(),
        "float32" | "f32" => "fp32".to_string(),
        "bfloat16" => "bf16".to_string(),
        "float16" | "half" | "f16" => "fp16".to_string(),
        other => other.to_string(),
    };
    PEAK_TABLE
        .iter()
        .find(|p| p.dtype == dtype && contains_word(&d, p.device))
        .copied()
}

/// Whether `name` contains `needle` as whole words (so `a10` does not match `a100`).
fn contains_word(name: &str, needle: &str) -> bool {
    let words: Vec<&str> = name.split_whitespace().collect();
    let parts: Vec<&str> = needle.split_whitespace().collect();
    words.windows(parts.len()).any(|w| w == parts.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimators_by_hand() {
        // 7e9 parameters, 4096 tokens: 6 * 7e9 * 4096 = 1.72032e14.
        assert_eq!(six_n_t(7e9, 4096.0), 1.72032e14);
        // 32 layers, hidden 4096, seq 2048, 4096 tokens: 12*32*4096*2048*4096 = 1.3194139533312e13.
        assert_eq!(
            attention_flops(32, 4096, 2048, 4096.0),
            13_194_139_533_312.0
        );
        assert_eq!(
            transformer_flops(7e9, 32, 4096, 2048, 4096.0),
            1.72032e14 + 13_194_139_533_312.0
        );
    }

    #[test]
    fn training_bytes_by_hand() {
        // N = 1e6 fp32: 1e6 * (12 + 28) = 4e7 bytes of parameter traffic.
        // 2 layers, H 64, S 32, 4 heads, 256 tokens: per token and layer (34*64 + 5*4*32) * 2 =
        // 5632 bytes; x 2 (write + read) x 256 tokens x 2 layers = 5,767,168.
        let b = training_bytes(1e6, 2, 64, 32, Some(4), 256.0, 4.0);
        assert_eq!(b, 4e7 + 5_767_168.0);
        // Without heads: the score term is left out: 34*64*2*2*256*2 = 4,456,448.
        assert_eq!(
            training_bytes(1e6, 2, 64, 32, None, 256.0, 4.0),
            4e7 + 4_456_448.0
        );
    }

    #[test]
    fn mfu_by_hand() {
        // 1.5e15 FLOPs in 1 s on 8 devices of 312 TFLOP/s: 1.5e15 / 2.496e15 = 0.600961...
        let m = mfu(1.5e15, 1.0, 8, 312e12);
        assert!((m - 0.600_961_538_461_538_5).abs() < 1e-12, "{m}");
        // 6*N*T for a 1.3e9 model at 10,000 tokens/s on one A100 (bf16): 7.8e13 / 3.12e14 = 0.25.
        let m = mfu(six_n_t(1.3e9, 10_000.0), 1.0, 1, 312e12);
        assert!((m - 0.25).abs() < 1e-12, "{m}");
    }

    #[test]
    fn peak_lookup_matches_whole_words() {
        assert_eq!(
            peak_flops("NVIDIA H100 80GB HBM3", "bf16").unwrap().flops,
            989.4e12
        );
        assert_eq!(
            peak_flops("NVIDIA H100 PCIe", "bf16").unwrap().flops,
            756e12
        );
        assert_eq!(
            peak_flops("NVIDIA A100-SXM4-80GB", "mixed").unwrap().flops,
            312e12
        );
        assert_eq!(peak_flops("NVIDIA A10", "bf16").unwrap().flops, 125e12);
        assert_eq!(peak_flops("a10g", "fp32").unwrap().flops, 31.2e12);
        assert!(peak_flops("Some CPU", "fp32").is_none());
    }
}
