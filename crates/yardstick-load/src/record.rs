//! The raw per-request record: every timestamp a metric is computed from.

use serde::{Deserialize, Serialize};
use yardstick_spec::metrics::id;

pub use yardstick_timing::Clock;

/// Why a request failed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// No connection could be made (refused, unreachable, TLS or handshake failure).
    Connect,
    /// No complete answer within the request timeout.
    Timeout,
    /// The server answered 4xx.
    Http4xx,
    /// The server answered 5xx.
    Http5xx,
    /// Any other non-success status.
    HttpOther,
    /// The connection broke after the request was sent (mid-response, mid-stream).
    StreamCut,
    /// An event or body could not be understood, or the stream reported an error.
    MalformedEvent,
}

impl ErrorClass {
    /// Every class, in declaration order.
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Http4xx,
        ErrorClass::Http5xx,
        ErrorClass::HttpOther,
        ErrorClass::StreamCut,
        ErrorClass::MalformedEvent,
    ];

    /// The stable name used in summaries.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Http4xx => "http_4xx",
            ErrorClass::Http5xx => "http_5xx",
            ErrorClass::HttpOther => "http_other",
            ErrorClass::StreamCut => "stream_cut",
            ErrorClass::MalformedEvent => "malformed_event",
        }
    }
}

/// Where an output token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage`.
    ServerUsage,
    /// A local `tokenizer.json`.
    Tokenizer,
    /// The number of content events (a lower bound when servers batch tokens per event).
    ContentEvents,
}

/// Where a prompt token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptTokenSource {
    /// The server's `usage.prompt_tokens`.
    ServerUsage,
    /// The plan, cut to an exact count of a local `tokenizer.json`.
    Tokenizer,
    /// The plan's word count (no tokenizer: exact for servers that count words, as the sim does).
    PlanWords,
}

