//! The OpenAI wire format from the client's side: request bodies and streamed events.

use std::borrow::Cow;

use serde::Deserialize;

/// Which API a benchmark drives.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/chat/completions`
    Chat,
    /// `/v1/completions`
    Completions,
    /// `/v1/embeddings`
    Embeddings,
}

impl Api {
    /// The path under the base URL's `/v1`.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Completions => "/completions",
            Api::Embeddings => "/embeddings",
        }
    }
}

impl std::fmt::Display for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Embeddings => "embeddings",
        })
    }
}

/// A name that is not an [`Api`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API `{0}` (accepted: chat, completions, embeddings)")]
pub struct UnknownApi(pub String);

impl std::str::FromStr for Api {
    type Err = UnknownApi;
    fn from_str(s: &str) -> Result<Self, UnknownApi> {
        match s {
            "chat" => Ok(Api::Chat),
            "completions" => Ok(Api::Completions),
            "embeddings" => Ok(Api::Embeddings),
            _ => Err(UnknownApi(s.to_string())),
        }
    }
}

/// What the request asks for, beyond the prompt.
#[derive(Debug, Clone)]
pub struct BodyOptions {
    /// Stream the response (SSE).
    pub stream: bool,
    /// Send `ignore_eos` and `min_tokens` to force the output length (vLLM, SGLang, the sim).
    pub force_output: bool,
}

/// A request body for `api`.
pub fn request_body(
    api: Api,
    model: &str,
    prompt: &str,
    max_tokens: Option<u64>,
    opts: &BodyOptions,
) -> Vec<u8> {
    use serde_json::{Map, Value, json};
    let mut m = Map::new();
    m.insert("model".into(), json!(model));
    match api {
        Api::Chat => return chat_body(model, &[("user", prompt)], max_tokens, opts),
        Api::Completions => {
            m.insert("prompt".into(), json!(prompt));
        }
        Api::Embeddings => {
            m.insert("input".into(), json!(prompt));
            return serde_json::to_vec(&Value::Object(m)).unwrap_or_default();
        }
    }
    generation_options(&mut m, max_tokens, opts);
    serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
}

/// A chat request body with these `(role, content)` messages (a conversation so far).
pub fn chat_body(
    model: &str,
    messages: &[(&str, &str)],
    max_tokens: Option<u64>,
    opts: &BodyOptions,
) -> Vec<u8> {
    chat_body_with(model, messages, max_tokens, opts, &[])
}

/// A chat request body with `extra` fields beside the messages (a request kind's `tools`,
/// `tool_choice` or `response_format`).
pub fn chat_body_with(
    model: &str,
    messages: &[(&str, &str)],
    max_tokens: Option<u64>,
    opts: &BodyOptions,
    extra: &[(&str, serde_json::Value)],
) -> Vec<u8> {
    chat_body_messages(
        model,
        messages
            .iter()
            .map(|(role, content)| serde_json::json!({"role": role, "content": content}))
            .collect(),
        max_tokens,
        opts,
        extra,
    )
}

/// A chat request body with these messages as JSON (content parts: text and images) and
/// `extra` fields beside them.
pub fn chat_body_messages(
    model: &str,
    messages: Vec<serde_json::Value>,
    max_tokens: Option<u64>,
    opts: &BodyOptions,
    extra: &[(&str, serde_json::Value)],
) -> Vec<u8> {
    generation_body(
        model,
        ("messages", serde_json::Value::Array(messages)),
        max_tokens,
        opts,
        extra,
    )
}

/// A `/v1/completions` body for `prompt` with `extra` fields (`temperature`, `stop`, ...).
pub fn completion_body(
    model: &str,
    prompt: &str,
    max_tokens: Option<u64>,
    opts: &BodyOptions,
    extra: &[(&str, serde_json::Value)],
) -> Vec<u8> {
    generation_body(
        model,
        ("prompt", serde_json::Value::from(prompt)),
        max_tokens,
        opts,
        extra,
    )
}

/// A generation request's body: `extra` fields, the model, the input (`messages` or
/// `prompt`) and the generation options.
fn generation_body(
    model: &str,
    input: (&str, serde_json::Value),
    max_tokens: Option<u64>,
    opts: &BodyOptions,
    extra: &[(&str, serde_json::Value)],
) -> Vec<u8> {
    use serde_json::{Map, Value, json};
    let mut m = Map::new();
    for (k, v) in extra {
        m.insert((*k).to_string(), v.clone());
    }
    m.insert("model".into(), json!(model));
    m.insert(input.0.to_string(), input.1);
    generation_options(&mut m, max_tokens, opts);
    serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
}

