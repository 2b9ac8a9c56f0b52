//! The `Machine`'s methods on memory: each looks its adapter up and calls VidMm
//! ([`crate::vidmm`]), handing the machine in as VidMm's [`Host`].

use std::time::Duration;

use rvgpu_ddi::basic::NTSTATUS;
use rvgpu_ddi::tdr::{DXGKARG_BUILDPAGINGBUFFER_0, DXGK_BUILDPAGINGBUFFER_OPERATION};
use rvgpu_device::device::mmu::Fault;
use rvgpu_device::SysAlloc;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::mmu::Access;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::machine::Machine;
use crate::ob::KmtHandle;
use crate::sync::fence::MonitoredFence;
use crate::ums::allocation;
use crate::ums::UmsProcess;
use crate::vidmm::aperture::ApertureRange;
use crate::vidmm::host::Host;
use crate::vidmm::mmu::LeafTag;
use crate::vidmm::paging::TransferSide;
use crate::vidmm::residency::{MakeResidentFail, Place};
use crate::vidmm::va::paging_queue;
use crate::vidmm::{aperture, contiguous, fencemap, fill, mmu, paging, process, residency, va};

impl Machine {
    /// Bytes of the machine's system memory still to be had: its size
    /// ([`rvgpu_device::Memory::set_system_cap`]) less what the OS, the driver and every
    /// process hold. Whatever is created and destroyed, it comes back to where it was.
    pub fn system_memory_free(&self) -> u64 {
        self.memory().system_free()
    }

    /// What the GPU's tables for process `pid` on adapter `i` map at `va`, walked as the
    /// device walks them: the device address and the size of the page (4 KiB, or 2 MiB for a
    /// large page). `None`: no such space, or the walk faults (tests).
    pub fn gpu_translate(&self, i: usize, pid: ProcessId, va: GpuVa) -> Option<(u64, u64)> {
        mmu::gpu_translate(self.adapter_shared(i).ok()?, pid, va)
    }

    /// Contiguous allocations the driver holds on adapter `i` now (leak checks around a
    /// process's life).
    pub fn contiguous_allocations(&self, i: usize) -> usize {
        self.adapter_shared(i)
            .map_or(0, |a| contiguous::contiguous_allocations(a))
    }

    /// Tests: VidMm maps the system pages `pages` into an aperture range of adapter `i`,
    /// as for a range it uses itself (no device, no allocation).
    pub fn aperture_map_pages(&self, i: usize, pages: &[u64]) -> Result<ApertureRange, SimError> {
        let a = self.adapter_shared(i)?.clone();
        aperture::aperture_map(self, &a, pages, 0, 0, Vec::new())
    }

    /// Tests: VidMm unmaps `range` of adapter `i` ([`Machine::aperture_map_pages`]).
    pub fn aperture_unmap_range(&self, i: usize, range: ApertureRange) -> Result<(), SimError> {
        let a = self.adapter_shared(i)?.clone();
        aperture::aperture_unmap(self, &a, range, 0, 0, Vec::new())
    }

