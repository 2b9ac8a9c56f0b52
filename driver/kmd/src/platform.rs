//! The kernel platform: everything the driver needs from the kernel that is not a Dxgkrnl
//! callback.
//!
//! Dxgkrnl callbacks (`DXGKRNL_INTERFACE`) are function pointers handed to the driver, so they
//! are the same on Windows and under the simulated OS. What differs is the kernel itself:
//! MMIO access, IRQL, logging. The driver logic is generic over [`Platform`]; the driver image
//! implements it over ntoskrnl/hal for Windows, the simulated OS implements it on the host.
//! Monomorphising (rather than a `dyn` table) keeps the ISR free of indirect calls.

use core::ffi::c_void;
use core::fmt;
use core::ptr::NonNull;

/// What a kernel timer runs at DISPATCH_LEVEL each time it fires, with the context it was
/// armed with ([`Platform::timer_arm`]).
pub type TimerRoutine = unsafe fn(context: *const c_void);

/// Interrupt request levels the driver distinguishes (values as in wdm.h on x64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Irql {
    Passive = 0,
    Apc = 1,
    Dispatch = 2,
    /// Any device IRQL (DIRQL): the ISR and `DxgkCbSynchronizeExecution` callbacks.
    Device = 3,
}

/// Severity of a debug message; maps to `DPFLTR_*_LEVEL` under `DPFLTR_IHVVIDEO_ID`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warning = 1,
    Trace = 2,
    Info = 3,
}

