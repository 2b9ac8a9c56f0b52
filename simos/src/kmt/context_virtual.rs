//! `D3DKMTCreateContextVirtual`'s kernel entry, as 24H2 `K:DxgkCreateContextVirtualImpl`
//! @0x1402D17A0 and `K:DXGCONTEXT::Initialize` @0x1402CFD80 answer it: the caller's
//! `D3DKMT_CREATECONTEXTVIRTUAL` as written, the checks in their order with their statuses, and
//! back `hContext` (and the private data, which the KMD may have changed, when there is any);
//! and `D3DKMTDestroyContext`'s ([`dxgk_destroy_context_impl`]).

pub use rvgpu_ddi::d3dkmt::D3DKMT_CREATECONTEXTVIRTUAL;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::refusal::row::*;
use crate::machine::Machine;
use crate::ums::{self, ContextArgs, UmsProcess};

/// `D3DDDI_CREATECONTEXTFLAGS::SynchronizationOnly`.
pub const SYNCHRONIZATION_ONLY: u32 = 1 << 3;
/// `D3DDDI_CREATECONTEXTFLAGS::HwQueueSupported`.
pub const HW_QUEUE_SUPPORTED: u32 = 1 << 4;
/// `D3DDDI_CREATECONTEXTFLAGS::NoKmdAccess`.
pub const NO_KMD_ACCESS: u32 = 1 << 5;
/// `D3DDDI_CREATECONTEXTFLAGS::TestContext`.
pub const TEST_CONTEXT: u32 = 1 << 6;

/// The caller's memory for the private data: reading `size` bytes at an address (a bad one is
/// the caller's fault status: STATUS_ACCESS_VIOLATION from the probe), and writing them back.
pub trait CallerMemory {
    /// `size` bytes at `at`.
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus>;
    /// `bytes` to `at`.
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus>;
}

refusals! {
    /// `D3DKMTCreateContextVirtual`'s refusals, in 24H2's order.
    CreateContextVirtualCheck => CREATE_CONTEXT_VIRTUAL_CHECKS {
        NoKmdAccess: "NoKmdAccess or TestContext without test signing" => INVALID_PARAMETER;
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        Affinity: "EngineAffinity's highest bit at or past the physical adapters" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's context check (`ums::check_virtual_context`) makes it";
        Node: "NodeOrdinal at or past the physical adapter's nodes" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's context check (`ums::check_virtual_context`) makes it";
        AffinityBits: "more than one EngineAffinity bit" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's context check (`ums::check_virtual_context`) makes it";
        NoGpuVa: "not SynchronizationOnly, on an adapter or node without GPU VA" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's context check (`ums::check_virtual_context`) makes it";
        Flags: "a Flags bit from 7 up" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's context check (`ums::check_virtual_context`) makes it";
        PrivateData: "pPrivateDriverData without size, or a size without pointer" => INVALID_PARAMETER;
        PrivateDataUnreadable: "the private data not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        NoPool: "no pool for the private data" => NO_MEMORY;
        HwQueueOldDriver: "HwQueueSupported with a driver below WDDM 2.5" => UNSUCCESSFUL,
            elsewhere "the simulated kernel's create (`ums::create_context_with`) makes it";
        HwQueueNode: "HwQueueSupported on a node without context scheduling" => UNSUCCESSFUL,
            elsewhere "the simulated kernel's create (`ums::create_context_with`) makes it";
        NoHwQueueNode: "no HwQueueSupported on a node with context scheduling" => UNSUCCESSFUL,
            elsewhere "the simulated kernel's create (`ums::create_context_with`) makes it";
        NoKmdAccessData: "NoKmdAccess with private data below 264 bytes or without its two tags" => INVALID_PARAMETER,
            elsewhere "the simulated kernel's create (`ums::create_context_with`) makes it";
    }
}

/// `D3DKMTCreateContextVirtual`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_CONTEXT_VIRTUAL: Thunk = Thunk {
    name: "D3DKMTCreateContextVirtual",
    source: Some(&[
        src("DxgkCreateContextVirtualImpl", 0x1402D17A0),
        src("DXGCONTEXT::Initialize", 0x1402CFD80),
        src("CheckNoKmdAccessPrivateData", 0x14018A51C),
    ]),
    checks: CREATE_CONTEXT_VIRTUAL_CHECKS,
    written_back: &["hContext", "the private data, when given"],
    pending: Pending::No,
    entry: Some("context_virtual::dxgk_create_context_virtual_impl"),
    gaps: "as 24H2, a NoKmdAccess or SynchronizationOnly context reaches no DDI (create, \
           destroy, scheduling properties, suspend, resume, root page table); a NoKmdAccess \
           one's own hardware queues and kernel-mode submissions, which 24H2 runs with no \
           DDI, are not simulated (a simulation error)",
};

