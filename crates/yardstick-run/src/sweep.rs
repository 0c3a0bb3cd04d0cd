//! Treatments: the combinations of a sweep's factor levels a run measures, each with the server
//! under test it starts (`spec.server`, `spec.sweep`). The plan gives every component and e2e
//! point of a treatment an id ending in its varying factors (`…/max_num_seqs=64`).

use std::collections::BTreeMap;
use std::time::Duration;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use yardstick_spec::sweep::{fill, grid, grid_size, levels};
use yardstick_spec::{Spec, StopSignal, SweepDesign};

/// How long the server may take to become ready when the spec says nothing.
pub const READY_TIMEOUT: Duration = Duration::from_secs(600);
/// Time between the stop signal and SIGKILL when the spec says nothing.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// One treatment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Treatment {
    /// `name=value` of each factor with more than one level, joined by `/` (what point ids end
    /// in); empty for a server without a sweep.
    pub id: String,
    /// Every factor's level, as text.
    pub values: BTreeMap<String, String>,
    /// The server it starts, with its placeholders filled (`{port}` stays until a start picks
    /// one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerPlan>,
}

/// The server under test of one treatment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerPlan {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Ready when this URL answers `expect`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_http: Option<String>,
    /// The status `ready_http` answers.
    pub expect: u16,
    /// Ready when a line of output contains this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_log: Option<String>,
    /// Infeasible when not ready after this long.
    #[serde(serialize_with = "secs")]
    pub timeout: Duration,
    /// The stop signal.
    pub signal: StopSignal,
    /// Then SIGKILL after this long.
    #[serde(serialize_with = "secs")]
    pub grace: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl ServerPlan {
    /// The plan with `{host}` and `{port}` filled.
    pub fn with_address(&self, host: &str, port: u16) -> ServerPlan {
        let v = address_values(host, port);
        ServerPlan {
            argv: self.argv.iter().map(|a| fill(a, &v)).collect(),
            env: self
                .env
                .iter()
                .map(|(k, x)| (k.clone(), fill(x, &v)))
                .collect(),
            ready_http: self.ready_http.as_ref().map(|h| fill(h, &v)),
            ready_log: self.ready_log.as_ref().map(|l| fill(l, &v)),
            ..self.clone()
        }
    }
}

/// `{host}` → `host`, `{port}` → `port`.
pub fn address_values(host: &str, port: u16) -> BTreeMap<String, String> {
    [
        (yardstick_spec::sweep::PORT.to_string(), port.to_string()),
        (yardstick_spec::sweep::HOST.to_string(), host.to_string()),
    ]
    .into()
}

/// The treatments of `spec`, in plan order; empty when it has neither a server nor a sweep.
/// Random and LHS designs draw from `sweep.seed`, so the plan is a function of the spec (a
/// resumed run finds the same treatments).
pub fn treatments(spec: &Spec) -> Vec<Treatment> {
    if spec.server.is_none() && spec.sweep.is_none() {
        return Vec::new();
    }
    let levels = spec.sweep.as_ref().map(levels).unwrap_or_default();
    let combos = match &spec.sweep {
        None => vec![Vec::new()],
        Some(sw) => {
            let n = sw.samples.unwrap_or(1).max(1) as usize;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(sw.seed.unwrap_or(0));
            match sw.design.unwrap_or(SweepDesign::Grid) {
                SweepDesign::Grid => grid(&levels),
                SweepDesign::Random => random(&levels, n, &mut rng),
                SweepDesign::Lhs => latin_hypercube(&levels, n, &mut rng),
            }
        }
    };
    combos
        .into_iter()
        .map(|combo| {
            let values: BTreeMap<String, String> = levels
                .iter()
                .zip(&combo)
                .map(|((name, ls), &k)| (name.clone(), ls[k].clone()))
                .collect();
            let id = levels
                .iter()
                .zip(&combo)
                .filter(|((_, ls), _)| ls.len() > 1)
                .map(|((name, ls), &k)| format!("{name}={}", ls[k]))
                .collect::<Vec<_>>()
                .join("/");
            let server = spec.server.as_ref().map(|s| {
                let ready = s.ready.clone().unwrap_or_default();
                ServerPlan {
                    argv: s
                        .command
                        .iter()
                        .flatten()
                        .map(|a| fill(a, &values))
                        .collect(),
                    env: s
                        .env
                        .iter()
                        .map(|(k, v)| (k.clone(), fill(v, &values)))
                        .collect(),
                    ready_http: ready.http.map(|h| fill(&h, &values)),
                    expect: ready.expect.unwrap_or(200),
                    ready_log: ready.log.map(|l| fill(&l, &values)),
                    timeout: ready.timeout.map_or(READY_TIMEOUT, |t| t.0),
                    signal: s
                        .stop
                        .as_ref()
                        .and_then(|x| x.signal)
                        .unwrap_or(StopSignal::SIGTERM),
                    grace: s
                        .stop
                        .as_ref()
                        .and_then(|x| x.grace)
                        .map_or(STOP_GRACE, |g| g.0),
                }
            });
            Treatment { id, values, server }
        })
        .collect()
}

