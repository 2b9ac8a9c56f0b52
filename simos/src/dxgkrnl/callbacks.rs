//! The `DXGKRNL_INTERFACE` the simulated Dxgkrnl hands to `DxgkDdiStartDevice`.
//!
//! Every slot the bindings have is filled: the callbacks bring-up needs are simulated below;
//! every other slot points at a stub that halts the machine with "callback X not simulated"
//! (never a silent success). Each simulated callback first checks the caller's IRQL against
//! [`crate::dxgkrnl::irql`] and resolves `DeviceHandle` through the adapter registry; an unknown handle
//! is what Dxgkrnl would dereference as garbage: bug check 0x50.
//!
//! Callbacks never unwind into the driver: a violation records the bug check and the callback
//! returns an error status (or FALSE / nothing).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use rvgpu_ddi::adapter::*;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::feature::*;
use rvgpu_ddi::init::DXGKDDI_INTERFACE_VERSION_WDDM3_2;
use rvgpu_ddi::interrupt::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_device::Device;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::pci;
use rvgpu_kmd::platform::Irql;

use crate::dxgkrnl::adapter::{AdapterShared, Contiguous};
use crate::dxgkrnl::bugcheck::{self, vidsch, BugCheck};
use crate::dxgkrnl::irql::{self, Routine};
use crate::dxgkrnl::kernel::{self, current_irql, current_machine, IrqlScope};
use crate::dxgkrnl::notify::{self, Notification};
use crate::dxgkrnl::resources;
use crate::dxgkrnl::state::lock;

// ---------------------------------------------------------------------------------------------
// Entry checks.

