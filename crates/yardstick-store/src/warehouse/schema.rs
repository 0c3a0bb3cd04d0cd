//! Versioned schema migrations, shared by both backends.
//!
//! Each migration is one SQL script written once with two placeholders for the types the dialects
//! spell differently: `{double}` (SQLite `REAL`, PostgreSQL `DOUBLE PRECISION`, both 8-byte IEEE),
//! `{json}` (SQLite `TEXT` read with `json_extract`, PostgreSQL `JSONB`) and `{without_rowid}`
//! (SQLite keeps the table in its primary-key b-tree; nothing in PostgreSQL). Applied versions are
//! rows of `schema_migrations`; opening a database applies the missing ones in order, each in its
//! own transaction, so a database at any older version migrates forward and an up-to-date one is
//! left alone. Migrations are append-only: never edit one that has shipped.

/// One schema migration.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Version reached after applying it (1, 2, …, consecutive).
    pub version: u32,
    /// Short description, stored in `schema_migrations.name`.
    pub name: &'static str,
    /// The script, with dialect placeholders.
    pub sql: &'static str,
}

/// The SQL dialect of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3 (bundled).
    Sqlite,
    /// PostgreSQL 12 or newer.
    Postgres,
}

impl Dialect {
    /// The script of `m` in this dialect.
    pub fn render(self, m: &Migration) -> String {
        let (double, json, without_rowid) = match self {
            Dialect::Sqlite => ("REAL", "TEXT", "WITHOUT ROWID"),
            Dialect::Postgres => ("DOUBLE PRECISION", "JSONB", ""),
        };
        m.sql
            .replace("{double}", double)
            .replace("{json}", json)
            .replace("{without_rowid}", without_rowid)
    }
}

/// The table recording applied migrations (the same in both dialects).
pub const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)";

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "runs, points, replicates, facts, baselines",
        sql: "
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    mode TEXT,
    spec_sha256 TEXT NOT NULL,
    machine_profile TEXT,
    env_sha256 TEXT,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    tool_version TEXT NOT NULL,
    git_commit TEXT,
    location TEXT NOT NULL
);
CREATE INDEX runs_by_name ON runs (name, started_at);
CREATE INDEX runs_by_profile ON runs (machine_profile, started_at);
CREATE INDEX runs_by_start ON runs (started_at);

CREATE TABLE points (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    point_id TEXT NOT NULL,
    layer TEXT NOT NULL,
    kind TEXT NOT NULL,
    params {json} NOT NULL,
    PRIMARY KEY (run_id, point_id)
);

CREATE TABLE replicates (
    run_id TEXT NOT NULL,
    point_id TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    artifact TEXT,
    PRIMARY KEY (run_id, point_id, replicate),
    FOREIGN KEY (run_id, point_id) REFERENCES points (run_id, point_id) ON DELETE CASCADE
);

-- The key leads with run, metric and statistic: trend queries join runs (by name or profile) to
-- facts of one metric and statistic, and `facts(run)` reads a run's prefix.
CREATE TABLE facts (
    run_id TEXT NOT NULL,
    point_id TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    metric TEXT NOT NULL,
    statistic TEXT NOT NULL,
    value {double} NOT NULL,
    ci_lo {double},
    ci_hi {double},
    unit TEXT NOT NULL,
    n BIGINT NOT NULL,
    artifact TEXT,
    row_group INTEGER,
    PRIMARY KEY (run_id, metric, statistic, replicate, point_id),
    FOREIGN KEY (run_id, point_id) REFERENCES points (run_id, point_id) ON DELETE CASCADE
) {without_rowid};

CREATE TABLE baselines (
    machine_profile TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    created_at TEXT NOT NULL,
    note TEXT,
    PRIMARY KEY (machine_profile, benchmark)
);
",
    },
    Migration {
        version: 2,
        name: "dimensions machine_profiles and workloads",
        sql: "
CREATE TABLE machine_profiles (
    machine_profile TEXT PRIMARY KEY,
    first_seen_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL
);
INSERT INTO machine_profiles (machine_profile, first_seen_at, last_seen_at)
    SELECT machine_profile, MIN(started_at), MAX(started_at) FROM runs
    WHERE machine_profile IS NOT NULL GROUP BY machine_profile;

CREATE TABLE workloads (
    spec_sha256 TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL
);
INSERT INTO workloads (spec_sha256, name, first_seen_at, last_seen_at)
    SELECT spec_sha256, MIN(name), MIN(started_at), MAX(started_at) FROM runs
    GROUP BY spec_sha256;
",
    },
    Migration {
        version: 3,
        name: "gate calibrations (A/A comparisons for noise floors)",
        sql: "
CREATE TABLE gate_calibrations (
    machine_profile TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    point_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    statistic TEXT NOT NULL,
    baseline_run TEXT NOT NULL,
    candidate_run TEXT NOT NULL,
    ratio {double} NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (machine_profile, benchmark, point_id, metric, statistic, baseline_run,
                 candidate_run)
);
",
    },
    Migration {
        version: 4,
        name: "gate verdicts (what the gate said of each run, for trends)",
        sql: "
CREATE TABLE gate_verdicts (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    point_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    statistic TEXT NOT NULL,
    baseline_run TEXT NOT NULL,
    verdict TEXT NOT NULL,
    ratio {double},
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (run_id, metric, statistic, point_id)
) {without_rowid};
",
    },
];

/// The version a fully migrated database is at.
pub fn latest_version() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_and_placeholders_render() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "{}", m.name);
            for d in [Dialect::Sqlite, Dialect::Postgres] {
                assert!(!d.render(m).contains('{'), "{} in {d:?}", m.name);
            }
        }
        assert!(Dialect::Postgres.render(&MIGRATIONS[0]).contains("JSONB"));
        assert_eq!(latest_version(), MIGRATIONS.len() as u32);
    }
}
