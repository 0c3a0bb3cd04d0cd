//! `yardstick query "SQL"`: a read-only SQL query against the warehouse.

use crate::cli::GlobalOpts;
use crate::cmd::runs::{StoreOpt, print_table, store_error};
use crate::exit::{self, Status};
use crate::output;
use yardstick_store::warehouse::QueryLimits;

/// Run one read-only SQL statement against the warehouse and print the rows. The database
/// refuses writes (SQLite opened read-only with `PRAGMA query_only`; PostgreSQL in
/// `BEGIN READ ONLY`). Tables and example queries: docs/warehouse.md.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick query \"SELECT run_id, name, status FROM runs ORDER BY started_at DESC LIMIT 5\"\n  \
yardstick query --json \"SELECT substr(r.started_at, 1, 10) AS day, AVG(f.value) AS p50_ttft_ms \
FROM facts f JOIN runs r USING (run_id) WHERE r.name = 'llama-serve' AND f.metric = 'ttft_ms' \
AND f.statistic = 'p50' AND f.replicate = -1 GROUP BY day ORDER BY day\""
)]
pub struct QueryArgs {
    /// One SQL statement that returns rows (SELECT, WITH, VALUES, EXPLAIN); `-` reads stdin.
    #[arg(value_name = "SQL")]
    pub sql: String,
    #[command(flatten)]
    pub store: StoreOpt,
    /// How long the query may run before it is interrupted, e.g. 10s, 5m.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub timeout: String,
    /// Rows to print at most; past that the answer is truncated (and says so).
    #[arg(long, default_value_t = yardstick_store::warehouse::query::DEFAULT_MAX_ROWS, value_name = "N")]
    pub max_rows: usize,
    /// Bytes of rows (as JSON) to print at most, e.g. 16MiB; past that the answer is truncated.
    #[arg(long, default_value = "16MiB", value_name = "BYTES")]
    pub max_bytes: String,
}

/// Runs `yardstick query`.
pub fn run(args: QueryArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let sql = if args.sql == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| exit::invalid(format!("reading SQL from stdin: {e}"), None))?;
        s
    } else {
        args.sql.clone()
    };
    // The same statement the MCP tool `query_facts` runs (yardstick_server::mcp::statement).
    let Some(sql) = yardstick_server::mcp::statement(&sql) else {
        return Err(exit::invalid(
            "the query is empty",
            Some("e.g. yardstick query \"SELECT * FROM runs LIMIT 5\""),
        ));
    };
    let limits = QueryLimits {
        time: yardstick_spec::units::parse_duration(&args.timeout)
            .map_err(|e| crate::cmd::flag_error("timeout", e))?,
        max_rows: args.max_rows.max(1),
        max_bytes: yardstick_spec::units::parse_bytes(&args.max_bytes)
            .map_err(|e| crate::cmd::flag_error("max-bytes", e))?
            .try_into()
            .unwrap_or(usize::MAX),
        cancel: None,
    };
    let mut w = args.store.open()?;
    let result = w.query_with(sql, &limits).map_err(store_error)?;
    if let Some(why) = &result.truncated_by {
        output::warn(&format!(
            "the answer is truncated: {why} (--max-rows, --max-bytes); add a LIMIT or narrow the query"
        ));
    }
    if g.json {
        output::json(&result)?;
        return Ok(Status::Ok);
    }
    let rows: Vec<Vec<String>> = result
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| match v {
                    serde_json::Value::Null => "NULL".to_string(),
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) => match n.as_f64() {
                        Some(f) if !n.is_i64() && !n.is_u64() => crate::cmd::runs::num(f),
                        _ => n.to_string(),
                    },
                    other => other.to_string(),
                })
                .collect()
        })
        .collect();
    let headers: Vec<&str> = result.columns.iter().map(String::as_str).collect();
    print_table(&headers, &rows)?;
    output::info(&format!(
        "({} row{})",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    ));
    Ok(Status::Ok)
}
