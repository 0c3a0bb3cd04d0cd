//! Tasks as data: JSONL items, one per line, and the bundled probe sets.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::EvalError;
use crate::score::{Normalize, Score, Scorer};

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// One item as written in a task file.
#[derive(Debug, Clone, Deserialize)]
struct RawItem {
    id: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    references: Vec<String>,
    #[serde(default)]
    normalize: Normalize,
    #[serde(flatten)]
    scorer: Scorer,
}

/// One item of a task, checked.
#[derive(Debug, Clone)]
pub struct Item {
    /// Unique id within the task.
    pub id: String,
    /// The conversation sent (a `prompt` becomes one user message).
    pub messages: Vec<Message>,
    /// Accepted answers (patterns for `regex`).
    pub references: Vec<String>,
    /// How the output is judged.
    pub scorer: Scorer,
    /// Normalisation before comparing.
    pub normalize: Normalize,
    regexes: Vec<regex::Regex>,
}

impl Item {
    /// Scores `output`.
    pub fn score(&self, output: &str) -> Score {
        self.scorer
            .score(output, &self.references, &self.normalize, &self.regexes)
    }

    /// The prompt for the completions API: the messages' contents joined by blank lines.
    pub fn completion_prompt(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// A named list of items.
#[derive(Debug, Clone)]
pub struct Task {
    /// The task's name (probe name or file stem).
    pub name: String,
    /// Its items, in file order.
    pub items: Vec<Item>,
}

/// The bundled probe sets: (name, JSONL text).
pub const PROBES: &[(&str, &str)] = &[
    ("arith", include_str!("probes/arith.jsonl")),
    ("format", include_str!("probes/format.jsonl")),
    ("extract", include_str!("probes/extract.jsonl")),
    ("code", include_str!("probes/code.jsonl")),
];

impl Task {
    /// Parses JSONL text; `source` names the file in errors.
    pub fn parse(name: &str, source: &str, text: &str) -> Result<Task, EvalError> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let bad = |why: String| EvalError::Task {
                file: source.to_string(),
                line: line_no,
                why,
            };
            if line.trim().is_empty() {
                continue;
            }
            let raw: RawItem = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
            if !seen.insert(raw.id.clone()) {
                return Err(bad(format!("duplicate id `{}`", raw.id)));
            }
            let messages = match (raw.prompt, raw.messages) {
                (Some(p), None) => vec![Message {
                    role: "user".into(),
                    content: p,
                }],
                (None, Some(m)) if !m.is_empty() => m,
                _ => return Err(bad("exactly one of `prompt` or `messages` is needed".into())),
            };
            let needs_refs = !matches!(raw.scorer, Scorer::JsonKeys { .. });
            if needs_refs && raw.references.is_empty() {
                return Err(bad(format!(
                    "scorer `{}` needs at least one reference",
                    raw.scorer.name()
                )));
            }
            let regexes = if matches!(raw.scorer, Scorer::Regex) {
                raw.references
                    .iter()
                    .map(|p| regex::Regex::new(p).map_err(|e| bad(format!("bad regex: {e}"))))
                    .collect::<Result<Vec<_>, _>>()?
            } else {
                Vec::new()
            };
            items.push(Item {
                id: raw.id,
                messages,
                references: raw.references,
                scorer: raw.scorer,
                normalize: raw.normalize,
                regexes,
            });
        }
        if items.is_empty() {
            return Err(EvalError::Task {
                file: source.to_string(),
                line: 0,
                why: "no items".into(),
            });
        }
        Ok(Task {
            name: name.to_string(),
            items,
        })
    }

