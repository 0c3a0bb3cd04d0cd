//! yardstick-eval against reference implementations: BLEU vs sacrebleu, ROUGE-L vs rouge-score,
//! the Wilson interval and McNemar's test vs statsmodels. The fixtures in `tests/reference/` were
//! produced by `tests/reference/gen.py` (see its header); no Python is needed here.

use serde_json::Value;
use yardstick_eval::{bleu, score::rouge_l, wilson};
use yardstick_stats::hypothesis::{McNemarMethod, mcnemar};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, reference {want} (|diff| {:e} > {tol:e})",
        (got - want).abs()
    );
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn bleu_matches_sacrebleu() {
    let doc = fixture("bleu.json");
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let hyps = strings(&case["hyps"]);
        let refs: Vec<Vec<String>> = case["refs"]
            .as_array()
            .unwrap()
            .iter()
            .map(strings)
            .collect();
        let segs: Vec<_> = hyps
            .iter()
            .zip(&refs)
            .map(|(h, r)| bleu::stats(h, r))
            .collect();
        close(
            bleu::corpus(&segs),
            case["corpus_bleu"].as_f64().unwrap(),
            1e-9,
            &format!("{name} corpus BLEU"),
        );
        for (i, want) in case["sentence_bleu"].as_array().unwrap().iter().enumerate() {
            close(
                bleu::sentence(&hyps[i], &refs[i]),
                want.as_f64().unwrap(),
                1e-9,
                &format!("{name} sentence BLEU {i} ({:?})", hyps[i]),
            );
        }
    }
}

#[test]
fn rouge_l_matches_rouge_score() {
    let doc = fixture("rouge_l.json");
    for case in doc["cases"].as_array().unwrap() {
        let (c, r) = (
            case["candidate"].as_str().unwrap(),
            case["reference"].as_str().unwrap(),
        );
        close(
            rouge_l(c, r),
            case["f"].as_f64().unwrap(),
            1e-9,
            &format!("ROUGE-L F of {c:?} vs {r:?}"),
        );
    }
}

#[test]
fn wilson_matches_statsmodels() {
    let doc = fixture("wilson.json");
    for case in doc["cases"].as_array().unwrap() {
        let (k, n) = (case["k"].as_u64().unwrap(), case["n"].as_u64().unwrap());
        let conf = case["confidence"].as_f64().unwrap();
        let [lo, hi] = wilson(k, n, conf);
        // The normal quantile is computed, not tabulated: 1e-9 is well within its accuracy.
        close(
            lo,
            case["lo"].as_f64().unwrap(),
            1e-9,
            &format!("Wilson lo {k}/{n} @ {conf}"),
        );
        close(
            hi,
            case["hi"].as_f64().unwrap(),
            1e-9,
            &format!("Wilson hi {k}/{n} @ {conf}"),
        );
    }
}

#[test]
fn mcnemar_matches_statsmodels() {
    let doc = fixture("mcnemar.json");
    for case in doc["cases"].as_array().unwrap() {
        let (b, c) = (case["b"].as_u64().unwrap(), case["c"].as_u64().unwrap());
        let ex = mcnemar(b, c, McNemarMethod::Exact).unwrap();
        close(
            ex.p_value,
            case["exact_p"].as_f64().unwrap(),
            1e-9,
            &format!("exact p {b},{c}"),
        );
        close(
            ex.statistic,
            case["exact_statistic"].as_f64().unwrap(),
            0.0,
            &format!("exact statistic {b},{c}"),
        );
        let chi = mcnemar(b, c, McNemarMethod::ChiSquare).unwrap();
        match case["chi2_p"].as_f64() {
            // b + c = 0: statsmodels divides by zero; no discordant pair is no evidence, p = 1.
            None => assert_eq!(chi.p_value, 1.0),
            // Ties (b = c) included: the corrected statistic is 1/(b + c), as statsmodels has it.
            Some(p) => {
                // The chi-square tail is an approximation in both libraries.
                close(chi.p_value, p, 1e-6, &format!("chi2 p {b},{c}"));
                close(
                    chi.statistic,
                    case["chi2_statistic"].as_f64().unwrap(),
                    1e-9,
                    &format!("chi2 statistic {b},{c}"),
                );
            }
        }
    }
}
