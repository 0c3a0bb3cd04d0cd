//! `summary.json` written before its analysis sections became types still reads, into the
//! typed sections, and writes back as the same JSON; a section in a shape this version does not
//! read (written by another version) is left out without making the summary unreadable. The
//! fixture is under `tests/fixtures/summaries` (see its README).

use serde_json::{Value, json};
use yardstick_analysis::roofline::{Bottleneck, Roof};
use yardstick_store::summary::RunSummary;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/summaries/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn analysis_sections_of_todays_format_read_typed_and_write_back_the_same() {
    let bytes = fixture("analyses.json");
    let s: RunSummary = serde_json::from_slice(&bytes).unwrap();

    let profiles = s.profiles.as_ref().expect("profiles");
    assert_eq!(profiles.len(), 2);
    let p = &profiles["e2e.0.train"];
    assert_eq!(p.dir, "profile/e2e.0.train/");
    assert_eq!(
        (p.step_time_s_profiled, p.step_time_s_unprofiled, p.overhead),
        (Some(0.06), Some(0.05), Some(1.2))
    );
    assert_eq!(p.error, None);
    let a = p.analysis.as_ref().expect("analysis");
    assert_eq!(
        (a.tool.as_str(), a.steps, a.step_s),
        ("torch", 2, Some(0.06))
    );
    assert_eq!(a.step_ids, [7, 8]);
    assert_eq!(a.phases[1].name, "forward");
    assert_eq!(a.categories[0].s_per_step, 0.04);
    assert_eq!(a.comm_overlap, Some(0.25));
    assert_eq!(
        (a.top[0].name.as_str(), a.top[0].calls),
        ("aten::mm", Some(24))
    );
    assert_eq!(a.top[1].calls, None);
    let failed = &profiles["e2e.1.train"];
    assert_eq!(failed.analysis, None);
    assert_eq!(
        failed.error.as_deref(),
        Some("no trace file was written under the profile directory")
    );
    assert_eq!((failed.step_time_s_profiled, failed.overhead), (None, None));

    let eval = s.eval.as_ref().expect("eval");
    assert_eq!(eval.len(), 3);
    let arith = &eval[0];
    assert_eq!(arith.point, "component.0.eval/arith");
    assert_eq!((arith.task.as_deref(), arith.n), (Some("arith"), Some(4)));
    assert_eq!((arith.replicates, arith.failed_replicates), (3, 0));
    assert_eq!(arith.accuracy.as_deref(), Some(&[0.75; 3][..]));
    assert_eq!(arith.determinism.as_deref(), Some(&[1.0; 3][..]));
    assert!(arith.replicates_agree);
    let ci = arith.wilson_ci_first_replicate.unwrap();
    assert_eq!((ci.lo, ci.hi), (0.3006418425814207, 0.9544127391902597));
    assert_eq!(arith.confidence, Some(0.95));
    assert_eq!(
        (
            arith.perplexity.as_ref(),
            arith.perplexity_unsupported.as_ref()
        ),
        (None, None)
    );
    let format = &eval[1];
    assert_eq!(
        (format.failed_replicates, format.replicates_agree),
        (1, false)
    );
    // An interval end that was not finite was written as null: read back as NaN.
    let ci = format.wilson_ci_first_replicate.unwrap();
    assert!(ci.hi.is_nan() && ci.lo == 0.3423802275066118);
    let ppl = &eval[2];
    assert_eq!(
        (ppl.task.as_ref(), ppl.n, ppl.accuracy.as_ref()),
        (None, Some(0), None)
    );
    assert_eq!(ppl.wilson_ci_first_replicate, None);
    assert_eq!(
        ppl.perplexity_unsupported.as_deref(),
        Some("the server does not return prompt logprobs")
    );

    let b = s.bottlenecks.as_ref().expect("bottlenecks");
    let c = b.ceilings.as_ref().expect("ceilings");
    assert_eq!(
        (c.peak_flops, c.memory_bw, c.link_bw),
        (131e9, 14.6e9, None)
    );
    assert_eq!(c.label, "this run's micro layer");
    let src = b.ceilings_source.as_ref().expect("ceilings_source");
    assert_eq!(
        (src.peak.as_str(), src.memory.as_str()),
        ("gemm.f32.2048", "memory.triad")
    );
    assert_eq!(src.note, None);
    assert_eq!(b.points.len(), 2);
    let train = &b.points[0];
    assert_eq!(train.point, "e2e.0.train");
    assert_eq!(train.classification.bottleneck, Bottleneck::Compute);
    assert_eq!(train.classification.evidence.len(), 2);
    let pl = train.classification.placement.as_ref().expect("placement");
    assert_eq!(
        (pl.roof, pl.intensity, pl.efficiency),
        (Roof::Compute, 131.0, Some(0.2))
    );
    assert_eq!(train.observation.flops, Some(1.31e9));
    assert_eq!(train.observation.wall_s, Some(20.0));
    assert_eq!(train.devices, 1);
    let cp = train.control_plane.as_ref().expect("control_plane");
    assert_eq!(
        (cp.startup_s, cp.teardown_s, cp.wall_s, cp.share),
        (1.5, 0.1, 20.0, 0.08)
    );
    assert_eq!(train.input, None);
    let fed = &b.points[1];
    assert_eq!(fed.classification.bottleneck, Bottleneck::Input);
    assert_eq!(
        (
            fed.classification.placement.as_ref(),
            fed.control_plane.as_ref()
        ),
        (None, None)
    );
    assert_eq!((fed.devices, fed.observation.wall_s), (2, None));
    let input = fed.input.as_ref().expect("input");
    assert_eq!(input.supply_point, "component.0.dataloader/warm");
    assert_eq!((input.demand_samples_per_s, input.headroom), (1600.0, 0.5));

    // Written again: the same keys, the same nesting, the same nulls (the NaN interval end
    // is null again).
    let original: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), original);
    let again = serde_json::to_vec_pretty(&s).unwrap();
    let back: RunSummary = serde_json::from_slice(&again).unwrap();
    assert_eq!(back.bottlenecks, s.bottlenecks);
    assert_eq!(back.profiles, s.profiles);
}

