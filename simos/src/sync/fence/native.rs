//! Native fence objects through their life (NF-12, NF-13): create, open (also across
//! adapters), close and destroy, and the raw DDI forms the strictness tests call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::{
    D3DDDI_NATIVEFENCE_TYPE, D3DDDI_NATIVEFENCE_TYPE_DEFAULT, D3DDDI_NATIVE_FENCE_PDD_SIZE,
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_CREATENATIVEFENCE_FLAGS,
    DXGKARG_DESTROYNATIVEFENCE, DXGKARG_OPENNATIVEFENCE, DXGK_CLOSENATIVEFENCE_FLAGS,
    DXGK_DESTROYNATIVEFENCE_FLAGS, DXGK_OPENNATIVEFENCE_FLAGS,
};
use rvgpu_ddi::ntstatus::{STATUS_ACCESS_DENIED, STATUS_INVALID_HANDLE, STATUS_NO_MEMORY};
use rvgpu_ddi::NTSTATUS;
use rvgpu_hw::pdd::{NativeFencePdd, NATIVE_FENCE_PDD_VERSION, PDD_MAGIC};

use crate::adapter::ddi::{self, check_status, At};
use crate::adapter::{AdapterShared, Life};
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::os::answers::SystemVas;

use super::pages::VidMmPages;
use super::reclaim::retire_empty_pages;
use super::settle::{refresh_scan, settle};
use crate::state::sync::fence::{
    next_handle, FenceObj, NativeFence, NativeFenceDesc, ObjState, ProcessVas, Slot, Value,
    KIND_CURRENT, KIND_MONITORED,
};

pub(super) fn parse_pdd(b: &[u8; D3DDDI_NATIVE_FENCE_PDD_SIZE]) -> NativeFencePdd {
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let u64_at = |o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(w)
    };
    NativeFencePdd {
        magic: u32_at(0),
        version: u32_at(4),
        report_tag: u64_at(8),
        reserved: [16, 24, 32, 40, 48, 56].map(u64_at),
    }
}

/// The D3D device an instance is created or opened through: `device` (a D3DKMT handle of
/// `process`'s on `a`), or, where the caller names only the process, its first device there.
/// Returns its D3DKMT handle and the driver's handle, which `DxgkDdiOpenNativeFence` gets as
/// `hDevice`: 24H2 `K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC fills it from the opening
/// DXGDEVICE (its driver handle at +616), and registers the instance with that device's VidSch
/// device (+800), whose error alone signals it. A process without a device on the adapter
/// cannot hold a fence there (`D3DKMTCreateNativeFence` and
/// `D3DKMTOpenNativeFenceFromNtHandle` name one).
fn opening_device(
    a: &AdapterShared,
    process: ProcessId,
    device: Option<crate::ob::KmtHandle>,
) -> Result<(crate::ob::KmtHandle, HANDLE), SimError> {
    let os = lock(&a.ums);
    let found = match device {
        Some(h) => os
            .devices
            .get(&h)
            .filter(|d| d.process == process)
            .map(|d| (h, d.kmd as HANDLE)),
        None => os
            .devices
            .iter()
            .find(|(_, d)| d.process == process)
            .map(|(h, d)| (*h, d.kmd as HANDLE)),
    };
    found.ok_or_else(|| {
        SimError::Simulation(format!(
            "process {} has no such D3D device on adapter {}: a native fence is created and \
             opened for a device of the process (Machine::create_process)",
            process.0, a.index
        ))
    })
}

/// The `DxgkDdiOpenNativeFence` block for instance `local` of fence `global`, opened through
/// the device whose driver handle is `device`, at the opener's VAs `va`.
fn open_args(
    global: usize,
    local: usize,
    device: HANDLE,
    va: ProcessVas,
) -> DXGKARG_OPENNATIVEFENCE {
    DXGKARG_OPENNATIVEFENCE {
        hGlobalNativeFence: global as HANDLE,
        hLocalNativeFence: local as HANDLE,
        hDevice: device,
        CurrentValueGpuVa: va.current,
        MonitoredValueGpuVa: va.monitored,
        Flags: DXGK_OPENNATIVEFENCE_FLAGS::default(),
        pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        Reserved: [0; 32],
    }
}

