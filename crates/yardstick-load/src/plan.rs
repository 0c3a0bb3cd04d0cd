//! The request plan: what request number `i` of a run sends, a pure function of the seed and
//! `i`, so a plan is reproducible and can be split across workers without coordination.
//!
//! Prompts come from a bundled corpus of original English prose ([`crate::corpus`], dedicated
//! to the public domain): request `i` starts at a seeded word and takes the next `n` words,
//! wrapping around. That is exactly `n` prompt tokens for `yardstick sim` (which counts
//! whitespace-separated words); for a real model's vocabulary, give a `tokenizer.json` and
//! prompts are cut to exactly `n` of its tokens ([`crate::tokenizer::LocalTokenizer::prompt`]).
//! The server's `usage` is recorded with every request, so any difference shows in the results.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use yardstick_spec::scenario::Scenario;

use crate::PlanError;
use crate::corpus::corpus_prompt;
use crate::openai::{self, Api, BodyOptions};
use crate::rng::Rng;

/// Token counts of one planned request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lengths {
    /// Prompt tokens.
    pub input: u64,
    /// Output tokens to force, if the scenario forces them.
    pub output: Option<u64>,
}

/// Draws request `i`'s token counts from `scenario`.
pub fn sample_lengths(scenario: &Scenario, rng: &mut Rng) -> Lengths {
    sample(scenario, rng).0
}

/// Draws request `i`'s token counts from `scenario`, and its class: the part of a mix it drew
/// (`None` for a single scenario).
pub fn sample(scenario: &Scenario, rng: &mut Rng) -> (Lengths, Option<u8>) {
    if let Some(parts) = scenario.parts() {
        let total: f64 = parts.iter().map(|(w, _)| w).sum();
        let mut u = rng.unit() * total;
        let mut k = parts.len() - 1;
        for (i, (w, _)) in parts.iter().enumerate() {
            if u < *w {
                k = i;
                break;
            }
            u -= w;
        }
        return (sample_single(&parts[k].1, rng), Some(k as u8));
    }
    (sample_single(scenario, rng), None)
}

fn sample_single(scenario: &Scenario, rng: &mut Rng) -> Lengths {
    // Clamped to what a scenario may ask for: a wide distribution's tail must not ask for a
    // prompt that cannot be built.
    let normal = |rng: &mut Rng, mu: f64, sd: f64| {
        (mu + sd * rng.normal())
            .round()
            .clamp(1.0, yardstick_spec::scenario::MAX_TOKENS as f64) as u64
    };
    match scenario {
        Scenario::Deterministic { input, output } => Lengths {
            input: *input,
            output: Some(*output),
        },
        Scenario::Normal {
            input_mean,
            input_sd,
            output_mean,
            output_sd,
        } => {
            let input = normal(rng, *input_mean, *input_sd);
            let output = normal(rng, *output_mean, *output_sd);
            Lengths {
                input,
                output: Some(output),
            }
        }
        Scenario::Uniform { input, output } => {
            let i = rng.range(input.0, input.1);
            let o = output.map(|(lo, hi)| rng.range(lo, hi));
            Lengths {
                input: i,
                output: o,
            }
        }
        Scenario::Embedding { tokens } => Lengths {
            input: *tokens,
            output: None,
        },
        // A mix's part is never a mix ([`sample`] draws the part first).
        Scenario::Mix { parts } => sample_single(&parts[0].1, rng),
    }
}

/// One request of the plan, ready to send.
#[derive(Debug, Clone)]
pub struct PlannedRequest {
    /// Index in the run's plan.
    pub index: u64,
    /// Token counts asked for.
    pub lengths: Lengths,
    /// The JSON body.
    pub body: Bytes,
    /// Its kind, when the run mixes request kinds ([`crate::kinds`]): the client checks the
    /// answer of a structured one.
    pub kind: Option<Arc<crate::kinds::RequestKind>>,
    /// Bytes of the images it carries (PNG, before base64), when the run sends images.
    pub image_bytes: Option<u64>,
    /// Its class: the part of a mixed scenario it drew (`0.8*D(64,16) + 0.2*D(2048,16)`).
    pub class: Option<u8>,
}

/// One prompt of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetItem {
    /// The prompt text.
    pub prompt: String,
    /// Output tokens to ask for, when the dataset says (ShareGPT: the words of the reply).
    pub output_tokens: Option<u64>,
}

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

