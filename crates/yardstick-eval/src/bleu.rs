//! BLEU with sacreBLEU's defaults: the `13a` tokeniser, 4-grams, clipped counts against every
//! reference, closest reference length (shorter on ties) for the brevity penalty; corpus BLEU
//! without smoothing, sentence BLEU with `exp` smoothing and effective order (as
//! `sacrebleu.sentence_bleu`). Scores are on sacreBLEU's 0–100 scale.

use std::collections::HashMap;

use regex::Regex;
use std::sync::LazyLock;

static R1: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([\{-~\[-` -&\(-\+:-@/])").expect("valid"));
static R2: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"([^0-9])([\.,])").expect("valid"));
static R3: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"([\.,])([^0-9])").expect("valid"));
static R4: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"([0-9])(-)").expect("valid"));

/// sacreBLEU's `13a` tokenisation (mteval-v13a), returning tokens.
pub fn tokenize_13a(line: &str) -> Vec<String> {
    let mut s = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if s.contains('&') {
        s = s
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    let s = format!(" {s} ");
    let s = R1.replace_all(&s, " $1 ");
    let s = R2.replace_all(&s, "$1 $2 ");
    let s = R3.replace_all(&s, " $1 $2");
    let s = R4.replace_all(&s, "$1 $2 ");
    s.split_whitespace().map(str::to_string).collect()
}

/// Sufficient statistics of one segment: matches and totals per order, hypothesis and
/// (closest) reference lengths.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct BleuStats {
    /// Clipped n-gram matches, n = 1..4.
    pub correct: [u64; 4],
    /// Hypothesis n-grams, n = 1..4.
    pub total: [u64; 4],
    /// Hypothesis length in tokens.
    pub hyp_len: u64,
    /// Closest reference length.
    pub ref_len: u64,
}

fn ngrams(t: &[String], n: usize) -> HashMap<&[String], u64> {
    let mut m = HashMap::new();
    if t.len() >= n {
        for w in t.windows(n) {
            *m.entry(w).or_insert(0) += 1;
        }
    }
    m
}

/// Statistics of `hyp` against `refs`.
pub fn stats(hyp: &str, refs: &[String]) -> BleuStats {
    let h = tokenize_13a(hyp);
    let rs: Vec<Vec<String>> = refs.iter().map(|r| tokenize_13a(r)).collect();
    let mut st = BleuStats {
        hyp_len: h.len() as u64,
        ..Default::default()
    };
    // Closest reference length, the shorter one on ties.
    let mut best: Option<(u64, u64)> = None;
    for r in &rs {
        let d = (r.len() as i64 - h.len() as i64).unsigned_abs();
        let l = r.len() as u64;
        if best.is_none_or(|(bd, bl)| d < bd || (d == bd && l < bl)) {
            best = Some((d, l));
        }
    }
    st.ref_len = best.map(|b| b.1).unwrap_or(0);
    for n in 1..=4 {
        let hc = ngrams(&h, n);
        let mut maxref: HashMap<&[String], u64> = HashMap::new();
        for r in &rs {
            for (g, c) in ngrams(r, n) {
                let e = maxref.entry(g).or_insert(0);
                *e = (*e).max(c);
            }
        }
        st.total[n - 1] = h.len().saturating_sub(n - 1) as u64;
        st.correct[n - 1] = hc
            .iter()
            .map(|(g, c)| (*c).min(maxref.get(g).copied().unwrap_or(0)))
            .sum();
    }
    st
}

fn score(st: &BleuStats, smooth_exp: bool, effective_order: bool) -> f64 {
    if st.hyp_len == 0 || st.correct[0] == 0 {
        return 0.0;
    }
    let mut log_sum = 0.0;
    let mut order = 0;
    let mut smooth = 1.0;
    for n in 0..4 {
        if st.total[n] == 0 {
            if effective_order {
                break;
            }
            return 0.0;
        }
        let p = if st.correct[n] == 0 {
            if !smooth_exp {
                return 0.0;
            }
            smooth *= 2.0;
            100.0 / (smooth * st.total[n] as f64)
        } else {
            100.0 * st.correct[n] as f64 / st.total[n] as f64
        };
        log_sum += (p / 100.0).ln();
        order += 1;
    }
    let bp = if st.hyp_len < st.ref_len {
        (1.0 - st.ref_len as f64 / st.hyp_len as f64).exp()
    } else {
        1.0
    };
    100.0 * bp * (log_sum / order as f64).exp()
}

/// Corpus BLEU (sacreBLEU `corpus_bleu` defaults) over summed segment statistics.
pub fn corpus(segments: &[BleuStats]) -> f64 {
    let mut t = BleuStats::default();
    for s in segments {
        for n in 0..4 {
            t.correct[n] += s.correct[n];
            t.total[n] += s.total[n];
        }
        t.hyp_len += s.hyp_len;
        t.ref_len += s.ref_len;
    }
    score(&t, true, false)
}

/// Sentence BLEU (sacreBLEU `sentence_bleu` defaults: `exp` smoothing, effective order).
pub fn sentence(hyp: &str, refs: &[String]) -> f64 {
    score(&stats(hyp, refs), true, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_13a() {
        assert_eq!(
            tokenize_13a("It wasn't surprising."),
            ["It", "wasn't", "surprising", "."]
        );
        assert_eq!(
            tokenize_13a("3.5, x-ray 12-3"),
            ["3.5", ",", "x-ray", "12", "-", "3"]
        );
    }

    #[test]
    fn sacrebleu_readme_example() {
        // sacreBLEU's README: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944
        // hyp_len = 17 ref_len = 18).
        let hyps = [
            "The dog bit the man.",
            "It wasn't surprising.",
            "The man had just bitten him.",
        ];
        let refs = [
            ["The dog bit the man.", "The dog had bit the man."],
            ["It was not unexpected.", "No one was surprised."],
            ["The man bit him first.", "The man had bitten the dog."],
        ];
        let segs: Vec<BleuStats> = hyps
            .iter()
            .zip(refs)
            .map(|(h, r)| stats(h, &r.map(String::from)))
            .collect();
        let tot: u64 = segs.iter().map(|s| s.hyp_len).sum();
        let rl: u64 = segs.iter().map(|s| s.ref_len).sum();
        assert_eq!((tot, rl), (17, 18));
        let b = corpus(&segs);
        assert!((b - 48.53).abs() < 0.005, "{b}");
        assert!(
            (sentence("The dog bit the man.", &["The dog bit the man.".into()]) - 100.0).abs()
                < 1e-9
        );
        assert_eq!(sentence("zzz", &["The dog".into()]), 0.0);
    }
}
