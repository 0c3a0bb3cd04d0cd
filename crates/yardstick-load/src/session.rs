//! Multi-turn sessions: chat traffic as people make it. A session is a conversation of turns;
//! each turn sends the whole conversation so far (an optional shared system prompt, every
//! earlier question and the answer the server actually gave, then the new question) after the
//! user's think time. A session is one unit of the plan: the load model schedules sessions (an
//! open loop's arrivals start sessions; a closed loop's streams each run one session after
//! another), and a turn's latencies count from its own scheduled time, which is the previous
//! answer's completion plus the think time.
//!
//! Sessions come from a dataset of conversations ([`load_conversations`]) or from the
//! synthetic generator: turns per session, think time, a shared system prompt and per-turn
//! lengths drawn from the traffic scenario.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use crate::PlanError;
use crate::record::MAX_TURNS;
use crate::rng::Rng;

pub use yardstick_spec::session::{THINK_TIME_GRAMMAR, ThinkTime, Turns};

/// Draws one think time, ms.
pub fn sample_think(t: &ThinkTime, rng: &mut Rng) -> f64 {
    match *t {
        ThinkTime::Constant(ms) => ms,
        ThinkTime::Exponential(mean) => rng.exp1() * mean,
        ThinkTime::Uniform(lo, hi) => lo + (hi - lo) * rng.unit(),
    }
}

/// A session workload.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionConfig {
    /// Turns of a synthetic session (a dataset's conversations have their own).
    pub turns: Turns,
    /// Think time before every turn after the first (a dataset turn's own `delay` wins).
    pub think: ThinkTime,
    /// Tokens of a system prompt every session starts with (0: none). With a dataset, it comes
    /// before the conversation's own system prompt, if any.
    pub shared_prefix: u64,
}

impl SessionConfig {
    /// How the scenario column names a session point: `sessions(turns=4,think=1000,prefix=512)`.
    pub fn describe(&self) -> String {
        format!(
            "turns={},think={},prefix={}",
            self.turns, self.think, self.shared_prefix
        )
    }
}

/// One turn of a dataset conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvTurn {
    /// What the user says.
    pub user: String,
    /// Output tokens of the recorded answer, when the dataset has one.
    pub reply_tokens: Option<u64>,
    /// Think time before this turn, ms, when the dataset says (`delay`).
    pub delay_ms: Option<f64>,
}

/// A dataset conversation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversation {
    /// Its own system prompt.
    pub system: Option<String>,
    /// Its turns, in order.
    pub turns: Vec<ConvTurn>,
}

fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

/// Reads conversations from `path`:
///
/// * a JSON array in ShareGPT form, each `{"conversations": [{"from": "system"|"human"|"gpt",
///   "value": ..}, ..]}`: every human message is a turn, the answer after it gives its output
///   length (in words);
/// * JSON lines of whole conversations, `{"messages": [{"role": .., "content": ..}, ..]}`, read
///   the same way (user messages are turns);
/// * JSON lines of turns, `{"session_id": .., "text"|"prompt"|"input": .., "output_tokens"?: N,
///   "delay"?: MS}`, grouped by `session_id` in file order (the shape of aiperf's multi-turn
///   files).
pub fn load_conversations(path: &Path) -> Result<Vec<Conversation>, PlanError> {
    let err = |why: String| PlanError::Dataset {
        path: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut convs = Vec::new();
    if text.trim_start().starts_with('[') {
        let v: Vec<Value> =
            serde_json::from_str(&text).map_err(|e| err(format!("not a JSON array: {e}")))?;
        for c in &v {
            let Some(msgs) = c.get("conversations").and_then(Value::as_array) else {
                continue;
            };
            let msgs: Vec<(&str, &str)> = msgs
                .iter()
                .filter_map(|m| Some((m.get("from")?.as_str()?, m.get("value")?.as_str()?)))
                .collect();
            if let Some(conv) = conversation(&msgs) {
                convs.push(conv);
            }
        }
    } else {
        // Conversations in file order; turn lines join theirs by `session_id`.
        let mut by_id: HashMap<String, usize> = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| err(format!("line {}: not JSON: {e}", n + 1)))?;
            if let Some(msgs) = v.get("messages").and_then(Value::as_array) {
                let msgs: Vec<(&str, &str)> = msgs
                    .iter()
                    .filter_map(|m| Some((m.get("role")?.as_str()?, m.get("content")?.as_str()?)))
                    .collect();
                convs.extend(conversation(&msgs));
                continue;
            }
            let sid = match v.get("session_id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(x)) => x.to_string(),
                _ => {
                    return Err(err(format!(
                        "line {}: neither `messages` (a conversation) nor `session_id` (a turn)",
                        n + 1
                    )));
                }
            };
            let user = ["text", "prompt", "input"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str))
                .ok_or_else(|| {
                    err(format!(
                        "line {}: a turn needs `text`, `prompt` or `input`",
                        n + 1
                    ))
                })?;
            let k = *by_id.entry(sid).or_insert_with(|| {
                convs.push(Conversation::default());
                convs.len() - 1
            });
            let conv = &mut convs[k];
            if conv.turns.len() as u64 >= MAX_TURNS {
                return Err(err(format!(
                    "line {}: a session has more than {MAX_TURNS} turns",
                    n + 1
                )));
            }
            conv.turns.push(ConvTurn {
                user: user.to_string(),
                reply_tokens: ["output_tokens", "max_tokens", "output_length"]
                    .iter()
                    .find_map(|k| v.get(*k).and_then(Value::as_u64)),
                delay_ms: v.get("delay").and_then(Value::as_f64),
            });
        }
    }
    if convs.is_empty() {
        return Err(err(
            "no conversations found (see `yardstick bench serve --help`, --sessions)".into(),
        ));
    }
    Ok(convs)
}