/// Reads prompts from `path`: a JSON array in ShareGPT form (`[{"conversations":[{"from":
/// "human","value":..},{"from":"gpt","value":..}]}]`; the first human turn is the prompt and
/// the words of the reply that follows are its output length), or JSON lines, each an object
/// with `prompt`, `text` or `input` (a string) or `messages` (chat messages, contents joined),
/// and optionally `output_tokens` or `max_tokens`.
pub fn load_dataset(path: &Path) -> Result<Vec<DatasetItem>, PlanError> {
    let err = |why: String| PlanError::Dataset {
        path: path.display().to_string(),
        why,
    };
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        err(format!("line {line}: not UTF-8 text"))
    })?;
    let mut items = Vec::new();
    if text.trim_start().starts_with('[') {
        let v: Vec<Value> =
            serde_json::from_str(&text).map_err(|e| err(format!("not a JSON array: {e}")))?;
        for conv in &v {
            let Some(turns) = conv.get("conversations").and_then(Value::as_array) else {
                continue;
            };
            let is = |t: &Value, who: &[&str]| {
                t.get("from")
                    .and_then(Value::as_str)
                    .is_some_and(|f| who.contains(&f))
            };
            let Some(k) = turns.iter().position(|t| is(t, &["human", "user"])) else {
                continue;
            };
            let Some(prompt) = turns[k].get("value").and_then(Value::as_str) else {
                continue;
            };
            let reply = turns
                .get(k + 1)
                .filter(|t| is(t, &["gpt", "assistant", "chatgpt", "bard", "bing"]))
                .and_then(|t| t.get("value"))
                .and_then(Value::as_str);
            if prompt.trim().is_empty() {
                continue;
            }
            items.push(DatasetItem {
                prompt: prompt.to_string(),
                output_tokens: reply.map(words).filter(|&n| n > 0),
            });
        }
    } else {
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| err(format!("line {}: not JSON: {e}", n + 1)))?;
            let prompt = ["prompt", "text", "input"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_owned))
                .or_else(|| {
                    v.get("messages").and_then(Value::as_array).map(|m| {
                        m.iter()
                            .filter_map(|x| x.get("content").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                })
                .ok_or_else(|| {
                    err(format!(
                        "line {}: no `prompt`, `text`, `input` or `messages`",
                        n + 1
                    ))
                })?;
            let output_tokens = ["output_tokens", "max_tokens"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_u64));
            items.push(DatasetItem {
                prompt,
                output_tokens,
            });
        }
    }
    if items.is_empty() {
        return Err(err("no prompts found".into()));
    }
    Ok(items)
}

/// Why a model mix (`--model NAME[=WEIGHT]`, repeated) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelMixError {
    /// No model at all.
    #[error("no model given")]
    Empty,
    /// An empty name.
    #[error("`{0}`: the model name is empty")]
    EmptyName(String),
    /// A weight that is not a number.
    #[error("`{spec}`: the weight `{weight}` is not a number")]
    NotANumber {
        /// The model as written.
        spec: String,
        /// The weight as written.
        weight: String,
    },
    /// A weight that is not a finite number above 0.
    #[error("`{spec}`: the weight must be a number above 0, got {weight}")]
    NotPositive {
        /// The model as written.
        spec: String,
        /// The weight.
        weight: f64,
    },
    /// A model named twice.
    #[error("the model `{0}` is named twice")]
    Duplicate(String),
}

/// Salt of the random stream that draws each plan unit's model: a stream of its own, so a
/// mix leaves every prompt and length of the plan as a single model's plan has them.
const MODEL_STREAM_SALT: u64 = 0x6d6f_6465_6c6d_6978; // "modelmix"

/// The models a run sends to, with their weights (normalised to sum to 1): each plan unit's
/// model is drawn from the run's seed and the unit's index alone, so shards and replicates of
/// one plan agree on it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelMix {
    names: Vec<String>,
    /// Normalised weights, in the order given.
    weights: Vec<f64>,
    /// Running sums of `weights` (the last is 1).
    cumulative: Vec<f64>,
}

