//! The limits of an ad-hoc query (`yardstick query`, the server's MCP `query_facts`): how long it
//! may run, how many rows and bytes it may answer, and a flag that cancels it; and the SQLite
//! sandbox those queries run in — an authorizer that admits only reads of the warehouse's own
//! tables and views, a short list of harmless functions and informational pragmas.
//!
//! The limits are enforced by the database, not by parsing the SQL: SQLite asks the authorizer
//! about every table, column, function and pragma a statement touches while preparing it, and a
//! progress handler stops a running statement at its deadline or when it is cancelled.
//! PostgreSQL gets `statement_timeout` and a cancel request; both backends stop collecting rows
//! at the row and byte caps and say so in [`QueryResult::truncated`](super::QueryResult).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long one query may run by default before it is interrupted.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);
/// How many rows one query answers by default; past that the answer is truncated.
pub const DEFAULT_MAX_ROWS: usize = 100_000;
/// How many bytes (of the answer as JSON) one query answers by default; past that the answer
/// is truncated.
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;
/// The longest SQL text a query may be.
pub const MAX_SQL_BYTES: usize = 256 * 1024;

/// The limits of one ad-hoc query.
#[derive(Debug, Clone)]
pub struct QueryLimits {
    /// Wall time; the statement is interrupted past it (an error, not a truncated answer).
    pub time: Duration,
    /// Rows answered; the answer is truncated past it.
    pub max_rows: usize,
    /// Bytes of the answer (its rows as JSON); the answer is truncated past it, and no single
    /// string or blob may be larger than half of it.
    pub max_bytes: usize,
    /// Set to cancel the query while it runs (the client went away, the server is stopping).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits {
            time: DEFAULT_TIME_LIMIT,
            max_rows: DEFAULT_MAX_ROWS,
            max_bytes: DEFAULT_MAX_BYTES,
            cancel: None,
        }
    }
}

impl QueryLimits {
    /// Whether the query was asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// The longest string or blob a value may be: half the byte cap (a blob is answered as hex,
    /// twice its size), at least 1 KiB, at most what SQLite's `int` limit holds.
    pub fn max_value_bytes(&self) -> i32 {
        i32::try_from((self.max_bytes / 2).max(1024)).unwrap_or(i32::MAX)
    }

    /// The error of a query stopped at its time limit.
    pub(crate) fn timed_out(&self) -> crate::StoreError {
        crate::StoreError::Invalid(format!(
            "query: stopped after {} s, its time limit; narrow it (WHERE, LIMIT) or raise the \
             limit (`yardstick query --timeout`, `yardstick server --query-timeout`)",
            self.time.as_secs_f64()
        ))
    }

    /// The error of a cancelled query.
    pub(crate) fn was_cancelled() -> crate::StoreError {
        crate::StoreError::Invalid(
            "query: cancelled before it finished (the client went away or the server is stopping)"
                .into(),
        )
    }
}

/// Rows collected up to the row and byte caps.
pub(crate) struct Collector<'a> {
    limits: &'a QueryLimits,
    pub(crate) rows: Vec<Vec<serde_json::Value>>,
    bytes: usize,
    /// Which cap stopped the answer.
    pub(crate) truncated: Option<String>,
}

impl<'a> Collector<'a> {
    pub(crate) fn new(limits: &'a QueryLimits, columns: &[String]) -> Self {
        let header = columns.iter().map(|c| c.len() + 3).sum();
        Collector {
            limits,
            rows: Vec::new(),
            bytes: header,
            truncated: None,
        }
    }

    /// Takes one more row; `false` when the answer is full (the row is not kept and the caller
    /// stops reading).
    pub(crate) fn push(&mut self, row: Vec<serde_json::Value>) -> bool {
        if self.rows.len() >= self.limits.max_rows {
            self.truncated = Some(format!("more than {} rows", self.limits.max_rows));
            return false;
        }
        let size: usize = row.iter().map(json_size).sum::<usize>() + 2;
        if self.bytes + size > self.limits.max_bytes {
            self.truncated = Some(format!("more than {} bytes of rows", self.limits.max_bytes));
            return false;
        }
        self.bytes += size;
        self.rows.push(row);
        true
    }

    pub(crate) fn finish(self, columns: Vec<String>) -> super::QueryResult {
        super::QueryResult {
            columns,
            rows: self.rows,
            truncated: self.truncated.is_some(),
            truncated_by: self.truncated,
        }
    }
}

/// About how many bytes a value takes as JSON text (an upper bound for strings without escapes).
fn json_size(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Null => 4,
        serde_json::Value::Bool(_) => 5,
        serde_json::Value::Number(_) => 24,
        serde_json::Value::String(s) => s.len() + 3,
        other => other.to_string().len() + 1,
    }
}

