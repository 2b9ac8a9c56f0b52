//! The stock adapters and machines. Their registry defaults are what installing the package
//! writes (the INF's software key and `UserModeDriverName`, [`crate::install`]), which is why
//! they live here, above the installer, while the types are the OS's ([`crate::os::config`]).

use rvgpu_device::DeviceConfig;

use crate::os::{AdapterConfig, CpuArch, MachineConfig, Mode, OsConfig};

impl AdapterConfig {
    /// The default device: a discrete GPU with exact fence reports.
    pub fn dgpu() -> Self {
        Self {
            name: "dGPU".into(),
            device: DeviceConfig::default(),
            native_fence_feature: true,
            hwsch_feature: true,
            user_mode_driver_name: Some(crate::adapter::registry::inf_user_mode_driver_name()),
            msi: true,
            driver_version: Some(crate::adapter::registry::inf_driver_version()),
            kmd_file_version: None,
            software_key: crate::adapter::registry::inf_software_key().unwrap_or_default(),
            pci_vendor_id: rvgpu_hw::pci::VENDOR_ID,
        }
    }

    /// An integrated-style device: one engine, no exact fence reports (every fence interrupt
    /// means "scan everything").
    pub fn igpu() -> Self {
        Self {
            name: "iGPU".into(),
            device: DeviceConfig {
                engines: 1,
                doorbells: 4,
                exact_fence_report: false,
                optimized_fence_irq: false,
                ..DeviceConfig::default()
            },
            ..Self::dgpu()
        }
    }
}

impl MachineConfig {
    /// One dGPU.
    pub fn single(mode: Mode) -> Self {
        Self {
            mode,
            os: OsConfig::default(),
            adapters: vec![AdapterConfig::dgpu()],
            pci: None,
            install: true,
            #[cfg(target_os = "linux")]
            driver: crate::os::driver_build::DriverBuild::from_env(),
        }
    }

    /// An iGPU and a dGPU (cross-adapter scenarios, NF-16/NF-18).
    pub fn igpu_dgpu(mode: Mode) -> Self {
        Self {
            mode,
            os: OsConfig::default(),
            adapters: vec![AdapterConfig::igpu(), AdapterConfig::dgpu()],
            pci: None,
            install: true,
            #[cfg(target_os = "linux")]
            driver: crate::os::driver_build::DriverBuild::from_env(),
        }
    }

    /// AL-06: one dGPU whose DMA does not snoop CPU caches, on an ARM64 Windows (where such an
    /// adapter may start). Set `os.cpu_arch` back to x64 to see BR-50 refuse it.
    pub fn arm64_non_coherent(mode: Mode) -> Self {
        let mut dgpu = AdapterConfig::dgpu();
        dgpu.device.io_coherent = false;
        Self {
            mode,
            os: OsConfig {
                cpu_arch: CpuArch::Arm64,
                ..OsConfig::default()
            },
            adapters: vec![dgpu],
            pci: None,
            install: true,
            #[cfg(target_os = "linux")]
            driver: crate::os::driver_build::DriverBuild::from_env(),
        }
    }

    /// An iGPU without native fences and a dGPU with them (NF-18 scenarios 2a and 2b).
    pub fn legacy_igpu_dgpu(mode: Mode) -> Self {
        let mut igpu = AdapterConfig::igpu();
        igpu.native_fence_feature = false;
        Self {
            mode,
            os: OsConfig::default(),
            adapters: vec![igpu, AdapterConfig::dgpu()],
            pci: None,
            install: true,
            #[cfg(target_os = "linux")]
            driver: crate::os::driver_build::DriverBuild::from_env(),
        }
    }
}
