//! The adapter and device thunks: each copies the DLL's structure in, calls the thunk's kernel
//! entry ([`crate::kmt::adapter`], [`crate::kmt::device`], [`crate::kmt::escape`],
//! [`crate::kmt::feature`]) with this process's handle tables, and copies back what the entry
//! wrote.

use std::mem::offset_of;

use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::common::{args, bad, nt, probe_out, put, sim_status, GuestMemory, Status};
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::kmt::adapter::{
    dxgk_close_adapter_impl, dxgk_enum_adapters2_impl, dxgk_open_adapter_from_luid_impl,
    AdapterTable,
};
use crate::kmt::device::{
    dxgk_create_device_impl, dxgk_destroy_device_impl, DeviceTable, D3DKMT_CREATEDEVICE,
};
use crate::kmt::escape::{dxgk_escape, EscapeCaller, D3DKMT_ESCAPE};
use crate::kmt::feature::nt_dxgk_is_feature_enabled;
use crate::pe::umd::guest;
use crate::pe::umd::process::{Device, UserProcess};
use crate::ums::UmsProcess;
use rvgpu_ddi::d3dkmt::{
    D3DKMT_CLOSEADAPTER, D3DKMT_DESTROYDEVICE, D3DKMT_ENUMADAPTERS2, D3DKMT_ISFEATUREENABLED,
    D3DKMT_OPENADAPTERFROMLUID,
};

impl AdapterTable for UserProcess {
    fn adapter(&self, h: KmtHandle) -> Option<usize> {
        lock(&self.handles).adapters.get(&h).copied()
    }

    fn process(&self, i: usize) -> Option<ProcessId> {
        lock(&self.handles).processes.get(&i).map(|p| p.pid)
    }

    fn open(&self, i: usize) -> Result<KmtHandle, NtStatus> {
        let h = crate::ums::new_adapter_handle().map_err(|e| NtStatus(sim_status(&e) as i32))?;
        lock(&self.handles).adapters.insert(h, i);
        Ok(h)
    }

    fn close(&self, h: KmtHandle) -> bool {
        lock(&self.handles).adapters.remove(&h).is_some()
    }
}

impl DeviceTable for UserProcess {
    fn device(&self, h: KmtHandle) -> Option<UmsProcess> {
        lock(&self.handles).devices.get(&h).map(|d| d.sim)
    }

    fn first_device(&self, i: usize) -> Option<UmsProcess> {
        lock(&self.handles).processes.get(&i).copied()
    }

    fn add_device(&self, d: UmsProcess, first: bool) {
        let mut hs = lock(&self.handles);
        if first {
            hs.processes.insert(d.adapter, d);
        }
        hs.devices.insert(d.device, Device { sim: d });
    }

    fn remove_device(&self, h: KmtHandle) -> Option<UmsProcess> {
        let mut hs = lock(&self.handles);
        let d = hs.devices.remove(&h)?;
        let owned: Vec<u32> = hs
            .owner
            .iter()
            .filter(|(_, dev)| **dev == h)
            .map(|(o, _)| *o)
            .collect();
        for o in owned {
            hs.owner.remove(&o);
            hs.paging.remove(&o);
            hs.locks.remove(&o);
            if let Some(db) = hs.doorbells.remove(&o) {
                db.retire();
            }
        }
        Some(d.sim)
    }
}

impl EscapeCaller for UserProcess {
    fn device(&self, h: KmtHandle) -> Option<UmsProcess> {
        DeviceTable::device(self, h)
    }
}

/// `D3DKMTOpenAdapterFromLuid` ([`crate::kmt::adapter::dxgk_open_adapter_from_luid_impl`]):
/// `hAdapter` back on success, and the zero handle 24H2 writes for an adapter not started.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopenadapterfromluid>
pub(super) fn open_adapter_from_luid(p: &UserProcess, at: u64) -> Status {
    let mut a: D3DKMT_OPENADAPTERFROMLUID = args(at)?;
    probe_out::<D3DKMT_OPENADAPTERFROMLUID>(at)?;
    let before = a.hAdapter;
    let r = dxgk_open_adapter_from_luid_impl(&p.machine, &mut a, p);
    if r.is_ok() || a.hAdapter != before {
        put(
            at,
            offset_of!(D3DKMT_OPENADAPTERFROMLUID, hAdapter),
            &a.hAdapter,
        )?;
    }
    r.map_err(nt)
}