/// Functions a query may call: SQLite's core scalar, aggregate, window, date, math and JSON
/// functions. Not here, so refused: `load_extension`, `fts3_tokenizer`, `sqlite_compileoption_*`,
/// `sqlite_offset`, and anything else not known to be harmless.
const FUNCTIONS: &[&str] = &[
    // core scalar
    "abs",
    "char",
    "coalesce",
    "concat",
    "concat_ws",
    "format",
    "glob",
    "hex",
    "ifnull",
    "iif",
    "if",
    "instr",
    "length",
    "like",
    "likelihood",
    "likely",
    "lower",
    "ltrim",
    "max",
    "min",
    "nullif",
    "octet_length",
    "printf",
    "quote",
    "random",
    "randomblob",
    "replace",
    "round",
    "rtrim",
    "sign",
    "soundex",
    "substr",
    "substring",
    "trim",
    "typeof",
    "unhex",
    "unicode",
    "unlikely",
    "upper",
    "zeroblob",
    "sqlite_version",
    "->",
    "->>",
    // aggregate and window
    "avg",
    "count",
    "group_concat",
    "string_agg",
    "sum",
    "total",
    "median",
    "percentile",
    "percentile_cont",
    "percentile_disc",
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    // date and time
    "date",
    "time",
    "datetime",
    "julianday",
    "unixepoch",
    "strftime",
    "timediff",
    // math
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "ceiling",
    "cos",
    "cosh",
    "degrees",
    "exp",
    "floor",
    "ln",
    "log",
    "log10",
    "log2",
    "mod",
    "pi",
    "pow",
    "power",
    "radians",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    // JSON
    "json",
    "jsonb",
    "json_array",
    "jsonb_array",
    "json_array_length",
    "json_error_position",
    "json_extract",
    "jsonb_extract",
    "json_insert",
    "jsonb_insert",
    "json_object",
    "jsonb_object",
    "json_patch",
    "jsonb_patch",
    "json_pretty",
    "json_quote",
    "json_remove",
    "jsonb_remove",
    "json_replace",
    "jsonb_replace",
    "json_set",
    "jsonb_set",
    "json_type",
    "json_valid",
    "json_group_array",
    "jsonb_group_array",
    "json_group_object",
    "jsonb_group_object",
];

/// Table-valued functions a query may read besides the warehouse's tables: JSON walkers and the
/// pragmas that describe the schema. Not `pragma_database_list` (it names the file), nor
/// `dbstat` or any pragma that sets something.
const READABLE_FUNCTIONS: &[&str] = &[
    "json_each",
    "json_tree",
    "jsonb_each",
    "jsonb_tree",
    "pragma_table_info",
    "pragma_table_xinfo",
    "pragma_table_list",
    "pragma_index_list",
    "pragma_index_info",
    "pragma_index_xinfo",
    "pragma_foreign_key_list",
];

/// Pragmas a query may run (`PRAGMA table_info(facts)`): they describe the schema, set nothing.
const PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
];

/// Installs the sandbox on a read-only connection: only reads of `tables` (the warehouse's
/// tables and views, and the schema table), the functions and pragmas above; no writes,
/// attachments, transactions or other pragmas, whatever the SQL says. Also bounds the SQL's
/// length.
pub(crate) fn sandbox(
    conn: &rusqlite::Connection,
    tables: BTreeSet<String>,
) -> Result<(), rusqlite::Error> {
    use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
    conn.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_SQL_LENGTH,
        MAX_SQL_BYTES as i32,
    )?;
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        let main = ctx.database_name == Some("main");
        let allowed = match ctx.action {
            AuthAction::Select | AuthAction::Recursive => true,
            AuthAction::Read { table_name, .. } => {
                let t = table_name.to_ascii_lowercase();
                let t = t.as_str();
                if READABLE_FUNCTIONS.contains(&t) {
                    true
                } else if ctx.database_name.is_none() {
                    // No database: the statement's own common table expression (`WITH c AS
                    // ...`), or a table-valued function that only the list above admits.
                    !(t.starts_with("pragma_")
                        || t.starts_with("sqlite_")
                        || t.starts_with("json")
                        || matches!(t, "dbstat" | "fts3tokenize" | "generate_series"))
                } else {
                    main && (tables.contains(t) || matches!(t, "sqlite_schema" | "sqlite_master"))
                }
            }
            AuthAction::Function { function_name } => {
                FUNCTIONS.contains(&function_name.to_ascii_lowercase().as_str())
            }
            AuthAction::Pragma { pragma_name, .. } => {
                PRAGMAS.contains(&pragma_name.to_ascii_lowercase().as_str())
            }
            _ => false,
        };
        if allowed {
            Authorization::Allow
        } else {
            Authorization::Deny
        }
    }));
    Ok(())
}
