//! The thunks the cases need beyond the UMD's [`Kmt`]: sync objects (CPU signals and waits,
//! monitored fences) and the kernel-mode testing escape.

use std::time::Duration;

use rvgpu_umd::kmt::{FenceCpu, Kmt, KmtHandle, NtStatus};

/// `D3DKMT_WDDM_1_2_CAPS::SupportPerEngineTDR` (bit 2 of the flags word, d3dkmthk.h).
pub const SUPPORT_PER_ENGINE_TDR: u32 = 1 << 2;

/// How a CPU wait with a timeout ended ([`KmtSync::wait_timeout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceWait {
    /// The fence reached the value.
    Reached,
    /// The timeout passed first.
    TimedOut,
    /// The fence went away while waiting (destroyed, device lost).
    Abandoned,
}

/// A legacy monitored fence (MF-01) as `D3DKMTCreateSynchronizationObject2` returns it.
#[derive(Debug)]
pub struct MonitoredSync<V> {
    /// The sync object handle.
    pub handle: KmtHandle,
    /// `FenceValueGPUVirtualAddress` in the device's process.
    pub value_gpu: u64,
    /// The read-only CPU mapping of the value.
    pub value: V,
}

/// The sync-object thunks the fence cases need beyond the UMD's [`Kmt`] (which has only what
/// the UMD's queues use): CPU signals, CPU waits with a timeout, monitored fences and the CPU
/// mappings of fence values. On Windows they are `rvgpu_umd::kmt_windows::WinKmt`'s own
/// D3DKMT calls; in the simulation the simulated OS's.
pub trait KmtSync: Kmt {
    /// A monitored fence's read-only CPU mapping of its value (`FenceValueCPUVirtualAddress`),
    /// valid while its device lives.
    type Value: FenceCpu + Send + Sync + 'static;

    /// `D3DKMTCreateSynchronizationObject2` of a `D3DDDI_MONITORED_FENCE`.
    fn create_monitored_fence(&self, initial: u64) -> Result<MonitoredSync<Self::Value>, NtStatus>;

    /// `D3DKMTSignalSynchronizationObjectFromCpu` of one native or monitored fence.
    fn signal_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus>;

    /// `D3DKMTWaitForSynchronizationObjectFromCpu` on one fence, up to `timeout`.
    fn wait_timeout(
        &self,
        fence: KmtHandle,
        value: u64,
        timeout: Duration,
    ) -> Result<FenceWait, NtStatus>;

    /// The flags word of `D3DKMT_WDDM_1_2_CAPS`, as `D3DKMTQueryAdapterInfo`
    /// (`KMTQAITYPE_WDDM_1_2_CAPS`) answers it for the device's adapter.
    fn wddm_1_2_caps(&self) -> Result<u32, NtStatus>;

    /// The kernel-mode testing thunks ([`TestThunks`]); by default none.
    fn testing(&self) -> Option<&dyn TestThunks> {
        None
    }
}

/// The thunks beyond [`KmtSync`] that the capability needs.
pub trait TestThunks {
    /// `D3DKMTEscape` with `DriverKnownEscape`: `data` is a
    /// `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER` whose pointers name `dma` and `private`.
    fn escape_build_test_command_buffer(
        &self,
        data: &mut [u8],
        dma: &mut [u8],
        private: &mut [u8],
    ) -> Result<(), NtStatus>;

    /// Whether the OS enabled `DXGK_FEATURE_KERNEL_MODE_TESTING` for the adapter
    /// (`D3DKMTIsFeatureEnabled`).
    fn kernel_mode_testing_enabled(&self) -> Result<bool, NtStatus>;

    /// Makes sure timeout detection and recovery is on for the adapter: always so on Windows;
    /// the simulated OS's TDR is opt-in per adapter.
    fn arm_tdr(&self) -> Result<(), NtStatus>;

    /// `D3DKMTEscape` of type `D3DKMT_ESCAPE_DRIVERPRIVATE` on the device with `data` (in/out):
    /// the KMD's test hooks (`rvgpu_hw::testhooks`).
    fn escape_driver_private(&self, data: &mut [u8]) -> Result<(), NtStatus>;
}
