#!/usr/bin/env python3
"""Regenerates the reference fixtures the Rust tests compare against (numpy/scipy).

    python3 -m venv /tmp/statsvenv && /tmp/statsvenv/bin/pip install numpy scipy statsmodels
    /tmp/statsvenv/bin/python crates/yardstick-stats/tests/reference/gen.py

CI does not run this; the JSON files it writes are committed. Where numpy/scipy have the method,
the expected values come from them; where they do not (order-statistic ranks, MSER-5, LoadGen's
early-stopping search, Holm), this script implements the method independently on top of scipy's
distributions, straight from the published definition.
"""

import json
import pathlib

import numpy as np
import scipy
from scipy import special, stats
from scipy.stats._resampling import _bca_interval

OUT = pathlib.Path(__file__).resolve().parent
QS = [0.0, 0.01, 0.1, 0.25, 1 / 3, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0]


def datasets():
    rng = np.random.default_rng(20240601)
    return {
        "single": [42.5],
        "pair": [3.0, -1.0],
        "small_ints": [5.0, 1.0, 4.0, 1.0, 3.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0],
        "normal_50": rng.normal(100.0, 15.0, 50).tolist(),
        "lognormal_300": rng.lognormal(3.9, 0.5, 300).tolist(),
        "lognormal_2000": rng.lognormal(3.0, 0.8, 2000).tolist(),
        "ties_400": rng.integers(0, 20, 400).astype(float).tolist(),
        "outliers_120": np.concatenate(
            [rng.normal(10.0, 1.0, 117), [25.0, -8.0, 14.5]]
        ).tolist(),
        "constant_10": [7.0] * 10,
    }


def none_if_nan(x):
    x = float(x)
    return None if not np.isfinite(x) else x


def descriptive(data):
    out = {}
    for name, x in data.items():
        a = np.asarray(x)
        n = len(a)
        sd = float(np.std(a, ddof=1)) if n >= 2 else None
        mean = float(np.mean(a))
        skew = float(stats.skew(a, bias=False)) if n >= 3 and np.ptp(a) > 0 else None
        out[name] = {
            "data": x,
            "n": n,
            "mean": mean,
            "stddev": sd,
            "min": float(a.min()),
            "max": float(a.max()),
            "median": float(np.median(a)),
            "cv": (sd / mean) if sd is not None and mean != 0 else None,
            "mad": float(stats.median_abs_deviation(a)),
            "skewness": skew,
            "quantiles": [[q, float(np.quantile(a, q))] for q in QS],
        }
    return out


def quantile_ci_ranks(n, q, level):
    """Order-statistic CI ranks: equal-tailed where possible, see percentile.rs."""
    needed = min_n(q, level)
    if n < needed:
        return {"needed": needed}
    cdf = lambda r: 0.0 if r == 0 else float(stats.binom.cdf(r - 1, n, q))  # F(r-1)
    alpha = 1 - level
    cands = [r for r in range(1, n + 1) if cdf(r) <= alpha / 2]
    lo = max(cands) if cands else 1
    while lo > 1 and cdf(n) - cdf(lo) < level:
        lo -= 1
    ups = [r for r in range(lo + 1, n + 1) if cdf(r) - cdf(lo) >= level]
    up = min(ups) if ups else n
    h = (n - 1) * q
    lo = min(lo, int(np.floor(h)) + 1)
    up = max(up, min(int(np.ceil(h)) + 1, n))
    return {"lower_rank": lo, "upper_rank": up, "coverage": cdf(up) - cdf(lo), "needed": needed}


def min_n(q, level):
    n = 1
    while 1 - q**n - (1 - q) ** n < level:
        n += 1
    return n


def quantile_cis():
    cases = []
    for n in [5, 6, 20, 59, 100, 298, 299, 300, 1000]:
        for q in [0.5, 0.9, 0.95, 0.99]:
            for level in [0.9, 0.95, 0.99]:
                cases.append({"n": n, "q": q, "level": level, **quantile_ci_ranks(n, q, level)})
    return cases


