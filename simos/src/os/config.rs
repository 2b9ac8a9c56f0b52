//! What a machine is built from: the mode (threaded or step), the OS settings, the adapters,
//! and the OS settings' defaults. The stock adapters and machines
//! ([`AdapterConfig::dgpu`], [`MachineConfig::single`], …) read what installing the package
//! wrote, so they are the machine's (`crate::machine`), above the installer.

use std::time::Duration;

use rvgpu_ddi::adapter::DXGK_DRIVERCAPS;
use rvgpu_device::DeviceConfig;
use rvgpu_hw::log::ENTRIES_PER_BUFFER;
use rvgpu_kmd::platform::Irql;

use super::windows::Windows;
use crate::base::regkey::{RegKey, RegValue};
use crate::hal::board::PciSpec;

/// How the machine runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Device CMP threads, an interrupt thread and a DPC thread; DDIs from test threads.
    Threaded,
    /// No threads: [`Machine::run_steps`](crate::Machine::run_steps) /
    /// [`Machine::run_until_idle`](crate::Machine::run_until_idle) step the devices and
    /// service interrupts and DPCs on the calling thread.
    Step,
}

/// The CPU architecture Windows runs on. It matters where Dxgkrnl's rules differ by platform:
/// a non-coherent aperture is refused on x64 only (BR-50).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CpuArch {
    /// x86-64: DMA is always I/O coherent.
    #[default]
    X64,
    /// ARM64: some platforms' DMA does not snoop CPU caches (AL-06).
    Arm64,
}

