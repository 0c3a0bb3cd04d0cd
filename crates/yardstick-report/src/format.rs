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

// ---------------------------------------------------------------------------------------------
// Human units (issue 17, section 4): what a person reads in the terminal table, Markdown, HTML
// and JUnit messages. JSON, CSV, Excel cells and Parquet keep raw values and the facts' units.
// ---------------------------------------------------------------------------------------------

/// The unit a report shows `metric` in: the unit its producer declared, else the catalogue's
/// (`yardstick_spec::metrics::unit_of`), else none.
pub fn metric_unit<'a>(metric: &str, declared: &'a str) -> &'a str {
    if declared.is_empty() {
        yardstick_spec::metrics::unit_of(metric)
    } else {
        declared
    }
}

/// How a unit scales for people.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Family {
    /// Decimal SI prefixes on the unit (`111 MB`, `249 GFLOP/s`): `base` after converting the
    /// declared unit by `to_base` (`GB/s` is 1e9 `B/s`).
    Si { base: &'static str, to_base: f64 },
    /// A rate of things: decimal prefixes on the number (`18.5k tok/s`, `250k IOPS`).
    Rate { unit: &'static str, to_base: f64 },
    /// A duration: ns, µs, ms, s, min, h.
    Time { to_s: f64 },
    /// A fraction in [0, 1], shown as a percentage (`43.1 %`).
    Fraction,
    /// A count: integers exactly, no unit.
    Count,
    /// Anything else: three significant digits and the unit as declared.
    Plain,
}

fn family(unit: &str) -> Family {
    use Family::*;
    let si = |base, to_base| Si { base, to_base };
    match unit {
        "B" | "bytes" | "byte" => si("B", 1.0),
        "kB" | "KB" => si("B", 1e3),
        "MB" => si("B", 1e6),
        "GB" => si("B", 1e9),
        "TB" => si("B", 1e12),
        "B/s" | "bytes/s" => si("B/s", 1.0),
        "kB/s" | "KB/s" => si("B/s", 1e3),
        "MB/s" => si("B/s", 1e6),
        "GB/s" => si("B/s", 1e9),
        "TB/s" => si("B/s", 1e12),
        "bit/s" => si("bit/s", 1.0),
        "kbit/s" => si("bit/s", 1e3),
        "Mbit/s" => si("bit/s", 1e6),
        "Gbit/s" => si("bit/s", 1e9),
        "FLOP" => si("FLOP", 1.0),
        "GFLOP" => si("FLOP", 1e9),
        "TFLOP" => si("FLOP", 1e12),
        "FLOP/s" => si("FLOP/s", 1.0),
        "MFLOP/s" => si("FLOP/s", 1e6),
        "GFLOP/s" => si("FLOP/s", 1e9),
        "TFLOP/s" => si("FLOP/s", 1e12),
        "tok/s" => Rate {
            unit: "tok/s",
            to_base: 1.0,
        },
        "req/s" => Rate {
            unit: "req/s",
            to_base: 1.0,
        },
        "samples/s" => Rate {
            unit: "samples/s",
            to_base: 1.0,
        },
        "items/s" => Rate {
            unit: "items/s",
            to_base: 1.0,
        },
        "IOPS" => Rate {
            unit: "IOPS",
            to_base: 1.0,
        },
        "h" => Time { to_s: 3600.0 },
        "min" => Time { to_s: 60.0 },
        "s" => Time { to_s: 1.0 },
        "ms" => Time { to_s: 1e-3 },
        "us" | "µs" => Time { to_s: 1e-6 },
        "ns" => Time { to_s: 1e-9 },
        "fraction" => Fraction,
        "count" => Count,
        _ => Plain,
    }
}

const SI: &[(&str, f64)] = &[
    ("", 1.0),
    ("k", 1e3),
    ("M", 1e6),
    ("G", 1e9),
    ("T", 1e12),
    ("P", 1e15),
    ("E", 1e18),
];
const TIME: &[(&str, f64)] = &[
    ("ns", 1e-9),
    ("µs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("min", 60.0),
    ("h", 3600.0),
];

/// `x` (≥ 0, finite) rounded to three significant digits.
fn round3(x: f64) -> f64 {
    format!("{x:.2e}").parse().unwrap_or(x)
}

/// The decimal exponent of `x` (≥ 0, finite) once rounded to three significant digits.
fn exp3(x: f64) -> i32 {
    let s = format!("{x:.2e}");
    s.rsplit('e')
        .next()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0)
}

/// `x` (≥ 0, finite) with three significant digits, or more when its integer part has more
/// (`0.410`, `8.10`, `12.0`, `249`, `1234`); `0` for zero.
fn sig3(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let decimals = (2 - exp3(x)).max(0) as usize;
    format!("{x:.decimals$}")
}

/// How numbers of one magnitude are written in one unit: divided by `divisor` and followed by
/// `suffix`, or in scientific notation (`1.23e-12 s`) outside what the prefixes cover.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    divisor: f64,
    suffix: String,
    scientific: bool,
    exact_integers: bool,
}