/// Adapter `a` can hold native fences: it runs and its driver advertised `NativeGpuFence`.
pub(crate) fn check_native(a: &AdapterShared) -> Result<(), SimError> {
    let i = a.index;
    if *lock(&a.life) != Life::Started {
        return Err(SimError::NotStarted(i));
    }
    if lock(&a.fence_os).caps.is_none() {
        return Err(SimError::NotAllowed {
            rule: "NF-01",
            why: format!("adapter {i} has no native fences (NativeGpuFence not advertised)"),
        });
    }
    Ok(())
}

/// Dxgkrnl's teardown of adapter `a`'s native fences before the device goes away: every
/// open instance is closed and every fence destroyed (NF-13 order). Errors are returned
/// after trying them all.
pub(crate) fn destroy_all(a: &Arc<AdapterShared>, vm: &dyn VidMmPages) -> Result<(), SimError> {
    let objs: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
    let mut result = Ok(());
    for obj in objs {
        let instances: Vec<(usize, ProcessId)> = lock(&obj.st)
            .instances
            .iter()
            .map(|(l, p)| (*l, *p))
            .collect();
        for (local, process) in instances {
            let f = NativeFence {
                obj: obj.clone(),
                process,
                local,
                va: ProcessVas::default(),
            };
            // A halted machine refuses every call, this one included.
            let r = match a.state.fault() {
                Some(fault) => Err(fault.into()),
                None => destroy(a, &f, vm),
            };
            if let Err(e) = r {
                result = Err(e);
            }
        }
    }
    result
}

/// Local-memory (VRAM) fence pages in use on `a` (NF-06).
pub(crate) fn local_pages(a: &AdapterShared) -> usize {
    lock(&a.fence_os).local.live.len()
}

/// Live sync objects of `a` as the OS holds them, `(native fences, monitored fences, D3DKMT
/// native-fence handles)`, and the bytes of system-memory fence pages.
pub(crate) fn live_counts(a: &AdapterShared) -> ((usize, usize, usize), u64) {
    let os = lock(&a.fence_os);
    (
        (os.objs.len(), os.legacy.len(), os.kmt.len()),
        os.page_bytes(),
    )
}

/// (UpdateMonitoredValues calls, UpdateCurrentValuesFromCpu calls, DPC-time resamples) on `a`.
pub(crate) fn counts(a: &AdapterShared) -> (u64, u64, u64) {
    let os = lock(&a.fence_os);
    (
        os.update_monitored_calls,
        os.update_current_calls,
        os.dpc_resamples,
    )
}

/// Creates a native fence on `a` for `process` (NF-05, NF-11, NF-12, NF-13): storage,
/// `DxgkDdiCreateNativeFence`, then `DxgkDdiOpenNativeFence` for the creator.
pub(crate) fn create(
    a: &Arc<AdapterShared>,
    process: ProcessId,
    device: Option<crate::ob::KmtHandle>,
    desc: NativeFenceDesc,
    vm: &dyn VidMmPages,
) -> Result<NativeFence, SimError> {
    create_on(a, process, device, desc, None, vm)
}

