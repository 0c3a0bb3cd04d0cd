//! docs/spec.md documents every field of the schema and every rule.

fn doc() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/spec.md");
    std::fs::read_to_string(p).expect("docs/spec.md exists")
}

fn field_paths(
    schema: &serde_json::Value,
    pointer: &str,
    path: &str,
    out: &mut Vec<(String, String)>,
) {
    for f in yardstick_spec::fields_at(schema, pointer) {
        let p = if path.is_empty() {
            f.clone()
        } else {
            format!("{path}.{f}")
        };
        let ptr = format!("{pointer}/{f}");
        out.push((p.clone(), ptr.clone()));
        field_paths(schema, &ptr, &p, out);
        // Step into list items (`[]` in the docs, `/0` in pointers).
        let item = format!("{ptr}/0");
        if !yardstick_spec::fields_at(schema, &item).is_empty() {
            field_paths(schema, &item, &format!("{p}[]"), out);
        }
    }
}

#[test]
fn every_field_is_documented() {
    let doc = doc();
    let schema = yardstick_spec::json_schema();
    let mut fields = Vec::new();
    field_paths(&schema, "", "", &mut fields);
    assert!(fields.len() > 80, "walked {} fields", fields.len());
    let missing: Vec<&str> = fields
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| !doc.contains(&format!("| `{p}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/spec.md lacks rows for: {missing:#?}"
    );
}

#[test]
fn every_rule_is_documented() {
    let doc = doc();
    for r in yardstick_spec::rules::RULES {
        assert!(
            doc.contains(&format!("| `{}`", r.id)),
            "docs/spec.md lacks rule {}",
            r.id
        );
    }
}
