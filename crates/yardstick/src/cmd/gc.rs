//! `yardstick gc --keep-raw 30d`: retention of raw artifacts in a store directory.

use yardstick_store::gc::{GcOptions, gc_with};
use yardstick_store::warehouse::{WarehouseLocation, parse_age};

use crate::cli::GlobalOpts;
use crate::cmd::runs::{StoreOpt, print_table, store_error};
use crate::exit::{self, Status};
use crate::output;

/// Drop the raw samples, telemetry and logs of complete runs that ended longer ago than
/// `--keep-raw`, keeping facts, spec, environment, summary, manifest (with every hash) and
/// attestation. Each run records what was dropped in `gc.json` (signed as `gc.dsse.json` with
/// --key, the key that signed the run), which `verify` reads to tell dropped-by-policy from
/// missing. Signed runs are pruned only with their own key; incomplete (resumable) runs never.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  yardstick gc --keep-raw 30d --dry-run\n  \
yardstick gc --keep-raw 90d --store /data/yardstick-store --json\n  \
yardstick gc --keep-raw 30d --key ~/.config/yardstick/signing.key")]
pub struct GcArgs {
    /// Keep raw artifacts of runs that ended within this age: 30d, 12h, 2w.
    #[arg(long, value_name = "AGE", required = true)]
    pub keep_raw: String,
    /// Show what would be dropped; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Secret key that signs the retention records (`gc.dsse.json`). A signed run is pruned
    /// only with the key that signed it; without it the run is left alone and reported.
    #[arg(long, value_name = "KEY", env = "YARDSTICK_SIGNING_KEY")]
    pub key: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub store: StoreOpt,
}

/// Runs `yardstick gc`.
pub fn run(args: GcArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let keep_raw = parse_age(&args.keep_raw).map_err(store_error)?;
    let loc = WarehouseLocation::parse(&args.store.store);
    let Some(dir) = loc.store_dir() else {
        return Err(exit::invalid(
            "gc works on a store directory (where the run directories are), not a database URL",
            Some("pass --store DIR"),
        ));
    };
    let key = super::keygen::secret_key_arg(args.key.as_deref())?;
    let report = gc_with(
        dir,
        &GcOptions {
            dry_run: args.dry_run,
            key,
            ..GcOptions::new(keep_raw)
        },
    )
    .map_err(store_error)?;
    if g.json {
        output::json(&report)?;
        return Ok(Status::Ok);
    }
    let rows: Vec<Vec<String>> = report
        .pruned
        .iter()
        .map(|p| {
            vec![
                p.run_id.clone(),
                p.ended_at.clone(),
                p.dropped.len().to_string(),
                p.bytes.to_string(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        print_table(&["RUN", "ENDED", "FILES", "BYTES"], &rows)?;
    }
    for s in &report.skipped {
        output::warn(&format!("kept {}: {}", s.run, s.reason));
    }
    output::info(&format!(
        "{}{} of {} runs past {}: {} bytes {}",
        if args.dry_run { "dry run: " } else { "" },
        report.pruned.len(),
        report.runs_checked,
        report.policy,
        report.bytes_freed,
        if args.dry_run {
            "would be freed"
        } else {
            "freed"
        }
    ));
    Ok(Status::Ok)
}
