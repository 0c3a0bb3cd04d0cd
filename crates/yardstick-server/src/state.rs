//! What every handler shares: the configuration, warehouse connections, the tokens, the metrics.
//!
//! The warehouse backends are synchronous (rusqlite, the blocking PostgreSQL client), so
//! handlers run their warehouse work on tokio's blocking pool ([`AppState::blocking`]), each
//! taking a connection from a small pool of idle ones and giving it back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use yardstick_store::StoreError;
use yardstick_store::warehouse::{
    BaselineRow, CalibrationRow, FactRow, PointRow, PostgresWarehouse, QueryLimits, QueryResult,
    ReplicateRow, RunFilter, RunRow, SqliteWarehouse, TrendRow, VerdictRow, Warehouse,
    WarehouseLocation,
};

use crate::ServerConfig;
use crate::auth::{self, Tokens};
use crate::error::{ApiError, ServerError};
use crate::metrics::Metrics;

/// A warehouse connection that can move to a blocking thread.
pub type Conn = Box<dyn Warehouse + Send>;

/// At most this many idle warehouse connections are kept.
const MAX_IDLE: usize = 8;
/// The state shared by handlers.
pub struct AppState {
    /// The configuration.
    pub config: ServerConfig,
    /// Request metrics.
    pub metrics: Metrics,
    /// Held while a push commits: one rename and one index at a time.
    pub push_lock: tokio::sync::Mutex<()>,
    /// Ad-hoc queries in flight, in all and per client.
    pub queries: crate::query::QueryGate,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<tokio::sync::Semaphore>,
    tokens: Mutex<(Option<SystemTime>, Tokens)>,
    labels: Mutex<HashMap<String, Arc<std::collections::BTreeMap<String, String>>>>,
}

impl AppState {
    /// Checks the configuration, opens the warehouse once (creating the SQLite database of an
    /// existing store directory when it has none yet) and loads the tokens.
    pub fn open(config: ServerConfig) -> Result<AppState, ServerError> {
        if let Some(dir) = &config.store_dir
            && !dir.is_dir()
        {
            return Err(ServerError::config(
                format!("{} is not a directory", dir.display()),
                Some("pass --store DIR, the directory `yardstick run` stores runs in"),
            ));
        }
        if config.require_read_token && config.store_dir.is_none() {
            return Err(ServerError::config(
                "--require-read-token needs a store directory (tokens live in it)",
                Some("pass --store DIR as well as --warehouse URL"),
            ));
        }
        config.query.check().map_err(|m| {
            ServerError::config(
                m.to_string(),
                Some("see `yardstick server --help` for the query limits"),
            )
        })?;
        let state = AppState {
            queries: crate::query::QueryGate::new(config.query.clone()),
            metrics: Metrics::default(),
            push_lock: tokio::sync::Mutex::new(()),
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(tokio::sync::Semaphore::new(
                crate::query::MAX_CONCURRENT_QUERIES,
            )),
            tokens: Mutex::new((None, Tokens::default())),
            labels: Mutex::new(HashMap::new()),
            config,
        };
        if state.config.require_signature {
            let Some(store) = &state.config.store_dir else {
                return Err(ServerError::config(
                    "--require-signature needs a store directory (its trusted keys)",
                    Some("pass --store DIR"),
                ));
            };
            if yardstick_store::trust::load(store)?.keys.is_empty() {
                return Err(ServerError::config(
                    format!(
                        "--require-signature, but the store {} trusts no key: it could admit no run",
                        store.display()
                    ),
                    Some(
                        "trust the signers' public keys first: `yardstick trust add KEY.pub --store DIR`",
                    ),
                ));
            }
        }
        // A server that takes pushes cleans its staging area: abandoned pushes, and what a
        // stopped server left half-written.
        if let Some(store) = &state.config.store_dir
            && state.config.index.is_some()
        {
            crate::api::push::clean_staging(store, &state.config.staging);
        }
        if let WarehouseLocation::Postgres(url) = WarehouseLocation::parse(&state.config.warehouse)
        {
            let mut pg = PostgresWarehouse::connect(&url)?;
            let privileges = pg.dangerous_privileges()?;
            if !privileges.is_empty() && !state.config.allow_privileged_warehouse {
                return Err(ServerError::config(
                    format!(
                        "the warehouse role has {}: a read-only query could read or run files \
                         on the database host (pg_read_file, COPY ... TO PROGRAM)",
                        privileges.join(", ")
                    ),
                    Some(
                        "connect as the role docs/warehouse.md describes (owner of the \
                         warehouse's tables, no superuser), or pass --allow-privileged-warehouse",
                    ),
                ));
            }
            state.give_back(Box::new(pg));
        } else {
            let conn = state.connect()?;
            state.give_back(conn);
        }
        state.current_tokens()?;
        Ok(state)
    }

