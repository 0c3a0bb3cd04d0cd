//! Traffic scenario strings: how many tokens go in and come out of each request.
//!
//! The grammar is genai-bench's, so specs and command lines written for it keep working:
//!
//! | form | meaning |
//! | --- | --- |
//! | `D(in,out)` | deterministic: every request has exactly `in` prompt and `out` output tokens |
//! | `N(mu_in,sd_in)/(mu_out,sd_out)` | normal distributions for input and output tokens |
//! | `U(min_in,max_in)/(min_out,max_out)` | uniform (inclusive) for input and output tokens |
//! | `U(min,max)` | uniform input tokens; the output length is not forced |
//! | `E(tokens)` | embeddings: `tokens` input tokens per document, no output |
//! | `0.8*D(64,16) + 0.2*D(2048,16)` | a mix: each request draws one part, in proportion to the weights (default 1) |
//!
//! Whitespace around numbers is allowed; numbers are non-negative integers (means and standard
//! deviations may be decimals) of at most [`MAX_TOKENS`]. Sampling lives with the load generator; this module only parses
//! and checks.

use std::fmt;
use std::str::FromStr;

/// The accepted forms, shown in every parse error.
pub const ACCEPTED_FORMS: &str = "D(in,out), N(mu_in,sd_in)/(mu_out,sd_out), \
U(min_in,max_in)/(min_out,max_out), U(min,max), E(tokens), and mixes of them: \
0.8*D(64,16) + 0.2*D(2048,16)";

/// The most parts a mix may have.
pub const MAX_MIX_PARTS: usize = 16;

/// The most tokens a scenario may ask for in one request (prompt or output): ten million, past
/// any model's context window. A larger count is a typo, and a prompt of 2^64 words cannot be
/// built.
pub const MAX_TOKENS: u64 = 10_000_000;

/// A parsed traffic scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Scenario {
    /// Exactly `input` prompt tokens and `output` output tokens.
    Deterministic {
        /// Prompt tokens.
        input: u64,
        /// Output tokens.
        output: u64,
    },
    /// Normally distributed token counts (sampled values are rounded and clamped to
    /// `1..=MAX_TOKENS`).
    Normal {
        /// Mean prompt tokens.
        input_mean: f64,
        /// Standard deviation of prompt tokens.
        input_sd: f64,
        /// Mean output tokens.
        output_mean: f64,
        /// Standard deviation of output tokens.
        output_sd: f64,
    },
    /// Uniformly distributed token counts, bounds inclusive. `output` is `None` for `U(min,max)`.
    Uniform {
        /// Inclusive bounds of prompt tokens.
        input: (u64, u64),
        /// Inclusive bounds of output tokens, when forced.
        output: Option<(u64, u64)>,
    },
    /// Embedding requests of `tokens` input tokens.
    Embedding {
        /// Input tokens per document.
        tokens: u64,
    },
    /// A mix: each request draws one part in proportion to the weights, and is of that part's
    /// class (its index). Parts are single scenarios, not mixes and not embeddings.
    Mix {
        /// The parts and their weights (above 0; normalised when drawing).
        parts: Vec<(f64, Scenario)>,
    },
}

/// Why a scenario string did not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid traffic scenario `{input}`: {reason}")]
pub struct ScenarioError {
    /// The string as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: ScenarioReason,
}

