//! Token counts you can trust: before a point, the server counts the plan's prompts itself.
//!
//! The plan sizes each prompt by its own count (words of the bundled corpus, or a local
//! `tokenizer.json`); the server's tokenizer may count otherwise, and a benchmark of
//! "D(512,128)" that sends 430 of the server's tokens measures something else. Where the server
//! has a tokenize endpoint — `POST /tokenize` on vLLM, SGLang and llama.cpp's server — the
//! first [`SAMPLE`] distinct prompts of the point are counted there once (outside the
//! measurement), and the point reports the gap between the planned and the server's count
//! (`prompt_token_check`), with a warning beyond [`WARN_PCT`]. The response's usage counts the
//! chat template too; the tokenize endpoint counts the prompt's text alone, as the plan does.
//!
//! One body serves the three servers: vLLM reads `model`, `prompt` and `add_special_tokens`
//! (and ignores the rest), llama.cpp `content` and `add_special`; the count is the response's
//! `count` (vLLM, SGLang) or the length of its `tokens` (llama.cpp).

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::plan::PlannedRequest;

/// Prompts counted per point.
pub const SAMPLE: usize = 32;
/// Above this gap (percent of the planned tokens) the point carries a warning.
pub const WARN_PCT: f64 = 1.0;

/// The server's count of a point's prompts beside the plan's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PromptTokenCheck {
    /// The endpoint that counted (`http://host:port/tokenize`).
    pub endpoint: String,
    /// Prompts counted.
    pub prompts: u64,
    /// Their tokens by the plan's count.
    pub planned_tokens: u64,
    /// Their tokens by the server's count.
    pub server_tokens: u64,
    /// `(server − planned) / planned`, percent.
    pub gap_pct: f64,
    /// The largest gap of one prompt, percent (signed).
    pub max_prompt_gap_pct: f64,
    /// Set when `|gap_pct|` is beyond [`WARN_PCT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// `<scheme>://<host:port>/tokenize` of a server's base URL.
pub fn tokenize_url(base: &str) -> Option<String> {
    let uri: http::Uri = base.parse().ok()?;
    Some(format!(
        "{}://{}/tokenize",
        uri.scheme_str()?,
        uri.authority()?
    ))
}

/// The request body asking for `text`'s tokens (see the module docs).
pub fn body(model: &str, text: &str) -> Bytes {
    Bytes::from(
        json!({"model": model, "prompt": text, "content": text,
               "add_special_tokens": false, "add_special": false})
        .to_string(),
    )
}

/// The count in a tokenize response: `count`, else the length of `tokens`.
pub fn count_of(v: &Value) -> Option<u64> {
    v.get("count").and_then(Value::as_u64).or_else(|| {
        v.get("tokens")
            .and_then(Value::as_array)
            .map(|t| t.len() as u64)
    })
}

/// The prompt text of a planned request's body: the last message's text (a string, or its
/// text parts), or the completion prompt.
pub fn prompt_of(plan: &PlannedRequest) -> Option<String> {
    prompt_in(&serde_json::from_slice(&plan.body).ok()?)
}

/// [`prompt_of`] a body already read.
fn prompt_in(v: &Value) -> Option<String> {
    if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        return Some(p.to_string());
    }
    let content = v.get("messages")?.as_array()?.last()?.get("content")?;
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}

