#!/usr/bin/env python3
"""Regenerates replicates.json: the intervals of a figure's mean over a few replicates, as
`yardstick run` aggregates them (docs/stats.md, "Intervals over replicates").

    python3 -m venv /tmp/statsvenv && /tmp/statsvenv/bin/pip install numpy scipy
    /tmp/statsvenv/bin/python crates/yardstick-stats/tests/reference/gen_replicates.py

CI does not run this; replicates.json is committed. For each case: the arithmetic mean with
Student's t interval (scipy.stats.t.interval around the mean with scipy.stats.sem), and the
geometric mean (scipy.stats.gmean) with the t interval of the logarithms taken back with exp.
"""

import json
import pathlib

import numpy as np
import scipy
from scipy import stats

OUT = pathlib.Path(__file__).resolve().parent

CASES = [
    # Three noisy replicates of a latency, ms: the arithmetic interval goes below zero.
    ([10.0, 10.0, 200.0], 0.95),
    # A step time, s, and a throughput, tok/s, as the first-hour report saw them.
    ([0.075, 0.21, 0.031], 0.95),
    ([10400.0, 2100.0, 18800.0, 9900.0], 0.9),
    # Quiet replicates: both intervals nearly agree.
    ([51.2, 51.9, 50.8, 51.4, 51.1], 0.95),
    ([238.0, 241.5], 0.99),
]


def main():
    cases = []
    for x, level in CASES:
        a = np.array(x)
        lo, hi = stats.t.interval(level, len(a) - 1, loc=a.mean(), scale=stats.sem(a))
        logs = np.log(a)
        llo, lhi = stats.t.interval(level, len(a) - 1, loc=logs.mean(), scale=stats.sem(logs))
        cases.append(
            {
                "values": x,
                "level": level,
                "mean": float(a.mean()),
                "t": [float(lo), float(hi)],
                "gmean": float(stats.gmean(a)),
                "log_t": [float(np.exp(llo)), float(np.exp(lhi))],
            }
        )
    doc = {"scipy": scipy.__version__, "numpy": np.__version__, "cases": cases}
    (OUT / "replicates.json").write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
