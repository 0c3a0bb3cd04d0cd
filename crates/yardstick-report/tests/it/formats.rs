//! Every format rendered from a fixed report: Markdown and JUnit against insta snapshots, the
//! workbook reopened with calamine, CSV files parsed back, the terminal table checked for its
//! columns and for emitting colour codes only as ANSI escapes.

use crate::fixture;

use calamine::{Data, Reader, Xlsx};

#[test]
fn markdown_of_a_run() {
    insta::assert_snapshot!(yardstick_report::markdown::render(&fixture::report(false)));
}

#[test]
fn markdown_of_a_gate_result() {
    insta::assert_snapshot!(yardstick_report::markdown::render(&fixture::report(true)));
}

#[test]
fn junit_of_a_run_fails_points_with_failed_replicates() {
    let xml = yardstick_report::junit::render(&fixture::report(false));
    assert!(xml.contains(r#"failures="1""#), "{xml}");
    insta::assert_snapshot!(xml);
}

#[test]
fn junit_of_a_gate_result_maps_verdicts() {
    let xml = yardstick_report::junit::render(&fixture::report(true));
    // FAIL is a failure, INCONCLUSIVE a skip with its reason; PASS and WARN pass.
    assert!(
        xml.contains(r#"tests="4" failures="1" errors="0" skipped="1""#),
        "{xml}"
    );
    assert!(xml.contains(r#"<skipped message="INCONCLUSIVE: CI [1.020, 1.080] straddles"#));
    insta::assert_snapshot!(xml);
}

#[test]
fn workbook_reopens_with_summary_and_a_sheet_per_point() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.xlsx");
    yardstick_report::xlsx::write(&fixture::report(true), &path).unwrap();
    let mut wb: Xlsx<_> = calamine::open_workbook(&path).unwrap();
    let names = wb.sheet_names();
    assert_eq!(
        names,
        [
            "Summary",
            "Gate",
            "Latency",
            "Scaling",
            "P1 concurrency=1",
            "P2 concurrency=4",
            "P3 world_size=1",
            "P4 world_size=2",
            "Environment",
            "Telemetry"
        ]
    );
    let summary = wb.worksheet_range("Summary").unwrap();
    assert_eq!(summary.get_value((0, 0)), Some(&Data::String("Run".into())));
    assert_eq!(
        summary.get_value((2, 1)),
        Some(&Data::String("01JREPORTFIXTURE000000000B".into()))
    );
    // The summary table's first row: request throughput of the first point, a number.
    let start = (0..summary.height() as u32)
        .find(|r| summary.get_value((*r, 0)) == Some(&Data::String("point".into())))
        .expect("summary header");
    assert_eq!(
        summary.get_value((start + 1, 1)),
        Some(&Data::String("request_throughput".into()))
    );
    assert_eq!(summary.get_value((start + 1, 3)), Some(&Data::Float(8.1)));
    // A point sheet: every statistic with replicate columns.
    let p1 = wb.worksheet_range("P1 concurrency=1").unwrap();
    assert_eq!(p1.get_value((1, 7)), Some(&Data::String("r0".into())));
    assert_eq!(
        p1.get_value((2, 0)),
        Some(&Data::String("request_throughput".into()))
    );
    let gate = wb.worksheet_range("Gate").unwrap();
    assert!(
        gate.rows()
            .any(|r| r.iter().any(|c| c == &Data::String("FAIL".into())))
    );
}

#[test]
fn csv_has_one_file_per_table() {
    let dir = tempfile::tempdir().unwrap();
    let report = fixture::report(true);
    let files =
        yardstick_report::csv::write_dir(&yardstick_report::tables::all(&report), dir.path())
            .unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "run.csv",
            "summary.csv",
            "gate.csv",
            "latency.csv",
            "scaling.csv",
            "point-01.csv",
            "point-02.csv",
            "point-03.csv",
            "point-04.csv",
            "environment.csv",
            "telemetry.csv"
        ]
    );
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let mut lines = summary.lines();
    assert_eq!(
        lines.next(),
        Some("point,metric,statistic,mean,ci_lo,ci_hi,ci_half_width_pct,unit,n")
    );
    // The point id has a comma, so it is quoted; numbers keep full precision.
    let first = lines.next().unwrap();
    assert!(
        first.starts_with(
            "\"component.0.serve/D(16,8)/concurrency=1\",request_throughput,value,8.1,7.8999999999999995,"
        ),
        "{first}"
    );
    assert!(first.ends_with(",req/s,3"), "{first}");
    // Scaling: 18 500 tok/s on 2 ranks against 10 000 on 1 is 92.5 % efficient.
    let scaling = std::fs::read_to_string(dir.path().join("scaling.csv")).unwrap();
    assert!(
        scaling.contains("\r\n2,tokens_per_s,18500,0.925\r\n"),
        "{scaling}"
    );
}

#[test]
fn latency_table_puts_the_normal_p99_beside_the_empirical() {
    let report = fixture::report(false);
    let t = yardstick_report::tables::latency(&report.run).unwrap();
    let ttft = &t.rows[0];
    assert_eq!(ttft[1].display(), "ttft_ms");
    let (yardstick_report::tables::Cell::Num(p99), yardstick_report::tables::Cell::Num(normal)) =
        (&ttft[7], &ttft[8])
    else {
        panic!("numbers expected: {ttft:?}")
    };
    // An exponential tail: the normal assumption understates p99.
    assert!(normal < p99, "normal {normal} empirical {p99}");
}

#[test]
fn terminal_table_has_cis_deltas_and_verdicts() {
    let text = yardstick_report::terminal::render(&fixture::report(true));
    let plain = strip_ansi(&text);
    assert!(text.contains("\x1b[1;31mFAIL\x1b[0m"), "FAIL is red");
    assert!(plain.contains("95 % CI"));
    assert!(plain.contains("+29.5 %"), "{plain}");
    assert!(plain.contains("[+27.0, +31.0] %"), "{plain}");
    assert!(
        plain.contains("gate: FAIL (1 PASS, 1 WARN, 1 INCONCLUSIVE, 1 FAIL)"),
        "{plain}"
    );
    assert!(plain.contains("replicate 1 failed"), "{plain}");
    // Columns line up: every row of the summary table is as wide as its header or narrower.
    let header = plain.lines().find(|l| l.starts_with("POINT")).unwrap();
    let mean_col = header.find("MEAN").unwrap() + "MEAN".len();
    let row = plain
        .lines()
        .find(|l| l.contains("request_throughput value"))
        .unwrap();
    assert_eq!(&row[mean_col - "8.10 req/s".len()..mean_col], "8.10 req/s");
    // Human units: a peak RSS of 1e9 bytes reads as gigabytes, the interval as a percentage.
    assert!(plain.contains("1.00 GB"), "{plain}");
    assert!(plain.contains("± 2.5 %"), "{plain}");
}

/// The report without ANSI styles.
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in text.chars() {
        match (esc, c) {
            (false, '\x1b') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

#[test]
fn terminal_table_of_a_gate_result() {
    let text = strip_ansi(&yardstick_report::terminal::render(&fixture::report(true)));
    insta::assert_snapshot!(text);
}

/// The structure of an HTML page: its headings, figure captions, notes, each table's header
/// row and first body row, and how many SVG plots it holds (the SVG itself is plotters'
/// business, and the whole page too long to review).
fn html_outline(page: &str) -> String {
    let mut out = Vec::new();
    let mut rest = page;
    let inner = |s: &str, close: &str| -> String {
        let body = s.split(close).next().unwrap_or("");
        // Drop nested tags (badges, code).
        let mut text = String::new();
        let mut in_tag = false;
        for c in body.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        text.replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let tag_end = rest.find('>').unwrap_or(rest.len() - 1);
        let tag = &rest[1..tag_end];
        let body = &rest[tag_end + 1..];
        let name = tag.split([' ', '\n']).next().unwrap_or("");
        match name {
            "h1" | "h2" | "h3" | "figcaption" | "summary" => {
                out.push(format!("{name}: {}", inner(body, &format!("</{name}>"))));
            }
            "div"
                if tag.starts_with("div class=\"card") && !tag.starts_with("div class=\"cards") =>
            {
                let part = |class: &str| {
                    body.split(&format!("<div class=\"{class}\">"))
                        .nth(1)
                        .map(|b| inner(b, "</div>"))
                        .unwrap_or_default()
                };
                let class = tag
                    .trim_start_matches("div class=\"card")
                    .trim_end_matches('"')
                    .trim();
                out.push(format!(
                    "  card{}: {} = {} ({})",
                    if class.is_empty() {
                        String::new()
                    } else {
                        format!(".{class}")
                    },
                    part("k"),
                    part("v"),
                    part("s")
                ));
            }
            "p" if tag.contains("class=\"note\"") || tag.contains("class=\"warn\"") => {
                out.push(format!("p.note: {}", inner(body, "</p>")));
            }
            "thead" => {
                let head = body.split("</thead>").next().unwrap_or("");
                let cells: Vec<String> = head
                    .split("<th>")
                    .skip(1)
                    .map(|c| inner(c, "</th>"))
                    .collect();
                out.push(format!("  table: {}", cells.join(" | ")));
                let first = body
                    .split("<tbody>")
                    .nth(1)
                    .and_then(|b| b.split("</tr>").next())
                    .unwrap_or("");
                let cells: Vec<String> = first
                    .split("<td")
                    .skip(1)
                    .map(|c| inner(c.split_once('>').map_or("", |x| x.1), "</td>"))
                    .collect();
                out.push(format!("  first row: {}", cells.join(" | ")));
                // The line under it (the gate's reason), when the row has one.
                let under = body
                    .split("<tbody>")
                    .nth(1)
                    .and_then(|b| b.split("</tr>").nth(1))
                    .and_then(|r| r.trim().strip_prefix("<tr class=\"why\">"));
                if let Some(r) = under {
                    out.push(format!(
                        "  under it: {}",
                        inner(r.split_once('>').map_or("", |x| x.1), "</td>")
                    ));
                }
            }
            _ => {}
        }
        rest = &rest[1..];
    }
    out.push(format!("svg plots: {}", page.matches("<svg").count()));
    out.join("\n")
}

#[test]
fn html_structure_of_a_gate_result() {
    let page = yardstick_report::html::render(&fixture::report(true)).unwrap();
    let outline = html_outline(&page);
    // Numbers people read are in human units, not raw values.
    assert!(outline.contains("8.10 req/s"), "{outline}");
    assert!(outline.contains("10.0k tok/s | 100 %"), "{outline}");
    assert!(outline.contains("step_time_s | p50 | 410 ms"), "{outline}");
    assert_eq!(outline.matches("\n  table: ").count(), 12, "{outline}");
    insta::assert_snapshot!(outline);
}

/// The part of `page` from `from` to the next `to`.
fn between<'a>(page: &'a str, from: &str, to: &str) -> &'a str {
    let start = page
        .find(from)
        .unwrap_or_else(|| panic!("{from:?} not in the page"));
    let rest = &page[start..];
    &rest[..rest.find(to).unwrap_or(rest.len())]
}

#[test]
fn html_gate_table_leads_with_the_verdict_and_puts_each_reason_under_its_row() {
    let report = fixture::report_with_long_gate_rows();
    let page = yardstick_report::html::render(&report).unwrap();
    let gate = between(&page, "<details id=\"gate\">", "</details>");
    // The verdict first; the reason is no column (a 200-character column is what made the
    // table wider than the page).
    let head = between(gate, "<thead>", "</thead>");
    assert!(
        head.starts_with("<thead><tr>\n<th>verdict</th><th>point</th>"),
        "{head}"
    );
    assert!(!head.contains("<th>reason</th>"), "{head}");
    let columns = head.matches("<th>").count();
    assert_eq!(columns, 13, "{head}");
    let body = between(gate, "<tbody>", "</tbody>");
    let rows: Vec<&str> = body.split("</tr>").filter(|r| r.contains("<td")).collect();
    assert_eq!(
        rows.len(),
        2 * report.gate.as_ref().unwrap().rows.len(),
        "{body}"
    );
    for (row, g) in rows.chunks(2).zip(&report.gate.as_ref().unwrap().rows) {
        let (lead, why) = (row[0], row[1]);
        // The row: its verdict badge, its point id in a cell that may break, numbers on one
        // line.
        let verdict = g.verdict.as_deref().unwrap();
        assert!(
            lead.contains("<tr class=\"lead\"><td><span class=\"badge"),
            "{lead}"
        );
        assert!(lead.contains(&format!(">{verdict}</span>")), "{lead}");
        assert!(
            lead.contains(&format!(
                "<td class=\"t\">{}</td>",
                yardstick_report::format::xml_escape(&g.point)
            )),
            "{lead}"
        );
        assert!(lead.contains("<td class=\"n\">"), "{lead}");
        assert!(!lead.contains("to decide"), "{lead}");
        // Under it, the reason in one cell spanning every column, which wraps.
        let reason = yardstick_report::format::xml_escape(g.reason.as_deref().unwrap());
        assert!(reason.chars().count() > 200);
        assert_eq!(
            why.trim(),
            format!("<tr class=\"why\"><td colspan=\"{columns}\">{reason}</td>")
        );
    }
    // The rules that let it fit: text breaks (even inside a long id), numbers do not, and the
    // reason's row wraps.
    let css = yardstick_report::html::CSS;
    for rule in [
        "td{white-space:nowrap}",
        "td.t{white-space:normal;overflow-wrap:anywhere;",
        "tr.why>td{white-space:normal;overflow-wrap:anywhere;",
    ] {
        assert!(css.contains(rule), "{rule} missing from the style sheet");
        assert!(page.contains(rule));
    }
    // A comparison has no verdicts: no verdict column, no line under the rows.
    let mut cmp = fixture::report(true);
    let g = cmp.gate.as_mut().unwrap();
    g.verdict = None;
    for r in &mut g.rows {
        r.verdict = None;
        r.reason = None;
    }
    let page = yardstick_report::html::render(&cmp).unwrap();
    let table = between(&page, "<details id=\"gate\">", "</details>");
    assert!(table.contains("<thead><tr>\n<th>point</th>"), "{table}");
    assert!(!table.contains("<th>verdict</th>") && !table.contains("class=\"why\""));
}

#[test]
fn exporters_are_one_registry_in_writing_order() {
    use yardstick_report::{Artifact, Dest, Shape};
    let names: Vec<&str> = yardstick_report::exporters()
        .iter()
        .map(|e| e.name())
        .collect();
    assert_eq!(names, ["html", "xlsx", "markdown", "junit", "csv", "svg"]);
    let report = fixture::report(true);
    let dir = tempfile::tempdir().unwrap();
    for e in yardstick_report::exporters() {
        assert_eq!(
            yardstick_report::exporter(e.name()).map(|x| x.name()),
            Some(e.name())
        );
        let artifact = e.render(&report).unwrap();
        let dest = dir.path().join(e.name());
        let written = e.write(&report, Dest::Path(&dest)).unwrap();
        assert!(written.iter().all(|w| w.format == e.name()));
        match (e.shape(), artifact) {
            (Shape::File { .. }, Artifact::Text(t)) => {
                assert_eq!(written.len(), 1);
                assert_eq!(written[0].bytes, t.len() as u64);
                assert_eq!(std::fs::read_to_string(&dest).unwrap(), t);
                assert_eq!(e.value_name(), "FILE");
            }
            (Shape::File { stdout: false }, Artifact::Binary(b)) => {
                assert_eq!(std::fs::read(&dest).unwrap(), b);
                assert_eq!(&b[..2], b"PK");
            }
            (Shape::Directory, Artifact::Files(files)) if e.name() == "svg" => {
                // Every figure of the HTML report, one file each, named by its section.
                let figures: usize = yardstick_report::html::sections(&report)
                    .unwrap()
                    .iter()
                    .map(|s| s.figures.len())
                    .sum();
                assert_eq!(written.len(), figures);
                assert!(
                    files.iter().any(|(n, _)| n == "frontier-1.svg"),
                    "{files:?}"
                );
                for (name, bytes) in &files {
                    assert!(name.ends_with(".svg"));
                    assert!(String::from_utf8_lossy(bytes).starts_with("<svg"), "{name}");
                }
            }
            (Shape::Directory, Artifact::Files(files)) => {
                assert_eq!(e.value_name(), "DIR");
                assert_eq!(written.len(), files.len());
                // The same files as csv::write_dir writes.
                let other = dir.path().join("write_dir");
                let paths = yardstick_report::csv::write_dir(
                    &yardstick_report::tables::all(&report),
                    &other,
                )
                .unwrap();
                for (w, p) in written.iter().zip(&paths) {
                    assert_eq!(w.path.file_name(), p.file_name());
                    assert_eq!(std::fs::read(&w.path).unwrap(), std::fs::read(p).unwrap());
                }
            }
            (shape, a) => panic!("{}: {shape:?} rendered {a:?}", e.name()),
        }
    }
    // `-` is standard output for the text formats that allow it, a path for the others.
    let markdown = yardstick_report::exporter("markdown").unwrap();
    let mut sink = Vec::new();
    let dest = Dest::from_arg(std::path::Path::new("-"), markdown.shape(), &mut sink);
    assert!(dest.is_stream());
    assert!(markdown.write(&report, dest).unwrap().is_empty());
    assert_eq!(
        String::from_utf8(sink).unwrap(),
        yardstick_report::markdown::render(&report)
    );
    let xlsx = yardstick_report::exporter("xlsx").unwrap();
    let mut sink = Vec::new();
    assert!(!Dest::from_arg(std::path::Path::new("-"), xlsx.shape(), &mut sink).is_stream());
    let err = xlsx
        .write(&report, Dest::Stream(&mut sink))
        .expect_err("a workbook is not written to a stream");
    assert!(err.to_string().contains("standard output"), "{err}");
    assert!(sink.is_empty());
}

#[test]
fn a_run_on_several_nodes_has_a_nodes_section_naming_the_flagged_node() {
    let mut r = fixture::report(false);
    r.run.nodes = serde_json::from_value(serde_json::json!({
        "nodes": ["a", "b", "c"],
        "tolerances": {"throughput_pct": 5.0, "memory_pct": 2.0},
        "metrics": [{
            "metric": "gemm.f32.peak", "unit": "GFLOP/s", "reference": 100.0,
            "reference_kind": "median", "tolerance_pct": 5.0,
            "nodes": [
                {"node": "a", "value": 100.0, "deviation_pct": 0.0, "flagged": false, "uncertain": false},
                {"node": "b", "value": 101.0, "deviation_pct": 1.0, "flagged": false, "uncertain": false},
                {"node": "c", "value": 80.0, "deviation_pct": -20.0, "flagged": true, "uncertain": false}
            ]
        }],
        "flagged": {"c": ["gemm.f32.peak 80.000 GFLOP/s is 20.0% below the fleet median 100"]},
        "warnings": []
    }))
    .unwrap();
    let html = yardstick_report::html::render(&r).unwrap();
    assert!(
        html.contains("gemm.f32.peak: deviation from the fleet, %"),
        "no plot"
    );
    assert!(
        html.contains("c: gemm.f32.peak 80.000 GFLOP/s is 20.0% below"),
        "no evidence"
    );
    // A run without a check has no such section.
    let plain = yardstick_report::html::render(&fixture::report(false)).unwrap();
    assert!(!plain.contains("deviation from the fleet"));
}

#[test]
fn the_frontier_overlays_runs_and_rings_exactly_the_pareto_points() {
    let mut report = fixture::report(false);
    // A second configuration: faster per user at low load, less throughput at high load.
    let mut other = fixture::run();
    other.run.run_id = "01JREPORTFIXTURE000000000C".into();
    other.run.name = "other-engine".into();
    for p in &mut other.points {
        for m in &mut p.metrics {
            match (m.metric.as_str(), m.statistic.as_str()) {
                ("tpot_ms", "p50") => m.mean = 6.0,
                ("output_token_throughput", _) => m.mean *= 0.6,
                _ => {}
            }
        }
    }
    report.others.push(other);
    let runs: Vec<&yardstick_report::model::RunReport> =
        std::iter::once(&report.run).chain(&report.others).collect();
    let pts = yardstick_report::plots::frontier_points(&runs);
    assert_eq!(pts.len(), 4, "two load points of each run");
    for a in &pts {
        let dominated = pts.iter().any(|b| {
            b.throughput >= a.throughput
                && b.per_user >= a.per_user
                && (b.throughput > a.throughput || b.per_user > a.per_user)
        });
        assert_eq!(a.pareto, !dominated, "{a:?}");
        assert!(
            (a.per_user - 1000.0 / if a.run_id.ends_with('C') { 6.0 } else { 9.6 }).abs() < 1e-9
        );
    }
    // The top of each end is on the frontier: the most throughput and the fastest stream.
    let best_tput = pts
        .iter()
        .max_by(|a, b| a.throughput.total_cmp(&b.throughput))
        .unwrap();
    let best_user = pts
        .iter()
        .max_by(|a, b| a.per_user.total_cmp(&b.per_user))
        .unwrap();
    assert!(best_tput.pareto && best_user.pareto);
    let sec = yardstick_report::plots::frontier(&runs)
        .unwrap()
        .expect("a frontier");
    assert_eq!(
        sec.figures.len(),
        2,
        "no SLO in the fixture: no goodput panel"
    );
    let (_, rows) = sec.table.as_ref().unwrap();
    assert_eq!(rows.len(), pts.iter().filter(|p| p.pareto).count());
    let html = yardstick_report::html::render(&report).unwrap();
    assert!(html.contains("id=\"frontier\"") && html.contains("other-engine"));
    // A run without serving points has no frontier.
    let mut train_only = fixture::run();
    train_only.points.retain(|p| p.kind != "serve");
    assert!(
        yardstick_report::plots::frontier(&[&train_only])
            .unwrap()
            .is_none()
    );
}