/// OS feature switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsConfig {
    /// VidMm's reuse of freed system pages: `true` hands a freed page out again first, as
    /// Windows' memory manager does (`rvgpu_device::Memory::set_freed_first`); `false` (the
    /// default) keeps the emulated bus's next fit, which leaves a freed range unused as long as
    /// it can.
    pub reuse_freed_pages_first: bool,
    /// The OS's policy for `DXGK_FEATURE_NATIVE_FENCE` (NF-10): `false` is a registry
    /// override or build that turns it off whatever the driver supports.
    pub native_fence_feature: bool,
    /// The OS's policy for `DXGK_FEATURE_HWSCH` (hardware scheduling; Windows' `HwSchMode`
    /// off when `false`). Everything that depends on it — user-mode submission, native
    /// fences — goes with it (`dxgkrnl::features`).
    pub hwsch_feature: bool,
    /// The OS's policy for `DXGK_FEATURE_USER_MODE_SUBMISSION`.
    pub ums_feature: bool,
    /// The Windows the machine plays: its kernel, whose build facts every build-dependent
    /// rule asks, and the answers where its code and Microsoft's pages disagree
    /// ([`super::windows`]; default [`Windows::from_env`]).
    pub windows: Windows,
    /// windows-bringup.md §15 question 10 (BR-24): how a DDI that returns at another IRQL than it was called at
    /// stops the machine. `false`: the simulation's own 0xC8 `IRQL_UNEXPECTED_VALUE`
    /// (`bugcheck::irql_unexpected::SIM_DDI`). `true` (default): Windows' code,
    /// 0x113 `VIDEO_DXGKRNL_FATAL_ERROR` with parameter 1 = 0x10, for the DDIs Dxgkrnl calls
    /// through its `DXGADAPTER` / `ADAPTER_RENDER` `Ddi*` wrappers (\[D\] e.g.
    /// `ADAPTER_RENDER::DdiCreateHwQueue`, \[D24\] `ADAPTER_RENDER::DdiCreateNativeFence` @
    /// 0x140425BF0: `WdLogSingleEntry5(0, 0x113, 0x10, adapter, IRQL before, IRQL after)`, a
    /// watchdog record of the Critical category, which bug-checks with its first word as the
    /// code: docs/windows-bringup.md §15 Q10). The PnP-layer wrappers (`DpiDxgkDdi*`:
    /// AddDevice, StartDevice, …) make no such check, so those DDIs keep 0xC8.
    pub ddi_irql_mismatch_is_0x113: bool,
    /// IRQL the OS calls `DxgkDdiSubmitCommandToHwQueue` at. Microsoft allows PASSIVE_LEVEL or
    /// DISPATCH_LEVEL; the default is the stricter DISPATCH_LEVEL (a driver must cope with it).
    pub submit_irql: Irql,
    /// How long, in threaded mode, a blocking D3DKMT wait waits with its fences standing still
    /// before it fails (24H2's has no limit: this one stands for "hung"), and a normal exit's
    /// wait for a queue waits.
    pub wait_timeout: Duration,
    /// `NumberOfEntries` of the wait and signal logs the OS gives every user-mode
    /// queue (default 84, a full 4 KiB buffer; tests use 4 to force overflows, LOG-05).
    pub log_entries: u64,
    /// Windows' `HKLM\SYSTEM\CurrentControlSet\Control\GraphicsDrivers\ValidateWDDMCaps`:
    /// set, Dxgkrnl holds a WDDM 1.2+ hardware adapter to the mandatory WDDM 1.2 render
    /// features (docs/windows-bringup.md BR-52). \[D\] `DXGGLOBAL::Initialize` reads the value
    /// and leaves the check off when it is absent, so the default here is off too.
    pub validate_wddm_caps: bool,
    /// `NumberOfEntries` of every hardware-scheduled node's scheduling log (Windows:
    /// 0x800, \[D\] `VidSchCreateSchedulingLogs`; tests use small logs to force wrap-around).
    pub sched_log_entries: u32,
    /// `targetNormalBandPercentage` of `DxgkDdiSetupPriorityBands`. \[D\]
    /// `VidSchiInitializeNode` reads it from VIDSCH_GLOBAL+208, which only
    /// `VidSchSetYieldPercentage` writes (caller not in the 22631 pseudocode); 0 until set.
    pub hws_normal_band_percentage: u32,
    /// The CPU architecture (default x64).
    pub cpu_arch: CpuArch,
    /// BR-80/81: `GraphicsDrivers\HwSchMode` (\[D\] `DpiInitializeGlobalState`; absent or ≥ 3
    /// reads as 0). `DxgkCbQueryFeatureSupport` enables HWSCH and USER_MODE_SUBMISSION for a
    /// *stable* driver only with 0 or 2; 1 turns them off.
    pub hw_sch_mode: u32,
    /// BR-80/81: `GraphicsDrivers\HwSchTreatExperimentalAsStable` (default off): an
    /// *experimental* claim through `DxgkCbQueryFeatureSupport` counts as stable.
    pub hw_sch_treat_experimental_as_stable: bool,
    /// BR-78: the kernel block list (`GraphicsDrivers\BlockList\Kernel`, \[D\]
    /// `CheckKernelBlockList`) holds a `DISABLE_HWSCH` entry matching this driver: the OS
    /// enables no hardware scheduling for it, by either negotiation path.
    pub block_list_disable_hwsch: bool,
    /// Bytes of local memory (VRAM) each process may keep resident (VidMm's
    /// process budget, "Process residency budgets"); `None`: all of it. `D3DKMTMakeResident`
    /// past it fails with `STATUS_NO_MEMORY` and the bytes to trim.
    pub vram_budget: Option<u64>,
    /// The modelled cost of a D3DKMT call's user→kernel transition (system call and
    /// the Dxgkrnl thunk's entry work), charged by every thunk of [`crate::kmt::SimKmt`] as
    /// this many rounds of [`crate::kmt::charge_thunk_cost`] (0: none). Default
    /// [`DEFAULT_THUNK_COST`]; docs/performance.md gives the reasoning.
    pub thunk_cost: u32,
    /// BR-14: `GraphicsDrivers\DisableVersionMismatchCheck` (\[D24\] `DpiFdoInitializeFdo` @
    /// 0x140242CBC): set, Dxgkrnl does not compare the KMD's file version with the
    /// package's `DriverVer`. Default off (the value is absent on a stock machine).
    pub disable_version_mismatch_check: bool,
    /// BR-06: Dxgkrnl answers the Windows 8 registration request (IOCTL 0x230047,
    /// `DpiInitializeWin8`) as every build since Windows 8 does (\[D24\] 24H2
    /// `DxgkInternalDeviceIoctl` @ 0x1403A9E70). `false` stands for an older Dxgkrnl that
    /// fails it with `STATUS_INVALID_DEVICE_REQUEST`, to prove the driver's fallback to
    /// 0x23003F.
    pub dxgkrnl_knows_win8_initialize: bool,
    /// LD-04: memory integrity (hypervisor-protected code integrity) is on, as on a clean
    /// Windows 11 installation on capable hardware: the kernel loader also refuses a driver
    /// with a writable and executable section or without NX_COMPAT. Default on.
    pub memory_integrity: bool,
    /// CI-02: test signing is on (`bcdedit /set testsigning on`), as on the test machine
    /// docs/test-machine.md prepares, whose stores also hold the package's test certificate
    /// (`crate::install::System::test_machine`). Off: code integrity refuses the test-signed
    /// `rvgpu.sys` (Code 52), and the kernel-mode testing escape is refused
    /// ([`crate::dxgkrnl::kmtest`]). Default on.
    pub test_signing: bool,
}

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
            windows: Windows::from_env(),
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
            disable_version_mismatch_check: false,
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
    /// The function's PCI vendor ID, as `DpiAddDevice` reads it from its configuration space
    /// into the adapter (DXGADAPTER +420), where Dxgkrnl's vendor-keyed checks read it:
    /// BR-14's exemptions, `D3DKMTEscape`'s vendor 0x1002 check. Default: the emulated
    /// device's, `rvgpu_hw::pci::VENDOR_ID`.
    pub pci_vendor_id: u16,
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
    /// Loading the driver installs it first, as Windows does (default): for the Linux build
    /// the INF stage on the machine's [`OsConfig::windows`], for `rvgpu.sys` the package
    /// ([`crate::install`]); the install's registry writes are the adapters' keys, and a
    /// refusal (IN-08 on a build the INF does not target) fails the load. `false` loads the
    /// Linux build as if installed, with the configured keys: a test's knob for a start rule
    /// of a Windows no install reaches (the 22631 kernel's). `rvgpu.sys` is always installed.
    pub install: bool,
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