fn generation_options(
    m: &mut serde_json::Map<String, serde_json::Value>,
    max_tokens: Option<u64>,
    opts: &BodyOptions,
) {
    use serde_json::json;
    if let Some(n) = max_tokens {
        m.insert("max_tokens".into(), json!(n));
        if opts.force_output {
            m.insert("min_tokens".into(), json!(n));
            m.insert("ignore_eos".into(), json!(true));
        }
    }
    if opts.stream {
        m.insert("stream".into(), json!(true));
        m.insert("stream_options".into(), json!({"include_usage": true}));
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
}

/// A piece of a streamed tool call (`delta.tool_calls[]`).
#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// A piece of tool call `index` that one event carries: part of its name and of its
/// arguments (the JSON text arrives in pieces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallPiece {
    /// Which call of the answer (`tool_calls[].index`).
    pub index: usize,
    /// Part of `function.name` (the whole name, in practice, in the call's first piece).
    pub name: String,
    /// Part of `function.arguments`.
    pub arguments: String,
}

/// Adds `pieces` to the calls assembled so far.
pub fn add_tool_pieces(calls: &mut Vec<crate::kinds::ToolCall>, pieces: &[ToolCallPiece]) {
    for p in pieces {
        // A bounded index: a hostile stream must not make the client allocate without end.
        let i = p.index.min(63);
        if calls.len() <= i {
            calls.resize_with(i + 1, Default::default);
        }
        calls[i].name.push_str(&p.name);
        calls[i].arguments.push_str(&p.arguments);
    }
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// Details of the prompt tokens.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    /// Details of the output tokens.
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct PromptDetails {
    /// Prompt tokens served from the prefix cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct CompletionDetails {
    /// Output tokens that were reasoning.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// `prompt_tokens_details.cached_tokens`.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }

    /// `completion_tokens_details.reasoning_tokens`.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
    }
}

/// What one SSE event means to the benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEvent {
    /// Bytes of non-empty `content`, `reasoning_content`/`reasoning` or `text` it carries;
    /// 0 for role-only, finish-only and usage-only chunks.
    pub content_bytes: usize,
    /// Bytes of those that were reasoning (`reasoning_content`/`reasoning`).
    pub reasoning_bytes: usize,
    /// The text of the parts that are not reasoning, when text is asked for.
    pub answer_text: String,
    /// The content text, when asked for (local token counting).
    pub text: String,
    /// The usage it reports, if any.
    pub usage: Option<Usage>,
    /// The server reported an error inside the stream.
    pub error: bool,
    /// Pieces of tool calls, when text is asked for (their bytes count in `content_bytes`:
    /// a call's name and arguments are output tokens).
    pub tool_calls: Vec<ToolCallPiece>,
}

/// Why an event's data could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("malformed event: {0}")]
pub struct MalformedEvent(pub String);

fn classify_one(data: &[u8], want_text: bool) -> Result<StreamEvent, serde_json::Error> {
    let c: Chunk<'_> = serde_json::from_slice(data)?;
    let mut bytes = 0;
    let mut reasoning = 0;
    let mut text = String::new();
    let mut answer_text = String::new();
    let mut tool_calls = Vec::new();
    for ch in &c.choices {
        let delta = ch.delta.as_ref();
        for tc in delta
            .and_then(|d| d.tool_calls.as_ref())
            .into_iter()
            .flatten()
        {
            let f = tc.function.as_ref();
            let name = f.and_then(|f| f.name.as_deref()).unwrap_or_default();
            let arguments = f.and_then(|f| f.arguments.as_deref()).unwrap_or_default();
            bytes += name.len() + arguments.len();
            if want_text && !(name.is_empty() && arguments.is_empty()) {
                tool_calls.push(ToolCallPiece {
                    index: tc.index.unwrap_or(0),
                    name: name.to_string(),
                    arguments: arguments.to_string(),
                });
            }
        }
        let parts = [
            (ch.text.as_ref(), false),
            (delta.and_then(|d| d.content.as_ref()), false),
            (delta.and_then(|d| d.reasoning_content.as_ref()), true),
            (delta.and_then(|d| d.reasoning.as_ref()), true),
        ];
        for (s, is_reasoning) in parts {
            let Some(s) = s else { continue };
            bytes += s.len();
            if is_reasoning {
                reasoning += s.len();
            }
            if want_text {
                text.push_str(s);
                if !is_reasoning {
                    answer_text.push_str(s);
                }
            }
        }
    }
    Ok(StreamEvent {
        answer_text,
        content_bytes: bytes,
        reasoning_bytes: reasoning,
        text,
        usage: c.usage,
        error: c.error.is_some(),
        tool_calls,
    })
}

/// Classifies an event's data. `Ok(None)` is the `[DONE]` sentinel.
pub fn classify(data: &[u8]) -> Result<Option<StreamEvent>, MalformedEvent> {
    classify_with(data, false)
}