/// What is wrong with a scenario string.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioReason {
    /// Nothing was given.
    #[error("the scenario is empty")]
    Empty,
    /// Opening and closing parentheses do not pair up.
    #[error(
        "unbalanced parentheses; inside a YAML flow list `[...]` a comma splits items, \
         so quote each scenario: [\"D(100,100)\"]"
    )]
    Unbalanced,
    /// The distribution letter has no parameters.
    #[error("missing parameters in parentheses")]
    MissingParameters,
    /// A group is not numbers in parentheses.
    #[error("group {group} `{text}` must be numbers in parentheses, like (100,100)")]
    NotParenthesized {
        /// The group's position, from 1.
        group: usize,
        /// The group as written.
        text: String,
    },
    /// A group has parentheses inside it.
    #[error("group {group} `{text}` has nested parentheses")]
    Nested {
        /// The group's position, from 1.
        group: usize,
        /// The group as written.
        text: String,
    },
    /// The distribution was given the wrong number of groups or numbers.
    #[error("`{letter}` takes {want}, got {got}")]
    Arity {
        /// The distribution letter.
        letter: char,
        /// The shape it takes, e.g. `(_,_)/(_,_)`.
        want: String,
        /// The shape given.
        got: String,
    },
    /// `U` was given a shape it does not take.
    #[error("`U` takes (min,max) or (min_in,max_in)/(min_out,max_out), got {0}")]
    UniformArity(String),
    /// A normal distribution's mean is below one token.
    #[error("means must be at least 1 token")]
    MeanBelowOne,
    /// A uniform range whose bounds are the wrong way round.
    #[error("{what}: min {lo} is greater than max {hi}")]
    MinAboveMax {
        /// Which bounds.
        what: &'static str,
        /// The lower bound.
        lo: u64,
        /// The upper bound.
        hi: u64,
    },
    /// A letter that names no distribution.
    #[error("unknown distribution `{0}` (expected D, N, U or E)")]
    UnknownDistribution(char),
    /// A negative number.
    #[error("`{0}` is negative; token counts are >= 0")]
    Negative(String),
    /// Not a whole number where one is required.
    #[error("`{0}` is not a whole number of tokens")]
    NotWhole(String),
    /// Not a number at all.
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// More than [`MAX_TOKENS`].
    #[error("`{0}` tokens is more than the {MAX_TOKENS} a request may ask for")]
    TooManyTokens(String),
    /// A count that must be at least one is zero.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A mix's part is malformed: a weight that is not a positive number, a mix inside a mix,
    /// an embeddings part, too many parts.
    #[error("mix part {part} `{text}`: {why}")]
    MixPart {
        /// The part's position, from 1.
        part: usize,
        /// The part as written.
        text: String,
        /// What is wrong with it.
        why: String,
    },
}

impl ScenarioError {
    /// The hint that accompanies every scenario error.
    pub fn hint() -> String {
        format!("accepted forms: {ACCEPTED_FORMS}; e.g. D(100,100) or N(480,240)/(300,150)")
    }
}

impl Scenario {
    /// Whether the scenario forces a number of output tokens per request.
    pub fn forces_output(&self) -> bool {
        match self {
            Scenario::Deterministic { .. } | Scenario::Normal { .. } => true,
            Scenario::Uniform { output, .. } => output.is_some(),
            Scenario::Embedding { .. } => false,
            Scenario::Mix { parts } => parts.iter().all(|(_, p)| p.forces_output()),
        }
    }

    /// Whether this is an embeddings scenario.
    pub fn is_embedding(&self) -> bool {
        matches!(self, Scenario::Embedding { .. })
    }

    /// The mean prompt tokens a request of this scenario asks for.
    pub fn mean_input(&self) -> f64 {
        match self {
            Scenario::Deterministic { input, .. } => *input as f64,
            Scenario::Normal { input_mean, .. } => *input_mean,
            Scenario::Uniform { input, .. } => (input.0 + input.1) as f64 / 2.0,
            Scenario::Embedding { tokens } => *tokens as f64,
            Scenario::Mix { parts } => {
                let total: f64 = parts.iter().map(|(w, _)| w).sum();
                parts.iter().map(|(w, p)| w * p.mean_input()).sum::<f64>() / total
            }
        }
    }

    /// The mean output tokens a request asks for (`default` where the scenario does not force
    /// them).
    pub fn mean_output(&self, default: f64) -> f64 {
        match self {
            Scenario::Deterministic { output, .. } => *output as f64,
            Scenario::Normal { output_mean, .. } => *output_mean,
            Scenario::Uniform {
                output: Some((lo, hi)),
                ..
            } => (lo + hi) as f64 / 2.0,
            Scenario::Uniform { output: None, .. } => default,
            Scenario::Embedding { .. } => 0.0,
            Scenario::Mix { parts } => {
                let total: f64 = parts.iter().map(|(w, _)| w).sum();
                parts
                    .iter()
                    .map(|(w, p)| w * p.mean_output(default))
                    .sum::<f64>()
                    / total
            }
        }
    }

