//! The HTML report opened in headless Chromium (Debian's `chromium`; `.ci/run` installs it on
//! CI): no console messages, the SVG plots laid out with non-zero size, and a screenshot that
//! is a real, sized image. Without Chromium the browser checks print SKIPPED; the static checks
//! (one self-contained file, no network reference) always run.

use crate::chromium;
use crate::external;
use crate::fixture;

use std::path::{Path, PathBuf};
use std::process::Output;

/// Runs Chromium headless on the file `page` (`chromium::run`).
fn run_chromium(bin: &Path, profile: &Path, page: &Path, extra: &[&str]) -> Output {
    chromium::run(bin, profile, &format!("file://{}", page.display()), extra)
}

fn write_report(dir: &Path) -> (PathBuf, String) {
    let html = yardstick_report::html::render(&fixture::report(true)).unwrap();
    let path = dir.join("report.html");
    std::fs::write(&path, &html).unwrap();
    (path, html)
}

#[test]
fn html_is_one_self_contained_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, html) = write_report(dir.path());
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Every plot the fixture has data for: gate ratios, 2 points × (TTFT, E2E) linear
    // histograms (no sample spans a decade: no log ones), 2 CDFs, 1 throughput-latency curve,
    // the frontier and its TTFT panel (no SLO: no goodput panel), 3 percentile plots, 2
    // step-time plots, scaling, 1 per-rank box plot, 2 telemetry metrics.
    assert_eq!(
        html.matches("<svg").count(),
        1 + 4 + 2 + 1 + 2 + 3 + 2 + 1 + 1 + 2
    );
    // No network: nothing that loads (scripts, sources, style imports, CSS urls, frames), and
    // every link is an in-page anchor or inline data. (The SVG namespace URL is a name, not a
    // fetch; URLs in the text, like a spec's target, are content.)
    for needle in [
        "<script", "src=", "@import", "url(", "<iframe", "<object", "<embed",
    ] {
        assert!(!html.contains(needle), "found {needle:?} in the HTML");
    }
    for href in html.split("href=\"").skip(1) {
        let target = &href[..href.find('"').unwrap()];
        assert!(
            target.starts_with('#') || target.starts_with("data:"),
            "external link {target:?}"
        );
    }
    let xmlns: Vec<&str> = html
        .split("xmlns=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert!(
        xmlns.iter().all(|n| *n == "http://www.w3.org/2000/svg"),
        "{xmlns:?}"
    );
    assert!(
        html.contains("p99 if normal"),
        "normal-assumption p99 marked"
    );
    assert!(
        html.contains("warm-up (trimmed)"),
        "warm-up shaded in the step-time plot"
    );
    eprintln!("fixture HTML report: {} bytes", html.len());
}

#[test]
fn plots_without_data_are_left_out_with_a_note() {
    let mut report = fixture::report(false);
    report.run.points.retain(|p| p.kind == "serve");
    report.run.telemetry.clear();
    let html = yardstick_report::html::render(&report).unwrap();
    assert!(html.contains("Not plotted: no point reported per-step times"));
    assert!(html.contains("Not plotted: fewer than two world sizes"));
    assert!(html.contains("Not plotted: no telemetry stored"));
    assert!(!html.contains("warm-up (trimmed)"));
}