/// [`create`] through `device` of `process` ([`opening_device`]), over `shared_cv` for a
/// cross-adapter fence.
pub(super) fn create_on(
    a: &Arc<AdapterShared>,
    process: ProcessId,
    device: Option<crate::ob::KmtHandle>,
    desc: NativeFenceDesc,
    shared_cv: Option<Slot>,
    vm: &dyn VidMmPages,
) -> Result<NativeFence, SimError> {
    vm.reap_fence_maps(a)?;
    let create = ddi::slot!(a, DxgkDdiCreateNativeFence)?;
    let open = ddi::slot!(a, DxgkDdiOpenNativeFence)?;
    let (device, kmd_device) = opening_device(a, process, device)?;
    let cross = shared_cv.is_some();
    if cross && desc.fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT {
        return Err(SimError::NotAllowed {
            rule: "NF-16",
            why: "a cross-adapter fence is D3DDDI_NATIVEFENCE_TYPE_DEFAULT".into(),
        });
    }
    let (cv, mv) = alloc_values(a, process, &desc, shared_cv)?;
    if !cross {
        cv.store(desc.initial);
    }
    let mv_init = if cross { 0 } else { u64::MAX };
    mv.store(mv_init);
    let pass_vas = map_for_paging_process(a, vm, &cv, &mv)?;
    let global = next_handle();
    let mut args = DXGKARG_CREATENATIVEFENCE {
        hGlobalNativeFence: global as HANDLE,
        Type: desc.fence_type,
        CurrentValueSystemProcessGpuVa: if pass_vas { cv.gpu() } else { 0 },
        MonitoredValueSystemProcessGpuVa: if pass_vas { mv.gpu() } else { 0 },
        pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        Flags: DXGKARG_CREATENATIVEFENCE_FLAGS::default(),
        Reserved: [0; 32],
    };
    // Registered before the call: from the moment the driver knows the handle, a report
    // naming it is legitimate.
    lock(&a.native_fences).insert(global);
    let status = context_call(a, create, &mut args);
    if let Err(e) = status.and_then(|s| check_status(create, s)) {
        lock(&a.native_fences).remove(&global);
        let mut os = lock(&a.fence_os);
        os.release_value(&cv);
        os.release_value(&mv);
        return Err(e);
    }
    let pdd = parse_pdd(&args.pPrivateDriverData);
    let obj = Arc::new(FenceObj {
        adapter: Arc::downgrade(a) as std::sync::Weak<dyn std::any::Any + Send + Sync>,
        adapter_index: a.index,
        global,
        creator: process,
        shareable: desc.shareable || cross,
        fence_type: desc.fence_type,
        cv,
        mv,
        pdd,
        mv_rule: a.os.windows.reading().monitored_value,
        settle_lock: Mutex::new(()),
        st: Mutex::new(ObjState {
            instances: BTreeMap::new(),
            open_pdds: BTreeMap::new(),
            unregistered: std::collections::BTreeSet::new(),
            devices: BTreeMap::new(),
            nt_refs: 0,
            destroyed: false,
            waiters: Vec::new(),
            mv_os: mv_init,
            last_cpu_signal: 0,
            hold_zero: cross,
            kmt_handles: Vec::new(),
            peers: Vec::new(),
            legacy_peers: Vec::new(),
            last_propagated: 0,
            scanned: false,
        }),
    });
    let bad = if pdd.magic != PDD_MAGIC || pdd.version != NATIVE_FENCE_PDD_VERSION {
        Some(format!(
            "CreateNativeFence returned private data with magic {:#x} version {}",
            pdd.magic, pdd.version
        ))
    } else {
        None
    };
    if let Some(msg) = bad {
        let _ = destroy_global(a, &obj);
        return Err(SimError::Rejected(msg));
    }
    // GpuMmu: VidMm maps the values into the creator at VAs of its own before the open,
    // which names them.
    let va = match map_fence_pages(a, &obj, process, vm) {
        Ok(va) => va,
        Err(e) => {
            let _ = destroy_global(a, &obj);
            return Err(e);
        }
    };
    let local = next_handle();
    let mut oargs = open_args(global, local, kmd_device, va);
    let r = context_call(a, open, &mut oargs).and_then(|s| check_status(open, s));
    if let Err(e) = r {
        let _ = unmap_fence_pages(a, &obj, process, vm);
        let _ = destroy_global(a, &obj);
        return Err(e);
    }
    {
        let mut st = lock(&obj.st);
        st.instances.insert(local, process);
        st.devices.insert(local, device);
        // Before the fence is in the adapter's table, so no device error sees it registered.
        if desc.no_signal_max_value_on_tdr {
            st.unregistered.insert(local);
        }
    }
    lock(&a.fence_os).objs.insert(global, obj.clone());
    // A cross-adapter fence (MonitoredValue held at 0) is scanned from the start.
    refresh_scan(&obj);
    Ok(NativeFence {
        obj,
        process,
        local,
        va,
    })
}

