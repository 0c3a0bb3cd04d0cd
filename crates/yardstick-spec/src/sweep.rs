//! Sweeps over the server under test: `{name}` placeholders, the fields they may appear in, and
//! filling them with a treatment's levels.

use std::collections::BTreeMap;

use crate::model::{BenchmarkRun, Spec, Sweep};

/// The placeholder yardstick fills with the port it picked for the server under test.
pub const PORT: &str = "port";

/// The placeholder yardstick fills with the host the server under test runs on, as its
/// clients reach it: `127.0.0.1` on this machine, the first node's host name inside a Slurm
/// allocation (clients on other nodes connect to it there), pod 0's address in a group of pods
/// (`MASTER_ADDR`).
pub const HOST: &str = "host";

/// Whether `name` is a placeholder yardstick fills itself (`{port}`, `{host}`), not a factor.
pub fn is_address(name: &str) -> bool {
    name == PORT || name == HOST
}

/// The `{name}` placeholders of `s`, in order; a name is a letter or `_` followed by letters,
/// digits and `_` (so JSON and other braces are left alone).
pub fn placeholders(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_name(&after[..close]) => {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `s` with every `{name}` whose name is a key of `values` replaced by its value; other braces
/// stay as they are.
pub fn fill(s: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if values.contains_key(&after[..close]) => {
                out.push_str(&values[&after[..close]]);
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A field that may hold placeholders.
pub struct TemplateField {
    /// Its JSON pointer in the spec (`/spec/server/command/2`).
    pub pointer: String,
    /// Its text.
    pub text: String,
    /// Whether every placeholder there must name a factor or `port` (the server, the targets);
    /// commands of layers have placeholders of their own (`{worldSize}`), so they are not.
    pub strict: bool,
}

/// Calls `f` on every field of `spec` that may hold placeholders, with its pointer and
/// strictness: the server's command, environment and readiness, each component layer's target
/// (url, model, models' names, tokenizer) and command, and each e2e layer's command.
fn visit(spec: &mut Spec, f: &mut dyn FnMut(&str, &mut String, bool)) {
    if let Some(server) = &mut spec.server {
        for (i, a) in server.command.iter_mut().flatten().enumerate() {
            f(&format!("/spec/server/command/{i}"), a, true);
        }
        for (k, v) in &mut server.env {
            f(&format!("/spec/server/env/{k}"), v, true);
        }
        if let Some(r) = &mut server.ready {
            if let Some(h) = &mut r.http {
                f("/spec/server/ready/http", h, true);
            }
            if let Some(l) = &mut r.log {
                f("/spec/server/ready/log", l, true);
            }
        }
    }
    let Some(layers) = &mut spec.layers else {
        return;
    };
    for (i, c) in layers.component.iter_mut().flatten().enumerate() {
        let base = format!("/spec/layers/component/{i}");
        if let Some(t) = &mut c.target {
            for (name, field) in [
                ("url", &mut t.url),
                ("model", &mut t.model),
                ("tokenizer", &mut t.tokenizer),
            ] {
                if let Some(v) = field {
                    f(&format!("{base}/target/{name}"), v, true);
                }
            }
            for (j, m) in t.models.iter_mut().flatten().enumerate() {
                if let Some(n) = &mut m.name {
                    f(&format!("{base}/target/models/{j}/name"), n, true);
                }
            }
        }
        for (j, a) in c.command.iter_mut().flatten().enumerate() {
            f(&format!("{base}/command/{j}"), a, false);
        }
    }
    for (i, e) in layers.e2e.iter_mut().flatten().enumerate() {
        for (j, a) in e.command.iter_mut().flatten().enumerate() {
            f(&format!("/spec/layers/e2e/{i}/command/{j}"), a, false);
        }
    }
}

/// Every field of `spec` that may hold placeholders, with its text ([`visit`]'s order).
pub fn template_fields(spec: &Spec) -> Vec<TemplateField> {
    let mut copy = spec.clone();
    let mut out = Vec::new();
    visit(&mut copy, &mut |pointer, text, strict| {
        out.push(TemplateField {
            pointer: pointer.to_string(),
            text: text.clone(),
            strict,
        })
    });
    out
}

/// Fills the placeholders named in `values` in every field that may hold them.
pub fn fill_spec(run: &mut BenchmarkRun, values: &BTreeMap<String, String>) {
    if let Some(spec) = &mut run.spec {
        visit(spec, &mut |_, text, _| {
            if text.contains('{') {
                *text = fill(text, values);
            }
        });
    }
}

/// Each factor's levels as text, in the spec's (name) order.
pub fn levels(sweep: &Sweep) -> Vec<(String, Vec<String>)> {
    sweep
        .factors
        .iter()
        .flatten()
        .map(|(name, levels)| {
            (
                name.clone(),
                levels.iter().map(ToString::to_string).collect(),
            )
        })
        .collect()
}

/// Every combination of `levels`, as level indices, the last factor varying fastest.
pub fn grid(levels: &[(String, Vec<String>)]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for (_, ls) in levels {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..ls.len()).map(move |k| {
                    let mut v = prefix.clone();
                    v.push(k);
                    v
                })
            })
            .collect();
    }
    out
}

/// Treatments in a full grid, saturating (a guard for plans nobody could run).
pub fn grid_size(levels: &[(String, Vec<String>)]) -> u64 {
    levels
        .iter()
        .fold(1u64, |n, (_, ls)| n.saturating_mul(ls.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_names_in_braces() {
        assert_eq!(
            placeholders("--port={port} {max_num_seqs}/{x-y} {} {\"a\": 1} {_b2}"),
            vec!["port", "max_num_seqs", "_b2"]
        );
    }

    #[test]
    fn fill_replaces_known_names_only() {
        let v: BTreeMap<String, String> =
            [("port".into(), "8000".into()), ("n".into(), "4".into())].into();
        assert_eq!(
            fill("http://h:{port}/{n}/{worldSize}/{", &v),
            "http://h:8000/4/{worldSize}/{"
        );
    }

    #[test]
    fn grid_varies_the_last_factor_fastest() {
        let levels = vec![
            ("a".to_string(), vec!["1".to_string(), "2".to_string()]),
            ("b".to_string(), vec!["x".into(), "y".into(), "z".into()]),
        ];
        let g = grid(&levels);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], vec![0, 0]);
        assert_eq!(g[1], vec![0, 1]);
        assert_eq!(g[3], vec![1, 0]);
        assert_eq!(grid_size(&levels), 6);
    }
}