/// Checks the IRQL of `routine` and resolves the handle. `None` means the machine halted (bug
/// check recorded) and the callback must return its failure value.
fn enter(routine: Routine, handle: HANDLE, address: usize) -> Option<Arc<AdapterShared>> {
    let adapter = AdapterShared::from_handle(handle);
    // A violation is recorded on the adapter's machine when the handle names one (a driver
    // thread need not be inside a simulated call), else on the thread's current machine.
    let raise = |b: BugCheck| match &adapter {
        Some(a) => a.state.raise_bugcheck(b),
        None => kernel::raise(b),
    };
    if let Err(b) = irql::check(routine, current_irql(), address) {
        raise(b);
        return None;
    }
    match adapter {
        // A removed adapter's handle is freed Dxgkrnl memory: the same page fault as a handle
        // that never existed, on the machine the adapter belonged to.
        Some(a) if !a.handle_valid.load(Ordering::Acquire) => {
            a.state.raise_bugcheck(BugCheck::new(
                bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
                [handle as usize as u64, 0, address as u64, 0],
            ));
            None
        }
        Some(a) if !a.state.is_halted() => Some(a),
        Some(_) => None,
        None => {
            kernel::raise(BugCheck::new(
                bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
                [handle as usize as u64, 0, address as u64, 0],
            ));
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stubs for callbacks the simulation does not implement.

/// What a stub returns to the driver.
pub trait FailValue {
    /// The failure value.
    fn fail() -> Self;
}
impl FailValue for () {
    fn fail() -> Self {}
}
impl FailValue for NTSTATUS {
    fn fail() -> Self {
        STATUS_NOT_IMPLEMENTED
    }
}
impl FailValue for BOOLEAN {
    fn fail() -> Self {
        0
    }
}
impl FailValue for u32 {
    fn fail() -> Self {
        0
    }
}
impl FailValue for u64 {
    fn fail() -> Self {
        0
    }
}
impl<T> FailValue for *mut T {
    fn fail() -> Self {
        std::ptr::null_mut()
    }
}

fn not_simulated(id: usize) {
    let name = DXGKRNL_INTERFACE::SLOT_NAMES
        .get(id)
        .copied()
        .unwrap_or("<unknown slot>");
    let msg = format!("callback {name} not simulated");
    match current_machine() {
        Some(m) => m.raise_sim_error(msg),
        None => eprintln!("rvgpu-simos: {msg} (no current machine)"),
    }
}

/// Builds a "not simulated" stub of a callback slot's exact type.
pub trait NotSimulated: Sized {
    /// The stub for slot number `ID` of `DXGKRNL_INTERFACE::SLOT_NAMES`.
    fn stub<const ID: usize>() -> Self;
}

macro_rules! stub_arity {
    ($f:ident; $($a:ident),*) => {
        #[allow(non_snake_case, clippy::too_many_arguments)]
        unsafe extern "system" fn $f<const ID: usize, $($a,)* R: FailValue>($(_: $a),*) -> R {
            not_simulated(ID);
            R::fail()
        }
        impl<$($a,)* R: FailValue> NotSimulated for Option<unsafe extern "system" fn($($a),*) -> R> {
            fn stub<const ID: usize>() -> Self {
                Some($f::<ID, $($a,)* R>)
            }
        }
    };
}
stub_arity!(stub0;);
stub_arity!(stub1; A);
stub_arity!(stub2; A, B);
stub_arity!(stub3; A, B, C);
stub_arity!(stub4; A, B, C, D);
stub_arity!(stub5; A, B, C, D, E);
stub_arity!(stub6; A, B, C, D, E, F);
stub_arity!(stub7; A, B, C, D, E, F, G);

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Index of a slot in `DXGKRNL_INTERFACE::SLOT_NAMES` (a compile error for an unknown name).
const fn slot_id(name: &str) -> usize {
    let names = DXGKRNL_INTERFACE::SLOT_NAMES;
    let mut i = 0;
    while i < names.len() {
        if str_eq(names[i], name) {
            return i;
        }
        i += 1;
    }
    panic!("unknown DXGKRNL_INTERFACE slot")
}

macro_rules! not_simulated_slots {
    ($iface:ident; $($field:ident),* $(,)?) => {
        $( $iface.$field = NotSimulated::stub::<{ slot_id(stringify!($field)) }>(); )*
    };
}

// ---------------------------------------------------------------------------------------------
// The table.

/// The callback table for adapter `a`.
pub fn interface_for(a: &Arc<AdapterShared>) -> DXGKRNL_INTERFACE {
    let mut i = DXGKRNL_INTERFACE {
        Size: std::mem::size_of::<DXGKRNL_INTERFACE>() as ULONG,
        Version: DXGKDDI_INTERFACE_VERSION_WDDM3_2,
        DeviceHandle: a.handle(),
        ..DXGKRNL_INTERFACE::default()
    };
    i.DxgkCbGetDeviceInformation = Some(get_device_information);
    i.DxgkCbMapMemory = Some(map_memory);
    i.DxgkCbUnmapMemory = Some(unmap_memory);
    i.DxgkCbQueueDpc = Some(queue_dpc);
    i.DxgkCbQueryServices = Some(query_services);
    i.DxgkCbSynchronizeExecution = Some(synchronize_execution);
    i.DxgkCbNotifyInterrupt = Some(notify_interrupt);
    i.DxgkCbNotifyDpc = Some(notify_dpc);
    i.DxgkCbLogEtwEvent = Some(log_etw_event);
    i.DxgkCbAllocateContiguousMemory = Some(allocate_contiguous_memory);
    i.DxgkCbFreeContiguousMemory = Some(free_contiguous_memory);
    not_simulated_slots!(i;
        DxgkCbEvalAcpiMethod, DxgkCbIndicateChildStatus, DxgkCbReadDeviceSpace,
        DxgkCbWriteDeviceSpace, DxgkCbIsDevicePresent, DxgkCbGetHandleData,
        DxgkCbGetHandleParent, DxgkCbEnumHandleChildren, DxgkCbQueryVidPnInterface,
        DxgkCbQueryMonitorInterface, DxgkCbGetCaptureAddress, DxgkCbExcludeAdapterAccess,
        DxgkCbCreateContextAllocation, DxgkCbDestroyContextAllocation,
        DxgkCbSetPowerComponentActive, DxgkCbSetPowerComponentIdle,
        DxgkCbAcquirePostDisplayOwnership, DxgkCbPowerRuntimeControlRequest,
        DxgkCbSetPowerComponentLatency, DxgkCbSetPowerComponentResidency,
        DxgkCbCompleteFStateTransition, DxgkCbCompletePStateTransition,
        DxgkCbMapContextAllocation, DxgkCbUpdateContextAllocation,
        DxgkCbReserveGpuVirtualAddressRange, DxgkCbAcquireHandleData, DxgkCbReleaseHandleData,
        DxgkCbHardwareContentProtectionTeardown, DxgkCbMultiPlaneOverlayDisabled,
        DxgkCbMitigatedRangeUpdate, DxgkCbInvalidateHwContext, DxgkCbIndicateConnectorChange,
        DxgkCbUnblockUEFIFrameBufferRanges, DxgkCbAcquirePostDisplayOwnership2,
        DxgkCbSetProtectedSessionStatus, DxgkCbAllocatePagesForMdl, DxgkCbFreePagesFromMdl,
        DxgkCbPinFrameBufferForSave, DxgkCbUnpinFrameBufferForSave,
        DxgkCbMapFrameBufferPointer, DxgkCbUnmapFrameBufferPointer, DxgkCbMapMdlToIoMmu,
        DxgkCbUnmapMdlFromIoMmu, DxgkCbReportDiagnostic, DxgkCbSignalEvent,
        DxgkCbIsFeatureEnabled, DxgkCbSaveMemoryForHotUpdate, DxgkCbNotifyCursorSupportChange,
        DxgkCbQueryFeatureSupport, DxgkCbCreatePhysicalMemoryObject,
        DxgkCbDestroyPhysicalMemoryObject, DxgkCbMapPhysicalMemory, DxgkCbUnmapPhysicalMemory,
        DxgkCbAllocateAdl, DxgkCbFreeAdl, DxgkCbOpenPhysicalMemoryObject,
        DxgkCbClosePhysicalMemoryObject, DxgkCbPinFrameBufferForSave2,
    );
    i.DxgkCbDisconnectDoorbell = Some(disconnect_doorbell);
    // TDR (issue 7): the guilty context of an engine reset (crate::vidsch::tdr).
    i.DxgkCbInvalidateHwContext = Some(crate::vidsch::tdr::cb_invalidate_hw_context);
    i
}

// ---------------------------------------------------------------------------------------------
// Device information and BAR mappings.

/// `DxgkCbGetDeviceInformation` (PASSIVE).
unsafe extern "system" fn get_device_information(
    handle: HANDLE,
    info: PDXGK_DEVICE_INFO,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbGetDeviceInformation,
        handle,
        get_device_information as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if info.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    let r = &a.resources;
    let out = DXGK_DEVICE_INFO {
        MiniportDeviceContext: a.context(),
        PhysicalDeviceObject: r.pdo(),
        DeviceRegistryPath: r.registry_path_string(),
        TranslatedResourceList: r.list_ptr(),
        SystemMemorySize: LARGE_INTEGER::from_i64(16 << 30),
        HighestPhysicalAddress: LARGE_INTEGER::from_i64((rvgpu_hw::addr::SYSMEM_LIMIT - 1) as i64),
        AgpApertureBase: LARGE_INTEGER::from_i64(0),
        AgpApertureSize: 0,
        DockingState: DockStateUnsupported,
    };
    // SAFETY: the driver passes a pointer to its DXGK_DEVICE_INFO (checked non-null); writing
    // a whole value is what the callback is for.
    unsafe { info.write(out) };
    STATUS_SUCCESS
}

/// BAR2 seen as an MMIO bus: 32/64-bit writes at `page * 4096` ring doorbell `page`.
pub struct DoorbellBus(pub Weak<Device>);

impl MmioBus for DoorbellBus {
    fn read32(&self, _offset: usize) -> u32 {
        0
    }
    fn write32(&self, offset: usize, value: u32) {
        self.write64(offset, u64::from(value));
    }
    fn read64(&self, _offset: usize) -> u64 {
        0
    }
    fn write64(&self, offset: usize, value: u64) {
        if let (Some(d), Ok(page)) = (
            self.0.upgrade(),
            u32::try_from(offset / rvgpu_hw::PAGE_SIZE as usize),
        ) {
            d.doorbell_write(page, value);
        }
    }
}

/// `DxgkCbMapMemory` (PASSIVE): maps a range of one of the adapter's BARs. BAR0 and BAR2 must
/// be mapped from their start (the trap window is the BAR); BAR4 may be mapped at any offset.
unsafe extern "system" fn map_memory(
    handle: HANDLE,
    translated: PHYSICAL_ADDRESS,
    length: ULONG,
    in_io_space: BOOLEAN,
    map_to_user_mode: BOOLEAN,
    _cache: MEMORY_CACHING_TYPE,
    virtual_address: *mut PVOID,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbMapMemory,
        handle,
        map_memory as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if virtual_address.is_null() || length == 0 || in_io_space != 0 {
        return STATUS_INVALID_PARAMETER;
    }
    if map_to_user_mode != 0 {
        // User-mode mappings come with user-mode submission (doorbell pages, UM-09).
        a.state
            .raise_sim_error("DxgkCbMapMemory with MapToUserMode is not simulated");
        return STATUS_NOT_SUPPORTED;
    }
    let addr = translated.get() as u64;
    let len = u64::from(length);
    let idx = a.index;
    let doorbells = u64::from(a.device.config().doorbells) * rvgpu_hw::PAGE_SIZE;
    let vram = a.device.memory().vram_size();
    let within = |base: u64, size: u64| {
        addr >= base && addr.checked_add(len).is_some_and(|e| e <= base + size)
    };
    let va = if addr == resources::bar_base(idx, pci::BAR_MMIO) && len <= pci::MMIO_SIZE {
        let bus: Arc<dyn MmioBus + Send + Sync> = a.device.clone();
        kernel::map_trap_window(&bus, len as usize)
    } else if addr == resources::bar_base(idx, pci::BAR_DOORBELL) && len <= doorbells {
        let va = kernel::map_trap_window(&a.doorbell_bus, len as usize);
        lock(&a.doorbell_windows).insert(va.as_ptr() as usize, len as usize);
        va
    } else if within(resources::bar_base(idx, pci::BAR_VRAM), vram) {
        let off = addr - resources::bar_base(idx, pci::BAR_VRAM);
        let Some(base) = a.device.memory().vram_cpu_ptr() else {
            return STATUS_INVALID_PARAMETER;
        };
        // SAFETY: `off + len <= vram` (checked by `within`), so the pointer stays inside the
        // VRAM backing, which lives as long as the machine's `Memory`.
        let p = unsafe { base.cast::<u8>().add(off as usize) };
        kernel::map_memory_window(p, len as usize);
        p
    } else {
        a.state.push_log(
            rvgpu_kmd::platform::Level::Error,
            format!("DxgkCbMapMemory: {addr:#x}+{len:#x} is not inside a BAR of adapter {idx}"),
        );
        return STATUS_INVALID_PARAMETER;
    };
    *lock(&a.mappings).entry(va.as_ptr() as usize).or_insert(0) += 1;
    // SAFETY: checked non-null; the driver's out-parameter.
    unsafe { virtual_address.write(va.as_ptr().cast()) };
    STATUS_SUCCESS
}

/// `DxgkCbUnmapMemory` (PASSIVE). Unmapping an address that is not a live mapping of this
/// adapter is what MmUnmapIoSpace under Driver Verifier rejects: 0xC4 with the "freeing an
/// address not returned by an allocate call" subtype.
unsafe extern "system" fn unmap_memory(handle: HANDLE, va: PVOID) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbUnmapMemory,
        handle,
        unmap_memory as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    let key = va as usize;
    let live = {
        let mut maps = lock(&a.mappings);
        match maps.get_mut(&key) {
            Some(n) => {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    maps.remove(&key);
                }
                true
            }
            None => false,
        }
    };
    if !live {
        a.state.raise_bugcheck(BugCheck::verifier(
            bugcheck::verifier::FREE_BAD_ADDRESS,
            key as u64,
            0,
            0,
        ));
        return STATUS_INVALID_PARAMETER;
    }
    if !lock(&a.mappings).contains_key(&key) {
        // BAR2 trap windows are never shared, so the last unmap of the base ends it.
        lock(&a.doorbell_windows).remove(&key);
    }
    kernel::unmap_window(key);
    STATUS_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Interrupts and DPCs.

/// `DxgkCbQueueDpc` (any IRQL): at most one DPC queued per adapter. Unlike
/// `DxgkCbNotifyInterrupt` it does not require the interrupt lock: Microsoft documents it as
/// callable at any level (it is KeInsertQueueDpc underneath), so a driver may queue its DPC
/// from a PASSIVE thread or from the DPC itself.
unsafe extern "system" fn queue_dpc(handle: HANDLE) -> BOOLEAN {
    let Some(a) = enter(
        Routine::DxgkCbQueueDpc,
        handle,
        queue_dpc as *const () as usize,
    ) else {
        return 0;
    };
    if a.dpc_queued.swap(true, Ordering::AcqRel) {
        return 0;
    }
    a.wake.notify();
    1
}

/// `DxgkCbSynchronizeExecution` (<= DISPATCH): runs the routine under the interrupt lock at
/// device IRQL and returns its BOOLEAN.
unsafe extern "system" fn synchronize_execution(
    handle: HANDLE,
    routine: PKSYNCHRONIZE_ROUTINE,
    context: PVOID,
    message_number: ULONG,
    return_value: *mut BOOLEAN,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbSynchronizeExecution,
        handle,
        synchronize_execution as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    let Some(routine) = routine else {
        return STATUS_INVALID_PARAMETER;
    };
    if message_number != 0 {
        // Line-based interrupt: the message number must be zero.
        return STATUS_INVALID_PARAMETER;
    }
    if !a.connected.load(Ordering::Acquire) {
        return STATUS_UNSUCCESSFUL;
    }
    let result = {
        let _guard = lock(&a.interrupt_lock);
        // Re-check under the lock: the interrupt may have been disconnected (or the machine
        // halted) while this caller waited for it.
        if a.state.is_halted() || !a.connected.load(Ordering::Acquire) {
            return STATUS_UNSUCCESSFUL;
        }
        let _irql = IrqlScope::enter(Irql::Device);
        let _inside = a.enter_interrupt_lock();
        // SAFETY: the driver's synchronize routine with its own context, under the interrupt
        // lock at device IRQL, as KeSynchronizeExecution runs it.
        let r = unsafe { routine(context) };
        if let Err(b) = kernel::check_return_irql(
            Irql::Device,
            bugcheck::irql_unexpected::SIM_SYNCHRONIZE_ROUTINE,
            routine as usize as u64,
            context as usize as u64,
            0,
        ) {
            a.state.raise_bugcheck(b);
            return STATUS_UNSUCCESSFUL;
        }
        r
    };
    if !return_value.is_null() {
        // SAFETY: the driver's out-parameter (checked non-null).
        unsafe { return_value.write(result) };
    }
    STATUS_SUCCESS
}

fn decode(
    a: &AdapterShared,
    data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA,
) -> Result<Notification, BugCheck> {
    let t = data.InterruptType;
    if !notify::is_known_type(t) {
        return Err(BugCheck::video_scheduler(
            vidsch::SIM_UNKNOWN_INTERRUPT_TYPE,
            t as u32 as u64,
            0,
            0,
        ));
    }
    if !notify::allowed_on_render_only(t) {
        // 0x119 subtype 7: REPORT_VSYNC_ON_RENDER_ONLY_ADAPTER.
        return Err(BugCheck::video_scheduler(0x7, t as u32 as u64, 0, 0));
    }
    // The node and engine the report names (every type the simulation decodes carries them).
    // Between StartDevice's return (the interrupt is connected) and the OS's DRIVERCAPS
    // query the OS does not know the node count yet: an idle engine may already ask for F1
    // then. Until the caps are read the report is checked against the architectural maximum
    // (what `validate_caps` allows); the exact count applies from then on.
    let nodes = lock(&a.caps).map_or(rvgpu_hw::regs::ENGINE_MAX, |c| {
        c.GpuEngineTopology.NbAsymetricProcessingNodes
    });
    let check_node = |node: u32, engine: u32| -> Result<(), BugCheck> {
        if node >= nodes {
            return Err(BugCheck::video_scheduler(
                vidsch::SIM_INVALID_NODE_ORDINAL,
                u64::from(node),
                u64::from(nodes),
                t as u32 as u64,
            ));
        }
        if engine != 0 {
            return Err(BugCheck::video_scheduler(
                vidsch::SIM_INVALID_ENGINE_ORDINAL,
                u64::from(engine),
                u64::from(node),
                t as u32 as u64,
            ));
        }
        Ok(())
    };
    // SAFETY (all arms): `InterruptType` selects the union member the driver filled; every
    // member is plain integers and pointers, so any bit pattern is a valid value to read.
    Ok(match t {
        DXGK_INTERRUPT_DMA_COMPLETED => {
            let d = unsafe { data.Anonymous.DmaCompleted };
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            Notification::DmaCompleted {
                fence_id: d.SubmissionFenceId,
                node: d.NodeOrdinal,
                engine: d.EngineOrdinal,
            }
        }
        DXGK_INTERRUPT_GPU_ENGINE_STATE_CHANGE => {
            let d = unsafe { data.Anonymous.EngineStateChange };
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            if !(DXGK_ENGINE_STATE_ACTIVE..=DXGK_ENGINE_STATE_HUNG).contains(&d.NewState) {
                return Err(BugCheck::video_scheduler(
                    vidsch::SIM_INVALID_ENGINE_STATE,
                    d.NewState as u32 as u64,
                    u64::from(d.NodeOrdinal),
                    t as u32 as u64,
                ));
            }
            Notification::EngineStateChange {
                node: d.NodeOrdinal,
                engine: d.EngineOrdinal,
                new_state: d.NewState,
            }
        }
        DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED => {
            let d = unsafe { data.Anonymous.NativeFenceSignaled };
            check_node(d.NodeOrdinal, d.EngineOrdinal)?;
            // Issue 5 (LOG-08): with the optimized cap the OS reads hHWQueue only.
            let optimized = lock(&a.caps).is_some_and(|c| {
                c.SchedulingCaps
                    .is_set(DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt)
            });
            let hw_queue = if optimized && !d.hHWQueue.is_null() {
                let h = d.hHWQueue as usize;
                let table = lock(&a.fence_os).logs.clone();
                match table.check_isr_queue(h, d.NodeOrdinal) {
                    crate::sync::fencelog::IsrQueue::Ok => Some(h),
                    crate::sync::fencelog::IsrQueue::Unknown => {
                        return Err(BugCheck::video_scheduler(
                            vidsch::SIM_INVALID_HW_QUEUE,
                            h as u64,
                            u64::from(d.NodeOrdinal),
                            u64::MAX,
                        ))
                    }
                    crate::sync::fencelog::IsrQueue::WrongNode(n) => {
                        return Err(BugCheck::video_scheduler(
                            vidsch::SIM_INVALID_HW_QUEUE,
                            h as u64,
                            u64::from(d.NodeOrdinal),
                            u64::from(n),
                        ))
                    }
                }
            } else {
                None
            };
            let fences = if optimized || d.pSignaledNativeFenceArray.is_null() {
                None
            } else {
                let n = d.SignaledNativeFenceCount as usize;
                // SAFETY: the driver reports `n` handles at this non-null address (the DDI's
                // contract); the OS reads them at ISR time.
                let handles = unsafe { std::slice::from_raw_parts(d.pSignaledNativeFenceArray, n) };
                let live = lock(&a.native_fences);
                for (i, h) in handles.iter().enumerate() {
                    if !live.contains(&(*h as usize)) {
                        return Err(BugCheck::video_scheduler(
                            vidsch::DRIVER_REPORTED_INVALID_FENCE_ID,
                            *h as usize as u64,
                            t as u32 as u64,
                            i as u64,
                        ));
                    }
                }
                Some(handles.iter().map(|h| *h as usize).collect())
            };
            let advertised = lock(&a.caps)
                .is_some_and(|c| c.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence));
            if !a.os.native_fence_feature || !advertised {
                // The OS never enabled native fences on this adapter (NF-10): the report is
                // of a type this adapter may not raise.
                return Err(BugCheck::video_scheduler(
                    vidsch::SIM_UNKNOWN_INTERRUPT_TYPE,
                    t as u32 as u64,
                    1,
                    0,
                ));
            }
            Notification::NativeFenceSignaled {
                node: d.NodeOrdinal,
                engine: d.EngineOrdinal,
                fences,
                evaluate_legacy: data
                    .Flags
                    .is_set(DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences),
                optimized,
                hw_queue,
            }
        }
        other => Notification::Other {
            interrupt_type: other,
        },
    })
}

/// `DxgkCbNotifyInterrupt` (device IRQL, from this adapter's ISR or one of its synchronized
/// routines): validates the report and queues it for the DPC.
unsafe extern "system" fn notify_interrupt(
    handle: HANDLE,
    data: *const DXGKARGCB_NOTIFY_INTERRUPT_DATA,
) {
    let Some(a) = enter(
        Routine::DxgkCbNotifyInterrupt,
        handle,
        notify_interrupt as *const () as usize,
    ) else {
        return;
    };
    if data.is_null() {
        a.state.raise_bugcheck(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, notify_interrupt as *const () as usize as u64, 0],
        ));
        return;
    }
    // SAFETY: non-null pointer to the driver's DXGKARGCB_NOTIFY_INTERRUPT_DATA.
    let data = unsafe { data.read() };
    if !a.holds_interrupt_lock() {
        // At device IRQL but not inside this adapter's ISR or synchronized routine (another
        // adapter's, say): the OS's interrupt-time state is unprotected.
        a.state.raise_bugcheck(BugCheck::video_scheduler(
            vidsch::SIM_NOTIFY_OUTSIDE_INTERRUPT_LOCK,
            handle as usize as u64,
            data.InterruptType as u32 as u64,
            0,
        ));
        return;
    }
    match decode(&a, &data) {
        Ok(n) => {
            // Node reports for VidSch's kernel-mode scheduling and TDR (crate::vidsch::tdr).
            crate::vidsch::tdr::isr_report(&a, &data);
            a.push_pending(n)
        }
        Err(b) => a.state.raise_bugcheck(b),
    }
}