    fn connect(&self) -> Result<Conn, StoreError> {
        Ok(match WarehouseLocation::parse(&self.config.warehouse) {
            WarehouseLocation::Postgres(url) => Box::new(PostgresWarehouse::connect(&url)?),
            WarehouseLocation::Sqlite { db, .. } => Box::new(SqliteWarehouse::open(&db)?),
        })
    }

    fn give_back(&self, conn: Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// Runs `f` with a warehouse connection on the blocking pool.
    pub async fn blocking<T, F>(self: &Arc<Self>, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&AppState, &mut dyn Warehouse) -> Result<T, ApiError> + Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(ApiError::internal)?;
        self.blocking_with(permit, f).await
    }

    /// Readiness: within `wait`, a warehouse connection (from the same pool and under the same
    /// limit as every request's), then within `wait` again its answer to a trivial read (the
    /// schema version). 503 saying what is wrong otherwise.
    pub async fn ready(self: &Arc<Self>, wait: std::time::Duration) -> Result<u32, ApiError> {
        let hint = "the other routes fail too until the warehouse answers: check the store's \
                    yardstick.db (or the PostgreSQL server) and the server's log";
        let permit = tokio::time::timeout(wait, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| {
                ApiError::unavailable(
                    format!(
                        "the warehouse is busy: no connection came free within {} s",
                        wait.as_secs_f64()
                    ),
                    Some(hint),
                )
            })?
            .map_err(ApiError::internal)?;
        let read = self.blocking_with(permit, |_, w| Ok(w.schema_version()?));
        match tokio::time::timeout(wait, read).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(ApiError::unavailable(
                format!("the warehouse does not answer: {}", e.body.error),
                Some(hint),
            )),
            Err(_) => Err(ApiError::unavailable(
                format!(
                    "the warehouse does not answer: no answer to a trivial read within {} s",
                    wait.as_secs_f64()
                ),
                Some(hint),
            )),
        }
    }

    async fn blocking_with<T, F>(
        self: &Arc<Self>,
        permit: tokio::sync::OwnedSemaphorePermit,
        f: F,
    ) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&AppState, &mut dyn Warehouse) -> Result<T, ApiError> + Send + 'static,
    {
        let state = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let popped = state.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let mut conn = match popped {
                Some(c) => c,
                None => state.connect()?,
            };
            let out = f(&state, conn.as_mut());
            // A connection the server itself failed on (a 5xx) may be in a bad state: the next
            // request opens a fresh one. Answers to bad requests (4xx) keep it.
            if out
                .as_ref()
                .map_or_else(|e| !e.status.is_server_error(), |_| true)
            {
                state.give_back(conn);
            }
            out
        })
        .await
        .map_err(ApiError::internal)?
    }

    /// The tokens, re-read when the token file changed (tokens created or revoked while the
    /// server runs take effect at once).
    pub fn current_tokens(&self) -> Result<Tokens, ServerError> {
        let Some(store) = &self.config.store_dir else {
            return Ok(Tokens::default());
        };
        let modified = std::fs::metadata(auth::tokens_path(store))
            .and_then(|m| m.modified())
            .ok();
        let mut cached = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if cached.0 != modified || modified.is_none() {
            let file = auth::load(store)?;
            *cached = (modified, Tokens::new(file));
        }
        Ok(cached.1.clone())
    }

    /// The directory of a run, when the server has it: `<store>/runs/<id>` of the server's
    /// store, else of the store the warehouse row names.
    pub fn run_dir(&self, run: &RunRow) -> Option<PathBuf> {
        run_dir(self.config.store_dir.as_deref(), run)
    }

    /// The labels of a run's spec (`metadata.labels`), cached: a stored spec never changes.
    pub fn labels(&self, run: &RunRow) -> Arc<std::collections::BTreeMap<String, String>> {
        if let Some(l) = self
            .labels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&run.run_id)
        {
            return l.clone();
        }
        let labels = self
            .run_dir(run)
            .and_then(|dir| yardstick_store::fsutil::read_in(&dir, "spec.yaml").ok())
            .and_then(|bytes| yardstick_spec::check_bytes(&bytes).spec)
            .and_then(|spec| spec.metadata)
            .map(|m| m.labels)
            .unwrap_or_default();
        let labels = Arc::new(labels);
        self.labels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run.run_id.clone(), labels.clone());
        labels
    }
}

