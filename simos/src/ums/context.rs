//! D3D contexts on a node (`DxgkDdiCreateContext`, `DxgkDdiDestroyContext`; neither for a
//! `NoKmdAccess` or `SynchronizationOnly` context, as 24H2).

use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_UNSUCCESSFUL};
use rvgpu_ddi::submission::{
    DXGKARG_CREATECONTEXT, DXGK_CONTEXTINFO, DXGK_CREATECONTEXTFLAGS, DXGK_NODEMETADATA_FLAGS,
};

use crate::adapter::ddi::{self, check_status, not_supported, table};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::ob::KmtHandle;

use super::host::UmsHost;
use super::kmd::{check_kmd_handle, destroy_kmd};
use super::locks::{dev_guard, device_lock};
use crate::os::answers::RootHandOver;
use crate::state::ums::events::UmsEvent;
use crate::state::ums::{new_handle, ContextObj, DxgContext, Suspended};

pub(super) fn destroy_context(
    m: &dyn UmsHost,
    a: &AdapterShared,
    h: KmtHandle,
) -> Result<(), SimError> {
    let kmd = {
        let os = lock(&a.ums);
        let c = os.context(h)?;
        if os.queues.values().any(|q| q.context == h) {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        (c.kmd, c.node)
    };
    let (kmd, node) = kmd;
    // 24H2 `K:DXGCONTEXT::DestroyContext` @0x1402CF0E0 calls `DxgkDdiDestroyContext` only
    // with a driver handle: never for a `NoKmdAccess` or `SynchronizationOnly` context.
    if kmd != 0 {
        // What the GPU logged about the context is read while it is alive.
        m.context_destroying(a, kmd, node);
        destroy_kmd!(a, table(a)?, DxgkDdiDestroyContext, "context", kmd)?;
    }
    let mut os = lock(&a.ums);
    os.contexts.remove(&h);
    os.events.push(UmsEvent::DestroyContext { context: h });
    Ok(())
}

/// A context as a correct runtime creates it: `HwQueueSupported` exactly on hardware-scheduled
/// nodes (BR-92).
pub(crate) fn create_context(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    node: u32,
) -> Result<KmtHandle, SimError> {
    let hw_queue = lock(&a.sch.hws).is_hw_node(node);
    create_context_flags(m, a, device, node, hw_queue)
}

/// `D3DKMTCreateContextVirtual` with the caller's `HwQueueSupported` (BR-92 checked before
/// any DDI).
pub(crate) fn create_context_flags(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    node: u32,
    hw_queue: bool,
) -> Result<KmtHandle, SimError> {
    create_context_raw(m, a, device, node, u32::from(hw_queue) << 4, true)
}

/// `D3DDDI_CREATECONTEXTFLAGS` bits BR-92 reads.
const SYNCHRONIZATION_ONLY: u32 = 1 << 3;
/// `D3DDDI_CREATECONTEXTFLAGS::DisableGpuTimeout`.
const DISABLE_GPU_TIMEOUT: u32 = 1 << 2;
const HW_QUEUE_SUPPORTED: u32 = 1 << 4;
/// `D3DDDI_CREATECONTEXTFLAGS::NoKmdAccess`.
const NO_KMD_ACCESS: u32 = 1 << 5;
/// First reserved `D3DDDI_CREATECONTEXTFLAGS` bit: later builds than 22631 define bit 6 (passed
/// to the KMD as `DXGK_CREATECONTEXTFLAGS` bit 5) and refuse from bit 7; 22631 refused from
/// bit 6. The simulated OS is the later one.
const CONTEXT_FLAGS_RESERVED: u32 = 1 << 7;
/// `D3DDDI_CREATECONTEXTFLAGS` bit 6, which 24H2 `K:DXGCONTEXT::Initialize` @0x1402CFD80
/// passes on as `DXGK_CREATECONTEXTFLAGS::TestContext`.
const TEST_CONTEXT: u32 = 1 << 6;

/// BR-92 (\[D\] `DXGCONTEXT::Initialize`), in its order, for a context with the runtime's
/// `D3DDDI_CREATECONTEXTFLAGS` `flags`, created through `D3DKMTCreateContextVirtual`
/// (`virtual_context`) or `D3DKMTCreateContext`. A synchronisation-only context drops
/// `HwQueueSupported` and is exempt. Without `HwQueueSupported` a context-scheduling node
/// refuses it; with it, a D3DKMT version below 2.5, a node without context scheduling, a
/// non-virtual context or a reserved flag (bit 7 and up) is refused. Every refusal is `STATUS_UNSUCCESSFUL`
/// with a triage-log line. Returns the effective `HwQueueSupported`.
fn check_context_creation(
    a: &AdapterShared,
    node: u32,
    flags: u32,
    virtual_context: bool,
) -> Result<bool, SimError> {
    if flags & SYNCHRONIZATION_ONLY != 0 {
        return Ok(false);
    }
    let hw_queue = flags & HW_QUEUE_SUPPORTED != 0;
    if !hw_queue {
        check_context_flags(a, node, false, false)?;
        return Ok(false);
    }
    let refuse = |why: &str| {
        a.observer().triage(format!("BR-92: node {node}: {why}"));
        Err(SimError::DdiFailed(STATUS_UNSUCCESSFUL))
    };
    let wddm = lock(&a.caps).map_or(0, |c| c.WDDMVersion as u32);
    if wddm < 0x2500 {
        return refuse(
            "Context passes HwQueueSupported flag set, but the driver WDDM version is < 2.5",
        );
    }
    check_context_flags(a, node, true, false)?;
    if !virtual_context {
        return refuse("Only virtual contexts can use HwQueueSupported flag");
    }
    if flags >= CONTEXT_FLAGS_RESERVED {
        return refuse("Context is setting non-zero Reserved flags at the creation time.");
    }
    Ok(true)
}

/// `D3DKMTCreateContextVirtual` (`virtual_context`) or `D3DKMTCreateContext` with the
/// runtime's raw `D3DDDI_CREATECONTEXTFLAGS` (BR-92 checked before any DDI), engine 0 and no
/// private data.
pub(crate) fn create_context_raw(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    node: u32,
    flags: u32,
    virtual_context: bool,
) -> Result<KmtHandle, SimError> {
    let args = ContextArgs {
        node,
        engine_affinity: 1,
        flags,
        virtual_context,
    };
    create_context_with(m, a, device, &args, &mut [])
}

/// What `DXGDEVICE::CreateContext` (24H2 @0x1402CFA78) hands `DXGCONTEXT::Initialize`.
pub(crate) struct ContextArgs {
    /// `NodeOrdinal`.
    pub node: u32,
    /// `EngineAffinity` as the caller passed it (to `DXGKARG_CREATECONTEXT` unchanged).
    pub engine_affinity: u32,
    /// The caller's `D3DDDI_CREATECONTEXTFLAGS`.
    pub flags: u32,
    /// Created through `D3DKMTCreateContextVirtual`.
    pub virtual_context: bool,
}

/// `D3DDDI_CREATECONTEXTFLAGS` bits at and above which 24H2's `DxgkCreateContextVirtualImpl`
/// refuses a context, STATUS_INVALID_PARAMETER, for a KMD of interface 0x7008 or later (this
/// one is WDDM 3.2).
const VIRTUAL_FLAGS_RESERVED: u32 = 0xFFFF_FF80;

/// The checks 24H2 `DxgkCreateContextVirtualImpl` (@0x1402D17A0) makes between its device
/// lookup and the private data, in its order, every refusal STATUS_INVALID_PARAMETER:
/// 1. the highest bit of `EngineAffinity` at or past the number of physical adapters (one here:
///    any bit but bit 0);
/// 2. `NodeOrdinal` at or past that physical adapter's node count;
/// 3. more than one bit in `EngineAffinity`;
/// 4. not `SynchronizationOnly`, and the adapter or the node without GPU virtual addressing
///    (the adapter's flag 0x20, which `DxgkQueryAdapterInfoImpl` @0x140383210 reports with
///    0x40 as GpuMmu and with 0x80 as IoMmu: the simulated VidMm's GpuMmu model, the one this
///    OS plays; `ADAPTER_RENDER::NodeSupportsGpuVa` @0x14004BCA8: the node's `GpuMmuSupported`
///    or `IoMmuSupported`);
/// 5. a flag bit from 7 up.
pub(crate) fn check_virtual_context(
    a: &AdapterShared,
    node: u32,
    engine_affinity: u32,
    flags: u32,
) -> Result<(), SimError> {
    let bad = Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    const PHYSICAL_ADAPTERS: u32 = 1;
    // GetHighestBitPos @0x1402D20F0: 0 for 0 and 1.
    let highest = engine_affinity.checked_ilog2().unwrap_or(0);
    if highest >= PHYSICAL_ADAPTERS {
        return bad;
    }
    let nodes = lock(&a.caps).map_or(0, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
    if node >= nodes {
        return bad;
    }
    if engine_affinity.count_ones() > 1 {
        return bad;
    }
    if flags & SYNCHRONIZATION_ONLY == 0 {
        let adapter_va = lock(&a.mm.memory_model).gpummu.is_some();
        let node_va = lock(&a.ums)
            .node_metadata
            .get(node as usize)
            .is_some_and(|m| m.GpuMmuSupported != 0 || m.IoMmuSupported != 0);
        if !(adapter_va && node_va) {
            return bad;
        }
    }
    if flags & VIRTUAL_FLAGS_RESERVED != 0 {
        return bad;
    }
    Ok(())
}

/// `DXGCONTEXT::Initialize` (24H2 @0x1402CFD80) for `args`: BR-92, then the context's driver
/// half ([`driver_half`]: `DxgkDdiCreateContext` with the caller's engine affinity and private
/// data `pdd`, in/out: what the KMD leaves there is what 24H2 copies back to the caller; none
/// for a `NoKmdAccess` or `SynchronizationOnly` context).
pub(crate) fn create_context_with(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    args: &ContextArgs,
    pdd: &mut [u8],
) -> Result<KmtHandle, SimError> {
    let (node, flags, virtual_context) = (args.node, args.flags, args.virtual_context);
    let (kmd_device, pid) = {
        let os = lock(&a.ums);
        let d = os.live_device(device)?;
        let nodes = lock(&a.caps).map_or(0, |c| c.GpuEngineTopology.NbAsymetricProcessingNodes);
        if node >= nodes {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        (d.kmd, d.process)
    };
    let hw_queue = check_context_creation(a, node, flags, virtual_context)?;
    let h = new_handle(pid)?;
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    let dxg = DxgContext::new(h, hw_queue);
    let (kmd, info) = driver_half(a, kmd_device, args, hw_queue, dxg.addr(), pdd)?;
    // BR-65/BR-67 ([D] DXGCONTEXT::Initialize → EnsurePriviledgedDmaPool): a context that does
    // not run in GPU VA gets a privileged DMA pool from the segments the driver named.
    let uses_gpu_va = lock(&a.mm.memory_model).gpummu.is_some()
        && lock(&a.ums)
            .node_metadata
            .get(node as usize)
            .is_some_and(|m| m.GpuMmuSupported != 0);
    if !uses_gpu_va {
        let model = lock(&a.mm.memory_model).clone();
        if let Err(e) = crate::vidmm::dmapool::privileged_pool(&model, false, &info) {
            if kmd != 0 {
                destroy_kmd!(a, table(a)?, DxgkDdiDestroyContext, "context", kmd)?;
            }
            return Err(e);
        }
    }
    // The pages' reading gives the root now; 24H2 only at the context's first kernel-mode
    // submission or resume (`super::root::ensure_root`). A context the KMD never heard of gets
    // none (`M:VidSchiEnsureRootPageTableUpdated` @0x1400EAF40 skips a `NoKmdAccess` one).
    let root_sent = match a.os.windows.reading().root_hand_over {
        RootHandOver::AtCreate if kmd != 0 => crate::vidmm::mmu::set_root(a, pid, kmd)?,
        _ => None,
    };
    let mut os = lock(&a.ums);
    if kmd != 0 {
        check_kmd_handle(
            a,
            "DxgkDdiCreateContext",
            "hContext",
            kmd,
            os.contexts.values().map(|c| c.kmd),
        )?;
    }
    // A context created while the adapter is in D3 starts suspended in effect; the KMD is
    // told nothing (it has no queues yet), so the OS treats it as running.
    os.contexts.insert(
        h,
        ContextObj {
            handle: h,
            kmd,
            device,
            node,
            suspended: Suspended::No,
            suspend_fence: 0,
            suspend_done: 0,
            hw_queue,
            sync_only: flags & SYNCHRONIZATION_ONLY != 0,
            no_kmd_access: flags & NO_KMD_ACCESS != 0,
            disable_gpu_timeout: flags & DISABLE_GPU_TIMEOUT != 0,
            dma_private_data: info.DmaBufferPrivateDataSize,
            root_sent,
            root_seen: u64::MAX,
            dxg,
        },
    );
    os.events.push(UmsEvent::CreateContext { context: h, node });
    drop(os);
    // The KMD learns the context's band ([D] VidSchiCreateHwContextInternal); not of a
    // context it never heard of (`M:VidSchiUpdateDdiHwContextPriority` @0x140101C64 returns
    // for a `NoKmdAccess` hardware context; a `SynchronizationOnly` one has none).
    if kmd != 0 {
        m.context_created(a, h, kmd, node)?;
    }
    Ok(h)
}

/// `DXGCONTEXT::Initialize`'s three ways (24H2 @0x1402CFD80, for a multi-engine driver), in its
/// order: a `NoKmdAccess` context gets no DDI, its private data checked
/// ([`check_no_kmd_access_data`], tag `0xFF000003`) and a fixed `DXGK_CONTEXTINFO` (a
/// 1024-byte DMA buffer, 128-entry allocation and patch-location lists, 264 bytes of DMA private
/// data); a `SynchronizationOnly` one gets no DDI and a zero `DXGK_CONTEXTINFO`; any other one
/// `DxgkDdiCreateContext`. The driver handle (0 for the first two) and the context info.
///
/// `DxgkDdiCreateContext`'s block as 24H2 fills it (the rest zero): `hContext` Dxgkrnl's
/// context handle block `dxg` (for a driver of WDDM 2.5 or later), `VirtualAddressing` for a
/// context created through `D3DKMTCreateContextVirtual`, `HwQueueSupported` when checked,
/// `TestContext` for the caller's flag bit 6. `GdiContext` (a GDI device or the CDD client
/// hint) never applies here: no simulated process creates either. System contexts are
/// `crate::vidsch::system`'s (`hContext` NULL, `SystemContext`).
fn driver_half(
    a: &AdapterShared,
    kmd_device: usize,
    args: &ContextArgs,
    hw_queue: bool,
    dxg: usize,
    pdd: &mut [u8],
) -> Result<(usize, DXGK_CONTEXTINFO), SimError> {
    if args.flags & NO_KMD_ACCESS != 0 {
        check_no_kmd_access_data(pdd, NO_KMD_ACCESS_CONTEXT_TAG)?;
        let info = DXGK_CONTEXTINFO {
            DmaBufferSize: 1024,
            AllocationListSize: 128,
            PatchLocationListSize: 128,
            DmaBufferPrivateDataSize: NO_KMD_ACCESS_DATA_MIN,
            ..DXGK_CONTEXTINFO::default()
        };
        return Ok((0, info));
    }
    if args.flags & SYNCHRONIZATION_ONLY != 0 {
        return Ok((0, DXGK_CONTEXTINFO::default()));
    }
    let pdd_size =
        u32::try_from(pdd.len()).map_err(|_| SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
    let f = ddi::table_slot!(a, DxgkDdiCreateContext)?.map_or_else(not_supported, Ok)?;
    let wddm = lock(&a.caps).map_or(0, |c| c.WDDMVersion as u32);
    let mut ddi_args = DXGKARG_CREATECONTEXT {
        // Before WDDM 2.5 24H2 passes its DXGCONTEXT itself, which nothing here models.
        hContext: if wddm >= 0x2500 {
            dxg as HANDLE
        } else {
            std::ptr::null_mut()
        },
        NodeOrdinal: args.node,
        EngineAffinity: args.engine_affinity,
        Flags: DXGK_CREATECONTEXTFLAGS::default()
            .with(
                DXGK_CREATECONTEXTFLAGS::VirtualAddressing,
                u32::from(args.virtual_context),
            )
            .with(
                DXGK_CREATECONTEXTFLAGS::HwQueueSupported,
                u32::from(hw_queue),
            )
            .with(
                DXGK_CREATECONTEXTFLAGS::TestContext,
                u32::from(args.flags & TEST_CONTEXT != 0),
            ),
        pPrivateDriverData: if pdd.is_empty() {
            std::ptr::null_mut()
        } else {
            pdd.as_mut_ptr().cast()
        },
        PrivateDriverDataSize: pdd_size,
        ContextInfo: DXGK_CONTEXTINFO::default(),
    };
    let status = f.passive(a, (kmd_device as HANDLE, &mut ddi_args))?;
    check_status(f, status)?;
    Ok((ddi_args.hContext as usize, ddi_args.ContextInfo))
}

/// `DXGK_CONTEXTINFO::DmaBufferPrivateDataSize` 24H2 gives a `NoKmdAccess` context, and the
/// least private data `CheckNoKmdAccessPrivateData` takes.
const NO_KMD_ACCESS_DATA_MIN: u32 = 0x108;
/// The tag `DXGCONTEXT::Initialize` wants at the front of a `NoKmdAccess` context's private
/// data.
const NO_KMD_ACCESS_CONTEXT_TAG: u32 = 0xFF00_0003;
/// The tag `DXGHWQUEUE::Initialize` and `InitializeForUserModeSubmission` want for a
/// `NoKmdAccess` hardware queue's private data.
pub(crate) const NO_KMD_ACCESS_QUEUE_TAG: u32 = 0xFF00_0005;

/// 24H2 `K:CheckNoKmdAccessPrivateData` @0x14018A51C: private data given (none passes) must
/// be at least 264 bytes, with `tag` in its first u32 and `tag + 1` in its 66th (bytes
/// 260..264); else STATUS_INVALID_PARAMETER.
pub(crate) fn check_no_kmd_access_data(pdd: &[u8], tag: u32) -> Result<(), SimError> {
    if pdd.is_empty() {
        return Ok(());
    }
    let word = |at: usize| {
        pdd.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let min = NO_KMD_ACCESS_DATA_MIN as usize;
    if pdd.len() < min || word(0) != Some(tag) || word(min - 4) != Some(tag.wrapping_add(1)) {
        return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
    }
    Ok(())
}

/// The device a context belongs to (`D3DKMTUpdateGpuVirtualAddress`'s `hContext`).
pub(crate) fn context_device(a: &AdapterShared, h: KmtHandle) -> Option<KmtHandle> {
    lock(&a.ums).contexts.get(&h).map(|c| c.device)
}

/// Whether context `h` was created with `HwQueueSupported` (`None`: no such context).
pub(crate) fn context_hw_queue(a: &AdapterShared, h: KmtHandle) -> Option<bool> {
    lock(&a.ums).contexts.get(&h).map(|c| c.hw_queue)
}

/// Whether context `h` was created with `SynchronizationOnly` (`None`: no such context).
pub(crate) fn context_sync_only(a: &AdapterShared, h: KmtHandle) -> Option<bool> {
    lock(&a.ums).contexts.get(&h).map(|c| c.sync_only)
}

/// The KMD handle and node of a context.
pub(crate) fn context_kmd(a: &AdapterShared, h: KmtHandle) -> Option<(usize, u32)> {
    lock(&a.ums).contexts.get(&h).map(|c| (c.kmd, c.node))
}

/// BR-92 (context flags against the node; \[D\] `DXGCONTEXT::Initialize`, every refusal
/// `STATUS_UNSUCCESSFUL`). `system`: a context the OS creates for itself (exempt).
pub(crate) fn check_context_flags(
    a: &AdapterShared,
    node: u32,
    hw_queue_supported: bool,
    system: bool,
) -> Result<(), SimError> {
    if system {
        return Ok(());
    }
    let scheduling =
        node_flags(a, node).is_set(DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported);
    let why = match (hw_queue_supported, scheduling) {
        (false, true) => {
            "Context doesn't pass HwQueueSupported flag, but GPU node requires hardware scheduling"
        }
        (true, false) => {
            "Context passes HwQueueSupported flag set, but GPU node doesn't support context \
             scheduling"
        }
        _ => return Ok(()),
    };
    a.observer().triage(format!("BR-92: node {node}: {why}"));
    Err(SimError::DdiFailed(STATUS_UNSUCCESSFUL))
}

/// The metadata flags node `node` reported at start.
pub(super) fn node_flags(a: &AdapterShared, node: u32) -> DXGK_NODEMETADATA_FLAGS {
    lock(&a.ums)
        .node_metadata
        .get(node as usize)
        .map(|m| m.Flags)
        .unwrap_or_default()
}
