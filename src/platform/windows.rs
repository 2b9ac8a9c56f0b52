//! [`Platform`] over the Windows kernel: volatile MMIO on the BAR mappings Dxgkrnl hands out,
//! the IRQL from CR8, and `DbgPrintEx` logging under `DPFLTR_IHVVIDEO_ID`.

use core::fmt::{self, Write};

use crate::logbuf::LogBuffer;
use core::ptr::NonNull;

use rvgpu_kmd::platform::{Irql, Level, Platform};

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
