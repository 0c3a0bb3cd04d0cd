//! Number and text formatting shared by every output (deterministic: no locale, no clock).

/// A number for people: up to 4 decimals below 100, 2 above, no trailing zeros, scientific
/// notation outside [1e-3, 1e9); NaN is `-`.
pub fn num(x: f64) -> String {
    if x.is_nan() {
        return "-".into();
    }
    num_keep_nan(x)
}

/// `[lo, hi]`, or `-`.
pub fn ci(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("[{}, {}]", num(lo), num(hi)),
        None => "-".into(),
    }
}

/// A ratio as a signed percent change: 1.052 → `+5.2 %`.
pub fn delta_pct(ratio: Option<f64>) -> String {
    match ratio {
        Some(r) if r.is_finite() => format!("{:+.1} %", (r - 1.0) * 100.0),
        _ => "-".into(),
    }
}

/// A ratio CI as percent changes: `[+3.1, +7.9] %`.
pub fn delta_ci(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("[{:+.1}, {:+.1}] %", (lo - 1.0) * 100.0, (hi - 1.0) * 100.0),
        None => "-".into(),
    }
}

/// `±1.3 %`.
pub fn pm_pct(x: Option<f64>) -> String {
    match x {
        Some(p) if p.is_finite() => format!("±{p:.1} %"),
        _ => "-".into(),
    }
}

/// Escapes text for HTML and XML (element content and double-quoted attributes).
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // XML 1.0 forbids most control characters even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The confidence level as a header: 0.95 → `95 % CI`.
pub fn level_header(level: f64) -> String {
    format!("{} % CI", num(level * 100.0))
}

// Human units: what a person reads in the terminal table, Markdown, HTML and JUnit messages (the
// formatting lives in `yardstick_spec::human`, where progress lines reach it too).
pub use yardstick_spec::human::{
    SYMMETRIC_TOLERANCE, human, human_ci, human_with_ci, metric_unit, num_keep_nan, pct,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers_and_deltas() {
        assert_eq!(num(51.786), "51.786");
        assert_eq!(num(1234.5678), "1234.57");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(2.5e10), "2.500e10");
        assert_eq!(num(f64::NAN), "-");
        assert_eq!(num_keep_nan(f64::NAN), "NaN");
        assert_eq!(num_keep_nan(f64::INFINITY), "inf");
        assert_eq!(num_keep_nan(0.000123456), "1.235e-4");
        assert_eq!(num_keep_nan(-51.786), "-51.786");
        assert_eq!(delta_pct(Some(1.052)), "+5.2 %");
        assert_eq!(delta_pct(Some(0.9)), "-10.0 %");
        assert_eq!(delta_ci(Some((1.031, 1.079))), "[+3.1, +7.9] %");
        assert_eq!(
            xml_escape("a<b & \"c\"\u{1}"),
            "a&lt;b &amp; &quot;c&quot;\u{FFFD}"
        );
        assert_eq!(level_header(0.95), "95 % CI");
    }
}

#[cfg(test)]
mod human_tests {
    use super::*;

    #[test]
    fn bytes_bandwidth_and_flops_take_si_prefixes_on_the_unit() {
        assert_eq!(human(111_007_061.33, "bytes"), "111 MB");
        assert_eq!(human(1.0e9, "bytes"), "1.00 GB");
        assert_eq!(human(999.0, "bytes"), "999 B");
        // Rounding to three digits can reach the next prefix: 999.7 B is 1.00 kB, not 1000 B.
        assert_eq!(human(999.7, "bytes"), "1.00 kB");
        assert_eq!(human(1536.0, "B"), "1.54 kB");
        assert_eq!(human(0.5, "bytes"), "0.500 B");
        assert_eq!(human(248.93, "GFLOP/s"), "249 GFLOP/s");
        assert_eq!(human(2489.3, "GFLOP/s"), "2.49 TFLOP/s");
        assert_eq!(human(0.25, "GFLOP/s"), "250 MFLOP/s");
        assert_eq!(human(413.78, "GB/s"), "414 GB/s");
        assert_eq!(human(1234.5, "MB/s"), "1.23 GB/s");
        assert_eq!(human(9.41, "Gbit/s"), "9.41 Gbit/s");
        assert_eq!(human(3.2e12, "FLOP"), "3.20 TFLOP");
        assert_eq!(human(2.0e21, "bytes"), "2000 EB");
    }

