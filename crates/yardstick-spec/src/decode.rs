//! Typed decoding that reports every problem, not just the first.
//!
//! serde stops at the first error. So the decoder records the error with its position, removes
//! the offending value from the document and decodes again, until the document decodes (every
//! field that can be absent is an `Option`, so removal always makes progress). Fields serde did
//! not recognise are collected with `serde_ignored` and reported with a did-you-mean drawn from
//! the JSON Schema of the types, so the schema and the decoder cannot disagree.

use std::collections::HashMap;

use serde_json::Value;

use crate::diag::{Diagnostic, Severity, did_you_mean, display_path};
use crate::locate::Locator;
use crate::model::{BenchmarkRun, DURATION_ERROR_PREFIX};
use crate::scenario::ScenarioError;

/// Decoding gives up after this many errors (each costs one decode pass).
const MAX_ERRORS: usize = 100;

/// Decodes `json` into a spec, appending diagnostics for type errors and unknown fields.
pub(crate) fn decode(
    mut json: Value,
    loc: &Locator<'_>,
    schema: &Value,
    diags: &mut Vec<Diagnostic>,
) -> BenchmarkRun {
    // Original indices removed from each array (keyed by the array's original pointer), so that
    // pointers into the repaired document map back to source positions.
    let mut removed: HashMap<String, Vec<usize>> = HashMap::new();
    for _ in 0..MAX_ERRORS {
        let mut unknown: Vec<String> = Vec::new();
        let result = {
            let mut record =
                |path: serde_ignored::Path<'_>| unknown.push(pointer_of_ignored(&path));
            let de = serde_ignored::Deserializer::new(&json, &mut record);
            serde_path_to_error::deserialize::<_, BenchmarkRun>(de)
        };
        match result {
            Ok(run) => {
                for ptr in unknown {
                    let original = original_pointer(&json, &ptr, &removed);
                    diags.push(unknown_field(&original, loc, schema));
                }
                return run;
            }
            Err(err) => {
                let ptr = pointer_of(err.path());
                let original = original_pointer(&json, &ptr, &removed);
                diags.push(type_error(&original, &err.inner().to_string(), loc, schema));
                if ptr.is_empty() {
                    return BenchmarkRun::default();
                }
                remove(&mut json, &ptr, &original, &mut removed);
            }
        }
    }
    diags.push(Diagnostic {
        severity: Severity::Error,
        rule: "invalid-value",
        message: format!("more than {MAX_ERRORS} invalid values; stopped checking"),
        hint: Some("fix the errors above and check again".into()),
        path: String::new(),
        line: 1,
        col: 1,
    });
    BenchmarkRun::default()
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut p = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => p.push_str(&format!("/{index}")),
            Segment::Map { key } => {
                p.push('/');
                p.push_str(&crate::yaml::escape(key));
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    p
}

fn pointer_of_ignored(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}/{index}", pointer_of_ignored(parent)),
        Path::Map { parent, key } => {
            format!(
                "{}/{}",
                pointer_of_ignored(parent),
                crate::yaml::escape(key)
            )
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => pointer_of_ignored(parent),
    }
}

/// Maps a pointer into the repaired document to the pointer of the same node in the source.
fn original_pointer(json: &Value, ptr: &str, removed: &HashMap<String, Vec<usize>>) -> String {
    let mut original = String::new();
    let mut node = Some(json);
    for seg in ptr.split('/').skip(1) {
        let is_array = matches!(node, Some(Value::Array(_)));
        let mapped = match (is_array, seg.parse::<usize>(), removed.get(&original)) {
            (true, Ok(i), Some(gone)) => {
                // The i-th original index that was not removed.
                (0..)
                    .filter(|j| !gone.contains(j))
                    .nth(i)
                    .unwrap_or(i)
                    .to_string()
            }
            _ => seg.to_string(),
        };
        node = node.and_then(|n| match n {
            Value::Array(items) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            Value::Object(map) => map.get(&seg.replace("~1", "/").replace("~0", "~")),
            _ => None,
        });
        original.push('/');
        original.push_str(&mapped);
    }
    original
}