impl ModelMix {
    /// Parses `NAME[=WEIGHT]` items (a missing weight is 1); weights are normalised.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<ModelMix, ModelMixError> {
        let mut pairs = Vec::with_capacity(items.len());
        for item in items {
            let spec = item.as_ref();
            let (name, weight) = match spec.rsplit_once('=') {
                Some((name, w)) => {
                    let w = w.trim();
                    let weight: f64 = w.parse().map_err(|_| ModelMixError::NotANumber {
                        spec: spec.to_string(),
                        weight: w.to_string(),
                    })?;
                    (name.trim(), weight)
                }
                None => (spec.trim(), 1.0),
            };
            if name.is_empty() {
                return Err(ModelMixError::EmptyName(spec.to_string()));
            }
            if !(weight > 0.0 && weight.is_finite()) {
                return Err(ModelMixError::NotPositive {
                    spec: spec.to_string(),
                    weight,
                });
            }
            pairs.push((name.to_string(), weight));
        }
        ModelMix::new(pairs)
    }

    /// A mix of `(name, weight)` pairs (weights above 0, normalised here).
    pub fn new(pairs: Vec<(String, f64)>) -> Result<ModelMix, ModelMixError> {
        if pairs.is_empty() {
            return Err(ModelMixError::Empty);
        }
        let mut names: Vec<String> = Vec::with_capacity(pairs.len());
        for (name, w) in &pairs {
            if names.contains(name) {
                return Err(ModelMixError::Duplicate(name.clone()));
            }
            if !(*w > 0.0 && w.is_finite()) {
                return Err(ModelMixError::NotPositive {
                    spec: name.clone(),
                    weight: *w,
                });
            }
            names.push(name.clone());
        }
        let total: f64 = pairs.iter().map(|p| p.1).sum();
        let weights: Vec<f64> = pairs.iter().map(|p| p.1 / total).collect();
        let mut cumulative = Vec::with_capacity(weights.len());
        let mut acc = 0.0;
        for w in &weights {
            acc += w;
            cumulative.push(acc);
        }
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        Ok(ModelMix {
            names,
            weights,
            cumulative,
        })
    }

    /// The models, in the order given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// `(name, normalised weight)` of every model, in the order given.
    pub fn weights(&self) -> impl Iterator<Item = (&str, f64)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.weights.iter().copied())
    }

    /// Whether there is more than one model (a single model plans exactly as before mixes).
    pub fn is_mix(&self) -> bool {
        self.names.len() > 1
    }

    /// The model of plan unit `i` of a run seeded `seed`.
    pub fn draw(&self, seed: u64, i: u64) -> &str {
        &self.names[self.draw_index(seed ^ MODEL_STREAM_SALT, i)]
    }

    /// The index of the entry drawn for unit `i` from the stream `stream` (the seed, salted by
    /// what is drawn: models, request kinds).
    pub(crate) fn draw_index(&self, stream: u64, i: u64) -> usize {
        if self.names.len() == 1 {
            return 0;
        }
        let u = Rng::new(stream, i).unit();
        self.cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.names.len() - 1)
    }
}

