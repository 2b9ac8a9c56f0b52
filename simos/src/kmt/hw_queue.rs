//! `D3DKMTCreateHwQueue`, `D3DKMTSubmitCommandToHwQueue` and `D3DKMTDestroyHwQueue`'s kernel
//! entries, as 24H2 answers them: `K:DxgkCreateHwQueueInternal` @0x1402BAF98 (with
//! `K:DXGHWQUEUE::Initialize` @0x1402BBA30), `K:DxgkSubmitCommandToHwQueueInternal`
//! @0x1402C5A10 (with `K:DXGHWQUEUE::SubmitCommand` @0x1402C6610) and
//! `K:DxgkDestroyHwQueueInternal` @0x1403BC798: the caller's structure as written, the checks in
//! their order with their statuses, and back what 24H2 writes.

use std::cell::RefCell;

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{HwQueue, KmtHandle, NtStatus, QueueProgress};

use super::context_virtual::CallerMemory;
use super::process::SimFence;
use crate::base::error::SimError;
use crate::machine::Machine;
use crate::sync::fence::MonitoredFence;
use crate::ums::{self, UmsProcess};

use super::refusal::row::*;
pub use rvgpu_ddi::d3dkmt::{D3DKMT_CREATEHWQUEUE, D3DKMT_SUBMITCOMMANDTOHWQUEUE};

/// `D3DDDI_CREATEHWQUEUEFLAGS::NoKmdAccess`.
pub const NO_KMD_ACCESS: u32 = 1 << 3;
/// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission`.
pub const USER_MODE_SUBMISSION: u32 = ums::HWQUEUE_USER_MODE_SUBMISSION;
/// `D3DDDI_CREATEHWQUEUEFLAGS::NativeProgressFence`.
pub const NATIVE_PROGRESS_FENCE: u32 = 1 << 5;
/// The most primaries a submission names (`K:DxgkSubmitCommandToHwQueueInternal`).
const MAX_PRIMARIES: u32 = 16;
/// Most private data captured here (a bound keeps the copy small; past it, what a failed pool
/// allocation answers).
const MAX_PRIVATE_DATA: u32 = 64 * 1024;

/// A queue `D3DKMTCreateHwQueue` made: its handle and, for a kernel-submission queue, its
/// progress fence's handle and fence.
pub struct CreatedHwQueue {
    /// `hHwQueue`.
    pub handle: KmtHandle,
    /// `hHwQueueProgressFence` and the fence.
    pub progress: Option<(KmtHandle, MonitoredFence)>,
    /// The OS made the progress fence native ([`crate::os::answers::ProgressFence`]).
    pub native: bool,
}

impl CreatedHwQueue {
    /// The queue as the Rust UMD holds it (24H2 gives a user-mode queue no progress fence:
    /// `UmsProgress::None`).
    pub(crate) fn into_umd(self) -> HwQueue<SimFence> {
        let progress = self.progress.map(|(fence, p)| QueueProgress {
            fence,
            gpu: p.gpu_va(),
            cpu: SimFence::Monitored(p),
        });
        HwQueue {
            handle: self.handle,
            progress,
        }
    }
}

refusals! {
    /// `D3DKMTCreateHwQueue`'s refusals, in 24H2's order.
    CreateHwQueueCheck => CREATE_HW_QUEUE_CHECKS {
        PrivateData: "pPrivateDriverData without size, or a size without pointer" => INVALID_PARAMETER;
        NoPool: "no pool for the private data" => NO_MEMORY;
        PrivateDataUnreadable: "the private data not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        NoKmdAccess: "Flags.NoKmdAccess without test signing" => INVALID_PARAMETER;
        Context: "hHwContext not a context in the caller's handle table" => INVALID_PARAMETER;
        NotHwQueueContext: "hHwContext created without HwQueueSupported" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_hw_queue`) makes it";
        UserModeNode: "UserModeSubmission on a node without user-mode submission" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_hw_queue`) makes it";
        NoKmdAccessContext: "Flags.NoKmdAccess on a context without NoKmdAccess" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_hw_queue`) makes it";
        NoKmdAccessData: "Flags.NoKmdAccess with private data below 264 bytes or without its two tags" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_hw_queue`) makes it";
    }
}

