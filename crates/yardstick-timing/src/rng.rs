//! A tiny seeded generator (SplitMix64) and the few distributions the load generator and the
//! simulator need.
//! Hand-written so a seed means the same plan on every platform and every version, forever.

/// SplitMix64 with uniform, normal, exponential and gamma draws.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Generator for stream `stream` of the run seeded with `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut r = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [lo, hi] (inclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Exponential with mean 1.
    pub fn exp1(&mut self) -> f64 {
        -(1.0 - self.unit()).ln()
    }

    /// Gamma(shape, scale 1) by Marsaglia–Tsang (with the boost for shape < 1).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let u = 1.0 - self.unit();
            return self.gamma(shape + 1.0) * u.powf(1.0 / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.unit();
            if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_var(xs: &[f64]) -> (f64, f64) {
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        (m, v)
    }

    #[test]
    fn distributions_have_their_moments() {
        let mut r = Rng::new(42, 0);
        let n: Vec<f64> = (0..200_000).map(|_| r.normal()).collect();
        let (m, v) = mean_var(&n);
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.02, "normal {m} {v}");
        let e: Vec<f64> = (0..200_000).map(|_| r.exp1()).collect();
        let (m, v) = mean_var(&e);
        assert!(
            (m - 1.0).abs() < 0.01 && (v - 1.0).abs() < 0.03,
            "exp {m} {v}"
        );
        for shape in [0.25, 1.0, 4.0] {
            let g: Vec<f64> = (0..200_000).map(|_| r.gamma(shape)).collect();
            let (m, v) = mean_var(&g);
            assert!(
                (m - shape).abs() < 0.02 * shape.max(1.0),
                "gamma {shape}: mean {m}"
            );
            assert!(
                (v - shape).abs() < 0.05 * shape.max(1.0),
                "gamma {shape}: var {v}"
            );
        }
        let mut a = Rng::new(7, 3);
        let mut b = Rng::new(7, 3);
        assert_eq!(a.next_u64(), b.next_u64());
        assert!((0..1000).all(|_| (5..=9).contains(&a.range(5, 9))));
    }
}