/// The fence's CurrentValue (`shared_cv` for a cross-adapter fence) and MonitoredValue
/// storage; `STATUS_NO_MEMORY` to the caller when the machine has none left.
fn alloc_values(
    a: &AdapterShared,
    process: ProcessId,
    desc: &NativeFenceDesc,
    shared_cv: Option<Slot>,
) -> Result<(Value, Value), SimError> {
    let cross = shared_cv.is_some();
    let mut os = lock(&a.fence_os);
    let cv = match shared_cv {
        Some(s) => Some(Value::System(s)),
        None => os.alloc_value(
            a.device.memory(),
            process,
            KIND_CURRENT,
            desc.shareable,
            desc.fence_type,
        ),
    };
    let mv = os.alloc_value(
        a.device.memory(),
        process,
        KIND_MONITORED,
        desc.shareable || cross,
        desc.fence_type,
    );
    match (cv, mv) {
        (Some(c), Some(m)) => Ok((c, m)),
        (c, m) => {
            for v in c.iter().chain(m.iter()) {
                os.release_value(v);
            }
            // The machine's memory is a resource processes share: a failure to
            // the caller, not a halt.
            Err(SimError::DdiFailed(STATUS_NO_MEMORY))
        }
    }
}

/// NF-11: maps both values into the paging process where the reading and the cap say so.
/// Returns whether the driver is given their VAs.
fn map_for_paging_process(
    a: &AdapterShared,
    vm: &dyn VidMmPages,
    cv: &Value,
    mv: &Value,
) -> Result<bool, SimError> {
    // NF-11 (`MapToGpuSystemProcess`): where the OS honours the cap (26H1's
    // `InitializeAdapterObject` @0x140351D48, `VidMmMapPagingProcessGpuVA`; the pages),
    // VidMm maps both pages into the paging process before the driver learns the
    // addresses ([D] VIDMM_FENCE_STORAGE_PAGE::GetPagingProcessGpuVA). 24H2 and 25H2
    // (`K:DXGADAPTERSYNCOBJECT::InitializeAdapterObject` @0x1401839C8) zero the argument
    // block and pass no VAs. Pages hold many fences and stay mapped while the adapter runs.
    let pass_vas = a.os.windows.reading().system_vas == SystemVas::Mapped
        && lock(&a.fence_os)
            .caps
            .is_some_and(|c| c.MapToGpuSystemProcess != 0);
    let to_map = if pass_vas {
        vec![cv.gpu(), mv.gpu()]
    } else {
        Vec::new()
    };
    for va in to_map {
        let mapped = vm.map_system(a, va, 8);
        let mut os = lock(&a.fence_os);
        match mapped {
            // Recorded whatever happens next: the page is unmapped before it is freed.
            Ok(()) => os.paging_mapped(va),
            Err(e) => {
                for v in [cv, mv] {
                    os.release_value(v);
                }
                return Err(e);
            }
        }
    }
    Ok(pass_vas)
}

/// Maps the fence's CurrentValue and MonitoredValue pages into `process`'s GPU VA space
/// (GpuMmu adapters) at VAs VidMm picks in that process (`vidmm::fencemap`): CurrentValue's
/// page first, then MonitoredValue's, as 24H2 maps them before the open
/// (K:DXGDEVICESYNCOBJECT::Initialize @0x1401F5EEC). Pages shared by packed fences are mapped
/// once per process.
/// Returns the values' VAs there: the `D3DDDI_NATIVEFENCEMAPPING` of this process.
fn map_fence_pages(
    a: &AdapterShared,
    obj: &FenceObj,
    process: ProcessId,
    vm: &dyn VidMmPages,
) -> Result<ProcessVas, SimError> {
    let current = vm.map_fence_value(a, process, obj.cv.gpu())?;
    match vm.map_fence_value(a, process, obj.mv.gpu()) {
        Ok(monitored) => Ok(ProcessVas { current, monitored }),
        Err(e) => {
            let _ = vm.unmap_fence_value(a, process, obj.cv.gpu());
            Err(e)
        }
    }
}

