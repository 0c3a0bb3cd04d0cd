//! Join keys: the names that tie a run's requests, telemetry, logs and live series to the
//! cluster around them — this machine, its Slurm job and step, its Kubernetes pod, its rank.
//! Each is read from where the engine puts it (Slurm's `SLURM_*` variables; a pod's
//! `POD_NAMESPACE`/`POD_NAME` from the downward API, which `yardstick k8s render` sets) and is
//! absent when the process does not run there.

/// The keys of this process, in a fixed order: `node` always (a pod's node, Slurm's node name,
/// else the hostname); `slurm_job_id`, `slurm_step_id`, `rank`, `k8s_namespace` and `k8s_pod`
/// when set.
pub fn from_env() -> Vec<(&'static str, Option<String>)> {
    let var = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| std::env::var(n).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    vec![
        (
            "node",
            Some(var(&["YARDSTICK_NODE_NAME", "SLURMD_NODENAME"]).unwrap_or_else(hostname)),
        ),
        ("slurm_job_id", var(&["SLURM_JOB_ID", "SLURM_JOBID"])),
        ("slurm_step_id", var(&["SLURM_STEP_ID", "SLURM_STEPID"])),
        ("rank", var(&["RANK", "SLURM_PROCID"])),
        ("k8s_namespace", var(&["POD_NAMESPACE"])),
        ("k8s_pod", var(&["POD_NAME"])),
    ]
}

/// The keys of [`from_env`] that are set.
pub fn present() -> Vec<(&'static str, String)> {
    from_env()
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

/// This machine's name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_node_is_always_there_and_comes_first() {
        let keys = super::from_env();
        assert_eq!(keys[0].0, "node");
        assert!(keys[0].1.as_ref().is_some_and(|n| !n.is_empty()));
        let names: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                "node",
                "slurm_job_id",
                "slurm_step_id",
                "rank",
                "k8s_namespace",
                "k8s_pod"
            ]
        );
    }
}
