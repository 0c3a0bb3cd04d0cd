//! Eval items for the load generator's accuracy under load (`bench serve --eval-mix`): each
//! item of the tasks becomes an [`EvalItem`] whose grader is the item's own scorer.

use std::sync::Arc;

use yardstick_load::evalmix::{EvalItem, EvalMix};

use crate::{EvalError, Task};

/// How long a wrong answer's excerpt in a reason is, in characters.
const EXCERPT: usize = 80;

/// The eval items of `tasks` (bundled probe names or `.jsonl` files) as `share` of the load,
/// each asking for at most `max_tokens` with `stop` sequences.
pub fn load_mix(
    tasks: &[String],
    share: f64,
    max_tokens: u64,
    stop: Vec<String>,
) -> Result<EvalMix, EvalError> {
    let mut items = Vec::new();
    let mut names = std::collections::HashSet::new();
    for spec in tasks {
        let task = Task::load(spec)?;
        if !names.insert(task.name.clone()) {
            return Err(EvalError::Config(format!(
                "the task `{}` is named twice in the eval mix",
                task.name
            )));
        }
        let name: Arc<str> = Arc::from(task.name.as_str());
        for item in task.items {
            let messages = item
                .messages
                .iter()
                .map(|m| serde_json::json!({"role": m.role, "content": m.content}))
                .collect();
            let id = item.id.clone();
            let label = format!("{}/{}", task.name, item.id);
            let grade = move |answer: &str| {
                let s = item.score(answer);
                if s.correct {
                    Ok(())
                } else {
                    let shown: String = answer.trim().chars().take(EXCERPT).collect();
                    Err(format!(
                        "{label}: wrong by `{}`: {shown:?}",
                        item.scorer.name()
                    ))
                }
            };
            items.push(EvalItem::new(name.clone(), id, messages, Box::new(grade)));
        }
    }
    EvalMix::new(share, items, max_tokens, stop).map_err(|e| EvalError::Config(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_tasks_become_graded_items() {
        let m = load_mix(&["arith".into(), "format".into()], 0.5, 64, vec![]).unwrap();
        let tasks = m.tasks();
        assert_eq!(tasks[0].0, "arith");
        assert_eq!(tasks[1].0, "format");
        let first = &m.items()[0];
        assert_eq!(first.id, "arith-01");
        assert_eq!(first.kind.validate("42", &[]), Ok(()));
        let e = first.kind.validate("41", &[]).unwrap_err();
        assert!(e.starts_with("arith/arith-01: wrong by `numeric`"), "{e}");
        let e = load_mix(&["arith".into(), "arith".into()], 0.5, 64, vec![]).unwrap_err();
        assert!(e.to_string().contains("named twice"), "{e}");
        assert!(matches!(
            load_mix(&["nope".into()], 0.5, 64, vec![]),
            Err(EvalError::UnknownTask { .. })
        ));
    }
}
