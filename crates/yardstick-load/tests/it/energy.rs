//! Energy per output token from an accelerator's counter, read at a point's start and end:
//! a counter standing in for NVML's total energy (a constant 200 W) drives a real point
//! against the simulator, and the figure is that power over the point's output tokens.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use yardstick_load::power::{Energy, EnergyCounter};
use yardstick_load::{Api, ClientConfig, LoadModel, Progress, ServeBench, Slo, StopRule};

/// Millijoules of a device drawing 200 W since `t0`, as NVML's total-energy counter reads.
#[derive(Debug)]
struct ConstantPower {
    t0: Instant,
    readable: bool,
}

impl EnergyCounter for ConstantPower {
    fn source(&self) -> &'static str {
        "nvml"
    }
    fn read(&self) -> Option<Vec<u64>> {
        self.readable
            .then(|| vec![(self.t0.elapsed().as_secs_f64() * 200.0 * 1e3) as u64])
    }
    fn joules(&self, a: &[u64], b: &[u64]) -> f64 {
        (b[0] - a[0]) as f64 / 1e3
    }
}

fn bench(url: String, energy: Energy) -> ServeBench {
    ServeBench {
        client: ClientConfig {
            url,
            api: Api::Chat,
            stream: true,
            request_timeout: Duration::from_secs(30),
            bearer_env: None,
            max_idle: 1,
            ca_cert: None,
            retry: None,
        },
        model: "m".into(),
        models: None,
        kinds: None,
        token_check: false,
        trace_context: true,
        eval: None,
        images: None,
        scenarios: vec!["D(8,10)".into()],
        loads: vec![LoadModel::Concurrency(4)],
        stop: StopRule {
            max_requests: Some(40),
            max_duration: None,
            warmup_requests: 0,
            warmup_duration: None,
        },
        slo: Slo::default(),
        seed: 1,
        force_output: true,
        shard: (0, 1),
        start_at: None,
        cancel: CancellationToken::new(),
        dataset: None,
        sessions: None,
        tokenizer: None,
        server_metrics: None,
        cost: None,
        energy: Some(energy),
        trace: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accelerator_energy_is_power_times_the_window_over_output_tokens() {
    let cfg = yardstick_sim::SimConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(2),
        ..Default::default()
    };
    let sim = yardstick_sim::Sim::bind(cfg).await.unwrap();
    let url = format!("http://{}", sim.local_addr());
    tokio::spawn(sim.serve(std::future::pending()));
    let empty = tempfile::tempdir().unwrap();
    let gpu = Arc::new(ConstantPower {
        t0: Instant::now(),
        readable: true,
    });
    let b = bench(
        url.clone(),
        Energy::Accelerators(gpu, empty.path().to_path_buf()),
    );
    let start = Instant::now();
    let r = b
        .run(Arc::new(Progress::default()), |_, _, _| {})
        .await
        .unwrap();
    let wall = start.elapsed().as_secs_f64();
    let s = &r[0].summary;
    assert_eq!(s.energy_source.as_deref(), Some("nvml"));
    let tokens = s.output_token_throughput * s.duration_s;
    assert_eq!(tokens.round(), 400.0);
    let j = s.energy_j_per_output_token.unwrap();
    // The counters are read around the point: at least its measured window, at most the wall
    // time of the whole run, at 200 W.
    let (lo, hi) = (200.0 * s.duration_s / tokens, 200.0 * wall / tokens);
    assert!(
        j >= lo * 0.99 && j <= hi * 1.01,
        "{j} J/token not in [{lo}, {hi}]"
    );

    // Accelerators that cannot be read fall back to RAPL, here absent: said, not estimated.
    let dead = Arc::new(ConstantPower {
        t0: Instant::now(),
        readable: false,
    });
    let b = bench(url, Energy::Accelerators(dead, empty.path().to_path_buf()));
    let r = b
        .run(Arc::new(Progress::default()), |_, _, _| {})
        .await
        .unwrap();
    let s = &r[0].summary;
    assert!(s.energy_j_per_output_token.is_none());
    assert!(
        s.energy_unavailable.as_deref().unwrap().contains("RAPL"),
        "{:?}",
        s.energy_unavailable
    );
}
