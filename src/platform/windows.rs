//! [`Platform`] over the Windows kernel: volatile MMIO on the BAR mappings Dxgkrnl hands out,
//! the IRQL from CR8, and `DbgPrintEx` logging under `DPFLTR_IHVVIDEO_ID`.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::logbuf::LogBuffer;
use core::ptr::NonNull;

use rvgpu_kmd::platform::{Irql, Level, Platform, TimerRoutine};

use crate::ntos;

/// The Windows kernel.
#[derive(Debug)]
pub enum WinKernel {}

/// Reads CR8, the task-priority register, which on x64 *is* the current IRQL: this is what
/// the WDK's `KeGetCurrentIrql` inline function does (`__readcr8()`), since ntoskrnl exports
/// no such routine on x64.
#[inline(always)]
fn read_cr8() -> u64 {
    let value: u64;
    // SAFETY: reading CR8 is allowed at CPL 0 (where a driver runs), has no side effects and
    // touches no memory; `nomem, nostack, preserves_flags` say exactly that.
    unsafe {
        core::arch::asm!("mov {}, cr8", out(reg) value, options(nomem, nostack, preserves_flags));
    }
    value
}

/// Writes CR8 (sets the IRQL), as the WDK's x64 inline `KeLowerIrql`/`KfRaiseIrql` do.
///
/// # Safety
/// The new level must follow the kernel's rules: raise only from at or below it, lower only to
/// a level saved by a previous raise on this processor.
#[inline(always)]
unsafe fn write_cr8(value: u64) {
    // SAFETY: CPL 0; the caller upholds the IRQL rules. Not `nomem`: changing the IRQL must
    // act as a compiler barrier for memory accesses protected by it.
    unsafe { core::arch::asm!("mov cr8, {}", in(reg) value, options(nostack, preserves_flags)) };
}

const DISPATCH_LEVEL: u64 = 2;

/// The longest value name (in UTF-16 units) `software_key_dword` reads; the KMD's names are
/// far shorter, and a longer one is not read.
const VALUE_NAME_UNITS: usize = 64;

/// A periodic kernel timer and its DPC (`Platform::Timer` of [`WinKernel`]), with the
/// driver's routine the DPC calls. Lives in the driver's non-paged pool memory, which must not
/// be freed while the timer is set (bug check 0xC7).
#[derive(Debug)]
pub struct WinTimer {
    timer: UnsafeCell<ntos::KTIMER>,
    dpc: UnsafeCell<ntos::KDPC>,
    /// The driver's routine and its context.
    call: UnsafeCell<Option<(TimerRoutine, *const c_void)>>,
    /// `KeInitializeTimerEx` ran: only then may `KeCancelTimer` see it.
    initialised: AtomicBool,
}

impl Default for WinTimer {
    fn default() -> Self {
        Self {
            timer: UnsafeCell::new(ntos::KTIMER::zeroed()),
            dpc: UnsafeCell::new(ntos::KDPC::zeroed()),
            call: UnsafeCell::new(None),
            initialised: AtomicBool::new(false),
        }
    }
}

// SAFETY: the KTIMER and KDPC are the kernel's, synchronised by it; `call` is written only by `timer_arm` while the timer is not set (the `Platform::timer_arm`
// contract), and read by the DPC only while it is.
unsafe impl Send for WinTimer {}
// SAFETY: as above.
unsafe impl Sync for WinTimer {}

/// The DPC the timer queues: calls the driver's routine with its context.
unsafe extern "system" fn timer_dpc(
    _dpc: *mut ntos::KDPC,
    deferred_context: *mut c_void,
    _argument1: *mut c_void,
    _argument2: *mut c_void,
) {
    // SAFETY: `timer_arm` passed its `WinTimer`, which stays in place while the timer is set
    // and until `timer_cancel` has flushed this DPC.
    let t = unsafe { &*deferred_context.cast_const().cast::<WinTimer>() };
    // SAFETY: written before the timer was set, not written again while it is.
    let call = unsafe { *t.call.get() };
    if let Some((routine, context)) = call {
        // SAFETY: the driver's routine with the context it armed the timer with (its contract
        // keeps the context valid until the cancel returns).
        unsafe { routine(context) };
    }
}

