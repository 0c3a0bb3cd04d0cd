//! Scorers: how one model output is judged against an item's references.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Text normalisation applied to output and references before comparing.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(default, deny_unknown_fields)]
pub struct Normalize {
    /// Compare case-insensitively.
    pub case: bool,
    /// Collapse runs of whitespace to one space and trim.
    pub whitespace: bool,
    /// Remove ASCII punctuation.
    pub punctuation: bool,
}

impl Normalize {
    /// Applies the options to `s`.
    pub fn apply(&self, s: &str) -> String {
        let mut t: String = if self.punctuation {
            s.chars().filter(|c| !c.is_ascii_punctuation()).collect()
        } else {
            s.to_string()
        };
        if self.case {
            t = t.to_lowercase();
        }
        if self.whitespace {
            t = t.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        t
    }
}

/// A scorer kind and its options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "scorer", rename_all = "snake_case")]
pub enum Scorer {
    /// The (trimmed, normalised) output equals a reference.
    Exact,
    /// The normalised output contains a reference.
    Contains,
    /// A reference is a regular expression that must match the output.
    Regex,
    /// Multiple choice: the first standalone letter A–Z in the output equals the reference letter.
    Choice,
    /// The answer number of the output ([`answer_number`]: after the last `=` when the output
    /// writes an equation, else the first number) is within `tolerance` (absolute) of a numeric
    /// reference.
    Numeric {
        /// Absolute tolerance (default 1e-6).
        #[serde(default = "default_tol")]
        tolerance: f64,
    },
    /// Token F1 against the best reference; correct when F1 >= `threshold` (default 1.0).
    F1 {
        /// F1 needed to count as correct.
        #[serde(default = "one")]
        threshold: f64,
    },
    /// ROUGE-L F-measure (LCS; rouge-score tokenisation: lower-case, alphanumeric runs) against
    /// the best reference; correct when >= `threshold` (default 0.5).
    #[serde(rename = "rouge-l", alias = "rouge_l")]
    RougeL {
        /// ROUGE-L F needed to count as correct.
        #[serde(default = "half")]
        threshold: f64,
    },
    /// Sentence BLEU (sacreBLEU defaults, 0–100) against the references; correct when at least
    /// `threshold` (default 50). The item's score is BLEU / 100; the task also reports corpus
    /// BLEU.
    Bleu {
        /// Sentence BLEU (0–100) needed to count as correct.
        #[serde(default = "fifty")]
        threshold: f64,
    },
    /// The output (or its first `{...}` object) is valid JSON with every key in `keys`.
    JsonKeys {
        /// Keys the object must have.
        keys: Vec<String>,
    },
}

fn default_tol() -> f64 {
    1e-6
}
fn one() -> f64 {
    1.0
}
fn fifty() -> f64 {
    50.0
}
fn half() -> f64 {
    0.5
}

/// The verdict on one output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Score {
    /// Whether the output counts as correct.
    pub correct: bool,
    /// A graded score in [0, 1] (F1 for `f1`, otherwise 0 or 1).
    pub score: f64,
}

impl Score {
    fn bool(b: bool) -> Score {
        Score {
            correct: b,
            score: if b { 1.0 } else { 0.0 },
        }
    }
}