impl Plan {
    /// The plan for numbers of magnitude `a` (≥ 0) declared in `unit`: values are first
    /// multiplied by `to_base`, then divided by `divisor`.
    fn new(unit: &str, a: f64) -> (f64, Plan) {
        let plain = |suffix: String| Plan {
            divisor: 1.0,
            suffix,
            scientific: a != 0.0 && !(1e-3..1e9).contains(&round3(a)),
            exact_integers: false,
        };
        let spaced = |u: &str| {
            if u.is_empty() {
                String::new()
            } else {
                format!(" {u}")
            }
        };
        match family(unit) {
            Family::Si { base, to_base } => (
                to_base,
                Self::prefixed(a * to_base, SI, |p| format!(" {p}{base}"), base),
            ),
            Family::Rate { unit, to_base } => (
                to_base,
                Self::prefixed(a * to_base, SI, |p| format!("{p} {unit}"), unit),
            ),
            Family::Time { to_s } => (
                to_s,
                Self::prefixed(a * to_s, TIME, |p| format!(" {p}"), "s"),
            ),
            Family::Fraction => (100.0, {
                let mut p = plain(" %".into());
                p.scientific = a != 0.0 && !(1e-3..1e9).contains(&round3(a * 100.0));
                p
            }),
            Family::Count => (1.0, {
                let mut p = plain(String::new());
                p.exact_integers = true;
                p.scientific = a >= 1e15;
                p
            }),
            Family::Plain => (1.0, plain(spaced(unit))),
        }
    }

    /// The largest prefix the rounded magnitude `a` (in the base unit) reaches, the smallest
    /// below them all; scientific notation when even that leaves the number below 0.01 or the
    /// largest leaves it at a million or more.
    fn prefixed(
        a: f64,
        prefixes: &[(&str, f64)],
        suffix: impl Fn(&str) -> String,
        base: &str,
    ) -> Plan {
        let r = round3(a);
        let (p, f) = prefixes
            .iter()
            .rev()
            .find(|(_, f)| r >= *f)
            .copied()
            .unwrap_or(prefixes[0]);
        let m = a / f;
        if a != 0.0 && !(0.01..1e6).contains(&round3(m)) {
            return Plan {
                divisor: 1.0,
                suffix: format!(" {base}"),
                scientific: true,
                exact_integers: false,
            };
        }
        Plan {
            divisor: f,
            suffix: suffix(p),
            scientific: false,
            exact_integers: false,
        }
    }

    /// One number (already in the base unit), without the suffix.
    fn number(&self, x: f64) -> String {
        if x.is_nan() {
            return "-".into();
        }
        if x.is_infinite() {
            return if x > 0.0 { "inf" } else { "-inf" }.into();
        }
        let sign = if x < 0.0 { "-" } else { "" };
        let a = x.abs() / self.divisor;
        let digits = if a == 0.0 {
            return "0".into();
        } else if self.exact_integers && a.fract() == 0.0 && !self.scientific {
            format!("{a:.0}")
        } else if self.scientific {
            format!("{a:.2e}")
        } else {
            sig3(a)
        };
        format!("{sign}{digits}")
    }
}

