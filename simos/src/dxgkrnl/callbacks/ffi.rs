//! The driver->OS side of the FFI, in one place: every routine the driver calls in the
//! simulated OS (the `DXGKRNL_INTERFACE` callbacks, the feature interface, the `Platform` the
//! KMD's Linux build links against), every routine the driver hands the OS to run (a
//! synchronized routine, a timer routine, an ETW enable callback), and, for the stand-ins tests
//! put in DDI slots ([`crate::testing`]), their generic entry points, their callback calls and
//! their calls of the driver's own ISR and DPC ([`stand_in`]).
//!
//! Raw pointers cross here only. Each entry point reads the driver's blocks and writes its
//! out-parameters through a [`DriverMemory`] exactly once, then calls a safe handler in the
//! sibling modules, which makes every check 24H2 makes in 24H2's order. Where 24H2 dereferences
//! a driver pointer after no more than a null check (every argument block the callbacks take),
//! the simulation does the same: in-process ([`Direct`]) a non-null pointer is taken as a valid
//! block of its type; for `rvgpu.sys` in the emulator the PE bridge's memory copies it, and an
//! address the image cannot reach is the bug check 24H2's access takes there.

use std::borrow::Cow;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::NonNull;

use rvgpu_ddi::adapter::PDXGK_DEVICE_INFO;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::dxgkrnl::*;
use rvgpu_ddi::feature::*;
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;
use rvgpu_ddi::ntstatus::*;
use rvgpu_kmd::platform::{Irql, Platform};

#[path = "view.rs"]
pub(crate) mod view;

use self::view::{
    copy, with_block, Call, DriverArray, DriverMemory, DriverPtr, InterfaceView, Out,
};
use self::view::{Report, SyncView};
use super::{device, feature, handle_data, interrupt, sync, FailValue};
use crate::adapter::context::raise;
use crate::adapter::kernel::{self, SimKernel, WindowKind};
use crate::base::bugcheck::BugCheck;

/// The Linux build's driver: its pointers are this process's, dereferenced as 24H2 does.
pub(crate) enum Direct {}

// SAFETY (every method): a `DriverPtr` is the pointer the driver passed the call, made by an
// entry point here only; the in-process driver's is valid for its type (the DDI's contract),
// and not otherwise referenced during the call.
impl DriverMemory for Direct {
    fn read<T: Copy>(p: DriverPtr<'_, T>, _entry: usize) -> Result<T, BugCheck> {
        // SAFETY: see the impl.
        Ok(unsafe { p.get().as_ptr().read() })
    }

    fn write<T: Copy>(p: DriverPtr<'_, T>, v: T, _entry: usize) -> Result<(), BugCheck> {
        // SAFETY: see the impl.
        unsafe { p.get().as_ptr().write(v) };
        Ok(())
    }

    fn read_array<'call, T: Copy>(
        a: DriverArray<'call, T>,
        _entry: usize,
    ) -> Result<Cow<'call, [T]>, BugCheck> {
        let (at, n) = a.get();
        // SAFETY: see the impl; the driver declared at least `n` of them, alive for the call,
        // which the slice's lifetime is.
        Ok(Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(at.as_ptr(), n)
        }))
    }

    fn update<T: Copy, R>(
        p: DriverPtr<'_, T>,
        _entry: usize,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, BugCheck> {
        // SAFETY: see the impl.
        Ok(f(unsafe { &mut *p.get().as_ptr() }))
    }
}

/// The address of entry point `f`, the callback named in its bug checks.
macro_rules! entry {
    ($f:expr) => {
        $f as *const () as usize
    };
}

// ---------------------------------------------------------------------------------------------
// DXGKRNL_INTERFACE callbacks.

/// `DxgkCbGetDeviceInformation`.
pub(super) unsafe extern "system" fn get_device_information<M: DriverMemory>(
    handle: HANDLE,
    info: PDXGK_DEVICE_INFO,
) -> NTSTATUS {
    let entry = entry!(get_device_information::<M>);
    let call = Call::new(entry);
    device::get_device_information(handle, Out::<_, M>::new(&call, info), entry)
}

/// `DxgkCbMapMemory`.
pub(super) unsafe extern "system" fn map_memory<M: DriverMemory>(
    handle: HANDLE,
    translated: PHYSICAL_ADDRESS,
    length: ULONG,
    in_io_space: BOOLEAN,
    map_to_user_mode: BOOLEAN,
    _cache: MEMORY_CACHING_TYPE,
    virtual_address: *mut PVOID,
) -> NTSTATUS {
    let entry = entry!(map_memory::<M>);
    let call = Call::new(entry);
    device::map_memory(
        handle,
        translated,
        length,
        in_io_space,
        map_to_user_mode,
        Out::<_, M>::new(&call, virtual_address),
        entry,
    )
}

/// `DxgkCbUnmapMemory`: the address is a value to look up, never dereferenced.
pub(super) unsafe extern "system" fn unmap_memory(handle: HANDLE, va: PVOID) -> NTSTATUS {
    device::unmap_memory(handle, va as usize, entry!(unmap_memory))
}

