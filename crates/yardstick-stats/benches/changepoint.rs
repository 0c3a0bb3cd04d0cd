//! The change-point detector's error rates on simulated histories (`cargo bench -p
//! yardstick-stats --bench changepoint`, or `scripts/bench-changepoints.sh`): false alarms on
//! A/A histories (no change: the share that flag any), and detection of a step of 1.5 standard
//! deviations (the share that flag a change, and the share that flag it at the right run).
//! Normal noise; the step lands at a run drawn uniformly from the middle of the history.
//!
//! Environment: HISTORIES (default 200), RUNS (30), STEP (1.5, in standard deviations).

use rand::{Rng, SeedableRng};
use yardstick_stats::changepoint::{Settings, detect};

fn normal(rng: &mut impl Rng) -> f64 {
    // Box-Muller.
    let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let histories: usize = env("HISTORIES", 200);
    let runs: usize = env("RUNS", 30);
    let step: f64 = env("STEP", 1.5);
    let s = Settings {
        exponent: env("EXPONENT", Settings::default().exponent),
        alpha: env("ALPHA", Settings::default().alpha),
        ..Settings::default()
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(20261128);
    let started = std::time::Instant::now();
    let mut false_alarms = 0;
    for h in 0..histories {
        let x: Vec<f64> = (0..runs).map(|_| 100.0 + 5.0 * normal(&mut rng)).collect();
        let c = detect(
            &x,
            &Settings {
                seed: h as u64,
                ..s
            },
        )
        .expect("finite");
        if !c.is_empty() {
            false_alarms += 1;
        }
    }
    let (mut found, mut exact, mut within_one) = (0, 0, 0);
    for h in 0..histories {
        let at = rng.random_range(runs / 4..runs - runs / 4);
        let x: Vec<f64> = (0..runs)
            .map(|i| 100.0 + 5.0 * normal(&mut rng) + if i >= at { 5.0 * step } else { 0.0 })
            .collect();
        let c = detect(
            &x,
            &Settings {
                seed: h as u64,
                ..s
            },
        )
        .expect("finite");
        if !c.is_empty() {
            found += 1;
        }
        if c.iter().any(|c| c.index == at) {
            exact += 1;
        }
        if c.iter().any(|c| c.index.abs_diff(at) <= 1) {
            within_one += 1;
        }
    }
    let pct = |k: usize| 100.0 * k as f64 / histories as f64;
    println!(
        "change points (E-divisive, exponent {}, alpha {}, {} permutations, min segment {}): {histories} histories of {runs} runs, {:.1} s",
        s.exponent,
        s.alpha,
        s.permutations,
        s.min_size,
        started.elapsed().as_secs_f64()
    );
    println!(
        "  A/A (no change):         {:5.1} % flag a change   (target: at most 5 %)",
        pct(false_alarms)
    );
    println!(
        "  step of {step} sd:          {:5.1} % flag a change   (target: at least 90 %)",
        pct(found)
    );
    println!(
        "                           {:5.1} % at the right run (target: at least 80 %); {:.1} % within one run",
        pct(exact),
        pct(within_one)
    );
}