    /// Tests: VidMm maps aperture `range` at a new VA of process `p`, with entries whose
    /// `Segment` is the aperture and whose page addresses are aperture offsets, as Windows
    /// maps an allocation resident in an aperture segment (one with `AccessedPhysically`,
    /// which rvgpu's KMD never asks for). Returns the VA. The driver must translate each
    /// entry through its aperture table; VidMm's strict walk checks the result against the
    /// pages it had mapped there.
    pub fn map_aperture_range_into(
        &self,
        p: &crate::ums::UmsProcess,
        range: ApertureRange,
    ) -> Result<u64, SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        aperture::map_aperture_range_into(self, &a, p.pid, range)
    }

    /// VidMm moves process `p`'s root page table elsewhere in its segment
    /// (`vidmm::mmu::move_root`); its contexts get the new root at their next kernel-mode
    /// submission or resume. Call it with the process's queues idle. `Ok(false)`: the
    /// adapter has no GpuMmu space for `p`, or no free table.
    pub fn move_process_root(&self, p: &UmsProcess) -> Result<bool, SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        mmu::move_root(&a, p.pid)
    }

    /// VidMm pages in `bytes` at `gpu_va` of an allocation of process `p`: a FILL with
    /// `pattern` built by `DxgkDdiBuildPagingBuffer` and submitted with `Flags.Paging` on the
    /// system context of `node`. Returns the fence IDs (one per pass).
    ///
    /// Paging buffers address memory by segment, not by the process's VA: VidMm knows where
    /// the allocation's pages are (its address space in GpuMmu). One FILL per physically
    /// contiguous run. A FILL has no MDL arm (d3dkmddi.h), so pages in system memory are
    /// first mapped into a range of the aperture (`MAP_APERTURE_SEGMENT`, as
    /// `VIDMM_APERTURE_SEGMENT::MapTemporaryResource` does), filled through it, and unmapped
    /// (`UNMAP_APERTURE_SEGMENT`) once the fill is built. Windows unmaps after the paging
    /// engine has run it (\[D\] `UnmapApertureRange` waits for the paging engines); this VidMm
    /// unmaps at once, which only a driver that translates aperture addresses when it builds
    /// the packets (as rvgpu's does: the device has no GART) survives: stricter, never laxer.
    pub fn page_in(
        &self,
        p: &UmsProcess,
        node: u32,
        gpu_va: GpuVa,
        bytes: u64,
        pattern: u32,
    ) -> Result<Vec<u32>, SimError> {
        let a = self.adapter_shared(p.adapter)?.clone();
        fill::page_in(
            self,
            &a,
            p.pid,
            p.device,
            node,
            gpu_va.get(),
            bytes,
            pattern,
        )
    }

    /// Builds (without submitting) one TRANSFER of `bytes` from `src` to `dst` with
    /// `DxgkDdiBuildPagingBuffer` on adapter `i`, handing the driver paging buffers of
    /// `dma_bytes` and calling again while it asks for more room, as VidMm does. Returns each
    /// call's status and the words it wrote; stops after the first status that is neither
    /// success nor `STATUS_GRAPHICS_INSUFFICIENT_DMA_BUFFER` (tests of the driver's MDL
    /// handling).
    #[allow(clippy::too_many_arguments)]
    pub fn build_transfer(
        &self,
        i: usize,
        src: TransferSide<'_>,
        dst: TransferSide<'_>,
        bytes: u64,
        transfer_offset: u32,
        mdl_offset: u32,
        dma_bytes: u32,
    ) -> Result<Vec<(NTSTATUS, Vec<u64>)>, SimError> {
        let a = self.adapter_shared(i)?.clone();
        paging::build_transfer(
            self,
            &a,
            src,
            dst,
            bytes,
            transfer_offset,
            mdl_offset,
            dma_bytes,
        )
    }

    /// As [`Machine::build_transfer`], any operation.
    pub fn build_paging(
        &self,
        i: usize,
        operation: DXGK_BUILDPAGINGBUFFER_OPERATION,
        op: DXGKARG_BUILDPAGINGBUFFER_0,
        dma_bytes: u32,
    ) -> Result<Vec<(NTSTATUS, Vec<u64>)>, SimError> {
        let a = self.adapter_shared(i)?.clone();
        paging::build_paging(self, &a, operation, op, dma_bytes)
    }

    /// Where allocation `h` of adapter `i` is and its residency count (tests; `None` for
    /// an allocation VidMm does not track, e.g. on an adapter without GPU VA).
    pub fn allocation_residency(&self, i: usize, h: KmtHandle) -> Option<(Place, u32)> {
        residency::allocation_residency(self.adapter_shared(i).ok()?, h)
    }

    /// The bus addresses of allocation `h`'s backing-store pages when VidMm gave it a
    /// scattered backing store of its own (tests; `None` otherwise).
    pub fn allocation_backing_pages(&self, i: usize, h: KmtHandle) -> Option<Vec<u64>> {
        residency::allocation_backing_pages(self.adapter_shared(i).ok()?, h)
    }

    /// The segment address VidMm gives the driver for `offset` in segment `segment` of
    /// adapter `i` (tests).
    pub fn segment_address(&self, i: usize, segment: u32, offset: u64) -> Option<u64> {
        let a = self.adapter_shared(i).ok()?;
        Some(residency::segment_address(a, segment, offset))
    }

    /// Tests and leak checks: native-fence pages mapped into `pid` on adapter `i`,
    /// as `(in use, retired and not yet unmapped)`; a process whose address space is gone
    /// has none.
    pub fn native_fence_mapped_pages(&self, i: usize, pid: ProcessId) -> (usize, usize) {
        self.adapter_shared(i)
            .map_or((0, 0), |a| fencemap::native_fence_mapped_pages(a, pid))
    }

    /// The GPU processes VidMm keeps on adapter `i` (`DxgkDdiCreateProcess` not yet followed
    /// by `DxgkDdiDestroyProcess`), the paging process among them.
    pub fn gpu_process_count(&self, i: usize) -> usize {
        self.adapter_shared(i)
            .map_or(0, |a| lock(&a.mm.vidmm).processes.len())
    }

    /// Page tables of every GPU VA space of adapter `i`, the paging process's included
    /// (leak checks: VidMm gives back the tables a range no longer needs).
    pub fn page_tables_in_use(&self, i: usize) -> usize {
        self.adapter_shared(i).map_or(0, |a| {
            lock(&a.mm.vidmm)
                .processes
                .values()
                .map(|p| p.space.tables().count())
                .sum()
        })
    }

    /// Live paging queues, process VA ranges and mapped parts of adapter `i` (the fuzz
    /// targets' leak check).
    pub fn gpuva_live_counts(&self, i: usize) -> (usize, usize, usize) {
        self.adapter_shared(i)
            .map_or((0, 0, 0), |a| va::gpuva_live_counts(a))
    }

    /// Times a page-table change on adapter `i` found another one's turn taken and waited for
    /// it (tests watch an interleaving by it rather than by the host's timing).
    pub fn page_table_turn_waits(&self, i: usize) -> u64 {
        self.adapter_shared(i)
            .map_or(0, |a| crate::vidmm::paging::page_table_turn_waits(a))
    }

    /// What the GPU would do with `va` of process `pid` on adapter `i` for a user-mode queue:
    /// the device's own walker over the process's page tables (tests: the fault reason).
    pub fn gpu_va_translate(
        &self,
        i: usize,
        pid: ProcessId,
        va: GpuVa,
        access: Access,
    ) -> Option<Result<(u64, u64), Fault>> {
        va::gpu_va_translate(self.adapter_shared(i).ok()?, pid, va, access)
    }

    /// [`paging_queue::paging_queue_make_resident`], `page` given this machine.
    pub(crate) fn paging_queue_make_resident(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        queue: KmtHandle,
        page: impl FnOnce(&Self) -> Result<(), MakeResidentFail>,
    ) -> Result<u64, MakeResidentFail> {
        paging_queue::paging_queue_make_resident(self, a, device, queue, || page(self))
    }

    /// [`mmu::system_space::vidmm_map_system`].
    pub(crate) fn vidmm_map_system(
        &self,
        a: &AdapterShared,
        pa: u64,
        bytes: u64,
        tag: LeafTag,
    ) -> Result<(), SimError> {
        mmu::system_space::vidmm_map_system(self, a, pa, bytes, tag)
    }

    /// [`mmu::system_space::reap_system_pages`].
    pub(crate) fn reap_system_pages(&self, a: &AdapterShared) -> Result<(), SimError> {
        mmu::system_space::reap_system_pages(self, a)
    }

    /// Page-table updates VidMm sent adapter `i`'s driver with `UpdateMode = CPU_VIRTUAL`
    /// (while it built the paging process's space; `answers::PagingStart`).
    pub fn cpu_page_table_updates(&self, i: usize) -> Result<u64, SimError> {
        Ok(mmu::cpu_updates_sent(self.adapter_shared(i)?))
    }

    /// The driver's handle of adapter `i`'s paging process (`hKmdProcess` of its
    /// `DxgkDdiCreateProcess`), for raw paging operations in tests.
    pub fn paging_process_kmd(&self, i: usize) -> Option<usize> {
        mmu::paging_process_kmd(self.adapter_shared(i).ok()?)
    }

    /// Raw `DxgkDdiCreateProcess` on adapter `i` with `NumPasid = num_pasid` and
    /// `pPasid = p_pasid`, bypassing what the OS sends (tests of the driver's refusals); a
    /// process the driver accepts is destroyed at once. Returns the driver's status.
    pub fn ddi_create_process_with_pasids(
        &self,
        i: usize,
        num_pasid: u32,
        p_pasid: usize,
    ) -> Result<NTSTATUS, SimError> {
        mmu::ddi_create_process_raw(self.adapter_shared(i)?, num_pasid, p_pasid)
    }

    /// [`mmu::vidmm_create_process`].
    pub(crate) fn vidmm_create_process(
        &self,
        a: &AdapterShared,
        pid: ProcessId,
    ) -> Result<Option<usize>, SimError> {
        mmu::vidmm_create_process(self, a, pid)
    }

    /// [`process::vidmm_destroy_process`].
    pub(crate) fn vidmm_destroy_process(
        &self,
        a: &AdapterShared,
        pid: ProcessId,
    ) -> Result<(), SimError> {
        process::vidmm_destroy_process(self, a, pid)
    }

    /// [`residency::residency_make_resident`].
    pub(crate) fn residency_make_resident(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        handles: &[KmtHandle],
        cant_trim_further: bool,
    ) -> Result<(), MakeResidentFail> {
        residency::residency_make_resident(self, a, device, handles, cant_trim_further)
    }

    /// [`residency::residency_evict`].
    pub(crate) fn residency_evict(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        handles: &[KmtHandle],
        evict_only_if_necessary: bool,
        not_written_to: bool,
    ) -> Result<u64, SimError> {
        residency::residency_evict(
            self,
            a,
            device,
            handles,
            evict_only_if_necessary,
            not_written_to,
        )
    }

    /// [`residency::residency_trim_for_d3`].
    pub(crate) fn residency_trim_for_d3(&self, a: &AdapterShared) -> Result<(), SimError> {
        residency::residency_trim_for_d3(self, a)
    }

    /// [`allocation::create_allocation2`].
    pub(crate) fn create_allocation2(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        size: u64,
        private: &[u8],
    ) -> Result<(KmtHandle, SysAlloc, u64), SimError> {
        allocation::create_allocation2(a, device, size, private)
    }

    /// [`allocation::reap_allocations`].
    pub(crate) fn reap_allocations(&self, a: &AdapterShared) -> Result<(), SimError> {
        allocation::reap_allocations(self, a)
    }

    /// [`va::paging_queue::paging_queue_create`].
    pub(crate) fn paging_queue_create(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        priority: i32,
        physical_adapter_index: u32,
    ) -> Result<(KmtHandle, KmtHandle, MonitoredFence), SimError> {
        va::paging_queue::paging_queue_create(self, a, device, priority, physical_adapter_index)
    }

    /// [`va::gpu_va_teardown`].
    pub(crate) fn gpu_va_teardown(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        space: Option<ProcessId>,
    ) -> Result<(), SimError> {
        va::gpu_va_teardown(self, a, device, space)
    }
}