    /// A mix's parts, ordered as written (`None` for a single scenario).
    pub fn parts(&self) -> Option<&[(f64, Scenario)]> {
        match self {
            Scenario::Mix { parts } => Some(parts),
            _ => None,
        }
    }
}

/// Splits `a + b + c` at the `+` signs outside parentheses.
fn split_mix(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '+' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_mix(s: &str, parts: &[&str]) -> Result<Scenario, ScenarioError> {
    let err = |reason: ScenarioReason| ScenarioError {
        input: s.to_string(),
        reason,
    };
    if parts.len() > MAX_MIX_PARTS {
        return Err(err(ScenarioReason::MixPart {
            part: MAX_MIX_PARTS + 1,
            text: parts[MAX_MIX_PARTS].trim().to_string(),
            why: format!("a mix has at most {MAX_MIX_PARTS} parts"),
        }));
    }
    let mut out = Vec::new();
    for (i, raw) in parts.iter().enumerate() {
        let text = raw.trim();
        let part = |why: String| {
            err(ScenarioReason::MixPart {
                part: i + 1,
                text: text.to_string(),
                why,
            })
        };
        let (weight, body) = match text.split_once('*') {
            Some((w, body)) => {
                let w = w.trim();
                match w.parse::<f64>() {
                    Ok(v) if v > 0.0 && v.is_finite() => (v, body.trim()),
                    _ => {
                        return Err(part(format!(
                            "the weight `{w}` must be a number above 0, as in 0.8*D(64,16)"
                        )));
                    }
                }
            }
            None => (1.0, text),
        };
        if body.is_empty() {
            return Err(part("the part is empty".into()));
        }
        let scenario: Scenario = body
            .parse()
            .map_err(|e: ScenarioError| part(e.reason.to_string()))?;
        if scenario.is_embedding() {
            return Err(part("embeddings scenarios cannot be mixed".into()));
        }
        out.push((weight, scenario));
    }
    Ok(Scenario::Mix { parts: out })
}

impl FromStr for Scenario {
    type Err = ScenarioError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: ScenarioReason| ScenarioError {
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
        let parts = split_mix(t);
        if parts.len() > 1 {
            return parse_mix(s, &parts);
        }
        let mut chars = t.chars();
        let letter = chars.next().ok_or_else(|| err(ScenarioReason::Empty))?;
        let rest = chars.as_str();
        if rest.matches('(').count() != rest.matches(')').count() {
            return Err(err(ScenarioReason::Unbalanced));
        }
        let groups = split_groups(rest).map_err(err)?;
        let arity = |want: &[usize]| -> Result<(), ScenarioError> {
            let shape: Vec<usize> = groups.iter().map(Vec::len).collect();
            if shape == want {
                Ok(())
            } else {
                Err(err(ScenarioReason::Arity {
                    letter,
                    want: describe_shape(want),
                    got: describe_shape(&shape),
                }))
            }
        };
        match letter {
            'D' => {
                arity(&[2])?;
                let input = int(&groups[0][0]).map_err(err)?;
                let output = int(&groups[0][1]).map_err(err)?;
                positive(input, "input tokens").map_err(err)?;
                positive(output, "output tokens").map_err(err)?;
                Ok(Scenario::Deterministic { input, output })
            }
            'N' => {
                arity(&[2, 2])?;
                let input_mean = real(&groups[0][0]).map_err(err)?;
                let input_sd = real(&groups[0][1]).map_err(err)?;
                let output_mean = real(&groups[1][0]).map_err(err)?;
                let output_sd = real(&groups[1][1]).map_err(err)?;
                if input_mean < 1.0 || output_mean < 1.0 {
                    return Err(err(ScenarioReason::MeanBelowOne));
                }
                Ok(Scenario::Normal {
                    input_mean,
                    input_sd,
                    output_mean,
                    output_sd,
                })
            }
            'U' => {
                let shape: Vec<usize> = groups.iter().map(Vec::len).collect();
                let bounds =
                    |g: &[String], what: &'static str| -> Result<(u64, u64), ScenarioReason> {
                        let lo = int(&g[0])?;
                        let hi = int(&g[1])?;
                        positive(lo, what)?;
                        if lo > hi {
                            return Err(ScenarioReason::MinAboveMax { what, lo, hi });
                        }
                        Ok((lo, hi))
                    };
                match shape.as_slice() {
                    [2] => Ok(Scenario::Uniform {
                        input: bounds(&groups[0], "input tokens").map_err(err)?,
                        output: None,
                    }),
                    [2, 2] => Ok(Scenario::Uniform {
                        input: bounds(&groups[0], "input tokens").map_err(err)?,
                        output: Some(bounds(&groups[1], "output tokens").map_err(err)?),
                    }),
                    _ => Err(err(ScenarioReason::UniformArity(describe_shape(&shape)))),
                }
            }
            'E' => {
                arity(&[1])?;
                let tokens = int(&groups[0][0]).map_err(err)?;
                positive(tokens, "tokens").map_err(err)?;
                Ok(Scenario::Embedding { tokens })
            }
            other => Err(err(ScenarioReason::UnknownDistribution(other))),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scenario::Deterministic { input, output } => write!(f, "D({input},{output})"),
            Scenario::Normal {
                input_mean,
                input_sd,
                output_mean,
                output_sd,
            } => write!(f, "N({input_mean},{input_sd})/({output_mean},{output_sd})"),
            Scenario::Uniform { input, output } => {
                write!(f, "U({},{})", input.0, input.1)?;
                if let Some((lo, hi)) = output {
                    write!(f, "/({lo},{hi})")?;
                }
                Ok(())
            }
            Scenario::Embedding { tokens } => write!(f, "E({tokens})"),
            Scenario::Mix { parts } => {
                for (i, (w, p)) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str("+")?;
                    }
                    if *w == 1.0 {
                        write!(f, "{p}")?;
                    } else {
                        write!(f, "{w}*{p}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Splits `(a,b)/(c,d)` into `[[a,b],[c,d]]`.
fn split_groups(rest: &str) -> Result<Vec<Vec<String>>, ScenarioReason> {
    if rest.trim().is_empty() {
        return Err(ScenarioReason::MissingParameters);
    }
    let mut groups = Vec::new();
    for (i, part) in rest.split('/').enumerate() {
        let p = part.trim();
        let inner = p
            .strip_prefix('(')
            .and_then(|p| p.strip_suffix(')'))
            .ok_or_else(|| ScenarioReason::NotParenthesized {
                group: i + 1,
                text: p.to_string(),
            })?;
        if inner.contains(['(', ')']) {
            return Err(ScenarioReason::Nested {
                group: i + 1,
                text: p.to_string(),
            });
        }
        groups.push(inner.split(',').map(|x| x.trim().to_string()).collect());
    }
    Ok(groups)
}

fn describe_shape(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|n| {
            let names = vec!["_"; *n].join(",");
            format!("({names})")
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn int(s: &str) -> Result<u64, ScenarioReason> {
    if s.starts_with('-') {
        return Err(ScenarioReason::Negative(s.to_string()));
    }
    let v = s
        .parse::<u64>()
        .map_err(|_| ScenarioReason::NotWhole(s.to_string()))?;
    at_most_max(v as f64, s)?;
    Ok(v)
}

fn real(s: &str) -> Result<f64, ScenarioReason> {
    if s.starts_with('-') {
        return Err(ScenarioReason::Negative(s.to_string()));
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => {
            at_most_max(v, s)?;
            Ok(v)
        }
        _ => Err(ScenarioReason::NotANumber(s.to_string())),
    }
}

fn at_most_max(v: f64, s: &str) -> Result<(), ScenarioReason> {
    if v > MAX_TOKENS as f64 {
        Err(ScenarioReason::TooManyTokens(s.to_string()))
    } else {
        Ok(())
    }
}

fn positive(v: u64, what: &'static str) -> Result<(), ScenarioReason> {
    if v == 0 {
        Err(ScenarioReason::Zero(what))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_every_form() {
        assert_eq!(
            "D(100,100)".parse::<Scenario>().unwrap(),
            Scenario::Deterministic {
                input: 100,
                output: 100
            }
        );
        assert_eq!(
            " N(480, 240)/(300,150) ".parse::<Scenario>().unwrap(),
            Scenario::Normal {
                input_mean: 480.0,
                input_sd: 240.0,
                output_mean: 300.0,
                output_sd: 150.0
            }
        );
        assert_eq!(
            "U(50,100)/(200,250)".parse::<Scenario>().unwrap(),
            Scenario::Uniform {
                input: (50, 100),
                output: Some((200, 250))
            }
        );
        assert_eq!(
            "U(1,2)".parse::<Scenario>().unwrap(),
            Scenario::Uniform {
                input: (1, 2),
                output: None
            }
        );
        assert_eq!(
            "E(1024)".parse::<Scenario>().unwrap(),
            Scenario::Embedding { tokens: 1024 }
        );
    }

    #[test]
    fn a_mix_draws_parts_by_weight_and_knows_its_means() {
        let m: Scenario = " 0.8 * D(64,16) + 0.2*D(2048, 32) ".parse().unwrap();
        let parts = m.parts().unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            parts[1],
            (
                0.2,
                Scenario::Deterministic {
                    input: 2048,
                    output: 32
                }
            )
        );
        assert!((m.mean_input() - (0.8 * 64.0 + 0.2 * 2048.0)).abs() < 1e-9);
        assert!((m.mean_output(100.0) - (0.8 * 16.0 + 0.2 * 32.0)).abs() < 1e-9);
        assert!(m.forces_output());
        let loose: Scenario = "D(1,1)+U(1,5)".parse().unwrap();
        assert!(!loose.forces_output());
        assert!("D(1,1)".parse::<Scenario>().unwrap().parts().is_none());
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "D(100,100)",
            "N(480,240)/(300,150)",
            "U(50,100)/(200,250)",
            "U(1,2)",
            "E(1024)",
            "0.8*D(64,16)+0.2*D(2048,16)",
            "D(1,1)+N(480,240)/(300,150)+3*U(1,2)",
        ] {
            let parsed: Scenario = s.parse().unwrap();
            assert_eq!(parsed.to_string(), s);
            assert_eq!(parsed.to_string().parse::<Scenario>().unwrap(), parsed);
        }
    }

    #[test]
    fn rejects_malformed_with_reasons() {
        let cases = [
            ("D(100)", "`D` takes (_,_), got (_)"),
            ("N(1,2)/(3)", "`N` takes (_,_)/(_,_), got (_,_)/(_)"),
            ("D(-1,5)", "negative"),
            ("U(10,5)", "greater than max"),
            ("X(1,2)", "unknown distribution"),
            ("", "empty"),
            ("D", "missing parameters"),
            ("D(1,a)", "not a whole number"),
            ("D(0,10)", "at least 1"),
            ("D100,100", "in parentheses"),
            ("D(128", "unbalanced parentheses"),
            ("128)", "unbalanced parentheses"),
            ("N(1,2)/(3,x)", "not a number"),
            ("U(1,2)/(3,4)/(5,6)", "`U` takes"),
            // Found by the planner property test: counts past any context window parsed, and
            // building the prompt overflowed (a panic, or an abort on allocation).
            ("D(18446744073709551615,1)", "more than the 10000000"),
            ("U(1,10000001)", "more than the 10000000"),
            ("N(1e300,1)/(1,1)", "more than the 10000000"),
            ("N(1,1e300)/(1,1)", "more than the 10000000"),
            ("D(1,1)+", "mix part 2 ``: the part is empty"),
            ("0*D(1,1)+D(2,2)", "the weight `0` must be a number above 0"),
            ("x*D(1,1)+D(2,2)", "the weight `x`"),
            ("D(1,1)+E(5)", "embeddings scenarios cannot be mixed"),
            (
                "D(1,1)+D(0,1)",
                "mix part 2 `D(0,1)`: input tokens must be at least 1",
            ),
        ];
        for (input, want) in cases {
            let e = input.parse::<Scenario>().unwrap_err();
            assert!(!e.to_string().contains("Mix {"), "{e}");
            assert!(
                e.to_string().contains(want),
                "{input:?}: {e} does not contain {want:?}"
            );
        }
    }
}