/// `DxgkCbNotifyDpc` (DISPATCH): the OS processes what the ISR reported.
unsafe extern "system" fn notify_dpc(handle: HANDLE) {
    let Some(a) = enter(
        Routine::DxgkCbNotifyDpc,
        handle,
        notify_dpc as *const () as usize,
    ) else {
        return;
    };
    a.process_pending();
}

/// `DxgkCbLogEtwEvent` (any IRQL): with no ETW session listening, Windows drops the event;
/// the simulation does the same, after the IRQL check.
unsafe extern "system" fn log_etw_event(
    _guid: *const GUID,
    _type: UCHAR,
    _size: USHORT,
    _buffer: PVOID,
) {
    if let Err(b) = irql::check(
        Routine::DxgkCbLogEtwEvent,
        current_irql(),
        log_etw_event as *const () as usize,
    ) {
        kernel::raise(b);
    }
}

// ---------------------------------------------------------------------------------------------
// Services: the feature interface (NF-10).

/// `InterfaceReference` of the feature interface (`PINTERFACE_REFERENCE`, IRQL <=
/// DISPATCH_LEVEL): the context is the adapter handle. A context that is not a live adapter
/// handle is 0x50, like any callback with a bad handle.
unsafe extern "system" fn interface_reference(context: PVOID) {
    if let Some(a) = enter(
        Routine::InterfaceReference,
        context,
        interface_reference as *const () as usize,
    ) {
        a.feature_refs.fetch_add(1, Ordering::AcqRel);
    }
}

