//! The OpenAI wire format: reading requests, counting prompt tokens, writing chunks.
//!
//! **Prompt token count** (documented in docs/sim.md): the number of whitespace-separated words
//! in every text the request carries (chat message contents, including text parts; completion
//! prompts; embedding inputs). A prompt given as token ids counts one token per id. Roles and
//! chat templates add nothing. The load generator's synthetic corpus uses one word per token, so
//! its prompts land on exact counts here.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

/// Which endpoint a request came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/completions`
    Completions,
    /// `/v1/embeddings`
    Embeddings,
}

impl Api {
    /// The name used in the log.
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Embeddings => "embeddings",
        }
    }
}

/// The parts of a request the simulator acts on.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedRequest {
    /// Prompt tokens by the simulator's count.
    pub prompt_tokens: u64,
    /// Number of embedding inputs (embeddings only).
    pub inputs: usize,
    /// `max_tokens` / `max_completion_tokens`, if given.
    pub max_tokens: Option<u64>,
    /// `min_tokens`, if given.
    pub min_tokens: u64,
    /// `ignore_eos`.
    pub ignore_eos: bool,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// `model`, when given as a string.
    pub model: Option<String>,
    /// A structured answer asked for: `response_format` or `tools` (chat only).
    pub structured: Option<crate::structured::Structured>,
}

/// Counts whitespace-separated words: the simulator's tokenizer.
pub fn count_words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

fn count_content(v: &Value) -> u64 {
    match v {
        Value::String(s) => count_words(s),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => count_words(s),
                Value::Number(_) => 1,
                Value::Object(o) => match o.get("image_url") {
                    Some(img) => image_tokens(img.get("url").and_then(Value::as_str).unwrap_or("")),
                    None => o.get("text").map(count_content).unwrap_or(0),
                },
                Value::Array(a) => a.len() as u64,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// Pixels per side of the patch an image token stands for (Qwen2-VL's 28 × 28).
pub const IMAGE_PATCH: u32 = 28;

/// Prompt tokens of an image part: one per [`IMAGE_PATCH`]² patch of a PNG data URL, read from
/// its header (512 × 512 is 19 × 19 = 361 tokens); an image it cannot read counts 0.
pub fn image_tokens(url: &str) -> u64 {
    use base64::Engine as _;
    let Some(b64) = url.strip_prefix("data:image/png;base64,") else {
        return 0;
    };
    // The signature and the IHDR chunk's width and height: the first 24 bytes, 32 characters.
    let Some(head) = b64.as_bytes().get(..32) else {
        return 0;
    };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(head) else {
        return 0;
    };
    if bytes.len() < 24 || &bytes[..8] != b"\x89PNG\r\n\x1a\n" || &bytes[12..16] != b"IHDR" {
        return 0;
    }
    let w = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
    let h = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    u64::from(w.div_ceil(IMAGE_PATCH)) * u64::from(h.div_ceil(IMAGE_PATCH))
}

/// Why a request body is refused (the message of a 400 answer).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The body is not JSON.
    #[error("invalid JSON body: {0}")]
    Json(serde_json::Error),
    /// The body is JSON but not an object.
    #[error("the body must be a JSON object")]
    NotObject,
    /// A count that is not a non-negative integer.
    #[error("`{0}` must be a non-negative integer")]
    NotCount(String),
    /// A required field is missing.
    #[error("`{0}` is required")]
    Missing(&'static str),
    /// A field of the wrong JSON type.
    #[error("`{field}` must be {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be, e.g. "an array".
        expected: &'static str,
    },
    /// A chat request without messages.
    #[error("`messages` must not be empty")]
    NoMessages,
    /// `max_tokens` of 0.
    #[error("`max_tokens` must be at least 1")]
    ZeroMaxTokens,
}

/// Reads a JSON request body for `api`; the error is a message for a 400 answer.
pub fn parse_request(api: Api, body: &[u8]) -> Result<ParsedRequest, RequestError> {
    let v: Value = serde_json::from_slice(body).map_err(RequestError::Json)?;
    let obj = v.as_object().ok_or(RequestError::NotObject)?;
    let uint = |k: &str| -> Result<Option<u64>, RequestError> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| RequestError::NotCount(k.to_string())),
        }
    };
    let wrong = |field, expected| RequestError::WrongType { field, expected };
    let (prompt_tokens, inputs) = match api {
        Api::Chat => {
            let msgs = obj
                .get("messages")
                .and_then(Value::as_array)
                .ok_or(wrong("messages", "an array"))?;
            if msgs.is_empty() {
                return Err(RequestError::NoMessages);
            }
            let n = msgs
                .iter()
                .map(|m| m.get("content").map(count_content).unwrap_or(0))
                .sum();
            (n, 1)
        }
        Api::Completions => {
            let p = obj.get("prompt").ok_or(RequestError::Missing("prompt"))?;
            let n = match p {
                Value::String(s) => count_words(s),
                Value::Array(_) => count_content(p),
                _ => return Err(wrong("prompt", "a string or an array")),
            };
            (n, 1)
        }
        Api::Embeddings => {
            let i = obj.get("input").ok_or(RequestError::Missing("input"))?;
            match i {
                Value::String(s) => (count_words(s), 1),
                Value::Array(a) if a.iter().all(Value::is_number) => (a.len() as u64, 1),
                Value::Array(a) => (count_content(i), a.len().max(1)),
                _ => return Err(wrong("input", "a string or an array")),
            }
        }
    };
    let max_tokens = match uint("max_completion_tokens")? {
        Some(n) => Some(n),
        None => uint("max_tokens")?,
    };
    if max_tokens == Some(0) {
        return Err(RequestError::ZeroMaxTokens);
    }
    let include_usage = obj
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(ParsedRequest {
        prompt_tokens,
        inputs,
        max_tokens,
        min_tokens: uint("min_tokens")?.unwrap_or(0),
        ignore_eos: obj
            .get("ignore_eos")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        stream: obj.get("stream").and_then(Value::as_bool).unwrap_or(false),
        include_usage,
        model: obj.get("model").and_then(Value::as_str).map(str::to_owned),
        structured: if api == Api::Chat {
            crate::structured::parse(obj)
        } else {
            None
        },
    })
}

