//! Accuracy under load: eval items mixed into the load (`--eval-mix TASKS:SHARE`), each graded
//! by its task's scorer, so a point reports how many answers were **correct** at that load —
//! and quality-adjusted goodput counts only requests that met every SLO with a correct (or
//! valid) answer (docs/metrics.md, "Accuracy under load").
//!
//! Each plan unit is an eval item with probability `share`, drawn from the seed and the unit's
//! index on a stream of its own (and the item on another), so shards and replicates agree and
//! the rest of the plan does not change. An item is sent as the eval sends it — its messages,
//! temperature 0, a fixed seed, its stop sequences, `max_tokens` as a ceiling — but streamed
//! when the run streams, so its latencies are measured like every other request's.
//!
//! The items and their scorers come from the caller (the binary builds them from eval tasks):
//! this crate only sends them and keeps the verdict.

use std::sync::Arc;

use serde_json::Value;

use crate::kinds::{Grader, RequestKind};
use crate::rng::Rng;

/// Salt of the stream that decides whether a unit is an eval item.
const SHARE_SALT: u64 = 0x6576_616c_6d69_7800; // "evalmix"
/// Salt of the stream that picks the item.
const ITEM_SALT: u64 = 0x6576_616c_6974_6d00; // "evalitm"

/// One eval item as the load sends it.
pub struct EvalItem {
    /// Its id within its task.
    pub id: String,
    /// Chat messages (`{role, content}` objects).
    pub messages: Vec<Value>,
    /// Its kind: [`crate::kinds::Kind::Eval`] with the task's name and the item's grader.
    pub kind: Arc<RequestKind>,
}

impl std::fmt::Debug for EvalItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalItem")
            .field("task", &self.kind.task())
            .field("id", &self.id)
            .finish()
    }
}

impl EvalItem {
    /// An item of `task` sending `messages`, judged by `grade`.
    pub fn new(task: Arc<str>, id: String, messages: Vec<Value>, grade: Box<Grader>) -> Self {
        EvalItem {
            id,
            messages,
            kind: Arc::new(RequestKind::eval(task, grade)),
        }
    }

    /// The prompt for the completions API: the messages' contents joined by blank lines.
    pub fn completion_prompt(&self) -> String {
        self.messages
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// Eval items and the share of the load they take.
#[derive(Debug)]
pub struct EvalMix {
    share: f64,
    items: Vec<EvalItem>,
    /// `max_tokens` of every item (a ceiling: the answer is as long as the model makes it).
    pub max_tokens: u64,
    /// Stop sequences sent with every item (none: not sent).
    pub stop: Vec<String>,
}

/// Why an eval mix was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalMixError {
    /// `TASKS:SHARE` does not parse.
    #[error(
        "--eval-mix `{given}`: {why} (expected TASKS:SHARE, e.g. `arith,format:0.2` — tasks \
         comma-separated, the share of requests in (0, 1])"
    )]
    Arg {
        /// What was given.
        given: String,
        /// What is wrong.
        why: String,
    },
    /// The share is outside (0, 1].
    #[error("the eval share must be in (0, 1], got {0}")]
    Share(f64),
    /// No item.
    #[error("the eval tasks have no items")]
    Empty,
    /// `max_tokens` is 0.
    #[error("the eval items' max tokens must be at least 1")]
    MaxTokens,
}

/// Parses `TASKS:SHARE` (`arith,format:0.2`): the task names or files, and the share. A path
/// with a colon works: the share is after the last one.
pub fn parse_arg(s: &str) -> Result<(Vec<String>, f64), EvalMixError> {
    let bad = |why: &str| EvalMixError::Arg {
        given: s.to_string(),
        why: why.to_string(),
    };
    let (tasks, share) = s.rsplit_once(':').ok_or_else(|| bad("no `:SHARE`"))?;
    let share: f64 = share
        .trim()
        .parse()
        .map_err(|_| bad("the share is not a number"))?;
    if !(share > 0.0 && share <= 1.0) {
        return Err(EvalMixError::Share(share));
    }
    let tasks: Vec<String> = tasks
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if tasks.is_empty() {
        return Err(bad("no task named"));
    }
    Ok((tasks, share))
}

