//! Request kinds beyond plain text — tool calls and structured output — and the check of every
//! answer that makes **validity under load** a measurement: the share of responses whose tool
//! call names a tool and whose arguments match its parameters, or whose JSON matches the schema
//! asked for, per load level (docs/metrics.md, "Request kinds").
//!
//! A run mixes kinds like it mixes models (`--kind tool-call=0.3 --kind json=0.2 --kind text`):
//! each plan unit's kind is drawn from the seed and the unit's index on a stream of its own, so
//! shards and replicates agree and the prompts and lengths of the plan do not change.
//!
//! Requests of the structured kinds do not force their output length (`ignore_eos` would ask a
//! constrained decoder for tokens past the end of the object): `max_tokens` is the plan's output
//! length as a ceiling, and the answer is as long as the model makes it.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::plan::{ModelMix, ModelMixError};

/// What a request asks for.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A plain completion (the default).
    Text,
    /// A tool call: the request carries `tools` and `tool_choice: "required"`; the answer must
    /// call one of the tools with arguments that match its parameters.
    ToolCall,
    /// Structured output: `response_format: {type: json_schema}`; the answer must be JSON that
    /// matches the schema.
    Json,
    /// An eval item mixed into the load (`--eval-mix`): its answer must be correct by its
    /// task's scorer. Not a `--kind`: the items come from eval tasks.
    Eval,
}

impl Kind {
    /// The name used on the command line, in specs and in results.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::ToolCall => "tool-call",
            Kind::Json => "json",
            Kind::Eval => "eval",
        }
    }

    /// Every kind `--kind` accepts.
    pub const ALL: [Kind; 3] = [Kind::Text, Kind::ToolCall, Kind::Json];
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Kind {
    type Err = KindError;
    fn from_str(s: &str) -> Result<Kind, KindError> {
        Kind::ALL
            .into_iter()
            .chain([Kind::Eval])
            .find(|k| k.name() == s)
            .ok_or_else(|| KindError::Unknown(s.to_string()))
    }
}

/// Why a kind mix, a tools file or a schema was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KindError {
    /// Not a kind.
    #[error("unknown request kind `{0}` (accepted: text, tool-call, json)")]
    Unknown(String),
    /// `eval` given as a kind.
    #[error("`eval` is not a --kind: mix eval items into the load with --eval-mix TASKS:SHARE")]
    EvalIsNotAKind,
    /// The `NAME=WEIGHT` list is wrong.
    #[error("request kinds: {0}")]
    Mix(String),
    /// A tools or schema file could not be read or is not what it must be.
    #[error("{path}: {why}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// A structured kind with an API that cannot carry it.
    #[error("request kind `{0}` needs the chat API (--api chat)")]
    NeedsChat(Kind),
}

/// One function call of an answer, as streamed (`delta.tool_calls`) or whole
/// (`message.tool_calls`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// `function.name`.
    pub name: String,
    /// `function.arguments`: JSON text, concatenated from its pieces.
    pub arguments: String,
}

/// A tool the model may call, with the check of its arguments.
struct Tool {
    name: String,
    parameters: jsonschema::Validator,
}

/// Grades an eval item's answer: `Err` says why it is wrong.
pub type Grader = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// How an answer of a kind is checked.
enum Check {
    Nothing,
    Json(jsonschema::Validator),
    Tools(Vec<Tool>),
    Grade(Box<Grader>),
}

/// One kind as requests carry it: the body's extra fields and the check of the answer.
pub struct RequestKind {
    kind: Kind,
    fields: Vec<(&'static str, Value)>,
    check: Check,
    /// The eval task of an eval item.
    task: Option<Arc<str>>,
}

impl std::fmt::Debug for RequestKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestKind")
            .field("kind", &self.kind)
            .field("fields", &self.fields)
            .finish()
    }
}

/// The tool of `--kind tool-call` when no `--tools` file is given.
pub fn default_tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city's name."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city", "unit"],
                "additionalProperties": false
            }
        }
    }])
}

/// The schema of `--kind json` when no `--json-schema` file is given.
pub fn default_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "item": {"type": "string"},
            "quantity": {"type": "integer", "minimum": 1, "maximum": 100},
            "express": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
        },
        "required": ["id", "item", "quantity", "express"],
        "additionalProperties": false
    })
}

fn compile(schema: &Value, what: &str) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("{what} is not a valid JSON Schema: {e}"))
}