/// `n` distinct combinations drawn from the grid (all of it, shuffled, when `n` is as large).
pub(crate) fn random(
    levels: &[(String, Vec<String>)],
    n: usize,
    rng: &mut impl Rng,
) -> Vec<Vec<usize>> {
    let size = grid_size(levels);
    if size <= 100_000 {
        let mut all = grid(levels);
        all.shuffle(rng);
        all.truncate(n);
        return all;
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    while out.len() < n {
        let c: Vec<usize> = levels
            .iter()
            .map(|(_, ls)| rng.random_range(0..ls.len()))
            .collect();
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// A Latin hypercube over the levels: for each factor, the `n` treatments take strata
/// `0..n` of its range (a level each, so every level is used about `n / levels` times),
/// shuffled independently; repeated combinations are kept once.
pub(crate) fn latin_hypercube(
    levels: &[(String, Vec<String>)],
    n: usize,
    rng: &mut impl Rng,
) -> Vec<Vec<usize>> {
    let columns: Vec<Vec<usize>> = levels
        .iter()
        .map(|(_, ls)| {
            let mut col: Vec<usize> = (0..n)
                .map(|i| {
                    let u: f64 = rng.random();
                    (((i as f64 + u) / n as f64) * ls.len() as f64) as usize
                })
                .map(|k| k.min(ls.len() - 1))
                .collect();
            col.shuffle(rng);
            col
        })
        .collect();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let c: Vec<usize> = columns.iter().map(|col| col[i]).collect();
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> Spec {
        let checked = yardstick_spec::check_str(yaml);
        checked.spec.and_then(|r| r.spec).expect("decodes")
    }

    const HEAD: &str = "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata: {name: s}\nspec:\n  mode: exploratory\n  trials: {replicates: 1}\n  server: {command: [srv, --port, \"{port}\", --slots, \"{slots}\", --m, \"{m}\"], ready: {http: \"http://127.0.0.1:{port}/health\"}}\n  layers: {component: [{kind: serve, target: {url: \"http://127.0.0.1:{port}\", model: \"{m}\"}}]}\n";

    #[test]
    fn a_grid_fills_the_command_and_names_varying_factors_only() {
        let s = spec(&format!(
            "{HEAD}  sweep: {{factors: {{slots: [1, 4], m: [tiny]}}}}\n"
        ));
        let t = treatments(&s);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].id, "slots=1");
        assert_eq!(t[1].id, "slots=4");
        let server = t[1].server.as_ref().unwrap();
        assert_eq!(
            server.argv,
            ["srv", "--port", "{port}", "--slots", "4", "--m", "tiny"]
        );
        let live = server.with_address("127.0.0.1", 9000);
        assert_eq!(live.argv[2], "9000");
        assert_eq!(
            live.ready_http.as_deref(),
            Some("http://127.0.0.1:9000/health")
        );
        assert_eq!(server.timeout, READY_TIMEOUT);
    }

    #[test]
    fn random_and_lhs_designs_are_seeded_distinct_and_spread() {
        let s = spec(&format!(
            "{HEAD}  sweep: {{factors: {{slots: [1, 2, 3, 4], m: [a, b, c, d]}}, design: random, samples: 6, seed: 7}}\n"
        ));
        let a = treatments(&s);
        assert_eq!(a.len(), 6);
        assert_eq!(a, treatments(&s), "the same seed gives the same treatments");
        let mut ids: Vec<_> = a.iter().map(|t| t.id.clone()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 6, "distinct");

        let s = spec(&format!(
            "{HEAD}  sweep: {{factors: {{slots: [1, 2, 3, 4], m: [a, b, c, d]}}, design: lhs, samples: 8, seed: 1}}\n"
        ));
        let t = treatments(&s);
        assert!(t.len() >= 6 && t.len() <= 8, "{}", t.len());
        // Each level of each factor appears twice among 8 samples (before duplicates go).
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let levels = levels(s.sweep.as_ref().unwrap());
        let raw = latin_hypercube(&levels, 8, &mut rng);
        for f in 0..2 {
            for level in 0..4 {
                let uses = raw.iter().filter(|c| c[f] == level).count();
                assert!(uses >= 1, "factor {f} level {level} unused in {raw:?}");
            }
        }
    }

    #[test]
    fn a_server_without_a_sweep_is_one_treatment() {
        let t = treatments(&spec(HEAD));
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].id, "");
    }
}
