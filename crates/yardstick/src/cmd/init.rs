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
yardstick init --template full | yardstick validate -"
)]
pub struct InitArgs {
    /// Which spec to start from.
    #[arg(long, short, value_enum, default_value_t = TemplateArg::Serve)]
    pub template: TemplateArg,
    /// Write to FILE instead of standard output (refuses to overwrite without --force).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite FILE if it exists.
    #[arg(long)]
    pub force: bool,
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

pub fn run(args: InitArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let text = yardstick_spec::template(args.template.into());
    match &args.output {
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
            std::fs::write(path, text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            if g.json {
                crate::output::json(&serde_json::json!({
                    "written": path.display().to_string(),
                    "template": Template::from(args.template).name(),
                }))?;
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
