//! The doorbell thunks (WDDM 3.2, found with `GetProcAddress`): `D3DKMTCreateDoorbell`,
//! `D3DKMTConnectDoorbell`, `D3DKMTDestroyDoorbell`, `D3DKMTNotifyWorkSubmission`.

use super::*;
use rvgpu_ddi::d3dkmt::{
    D3DKMT_CONNECT_DOORBELL, D3DKMT_CREATE_DOORBELL, D3DKMT_DESTROY_DOORBELL,
    D3DKMT_NOTIFY_WORK_SUBMISSION,
};

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

/// `D3DKMTCreateDoorbell`: the structure as the DLL wrote it to the thunk's kernel entry
/// ([`crate::kmt::doorbell`], 24H2's checks and write-back), its CPU pages as MMIO in the
/// arena, then the structure back.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatedoorbell>
pub(super) fn create_doorbell(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::doorbell::{dxgk_create_doorbell_internal, DoorbellVas};
    let mut a: D3DKMT_CREATE_DOORBELL = args(at)?;
    probe_out::<D3DKMT_CREATE_DOORBELL>(at)?;
    let mut page = None;
    let map = |cpu: &Arc<DoorbellCpuState>| {
        let pg = DoorbellPage::new(cpu, &p.rings)
            .map_err(|_| rvgpu_umd::kmt::NtStatus(STATUS_NO_MEMORY as i32))?;
        let base = pg.base as u64;
        page = Some(pg);
        Ok(DoorbellVas {
            doorbell: base,
            status: base + PAGE as u64,
            last_queued: base + 2 * PAGE as u64,
        })
    };
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    let db = match dxgk_create_doorbell_internal(&p.machine, &mut a, owner, &GuestMemory, map) {
        Ok(db) => db,
        Err(e) => {
            if let Some(pg) = &page {
                pg.retire();
            }
            return Err(nt(e));
        }
    };
    let device = p.owner(a.hHwQueue)?.sim.device;
    {
        let mut hs = lock(&p.handles);
        hs.owner.insert(db.handle, device);
        if let Some(pg) = page {
            hs.doorbells.insert(db.handle, pg);
        }
    }
    guest::write(at, &a).map_err(bad)
}

/// `D3DKMTConnectDoorbell` ([`crate::kmt::doorbell::dxgk_connect_doorbell_internal`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtconnectdoorbell>
pub(super) fn connect_doorbell(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_CONNECT_DOORBELL = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    crate::kmt::doorbell::dxgk_connect_doorbell_internal(&p.machine, &a, owner).map_err(nt)
}

/// `D3DKMTDestroyDoorbell` ([`crate::kmt::doorbell::dxgk_destroy_doorbell_internal`]): its
/// pages go dead with it.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroydoorbell>
pub(super) fn destroy_doorbell(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_DESTROY_DOORBELL = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    crate::kmt::doorbell::dxgk_destroy_doorbell_internal(&p.machine, a.hDoorbell, owner)
        .map_err(nt)?;
    if let Some(db) = lock(&p.handles).doorbells.remove(&a.hDoorbell) {
        db.retire();
    }
    p.forget(a.hDoorbell);
    Ok(())
}

/// `D3DKMTNotifyWorkSubmission`
/// ([`crate::kmt::doorbell::dxgk_notify_work_submission_internal`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtnotifyworksubmission>
pub(super) fn notify_work_submission(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_NOTIFY_WORK_SUBMISSION = args(at)?;
    let owner = |h| p.owner(h).ok().map(|d| d.sim);
    crate::kmt::doorbell::dxgk_notify_work_submission_internal(&p.machine, &a, owner).map_err(nt)
}
