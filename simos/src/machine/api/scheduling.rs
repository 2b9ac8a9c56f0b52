//! The `Machine`'s methods on VidSch: hardware scheduling (the OS's HWS calls, scheduling
//! logs, context priorities) and the legacy submission path (DMA buffers through
//! `DxgkDdiSubmitCommand`, the fence IDs VidSch keeps).

use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::Command;

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ob::KmtHandle;
use crate::ums::UmsProcess;
use crate::vidsch::hws::{self, ContextPriority, HwsCall, SchedLogEntry, SchedLogStats};
use crate::vidsch::legacy;

impl Machine {
    /// `D3DKMTCreateContextVirtual` on `p`'s device with an explicit `HwQueueSupported`
    /// (BR-92 tests; a correct runtime's contexts come from [`crate::kmt`]).
    pub fn create_context_flags(
        &self,
        p: &crate::ums::UmsProcess,
        node: u32,
        hw_queue_supported: bool,
    ) -> Result<KmtHandle, SimError> {
        let a = self.adapter(p.adapter)?;
        crate::ums::create_context_flags(self, a, p.device, node, hw_queue_supported)
    }

    /// Every HWS call the OS made on adapter `i`, in order.
    pub fn hws_calls(&self, i: usize) -> Vec<HwsCall> {
        self.adapter(i)
            .map_or_else(|_| Vec::new(), |a| lock(&a.sch.hws).calls.clone())
    }

    /// The hardware-scheduled nodes of adapter `i`.
    pub fn hws_nodes(&self, i: usize) -> Vec<u32> {
        self.adapter(i)
            .map_or_else(|_| Vec::new(), |a| lock(&a.sch.hws).hw_nodes.clone())
    }

    /// Reads `node`'s scheduling log now and returns every entry the OS accepted so far.
    pub fn scheduling_log(&self, i: usize, node: u32) -> Result<Vec<SchedLogEntry>, SimError> {
        let a = self.adapter(i)?;
        hws::scheduling_log(a, node)
    }

    /// `node`'s log counters (without reading the log) and its `InterruptEntry`.
    pub fn scheduling_log_stats(&self, i: usize, node: u32) -> Option<(SchedLogStats, u32)> {
        let a = self.adapter(i).ok()?;
        hws::scheduling_log_stats(a, node)
    }

    /// D3DKMTSetContextSchedulingPriority-like: a new band / priority for `context`; the KMD is
    /// told through `DxgkDdiSetContextSchedulingProperties` (\[D\] `VidSchSetPriorityHwContext`
    /// → `VidSchiUpdateDdiHwContextPriority`). Contexts on software-scheduled nodes:
    /// `STATUS_INVALID_PARAMETER` (the simulation's choice).
    pub fn set_context_priority(
        &self,
        i: usize,
        context: KmtHandle,
        p: ContextPriority,
    ) -> Result<(), SimError> {
        let a = self.adapter(i)?;
        hws::set_context_priority(a, context, p)
    }
}

