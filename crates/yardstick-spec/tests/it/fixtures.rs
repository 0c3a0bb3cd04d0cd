//! The fixture corpus: every invalid spec's diagnostics are snapshotted (file:line:col, rule id,
//! message, hint); every valid spec and template validates, and the JSON Schema accepts it.

use std::path::Path;

use yardstick_spec::{Severity, Template, check_bytes, check_str, json_schema, template, yaml};

fn render(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let checked = check_bytes(&bytes);
    let name = path.file_name().unwrap().to_string_lossy();
    let mut out: Vec<String> = checked
        .diagnostics
        .iter()
        .map(|d| d.render(&name))
        .collect();
    out.push(format!(
        "-- valid: {}, errors: {}, warnings: {}",
        checked.is_valid(),
        checked.errors(),
        checked.warnings()
    ));
    out.join("\n")
}

#[test]
fn invalid_fixtures_report_every_problem_with_position_rule_and_hint() {
    insta::glob!("..", "fixtures/invalid/*.yaml", |path| {
        let checked = check_bytes(&std::fs::read(path).unwrap());
        assert!(!checked.is_valid(), "{} should be invalid", path.display());
        for d in checked
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
        {
            assert!(d.line >= 1 && d.col >= 1, "{d:?}");
            assert!(d.hint.is_some(), "every error carries a hint: {d:?}");
            assert!(
                yardstick_spec::rules::RULES.iter().any(|r| r.id == d.rule),
                "rule {} is not listed in RULES (docs/spec.md)",
                d.rule
            );
        }
        insta::assert_snapshot!(render(path));
    });
}

#[test]
fn valid_fixtures_validate() {
    insta::glob!("..", "fixtures/valid/*.yaml", |path| {
        let checked = check_bytes(&std::fs::read(path).unwrap());
        assert!(
            checked.is_valid(),
            "{}: {:#?}",
            path.display(),
            checked.diagnostics
        );
        insta::assert_snapshot!(render(path));
    });
}

#[test]
fn every_template_validates_without_warnings() {
    for t in Template::ALL {
        let checked = check_str(template(t));
        assert!(
            checked.is_valid(),
            "{}: {:#?}",
            t.name(),
            checked.diagnostics
        );
        assert_eq!(
            checked.warnings(),
            0,
            "{}: {:#?}",
            t.name(),
            checked.diagnostics
        );
    }
}

fn as_json(text: &str) -> serde_json::Value {
    let (root, issues) = yaml::parse(text);
    assert!(issues.is_empty(), "{issues:?}");
    yaml::to_json(&root.unwrap()).0
}

#[test]
fn json_schema_accepts_every_valid_spec_and_rejects_unknown_fields() {
    let schema = json_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let mut docs: Vec<(String, String)> = Template::ALL
        .iter()
        .map(|t| (t.name().to_string(), template(*t).to_string()))
        .collect();
    for entry in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid"))
            .unwrap()
    {
        let p = entry.unwrap().path();
        docs.push((
            p.display().to_string(),
            std::fs::read_to_string(&p).unwrap(),
        ));
    }
    assert!(docs.len() >= 7);
    for (name, text) in &docs {
        let json = as_json(text);
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    // The schema is strict too: an unknown field fails it, as it fails the validator.
    let bad = as_json(
        &template(Template::Serve).replace("replicates: 3", "replicates: 3\n    replicate: 3"),
    );
    assert!(!validator.is_valid(&bad));
}

#[test]
fn changing_replicates_to_two_fails_with_line_and_rule() {
    let text = template(Template::Full);
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with("replicates: 3"))
        .unwrap()
        + 1;
    let checked = check_str(&text.replacen("replicates: 3", "replicates: 2", 1));
    assert!(!checked.is_valid());
    let d = &checked.diagnostics[0];
    assert_eq!((d.rule, d.line), ("trials-replicates", line as u32));
}

#[test]
fn eval_tasks_outside_the_declared_correctness_tasks_warn_at_the_task() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/eval-layer.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let same = check_str(&text);
    assert!(same.is_valid());
    assert!(
        same.diagnostics.iter().all(|d| d.rule != "eval-config"),
        "{:?}",
        same.diagnostics
    );
    let changed = text.replacen(
        "tasks: [arith, format]       #",
        "tasks: [arith, extract]      #",
        1,
    );
    assert_ne!(changed, text);
    let line = changed
        .lines()
        .position(|l| l.contains("tasks: [arith, extract]"))
        .unwrap()
        + 1;
    let checked = check_str(&changed);
    assert!(checked.is_valid(), "a warning, not an error");
    let d: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.rule == "eval-config")
        .collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].severity, d[0].line), (Severity::Warning, line as u32));
    assert!(
        d[0].message
            .contains("`extract` is not among workload.correctness.tasks (arith, format)"),
        "{}",
        d[0].message
    );
}