impl EvalMix {
    /// A mix sending `items` as `share` of the plan's units.
    pub fn new(
        share: f64,
        items: Vec<EvalItem>,
        max_tokens: u64,
        stop: Vec<String>,
    ) -> Result<EvalMix, EvalMixError> {
        if !(share > 0.0 && share <= 1.0) {
            return Err(EvalMixError::Share(share));
        }
        if items.is_empty() {
            return Err(EvalMixError::Empty);
        }
        if max_tokens == 0 {
            return Err(EvalMixError::MaxTokens);
        }
        Ok(EvalMix {
            share,
            items,
            max_tokens,
            stop,
        })
    }

    /// The share of plan units that are eval items.
    pub fn share(&self) -> f64 {
        self.share
    }

    /// Every item.
    pub fn items(&self) -> &[EvalItem] {
        &self.items
    }

    /// `(task, items)` of every task, in the order their items were given.
    pub fn tasks(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = Vec::new();
        for it in &self.items {
            let name = it.kind.task().map_or("", |t| t);
            match out.last_mut() {
                Some((n, c)) if n == name => *c += 1,
                _ => out.push((name.to_string(), 1)),
            }
        }
        out
    }

    /// The eval item of plan unit `i` of a run seeded `seed`, if it is one.
    pub fn draw(&self, seed: u64, i: u64) -> Option<&EvalItem> {
        if Rng::new(seed ^ SHARE_SALT, i).unit() >= self.share {
            return None;
        }
        let k = Rng::new(seed ^ ITEM_SALT, i).next_u64() % self.items.len() as u64;
        Some(&self.items[k as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(task: &str, id: &str, right: &'static str) -> EvalItem {
        EvalItem::new(
            Arc::from(task),
            id.into(),
            vec![json!({"role": "user", "content": format!("q {id}")})],
            Box::new(move |a: &str| {
                if a.trim() == right {
                    Ok(())
                } else {
                    Err(format!("expected {right}"))
                }
            }),
        )
    }

    #[test]
    fn the_share_and_the_items_are_drawn_from_the_seed() {
        let items = vec![
            item("a", "1", "x"),
            item("a", "2", "y"),
            item("b", "1", "z"),
        ];
        let m = EvalMix::new(0.25, items, 16, vec![]).unwrap();
        assert_eq!(m.tasks(), vec![("a".into(), 2), ("b".into(), 1)]);
        let n = 8000;
        let mut hits = 0;
        let mut per = [0u32; 3];
        for i in 0..n {
            if let Some(it) = m.draw(9, i) {
                hits += 1;
                let k = m.items().iter().position(|x| std::ptr::eq(x, it)).unwrap();
                per[k] += 1;
                assert!(std::ptr::eq(m.draw(9, i).unwrap(), it), "deterministic");
            }
        }
        let share = f64::from(hits) / n as f64;
        assert!((share - 0.25).abs() < 0.02, "{share}");
        for c in per {
            assert!(
                (f64::from(c) / f64::from(hits) - 1.0 / 3.0).abs() < 0.04,
                "{per:?}"
            );
        }
        let it = &m.items()[2];
        assert_eq!(it.kind.validate(" z ", &[]), Ok(()));
        assert_eq!(it.kind.validate("w", &[]), Err("expected z".into()));
        assert_eq!(it.kind.task().map(|t| &**t), Some("b"));
        assert_eq!(it.completion_prompt(), "q 1");
    }

    #[test]
    fn arguments_and_bad_mixes_are_refused_with_reasons() {
        assert_eq!(
            parse_arg("arith,format:0.2").unwrap(),
            (vec!["arith".into(), "format".into()], 0.2)
        );
        assert_eq!(
            parse_arg("C:/tasks/x.jsonl:1").unwrap(),
            (vec!["C:/tasks/x.jsonl".into()], 1.0)
        );
        let e = parse_arg("arith").unwrap_err().to_string();
        assert!(
            e.contains("no `:SHARE`") && e.contains("arith,format:0.2"),
            "{e}"
        );
        assert!(matches!(parse_arg("arith:0"), Err(EvalMixError::Share(_))));
        assert!(matches!(
            parse_arg("arith:1.5"),
            Err(EvalMixError::Share(_))
        ));
        assert!(
            parse_arg("arith:x")
                .unwrap_err()
                .to_string()
                .contains("not a number")
        );
        assert!(
            parse_arg(" , :0.5")
                .unwrap_err()
                .to_string()
                .contains("no task")
        );
        assert_eq!(
            EvalMix::new(0.5, vec![], 8, vec![]).unwrap_err(),
            EvalMixError::Empty
        );
        assert_eq!(
            EvalMix::new(0.5, vec![item("a", "1", "x")], 0, vec![]).unwrap_err(),
            EvalMixError::MaxTokens
        );
    }
}