/// `DxgkCbQueueDpc`.
pub(super) unsafe extern "system" fn queue_dpc(handle: HANDLE) -> BOOLEAN {
    interrupt::queue_dpc(handle, entry!(queue_dpc))
}

/// `DxgkCbNotifyDpc`.
pub(super) unsafe extern "system" fn notify_dpc(handle: HANDLE) {
    interrupt::notify_dpc(handle, entry!(notify_dpc))
}

/// `DxgkCbNotifyInterrupt`: the report is copied once, at the call, as 24H2 copies it at ISR
/// time.
pub(super) unsafe extern "system" fn notify_interrupt<M: DriverMemory>(
    handle: HANDLE,
    data: *const DXGKARGCB_NOTIFY_INTERRUPT_DATA,
) {
    let entry = entry!(notify_interrupt::<M>);
    let call = Call::new(entry);
    if let Ok(report) = Report::<M>::copy(&call, data) {
        interrupt::notify_interrupt(handle, report, entry)
    }
}

/// `DxgkCbLogEtwEvent`: nothing the driver passes is read (no session listens).
pub(super) unsafe extern "system" fn log_etw_event(
    _guid: *const GUID,
    _type: UCHAR,
    _size: USHORT,
    _buffer: PVOID,
) {
    interrupt::log_etw_event(entry!(log_etw_event))
}

/// `DxgkCbSynchronizeExecution`: the routine and its context become a [`SyncRoutine`].
pub(super) unsafe extern "system" fn synchronize_execution<M: DriverMemory>(
    handle: HANDLE,
    routine: PKSYNCHRONIZE_ROUTINE,
    context: PVOID,
    message_number: ULONG,
    return_value: *mut BOOLEAN,
) -> NTSTATUS {
    let entry = entry!(synchronize_execution::<M>);
    let call = Call::new(entry);
    let routine = routine.map(|f| SyncRoutine { f, context });
    sync::synchronize_execution(
        handle,
        routine,
        message_number,
        Out::<_, M>::new(&call, return_value),
        entry,
    )
}

/// `DxgkCbQueryServices`: the interface buffer is read through its header only.
pub(super) unsafe extern "system" fn query_services<M: DriverMemory>(
    handle: HANDLE,
    services: DXGK_SERVICES,
    interface: PINTERFACE,
) -> NTSTATUS {
    let entry = entry!(query_services::<M>);
    let call = Call::new(entry);
    feature::query_services(
        handle,
        services,
        DriverPtr::new(&call, interface).map(|place| InterfaceBuffer::<M> {
            place,
            entry,
            _memory: PhantomData,
        }),
        entry,
    )
}

/// `InterfaceReference` of the feature interface.
pub(super) unsafe extern "system" fn interface_reference(context: PVOID) {
    feature::interface_reference(context, entry!(interface_reference))
}

/// `InterfaceDereference` of the feature interface.
pub(super) unsafe extern "system" fn interface_dereference(context: PVOID) {
    feature::interface_dereference(context, entry!(interface_dereference))
}

/// `DXGK_FEATURE_INTERFACE::IsFeatureEnabled`.
pub(super) unsafe extern "system" fn is_feature_enabled<M: DriverMemory>(
    handle: HANDLE,
    args: *mut DXGKARGCB_ISFEATUREENABLED2,
) -> NTSTATUS {
    let entry = entry!(is_feature_enabled::<M>);
    let call = Call::new(entry);
    with_block::<M, _, _>(&call, args, STATUS_UNSUCCESSFUL, |args| {
        feature::is_feature_enabled(handle, args, entry)
    })
}

/// `DXGK_FEATURE_INTERFACE::QueryFeatureInterface`: the handler decides, then the interface is
/// written to the driver's buffer, whose size this entry takes before the handler sees the
/// block.
pub(super) unsafe extern "system" fn query_feature_interface<M: DriverMemory>(
    handle: HANDLE,
    args: *mut DXGKARGCB_QUERYFEATUREINTERFACE,
) -> NTSTATUS {
    let entry = entry!(query_feature_interface::<M>);
    let call = Call::new(entry);
    let answer = with_block::<M, _, _>(&call, args, Err(STATUS_UNSUCCESSFUL), |args| {
        let target = args
            .as_ref()
            .map(|a| (a.Interface, usize::from(a.InterfaceSize)));
        feature::query_feature_interface(handle, args, entry).map(|()| target)
    });
    let target = match answer {
        Err(status) => return status,
        Ok(target) => target,
    };
    let interface = DXGKCBINT_FEATURE_NATIVEFENCE_1 {
        GetOSCaps: Some(native_fence_get_os_caps::<M>),
    };
    let size = std::mem::size_of::<DXGKCBINT_FEATURE_NATIVEFENCE_1>();
    let Some(buffer) = target
        .filter(|&(_, room)| room >= size)
        .and_then(|(buffer, _)| {
            DriverPtr::new(&call, buffer.cast::<DXGKCBINT_FEATURE_NATIVEFENCE_1>())
        })
    else {
        return STATUS_INVALID_PARAMETER;
    };
    // The driver's buffer of `room` bytes (its `InterfaceSize` at the call), large enough.
    match M::write(buffer, interface, entry) {
        Ok(()) => STATUS_SUCCESS,
        Err(b) => {
            raise(b);
            STATUS_UNSUCCESSFUL
        }
    }
}

