//! `D3DKMTCreateDevice` and `D3DKMTDestroyDevice`'s kernel entries, as 24H2 answers them:
//! `K:DxgkCreateDeviceImpl` @0x14039AA10 (with `K:DXGDEVICE::Initialize` @0x1403973B4) and
//! `K:DxgkDestroyDeviceImpl` @0x14039D208: the caller's structure as written, the checks in
//! their order with their statuses, and back what 24H2 writes (`hDevice`, on success only).

pub use rvgpu_ddi::d3dkmt::D3DKMT_CREATEDEVICE;
use rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::adapter::AdapterTable;
use super::refusal::row::*;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DKMT_CREATEDEVICEFLAGS::TestDevice`.
pub const CREATEDEVICE_TEST_DEVICE: u32 = 1 << 3;

/// The caller's devices, beside its adapter handles.
pub trait DeviceTable: AdapterTable {
    /// The device `h` names in the caller's table.
    fn device(&self, h: KmtHandle) -> Option<UmsProcess>;
    /// The caller's first device on adapter `i`, naming its process there.
    fn first_device(&self, i: usize) -> Option<UmsProcess>;
    /// Records `d` in the caller's table (`first`: it made the caller's process on its
    /// adapter).
    fn add_device(&self, d: UmsProcess, first: bool);
    /// Takes device `h` out of the caller's table with every object it owns; `None`: not a
    /// device handle of the caller.
    fn remove_device(&self, h: KmtHandle) -> Option<UmsProcess>;
}

fn sim_status(e: &crate::SimError) -> NtStatus {
    NtStatus(e.status().unwrap_or(STATUS_UNSUCCESSFUL))
}

refusals! {
    /// `D3DKMTCreateDevice`'s refusals, in 24H2's order.
    CreateDeviceCheck => CREATE_DEVICE_CHECKS {
        TestDevice: "Flags.TestDevice without test signing" => INVALID_PARAMETER;
        Adapter: "hAdapter not in the caller's handle table" => INVALID_PARAMETER;
        NoHandle: "no handle left in the process's table" => NO_MEMORY,
            elsewhere "the caller's handle table (`DeviceTable::add_device`) never fills";
        Blocked: "the process blocked on the adapter for repeated engine timeouts" => ACCESS_DENIED,
            elsewhere "VidSch's device refuses it (`Machine::create_device`), its status comes back";
    }
}

/// `D3DKMTCreateDevice`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_DEVICE: Thunk = Thunk {
    name: "D3DKMTCreateDevice",
    source: Some(&[
        src("DxgkCreateDeviceImpl", 0x14039AA10),
        src("DXGDEVICE::Initialize", 0x1403973B4),
        src("DXGPROCESS::OpenAdapter", 0x14036620C),
        src("DXGPROCESS_RENDER_ADAPTER_INFO::Initialize", 0x1403ACC00),
    ]),
    checks: CREATE_DEVICE_CHECKS,
    written_back: &["hDevice"],
    pending: Pending::No,
    entry: Some("device::dxgk_create_device_impl"),
    gaps: "a failing DxgkDdiCreateProcess or DxgkDdiCreateDevice returns the driver's status, as \
           24H2 does, but is not a catalog check; display-adapter pairing is not modelled",
};

/// `DxgkCreateDeviceImpl` for the caller's structure `a`, in 24H2's order:
/// 1. `Flags.TestDevice` without test signing: STATUS_INVALID_PARAMETER;
/// 2. `hAdapter` not an adapter handle of the caller: STATUS_INVALID_PARAMETER;
/// 3. `DXGDEVICE::Initialize`: the caller's adapter state made once, at its first device on
///    the adapter (`DXGPROCESS::OpenAdapter` @0x14036620C →
///    `DXGPROCESS_RENDER_ADAPTER_INFO::Initialize` @0x1403ACC00: one `DxgkDdiCreateProcess`,
///    one GPU VA space), `DxgkDdiCreateDevice` naming it (its failure status comes back), and
///    VidSch's device (STATUS_ACCESS_DENIED for a blocked process).
///
/// On success `a.hDevice` is the new device; nothing else of `a` changes. A later device is a
/// device of the same simulated process. The caller serialises its creates (two threads' first
/// devices on one adapter make one process).
pub fn dxgk_create_device_impl(
    m: &Machine,
    a: &mut D3DKMT_CREATEDEVICE,
    t: &dyn DeviceTable,
) -> Result<(), NtStatus> {
    if a.Flags & CREATEDEVICE_TEST_DEVICE != 0 && !m.os_config().test_signing {
        return Err(CreateDeviceCheck::TestDevice.refuse());
    }
    let i = t
        .adapter(a.hAdapter)
        .ok_or(CreateDeviceCheck::Adapter.refuse())?;
    let d = match t.first_device(i) {
        Some(first) => {
            let d = m.create_device(&first).map_err(|e| sim_status(&e))?;
            t.add_device(d, false);
            d
        }
        None => {
            let d = m.create_process(i).map_err(|e| sim_status(&e))?;
            m.hold_process(&d).map_err(|e| sim_status(&e))?;
            t.add_device(d, true);
            d
        }
    };
    a.hDevice = d.device;
    Ok(())
}

refusals! {
    /// `D3DKMTDestroyDevice`'s refusals, in 24H2's order.
    DestroyDeviceCheck => DESTROY_DEVICE_CHECKS {
        ProcessContext: "no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        DeviceHandle: "hDevice not a device handle in the caller's table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTDestroyDevice`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_DEVICE: Thunk = Thunk {
    name: "D3DKMTDestroyDevice",
    source: Some(&[
        src("DxgkDestroyDeviceImpl", 0x14039D208),
        src("DXGDEVICE::DestroyAllContexts", 0x14039DC5C),
        src("DXGDEVICE::DestroyAllPagingQueues", 0x14039D880),
        src("DXGDEVICE::DestroyAllDeviceSyncObjects", 0x14039E038),
        src("ADAPTER_RENDER::DestroyDeviceNoLocks", 0x1402ABDE8),
    ]),
    checks: DESTROY_DEVICE_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("device::dxgk_destroy_device_impl"),
    gaps: "sync objects are the process's in the simulation: they go with its last device \
           on the adapter, not with the device that made them; the tracked workloads and \
           a display adapter's VidPN source ownership are not modelled; under the pages' \
           reading the device goes as at a normal process exit (UM-17)",
};

/// `DxgkDestroyDeviceImpl` for `h_device`: not a device handle of the caller is
/// STATUS_INVALID_PARAMETER; else the device goes as 24H2 destroys it
/// ([`Machine::destroy_device`]: its contexts, paging queues and sync objects, then the device,
/// without the process exit's flush). The caller's GPU VA space, TDR history and handle table
/// stay for its other and later devices.
pub fn dxgk_destroy_device_impl(
    m: &Machine,
    h_device: KmtHandle,
    t: &dyn DeviceTable,
) -> Result<(), NtStatus> {
    let d = t
        .remove_device(h_device)
        .ok_or(DestroyDeviceCheck::DeviceHandle.refuse())?;
    m.destroy_device(&d).map_err(|e| sim_status(&e))
}