    /// A bundled probe set by name.
    pub fn builtin(name: &str) -> Option<Result<Task, EvalError>> {
        PROBES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, text)| Task::parse(n, &format!("builtin:{n}"), text))
    }

    /// A bundled probe name, or a path to a `.jsonl` file.
    pub fn load(spec: &str) -> Result<Task, EvalError> {
        if let Some(t) = Task::builtin(spec) {
            return t;
        }
        let path = Path::new(spec);
        if spec.ends_with(".jsonl") || path.exists() {
            let bytes = std::fs::read(path).map_err(|e| EvalError::Io {
                path: spec.to_string(),
                why: e.to_string(),
            })?;
            let text = String::from_utf8(bytes).map_err(|e| {
                let at = e.utf8_error().valid_up_to();
                EvalError::Task {
                    file: spec.to_string(),
                    line: e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1,
                    why: "not UTF-8 text".into(),
                }
            })?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| spec.to_string());
            return Task::parse(&name, spec, &text);
        }
        Err(EvalError::UnknownTask {
            name: spec.to_string(),
            known: PROBES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_validator_knows_the_bundled_probes() {
        let here: Vec<&str> = PROBES.iter().map(|(n, _)| *n).collect();
        assert_eq!(here, yardstick_spec::rules::BUNDLED_TASKS);
        for n in here {
            assert!(!yardstick_spec::rules::task_is_file(n));
        }
    }

    #[test]
    fn probes_parse_and_have_20_to_30_items() {
        for (n, _) in PROBES {
            let t = Task::builtin(n).unwrap().unwrap();
            assert!((20..=30).contains(&t.items.len()), "{n}: {}", t.items.len());
        }
    }

    #[test]
    fn probe_references_accept_model_answers() {
        let t = |n: &str| Task::builtin(n).unwrap().unwrap();
        let code = t("code");
        let samples = [
            "def add(a, b):\n    return a + b",
            "```rust\nfn square(x: i32) -> i32 { x * x }\n```",
            "SELECT * FROM users;",
            "const double = (n) => n * 2;",
            "ls -la",
            "[x**2 for x in range(10)]",
            "int main(void) {\n  return 0;\n}",
            "import json",
            "struct Point { x: f64, y: f64 }",
            "\\d+",
            "for i in range(1, 6):\n    print(i)",
            "func Hello() string { return \"hi\" }",
            "CREATE TABLE items (id INTEGER);",
            "class Stack:\n    def __init__(self):\n        self.items = []",
            "git checkout -b dev",
            "match n {\n    0 => 1,\n    _ => 2,\n}",
            "[1, 2, 3]",
            "f\"Hello, {name}!\"",
            "interface User {\n  email: string;\n}",
            "FROM alpine:3.19",
        ];
        assert_eq!(code.items.len(), samples.len());
        for (item, s) in code.items.iter().zip(samples) {
            assert!(item.score(s).correct, "{}: {s}", item.id);
            assert!(
                !item.score("I cannot help with that.").correct,
                "{}",
                item.id
            );
        }
        for item in &t("extract").items {
            let answer = format!("{}.", item.references[0].to_uppercase());
            assert!(item.score(&answer).correct, "{}", item.id);
            assert!(!item.score("unknown").correct, "{}", item.id);
        }
    }

    #[test]
    fn bad_files_name_the_line() {
        let e = Task::parse("t", "f.jsonl", "{\"id\":\"a\",\"prompt\":\"x\",\"references\":[\"1\"],\"scorer\":\"exact\"}\n{\"id\":\"b\",\"prompt\":\"x\"}").unwrap_err();
        assert!(e.to_string().contains("f.jsonl:2"), "{e}");
        let dup = "{\"id\":\"a\",\"prompt\":\"x\",\"references\":[\"1\"],\"scorer\":\"exact\"}\n";
        let e = Task::parse("t", "f", &dup.repeat(2)).unwrap_err();
        assert!(e.to_string().contains("duplicate"), "{e}");
        let e = Task::parse(
            "t",
            "f",
            "{\"id\":\"a\",\"prompt\":\"x\",\"references\":[\"(\"],\"scorer\":\"regex\"}",
        )
        .unwrap_err();
        assert!(e.to_string().contains("bad regex"), "{e}");
        assert!(Task::parse("t", "f", "\n").is_err());
    }

    /// Found by the task-file property test: a file that is not UTF-8 was refused without the
    /// line (every other error in a task file names it).
    #[test]
    fn a_file_that_is_not_utf8_names_the_line() {
        let dir = std::env::temp_dir().join(format!("ys-task-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.jsonl");
        std::fs::write(&p, b"\n\n{\"id\": \"\xc3\"}\n").unwrap();
        let e = Task::load(&p.display().to_string())
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("t.jsonl:3: not UTF-8 text"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn options_parse() {
        let t = Task::parse(
            "t",
            "f",
            r#"{"id":"a","messages":[{"role":"user","content":"q"}],"references":["3"],"scorer":"numeric","tolerance":0.5,"normalize":{"case":true}}"#,
        )
        .unwrap();
        assert_eq!(t.items[0].scorer, Scorer::Numeric { tolerance: 0.5 });
        assert!(t.items[0].normalize.case);
        assert!(t.items[0].score("3.4").correct);
    }
}