/// `D3DKMTCreateHwQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTCreateHwQueue",
    source: Some(&[
        src("DxgkCreateHwQueueInternal", 0x1402BAF98),
        src("DXGCONTEXT::CreateHwQueue", 0x1402BB7A8),
        src("DXGHWQUEUE::Initialize", 0x1402BBA30),
        src("DXGHWQUEUE::InitializeForUserModeSubmission", 0x1401DA74C),
        src("CheckNoKmdAccessPrivateData", 0x14018A51C),
    ]),
    checks: CREATE_HW_QUEUE_CHECKS,
    written_back: &[
        "hHwQueue",
        "hHwQueueProgressFence, HwQueueProgressFenceCPUVirtualAddress and \
         HwQueueProgressFenceGPUVirtualAddress, without UserModeSubmission",
        "the private data, when given",
    ],
    pending: Pending::No,
    entry: Some("hw_queue::dxgk_create_hw_queue_internal"),
    gaps: "DisableGpuTimeout is added to the DDI's flags for a queue of a context created \
           with it, not for a device whose own flag (read by DXGHWQUEUE::Initialize and \
           InitializeForUserModeSubmission) disables GPU timeouts; a queue without NoKmdAccess on a \
           NoKmdAccess context reaches DxgkDdiCreateHwQueue with a NULL hContext, as in 24H2; \
           one with it (no DDI in 24H2) is not simulated; a user-mode queue \
           on an adapter that reported no doorbell size is STATUS_NOT_SUPPORTED \
           (the simulation's rule: DXGHWQUEUE::InitializeForUserModeSubmission has no such \
           check)",
};

/// `DxgkCreateHwQueueInternal` for the caller's structure `a`, in 24H2's order:
/// 1. private data given half (a pointer with size 0, or a size with no pointer):
///    STATUS_INVALID_PARAMETER;
/// 2. the private data captured from `mem` (above the bound STATUS_NO_MEMORY, what a failed
///    pool allocation answers; else the probe's status);
/// 3. `Flags.NoKmdAccess` without test signing: STATUS_INVALID_PARAMETER;
/// 4. `hHwContext` not a context in the caller's handle table (`owner`), or one created
///    without `HwQueueSupported`: STATUS_INVALID_PARAMETER;
/// 5. `DXGHWQUEUE::Initialize`: BR-95, then a queue with `NoKmdAccess` on a context without
///    it, or with private data `K:CheckNoKmdAccessPrivateData` @0x14018A51C refuses:
///    STATUS_INVALID_PARAMETER; then `DxgkDdiCreateHwQueue` with the context's driver handle
///    (NULL for a `NoKmdAccess` context) (`ums::create_hw_queue`).
///
/// On success `hHwQueue` is written and, for a queue without `UserModeSubmission`, the three
/// progress-fence fields; the private data goes back to the caller. On failure `a` is
/// unchanged.
pub fn dxgk_create_hw_queue_internal(
    m: &Machine,
    a: &mut D3DKMT_CREATEHWQUEUE,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
    mem: &dyn CallerMemory,
) -> Result<CreatedHwQueue, NtStatus> {
    let (at, size) = (a.pPrivateDriverData, a.PrivateDriverDataSize);
    if (at == 0) != (size == 0) {
        return Err(CreateHwQueueCheck::PrivateData.refuse());
    }
    let mut pdd = capture(mem, at, size)?;
    if !m.os_config().test_signing && a.Flags & NO_KMD_ACCESS != 0 {
        return Err(CreateHwQueueCheck::NoKmdAccess.refuse());
    }
    let bad = CreateHwQueueCheck::Context.refuse();
    let p = owner(a.hHwContext).ok_or(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    // Without `HwQueueSupported`: BR-94 in `ums::create_hw_queue`, the same status.
    ums::device_context_hw_queue(&sh, p.device, a.hHwContext).ok_or(bad)?;
    let q = ums::create_hw_queue(m, &sh, p.device, a.hHwContext, a.Flags, &mut pdd)
        .map_err(super::process::status)?;
    if !pdd.is_empty() {
        if let Err(e) = mem.write(at, &pdd) {
            let _ = ums::destroy_hw_queue_thunk(m, &sh, p.device, q.handle);
            return Err(e);
        }
    }
    let native = m.hw_queue_native_progress(p.adapter, q.handle).is_some();
    a.hHwQueue = q.handle;
    if native {
        // The pages (`DXGKARG_CREATEHWQUEUE` remarks) and 26H1 (`K:DxgkCreateHwQueueInternal`
        // copies the flags back): the runtime learns the progress fence is native.
        a.Flags |= NATIVE_PROGRESS_FENCE;
    }
    let progress = q.fence.zip(q.progress);
    if a.Flags & USER_MODE_SUBMISSION == 0 || progress.is_some() {
        // 24H2 writes the three only for kernel-submission queues; 26H1 and the pages give a
        // user-mode queue a progress fence too (`UmsProgress::Given`).
        if let Some((fence, p)) = &progress {
            a.hHwQueueProgressFence = *fence;
            a.HwQueueProgressFenceCPUVirtualAddress = p.kernel_va() as u64;
            a.HwQueueProgressFenceGPUVirtualAddress = p.gpu_va();
        }
    }
    Ok(CreatedHwQueue {
        handle: q.handle,
        progress,
        native,
    })
}

/// `size` bytes of private data at `at` (none for 0).
fn capture(mem: &dyn CallerMemory, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
    match size {
        0 => Ok(Vec::new()),
        s if s > MAX_PRIVATE_DATA => Err(CreateHwQueueCheck::NoPool.refuse()),
        s => mem.read(at, s),
    }
}

refusals! {
    /// `D3DKMTSubmitCommandToHwQueue`'s refusals, in 24H2's order.
    SubmitCommandToHwQueueCheck => SUBMIT_COMMAND_TO_HW_QUEUE_CHECKS {
        Queue: "hHwQueue not a queue in the caller's handle table" => INVALID_PARAMETER;
        UserModeQueue: "hHwQueue created for user-mode submission" => INVALID_PARAMETER;
        Primaries: "NumPrimaries above 16" => INVALID_PARAMETER;
        PrivateData: "pPrivateDriverData without size, or a size without pointer" => INVALID_PARAMETER;
        Removed: "the adapter stopped or removed" => DEVICE_REMOVED;
        PrivateDataSize: "PrivateDriverDataSize above the context's DmaBufferPrivateDataSize" => INVALID_PARAMETER;
        NoPool: "no pool for the submission" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        PrimariesUnreadable: "WrittenPrimaries not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        DeviceError: "the device in error" => GPU_EXCEPTION_ON_DEVICE,
            elsewhere "the simulated submission (`ums::submit_command_admitted`) makes it";
    }
}

/// `D3DKMTSubmitCommandToHwQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const SUBMIT_COMMAND_TO_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTSubmitCommandToHwQueue",
    source: Some(&[
        src("DxgkSubmitCommandToHwQueueInternal", 0x1402C5A10),
        src("DXGHWQUEUE::SubmitCommand", 0x1402C6610),
        src("VidSchSubmitCommandToHwQueue", 0x140048F00),
    ]),
    checks: SUBMIT_COMMAND_TO_HW_QUEUE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue::dxgk_submit_command_to_hw_queue_internal"),
    gaps: "VidMm's reference of the primaries is not read: any primary is \
           STATUS_INVALID_PARAMETER on this render-only adapter",
};