/// `DXGKCBINT_FEATURE_NATIVEFENCE_1::GetOSCaps`.
pub(super) unsafe extern "system" fn native_fence_get_os_caps<M: DriverMemory>(
    args: *mut DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1,
) -> NTSTATUS {
    let entry = entry!(native_fence_get_os_caps::<M>);
    let call = Call::new(entry);
    feature::native_fence_get_os_caps(Out::<_, M>::new(&call, args), entry)
}

/// `DxgkCbQueryFeatureSupport`.
pub(super) unsafe extern "system" fn query_feature_support<M: DriverMemory>(
    args: *mut DXGKARGCB_QUERYFEATURESUPPORT,
) -> NTSTATUS {
    let entry = entry!(query_feature_support::<M>);
    let call = Call::new(entry);
    with_block::<M, _, _>(&call, args, STATUS_UNSUCCESSFUL, |args| {
        feature::query_feature_support(args, entry)
    })
}

/// `DxgkCbGetHandleData`: the answer is the driver's own value, handed back as a pointer.
pub(super) unsafe extern "system" fn get_handle_data<M: DriverMemory>(
    args: *const DXGKARGCB_GETHANDLEDATA,
) -> *mut c_void {
    let entry = entry!(get_handle_data::<M>);
    let call = Call::new(entry);
    let Ok(args) = copy::<M, _>(&call, args) else {
        return std::ptr::null_mut();
    };
    std::ptr::without_provenance_mut(handle_data::get_handle_data(args, entry))
}

/// `DxgkCbDisconnectDoorbell`.
pub(super) unsafe extern "system" fn disconnect_doorbell<M: DriverMemory>(
    args: *mut DXGKARGCB_DISCONNECTDOORBELL,
) -> NTSTATUS {
    let entry = entry!(disconnect_doorbell::<M>);
    let call = Call::new(entry);
    match copy::<M, _>(&call, args) {
        Ok(args) => super::disconnect_doorbell(args, entry),
        Err(()) => STATUS_UNSUCCESSFUL,
    }
}

/// `DxgkCbSetPowerComponentActive`.
pub(super) unsafe extern "system" fn set_power_component_active(handle: HANDLE, component: u32) {
    super::set_power_component_active(handle, component)
}

/// `DxgkCbSetPowerComponentIdle`.
pub(super) unsafe extern "system" fn set_power_component_idle(handle: HANDLE, component: u32) {
    super::set_power_component_idle(handle, component)
}

/// `DxgkCbInvalidateHwContext`: the handler names the block VidSch's callback gets (the
/// driver's, or the OS's rewrite of it) or answers itself.
pub(super) unsafe extern "system" fn invalidate_hw_context<M: DriverMemory>(
    args: *const DXGKARGCB_INVALIDATEHWCONTEXT,
) -> NTSTATUS {
    let entry = entry!(invalidate_hw_context::<M>);
    let call = Call::new(entry);
    let Ok(args) = copy::<M, _>(&call, args) else {
        return STATUS_UNSUCCESSFUL;
    };
    match super::invalidate_hw_context(args, entry) {
        Ok(status) => status,
        Err(forward) => crate::vidsch::tdr::cb_invalidate_hw_context(forward.as_ref(), entry),
    }
}

/// `DxgkCbAllocateContiguousMemory` (VidMm's).
pub(super) unsafe extern "system" fn allocate_contiguous_memory<M: DriverMemory>(
    handle: HANDLE,
    args: *mut DXGKARGCB_ALLOCATECONTIGUOUSMEMORY,
) -> NTSTATUS {
    let entry = entry!(allocate_contiguous_memory::<M>);
    let call = Call::new(entry);
    with_block::<M, _, _>(&call, args, STATUS_UNSUCCESSFUL, |args| {
        crate::vidmm::contiguous::allocate_contiguous_memory(handle, args, entry)
    })
}

/// `DxgkCbFreeContiguousMemory` (VidMm's).
pub(super) unsafe extern "system" fn free_contiguous_memory<M: DriverMemory>(
    handle: HANDLE,
    args: *const DXGKARGCB_FREECONTIGUOUSMEMORY,
) -> NTSTATUS {
    let entry = entry!(free_contiguous_memory::<M>);
    let call = Call::new(entry);
    let Ok(args) = copy::<M, _>(&call, args) else {
        return STATUS_UNSUCCESSFUL;
    };
    crate::vidmm::contiguous::free_contiguous_memory(handle, args.as_ref(), entry)
}