#[test]
fn an_analysis_section_in_an_unknown_shape_is_left_out_and_the_summary_still_reads() {
    let original: Value = serde_json::from_slice(&fixture("analyses.json")).unwrap();
    let read = |edit: &dyn Fn(&mut Value)| {
        let mut v = original.clone();
        edit(&mut v);
        serde_json::from_value::<RunSummary>(v).expect("the summary still reads")
    };

    let s = read(&|v| {
        v["eval"] = json!({"kept": true});
        v["bottlenecks"]["points"] = json!("not a list");
        v["profiles"] = json!(["e2e.0.train"]);
    });
    assert_eq!(
        (&s.eval, &s.bottlenecks, &s.profiles),
        (&None, &None, &None)
    );
    assert_eq!(s.points.len(), 2);
    assert_eq!(s.failures().len(), 1);

    // One section unreadable, the others read.
    let s = read(&|v| v["bottlenecks"]["points"][0]["bottleneck"] = json!("gremlins"));
    assert_eq!(s.bottlenecks, None);
    assert_eq!(s.eval.map(|e| e.len()), Some(3));
    assert_eq!(s.profiles.map(|p| p.len()), Some(2));

    // A profile's analysis in another shape: that entry keeps its other fields.
    let s = read(&|v| v["profiles"]["e2e.0.train"]["analysis"] = json!({"tool": 3}));
    let p = &s.profiles.as_ref().unwrap()["e2e.0.train"];
    assert_eq!((p.analysis.as_ref(), p.overhead), (None, Some(1.2)));

    // Null sections (as another writer might put them) are absent.
    let s = read(&|v| {
        v["eval"] = Value::Null;
        v["bottlenecks"] = Value::Null;
        v["profiles"] = Value::Null;
    });
    assert_eq!((s.eval, s.bottlenecks, s.profiles), (None, None, None));
}