/// `InterfaceDereference` of the feature interface (IRQL <= DISPATCH_LEVEL). Dropping a
/// reference the driver does not hold would free the interface under its other users: the
/// count going negative is a simulation error (Windows has no bug check for it; the
/// interface would be released early).
unsafe extern "system" fn interface_dereference(context: PVOID) {
    if let Some(a) = enter(
        Routine::InterfaceDereference,
        context,
        interface_dereference as *const () as usize,
    ) {
        if a.feature_refs.fetch_sub(1, Ordering::AcqRel) <= 0 {
            a.feature_refs.fetch_add(1, Ordering::AcqRel);
            a.state.raise_sim_error(format!(
                "adapter {}: InterfaceDereference of the feature interface without a reference \
                 (reference count would go negative)",
                a.index
            ));
        }
    }
}

/// `DxgkCbQueryServices` (PASSIVE). Only `DxgkServicesFeature` is provided.
unsafe extern "system" fn query_services(
    handle: HANDLE,
    services: DXGK_SERVICES,
    interface: PINTERFACE,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbQueryServices,
        handle,
        query_services as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if interface.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    if services != DxgkServicesFeature {
        return STATUS_NOT_SUPPORTED;
    }
    // SAFETY: non-null; the driver passes at least an INTERFACE header.
    let header = unsafe { interface.read() };
    if usize::from(header.Size) < std::mem::size_of::<DXGK_FEATURE_INTERFACE>()
        || header.Version != DXGK_FEATURE_INTERFACE_VERSION_1
    {
        return STATUS_INVALID_PARAMETER;
    }
    let out = DXGK_FEATURE_INTERFACE {
        Size: std::mem::size_of::<DXGK_FEATURE_INTERFACE>() as USHORT,
        Version: DXGK_FEATURE_INTERFACE_VERSION_1,
        Context: a.handle(),
        InterfaceReference: Some(interface_reference),
        InterfaceDereference: Some(interface_dereference),
        IsFeatureEnabled: Some(is_feature_enabled),
        QueryFeatureInterface: Some(query_feature_interface),
    };
    // SAFETY: the driver declared (Size) a buffer at least this large.
    unsafe { interface.cast::<DXGK_FEATURE_INTERFACE>().write(out) };
    // As every WDM interface provider does, the interface is referenced for the caller, who
    // must dereference it when done.
    a.feature_refs.fetch_add(1, Ordering::AcqRel);
    STATUS_SUCCESS
}

