//! Number and text formatting shared by every output (deterministic: no locale, no clock).

/// A number for people: up to 4 decimals below 100, 2 above, no trailing zeros, scientific
/// notation outside [1e-3, 1e9); NaN is `-`.
pub fn num(x: f64) -> String {
    if x.is_nan() {
        return "-".into();
    }
    num_keep_nan(x)
}

/// [`num`], but NaN spelled `NaN` (the command line's tables, where `-` means "no value").
pub fn num_keep_nan(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    let s = if a != 0.0 && !(1e-3..1e9).contains(&a) {
        format!("{x:.3e}")
    } else if a >= 100.0 || x.fract() == 0.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    };
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
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
