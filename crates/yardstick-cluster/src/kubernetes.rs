//! The manifests of a run on Kubernetes with Kueue (`yardstick k8s render`), built from
//! k8s-openapi's typed API objects (Kubernetes [`KUBERNETES_VERSION`]):
//!
//! * a ConfigMap with the frozen spec, mounted at `/spec/spec.yaml`;
//! * a headless Service (`clusterIP: None`) over the run's pods, the pods' `subdomain`: pod `i`
//!   is `<job>-<i>.<service>`, and pod 0's name is `MASTER_ADDR` for rank rendezvous;
//! * an Indexed Job (`completionMode: Indexed`, completions = parallelism = nodes × tasksPerNode)
//!   whose pods run `yardstick run /spec/spec.yaml --shard $(JOB_COMPLETION_INDEX)/N
//!   --shard-dir /results/shards/$(YARDSTICK_JOB_NAME)`, or a CronJob with that Job as its
//!   template (`--schedule`);
//! * Kueue: the `kueue.x-k8s.io/queue-name` label and `suspend: true` when `execution.queue` is
//!   set (Kueue unsuspends the Job when it admits it), the pods' `priorityClassName`, resource
//!   requests and limits (CPU, memory, `nvidia.com/gpu`), topology-aware placement
//!   (`kueue.x-k8s.io/podset-required-topology`) for a fixed topology and one pod per node
//!   (required pod anti-affinity on `kubernetes.io/hostname`) for exclusive placement;
//! * results pushed to a team server (`--push`, the token from a Secret) and/or written to a
//!   PersistentVolumeClaim mounted at `/results` (`--pvc`; required with more than one pod, as
//!   the pods' shared shard directory).
//!
//! Everything is deterministic: maps are sorted, names come from the spec's name (DNS-1123).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar,
    EnvVarSource, ObjectFieldSelector, PersistentVolumeClaimVolumeSource, PodAffinityTerm,
    PodAntiAffinity, PodSpec, PodTemplateSpec, ResourceRequirements, SecretKeySelector, Service,
    ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde::Serialize;
use yardstick_spec::{BenchmarkRun, Execution, Topology};

/// The Kubernetes release whose API the manifests are typed against (k8s-openapi's `v1_37`).
pub const KUBERNETES_VERSION: &str = "1.37";
/// Where the frozen spec is mounted in the pods.
pub const SPEC_PATH: &str = "/spec/spec.yaml";
/// Where the results volume (the PersistentVolumeClaim, or an emptyDir) is mounted.
pub const RESULTS_MOUNT: &str = "/results";
/// The store the pods write runs to, on the results volume.
pub const STORE_PATH: &str = "/results/store";
/// Kueue's queue label.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Kueue's annotation for a pod set that must land in one domain of a topology level.
pub const REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-required-topology";
/// The port of rank rendezvous (`MASTER_PORT`, torch.distributed's default).
pub const RENDEZVOUS_PORT: i32 = 29500;
/// The label every object and pod of a run carries, with the run's name.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Push the finished run to this team server (`yardstick run --push URL` in pod 0).
    pub push: Option<String>,
    /// The Secret holding the push token (key `token`); default `yardstick-token`.
    pub token_secret: Option<String>,
    /// A PersistentVolumeClaim (ReadWriteMany with more than one pod) for the store and the
    /// shard directory.
    pub pvc: Option<String>,
    /// A CronJob on this schedule instead of a Job (`0 3 * * *`).
    pub schedule: Option<String>,
}

/// One rendered object.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Object {
    /// The file it is written to (applied in this order by `kubectl apply -f DIR`).
    pub file: String,
    /// `ConfigMap`, `Service`, `Job`, `CronJob`.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// The object as the API takes it.
    #[serde(skip)]
    pub value: serde_json::Value,
}

/// The manifests of one spec.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Rendered {
    /// The Job's (or CronJob's) name, from the spec's name.
    pub name: String,
    /// Pods (shards, ranks): nodes × tasksPerNode.
    pub pods: u32,
    /// The Kubernetes API version the objects are typed against.
    pub kubernetes_version: String,
    /// The objects, in apply order.
    pub objects: Vec<Object>,
}

/// Why a spec cannot be rendered.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RenderError {
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

fn err(message: impl Into<String>, hint: impl Into<String>) -> RenderError {
    RenderError {
        message: message.into(),
        hint: hint.into(),
    }
}

/// `s` as a DNS-1123 label of at most `max` characters: lower case, `[a-z0-9-]`, starting and
/// ending with an alphanumeric; `yardstick` when nothing is left.
pub fn dns1123(s: &str, max: usize) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.truncate(max);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "yardstick".into()
    } else {
        out
    }
}

