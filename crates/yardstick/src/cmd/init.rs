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

/// The GitHub Actions workflow `init --ci github` writes, for `spec`.
pub fn github_workflow(spec: &str) -> String {
    GITHUB_WORKFLOW
        .replace("{spec}", spec)
        .replace("{repository}", env!("CARGO_PKG_REPOSITORY"))
}

const GITHUB_WORKFLOW: &str = r#"# Written by `yardstick init --ci github`. Runs {spec}, gates the run against the baseline of
# this machine profile kept in `baselines/` (create it on the runner with
# `yardstick run {spec}`, `yardstick baseline save RUN`, `yardstick baseline export --dir
# baselines`, and commit the file), puts the report in the job summary and uploads it.
#
# Gates compare like with like: use a runner whose machine profile does not change (a dedicated
# self-hosted runner). On a shared hosted runner the profile can differ between jobs and the
# gate refuses the comparison (exit 2) rather than cry wolf.
name: yardstick

on:
  pull_request:
  push:
    branches: [main]
  workflow_dispatch:

jobs:
  benchmark:
    runs-on: [self-hosted, benchmark]
    timeout-minutes: 90
    env:
      YARDSTICK_STORE: yardstick-store
    steps:
      - uses: actions/checkout@v4

      - name: Install yardstick
        run: |
          command -v yardstick || cargo install --locked --git {repository} yardstick

      - name: Validate the spec
        run: yardstick validate {spec}

      - name: Run the benchmark
        run: |
          yardstick run {spec} --json > run.json
          echo "RUN_ID=$(python3 -c 'import json; print(json.load(open("run.json"))["run_id"])')" >> "$GITHUB_ENV"

      - name: Gate against the baseline
        id: gate
        run: |
          set +e
          yardstick gate "$RUN_ID" --baseline baselines/ --json > gate.json
          echo "exit=$?" >> "$GITHUB_OUTPUT"
          exit 0

      - name: Report
        if: always()
        run: |
          yardstick report "$RUN_ID" --gate gate.json --markdown report.md --junit junit.xml --html report.html
          cat report.md >> "$GITHUB_STEP_SUMMARY"

      - name: Upload the report and the run
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: yardstick-report
          path: |
            report.html
            report.md
            junit.xml
            gate.json
            yardstick-store/runs/

      - name: Verdict
        run: |
          case "${{ steps.gate.outputs.exit }}" in
            0) echo "gate: PASS" ;;
            3) echo "::error::gate: FAIL (a metric regressed beyond its tolerance; see the report)"; exit 1 ;;
            4) echo "::warning::gate: INCONCLUSIVE (not enough evidence either way; see the report)" ;;
            *) echo "::error::gate could not compare (exit ${{ steps.gate.outputs.exit }}); see gate.json"; exit 1 ;;
          esac
"#;

/// What `yardstick init --json` prints after writing a file.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct InitOutput {
    /// The file written.
    pub written: String,
    /// The template it came from (`ci-github` for `--ci github`).
    pub template: &'static str,
}

pub fn run(args: InitArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let owned;
    let (text, output) = match args.ci {
        Some(CiArg::Github) => {
            owned = github_workflow(&args.spec);
            (
                owned.as_str(),
                Some(
                    args.output
                        .clone()
                        .unwrap_or_else(|| PathBuf::from(".github/workflows/yardstick.yml")),
                ),
            )
        }
        None => (
            yardstick_spec::template(args.template.into()),
            args.output.clone(),
        ),
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
                    template: match args.ci {
                        Some(_) => "ci-github",
                        None => Template::from(args.template).name(),
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
