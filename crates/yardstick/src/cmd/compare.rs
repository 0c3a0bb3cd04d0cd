//! `yardstick compare RUN_A RUN_B`: what differs between two runs (spec and env fields, the
//! one-variable rule) and, per point × headline metric, the ratio B/A with a bootstrap CI over
//! replicate values and a Mann–Whitney p-value.

use yardstick_gate::Comparison;

use crate::cli::GlobalOpts;
use crate::cmd::runs::StoreOpt;
use crate::exit::{self, Status};
use crate::output;

/// Compare two stored runs.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  yardstick compare 01JD7X… 01JD8Y… --store DIR --json")]
pub struct CompareArgs {
    /// The baseline run (id or unique prefix).
    #[arg(value_name = "RUN_A")]
    pub run_a: String,
    /// The candidate run (id or unique prefix).
    #[arg(value_name = "RUN_B")]
    pub run_b: String,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Runs `yardstick compare`.
pub fn run(args: CompareArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let a = yardstick_gate::load_run(w.as_mut(), &args.run_a).map_err(exit::lib_error)?;
    let b = yardstick_gate::load_run(w.as_mut(), &args.run_b).map_err(exit::lib_error)?;
    let c = yardstick_gate::compare(&a, &b).map_err(exit::lib_error)?;
    if g.json {
        output::json(&c)?;
    } else {
        print_comparison(&c)?;
    }
    Ok(Status::Ok)
}

/// Prints a comparison's warnings (standard error) and its tables.
pub fn print_comparison(c: &Comparison) -> anyhow::Result<()> {
    for w in &c.warnings {
        output::warn(w);
    }
    output::text(&yardstick_gate::text::comparison(c))
}