impl PromptTokenSource {
    /// The stable name used in records.
    pub fn name(self) -> &'static str {
        match self {
            PromptTokenSource::ServerUsage => "server_usage",
            PromptTokenSource::Tokenizer => "tokenizer",
            PromptTokenSource::PlanWords => "plan_words",
        }
    }

    /// The source named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::ServerUsage, Self::Tokenizer, Self::PlanWords]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// One request, as it happened. Timestamps are unix-epoch nanoseconds.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RequestRecord {
    /// Index in the plan (for a session's turn: [`session_request_index`]).
    pub index: u64,
    /// The session (its index in the plan) this request is a turn of, in a session workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// The turn of the session, from 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Turns its session was planned to have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_turns: Option<u32>,
    /// The model it was sent to, when the run mixed models (`--model NAME=WEIGHT`, repeated);
    /// absent for a single model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The request kind, when the run asked for kinds (`--kind`); absent for plain text runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::kinds::Kind>,
    /// Whether the answer was valid for its kind (a tool call whose arguments match the tool's
    /// parameters, JSON that matches the schema); absent for failed requests and plain text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
    /// Why the answer was not valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// The eval task of an eval item mixed into the load (`--eval-mix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_task: Option<String>,
    /// Bytes of the images the request carried (PNG, before base64), when the run sent images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_bytes: Option<u64>,
    /// Its class: the part of a mixed scenario it drew, from 0 (`0.8*D(64,16) + 0.2*D(2048,16)`);
    /// absent for a single scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<u8>,
    /// Sent as `X-Request-Id` (joins with server logs).
    pub request_id: String,
    /// The W3C trace id sent in its `traceparent` header (joins with the server's traces);
    /// absent with `--no-trace-context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The id the server gave its response (`id` of the body or of the first stream chunk,
    /// e.g. `chatcmpl-…`): joins with the server's own logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Part of the warm-up (excluded from metrics).
    pub warmup: bool,
    /// Prompt tokens the plan asked for.
    pub planned_input_tokens: u64,
    /// Output tokens the plan forced, if any.
    pub planned_output_tokens: Option<u64>,
    /// When the load model meant to send it.
    pub scheduled_ns: u64,
    /// When it was handed to the connection.
    pub sent_ns: Option<u64>,
    /// When the response head arrived.
    pub first_byte_ns: Option<u64>,
    /// When the first content event arrived.
    pub first_content_ns: Option<u64>,
    /// When the first answer event arrived: content that is not reasoning
    /// (`reasoning_content`/`reasoning`). Equal to `first_content_ns` for a model that does
    /// not reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_answer_ns: Option<u64>,
    /// When the last content event arrived.
    pub last_content_ns: Option<u64>,
    /// When the response was complete (`[DONE]` or end of body) or the request failed.
    pub done_ns: Option<u64>,
    /// Arrival time of every content event.
    #[serde(skip)]
    pub content_event_ns: Vec<u64>,
    /// HTTP status, if a response head arrived.
    pub status: Option<u16>,
    /// The `Retry-After` the last response gave, in seconds (a date is counted from when it
    /// arrived), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
    /// Earlier attempts the server turned away and the client tried again (a retry policy:
    /// `retry` on the serve entry, `--retry-on`); the fields above describe the last attempt,
    /// except `sent_ns`, which is the first attempt's, and every latency counts from
    /// `scheduled_ns`, waits included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<Retry>,
    /// Why it failed, if it did.
    pub error: Option<ErrorClass>,
    /// What went wrong, for people.
    pub error_message: Option<String>,
    /// Prompt tokens reported by the server.
    pub prompt_tokens: Option<u64>,
    /// Where the prompt count that metrics use came from: the server's `prompt_tokens`, else
    /// `planned_input_tokens` (exact under a tokenizer, words without one).
    pub prompt_tokens_source: Option<PromptTokenSource>,
    /// Output tokens (see `output_tokens_source`).
    pub output_tokens: Option<u64>,
    /// Output tokens that were reasoning: the server's
    /// `usage.completion_tokens_details.reasoning_tokens`, else the number of reasoning events
    /// (none when the answer had no reasoning).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Content events that were reasoning.
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_events: u64,
    /// Prompt tokens the server served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
    /// Where `output_tokens` came from.
    pub output_tokens_source: Option<TokenSource>,
    /// Number of content events received.
    pub content_events: u64,
    /// Bytes of content received.
    pub content_bytes: u64,
    /// Output tokens by the local tokenizer, when one is configured.
    pub local_output_tokens: Option<u64>,
    /// The content text, kept only while a local tokenizer needs it, or for good when the
    /// client keeps responses ([`crate::Client::keeping_responses`]).
    #[serde(skip)]
    pub content_text: Option<String>,
    /// The answer's text without any reasoning, kept only when the client keeps text
    /// ([`crate::Client::keeping_text`]): what a conversation's next turn sends back.
    #[serde(skip)]
    pub answer_text: Option<String>,
    /// The whole response body of a non-streamed request, only when the client keeps
    /// responses (log-probabilities, usage and anything else a caller wants to read).
    #[serde(skip)]
    pub response_body: Option<bytes::Bytes>,
    /// The tool calls of the answer, kept only while a request kind checks them.
    #[serde(skip)]
    pub tool_calls: Option<Vec<crate::kinds::ToolCall>>,
}

/// An attempt the server turned away, after which the client waited and tried again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Retry {
    /// The status it was answered with (429, 503).
    pub status: u16,
    /// The `Retry-After` it gave, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
    /// How long the client waited before the next attempt, ms.
    pub waited_ms: f64,
}