#[test]
fn html_renders_in_headless_chromium_without_console_errors() {
    let Some(bin) = external::require(
        "chromium",
        "html_renders_in_headless_chromium_without_console_errors",
        "looked at $YARDSTICK_CHROMIUM, else chromium/chromium-browser in /usr/bin and PATH; \
         install it with `apt-get install -y chromium fonts-liberation` (.ci/run does on CI)",
        chromium::find(),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (page, html) = write_report(dir.path());

    // Negative control: a page that logs to the console must be caught, or the check below
    // proves nothing.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><script>console.error('yardstick-control')</script></body></html>",
    )
    .unwrap();
    let out = run_chromium(&bin, &dir.path().join("p0"), &control, &["--dump-dom"]);
    assert!(
        chromium::console_lines(&out.stderr)
            .iter()
            .any(|l| l.contains("yardstick-control")),
        "this Chromium does not log console messages to stderr; the check cannot work:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The report: no console message at all (it has no script, so any is a problem), and the
    // DOM holds every SVG with its size.
    let out = run_chromium(&bin, &dir.path().join("p1"), &page, &["--dump-dom"]);
    assert!(out.status.success(), "{out:?}");
    let console = chromium::console_lines(&out.stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let svgs: Vec<&str> = dom.split("<svg").skip(1).collect();
    assert_eq!(
        svgs.len(),
        html.matches("<svg").count(),
        "every SVG is in the DOM"
    );
    for s in &svgs {
        let tag = &s[..s.find('>').unwrap()];
        let attr = |name: &str| -> f64 {
            let k = tag
                .find(&format!(" {name}=\""))
                .unwrap_or_else(|| panic!("{tag}"));
            let rest = &tag[k + name.len() + 3..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        };
        assert!(attr("width") > 100.0 && attr("height") > 100.0, "{tag}");
    }

    // Laid out: a copy with a probe script that records each SVG's rendered box.
    let probe = dir.path().join("probe.html");
    std::fs::write(
        &probe,
        html.replace(
            "</body>",
            "<script>document.body.setAttribute('data-boxes', Array.from(document.querySelectorAll('svg'))\
             .map(s => { const r = s.getBoundingClientRect(); return Math.round(r.width) + 'x' + Math.round(r.height); })\
             .join(' '));</script></body>",
        ),
    )
    .unwrap();
    let out = run_chromium(&bin, &dir.path().join("p2"), &probe, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&out.stdout);
    let boxes = dom
        .split("data-boxes=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no probe output in the DOM: {}", &dom[..dom.len().min(500)]));
    let boxes: Vec<(f64, f64)> = boxes
        .split(' ')
        .map(|b| {
            let (w, h) = b.split_once('x').unwrap();
            (w.parse().unwrap(), h.parse().unwrap())
        })
        .collect();
    assert_eq!(boxes.len(), svgs.len());
    assert!(
        boxes.iter().all(|(w, h)| *w > 100.0 && *h > 50.0),
        "rendered SVG boxes: {boxes:?}"
    );

    // A screenshot: a PNG of the requested size, with content (a blank page compresses to a
    // few KiB).
    let png = dir.path().join("shot.png");
    let out = run_chromium(
        &bin,
        &dir.path().join("p3"),
        &page,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,3000",
        ],
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot ({e}): {out:?}"));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!(&bytes[12..16], b"IHDR");
    assert_eq!((be(16), be(20)), (1200, 3000));
    assert!(bytes.len() > 60_000, "screenshot is {} bytes", bytes.len());
    if let Some(keep) = std::env::var_os("YARDSTICK_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

/// How far each table of `html` reaches past the page, laid out by Chromium in a window
/// `width` pixels wide with every `<details>` open: `(scroll width of the document, window
/// width, [(table heading, overflow in pixels)])`, the tables that overflow only.
fn overflow_at(bin: &Path, dir: &Path, html: &str, width: u32) -> (f64, f64, Vec<(String, f64)>) {
    let probe = dir.join(format!("wide-{width}.html"));
    std::fs::write(
        &probe,
        html.replace("<details", "<details open").replace(
            "</body>",
            "<script>const o = Array.from(document.querySelectorAll('.scroll')).map(d => { \
             const s = d.closest('details'); const t = s ? s.querySelector('summary').textContent \
             : ''; return [t, d.scrollWidth - d.clientWidth]; }).filter(x => x[1] > 0); \
             document.body.setAttribute('data-overflow', JSON.stringify([ \
             document.documentElement.scrollWidth, window.innerWidth, o]));</script></body>",
        ),
    )
    .unwrap();
    let out = run_chromium(
        bin,
        &dir.join(format!("w{width}")),
        &probe,
        &["--dump-dom", &format!("--window-size={width},2000")],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let raw = dom
        .split("data-overflow=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no probe output: {}", &dom[..dom.len().min(500)]))
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let tables = v[2]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t[0].as_str().unwrap().to_string(), t[1].as_f64().unwrap()))
        .collect();
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap(), tables)
}

#[test]
fn the_gate_table_fits_a_1100_pixel_page_in_headless_chromium() {
    let Some(bin) = external::require(
        "chromium",
        "the_gate_table_fits_a_1100_pixel_page_in_headless_chromium",
        "looked at $YARDSTICK_CHROMIUM, else chromium/chromium-browser in /usr/bin and PATH; \
         install it with `apt-get install -y chromium fonts-liberation` (.ci/run does on CI)",
        chromium::find(),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html = yardstick_report::html::render(&fixture::report_with_long_gate_rows()).unwrap();
    assert!(html.contains(fixture::LONG_POINT));
    let (doc, window, tables) = overflow_at(&bin, dir.path(), &html, 1100);
    eprintln!("at 1100 px: document {doc} px in a {window} px window; overflowing: {tables:?}");
    assert!(doc <= window, "the page scrolls sideways: {doc} > {window}");
    assert!(
        !tables.iter().any(|(t, _)| t.starts_with("Gate")),
        "the gate table scrolls sideways: {tables:?}"
    );
}