/// Reads model names, one per line (blank lines and `#` comments skipped), as `(name, weight)`
/// pairs: each of weight 1, or with `zipf` S the k-th name's weight 1/k^S (a few names take
/// most requests, a long tail is seldom sent: hundreds of adapters).
pub fn read_model_names(path: &Path, zipf: Option<f64>) -> Result<Vec<(String, f64)>, String> {
    if let Some(s) = zipf
        && !(s > 0.0 && s.is_finite())
    {
        return Err(format!(
            "the Zipf exponent must be a number above 0, got {s} (1 is classic Zipf; larger is more skewed)"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let names: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if names.is_empty() {
        return Err(format!("{}: no model names (one per line)", path.display()));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(**n)) {
        return Err(format!(
            "{}: the model `{dup}` is named twice",
            path.display()
        ));
    }
    Ok(names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let w = zipf.map_or(1.0, |s| 1.0 / ((k + 1) as f64).powf(s));
            (n.to_string(), w)
        })
        .collect())
}

/// Builds requests of a run from its seed.
#[derive(Debug, Clone)]
pub struct Planner {
    scenario: Scenario,
    dataset: Option<Arc<Vec<DatasetItem>>>,
    tokenizer: Option<Arc<crate::tokenizer::LocalTokenizer>>,
    api: Api,
    model: String,
    seed: u64,
    opts: BodyOptions,
    sessions: Option<Sessions>,
    trace: Option<Arc<crate::trace::Trace>>,
    /// More than one model: each plan unit's is drawn from it.
    mix: Option<Arc<ModelMix>>,
    /// Request kinds beyond text: each plan unit's is drawn from it.
    kinds: Option<Arc<crate::kinds::KindMix>>,
    /// Images every chat request carries after its text.
    images: Option<crate::images::ImageSpec>,
    /// Eval items mixed into the load.
    eval: Option<Arc<crate::evalmix::EvalMix>>,
}

/// A planner's session workload.
#[derive(Debug, Clone)]
struct Sessions {
    cfg: crate::session::SessionConfig,
    conversations: Option<Arc<Vec<crate::session::Conversation>>>,
    /// The shared system prompt (the same for every session of the plan).
    prefix: Option<String>,
}

impl Planner {
    /// A planner; checks that the scenario fits the API.
    pub fn new(
        scenario: Scenario,
        scenario_text: &str,
        api: Api,
        model: &str,
        seed: u64,
        opts: BodyOptions,
    ) -> Result<Self, PlanError> {
        let api_name = match api {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Embeddings => "embeddings",
        };
        if scenario.is_embedding() != (api == Api::Embeddings) {
            return Err(PlanError::Mismatch {
                scenario: scenario_text.to_string(),
                api: api_name,
                why: if api == Api::Embeddings {
                    "the embeddings API takes E(tokens)"
                } else {
                    "E(tokens) needs --api embeddings"
                },
            });
        }
        Ok(Planner {
            scenario,
            dataset: None,
            tokenizer: None,
            api,
            model: model.to_string(),
            seed,
            opts,
            sessions: None,
            trace: None,
            mix: None,
            kinds: None,
            images: None,
            eval: None,
        })
    }

    /// Sends each plan unit (a request, or a whole session) to a model drawn from `mix`
    /// ([`ModelMix::draw`]); a mix of one model changes nothing.
    pub fn with_models(mut self, mix: Arc<ModelMix>) -> Self {
        self.mix = mix.is_mix().then_some(mix);
        self
    }

    /// Sends each request as a kind drawn from `kinds` ([`crate::kinds::KindMix::draw`]): a
    /// structured kind's body carries its `tools` or `response_format` and does not force its
    /// output length. A mix of plain text changes nothing.
    pub fn with_kinds(mut self, kinds: Arc<crate::kinds::KindMix>) -> Self {
        self.kinds = (!kinds.is_plain()).then_some(kinds);
        self
    }

    /// Sends a share of the plan's units as eval items ([`crate::evalmix`]) instead of the
    /// scenario's (or the dataset's, or the trace's) request: each is graded by its task.
    pub fn with_eval(mut self, mix: Arc<crate::evalmix::EvalMix>) -> Self {
        self.eval = Some(mix);
        self
    }

    /// The request of eval item `item` as unit `i`: its messages (chat) or their contents
    /// (completions), temperature 0, the run's seed, the mix's ceiling and stop sequences.
    fn eval_request(
        &self,
        mix: &crate::evalmix::EvalMix,
        item: &crate::evalmix::EvalItem,
        i: u64,
    ) -> PlannedRequest {
        use serde_json::json;
        let opts = BodyOptions {
            force_output: false,
            ..self.opts.clone()
        };
        let mut extra = vec![("temperature", json!(0)), ("seed", json!(self.seed))];
        if !mix.stop.is_empty() {
            extra.push(("stop", json!(mix.stop)));
        }
        let prompt = item.completion_prompt();
        let body = match self.api {
            Api::Completions => openai::completion_body(
                self.model_for(i),
                &prompt,
                Some(mix.max_tokens),
                &opts,
                &extra,
            ),
            _ => openai::chat_body_messages(
                self.model_for(i),
                item.messages.clone(),
                Some(mix.max_tokens),
                &opts,
                &extra,
            ),
        };
        PlannedRequest {
            index: i,
            lengths: Lengths {
                input: self.tokens(&prompt),
                output: Some(mix.max_tokens),
            },
            body: Bytes::from(body),
            kind: Some(item.kind.clone()),
            image_bytes: None,
            class: None,
        }
    }

    /// The same plan without its images (the prompts and lengths are unchanged).
    pub fn without_images(mut self) -> Self {
        self.images = None;
        self
    }

    /// Sends `spec`'s images with every chat request, after its text ([`crate::images`]).
    pub fn with_images(mut self, spec: crate::images::ImageSpec) -> Self {
        self.images = Some(spec);
        self
    }

    /// The request of unit `i` with this prompt and these lengths: a body of the plan's API,
    /// of the unit's kind when the plan mixes kinds, with the plan's images.
    fn build(&self, i: u64, prompt: &str, lengths: Lengths) -> PlannedRequest {
        self.build_class(i, prompt, lengths, None)
    }

    fn build_class(
        &self,
        i: u64,
        prompt: &str,
        lengths: Lengths,
        class: Option<u8>,
    ) -> PlannedRequest {
        let kind = self.kinds.as_ref().map(|m| m.draw(self.seed, i).clone());
        let structured = kind
            .as_ref()
            .filter(|k| k.checks() && self.api == Api::Chat);
        let images = self
            .images
            .filter(|_| self.api == Api::Chat)
            .map(|spec| crate::images::for_request(&spec, self.seed, i));
        let body = if structured.is_some() || images.is_some() {
            let opts = BodyOptions {
                force_output: self.opts.force_output && structured.is_none(),
                ..self.opts.clone()
            };
            let content = match &images {
                Some((urls, _)) => {
                    let mut parts = vec![serde_json::json!({"type": "text", "text": prompt})];
                    parts.extend(urls.iter().map(
                        |u| serde_json::json!({"type": "image_url", "image_url": {"url": u}}),
                    ));
                    Value::Array(parts)
                }
                None => Value::String(prompt.to_string()),
            };
            openai::chat_body_messages(
                self.model_for(i),
                vec![serde_json::json!({"role": "user", "content": content})],
                lengths.output,
                &opts,
                structured.map_or(&[][..], |k| k.fields()),
            )
        } else {
            openai::request_body(
                self.api,
                self.model_for(i),
                prompt,
                lengths.output,
                &self.opts,
            )
        };
        PlannedRequest {
            index: i,
            lengths,
            body: Bytes::from(body),
            kind,
            image_bytes: images.map(|(_, b)| b),
            class,
        }
    }

    /// The model of plan unit `i` when the plan mixes models (`None` for a single model): a
    /// trace that sends its models names its own ([`crate::trace::Trace::send_models`]).
    pub fn model_of(&self, i: u64) -> Option<&str> {
        if let Some(t) = self.trace.as_ref().filter(|t| t.models) {
            let named = usize::try_from(i)
                .ok()
                .and_then(|k| t.requests.get(k % t.requests.len().max(1)))
                .and_then(|r| r.model.as_deref());
            return Some(named.unwrap_or(&self.model));
        }
        self.mix.as_ref().map(|m| m.draw(self.seed, i))
    }

    /// The model request bodies of plan unit `i` name.
    fn model_for(&self, i: u64) -> &str {
        self.model_of(i).unwrap_or(&self.model)
    }

    /// Plans the requests of `trace` instead of the scenario's: request `i` is the trace's
    /// `i`-th, with its prompt and output lengths; a prompt with hash ids is built from one
    /// text per block id (the same id is always the same text), so requests that share leading
    /// blocks share a prompt prefix as they did in production. Replay it with
    /// [`crate::Arrival::Trace`].
    pub fn with_trace(mut self, trace: Arc<crate::trace::Trace>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// When request `i` of the trace is due, seconds after the replay's start at `speedup`
    /// times the trace's pace; `None` past its last request (or without a trace).
    pub fn trace_due_s(&self, i: u64, speedup: f64) -> Option<f64> {
        let r = self
            .trace
            .as_ref()?
            .requests
            .get(usize::try_from(i).ok()?)?;
        Some(r.at_ms / 1e3 / speedup.max(1e-9))
    }

    /// Request `i` of the trace (the caller checked `i` is within it).
    fn trace_request(&self, trace: &crate::trace::Trace, i: u64) -> PlannedRequest {
        let r = &trace.requests[i as usize % trace.requests.len()];
        let text = |n: u64, rng: &mut Rng| match &self.tokenizer {
            Some(t) => t.prompt(n, rng),
            None => corpus_prompt(n, rng),
        };
        let prompt = if r.hash_ids.is_empty() {
            text(r.input_tokens, &mut Rng::new(self.seed, i))
        } else {
            // One text per block id, seeded by the id alone (not by the request), cut at the
            // prompt's length in its last block.
            let mut parts = Vec::with_capacity(r.hash_ids.len());
            let mut left = r.input_tokens;
            for id in &r.hash_ids {
                if left == 0 {
                    break;
                }
                let n = left.min(crate::trace::BLOCK_TOKENS);
                parts.push(text(n, &mut Rng::new(self.seed ^ 0xB10C, *id)));
                left -= n;
            }
            if left > 0 {
                parts.push(text(left, &mut Rng::new(self.seed, i)));
            }
            parts.join(" ")
        };
        let output = (self.api != Api::Embeddings).then_some(r.output_tokens);
        self.build(
            i,
            &prompt,
            Lengths {
                input: r.input_tokens,
                output,
            },
        )
    }

    /// Plans multi-turn sessions instead of single requests: from `conversations` when given,
    /// else synthetic ones of `cfg`'s shape with per-turn lengths from the scenario. Sessions
    /// are chat conversations: other APIs are refused.
    pub fn with_sessions(
        mut self,
        cfg: crate::session::SessionConfig,
        conversations: Option<Arc<Vec<crate::session::Conversation>>>,
    ) -> Result<Self, PlanError> {
        if self.api != Api::Chat {
            return Err(PlanError::Mismatch {
                scenario: "sessions".into(),
                api: match self.api {
                    Api::Completions => "completions",
                    _ => "embeddings",
                },
                why: "sessions are chat conversations: use --api chat",
            });
        }
        // Built once from its own stream of the seed, so every session shares it exactly.
        let prefix = (cfg.shared_prefix > 0).then(|| {
            let mut rng = Rng::new(self.seed, u64::MAX - 1);
            match &self.tokenizer {
                Some(t) => t.prompt(cfg.shared_prefix, &mut rng),
                None => corpus_prompt(cfg.shared_prefix, &mut rng),
            }
        });
        self.sessions = Some(Sessions {
            cfg,
            conversations,
            prefix,
        });
        Ok(self)
    }

    /// Whether the plan's units are sessions.
    pub fn has_sessions(&self) -> bool {
        self.sessions.is_some()
    }

    fn tokens(&self, text: &str) -> u64 {
        match &self.tokenizer {
            Some(t) => t.count(text),
            None => words(text),
        }
    }

    /// Session `i` of the plan (call only when [`Planner::has_sessions`]).
    pub fn session(&self, i: u64) -> crate::session::PlannedSession {
        use crate::session::{PlannedSession, PlannedTurn};
        let mut rng = Rng::new(self.seed, i);
        let Some(s) = &self.sessions else {
            return PlannedSession {
                index: i,
                system: None,
                system_tokens: 0,
                turns: Vec::new(),
            };
        };
        let mut system = s.prefix.clone();
        let mut turns = Vec::new();
        match &s.conversations {
            Some(convs) => {
                let c = &convs[(rng.next_u64() % convs.len() as u64) as usize];
                if let Some(own) = &c.system {
                    system = Some(match system {
                        Some(p) => format!("{p}\n{own}"),
                        None => own.clone(),
                    });
                }
                for (k, t) in c.turns.iter().enumerate() {
                    let forced = sample_lengths(&self.scenario, &mut rng).output;
                    let think = crate::session::sample_think(&s.cfg.think, &mut rng);
                    turns.push(PlannedTurn {
                        user_tokens: self.tokens(&t.user),
                        user: t.user.clone(),
                        output: forced.or(t.reply_tokens),
                        think_ms: if k == 0 {
                            0.0
                        } else {
                            t.delay_ms.unwrap_or(think)
                        },
                    });
                }
            }
            None => {
                let n = rng.range(u64::from(s.cfg.turns.min), u64::from(s.cfg.turns.max));
                for k in 0..n {
                    let lengths = sample_lengths(&self.scenario, &mut rng);
                    let user = match &self.tokenizer {
                        Some(t) => t.prompt(lengths.input, &mut rng),
                        None => corpus_prompt(lengths.input, &mut rng),
                    };
                    let think = crate::session::sample_think(&s.cfg.think, &mut rng);
                    turns.push(PlannedTurn {
                        user,
                        user_tokens: lengths.input,
                        output: lengths.output,
                        think_ms: if k == 0 { 0.0 } else { think },
                    });
                }
            }
        }
        let system_tokens = system.as_deref().map_or(0, |t| self.tokens(t));
        PlannedSession {
            index: i,
            system,
            system_tokens,
            turns,
        }
    }

    /// The request of turn `turn` of `session`, given the answers received so far (one per
    /// earlier turn, in order): the whole conversation, then the turn's question.
    pub fn turn_request(
        &self,
        session: &crate::session::PlannedSession,
        turn: usize,
        answers: &[String],
    ) -> PlannedRequest {
        let t = &session.turns[turn];
        let mut msgs: Vec<(&str, &str)> = Vec::with_capacity(2 * turn + 2);
        let mut input = session.system_tokens;
        if let Some(s) = &session.system {
            msgs.push(("system", s));
        }
        for (k, prev) in session.turns[..turn].iter().enumerate() {
            msgs.push(("user", &prev.user));
            input += prev.user_tokens;
            if let Some(a) = answers.get(k) {
                msgs.push(("assistant", a));
                input += self.tokens(a);
            }
        }
        msgs.push(("user", &t.user));
        input += t.user_tokens;
        let body = openai::chat_body(self.model_for(session.index), &msgs, t.output, &self.opts);
        PlannedRequest {
            index: crate::record::session_request_index(session.index, turn as u32),
            lengths: Lengths {
                input,
                output: t.output,
            },
            body: Bytes::from(body),
            kind: None,
            image_bytes: None,
            class: None,
        }
    }

    /// Draws prompts from `items` (seeded, with replacement) instead of the synthetic corpus.
    /// Output lengths come from the scenario when it forces them, else from the item.
    pub fn with_dataset(mut self, items: Arc<Vec<DatasetItem>>) -> Self {
        self.dataset = Some(items);
        self
    }

    /// Builds prompts to exact counts of this tokenizer's tokens (and counts dataset prompts
    /// with it).
    pub fn with_tokenizer(mut self, t: Arc<crate::tokenizer::LocalTokenizer>) -> Self {
        self.tokenizer = Some(t);
        self
    }

    /// Request `i` of the plan.
    pub fn request(&self, i: u64) -> PlannedRequest {
        if let Some(mix) = &self.eval
            && let Some(item) = mix.draw(self.seed, i)
        {
            return self.eval_request(mix, item, i);
        }
        if let Some(trace) = &self.trace {
            return self.trace_request(trace, i);
        }
        let mut rng = Rng::new(self.seed, i);
        if let Some(items) = &self.dataset {
            let item = &items[(rng.next_u64() % items.len() as u64) as usize];
            let forced = sample_lengths(&self.scenario, &mut rng).output;
            let output = if self.api == Api::Embeddings {
                None
            } else {
                forced.or(item.output_tokens)
            };
            return self.build(
                i,
                &item.prompt,
                Lengths {
                    input: self.tokens(&item.prompt),
                    output,
                },
            );
        }
        let (lengths, class) = sample(&self.scenario, &mut rng);
        let prompt = match &self.tokenizer {
            Some(t) => t.prompt(lengths.input, &mut rng),
            None => corpus_prompt(lengths.input, &mut rng),
        };
        self.build_class(i, &prompt, lengths, class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datasets_in_sharegpt_and_jsonl_form() {
        let dir = std::env::temp_dir().join(format!("ys-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sg = dir.join("sg.json");
        std::fs::write(
            &sg,
            r#"[{"conversations":[{"from":"human","value":"tell me a joke"},{"from":"gpt","value":"no way sorry"}]},
               {"conversations":[{"from":"gpt","value":"orphan"}]},
               {"conversations":[{"from":"human","value":"hi"}]}]"#,
        )
        .unwrap();
        let items = load_dataset(&sg).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[0],
            DatasetItem {
                prompt: "tell me a joke".into(),
                output_tokens: Some(3)
            }
        );
        assert_eq!(items[1].output_tokens, None);
        let jl = dir.join("p.jsonl");
        std::fs::write(&jl, "{\"prompt\":\"a b\",\"output_tokens\":7}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"x y z\"}]}\n").unwrap();
        let items = load_dataset(&jl).unwrap();
        assert_eq!(items[1].prompt, "x y z");
        let opts = BodyOptions {
            stream: true,
            force_output: true,
        };
        let u: Scenario = "U(1,2)".parse().unwrap();
        let p = Planner::new(u, "U(1,2)", Api::Chat, "m", 3, opts.clone())
            .unwrap()
            .with_dataset(Arc::new(items.clone()));
        let reqs: Vec<PlannedRequest> = (0..50).map(|i| p.request(i)).collect();
        assert!(reqs.iter().any(|r| r.lengths
            == Lengths {
                input: 2,
                output: Some(7)
            }));
        assert!(reqs.iter().any(|r| r.lengths
            == Lengths {
                input: 3,
                output: None
            }));
        let d: Scenario = "D(1,4)".parse().unwrap();
        let p = Planner::new(d, "D(1,4)", Api::Chat, "m", 3, opts)
            .unwrap()
            .with_dataset(Arc::new(items));
        assert!((0..20).all(|i| p.request(i).lengths.output == Some(4)));
        std::fs::write(&jl, "{\"nope\":1}\n").unwrap();
        assert!(
            load_dataset(&jl)
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Found by the dataset property test: a file that is not UTF-8 was refused without the
    /// line (every other line-level error names it).
    #[test]
    fn a_dataset_that_is_not_utf8_names_the_line() {
        let dir = tempfile_dir("utf8");
        let p = dir.join("d.jsonl");
        std::fs::write(&p, b"{\"prompt\":\"a\"}\n{\"prompt\":\"\xff\"}\n").unwrap();
        let e = load_dataset(&p).unwrap_err().to_string();
        assert!(e.contains("line 2: not UTF-8 text"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ys-plan-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Found by the planner property test: a normal scenario's tail (a large mean and standard
    /// deviation within the grammar's limits) asked for prompts past `MAX_TOKENS`.
    #[test]
    fn normal_samples_stay_within_the_token_limit() {
        let max = yardstick_spec::scenario::MAX_TOKENS;
        let sc: Scenario = format!("N({max},{max})/(1,{max})").parse().unwrap();
        for i in 0..200 {
            let l = sample_lengths(&sc, &mut Rng::new(1, i));
            assert!((1..=max).contains(&l.input), "{l:?}");
            assert!((1..=max).contains(&l.output.unwrap()), "{l:?}");
        }
    }

    #[test]
    fn model_mixes_parse_and_refuse_bad_input() {
        let m = ModelMix::parse(&["base=0.6", "lora-a=0.3", "lora-b=0.1"]).unwrap();
        assert_eq!(m.names(), ["base", "lora-a", "lora-b"]);
        let w: Vec<f64> = m.weights().map(|(_, w)| w).collect();
        assert!(
            (w[0] - 0.6).abs() < 1e-12 && (w[2] - 0.1).abs() < 1e-12,
            "{w:?}"
        );
        // Weights are normalised; a missing weight is 1.
        let m = ModelMix::parse(&["a=3", "b"]).unwrap();
        assert_eq!(m.weights().collect::<Vec<_>>(), [("a", 0.75), ("b", 0.25)]);
        assert!(!ModelMix::parse(&["m"]).unwrap().is_mix());
        assert!(matches!(
            ModelMix::parse(&["a=0"]),
            Err(ModelMixError::NotPositive { .. })
        ));
        assert!(matches!(
            ModelMix::parse(&["a=-1", "b"]),
            Err(ModelMixError::NotPositive { .. })
        ));
        assert!(matches!(
            ModelMix::parse(&["a=inf"]),
            Err(ModelMixError::NotPositive { .. })
        ));
        assert!(matches!(
            ModelMix::parse(&["a=x"]),
            Err(ModelMixError::NotANumber { .. })
        ));
        assert_eq!(
            ModelMix::parse(&["a=1", "a=2"]),
            Err(ModelMixError::Duplicate("a".into()))
        );
        assert!(matches!(
            ModelMix::parse(&["=1"]),
            Err(ModelMixError::EmptyName(_))
        ));
        assert_eq!(ModelMix::parse::<&str>(&[]), Err(ModelMixError::Empty));
    }

    #[test]
    fn the_weighted_draw_is_seeded_and_proportional() {
        let m = ModelMix::parse(&["base=0.6", "lora-a=0.3", "lora-b=0.1"]).unwrap();
        let n = 10_000;
        let draws: Vec<&str> = (0..n).map(|i| m.draw(7, i)).collect();
        // Deterministic for a seed: the same draws again, and unit by unit.
        assert_eq!(draws, (0..n).map(|i| m.draw(7, i)).collect::<Vec<_>>());
        assert_eq!(m.draw(7, 4321), draws[4321]);
        // Another seed draws otherwise.
        assert_ne!(draws, (0..n).map(|i| m.draw(8, i)).collect::<Vec<_>>());
        for (name, w) in m.weights() {
            let share = draws.iter().filter(|d| **d == name).count() as f64 / n as f64;
            // Binomial sd at n = 10 000 is at most 0.005: 0.02 is four of them.
            assert!((share - w).abs() < 0.02, "{name}: {share} vs {w}");
        }
    }

    #[test]
    fn a_mix_changes_only_the_model_of_the_plan() {
        let sc: Scenario = "N(100,20)/(50,10)".parse().unwrap();
        let opts = BodyOptions {
            stream: true,
            force_output: true,
        };
        let single = Planner::new(sc.clone(), "N", Api::Chat, "base", 9, opts.clone()).unwrap();
        let one = single
            .clone()
            .with_models(Arc::new(ModelMix::parse(&["base"]).unwrap()));
        let mix = Arc::new(ModelMix::parse(&["base=0.5", "lora=0.5"]).unwrap());
        let mixed = single.clone().with_models(mix.clone());
        let mut models = std::collections::BTreeSet::new();
        for i in 0..200 {
            // A mix of one model is today's plan, byte for byte.
            assert_eq!(single.request(i).body, one.request(i).body);
            assert_eq!(one.model_of(i), None);
            let (a, b) = (single.request(i), mixed.request(i));
            assert_eq!(a.lengths, b.lengths);
            let va: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
            let vb: serde_json::Value = serde_json::from_slice(&b.body).unwrap();
            assert_eq!(va["messages"], vb["messages"]);
            assert_eq!(vb["model"].as_str(), mixed.model_of(i));
            assert_eq!(mixed.model_of(i), Some(mix.draw(9, i)));
            models.insert(vb["model"].as_str().unwrap().to_string());
        }
        assert_eq!(models.len(), 2);
    }

    #[test]
    fn plans_are_reproducible_and_exact() {
        let sc: Scenario = "N(100,20)/(50,10)".parse().unwrap();
        let opts = BodyOptions {
            stream: true,
            force_output: true,
        };
        let p = Planner::new(sc.clone(), "N", Api::Chat, "m", 9, opts.clone()).unwrap();
        let a = p.request(17);
        let b = p.request(17);
        assert_eq!(a.body, b.body);
        let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        let words = v["messages"][0]["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count();
        assert_eq!(words as u64, a.lengths.input);
        assert_eq!(v["max_tokens"].as_u64(), a.lengths.output);
        let lens: Vec<u64> = (0..2000).map(|i| p.request(i).lengths.input).collect();
        let mean = lens.iter().sum::<u64>() as f64 / lens.len() as f64;
        assert!((mean - 100.0).abs() < 2.0, "{mean}");
        let d: Scenario = "D(7,3)".parse().unwrap();
        let p = Planner::new(d, "D(7,3)", Api::Completions, "m", 1, opts.clone()).unwrap();
        assert_eq!(
            p.request(0).lengths,
            Lengths {
                input: 7,
                output: Some(3)
            }
        );
        let e: Scenario = "E(5)".parse().unwrap();
        assert!(Planner::new(e, "E(5)", Api::Chat, "m", 1, opts).is_err());
    }
}
