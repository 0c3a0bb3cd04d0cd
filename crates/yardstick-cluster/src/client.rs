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
) -> Result<(), String>
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
    .map_err(|e| format!("applying {name}: {e}"))
}

/// Applies `r` in `namespace` (default: the kubeconfig context's) and, for a Job, follows it
/// until it completes or fails, telling `log` each change of state.
pub fn submit(
    r: &Rendered,
    namespace: Option<&str>,
    log: &mut dyn FnMut(&str),
) -> Result<SubmitOut, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let config = Config::infer().await.map_err(|e| e.to_string())?;
        let ns = namespace.map_or_else(|| config.default_namespace.clone(), str::to_string);
        let client = Client::try_from(config).map_err(|e| e.to_string())?;
        for o in &r.objects {
            match o.kind.as_str() {
                "ConfigMap" => apply::<ConfigMap>(&client, &ns, &o.name, &o.value).await?,
                "Service" => apply::<Service>(&client, &ns, &o.name, &o.value).await?,
                "Job" => apply::<Job>(&client, &ns, &o.name, &o.value).await?,
                "CronJob" => apply::<CronJob>(&client, &ns, &o.name, &o.value).await?,
                other => return Err(format!("no way to apply a {other}")),
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
                .map_err(|e| format!("reading job {}: {e}", r.name))?;
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
