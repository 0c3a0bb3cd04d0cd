//! A YAML document as a tree of nodes that remember where they came from.
//!
//! Built from saphyr-parser's event stream (a pure-Rust YAML 1.2 parser that reports spans),
//! iteratively, with hard limits so hostile input cannot exhaust the stack or memory: nesting
//! depth, and the number of nodes after alias expansion (the "billion laughs" attack).

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

/// A position in the source: 1-based line and column (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

impl Pos {
    fn of(span: &Span) -> Pos {
        Pos {
            line: span.start.line() as u32,
            col: span.start.col() as u32 + 1,
        }
    }
}

/// The deepest nesting of sequences and mappings accepted.
pub const MAX_DEPTH: usize = 64;
/// The most nodes a document may expand to, counting every alias expansion.
pub const MAX_NODES: usize = 200_000;

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts.
    pub pos: Pos,
}

/// A YAML value, resolved with the YAML 1.2 core schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`, `~` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in source order. Keys are strings (scalar keys are stringified).
    Map(Vec<(String, Pos, Node)>),
}

/// A problem found while reading YAML.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlIssue {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
    /// Whether the document could still be read (e.g. a duplicate key) or not.
    pub fatal: bool,
    /// Short id: `yaml-syntax`, `duplicate-key`, `yaml-limits`.
    pub rule: &'static str,
}

enum Frame {
    Seq {
        items: Vec<Node>,
        pos: Pos,
        anchor: usize,
    },
    Map {
        entries: Vec<(String, Pos, Node)>,
        key: Option<(String, Pos)>,
        pos: Pos,
        anchor: usize,
    },
}

struct Anchored {
    node: Node,
    size: usize,
}

/// Parses one YAML document. Returns the root (or `None` when the input has no document) and
/// the issues found; a fatal issue means the tree is absent.
pub fn parse(text: &str) -> (Option<Node>, Vec<YamlIssue>) {
    let mut issues = Vec::new();
    match build(text, &mut issues) {
        Ok(root) => (root, issues),
        Err(fatal) => {
            issues.push(fatal);
            (None, issues)
        }
    }
}

fn fatal(pos: Pos, rule: &'static str, message: impl Into<String>) -> YamlIssue {
    YamlIssue {
        pos,
        message: message.into(),
        fatal: true,
        rule,
    }
}

