//! A small, deterministic YAML writer for JSON values (the manifests `yardstick k8s render`
//! writes). Block style, keys in the order the value holds them (k8s-openapi's maps are sorted),
//! strings plain only when every YAML 1.1 and 1.2 reader takes them as the same string
//! (`kubectl` reads YAML 1.1), double-quoted otherwise, and multi-line text (the frozen spec) as
//! a literal block.

use serde_json::Value;

/// `v` as a YAML document (no `---`), ending with a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => map(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => seq(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn pad(n: usize) -> String {
    " ".repeat(n)
}

fn map(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&pad(indent));
        out.push_str(&string(k, None));
        out.push(':');
        nested(v, indent, out);
    }
}

/// A value after `key:` (or `- `): inline when it is a scalar or empty, else on the next lines.
fn nested(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            map(m, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            seq(a, indent + 2, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other, indent + 2));
            out.push('\n');
        }
    }
}

fn seq(a: &[Value], indent: usize, out: &mut String) {
    for v in a {
        match v {
            Value::Object(m) if !m.is_empty() => {
                // The item's map two columns in, its first line starting with the dash.
                let mut item = String::new();
                map(m, indent + 2, &mut item);
                out.push_str(&pad(indent));
                out.push_str("- ");
                out.push_str(&item[indent + 2..]);
            }
            Value::Array(inner) if !inner.is_empty() => {
                let mut item = String::new();
                seq(inner, indent + 2, &mut item);
                out.push_str(&pad(indent));
                out.push_str("- ");
                out.push_str(&item[indent + 2..]);
            }
            other => {
                out.push_str(&pad(indent));
                out.push_str("- ");
                out.push_str(&scalar(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Value, indent: usize) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s, Some(indent)),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// Words YAML 1.1 or 1.2 read as something other than a string.
const RESERVED: &[&str] = &[
    "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
];

/// A string scalar: plain, a literal block (multi-line text, when `block_indent` allows it), or
/// double-quoted.
fn string(s: &str, block_indent: Option<usize>) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str());
    if plain {
        return s.to_string();
    }
    if let Some(indent) = block_indent
        && s.contains('\n')
        && !s.trim().is_empty()
        && !s.starts_with([' ', '\t', '\n'])
        && s.chars().all(|c| c == '\n' || c == '\t' || printable(c))
    {
        let body = s.trim_end_matches('\n');
        let chomp = match s.len() - body.len() {
            0 => "-",
            1 => "",
            _ => "+",
        };
        let mut out = format!("|{chomp}\n");
        // The caller's newline ends the last line.
        let lines: Vec<&str> = s.strip_suffix('\n').unwrap_or(s).split('\n').collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.is_empty() {
                out.push_str(&pad(indent));
                out.push_str(line);
            }
            if i + 1 < lines.len() {
                out.push('\n');
            }
        }
        // The caller ends the line.
        return out;
    }
    quoted(s)
}

/// Characters YAML allows unescaped.
fn printable(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && c != '\u{feff}'
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if printable(c) => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: &Value) {
        let text = to_yaml(v);
        let (node, issues) = yardstick_spec::yaml::parse(&text);
        assert!(issues.is_empty(), "{issues:?}\n{text}");
        let (back, _) = yardstick_spec::yaml::to_json(&node.expect("a document"));
        assert_eq!(&back, v, "\n{text}");
    }

    #[test]
    fn every_shape_reads_back_as_the_same_value() {
        round_trip(&json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "a-b", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
            "spec": {
                "completions": 2,
                "suspend": true,
                "ratio": 0.5,
                "nothing": null,
                "empty": {},
                "none": [],
                "args": ["run", "/spec/spec.yaml", "--shard", "$(JOB_COMPLETION_INDEX)/2"],
                "nested": [[1, 2], [], [{"a": 1}]],
                "containers": [{"name": "x", "env": [{"name": "A", "value": "1"}]}],
                "words": ["yes", "No", "on", "null", "~", "y", "1", "0777", "1e3", "0x1f",
                    ".inf", "-", "a: b", "#c", "", " lead", "trail ", "tab\tin", "quote\"s",
                    "back\\slash", "uni é ✓", "ctrl \u{7}", "x:y", "0 3 * * *"],
            },
            "data": {
                "spec.yaml": "apiVersion: yardstick/v1\nkind: BenchmarkRun\n  indented: [1]\n\nend\n",
                "no-newline": "a\nb",
                "two-newlines": "a\nb\n\n",
                "leading-space": "  a\nb\n",
                "cr": "a\r\nb\n",
            },
        }));
    }

    #[test]
    fn strings_that_read_as_other_types_are_quoted() {
        let y = to_yaml(&json!({"a": "true", "b": "1", "c": "yes", "d": "plain-word/x.y"}));
        assert_eq!(y, "a: \"true\"\nb: \"1\"\nc: \"yes\"\nd: plain-word/x.y\n");
    }
}
