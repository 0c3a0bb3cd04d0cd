//! Shared by the store's integration tests: a throwaway PostgreSQL cluster and fixture runs.
#![allow(dead_code)] // each test module uses a different part

pub use yardstick_testsupport::pg;

use yardstick_store::warehouse::{FactRow, PointRow, ReplicateRow, RunRow, Warehouse};

/// Everything the warehouse stores about one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFixture {
    pub run: RunRow,
    pub points: Vec<PointRow>,
    pub replicates: Vec<ReplicateRow>,
    pub facts: Vec<FactRow>,
}

/// A serving run with two points × three replicates, per-replicate and aggregate facts, and the
/// awkward values: NULL CIs, infinities, tiny and huge numbers, non-ASCII text, nested params.
pub fn fixture(run_id: &str, name: &str, profile: Option<&str>, started_at: &str) -> RunFixture {
    let run = RunRow {
        run_id: run_id.into(),
        name: name.into(),
        status: yardstick_store::RunStatus::Complete,
        mode: Some("publication".into()),
        spec_sha256: format!("{name:0>64}"),
        machine_profile: profile.map(str::to_string),
        env_sha256: Some("e".repeat(64)),
        started_at: started_at.into(),
        ended_at: Some(started_at.into()),
        tool_version: "0.1.0".into(),
        git_commit: None,
        location: format!("/store/runs/{run_id}"),
    };
    let mut points = Vec::new();
    let mut replicates = Vec::new();
    let mut facts = Vec::new();
    for (pi, c) in [1u32, 16].into_iter().enumerate() {
        let point_id = format!("component.0/D(100,100)/c={c}");
        points.push(PointRow {
            run_id: run_id.into(),
            point_id: point_id.clone(),
            layer: "component".into(),
            kind: "serve".into(),
            params: serde_json::json!({
                "scenario": "D(100,100)", "concurrency": c, "slo": {"ttftMs": 500.5},
                "labels": ["naïve", "日本"]
            }),
        });
        for r in 0..3u32 {
            let artifact = format!("samples/p{pi}-r{r}.parquet");
            replicates.push(ReplicateRow {
                run_id: run_id.into(),
                point_id: point_id.clone(),
                replicate: r,
                status: yardstick_store::ReplicateStatus::Complete,
                started_at: started_at.into(),
                ended_at: Some(started_at.into()),
                artifact: Some(artifact.clone()),
            });
            for (metric, unit, base) in [("ttft_ms", "ms", 51.0), ("e2e_ms", "ms", 1234.5)] {
                for (stat, k) in [("p50", 1.0), ("p99", 1.7)] {
                    facts.push(FactRow {
                        run_id: run_id.into(),
                        point_id: point_id.clone(),
                        replicate: Some(r),
                        metric: metric.into(),
                        statistic: stat.into(),
                        value: base * k + f64::from(c) * 0.1 + f64::from(r) / 3.0,
                        ci_lo: None,
                        ci_hi: None,
                        unit: unit.into(),
                        n: 500,
                        artifact: Some(artifact.clone()),
                        row_group: Some(r),
                    });
                }
            }
        }
        facts.push(FactRow {
            run_id: run_id.into(),
            point_id: point_id.clone(),
            replicate: None,
            metric: "ttft_ms".into(),
            statistic: "p50".into(),
            value: 51.1 + f64::from(c) * 0.1,
            ci_lo: Some(50.000_000_000_000_01),
            ci_hi: Some(f64::INFINITY),
            unit: "ms".into(),
            n: 1500,
            artifact: None,
            row_group: None,
        });
        facts.push(FactRow {
            run_id: run_id.into(),
            point_id,
            replicate: None,
            metric: "output_token_throughput".into(),
            statistic: "mean".into(),
            value: 1.0e-300 + 123_456.789,
            ci_lo: Some(-0.0),
            ci_hi: Some(1.0e300),
            unit: "tok/s".into(),
            n: u64::from(u32::MAX) * 4,
            artifact: None,
            row_group: None,
        });
    }
    RunFixture {
        run,
        points,
        replicates,
        facts,
    }
}

/// Writes a fixture the way `yardstick run` does: run, points, replicates, facts.
pub fn write(w: &mut dyn Warehouse, f: &RunFixture) {
    w.upsert_run(&f.run).unwrap();
    w.upsert_points(&f.points).unwrap();
    for r in &f.replicates {
        w.upsert_replicate(r).unwrap();
    }
    w.upsert_facts(&f.facts).unwrap();
}

/// Reads back everything stored about `run_id`.
pub fn read(w: &mut dyn Warehouse, run_id: &str) -> RunFixture {
    RunFixture {
        run: w.run(run_id).unwrap().expect("the run exists"),
        points: w.points(run_id).unwrap(),
        replicates: w.replicates(run_id).unwrap(),
        facts: w.facts(run_id).unwrap(),
    }
}

/// The fixture as the warehouse returns it: canonical times, canonical fact order.
pub fn canonical(f: &RunFixture) -> RunFixture {
    let t = |s: &str| yardstick_store::warehouse::canonical_time(s).unwrap();
    let mut c = f.clone();
    c.run.started_at = t(&f.run.started_at);
    c.run.ended_at = f.run.ended_at.as_deref().map(t);
    for r in &mut c.replicates {
        r.started_at = t(&r.started_at);
        r.ended_at = r.ended_at.as_deref().map(t);
    }
    // -0.0 is stored as 0.0 (see `stored_f64`).
    for f in &mut c.facts {
        for x in [Some(&mut f.value), f.ci_lo.as_mut(), f.ci_hi.as_mut()]
            .into_iter()
            .flatten()
        {
            if *x == 0.0 {
                *x = 0.0;
            }
        }
    }
    c.facts.sort_by(|a, b| {
        let k = |f: &FactRow| {
            (
                f.point_id.clone(),
                f.replicate.map_or(-1, i64::from),
                f.metric.clone(),
                f.statistic.clone(),
            )
        };
        k(a).cmp(&k(b))
    });
    c
}
