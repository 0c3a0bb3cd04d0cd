//! JUnit XML, so any CI shows regressions natively: one test case per (point, metric). With a
//! gate result, the gated metrics: FAIL is a `<failure>`, INCONCLUSIVE a `<skipped>` with the
//! reason, PASS and WARN pass (WARN says so in `<system-out>`). Without one, the run's headline
//! metrics pass and a point whose replicates failed is a `<failure>`. No timestamps or
//! durations, so the file is a deterministic function of its inputs. Numbers in messages are in
//! human units ([`format::human`]).

use std::fmt::Write;

use crate::format::{self, xml_escape as x};
use crate::model::Report;
use crate::tables::headline_metrics;

struct Case {
    class: String,
    name: String,
    outcome: Outcome,
    out: String,
}

enum Outcome {
    Pass,
    Failure { message: String, body: String },
    Skipped { message: String },
}

/// Renders the report as JUnit XML.
pub fn render(report: &Report) -> String {
    let r = &report.run;
    let suite = &r.run.name;
    let mut cases = Vec::new();
    if let Some(g) = &report.gate {
        for m in &g.rows {
            let unit = format::metric_unit(&m.metric, &m.unit);
            let out = format!(
                "baseline {} candidate {} change {} {} {} tolerance {}{}",
                format::human(m.baseline, unit),
                format::human(m.candidate, unit),
                format::delta_pct(m.ratio),
                format::level_header(g.level),
                format::delta_ci(m.ci),
                m.tolerance_label(),
                m.verdict
                    .as_deref()
                    .map_or(String::new(), |v| format!("; {v}"))
            );
            let reason = m.reason.clone().unwrap_or_default();
            let outcome = match m.verdict.as_deref() {
                Some("FAIL") => Outcome::Failure {
                    message: format!("FAIL: {reason}"),
                    body: out.clone(),
                },
                Some("INCONCLUSIVE") => Outcome::Skipped {
                    message: format!("INCONCLUSIVE: {reason}"),
                },
                _ => Outcome::Pass,
            };
            cases.push(Case {
                class: format!("{suite}.{}", m.point),
                name: m.label(),
                outcome,
                out: if reason.is_empty() {
                    out
                } else {
                    format!("{out}\n{reason}")
                },
            });
        }
    } else {
        for p in &r.points {
            let failed: Vec<String> = p
                .failed_replicates()
                .map(|f| {
                    format!(
                        "replicate {}: {}",
                        f.replicate,
                        f.error.as_deref().unwrap_or("failed")
                    )
                })
                .collect();
            if !failed.is_empty() || p.metrics.is_empty() {
                cases.push(Case {
                    class: format!("{suite}.{}", p.id),
                    name: "replicates".into(),
                    outcome: Outcome::Failure {
                        message: if failed.is_empty() {
                            "no results stored for this point".into()
                        } else {
                            format!(
                                "{} of {} replicates failed",
                                failed.len(),
                                p.replicates.len()
                            )
                        },
                        body: failed.join("\n"),
                    },
                    out: String::new(),
                });
            }
            for m in headline_metrics(p) {
                cases.push(Case {
                    class: format!("{suite}.{}", p.id),
                    name: format!("{} {}", m.metric, m.statistic),
                    outcome: Outcome::Pass,
                    out: {
                        let unit = format::metric_unit(&m.metric, &m.unit);
                        format!(
                            "{}, {} {}, n={}",
                            format::human(m.mean, unit),
                            format::level_header(r.level),
                            format::human_ci(m.mean, m.ci, unit),
                            m.n
                        )
                    },
                });
            }
        }
    }
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failure { .. }))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skipped { .. }))
        .count();
    let mut s = String::new();
    let _ = writeln!(s, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        s,
        r#"<testsuites name="yardstick" tests="{}" failures="{failures}" errors="0" skipped="{skipped}">"#,
        cases.len()
    );
    let _ = writeln!(
        s,
        r#"  <testsuite name="{}" tests="{}" failures="{failures}" errors="0" skipped="{skipped}">"#,
        x(suite),
        cases.len()
    );
    let _ = writeln!(s, "    <properties>");
    let mut props = vec![
        ("run_id", r.run.run_id.clone()),
        (
            "machine_profile",
            r.run.machine_profile.clone().unwrap_or_default(),
        ),
        ("yardstick_version", r.run.tool_version.clone()),
    ];
    if let Some(g) = &report.gate {
        props.push(("baseline_run", g.baseline_run.clone()));
        if let Some(v) = &g.verdict {
            props.push(("verdict", v.clone()));
        }
    }
    for (k, v) in props {
        let _ = writeln!(s, r#"      <property name="{k}" value="{}"/>"#, x(&v));
    }
    let _ = writeln!(s, "    </properties>");
    for c in &cases {
        let _ = writeln!(
            s,
            r#"    <testcase classname="{}" name="{}">"#,
            x(&c.class),
            x(&c.name)
        );
        match &c.outcome {
            Outcome::Pass => {}
            Outcome::Failure { message, body } => {
                let _ = writeln!(
                    s,
                    r#"      <failure message="{}" type="regression">{}</failure>"#,
                    x(message),
                    x(body)
                );
            }
            Outcome::Skipped { message } => {
                let _ = writeln!(s, r#"      <skipped message="{}"/>"#, x(message));
            }
        }
        if !c.out.is_empty() {
            let _ = writeln!(s, "      <system-out>{}</system-out>", x(&c.out));
        }
        let _ = writeln!(s, "    </testcase>");
    }
    let _ = writeln!(s, "  </testsuite>");
    let _ = writeln!(s, "</testsuites>");
    s
}