fn build(text: &str, issues: &mut Vec<YamlIssue>) -> Result<Option<Node>, YamlIssue> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Anchored> = HashMap::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    let mut nodes = 0usize;

    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let m = e.marker();
            let pos = Pos {
                line: m.line() as u32,
                col: m.col() as u32 + 1,
            };
            if e.info().contains("recursion limit") {
                // The scanner's own guard against deep flow nesting.
                fatal(
                    pos,
                    "yaml-limits",
                    format!("nesting is too deep ({})", e.info()),
                )
            } else {
                fatal(
                    pos,
                    "yaml-syntax",
                    format!("YAML syntax error: {}", e.info()),
                )
            }
        })?;
        let pos = Pos::of(&span);
        // A completed node (scalar, alias, or a closed collection) to attach to its parent.
        let (node, anchor, size) = match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => continue,
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(fatal(
                        pos,
                        "yaml-syntax",
                        "a spec file holds one YAML document, but a second one starts here",
                    ));
                }
                continue;
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(fatal(
                        pos,
                        "yaml-limits",
                        format!("nesting is deeper than {MAX_DEPTH} levels"),
                    ));
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq {
                        items: Vec::new(),
                        pos,
                        anchor,
                    }
                } else {
                    Frame::Map {
                        entries: Vec::new(),
                        key: None,
                        pos,
                        anchor,
                    }
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let frame = stack.pop().expect("parser balances collections");
                match frame {
                    Frame::Seq { items, pos, anchor } => (
                        Node {
                            value: Value::Seq(items),
                            pos,
                        },
                        anchor,
                        1,
                    ),
                    Frame::Map {
                        entries,
                        pos,
                        anchor,
                        ..
                    } => (
                        Node {
                            value: Value::Map(entries),
                            pos,
                        },
                        anchor,
                        1,
                    ),
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let forced_str = tag
                    .as_ref()
                    .is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
                let value = if style == ScalarStyle::Plain && !forced_str {
                    resolve_plain(&text)
                } else {
                    Value::Str(text.into_owned())
                };
                (Node { value, pos }, anchor, 1)
            }
            Event::Alias(id) => {
                let Some(a) = anchors.get(&id) else {
                    return Err(fatal(pos, "yaml-syntax", "alias to an unknown anchor"));
                };
                let mut node = a.node.clone();
                node.pos = pos;
                (node, 0, a.size)
            }
        };

        nodes += size;
        if nodes > MAX_NODES {
            return Err(fatal(
                pos,
                "yaml-limits",
                format!(
                    "the document expands to more than {MAX_NODES} nodes (aliases are counted \
                     each time they are used)"
                ),
            ));
        }
        if anchor != 0 {
            let size = if size == 1 { count(&node) } else { size };
            anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    size,
                },
            );
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    let k = match &node.value {
                        Value::Str(s) => s.clone(),
                        Value::Null => "null".to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Int(i) => i.to_string(),
                        Value::Float(f) => f.to_string(),
                        Value::Seq(_) | Value::Map(_) => {
                            return Err(fatal(
                                node.pos,
                                "yaml-syntax",
                                "mapping keys must be plain scalars, not collections",
                            ));
                        }
                    };
                    if let Some((_, first, _)) = entries.iter().find(|(name, _, _)| *name == k) {
                        issues.push(YamlIssue {
                            pos: node.pos,
                            message: format!(
                                "duplicate key `{k}` (first defined at line {}); YAML keeps only \
                                 one of them",
                                first.line
                            ),
                            fatal: false,
                            rule: "duplicate-key",
                        });
                    }
                    *key = Some((k, node.pos));
                }
                Some((k, kpos)) => {
                    if let Some(slot) = entries.iter_mut().find(|(name, _, _)| *name == k) {
                        // Last one wins, as in most YAML loaders; the duplicate is reported.
                        *slot = (k, kpos, node);
                    } else {
                        entries.push((k, kpos, node));
                    }
                }
            },
        }
    }
    Ok(root)
}

/// Counts the nodes of a tree (iteratively: it may be deep).
fn count(node: &Node) -> usize {
    let mut n = 0;
    let mut todo = vec![node];
    while let Some(x) = todo.pop() {
        n += 1;
        match &x.value {
            Value::Seq(items) => todo.extend(items.iter()),
            Value::Map(entries) => todo.extend(entries.iter().map(|(_, _, v)| v)),
            _ => {}
        }
    }
    n
}

/// Resolves a plain scalar with the YAML 1.2 core schema.
fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = s.parse::<i64>()
    {
        return Value::Int(i);
    }
    if let Some(hex) = s.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return Value::Int(i);
    }
    if let Some(oct) = s.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return Value::Int(i);
    }
    // Core-schema floats: [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
    if is_core_float(digits)
        && let Ok(f) = s.parse::<f64>()
    {
        return Value::Float(f);
    }
    Value::Str(s.to_string())
}

fn is_core_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((a, b)) => {
            (!a.is_empty() || !b.is_empty())
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|c| c.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}

/// Where a JSON-pointer path was in the source: the key's position (for mapping entries) and the
/// value's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located {
    /// Position of the mapping key naming this value, if it is a mapping entry.
    pub key: Option<Pos>,
    /// Position of the value.
    pub value: Pos,
}

/// Converts the tree to JSON (for typed decoding) and records every node's position under its
/// JSON pointer (`/spec/trials/replicates`, `/spec/layers/component/0/kind`).
pub fn to_json(root: &Node) -> (serde_json::Value, HashMap<String, Located>) {
    let mut positions = HashMap::new();
    let value = convert(root, String::new(), None, &mut positions);
    (value, positions)
}