/// The text of output token `k`: a word with a leading space, like most BPE tokens.
pub fn token_text(k: u64) -> &'static str {
    const WORDS: [&str; 16] = [
        " the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", " and",
        " then", " runs", " far", " into", " green", " hills",
    ];
    WORDS[(k % WORDS.len() as u64) as usize]
}

/// The end of a choice chunk: its finish reason (`null` before the last) and the event's end.
fn finish_tail(buf: &mut BytesMut, finish: Option<&str>) {
    match finish {
        Some(f) => {
            buf.put_u8(b'"');
            buf.put_slice(f.as_bytes());
            buf.put_u8(b'"');
        }
        None => buf.put_slice(b"null"),
    }
    buf.put_slice(b"}]}\n\n");
}

/// Writes the fixed parts of one request's SSE chunks once, so each token costs one small copy.
#[derive(Debug, Clone)]
pub struct ChunkWriter {
    api: Api,
    /// `data: {"id":..,"object":..,"created":..,"model":..,"choices":[` (shared by every chunk).
    head: Bytes,
}

impl ChunkWriter {
    /// A writer for a response with id `id`.
    pub fn new(api: Api, id: &str, created: u64, model: &str) -> Self {
        let object = match api {
            Api::Chat => "chat.completion.chunk",
            _ => "text_completion",
        };
        let head = format!(
            "data: {{\"id\":{},\"object\":\"{object}\",\"created\":{created},\"model\":{},\"choices\":[",
            Value::String(id.to_string()),
            Value::String(model.to_string())
        );
        ChunkWriter {
            api,
            head: Bytes::from(head),
        }
    }

    /// The role-only first chunk of a chat stream.
    pub fn role(&self, buf: &mut BytesMut) {
        buf.put_slice(&self.head);
        buf.put_slice(
            b"{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
        );
    }

    /// A chunk carrying output token `k`; `finish` is the finish reason on the last one;
    /// `reasoning` sends it as a chat delta's `reasoning_content`.
    pub fn token(&self, buf: &mut BytesMut, k: u64, finish: Option<&str>, reasoning: bool) {
        buf.put_slice(&self.head);
        match self.api {
            Api::Chat if reasoning => {
                buf.put_slice(b"{\"index\":0,\"delta\":{\"reasoning_content\":\"")
            }
            Api::Chat => buf.put_slice(b"{\"index\":0,\"delta\":{\"content\":\""),
            _ => buf.put_slice(b"{\"index\":0,\"text\":\""),
        }
        buf.put_slice(token_text(k).as_bytes());
        match self.api {
            Api::Chat => buf.put_slice(b"\"},\"logprobs\":null,\"finish_reason\":"),
            _ => buf.put_slice(b"\",\"logprobs\":null,\"finish_reason\":"),
        }
        finish_tail(buf, finish);
    }

