//! What every runner returns for one replicate: [`ReplicateOutcome`].
//!
//! `execute` seals it the same way whatever the kind of point: the summary and figures in
//! `results/<point>/rN.json`, the samples as Parquet, the logs under `logs/<point>/rN/`, an
//! eval's files under `eval/<point>/rN/`, a profile under `profile/<point>/`.

use serde_json::Value;
use yardstick_store::samples::Table;

use crate::e2e::ProfileOutcome;
use crate::facts::Figures;

/// How a replicate ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicateStatus {
    /// It measured: its figures become facts.
    Measured,
    /// It failed (the summary's `error`): stored and listed, never aggregated.
    Failed(String),
}

/// One replicate's result, whatever ran it.
pub struct ReplicateOutcome {
    /// Whether it measured; [`ReplicateStatus::Failed`] exactly when `summary` has an `error`.
    pub status: ReplicateStatus,
    /// The replicate's summary as JSON (the shape each runner documents).
    pub summary: Value,
    /// Its typed figures (the facts of the replicate).
    pub figures: Figures,
    /// Raw samples, stored as Parquet; `None` for a runner without any.
    pub samples: Option<Table>,
    /// Files kept beside the replicate's logs (name relative to its log directory, contents).
    pub logs: Vec<(String, Vec<u8>)>,
    /// Tables kept beside the replicate's logs as Parquet, with the join keys of its samples
    /// (the server's metrics, one row per scrape).
    pub log_tables: Vec<(String, Table)>,
    /// An eval's `eval.json` and `items.jsonl`, stored under `eval/<point>/rN/`.
    pub eval_files: Vec<(String, Vec<u8>)>,
    /// The profile, for the profiled replicate.
    pub profile: Option<ProfileOutcome>,
}

impl ReplicateOutcome {
    /// An outcome with `summary` and `figures` and nothing else; its status is read from the
    /// summary's `error`.
    pub fn new(summary: Value, figures: Figures) -> ReplicateOutcome {
        let status = match summary.get("error") {
            Some(e) => {
                ReplicateStatus::Failed(e.as_str().map_or_else(|| e.to_string(), str::to_string))
            }
            None => ReplicateStatus::Measured,
        };
        ReplicateOutcome {
            status,
            summary,
            figures,
            samples: None,
            logs: Vec::new(),
            log_tables: Vec::new(),
            eval_files: Vec::new(),
            profile: None,
        }
    }

    /// A replicate whose workload could not run at all: only its error.
    pub fn failed(why: String) -> ReplicateOutcome {
        ReplicateOutcome::new(serde_json::json!({ "error": why }), Figures::default())
    }

    /// With raw samples.
    pub fn with_samples(mut self, samples: Table) -> ReplicateOutcome {
        self.samples = Some(samples);
        self
    }

    /// With log files.
    pub fn with_logs(mut self, logs: Vec<(String, Vec<u8>)>) -> ReplicateOutcome {
        self.logs = logs;
        self
    }

    /// With a table kept beside the logs as `name` (Parquet).
    pub fn with_log_table(mut self, name: &str, table: Table) -> ReplicateOutcome {
        self.log_tables.push((name.to_string(), table));
        self
    }

    /// Marks a replicate failed for `why` unless it already failed (its first error stands).
    pub fn fail(&mut self, why: String) {
        if self.summary.get("error").is_none() {
            self.summary["error"] = why.clone().into();
            self.status = ReplicateStatus::Failed(why);
        }
    }
}