/// The machine's services VidMm asks for: VidSch's kernel-mode submission, stepping the
/// machine while paging runs, and the monitored fences of paging queues and GPU VA updates.
impl Host for Machine {
    fn submit_paging(
        &self,
        a: &AdapterShared,
        node: u32,
        words: &[u64],
        context_kmd: usize,
        owners: Vec<KmtHandle>,
    ) -> Result<u32, SimError> {
        let p = crate::vidsch::legacy::new_packet(a, words, true, None, context_kmd, owners)?;
        crate::vidsch::legacy::submit_new(self.waiter(), a, node, p)
    }

    fn wait_paging(
        &self,
        a: &AdapterShared,
        node: u32,
        id: u32,
        max_rounds: usize,
        timeout: Duration,
    ) -> Result<bool, SimError> {
        // Threaded: the device, interrupt and DPC threads complete the buffer; this thread
        // sleeps on VidSch's completion event (as VidSch's PASSIVE worker does).
        if self.config.mode == crate::Mode::Threaded {
            return crate::vidsch::legacy::wait_completed(a, node, id, timeout);
        }
        let i = a.index;
        self.run_until(max_rounds, timeout, |m| {
            let (_, c) = m.legacy_fences(i, node);
            c >= id
        })
    }

    fn create_sync_fence(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        initial: u64,
        flags: u32,
    ) -> Result<(KmtHandle, MonitoredFence), SimError> {
        crate::ums::create_sync_fence(self, a, device, initial, flags)
    }

    fn destroy_sync_fence(
        &self,
        a: &AdapterShared,
        device: KmtHandle,
        fence: KmtHandle,
    ) -> Result<(), SimError> {
        crate::ums::destroy_sync_fence(self, a, device, fence)
    }

    fn signal_fence_from_cpu(&self, f: &MonitoredFence, value: u64) -> Result<(), SimError> {
        self.signal_monitored_fence_from_cpu(f, value)
    }
}