    /// A chunk carrying piece `k` of a structured answer: `content`, or a tool call's
    /// arguments (its first piece also names the call and the tool).
    pub fn piece(
        &self,
        buf: &mut BytesMut,
        answer: &crate::structured::Answer,
        k: usize,
        finish: Option<&str>,
    ) {
        let text = Value::String(answer.pieces.get(k).cloned().unwrap_or_default()).to_string();
        buf.put_slice(&self.head);
        match &answer.tool {
            Some((id, name)) => {
                buf.put_slice(b"{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,");
                if k == 0 {
                    let head = serde_json::json!({"id": id, "type": "function"}).to_string();
                    buf.put_slice(&head.as_bytes()[1..head.len() - 1]);
                    buf.put_slice(b",\"function\":{\"name\":");
                    buf.put_slice(Value::String(name.clone()).to_string().as_bytes());
                    buf.put_slice(b",\"arguments\":");
                } else {
                    buf.put_slice(b"\"function\":{\"arguments\":");
                }
                buf.put_slice(text.as_bytes());
                buf.put_slice(b"}}]},\"logprobs\":null,\"finish_reason\":");
            }
            None if self.api == Api::Chat => {
                buf.put_slice(b"{\"index\":0,\"delta\":{\"content\":");
                buf.put_slice(text.as_bytes());
                buf.put_slice(b"},\"logprobs\":null,\"finish_reason\":");
            }
            None => {
                buf.put_slice(b"{\"index\":0,\"text\":");
                buf.put_slice(text.as_bytes());
                buf.put_slice(b",\"logprobs\":null,\"finish_reason\":");
            }
        }
        finish_tail(buf, finish);
    }

    /// The usage-only last chunk (`stream_options.include_usage`).
    pub fn usage(&self, buf: &mut BytesMut, prompt: u64, completion: u64, d: &UsageDetails) {
        buf.put_slice(&self.head);
        buf.put_slice(b"],\"usage\":");
        buf.put_slice(usage(prompt, completion, d).to_string().as_bytes());
        buf.put_slice(b"}\n\n");
    }

    /// The terminating `[DONE]` event.
    pub fn done(buf: &mut BytesMut) {
        buf.put_slice(b"data: [DONE]\n\n");
    }
}

/// Token details of a usage object beyond the counts (OpenAI's `prompt_tokens_details` and
/// `completion_tokens_details`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageDetails {
    /// Prompt tokens served from the prefix cache (sent when prefix caching is on).
    pub cached_tokens: Option<u64>,
    /// Output tokens that were reasoning (sent when there were any).
    pub reasoning_tokens: Option<u64>,
}

/// A usage object.
pub fn usage(prompt: u64, completion: u64, d: &UsageDetails) -> Value {
    let mut u = serde_json::json!({"prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion});
    if let Some(c) = d.cached_tokens {
        u["prompt_tokens_details"] = serde_json::json!({"cached_tokens": c});
    }
    if let Some(r) = d.reasoning_tokens {
        u["completion_tokens_details"] = serde_json::json!({"reasoning_tokens": r});
    }
    u
}

/// The whole text of `n` output tokens.
pub fn output_text(n: u64) -> String {
    (0..n).map(token_text).collect()
}

/// What a non-streamed answer holds.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens.
    pub completion: u64,
    /// Of which the first this-many are reasoning (chat).
    pub reasoning: u64,
    /// The finish reason.
    pub finish: &'a str,
    /// Token details of its usage.
    pub details: UsageDetails,
    /// A structured answer instead of words (chat).
    pub structured: Option<&'a crate::structured::Answer>,
}

/// A non-streaming chat or completion response body.
pub fn full_response(api: Api, id: &str, created: u64, model: &str, a: &Answer<'_>) -> Value {
    let Answer {
        prompt,
        completion,
        reasoning,
        finish,
        details,
        structured,
    } = *a;
    let details = &details;
    let text = output_text(completion);
    let choice = match api {
        Api::Chat if structured.is_some() => {
            let st = structured.expect("checked");
            let message = match &st.tool {
                Some((id, name)) => serde_json::json!({"role": "assistant", "content": null,
                    "tool_calls": [{"id": id, "type": "function",
                        "function": {"name": name, "arguments": st.text()}}]}),
                None => serde_json::json!({"role": "assistant", "content": st.text()}),
            };
            serde_json::json!({"index": 0, "message": message, "logprobs": null,
                "finish_reason": finish})
        }
        Api::Chat if reasoning > 0 => {
            let thought: String = (0..reasoning).map(token_text).collect();
            let answer: String = (reasoning..completion).map(token_text).collect();
            serde_json::json!({"index": 0,
                "message": {"role": "assistant", "content": answer, "reasoning_content": thought},
                "logprobs": null, "finish_reason": finish})
        }
        Api::Chat => serde_json::json!({"index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": null, "finish_reason": finish}),
        _ if structured.is_some() => {
            let st = structured.expect("checked");
            serde_json::json!({"index": 0, "text": st.text(), "logprobs": null,
                "finish_reason": finish})
        }
        _ => {
            serde_json::json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish})
        }
    };
    let object = if api == Api::Chat {
        "chat.completion"
    } else {
        "text_completion"
    };
    serde_json::json!({
        "id": id, "object": object, "created": created, "model": model,
        "choices": [choice],
        "usage": usage(prompt, completion, details),
    })
}

