//! Deterministic decoding: the settings every item and repeat of an eval run share, and the
//! request body they make (temperature 0, top_p 1, a fixed seed, never streamed).

use serde::Serialize;
use serde_json::{Map, Value, json};
use yardstick_load::Api;

use crate::task::Item;

/// Decoding settings, identical for every item and repeat.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Decoding {
    /// Model name sent in each request.
    pub model: String,
    /// Maximum output tokens.
    pub max_tokens: u64,
    /// Sampling seed (sent as `seed`).
    pub seed: u64,
    /// Stop sequences (sent as `stop` when not empty).
    pub stop: Vec<String>,
}

impl Decoding {
    /// The request body for `item` under `api`: temperature 0, top_p 1, the fixed seed, max
    /// tokens and stop sequences, never streamed.
    pub fn body(&self, api: Api, item: &Item) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("model".into(), json!(self.model));
        match api {
            Api::Completions => {
                m.insert("prompt".into(), json!(item.completion_prompt()));
            }
            _ => {
                m.insert("messages".into(), json!(item.messages));
            }
        }
        m.insert("temperature".into(), json!(0));
        m.insert("top_p".into(), json!(1));
        m.insert("seed".into(), json!(self.seed));
        m.insert("max_tokens".into(), json!(self.max_tokens));
        m.insert("stream".into(), json!(false));
        if !self.stop.is_empty() {
            m.insert("stop".into(), json!(self.stop));
        }
        serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
    }
}