impl RequestRecord {
    /// Attempts made: 1 plus the retries.
    pub fn attempts(&self) -> u64 {
        1 + self.retries.len() as u64
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Turns a session may have: a session's turn `t` is request `session × MAX_TURNS + t`.
pub use yardstick_spec::session::MAX_TURNS;

/// The request index of turn `turn` of session `session`.
pub fn session_request_index(session: u64, turn: u32) -> u64 {
    session * MAX_TURNS + u64::from(turn)
}

fn ms(a: u64, b: u64) -> f64 {
    (b as f64 - a as f64) / 1e6
}

impl RequestRecord {
    /// A record for a request scheduled at `scheduled_ns`.
    pub fn new(
        index: u64,
        request_id: String,
        warmup: bool,
        input: u64,
        output: Option<u64>,
        scheduled_ns: u64,
    ) -> Self {
        RequestRecord {
            index,
            session: None,
            turn: None,
            session_turns: None,
            model: None,
            kind: None,
            valid: None,
            invalid_reason: None,
            eval_task: None,
            image_bytes: None,
            class: None,
            request_id,
            trace_id: None,
            response_id: None,
            warmup,
            planned_input_tokens: input,
            planned_output_tokens: output,
            scheduled_ns,
            sent_ns: None,
            first_byte_ns: None,
            first_content_ns: None,
            first_answer_ns: None,
            last_content_ns: None,
            done_ns: None,
            content_event_ns: Vec::new(),
            status: None,
            retry_after_s: None,
            retries: Vec::new(),
            error: None,
            error_message: None,
            prompt_tokens: None,
            prompt_tokens_source: None,
            output_tokens: None,
            reasoning_tokens: None,
            reasoning_events: 0,
            cached_prompt_tokens: None,
            output_tokens_source: None,
            content_events: 0,
            content_bytes: 0,
            local_output_tokens: None,
            content_text: None,
            answer_text: None,
            response_body: None,
            tool_calls: None,
        }
    }

    /// Succeeded (no error class).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Scheduled → first content event.
    pub fn ttft_ms(&self) -> Option<f64> {
        self.first_content_ns.map(|t| ms(self.scheduled_ns, t))
    }

    /// Scheduled → last content event (streams) or complete response (non-streaming).
    pub fn e2e_ms(&self) -> Option<f64> {
        self.last_content_ns
            .or(if self.first_content_ns.is_none() {
                self.done_ns
            } else {
                None
            })
            .map(|t| ms(self.scheduled_ns, t))
    }

    /// (E2E − TTFT) / (output tokens − 1); undefined below 2 tokens.
    pub fn tpot_ms(&self) -> Option<f64> {
        let n = self.output_tokens?;
        if n < 2 {
            return None;
        }
        let ttft = self.ttft_ms()?;
        Some((self.e2e_ms()? - ttft) / (n - 1) as f64)
    }

    /// Scheduled → first answer event (after any reasoning): the time to the first token a
    /// user reads. Defined for streamed answers only.
    pub fn answer_ttft_ms(&self) -> Option<f64> {
        self.first_answer_ns.map(|t| ms(self.scheduled_ns, t))
    }

    /// The plan unit this request belongs to: its session in a session workload, else itself
    /// (shards split plan units).
    pub fn plan_unit(&self) -> u64 {
        self.session.unwrap_or(self.index)
    }

    /// Send − scheduled: time the request waited inside the client.
    pub fn client_queue_ms(&self) -> Option<f64> {
        self.sent_ns.map(|t| ms(self.scheduled_ns, t))
    }

    /// Gaps between consecutive content events, in ms.
    pub fn itl_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.content_event_ns.windows(2).map(|w| ms(w[0], w[1]))
    }

    /// The record as one JSON line for `requests.jsonl`, with derived metrics and ITL gaps.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert(id::TTFT_MS.into(), self.ttft_ms().into());
            o.insert(id::TPOT_MS.into(), self.tpot_ms().into());
            o.insert(id::E2E_MS.into(), self.e2e_ms().into());
            o.insert(id::CLIENT_QUEUE_MS.into(), self.client_queue_ms().into());
            if self.first_answer_ns.is_some() && self.reasoning_events > 0 {
                o.insert(id::ANSWER_TTFT_MS.into(), self.answer_ttft_ms().into());
            }
            o.insert(
                id::ITL_MS.into(),
                self.itl_ms()
                    .map(|x| (x * 1e3).round() / 1e3)
                    .collect::<Vec<_>>()
                    .into(),
            );
        }
        v
    }
}
