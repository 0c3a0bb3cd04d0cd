//! A small decoder-only transformer (GPT-2 shape: pre-norm blocks, learned positions, GELU MLP,
//! untied output head) built from differentiable candle ops, with seeded initialisation.
//!
//! Linear layers have no bias, so every parameter of a block is in a matrix multiply and the
//! FLOP count of a step is exactly [`Shape::flops_per_step`]. Layer norm is written out from
//! elementary ops because candle's fused layer norm has no backward pass.

use candle_core::{D, DType, Device, Result, Tensor, Var};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The dimensions of the model and of one training sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Shape {
    /// Vocabulary size.
    pub vocab: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Transformer blocks.
    pub layers: usize,
    /// Attention heads (divides `hidden`).
    pub heads: usize,
    /// Sequence length.
    pub seq_len: usize,
}

impl Shape {
    /// Parameters in matrix multiplies: 12·L·H² for the blocks (QKV 3H², output H², MLP 8H²)
    /// plus V·H for the output head. This is N of 6·N·T.
    pub fn matmul_params(&self) -> u64 {
        let (l, h, v) = (self.layers as u64, self.hidden as u64, self.vocab as u64);
        12 * l * h * h + v * h
    }

    /// Every parameter: the above plus token and position embeddings and layer-norm scales and
    /// shifts.
    pub fn total_params(&self) -> u64 {
        let (l, h, v, s) = (
            self.layers as u64,
            self.hidden as u64,
            self.vocab as u64,
            self.seq_len as u64,
        );
        self.matmul_params() + v * h + s * h + (2 * l + 1) * 2 * h
    }

    /// Matrix-multiply FLOPs of one training step (forward + backward, backward = 2× forward)
    /// on `batch` sequences, counted operation by operation:
    /// per token and layer, QKV 2·3H², attention scores 2·S·H, weighted values 2·S·H, output
    /// projection 2·H², MLP 2·8H²; per token, the head 2·H·V.
    pub fn flops_per_step(&self, batch: usize) -> f64 {
        let (l, h, v, s) = (
            self.layers as f64,
            self.hidden as f64,
            self.vocab as f64,
            self.seq_len as f64,
        );
        let per_token_layer =
            2.0 * 3.0 * h * h + 2.0 * s * h + 2.0 * s * h + 2.0 * h * h + 2.0 * 8.0 * h * h;
        let forward_per_token = l * per_token_layer + 2.0 * h * v;
        3.0 * forward_per_token * (batch as f64) * s
    }
}

struct Block {
    ln1: (Var, Var),
    qkv: Var,
    out: Var,
    ln2: (Var, Var),
    fc: Var,
    proj: Var,
}

/// The model and its parameters.
pub struct Model {
    shape: Shape,
    tok: Var,
    pos: Var,
    blocks: Vec<Block>,
    ln_f: (Var, Var),
    head: Var,
    mask: Tensor,
}

fn normal(rng: &mut ChaCha8Rng, dims: &[usize], std: f64, dev: &Device) -> Result<Var> {
    let n: usize = dims.iter().product();
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        // Box–Muller: two uniforms to two standard normals.
        let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = rng.random();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * u2;
        v.push((r * t.cos() * std) as f32);
        v.push((r * t.sin() * std) as f32);
    }
    v.truncate(n);
    Var::from_tensor(&Tensor::from_vec(v, dims, dev)?)
}

fn norm_params(h: usize, dev: &Device) -> Result<(Var, Var)> {
    Ok((
        Var::ones(h, DType::F32, dev)?,
        Var::zeros(h, DType::F32, dev)?,
    ))
}

fn layer_norm(x: &Tensor, (w, b): &(Var, Var)) -> Result<Tensor> {
    let mean = x.mean_keepdim(D::Minus1)?;
    let xc = x.broadcast_sub(&mean)?;
    let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
    let xn = xc.broadcast_div(&(var + 1e-5)?.sqrt()?)?;
    xn.broadcast_mul(w.as_tensor())?
        .broadcast_add(b.as_tensor())
}

