//! What the simulator *says*, for accuracy and perplexity tests with a known truth (documented in
//! docs/sim.md, "Answers and log-probabilities").
//!
//! * **Answer oracle** ([`Quality::answers`]): a table from prompt to answer text. A
//!   non-streamed request whose prompt is in the table is answered with its answer instead of
//!   filler words — for a deterministic share [`Quality::correct_fraction`] of the table's
//!   prompts (chosen by a hash of the prompt, so the same prompts are right on every request and
//!   lowering the fraction only turns right answers wrong); the others get the usual filler.
//!   The prompt of a request is its completion `prompt`, or its chat messages' contents joined
//!   by blank lines (what `yardstick bench eval` sends as a completion prompt for the same item).
//! * **Log-probability model**: a non-streamed `/v1/completions` request with `echo: true` and
//!   `logprobs` gets the prompt echoed as tokens (whitespace-separated words, each with the
//!   whitespace before it) with `token_logprobs`, `top_logprobs` and `text_offset`, like OpenAI's
//!   legacy completions. The first token has no log-probability; token j ≥ 1 gets
//!   `log p = −scale × (0.5 + 0.25 × chars(word))` (`scale` is [`Quality::logprob_scale`],
//!   default 1), so the perplexity of a text is known exactly:
//!   `exp(scale × mean(0.5 + 0.25 × chars(word)))` over every word but each paragraph's first.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::openai::Api;

/// The answer oracle and log-probability model (see the module docs).
#[derive(Debug, Clone)]
pub struct Quality {
    /// Prompt → answer text.
    pub answers: Arc<HashMap<String, String>>,
    /// Share of the table's prompts answered with their answer, in [0, 1].
    pub correct_fraction: f64,
    /// Multiplies every echoed log-probability (> 0); perplexity becomes `ppl₁^scale`.
    pub logprob_scale: f64,
    /// A prompt of the table that arrives while more than this many requests are running or
    /// waiting is answered wrong (filler), whatever the fraction: accuracy that falls under
    /// load, for tests of accuracy under load. `None`: load does not matter.
    pub wrong_when_busy: Option<u64>,
}

impl Default for Quality {
    fn default() -> Self {
        Quality {
            answers: Arc::new(HashMap::new()),
            correct_fraction: 1.0,
            logprob_scale: 1.0,
            wrong_when_busy: None,
        }
    }
}