fn remove(json: &mut Value, ptr: &str, original: &str, removed: &mut HashMap<String, Vec<usize>>) {
    let (parent, last) = ptr.rsplit_once('/').expect("non-empty pointer");
    let (original_parent, original_last) = original.rsplit_once('/').expect("non-empty pointer");
    match json.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last.replace("~1", "/").replace("~0", "~"));
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < items.len()
            {
                items.remove(i);
                if let Ok(j) = original_last.parse::<usize>() {
                    removed
                        .entry(original_parent.to_string())
                        .or_default()
                        .push(j);
                }
            }
        }
        // The error is on a node inside something that is not a container (cannot happen with
        // serde_json values); clear the parent so decoding makes progress.
        Some(other) => *other = Value::Null,
        None => {}
    }
}

fn type_error(ptr: &str, raw: &str, loc: &Locator<'_>, schema: &Value) -> Diagnostic {
    let path = display_path(ptr);
    let at = if path.is_empty() {
        "the document".to_string()
    } else {
        format!("`{path}`")
    };
    let pos = loc.value(ptr);
    let (rule, message, hint) = if raw.starts_with("invalid traffic scenario") {
        (
            "scenario-syntax",
            format!("{at}: {raw}"),
            Some(ScenarioError::hint()),
        )
    } else if raw.starts_with(DURATION_ERROR_PREFIX) {
        (
            "duration-syntax",
            format!("{at}: {raw}"),
            Some("durations are a number and a unit: ms, s, m, h (e.g. 120s, 5m)".to_string()),
        )
    } else if let Some(rest) = raw.strip_prefix("unknown variant ") {
        let (given, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let given = given.trim_matches('`');
        let options: Vec<&str> = expected
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 1)
            .map(|(_, s)| s)
            .collect();
        let hint = match did_you_mean(given, options.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? accepted: {}", options.join(", ")),
            None => format!("accepted: {}", options.join(", ")),
        };
        (
            "unknown-value",
            format!("{at}: unknown value `{given}`"),
            Some(hint),
        )
    } else {
        let hint = match crate::schema::description_at(schema, ptr) {
            Some(d) => format!("`{}`: {d}", path.rsplit('.').next().unwrap_or(&path)),
            None => "see docs/spec.md for the field's type".to_string(),
        };
        (
            "invalid-value",
            format!("{at}: {}", humanize(raw)),
            Some(hint),
        )
    };
    Diagnostic {
        severity: Severity::Error,
        rule,
        message,
        hint,
        path,
        line: pos.line,
        col: pos.col,
    }
}

/// Rewrites serde's Rust-flavoured type names into words a spec author uses.
fn humanize(raw: &str) -> String {
    let mut s = raw
        .replace("expected u32", "expected a whole number")
        .replace("expected u64", "expected a whole number")
        .replace("expected f64", "expected a number")
        .replace("expected a borrowed string", "expected a string")
        .replace("expected a sequence", "expected a list")
        .replace("expected a map", "expected a mapping")
        .replace("invalid type: map", "invalid type: mapping")
        .replace("invalid type: sequence", "invalid type: list")
        .replace("invalid type: null", "invalid type: empty value");
    if let Some(i) = s.find("expected struct ") {
        s.truncate(i);
        s.push_str("expected a mapping of fields");
    }
    if let Some(i) = s.find("expected enum ") {
        s.truncate(i);
        s.push_str("expected one of the documented values");
    }
    s
}

fn unknown_field(ptr: &str, loc: &Locator<'_>, schema: &Value) -> Diagnostic {
    let (parent, last) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    let name = last.replace("~1", "/").replace("~0", "~");
    let known = crate::schema::fields_at(schema, parent);
    let parent_path = display_path(parent);
    let within = if parent_path.is_empty() {
        "at the top level".to_string()
    } else {
        format!("in `{parent_path}`")
    };
    let hint = match did_you_mean(&name, known.iter().map(String::as_str)) {
        Some(s) => Some(format!(
            "did you mean `{s}`? known fields: {}",
            known.join(", ")
        )),
        None if !known.is_empty() => Some(format!("known fields: {}", known.join(", "))),
        None => None,
    };
    let pos = loc.key(ptr);
    Diagnostic {
        severity: Severity::Error,
        rule: "unknown-field",
        message: format!("unknown field `{name}` {within}"),
        hint,
        path: display_path(ptr),
        line: pos.line,
        col: pos.col,
    }
}