/// `x` [rows, in] times `w` [out, in] transposed: one 2-D GEMM.
fn linear(x: &Tensor, w: &Var) -> Result<Tensor> {
    x.matmul(&w.as_tensor().t()?)
}

impl Model {
    /// A model with weights drawn from N(0, 0.02²) (residual projections scaled by 1/√(2L), as
    /// GPT-2) by a ChaCha8 generator seeded with `seed`.
    pub fn new(shape: Shape, seed: u64, dev: &Device) -> Result<Self> {
        let Shape {
            vocab: v,
            hidden: h,
            layers: l,
            seq_len: s,
            ..
        } = shape;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let resid = 0.02 / ((2 * l) as f64).sqrt();
        let mut blocks = Vec::with_capacity(l);
        let tok = normal(&mut rng, &[v, h], 0.02, dev)?;
        let pos = normal(&mut rng, &[s, h], 0.01, dev)?;
        for _ in 0..l {
            blocks.push(Block {
                ln1: norm_params(h, dev)?,
                qkv: normal(&mut rng, &[3 * h, h], 0.02, dev)?,
                out: normal(&mut rng, &[h, h], resid, dev)?,
                ln2: norm_params(h, dev)?,
                fc: normal(&mut rng, &[4 * h, h], 0.02, dev)?,
                proj: normal(&mut rng, &[h, 4 * h], resid, dev)?,
            });
        }
        let head = normal(&mut rng, &[v, h], 0.02, dev)?;
        // Additive causal mask: 0 on and below the diagonal, a large negative number above.
        let m: Vec<f32> = (0..s * s)
            .map(|i| if i % s > i / s { -1e9 } else { 0.0 })
            .collect();
        let mask = Tensor::from_vec(m, (s, s), dev)?;
        Ok(Model {
            shape,
            tok,
            pos,
            blocks,
            ln_f: norm_params(h, dev)?,
            head,
            mask,
        })
    }

    /// Every trainable variable (for the optimizer).
    pub fn vars(&self) -> Vec<Var> {
        let mut v = vec![self.tok.clone(), self.pos.clone()];
        for b in &self.blocks {
            v.extend([
                b.ln1.0.clone(),
                b.ln1.1.clone(),
                b.qkv.clone(),
                b.out.clone(),
                b.ln2.0.clone(),
                b.ln2.1.clone(),
                b.fc.clone(),
                b.proj.clone(),
            ]);
        }
        v.extend([self.ln_f.0.clone(), self.ln_f.1.clone(), self.head.clone()]);
        v
    }

    /// Logits [batch·seq, vocab] for token ids [batch, seq] (u32).
    pub fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let (b, s) = ids.dims2()?;
        let Shape {
            hidden: h, heads, ..
        } = self.shape;
        let hd = h / heads;
        let x = self.tok.as_tensor().embedding(&ids.flatten_all()?)?;
        let x = x.reshape((b, s, h))?.broadcast_add(self.pos.as_tensor())?;
        let mut x = x.reshape((b * s, h))?;
        let scale = 1.0 / (hd as f64).sqrt();
        for blk in &self.blocks {
            let a = layer_norm(&x, &blk.ln1)?;
            let qkv = linear(&a, &blk.qkv)?.reshape((b, s, 3, heads, hd))?;
            let split = |i: usize| -> Result<Tensor> {
                qkv.narrow(2, i, 1)?
                    .squeeze(2)?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let (q, k, v) = (split(0)?, split(1)?, split(2)?);
            let att = (q.matmul(&k.t()?.contiguous()?)? * scale)?;
            let att = att.broadcast_add(&self.mask)?;
            let att = candle_nn::ops::softmax(&att, D::Minus1)?;
            let y = att.matmul(&v)?.transpose(1, 2)?.contiguous()?;
            let y = y.reshape((b * s, h))?;
            x = (x + linear(&y, &blk.out)?)?;
            let m = layer_norm(&x, &blk.ln2)?;
            let m = linear(&linear(&m, &blk.fc)?.gelu()?, &blk.proj)?;
            x = (x + m)?;
        }
        linear(&layer_norm(&x, &self.ln_f)?, &self.head)
    }
}
