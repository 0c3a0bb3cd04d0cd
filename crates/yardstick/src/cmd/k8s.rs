//! `yardstick k8s render|submit SPEC`: a run on Kubernetes with Kueue, as an Indexed Job whose
//! pods run `yardstick run --shard I/N` (`yardstick_cluster::kubernetes`, `yardstick_run::pods`).

use std::path::PathBuf;

use yardstick_cluster::kubernetes::{self, RenderOptions, Rendered};

use crate::cli::GlobalOpts;
use crate::exit::{Status, invalid};
use crate::output;

/// Run a spec on Kubernetes with Kueue: render its manifests, or submit them.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  yardstick k8s render bench.yaml -o k8s/\n  \
yardstick k8s submit bench.yaml --push https://yardstick.internal:8686"
)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub command: K8sCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum K8sCommand {
    /// Write the manifests of a spec with `execution.engine: kubernetes`.
    ///
    /// A ConfigMap with the frozen spec; a headless Service for rank rendezvous (pod 0 is
    /// MASTER_ADDR); an Indexed Job (completions = parallelism = nodes × tasksPerNode) whose pods
    /// run `yardstick run /spec/spec.yaml --shard $(JOB_COMPLETION_INDEX)/N --shard-dir ...`,
    /// labelled for Kueue (`kueue.x-k8s.io/queue-name`, created suspended) when `execution.queue`
    /// is set, with the spec's priority class, CPU, memory and `nvidia.com/gpu` requests, one pod
    /// per node for exclusive placement and Kueue's required topology for a fixed one; or, with
    /// --schedule, a CronJob running that Job. Results go to a team server (--push, the token
    /// from a Secret) and/or a PersistentVolumeClaim (--pvc, which more than one pod needs as
    /// their shared shard directory). Apply them with `kubectl apply -f DIR`.
    #[command(after_help = "Examples:\n  \
yardstick k8s render bench.yaml --push https://yardstick.internal:8686 -o k8s/\n  \
yardstick k8s render bench.yaml --pvc yardstick-results --push https://yardstick.internal:8686\n  \
yardstick k8s render bench.yaml --pvc yardstick-results --schedule '0 3 * * *'\n  \
kubectl create secret generic yardstick-token --from-literal=token=ysk_…\n  \
kubectl apply -f k8s/\n\n\
Exit status: 0 written; 2 invalid spec (file:line:col), not engine kubernetes, or options that \
cannot work (no destination for the results, several pods without --pvc). docs/kubernetes.md \
has the cluster side (Kueue, queues, collecting results).")]
    Render(RenderArgs),
    /// Apply the manifests with the Kubernetes API and follow the Job to its end.
    ///
    /// The objects are those of `k8s render` (server-side apply, field manager `yardstick`);
    /// the Job is followed until it completes or fails, and pod 0's output (the run it stored,
    /// and where it pushed it) is printed. Needs a kubeconfig (KUBECONFIG, ~/.kube/config) or to run inside a pod, and a yardstick
    /// built with the `kubernetes-client` feature (kube-rs). Without them it says so (exit 2):
    /// `yardstick k8s render` and `kubectl apply -f DIR` do the same.
    #[command(after_help = "Examples:\n  \
yardstick k8s submit bench.yaml --push https://yardstick.internal:8686\n  \
yardstick k8s submit bench.yaml --pvc yardstick-results --namespace perf\n  \
cargo install --path crates/yardstick --features kubernetes-client   # a build with the client\n\n\
Exit status: 0 the Job succeeded (or the CronJob was applied); 1 the Job failed; 2 invalid spec \
or options, no cluster configured, or a build without the client.")]
    Submit(SubmitArgs),
}

/// What to render.
#[derive(Debug, clap::Args)]
pub struct RenderOpts {
    /// The spec (`execution.engine: kubernetes`).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Pod 0 pushes the finished run to this team server (`yardstick run --push URL`).
    #[arg(long, value_name = "URL")]
    pub push: Option<String>,
    /// The Secret with the push token (key `token`), given to the pods as YARDSTICK_TOKEN.
    #[arg(
        long,
        default_value = "yardstick-token",
        value_name = "NAME",
        requires = "push"
    )]
    pub token_secret: String,
    /// A PersistentVolumeClaim mounted at /results in every pod: the store (/results/store)
    /// and the shard directory. ReadWriteMany when the Job has more than one pod.
    #[arg(long, value_name = "NAME")]
    pub pvc: Option<String>,
    /// A CronJob on this schedule (cron syntax, e.g. "0 3 * * *" for 03:00 every night) instead
    /// of a Job.
    #[arg(long, value_name = "CRON")]
    pub schedule: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub opts: RenderOpts,
    /// The directory the manifests are written to (one file per object, in apply order).
    #[arg(short, long, default_value = "k8s", value_name = "DIR")]
    pub output: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub opts: RenderOpts,
    /// Namespace (default: the kubeconfig context's).
    #[arg(long, short = 'n', value_name = "NS")]
    pub namespace: Option<String>,
}

/// What `yardstick k8s render --json` prints.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct RenderOut {
    /// The directory the manifests were written to.
    pub dir: PathBuf,
    /// The manifests.
    #[serde(flatten)]
    pub rendered: Rendered,
}