impl Scorer {
    /// The scorer's name as written in task files.
    pub fn name(&self) -> &'static str {
        match self {
            Scorer::Exact => "exact",
            Scorer::Contains => "contains",
            Scorer::Regex => "regex",
            Scorer::Choice => "choice",
            Scorer::Numeric { .. } => "numeric",
            Scorer::F1 { .. } => "f1",
            Scorer::RougeL { .. } => "rouge-l",
            Scorer::Bleu { .. } => "bleu",
            Scorer::JsonKeys { .. } => "json_keys",
        }
    }

    /// Scores `output` against `references` (regexes are compiled by the task loader and
    /// passed in `compiled`).
    pub fn score(
        &self,
        output: &str,
        references: &[String],
        norm: &Normalize,
        compiled: &[regex::Regex],
    ) -> Score {
        let out = norm.apply(output.trim());
        match self {
            Scorer::Exact => Score::bool(references.iter().any(|r| norm.apply(r.trim()) == out)),
            Scorer::Contains => Score::bool(references.iter().any(|r| {
                let r = norm.apply(r.trim());
                !r.is_empty() && out.contains(&r)
            })),
            Scorer::Regex => Score::bool(compiled.iter().any(|re| re.is_match(output))),
            Scorer::Choice => {
                let got = first_letter(output);
                Score::bool(got.is_some_and(|g| {
                    references
                        .iter()
                        .any(|r| r.trim().eq_ignore_ascii_case(&g.to_string()))
                }))
            }
            Scorer::Numeric { tolerance } => {
                let got = answer_number(output);
                Score::bool(got.is_some_and(|g| {
                    references.iter().any(|r| {
                        r.trim()
                            .replace(',', "")
                            .parse::<f64>()
                            .is_ok_and(|want| (g - want).abs() <= *tolerance)
                    })
                }))
            }
            Scorer::F1 { threshold } => {
                let best = references
                    .iter()
                    .map(|r| token_f1(&out, &norm.apply(r)))
                    .fold(0.0, f64::max);
                Score {
                    correct: best >= *threshold - 1e-12,
                    score: best,
                }
            }
            Scorer::RougeL { threshold } => {
                let best = references
                    .iter()
                    .map(|r| rouge_l(output, r))
                    .fold(0.0, f64::max);
                Score {
                    correct: best >= *threshold - 1e-12,
                    score: best,
                }
            }
            Scorer::Bleu { threshold } => {
                let b = crate::bleu::sentence(output, references);
                Score {
                    correct: b >= *threshold - 1e-9,
                    score: b / 100.0,
                }
            }
            Scorer::JsonKeys { keys } => Score::bool(json_has_keys(output, keys)),
        }
    }
}

/// The first standalone ASCII letter (A–Z, any case) of `s`, upper-cased: "(B)", "B.", "Answer: C".
/// Words like "Answer" are skipped: the letter must not be next to other letters.
pub fn first_letter(s: &str) -> Option<char> {
    let cs: Vec<char> = s.chars().collect();
    for (i, &c) in cs.iter().enumerate() {
        if c.is_ascii_alphabetic() {
            let before = i > 0 && cs[i - 1].is_alphanumeric();
            let after = cs.get(i + 1).is_some_and(|n| n.is_alphanumeric());
            if !before && !after && c.is_ascii_uppercase() {
                return Some(c);
            }
        }
    }
    None
}

/// The number an answer gives: models often restate the question (`17 + 25 = 42`), so when the
/// output has an `=` followed by a number, the first number after the last such `=`; otherwise
/// the first number.
pub fn answer_number(s: &str) -> Option<f64> {
    s.match_indices('=')
        .rev()
        .find_map(|(i, _)| first_number(&s[i + 1..]))
        .or_else(|| first_number(s))
}

/// The first number in `s` (optional sign, thousands commas, decimals), e.g. "= -1,234.5".
pub fn first_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let neg = i > 0 && b[i - 1] == b'-';
            let mut j = i;
            let mut text = String::new();
            while j < b.len()
                && (b[j].is_ascii_digit()
                    || (b[j] == b',' && j + 1 < b.len() && b[j + 1].is_ascii_digit())
                    || (b[j] == b'.' && j + 1 < b.len() && b[j + 1].is_ascii_digit()))
            {
                if b[j] != b',' {
                    text.push(b[j] as char);
                }
                j += 1;
            }
            let v: f64 = text.parse().ok()?;
            return Some(if neg { -v } else { v });
        }
        i += 1;
    }
    None
}

