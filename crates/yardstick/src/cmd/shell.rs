//! Shell integration, generated from the CLI definitions (`cli.rs`): completion scripts
//! (clap_complete) and man pages (clap_mangen), so they never drift from `--help`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, GlobalOpts};
use crate::exit::Status;
use crate::output;

/// Print a completion script for a shell.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
yardstick completions bash > ~/.local/share/bash-completion/completions/yardstick\n  \
yardstick completions zsh > \"${fpath[1]}/_yardstick\"\n  \
yardstick completions fish > ~/.config/fish/completions/yardstick.fish")]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Write man pages.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
yardstick man -o ~/.local/share/man/man1 && man yardstick-bench-serve\n  \
yardstick man | man -l -")]
pub struct ManArgs {
    /// Write yardstick.1 and yardstick-COMMAND[-SUB].1 for every command into this directory
    /// (created if missing). Without it, yardstick(1) goes to standard output.
    #[arg(short = 'o', long = "out-dir", value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `yardstick completions SHELL`.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<Status> {
    let mut cmd = Cli::command();
    // Generated into memory first: clap_complete panics on a failed write (`| head`).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "yardstick", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(Status::Ok)
}

/// `yardstick man [-o DIR]`.
pub fn man(args: ManArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let cmd = Cli::command();
    let Some(dir) = args.out_dir else {
        let mut out = std::io::stdout().lock();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        out.flush()?;
        return Ok(Status::Ok);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(cmd, &dir).with_context(|| format!("writing to {}", dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(&dir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("yardstick") && n.ends_with(".1"))
        .collect();
    pages.sort();
    if g.json {
        output::json(&serde_json::json!({"dir": dir, "pages": pages}))?;
    } else {
        output::info(&format!(
            "wrote {} man pages to {}",
            pages.len(),
            dir.display()
        ));
    }
    Ok(Status::Ok)
}
