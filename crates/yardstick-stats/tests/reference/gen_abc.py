#!/usr/bin/env python3
"""Regenerates abc.json: reference ABC intervals for the mean, computed independently of the
Rust closed form.

    python3 -m venv /tmp/statsvenv && /tmp/statsvenv/bin/pip install numpy scipy mpmath
    /tmp/statsvenv/bin/python crates/yardstick-stats/tests/reference/gen_abc.py

CI does not run this; abc.json is committed. The datasets are those of descriptive.json.

`abcnon` below is a line-by-line port of `abcnon` from Efron & Tibshirani's R package
`bootstrap` (An Introduction to the Bootstrap, 1993, §14.4): it knows nothing about the mean.
It differentiates the resampling-weighted statistic tt(P) = Σ Pᵢxᵢ / Σ Pᵢ numerically
(central differences with step 0.001/n) and evaluates the ABC endpoints through tt itself. It
runs in 60-digit arithmetic (mpmath), so the finite differences carry no rounding noise and the
result is the ABC interval to far better than the 1e-9 the tests ask for.

For comparison only (the tests check it loosely), each case also records scipy's Monte Carlo
BCa interval with 100,000 resamples: ABC approximates BCa with infinitely many resamples.
"""

import json
import pathlib

import mpmath as mp
import numpy as np
import scipy
from scipy import stats

OUT = pathlib.Path(__file__).resolve().parent
LEVELS = [0.8, 0.9, 0.95, 0.99]
DATASETS = [
    "pair",
    "small_ints",
    "normal_50",
    "lognormal_300",
    "lognormal_2000",
    "ties_400",
    "outliers_120",
]

mp.mp.dps = 60


def qnorm(p):
    return mp.sqrt(2) * mp.erfinv(2 * p - 1)


def pnorm(x):
    return mp.ncdf(x)


def tt(p, x):
    return mp.fsum(pi * xi for pi, xi in zip(p, x)) / mp.fsum(p)


def abcnon(x, level):
    """abcnon(x, tt, epsilon = 0.001, alpha) of the R package bootstrap, for both tails."""
    x = [mp.mpf(v) for v in x]
    n = len(x)
    ep = mp.mpf("0.001") / n
    p0 = [mp.mpf(1) / n] * n
    t0 = tt(p0, x)
    t_dot, t_ddot = [], []
    for i in range(n):
        di = [(1 if j == i else 0) - p0[j] for j in range(n)]
        tp = tt([p0[j] + ep * di[j] for j in range(n)], x)
        tm = tt([p0[j] - ep * di[j] for j in range(n)], x)
        t_dot.append((tp - tm) / (2 * ep))
        t_ddot.append((tp - 2 * t0 + tm) / ep**2)
    sighat = mp.sqrt(mp.fsum(t * t for t in t_dot)) / n
    a = mp.fsum(t**3 for t in t_dot) / (6 * n**3 * sighat**3)
    delta = [t / (n**2 * sighat) for t in t_dot]
    cq = (
        tt([p0[j] + ep * delta[j] for j in range(n)], x)
        - 2 * t0
        + tt([p0[j] - ep * delta[j] for j in range(n)], x)
    ) / (2 * sighat * ep**2)
    bhat = mp.fsum(t_ddot) / (2 * n**2)
    curv = bhat / sighat - cq
    z0 = qnorm(2 * pnorm(a) * pnorm(-curv))
    ends = []
    for alpha in [(1 - mp.mpf(level)) / 2, (1 + mp.mpf(level)) / 2]:
        z = z0 + qnorm(alpha)
        za = z / (1 - a * z) ** 2
        ends.append(float(tt([p0[j] + za * delta[j] for j in range(n)], x)))
    return {
        "abc": ends,
        "z0": float(z0),
        "acceleration": float(a),
        "sigma": float(sighat),
        "curvature": float(curv),
    }


def scipy_bca(x, level):
    res = stats.bootstrap(
        (np.asarray(x),),
        np.mean,
        confidence_level=level,
        n_resamples=100_000,
        batch=2_000,
        method="BCa",
        random_state=np.random.default_rng(7),
    )
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def main():
    data = json.loads((OUT / "descriptive.json").read_text())["cases"]
    cases = []
    for name in DATASETS:
        x = data[name]["data"]
        for level in LEVELS:
            case = {"data": name, "level": level, **abcnon(x, level)}
            case["scipy_bca_100k"] = scipy_bca(x, level)
            cases.append(case)
            print(name, level, case["abc"], case["scipy_bca_100k"])
    out = {
        "generator": {
            "mpmath": mp.__version__,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "cases": cases,
    }
    (OUT / "abc.json").write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