impl RequestKind {
    /// A plain text request.
    pub fn text() -> RequestKind {
        RequestKind {
            kind: Kind::Text,
            fields: Vec::new(),
            check: Check::Nothing,
            task: None,
        }
    }

    /// An eval item of `task` whose answer `grade` judges.
    pub fn eval(task: Arc<str>, grade: Box<Grader>) -> RequestKind {
        RequestKind {
            kind: Kind::Eval,
            fields: Vec::new(),
            check: Check::Grade(grade),
            task: Some(task),
        }
    }

    /// The eval task of an eval item.
    pub fn task(&self) -> Option<&Arc<str>> {
        self.task.as_ref()
    }

    /// Tool calls with `tools` (OpenAI's array of `{type: function, function: {name,
    /// parameters}}`).
    pub fn tool_call(tools: Value) -> Result<RequestKind, String> {
        let list = tools
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or("`tools` must be a non-empty array of {type: function, function: {..}}")?;
        let mut checked = Vec::with_capacity(list.len());
        for (k, t) in list.iter().enumerate() {
            let f = t
                .get("function")
                .ok_or_else(|| format!("tools[{k}] has no `function`"))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| format!("tools[{k}].function has no `name`"))?;
            if checked.iter().any(|c: &Tool| c.name == name) {
                return Err(format!("the tool `{name}` is named twice"));
            }
            // A function without parameters takes none: `{}` (an object with no properties).
            let params = f
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            checked.push(Tool {
                name: name.to_string(),
                parameters: compile(&params, &format!("tools[{k}].function.parameters"))?,
            });
        }
        Ok(RequestKind {
            kind: Kind::ToolCall,
            fields: vec![("tools", tools), ("tool_choice", json!("required"))],
            check: Check::Tools(checked),
            task: None,
        })
    }

    /// Structured output matching `schema` (a JSON Schema), sent as
    /// `response_format: {type: json_schema, json_schema: {name, schema, strict: true}}`.
    pub fn json(name: &str, schema: Value) -> Result<RequestKind, String> {
        let validator = compile(&schema, "the schema")?;
        Ok(RequestKind {
            kind: Kind::Json,
            fields: vec![(
                "response_format",
                json!({"type": "json_schema",
                       "json_schema": {"name": name, "schema": schema, "strict": true}}),
            )],
            check: Check::Json(validator),
            task: None,
        })
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Fields the request body carries beyond the prompt.
    pub fn fields(&self) -> &[(&'static str, Value)] {
        &self.fields
    }

    /// Whether answers of this kind are checked (the client then keeps their text and calls).
    pub fn checks(&self) -> bool {
        !matches!(self.check, Check::Nothing)
    }

    /// Checks an answer: its text without reasoning and its tool calls. `Err` says why it is
    /// not valid.
    pub fn validate(&self, answer: &str, calls: &[ToolCall]) -> Result<(), String> {
        match &self.check {
            Check::Nothing => Ok(()),
            Check::Grade(grade) => grade(answer),
            Check::Json(v) => {
                let value: Value = serde_json::from_str(answer.trim())
                    .map_err(|e| format!("the answer is not JSON: {e}"))?;
                schema_errors(v, &value)
            }
            Check::Tools(tools) => {
                let call = calls.first().ok_or("no tool call in the answer")?;
                let tool = tools
                    .iter()
                    .find(|t| t.name == call.name)
                    .ok_or_else(|| format!("the answer calls an unknown tool `{}`", call.name))?;
                let args: Value = serde_json::from_str(&call.arguments)
                    .map_err(|e| format!("the arguments of `{}` are not JSON: {e}", call.name))?;
                schema_errors(&tool.parameters, &args)
                    .map_err(|e| format!("the arguments of `{}`: {e}", call.name))
            }
        }
    }
}

fn schema_errors(v: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    match v.iter_errors(value).next() {
        None => Ok(()),
        Some(e) => {
            let at = e.instance_path().to_string();
            let shown: String = e.to_string().chars().take(200).collect();
            Err(if at.is_empty() {
                format!("does not match the schema: {shown}")
            } else {
                format!("does not match the schema at {at}: {shown}")
            })
        }
    }
}

/// Salt of the random stream that draws each plan unit's kind.
const KIND_STREAM_SALT: u64 = 0x6b69_6e64_6d69_7800; // "kindmix"

/// The kinds a run sends, with their weights: each plan unit's kind is drawn from the run's
/// seed and the unit's index alone.
#[derive(Debug, Clone)]
pub struct KindMix {
    mix: ModelMix,
    kinds: Vec<Arc<RequestKind>>,
}

/// Where the kinds' tools and schema come from.
#[derive(Debug, Clone, Default)]
pub struct KindFiles<'a> {
    /// OpenAI `tools` (a JSON array, or an object with a `tools` array); [`default_tools`]
    /// without it.
    pub tools: Option<&'a Path>,
    /// A JSON Schema, or OpenAI's `{name, schema}` wrapper; [`default_schema`] without it.
    pub schema: Option<&'a Path>,
}

