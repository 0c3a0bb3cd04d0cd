//! `yardstick k8s submit`: applies rendered manifests with the Kubernetes API (kube-rs,
//! server-side apply as field manager `yardstick`) and follows the Job to its end (feature
//! `client`). The kubeconfig is found as kubectl finds it (`KUBECONFIG`, `~/.kube/config`, or
//! the pod's service account).

use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use kube::api::{Api, ListParams, LogParams, Patch, PatchParams};
use kube::{Client, Config};
use serde::Serialize;

use crate::kubernetes::Rendered;

/// What `yardstick k8s submit --json` prints.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SubmitOut {
    /// `Job` or `CronJob`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// `Complete` or `Failed` (a Job followed to its end), `Scheduled` (a CronJob applied).
    pub state: String,
    /// Pods that succeeded.
    pub succeeded: i32,
    /// Pods that failed.
    pub failed: i32,
    /// The end of pod 0's output (the run it stored, and where it pushed it), when the Job ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod0_log: Option<String>,
}

/// Why `yardstick k8s submit` could not apply the manifests or follow the Job.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The async runtime could not be built.
    #[error("{0}")]
    Runtime(std::io::Error),
    /// No kubeconfig (or service account) to reach a cluster with.
    #[error("{0}")]
    Config(kube::config::InferConfigError),
    /// The client could not be built from the configuration.
    #[error("{0}")]
    Client(kube::Error),
    /// The API server refused an object.
    #[error("applying {name}: {error}")]
    Apply {
        /// The object's name.
        name: String,
        /// The API's answer.
        error: kube::Error,
    },
    /// A rendered object of a kind this client does not apply.
    #[error("no way to apply a {0}")]
    UnknownKind(String),
    /// The Job could not be read back.
    #[error("reading job {name}: {error}")]
    ReadJob {
        /// The Job's name.
        name: String,
        /// The API's answer.
        error: kube::Error,
    },
}

/// The last lines of pod 0's output: the run it stored and where it went.
async fn pod0_log(client: &Client, ns: &str, job: &str) -> Option<String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await
        .ok()?;
    let pod0 = list.items.into_iter().find(|p| {
        p.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
            .is_some_and(|i| i == "0")
    })?;
    let name = pod0.metadata.name?;
    pods.logs(
        &name,
        &LogParams {
            container: Some("yardstick".into()),
            tail_lines: Some(40),
            ..Default::default()
        },
    )
    .await
    .ok()
}

async fn apply<K>(
    client: &Client,
    ns: &str,
    name: &str,
    value: &serde_json::Value,
) -> Result<(), SubmitError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.patch(
        name,
        &PatchParams::apply("yardstick").force(),
        &Patch::Apply(value),
    )
    .await
    .map(|_| ())
    .map_err(|error| SubmitError::Apply {
        name: name.to_string(),
        error,
    })
}

/// Applies `r` in `namespace` (default: the kubeconfig context's) and, for a Job, follows it
/// until it completes or fails, telling `log` each change of state.
pub fn submit(
    r: &Rendered,
    namespace: Option<&str>,
    log: &mut dyn FnMut(&str),
) -> Result<SubmitOut, SubmitError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SubmitError::Runtime)?;
    rt.block_on(async {
        let config = Config::infer().await.map_err(SubmitError::Config)?;
        let ns = namespace.map_or_else(|| config.default_namespace.clone(), str::to_string);
        let client = Client::try_from(config).map_err(SubmitError::Client)?;
        for o in &r.objects {
            match o.kind.as_str() {
                "ConfigMap" => apply::<ConfigMap>(&client, &ns, &o.name, &o.value).await?,
                "Service" => apply::<Service>(&client, &ns, &o.name, &o.value).await?,
                "Job" => apply::<Job>(&client, &ns, &o.name, &o.value).await?,
                "CronJob" => apply::<CronJob>(&client, &ns, &o.name, &o.value).await?,
                other => return Err(SubmitError::UnknownKind(other.to_string())),
            }
            log(&format!("applied {} {ns}/{}", o.kind, o.name));
        }
        if r.objects.iter().any(|o| o.kind == "CronJob") {
            return Ok(SubmitOut {
                kind: "CronJob".into(),
                name: r.name.clone(),
                namespace: ns,
                state: "Scheduled".into(),
                succeeded: 0,
                failed: 0,
                pod0_log: None,
            });
        }
        let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
        let mut last = String::new();
        loop {
            let job = jobs
                .get(&r.name)
                .await
                .map_err(|error| SubmitError::ReadJob {
                    name: r.name.clone(),
                    error,
                })?;
            let status = job.status.clone().unwrap_or_default();
            let condition = |t: &str| {
                status
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == t && c.status == "True")
            };
            let (succeeded, failed) = (status.succeeded.unwrap_or(0), status.failed.unwrap_or(0));
            let state = if condition("Complete") {
                "Complete".to_string()
            } else if condition("Failed") {
                "Failed".to_string()
            } else if job.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
                "Suspended (waiting for Kueue to admit it)".to_string()
            } else {
                format!(
                    "Running ({} active, {succeeded} succeeded, {failed} failed)",
                    status.active.unwrap_or(0)
                )
            };
            if state != last {
                log(&format!("job {ns}/{}: {state}", r.name));
                last = state.clone();
            }
            if state == "Complete" || state == "Failed" {
                let pod0_log = pod0_log(&client, &ns, &r.name).await;
                return Ok(SubmitOut {
                    kind: "Job".into(),
                    name: r.name.clone(),
                    namespace: ns,
                    state,
                    succeeded,
                    failed,
                    pod0_log,
                });
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    })
}
