//! Quantities as people read them: a value in its metric's unit with a sensible prefix and three
//! significant digits (`249 GFLOP/s`, `18.5k tok/s`, `51.3 ms`, `43.1 %`), and its interval
//! (`± 2.1 %`, or the bounds when it is skewed). Reports, the gate's tables and the progress
//! lines of a run all use these; JSON, CSV, Excel and Parquet keep raw values and the facts'
//! units. Deterministic: no locale, no clock.

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

/// The unit a report shows `metric` in: the unit its producer declared, else the catalogue's
/// (`crate::metrics::unit_of`), else none.
pub fn metric_unit<'a>(metric: &str, declared: &'a str) -> &'a str {
    if declared.is_empty() {
        crate::metrics::unit_of(metric)
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
