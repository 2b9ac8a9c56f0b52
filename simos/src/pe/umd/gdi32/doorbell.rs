//! The doorbell thunks (WDDM 3.2, found with `GetProcAddress`): `D3DKMTCreateDoorbell`,
//! `D3DKMTConnectDoorbell`, `D3DKMTDestroyDoorbell`, `D3DKMTNotifyWorkSubmission`.

use std::sync::Arc;

use super::common::*;
use super::doorbell_page::{DoorbellPage, PAGE};
use crate::base::lock::lock;
use crate::pe::umd::guest;
use crate::pe::umd::process::UserProcess;
use crate::ums::DoorbellCpuState;
use rvgpu_ddi::d3dkmt::{
    D3DKMT_CONNECT_DOORBELL, D3DKMT_CREATE_DOORBELL, D3DKMT_DESTROY_DOORBELL,
    D3DKMT_NOTIFY_WORK_SUBMISSION,
};

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
