//! `yardstick bench train` through the built binary: the documented JSON keys, FLOPs per step
//! equal to the hand count, the loss going down, the metric-protocol file, running it as a
//! `bench exec` workload, and bad input.
#![cfg(feature = "train")]

use crate::common::yardstick;

use std::process::{Output, Stdio};

use serde_json::Value;

fn run(args: &[&str]) -> Output {
    yardstick()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Tiny preset by hand: V 256, H 64, L 2, S 64, batch 8. Forward FLOPs per token: per layer
/// QKV 2·3·64² + scores 2·64·64 + values 2·64·64 + output 2·64² + MLP 2·8·64² = 114,688, two
/// layers 229,376, head 2·64·256 = 32,768 → 262,144; training ×3, 512 tokens per step.
const TINY_FLOPS_PER_STEP: f64 = 3.0 * 262_144.0 * 512.0;

#[test]
fn fifty_tiny_steps_report_the_documented_keys_and_the_loss_falls() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("steps.jsonl");
    let o = run(&[
        "bench",
        "train",
        "--json",
        "--steps",
        "50",
        "--seed",
        "3",
        "--threads",
        "1",
        "--peak-flops",
        "1e11",
        "--memory-bw",
        "1e10",
        "--warmup-steps",
        "5",
        "--metrics",
        metrics.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    crate::schema_cli::assert_conforms("bench-train", &v);
    assert_eq!(v["steps"], 50);
    assert_eq!(v["measured_steps"], 45);
    assert_eq!(v["flops_per_step"], TINY_FLOPS_PER_STEP);
    assert_eq!(v["model"]["flops_per_step"], TINY_FLOPS_PER_STEP);
    for (k, q) in [
        ("tokens_per_s", "p50"),
        ("tokens_per_s", "p10"),
        ("step_time_s", "p50"),
        ("step_time_s", "p90"),
        ("mfu", "p50"),
    ] {
        assert!(v[k][q].as_f64().unwrap() > 0.0, "{k}.{q}: {}", v[k]);
    }
    // MFU is the exact FLOP count over the median step against the given peak.
    let mfu = v["mfu"]["p50"].as_f64().unwrap();
    let step = v["step_time_s"]["p50"].as_f64().unwrap();
    assert!((mfu - TINY_FLOPS_PER_STEP / step / 1e11).abs() < 1e-9 * mfu.max(1.0));
    assert_eq!(v["mfu"]["estimator"], "reported");
    // Tokens per step are batch × seq: the aggregate is 512 / mean step time.
    let mean = v["step_time_s"]["mean"].as_f64().unwrap();
    let agg = v["tokens_per_s"]["aggregate"].as_f64().unwrap();
    assert!((agg - 512.0 / mean).abs() < 1e-6 * agg);
    let (first, last) = (
        v["loss"]["first"].as_f64().unwrap(),
        v["loss"]["last"].as_f64().unwrap(),
    );
    assert!(last < first - 1.0, "loss {first} → {last}");
    assert!(v["loss"]["slope"].as_f64().unwrap() < 0.0);
    assert_eq!(v["loss"]["rising"], false);
    // Every step went to the metrics file as a protocol line.
    let text = std::fs::read_to_string(&metrics).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 50);
    assert_eq!(lines[49]["step"], 49);
    assert_eq!(lines[0]["tokens"], 512.0);
    assert_eq!(lines[0]["flops"], TINY_FLOPS_PER_STEP);
    // The roofline: the trainer's FLOPs and bytes per step against the given ceilings
    // (ridge 1e11 / 1e10 = 10 FLOP/B), with the evidence.
    let b = &v["bottleneck"];
    let bytes = v["bytes_per_step"].as_f64().unwrap();
    assert_eq!(v["model"]["bytes_per_step"].as_f64().unwrap(), bytes);
    assert_eq!(lines[0]["bytes"].as_f64().unwrap(), bytes);
    let p = &b["placement"];
    assert!((p["intensity"].as_f64().unwrap() - TINY_FLOPS_PER_STEP / bytes).abs() < 1e-9);
    assert_eq!(p["ridge"], 10.0);
    let expected = if TINY_FLOPS_PER_STEP / bytes < 10.0 {
        "memory"
    } else {
        "compute"
    };
    assert_eq!(b["bottleneck"], expected, "{b}");
    assert!(
        b["evidence"][0]
            .as_str()
            .unwrap()
            .contains("ridge point 10.00")
    );
    assert!(b["ceilings_source"].as_str().unwrap().contains("given"));
}

#[test]
fn the_trainer_is_a_metric_protocol_workload_for_bench_exec() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_yardstick");
    let o = run(&[
        "bench",
        "exec",
        "--json",
        "--runs",
        "1",
        "--warmup-steps",
        "2",
        "--model-params",
        "114688",
        "--layers",
        "2",
        "--hidden",
        "64",
        "--seq-len",
        "64",
        "--peak-flops",
        "1e11",
        "--logs",
        dir.path().join("logs").to_str().unwrap(),
        "--",
        bin,
        "bench",
        "train",
        "--steps",
        "8",
        "--threads",
        "1",
        "--peak-flops",
        "1e11",
        "--memory-bw",
        "1e10",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &v["runs"][0]["training"];
    assert_eq!(t["steps"], 8);
    // The trainer reports its own FLOPs; the transformer-aware estimator with N = matmul
    // parameters (12·2·64² + 256·64 = 114,688) agrees exactly.
    let by = &t["mfu"]["by_estimator"];
    assert_eq!(by["reported"]["flops_per_step"], TINY_FLOPS_PER_STEP);
    assert_eq!(by["transformer"]["flops_per_step"], TINY_FLOPS_PER_STEP);
}

#[test]
fn bad_settings_exit_2() {
    for args in [
        &["bench", "train", "--preset", "huge"][..],
        &["bench", "train", "--steps", "0", "--peak-flops", "1e9"],
        &["bench", "train", "--peak-flops", "0"],
        &["bench", "train", "--threads", "0", "--peak-flops", "1e9"],
        &[
            "bench",
            "train",
            "--rank",
            "2",
            "--world-size",
            "2",
            "--peak-flops",
            "1e9",
        ],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("hint:"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn ranks_come_from_the_launchers_variables_and_tag_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let lines = |rank: &str, env: &[(&str, &str)], flags: &[&str]| -> Vec<Value> {
        let file = dir.path().join(format!("metrics-{rank}.jsonl"));
        let mut c = yardstick();
        c.args([
            "bench",
            "train",
            "--json",
            "--steps",
            "3",
            "--threads",
            "1",
            "--peak-flops",
            "1e11",
            "--memory-bw",
            "1e10",
            "--metrics",
        ])
        .arg(&file)
        .args(flags)
        .stdin(Stdio::null());
        for k in ["RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"] {
            c.env_remove(k);
        }
        c.envs(env.iter().copied());
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // torchrun's variables, Slurm's, the flags; and none: no rank at all.
    for (rank, env, flags) in [
        ("1", &[("RANK", "1"), ("WORLD_SIZE", "2")][..], &[][..]),
        ("0", &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")], &[]),
        (
            "3",
            &[("RANK", "0"), ("WORLD_SIZE", "1")],
            &["--rank", "3", "--world-size", "4"],
        ),
    ] {
        let got = lines(rank, env, flags);
        assert_eq!(got.len(), 3);
        for l in &got {
            assert_eq!(l["rank"].to_string(), rank, "{l}");
            assert!(l["world_size"].as_u64().unwrap() >= 2, "{l}");
        }
    }
    let alone = lines("none", &[], &[]);
    assert!(
        alone
            .iter()
            .all(|l| l.get("rank").is_none_or(Value::is_null) && l["world_size"] == 1)
    );
    // A rank variable that is not a number is bad input.
    let o = yardstick()
        .args([
            "bench",
            "train",
            "--steps",
            "2",
            "--peak-flops",
            "1e9",
            "--memory-bw",
            "1e9",
        ])
        .env("RANK", "zero")
        .env("WORLD_SIZE", "2")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("$RANK"), "{}", stderr(&o));
}