/// Token F1 (SQuAD style) between whitespace tokens of `a` and `b`; two empty strings give 1.
pub fn token_f1(a: &str, b: &str) -> f64 {
    let ta: Vec<&str> = a.split_whitespace().collect();
    let tb: Vec<&str> = b.split_whitespace().collect();
    if ta.is_empty() || tb.is_empty() {
        return if ta.is_empty() && tb.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for t in &tb {
        *counts.entry(t).or_default() += 1;
    }
    let mut common = 0i64;
    for t in &ta {
        if let Some(c) = counts.get_mut(t)
            && *c > 0
        {
            *c -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let p = common as f64 / ta.len() as f64;
    let r = common as f64 / tb.len() as f64;
    2.0 * p * r / (p + r)
}

/// rouge-score's default tokenisation: lower-case, every non-alphanumeric character a separator.
fn rouge_tokens(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// ROUGE-L F-measure (beta = 1) of `candidate` against `reference`, as rouge-score computes it
/// without stemming: LCS over tokens, P = LCS / |candidate|, R = LCS / |reference|.
pub fn rouge_l(candidate: &str, reference: &str) -> f64 {
    let (c, r) = (rouge_tokens(candidate), rouge_tokens(reference));
    if c.is_empty() || r.is_empty() {
        return 0.0;
    }
    let mut prev = vec![0usize; r.len() + 1];
    for ct in &c {
        let mut cur = vec![0usize; r.len() + 1];
        for (j, rt) in r.iter().enumerate() {
            cur[j + 1] = if ct == rt {
                prev[j] + 1
            } else {
                cur[j].max(prev[j + 1])
            };
        }
        prev = cur;
    }
    let lcs = prev[r.len()] as f64;
    if lcs == 0.0 {
        return 0.0;
    }
    let (p, rec) = (lcs / c.len() as f64, lcs / r.len() as f64);
    2.0 * p * rec / (p + rec)
}

fn json_has_keys(output: &str, keys: &[String]) -> bool {
    let t = output.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map(|x| x.trim_end().trim_end_matches("```"))
        .unwrap_or(t)
        .trim();
    let v: Option<serde_json::Value> = serde_json::from_str(t).ok().or_else(|| {
        let (s, e) = (t.find('{')?, t.rfind('}')?);
        (s < e).then(|| serde_json::from_str(&t[s..=e]).ok())?
    });
    match v {
        Some(serde_json::Value::Object(m)) => keys.iter().all(|k| m.contains_key(k)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| s.to_string()).collect()
    }

    fn sc(s: &Scorer, out: &str, r: &[&str], n: Normalize) -> bool {
        let compiled: Vec<regex::Regex> = if matches!(s, Scorer::Regex) {
            r.iter().map(|p| regex::Regex::new(p).unwrap()).collect()
        } else {
            vec![]
        };
        s.score(out, &refs(r), &n, &compiled).correct
    }

    #[test]
    fn exact_and_normalisation() {
        let none = Normalize::default();
        let all = Normalize {
            case: true,
            whitespace: true,
            punctuation: true,
        };
        assert!(sc(&Scorer::Exact, " Paris\n", &["Paris"], none));
        assert!(!sc(&Scorer::Exact, "paris.", &["Paris"], none));
        assert!(sc(&Scorer::Exact, "paris.", &["Paris"], all));
        assert!(sc(&Scorer::Exact, "New   York!", &["new york"], all));
    }

    #[test]
    fn contains_regex_choice() {
        let n = Normalize::default();
        assert!(sc(&Scorer::Contains, "It is Paris, France", &["Paris"], n));
        assert!(!sc(&Scorer::Contains, "It is Lyon", &["Paris"], n));
        assert!(sc(&Scorer::Regex, "fn main() {}", &[r"fn\s+main\s*\("], n));
        assert!(!sc(&Scorer::Regex, "def main():", &[r"fn\s+main"], n));
        assert!(sc(&Scorer::Choice, "Answer: (B) because", &["B"], n));
        assert!(sc(&Scorer::Choice, "C", &["c"], n));
        assert!(!sc(&Scorer::Choice, "A. no", &["B"], n));
        assert_eq!(first_letter("The answer is D."), Some('D'));
    }

    #[test]
    fn numeric() {
        let n = Normalize::default();
        let s = Scorer::Numeric { tolerance: 0.01 };
        assert!(sc(&s, "The answer is 42.", &["42"], n));
        assert!(sc(&s, "= -7", &["-7"], n));
        assert!(sc(&s, "1,234.004", &["1234"], n));
        assert!(!sc(&s, "43", &["42"], n));
        assert!(!sc(&s, "no idea", &["42"], n));
        assert_eq!(first_number("x 3.5 y 4"), Some(3.5));
        // A restated equation: the number after the last `=` is the answer.
        assert!(sc(&s, "17 + 25 = 42.", &["42"], n));
        assert!(!sc(&s, "17 + 25 = 32.", &["17"], n));
        assert!(sc(&s, "7 * 6 = 42\nThe answer is only 42.", &["42"], n));
        assert!(sc(&s, "2 + 3 = 5, then 5 * 2 = 10", &["10"], n));
        assert!(sc(&s, "12 - 20 = -8", &["-8"], n));
        assert_eq!(answer_number("x = y, so 4"), Some(4.0));
    }

    #[test]
    fn f1_values() {
        assert!((token_f1("the cat sat", "the cat sat") - 1.0).abs() < 1e-12);
        // common 2, p = 2/3, r = 2/4 -> f1 = 4/7
        assert!((token_f1("the cat sat", "the cat is here") - 4.0 / 7.0).abs() < 1e-12);
        assert_eq!(token_f1("a", "b"), 0.0);
        let s = Scorer::F1 { threshold: 0.5 };
        let r = s.score(
            "the cat sat",
            &refs(&["the cat is here"]),
            &Normalize::default(),
            &[],
        );
        assert!(r.correct);
        assert!((r.score - 4.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn rouge_l_values() {
        // LCS("the cat sat on the mat", "the cat lay on the mat") = 5 of 6 and 6: F = 5/6.
        let f = rouge_l("The cat sat on the mat.", "the cat lay on the mat");
        assert!((f - 5.0 / 6.0).abs() < 1e-12, "{f}");
        // LCS("police killed the gunman", "the gunman police killed") = 2 ("police killed"):
        // P = R = 2/4.
        assert!(
            (rouge_l("police killed the gunman", "the gunman police killed") - 0.5).abs() < 1e-12
        );
        assert_eq!(rouge_l("", "a"), 0.0);
        assert_eq!(rouge_l("x y", "a b"), 0.0);
        let t: Scorer = serde_json::from_str(r#"{"scorer":"rouge-l","threshold":0.8}"#).unwrap();
        let s = t.score(
            "the cat sat on the mat",
            &refs(&["the cat lay on the mat"]),
            &Normalize::default(),
            &[],
        );
        assert!(s.correct);
        assert!((s.score - 5.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn bleu_scorer() {
        let t: Scorer = serde_json::from_str(r#"{"scorer":"bleu"}"#).unwrap();
        let r = refs(&["The dog bit the man."]);
        let s = t.score("The dog bit the man.", &r, &Normalize::default(), &[]);
        assert!(s.correct && (s.score - 1.0).abs() < 1e-9);
        let s = t.score("A cat.", &r, &Normalize::default(), &[]);
        assert!(!s.correct && s.score < 0.5);
    }

    #[test]
    fn json_keys() {
        let s = Scorer::JsonKeys {
            keys: vec!["name".into(), "age".into()],
        };
        let n = Normalize::default();
        assert!(sc(&s, r#"{"name":"a","age":3}"#, &[], n));
        assert!(sc(&s, "```json\n{\"name\":\"a\",\"age\":3}\n```", &[], n));
        assert!(sc(&s, "Sure: {\"name\":\"a\",\"age\":3} done", &[], n));
        assert!(!sc(&s, r#"{"name":"a"}"#, &[], n));
        assert!(!sc(&s, "name: a, age: 3", &[], n));
    }
}
