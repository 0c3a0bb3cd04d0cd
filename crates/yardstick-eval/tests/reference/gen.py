"""Generates the reference fixtures in this directory from the Python implementations that
yardstick-eval must agree with: sacrebleu (BLEU), rouge-score (ROUGE-L), statsmodels (Wilson
interval, McNemar). CI does not run this; the fixtures are committed.

    python3 -m venv /var/tmp/yardstick-ref/venv
    /var/tmp/yardstick-ref/venv/bin/pip install sacrebleu rouge-score scipy statsmodels
    /var/tmp/yardstick-ref/venv/bin/python crates/yardstick-eval/tests/reference/gen.py

The texts are written for this project.
"""

import json
import os
import sys

import rouge_score
import sacrebleu
import scipy
import statsmodels
from rouge_score import rouge_scorer
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

HERE = os.path.dirname(os.path.abspath(__file__))

HYPS = [
    "The server answered in thirty milliseconds.",
    "A cat sat on the mat, and the dog watched it.",
    "Measure twice; cut once!",
    "It costs $4.50 (plus tax) per unit.",
    "the quick brown fox jumps over the lazy dog",
    "Throughput rose by 12.5% after the upgrade.",
    "No answer.",
    "Keep the raw readings: summaries hide the shape of the data.",
]
REFS_A = [
    "The server replied in thirty milliseconds.",
    "The cat sat on the mat while the dog watched.",
    "Measure twice, cut once.",
    "It costs $4.50 per unit (plus tax).",
    "The quick brown fox jumped over the lazy dog.",
    "After the upgrade, throughput rose by 12.5%.",
    "The answer is forty-two.",
    "Keep the raw readings; summaries hide the data's shape.",
]
REFS_B = [
    "It answered within thirty milliseconds.",
    "A cat was sitting on the mat and a dog watched it.",
    "Measure twice and cut once.",
    "Each unit costs $4.50, tax not included.",
    "A quick brown fox jumps over a lazy dog.",
    "Throughput increased 12.5 % after upgrading.",
    "There is no answer.",
    "Keep raw readings, because summaries hide the shape of data.",
]


def bleu_cases():
    cases = []
    # Corpus BLEU, one and two references, and every sentence BLEU (sacreBLEU defaults).
    for name, refs in [("one_ref", [REFS_A]), ("two_refs", [REFS_A, REFS_B])]:
        c = sacrebleu.corpus_bleu(HYPS, refs)
        sentences = [
            sacrebleu.sentence_bleu(h, [r[i] for r in refs]).score for i, h in enumerate(HYPS)
        ]
        cases.append(
            {
                "name": name,
                "hyps": HYPS,
                "refs": [[r[i] for r in refs] for i in range(len(HYPS))],
                "corpus_bleu": c.score,
                "sentence_bleu": sentences,
            }
        )
    # Edge cases: a perfect match, an empty hypothesis, a short hypothesis (brevity penalty).
    extra_h = ["Measure twice, cut once.", "", "cut"]
    extra_r = ["Measure twice, cut once.", "Measure twice, cut once.", "Measure twice, cut once."]
    cases.append(
        {
            "name": "edges",
            "hyps": extra_h,
            "refs": [[r] for r in extra_r],
            "corpus_bleu": sacrebleu.corpus_bleu(extra_h, [extra_r]).score,
            "sentence_bleu": [sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(extra_h, extra_r)],
        }
    )
    return cases


def rouge_cases():
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    out = []
    pairs = list(zip(HYPS, REFS_A)) + list(zip(HYPS, REFS_B))
    pairs += [("", "something"), ("identical text here", "identical text here"), ("A B C", "c b a")]
    for cand, ref in pairs:
        s = scorer.score(ref, cand)["rougeL"]
        out.append({"candidate": cand, "reference": ref, "f": s.fmeasure, "p": s.precision, "r": s.recall})
    return out


def wilson_cases():
    out = []
    for k, n in [(0, 10), (1, 10), (8, 10), (10, 10), (0, 1), (1, 1), (13, 25), (47, 50), (3, 1000), (500, 1000)]:
        for conf in [0.90, 0.95, 0.99]:
            lo, hi = proportion_confint(k, n, alpha=1 - conf, method="wilson")
            out.append({"k": k, "n": n, "confidence": conf, "lo": float(lo), "hi": float(hi)})
    return out


def mcnemar_cases():
    out = []
    for b, c in [(0, 0), (1, 0), (12, 0), (3, 7), (10, 14), (5, 5), (20, 5), (30, 12), (40, 40), (100, 70)]:
        table = [[50, b], [c, 50]]
        ex = mcnemar(table, exact=True)
        if b + c == 0:  # statsmodels divides by zero there; yardstick reports p = 1
            out.append({"b": b, "c": c, "exact_p": float(ex.pvalue), "exact_statistic": 0.0,
                        "chi2_p": None, "chi2_statistic": None})
            continue
        chi = mcnemar(table, exact=False, correction=True)
        out.append(
            {
                "b": b,
                "c": c,
                "exact_p": float(ex.pvalue),
                "exact_statistic": float(ex.statistic),
                "chi2_p": float(chi.pvalue),
                "chi2_statistic": float(chi.statistic),
            }
        )
    return out


def main():
    versions = {
        "python": sys.version.split()[0],
        "sacrebleu": sacrebleu.__version__,
        "rouge_score": getattr(rouge_score, "__version__", "0.1.2"),
        "scipy": scipy.__version__,
        "statsmodels": statsmodels.__version__,
    }
    docs = {
        "bleu.json": {"generator": "gen.py", "versions": versions, "cases": bleu_cases()},
        "rouge_l.json": {"generator": "gen.py", "versions": versions, "cases": rouge_cases()},
        "wilson.json": {"generator": "gen.py", "versions": versions, "cases": wilson_cases()},
        "mcnemar.json": {"generator": "gen.py", "versions": versions, "cases": mcnemar_cases()},
    }
    for name, doc in docs.items():
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