    #[test]
    fn rates_of_things_take_prefixes_on_the_number() {
        assert_eq!(human(8.1, "req/s"), "8.10 req/s");
        assert_eq!(human(217.6, "tok/s"), "218 tok/s");
        assert_eq!(human(18_500.0, "tok/s"), "18.5k tok/s");
        assert_eq!(human(10_000.0, "tok/s"), "10.0k tok/s");
        assert_eq!(human(1234.0, "samples/s"), "1.23k samples/s");
        assert_eq!(human(2.5e6, "IOPS"), "2.50M IOPS");
        assert_eq!(human(0.25, "req/s"), "0.250 req/s");
    }

    #[test]
    fn durations_move_to_the_unit_that_reads_best() {
        assert_eq!(human(51.8, "ms"), "51.8 ms");
        assert_eq!(human(0.4096, "s"), "410 ms");
        assert_eq!(human(1500.0, "ms"), "1.50 s");
        assert_eq!(human(12.0, "s"), "12.0 s");
        assert_eq!(human(0.35, "ms"), "350 µs");
        assert_eq!(human(0.35, "us"), "350 ns");
        assert_eq!(human(850.0, "us"), "850 µs");
        assert_eq!(human(90.0, "s"), "1.50 min");
        assert_eq!(human(7200.0, "s"), "2.00 h");
        assert_eq!(human(59.4, "s"), "59.4 s");
        // 59.99 s rounds to 60.0 s, which is a minute.
        assert_eq!(human(59.99, "s"), "1.00 min");
        // Below a hundredth of a nanosecond, or beyond a million hours: scientific seconds.
        assert_eq!(human(1e-12, "s"), "1.00e-12 s");
        assert_eq!(human(1e-5, "ns"), "1.00e-14 s");
        assert_eq!(human(1e12, "s"), "1.00e12 s");
    }

    #[test]
    fn fractions_counts_and_other_units() {
        assert_eq!(human(0.4312, "fraction"), "43.1 %");
        assert_eq!(human(1.0, "fraction"), "100 %");
        assert_eq!(human(0.00123, "fraction"), "0.123 %");
        assert_eq!(human(1e-9, "fraction"), "1.00e-7 %");
        assert_eq!(human(160.0, "count"), "160");
        assert_eq!(human(1_234_567.0, "count"), "1234567");
        assert_eq!(human(2.5, "count"), "2.50");
        assert_eq!(human(2.4871, "nats"), "2.49 nats");
        assert_eq!(human(1.234, "x"), "1.23 x");
        assert_eq!(human(2.5, ""), "2.50");
        assert_eq!(human(1234.5678, ""), "1235");
        assert_eq!(human(0.000123456, ""), "1.23e-4");
        assert_eq!(human(2.5e10, ""), "2.50e10");
        assert_eq!(human(3.0, "widgets"), "3.00 widgets");
    }

    #[test]
    fn zero_negative_and_non_finite_values() {
        assert_eq!(human(0.0, "ms"), "0 ms");
        assert_eq!(human(-0.0, "bytes"), "0 bytes");
        assert_eq!(human(0.0, "fraction"), "0 %");
        assert_eq!(human(0.0, "count"), "0");
        assert_eq!(human(0.0, ""), "0");
        assert_eq!(human(-0.4096, "s"), "-410 ms");
        assert_eq!(human(-111_007_061.0, "bytes"), "-111 MB");
        assert_eq!(human(-0.05, "fraction"), "-5.00 %");
        assert_eq!(human(-3.0, "count"), "-3");
        assert_eq!(human(f64::NAN, "ms"), "-");
        assert_eq!(human(f64::INFINITY, "ms"), "inf ms");
        assert_eq!(human(f64::NEG_INFINITY, "us"), "-inf µs");
        assert_eq!(human(f64::INFINITY, ""), "inf");
        assert_eq!(human(f64::INFINITY, "fraction"), "inf %");
    }