def hypothesis_tests(data):
    rng = np.random.default_rng(7)
    pairs = {
        "exact_5_7": (rng.normal(0, 1, 5), rng.normal(0.8, 1, 7)),
        "exact_8_40": (rng.normal(0, 1, 8), rng.normal(0.3, 1, 40)),
        "exact_3_3000": (rng.normal(1, 1, 3), rng.normal(0, 1, 3000)),
        "ties_small": (np.array([1.0, 2, 2, 3, 4]), np.array([2.0, 3, 3, 5, 6, 6])),
        "asym_300_400": (rng.lognormal(3.0, 0.5, 300), rng.lognormal(3.05, 0.5, 400)),
        "ties_int_200_250": (rng.integers(0, 10, 200).astype(float), rng.integers(1, 11, 250).astype(float)),
        "identical_9": (np.arange(9.0), np.arange(9.0)),
    }
    two_sample = {}
    for name, (a, b) in pairs.items():
        mw = stats.mannwhitneyu(a, b, alternative="two-sided", method="auto")
        w = stats.ttest_ind(a, b, equal_var=False)
        d = np.sign(b[:, None] - a[None, :]).mean()
        pooled = np.sqrt(((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2))
        two_sample[name] = {
            "a": a.tolist(),
            "b": b.tolist(),
            "mwu_u": float(mw.statistic),
            "mwu_p": float(mw.pvalue),
            "welch_t": float(w.statistic),
            "welch_df": float(w.df),
            "welch_p": float(w.pvalue),
            "cliffs_delta": float(d),
            "cohens_d": float((b.mean() - a.mean()) / pooled),
        }
    paired_cases = {
        "exact_20": (rng.normal(10, 1, 20), None),
        "zeros_10": (np.array([1.5, 2.0, 3.1, 4.0, 5.2, 6.0, 7.3, 8.0, 9.1, 10.0]),
                     np.array([1.5, 1.0, 3.4, 4.0, 4.1, 6.5, 7.0, 9.5, 8.0, 9.0])),
        "ties_12": (np.array([3.0, 5, 2, 8, 7, 6, 4, 9, 1, 5, 6, 2]), np.array([1.0, 3, 4, 6, 5, 8, 2, 7, 3, 3, 4, 4])),
        "ties_40": (rng.integers(0, 8, 40).astype(float), rng.integers(1, 9, 40).astype(float)),
        "large_80": (rng.normal(5, 1, 80), None),
    }
    paired = {}
    for name, (a, b) in paired_cases.items():
        if b is None:
            b = a + rng.normal(0.2, 0.5, len(a))
        wx = stats.wilcoxon(a, b)
        pt = stats.ttest_rel(a, b)
        paired[name] = {
            "a": a.tolist(),
            "b": b.tolist(),
            "wilcoxon_statistic": float(wx.statistic),
            "wilcoxon_p": float(wx.pvalue),
            "paired_t": float(pt.statistic),
            "paired_p": float(pt.pvalue),
        }
    mcnemar = mcnemar_cases()
    holm_cases = [[0.01, 0.04, 0.03, 0.5], [0.2, 0.001, 0.02, 0.02, 0.9, 0.04], [0.5]]
    holm = []
    for ps in holm_cases:
        p = np.asarray(ps)
        order = np.argsort(p, kind="stable")
        m = len(p)
        adj_sorted = np.minimum(np.maximum.accumulate(p[order] * np.arange(m, 0, -1)), 1.0)
        adj = np.empty(m)
        adj[order] = adj_sorted
        holm.append({"p": ps, "adjusted": adj.tolist()})
    return {"two_sample": two_sample, "paired": paired, "mcnemar": mcnemar, "holm": holm}


def mcnemar_cases():
    """McNemar from statsmodels itself (exact binomial, and chi-square with Edwards' correction),
    including ties b = c, where the corrected statistic is 1/(b + c), not 0. No discordant pair
    (0, 0) is p = 1 by yardstick's definition (statsmodels divides by zero there)."""
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    out = [{"b": 0, "c": 0, "exact_p": 1.0, "chi2": 0.0, "chi2_p": 1.0, "note": "no discordant pair"}]
    for b, c in [(3, 9), (10, 2), (12, 12), (5, 5), (1, 1), (1, 0), (30, 45), (100, 80), (5, 40)]:
        table = [[0, b], [c, 0]]
        exact = sm_mcnemar(table, exact=True)
        chi = sm_mcnemar(table, exact=False, correction=True)
        out.append({"b": b, "c": c, "exact_p": float(exact.pvalue), "chi2": float(chi.statistic),
                    "chi2_p": float(chi.pvalue)})
    return out


def bca_cases(data):
    rng = np.random.default_rng(99)
    cases = []
    stats_fns = {
        "mean": lambda x, axis=-1: np.mean(x, axis=axis),
        "median": lambda x, axis=-1: np.median(x, axis=axis),
        "q0.9": lambda x, axis=-1: np.quantile(x, 0.9, axis=axis),
    }
    for dname in ["normal_50", "lognormal_300", "ties_400"]:
        x = np.asarray(data[dname])
        for sname, fn in stats_fns.items():
            idx = rng.integers(0, len(x), (500, len(x)))
            theta_b = fn(x[idx], axis=-1)
            for level in [0.9, 0.95]:
                with np.errstate(invalid="ignore"):
                    a1, a2, a_hat = _bca_interval((x,), fn, axis=-1, alpha=(1 - level) / 2,
                                                  theta_hat_b=theta_b, batch=None, xp=np)
                if not np.isfinite(a_hat):
                    continue  # constant jackknife (scipy: NaN; yardstick: acceleration 0)
                lo, hi = np.percentile(theta_b, [float(a1) * 100, float(a2) * 100])
                plo, phi = np.percentile(theta_b, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
                cases.append({"data": dname, "statistic": sname, "level": level,
                              "estimate": float(fn(x)), "replicates": theta_b.tolist(),
                              "acceleration": float(a_hat), "bca": [float(lo), float(hi)],
                              "percentile": [float(plo), float(phi)]})
    # Ratio of medians of two samples (B over A), resampled independently.
    a = np.asarray(data["lognormal_300"])
    b = np.asarray(data["normal_50"])
    ratio = lambda a, b, axis=-1: np.median(b, axis=axis) / np.median(a, axis=axis)
    ia = rng.integers(0, len(a), (500, len(a)))
    ib = rng.integers(0, len(b), (500, len(b)))
    theta_b = ratio(a[ia], b[ib])
    a1, a2, a_hat = _bca_interval((a, b), ratio, axis=-1, alpha=0.025, theta_hat_b=theta_b,
                                  batch=None, xp=np)
    lo, hi = np.percentile(theta_b, [float(a1) * 100, float(a2) * 100])
    ratio_case = {"a": "lognormal_300", "b": "normal_50", "level": 0.95,
                  "estimate": float(ratio(a, b)), "replicates": theta_b.tolist(),
                  "acceleration": float(a_hat), "bca": [float(lo), float(hi)]}
    return {"one_sample": cases, "ratio_of_medians": ratio_case}


def min_passing(t, p, c, d=0.0):
    """LoadGen's MinPassingQueriesFinder: least h with I_{p-d}(h, t+1) < 1 - c."""
    passes = lambda h: special.betainc(h, t + 1, p - d) < 1 - c
    hi = 1
    while not passes(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if passes(mid):
            hi = mid
        else:
            lo = mid
    return hi


def early_stopping(data):
    c = 0.99
    server = []
    for n, t, p in [(1000, 0, 0.99), (1000, 3, 0.99), (5000, 30, 0.99), (5000, 60, 0.99),
                    (700, 1, 0.9), (270000, 2500, 0.99), (64, 10, 0.9)]:
        h = min_passing(t, p, c)
        server.append({"n": n, "t": t, "p": p, "min_passing": int(h), "required": int(h + t),
                       "passed": bool(n >= h + t),
                       "max_claimable": float(stats.beta.ppf(1 - c, n - t, t + 1)) if t < n else None})
    single = []
    for name, p in [("lognormal_2000", 0.9), ("lognormal_2000", 0.99), ("lognormal_300", 0.9)]:
        x = np.sort(np.asarray(data[name]))
        n = len(x)
        # A straight port of LoadGen's SingleStream loop (results.cc).
        h_min = min_passing(1, p, c)
        if n < h_min + 1:
            single.append({"data": name, "p": p, "needed": int(h_min + 1)})
            continue
        t = 1
        for i in range(2, n + 1):
            h = min_passing(i, p, c)
            if n < h + i:
                t = i - 1
                break
        single.append({"data": name, "p": p, "t": t, "estimate": float(x[n - t])})
    return {"confidence": c, "server": server, "single_stream": single}


def mser5(x):
    z = np.asarray(x[: len(x) // 5 * 5]).reshape(-1, 5).mean(axis=1)
    b = len(z)
    best, best_d = np.inf, 0
    for d in range(b - 1):
        tail = z[d:]
        s = ((tail - tail.mean()) ** 2).sum() / len(tail) ** 2
        if s < best:
            best, best_d = s, d
    return {"truncation": best_d * 5, "batches": b, "statistic": float(best), "steady": bool(2 * best_d < b)}


def steady_state(data):
    rng = np.random.default_rng(5)
    ramp = np.concatenate([100 * np.exp(-np.arange(60) / 10.0) + 10, rng.normal(10, 0.5, 400)])
    drift = np.arange(300) * 0.1 + rng.normal(0, 0.05, 300)
    series = {"ramp": ramp.tolist(), "drift": drift.tolist(), "lognormal_300": data["lognormal_300"],
              "odd_length_47": rng.normal(0, 1, 47).tolist()}
    return {name: {"series": s, **mser5(s)} for name, s in series.items()}


def outliers(data):
    out = {}
    for name in ["outliers_120", "lognormal_300", "small_ints", "constant_10", "ties_400"]:
        x = np.asarray(data[name])
        q1, q3 = np.quantile(x, [0.25, 0.75])
        iqr = q3 - q1
        severe = (x < q1 - 3 * iqr) | (x > q3 + 3 * iqr)
        mild = ((x < q1 - 1.5 * iqr) | (x > q3 + 1.5 * iqr)) & ~severe
        med = np.median(x)
        mad = stats.median_abs_deviation(x)
        if mad > 0:
            scale = mad / 0.6745
        else:
            scale = np.mean(np.abs(x - med)) * np.sqrt(np.pi / 2)
        madz = np.abs(x - med) / scale > 3.5 if scale > 0 else np.zeros(len(x), bool)
        out[name] = {"q1": float(q1), "q3": float(q3), "mild": np.flatnonzero(mild).tolist(),
                     "severe": np.flatnonzero(severe).tolist(), "mad": np.flatnonzero(madz).tolist()}
    return out


def normal_tail(data):
    out = []
    for name in ["normal_50", "lognormal_300", "lognormal_2000"]:
        x = np.asarray(data[name])
        for q in [0.9, 0.99]:
            z = float(stats.norm.ppf(q))
            out.append({"data": name, "q": q, "z": z,
                        "normal": float(x.mean() + z * x.std(ddof=1)),
                        "empirical": float(np.quantile(x, q))})
    return out


def main():
    data = datasets()
    fixtures = {
        "meta": {"numpy": np.__version__, "scipy": scipy.__version__,
                 "statsmodels": __import__("statsmodels").__version__},
        "descriptive": descriptive(data),
        "quantile_ci": quantile_cis(),
        "hypothesis": hypothesis_tests(data),
        "bootstrap": bca_cases(data),
        "early_stopping": early_stopping(data),
        "steady_state": steady_state(data),
        "outliers": outliers(data),
        "normal_tail": normal_tail(data),
    }
    for key, value in fixtures.items():
        if key == "meta":
            continue
        (OUT / f"{key}.json").write_text(json.dumps({"generator": fixtures["meta"], "cases": value}) + "\n")
    print("wrote", ", ".join(f"{k}.json" for k in fixtures if k != "meta"))


if __name__ == "__main__":
    main()
