//! The plot fixes of a user's report on real runs, each asserted on the SVG or HTML text.

use crate::fixture;
use yardstick_report::model::TelemetryRow;

/// The texts of an SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[test]
fn a_narrow_log_axis_has_distinct_tick_labels() {
    // 241 to 245 ms: a fraction of a decade, where three significant digits repeat.
    let data: Vec<f64> = (0..400).map(|i| 241.0 + 4.0 * i as f64 / 399.0).collect();
    let svg = yardstick_report::plots::histogram("TTFT", &data, "ms", true)
        .unwrap()
        .unwrap();
    let ticks: Vec<String> = texts(&svg)
        .into_iter()
        .filter(|t| t.parse::<f64>().is_ok_and(|v| v > 200.0))
        .collect();
    assert!(ticks.len() >= 2, "{ticks:?}");
    let mut distinct = ticks.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        ticks.len(),
        "repeated tick labels: {ticks:?}"
    );
}

#[test]
fn histogram_legends_are_in_human_units() {
    let data: Vec<f64> = (0..200).map(|i| 40.0 + 0.1117 * i as f64).collect();
    let svg = yardstick_report::plots::histogram("TTFT", &data, "ms", false)
        .unwrap()
        .unwrap();
    let legend: Vec<String> = texts(&svg)
        .into_iter()
        .filter(|t| t.starts_with("mean ") || t.starts_with("p9"))
        .collect();
    assert_eq!(legend.len(), 4, "{legend:?}");
    assert!(legend.iter().all(|l| l.ends_with(" ms")), "{legend:?}");
    assert!(legend.contains(&"mean 51.1 ms".to_string()), "{legend:?}");
}

#[test]
fn a_memory_axis_is_in_bytes_with_one_formatter() {
    let mut r = fixture::run();
    r.telemetry = (0..20)
        .map(|i| TelemetryRow {
            elapsed_s: i as f64,
            device: "host".into(),
            metric: "memory_used_bytes".into(),
            value: 1e8 * i as f64,
        })
        .collect();
    let sec = yardstick_report::plots::telemetry(&r).unwrap();
    let svg = &sec.figures[0].svg;
    let labels = texts(svg);
    assert!(
        labels.iter().any(|t| t.ends_with(" GB")) && labels.iter().any(|t| t.ends_with(" MB")),
        "{labels:?}"
    );
    assert!(
        !labels
            .iter()
            .any(|t| t.contains("e9") || t.contains("00000000")),
        "{labels:?}"
    );
}

#[test]
fn the_frontier_table_is_in_human_units() {
    let mut r = fixture::run();
    for p in &mut r.points {
        for m in &mut p.metrics {
            if m.metric == "output_token_throughput" {
                m.mean = 1984.83;
            }
        }
    }
    let sec = yardstick_report::plots::frontier(&[&r]).unwrap().unwrap();
    let (_, rows) = sec.table.as_ref().unwrap();
    assert_eq!(rows[0][2], "1.98k tok/s", "{rows:?}");
    assert!(rows[0][4].ends_with(" ms"), "{rows:?}");
    let html = yardstick_report::html::render(&yardstick_report::Report::new(r, None)).unwrap();
    assert!(html.contains("<td>1.98k tok/s</td>") && !html.contains("1984.83"));
}

#[test]
fn a_serve_only_run_has_no_empty_training_sections() {
    let mut report = fixture::report(false);
    report.run.points.retain(|p| p.kind == "serve");
    let html = yardstick_report::html::render(&report).unwrap();
    for id in ["step-time", "scaling", "ranks"] {
        assert!(!html.contains(&format!("<h2 id=\"{id}\"")), "{id} section");
        assert!(
            !html.contains(&format!("href=\"#{id}\"")),
            "{id} in the nav"
        );
    }
    // What is not plotted is still said, folded under one line.
    assert!(html.contains("<details id=\"not-plotted\"><summary>Not plotted (3 plots"));
    assert!(html.contains("<h2 id=\"latency-histograms\""));
}

#[test]
fn a_log_histogram_only_for_a_sample_spanning_a_decade() {
    let mut r = fixture::run();
    let titles = |r: &yardstick_report::model::RunReport| -> Vec<String> {
        yardstick_report::plots::latency_histograms(r)
            .unwrap()
            .figures
            .into_iter()
            .map(|f| f.title)
            .collect()
    };
    // The fixture's latencies span less than a decade: linear histograms only.
    let narrow = titles(&r);
    assert_eq!(narrow.len(), 4, "{narrow:?}");
    assert!(narrow.iter().all(|t| t.ends_with("(linear)")), "{narrow:?}");
    // TTFT from 5 to 500 ms at one point: its log version too.
    let l = r.points[0].latency.as_mut().unwrap();
    l.ttft_ms = (0..300)
        .map(|i| 5.0 * 100f64.powf(i as f64 / 299.0))
        .collect();
    let wide = titles(&r);
    assert_eq!(wide.len(), 5, "{wide:?}");
    assert_eq!(
        wide.iter().filter(|t| t.ends_with("(log)")).count(),
        1,
        "{wide:?}"
    );
}

#[test]
fn micro_points_have_headline_cards() {
    let mut r = fixture::run();
    let mut micro = r.points[2].clone();
    micro.id = "micro.0.memory".into();
    micro.layer = "micro".into();
    micro.kind = "memory".into();
    micro.steps.clear();
    micro.metrics = ["memory.copy", "memory.triad"]
        .iter()
        .map(|m| yardstick_report::model::MetricStat {
            metric: m.to_string(),
            statistic: "value".into(),
            unit: "GB/s".into(),
            mean: 15.6,
            ci: Some((15.0, 16.2)),
            n: 3,
            replicates: vec![],
        })
        .collect();
    r.points.insert(0, micro);
    let html = yardstick_report::html::render(&yardstick_report::Report::new(r, None)).unwrap();
    let cards = &html[html.find("<h3>micro.0.memory</h3>").unwrap()..];
    let cards = &cards[..cards.find("</div>\n").unwrap()];
    // triad (what the gate compares) first, then copy, in human units.
    let triad = cards
        .find("<div class=\"k\">memory.triad</div>")
        .expect(cards);
    let copy = cards
        .find("<div class=\"k\">memory.copy</div>")
        .expect(cards);
    assert!(triad < copy, "{cards}");
    assert!(cards.contains("15.6 GB/s ± 3.8 %"), "{cards}");
}
