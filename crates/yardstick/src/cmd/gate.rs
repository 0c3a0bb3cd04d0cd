//! `yardstick gate RUN --baseline auto|RUN_ID`: the regression gate. Exit 0 PASS/WARN, 3 FAIL,
//! 4 INCONCLUSIVE; different machine profiles are refused (exit 2) unless `--cross-profile`.

use yardstick_gate::{GateOptions, Verdict, baseline};

use crate::cli::GlobalOpts;
use crate::cmd::baseline::gate_error;
use crate::cmd::runs::{StoreOpt, num, print_table};
use crate::exit::Status;
use crate::output;

/// Gate a run against its baseline.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 PASS (or WARN), 3 FAIL, 4 INCONCLUSIVE, 2 invalid input \
(unknown run, no baseline, different machine profiles).\n\nExamples:\n  \
yardstick gate 01JD8Y… --baseline auto --store DIR\n  yardstick gate 01JD8Y… --baseline 01JD7X… --json\n  \
yardstick gate 01JD8Y… --baseline baselines/cpu-EPYC-7B13x2c_linux6.1.json"
)]
pub struct GateArgs {
    /// The candidate run (id or unique prefix).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// `auto` (the stored baseline of the run's machine profile and name), a run id, or a
    /// baseline file written by `baseline export` (`baselines/<profile>.json`).
    #[arg(long, value_name = "auto|RUN_ID|FILE", default_value = "auto")]
    pub baseline: String,
    /// Compare runs of different machine profiles anyway (exploratory: reported, not enforced).
    #[arg(long)]
    pub cross_profile: bool,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Runs `yardstick gate`.
pub fn run(args: GateArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let cand = yardstick_gate::load_run(w.as_mut(), &args.run).map_err(gate_error)?;
    let as_file = std::path::Path::new(&args.baseline);
    let base = if args.baseline == "auto" {
        let id = baseline::resolve_auto(w.as_mut(), &cand.run)
            .map_err(gate_error)?
            .run_id;
        yardstick_gate::load_run(w.as_mut(), &id).map_err(gate_error)?
    } else if as_file.is_file() {
        yardstick_gate::file::load(as_file, &cand.run.name).map_err(gate_error)?
    } else {
        yardstick_gate::load_run(w.as_mut(), &args.baseline).map_err(gate_error)?
    };
    let report = yardstick_gate::gate(
        &base,
        &cand,
        &GateOptions {
            cross_profile: args.cross_profile,
            tolerances: None,
        },
    )
    .map_err(gate_error)?;
    if g.json {
        output::json(&report)?;
    } else {
        crate::cmd::compare::print_comparison(&report.comparison)?;
        println!();
        let rows: Vec<Vec<String>> = report
            .metrics
            .iter()
            .map(|m| {
                vec![
                    m.point.clone(),
                    format!("{} {}", m.metric, m.statistic),
                    num(m.baseline),
                    num(m.candidate),
                    m.ratio.map_or("-".into(), |r| format!("{r:.4}")),
                    format!("{}", m.tolerance_pct),
                    m.verdict.to_string(),
                    m.reason.clone(),
                ]
            })
            .collect();
        print_table(
            &[
                "POINT", "METRIC", "BASE", "CAND", "RATIO", "TOL %", "VERDICT", "WHY",
            ],
            &rows,
        )?;
        println!();
        println!("gate: {}", report.verdict);
    }
    if let Some(why) = &report.exploratory_reason {
        output::warn(&format!(
            "exploratory comparison, not enforced (exit 0 whatever the verdict): {why}"
        ));
        return Ok(Status::Ok);
    }
    Ok(match report.verdict {
        Verdict::Pass | Verdict::Warn => Status::Ok,
        Verdict::Fail => Status::GateFail,
        Verdict::Inconclusive => Status::Inconclusive,
    })
}
