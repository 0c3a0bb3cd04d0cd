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
//!
//! Whitespace around numbers is allowed; numbers are non-negative integers (means and standard
//! deviations may be decimals) of at most [`MAX_TOKENS`]. Sampling lives with the load generator; this module only parses
//! and checks.

use std::fmt;
use std::str::FromStr;

/// The accepted forms, shown in every parse error.
pub const ACCEPTED_FORMS: &str = "D(in,out), N(mu_in,sd_in)/(mu_out,sd_out), \
U(min_in,max_in)/(min_out,max_out), U(min,max), E(tokens)";

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
        }
    }

    /// Whether this is an embeddings scenario.
    pub fn is_embedding(&self) -> bool {
        matches!(self, Scenario::Embedding { .. })
    }
}

impl FromStr for Scenario {
    type Err = ScenarioError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: ScenarioReason| ScenarioError {
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
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
    fn display_round_trips() {
        for s in [
            "D(100,100)",
            "N(480,240)/(300,150)",
            "U(50,100)/(200,250)",
            "U(1,2)",
            "E(1024)",
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
        ];
        for (input, want) in cases {
            let e = input.parse::<Scenario>().unwrap_err();
            assert!(
                e.to_string().contains(want),
                "{input:?}: {e} does not contain {want:?}"
            );
        }
    }
}
