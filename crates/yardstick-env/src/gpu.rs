//! NVIDIA GPUs through NVML, loaded at run time (`libnvidia-ml.so.1`) with `nvml-wrapper`.
//!
//! No library, no driver or no device gives an [`NvidiaInfo`] with `available: false` and the
//! reason ("no NVIDIA GPU: ..."), never an error. A field the device does not support is listed
//! in [`GpuInfo::unsupported`] and left `null`; any other failure of one field is kept in
//! [`GpuInfo::errors`] and does not stop the capture of the others.

use std::collections::BTreeMap;
use std::ffi::OsStr;

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::error::NvmlError;
use serde::{Deserialize, Serialize};

/// The NVIDIA driver stack, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct NvidiaInfo {
    /// Whether NVML loaded and reported at least one device.
    pub available: bool,
    /// Why not, when not available (starts with "no NVIDIA GPU").
    pub reason: Option<String>,
    /// Driver version, e.g. `580.65.06`.
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports, e.g. `13.0`.
    pub cuda_driver_version: Option<String>,
    /// NVML library version.
    pub nvml_version: Option<String>,
}

/// PCIe link state: current versus maximum (a degraded link trains below its maximum).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct PcieLink {
    /// Current link generation.
    pub gen_current: Option<u32>,
    /// Maximum link generation of the device and system.
    pub gen_max: Option<u32>,
    /// Current lane count.
    pub width_current: Option<u32>,
    /// Maximum lane count.
    pub width_max: Option<u32>,
}

/// NVLink state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct NvlinkState {
    /// Links reported active.
    pub active: u32,
    /// Links that exist on the device (active or not).
    pub total: u32,
}

/// ECC mode and error counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct EccState {
    /// Whether ECC is currently enabled.
    pub enabled: Option<bool>,
    /// Corrected errors since the driver loaded.
    pub corrected_volatile: Option<u64>,
    /// Uncorrected errors since the driver loaded.
    pub uncorrected_volatile: Option<u64>,
    /// Uncorrected errors over the device's lifetime.
    pub uncorrected_aggregate: Option<u64>,
}

/// One GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema, Deserialize)]
#[serde(default)]
pub struct GpuInfo {
    /// NVML index.
    pub index: u32,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Immutable UUID (identifies the device: never in the key or the hash).
    pub uuid: Option<String>,
    /// PCI bus id.
    pub pci_bus_id: Option<String>,
    /// CUDA compute capability, e.g. `9.0`.
    pub compute_capability: Option<String>,
    /// Total framebuffer memory, bytes.
    pub memory_total_bytes: Option<u64>,
    /// Used framebuffer memory at capture time, bytes (volatile).
    pub memory_used_bytes: Option<u64>,
    /// Current SM clock, MHz (volatile).
    pub sm_clock_mhz: Option<u32>,
    /// Maximum SM clock, MHz.
    pub sm_clock_max_mhz: Option<u32>,
    /// Maximum memory clock, MHz.
    pub mem_clock_max_mhz: Option<u32>,
    /// Enforced power limit, W.
    pub power_limit_w: Option<f64>,
    /// Default power limit, W.
    pub power_default_limit_w: Option<f64>,
    /// Power draw at capture time, W (volatile).
    pub power_draw_w: Option<f64>,
    /// GPU die temperature, °C (volatile).
    pub temperature_c: Option<u32>,
    /// Active clock throttle reasons at capture time (volatile), e.g. `sw_power_cap`.
    pub throttle_reasons: Option<Vec<String>>,
    /// PCIe link.
    pub pcie: PcieLink,
    /// NVLink links, when the device has any.
    pub nvlink: Option<NvlinkState>,
    /// ECC.
    pub ecc: EccState,
    /// Whether MIG mode is enabled.
    pub mig_enabled: Option<bool>,
    /// Whether persistence mode is on.
    pub persistence_mode: Option<bool>,
    /// VBIOS version.
    pub vbios: Option<String>,
    /// Fields this device does not support (left `null`).
    pub unsupported: Vec<String>,
    /// Fields whose query failed for another reason, with the error.
    pub errors: BTreeMap<String, String>,
}

/// A live NVML session.
pub struct NvmlSession {
    nvml: Nvml,
    count: u32,
}

impl std::fmt::Debug for NvmlSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlSession")
            .field("count", &self.count)
            .finish()
    }
}

