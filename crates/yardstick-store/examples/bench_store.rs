//! Store performance, measured (not asserted): ingest of 1,000,000 fact rows into the SQLite
//! warehouse the way `yardstick run` writes them (one transaction per run), a trend query over
//! 1,000 runs through the read-only `query` path, 1,000,000 request records written as a
//! zstd Parquet samples file, and the Parquet export of the whole warehouse.
//!
//! `scripts/bench-store.sh` builds and runs it in release mode. Arguments: `[DIR] [RUNS]`
//! (default: a temp dir, 1000 runs of 1000 facts each).

use std::time::{Duration, Instant};

use yardstick_store::samples::{Column, Table};
use yardstick_store::warehouse::{
    FactRow, PointRow, ReplicateRow, RunRow, SqliteWarehouse, Warehouse,
};

const POINTS: u32 = 10;
const REPLICATES: u32 = 5;
const METRICS: [(&str, &str); 4] = [
    ("ttft_ms", "ms"),
    ("tpot_ms", "ms"),
    ("e2e_ms", "ms"),
    ("output_token_throughput", "tok/s"),
];
const STATS: [&str; 5] = ["mean", "p50", "p90", "p99", "max"];

/// A tiny deterministic generator (SplitMix64), so every run of the benchmark stores the same.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tmp;
    let dir = match args.first() {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir().expect("temp dir");
            tmp.path().to_path_buf()
        }
    };
    let runs: u32 = args.get(1).map_or(1000, |s| s.parse().expect("RUNS"));
    std::fs::create_dir_all(&dir).expect("dir");
    let db = dir.join("yardstick.db");
    let _ = std::fs::remove_file(&db);
    let mut w = SqliteWarehouse::open(&db).expect("open");
    let mut rng = Mix(42);

    // Pre-build every row so only the warehouse is timed.
    let day0 = time::macros::datetime!(2026-01-01 00:00 UTC);
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    let mut batches = Vec::with_capacity(runs as usize);
    for r in 0..runs {
        let run_id = format!("01BENCH{r:019}");
        let t = (day0 + time::Duration::minutes(i64::from(r) * 144))
            .format(&fmt)
            .unwrap();
        let name = if r % 2 == 0 {
            "llama-serve"
        } else {
            "qwen-serve"
        };
        let run = RunRow {
            run_id: run_id.clone(),
            name: name.into(),
            status: yardstick_store::RunStatus::Complete,
            mode: Some("publication".into()),
            spec_sha256: format!("{name:0>64}"),
            machine_profile: Some(if r % 3 == 0 { "cpu-a" } else { "cpu-b" }.into()),
            env_sha256: None,
            started_at: t.clone(),
            ended_at: Some(t.clone()),
            tool_version: "0.1.0".into(),
            git_commit: None,
            location: "bench".into(),
        };
        let mut points = Vec::new();
        let mut reps = Vec::new();
        let mut facts = Vec::new();
        for p in 0..POINTS {
            let point_id = format!("component.0/D(100,100)/c={}", 1 << p);
            points.push(PointRow {
                run_id: run_id.clone(),
                point_id: point_id.clone(),
                layer: "component".into(),
                kind: "serve".into(),
                params: serde_json::json!({"concurrency": 1 << p}),
            });
            for rep in 0..REPLICATES {
                reps.push(ReplicateRow {
                    run_id: run_id.clone(),
                    point_id: point_id.clone(),
                    replicate: rep,
                    status: yardstick_store::ReplicateStatus::Complete,
                    started_at: t.clone(),
                    ended_at: Some(t.clone()),
                    artifact: Some(format!("samples/p{p}-r{rep}.parquet")),
                });
            }
            // 5 replicates + 1 aggregate would make 1,200 facts a run; the aggregate replaces
            // replicate 4's `max` row set to keep exactly 1,000 (4 metrics × 5 stats × 50).
            for rep in 0..REPLICATES {
                let replicate = if rep == REPLICATES - 1 {
                    None
                } else {
                    Some(rep)
                };
                for (metric, unit) in METRICS {
                    for stat in STATS {
                        let v = 50.0 + 10.0 * rng.next() + f64::from(p);
                        facts.push(FactRow {
                            run_id: run_id.clone(),
                            point_id: point_id.clone(),
                            replicate,
                            metric: metric.into(),
                            statistic: stat.into(),
                            value: v,
                            ci_lo: replicate.is_none().then_some(v - 1.0),
                            ci_hi: replicate.is_none().then_some(v + 1.0),
                            unit: unit.into(),
                            n: 500,
                            artifact: replicate.map(|r| format!("samples/p{p}-r{r}.parquet")),
                            row_group: replicate.map(|_| 0),
                        });
                    }
                }
            }
        }
        batches.push((run, points, reps, facts));
    }
    let total_facts: usize = batches.iter().map(|b| b.3.len()).sum();

    let t0 = Instant::now();
    let mut in_facts = Duration::ZERO;
    for (run, points, reps, facts) in &batches {
        w.upsert_run(run).unwrap();
        w.upsert_points(points).unwrap();
        for r in reps {
            w.upsert_replicate(r).unwrap();
        }
        let t = Instant::now();
        w.upsert_facts(facts).unwrap();
        in_facts += t.elapsed();
    }
    let ingest = t0.elapsed();
    println!(
        "ingest: {total_facts} fact rows of {runs} runs into SQLite (one transaction per run): \
         {:.0} ms ({:.0} facts/s)",
        ms(in_facts),
        total_facts as f64 / in_facts.as_secs_f64()
    );
    println!(
        "ingest with bookkeeping ({runs} runs, {} points, {} replicates each committed on its \
         own as `yardstick run` does): {:.0} ms",
        runs * POINTS,
        runs * POINTS * REPLICATES,
        ms(ingest)
    );

    let t1 = Instant::now();
    let (_, _, _, facts) = &batches[0];
    w.upsert_facts(facts).unwrap();
    println!(
        "re-ingest of one run's {} facts (resume, upsert): {:.1} ms",
        facts.len(),
        ms(t1.elapsed())
    );

    let trend = "SELECT substr(r.started_at, 1, 10) AS day, COUNT(*) AS runs, \
                 AVG(f.value) AS p50_ttft_ms FROM runs r JOIN facts f ON f.run_id = r.run_id \
                 WHERE r.name = 'llama-serve' AND f.point_id = 'component.0/D(100,100)/c=16' \
                 AND f.metric = 'ttft_ms' AND f.statistic = 'p50' AND f.replicate = -1 \
                 GROUP BY day ORDER BY day";
    let any_point = "SELECT substr(r.started_at, 1, 10) AS day, f.point_id, \
                     AVG(f.value) AS p50_ttft_ms FROM runs r JOIN facts f ON f.run_id = r.run_id \
                     WHERE r.name = 'llama-serve' AND f.metric = 'ttft_ms' \
                     AND f.statistic = 'p50' AND f.replicate = -1 \
                     GROUP BY day, f.point_id ORDER BY day, f.point_id";
    for (label, q) in [("one point", trend), ("every point", any_point)] {
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..7 {
            let t = Instant::now();
            rows = w.query(q).unwrap().rows.len();
            times.push(ms(t.elapsed()));
        }
        let first = times[0];
        times.sort_by(f64::total_cmp);
        println!(
            "trend query (p50 TTFT of one benchmark by day, {label}) over {runs} runs: \
             first {first:.1} ms, median {:.1} ms ({rows} rows)",
            times[times.len() / 2]
        );
    }

    // 1,000,000 request records as one samples file (the raw side of a run).
    let n = 1_000_000usize;
    let mut rng = Mix(7);
    let t2 = Instant::now();
    let table = Table::new()
        .with("index", Column::I64((0..n as i64).collect()))
        .with(
            "scheduled_ns",
            Column::I64((0..n as i64).map(|i| i * 1_000_000).collect()),
        )
        .with(
            "ttft_ms",
            Column::F64((0..n).map(|_| 40.0 + 20.0 * rng.next()).collect()),
        )
        .with(
            "e2e_ms",
            Column::F64((0..n).map(|_| 900.0 + 300.0 * rng.next()).collect()),
        )
        .with(
            "output_tokens",
            Column::I64((0..n).map(|i| 100 + (i % 50) as i64).collect()),
        )
        .with("ok", Column::Bool(vec![true; n]));
    let bytes = table.to_parquet(&[("yardstick.kind", "serve")]).unwrap();
    yardstick_store::fsutil::write_atomic(&dir.join("requests.parquet"), &bytes).unwrap();
    println!(
        "parquet: {n} request records (6 columns, zstd) built, encoded and written: {:.0} ms, \
         {:.1} MB",
        ms(t2.elapsed()),
        bytes.len() as f64 / 1e6
    );

    let t3 = Instant::now();
    let report = yardstick_store::export::export_parquet(&mut w, &dir.join("lake")).unwrap();
    println!(
        "export: {} facts into {} Hive partitions: {:.0} ms",
        report.facts,
        report.files.len(),
        ms(t3.elapsed())
    );
    println!(
        "database: {:.1} MB",
        std::fs::metadata(&db).map_or(0, |m| m.len()) as f64 / 1e6
    );
}
