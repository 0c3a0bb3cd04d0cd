//! The load benchmark's two halves (scripts/bench-server.sh drives them):
//!
//! * `bench_server fill LOCATION RUNS METRICS`: writes RUNS runs of benchmark `bench-serve`
//!   into the warehouse at LOCATION (a store directory, or a `postgres://` URL) through the
//!   `Warehouse` trait, each with one point, 3 replicates and METRICS metrics (a fact per
//!   replicate and the aggregate with its interval: 4 × METRICS facts per run).
//! * `bench_server serve STORE_DIR|URL [ADDR]`: serves it with the server library, as
//!   `yardstick server` does (no tokens needed for reads), printing `listening on URL`.
//!
//! An example rather than the `yardstick` binary so that a release build of the benchmark
//! compiles the server and the store only.

use std::net::SocketAddr;
use std::sync::Arc;

use yardstick_server::{Server, ServerConfig};
use yardstick_store::RunStatus;
use yardstick_store::warehouse::{
    FactRow, PointRow, ReplicateRow, ReplicateStatus, RunRow, RunRows, WarehouseLocation,
    open_warehouse,
};

fn time(minute: usize) -> String {
    // 2026-01-01 plus `minute` minutes, as RFC 3339 (days of at most 28 × 12 months are enough
    // for a few hundred thousand minutes).
    let (day, rest) = (minute / 1440, minute % 1440);
    let (month, mday) = (day / 28 + 1, day % 28 + 1);
    format!(
        "2026-{month:02}-{mday:02}T{:02}:{:02}:00Z",
        rest / 60,
        rest % 60
    )
}

fn fill(location: &str, runs: usize, metrics: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut w = open_warehouse(location)?;
    let point_id = "component.0/D(16,8)/c=8".to_string();
    let statistic = |k: usize| ["p50", "p99", "mean", "value"][k % 4];
    for i in 0..runs {
        let run_id = format!("01JB{i:022}");
        let started = time(i * 30);
        let run = RunRow {
            run_id: run_id.clone(),
            name: "bench-serve".into(),
            status: RunStatus::Complete,
            mode: Some("exploratory".into()),
            spec_sha256: format!("{:064x}", 7),
            machine_profile: Some("bench-profile".into()),
            env_sha256: Some(format!("{:064x}", 9)),
            started_at: started.clone(),
            ended_at: Some(time(i * 30 + 20)),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: Some(format!("{:040x}", i)),
            location: location.to_string(),
        };
        let points = vec![PointRow {
            run_id: run_id.clone(),
            point_id: point_id.clone(),
            layer: "component".into(),
            kind: "serve".into(),
            params: serde_json::json!({"scenario": "D(16,8)", "concurrency": 8}),
        }];
        let replicates = (0..3)
            .map(|r| ReplicateRow {
                run_id: run_id.clone(),
                point_id: point_id.clone(),
                replicate: r,
                status: ReplicateStatus::Complete,
                started_at: started.clone(),
                ended_at: Some(time(i * 30 + 20)),
                artifact: Some(format!("samples/r{r}.parquet")),
            })
            .collect();
        let mut facts = Vec::with_capacity(metrics * 4);
        for m in 0..metrics {
            // ttft_ms p50 is the trend the benchmark asks for; the rest are made up.
            let (metric, stat) = if m == 0 {
                ("ttft_ms".to_string(), "p50")
            } else {
                (format!("metric_{m:03}"), statistic(m))
            };
            let base = 10.0 + (m as f64) + ((i * 7919 + m * 104_729) % 1000) as f64 / 1000.0;
            for r in [None, Some(0), Some(1), Some(2)] {
                let value = base + r.map_or(0.0, |r| r as f64 * 0.01);
                facts.push(FactRow {
                    run_id: run_id.clone(),
                    point_id: point_id.clone(),
                    replicate: r,
                    metric: metric.clone(),
                    statistic: stat.into(),
                    value,
                    ci_lo: r.is_none().then_some(value * 0.98),
                    ci_hi: r.is_none().then_some(value * 1.02),
                    unit: "ms".into(),
                    n: if r.is_none() { 3 } else { 12 },
                    artifact: r.map(|r| format!("samples/r{r}.parquet")),
                    row_group: None,
                });
            }
        }
        RunRows {
            run,
            points,
            replicates,
            facts,
        }
        .write(w.as_mut())?;
    }
    Ok(())
}

fn serve(location: &str, addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    let store_dir = match WarehouseLocation::parse(location) {
        WarehouseLocation::Sqlite { store_dir, .. } => Some(store_dir),
        WarehouseLocation::Postgres(_) => None,
    };
    let config = ServerConfig {
        store_dir,
        warehouse: location.to_string(),
        require_read_token: false,
        require_signature: false,
        max_push_bytes: 0,
        query: Default::default(),
        allow_privileged_warehouse: false,
        staging: Default::default(),
        index: None,
        tls: None,
        allowed_hosts: Vec::new(),
        limits: Default::default(),
        access_log: Arc::new(|_| {}),
    };
    let addr: SocketAddr = addr.parse()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = Server::bind(addr, config).await?;
        println!("listening on {}", server.url()?);
        server
            .serve(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

/// Where one trend's time goes, in-process: each warehouse read, the assembly and the JSON.
fn phases(location: &str, rounds: usize) -> Result<(), Box<dyn std::error::Error>> {
    use std::time::Instant;
    use yardstick_store::warehouse::{RunFilter, open_existing_warehouse};
    let mut w = open_existing_warehouse(location)?;
    let filter = RunFilter {
        name: Some("bench-serve".into()),
        limit: Some(5000),
        ..Default::default()
    };
    let q = yardstick_server::api::trend::TrendQuery {
        benchmark: "bench-serve".into(),
        metric: "ttft_ms".into(),
        statistic: Some("p50".into()),
        profile: None,
        point: None,
        since: None,
        limit: None,
        changes: None,
    };
    let mut t = [0f64; 5];
    for _ in 0..rounds {
        let t0 = Instant::now();
        let runs = w.runs(&filter)?;
        let t1 = Instant::now();
        let facts = w.metric_facts(&filter, "ttft_ms", "p50")?;
        let t2 = Instant::now();
        let verdicts = w.trend_rows(&filter, "ttft_ms", "p50")?;
        let t3 = Instant::now();
        let out =
            yardstick_server::api::trend::compute(w.as_mut(), &q).map_err(|e| format!("{e:?}"))?;
        let t4 = Instant::now();
        let json = serde_json::to_vec(&out)?;
        let t5 = Instant::now();
        assert!(runs.len() + facts.len() + verdicts.len() + json.len() > 0);
        for (i, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]
            .iter()
            .enumerate()
        {
            t[i] += d.as_secs_f64() * 1e3 / rounds as f64;
        }
    }
    println!(
        "mean of {rounds}: runs {:.2} ms, facts {:.2} ms, trend rows (one joined query) {:.2} ms, whole compute {:.2} ms, JSON {:.2} ms",
        t[0], t[1], t[2], t[3], t[4]
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    match (arg(0), arg(1)) {
        (Some("fill"), Some(location)) => fill(
            location,
            arg(2).unwrap_or("1000").parse()?,
            arg(3).unwrap_or("100").parse()?,
        ),
        (Some("serve"), Some(location)) => serve(location, arg(2).unwrap_or("127.0.0.1:0")),
        (Some("phases"), Some(location)) => phases(location, arg(2).unwrap_or("50").parse()?),
        _ => {
            Err("usage: bench_server fill LOCATION [RUNS] [METRICS] | serve LOCATION [ADDR]".into())
        }
    }
}