/// Names of throttle reasons, as recorded.
pub fn throttle_reason_names(r: ThrottleReasons) -> Vec<String> {
    let table = [
        (ThrottleReasons::GPU_IDLE, "gpu_idle"),
        (
            ThrottleReasons::APPLICATIONS_CLOCKS_SETTING,
            "applications_clocks_setting",
        ),
        (ThrottleReasons::SW_POWER_CAP, "sw_power_cap"),
        (ThrottleReasons::HW_SLOWDOWN, "hw_slowdown"),
        (ThrottleReasons::SYNC_BOOST, "sync_boost"),
        (ThrottleReasons::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
        (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
        (
            ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
            "hw_power_brake_slowdown",
        ),
        (
            ThrottleReasons::DISPLAY_CLOCK_SETTING,
            "display_clock_setting",
        ),
    ];
    table
        .iter()
        .filter(|(bit, _)| r.contains(*bit))
        .map(|(_, n)| (*n).to_owned())
        .collect()
}

/// Throttle reasons that mean the clock is held below what the workload asks for (idle and
/// application clock settings are not throttling).
pub fn is_throttling(bits: u64) -> bool {
    let r = ThrottleReasons::from_bits_truncate(bits);
    r.intersects(
        ThrottleReasons::SW_POWER_CAP
            | ThrottleReasons::HW_SLOWDOWN
            | ThrottleReasons::SW_THERMAL_SLOWDOWN
            | ThrottleReasons::HW_THERMAL_SLOWDOWN
            | ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
    )
}

/// Why there is no NVML session: the "no NVIDIA GPU: ..." reason.
#[derive(Debug, thiserror::Error)]
pub enum NoGpuError {
    /// NVML could not be loaded or initialised.
    #[error("{}", explain(.0))]
    Init(NvmlError),
    /// NVML loaded but could not count the devices.
    #[error("no NVIDIA GPU: NVML could not count devices ({0})")]
    Count(NvmlError),
    /// NVML loaded and sees no device.
    #[error("no NVIDIA GPU: NVML reports 0 devices")]
    NoDevices,
}

fn explain(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(inner) => {
            format!("no NVIDIA GPU: the NVML library could not be loaded ({inner})")
        }
        NvmlError::LibraryNotFound => "no NVIDIA GPU: the NVML library was not found".into(),
        NvmlError::DriverNotLoaded => "no NVIDIA GPU: the NVIDIA driver is not loaded".into(),
        NvmlError::NoPermission => "no NVIDIA GPU: no permission to use NVML".into(),
        other => format!("no NVIDIA GPU: NVML failed to initialise ({other})"),
    }
}

fn version_string(v: i32) -> String {
    format!(
        "{}.{}",
        nvml_wrapper::cuda_driver_version_major(v),
        nvml_wrapper::cuda_driver_version_minor(v)
    )
}

impl NvmlSession {
    /// Loads NVML (`libnvidia-ml.so.1`, then `libnvidia-ml.so`) and counts devices. `Err` says
    /// "no NVIDIA GPU: ..." and why.
    pub fn open() -> Result<Self, NoGpuError> {
        let first = Nvml::builder()
            .lib_path(OsStr::new(if cfg!(windows) {
                "nvml.dll"
            } else {
                "libnvidia-ml.so.1"
            }))
            .init();
        let nvml = match first {
            Ok(n) => n,
            Err(e1) => Nvml::init().map_err(|e2| match e2 {
                NvmlError::LibloadingError(_) => NoGpuError::Init(e1),
                other => NoGpuError::Init(other),
            })?,
        };
        let count = nvml.device_count().map_err(NoGpuError::Count)?;
        if count == 0 {
            return Err(NoGpuError::NoDevices);
        }
        Ok(Self { nvml, count })
    }

    /// Number of devices.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// `gpu<N>` → UUID of each device that reports one.
    pub fn uuids(&self) -> std::collections::BTreeMap<String, String> {
        (0..self.count)
            .filter_map(|i| {
                let uuid = self.nvml.device_by_index(i).ok()?.uuid().ok()?;
                Some((format!("gpu{i}"), uuid))
            })
            .collect()
    }

    /// The driver stack.
    pub fn driver(&self) -> NvidiaInfo {
        NvidiaInfo {
            available: true,
            reason: None,
            driver_version: self.nvml.sys_driver_version().ok(),
            cuda_driver_version: self.nvml.sys_cuda_driver_version().ok().map(version_string),
            nvml_version: self.nvml.sys_nvml_version().ok(),
        }
    }

    /// Captures every device.
    pub fn gpus(&self) -> Vec<GpuInfo> {
        (0..self.count).map(|i| self.gpu(i)).collect()
    }

    fn gpu(&self, index: u32) -> GpuInfo {
        let mut g = GpuInfo {
            index,
            ..GpuInfo::default()
        };
        let device = match self.nvml.device_by_index(index) {
            Ok(d) => d,
            Err(e) => {
                g.errors.insert("device".into(), e.to_string());
                return g;
            }
        };
        let mut rec = Recorder::default();
        g.name = rec.get("name", device.name()).unwrap_or_default();
        g.uuid = rec.get("uuid", device.uuid());
        g.pci_bus_id = rec.get("pci_bus_id", device.pci_info().map(|p| p.bus_id));
        g.compute_capability = rec
            .get("compute_capability", device.cuda_compute_capability())
            .map(|c| format!("{}.{}", c.major, c.minor));
        if let Some(m) = rec.get("memory", device.memory_info()) {
            g.memory_total_bytes = Some(m.total);
            g.memory_used_bytes = Some(m.used);
        }
        g.sm_clock_mhz = rec.get("sm_clock_mhz", device.clock_info(Clock::SM));
        g.sm_clock_max_mhz = rec.get("sm_clock_max_mhz", device.max_clock_info(Clock::SM));
        g.mem_clock_max_mhz = rec.get("mem_clock_max_mhz", device.max_clock_info(Clock::Memory));
        g.power_limit_w = rec
            .get("power_limit_w", device.enforced_power_limit())
            .map(|mw| f64::from(mw) / 1e3);
        g.power_default_limit_w = rec
            .get(
                "power_default_limit_w",
                device.power_management_limit_default(),
            )
            .map(|mw| f64::from(mw) / 1e3);
        g.power_draw_w = rec
            .get("power_draw_w", device.power_usage())
            .map(|mw| f64::from(mw) / 1e3);
        g.temperature_c = rec.get("temperature_c", device.temperature(TemperatureSensor::Gpu));
        g.throttle_reasons = rec
            .get("throttle_reasons", device.current_throttle_reasons())
            .map(throttle_reason_names);
        g.pcie = PcieLink {
            gen_current: rec.get("pcie.gen_current", device.current_pcie_link_gen()),
            gen_max: rec.get("pcie.gen_max", device.max_pcie_link_gen()),
            width_current: rec.get("pcie.width_current", device.current_pcie_link_width()),
            width_max: rec.get("pcie.width_max", device.max_pcie_link_width()),
        };
        g.nvlink = nvlink_state(&device);
        g.ecc = EccState {
            enabled: rec
                .get("ecc.enabled", device.is_ecc_enabled())
                .map(|s| s.currently_enabled),
            corrected_volatile: rec.get(
                "ecc.corrected_volatile",
                device.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile),
            ),
            uncorrected_volatile: rec.get(
                "ecc.uncorrected_volatile",
                device.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
            ),
            uncorrected_aggregate: rec.get(
                "ecc.uncorrected_aggregate",
                device.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate),
            ),
        };
        g.mig_enabled = rec
            .get("mig_enabled", device.mig_mode())
            .map(|m| m.current == 1);
        g.persistence_mode = rec.get("persistence_mode", device.is_in_persistent_mode());
        g.vbios = rec.get("vbios", device.vbios_version());
        g.unsupported = rec.unsupported;
        g.errors = rec.errors;
        g
    }

    /// Every device's total energy since the driver loaded, mJ (NVML's
    /// `nvmlDeviceGetTotalEnergyConsumption`, Volta and later); `None` when a device cannot
    /// say.
    pub fn total_energy_mj(&self) -> Option<Vec<u64>> {
        (0..self.count)
            .map(|i| {
                self.nvml
                    .device_by_index(i)
                    .ok()?
                    .total_energy_consumption()
                    .ok()
            })
            .collect()
    }

    /// One telemetry sample of device `index`.
    pub fn sample(&self, index: u32) -> GpuSample {
        let Ok(d) = self.nvml.device_by_index(index) else {
            return GpuSample::default();
        };
        let util = d.utilization_rates().ok();
        GpuSample {
            utilization_pct: util.as_ref().map(|u| f64::from(u.gpu)),
            memory_utilization_pct: util.as_ref().map(|u| f64::from(u.memory)),
            memory_used_bytes: d.memory_info().ok().map(|m| m.used as f64),
            sm_clock_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
            mem_clock_mhz: d.clock_info(Clock::Memory).ok().map(f64::from),
            energy_mj: d.total_energy_consumption().ok().map(|mj| mj as f64),
            power_w: d.power_usage().ok().map(|mw| f64::from(mw) / 1e3),
            temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
            throttle_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
        }
    }
}

