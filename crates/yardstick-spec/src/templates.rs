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