/// An embeddings response with deterministic unit vectors of dimension `dim`.
pub fn embeddings_response(
    model: &str,
    inputs: usize,
    dim: usize,
    prompt: u64,
    seed: u64,
) -> Value {
    let data: Vec<Value> = (0..inputs)
        .map(|i| {
            let mut rng = yardstick_timing::Rng::new(seed, i as u64);
            let v: Vec<f64> = (0..dim).map(|_| rng.unit() * 2.0 - 1.0).collect();
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
            let v: Vec<f32> = v.iter().map(|x| (x / norm) as f32).collect();
            serde_json::json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    serde_json::json!({
        "object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": prompt, "total_tokens": prompt},
    })
}

/// An OpenAI-style error body.
pub fn error_body(message: &str, kind: &str, code: u16) -> Value {
    serde_json::json!({"error": {"message": message, "type": kind, "code": code}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_in_chat_parts_and_token_ids() {
        let body = br#"{"messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"one two  three"}]}],
            "max_tokens":5,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}"#;
        let p = parse_request(Api::Chat, body).unwrap();
        assert_eq!(p.prompt_tokens, 5);
        assert_eq!(p.max_tokens, Some(5));
        assert!(p.stream && p.include_usage && p.ignore_eos);
        let p = parse_request(Api::Completions, br#"{"prompt":[1,2,3,4]}"#).unwrap();
        assert_eq!(p.prompt_tokens, 4);
        let p = parse_request(Api::Embeddings, br#"{"input":["a b","c"]}"#).unwrap();
        assert_eq!((p.prompt_tokens, p.inputs), (3, 2));
    }

    #[test]
    fn image_parts_count_their_patches() {
        // A 56 × 30 PNG's first 24 bytes: signature, IHDR length and type, width, height.
        use base64::Engine as _;
        let mut head = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        head.extend(56u32.to_be_bytes());
        head.extend(30u32.to_be_bytes());
        head.extend([8, 2, 0, 0, 0]);
        let url = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&head)
        );
        assert_eq!(image_tokens(&url), 2 * 2);
        let body = serde_json::json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": url}}]}]});
        let p = parse_request(Api::Chat, body.to_string().as_bytes()).unwrap();
        assert_eq!(p.prompt_tokens, 3 + 4);
        assert_eq!(image_tokens("https://example.com/cat.png"), 0);
        assert_eq!(image_tokens("data:image/png;base64,AAAA"), 0);
    }

    #[test]
    fn rejects_bad_requests() {
        assert!(parse_request(Api::Chat, b"{}").is_err());
        assert!(parse_request(Api::Chat, b"nope").is_err());
        assert!(parse_request(Api::Completions, br#"{"prompt":"x","max_tokens":0}"#).is_err());
        assert!(parse_request(Api::Completions, br#"{"prompt":"x","max_tokens":-3}"#).is_err());
    }

    #[test]
    fn chunks_are_valid_json_events() {
        let w = ChunkWriter::new(Api::Chat, "chatcmpl-1", 7, "m\"x");
        let mut b = BytesMut::new();
        w.role(&mut b);
        w.token(&mut b, 3, None, true);
        w.token(&mut b, 4, Some("length"), false);
        let d = UsageDetails {
            cached_tokens: Some(4),
            reasoning_tokens: Some(1),
        };
        w.usage(&mut b, 10, 2, &d);
        ChunkWriter::done(&mut b);
        let text = std::str::from_utf8(&b).unwrap();
        let events: Vec<&str> = text.split("\n\n").filter(|s| !s.is_empty()).collect();
        assert_eq!(events.len(), 5);
        for e in &events[..4] {
            let v: Value = serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(v["model"], "m\"x");
        }
        let v: Value = serde_json::from_str(&events[2][6..]).unwrap();
        assert_eq!(v["choices"][0]["delta"]["content"], token_text(4));
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        let u: Value = serde_json::from_str(&events[3][6..]).unwrap();
        assert_eq!(u["usage"]["total_tokens"], 12);
        assert_eq!(u["choices"].as_array().unwrap().len(), 0);
        assert_eq!(events[4], "data: [DONE]");
    }
}