/// A conversation from `(role, text)` messages: system prompts joined, every user message a
/// turn, the assistant message after it its answer.
fn conversation(msgs: &[(&str, &str)]) -> Option<Conversation> {
    let mut c = Conversation::default();
    for (k, (role, text)) in msgs.iter().enumerate() {
        match *role {
            "system" => {
                let s = c.system.get_or_insert_with(String::new);
                if !s.is_empty() {
                    s.push('\n');
                }
                s.push_str(text);
            }
            "human" | "user" if !text.trim().is_empty() => {
                let reply = msgs
                    .get(k + 1)
                    .filter(|(r, _)| {
                        matches!(*r, "gpt" | "assistant" | "chatgpt" | "bard" | "bing")
                    })
                    .map(|(_, t)| words(t))
                    .filter(|&n| n > 0);
                c.turns.push(ConvTurn {
                    user: text.to_string(),
                    reply_tokens: reply,
                    delay_ms: None,
                });
            }
            _ => {}
        }
    }
    c.turns.truncate(MAX_TURNS as usize);
    (!c.turns.is_empty()).then_some(c)
}

/// One planned turn.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTurn {
    /// What the user says.
    pub user: String,
    /// Tokens of `user` (tokenizer or words).
    pub user_tokens: u64,
    /// Output tokens to ask for.
    pub output: Option<u64>,
    /// Think time before this turn, ms (0 for the first).
    pub think_ms: f64,
}

/// One planned session.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedSession {
    /// Index in the plan.
    pub index: u64,
    /// The system prompt, if any (the shared prefix, then the conversation's own).
    pub system: Option<String>,
    /// Its tokens.
    pub system_tokens: u64,
    /// The turns.
    pub turns: Vec<PlannedTurn>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_are_drawn_from_their_distribution() {
        let mut rng = Rng::new(1, 1);
        let mean = (0..4000)
            .map(|_| sample_think(&ThinkTime::Exponential(100.0), &mut rng))
            .sum::<f64>()
            / 4000.0;
        assert!((mean - 100.0).abs() < 8.0, "{mean}");
        let u = sample_think(&ThinkTime::Uniform(5.0, 10.0), &mut rng);
        assert!((5.0..=10.0).contains(&u));
        assert_eq!(sample_think(&ThinkTime::Constant(7.0), &mut rng), 7.0);
    }

    #[test]
    fn conversations_from_sharegpt_messages_and_turn_lines() {
        let dir = std::env::temp_dir().join(format!("ys-sess-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sg = dir.join("sg.json");
        std::fs::write(
            &sg,
            r#"[{"conversations":[{"from":"system","value":"be brief"},{"from":"human","value":"hi there"},{"from":"gpt","value":"hello you"},{"from":"human","value":"and now"},{"from":"gpt","value":"one two three"}]},
               {"conversations":[{"from":"gpt","value":"orphan"}]}]"#,
        )
        .unwrap();
        let c = load_conversations(&sg).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].system.as_deref(), Some("be brief"));
        assert_eq!(c[0].turns.len(), 2);
        assert_eq!(c[0].turns[1].reply_tokens, Some(3));
        let jl = dir.join("t.jsonl");
        std::fs::write(
            &jl,
            "{\"session_id\":\"a\",\"text\":\"q1\",\"output_tokens\":5}\n{\"session_id\":\"b\",\"text\":\"x\"}\n{\"session_id\":\"a\",\"text\":\"q2\",\"delay\":250}\n{\"messages\":[{\"role\":\"user\",\"content\":\"m1\"},{\"role\":\"assistant\",\"content\":\"r r\"},{\"role\":\"user\",\"content\":\"m2\"}]}\n",
        )
        .unwrap();
        let c = load_conversations(&jl).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].turns.len(), 2);
        assert_eq!(c[0].turns[1].delay_ms, Some(250.0));
        assert_eq!(c[0].turns[0].reply_tokens, Some(5));
        assert_eq!(c[2].turns[0].reply_tokens, Some(2));
        std::fs::write(&jl, "{\"text\":\"no session\"}\n").unwrap();
        let e = load_conversations(&jl).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("session_id"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