/// `DXGK_FEATURE_INTERFACE::IsFeatureEnabled` (PASSIVE).
unsafe extern "system" fn is_feature_enabled(
    handle: HANDLE,
    args: *mut DXGKARGCB_ISFEATUREENABLED2,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbIsFeatureEnabled,
        handle,
        is_feature_enabled as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if args.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { &mut *args };
    lock(&a.features_queried).push(args.FeatureId);
    let enabled = args.FeatureId == DXGK_FEATURE_NATIVE_FENCE && a.os.native_fence_feature;
    let known = args.FeatureId == DXGK_FEATURE_NATIVE_FENCE;
    let mut flags = DXGK_ISFEATUREENABLED_RESULT_0::default();
    flags.set(DXGK_ISFEATUREENABLED_RESULT_0::Enabled, u16::from(enabled));
    flags.set(
        DXGK_ISFEATUREENABLED_RESULT_0::KnownFeature,
        u16::from(known),
    );
    args.Result = DXGK_ISFEATUREENABLED_RESULT {
        Version: u16::from(enabled),
        Anonymous: flags,
    };
    STATUS_SUCCESS
}

/// `DXGK_FEATURE_INTERFACE::QueryFeatureInterface` (PASSIVE): native fence version 1 only.
unsafe extern "system" fn query_feature_interface(
    handle: HANDLE,
    args: *mut DXGKARGCB_QUERYFEATUREINTERFACE,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbQueryFeatureInterface,
        handle,
        query_feature_interface as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if args.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { &mut *args };
    if args.FeatureId != DXGK_FEATURE_NATIVE_FENCE || !a.os.native_fence_feature {
        return STATUS_NOT_SUPPORTED;
    }
    let size = std::mem::size_of::<DXGKCBINT_FEATURE_NATIVEFENCE_1>();
    if args.Version != 1 || usize::from(args.InterfaceSize) < size || args.Interface.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: the driver's buffer of at least `size` bytes (checked above).
    unsafe {
        args.Interface
            .cast::<DXGKCBINT_FEATURE_NATIVEFENCE_1>()
            .write(DXGKCBINT_FEATURE_NATIVEFENCE_1 {
                GetOSCaps: Some(native_fence_get_os_caps),
            })
    };
    a.native_fence_interface_queries
        .fetch_add(1, Ordering::Relaxed);
    args.InterfaceSize = size as u16;
    STATUS_SUCCESS
}