fn irql_from_raw(raw: u64) -> Irql {
    match raw {
        0 => Irql::Passive,
        1 => Irql::Apc,
        2 => Irql::Dispatch,
        _ => Irql::Device,
    }
}

/// The current IRQL, as a raw number (0 = PASSIVE_LEVEL, 2 = DISPATCH_LEVEL, > 2 = DIRQL).
#[inline(always)]
pub(crate) fn raw_irql() -> u64 {
    read_cr8()
}

// SAFETY: each MMIO function performs exactly one volatile access of the stated width at
// `base + offset`; volatile accesses are not reordered with each other by the compiler, and
// uncached x86 MMIO is strongly ordered; the explicit compiler fences stop the compiler from
// moving ordinary memory accesses across a register access (e.g. filling a ring before the
// doorbell write), which is the "full compiler fence" the trait asks for.
unsafe impl Platform for WinKernel {
    #[inline(always)]
    unsafe fn mmio_read32(base: NonNull<u8>, offset: usize) -> u32 {
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: the caller guarantees `base` maps a BAR of at least `offset + 4` bytes
        // (trait contract), so the offset stays inside the mapping.
        let p = unsafe { base.as_ptr().add(offset) }.cast::<u32>();
        // SAFETY: in bounds (above) and 4-byte aligned `offset` (trait contract).
        let v = unsafe { p.read_volatile() };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        v
    }

    #[inline(always)]
    unsafe fn mmio_write32(base: NonNull<u8>, offset: usize, value: u32) {
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: as for `mmio_read32`.
        let p = unsafe { base.as_ptr().add(offset) }.cast::<u32>();
        // SAFETY: as for `mmio_read32`.
        unsafe { p.write_volatile(value) };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }

    #[inline(always)]
    unsafe fn mmio_read64(base: NonNull<u8>, offset: usize) -> u64 {
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: BAR of at least `offset + 8` bytes (trait contract): in bounds.
        let p = unsafe { base.as_ptr().add(offset) }.cast::<u64>();
        // SAFETY: in bounds, 8-byte aligned `offset` (trait contract); an aligned 64-bit
        // `mov` is a single access on x64.
        let v = unsafe { p.read_volatile() };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        v
    }

    #[inline(always)]
    unsafe fn mmio_write64(base: NonNull<u8>, offset: usize, value: u64) {
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: as for `mmio_read64`.
        let p = unsafe { base.as_ptr().add(offset) }.cast::<u64>();
        // SAFETY: as for `mmio_read64`.
        unsafe { p.write_volatile(value) };
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    }

    fn current_irql() -> Irql {
        irql_from_raw(read_cr8())
    }

    type Timer = WinTimer;

    unsafe fn timer_arm(
        timer: &WinTimer,
        period_ms: u32,
        routine: TimerRoutine,
        context: *const c_void,
    ) -> bool {
        let period = i32::try_from(period_ms.max(1)).unwrap_or(i32::MAX);
        // Relative due time: negative, in 100 ns units.
        let due = i64::from(period).saturating_mul(-10_000);
        // SAFETY: the timer is not set (caller's contract), so no DPC reads this now.
        unsafe { *timer.call.get() = Some((routine, context)) };
        let me = core::ptr::from_ref(timer).cast_mut().cast::<c_void>();
        // SAFETY: the storage is the caller's, in place until
        // `timer_cancel` returns (the contract); initialising an unset timer and its DPC, then
        // setting it, is the documented sequence, at IRQL <= DISPATCH_LEVEL.
        unsafe { ntos::KeInitializeTimerEx(timer.timer.get(), ntos::NOTIFICATION_TIMER) };
        // SAFETY: as above.
        unsafe { ntos::KeInitializeDpc(timer.dpc.get(), timer_dpc, me) };
        timer.initialised.store(true, Ordering::Release);
        // SAFETY: as above.
        unsafe { ntos::KeSetTimerEx(timer.timer.get(), due, period, timer.dpc.get()) };
        true
    }

