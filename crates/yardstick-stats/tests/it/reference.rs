//! Agreement with numpy/scipy on the committed fixtures (`tests/reference/gen.py` wrote them).
//! Values match to 1e-9 relative; p-values from approximations to 1e-6.

use serde_json::Value;
use yardstick_stats::bootstrap::{
    BootstrapConfig, Method, abc_mean_ci, bca_interval, bootstrap_ci, jackknife,
    percentile_interval, ratio_of_medians_jackknife,
};
use yardstick_stats::descriptive::Descriptive;
use yardstick_stats::early_stopping::{
    early_stopping, early_stopping_estimate, max_claimable_percentile, min_passing_queries,
};
use yardstick_stats::hypothesis::{
    McNemarMethod, cliffs_delta, cohens_d, holm, mann_whitney, mcnemar, paired_t, welch_t, wilcoxon,
};
use yardstick_stats::percentile::{min_samples_for_quantile_ci, percentile, quantile_ci_ranks};
use yardstick_stats::statistic::Statistic;
use yardstick_stats::{StatsError, outliers, steady_state, tail};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/reference/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str::<Value>(&text).unwrap()["cases"].clone()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn indices(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

#[track_caller]
fn close(got: f64, want: f64, rel: f64, what: &str) {
    let tol = rel * want.abs().max(1e-300);
    assert!(
        (got - want).abs() <= tol || (want == 0.0 && got.abs() < 1e-12),
        "{what}: got {got:e}, want {want:e} (rel err {:e})",
        ((got - want) / want).abs()
    );
}

#[track_caller]
fn close_opt(got: Option<f64>, want: &Value, rel: f64, what: &str) {
    match (got, want.as_f64()) {
        (Some(g), Some(w)) => close(g, w, rel, what),
        (None, None) => {}
        (g, w) => panic!("{what}: got {g:?}, want {w:?}"),
    }
}

const REL: f64 = 1e-9;
const REL_P: f64 = 1e-6;

#[test]
fn descriptive_and_percentiles_match_numpy() {
    let cases = fixture("descriptive");
    for (name, c) in cases.as_object().unwrap() {
        let data = floats(&c["data"]);
        let d = Descriptive::of(&data).unwrap();
        assert_eq!(d.n as u64, c["n"].as_u64().unwrap(), "{name}");
        close(
            d.mean,
            c["mean"].as_f64().unwrap(),
            REL,
            &format!("{name} mean"),
        );
        close_opt(d.stddev, &c["stddev"], REL, &format!("{name} stddev"));
        close(
            d.min,
            c["min"].as_f64().unwrap(),
            REL,
            &format!("{name} min"),
        );
        close(
            d.max,
            c["max"].as_f64().unwrap(),
            REL,
            &format!("{name} max"),
        );
        close(
            d.median,
            c["median"].as_f64().unwrap(),
            REL,
            &format!("{name} median"),
        );
        close_opt(d.cv, &c["cv"], REL, &format!("{name} cv"));
        close(
            d.mad,
            c["mad"].as_f64().unwrap(),
            REL,
            &format!("{name} mad"),
        );
        close_opt(
            d.skewness,
            &c["skewness"],
            1e-8,
            &format!("{name} skewness"),
        );
        for qv in c["quantiles"].as_array().unwrap() {
            let (q, want) = (qv[0].as_f64().unwrap(), qv[1].as_f64().unwrap());
            close(
                percentile(&data, q).unwrap(),
                want,
                REL,
                &format!("{name} q{q}"),
            );
        }
    }
}

#[test]
fn order_statistic_cis_match_the_binomial() {
    for c in fixture("quantile_ci").as_array().unwrap() {
        let (n, q, level) = (
            c["n"].as_u64().unwrap() as usize,
            c["q"].as_f64().unwrap(),
            c["level"].as_f64().unwrap(),
        );
        let needed = c["needed"].as_u64().unwrap() as usize;
        assert_eq!(
            min_samples_for_quantile_ci(q, level),
            Ok(needed),
            "n={n} q={q} level={level}"
        );
        match quantile_ci_ranks(n, q, level) {
            Ok((l, u, coverage)) => {
                assert_eq!(
                    l as u64,
                    c["lower_rank"].as_u64().unwrap(),
                    "n={n} q={q} level={level}"
                );
                assert_eq!(
                    u as u64,
                    c["upper_rank"].as_u64().unwrap(),
                    "n={n} q={q} level={level}"
                );
                close(coverage, c["coverage"].as_f64().unwrap(), REL, "coverage");
                assert!(coverage >= level - 1e-12);
            }
            Err(StatsError::NotEnoughSamples {
                needed: got, have, ..
            }) => {
                assert!(
                    c.get("lower_rank").is_none(),
                    "n={n} q={q} level={level}: refused"
                );
                assert_eq!((got, have), (needed, n));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn two_sample_tests_match_scipy() {
    let cases = fixture("hypothesis");
    for (name, c) in cases["two_sample"].as_object().unwrap() {
        let (a, b) = (floats(&c["a"]), floats(&c["b"]));
        let mw = mann_whitney(&a, &b).unwrap();
        close(
            mw.u,
            c["mwu_u"].as_f64().unwrap(),
            REL,
            &format!("{name} U"),
        );
        close(
            mw.p_value,
            c["mwu_p"].as_f64().unwrap(),
            REL_P,
            &format!("{name} MWU p"),
        );
        let w = welch_t(&a, &b);
        if let Some(want) = c["welch_t"].as_f64() {
            let w = w.unwrap();
            close(w.t, want, REL, &format!("{name} Welch t"));
            close(
                w.df,
                c["welch_df"].as_f64().unwrap(),
                REL,
                &format!("{name} Welch df"),
            );
            close(
                w.p_value,
                c["welch_p"].as_f64().unwrap(),
                REL_P,
                &format!("{name} Welch p"),
            );
        }
        close(
            cliffs_delta(&a, &b).unwrap(),
            c["cliffs_delta"].as_f64().unwrap(),
            REL,
            "delta",
        );
        close(
            cohens_d(&a, &b).unwrap(),
            c["cohens_d"].as_f64().unwrap(),
            REL,
            "cohen d",
        );
    }
}

#[test]
fn paired_tests_match_scipy() {
    let cases = fixture("hypothesis");
    for (name, c) in cases["paired"].as_object().unwrap() {
        let (a, b) = (floats(&c["a"]), floats(&c["b"]));
        let w = wilcoxon(&a, &b).unwrap();
        close(
            w.statistic,
            c["wilcoxon_statistic"].as_f64().unwrap(),
            REL,
            &format!("{name} W"),
        );
        close(
            w.p_value,
            c["wilcoxon_p"].as_f64().unwrap(),
            REL_P,
            &format!("{name} W p"),
        );
        let t = paired_t(&a, &b).unwrap();
        close(
            t.t,
            c["paired_t"].as_f64().unwrap(),
            REL,
            &format!("{name} paired t"),
        );
        close(
            t.p_value,
            c["paired_p"].as_f64().unwrap(),
            REL_P,
            &format!("{name} paired p"),
        );
    }
}

#[test]
fn mcnemar_and_holm_match_reference() {
    let cases = fixture("hypothesis");
    for c in cases["mcnemar"].as_array().unwrap() {
        let (b, cc) = (c["b"].as_u64().unwrap(), c["c"].as_u64().unwrap());
        let exact = mcnemar(b, cc, McNemarMethod::Exact).unwrap();
        close(
            exact.p_value,
            c["exact_p"].as_f64().unwrap(),
            REL,
            &format!("exact {b},{cc}"),
        );
        let chi = mcnemar(b, cc, McNemarMethod::ChiSquare).unwrap();
        close(chi.statistic, c["chi2"].as_f64().unwrap(), REL, "chi2");
        close(
            chi.p_value,
            c["chi2_p"].as_f64().unwrap(),
            REL_P,
            &format!("chi2 p {b},{cc}"),
        );
    }
    for c in cases["holm"].as_array().unwrap() {
        let got = holm(&floats(&c["p"])).unwrap();
        for (g, w) in got.iter().zip(floats(&c["adjusted"])) {
            close(*g, w, REL, "holm");
        }
    }
}

#[test]
fn bca_matches_scipy_given_the_same_replicates() {
    let data = fixture("descriptive");
    let cases = fixture("bootstrap");
    for c in cases["one_sample"].as_array().unwrap() {
        let x = floats(&data[c["data"].as_str().unwrap()]["data"]);
        let stat = match c["statistic"].as_str().unwrap() {
            "mean" => Statistic::Mean,
            "median" => Statistic::Median,
            _ => Statistic::Quantile(0.9),
        };
        let mut s = x.clone();
        s.sort_by(f64::total_cmp);
        let what = format!("{} {:?} {}", c["data"], stat, c["level"]);
        let estimate = stat.compute(&mut x.clone());
        close(estimate, c["estimate"].as_f64().unwrap(), REL, &what);
        let level = c["level"].as_f64().unwrap();
        let mut reps = floats(&c["replicates"]);
        let (lo, hi) = bca_interval(estimate, &mut reps, &[jackknife(&s, stat)], level).unwrap();
        let want = floats(&c["bca"]);
        close(lo, want[0], REL, &format!("{what} BCa lower"));
        close(hi, want[1], REL, &format!("{what} BCa upper"));
        let (plo, phi) = percentile_interval(&mut reps, level);
        let want = floats(&c["percentile"]);
        close(plo, want[0], REL, &format!("{what} percentile lower"));
        close(phi, want[1], REL, &format!("{what} percentile upper"));
    }
    let c = &cases["ratio_of_medians"];
    let mut a = floats(&data[c["a"].as_str().unwrap()]["data"]);
    let mut b = floats(&data[c["b"].as_str().unwrap()]["data"]);
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let estimate = c["estimate"].as_f64().unwrap();
    let mut reps = floats(&c["replicates"]);
    let jk = ratio_of_medians_jackknife(&a, &b);
    let (lo, hi) = bca_interval(estimate, &mut reps, &jk, 0.95).unwrap();
    let want = floats(&c["bca"]);
    close(lo, want[0], REL, "ratio BCa lower");
    close(hi, want[1], REL, "ratio BCa upper");
}

#[test]
fn early_stopping_matches_loadgen_definition() {
    let cases = fixture("early_stopping");
    let conf = cases["confidence"].as_f64().unwrap();
    for c in cases["server"].as_array().unwrap() {
        let (n, t, p) = (
            c["n"].as_u64().unwrap(),
            c["t"].as_u64().unwrap(),
            c["p"].as_f64().unwrap(),
        );
        assert_eq!(
            min_passing_queries(t, p, 0.0, conf),
            Ok(c["min_passing"].as_u64().unwrap()),
            "{c}"
        );
        let v = early_stopping(n, t, p, conf).unwrap();
        assert_eq!(v.required, c["required"].as_u64().unwrap());
        assert_eq!(v.passed, c["passed"].as_bool().unwrap());
        close_opt(
            max_claimable_percentile(n, t, conf),
            &c["max_claimable"],
            REL,
            "claimable",
        );
    }
    let data = fixture("descriptive");
    for c in cases["single_stream"].as_array().unwrap() {
        let x = floats(&data[c["data"].as_str().unwrap()]["data"]);
        let p = c["p"].as_f64().unwrap();
        match early_stopping_estimate(&x, p, conf) {
            Ok(e) => {
                assert_eq!(e.t, c["t"].as_u64().unwrap(), "{c}");
                close(e.estimate, c["estimate"].as_f64().unwrap(), REL, "estimate");
            }
            Err(StatsError::NotEnoughSamples { needed, .. }) => {
                assert_eq!(needed as u64, c["needed"].as_u64().unwrap(), "{c}")
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn mser5_matches_reference() {
    for (name, c) in fixture("steady_state").as_object().unwrap() {
        let m = steady_state::mser5(&floats(&c["series"])).unwrap();
        assert_eq!(
            m.truncation as u64,
            c["truncation"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(m.batches as u64, c["batches"].as_u64().unwrap(), "{name}");
        assert_eq!(m.steady, c["steady"].as_bool().unwrap(), "{name}");
        close(m.statistic, c["statistic"].as_f64().unwrap(), REL, name);
    }
}

#[test]
fn outliers_match_reference() {
    let data = fixture("descriptive");
    for (name, c) in fixture("outliers").as_object().unwrap() {
        let x = floats(&data[name]["data"]);
        let t = outliers::tukey(&x).unwrap();
        close(t.q1, c["q1"].as_f64().unwrap(), REL, "q1");
        close(t.q3, c["q3"].as_f64().unwrap(), REL, "q3");
        assert_eq!(t.mild, indices(&c["mild"]), "{name} mild");
        assert_eq!(t.severe, indices(&c["severe"]), "{name} severe");
        assert_eq!(
            outliers::mad_z(&x).unwrap().indices,
            indices(&c["mad"]),
            "{name} mad"
        );
    }
}

#[test]
fn normal_tail_matches_scipy() {
    let data = fixture("descriptive");
    for c in fixture("normal_tail").as_array().unwrap() {
        let x = floats(&data[c["data"].as_str().unwrap()]["data"]);
        let t = tail::normal_tail(&x, c["q"].as_f64().unwrap()).unwrap();
        close(t.z, c["z"].as_f64().unwrap(), REL, "z");
        close(t.normal, c["normal"].as_f64().unwrap(), REL, "normal");
        close(
            t.empirical,
            c["empirical"].as_f64().unwrap(),
            REL,
            "empirical",
        );
    }
}

#[test]
fn abc_of_the_mean_matches_an_independent_abcnon() {
    // gen_abc.py ports `abcnon` (R package bootstrap): numerical derivatives of the weighted
    // statistic in 60-digit arithmetic, no knowledge of the closed form used here.
    let data = fixture("descriptive");
    for c in fixture("abc").as_array().unwrap() {
        let x = floats(&data[c["data"].as_str().unwrap()]["data"]);
        let level = c["level"].as_f64().unwrap();
        let what = format!("{} {level}", c["data"]);
        let ci = abc_mean_ci(&x, level).unwrap();
        let want = floats(&c["abc"]);
        close(ci.lower, want[0], REL, &format!("{what} ABC lower"));
        close(ci.upper, want[1], REL, &format!("{what} ABC upper"));
        let cfg = BootstrapConfig {
            resamples: 2,
            level,
            seed: 0,
            method: Method::Abc,
        };
        assert_eq!(bootstrap_ci(&x, Statistic::Mean, &cfg), Ok(ci), "{what}");
        // ABC approximates BCa with infinitely many resamples: scipy's BCa with 100,000
        // resamples lands within a few percent of the half-width once n is moderate.
        if x.len() >= 50 {
            let bca = floats(&c["scipy_bca_100k"]);
            let half = (bca[1] - bca[0]) / 2.0;
            for (got, want) in [(ci.lower, bca[0]), (ci.upper, bca[1])] {
                assert!(
                    (got - want).abs() < 0.05 * half,
                    "{what}: ABC {got} vs scipy BCa {want} (half-width {half})"
                );
            }
        }
    }
    assert_eq!(
        abc_mean_ci(&[7.0; 10], 0.95).map(|c| (c.lower, c.upper)),
        Ok((7.0, 7.0))
    );
    assert!(abc_mean_ci(&[1.0], 0.95).is_err());
}

#[test]
fn replicate_intervals_match_scipy_and_the_log_interval_stays_positive() {
    // gen_replicates.py: scipy's t interval of the mean, and of the logarithms taken back.
    use yardstick_stats::descriptive::{geometric_t_interval, mean_t_interval};
    for c in fixture("replicates").as_array().unwrap() {
        let x = floats(&c["values"]);
        let level = c["level"].as_f64().unwrap();
        let what = format!("{x:?} at {level}");
        let (m, ci) = mean_t_interval(&x, level);
        let ci = ci.unwrap();
        let t = floats(&c["t"]);
        close(m, c["mean"].as_f64().unwrap(), REL, &format!("{what} mean"));
        close(ci.0, t[0], REL, &format!("{what} t lower"));
        close(ci.1, t[1], REL, &format!("{what} t upper"));
        let (g, gci) = geometric_t_interval(&x, level).unwrap();
        let gci = gci.unwrap();
        let log_t = floats(&c["log_t"]);
        close(
            g,
            c["gmean"].as_f64().unwrap(),
            REL,
            &format!("{what} gmean"),
        );
        close(gci.0, log_t[0], REL, &format!("{what} log-t lower"));
        close(gci.1, log_t[1], REL, &format!("{what} log-t upper"));
        assert!(gci.0 > 0.0 && gci.0 < g && g < gci.1, "{what}: {gci:?}");
    }
    // 10, 10 and 200 ms: Student's t on the values goes below zero, on the logarithms it cannot.
    assert!(mean_t_interval(&[10.0, 10.0, 200.0], 0.95).1.unwrap().0 < 0.0);
    // Not a positive quantity: no geometric interval; one value: no interval.
    assert_eq!(geometric_t_interval(&[3.0, 0.0, 4.0], 0.95), None);
    assert_eq!(geometric_t_interval(&[3.0, -1.0], 0.95), None);
    assert_eq!(geometric_t_interval(&[], 0.95), None);
    // Equal values are their own mean exactly (no ln/exp round trip), as Student's t gives it.
    assert_eq!(
        geometric_t_interval(&[3221.225472], 0.95),
        Some((3221.225472, None))
    );
    assert_eq!(
        geometric_t_interval(&[53.69068235013401; 3], 0.95),
        Some((
            53.69068235013401,
            Some((53.69068235013401, 53.69068235013401))
        ))
    );
}