pub fn run(args: K8sArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    match args.command {
        K8sCommand::Render(a) => render_cmd(a, g),
        K8sCommand::Submit(a) => submit(a, g),
    }
}

/// Reads, checks and renders the spec of `o`: exit 2 with every diagnostic at file:line:col.
pub fn render_spec(o: &RenderOpts) -> anyhow::Result<Rendered> {
    let spec_dir = super::run::spec_dir(&o.spec);
    let (name, text, spec) = super::validate::checked_spec(&o.spec, Some(&spec_dir), "rendered")?;
    if let Some(x) = spec.spec.as_ref().and_then(|s| s.execution.as_ref()) {
        let group = yardstick_run::pods::PodGroup {
            index: 0,
            count: kubernetes::pods(x),
            dir: PathBuf::new(),
            timeout: std::time::Duration::ZERO,
        };
        if let Err(e) = yardstick_run::check_group_targets(&yardstick_run::plan(&spec), &group) {
            return Err(invalid(
                format!("{name}: {e}"),
                Some("give the serve target the URL of a server every pod reaches"),
            ));
        }
    }
    kubernetes::render(
        &spec,
        &text,
        &RenderOptions {
            push: o.push.clone(),
            token_secret: Some(o.token_secret.clone()),
            pvc: o.pvc.clone(),
            schedule: o.schedule.clone(),
        },
    )
    .map_err(|e| invalid(format!("{name}: {}", e.message), Some(&e.hint)))
}

fn render_cmd(a: RenderArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let r = render_spec(&a.opts)?;
    r.write_to(&a.output)?;
    if g.json {
        output::json(&RenderOut {
            dir: a.output.clone(),
            rendered: r,
        })?;
        return Ok(Status::Ok);
    }
    let kind = r.objects.last().map_or("Job", |o| o.kind.as_str());
    crate::output::outln!(
        "{} {}: {} pod(s), Kubernetes {} API; written to {}",
        kind,
        r.name,
        r.pods,
        r.kubernetes_version,
        a.output.display()
    )?;
    for o in &r.objects {
        crate::output::outln!(
            "  {}  {} {}",
            a.output.join(&o.file).display(),
            o.kind,
            o.name
        )?;
    }
    crate::output::outln!("next:")?;
    if a.opts.push.is_some() {
        crate::output::outln!(
            "  kubectl create secret generic {} --from-literal=token=$YARDSTICK_TOKEN  # once",
            a.opts.token_secret
        )?;
    }
    crate::output::outln!("  kubectl apply -f {}", a.output.display())?;
    if kind == "Job" {
        crate::output::outln!(
            "  kubectl wait --for=condition=complete --timeout=24h job/{}",
            r.name
        )?;
        crate::output::outln!(
            "  kubectl logs job/{} -c yardstick   # pod 0: the run",
            r.name
        )?;
    } else {
        crate::output::outln!(
            "  kubectl get cronjob {} ; kubectl get jobs -l app.kubernetes.io/instance={}",
            r.name,
            r.name
        )?;
    }
    Ok(Status::Ok)
}

fn submit(a: SubmitArgs, g: &GlobalOpts) -> anyhow::Result<Status> {
    let r = render_spec(&a.opts)?;
    let Some(config) = kubernetes::kubeconfig() else {
        return Err(invalid(
            "no Kubernetes cluster is configured: no kubeconfig (KUBECONFIG, ~/.kube/config) and \
             not inside a pod",
            Some(&format!(
                "point KUBECONFIG at the cluster's config, or write the manifests with `yardstick \
                 k8s render {} -o DIR` and apply them with `kubectl apply -f DIR`",
                a.opts.spec.display()
            )),
        ));
    };
    submit_with(&r, &config, a.namespace.as_deref(), &a.opts, g)
}

#[cfg(not(feature = "kubernetes-client"))]
fn submit_with(
    _r: &Rendered,
    config: &str,
    _namespace: Option<&str>,
    o: &RenderOpts,
    _g: &GlobalOpts,
) -> anyhow::Result<Status> {
    Err(invalid(
        format!(
            "this yardstick was built without the Kubernetes client (cargo feature \
             `kubernetes-client`), so it cannot submit to the cluster of {config}"
        ),
        Some(&format!(
            "build it with `cargo install --path crates/yardstick --features kubernetes-client`, \
             or run `yardstick k8s render {} -o DIR` and `kubectl apply -f DIR`",
            o.spec.display()
        )),
    ))
}

#[cfg(feature = "kubernetes-client")]
fn submit_with(
    r: &Rendered,
    config: &str,
    namespace: Option<&str>,
    _o: &RenderOpts,
    g: &GlobalOpts,
) -> anyhow::Result<Status> {
    let out = yardstick_cluster::client::submit(r, namespace, &mut |line| output::info(line))
        .map_err(|e| anyhow::anyhow!("submitting to the cluster of {config}: {e}"))?;
    if g.json {
        output::json(&out)?;
    } else {
        crate::output::outln!("{} {}/{}: {}", out.kind, out.namespace, out.name, out.state)?;
        if let Some(log) = &out.pod0_log {
            crate::output::outln!("pod 0's output (its run; with --push, where it went):")?;
            for line in log.lines() {
                crate::output::outln!("  {line}")?;
            }
        }
    }
    Ok(if out.state == "Failed" {
        Status::Failure
    } else {
        Status::Ok
    })
}
