//! Structured answers (documented in docs/sim.md, "Tool calls, structured output and images"):
//! a request with `response_format: {type: json_schema}` is answered with a JSON object that
//! matches the schema, one with `tools` with a call of a tool whose arguments match its
//! parameters — generated from the schema, seeded by the request. A share of them
//! (`--invalid-rate`) is broken on purpose, so a test sees the client count it: a JSON answer
//! loses a required property (it still parses), a tool call's arguments are cut short (they no
//! longer parse).
//!
//! The answer is streamed in pieces of at most [`PIECE_CHARS`] characters, one piece per output
//! token, and is as long as it is: it ends when the object does (`finish_reason` `stop`, or
//! `tool_calls`), or at `max_tokens` cut short (`length`), as a constrained decoder does.

use serde_json::{Value, json};
use yardstick_timing::Rng;

/// Characters per piece (per output token) of a structured answer.
pub const PIECE_CHARS: usize = 4;

/// Deepest nesting the generator follows.
const MAX_DEPTH: usize = 8;

/// What a request asks for beyond text.
#[derive(Debug, Clone, PartialEq)]
pub enum Structured {
    /// JSON matching `schema` (`response_format`).
    Json {
        /// The schema (`{"type": "object"}` for `json_object`).
        schema: Value,
    },
    /// A call of the tool `name` with arguments matching `parameters` (`tools`).
    Tool {
        /// The tool's name.
        name: String,
        /// Its parameters' schema.
        parameters: Value,
    },
}

/// Reads `response_format` and `tools`/`tool_choice` of a chat request body.
pub fn parse(obj: &serde_json::Map<String, Value>) -> Option<Structured> {
    if let Some(tools) = obj.get("tools").and_then(Value::as_array)
        && !tools.is_empty()
        && obj.get("tool_choice").and_then(Value::as_str) != Some("none")
    {
        // A named choice calls that tool; otherwise the first.
        let chosen = obj
            .get("tool_choice")
            .and_then(|c| c.get("function"))
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str);
        let tool = tools
            .iter()
            .find(|t| chosen.is_some() && t["function"]["name"].as_str() == chosen)
            .unwrap_or(&tools[0]);
        let f = &tool["function"];
        return Some(Structured::Tool {
            name: f["name"].as_str().unwrap_or("tool").to_string(),
            parameters: f
                .get("parameters")
                .cloned()
                .unwrap_or(json!({"type": "object"})),
        });
    }
    let rf = obj.get("response_format")?;
    match rf.get("type").and_then(Value::as_str)? {
        "json_schema" => Some(Structured::Json {
            schema: rf["json_schema"]
                .get("schema")
                .cloned()
                .unwrap_or(json!({"type": "object"})),
        }),
        "json_object" => Some(Structured::Json {
            schema: json!({"type": "object"}),
        }),
        _ => None,
    }
}

/// The answer of a structured request, ready to stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// `Some((call id, tool name))` for a tool call.
    pub tool: Option<(String, String)>,
    /// The text (JSON) in pieces, one per output token.
    pub pieces: Vec<String>,
    /// Cut at `max_tokens`.
    pub truncated: bool,
}

impl Answer {
    /// A plain text answer (the answer oracle's), one piece per word with the whitespace
    /// before it, cut at `max_tokens`.
    pub fn plain(text: &str, max_tokens: u64) -> Answer {
        let mut pieces: Vec<String> = crate::quality::tokens_of(text)
            .into_iter()
            .map(str::to_string)
            .collect();
        if pieces.is_empty() {
            pieces.push(String::new());
        }
        let max = usize::try_from(max_tokens.max(1)).unwrap_or(usize::MAX);
        let truncated = pieces.len() > max;
        pieces.truncate(max);
        Answer {
            tool: None,
            pieces,
            truncated,
        }
    }

    /// The whole text.
    pub fn text(&self) -> String {
        self.pieces.concat()
    }

    /// The finish reason of its last piece.
    pub fn finish(&self) -> &'static str {
        match (self.truncated, &self.tool) {
            (true, _) => "length",
            (false, Some(_)) => "tool_calls",
            (false, None) => "stop",
        }
    }
}

const WORDS: [&str; 8] = [
    "Oslo", "Lima", "Kyoto", "Quito", "amber", "cedar", "delta", "ember",
];

/// A value that matches `schema` (the common keywords: type, enum, const, properties,
/// required, items, minItems/maxItems, minimum/maximum, anyOf/oneOf/allOf's first).
pub fn generate(schema: &Value, rng: &mut Rng) -> Value {
    gen_at(schema, rng, 0)
}