/// Gives back one instance's use of the fence's pages in `process` (`vidmm::fencemap`:
/// unmapped once no queue of the process can still name them).
fn unmap_fence_pages(
    a: &AdapterShared,
    obj: &FenceObj,
    process: ProcessId,
    vm: &dyn VidMmPages,
) -> Result<(), SimError> {
    let r = vm.unmap_fence_value(a, process, obj.cv.gpu());
    vm.unmap_fence_value(a, process, obj.mv.gpu()).and(r)
}

/// `DxgkDdiDestroyNativeFence` and the OS bookkeeping after it.
pub(super) fn destroy_global(a: &AdapterShared, obj: &FenceObj) -> Result<(), SimError> {
    let destroy = ddi::slot!(a, DxgkDdiDestroyNativeFence)?;
    let mut args = DXGKARG_DESTROYNATIVEFENCE {
        hGlobalNativeFence: obj.global as HANDLE,
        Flags: DXGK_DESTROYNATIVEFENCE_FLAGS::default(),
        Reserved: [0; 32],
    };
    let status = destroy_call(a, destroy, &mut args)?;
    check_status(destroy, status)?;
    // The driver guarantees its ISR can no longer name it (NF-14).
    lock(&a.native_fences).remove(&obj.global);
    let mut os = lock(&a.fence_os);
    os.objs.remove(&obj.global);
    os.scan.remove(&obj.global);
    // Local pages go back with the fence (NF-06); system pages stay (module docs).
    os.release_value(&obj.cv);
    os.release_value(&obj.mv);
    Ok(())
}

/// Opens `fence` for `process` on the same adapter `a` (`DxgkDdiOpenNativeFence`, NF-13).
/// Another process may open only a shareable fence.
pub(crate) fn open(
    a: &Arc<AdapterShared>,
    fence: &NativeFence,
    process: ProcessId,
    vm: &dyn VidMmPages,
) -> Result<NativeFence, SimError> {
    open_with(a, fence, process, None, OpenAccess::default(), vm)
}

