//! The adapter thunks' kernel entries, as 24H2 answers them: `D3DKMTOpenAdapterFromLuid`
//! (`K:DxgkOpenAdapterFromLuidImpl` @0x14035AC38), `D3DKMTCloseAdapter`
//! (`K:DxgkCloseAdapterImpl` @0x140322C20) and `D3DKMTEnumAdapters2`
//! (`K:DxgkEnumAdapters2Impl` @0x140349F80): the caller's structure as written, the checks in
//! their order with their statuses, and back what 24H2 writes. The caller's handle table is the
//! caller's ([`AdapterTable`]): a user-mode process's adapter handles.

use zerocopy::IntoBytes;

use rvgpu_ddi::d3dkmt::{D3DKMT_ADAPTERINFO, D3DKMT_ENUMADAPTERS2, D3DKMT_OPENADAPTERFROMLUID};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use super::refusal::row::*;
use crate::base::process_id::ProcessId;
use crate::machine::Machine;

/// The caller's adapter handles and its processes on the adapters.
pub trait AdapterTable {
    /// The adapter `h` names in the caller's table.
    fn adapter(&self, h: KmtHandle) -> Option<usize>;
    /// The caller's simulated process on adapter `i`, once its first device made it.
    fn process(&self, i: usize) -> Option<ProcessId>;
    /// A new handle for adapter `i` in the caller's table (STATUS_NO_MEMORY when it is full).
    fn open(&self, i: usize) -> Result<KmtHandle, NtStatus>;
    /// Closes adapter handle `h`: whether it was one.
    fn close(&self, h: KmtHandle) -> bool;
}

/// The LUID the simulated Dxgkrnl gave adapter `i` at start.
fn luid_of(i: usize) -> (u32, i32) {
    let l = crate::adapter::adapter_luid(i);
    (l.LowPart, l.HighPart)
}

/// Whether the caller is blocked on adapter `i` for repeated engine timeouts
/// (`ADAPTER_RENDER::IsProcessGpuAccessBlocked`).
fn blocked(m: &Machine, t: &dyn AdapterTable, i: usize) -> bool {
    t.process(i)
        .is_some_and(|pid| m.is_gpu_access_blocked(i, pid))
}

refusals! {
    /// `D3DKMTOpenAdapterFromLuid`'s refusals, in 24H2's order.
    OpenAdapterFromLuidCheck => OPEN_ADAPTER_FROM_LUID_CHECKS {
        ProcessContext: "no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        Luid: "AdapterLuid no adapter's" => INVALID_PARAMETER;
        BeingRemoved: "the adapter being removed" => ACCESS_DENIED,
            elsewhere "not modelled: 24H2 reads bit 2 of DXGADAPTER +0xBA0 before taking the \
                adapter's stop lock (its setter not read); no simulated adapter state stands for it";
        Blocked: "the process blocked on the adapter for repeated engine timeouts" => ACCESS_DENIED;
        NotStarted: "the adapter not started" => DEVICE_REMOVED;
        NoHandle: "no handle left in the process's table" => NO_MEMORY,
            elsewhere "the caller's handle table answers it (`AdapterTable::open`)";
    }
}

/// `D3DKMTOpenAdapterFromLuid`'s row of the thunk catalog ([`super::catalog`]).
pub const OPEN_ADAPTER_FROM_LUID: Thunk = Thunk {
    name: "D3DKMTOpenAdapterFromLuid",
    source: Some(&[
        src("DxgkOpenAdapterFromLuidImpl", 0x14035AC38),
        src("DXGPROCESS::OpenAdapter", 0x14036620C),
    ]),
    checks: OPEN_ADAPTER_FROM_LUID_CHECKS,
    written_back: &[
        "hAdapter (0 when the adapter is not started, the table is full or the \
         process's adapter state cannot be made)",
    ],
    pending: Pending::No,
    entry: Some("adapter::dxgk_open_adapter_from_luid_impl"),
    gaps: "a remote session's LUID translation is not modelled; the process's adapter state is made at its first device, as 24H2 \
           does for a process without the eager flag (bit 0x80)",
};

