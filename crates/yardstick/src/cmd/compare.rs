//! `yardstick compare RUN_A RUN_B`: what differs between two runs (spec and env fields, the
//! one-variable rule) and, per point × headline metric, the ratio B/A with a bootstrap CI over
//! replicate values and a Mann–Whitney p-value.

use yardstick_gate::{Comparison, FieldDiff};

use crate::cli::GlobalOpts;
use crate::cmd::baseline::gate_error;
use crate::cmd::runs::{StoreOpt, num, print_table};
use crate::exit::Status;
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
    let a = yardstick_gate::load_run(w.as_mut(), &args.run_a).map_err(gate_error)?;
    let b = yardstick_gate::load_run(w.as_mut(), &args.run_b).map_err(gate_error)?;
    let c = yardstick_gate::compare(&a, &b).map_err(gate_error)?;
    if g.json {
        output::json(&c)?;
    } else {
        print_comparison(&c)?;
    }
    Ok(Status::Ok)
}

fn short(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(59).collect::<String>())
    } else {
        s
    }
}

fn print_diffs(title: &str, diffs: &[FieldDiff]) -> anyhow::Result<()> {
    if diffs.is_empty() {
        crate::output::outln!("{title}: identical")?;
        return Ok(());
    }
    crate::output::outln!("{title}: {} field(s) differ", diffs.len())?;
    let rows: Vec<Vec<String>> = diffs
        .iter()
        .map(|d| vec![d.path.clone(), short(&d.baseline), short(&d.candidate)])
        .collect();
    print_table(&["FIELD", "A", "B"], &rows)
}

/// Prints a comparison for people (also used by `gate`).
pub fn print_comparison(c: &Comparison) -> anyhow::Result<()> {
    crate::output::outln!(
        "A (baseline)  {}  {}",
        c.baseline_run,
        c.baseline_profile.as_deref().unwrap_or("-")
    )?;
    crate::output::outln!(
        "B (candidate) {}  {}",
        c.candidate_run,
        c.candidate_profile.as_deref().unwrap_or("-")
    )?;
    print_diffs("spec", &c.spec_diffs)?;
    print_diffs("env", &c.env_diffs)?;
    for w in &c.warnings {
        output::warn(w);
    }
    crate::output::outln!()?;
    let rows: Vec<Vec<String>> = c
        .metrics
        .iter()
        .map(|m| {
            vec![
                m.point.clone(),
                format!("{} {}", m.metric, m.statistic),
                num(m.baseline),
                num(m.candidate),
                m.ratio.map_or("-".into(), |r| format!("{r:.4}")),
                match (m.ci_lo, m.ci_hi) {
                    (Some(lo), Some(hi)) => format!("[{lo:.4}, {hi:.4}]"),
                    _ => "-".into(),
                },
                m.mann_whitney_p.map_or("-".into(), |p| format!("{p:.3}")),
                format!(
                    "{}/{}",
                    m.baseline_replicates.len(),
                    m.candidate_replicates.len()
                ),
            ]
        })
        .collect();
    let level = format!("{:.0} % CI", c.level * 100.0);
    print_table(
        &["POINT", "METRIC", "A", "B", "B/A", &level, "MWU p", "REPS"],
        &rows,
    )
}