/// `DxgkCreateContextVirtualImpl` for the caller's structure `a`, in 24H2's order:
/// 1. `NoKmdAccess` or `TestContext` without test signing: STATUS_INVALID_PARAMETER;
/// 2. `hDevice` not in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 3. engine affinity, node, GPU VA and reserved flags (`ums::check_virtual_context`):
///    STATUS_INVALID_PARAMETER;
/// 4. private data given half (a pointer with size 0, or a size with no pointer):
///    STATUS_INVALID_PARAMETER;
/// 5. the private data captured from `mem` (its fault status; above the bridge's bound,
///    STATUS_NO_MEMORY, what a failed pool allocation answers);
/// 6. `DXGCONTEXT::Initialize`: BR-92 (STATUS_UNSUCCESSFUL); a `NoKmdAccess` context's
///    private data (`K:CheckNoKmdAccessPrivateData` @0x14018A51C, STATUS_INVALID_PARAMETER);
///    `DxgkDdiCreateContext`, except for a `NoKmdAccess` or `SynchronizationOnly` context
///    (`ums::create_context_with`).
///
/// On success `a.hContext` is the new context and the private data, if any, is written back
/// to the caller; on failure `a` is unchanged. The flags are the caller's as written: a context
/// without `HwQueueSupported` on a hardware-scheduled node is refused (STATUS_UNSUCCESSFUL,
/// BR-92), as 24H2 refuses it.
pub fn dxgk_create_context_virtual_impl(
    m: &Machine,
    a: &mut D3DKMT_CREATECONTEXTVIRTUAL,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = CreateContextVirtualCheck;
    if !m.os_config().test_signing && a.Flags & (NO_KMD_ACCESS | TEST_CONTEXT) != 0 {
        return Err(C::NoKmdAccess.refuse());
    }
    let p = device(a.hDevice).ok_or(C::Device.refuse())?;
    let k = m.kmt(&p);
    let sh = k.thunk()?;
    let (node, affinity, flags) = (a.NodeOrdinal, a.EngineAffinity, a.Flags);
    ums::check_virtual_context(&sh, node, affinity, flags).map_err(super::process::status)?;
    let (at, size) = (a.pPrivateDriverData, a.PrivateDriverDataSize);
    if (at == 0) != (size == 0) {
        return Err(C::PrivateData.refuse());
    }
    let mut pdd = if size == 0 {
        Vec::new()
    } else if size > MAX_PRIVATE_DATA {
        return Err(C::NoPool.refuse());
    } else {
        mem.read(at, size)?
    };
    let args = ContextArgs {
        node,
        engine_affinity: affinity,
        flags,
        virtual_context: true,
    };
    let ctx = ums::create_context_with(m, &sh, p.device, &args, &mut pdd)
        .map_err(super::process::status)?;
    if !pdd.is_empty() {
        if let Err(e) = mem.write(at, &pdd) {
            let _ = ums::destroy_context_thunk(m, &sh, p.device, ctx);
            return Err(e);
        }
    }
    a.hContext = ctx;
    Ok(())
}

/// Most private data captured here (the KMD takes none; a bound keeps the copy small).
const MAX_PRIVATE_DATA: u32 = 64 * 1024;

/// A caller that passes no private data (the Rust UMD): any read or write is refused.
pub struct NoCallerMemory;

impl CallerMemory for NoCallerMemory {
    fn read(&self, _at: u64, _size: u32) -> Result<Vec<u8>, NtStatus> {
        Err(NtStatus(STATUS_INVALID_PARAMETER))
    }
    fn write(&self, _at: u64, _bytes: &[u8]) -> Result<(), NtStatus> {
        Err(NtStatus(STATUS_INVALID_PARAMETER))
    }
}

refusals! {
    /// `D3DKMTDestroyContext`'s refusals, in 24H2's order.
    DestroyContextCheck => DESTROY_CONTEXT_CHECKS {
        Context: "hContext not a context in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTDestroyContext`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_CONTEXT: Thunk = Thunk {
    name: "D3DKMTDestroyContext",
    source: Some(&[
        src("DxgkDestroyContextImpl", 0x1403A0A98),
        src("DXGCONTEXT::DestroyContext", 0x1402CF0E0),
        src("DXGCONTEXT::DestroyAllHwQueues", 0x1403A0E60),
        src("DXGCONTEXT::CreateHwQueue", 0x1402BB7A8),
        src("DXGHWQUEUE::DestroyCoreState", 0x1402CDD74),
        src("DXGDOORBELL::DestroyCoreState", 0x1401D804C),
    ]),
    checks: DESTROY_CONTEXT_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("context_virtual::dxgk_destroy_context_impl"),
    gaps: "",
};

/// `D3DKMTDestroyContext`'s kernel entry, `K:DxgkDestroyContextImpl` @0x1403A0A98: `hContext`
/// not a context in the caller's handle table (`owner`) is STATUS_INVALID_PARAMETER; else the
/// context's hardware queues go with it, each with its doorbell
/// (`K:DXGCONTEXT::DestroyAllHwQueues` @0x1403A0E60, `ums::destroy_context_thunk`), then the
/// context (`K:DXGCONTEXT::DestroyContext` @0x1402CF0E0: `DxgkDdiDestroyContext` only for a
/// context the KMD created). Nothing is written back.
pub fn dxgk_destroy_context_impl(
    m: &Machine,
    h_context: KmtHandle,
    owner: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let bad = DestroyContextCheck::Context.refuse();
    let p = owner(h_context).ok_or(bad)?;
    let sh = m.kmt(&p).thunk()?;
    if ums::context_device(&sh, h_context) != Some(p.device) {
        return Err(bad);
    }
    ums::destroy_context_thunk(m, &sh, p.device, h_context).map_err(super::process::status)
}