/// `DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps` (PASSIVE). The simulated OS keeps default
/// fences in system memory (`SupportOptimizedDefaultFenceType` = 0) and supports the intra-GPU
/// fence type, whose values it places in VRAM (NF-06), so `SupportIntraGpuFenceType` = 1.
unsafe extern "system" fn native_fence_get_os_caps(
    args: *mut DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1,
) -> NTSTATUS {
    if let Err(b) = irql::check(
        Routine::NativeFenceGetOSCaps,
        current_irql(),
        native_fence_get_os_caps as *const () as usize,
    ) {
        kernel::raise(b);
        return STATUS_UNSUCCESSFUL;
    }
    if args.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null out-parameter.
    unsafe {
        args.write(DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::default().with(
            DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::SupportIntraGpuFenceType,
            1,
        ))
    };
    STATUS_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// Contiguous memory.

/// `DxgkCbAllocateContiguousMemory` (PASSIVE): system memory from the machine's `Memory`,
/// recorded as the driver's; the tracking handle is the VA.
unsafe extern "system" fn allocate_contiguous_memory(
    handle: HANDLE,
    args: *mut DXGKARGCB_ALLOCATECONTIGUOUSMEMORY,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbAllocateContiguousMemory,
        handle,
        allocate_contiguous_memory as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if args.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { &mut *args };
    let Some(alloc) = a
        .device
        .memory()
        .alloc_system(args.NumberOfBytes as u64, rvgpu_hw::PAGE_SIZE)
    else {
        return STATUS_INSUFFICIENT_RESOURCES;
    };
    let highest = args.HighestAcceptableAddress.get() as u64;
    if highest != 0 && alloc.bus_addr + alloc.len - 1 > highest {
        a.device.memory().free_system(alloc.bus_addr);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    let va = alloc.cpu_ptr().as_ptr() as usize;
    kernel::register_dma(va, alloc.len as usize, alloc.bus_addr);
    args.hMemoryHandle = va as HANDLE;
    args.pMemory = va as PVOID;
    lock(&a.contiguous).insert(va, Contiguous { alloc });
    STATUS_SUCCESS
}

/// `DxgkCbFreeContiguousMemory` (PASSIVE): freeing a handle that is not a live allocation of
/// this adapter (never allocated, or already freed) is bug check 0xC4 subtype 0x10.
unsafe extern "system" fn free_contiguous_memory(
    handle: HANDLE,
    args: *const DXGKARGCB_FREECONTIGUOUSMEMORY,
) -> NTSTATUS {
    let Some(a) = enter(
        Routine::DxgkCbFreeContiguousMemory,
        handle,
        free_contiguous_memory as *const () as usize,
    ) else {
        return STATUS_UNSUCCESSFUL;
    };
    if args.is_null() {
        return STATUS_INVALID_PARAMETER;
    }
    // SAFETY: non-null pointer to the driver's argument block.
    let args = unsafe { args.read() };
    let key = args.hMemoryHandle as usize;
    let Some(c) = lock(&a.contiguous).remove(&key) else {
        a.state.raise_bugcheck(BugCheck::verifier(
            bugcheck::verifier::FREE_BAD_ADDRESS,
            key as u64,
            0,
            0,
        ));
        return STATUS_INVALID_PARAMETER;
    };
    kernel::unregister_dma(key);
    a.device.memory().free_system(c.alloc.bus_addr);
    // Quarantine: the backing stays alive (a stale CPU pointer is still memory-safe) and
    // poisoned; Unload checks the poison.
    for w in c.alloc.words() {
        w.store(crate::dxgkrnl::adapter::FREED_POISON, Ordering::Release);
    }
    lock(&a.quarantine).push((key, c));
    STATUS_SUCCESS
}

// ---------------------------------------------------------------------------------------------
// User-mode submission.

/// `DxgkCbDisconnectDoorbell` (PASSIVE_LEVEL): the KMD takes a connected doorbell away from its
/// queue (victimisation, UM-09/UM-20). The OS points the doorbell's CPU VA at the dummy page
/// and writes the reason to its status page ([`crate::ums`]). No adapter handle: the doorbell
/// and queue handles identify it.
unsafe extern "system" fn disconnect_doorbell(args: *mut DXGKARGCB_DISCONNECTDOORBELL) -> NTSTATUS {
    crate::ums::cb_disconnect_doorbell(args)
}

/// Code address of the `DxgkCbDisconnectDoorbell` callback (bug-check parameters).
pub(crate) fn disconnect_doorbell_address() -> usize {
    disconnect_doorbell as *const () as usize
}
