//! `yardstick gate RUN --baseline auto|RUN_ID|FILE`: the regression gate. Exit 0 PASS/WARN, 3
//! FAIL, 4 INCONCLUSIVE; different machine profiles are refused (exit 2) unless `--cross-profile`.
//! `--calibrate` records an A/A comparison for the profile's noise floors; `--confirm` re-runs
//! the failing points before a FAIL stands.

use std::path::Path;

use serde::Serialize;
use yardstick_gate::calibrate;
use yardstick_gate::{GateOptions, GateReport, RunData, Verdict, baseline, confirm};

use crate::cli::GlobalOpts;
use crate::cmd::run::{Execution, execute_spec};
use crate::cmd::runs::StoreOpt;
use crate::exit::{self, Status};
use crate::output;

/// Gate a run against its baseline.
///
/// Per point × headline metric (throughput, TTFT/TPOT/E2E p50, step time, memory, accuracy,
/// BLEU/ROUGE-L/F1, perplexity, loss slope; tails listed in the spec's `gates.tails`), the
/// bootstrap CI of the ratio candidate/baseline (over replicates, or over paired eval items)
/// must clear the tolerance (the defaults of docs/methodology.md#baselines-and-regression-gates,
/// or the spec's `gates.tolerances`) AND the machine profile's noise floor, learned from A/A runs
/// recorded with `--calibrate`. Holm-corrected across metrics; INCONCLUSIVE when the evidence
/// is thin (fewer than 3 replicates, a CI straddling the bound, a p99 from too few requests).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 PASS (or WARN; or any verdict of an exploratory \
comparison, which is reported, not enforced), 3 FAIL, 4 INCONCLUSIVE, 2 invalid input (unknown \
run, no baseline, different machine profiles).\n\nExamples:\n  \
yardstick gate 01JD8Y… --baseline auto --store DIR\n  \
yardstick gate 01JD8Y… --baseline 01JD7X… --json\n  \
yardstick gate 01JD8Y… --baseline baselines/cpu-EPYC-7B13x2c_linux6.1.json\n  \
yardstick gate 01JD8Y… --confirm            # re-run failing points before a FAIL stands\n  \
yardstick gate 01JD9Z… --baseline 01JD7X… --calibrate   # record an A/A run's noise\n  \
yardstick gate 01JD8Y… --baseline auto --server https://yardstick.internal:8686   # the team's baseline"
)]
pub struct GateArgs {
    /// The candidate run (id or unique prefix).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// `auto` (the stored baseline of the run's machine profile and name), a run id, a
    /// baseline file written by `baseline export` (`baselines/<profile>.json`), or a directory
    /// of them (the file of the candidate's machine profile is used).
    #[arg(long, value_name = "auto|RUN_ID|FILE|DIR", default_value = "auto")]
    pub baseline: String,
    /// Compare runs of different machine profiles anyway (exploratory: reported, not enforced).
    #[arg(long)]
    pub cross_profile: bool,
    /// Record this comparison as an A/A run (RUN repeats the baseline's spec on the same
    /// machine profile): its ratios feed the profile's noise floors. Prints the floors; exit 0.
    #[arg(long, conflicts_with = "confirm")]
    pub calibrate: bool,
    /// Before a FAIL stands, re-run only the failing points (a new run in the candidate's store)
    /// and keep FAIL only for metrics that fail again; the others become INCONCLUSIVE. The
    /// points of INCONCLUSIVE rows are re-run too, and those rows decided on the candidate's
    /// and the re-run's replicates pooled. Also on when the spec says `gates.confirm: true`.
    #[arg(long)]
    pub confirm: bool,
    /// Ignore recorded noise floors (tolerances only).
    #[arg(long)]
    pub no_noise_floor: bool,
    /// Take the baseline from this team server (`yardstick server`) instead of the local store:
    /// `--baseline auto` is the server's baseline of the run's machine profile and benchmark, a
    /// run id one of the server's runs. Its facts, spec and environment (and eval items) are
    /// fetched through the API; the candidate and the noise floors stay local.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    #[command(flatten)]
    pub remote: super::push::RemoteOpts,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// `yardstick gate --json`.
#[derive(Serialize, schemars::JsonSchema)]
pub struct GateOut<'a> {
    #[serde(flatten)]
    report: &'a GateReport,
    /// The confirmation run, when `--confirm` re-ran failing points.
    confirm_run: Option<String>,
}

