//! `yardstick trend BENCHMARK`: one metric of a benchmark over its stored runs, a series per
//! machine profile and point, with the change points of each (`--changes`): what the team
//! server's `GET /api/v1/trend` answers, read from the local warehouse.

use yardstick_server::api::trend::{TrendOut, TrendQuery, compute};
use yardstick_spec::human::human_with_ci;

use crate::cli::GlobalOpts;
use crate::cmd::runs::StoreOpt;
use crate::exit::{self, Status};
use crate::output;

/// A metric of a benchmark over time, and where it changed.
///
/// Each series is one machine profile and one point of the sweep, oldest run first: its mean
/// over replicates with the confidence interval. With `--changes`, each series is searched for
/// change points by E-divisive means with a permutation test (the newest 500 complete runs):
/// a change is reported at the first run after it, with the level before and after, the step
/// with its interval, the p-value and the commits between. A step smaller than the profile's
/// noise floor (`gate --calibrate`) does not count. docs/warehouse.md#trends-and-change-points.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick trend llama-serve --metric ttft_ms --changes\n  \
yardstick trend nightly-train --metric step_time_s --point e2e.0.train --since 30d --json"
)]
pub struct TrendArgs {
    /// The benchmark (the spec's `metadata.name`).
    #[arg(value_name = "BENCHMARK")]
    pub benchmark: String,
    /// The metric id (`yardstick metrics` lists them).
    #[arg(long, default_value = "request_throughput", value_name = "METRIC")]
    pub metric: String,
    /// The statistic (`p50`, `p99`, `value`...); default: the one the gate compares.
    #[arg(long, value_name = "STAT")]
    pub statistic: Option<String>,
    /// Only this point of the sweep.
    #[arg(long, value_name = "POINT")]
    pub point: Option<String>,
    /// Only this machine profile.
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Only runs started since: an age (`30d`), a date or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// At most this many runs, the newest (1-5000).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Find each series' change points.
    #[arg(long)]
    pub changes: bool,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Runs `yardstick trend`.
pub fn run(args: TrendArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    if yardstick_spec::metrics::lookup(&args.metric).is_none() {
        return Err(exit::invalid(
            format!("`{}` is not a metric of the catalogue", args.metric),
            Some("`yardstick metrics` lists them, e.g. ttft_ms, request_throughput"),
        ));
    }
    let mut w = args.store.open()?;
    let q = TrendQuery {
        benchmark: args.benchmark.clone(),
        metric: args.metric.clone(),
        statistic: args.statistic.clone(),
        profile: args.profile.clone(),
        point: args.point.clone(),
        since: args.since.clone(),
        limit: args.limit,
        changes: Some(args.changes),
    };
    let t = compute(w.as_mut(), &q).map_err(|e| {
        if e.status.is_client_error() {
            exit::invalid(e.body.error.clone(), e.body.hint.as_deref())
        } else {
            anyhow::anyhow!(e.body.error.clone())
        }
    })?;
    if t.series.is_empty() {
        return Err(exit::invalid(
            format!(
                "no stored run of `{}` has {} {}",
                args.benchmark, t.metric, t.statistic
            ),
            Some("`yardstick runs list` shows the stored runs and their names"),
        ));
    }
    if g.json {
        output::json(&t)?;
    } else {
        output::text(&text(&t))?;
    }
    Ok(Status::Ok)
}

/// The trend as people read it: per series its runs (oldest first), each change marked before
/// the first run after it.
pub fn text(t: &TrendOut) -> String {
    use std::fmt::Write;
    let unit = t.unit.clone().unwrap_or_default();
    let mut out = String::new();
    for s in &t.series {
        let _ = writeln!(
            out,
            "{} {} of {} · {} · {} ({} runs{})",
            t.metric,
            t.statistic,
            t.benchmark,
            s.machine_profile.as_deref().unwrap_or("-"),
            s.point_id,
            s.points.len(),
            match &s.changes {
                Some(c) => format!(", {} change point(s)", c.len()),
                None => String::new(),
            }
        );
        let changes = s.changes.as_deref().unwrap_or_default();
        for p in &s.points {
            if let Some(c) = changes.iter().find(|c| c.run_id == p.run_id) {
                let _ = writeln!(out, "  ── {}", c.text(&unit));
            }
            let _ = writeln!(
                out,
                "  {}  {}  {:12}  {}",
                p.started_at.get(..19).unwrap_or(&p.started_at),
                p.run_id,
                p.git_commit
                    .as_deref()
                    .map(|c| c.get(..12).unwrap_or(c))
                    .unwrap_or("-"),
                human_with_ci(p.value, p.ci_lo.zip(p.ci_hi), &unit)
            );
        }
    }
    out
}
