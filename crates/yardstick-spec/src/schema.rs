//! The JSON Schema of BenchmarkRun (generated from the types with schemars) and lookups in it.

use serde_json::Value;

use crate::model::BenchmarkRun;

/// The JSON Schema (draft 2020-12) of a BenchmarkRun spec.
pub fn json_schema() -> Value {
    let schema = schemars::schema_for!(BenchmarkRun);
    serde_json::to_value(schema).expect("a schema is JSON")
}

/// The field names the schema allows in the object at `pointer` (a JSON pointer into a spec
/// document; array indices step into `items`). Empty when the pointer leads nowhere known.
pub fn fields_at(schema: &Value, pointer: &str) -> Vec<String> {
    let mut node = resolve(schema, schema);
    for seg in pointer.split('/').skip(1) {
        let next = if seg.parse::<usize>().is_ok() {
            node.get("items")
        } else {
            node.get("properties").and_then(|p| p.get(seg))
        };
        match next {
            Some(n) => node = resolve(schema, n),
            None => return Vec::new(),
        }
    }
    node.get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The documentation of the field at `pointer` (the nearest documented ancestor for array
/// elements), from the doc comments of the spec types.
pub fn description_at(schema: &Value, pointer: &str) -> Option<String> {
    let mut node = resolve(schema, schema);
    let mut description = None;
    for seg in pointer.split('/').skip(1) {
        let next = if seg.parse::<usize>().is_ok() {
            node.get("items")
        } else {
            node.get("properties").and_then(|p| p.get(seg))
        };
        let next = next?;
        if let Some(d) = next.get("description").and_then(Value::as_str) {
            description = Some(d.to_string());
        }
        node = resolve(schema, next);
    }
    description
}

/// Follows `$ref` and steps into the non-null branch of `anyOf`/`oneOf` (how schemars writes
/// `Option<T>`).
fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..32 {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            match r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                Some(target) => {
                    node = target;
                    continue;
                }
                None => return node,
            }
        }
        let branches = node
            .get("anyOf")
            .or_else(|| node.get("oneOf"))
            .and_then(Value::as_array);
        if let Some(branch) = branches.and_then(|b| {
            b.iter()
                .find(|x| x.get("type").and_then(Value::as_str) != Some("null"))
        }) {
            node = branch;
            continue;
        }
        return node;
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_through_refs_options_and_arrays() {
        let s = json_schema();
        let top = fields_at(&s, "");
        assert!(top.contains(&"apiVersion".to_string()));
        let trials = fields_at(&s, "/spec/trials");
        assert!(trials.contains(&"replicates".to_string()));
        assert!(trials.contains(&"confidenceLevel".to_string()));
        let serve = fields_at(&s, "/spec/layers/component/3");
        assert!(serve.contains(&"scenarios".to_string()));
        let target = fields_at(&s, "/spec/layers/component/0/target");
        assert!(target.contains(&"apiKeyEnv".to_string()));
        assert!(fields_at(&s, "/spec/nope").is_empty());
        let d = description_at(&s, "/spec/trials/replicates").unwrap();
        assert!(d.contains(">= 3"), "{d}");
        let d = description_at(&s, "/spec/layers/micro/0/sizes/1").unwrap();
        assert!(d.contains("Problem sizes"), "{d}");
    }
}