/// One telemetry reading of one GPU; `None` where the device does not report it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuSample {
    /// Percent of time a kernel ran.
    pub utilization_pct: Option<f64>,
    /// Percent of time device memory was read or written.
    pub memory_utilization_pct: Option<f64>,
    /// Framebuffer memory used, bytes.
    pub memory_used_bytes: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<f64>,
    /// Total energy since the driver loaded, mJ (Volta and later).
    pub energy_mj: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Die temperature, °C.
    pub temperature_c: Option<f64>,
    /// Throttle-reason bit mask (NVML `nvmlClocksThrottleReason*`).
    pub throttle_reasons: Option<u64>,
}

fn nvlink_state(device: &nvml_wrapper::Device<'_>) -> Option<NvlinkState> {
    // NVML_NVLINK_MAX_LINKS is 18 (Hopper); a link that does not exist answers NotSupported or
    // InvalidArg.
    let mut state = NvlinkState::default();
    for link in 0..18 {
        match device.link_wrapper_for(link).is_active() {
            Ok(active) => {
                state.total += 1;
                state.active += u32::from(active);
            }
            Err(_) => continue,
        }
    }
    (state.total > 0).then_some(state)
}

#[derive(Default)]
struct Recorder {
    unsupported: Vec<String>,
    errors: BTreeMap<String, String>,
}