/// Sums `(planned, server)` counts of the prompts into a check (`None` without any).
pub fn summarize(endpoint: &str, counts: &[(u64, u64)]) -> Option<PromptTokenCheck> {
    if counts.is_empty() {
        return None;
    }
    let planned: u64 = counts.iter().map(|c| c.0).sum();
    let server: u64 = counts.iter().map(|c| c.1).sum();
    let pct = |p: u64, s: u64| {
        if p == 0 {
            0.0
        } else {
            (s as f64 - p as f64) / p as f64 * 100.0
        }
    };
    let gap_pct = pct(planned, server);
    let max_prompt_gap_pct = counts
        .iter()
        .map(|&(p, s)| pct(p, s))
        .max_by(|a, b| a.abs().total_cmp(&b.abs()))
        .unwrap_or(0.0);
    let warning = (gap_pct.abs() > WARN_PCT).then(|| {
        format!(
            "the server counts {server} tokens in {} prompts planned as {planned} ({gap_pct:+.1} %): \
             lengths and per-token figures are off by as much; give the server's tokenizer \
             (--tokenizer tokenizer.json) to plan exact lengths",
            counts.len()
        )
    });
    Some(PromptTokenCheck {
        endpoint: endpoint.to_string(),
        prompts: counts.len() as u64,
        planned_tokens: planned,
        server_tokens: server,
        gap_pct,
        max_prompt_gap_pct,
        warning,
    })
}

/// Counts the first [`SAMPLE`] distinct prompts of `plans` at the server's tokenize endpoint.
/// `None` when the server has none (the first answer is not a count) or nothing was counted.
pub async fn check(
    client: &crate::Client,
    base_url: &str,
    model: &str,
    plans: impl Iterator<Item = PlannedRequest>,
) -> Option<PromptTokenCheck> {
    let endpoint = tokenize_url(base_url)?;
    let mut seen = std::collections::HashSet::new();
    let mut counts = Vec::new();
    for plan in plans {
        if counts.len() >= SAMPLE {
            break;
        }
        // An eval item's length is not planned: its words are only an estimate.
        if plan
            .kind
            .as_ref()
            .is_some_and(|k| k.kind() == crate::kinds::Kind::Eval)
        {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&plan.body) else {
            continue;
        };
        let Some(text) = prompt_in(&v) else {
            continue;
        };
        if !seen.insert(text.clone()) {
            continue;
        }
        // The model the request names (a mix names its own), else the run's.
        let model = v.get("model").and_then(Value::as_str).unwrap_or(model);
        let (status, bytes) = client
            .post_root("/tokenize", body(model, &text))
            .await
            .ok()?;
        if status != 200 {
            return None;
        }
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        counts.push((plan.lengths.input, count_of(&v)?));
    }
    summarize(&endpoint, &counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_urls_and_gaps() {
        assert_eq!(
            tokenize_url("http://127.0.0.1:8000/v1").as_deref(),
            Some("http://127.0.0.1:8000/tokenize")
        );
        assert_eq!(count_of(&json!({"count": 7, "tokens": [1]})), Some(7));
        assert_eq!(count_of(&json!({"tokens": [1, 2, 3]})), Some(3));
        assert_eq!(count_of(&json!({"detail": "Not Found"})), None);
        let same = summarize("u", &[(10, 10), (20, 20)]).unwrap();
        assert_eq!((same.gap_pct, same.warning.is_none()), (0.0, true));
        let off = summarize("u", &[(100, 90), (100, 100)]).unwrap();
        assert!((off.gap_pct + 5.0).abs() < 1e-12, "{off:?}");
        assert!((off.max_prompt_gap_pct + 10.0).abs() < 1e-12, "{off:?}");
        assert!(off.warning.unwrap().contains("-5.0 %"));
        assert!(summarize("u", &[]).is_none());
    }

    #[test]
    fn the_prompt_of_a_body_is_its_text() {
        let plan = |body: Value| PlannedRequest {
            index: 0,
            lengths: crate::plan::Lengths {
                input: 1,
                output: None,
            },
            body: Bytes::from(body.to_string()),
            kind: None,
            image_bytes: None,
            class: None,
        };
        assert_eq!(
            prompt_of(&plan(json!({"prompt": "a b"}))).as_deref(),
            Some("a b")
        );
        let chat = json!({"messages": [{"role": "system", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "hi there"},
                {"type": "image_url", "image_url": {"url": "data:"}}]}]});
        assert_eq!(prompt_of(&plan(chat)).as_deref(), Some("hi there"));
    }
}
