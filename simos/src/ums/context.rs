//! D3D contexts on a node (`DxgkDdiCreateContext`, `DxgkDdiDestroyContext`).

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
use crate::state::ums::{new_handle, ContextObj, Suspended};

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
    // What the GPU logged about the context is read while it is alive.
    m.context_destroying(a, kmd, node);
    destroy_kmd!(a, table(a)?, DxgkDdiDestroyContext, "context", kmd)?;
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
/// First reserved `D3DDDI_CREATECONTEXTFLAGS` bit: later builds than 22631 define bit 6 (passed
/// to the KMD as `DXGK_CREATECONTEXTFLAGS` bit 5) and refuse from bit 7; 22631 refused from
/// bit 6. The simulated OS is the later one.
const CONTEXT_FLAGS_RESERVED: u32 = 1 << 7;

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

/// `DXGCONTEXT::Initialize` (24H2 @0x1402CFD80) for `args`: BR-92, then `DxgkDdiCreateContext`
/// with the caller's engine affinity and private data `pdd` (in/out: what the KMD leaves there
/// is what 24H2 copies back to the caller).
pub(crate) fn create_context_with(
    m: &dyn UmsHost,
    a: &AdapterShared,
    device: KmtHandle,
    args: &ContextArgs,
    pdd: &mut [u8],
) -> Result<KmtHandle, SimError> {
    let (node, flags, virtual_context) = (args.node, args.flags, args.virtual_context);
    let pdd_size =
        u32::try_from(pdd.len()).map_err(|_| SimError::DdiFailed(STATUS_INVALID_PARAMETER))?;
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
    let f = ddi::table_slot!(a, DxgkDdiCreateContext)?.map_or_else(not_supported, Ok)?;
    let h = new_handle(pid)?;
    let mut args = DXGKARG_CREATECONTEXT {
        hContext: std::ptr::null_mut(),
        NodeOrdinal: node,
        EngineAffinity: args.engine_affinity,
        Flags: DXGK_CREATECONTEXTFLAGS::default().with(
            DXGK_CREATECONTEXTFLAGS::HwQueueSupported,
            u32::from(hw_queue),
        ),
        pPrivateDriverData: if pdd.is_empty() {
            std::ptr::null_mut()
        } else {
            pdd.as_mut_ptr().cast()
        },
        PrivateDriverDataSize: pdd_size,
        ContextInfo: DXGK_CONTEXTINFO::default(),
    };
    let dl = device_lock(a, device)?;
    let _g = dev_guard(a, &dl);
    // SAFETY: the driver's DDI with its device handle and a valid argument block.
    let status = unsafe { ddi::passive_with(a, f, kmd_device as HANDLE, &mut args) }?;
    check_status(status)?;
    let kmd = args.hContext as usize;
    // BR-65/BR-67 ([D] DXGCONTEXT::Initialize → EnsurePriviledgedDmaPool): a context that does
    // not run in GPU VA gets a privileged DMA pool from the segments the driver named.
    let uses_gpu_va = lock(&a.mm.memory_model).gpummu.is_some()
        && lock(&a.ums)
            .node_metadata
            .get(node as usize)
            .is_some_and(|m| m.GpuMmuSupported != 0);
    if !uses_gpu_va {
        let model = lock(&a.mm.memory_model).clone();
        if let Err(e) = crate::vidmm::dmapool::privileged_pool(&model, false, &args.ContextInfo) {
            destroy_kmd!(a, table(a)?, DxgkDdiDestroyContext, "context", kmd)?;
            return Err(e);
        }
    }
    // The pages' reading gives the root now; 24H2 only at the context's first kernel-mode
    // submission or resume (`super::root::ensure_root`).
    let root_sent = match a.os.reading.root_hand_over {
        RootHandOver::AtCreate => crate::vidmm::mmu::set_root(a, pid, kmd)?,
        RootHandOver::FirstUse => None,
    };
    let mut os = lock(&a.ums);
    check_kmd_handle(
        a,
        "DxgkDdiCreateContext",
        "hContext",
        kmd,
        os.contexts.values().map(|c| c.kmd),
    )?;
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
            hw_queue,
            sync_only: flags & SYNCHRONIZATION_ONLY != 0,
            disable_gpu_timeout: flags & DISABLE_GPU_TIMEOUT != 0,
            dma_private_data: args.ContextInfo.DmaBufferPrivateDataSize,
            root_sent,
            root_seen: u64::MAX,
        },
    );
    os.events.push(UmsEvent::CreateContext { context: h, node });
    drop(os);
    // The KMD learns the context's band ([D] VidSchiCreateHwContextInternal).
    m.context_created(a, h, kmd, node)?;
    Ok(h)
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