// ---------------------------------------------------------------------------------------------
// What the handlers get instead of raw pointers.

/// The driver's `KSYNCHRONIZE_ROUTINE` with the context it passed for it.
#[derive(Clone, Copy)]
pub(crate) struct SyncRoutine {
    f: unsafe extern "system" fn(PVOID) -> BOOLEAN,
    context: PVOID,
}

impl SyncView for SyncRoutine {
    fn run(&self) -> BOOLEAN {
        // SAFETY: the driver's routine with its own context, run as KeSynchronizeExecution runs
        // it; 24H2 checks neither beyond the routine being non-null.
        unsafe { (self.f)(self.context) }
    }

    fn address(&self) -> u64 {
        self.f as usize as u64
    }

    fn context(&self) -> u64 {
        self.context as usize as u64
    }
}

/// The `INTERFACE` buffer of a `DxgkCbQueryServices` call.
pub(crate) struct InterfaceBuffer<'call, M> {
    place: DriverPtr<'call, INTERFACE>,
    entry: usize,
    _memory: PhantomData<M>,
}

impl<M: DriverMemory> InterfaceView for InterfaceBuffer<'_, M> {
    fn header(&self) -> Result<INTERFACE, BugCheck> {
        M::read(self.place, self.entry)
    }

    fn write_feature(self, context: HANDLE) -> Result<bool, BugCheck> {
        let header = self.header()?;
        if usize::from(header.Size) != std::mem::size_of::<DXGK_FEATURE_INTERFACE>() {
            return Ok(false);
        }
        let value = DXGK_FEATURE_INTERFACE {
            Size: header.Size,
            Version: header.Version,
            Context: context,
            InterfaceReference: Some(interface_reference),
            InterfaceDereference: Some(interface_dereference),
            IsFeatureEnabled: Some(is_feature_enabled::<M>),
            QueryFeatureInterface: Some(query_feature_interface::<M>),
        };
        // The driver declared (Size) a buffer exactly this large.
        M::write(self.place.cast(), value, self.entry).map(|()| true)
    }
}

// ---------------------------------------------------------------------------------------------
// Stubs for callbacks the simulation does not implement.

/// Builds a "not simulated" stub of a callback slot's exact type.
pub trait NotSimulated: Sized {
    /// The stub for slot number `ID` of `DXGKRNL_INTERFACE::SLOT_NAMES`.
    fn stub<const ID: usize>() -> Self;
}

