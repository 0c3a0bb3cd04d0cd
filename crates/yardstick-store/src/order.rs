//! The order points are shown in: the plan's (a sweep's `concurrency=1, 8, 32`) where the run
//! says it, else natural order, numbers compared by value, so `concurrency=8` comes before
//! `concurrency=32` rather than after it as text.

use std::cmp::Ordering;
use std::path::Path;

use crate::summary::RunSummary;

/// Compares two strings with each run of ASCII digits compared by value (`p=8` < `p=32`), the
/// rest character by character; equal values with different digits (`07`, `7`) fall back to
/// the text.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (trim_zeros(&x[..dx]), trim_zeros(&y[..dy]));
                let by_value = nx.len().cmp(&ny.len()).then_with(|| nx.cmp(ny));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                x = &x[dx..];
                y = &y[dy..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|c| **c == b'0').count();
    &digits[zeros.min(digits.len().saturating_sub(1))..]
}

/// The point ids of the run stored in `run_dir`, in plan order (its `summary.json`); empty
/// when the run has none (an imported baseline, a run still going).
pub fn plan_order(run_dir: &Path) -> Vec<String> {
    crate::fsutil::read_in(run_dir, "summary.json")
        .ok()
        .and_then(|b| serde_json::from_slice::<RunSummary>(&b).ok())
        .map(|s| s.points.into_iter().map(|p| p.id).collect())
        .unwrap_or_default()
}

/// Sorts `items` by their point id (`point_of`): the ids in `plan` first, in its order, then
/// the others in natural order. Stable: items of one point keep their order.
pub fn sort_by_plan<T>(items: &mut [T], plan: &[String], point_of: impl Fn(&T) -> &str) {
    items.sort_by(|a, b| {
        let (pa, pb) = (point_of(a), point_of(b));
        let at = |p: &str| plan.iter().position(|q| q == p).unwrap_or(usize::MAX);
        at(pa).cmp(&at(pb)).then_with(|| natural_cmp(pa, pb))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        let mut v = vec![
            "serve/concurrency=32",
            "serve/concurrency=1",
            "serve/concurrency=8",
            "micro/gemm",
            "serve/concurrency=08",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "micro/gemm",
                "serve/concurrency=1",
                "serve/concurrency=08",
                "serve/concurrency=8",
                "serve/concurrency=32"
            ]
        );
        assert_eq!(natural_cmp("a10b2", "a10b10"), Ordering::Less);
        assert_eq!(natural_cmp("x", "x1"), Ordering::Less);
        assert_eq!(natural_cmp("0", "00"), "0".cmp("00"));
    }

    #[test]
    fn plan_order_comes_first_then_natural() {
        let plan = vec!["b".to_string(), "a".to_string()];
        let mut items = vec![("c2", 1), ("a", 1), ("c10", 1), ("b", 1), ("a", 2)];
        sort_by_plan(&mut items, &plan, |i| i.0);
        assert_eq!(items, [("b", 1), ("a", 1), ("a", 2), ("c2", 1), ("c10", 1)]);
    }
}