/// Runs `yardstick gate`.
pub fn run(args: GateArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let mut w = args.store.open()?;
    let cand = yardstick_gate::load_run(w.as_mut(), &args.run).map_err(exit::lib_error)?;
    // A baseline fetched from a server keeps its files until the gate is done.
    let (base, _fetched) = match &args.server {
        Some(url) => {
            let remote = args.remote.remote(url)?;
            let (base, dir) =
                yardstick_server::client::fetch_baseline(&remote, &args.baseline, &cand)
                    .map_err(|e| args.remote.error(e, "read"))?;
            (base, Some(dir))
        }
        None => (
            baseline::resolve(w.as_mut(), &args.baseline, &cand).map_err(exit::lib_error)?,
            None,
        ),
    };
    let profile = cand.run.machine_profile.clone().unwrap_or_default();
    let noise_floors = if args.no_noise_floor || args.calibrate {
        Default::default()
    } else {
        calibrate::noise_floors(w.as_mut(), &profile, &cand.run.name).map_err(exit::lib_error)?
    };
    let opts = GateOptions {
        cross_profile: args.cross_profile,
        tolerances: None,
        noise_floors,
    };
    let mut report = yardstick_gate::gate(&base, &cand, &opts).map_err(exit::lib_error)?;

    if args.calibrate {
        let rows =
            calibrate::calibration_rows(&report, &cand.run.name, &yardstick_env::now_rfc3339())
                .map_err(exit::lib_error)?;
        w.record_calibrations(&rows)?;
        let all = w.calibrations(&profile, &cand.run.name)?;
        let floors = calibrate::floors(&all);
        let out = calibrate::Calibration {
            recorded: rows.len(),
            baseline_run: report.comparison.baseline_run.clone(),
            candidate_run: report.comparison.candidate_run.clone(),
            a_a_verdict: report.verdict,
            min_comparisons: calibrate::MIN_CALIBRATIONS,
            floors,
        };
        if g.json {
            output::json(&out)?;
        } else {
            output::text(&yardstick_gate::text::calibration(
                &out,
                &profile,
                &cand.run.name,
            ))?;
        }
        return Ok(Status::Ok);
    }

    let mut confirm_run = None;
    if (args.confirm || confirm::spec_asks(&cand))
        && matches!(report.verdict, Verdict::Fail | Verdict::Inconclusive)
        && !report.exploratory
    {
        let id = confirm_failures(&mut report, &base, &cand, &args.store, &opts, w.as_mut())?;
        confirm_run = Some(id);
    }
    // What the gate said, for trends (`yardstick server`'s plots colour points by it). The
    // verdict stands whether or not it could be recorded.
    if let Err(e) = report.record(w.as_mut()) {
        output::warn(&format!(
            "the verdicts could not be recorded in the warehouse: {e}"
        ));
    }

    if g.json {
        output::json(&GateOut {
            report: &report,
            confirm_run: confirm_run.clone(),
        })?;
    } else {
        print_report(&report)?;
        if let Some(id) = &confirm_run {
            crate::output::outln!("confirmation run: {id}")?;
        }
        crate::output::outln!()?;
        crate::output::outln!("gate: {}", report.verdict)?;
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

/// Re-runs the points of FAIL and INCONCLUSIVE rows of the candidate's spec as a new run and
/// gates it against the baseline: FAIL stays only where the re-run fails too; an INCONCLUSIVE
/// row is decided on the candidate's and the re-run's replicates pooled. Returns the
/// confirmation run's id.
fn confirm_failures(
    report: &mut GateReport,
    base: &RunData,
    cand: &RunData,
    store: &StoreOpt,
    opts: &GateOptions,
    w: &mut dyn yardstick_store::warehouse::Warehouse,
) -> anyhow::Result<String> {
    let rerun = confirm::plan(report, cand, Path::new(&store.store)).map_err(exit::lib_error)?;
    let warehouse = store
        .store
        .starts_with("postgres")
        .then(|| store.store.clone());
    output::info(&format!(
        "gate: {} on {} point(s); confirming by re-running them: {}",
        report.verdict,
        rerun.points.len(),
        rerun.points.join(", ")
    ));
    let outcome = execute_spec(
        &rerun.spec_text,
        &rerun.spec,
        &Execution {
            store: rerun.store_dir,
            warehouse,
            resume: None,
            seed: 4242,
            only: Some(rerun.points),
            // Eval task files and texts come from the candidate run's frozen copies (the run
            // directory keeps the spec, not where it was read from).
            spec_dir: None,
            inputs_from: Some(cand.dir.clone()),
            telemetry_interval: std::time::Duration::from_secs(1),
            pods: None,
            hot: Vec::new(),
        },
    )?;
    let again = yardstick_gate::load_run(w, &outcome.run_id).map_err(exit::lib_error)?;
    confirm::settle(report, base, cand, &again, opts, &outcome.run_id).map_err(exit::lib_error)?;
    Ok(outcome.run_id)
}

fn print_report(report: &GateReport) -> anyhow::Result<()> {
    for w in &report.comparison.warnings {
        output::warn(w);
    }
    output::text(&yardstick_gate::text::report(report))
}
