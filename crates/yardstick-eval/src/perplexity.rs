//! Perplexity over a fixed text shard through `/v1/completions` with `echo` + `logprobs`.
//!
//! Each paragraph of the shard is one request: `{"prompt": paragraph, "echo": true,
//! "logprobs": 1, "max_tokens": 1, "temperature": 0}`. The server returns the log-probability of
//! every prompt token given the tokens before it (`choices[0].logprobs.token_logprobs`, `null`
//! for the first). Prompt tokens are told from the one generated token by `text_offset`
//! (offsets before the end of the prompt), else by `usage.completion_tokens`. Perplexity is
//! `exp(−Σ log p / N)` over every scored token of every paragraph (N = the scored tokens).
//!
//! Never a fake number: a server that refuses the request, returns no prompt log-probabilities
//! or returns them shifted by one token (each token scored *after* seeing it — detectable
//! because the top-1 alternative then predicts the *next* token) gives
//! [`Perplexity::unsupported`] with the reason, and no value.

use serde::Serialize;
use serde_json::{Value, json};

use crate::EvalError;
use crate::backend::HttpBackend;

/// The bundled shard: seven paragraphs of plain English written for this project.
pub const BUILTIN_SHARD: &str = include_str!("shard/measure.txt");

/// A text split into paragraphs (one request each).
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// `builtin` or the file path.
    pub source: String,
    /// Paragraphs, in order.
    pub paragraphs: Vec<String>,
}

impl Shard {
    /// Splits `text` on blank lines; `source` names it in errors and results.
    pub fn parse(source: &str, text: &str) -> Result<Shard, EvalError> {
        let mut paragraphs = Vec::new();
        let mut cur = String::new();
        for line in text.lines() {
            if line.trim().is_empty() {
                if !cur.is_empty() {
                    paragraphs.push(std::mem::take(&mut cur));
                }
            } else {
                if !cur.is_empty() {
                    cur.push('\n');
                }
                cur.push_str(line.trim_end());
            }
        }
        if !cur.is_empty() {
            paragraphs.push(cur);
        }
        if paragraphs.is_empty() {
            return Err(EvalError::Task {
                file: source.to_string(),
                line: 0,
                why: "no text to compute perplexity on".into(),
            });
        }
        Ok(Shard {
            source: source.to_string(),
            paragraphs,
        })
    }

    /// `builtin` or a path to a UTF-8 text file (paragraphs separated by blank lines).
    pub fn load(spec: &str) -> Result<Shard, EvalError> {
        if spec == "builtin" {
            return Shard::parse("builtin", BUILTIN_SHARD);
        }
        let text = std::fs::read_to_string(spec).map_err(|e| EvalError::Io {
            path: spec.to_string(),
            why: e.to_string(),
        })?;
        Shard::parse(spec, &text)
    }
}

/// The perplexity result (`"perplexity"` in `eval.json`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Perplexity {
    /// `exp(−mean log p)` over the scored tokens; `None` when unsupported.
    pub value: Option<f64>,
    /// Scored tokens (prompt tokens with a log-probability).
    pub tokens: u64,
    /// Mean negative log-likelihood per token, nats.
    pub nll: Option<f64>,
    /// Paragraphs sent.
    pub paragraphs: usize,
    /// `builtin` or the file.
    pub source: String,
    /// Why the server cannot give a perplexity (then `value` is null).
    pub unsupported: Option<String>,
}

/// What one paragraph's response gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Scored {
    /// Sum of log-probabilities and their count, plus the alignment evidence: prompt positions
    /// whose top-1 alternative is the token itself (`aligned`) or the next token (`shifted`).
    Tokens {
        /// Σ log p.
        sum: f64,
        /// Scored tokens.
        n: u64,
        /// Top-1 alternative == this token.
        aligned: u64,
        /// Top-1 alternative == the next token.
        shifted: u64,
    },
    /// The response carries no usable prompt log-probabilities.
    Unsupported(String),
}

/// The request body for one paragraph.
pub fn body(model: &str, prompt: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "model": model,
        "prompt": prompt,
        "max_tokens": 1,
        "temperature": 0,
        "seed": 0,
        "echo": true,
        "logprobs": 1,
        "stream": false,
    }))
    .unwrap_or_default()
}

