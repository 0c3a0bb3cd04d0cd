//! docs/spec.md documents every field of the schema and every rule; docs/methodology.md says
//! why each rule exists; and the repository stands alone, referring to no document outside it.

use std::path::{Path, PathBuf};

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

// The repository stands alone: docs/methodology.md explains every rule, the links into it
// resolve, and nothing refers to documents outside the repository.

/// The workspace root (this crate lives in `crates/yardstick-spec`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn methodology() -> String {
    std::fs::read_to_string(repo_root().join("docs/methodology.md"))
        .expect("docs/methodology.md exists")
}

/// The repository's files, relative to the root: what git tracks plus new files it does not
/// ignore; without git (an exported source tree), every file outside `target/` and `.git/`.
fn repo_files(root: &Path) -> Vec<PathBuf> {
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    if let Ok(out) = git
        && out.status.success()
        && !out.stdout.is_empty()
    {
        let mut files: Vec<PathBuf> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .collect();
        files.sort();
        files.dedup();
        return files;
    }
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    walk(root, &path, out);
                }
            } else if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_path_buf());
            }
        }
    }
    let mut files = Vec::new();
    walk(root, root, &mut files);
    files.sort();
    files
}

/// The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped, spaces
/// as hyphens.
fn heading_anchors(markdown: &str) -> Vec<String> {
    let mut in_code = false;
    let mut anchors = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let anchor: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        anchors.push(anchor);
    }
    anchors
}

#[test]
fn nothing_refers_to_documents_outside_the_repository() {
    let root = repo_root();
    // Spelled in pieces so that this file does not match itself.
    let forbidden = [
        format!("../{}", "shared"),
        format!("shared/{}", "design"),
        format!("{}.md", "design"),
        format!("{}/", "seeds"),
        format!("seed {}", "00"),
        format!("seed_{}", "00"),
        format!("seed {}", "methodology"),
    ];
    let files = repo_files(&root);
    assert!(
        files.iter().any(|f| f == Path::new("README.md")),
        "found {} files under {}, but no README.md",
        files.len(),
        root.display()
    );
    let mut hits = Vec::new();
    for rel in &files {
        // Deleted but still tracked, or not text: nothing to read.
        let Ok(bytes) = std::fs::read(root.join(rel)) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if let Some(f) = forbidden.iter().find(|f| lower.contains(f.as_str())) {
                hits.push(format!(
                    "{}:{}: `{f}` in: {}",
                    rel.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "the repository must stand alone: these lines refer to documents outside it (put what \
         users need in docs/, e.g. docs/methodology.md, and point there):\n{}",
        hits.join("\n")
    );
}

#[test]
fn every_rule_has_a_section_in_the_methodology() {
    let doc = methodology();
    let anchors = heading_anchors(&doc);
    let index = &doc[doc
        .find("## Rule index")
        .expect("docs/methodology.md has a `## Rule index` section")..];
    let rows: Vec<(&str, &str)> = index
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("| `")?;
            let (id, rest) = rest.split_once('`')?;
            Some((id, rest))
        })
        .collect();
    for r in yardstick_spec::rules::RULES {
        let Some((_, row)) = rows.iter().find(|(id, _)| *id == r.id) else {
            panic!(
                "docs/methodology.md's rule index lacks a row for rule `{}`",
                r.id
            );
        };
        let anchor = row
            .split_once("](#")
            .and_then(|(_, a)| a.split_once(')'))
            .map(|(a, _)| a)
            .unwrap_or_else(|| panic!("the row of `{}` links no section: {row}", r.id));
        assert!(
            anchors.iter().any(|a| a == anchor),
            "the row of `{}` links #{anchor}, which is no heading of docs/methodology.md",
            r.id
        );
        assert_eq!(
            r.section, anchor,
            "RuleInfo::section of `{}` (rules.rs) and its row in the rule index disagree",
            r.id
        );
    }
    for (id, _) in &rows {
        assert!(
            yardstick_spec::rules::RULES.iter().any(|r| r.id == *id),
            "docs/methodology.md's rule index lists `{id}`, which is not a rule"
        );
    }
}

#[test]
fn every_link_into_the_methodology_resolves() {
    let root = repo_root();
    let anchors = heading_anchors(&methodology());
    // Spelled in pieces so that this line is not a link itself.
    let needle = concat!("methodology.md", "#");
    let mut links = 0;
    let mut broken = Vec::new();
    for rel in repo_files(&root) {
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find(needle) {
                rest = &rest[at + needle.len()..];
                let anchor: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
                    .collect();
                links += 1;
                if !anchors.contains(&anchor) {
                    broken.push(format!("{}:{}: #{anchor}", rel.display(), i + 1));
                }
            }
        }
    }
    assert!(
        links > 20,
        "found only {links} links into docs/methodology.md"
    );
    assert!(
        broken.is_empty(),
        "links to sections docs/methodology.md does not have:\n{}",
        broken.join("\n")
    );
}
