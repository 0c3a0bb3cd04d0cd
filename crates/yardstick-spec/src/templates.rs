//! Commented, valid specs that `yardstick init` writes.

/// The templates `yardstick init --template` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// An OpenAI-compatible serving endpoint (the simulator by default).
    Serve,
    /// A training job (the built-in reference trainer by default).
    Train,
    /// Micro benchmarks: memory bandwidth and GEMM.
    Micro,
    /// All three layers.
    Full,
}

impl Template {
    /// Every template.
    pub const ALL: [Template; 4] = [
        Template::Serve,
        Template::Train,
        Template::Micro,
        Template::Full,
    ];

    /// The template's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Template::Serve => "serve",
            Template::Train => "train",
            Template::Micro => "micro",
            Template::Full => "full",
        }
    }
}

/// The YAML text of a template.
pub fn template(t: Template) -> &'static str {
    match t {
        Template::Serve => include_str!("../templates/serve.yaml"),
        Template::Train => include_str!("../templates/train.yaml"),
        Template::Micro => include_str!("../templates/micro.yaml"),
        Template::Full => include_str!("../templates/full.yaml"),
    }
}

/// The GitHub Actions workflow `yardstick init --ci github` writes: it runs `spec`, gates the
/// run against the committed baselines, and publishes the report.
pub fn github_workflow(spec: &str) -> String {
    include_str!("../templates/github-workflow.yml")
        .replace("{spec}", spec)
        .replace("{repository}", env!("CARGO_PKG_REPOSITORY"))
}

/// A preset: a spec for a common question, run by name (`yardstick run --preset NAME`).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Preset {
    /// Its name on the command line.
    pub name: &'static str,
    /// What it answers and runs, in a sentence.
    pub summary: &'static str,
    /// How long it takes.
    pub takes: &'static str,
    /// The spec, with `@URL@`, `@MODEL@` and `@NODES@` to fill ([`preset`]).
    #[serde(skip)]
    pub text: &'static str,
}

/// The presets.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "health",
        summary: "fast health signal: memory bandwidth and GEMM here, then serving at concurrency 1 and 8",
        takes: "about 1 min on 2 cores",
        text: include_str!("../templates/presets/health.yaml"),
    },
    Preset {
        name: "cluster-eval",
        summary: "common evaluation of a cluster machine: memory, GEMM, the GPU probes, the reference trainer and a serving sweep at concurrency 1, 8 and 32",
        takes: "about 2.5 min on 2 cores",
        text: include_str!("../templates/presets/cluster-eval.yaml"),
    },
    Preset {
        name: "llm-eval",
        summary: "full evaluation of an LLM endpoint: chat, long-context and mixed traffic at concurrency 1, 16 and 64, capacity under a p99 SLO, accuracy probes",
        takes: "20-40 min on a real server; about 12 min against the embedded simulator",
        text: include_str!("../templates/presets/llm-eval.yaml"),
    },
    Preset {
        name: "multinode-readiness",
        summary: "every node of a Slurm allocation before a multi-node workload: environment and the micro layer (memory, GEMM, GPU probes) on each",
        takes: "about 2 min per node, in parallel",
        text: include_str!("../templates/presets/multinode-readiness.yaml"),
    },
];

/// The spec of preset `name` with its target (`url`, default the embedded simulator `sim`;
/// `model`, default `sim-llama`) and node count filled in; `None` for an unknown name.
pub fn preset(name: &str, url: Option<&str>, model: Option<&str>, nodes: u32) -> Option<String> {
    let p = PRESETS.iter().find(|p| p.name == name)?;
    let quote = |s: &str| serde_json::to_string(s).expect("a string is JSON");
    Some(
        p.text
            .replace("\"@URL@\"", &quote(url.unwrap_or("sim")))
            .replace("\"@MODEL@\"", &quote(model.unwrap_or("sim-llama")))
            .replace("@NODES@", &nodes.max(1).to_string()),
    )
}

#[cfg(test)]
mod preset_tests {
    use super::*;

    #[test]
    fn every_preset_validates_filled_and_names_itself() {
        for p in PRESETS {
            let text = preset(
                p.name,
                Some("http://127.0.0.1:8000"),
                Some("a \"quoted\" model"),
                4,
            )
            .unwrap();
            assert!(!text.contains('@'), "{}: {text}", p.name);
            let checked = crate::check_str(&text);
            assert!(checked.is_valid(), "{}: {:#?}", p.name, checked.diagnostics);
            let spec = checked.spec.unwrap();
            assert_eq!(
                spec.metadata.and_then(|m| m.name),
                Some(format!("preset-{}", p.name))
            );
            let defaults = preset(p.name, None, None, 1).unwrap();
            assert!(crate::check_str(&defaults).is_valid(), "{}", p.name);
        }
        assert!(preset("nope", None, None, 1).is_none());
    }
}
