//! The OS a machine plays: how it runs (threads or steps), the CPU architecture, the Windows
//! build and the OS's switches, and what a machine is built from ([`config`]: its adapters, the
//! switches' defaults). Below the installer and the Dxgkrnl core, which name them; with them
//! the readings of Windows the OS follows ([`answers`]) and the driver build it loads
//! ([`driver_build`]).

pub mod answers;
pub mod config;
pub mod driver_build;

pub use self::config::*;

use std::time::Duration;

use rvgpu_kmd::platform::Irql;

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

/// The Windows 11 build whose graphics kernel the simulated OS follows where builds differ
/// (docs/windows-bringup.md §7, BR-110..112).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowsBuild {
    /// Windows 11 24H2 (build 26100), the first with WDDM 3.2: the default.
    #[default]
    W24H2,
    /// Windows 11 25H2.
    W25H2,
    /// Windows 11 26H1: `DXGK_FEATURE_NATIVE_FENCE` is not supported by the OS at all
    /// (\[D\] 11-26H1 `CheckFeatureOSSupport` @ 0x140288B70).
    W26H1,
}

impl WindowsBuild {
    /// `24H2`, `25H2`, `26H1`.
    pub fn name(self) -> &'static str {
        match self {
            Self::W24H2 => "24H2",
            Self::W25H2 => "25H2",
            Self::W26H1 => "26H1",
        }
    }

    /// Parses `24H2`, `25H2` or `26H1` (any case).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.to_ascii_uppercase().as_str() {
            "24H2" => Ok(Self::W24H2),
            "25H2" => Ok(Self::W25H2),
            "26H1" => Ok(Self::W26H1),
            _ => Err(format!("unknown Windows build {s} (24H2, 25H2, 26H1)")),
        }
    }
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
    /// windows-bringup.md §15 question 2 (BR-73): does a user-mode-submission node need the slot after
    /// `DxgkDdiNotifyWorkSubmission` (byte 1368, `DxgkDdiFlushHwQueue` / `Reserved4`) filled?
    /// `true` is the 22631 kernel (\[D\] `ADAPTER_RENDER::Initialize`, six slots checked at
    /// adapter +1520..+1560 with the table copied at +192, triage event 1290). `false`, the
    /// default, is every later build read (the WDDM 3.2 kernels that copy 1,544 bytes for an
    /// interface ≥ 0x11001, \[D24\] `ADAPTER_RENDER::Initialize`, triage line 1315): the table
    /// sits at +200 there and the five slots checked, +1528..+1560, are the four doorbell DDIs
    /// and `DxgkDdiNotifyWorkSubmission`; byte 1368 is not among them.
    pub ums_requires_slot_1368: bool,
    /// windows-bringup.md §15 question 4 (BR-62): may a physical adapter report no segments
    /// (`DXGK_QUERYSEGMENTOUT4.NbSegment` = 0)? `true` is the 22631 kernel: \[D\]
    /// `VidMmiQuerySegmentInfo4` and `VIDMM_GLOBAL::Init` check only the upper bound (32), and
    /// an adapter with GPU VA gets VidMm's implicit system-memory segment besides. `false`, the
    /// default, is every later build read (\[D24\] dxgmms2 `CreatePhysicalAdapterSegments` @
    /// 0x14009B368 and @ 0x1400B14D0): a zero count is refused with `STATUS_UNSUCCESSFUL`
    /// before the descriptors are asked for, VidMm is not created and the start fails with
    /// `STATUS_NO_MEMORY`. Neither build exempts an IoMmu-only adapter.
    pub zero_segments_accepted: bool,
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
    /// Where the decompiled 24H2 code and Microsoft's pages disagree about the native-fence,
    /// doorbell and hardware-queue flows: the answer this machine plays (default: 24H2, or
    /// `RVGPU_OS_READING`; [`self::answers`]).
    pub reading: self::answers::Reading,
    /// BR-14: `GraphicsDrivers\DisableVersionMismatchCheck` (\[D24\] `DpiFdoInitializeFdo` @
    /// 0x140242CBC): set, Dxgkrnl does not compare the KMD's file version with the
    /// package's `DriverVer`. Default off (the value is absent on a stock machine).
    pub disable_version_mismatch_check: bool,
    /// The Windows build the feature database follows (default 24H2).
    pub windows_build: WindowsBuild,
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