/// `DxgkSubmitCommandToHwQueueInternal` for the caller's structure `a`, in 24H2's order, every
/// refusal STATUS_INVALID_PARAMETER unless said:
/// 1. `hHwQueue` not a queue in the caller's handle table (`owner`);
/// 2. the queue created for user-mode submission;
/// 3. `NumPrimaries` above 16;
/// 4. private data given half;
/// 5. the adapter removed: STATUS_DEVICE_REMOVED (`COREDEVICEACCESS`);
/// 6. `DXGHWQUEUE::SubmitCommand`: `PrivateDriverDataSize` above the context's
///    `DmaBufferPrivateDataSize` (this KMD's is 0); `WrittenPrimaries` not readable (the
///    probe's status);
/// 7. the simulation's own rule past 24H2's (the catalog row's gaps): any primary on this
///    render-only adapter; then VidSch and `DxgkDdiSubmitCommandToHwQueue`
///    (`ums::submit_command`), which, as `M:VidSchSubmitCommandToHwQueue` @0x140048F00,
///    refuses a device in error with STATUS_GRAPHICS_GPU_EXCEPTION_ON_DEVICE (not Dxgkrnl's
///    STATUS_DEVICE_REMOVED, which only a stopped adapter gets) and does not compare
///    `HwQueueProgressFenceId` with the queue's earlier values.
///
/// Nothing is written back.
pub fn dxgk_submit_command_to_hw_queue_internal(
    m: &Machine,
    a: &D3DKMT_SUBMITCOMMANDTOHWQUEUE,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = SubmitCommandToHwQueueCheck;
    let p = owner(a.hHwQueue).ok_or(C::Queue.refuse())?;
    let k = m.kmt(&p);
    let sh = k.thunk_borrowed()?;
    // Steps 1 (the queue is the device's) to 6 but the probe, on what the queue is.
    let admit = |kind: Option<ums::SubmitKind>| {
        let kind = kind.ok_or(C::Queue.refuse())?;
        if kind.user_mode {
            return Err(C::UserModeQueue.refuse());
        }
        if a.NumPrimaries > MAX_PRIMARIES {
            return Err(C::Primaries.refuse());
        }
        if (a.pPrivateDriverData == 0) != (a.PrivateDriverDataSize == 0) {
            return Err(C::PrivateData.refuse());
        }
        if kind.removed {
            return Err(C::Removed.refuse());
        }
        if a.PrivateDriverDataSize > kind.dma_private_data {
            return Err(C::PrivateDataSize.refuse());
        }
        Ok(())
    };
    if a.NumPrimaries != 0 {
        admit(ums::submit_queue_kind(sh, p.device, a.hHwQueue))?;
        mem.read(a.WrittenPrimaries, a.NumPrimaries * 4)?;
        // A render-only adapter has no primaries to write (the simulation's rule).
        return Err(gap(STATUS_INVALID_PARAMETER));
    }
    // Nothing left to read of the caller's memory: the checks run in VidSch's own look at
    // the queue, one lookup for both.
    ums::submit_command_admitted(
        m,
        sh,
        p.device,
        a.hHwQueue,
        a.HwQueueProgressFenceId,
        a.CommandBuffer,
        a.CommandLength,
        |kind| admit(kind).map_err(|s| SimError::DdiFailed(s.0)),
    )
    .map_err(super::process::status)
}