macro_rules! stub_arity {
    ($f:ident; $($a:ident),*) => {
        #[allow(non_snake_case, clippy::too_many_arguments)]
        unsafe extern "system" fn $f<const ID: usize, $($a,)* R: FailValue>($(_: $a),*) -> R {
            super::not_simulated(ID);
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

// ---------------------------------------------------------------------------------------------
// Routines the driver hands the OS to run later.

/// The timer routine and context the driver armed a kernel timer with
/// ([`crate::adapter::ktimer`] runs it at DISPATCH_LEVEL each period).
fn timer_run(
    routine: rvgpu_kmd::platform::TimerRoutine,
    context: *const c_void,
) -> crate::adapter::ktimer::TimerRun {
    let context = context as usize;
    crate::adapter::ktimer::TimerRun {
        address: routine as usize as u64,
        context: context as u64,
        // SAFETY: `Platform::timer_arm`'s contract: the routine and its context stay valid
        // until the timer's cancel returns, which waits for a run in progress.
        run: std::sync::Arc::new(move || unsafe { routine(context as *const c_void) }),
    }
}

/// The Linux build's ETW enable callback with the context it registered.
fn etw_callback(
    callback: rvgpu_kmd::etw::EnableCallback,
    context: *mut c_void,
) -> crate::base::etw::session::Callback {
    let context = context as usize;
    crate::base::etw::session::Callback::Host(std::sync::Arc::new(
        move |source, code, level, any, all| {
            // SAFETY: the driver's callback with the context it registered, valid until it
            // unregisters; the filter pointer is null, so it reads nothing through it.
            unsafe {
                callback(
                    source,
                    code,
                    level,
                    any,
                    all,
                    std::ptr::null(),
                    context as *mut c_void,
                )
            }
        },
    ))
}

// ---------------------------------------------------------------------------------------------
// The platform the KMD's Linux build runs on.

// SAFETY: every MMIO accessor performs exactly one device access per call (one `MmioBus` call,
// which the device model handles synchronously, or one volatile access), in program order on
// the calling thread; the registry lookup takes a read lock (acquire), and the device model's
// own accesses are SeqCst/locked, so accesses are not reordered across the trap.
unsafe impl Platform for SimKernel {
    // Out of line: each accessor is the device's cost (one trap), and the driver/device split
    // of the instruction counts (scripts/callgrind-split.py) matches it by name, so it must
    // not depend on what the inliner does with the driver's callers.
    #[inline(never)]
    unsafe fn mmio_read32(base: NonNull<u8>, offset: usize) -> u32 {
        match kernel::resolve(base, offset, 4, false) {
            Some(WindowKind::Trap(w)) => kernel::trap(w).map_or(u32::MAX, |b| b.read32(offset)),
            // SAFETY: `resolve` checked that [base+offset, +4) lies in a live registered
            // memory window, aligned.
            Some(WindowKind::Memory) => unsafe {
                base.as_ptr().add(offset).cast::<u32>().read_volatile()
            },
            None => u32::MAX,
        }
    }

    #[inline(never)]
    unsafe fn mmio_write32(base: NonNull<u8>, offset: usize, value: u32) {
        match kernel::resolve(base, offset, 4, true) {
            Some(WindowKind::Trap(w)) => {
                if let Some(b) = kernel::trap(w) {
                    b.write32(offset, value);
                }
            }
            // SAFETY: as in `mmio_read32`.
            Some(WindowKind::Memory) => unsafe {
                base.as_ptr()
                    .add(offset)
                    .cast::<u32>()
                    .write_volatile(value)
            },
            None => {}
        }
    }

    #[inline(never)]
    unsafe fn mmio_read64(base: NonNull<u8>, offset: usize) -> u64 {
        match kernel::resolve(base, offset, 8, false) {
            Some(WindowKind::Trap(w)) => kernel::trap(w).map_or(u64::MAX, |b| b.read64(offset)),
            // SAFETY: as in `mmio_read32`, 8 bytes.
            Some(WindowKind::Memory) => unsafe {
                base.as_ptr().add(offset).cast::<u64>().read_volatile()
            },
            None => u64::MAX,
        }
    }

    #[inline(never)]
    unsafe fn mmio_write64(base: NonNull<u8>, offset: usize, value: u64) {
        match kernel::resolve(base, offset, 8, true) {
            Some(WindowKind::Trap(w)) => {
                if let Some(b) = kernel::trap(w) {
                    b.write64(offset, value);
                }
            }
            // SAFETY: as in `mmio_read32`, 8 bytes.
            Some(WindowKind::Memory) => unsafe {
                base.as_ptr()
                    .add(offset)
                    .cast::<u64>()
                    .write_volatile(value)
            },
            None => {}
        }
    }

    fn current_irql() -> Irql {
        kernel::current_irql()
    }

    /// KTIMER + KDPC ([`crate::adapter::ktimer`]).
    type Timer = crate::adapter::ktimer::SimTimer;

    unsafe fn timer_arm(
        timer: &Self::Timer,
        period_ms: u32,
        routine: rvgpu_kmd::platform::TimerRoutine,
        context: *const c_void,
    ) -> bool {
        crate::adapter::ktimer::arm(timer, period_ms, timer_run(routine, context))
    }

    fn timer_cancel(timer: &Self::Timer) {
        crate::adapter::ktimer::cancel(timer);
    }

    fn raise_to_dispatch() -> Irql {
        kernel::raise_to_dispatch()
    }

    fn lower_irql(previous: Irql) {
        kernel::lower_irql(previous)
    }

    fn bus_address(va: NonNull<u8>) -> Option<rvgpu_hw::addr::BusAddr> {
        kernel::dma_bus_address(va.as_ptr() as usize).map(rvgpu_hw::addr::BusAddr::new)
    }

    /// ETW of the Linux build: one registration serving every machine of the process
    /// ([`crate::etw`]).
    fn etw_register(
        provider: &'static rvgpu_kmd::etw::Guid,
        callback: rvgpu_kmd::etw::EnableCallback,
        context: *mut c_void,
    ) -> Result<u64, i32> {
        Ok(crate::base::etw::session::register(
            *provider,
            Some(etw_callback(callback, context)),
        ))
    }

    fn etw_unregister(handle: u64) {
        crate::base::etw::session::unregister(handle);
    }

    /// The event goes to the writing thread's machine's session.
    fn etw_write(
        handle: u64,
        descriptor: &rvgpu_kmd::etw::EventDescriptor,
        data: &[rvgpu_kmd::etw::EventDataDescriptor],
    ) {
        let parts: Vec<(u8, &[u8])> = data
            .iter()
            .map(|d| {
                // SAFETY: the driver's descriptors point to its statics and its stack, alive
                // for the call (Platform::etw_write's contract), `size` bytes each.
                let bytes =
                    unsafe { std::slice::from_raw_parts(d.ptr as *const u8, d.size as usize) };
                (d.kind, bytes)
            })
            .collect();
        kernel::etw_write(handle, descriptor, &parts);
    }

    fn query_performance_counter() -> (u64, u64) {
        kernel::query_performance_counter()
    }

    fn software_key_dword(pdo: *mut c_void, name: &str) -> Option<u32> {
        kernel::software_key_dword(pdo as usize, name)
    }

    fn pool_allocation_permitted() -> bool {
        kernel::pool_allocation_permitted()
    }

    fn log(level: rvgpu_kmd::platform::Level, args: std::fmt::Arguments<'_>) {
        kernel::log(level, args)
    }
}

/// The driver's `DriverEntry` (the Linux build) with the OS's stand-in driver object and its
/// registry path; the driver hands the table to [`sim_dxgk_initialize`].
pub(crate) fn driver_entry<P: rvgpu_kmd::platform::Platform>(
    driver_object: &[u64; 4],
    registry_path: &crate::adapter::ddi::RegistryPath,
) -> NTSTATUS {
    let object = crate::adapter::resources::opaque(driver_object);
    let path = (&registry_path.0 as *const rvgpu_ddi::basic::UNICODE_STRING).cast();
    // SAFETY: both pointers are non-null and borrowed for the call (the driver only passes
    // them on), and sim_dxgk_initialize accepts any table pointer.
    unsafe { rvgpu::driver_entry::<P>(object, path, sim_dxgk_initialize) }
}

/// The simulated `DxgkInitialize` (the [`rvgpu::DxgkInitializeFn`] the machine passes to
/// `rvgpu::driver_entry`): DriverEntry's call back with its table, which the loader copies
/// here ([`crate::adapter::load::dxgk_initialize`] checks it).
///
/// # Safety
/// `init_data` must be null or point to a valid `DRIVER_INITIALIZATION_DATA`.
pub unsafe extern "system" fn sim_dxgk_initialize(
    driver_object: *mut std::ffi::c_void,
    registry_path: *const std::ffi::c_void,
    init_data: *const rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) -> NTSTATUS {
    // SAFETY: null or a valid table (the caller's contract); copied, as Dxgkrnl copies the
    // table from DriverEntry's stack.
    let table = unsafe { init_data.as_ref() }.copied();
    crate::adapter::load::dxgk_initialize(!driver_object.is_null(), !registry_path.is_null(), table)
}

// ---------------------------------------------------------------------------------------------
// The stand-ins tests put in the driver's DDI slots ([`crate::testing`]): driver code as far
// as the OS can tell, so their entries and their calls into the OS cross this FFI as the
// driver's do. The stand-ins themselves are safe code on the references made here.

/// The generic slot entries of the stand-ins and the callback table a stand-in calls.
pub mod stand_in {
    use rvgpu_ddi::basic::*;
    use rvgpu_ddi::dxgkrnl::*;
    use rvgpu_ddi::interrupt::{
        DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED,
    };
    use rvgpu_ddi::ntstatus::*;

    use crate::base::lock::lock;

    /// A `DxgkDdiInterruptRoutine`.
    pub type IsrFn = unsafe extern "system" fn(PVOID, ULONG) -> BOOLEAN;

    /// The `MiniportDeviceContext` the OS passed a stand-in ISR (made only by [`isr`]).
    pub struct DeviceContext(PVOID);

    impl DeviceContext {
        /// The context's value (to find the adapter by).
        pub fn raw(&self) -> PVOID {
            self.0
        }

        /// Runs the driver's own ISR with it ([`driver_isr`]).
        pub fn driver_isr(&self, message_number: ULONG) -> BOOLEAN {
            // SAFETY: the context and message number the OS passed the stand-in ISR.
            unsafe { driver_isr(self.0, message_number) }
        }
    }

    /// A stand-in `DxgkDdiInterruptRoutine`, as safe code; [`isr`] is what goes in the slot.
    pub trait IsrStandIn: 'static {
        /// The ISR's work.
        fn run(ctx: &DeviceContext, message_number: ULONG) -> BOOLEAN;
    }

    /// The slot entry of stand-in ISR `S`.
    ///
    /// # Safety
    /// Called by the OS as `DxgkDdiInterruptRoutine`, with its own arguments.
    pub unsafe extern "system" fn isr<S: IsrStandIn>(ctx: PVOID, message_number: ULONG) -> BOOLEAN {
        S::run(&DeviceContext(ctx), message_number)
    }

    /// Stand-in traits and their slot entries, one per DDI prototype shape: the entry takes
    /// the OS's raw arguments, makes the block pointer a reference (a NULL block is
    /// `STATUS_INVALID_PARAMETER`; the OS never passes one) and runs the stand-in.
    macro_rules! shape {
        ($(#[$m:meta])* $tr:ident, $entry:ident, ($($a:ident: $t:ty),*), $p:ident: $ptr:ty, $as:ident, $r:ty) => {
            $(#[$m])*
            pub trait $tr: 'static {
                /// The argument block.
                type Block;
                /// The DDI's work on the OS's arguments.
                fn run($($a: $t,)* $p: $r) -> NTSTATUS;
            }

            #[doc = concat!("The slot entry of a [`", stringify!($tr), "`].")]
            ///
            /// # Safety
            /// Called by the OS as the DDI, with its own arguments: the block pointer is null
            /// or the OS's block for the call, not otherwise referenced during it.
            pub unsafe extern "system" fn $entry<S: $tr>($($a: $t,)* $p: $ptr) -> NTSTATUS {
                // SAFETY: the function's contract.
                match unsafe { $p.$as() } {
                    Some(args) => S::run($($a,)* args),
                    None => STATUS_INVALID_PARAMETER,
                }
            }
        };
    }

    shape!(
        /// A stand-in for a `(HANDLE, *mut Block) -> NTSTATUS` DDI.
        HandleMutStandIn, handle_mut, (handle: HANDLE), args: *mut S::Block, as_mut, &mut Self::Block
    );
    shape!(
        /// A stand-in for a `(HANDLE, *const Block) -> NTSTATUS` DDI.
        HandleRefStandIn, handle_ref, (handle: HANDLE), args: *const S::Block, as_ref, &Self::Block
    );
    shape!(
        /// A stand-in for a `(*const Block) -> NTSTATUS` DDI.
        RefStandIn, block_ref, (), args: *const S::Block, as_ref, &Self::Block
    );
    shape!(
        /// A stand-in for a `(HANDLE, UINT, *mut Block) -> NTSTATUS` DDI.
        HandleIndexMutStandIn, handle_index_mut, (handle: HANDLE, index: UINT),
        args: *mut S::Block, as_mut, &mut Self::Block
    );

    /// Runs the driver's own ISR, as recorded before a test's stand-in replaced it in its slot.
    /// A stand-in ISR calls it first so the device is still serviced: the GPU interrupts from
    /// adapter start on (VidMm pages the paging process's tables in through the GPU), long before
    /// the step a test is about. Returns whether the driver claimed it.
    ///
    /// # Safety
    /// Called from a `DxgkDdiInterruptRoutine` stand-in with the arguments the OS passed it.
    pub unsafe fn driver_isr(ctx: PVOID, message_number: ULONG) -> BOOLEAN {
        match crate::adapter::load::DRIVER_ISR.get() {
            // SAFETY: the driver's ISR with the OS's own arguments, at the IRQL the OS called us.
            Some(f) => unsafe { f(ctx, message_number) },
            None => 0,
        }
    }

    /// Runs the driver's own DPC routine, recorded as for [`driver_isr`].
    ///
    /// # Safety
    /// Called from a `DxgkDdiDpcRoutine` stand-in with the argument the OS passed it.
    pub unsafe fn driver_dpc(ctx: PVOID) {
        if let Some(f) = crate::adapter::load::DRIVER_DPC.get() {
            // SAFETY: the driver's DPC with the OS's own argument, at DISPATCH_LEVEL.
            unsafe { f(ctx) }
        }
    }

    /// The callback table the OS gave an adapter, as a driver stand-in calls it: only the
    /// simulation's own tables are made into one, and each call passes the table's own
    /// handle and blocks alive for the call.
    pub struct Callbacks(DXGKRNL_INTERFACE);

    impl Callbacks {
        /// The table of the adapter whose `MiniportDeviceContext` is `ctx`.
        pub fn for_context(ctx: PVOID) -> Option<Self> {
            crate::adapter::AdapterShared::from_context(ctx)
                .and_then(|a| lock(&a.interface).map(|t| Callbacks(t.0)))
        }

        /// `DxgkCbNotifyInterrupt` with `data`. A native-fence report goes with the handles it
        /// lists (`fences`, its array and count); other reports name no memory and `fences` is
        /// not looked at.
        pub fn notify_interrupt(
            &self,
            data: &DXGKARGCB_NOTIFY_INTERRUPT_DATA,
            fences: &mut [HANDLE],
        ) {
            let Some(notify) = self.0.DxgkCbNotifyInterrupt else {
                return;
            };
            let mut data = *data;
            if data.InterruptType == DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED {
                let mut d = data.Anonymous.native_fence_signaled();
                d.SignaledNativeFenceCount = u32::try_from(fences.len()).unwrap_or(u32::MAX);
                d.pSignaledNativeFenceArray = if fences.is_empty() {
                    std::ptr::null_mut()
                } else {
                    fences.as_mut_ptr()
                };
                data.Anonymous.NativeFenceSignaled = d;
            }
            // SAFETY: the table's own callback and handle; the report's only pointer is
            // `fences`, alive for the call.
            unsafe { notify(self.0.DeviceHandle, &data) }
        }

        /// `DxgkCbQueueDpc`.
        pub fn queue_dpc(&self) -> BOOLEAN {
            // SAFETY: the table's own callback and handle.
            self.0
                .DxgkCbQueueDpc
                .map_or(0, |f| unsafe { f(self.0.DeviceHandle) })
        }

        /// `DxgkCbGetDeviceInformation` into a fresh structure.
        pub fn get_device_information(&self) -> NTSTATUS {
            let mut info = rvgpu_ddi::adapter::DXGK_DEVICE_INFO::default();
            // SAFETY: the table's own callback and handle, a valid out-structure.
            self.0
                .DxgkCbGetDeviceInformation
                .map_or(STATUS_NOT_IMPLEMENTED, |f| unsafe {
                    f(self.0.DeviceHandle, &mut info)
                })
        }

        /// `DxgkCbSynchronizeExecution` running `routine` under the interrupt lock; the status
        /// and the routine's answer.
        pub fn synchronize(&self, routine: &mut dyn FnMut() -> BOOLEAN) -> (NTSTATUS, BOOLEAN) {
            unsafe extern "system" fn trampoline(ctx: PVOID) -> BOOLEAN {
                // SAFETY: `ctx` is the `&mut dyn FnMut` below, alive for the synchronous call.
                let f = unsafe { &mut *ctx.cast::<&mut dyn FnMut() -> BOOLEAN>() };
                f()
            }
            let Some(sync) = self.0.DxgkCbSynchronizeExecution else {
                return (STATUS_NOT_IMPLEMENTED, 0);
            };
            let mut routine = routine;
            let mut ret: BOOLEAN = 0;
            // SAFETY: the table's own callback and handle; the routine's context is
            // `routine`, alive for the synchronous call.
            let status = unsafe {
                sync(
                    self.0.DeviceHandle,
                    Some(trampoline),
                    std::ptr::from_mut(&mut routine).cast(),
                    0,
                    &mut ret,
                )
            };
            (status, ret)
        }
    }

    /// Calls `DxgkCbAllocateContiguousMemory` as a driver would; returns (status, handle,
    /// memory).
    ///
    /// # Safety
    /// `iface` must be a table the simulation handed out.
    pub unsafe fn allocate_contiguous(
        iface: &DXGKRNL_INTERFACE,
        bytes: usize,
    ) -> (NTSTATUS, HANDLE, PVOID) {
        let null = std::ptr::null_mut();
        let Some(f) = iface.DxgkCbAllocateContiguousMemory else {
            return (STATUS_NOT_IMPLEMENTED, null, null);
        };
        let mut args = DXGKARGCB_ALLOCATECONTIGUOUSMEMORY {
            NumberOfBytes: bytes,
            LowestAcceptableAddress: LARGE_INTEGER::from_i64(0),
            HighestAcceptableAddress: LARGE_INTEGER::from_i64(-1),
            BoundaryAddressMultiple: LARGE_INTEGER::from_i64(0),
            CacheType: MmCached,
            hMemoryHandle: null,
            pMemory: null,
        };
        // SAFETY: the caller's table: the OS's callback with its handle; a valid block.
        let s = unsafe { f(iface.DeviceHandle, &mut args) };
        (s, args.hMemoryHandle, args.pMemory)
    }

    /// Calls `DxgkCbFreeContiguousMemory` as a driver would (`memory` is not passed: the
    /// callback takes the handle only).
    ///
    /// # Safety
    /// `iface` must be a table the simulation handed out.
    pub unsafe fn free_contiguous(
        iface: &DXGKRNL_INTERFACE,
        handle: HANDLE,
        _memory: PVOID,
    ) -> NTSTATUS {
        let Some(f) = iface.DxgkCbFreeContiguousMemory else {
            return STATUS_NOT_IMPLEMENTED;
        };
        let args = DXGKARGCB_FREECONTIGUOUSMEMORY {
            hMemoryHandle: handle,
        };
        // SAFETY: the caller's table: the OS's callback with its handle; a valid block.
        unsafe { f(iface.DeviceHandle, &args) }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use rvgpu_hw::mmio::MmioBus;
    use rvgpu_kmd::platform::Platform;

    use crate::adapter::kernel::{self, SimKernel};
    use crate::adapter::state::MachineState;

    struct Regs(AtomicU32);
    impl MmioBus for Regs {
        fn read32(&self, _offset: usize) -> u32 {
            self.0.load(Ordering::SeqCst)
        }
        fn write32(&self, _offset: usize, value: u32) {
            self.0.store(value, Ordering::SeqCst);
        }
        fn read64(&self, _offset: usize) -> u64 {
            0
        }
        fn write64(&self, _offset: usize, _value: u64) {}
    }

    #[test]
    fn trap_window_reaches_the_bus_and_unmapped_access_bugchecks() {
        let state = Arc::new(MachineState::new());
        let _ctx = crate::adapter::context::MachineContext::enter(state.clone());
        let bus: Arc<dyn MmioBus + Send + Sync> = Arc::new(Regs(AtomicU32::new(0)));
        let base = kernel::map_trap_window(&bus, 0x100);
        // SAFETY: `base` is a live trap window of 0x100 bytes.
        unsafe {
            SimKernel::mmio_write32(base, 0x10, 77);
            assert_eq!(SimKernel::mmio_read32(base, 0x10), 77);
        }
        assert!(state.fault().is_none());
        assert!(kernel::unmap_window(base.as_ptr() as usize));
        // SAFETY: the simulation catches the stale pointer before any dereference.
        let v = unsafe { SimKernel::mmio_read32(base, 0x10) };
        assert_eq!(v, u32::MAX);
        assert_eq!(
            state.bugcheck().map(|b| b.code),
            Some(crate::base::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA)
        );
    }
}