/// How a process opens a fence: the access it was granted and the
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS` it asked for. Only an open that may signal and asked
/// for neither `NoSignal` nor `NoSignalMaxValueOnTdr` registers the fence with its device, so
/// that the device's error (a TDR, the process's death) signals it to `u64::MAX`
/// (`K:DXGDEVICESYNCOBJECT::Initialize` @0x1401F5EEC, `M:VidSchiSignalRegisteredSyncObjects`
/// @0x14003B848).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenAccess {
    /// The handle grants signal (modify-state) access.
    pub signal: bool,
    /// `NoSignal`.
    pub no_signal: bool,
    /// `NoSignalMaxValueOnTdr`.
    pub no_signal_max_value_on_tdr: bool,
}

impl Default for OpenAccess {
    /// Full access, no flag: what a creator and a plain open have.
    fn default() -> Self {
        Self {
            signal: true,
            no_signal: false,
            no_signal_max_value_on_tdr: false,
        }
    }
}

impl OpenAccess {
    /// Whether the open registers the fence with its device.
    pub fn registers(self) -> bool {
        self.signal && !self.no_signal && !self.no_signal_max_value_on_tdr
    }
}

/// [`open`] through `device` of `process` ([`opening_device`]) with `access`.
pub(crate) fn open_with(
    a: &Arc<AdapterShared>,
    fence: &NativeFence,
    process: ProcessId,
    device: Option<crate::ob::KmtHandle>,
    access: OpenAccess,
    vm: &dyn VidMmPages,
) -> Result<NativeFence, SimError> {
    if process != fence.obj.creator && !fence.obj.shareable {
        // Only a shareable object has an NT handle another process could open it by.
        return Err(SimError::DdiFailed(STATUS_ACCESS_DENIED));
    }
    let open = ddi::slot!(a, DxgkDdiOpenNativeFence)?;
    let device = opening_device(a, process, device)?;
    vm.reap_fence_maps(a)?;
    // The process's own VAs first: the open names them. Not under the settle
    // lock: mapping waits for paging, whose completion the DPC reports, and the DPC
    // settles fences.
    let va = map_fence_pages(a, &fence.obj, process, vm)?;
    let r = open_instance(a, fence, process, device, open, va);
    match &r {
        Ok(f) if !access.registers() => {
            lock(&fence.obj.st).unregistered.insert(f.local);
        }
        Ok(_) => {}
        Err(_) => {
            let _ = unmap_fence_pages(a, &fence.obj, process, vm);
        }
    }
    r
}

/// The OS side of one open through `device` (D3DKMT and driver handle):
/// `DxgkDdiOpenNativeFence` with the process's VAs, and the instance.
fn open_instance(
    a: &Arc<AdapterShared>,
    fence: &NativeFence,
    process: ProcessId,
    (device, kmd_device): (crate::ob::KmtHandle, HANDLE),
    open: ddi::Of<rvgpu_ddi::fence::PDXGKDDI_OPENNATIVEFENCE>,
    va: ProcessVas,
) -> Result<NativeFence, SimError> {
    let _s = lock(&fence.obj.settle_lock);
    if lock(&fence.obj.st).destroyed {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    let local = next_handle();
    let mut args = open_args(fence.obj.global, local, kmd_device, va);
    let status = context_call(a, open, &mut args)?;
    check_status(open, status)?;
    let mut st = lock(&fence.obj.st);
    st.instances.insert(local, process);
    st.devices.insert(local, device);
    if args.pPrivateDriverData.iter().any(|&b| b != 0) {
        st.open_pdds.insert(local, args.pPrivateDriverData);
    }
    drop(st);
    Ok(NativeFence {
        obj: fence.obj.clone(),
        process,
        local,
        va,
    })
}

/// What [`open_cross_adapter`] requires before it looks at the other adapter: `fence` is
/// a shareable `D3DDDI_NATIVEFENCE_TYPE_DEFAULT` fence of another adapter than `adapter`.
pub(crate) fn check_cross_adapter(fence: &NativeFence, adapter: usize) -> Result<(), SimError> {
    if adapter == fence.adapter() {
        return Err(SimError::Simulation(
            "same adapter: use open_native_fence".into(),
        ));
    }
    if !fence.obj.shareable || fence.obj.fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT {
        return Err(SimError::NotAllowed {
            rule: "NF-16",
            why: "cross-adapter fences are shareable D3DDDI_NATIVEFENCE_TYPE_DEFAULT fences".into(),
        });
    }
    Ok(())
}

/// Opens a shareable `D3DDDI_NATIVEFENCE_TYPE_DEFAULT` fence on another adapter `b` (NF-16,
/// [`check_cross_adapter`] passed): the OS creates the fence there too (its own global handle
/// and MonitoredValue, the same CurrentValue in system memory), and holds MonitoredValue at 0
/// on every adapter for the fence's life, so every signal interrupts and the OS can propagate
/// it.
pub(crate) fn open_cross_adapter(
    fence: &NativeFence,
    b: &Arc<AdapterShared>,
    process: ProcessId,
    vm: &dyn VidMmPages,
) -> Result<NativeFence, SimError> {
    let shared_cv = fence.obj.cv.system("a cross-adapter fence")?.clone();
    // The other adapter's object uses the value too: its page stays while this adapter
    // runs.
    if let Some(a) = fence.obj.adapter() {
        lock(&a.fence_os).pin(&shared_cv);
    }
    let nb = create_on(
        b,
        process,
        None,
        NativeFenceDesc::CROSS_ADAPTER_PEER,
        Some(shared_cv),
        vm,
    )?;
    // Link every instance of the fence with the new one, and hold the first adapter's
    // MonitoredValue at 0 from now on.
    let others: Vec<Arc<FenceObj>> = {
        let st = lock(&fence.obj.st);
        let mut v = st.peers.clone();
        v.push(fence.obj.clone());
        v
    };
    let cv = fence.obj.cv.load();
    for o in &others {
        let mut st = lock(&o.st);
        st.peers.push(nb.obj.clone());
        st.hold_zero = true;
        st.last_propagated = cv;
    }
    {
        let mut st = lock(&nb.obj.st);
        st.peers = others.clone();
        st.last_propagated = cv;
    }
    // The new instance's value goes to the peers on every scan (NF-16).
    refresh_scan(&nb.obj);
    for o in &others {
        settle(o)?;
    }
    Ok(nb)
}

/// The native-fence instances `process` still has open on `a`, with or without a
/// D3DKMT handle (those opened through the machine's own API have none): its exit closes
/// them all, or they would keep their fence alive.
pub(crate) fn instances_of(a: &AdapterShared, process: ProcessId) -> Vec<NativeFence> {
    let objs: Vec<Arc<FenceObj>> = lock(&a.fence_os).objs.values().cloned().collect();
    let mut out = Vec::new();
    for obj in objs {
        let locals: Vec<usize> = lock(&obj.st)
            .instances
            .iter()
            .filter(|(_, p)| **p == process)
            .map(|(l, _)| *l)
            .collect();
        out.extend(locals.into_iter().map(|local| NativeFence {
            obj: obj.clone(),
            process,
            local,
            va: ProcessVas::default(),
        }));
    }
    out
}

/// A process destroys its instance (NF-13): `DxgkDdiCloseNativeFence` for its local
/// handle; if it was the last instance, then `DxgkDdiDestroyNativeFence` for the global
/// handle. Pending CPU waits of a destroyed fence end
/// [`WaitOutcome::Abandoned`](crate::sync::fence::WaitOutcome::Abandoned). An
/// instance destroyed twice is refused by the OS (the driver never sees it).
pub(crate) fn destroy(
    a: &Arc<AdapterShared>,
    fence: &NativeFence,
    vm: &dyn VidMmPages,
) -> Result<(), SimError> {
    close_instance(a, fence)?;
    // The instance's use of the pages in its process ends with it; paging,
    // so not under the settle lock.
    let r = unmap_fence_pages(a, &fence.obj, fence.process, vm);
    // Pages left empty go back once nothing maps them (freed at the next reap).
    retire_empty_pages(a);
    r
}

/// Close (and for the last instance Destroy) of `fence`, with the OS bookkeeping.
fn close_instance(a: &Arc<AdapterShared>, fence: &NativeFence) -> Result<(), SimError> {
    let close = ddi::slot!(a, DxgkDdiCloseNativeFence)?;
    let obj = &fence.obj;
    let _s = lock(&obj.settle_lock);
    if !lock(&obj.st).instances.contains_key(&fence.local) {
        return Err(SimError::Gone("the local native fence"));
    }
    let mut args = DXGKARG_CLOSENATIVEFENCE {
        hLocalNativeFence: fence.local as HANDLE,
        Flags: DXGK_CLOSENATIVEFENCE_FLAGS::default(),
        Reserved: [0; 32],
    };
    let status = context_call(a, close, &mut args)?;
    check_status(close, status)?;
    let last = {
        let mut st = lock(&obj.st);
        st.instances.remove(&fence.local);
        st.open_pdds.remove(&fence.local);
        st.unregistered.remove(&fence.local);
        st.devices.remove(&fence.local);
        st.instances.is_empty() && st.nt_refs == 0
    };
    if !last {
        return Ok(());
    }
    destroy_object(a, obj)
}

/// The last reference (instance or NT handle) to `obj` is gone: `DxgkDdiDestroyNativeFence`
/// and the OS's bookkeeping. The caller holds `obj.settle_lock`.
pub(super) fn destroy_object(a: &Arc<AdapterShared>, obj: &Arc<FenceObj>) -> Result<(), SimError> {
    destroy_global(a, obj)?;
    let (waiters, peers, legacy) = {
        let mut st = lock(&obj.st);
        st.destroyed = true;
        (
            std::mem::take(&mut st.waiters),
            std::mem::take(&mut st.peers),
            std::mem::take(&mut st.legacy_peers),
        )
    };
    super::wait::abandon(waiters);
    for p in peers {
        lock(&p.st).peers.retain(|q| !Arc::ptr_eq(q, obj));
    }
    for l in legacy {
        lock(&l.st).native_peers.retain(|q| !Arc::ptr_eq(q, obj));
    }
    Ok(())
}

/// Raw `DxgkDdiCreateNativeFence` on `a` with storage at the given GPU addresses, bypassing
/// the OS's placement; a fence the driver accepts is handed to `destroy` (its global handle)
/// at once. Returns the driver's create status.
pub(crate) fn ddi_create_at(
    a: &AdapterShared,
    fence_type: D3DDDI_NATIVEFENCE_TYPE,
    current_gpu: u64,
    monitored_gpu: u64,
    destroy: impl FnOnce(usize),
) -> Result<NTSTATUS, SimError> {
    let create = ddi::slot!(a, DxgkDdiCreateNativeFence)?;
    let global = next_handle();
    let mut args = DXGKARG_CREATENATIVEFENCE {
        hGlobalNativeFence: global as HANDLE,
        Type: fence_type,
        CurrentValueSystemProcessGpuVa: current_gpu,
        MonitoredValueSystemProcessGpuVa: monitored_gpu,
        pPrivateDriverData: [0; D3DDDI_NATIVE_FENCE_PDD_SIZE],
        Flags: DXGKARG_CREATENATIVEFENCE_FLAGS::default(),
        Reserved: [0; 32],
    };
    lock(&a.native_fences).insert(global);
    let status = context_call(a, create, &mut args);
    if matches!(status, Ok(s) if s >= 0) {
        destroy(global);
    }
    lock(&a.native_fences).remove(&global);
    status
}

/// Raw `DxgkDdiDestroyNativeFence` on `a` for a global handle, bypassing the OS bookkeeping.
/// Returns the driver's status.
pub(crate) fn ddi_destroy(a: &AdapterShared, global: usize) -> Result<NTSTATUS, SimError> {
    let destroy = ddi::slot!(a, DxgkDdiDestroyNativeFence)?;
    let mut args = DXGKARG_DESTROYNATIVEFENCE {
        hGlobalNativeFence: global as HANDLE,
        Flags: DXGK_DESTROYNATIVEFENCE_FLAGS::default(),
        Reserved: [0; 32],
    };
    destroy_call(a, destroy, &mut args)
}

/// Raw `DxgkDdiCloseNativeFence` on `a` for a local handle. Returns the driver's status.
pub(crate) fn ddi_close(a: &AdapterShared, local: usize) -> Result<NTSTATUS, SimError> {
    let close = ddi::slot!(a, DxgkDdiCloseNativeFence)?;
    let mut args = DXGKARG_CLOSENATIVEFENCE {
        hLocalNativeFence: local as HANDLE,
        Flags: DXGK_CLOSENATIVEFENCE_FLAGS::default(),
        Reserved: [0; 32],
    };
    context_call(a, close, &mut args)
}

/// Calls a native-fence DDI that takes the adapter's context and an argument block
/// (`DxgkDdiCreateNativeFence`, `DxgkDdiOpenNativeFence`, `DxgkDdiCloseNativeFence`) at the
/// caller's IRQL; returns the driver's status.
fn context_call<T: ddi::Block>(
    a: &AdapterShared,
    f: ddi::HandleMutFn<T>,
    args: &mut T,
) -> Result<NTSTATUS, SimError> {
    f.call(a, At::Caller, (a.context(), args))
}

/// `DxgkDdiDestroyNativeFence` with `args` at the caller's IRQL; returns the driver's status.
fn destroy_call(
    a: &AdapterShared,
    destroy: ddi::Of<rvgpu_ddi::fence::PDXGKDDI_DESTROYNATIVEFENCE>,
    args: &mut DXGKARG_DESTROYNATIVEFENCE,
) -> Result<NTSTATUS, SimError> {
    destroy.call(a, At::Caller, args)
}