/// `DxgkOpenAdapterFromLuidImpl` for the caller's structure `a`, in 24H2's order:
/// 1. the LUID no adapter's (`DXGGLOBAL::ReferenceAdapterByLuid`): STATUS_INVALID_PARAMETER;
/// 2. the caller blocked on the adapter: STATUS_ACCESS_DENIED, `a.hAdapter` untouched (asked
///    of VidSch only while the adapter is started, under its stop lock);
/// 3. the adapter not started: STATUS_DEVICE_REMOVED with `a.hAdapter` set to 0 (24H2 writes
///    the zero handle back);
/// 4. a new handle in the caller's table (its status when full, `a.hAdapter` 0), in
///    `a.hAdapter`.
///
/// The simulated process is made by the first device, not here: 24H2's open initialises the
/// process's adapter state only for a process flagged so (`DXGPROCESS::OpenAdapter`
/// @0x14036620C's third argument, bit 0x80 of the process's flags).
pub fn dxgk_open_adapter_from_luid_impl(
    m: &Machine,
    a: &mut D3DKMT_OPENADAPTERFROMLUID,
    t: &dyn AdapterTable,
) -> Result<(), NtStatus> {
    let i = (0..m.adapter_count())
        .find(|&i| luid_of(i) == (a.AdapterLuid.LowPart, a.AdapterLuid.HighPart))
        .ok_or(OpenAdapterFromLuidCheck::Luid.refuse())?;
    let started = m.adapter_started(i);
    if started && blocked(m, t, i) {
        return Err(OpenAdapterFromLuidCheck::Blocked.refuse());
    }
    if !started {
        a.hAdapter = 0;
        return Err(OpenAdapterFromLuidCheck::NotStarted.refuse());
    }
    let opened = t.open(i);
    a.hAdapter = *opened.as_ref().unwrap_or(&0);
    opened.map(drop)
}

