//! Store listings as people read them (`yardstick runs list`, `yardstick runs show`): aligned
//! tables, values in human units. ANSI styles mark labels; the caller strips them when the
//! output is not a terminal. The raw rows are the commands' `--json`.

use yardstick_store::warehouse::{FactRow, PointRow, ReplicateRow, ReplicateStatus, RunRow};

use crate::format::{human, human_ci, metric_unit};
use crate::terminal::{BOLD, RESET, plain_table};

/// `runs list`: one row per run, newest first as given.
pub fn runs(runs: &[RunRow]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.run_id.clone(),
                r.name.clone(),
                r.status.to_string(),
                r.machine_profile.clone().unwrap_or_else(|| "-".into()),
                r.started_at.clone(),
            ]
        })
        .collect();
    plain_table(
        &["RUN", "NAME", "STATUS", "PROFILE", "STARTED (UTC)"],
        &rows,
    )
}

/// `runs show`: the run's fields, its plan, and its facts — the aggregates over replicates
/// when there are any (per-replicate facts are in `--json`), else every fact. Returns the text
/// and how many facts it left out.
pub fn run(
    run: &RunRow,
    points: &[PointRow],
    replicates: &[ReplicateRow],
    facts: &[FactRow],
) -> (String, usize) {
    let mut out = String::new();
    let mut field = |k: &str, v: &str| out.push_str(&format!("{BOLD}{k:<16}{RESET} {v}\n"));
    field("run", &run.run_id);
    field("name", &run.name);
    field("status", run.status.as_str());
    field("mode", run.mode.as_deref().unwrap_or("-"));
    field(
        "machine profile",
        run.machine_profile.as_deref().unwrap_or("-"),
    );
    field("started", &run.started_at);
    field("ended", run.ended_at.as_deref().unwrap_or("-"));
    field("spec sha256", &run.spec_sha256);
    field("tool", &run.tool_version);
    field("location", &run.location);
    let done = replicates
        .iter()
        .filter(|x| x.status == ReplicateStatus::Complete)
        .count();
    field(
        "plan",
        &format!(
            "{} points, {done}/{} replicates complete",
            points.len(),
            replicates.len()
        ),
    );
    out.push('\n');
    let aggregates: Vec<&FactRow> = facts.iter().filter(|f| f.replicate.is_none()).collect();
    let shown: Vec<&FactRow> = if aggregates.is_empty() {
        facts.iter().collect()
    } else {
        aggregates
    };
    if shown.is_empty() {
        return (out, 0);
    }
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|f| {
            let unit = metric_unit(&f.metric, &f.unit);
            let ci = f.ci_lo.zip(f.ci_hi);
            vec![
                f.point_id.clone(),
                f.replicate.map_or("all".into(), |r| r.to_string()),
                f.metric.clone(),
                f.statistic.clone(),
                human(f.value, unit),
                human_ci(f.value, ci, unit),
                f.n.to_string(),
            ]
        })
        .collect();
    out.push_str(&plain_table(
        &["POINT", "REP", "METRIC", "STAT", "VALUE", "CI", "N"],
        &rows,
    ));
    (out, facts.len() - shown.len())
}