impl Recorder {
    fn get<T>(&mut self, field: &str, r: Result<T, NvmlError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(NvmlError::NotSupported) | Err(NvmlError::FailedToLoadSymbol(_)) => {
                self.unsupported.push(field.to_owned());
                None
            }
            Err(e) => {
                self.errors.insert(field.to_owned(), e.to_string());
                None
            }
        }
    }
}

/// Captures the driver stack and the GPUs: an NVML session when it loads, the reason when not.
pub fn capture_gpus() -> (NvidiaInfo, Vec<GpuInfo>) {
    match NvmlSession::open() {
        Ok(s) => (s.driver(), s.gpus()),
        Err(reason) => (
            NvidiaInfo {
                available: false,
                reason: Some(reason.to_string()),
                ..NvidiaInfo::default()
            },
            Vec::new(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_names_and_classes() {
        let r = ThrottleReasons::SW_POWER_CAP | ThrottleReasons::GPU_IDLE;
        assert_eq!(throttle_reason_names(r), ["gpu_idle", "sw_power_cap"]);
        assert!(is_throttling(r.bits()));
        assert!(!is_throttling(ThrottleReasons::GPU_IDLE.bits()));
    }

    #[test]
    fn a_field_the_device_does_not_support_is_recorded_not_an_error() {
        // What NVML answers on, e.g., a GeForce card asked for ECC or MIG mode, or an old
        // driver without the symbol: `unsupported`; anything else is kept as that field's error.
        let mut rec = Recorder::default();
        assert_eq!(rec.get("power_limit_w", Ok(450u32)), Some(450));
        assert_eq!(
            rec.get::<bool>("ecc.enabled", Err(NvmlError::NotSupported)),
            None
        );
        assert_eq!(
            rec.get::<bool>(
                "mig_enabled",
                Err(NvmlError::FailedToLoadSymbol("nvmlDeviceGetMigMode".into()))
            ),
            None
        );
        assert_eq!(
            rec.get::<u32>("temperature_c", Err(NvmlError::GpuLost)),
            None
        );
        assert_eq!(rec.unsupported, ["ecc.enabled", "mig_enabled"]);
        assert_eq!(rec.errors.len(), 1);
        assert!(rec.errors.contains_key("temperature_c"));
    }

    #[test]
    fn no_nvml_is_a_record_not_a_crash() {
        // On a machine without the NVIDIA driver this is the "no NVIDIA GPU" record; with one,
        // every device has a name.
        let (info, gpus) = capture_gpus();
        if info.available {
            assert!(!gpus.is_empty());
        } else {
            assert!(gpus.is_empty());
            assert!(info.reason.unwrap().starts_with("no NVIDIA GPU"));
        }
    }
}