refusals! {
    /// `D3DKMTCloseAdapter`'s refusals, in 24H2's order.
    CloseAdapterCheck => CLOSE_ADAPTER_CHECKS {
        AdapterHandle: "hAdapter not an adapter handle in the caller's table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTCloseAdapter`'s row of the thunk catalog ([`super::catalog`]).
pub const CLOSE_ADAPTER: Thunk = Thunk {
    name: "D3DKMTCloseAdapter",
    source: Some(&[
        src("DxgkCloseAdapterImpl", 0x140322C20),
        src("DXGADAPTER::DestroyHandle", 0x140322E94),
    ]),
    checks: CLOSE_ADAPTER_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("adapter::dxgk_close_adapter_impl"),
    gaps: "the adapter handle's open of the process's adapter state is not counted: the \
           state lives until the process ends",
};

/// `DxgkCloseAdapterImpl` (`DXGADAPTER::DestroyHandle` @0x140322E94): `h` not an adapter
/// handle of the caller is STATUS_INVALID_PARAMETER; else the handle goes. The caller's devices
/// on the adapter and its state there stay (24H2 drops one open of the adapter,
/// `DXGPROCESS::CloseAdapter`).
pub fn dxgk_close_adapter_impl(h: KmtHandle, t: &dyn AdapterTable) -> Result<(), NtStatus> {
    if t.close(h) {
        Ok(())
    } else {
        Err(CloseAdapterCheck::AdapterHandle.refuse())
    }
}

/// The most adapters one `D3DKMTEnumAdapters2` lists: `DXGGLOBAL::GetMaximumAdapterCountInSession`
/// @0x140349488, `m_MaximumGlobalAdapterCount` + 2, at most 1024. The global count's own value
/// is not read here: the simulation takes the machine's adapter count.
pub fn max_adapters_in_session(m: &Machine) -> u32 {
    u32::try_from(m.adapter_count())
        .unwrap_or(u32::MAX)
        .saturating_add(2)
        .min(1024)
}

refusals! {
    /// `D3DKMTEnumAdapters2`'s refusals, in 24H2's order.
    EnumAdapters2Check => ENUM_ADAPTERS2_CHECKS {
        NullPointer: "the D3DKMT_ENUMADAPTERS2 pointer NULL" => INVALID_PARAMETER,
            elsewhere "the thunk bridge refuses a NULL pointer before the entry";
        NoPool: "no pool for the adapter list" => NO_MEMORY,
            elsewhere "not modelled: the simulated pool does not run out";
        ProcessContext: "no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        TooMany: "more adapters to list than NumAdapters (after NumAdapters is lowered to the \
            session's maximum adapter count): the handles opened are closed" => BUFFER_TOO_SMALL;
    }
}

/// `D3DKMTEnumAdapters2`'s row of the thunk catalog ([`super::catalog`]).
pub const ENUM_ADAPTERS2: Thunk = Thunk {
    name: "D3DKMTEnumAdapters2",
    source: Some(&[
        src("DxgkEnumAdapters2", 0x140349F50),
        src("DxgkEnumAdapters2Impl", 0x140349F80),
        src("DxgkEnumAdaptersInternal", 0x140349510),
    ]),
    checks: ENUM_ADAPTERS2_CHECKS,
    written_back: &[
        "NumAdapters: the session's maximum adapter count when pAdapters is NULL (nothing \
         else is done), else the number of adapters listed",
        "pAdapters[0..NumAdapters]: hAdapter (a new handle in the caller's table, one per \
         adapter), AdapterLuid, NumOfSources, bPrecisePresentRegionsPreferred; written after \
         NumAdapters, and a fault there returns its status with NumAdapters written and the \
         handles left open (no cleanup around the copy)",
    ],
    pending: Pending::No,
    entry: Some("adapter::dxgk_enum_adapters2_impl"),
    gaps: "m_MaximumGlobalAdapterCount is the machine's adapter count (where 24H2 sets it \
           is not read); a failed wait for PnP transitions is only logged, not modelled; \
           EnumAdaptersCallback's three passes not compared with the simulation's answer",
};

/// `DxgkEnumAdapters2Impl` for the caller's structure `a` (already captured: a NULL or
/// unreadable pointer is the bridge's STATUS_INVALID_PARAMETER / STATUS_ACCESS_VIOLATION), in
/// 24H2's order:
/// 1. `pAdapters` NULL: `NumAdapters` is the session's maximum ([`max_adapters_in_session`]),
///    nothing else is done;
/// 2. `NumAdapters` lowered to that maximum;
/// 3. `DxgkEnumAdaptersInternal` @0x140349510: the started adapters the caller is not blocked
///    on (`EnumAdaptersCallback` @0x14034F110), a new handle opened for each; more than
///    `NumAdapters`: STATUS_BUFFER_TOO_SMALL, nothing written, no handle left open; a failed
///    open closes the handles opened and returns its status;
/// 4. the structure written back to `at` with `NumAdapters` the number listed, then the list
///    to `pAdapters` (both through `mem`). 24H2 writes them with no cleanup around the copies:
///    a fault in either returns the fault's status with what was written before it, and the
///    handles opened stay open in the caller's table.
pub fn dxgk_enum_adapters2_impl(
    m: &Machine,
    at: u64,
    a: &mut D3DKMT_ENUMADAPTERS2,
    t: &dyn AdapterTable,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    let max = max_adapters_in_session(m);
    if a.pAdapters == 0 {
        a.NumAdapters = max;
        return mem.write(at, a.as_bytes());
    }
    let room = a.NumAdapters.min(max);
    let listed: Vec<usize> = (0..m.adapter_count())
        .filter(|&i| m.adapter_started(i) && !blocked(m, t, i))
        .collect();
    if listed.len() > room as usize {
        return Err(EnumAdapters2Check::TooMany.refuse());
    }
    let mut infos = Vec::with_capacity(listed.len());
    let close_all = |infos: &[D3DKMT_ADAPTERINFO]| {
        for info in infos {
            t.close(info.hAdapter);
        }
    };
    for &i in &listed {
        match t.open(i) {
            Ok(h) => {
                let (low, high) = luid_of(i);
                infos.push(D3DKMT_ADAPTERINFO {
                    hAdapter: h,
                    AdapterLuid: rvgpu_ddi::LUID {
                        LowPart: low,
                        HighPart: high,
                    },
                    // Render-only: no VidPN sources; the preference is a display adapter's.
                    NumOfSources: 0,
                    bPrecisePresentRegionsPreferred: 0,
                });
            }
            Err(e) => {
                close_all(&infos);
                return Err(e);
            }
        }
    }
    a.NumAdapters = u32::try_from(infos.len()).unwrap_or(room);
    mem.write(at, a.as_bytes())?;
    let bytes: Vec<u8> = infos.iter().flat_map(|i| i.as_bytes().to_vec()).collect();
    if bytes.is_empty() {
        return Ok(());
    }
    mem.write(a.pAdapters, &bytes)
}