fn gen_at(schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.is_empty()
    {
        return e[(rng.next_u64() % e.len() as u64) as usize].clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return gen_at(first, rng, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    let num = |k: &str| schema.get(k).and_then(Value::as_f64);
    match ty {
        "object" => {
            let mut o = serde_json::Map::new();
            if depth < MAX_DEPTH
                && let Some(props) = schema.get("properties").and_then(Value::as_object)
            {
                for (k, s) in props {
                    o.insert(k.clone(), gen_at(s, rng, depth + 1));
                }
            }
            Value::Object(o)
        }
        "array" => {
            let lo = num("minItems").unwrap_or(1.0).max(0.0) as u64;
            let hi = num("maxItems")
                .map_or(lo.max(2), |h| h.max(0.0) as u64)
                .max(lo);
            let n = if depth < MAX_DEPTH {
                lo + rng.next_u64() % (hi - lo + 1)
            } else {
                0
            };
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..n).map(|_| gen_at(&items, rng, depth + 1)).collect())
        }
        "integer" | "number" => {
            let lo = num("minimum")
                .or(num("exclusiveMinimum").map(|x| x.floor() + 1.0))
                .unwrap_or(1.0);
            let hi = num("maximum")
                .or(num("exclusiveMaximum").map(|x| x.ceil() - 1.0))
                .unwrap_or(lo + 99.0)
                .max(lo);
            let v = (lo + (rng.next_u64() % ((hi - lo) as u64 + 1)) as f64).min(hi);
            json!(v.ceil() as i64)
        }
        "boolean" => json!(rng.next_u64().is_multiple_of(2)),
        "null" => Value::Null,
        _ => {
            let w = WORDS[(rng.next_u64() % WORDS.len() as u64) as usize];
            let min = num("minLength").unwrap_or(0.0) as usize;
            let mut s = w.to_string();
            while s.chars().count() < min {
                s.push('x');
            }
            if let Some(max) = num("maxLength") {
                s = s.chars().take(max as usize).collect();
            }
            json!(s)
        }
    }
}

/// Splits `text` into pieces of at most [`PIECE_CHARS`] characters.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(PIECE_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

/// The answer to `s` for request `seq`, at most `max_tokens` pieces; `broken` makes it
/// invalid (see the module docs).
pub fn answer(s: &Structured, rng: &mut Rng, seq: u64, max_tokens: u64, broken: bool) -> Answer {
    let (schema, tool) = match s {
        Structured::Json { schema } => (schema, None),
        Structured::Tool { name, parameters } => {
            (parameters, Some((format!("call_{seq}"), name.clone())))
        }
    };
    let mut value = generate(schema, rng);
    let mut text = value.to_string();
    if broken {
        match (&tool, value.as_object_mut()) {
            // A JSON answer without a required property: it parses, but does not match.
            (None, Some(o))
                if schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| !r.is_empty()) =>
            {
                let first = schema["required"][0].as_str().unwrap_or_default();
                o.remove(first);
                text = value.to_string();
            }
            // Otherwise, cut short: it no longer parses.
            _ => {
                let keep = text.chars().count() / 2;
                text = text.chars().take(keep).collect();
            }
        }
    }
    let mut parts = pieces(&text);
    if parts.is_empty() {
        parts.push(String::new());
    }
    let max = max_tokens.max(1) as usize;
    let truncated = parts.len() > max;
    parts.truncate(max);
    Answer {
        tool,
        pieces: parts,
        truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_ask_for_json_or_a_tool() {
        let body = json!({"tools": [{"type": "function", "function": {"name": "a"}},
            {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "b"}}});
        assert_eq!(
            parse(body.as_object().unwrap()),
            Some(Structured::Tool {
                name: "b".into(),
                parameters: json!({"type": "object"})
            })
        );
        let none = json!({"tools": [{"function": {"name": "a"}}], "tool_choice": "none"});
        assert_eq!(parse(none.as_object().unwrap()), None);
        let rf = json!({"response_format": {"type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "integer"}}}});
        assert_eq!(
            parse(rf.as_object().unwrap()),
            Some(Structured::Json {
                schema: json!({"type": "integer"})
            })
        );
        assert_eq!(parse(json!({}).as_object().unwrap()), None);
    }

    #[test]
    fn answers_match_their_schema_and_broken_ones_do_not() {
        let schema = json!({"type": "object",
            "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 5},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "unit": {"enum": ["c", "f"]}, "ok": {"type": "boolean"},
                "name": {"type": "string", "minLength": 6}},
            "required": ["id", "unit"]});
        let s = Structured::Json {
            schema: schema.clone(),
        };
        for seq in 0..50 {
            let a = answer(&s, &mut Rng::new(1, seq), seq, 1000, false);
            let v: Value = serde_json::from_str(&a.text()).unwrap();
            let id = v["id"].as_i64().unwrap();
            assert!((1..=5).contains(&id), "{v}");
            assert!(v["tags"].as_array().unwrap().len() <= 3);
            assert!(v["name"].as_str().unwrap().len() >= 6);
            assert!(["c", "f"].contains(&v["unit"].as_str().unwrap()));
            assert!(a.pieces.iter().all(|p| p.chars().count() <= PIECE_CHARS));
            assert_eq!(a.finish(), "stop");
            let b = answer(&s, &mut Rng::new(1, seq), seq, 1000, true);
            let v: Value = serde_json::from_str(&b.text()).unwrap();
            assert!(v.get("id").is_none());
        }
        let t = Structured::Tool {
            name: "f".into(),
            parameters: schema,
        };
        let a = answer(&t, &mut Rng::new(1, 7), 7, 1000, false);
        assert_eq!(a.finish(), "tool_calls");
        assert_eq!(a.tool, Some(("call_7".into(), "f".into())));
        let b = answer(&t, &mut Rng::new(1, 7), 7, 1000, true);
        assert!(serde_json::from_str::<Value>(&b.text()).is_err());
        // Cut at max_tokens, as a constrained decoder is.
        let c = answer(&t, &mut Rng::new(1, 7), 7, 3, false);
        assert_eq!((c.pieces.len(), c.finish()), (3, "length"));
    }
}