/// `D3DKMTCloseAdapter` ([`crate::kmt::adapter::dxgk_close_adapter_impl`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcloseadapter>
pub(super) fn close_adapter(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_CLOSEADAPTER = args(at)?;
    dxgk_close_adapter_impl(a.hAdapter, p).map_err(nt)
}

/// `D3DKMTEnumAdapters2` ([`crate::kmt::adapter::dxgk_enum_adapters2_impl`], which writes the
/// structure back and the list itself).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtenumadapters2>
pub(super) fn enum_adapters2(p: &UserProcess, at: u64) -> Status {
    let mut a: D3DKMT_ENUMADAPTERS2 = args(at)?;
    dxgk_enum_adapters2_impl(&p.machine, at, &mut a, p, &GuestMemory).map_err(nt)
}

/// `D3DKMTCreateDevice` ([`crate::kmt::device::dxgk_create_device_impl`]): `hDevice` back on
/// success. Creates are serialised per process (two threads' first devices on one adapter make
/// one simulated process).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtcreatedevice>
pub(super) fn create_device(p: &UserProcess, at: u64) -> Status {
    let mut a: D3DKMT_CREATEDEVICE = args(at)?;
    probe_out::<D3DKMT_CREATEDEVICE>(at)?;
    let _one = lock(&p.creating);
    dxgk_create_device_impl(&p.machine, &mut a, p).map_err(nt)?;
    put(at, offset_of!(D3DKMT_CREATEDEVICE, hDevice), &a.hDevice)
}

/// `D3DKMTDestroyDevice` ([`crate::kmt::device::dxgk_destroy_device_impl`]).
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtdestroydevice>
pub(super) fn destroy_device(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_DESTROYDEVICE = args(at)?;
    dxgk_destroy_device_impl(&p.machine, a.hDevice, p).map_err(nt)
}

/// `D3DKMTEscape` ([`crate::kmt::escape::dxgk_escape`]), which reads the private data from and
/// writes it back to the DLL's memory.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtescape>
pub(super) fn escape(p: &UserProcess, at: u64) -> Status {
    let a: D3DKMT_ESCAPE = args(at)?;
    dxgk_escape(&p.machine, &a, p, &GuestMemory).map_err(nt)
}

/// `D3DKMTIsFeatureEnabled` ([`crate::kmt::feature::nt_dxgk_is_feature_enabled`]): the
/// 12 bytes captured whole, `Result` back on success.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtisfeatureenabled>
pub(super) fn is_feature_enabled(p: &UserProcess, at: u64) -> Status {
    let mut a: D3DKMT_ISFEATUREENABLED = args(at)?;
    nt_dxgk_is_feature_enabled(&p.machine, &mut a, |h| AdapterTable::adapter(p, h)).map_err(nt)?;
    put(at, offset_of!(D3DKMT_ISFEATUREENABLED, Result), &a.Result)
}

/// `D3DKMTGetDeviceState`: the structure as the DLL wrote it (24H2 captures all 0x38 bytes)
/// to the thunk's kernel entry ([`crate::kmt::device_state`], 24H2's checks), then back what
/// the entry wrote: `ResetState` alone for `D3DKMT_DEVICESTATE_RESET` (24H2 writes it straight
/// into the caller's structure), else the whole structure.
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtgetdevicestate>
pub(super) fn get_device_state(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::device_state::WrittenBack;
    use crate::kmt::device_state::{
        dxgk_get_device_state_internal, first_u32, D3DKMT_GETDEVICESTATE,
    };
    let mut a: D3DKMT_GETDEVICESTATE = args(at)?;
    let written = dxgk_get_device_state_internal(&p.machine, &mut a, |h| {
        lock(&p.handles).devices.get(&h).map(|d| d.sim)
    })
    .map_err(nt)?;
    match written {
        WrittenBack::ResetState => {
            put(at, offset_of!(D3DKMT_GETDEVICESTATE, State), &first_u32(&a))
        }
        WrittenBack::All => {
            probe_out::<D3DKMT_GETDEVICESTATE>(at)?;
            guest::write(at, &a).map_err(bad)
        }
    }
}