/// A value for people, in its unit scaled to a readable magnitude with three significant
/// digits (more when the integer part has more): `111007061.33` `bytes` → `111 MB`, `248.93`
/// `GFLOP/s` → `249 GFLOP/s`, `0.41` `s` → `410 ms`, `18500` `tok/s` → `18.5k tok/s`, `0.431`
/// `fraction` → `43.1 %`, `160` `count` → `160`.
///
/// * Bytes, B/s, bit/s, FLOP and FLOP/s take decimal SI prefixes on the unit (k, M, G, T, P,
///   E; never below the base unit); tok/s, req/s, samples/s, items/s and IOPS take them on the
///   number (`18.5k tok/s`).
/// * Durations (`ns`, `us`, `ms`, `s`, `min`, `h`) move to the unit that puts the number in
///   [1, 1000) (`µs` is written with the micro sign), up to minutes from 60 s and hours from
///   60 min.
/// * A `fraction` is a percentage; a `count` an exact integer without a unit; any other unit
///   (`nats`, `x`, none) keeps its name after three significant digits.
/// * Zero is `0` and the declared unit (`0 ms`, `0 B`); negative values read like positive
///   ones with a minus sign; magnitudes no prefix covers (below 0.01 of the smallest, a million
///   of the largest, or outside [1e-3, 1e9) for units without prefixes) are in scientific
///   notation in the base unit (`1.00e-12 s`); NaN is `-`; infinities are `inf`/`-inf` in the
///   declared unit.
pub fn human(value: f64, unit: &str) -> String {
    if value.is_nan() {
        return "-".into();
    }
    if value.is_infinite() || value == 0.0 {
        let n = if value.is_infinite() {
            if value > 0.0 { "inf" } else { "-inf" }
        } else {
            "0"
        };
        return match family(unit) {
            Family::Count => n.into(),
            Family::Fraction => format!("{n} %"),
            _ if unit.is_empty() => n.into(),
            _ => format!("{n} {}", if unit == "us" { "µs" } else { unit }),
        };
    }
    let (to_base, plan) = Plan::new(unit, value.abs());
    format!("{}{}", plan.number(value * to_base), plan.suffix)
}

/// A percentage for people: whole numbers from 10, one decimal from 0.1, two significant
/// digits below (`69`, `2.5`, `0.050`); `0` for zero.
pub fn pct(p: f64) -> String {
    if !p.is_finite() {
        return num_keep_nan(p);
    }
    let a = p.abs();
    let sign = if p < 0.0 { "-" } else { "" };
    let digits = if a == 0.0 {
        "0".into()
    } else if round3(a) >= 9.95 {
        format!("{a:.0}")
    } else if a >= 0.095 {
        format!("{a:.1}")
    } else {
        let e: i32 = format!("{a:.1e}")
            .rsplit('e')
            .next()
            .and_then(|e| e.parse().ok())
            .unwrap_or(0);
        let decimals = (1 - e).max(0) as usize;
        format!("{a:.decimals$}")
    };
    format!("{sign}{digits}")
}

/// How far apart the two halves of a confidence interval may be, relative to the larger, for
/// [`human_ci`] to show it as `± x %`: 10 %.
pub const SYMMETRIC_TOLERANCE: f64 = 0.10;

/// A confidence interval around `mean` for people.
///
/// When the interval contains the mean and its halves are within [`SYMMETRIC_TOLERANCE`] of
/// each other (a t interval is exactly symmetric; a bootstrap one often nearly so), it is the
/// larger half as a percentage of the mean: `± 69 %` (the larger half, so the claim is never
/// narrower than the interval). Otherwise (a skewed interval, a mean of zero or outside its
/// interval) it is the bounds in the mean's scale and unit: `[77.4, 420] GFLOP/s`. No interval
/// is `-`.
pub fn human_ci(mean: f64, ci: Option<(f64, f64)>, unit: &str) -> String {
    let Some((lo, hi)) = ci else {
        return "-".into();
    };
    if !(mean.is_finite() && lo.is_finite() && hi.is_finite()) {
        return format!("[{}, {}]", num_keep_nan(lo), num_keep_nan(hi));
    }
    let (below, above) = (mean - lo, hi - mean);
    let larger = below.max(above);
    if mean != 0.0
        && below >= 0.0
        && above >= 0.0
        && (above - below).abs() <= SYMMETRIC_TOLERANCE * larger
    {
        return format!("± {} %", pct(larger / mean.abs() * 100.0));
    }
    let magnitude = if mean != 0.0 {
        mean.abs()
    } else {
        lo.abs().max(hi.abs())
    };
    if magnitude == 0.0 {
        return match human(0.0, unit).split_once(' ') {
            Some((_, u)) => format!("[0, 0] {u}"),
            None => "[0, 0]".into(),
        };
    }
    let (to_base, plan) = Plan::new(unit, magnitude);
    format!(
        "[{}, {}]{}",
        plan.number(lo * to_base),
        plan.number(hi * to_base),
        plan.suffix
    )
}

/// A value and its interval for people: `249 GFLOP/s ± 69 %`, `8.10 req/s [7.20, 8.30] req/s`;
/// the value alone without an interval.
pub fn human_with_ci(mean: f64, ci: Option<(f64, f64)>, unit: &str) -> String {
    match ci {
        None => human(mean, unit),
        Some(_) => format!("{} {}", human(mean, unit), human_ci(mean, ci, unit)),
    }
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