fn read_json(path: &Path) -> Result<Value, KindError> {
    let err = |why: String| KindError::File {
        path: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| {
        err(format!(
            "line {}, column {}: not JSON: {e}",
            e.line(),
            e.column()
        ))
    })
}

impl KindMix {
    /// Parses `KIND[=WEIGHT]` items (a missing weight is 1; weights are normalised) and builds
    /// each kind from `files`.
    pub fn parse<S: AsRef<str>>(items: &[S], files: &KindFiles<'_>) -> Result<KindMix, KindError> {
        let mix = ModelMix::parse(items).map_err(|e| {
            KindError::Mix(match e {
                ModelMixError::Empty => "no kind given".into(),
                ModelMixError::EmptyName(s) => format!("`{s}`: the kind is empty"),
                ModelMixError::Duplicate(k) => format!("the kind `{k}` is named twice"),
                other => other.to_string(),
            })
        })?;
        let mut kinds = Vec::with_capacity(mix.names().len());
        for name in mix.names() {
            let kind: Kind = name.parse()?;
            if kind == Kind::Eval {
                return Err(KindError::EvalIsNotAKind);
            }
            let built = match kind {
                Kind::Text | Kind::Eval => RequestKind::text(),
                Kind::ToolCall => {
                    let (tools, path) = match files.tools {
                        Some(p) => {
                            let v = read_json(p)?;
                            let v = match v.get("tools") {
                                Some(t) if v.is_object() => t.clone(),
                                _ => v,
                            };
                            (v, Some(p))
                        }
                        None => (default_tools(), None),
                    };
                    RequestKind::tool_call(tools).map_err(|why| KindError::File {
                        path: path.map_or("the built-in tool".into(), |p| p.display().to_string()),
                        why,
                    })?
                }
                Kind::Json => {
                    let (name, schema, path) = match files.schema {
                        Some(p) => {
                            let v = read_json(p)?;
                            // OpenAI's wrapper: {name, schema, strict?}.
                            match (v.get("schema"), v.get("name").and_then(Value::as_str)) {
                                (Some(s), Some(n)) if s.is_object() => {
                                    (n.to_string(), s.clone(), Some(p))
                                }
                                _ => ("answer".to_string(), v, Some(p)),
                            }
                        }
                        None => ("order".to_string(), default_schema(), None),
                    };
                    RequestKind::json(&name, schema).map_err(|why| KindError::File {
                        path: path
                            .map_or("the built-in schema".into(), |p| p.display().to_string()),
                        why,
                    })?
                }
            };
            kinds.push(Arc::new(built));
        }
        Ok(KindMix { mix, kinds })
    }

