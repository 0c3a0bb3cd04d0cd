//! Multi-turn session shapes: turns per session and the user's think time between turns, as
//! `bench serve --turns/--think-time` and a serve layer's `sessions:` write them.

use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Turns a session may have at most.
pub const MAX_TURNS: u64 = 1024;

/// How long a user thinks before the next turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    /// Always this many milliseconds.
    Constant(f64),
    /// Exponentially distributed with this mean, ms.
    Exponential(f64),
    /// Uniform between the two bounds, ms.
    Uniform(f64, f64),
}

impl std::fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThinkTime::Constant(ms) => write!(f, "{ms}"),
            ThinkTime::Exponential(m) => write!(f, "exp({m})"),
            ThinkTime::Uniform(a, b) => write!(f, "U({a},{b})"),
        }
    }
}

/// Why a think time or a number of turns did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// Not a think time at all.
    #[error("`{0}` is not {THINK_TIME_GRAMMAR}")]
    ThinkTime(String),
    /// A uniform think time whose bounds are the wrong way round.
    #[error("`{0}`: the lower bound is above the upper one")]
    ThinkTimeBounds(String),
    /// Not a number of turns, or one out of range.
    #[error("`{0}` is not a number of turns: `4`, or a range `2-6` (each from 1 to {MAX_TURNS})")]
    Turns(String),
}

/// The think-time grammar, for hints.
pub const THINK_TIME_GRAMMAR: &str = "a think time in ms: `1000` (constant), `exp(1000)` (exponential with that mean) or `U(500,1500)` (uniform)";

impl FromStr for ThinkTime {
    type Err = SessionError;
    fn from_str(s: &str) -> Result<Self, SessionError> {
        let t = s.trim();
        let num = |x: &str| -> Result<f64, SessionError> {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| SessionError::ThinkTime(s.to_string()))
        };
        let inner = |prefix: &str| {
            t.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(')'))
                .map(str::to_owned)
        };
        if let Some(m) = inner("exp(") {
            return Ok(ThinkTime::Exponential(num(&m)?));
        }
        if let Some(r) = inner("U(") {
            let (a, b) = r
                .split_once(',')
                .ok_or_else(|| SessionError::ThinkTime(s.to_string()))?;
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(SessionError::ThinkTimeBounds(s.to_string()));
            }
            return Ok(ThinkTime::Uniform(a, b));
        }
        Ok(ThinkTime::Constant(num(t)?))
    }
}

/// Turns per session: a fixed number or a uniform range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turns {
    /// Fewest turns.
    pub min: u32,
    /// Most turns.
    pub max: u32,
}

impl FromStr for Turns {
    type Err = SessionError;
    fn from_str(s: &str) -> Result<Self, SessionError> {
        let bad = || SessionError::Turns(s.to_string());
        let n = |x: &str| x.trim().parse::<u32>().map_err(|_| bad());
        let (min, max) = match s.split_once('-') {
            Some((a, b)) => (n(a)?, n(b)?),
            None => (n(s)?, n(s)?),
        };
        if min == 0 || min > max || u64::from(max) > MAX_TURNS {
            return Err(bad());
        }
        Ok(Turns { min, max })
    }
}

impl std::fmt::Display for Turns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

/// Reads `T` from a string or a number (YAML `turns: 4` and `turns: "2-6"` alike).
fn from_text<'de, D: Deserializer<'de>, T: FromStr<Err = SessionError>>(
    d: D,
) -> Result<T, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        N(f64),
        S(String),
    }
    let text = match Raw::deserialize(d)? {
        Raw::N(n) => n.to_string(),
        Raw::S(s) => s,
    };
    text.parse().map_err(serde::de::Error::custom)
}

impl<'de> Deserialize<'de> for Turns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d)
    }
}

impl Serialize for Turns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for Turns {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Turns".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "turns per session: a number, or a range `2-6` drawn uniformly",
            "type": ["integer", "string"]
        })
    }
}

impl<'de> Deserialize<'de> for ThinkTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d)
    }
}

impl Serialize for ThinkTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for ThinkTime {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ThinkTime".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": THINK_TIME_GRAMMAR,
            "type": ["number", "string"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_and_turns_parse_and_refuse_clearly() {
        assert_eq!("250".parse::<ThinkTime>(), Ok(ThinkTime::Constant(250.0)));
        assert_eq!(
            "exp(1000)".parse::<ThinkTime>(),
            Ok(ThinkTime::Exponential(1000.0))
        );
        assert_eq!(
            "U(5, 10)".parse::<ThinkTime>(),
            Ok(ThinkTime::Uniform(5.0, 10.0))
        );
        let e = "soon".parse::<ThinkTime>().unwrap_err().to_string();
        assert!(e.contains("exp(1000)"), "{e}");
        assert!("U(9,1)".parse::<ThinkTime>().is_err());
        assert!("-1".parse::<ThinkTime>().is_err());
        assert_eq!("4".parse::<Turns>(), Ok(Turns { min: 4, max: 4 }));
        assert_eq!("2-6".parse::<Turns>(), Ok(Turns { min: 2, max: 6 }));
        for bad in ["0", "6-2", "x", "1-5000", "2.5"] {
            assert!(bad.parse::<Turns>().is_err(), "{bad}");
        }
        for t in ["4", "2-6"] {
            let v: Turns = t.parse().unwrap();
            assert_eq!(v.to_string(), t);
        }
    }
}
