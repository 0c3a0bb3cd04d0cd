//! Energy from the CPU's RAPL counters (`/sys/class/powercap/intel-rapl:N/energy_uj`, one per
//! package; AMD exposes the same interface): read at a point's start and end, the difference
//! (across a counter wrap at `max_energy_range_uj`) is the energy the packages used. Reading
//! needs the files to be readable (root on recent kernels); where there are none — containers,
//! most VMs — energy is stated as unavailable, never estimated.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A cumulative energy counter read at a point's start and end: the CPU's RAPL packages, or an
/// accelerator's (NVML's total energy consumption, supplied by the caller).
pub trait EnergyCounter: Send + Sync + std::fmt::Debug {
    /// Where the energy is measured: `rapl` or `nvml`.
    fn source(&self) -> &'static str;
    /// Every domain's counter now, in the counter's own unit; `None` when one cannot be read.
    fn read(&self) -> Option<Vec<u64>>;
    /// Joules between two readings.
    fn joules(&self, start: &[u64], end: &[u64]) -> f64;
}

/// Why there are no RAPL counters to read.
#[derive(Debug, thiserror::Error)]
pub enum RaplError {
    /// The powercap root cannot be listed.
    #[error("no RAPL counters ({}: {error})", root.display())]
    NoRoot {
        /// The powercap root.
        root: PathBuf,
        /// The operating system's reason.
        error: std::io::Error,
    },
    /// Package domains exist but their counters cannot be read.
    #[error("RAPL counters are not readable ({}: {error}; root can read them)", file.display())]
    Unreadable {
        /// The counter file last tried.
        file: PathBuf,
        /// The operating system's reason.
        error: std::io::Error,
    },
    /// The root has no package domain.
    #[error("no RAPL package domain under {}", root.display())]
    NoPackage {
        /// The powercap root.
        root: PathBuf,
    },
}

/// Where a serving point's energy comes from.
#[derive(Debug, Clone)]
pub enum Energy {
    /// The CPU's RAPL counters under this powercap root.
    Rapl(PathBuf),
    /// Accelerators' counters, RAPL as a fallback when they cannot be read at the start.
    Accelerators(Arc<dyn EnergyCounter>, PathBuf),
}

impl Energy {
    /// The counter to read, or why there is none.
    pub fn open(&self) -> Result<Arc<dyn EnergyCounter>, RaplError> {
        match self {
            Energy::Rapl(root) => Rapl::open(root).map(|r| Arc::new(r) as Arc<dyn EnergyCounter>),
            Energy::Accelerators(c, root) => match c.read() {
                Some(_) => Ok(c.clone()),
                None => Rapl::open(root).map(|r| Arc::new(r) as Arc<dyn EnergyCounter>),
            },
        }
    }
}

/// The RAPL package domains under a powercap root.
#[derive(Debug, Clone)]
pub struct Rapl {
    domains: Vec<(PathBuf, u64)>,
}

/// The default powercap root.
pub const POWERCAP: &str = "/sys/class/powercap";

impl Rapl {
    /// The package domains under `root` whose counters can be read, or why there are none.
    pub fn open(root: &Path) -> Result<Rapl, RaplError> {
        let entries = std::fs::read_dir(root).map_err(|error| RaplError::NoRoot {
            root: root.to_path_buf(),
            error,
        })?;
        let mut domains = Vec::new();
        let mut unreadable = None;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // Packages are `intel-rapl:N`; `intel-rapl:N:M` are their sub-domains (core,
            // uncore, dram), already counted in the package.
            let Some(rest) = name.strip_prefix("intel-rapl:") else {
                continue;
            };
            if rest.contains(':') {
                continue;
            }
            let dir = e.path();
            let range = std::fs::read_to_string(dir.join("max_energy_range_uj"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(u64::MAX);
            match std::fs::read_to_string(dir.join("energy_uj")) {
                Ok(_) => domains.push((dir, range)),
                Err(error) => {
                    unreadable = Some(RaplError::Unreadable {
                        file: dir.join("energy_uj"),
                        error,
                    })
                }
            }
        }
        if domains.is_empty() {
            return Err(unreadable.unwrap_or_else(|| RaplError::NoPackage {
                root: root.to_path_buf(),
            }));
        }
        domains.sort();
        Ok(Rapl { domains })
    }

    /// Every package's counter now, µJ.
    pub fn read(&self) -> Option<Vec<u64>> {
        self.domains
            .iter()
            .map(|(d, _)| {
                std::fs::read_to_string(d.join("energy_uj"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            })
            .collect()
    }

    /// Joules between two readings, across counter wraps.
    pub fn joules(&self, start: &[u64], end: &[u64]) -> f64 {
        EnergyCounter::joules(self, start, end)
    }
}

impl EnergyCounter for Rapl {
    fn source(&self) -> &'static str {
        "rapl"
    }

    fn read(&self) -> Option<Vec<u64>> {
        Rapl::read(self)
    }

    fn joules(&self, start: &[u64], end: &[u64]) -> f64 {
        self.domains
            .iter()
            .zip(start.iter().zip(end))
            .map(|((_, range), (a, b))| {
                let uj = if b >= a {
                    b - a
                } else {
                    range.saturating_sub(*a) + b
                };
                uj as f64 / 1e6
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(root: &Path, name: &str, energy: u64, range: u64) {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), format!("{range}\n")).unwrap();
    }

    #[test]
    fn packages_are_summed_across_wraps_and_sub_domains_are_not_counted_twice() {
        let dir = tempfile::tempdir().unwrap();
        domain(dir.path(), "intel-rapl:0", 1_000_000, 10_000_000);
        domain(dir.path(), "intel-rapl:1", 9_500_000, 10_000_000);
        domain(dir.path(), "intel-rapl:0:0", 5, 10_000_000);
        let r = Rapl::open(dir.path()).unwrap();
        let start = r.read().unwrap();
        assert_eq!(start, [1_000_000, 9_500_000]);
        domain(dir.path(), "intel-rapl:0", 4_000_000, 10_000_000);
        domain(dir.path(), "intel-rapl:1", 500_000, 10_000_000); // wrapped
        let end = r.read().unwrap();
        assert!((r.joules(&start, &end) - (3.0 + 1.0)).abs() < 1e-9);
        // No counters: a reason, not a number.
        let empty = tempfile::tempdir().unwrap();
        assert!(
            Rapl::open(empty.path())
                .unwrap_err()
                .to_string()
                .contains("no RAPL package")
        );
        assert!(Rapl::open(&empty.path().join("nope")).is_err());
    }
}