/// Contents of a chat message: a string, or the text of its parts.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or(p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The prompt of a request or an answers-file line: `prompt`, or the `messages`' contents
/// joined by blank lines.
pub fn prompt_key(v: &Value) -> Option<String> {
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return Some(p.to_string());
    }
    let msgs = v.get("messages")?.as_array()?;
    Some(
        msgs.iter()
            .map(|m| content_text(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n\n"),
    )
}

/// FNV-1a, 64 bits, then MurmurHash3's finaliser (FNV alone leaves the high bits of short,
/// similar strings nearly equal): a stable hash (std's is randomly seeded per process).
fn prompt_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Why an answers file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum AnswersError {
    /// A line is not an answer.
    #[error("{source_name}:{line}: {problem}")]
    Line {
        /// The file (or probe) the text came from.
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: AnswerLineProblem,
    },
    /// No line is an answer.
    #[error("{source_name}: no answers")]
    Empty {
        /// The file (or probe) the text came from.
        source_name: String,
    },
}

/// What is wrong with a line of an answers file.
#[derive(Debug, thiserror::Error)]
pub enum AnswerLineProblem {
    /// Not JSON.
    #[error("{0}")]
    Json(serde_json::Error),
    /// No prompt to key the answer by.
    #[error("needs `prompt` or `messages`")]
    NoPrompt,
    /// No answer.
    #[error("needs `answer`, `references` or `keys`")]
    NoAnswer,
}

impl Quality {
    /// Reads answers from JSON lines: `{"prompt": ..}` or `{"messages": [..]}`, and `answer`
    /// (the text), else the first of `references`, else — for items that ask for a JSON object
    /// with `keys` — an object with those keys. Eval task files are therefore answer files.
    /// Other fields are ignored; `source` names the text in errors.
    pub fn add_answers(&mut self, source: &str, text: &str) -> Result<usize, AnswersError> {
        let mut table = (*self.answers).clone();
        let mut added = 0;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let bad = |problem: AnswerLineProblem| AnswersError::Line {
                source_name: source.to_string(),
                line: i + 1,
                problem,
            };
            let v: Value =
                serde_json::from_str(line).map_err(|e| bad(AnswerLineProblem::Json(e)))?;
            let key = prompt_key(&v).ok_or_else(|| bad(AnswerLineProblem::NoPrompt))?;
            let answer = if let Some(a) = v.get("answer").and_then(Value::as_str) {
                a.to_string()
            } else if let Some(r) = v
                .get("references")
                .and_then(Value::as_array)
                .and_then(|r| r.first())
                .and_then(Value::as_str)
            {
                r.to_string()
            } else if let Some(keys) = v.get("keys").and_then(Value::as_array) {
                let obj: serde_json::Map<String, Value> = keys
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|k| (k.to_string(), json!(1)))
                    .collect();
                Value::Object(obj).to_string()
            } else {
                return Err(bad(AnswerLineProblem::NoAnswer));
            };
            table.insert(key, answer);
            added += 1;
        }
        if added == 0 {
            return Err(AnswersError::Empty {
                source_name: source.to_string(),
            });
        }
        self.answers = Arc::new(table);
        Ok(added)
    }

    /// The answer to a request, when the table has its prompt and the prompt is among the
    /// correctly answered share.
    pub fn answer(&self, request: &Value) -> Option<&str> {
        self.verdict(request, 0).flatten()
    }

    /// The oracle's verdict on a request that arrived with `busy` requests running or waiting:
    /// `None` when the table does not have its prompt; `Some(Some(answer))` when it is answered
    /// right; `Some(None)` when it is answered wrong (outside the correct fraction, or the
    /// server busier than [`Quality::wrong_when_busy`]).
    pub fn verdict(&self, request: &Value, busy: u64) -> Option<Option<&str>> {
        if self.answers.is_empty() {
            return None;
        }
        let key = prompt_key(request)?;
        let a = self.answers.get(&key)?;
        // The prompt's place in [0, 1): below the fraction is answered right.
        let u = (prompt_hash(&key) >> 11) as f64 / (1u64 << 53) as f64;
        let calm = self.wrong_when_busy.is_none_or(|n| busy <= n);
        Some((u < self.correct_fraction && calm).then_some(a.as_str()))
    }

    /// The oracle's verdict on a request body (see [`Quality::verdict`]); cheap when the table
    /// is empty.
    pub fn verdict_of(&self, api: Api, body: &[u8], busy: u64) -> Option<Option<String>> {
        if api == Api::Embeddings || self.answers.is_empty() {
            return None;
        }
        let v: Value = serde_json::from_slice(body).ok()?;
        self.verdict(&v, busy).map(|a| a.map(str::to_string))
    }

    /// Whether a response may need rewriting: its request asks for `echo` (cheap: no JSON parse
    /// otherwise; the oracle's answers are given before the response is built).
    fn applies(&self, body: &[u8]) -> bool {
        body.windows(6).any(|w| w == b"\"echo\"")
    }

    /// Rewrites a non-streamed response: echoed prompt log-probabilities for
    /// `/v1/completions` with `echo` + `logprobs` (the oracle's answers are the answer itself,
    /// streamed or not: see [`Quality::verdict_of`]).
    pub fn rewrite(&self, api: Api, body: &[u8], mut resp: Value) -> Value {
        if api != Api::Completions || !self.applies(body) {
            return resp;
        }
        let Ok(req) = serde_json::from_slice::<Value>(body) else {
            return resp;
        };
        let echo = req.get("echo").and_then(Value::as_bool) == Some(true);
        let logprobs = req
            .get("logprobs")
            .is_some_and(|l| !l.is_null() && l != &json!(false));
        if api == Api::Completions
            && echo
            && logprobs
            && let Some(prompt) = req.get("prompt").and_then(Value::as_str)
        {
            let generated = resp["choices"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string();
            resp["choices"][0]["text"] = json!(format!("{prompt}{generated}"));
            resp["choices"][0]["logprobs"] = self.echo_logprobs(prompt, &generated);
        }
        resp
    }

    /// The `logprobs` object of an echoed completion: prompt tokens, then generated ones.
    pub fn echo_logprobs(&self, prompt: &str, generated: &str) -> Value {
        let mut tokens = Vec::new();
        let mut lps = Vec::new();
        let mut tops = Vec::new();
        let mut offsets = Vec::new();
        let mut at = 0usize;
        for (j, tok) in tokens_of(prompt)
            .into_iter()
            .chain(tokens_of(generated))
            .enumerate()
        {
            offsets.push(at);
            at += tok.chars().count();
            if j == 0 {
                lps.push(Value::Null);
                tops.push(Value::Null);
            } else {
                let lp = self.logprob(tok);
                lps.push(json!(lp));
                tops.push(json!({tok: lp}));
            }
            tokens.push(tok.to_string());
        }
        json!({"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets})
    }

    /// The model's log-probability of a token (whitespace excluded from its length).
    pub fn logprob(&self, token: &str) -> f64 {
        -self.logprob_scale * (0.5 + 0.25 * token.trim().chars().count() as f64)
    }
}

/// Splits text into tokens that concatenate back to it: each word with the whitespace before it
/// (trailing whitespace joins the last token).
pub fn tokens_of(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev_space = true;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        // A word starts after whitespace: the token before it ends at the whitespace run's start.
        if prev_space && !space && i > 0 {
            let ws_start = text[..i].trim_end().len();
            if ws_start > start {
                out.push(&text[start..ws_start]);
                start = ws_start;
            }
        }
        prev_space = space;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::count_words;

    #[test]
    fn tokens_rebuild_the_text_one_per_word() {
        for t in ["a b  c", "  lead\nnext word ", "one", "", "x\n\ny"] {
            let toks = tokens_of(t);
            assert_eq!(toks.concat(), t);
            assert_eq!(
                toks.len() as u64,
                count_words(t).max(u64::from(!t.is_empty())),
                "{t:?}"
            );
        }
        assert_eq!(tokens_of("a b\nc"), vec!["a", " b", "\nc"]);
    }

    #[test]
    fn answers_follow_the_fraction_monotonically() {
        let mut q = Quality::default();
        let text: String = (0..200)
            .map(|i| format!("{{\"prompt\":\"q{i}\",\"references\":[\"{i}\"]}}\n"))
            .collect();
        assert_eq!(q.add_answers("t", &text).unwrap(), 200);
        let right = |q: &Quality| -> Vec<usize> {
            (0..200)
                .filter(|i| q.answer(&json!({"prompt": format!("q{i}")})).is_some())
                .collect()
        };
        assert_eq!(right(&q).len(), 200);
        q.correct_fraction = 0.5;
        let half = right(&q);
        assert!((70..130).contains(&half.len()), "{}", half.len());
        q.correct_fraction = 0.25;
        assert!(right(&q).iter().all(|i| half.contains(i)));
        // chat messages join like a completion prompt
        q.correct_fraction = 1.0;
        q.add_answers("c", r#"{"messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"keys":["a","b"]}"#).unwrap();
        let chat = json!({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"u"}]}]});
        assert_eq!(q.answer(&chat), Some(r#"{"a":1,"b":1}"#));
        assert!(
            q.add_answers("bad", "{\"prompt\":\"x\"}")
                .unwrap_err()
                .to_string()
                .starts_with("bad:1:")
        );
    }

    #[test]
    fn echo_scores_every_prompt_token_but_the_first() {
        let q = Quality::default();
        let lp = q.echo_logprobs("ab cde", " the");
        assert_eq!(lp["tokens"], json!(["ab", " cde", " the"]));
        assert_eq!(lp["text_offset"], json!([0, 2, 6]));
        assert_eq!(lp["token_logprobs"][0], Value::Null);
        assert_eq!(lp["token_logprobs"][1], json!(-1.25));
        assert_eq!(lp["top_logprobs"][1], json!({" cde": -1.25}));
    }
}