/// See [`AppState::run_dir`].
pub(crate) fn run_dir(store: Option<&Path>, run: &RunRow) -> Option<PathBuf> {
    yardstick_store::run::unsafe_run_id(&run.run_id)
        .is_none()
        .then_some(())?;
    let candidates = store
        .into_iter()
        .map(Path::to_path_buf)
        .chain(std::iter::once(PathBuf::from(&run.location)));
    for root in candidates {
        let dir = root.join("runs").join(&run.run_id);
        if dir.join(yardstick_store::layout::MANIFEST).is_file() {
            return Some(dir);
        }
    }
    None
}

/// A warehouse connection that reports each run's `location` as the server's store directory
/// when the run directory is there, so that the libraries which read run directories by their
/// warehouse row (`yardstick_gate::load_run`) find them wherever the run was written from
/// (another machine's path, a PostgreSQL URL). Rows the API returns are the warehouse's own.
pub struct Located<'a> {
    inner: &'a mut dyn Warehouse,
    store: Option<&'a Path>,
}

impl<'a> Located<'a> {
    /// `inner`, with run directories looked for in `store` first.
    pub fn new(inner: &'a mut dyn Warehouse, store: Option<&'a Path>) -> Located<'a> {
        Located { inner, store }
    }

    fn relocate(&self, mut run: RunRow) -> RunRow {
        if let Some(store) = self.store
            && !run
                .location
                .starts_with(yardstick_gate::file::IMPORTED_PREFIX)
            && yardstick_store::run::unsafe_run_id(&run.run_id).is_none()
            && store
                .join("runs")
                .join(&run.run_id)
                .join(yardstick_store::layout::MANIFEST)
                .is_file()
        {
            run.location = store.display().to_string();
        }
        run
    }
}

impl Warehouse for Located<'_> {
    fn upsert_run(&mut self, run: &RunRow) -> Result<(), StoreError> {
        self.inner.upsert_run(run)
    }
    fn upsert_points(&mut self, points: &[PointRow]) -> Result<(), StoreError> {
        self.inner.upsert_points(points)
    }
    fn upsert_replicate(&mut self, replicate: &ReplicateRow) -> Result<(), StoreError> {
        self.inner.upsert_replicate(replicate)
    }
    fn upsert_facts(&mut self, facts: &[FactRow]) -> Result<(), StoreError> {
        self.inner.upsert_facts(facts)
    }
    fn runs(&mut self, filter: &RunFilter) -> Result<Vec<RunRow>, StoreError> {
        let runs = self.inner.runs(filter)?;
        Ok(runs.into_iter().map(|r| self.relocate(r)).collect())
    }
    fn run(&mut self, run_id: &str) -> Result<Option<RunRow>, StoreError> {
        Ok(self.inner.run(run_id)?.map(|r| self.relocate(r)))
    }
    fn points(&mut self, run_id: &str) -> Result<Vec<PointRow>, StoreError> {
        self.inner.points(run_id)
    }
    fn replicates(&mut self, run_id: &str) -> Result<Vec<ReplicateRow>, StoreError> {
        self.inner.replicates(run_id)
    }
    fn facts(&mut self, run_id: &str) -> Result<Vec<FactRow>, StoreError> {
        self.inner.facts(run_id)
    }
    fn metric_facts(
        &mut self,
        filter: &RunFilter,
        metric: &str,
        statistic: &str,
    ) -> Result<Vec<FactRow>, StoreError> {
        self.inner.metric_facts(filter, metric, statistic)
    }
    fn set_baseline(&mut self, baseline: &BaselineRow, force: bool) -> Result<(), StoreError> {
        self.inner.set_baseline(baseline, force)
    }
    fn baselines(&mut self) -> Result<Vec<BaselineRow>, StoreError> {
        self.inner.baselines()
    }
    fn record_calibrations(&mut self, rows: &[CalibrationRow]) -> Result<(), StoreError> {
        self.inner.record_calibrations(rows)
    }
    fn calibrations(
        &mut self,
        machine_profile: &str,
        benchmark: &str,
    ) -> Result<Vec<CalibrationRow>, StoreError> {
        self.inner.calibrations(machine_profile, benchmark)
    }
    fn record_verdicts(&mut self, rows: &[VerdictRow]) -> Result<(), StoreError> {
        self.inner.record_verdicts(rows)
    }
    fn trend_rows(
        &mut self,
        filter: &RunFilter,
        metric: &str,
        statistic: &str,
    ) -> Result<Vec<TrendRow>, StoreError> {
        self.inner.trend_rows(filter, metric, statistic)
    }
    fn query_with(&mut self, sql: &str, limits: &QueryLimits) -> Result<QueryResult, StoreError> {
        self.inner.query_with(sql, limits)
    }
    fn schema_version(&mut self) -> Result<u32, StoreError> {
        self.inner.schema_version()
    }
}
