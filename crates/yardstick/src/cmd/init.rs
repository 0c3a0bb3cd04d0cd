//! `yardstick init`: write a commented, valid spec to start from.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use yardstick_spec::Template;

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};

/// Write a commented BenchmarkRun spec that validates as it is, to stdout or a file.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick init --template serve -o bench.yaml\n  \
yardstick init --template full | yardstick validate -\n  \
yardstick init --preset llm-eval -o llm-eval.yaml   # a preset, to edit\n  \
yardstick init --ci github --spec bench.yaml   # writes .github/workflows/yardstick.yml"
)]
pub struct InitArgs {
    /// Which spec to start from.
    #[arg(long, short, value_enum, default_value_t = TemplateArg::Serve)]
    pub template: TemplateArg,
    /// Write a CI workflow instead of a spec: it runs the spec, gates the run against the
    /// baselines kept in the repository (`baselines/`, from `baseline export`), writes the
    /// report to the job summary and uploads it. Default output
    /// `.github/workflows/yardstick.yml`.
    #[arg(long, value_enum, value_name = "SYSTEM")]
    pub ci: Option<CiArg>,
    /// The spec the CI workflow runs (with --ci).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "bench.yaml",
        requires = "ci"
    )]
    pub spec: String,
    /// Write a preset's spec instead of a template (`health`, `cluster-eval`, `llm-eval`,
    /// `multinode-readiness`; what `yardstick run --preset NAME` runs), targeting the embedded
    /// simulator and 2 nodes: edit the target, nodes and execution before running it.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["template", "ci"], value_parser = clap::builder::PossibleValuesParser::new(yardstick_spec::PRESETS.iter().map(|p| p.name)))]
    pub preset: Option<String>,
    /// Write to FILE instead of standard output (refuses to overwrite without --force).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// CI systems `init --ci` writes a workflow for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CiArg {
    /// GitHub Actions.
    Github,
}

/// Template names.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TemplateArg {
    /// An OpenAI-compatible serving endpoint (the bundled simulator by default).
    Serve,
    /// A training job (the built-in reference trainer by default).
    Train,
    /// Micro benchmarks: memory bandwidth and GEMM.
    Micro,
    /// All three layers: micro, serving, training.
    Full,
}

impl From<TemplateArg> for Template {
    fn from(t: TemplateArg) -> Template {
        match t {
            TemplateArg::Serve => Template::Serve,
            TemplateArg::Train => Template::Train,
            TemplateArg::Micro => Template::Micro,
            TemplateArg::Full => Template::Full,
        }
    }
}

/// What `yardstick init --json` prints after writing a file.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct InitOutput {
    /// The file written.
    pub written: String,
    /// The template or preset it came from (`ci-github` for `--ci github`).
    pub template: String,
}

pub fn run(args: InitArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let owned;
    let (text, output) = match args.ci {
        Some(CiArg::Github) => {
            owned = yardstick_spec::github_workflow(&args.spec);
            (
                owned.as_str(),
                Some(
                    args.output
                        .clone()
                        .unwrap_or_else(|| PathBuf::from(".github/workflows/yardstick.yml")),
                ),
            )
        }
        None => match &args.preset {
            Some(name) => {
                owned = yardstick_spec::preset(name, None, None, 2)
                    .expect("clap accepts only preset names");
                (owned.as_str(), args.output.clone())
            }
            None => (
                yardstick_spec::template(args.template.into()),
                args.output.clone(),
            ),
        },
    };
    match &output {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(path) => {
            if path.exists() && !args.force {
                return Err(invalid(
                    format!("{} already exists", path.display()),
                    Some("pass --force to overwrite it, or choose another file with -o"),
                ));
            }
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            }
            std::fs::write(path, text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            if g.json {
                crate::output::json(&InitOutput {
                    written: path.display().to_string(),
                    template: match (args.ci, &args.preset) {
                        (Some(_), _) => "ci-github".to_string(),
                        (None, Some(p)) => p.clone(),
                        (None, None) => Template::from(args.template).name().to_string(),
                    },
                })?;
            } else if args.ci.is_some() {
                crate::output::info(&format!(
                    "wrote {} (it runs {}, gates against baselines/ and uploads the report)",
                    path.display(),
                    args.spec
                ));
            } else {
                crate::output::info(&format!(
                    "wrote {} (check it with `yardstick validate {}`)",
                    path.display(),
                    path.display()
                ));
            }
        }
    }
    Ok(Status::Ok)
}