fn top1(alts: &Value) -> Option<&str> {
    alts.as_object()?
        .iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k, x)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k.as_str())
}

/// Reads one `/v1/completions` response to `prompt` (echoed, with log-probabilities).
pub fn score_response(prompt: &str, resp: &Value) -> Scored {
    let lp = &resp["choices"][0]["logprobs"];
    let Some(values) = lp["token_logprobs"].as_array() else {
        return Scored::Unsupported(
            "the response has no choices[0].logprobs.token_logprobs (no log-probabilities)".into(),
        );
    };
    // How many entries belong to the prompt.
    let prompt_len = match lp["text_offset"].as_array() {
        Some(off) if off.len() == values.len() => {
            // Offsets are in characters (OpenAI) — for ASCII text the same as bytes.
            let end = prompt.chars().count() as u64;
            off.iter()
                .take_while(|o| o.as_u64().is_some_and(|o| o < end))
                .count()
        }
        _ => {
            let generated = resp["usage"]["completion_tokens"].as_u64().unwrap_or(1) as usize;
            values.len().saturating_sub(generated)
        }
    };
    let tokens = lp["tokens"].as_array();
    let tops = lp["top_logprobs"].as_array();
    let (mut sum, mut n, mut aligned, mut shifted) = (0.0, 0u64, 0u64, 0u64);
    for (i, v) in values.iter().take(prompt_len).enumerate() {
        if v.is_null() {
            continue;
        }
        let Some(x) = v.as_f64() else {
            return Scored::Unsupported(format!("token_logprobs[{i}] is not a number: {v}"));
        };
        if !x.is_finite() || x > 1e-6 {
            return Scored::Unsupported(format!(
                "token_logprobs[{i}] = {x} is not a log-probability"
            ));
        }
        sum += x;
        n += 1;
        if let (Some(toks), Some(tops)) = (tokens, tops)
            && let Some(best) = tops.get(i).and_then(top1)
        {
            let tok = |j: usize| toks.get(j).and_then(Value::as_str);
            if tok(i) == Some(best) {
                aligned += 1;
            }
            if i + 1 < prompt_len && tok(i + 1) == Some(best) {
                shifted += 1;
            }
        }
    }
    if n == 0 {
        return Scored::Unsupported(
            "no prompt token has a log-probability (the server ignores `echo` for log-probabilities)"
                .into(),
        );
    }
    Scored::Tokens {
        sum,
        n,
        aligned,
        shifted,
    }
}

/// Combines the paragraphs' results into the perplexity (or the reason there is none).
pub fn combine(source: &str, scored: &[Scored]) -> Perplexity {
    let unsupported = |why: String| Perplexity {
        value: None,
        tokens: 0,
        nll: None,
        paragraphs: scored.len(),
        source: source.to_string(),
        unsupported: Some(why),
    };
    let (mut sum, mut n, mut aligned, mut shifted) = (0.0, 0u64, 0u64, 0u64);
    for s in scored {
        match s {
            Scored::Unsupported(why) => return unsupported(why.clone()),
            Scored::Tokens {
                sum: s,
                n: k,
                aligned: a,
                shifted: b,
            } => {
                sum += s;
                n += k;
                aligned += a;
                shifted += b;
            }
        }
    }
    // A shifted server scores each token after seeing it: its top-1 alternative keeps naming
    // the next token. Aligned servers name the token itself far more often than the next one.
    if shifted >= 5 && shifted > 2 * aligned {
        return unsupported(format!(
            "prompt log-probabilities are shifted by one token: the top-1 alternative at a \
             position names the next prompt token {shifted} times and the token itself {aligned} \
             times, so each token was scored after the model had seen it (llama-cpp-python's \
             echo logprobs do this); a perplexity from them would be meaningless"
        ));
    }
    if n == 0 {
        return unsupported("no tokens were scored".into());
    }
    let nll = -sum / n as f64;
    Perplexity {
        value: Some(nll.exp()),
        tokens: n,
        nll: Some(nll),
        paragraphs: scored.len(),
        source: source.to_string(),
        unsupported: None,
    }
}