refusals! {
    /// `D3DKMTDestroyHwQueue`'s refusals, in 24H2's order.
    DestroyHwQueueCheck => DESTROY_HW_QUEUE_CHECKS {
        Queue: "hHwQueue not a queue in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTDestroyHwQueue`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_HW_QUEUE: Thunk = Thunk {
    name: "D3DKMTDestroyHwQueue",
    source: Some(&[
        src("DxgkDestroyHwQueueInternal", 0x1403BC798),
        src("DXGHWQUEUE::DestroyCoreState", 0x1402CDD74),
        src("DXGDOORBELL::DestroyCoreState", 0x1401D804C),
    ]),
    checks: DESTROY_HW_QUEUE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("hw_queue::dxgk_destroy_hw_queue_internal"),
    gaps: "",
};

/// `DxgkDestroyHwQueueInternal`: `hHwQueue` not a queue in the caller's handle table
/// (`owner`) is STATUS_INVALID_PARAMETER; else the queue goes with its doorbell
/// (`K:DXGHWQUEUE::DestroyCoreState` @0x1402CDD74).
pub fn dxgk_destroy_hw_queue_internal(
    m: &Machine,
    h_hw_queue: KmtHandle,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let bad = DestroyHwQueueCheck::Queue.refuse();
    let p = owner(h_hw_queue).ok_or(bad)?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    ums::device_queue_kind(&sh, p.device, h_hw_queue).ok_or(bad)?;
    ums::destroy_hw_queue_thunk(m, &sh, p.device, h_hw_queue).map_err(super::process::status)
}

/// The Rust UMD's private data as the caller's memory: one buffer at address [`BUFFER_AT`].
pub(crate) struct Buffer<'a>(RefCell<&'a mut [u8]>);

/// Where [`Buffer`] lies in the "caller's" address space.
pub(crate) const BUFFER_AT: u64 = 0x1000;

impl<'a> Buffer<'a> {
    pub(crate) fn new(bytes: &'a mut [u8]) -> Self {
        Self(RefCell::new(bytes))
    }

    /// `(pPrivateDriverData, PrivateDriverDataSize)` naming the buffer (none when empty).
    pub(crate) fn pointer(&self) -> (u64, u32) {
        let len = self.0.borrow().len();
        match u32::try_from(len) {
            Ok(0) | Err(_) => (0, 0),
            Ok(n) => (BUFFER_AT, n),
        }
    }
}

impl CallerMemory for Buffer<'_> {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let b = self.0.borrow();
        match b.get(..size as usize) {
            Some(bytes) if at == BUFFER_AT => Ok(bytes.to_vec()),
            _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
        }
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus> {
        let mut b = self.0.borrow_mut();
        match b.get_mut(..bytes.len()) {
            Some(dst) if at == BUFFER_AT => {
                dst.copy_from_slice(bytes);
                Ok(())
            }
            _ => Err(NtStatus(STATUS_INVALID_PARAMETER)),
        }
    }
}