/// Kernel services the driver uses directly.
///
/// # Safety
/// Implementations must make the MMIO functions perform exactly one device access of the
/// given width per call, in program order with respect to other MMIO calls on the same
/// thread, with the ordering of a volatile access plus a full compiler fence (on x86 an
/// uncached MMIO access is already strongly ordered).
pub unsafe trait Platform: 'static {
    /// Reads the 32-bit register at `offset` of a BAR mapped at `base`.
    ///
    /// # Safety
    /// `base` must be a mapping returned by `DxgkCbMapMemory` for a BAR at least
    /// `offset + 4` bytes long, and `offset` must be 4-byte aligned.
    unsafe fn mmio_read32(base: NonNull<u8>, offset: usize) -> u32;
    /// Writes a 32-bit register. Same contract as [`Platform::mmio_read32`].
    ///
    /// # Safety
    /// As for [`Platform::mmio_read32`].
    unsafe fn mmio_write32(base: NonNull<u8>, offset: usize, value: u32);
    /// Reads a 64-bit register as one access (8-byte aligned `offset`).
    ///
    /// # Safety
    /// As for [`Platform::mmio_read32`], with 8 bytes.
    unsafe fn mmio_read64(base: NonNull<u8>, offset: usize) -> u64;
    /// Writes a 64-bit register as one access (8-byte aligned `offset`).
    ///
    /// # Safety
    /// As for [`Platform::mmio_read32`], with 8 bytes.
    unsafe fn mmio_write64(base: NonNull<u8>, offset: usize, value: u64);

    /// The current IRQL of the calling processor.
    fn current_irql() -> Irql;

    /// Raises the calling processor to DISPATCH_LEVEL and returns the previous IRQL
    /// (KeRaiseIrqlToDpcLevel). Called at or below DISPATCH_LEVEL.
    fn raise_to_dispatch() -> Irql;

    /// Returns to an IRQL saved by [`Platform::raise_to_dispatch`] (KeLowerIrql).
    fn lower_irql(previous: Irql);

    /// Bus address the device uses for the kernel VA `va` of memory obtained from
    /// `DxgkCbAllocateContiguousMemory` (MmGetPhysicalAddress on Windows; with an IOMMU
    /// remapping, Dxgkrnl's logical address), or `None` if `va` is not such memory.
    fn bus_address(va: NonNull<u8>) -> Option<rvgpu_hw::addr::BusAddr>;

    /// Writes a debug message (DbgPrintEx on Windows).
    fn log(level: Level, args: fmt::Arguments<'_>);

    /// The CPU performance counter and its frequency: `(count, Hz)`
    /// (`KeQueryPerformanceCounter` on Windows, the simulated OS's `qpc()` clock under it).
    /// Callable at any IRQL up to DISPATCH_LEVEL. `DxgkDdiCalibrateGpuClock` pairs it with the
    /// device's `GPU_CLOCK` (docs/logs.md#kmd, hardware.md 11).
    ///
    /// The default is "no CPU clock" (`(0, 0)`): a platform that does not provide one makes
    /// calibration fail with STATUS_NOT_SUPPORTED rather than report a made-up time.
    fn query_performance_counter() -> (u64, u64) {
        (0, 0)
    }

    /// Whether the next non-paged pool allocation of the driver may be attempted at all.
    /// Asked by `crate::kmem` once per real allocation (never for one that needs no memory),
    /// before it calls the allocator.
    ///
    /// On Windows this is always `true` (the default): the pool returning NULL is the real
    /// failure, and `kmem` handles it. A simulated kernel answers `false` to model Driver
    /// Verifier's low-resources simulation, which fails chosen pool allocations of the driver
    /// under test without failing the kernel's own (docs/robustness.md).
    fn pool_allocation_permitted() -> bool {
        true
    }

    /// The `REG_DWORD` value `name` under the software (driver) key of the device whose
    /// physical device object is `pdo` (IoOpenDeviceRegistryKey with PLUGPLAY_REGKEY_DRIVER,
    /// then ZwQueryValueKey, on Windows), or `None` if it is absent, of another type, or the
    /// platform has no registry (the default). PASSIVE_LEVEL.
    fn software_key_dword(pdo: *mut c_void, name: &str) -> Option<u32> {
        let _ = (pdo, name);
        None
    }

    /// Registers an ETW provider (`EtwRegister`, PASSIVE_LEVEL): `callback(…, context)` runs
    /// whenever a session enables or disables it, from inside this call too if one already
    /// listens. Returns the registration handle, or the failure status. The default is a
    /// kernel without ETW (`STATUS_NOT_SUPPORTED`).
    fn etw_register(
        provider: &'static crate::etw::abi::Guid,
        callback: crate::etw::abi::EnableCallback,
        context: *mut c_void,
    ) -> Result<u64, i32> {
        let _ = (provider, callback, context);
        Err(crate::status::NOT_SUPPORTED.code())
    }

    /// Ends a registration from [`Platform::etw_register`] (`EtwUnregister`, PASSIVE_LEVEL).
    fn etw_unregister(handle: u64) {
        let _ = handle;
    }

    /// Writes one event (`EtwWriteTransfer` without activity ids; any IRQL, the data in
    /// non-paged memory): `data` is the provider metadata, the event metadata, then the
    /// fields.
    fn etw_write(
        handle: u64,
        descriptor: &crate::etw::abi::EventDescriptor,
        data: &[crate::etw::abi::EventDataDescriptor],
    ) {
        let _ = (handle, descriptor, data);
    }

    /// Storage for one periodic kernel timer and the DPC it queues (a KTIMER and a KDPC on
    /// Windows). It lives inside the driver's own (non-paged) structures: created with
    /// `Default` before the structure has its final address, armed once it has.
    type Timer: Default + Send + Sync;

    /// Arms `timer`: from now on `routine(context)` runs at DISPATCH_LEVEL every `period_ms`
    /// milliseconds, the first time one period from now (KeInitializeTimerEx, KeInitializeDpc,
    /// KeSetTimerEx on Windows). Callable at or below DISPATCH_LEVEL. Returns `false` if the
    /// platform has no timers (the default): the caller then has no watchdog, and says so.
    ///
    /// # Safety
    /// `timer` must not move, and `context` must stay valid for `routine`, until
    /// [`Platform::timer_cancel`] on it has returned. `timer` must not be armed already.
    unsafe fn timer_arm(
        timer: &Self::Timer,
        period_ms: u32,
        routine: TimerRoutine,
        context: *const c_void,
    ) -> bool {
        let _ = (timer, period_ms, routine, context);
        false
    }

    /// Disarms `timer` and returns only when no run of its routine is in progress on any
    /// processor (KeCancelTimer, then KeFlushQueuedDpcs). PASSIVE_LEVEL only, and never while
    /// holding anything the routine takes. A timer never armed or already disarmed is fine.
    fn timer_cancel(timer: &Self::Timer) {
        let _ = timer;
    }
}

/// Logs through the platform with `format_args!` syntax.
#[macro_export]
macro_rules! klog {
    ($p:ty, $lvl:ident, $($arg:tt)*) => {
        <$p as $crate::platform::Platform>::log($crate::platform::Level::$lvl, format_args!($($arg)*))
    };
}