fn convert(
    node: &Node,
    pointer: String,
    key: Option<Pos>,
    positions: &mut HashMap<String, Located>,
) -> serde_json::Value {
    use serde_json::Value as J;
    let value = match &node.value {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        // JSON has no NaN or infinity; they become null and are caught by the rules as missing.
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
        Value::Str(s) => J::String(s.clone()),
        Value::Seq(items) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, n)| convert(n, format!("{pointer}/{i}"), None, positions))
                .collect(),
        ),
        Value::Map(entries) => J::Object(
            entries
                .iter()
                .map(|(k, kpos, n)| {
                    let child = format!("{pointer}/{}", escape(k));
                    (k.clone(), convert(n, child, Some(*kpos), positions))
                })
                .collect(),
        ),
    };
    positions.insert(
        pointer,
        Located {
            key,
            value: node.pos,
        },
    );
    value
}

/// Escapes a key for a JSON pointer (RFC 6901).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        let (root, issues) = parse(text);
        assert!(issues.is_empty(), "{issues:?}");
        root.unwrap()
    }

    #[test]
    fn resolves_core_schema_scalars() {
        let n = root("a: 1\nb: 1.5\nc: 7.2e9\nd: true\ne: ~\nf: D(1,2)\ng: '3'\nh: 0x1f\ni: 1e3\n");
        let (json, _) = to_json(&n);
        assert_eq!(
            json,
            serde_json::json!({"a":1,"b":1.5,"c":7.2e9,"d":true,"e":null,"f":"D(1,2)","g":"3","h":31,"i":1000.0})
        );
    }

    #[test]
    fn records_positions_of_keys_and_values() {
        let n = root("spec:\n  trials:\n    replicates: 2\n  list:\n    - x\n    - y\n");
        let (_, pos) = to_json(&n);
        let r = pos["/spec/trials/replicates"];
        assert_eq!(r.key, Some(Pos { line: 3, col: 5 }));
        assert_eq!(r.value, Pos { line: 3, col: 17 });
        assert_eq!(pos["/spec/list/1"].value, Pos { line: 6, col: 7 });
    }

    #[test]
    fn reports_duplicate_keys_and_keeps_the_last() {
        let (root, issues) = parse("a: 1\nb: 2\na: 3\n");
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].rule, "duplicate-key");
        assert_eq!(issues[0].pos.line, 3);
        let (json, _) = to_json(&root.unwrap());
        assert_eq!(json, serde_json::json!({"a":3,"b":2}));
    }

    #[test]
    fn bounds_alias_bombs() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = format!("*a{}", i - 1);
            text.push_str(&format!(
                "a{i}: &a{i} [{}]\n",
                [prev.as_str(); 10].join(", ")
            ));
        }
        let (root, issues) = parse(&text);
        assert!(root.is_none());
        assert_eq!(issues.last().unwrap().rule, "yaml-limits");
    }

    #[test]
    fn bounds_nesting_without_overflowing_the_stack() {
        let text = "[".repeat(100_000);
        let (root, issues) = parse(&text);
        assert!(root.is_none());
        assert_eq!(issues.last().unwrap().rule, "yaml-limits");
        // Block nesting reaches our own depth limit.
        let block: String = (0..200)
            .map(|i| format!("{}a:\n", "  ".repeat(i)))
            .collect();
        let (root, issues) = parse(&block);
        assert!(root.is_none());
        let last = issues.last().unwrap();
        assert_eq!(last.rule, "yaml-limits");
        assert!(last.message.contains("deeper than 64"), "{}", last.message);
    }

    #[test]
    fn rejects_a_second_document() {
        let (root, issues) = parse("a: 1\n---\nb: 2\n");
        assert!(root.is_none());
        assert!(issues[0].message.contains("second one"));
        assert_eq!(issues[0].pos.line, 2);
    }
}
