//! [`UmsHost`]: what user-mode submission asks of the OS around it.
//!
//! UMS's operations run inside Dxgkrnl's thunks and teardowns and need services that belong
//! to other components or to the machine as a whole: progress and sync fences (`crate::sync`),
//! a process's GPU address space and VidMm's deferred frees (`crate::vidmm`), the process's
//! handle tables and the OS's configuration. They reach them through this trait, which the
//! machine implements (`crate::machine`), so UMS sits below the machine and does not import it.
//! Every method is the component's own operation under the same name; its rules are stated
//! where it is defined.

use std::time::Duration;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::os::OsConfig;
use crate::sync::fence::{MonitoredFence, NativeFence, SimEvent, WaitOutcome};
use crate::sync::fencelog::LogBuffer;

/// The services UMS's operations call beyond the adapter they run on.
pub(crate) trait UmsHost {
    /// The OS this machine plays (timeouts, IRQLs, readings).
    fn os_config(&self) -> &OsConfig;
    /// `process` runs on this machine: its handle tables go with the machine, or with the
    /// process ([`release_process`](Self::release_process)).
    fn own_process(&self, process: ProcessId);
    /// `process` is gone: its handle tables go.
    fn release_process(&self, process: ProcessId);

    /// A legacy monitored fence on adapter `i`, owned by `process`, made with `flags`
    /// (`D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS`).
    fn create_monitored_fence(
        &self,
        i: usize,
        process: ProcessId,
        initial: u64,
        flags: u32,
    ) -> Result<MonitoredFence, SimError>;
    /// Destroys a legacy monitored fence.
    fn destroy_monitored_fence(&self, f: &MonitoredFence) -> Result<(), SimError>;
    /// The OS writes `value` to a monitored fence and releases satisfied waits.
    fn signal_monitored_fence_from_cpu(
        &self,
        f: &MonitoredFence,
        value: u64,
    ) -> Result<(), SimError>;
    /// Blocking CPU wait for `value` (step machines drive the machine meanwhile).
    fn wait_monitored_fence(
        &self,
        f: &MonitoredFence,
        value: u64,
        timeout: Duration,
    ) -> Result<WaitOutcome, SimError>;
    /// A GPU wait: `resume` runs once the fence reaches `value`.
    fn wait_monitored_fence_from_gpu(
        &self,
        f: &MonitoredFence,
        value: u64,
        resume: Box<dyn FnOnce() + Send + 'static>,
    ) -> Result<SimEvent, SimError>;
    /// A legacy monitored fence opened as a native fence on `adapter`.
    fn open_monitored_fence_as_native(
        &self,
        f: &MonitoredFence,
        adapter: usize,
        process: ProcessId,
    ) -> Result<NativeFence, SimError>;
    /// Destroys a native fence.
    fn destroy_native_fence(&self, fence: &NativeFence) -> Result<(), SimError>;
    /// The D3DKMT handles of `process`'s native fences on adapter `i`.
    fn native_fence_kmt_handles_of(&self, i: usize, process: ProcessId) -> Vec<KmtHandle>;
    /// Takes the native fence behind D3DKMT handle `h` of adapter `i` out of its table.
    fn take_native_fence_kmt(&self, i: usize, h: KmtHandle) -> Option<NativeFence>;
    /// The native fence instances `process` holds on adapter `i`.
    fn native_fence_instances_of(&self, i: usize, process: ProcessId) -> Vec<NativeFence>;
    /// Process exit: closes every NT handle of `process`.
    fn close_nt_handles_of(&self, process: ProcessId) -> Result<(), SimError>;
    /// Process exit: the fence storage forgets `process`.
    fn forget_fence_process(&self, a: &AdapterShared, process: ProcessId);
    /// Gives back fence-value pages no fence uses any more.
    fn retire_empty_fence_pages(&self, a: &AdapterShared);
    /// The log buffers of a user-mode queue on an adapter with native fences, made before the
    /// queue's thunk takes its locks.
    fn alloc_queue_logs(
        &self,
        a: &AdapterShared,
        pid: ProcessId,
        user_mode: bool,
    ) -> Result<Option<(LogBuffer, LogBuffer)>, SimError>;

    /// After `DxgkDdiCreateContext`: VidSch learns of the context (on a hardware-scheduled
    /// node it keeps the KMD handle for the scheduling log and tells the KMD the priority).
    fn context_created(
        &self,
        a: &AdapterShared,
        context: KmtHandle,
        kmd: usize,
        node: u32,
    ) -> Result<(), SimError>;
    /// Before `DxgkDdiDestroyContext`: VidSch reads what the GPU logged about the context.
    fn context_destroying(&self, a: &AdapterShared, kmd: usize, node: u32);

    /// A new process's GPU address space (its KMD process handle, if any).
    fn vidmm_create_process(
        &self,
        a: &AdapterShared,
        process: ProcessId,
    ) -> Result<Option<usize>, SimError>;
    /// Process exit: its GPU address space goes.
    fn vidmm_destroy_process(&self, a: &AdapterShared, process: ProcessId) -> Result<(), SimError>;
    /// Device teardown: the device's GPU VA objects go, and the ranges of `space`'s process
    /// when its GPU VA space goes too.
    fn gpu_va_teardown(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        space: Option<ProcessId>,
    ) -> Result<(), SimError>;
    /// VidMm's deferred allocation frees whose work has finished.
    fn reap_allocations(&self, a: &AdapterShared) -> Result<(), SimError>;
    /// VidMm's deferred system-page frees, at a point where paging may run.
    fn reap_system_pages(&self, a: &AdapterShared) -> Result<(), SimError>;
    /// UM-14's optional step before D3: VidMm trims VRAM.
    fn residency_trim_for_d3(&self, a: &AdapterShared) -> Result<(), SimError>;
}
