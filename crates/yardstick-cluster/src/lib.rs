//! Execution engines beyond one machine: the manifests of a run on Kubernetes with Kueue
//! (`yardstick k8s render`, from k8s-openapi's typed objects) and, with the `client` feature,
//! applying them and following the Job with kube-rs (`yardstick k8s submit`). The Slurm engine
//! is `yardstick_run::slurm`; what the pods run is `yardstick_run::pods`.
#![deny(missing_docs)]

#[cfg(feature = "client")]
pub mod client;
pub mod kubernetes;
pub mod yaml;