/// The number of pods of `x`: nodes × tasksPerNode.
pub fn pods(x: &Execution) -> u32 {
    x.nodes.unwrap_or(1).max(1) * x.tasks_per_node.unwrap_or(1).max(1)
}

fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".into(), "yardstick".into()),
        (INSTANCE_LABEL.into(), name.into()),
        ("app.kubernetes.io/managed-by".into(), "yardstick".into()),
    ])
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn value_env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

/// Renders the manifests of `spec` (whose exact text is `spec_text`), engine `kubernetes`.
pub fn render(
    spec: &BenchmarkRun,
    spec_text: &str,
    opts: &RenderOptions,
) -> Result<Rendered, RenderError> {
    let x = spec
        .spec
        .as_ref()
        .and_then(|s| s.execution.clone())
        .filter(|x| x.engine == Some(yardstick_spec::Engine::Kubernetes))
        .ok_or_else(|| {
            err(
                "the spec's `execution.engine` is not `kubernetes`",
                "add `execution: {engine: kubernetes, image: REGISTRY/yardstick:TAG, nodes: 2}`",
            )
        })?;
    let image = x.image.clone().filter(|i| !i.is_empty()).ok_or_else(|| {
        err(
            "`execution.image` is not set: the pods need an image with yardstick on its PATH",
            "add `image: ghcr.io/your-org/yardstick:0.1` to `execution`",
        )
    })?;
    let n = pods(&x);
    if opts.push.is_none() && opts.pvc.is_none() {
        return Err(err(
            "the results would stay in the pods: give them somewhere to go",
            "add --push URL (the team server) and/or --pvc NAME (a PersistentVolumeClaim)",
        ));
    }
    if n > 1 && opts.pvc.is_none() {
        return Err(err(
            format!(
                "{n} pods share a shard directory (the start-time barrier and each pod's \
                 shard), and only a PersistentVolumeClaim is shared between pods"
            ),
            "add --pvc NAME (a ReadWriteMany claim); --push still sends the merged run",
        ));
    }
    let placement = x.placement.clone().unwrap_or_default();
    let exclusive = placement.exclusive == Some(true);
    if exclusive && x.tasks_per_node.unwrap_or(1) > 1 {
        return Err(err(
            "exclusive placement on Kubernetes is one pod per node, but `tasksPerNode` is more \
             than 1",
            "set `tasksPerNode: 1` and `nodes` to the pods you want (each pod gets the node's \
             GPUs through `gpusPerTask`)",
        ));
    }
    let topology_key = placement.topology_key.clone().filter(|k| !k.is_empty());
    if placement.topology == Some(Topology::Fixed) && topology_key.is_none() {
        return Err(err(
            "`placement.topology: fixed` on Kubernetes needs the node label of the topology \
             level every pod must share",
            "add `topologyKey: cloud.google.com/gce-topology-block` (a level of Kueue's \
             Topology)",
        ));
    }
    let spec_name = spec
        .metadata
        .as_ref()
        .and_then(|m| m.name.clone())
        .unwrap_or_default();
    // 40 characters: a CronJob's Jobs add 11, their pods `-<index>` and 5 more.
    let name = dns1123(&format!("yardstick-{spec_name}"), 40);
    let spec_cm = format!("{name}-spec");
    let mut all_labels = labels(&name);
    if let Some(q) = &x.queue {
        all_labels.insert(QUEUE_LABEL.into(), q.clone());
    }
    let meta = |n: &str, l: &BTreeMap<String, String>| ObjectMeta {
        name: Some(n.into()),
        labels: Some(l.clone()),
        ..Default::default()
    };

    let config_map = ConfigMap {
        metadata: meta(&spec_cm, &labels(&name)),
        data: Some(BTreeMap::from([("spec.yaml".into(), spec_text.into())])),
        ..Default::default()
    };
    let service = Service {
        metadata: meta(&name, &labels(&name)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            // Ranks find each other before any pod is ready.
            publish_not_ready_addresses: Some(true),
            selector: Some(BTreeMap::from([(INSTANCE_LABEL.into(), name.clone())])),
            ports: Some(vec![ServicePort {
                name: Some("rendezvous".into()),
                port: RENDEZVOUS_PORT,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };

    let mut args = vec![
        "run".to_string(),
        SPEC_PATH.into(),
        "--store".into(),
        STORE_PATH.into(),
        "--shard".into(),
        format!("$(JOB_COMPLETION_INDEX)/{n}"),
        "--shard-dir".into(),
        format!("{RESULTS_MOUNT}/shards/$(YARDSTICK_JOB_NAME)"),
    ];
    let completion_index = "metadata.annotations['batch.kubernetes.io/job-completion-index']";
    let mut env = vec![
        field_env("JOB_COMPLETION_INDEX", completion_index),
        field_env(
            "YARDSTICK_JOB_NAME",
            "metadata.labels['batch.kubernetes.io/job-name']",
        ),
        field_env("YARDSTICK_NODE_NAME", "spec.nodeName"),
        // Join keys of results, telemetry and live series (docs/warehouse.md).
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        // Rank rendezvous (torch.distributed's names): pod 0 through the headless Service.
        field_env("RANK", completion_index),
        value_env("WORLD_SIZE", n.to_string()),
        value_env("MASTER_ADDR", format!("$(YARDSTICK_JOB_NAME)-0.{name}")),
        value_env("MASTER_PORT", RENDEZVOUS_PORT.to_string()),
    ];
    if let Some(url) = &opts.push {
        args.extend(["--push".into(), url.clone()]);
        env.push(EnvVar {
            name: "YARDSTICK_TOKEN".into(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: opts
                        .token_secret
                        .clone()
                        .unwrap_or_else(|| "yardstick-token".into()),
                    key: "token".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    let mut resources = BTreeMap::new();
    if let Some(c) = x.cpus_per_task {
        resources.insert("cpu".to_string(), Quantity(c.to_string()));
    }
    if let Some(m) = x
        .memory
        .as_deref()
        .and_then(|m| yardstick_spec::units::parse_bytes(m).ok())
    {
        // `memory` is per node; a pod is one of its tasks.
        let per_pod = m / u64::from(x.tasks_per_node.unwrap_or(1).max(1));
        resources.insert(
            "memory".to_string(),
            Quantity(format!("{}Mi", per_pod.div_ceil(1 << 20).max(1))),
        );
    }
    if let Some(g) = x.gpus_per_task.filter(|g| *g > 0) {
        resources.insert("nvidia.com/gpu".to_string(), Quantity(g.to_string()));
    }
    let container = Container {
        name: "yardstick".into(),
        image: Some(image),
        command: Some(vec!["yardstick".into()]),
        args: Some(args),
        env: Some(env),
        resources: (!resources.is_empty()).then(|| ResourceRequirements {
            limits: Some(resources.clone()),
            requests: Some(resources),
            ..Default::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "results".into(),
                mount_path: RESULTS_MOUNT.into(),
                ..Default::default()
            },
            VolumeMount {
                name: "spec".into(),
                mount_path: "/spec".into(),
                read_only: Some(true),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let results = match &opts.pvc {
        Some(claim) => Volume {
            name: "results".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.clone(),
                ..Default::default()
            }),
            ..Default::default()
        },
        None => Volume {
            name: "results".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        },
    };
    let affinity = exclusive.then(|| Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([(INSTANCE_LABEL.into(), name.clone())])),
                    ..Default::default()
                }),
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    let annotations = topology_key
        .filter(|_| placement.topology == Some(Topology::Fixed))
        .map(|k| BTreeMap::from([(REQUIRED_TOPOLOGY.to_string(), k)]));
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(&name)),
            annotations,
            ..Default::default()
        }),
        spec: Some(PodSpec {
            restart_policy: Some("Never".into()),
            subdomain: Some(name.clone()),
            priority_class_name: x.priority_class.clone(),
            affinity,
            containers: vec![container],
            volumes: Some(vec![
                results,
                Volume {
                    name: "spec".into(),
                    config_map: Some(ConfigMapVolumeSource {
                        name: spec_cm.clone(),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
    };
    let n_i32 = i32::try_from(n).unwrap_or(i32::MAX);
    let job_spec = JobSpec {
        completion_mode: Some("Indexed".into()),
        completions: Some(n_i32),
        parallelism: Some(n_i32),
        // A pod that fails is a failed measurement, not something to retry on other terms.
        backoff_limit: Some(0),
        active_deadline_seconds: x.time_limit.map(|t| t.0.as_secs().max(1) as i64),
        // Kueue admits the Job by unsuspending it.
        suspend: x.queue.as_ref().map(|_| true),
        ttl_seconds_after_finished: Some(7 * 24 * 3600),
        template,
        ..Default::default()
    };
    let mut objects = vec![
        Object {
            file: "00-configmap.yaml".into(),
            kind: "ConfigMap".into(),
            name: spec_cm.clone(),
            value: to_value(&config_map),
        },
        Object {
            file: "01-service.yaml".into(),
            kind: "Service".into(),
            name: name.clone(),
            value: to_value(&service),
        },
    ];
    match &opts.schedule {
        Some(schedule) => {
            let cron = CronJob {
                metadata: meta(&name, &labels(&name)),
                spec: CronJobSpec {
                    schedule: schedule.clone(),
                    // One run at a time: overlapping runs would measure each other.
                    concurrency_policy: Some("Forbid".into()),
                    successful_jobs_history_limit: Some(3),
                    failed_jobs_history_limit: Some(3),
                    job_template: JobTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(all_labels),
                            ..Default::default()
                        }),
                        spec: Some(job_spec),
                    },
                    ..Default::default()
                },
                ..Default::default()
            };
            objects.push(Object {
                file: "02-cronjob.yaml".into(),
                kind: "CronJob".into(),
                name: name.clone(),
                value: to_value(&cron),
            });
        }
        None => {
            let job = Job {
                metadata: meta(&name, &all_labels),
                spec: Some(job_spec),
                ..Default::default()
            };
            objects.push(Object {
                file: "02-job.yaml".into(),
                kind: "Job".into(),
                name: name.clone(),
                value: to_value(&job),
            });
        }
    }
    Ok(Rendered {
        name,
        pods: n,
        kubernetes_version: KUBERNETES_VERSION.into(),
        objects,
    })
}

/// An API object as JSON.
fn to_value<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("API objects are JSON")
}

impl Rendered {
    /// Every object as YAML, by file name.
    pub fn files(&self) -> Vec<(String, String)> {
        self.objects
            .iter()
            .map(|o| (o.file.clone(), crate::yaml::to_yaml(&o.value)))
            .collect()
    }

    /// Writes the manifests into `dir`, replacing the ones a previous render wrote there.
    pub fn write_to(&self, dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for stale in [
            "00-configmap.yaml",
            "01-service.yaml",
            "02-job.yaml",
            "02-cronjob.yaml",
        ] {
            let _ = std::fs::remove_file(dir.join(stale));
        }
        for (file, text) in self.files() {
            std::fs::write(dir.join(file), text)?;
        }
        Ok(())
    }
}

/// Where a kubeconfig is, if anywhere: `KUBECONFIG`'s first existing file, `~/.kube/config`,
/// or the service account of a pod (`in-cluster`).
pub fn kubeconfig() -> Option<String> {
    use std::path::Path;
    if let Some(v) = std::env::var_os("KUBECONFIG") {
        if let Some(p) = std::env::split_paths(&v).find(|p| p.is_file()) {
            return Some(p.display().to_string());
        }
        return None;
    }
    if let Some(home) = std::env::var_os("HOME") {
        let p = Path::new(&home).join(".kube").join("config");
        if p.is_file() {
            return Some(p.display().to_string());
        }
    }
    (std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
        && Path::new("/var/run/secrets/kubernetes.io/serviceaccount/token").is_file())
    .then(|| "in-cluster".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(execution: &str) -> (BenchmarkRun, String) {
        let text = format!(
            "apiVersion: yardstick/v1\nkind: BenchmarkRun\nmetadata:\n  name: llama-3.serve_x\n\
             spec:\n  mode: realism\n  trials: {{replicates: 3}}\n  execution: {execution}\n  layers:\n    micro:\n      - kind: memory\n"
        );
        // Methodology rules aside (trials, mode): what matters here is the decoded section.
        let checked = yardstick_spec::check_str(&text);
        (checked.spec.expect("the spec decodes"), text)
    }

    fn job(r: &Rendered) -> &serde_json::Value {
        &r.objects.iter().find(|o| o.kind == "Job").unwrap().value
    }

    #[test]
    fn names_are_dns_1123_labels() {
        assert_eq!(dns1123("Llama 3 / serve!", 40), "llama-3-serve");
        assert_eq!(dns1123("--", 40), "yardstick");
        assert_eq!(dns1123(&"a".repeat(50), 40).len(), 40);
        assert_eq!(dns1123("ab-cd", 3), "ab");
    }

    #[test]
    fn an_indexed_job_with_kueue_resources_and_placement() {
        let (s, text) = spec(
            "{engine: kubernetes, image: 'r/ys:1', nodes: 2, tasksPerNode: 1, cpusPerTask: 8, \
             gpusPerTask: 4, memory: 64GiB, timeLimit: 1h, queue: team-a, priorityClass: bench, \
             placement: {exclusive: true, topology: fixed, topologyKey: rack}}",
        );
        let r = render(
            &s,
            &text,
            &RenderOptions {
                pvc: Some("results".into()),
                push: Some("https://ys.internal".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(r.name, "yardstick-llama-3-serve-x");
        assert_eq!(r.pods, 2);
        let j = job(&r);
        assert_eq!(j["metadata"]["labels"][QUEUE_LABEL], "team-a");
        assert_eq!(j["spec"]["suspend"], true);
        assert_eq!(j["spec"]["completionMode"], "Indexed");
        assert_eq!(j["spec"]["completions"], 2);
        assert_eq!(j["spec"]["parallelism"], 2);
        assert_eq!(j["spec"]["activeDeadlineSeconds"], 3600);
        let pod = &j["spec"]["template"];
        assert_eq!(pod["metadata"]["annotations"][REQUIRED_TOPOLOGY], "rack");
        assert_eq!(pod["spec"]["priorityClassName"], "bench");
        assert_eq!(pod["spec"]["subdomain"], "yardstick-llama-3-serve-x");
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "4");
        assert_eq!(c["resources"]["requests"]["memory"], "65536Mi");
        assert_eq!(c["resources"]["requests"]["cpu"], "8");
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            args.windows(2)
                .any(|w| w == ["--shard", "$(JOB_COMPLETION_INDEX)/2"])
        );
        assert!(
            args.windows(2)
                .any(|w| w == ["--push", "https://ys.internal"])
        );
        let env = c["env"].as_array().unwrap();
        assert!(env.iter().any(|e| e["name"] == "YARDSTICK_TOKEN"
            && e["valueFrom"]["secretKeyRef"]["name"] == "yardstick-token"));
        assert!(env.iter().any(|e| e["name"] == "MASTER_ADDR"
            && e["value"] == "$(YARDSTICK_JOB_NAME)-0.yardstick-llama-3-serve-x"));
        assert_eq!(
            pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                [0]["topologyKey"],
            "kubernetes.io/hostname"
        );
        let cm = &r.objects[0].value;
        assert_eq!(cm["data"]["spec.yaml"], text.as_str());
        let svc = &r.objects[1].value;
        assert_eq!(svc["spec"]["clusterIP"], "None");
    }

    #[test]
    fn without_a_queue_the_job_is_not_suspended_and_a_schedule_makes_a_cronjob() {
        let (s, text) = spec("{engine: kubernetes, image: 'r/ys:1'}");
        let r = render(
            &s,
            &text,
            &RenderOptions {
                push: Some("http://ys:8686".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(job(&r)["spec"].get("suspend").is_none());
        assert!(job(&r)["metadata"]["labels"].get(QUEUE_LABEL).is_none());
        let r = render(
            &s,
            &text,
            &RenderOptions {
                push: Some("http://ys:8686".into()),
                schedule: Some("0 3 * * *".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let cron = &r.objects[2].value;
        assert_eq!(cron["kind"], "CronJob");
        assert_eq!(cron["spec"]["schedule"], "0 3 * * *");
        assert_eq!(
            cron["spec"]["jobTemplate"]["spec"]["completionMode"],
            "Indexed"
        );
    }

    #[test]
    fn what_cannot_be_rendered_says_why() {
        let (s, text) = spec("{engine: kubernetes, image: 'r/ys:1', nodes: 2}");
        let no_dest = render(&s, &text, &RenderOptions::default()).unwrap_err();
        assert!(no_dest.hint.contains("--push"), "{no_dest}");
        let no_pvc = render(
            &s,
            &text,
            &RenderOptions {
                push: Some("http://x".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(no_pvc.hint.contains("--pvc"), "{no_pvc}");
        let (s, text) = spec(
            "{engine: kubernetes, image: 'r/ys:1', tasksPerNode: 2, placement: {exclusive: true}}",
        );
        let e = render(
            &s,
            &text,
            &RenderOptions {
                pvc: Some("c".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.message.contains("one pod per node"), "{e}");
        let (s, text) = spec("{engine: kubernetes, image: 'r/ys:1', placement: {topology: fixed}}");
        let e = render(
            &s,
            &text,
            &RenderOptions {
                pvc: Some("c".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.hint.contains("topologyKey"), "{e}");
    }

    #[test]
    fn rendering_is_deterministic() {
        let (s, text) = spec("{engine: kubernetes, image: 'r/ys:1', nodes: 3, queue: q}");
        let o = RenderOptions {
            pvc: Some("c".into()),
            ..Default::default()
        };
        assert_eq!(
            render(&s, &text, &o).unwrap().files(),
            render(&s, &text, &o).unwrap().files()
        );
    }
}
