//! The doorbell thunks (WDDM 3.2, found with `GetProcAddress`): `D3DKMTCreateDoorbell`,
//! `D3DKMTConnectDoorbell`, `D3DKMTDestroyDoorbell`, `D3DKMTNotifyWorkSubmission`.

use super::*;

/// Bytes of the doorbell page, the status page and the last-queued page of a doorbell's
/// window.
const PAGE: usize = 4096;

/// The CPU pages of one doorbell the DLL holds: one window of the arena, routed to the
/// doorbell's OS mapping object. Page 0 is `DoorbellCPUVirtualAddress` (an 8-byte store rings:
/// [`DoorbellCpuState::ring`], the physical doorbell or the dummy page, as the OS maps it
/// now), page 1 `DoorbellStatusCPUVirtualAddress` (reads the status), page 2
/// `HwQueueProgressFenceLastQueuedValueCPUVirtualAddress` (the last-queued value).
pub(crate) struct DoorbellPage {
    base: usize,
    live: Arc<AtomicBool>,
}

impl DoorbellPage {
    fn new(state: &Arc<DoorbellCpuState>, rings: &Arc<AtomicU64>) -> Result<Self, String> {
        let live = Arc::new(AtomicBool::new(true));
        let weak: Weak<DoorbellCpuState> = Arc::downgrade(state);
        let (l, r) = (live.clone(), rings.clone());
        let base = cpu::register_window(
            3 * PAGE,
            Arc::new(move |offset: usize, width: usize, write: Option<u64>| {
                // After D3DKMTDestroyDoorbell the pages mean nothing: stores are dropped and
                // reads return 0 (Windows unmaps them; the DLL never touches them again).
                let Some(s) = weak.upgrade().filter(|_| l.load(Ordering::Acquire)) else {
                    return 0;
                };
                match (offset / PAGE, write) {
                    (0, Some(v)) if width == 8 && offset == 0 => {
                        s.ring(v);
                        r.fetch_add(1, Ordering::AcqRel);
                        0
                    }
                    (1, None) if offset == PAGE => u64::from(s.status() as u32),
                    (2, Some(v)) if width == 8 && offset == 2 * PAGE => {
                        s.set_last_queued(v);
                        0
                    }
                    (2, None) if offset == 2 * PAGE => s.last_queued(),
                    _ => 0,
                }
            }),
        )?;
        Ok(Self { base, live })
    }

    pub(super) fn retire(&self) {
        self.live.store(false, Ordering::Release);
    }
}

/// `D3DKMT_CREATE_DOORBELL_FLAGS::RequireSecondaryCpuVA`.
const DOORBELL_REQUIRE_SECONDARY_CPU_VA: u32 = 1 << 0;

/// `D3DKMTCreateDoorbell`: the simulated OS's doorbell (the KMD's `DxgkDdiCreateDoorbell`),
/// its CPU pages as MMIO in the arena. A secondary CPU VA is not offered
/// (STATUS_NOT_SUPPORTED: the KMD reports no secondary doorbell). "Any failure return code
/// indicates that the doorbell was not created."
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatedoorbell>
pub(super) fn create_doorbell(p: &UserProcess, at: u64) -> Status {
    let a: CreateDoorbell = args(at)?;
    probe_out::<CreateDoorbell>(at)?;
    let d = p.owner(a.h_hw_queue)?;
    if a.flags & DOORBELL_REQUIRE_SECONDARY_CPU_VA != 0 {
        return Err(STATUS_NOT_SUPPORTED);
    }
    let mut pdd = private_data(a.private_driver_data, a.private_driver_data_size)?;
    if !pdd.is_empty() && !guest::writable(a.private_driver_data, pdd.len()) {
        return Err(STATUS_ACCESS_VIOLATION);
    }
    let k = p.kmt(d);
    let db = k
        .create_doorbell(
            a.h_hw_queue,
            a.h_ring_buffer,
            a.h_ring_buffer_control,
            &mut pdd,
        )
        .map_err(nt)?;
    let page = match DoorbellPage::new(db.cpu.state(), &p.rings) {
        Ok(pg) => pg,
        Err(_) => {
            let _ = k.destroy_doorbell(db.handle);
            return Err(STATUS_NO_MEMORY);
        }
    };
    let base = page.base as u64;
    {
        let mut hs = lock(&p.handles);
        hs.owner.insert(db.handle, d.sim.device);
        hs.doorbells.insert(db.handle, page);
    }
    guest::write_bytes(a.private_driver_data, &pdd).map_err(bad)?;
    put(at, offset_of!(CreateDoorbell, doorbell_cpu_va), &base)?;
    put(
        at,
        offset_of!(CreateDoorbell, doorbell_secondary_cpu_va),
        &0u64,
    )?;
    put(
        at,
        offset_of!(CreateDoorbell, doorbell_status_cpu_va),
        &(base + PAGE as u64),
    )?;
    // A queue without a progress fence has no last-queued cell: 24H2's
    // `K:DxgkCreateDoorbellInternal` (@0x1401D8A50) never writes the field, so the caller reads
    // back what it passed (`UmsProgress::None`).
    if k.machine()
        .hw_queue_progress_fence(k.process().adapter, a.h_hw_queue)
        .is_some()
    {
        put(
            at,
            offset_of!(CreateDoorbell, last_queued_value_cpu_va),
            &(base + 2 * PAGE as u64),
        )?;
    }
    put(at, offset_of!(CreateDoorbell, h_doorbell), &db.handle)
}

/// `D3DKMTConnectDoorbell`.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtconnectdoorbell>
pub(super) fn connect_doorbell(p: &UserProcess, at: u64) -> Status {
    let a: HandleFlags = args(at)?;
    let d = p.owner(a.handle)?;
    p.kmt(d).connect_doorbell(a.handle).map_err(nt)
}

/// `D3DKMTDestroyDoorbell`: its pages go dead with it.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroydoorbell>
pub(super) fn destroy_doorbell(p: &UserProcess, at: u64) -> Status {
    let a: OneHandle = args(at)?;
    let d = p.owner(a.handle)?;
    p.kmt(d).destroy_doorbell(a.handle).map_err(nt)?;
    if let Some(db) = lock(&p.handles).doorbells.remove(&a.handle) {
        db.retire();
    }
    p.forget(a.handle);
    Ok(())
}

/// `D3DKMTNotifyWorkSubmission`.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtnotifyworksubmission>
pub(super) fn notify_work_submission(p: &UserProcess, at: u64) -> Status {
    let a: HandleFlags = args(at)?;
    let d = p.owner(a.handle)?;
    p.kmt(d).notify_work_submission(a.handle).map_err(nt)
}
