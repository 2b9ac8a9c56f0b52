//! What a machine is built from: the mode (threaded or step), the OS settings, the adapters,
//! and the OS settings' defaults. The stock adapters and machines
//! ([`AdapterConfig::dgpu`], [`MachineConfig::single`], …) read what installing the package
//! wrote, so they are the machine's (`crate::machine`), above the installer.

use std::time::Duration;

use rvgpu_ddi::adapter::DXGK_DRIVERCAPS;
use rvgpu_device::DeviceConfig;
use rvgpu_hw::log::ENTRIES_PER_BUFFER;
use rvgpu_kmd::platform::Irql;

use super::{CpuArch, Mode, OsConfig, WindowsBuild};
use crate::base::regkey::{RegKey, RegValue};
use crate::hal::board::PciSpec;

/// Default of [`crate::OsConfig::thunk_cost`]: 500 rounds, about 2,000 instructions in the
/// release build (the round is four instructions; `scripts/callgrind-submission.sh` reports
/// the measured count). A D3DKMT call on Windows costs a system call (with the kernel's
/// page-table isolation, a few hundred ns) plus Dxgkrnl's entry work (argument capture, handle
/// table lookups, locks, ETW), together about 1–3 µs by estimate; 2,000
/// instructions is the low end of that (about 1 µs at two instructions per ns), so the kernel
/// path is not charged more than it plausibly costs.
pub const DEFAULT_THUNK_COST: u32 = 500;

/// How long a blocking thunk wait waits by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// Entries per log the OS allocates by default (a full 4 KiB buffer).
pub const DEFAULT_LOG_ENTRIES: u64 = ENTRIES_PER_BUFFER;

/// Entries of a node's scheduling log (\[D\] `VidSchCreateSchedulingLogs`: 0x800).
pub const DEFAULT_SCHED_LOG_ENTRIES: u32 = 0x800;

impl Default for OsConfig {
    fn default() -> Self {
        Self {
            reuse_freed_pages_first: false,
            native_fence_feature: true,
            hwsch_feature: true,
            ums_feature: true,
            ums_requires_slot_1368: false,
            zero_segments_accepted: false,
            ddi_irql_mismatch_is_0x113: true,
            submit_irql: Irql::Dispatch,
            wait_timeout: DEFAULT_WAIT,
            log_entries: DEFAULT_LOG_ENTRIES,
            validate_wddm_caps: false,
            sched_log_entries: DEFAULT_SCHED_LOG_ENTRIES,
            hws_normal_band_percentage: 0,
            cpu_arch: CpuArch::X64,
            hw_sch_mode: 0,
            hw_sch_treat_experimental_as_stable: false,
            block_list_disable_hwsch: false,
            vram_budget: None,
            thunk_cost: DEFAULT_THUNK_COST,
            reading: crate::os::answers::Reading::from_env(),
            disable_version_mismatch_check: false,
            windows_build: WindowsBuild::W24H2,
            dxgkrnl_knows_win8_initialize: true,
            memory_integrity: true,
            test_signing: true,
        }
    }
}

/// One adapter.
#[derive(Clone, Debug)]
pub struct AdapterConfig {
    /// Name for messages.
    pub name: String,
    /// The emulated device (its `mode` is overridden by the machine's).
    pub device: DeviceConfig,
    /// The OS enables `DXGK_FEATURE_NATIVE_FENCE` on this adapter (ANDed with
    /// [`OsConfig::native_fence_feature`]): `false` makes an adapter without native fences
    /// (the driver does not advertise them there), as the seed's scenarios 2a/2b need.
    pub native_fence_feature: bool,
    /// The OS enables `DXGK_FEATURE_HWSCH` on this adapter (ANDed with
    /// [`OsConfig::hwsch_feature`]; the per-adapter `Features` registry key).
    pub hwsch_feature: bool,
    /// BR-35: `UserModeDriverName` in the adapter's software key (`None`: absent). Default:
    /// what `inf/rvgpu.inf` writes.
    pub user_mode_driver_name: Option<RegValue>,
    /// The OS grants a message-signalled interrupt (the INF's `MSISupported`, and a function
    /// with an MSI capability): the resource list's interrupt is a message, and the ISR is
    /// called once per message. Default on; a PCI board's interrupt is whichever its UIO
    /// driver delivers (`hal::pci`).
    pub msi: bool,
    /// BR-14: the device's `DEVPKEY_Device_DriverVersion`, the version part of the installed
    /// INF's `DriverVer` (`None`: absent). Default: what scripts/package.sh stamps into
    /// `inf/rvgpu.inf` ([`crate::adapter::registry::inf_driver_version`]).
    pub driver_version: Option<String>,
    /// BR-14: the KMD file's version as Dxgkrnl reads it from its `VS_VERSION_INFO` (`Err`:
    /// the file does not map as an image). `None` (default): the driver build's own — read
    /// from the `rvgpu.sys` a PE machine loads, or for the Linux build the version build.rs
    /// stamps into `rvgpu.sys` ([`crate::adapter::registry::stamped_file_version`]).
    pub kmd_file_version: Option<Result<u64, String>>,
    /// The adapter's software key (the `HKR` values of the INF's install section), where
    /// Dxgkrnl's feature database reads its per-adapter overrides (`Features\<id>`,
    /// `dxgkrnl::features`). Default: what `inf/rvgpu.inf` writes, parsed from the file
    /// ([`crate::adapter::registry::inf_software_key`]).
    pub software_key: RegKey,
}

/// A machine's configuration.
#[derive(Clone, Debug)]
pub struct MachineConfig {
    /// Threaded or step.
    pub mode: Mode,
    /// OS switches.
    pub os: OsConfig,
    /// Adapters, in PnP order.
    pub adapters: Vec<AdapterConfig>,
    /// The adapters are PCI functions this (Linux guest) machine sees instead of emulated
    /// devices in this process (`hal::pci`): adapter `i` is the spec's function `i`, so there
    /// are at most as many adapters as functions. Threaded mode.
    pub pci: Option<PciSpec>,
    /// Which build of the driver the machine loads: the Linux build linked in, or `rvgpu.sys`
    /// in the x86-64 emulator (default: `RVGPU_DRIVER`, see [`crate::os::driver_build::DriverBuild::from_env`]).
    #[cfg(target_os = "linux")]
    pub driver: crate::os::driver_build::DriverBuild,
}

/// What a started adapter reported.
#[derive(Clone, Copy, Debug)]
pub struct AdapterInfo {
    /// `NumberOfVideoPresentSources` from StartDevice.
    pub sources: u32,
    /// `NumberOfChildren` from StartDevice.
    pub children: u32,
    /// `DXGKQAITYPE_DRIVERCAPS`.
    pub caps: DXGK_DRIVERCAPS,
}