impl Machine {
    /// Submits `cmds` as one DMA buffer of process `p`'s context `context` (created with
    /// `D3DKMTCreateContext` on a node) through `DxgkDdiSubmitCommand`. Returns the fence ID.
    /// A context created with `HwQueueSupported` is STATUS_INVALID_PARAMETER, as
    /// `D3DKMTSubmitCommand` refuses it ([`Self::submit_command_context`]).
    pub fn submit_legacy(
        &self,
        p: &UmsProcess,
        context: KmtHandle,
        cmds: &[Command],
    ) -> Result<u32, SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        legacy::submit_legacy(
            self.waiter(),
            &a,
            &|bytes| crate::vidmm::dmabuf::dma_carve(self, &a, p.pid, bytes),
            p,
            context,
            cmds,
        )
    }

    /// `D3DKMTSubmitCommand` of process `p`'s command buffer at GPU VA `va`, `bytes` long, on
    /// its context `context`. VidSch hands the KMD that buffer itself, with no copy:
    /// `DxgkDdiSubmitCommandVirtual` with `DmaBufferVirtualAddress` = `va` (a VA of the
    /// submitting process, the DXGKARG_SUBMITCOMMANDVIRTUAL page), as 24H2
    /// `DXGCONTEXT::SubmitCommand` @0x1402A6890 keeps only `Commands` and `CommandLength` in
    /// VidSch's submit data (it copies the private driver data alone). The GPU reads the words
    /// when it runs the packet, so what the process writes there until then is what runs.
    /// Returns the fence ID, or `None` when `bytes` is 0. The rules, INVALID_PARAMETER unless
    /// said:
    /// - a context that is not `p`'s, or one created with `HwQueueSupported`
    ///   ([`Self::submit_command_context`]);
    /// - `bytes` 0 submits nothing and succeeds (the same function calls
    ///   `DXGCONTEXT::SubmitCommand` only for a non-zero `CommandLength`);
    /// - the device in error: STATUS_DEVICE_REMOVED, as [`Self::submit_legacy`];
    /// - `va` or `bytes` not a multiple of 8 (the packets' word), `bytes` above
    ///   [`MAX_COMMAND_BYTES`](crate::vidsch::legacy::MAX_COMMAND_BYTES), or a page of the range the process's tables do not map for
    ///   command fetch with user privilege: Windows passes them on unchecked and the GPU would
    ///   fault; this OS refuses them at submission (the simulation's own rule, UNVERIFIED
    ///   against Windows). A range unmapped after the check faults on the GPU.
    pub fn submit_legacy_va(
        &self,
        p: &UmsProcess,
        context: KmtHandle,
        va: GpuVa,
        bytes: u32,
    ) -> Result<Option<u32>, SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        legacy::submit_legacy_va(self.waiter(), &a, p, context, va.get(), bytes)
    }

    /// `D3DKMTSubmitCommand`'s rules on a context it names, STATUS_INVALID_PARAMETER each, in
    /// 24H2 `DxgkSubmitCommandInternal` @0x1402A4B90's order: not in the caller's handle table
    /// (not a context of `p`'s device); created with `HwQueueSupported`.
    pub fn submit_command_context(
        &self,
        p: &UmsProcess,
        context: KmtHandle,
    ) -> Result<(), SimError> {
        let a = self.adapter_shared(p.adapter)?;
        legacy::check_submit_context(a, p, context).map(|_| ())
    }

    /// Submits `cmds` on the system context of adapter `i`, node `node` (no owning device).
    pub fn submit_system(&self, i: usize, node: u32, cmds: &[Command]) -> Result<u32, SimError> {
        let a = self.adapter_shared(i)?.clone();
        legacy::submit_system(self.waiter(), &a, node, cmds)
    }

    /// The OS's `(last submitted, last completed)` fence IDs of `node` (TDR-04).
    pub fn legacy_fences(&self, i: usize, node: u32) -> (u32, u32) {
        self.adapter_shared(i)
            .map_or((0, 0), |a| legacy::fences(a, node))
    }

    /// Times VidMm's paging waits on adapter `i` of a threaded machine looked at their fence:
    /// once per wait and once per setting of VidSch's completion event, not once per tick.
    pub fn paging_wait_looks(&self, i: usize) -> u64 {
        self.adapter_shared(i)
            .map_or(0, |a| legacy::paging_wait_looks(a))
    }

    /// Every retired fence ID of adapter `i` as `(node, id)`, in order (completions and IDs a
    /// reset retired).
    pub fn legacy_completed(&self, i: usize) -> Vec<(u32, u32)> {
        self.adapter_shared(i)
            .map(|a| legacy::completed(a))
            .unwrap_or_default()
    }

    /// Kernel-mode DMA buffers in flight on `node`: `(fence ID, paging, device)`.
    pub fn legacy_in_flight(&self, i: usize, node: u32) -> Vec<(u32, bool, Option<KmtHandle>)> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| legacy::in_flight(a, node))
    }

    /// `DxgkDdiQueryCurrentFence(node)` at PASSIVE_LEVEL (UNVERIFIED level). It calls the DDI
    /// directly, as a test does: 24H2 never calls it.
    pub fn query_current_fence(&self, i: usize, node: u32) -> Result<u32, SimError> {
        let a = self.adapter_shared(i)?.clone();
        legacy::query_current_fence(&a, node)
    }
}