/// The `id` of a stream chunk (`chatcmpl-…`), if it has one.
pub fn response_id(data: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Id<'a> {
        #[serde(default, borrow)]
        id: Option<&'a str>,
    }
    let v: Id<'_> = serde_json::from_slice(data.trim_ascii()).ok()?;
    v.id.filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Like [`classify`], also returning the content text when `want_text`.
pub fn classify_with(data: &[u8], want_text: bool) -> Result<Option<StreamEvent>, MalformedEvent> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        return Ok(None);
    }
    match classify_one(trimmed, want_text) {
        Ok(e) => Ok(Some(e)),
        Err(first) => {
            // Lenient: some servers put several JSON objects on consecutive `data:` lines of
            // one event. Merge them if every line parses.
            if trimmed.contains(&b'\n') {
                let mut merged = StreamEvent {
                    content_bytes: 0,
                    reasoning_bytes: 0,
                    answer_text: String::new(),
                    text: String::new(),
                    usage: None,
                    error: false,
                    tool_calls: Vec::new(),
                };
                for line in trimmed.split(|&b| b == b'\n') {
                    let line = line.trim_ascii();
                    if line.is_empty() || line == b"[DONE]" {
                        continue;
                    }
                    let e =
                        classify_one(line, want_text).map_err(|_| malformed(trimmed, &first))?;
                    merged.content_bytes += e.content_bytes;
                    merged.reasoning_bytes += e.reasoning_bytes;
                    merged.text.push_str(&e.text);
                    merged.answer_text.push_str(&e.answer_text);
                    merged.usage = e.usage.or(merged.usage);
                    merged.error |= e.error;
                    merged.tool_calls.extend(e.tool_calls);
                }
                return Ok(Some(merged));
            }
            Err(malformed(trimmed, &first))
        }
    }
}

fn malformed(data: &[u8], e: &serde_json::Error) -> MalformedEvent {
    let shown: String = String::from_utf8_lossy(data).chars().take(120).collect();
    MalformedEvent(format!("{e}: `{shown}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_only_reasoning_usage_and_done() {
        let role = br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(classify(role).unwrap().unwrap().content_bytes, 0);
        let r = br#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#;
        let e = classify(r).unwrap().unwrap();
        assert_eq!((e.content_bytes, e.reasoning_bytes), (3, 3));
        let a = br#"{"choices":[{"delta":{"content":"ok"}}]}"#;
        assert_eq!(classify(a).unwrap().unwrap().reasoning_bytes, 0);
        let d = br#"{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":4}}}"#;
        let u = classify(d).unwrap().unwrap().usage.unwrap();
        assert_eq!(
            (u.cached_tokens(), u.reasoning_tokens()),
            (Some(32), Some(4))
        );
        let t = br#"{"choices":[{"text":"ab\u00e9"}]}"#;
        assert_eq!(classify(t).unwrap().unwrap().content_bytes, 4);
        let u = br#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}}"#;
        let e = classify(u).unwrap().unwrap();
        assert_eq!(e.content_bytes, 0);
        assert_eq!(e.usage.unwrap().completion_tokens, Some(9));
        assert!(classify(b" [DONE] ").unwrap().is_none());
        assert!(classify(b"{not json").is_err());
        let two = b"{\"choices\":[{\"text\":\"a\"}]}\n{\"choices\":[{\"text\":\"b\"}]}";
        assert_eq!(classify(two).unwrap().unwrap().content_bytes, 2);
    }

    #[test]
    fn tool_call_pieces_are_content_and_assemble_into_calls() {
        let first = br#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#;
        let e = classify_with(first, true).unwrap().unwrap();
        assert_eq!(e.content_bytes, "get_weather".len());
        let rest = br#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Oslo\"}"}}]}}]}"#;
        let e2 = classify_with(rest, true).unwrap().unwrap();
        assert_eq!(e2.content_bytes, r#"{"city": "Oslo"}"#.len());
        assert!(e2.answer_text.is_empty());
        let mut calls = Vec::new();
        add_tool_pieces(&mut calls, &e.tool_calls);
        add_tool_pieces(&mut calls, &e2.tool_calls);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].name, "get_weather");
        assert_eq!(calls[0].arguments, r#"{"city": "Oslo"}"#);
        // Without text, only the bytes are counted.
        assert!(classify(rest).unwrap().unwrap().tool_calls.is_empty());
    }

    #[test]
    fn bodies_ask_for_usage_and_forced_lengths() {
        let opts = BodyOptions {
            stream: true,
            force_output: true,
        };
        let b = request_body(Api::Chat, "m", "hi there", Some(7), &opts);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["messages"][0]["content"], "hi there");
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["min_tokens"], 7);
        let b = request_body(Api::Embeddings, "m", "x", Some(7), &opts);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert!(v.get("stream").is_none() && v["input"] == "x");
    }
}