    /// `(kind, normalised weight)` of every kind, in the order given.
    pub fn weights(&self) -> impl Iterator<Item = (Kind, f64)> + '_ {
        self.kinds
            .iter()
            .zip(self.mix.weights())
            .map(|(k, (_, w))| (k.kind, w))
    }

    /// Whether every request is plain text (the mix changes nothing).
    pub fn is_plain(&self) -> bool {
        self.kinds.iter().all(|k| k.kind == Kind::Text)
    }

    /// Refuses a structured kind on an API other than chat.
    pub fn check_api(&self, api: crate::Api) -> Result<(), KindError> {
        match self.kinds.iter().find(|k| k.kind != Kind::Text) {
            Some(k) if api != crate::Api::Chat => Err(KindError::NeedsChat(k.kind)),
            _ => Ok(()),
        }
    }

    /// The kind of plan unit `i` of a run seeded `seed`.
    pub fn draw(&self, seed: u64, i: u64) -> &Arc<RequestKind> {
        let k = self.mix.draw_index(seed ^ KIND_STREAM_SALT, i);
        &self.kinds[k]
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn json_answers_are_parsed_and_checked_against_the_schema() {
        let k = RequestKind::json("order", default_schema()).unwrap();
        let ok = r#" {"id": 3, "item": "tea", "quantity": 2, "express": false} "#;
        assert_eq!(k.validate(ok, &[]), Ok(()));
        let e = k.validate(r#"{"id": 3, "item": "tea""#, &[]).unwrap_err();
        assert!(e.starts_with("the answer is not JSON"), "{e}");
        let e = k
            .validate(
                r#"{"id": 3, "item": "tea", "quantity": 0, "express": false}"#,
                &[],
            )
            .unwrap_err();
        assert!(e.contains("/quantity"), "{e}");
        let e = k.validate(r#"{"id": 3, "item": "tea"}"#, &[]).unwrap_err();
        assert!(e.contains("quantity"), "{e}");
        let body = k.fields();
        assert_eq!(body[0].0, "response_format");
        assert_eq!(body[0].1["json_schema"]["name"], "order");
    }

    #[test]
    fn tool_calls_must_name_a_tool_with_matching_arguments() {
        let k = RequestKind::tool_call(default_tools()).unwrap();
        let call = |name: &str, args: &str| {
            vec![ToolCall {
                name: name.into(),
                arguments: args.into(),
            }]
        };
        assert_eq!(
            k.validate(
                "",
                &call("get_weather", r#"{"city":"Oslo","unit":"celsius"}"#)
            ),
            Ok(())
        );
        assert!(
            k.validate("sunny", &[])
                .unwrap_err()
                .contains("no tool call")
        );
        assert!(
            k.validate("", &call("get_time", "{}"))
                .unwrap_err()
                .contains("unknown tool `get_time`")
        );
        assert!(
            k.validate("", &call("get_weather", r#"{"city":"Os"#))
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            k.validate(
                "",
                &call("get_weather", r#"{"city":"Oslo","unit":"kelvin"}"#)
            )
            .unwrap_err()
            .contains("/unit")
        );
        assert!(RequestKind::tool_call(json!([])).is_err());
        assert!(RequestKind::tool_call(json!([{"type": "function"}])).is_err());
        let bad = json!([{"type":"function","function":{"name":"f","parameters":{"type":7}}}]);
        assert!(
            RequestKind::tool_call(bad)
                .unwrap_err()
                .contains("not a valid JSON Schema")
        );
    }

    #[test]
    fn mixes_parse_draw_and_refuse_bad_input() {
        let files = KindFiles::default();
        let m = KindMix::parse(&["tool-call=0.25", "json=0.25", "text=0.5"], &files).unwrap();
        let n = 8000;
        let mut seen: BTreeMap<Kind, u64> = BTreeMap::new();
        for i in 0..n {
            *seen.entry(m.draw(5, i).kind()).or_default() += 1;
            assert_eq!(m.draw(5, i).kind(), m.draw(5, i).kind());
        }
        for (k, w) in m.weights() {
            let share = seen[&k] as f64 / n as f64;
            assert!((share - w).abs() < 0.03, "{k}: {share} vs {w}");
        }
        assert!(m.check_api(crate::Api::Completions).is_err());
        assert!(m.check_api(crate::Api::Chat).is_ok());
        assert!(KindMix::parse(&["text"], &files).unwrap().is_plain());
        assert_eq!(
            KindMix::parse(&["yaml"], &files).unwrap_err(),
            KindError::Unknown("yaml".into())
        );
        assert!(matches!(
            KindMix::parse(&["json", "json=2"], &files),
            Err(KindError::Mix(_))
        ));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("schema.json");
        std::fs::write(&p, "{\"type\": \n nope}").unwrap();
        let e = KindMix::parse(
            &["json"],
            &KindFiles {
                schema: Some(&p),
                ..KindFiles::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("schema.json: line 2, column"), "{e}");
        // OpenAI's wrapper is accepted, and its name sent.
        std::fs::write(
            &p,
            r#"{"name": "city", "schema": {"type": "object", "required": ["name"]}}"#,
        )
        .unwrap();
        let m = KindMix::parse(
            &["json"],
            &KindFiles {
                schema: Some(&p),
                ..KindFiles::default()
            },
        )
        .unwrap();
        let k = m.draw(1, 0);
        assert_eq!(k.fields()[0].1["json_schema"]["name"], "city");
        assert!(k.validate(r#"{"name": "Oslo"}"#, &[]).is_ok());
        assert!(k.validate(r#"{}"#, &[]).is_err());
    }
}