/// Measures perplexity of `model` on `shard`; `backend` must call the completions API.
/// Connection failures and timeouts are errors (`Err`); refusals and missing or misaligned
/// log-probabilities are an unsupported result.
pub async fn measure(
    backend: &HttpBackend,
    model: &str,
    shard: &Shard,
) -> Result<Perplexity, EvalError> {
    let mut scored = Vec::new();
    for p in &shard.paragraphs {
        match backend.post(body(model, p)).await {
            Ok(v) => {
                let s = score_response(p, &v);
                let stop = matches!(s, Scored::Unsupported(_));
                scored.push(s);
                if stop {
                    break;
                }
            }
            Err(crate::backend::PostError::Refused(why)) => {
                scored.push(Scored::Unsupported(format!(
                    "the server refused an echo + logprobs completion: {why}"
                )));
                break;
            }
            Err(crate::backend::PostError::Failed(why)) => {
                return Err(EvalError::Config(format!(
                    "perplexity request failed: {why}"
                )));
            }
        }
    }
    let mut p = combine(&shard.source, &scored);
    p.paragraphs = shard.paragraphs.len();
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(tokens: &[&str], lps: &[Option<f64>], tops: &[Option<&str>]) -> Value {
        let mut off = Vec::new();
        let mut at = 0;
        for t in tokens {
            off.push(at);
            at += t.len();
        }
        let tl: Vec<Value> = lps.iter().map(|x| json!(x)).collect();
        let tp: Vec<Value> = tops
            .iter()
            .zip(tokens)
            .zip(lps)
            .map(|((t, tok), lp)| match (t, lp) {
                (Some(t), Some(lp)) => json!({*t: -0.01, *tok: lp}),
                _ => Value::Null,
            })
            .collect();
        json!({"choices":[{"text": tokens.concat(), "logprobs": {"tokens": tokens, "text_offset": off, "token_logprobs": tl, "top_logprobs": tp}}],
               "usage": {"prompt_tokens": tokens.len() - 1, "completion_tokens": 1}})
    }

    #[test]
    fn exact_perplexity_from_known_logprobs_excluding_the_generated_token() {
        let prompt = "a b c";
        let r = resp(
            &["a", " b", " c", " d"],
            &[None, Some(-1.0), Some(-2.0), Some(-9.0)],
            &[None, Some("x"), Some("y"), Some("z")],
        );
        let s = score_response(prompt, &r);
        assert_eq!(
            s,
            Scored::Tokens {
                sum: -3.0,
                n: 2,
                aligned: 0,
                shifted: 0
            }
        );
        let p = combine("t", &[s.clone(), s]);
        assert_eq!(p.tokens, 4);
        assert!((p.value.unwrap() - 1.5f64.exp()).abs() < 1e-12);
        assert!(p.unsupported.is_none());
    }

    #[test]
    fn missing_or_shifted_logprobs_are_unsupported_never_a_number() {
        let none = json!({"choices":[{"text":"x","logprobs":null}]});
        assert!(matches!(score_response("x", &none), Scored::Unsupported(_)));
        // echo ignored: only the generated token has a log-probability
        let gen_only = json!({"choices":[{"text":" d","logprobs":{"tokens":[" d"],"text_offset":[5],"token_logprobs":[-0.5]}}]});
        assert!(matches!(
            score_response("a b c", &gen_only),
            Scored::Unsupported(_)
        ));
        // shifted: the top-1 alternative at i is token i+1
        let toks = ["a", " b", " c", " d", " e", " f", " g", " h", "!"];
        let tops: Vec<Option<&str>> = (0..toks.len())
            .map(|i| (i > 0).then(|| toks.get(i + 1).copied().unwrap_or("?")))
            .collect();
        let lps: Vec<Option<f64>> = (0..toks.len()).map(|i| (i > 0).then_some(-9.0)).collect();
        let r = resp(&toks, &lps, &tops);
        let p = combine("t", &[score_response("a b c d e f g h", &r)]);
        assert!(p.value.is_none(), "{p:?}");
        assert!(p.unsupported.unwrap().contains("shifted"));
        assert!(Shard::parse("e", "\n\n  \n").is_err());
        let b = Shard::load("builtin").unwrap();
        assert_eq!(b.paragraphs.len(), 7);
    }
}