    fn timer_cancel(timer: &WinTimer) {
        if !timer.initialised.load(Ordering::Acquire) {
            return;
        }
        // SAFETY: an initialised timer in place (the arm contract); cancelling an unset one
        // is allowed. KeFlushQueuedDpcs at PASSIVE_LEVEL (this function's contract) waits out
        // a DPC the timer queued before the cancel.
        unsafe { ntos::KeCancelTimer(timer.timer.get()) };
        // SAFETY: PASSIVE_LEVEL, as this function's contract requires.
        unsafe { ntos::KeFlushQueuedDpcs() };
    }

    fn raise_to_dispatch() -> Irql {
        let previous = read_cr8();
        if previous < DISPATCH_LEVEL {
            // SAFETY: raising to DISPATCH_LEVEL from below it is what KeRaiseIrqlToDpcLevel
            // does (on x64 the WDK's inline KfRaiseIrql is exactly this CR8 write); the caller
            // pairs it with `lower_irql(previous)`.
            unsafe { write_cr8(DISPATCH_LEVEL) };
        }
        irql_from_raw(previous)
    }

    fn lower_irql(previous: Irql) {
        let target = previous as u64;
        // Never *raise* through this path: lowering to a level above the current one would be
        // a caller bug that KeLowerIrql would bug-check on; ignoring it is the no-panic choice.
        if target <= read_cr8() {
            // SAFETY: returns to the IRQL saved by `raise_to_dispatch` (KeLowerIrql, an inline
            // CR8 write on x64). Lowering to a level the thread came from is always allowed.
            unsafe { write_cr8(target) };
        }
    }

    fn bus_address(va: NonNull<u8>) -> Option<rvgpu_hw::addr::BusAddr> {
        // SAFETY: MmGetPhysicalAddress accepts any address at IRQL <= DISPATCH_LEVEL and
        // returns 0 for one that is not mapped; no memory is touched. Without DMA remapping
        // (the configuration this driver declares) the physical address is the bus address.
        let pa = unsafe { ntos::MmGetPhysicalAddress(va.as_ptr().cast()) };
        u64::try_from(pa)
            .ok()
            .filter(|&pa| pa != 0)
            .map(rvgpu_hw::addr::BusAddr::new)
    }