    #[test]
    fn percentages_keep_two_significant_digits_at_least() {
        assert_eq!(pct(69.2), "69");
        assert_eq!(pct(2.47), "2.5");
        assert_eq!(pct(9.96), "10");
        assert_eq!(pct(0.8), "0.8");
        assert_eq!(pct(0.05), "0.050");
        assert_eq!(pct(0.0), "0");
        assert_eq!(pct(-3.25), "-3.2");
        assert_eq!(pct(f64::NAN), "NaN");
    }

    #[test]
    fn intervals_are_a_percentage_when_symmetric_and_bounds_otherwise() {
        // A t interval is symmetric: the half-width as a percentage of the mean.
        assert_eq!(
            human_with_ci(248.93, Some((77.37, 420.49)), "GFLOP/s"),
            "249 GFLOP/s ± 69 %"
        );
        assert_eq!(human_ci(8.1, Some((7.9, 8.3)), "req/s"), "± 2.5 %");
        // Nearly symmetric (halves 1.0 and 1.06): the larger half.
        assert_eq!(human_ci(100.0, Some((99.0, 101.06)), "ms"), "± 1.1 %");
        // Halves 1.0 and 1.2 are more than 10 % apart: the bounds.
        assert_eq!(human_ci(100.0, Some((99.0, 101.2)), "ms"), "[99.0, 101] ms");
        // Skewed: the bounds, in the mean's scale.
        assert_eq!(
            human_ci(248.93, Some((200.0, 420.49)), "GFLOP/s"),
            "[200, 420] GFLOP/s"
        );
        assert_eq!(
            human_ci(111_007_061.0, Some((90e6, 2.0e8)), "bytes"),
            "[90.0, 200] MB"
        );
        assert_eq!(human_ci(0.41, Some((0.3, 0.5)), "s"), "[300, 500] ms");
        // A mean outside its interval, or of zero: bounds.
        assert_eq!(human_ci(5.0, Some((6.0, 7.0)), "ms"), "[6.00, 7.00] ms");
        assert_eq!(human_ci(0.0, Some((-2.0, 2.0)), ""), "[-2.00, 2.00]");
        assert_eq!(human_ci(0.0, Some((0.0, 0.0)), "ms"), "[0, 0] ms");
        assert_eq!(human_ci(0.0, Some((0.0, 0.0)), ""), "[0, 0]");
        // A zero-width interval around a non-zero mean is exact.
        assert_eq!(human_ci(3.0, Some((3.0, 3.0)), "s"), "± 0 %");
        // Negative means: relative to the magnitude.
        assert_eq!(human_ci(-5.0, Some((-6.0, -4.0)), ""), "± 20 %");
        assert_eq!(human_ci(1.0, None, "ms"), "-");
        assert_eq!(human_with_ci(1.0, None, "ms"), "1.00 ms");
        assert_eq!(human_ci(1.0, Some((f64::NAN, 2.0)), "ms"), "[NaN, 2]");
        assert_eq!(human_ci(0.9, Some((0.85, 0.95)), "fraction"), "± 5.6 %");
        assert_eq!(
            human_ci(0.9, Some((0.8, 0.92)), "fraction"),
            "[80.0, 92.0] %"
        );
    }

    #[test]
    fn metric_units_come_from_the_producer_else_the_catalogue() {
        assert_eq!(metric_unit("ttft_ms", ""), "ms");
        assert_eq!(metric_unit("max_rss_bytes", ""), "bytes");
        assert_eq!(metric_unit("ttft_ms", "s"), "s");
        assert_eq!(metric_unit("no_such_metric", ""), "");
    }
}