    fn query_performance_counter() -> (u64, u64) {
        let mut freq: i64 = 0;
        // SAFETY: KeQueryPerformanceCounter may be called at any IRQL; `freq` is a valid
        // out pointer for the call. Both values are non-negative by definition.
        let count = unsafe { ntos::KeQueryPerformanceCounter(&raw mut freq) };
        (
            u64::try_from(count).unwrap_or(0),
            u64::try_from(freq).unwrap_or(0),
        )
    }

    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "the trait's safe signature: `pdo` is the PDO Dxgkrnl handed the driver, \
                  passed on to the kernel, never dereferenced here"
    )]
    fn software_key_dword(pdo: *mut c_void, name: &str) -> Option<u32> {
        if read_cr8() != 0 || pdo.is_null() {
            return None;
        }
        let mut units = [0u16; VALUE_NAME_UNITS];
        let mut count = 0usize;
        let mut slots = units.iter_mut();
        for unit in name.encode_utf16() {
            *slots.next()? = unit;
            count = count.checked_add(1)?;
        }
        let bytes = u16::try_from(count.checked_mul(2)?).ok()?;
        let value_name = ntos::UNICODE_STRING {
            Length: bytes,
            MaximumLength: bytes,
            Buffer: units.as_ptr(),
        };
        let mut key: *mut c_void = core::ptr::null_mut();
        // SAFETY: PASSIVE_LEVEL (checked above); `pdo` is the PDO Dxgkrnl handed the driver
        // (the trait's contract); `key` is a writable handle slot on this stack.
        let st = unsafe {
            ntos::IoOpenDeviceRegistryKey(
                pdo,
                ntos::PLUGPLAY_REGKEY_DRIVER,
                ntos::KEY_READ,
                &raw mut key,
            )
        };
        if st < 0 || key.is_null() {
            return None;
        }
        let mut info = ntos::KEY_VALUE_PARTIAL_INFORMATION_DWORD::default();
        let mut result_len: u32 = 0;
        let info_len = u32::try_from(core::mem::size_of_val(&info)).ok();
        let st = info_len.map(|len| {
            // SAFETY: an open key handle (above); the name's buffer and `info` live on this
            // stack for the call, `info` is `len` writable bytes, `result_len` writable.
            unsafe {
                ntos::ZwQueryValueKey(
                    key,
                    &raw const value_name,
                    ntos::KEY_VALUE_PARTIAL_INFORMATION_CLASS,
                    (&raw mut info).cast(),
                    len,
                    &raw mut result_len,
                )
            }
        });
        // SAFETY: the handle IoOpenDeviceRegistryKey returned, closed once, PASSIVE_LEVEL.
        unsafe { ntos::ZwClose(key) };
        // STATUS_BUFFER_OVERFLOW (a longer value) is a warning, not a success: only
        // STATUS_SUCCESS says the buffer holds the whole value.
        if st != Some(0) || info.Type != ntos::REG_DWORD || info.DataLength != 4 {
            return None;
        }
        Some(u32::from_le_bytes(info.Data))
    }

    #[allow(
        clippy::not_unsafe_ptr_arg_deref,
        reason = "the trait's safe signature: `context` is passed on to the kernel, never \
                  dereferenced here"
    )]
    fn etw_register(
        provider: &'static rvgpu_kmd::etw::Guid,
        callback: rvgpu_kmd::etw::EnableCallback,
        context: *mut c_void,
    ) -> Result<u64, i32> {
        let mut handle: u64 = 0;
        // SAFETY: a static GUID, a callback that stays in the image until Unload unregisters
        // it, and a writable handle; DriverEntry runs at PASSIVE_LEVEL.
        let st = unsafe { ntos::EtwRegister(provider, Some(callback), context, &raw mut handle) };
        if st < 0 {
            Err(st)
        } else {
            Ok(handle)
        }
    }

    fn etw_unregister(handle: u64) {
        // SAFETY: a handle EtwRegister returned, unregistered once (Unload, PASSIVE_LEVEL).
        unsafe { ntos::EtwUnregister(handle) };
    }

    fn etw_write(
        handle: u64,
        descriptor: &rvgpu_kmd::etw::EventDescriptor,
        data: &[rvgpu_kmd::etw::EventDataDescriptor],
    ) {
        let count = u32::try_from(data.len()).unwrap_or(0);
        // SAFETY: a live registration; the descriptors point to statics and the caller's
        // stack, non-paged, alive for the call; no activity ids.
        unsafe {
            ntos::EtwWriteTransfer(
                handle,
                descriptor,
                core::ptr::null(),
                core::ptr::null(),
                count,
                data.as_ptr(),
            )
        };
    }

    fn log(level: Level, args: fmt::Arguments<'_>) {
        let mut buf = LogBuffer::new();
        // Truncation is the only possible failure and is handled inside `write_str`.
        let _ = buf.write_str("rvgpu: ");
        let _ = buf.write_fmt(args);
        let message = buf.finish();
        // SAFETY: `message` is NUL-terminated and outlives the call; the format string is a
        // NUL-terminated literal with exactly one `%s`, matching the one vararg. DbgPrintEx
        // may be called at any IRQL for ASCII `%s` arguments.
        unsafe {
            ntos::DbgPrintEx(
                ntos::DPFLTR_IHVVIDEO_ID,
                dpfltr_level(level),
                c"%s".as_ptr().cast(),
                message.as_ptr(),
            );
        }
    }
}

/// `DPFLTR_ERROR_LEVEL` .. `DPFLTR_INFO_LEVEL` (dpfilter.h): 0..=3, as numbered in [`Level`].
/// Errors always print; the others need the IHVVIDEO filter mask (docs/windows.md).
pub const fn dpfltr_level(level: Level) -> u32 {
    match level {
        Level::Error => 0,
        Level::Warning => 1,
        Level::Trace => 2,
        Level::Info => 3,
    }
}
