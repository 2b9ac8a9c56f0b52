//! The kernel32 and advapi32 routines `rvgpu_umd.dll` imports, with the documented behaviour
//! the DLL relies on.
//!
//! - Heap (`GetProcessHeap`, `HeapAlloc`, `HeapFree`): host memory, 16-byte aligned
//!   (MEMORY_ALLOCATION_ALIGNMENT on x64), tracked per process so a block the heap never gave
//!   out is refused (`HeapFree` returns FALSE) and what is left goes with the process.
//! - SRW locks: the lock word in the DLL's memory, taken with a host compare-and-swap; a
//!   waiter yields (it runs outside the emulator's lock, so the owner can run). A lock word
//!   the process cannot write is an access violation raised in the DLL, as Windows' would be.
//! - Events, `WaitForSingleObject`, `CloseHandle`: process-local handles. An event handed to
//!   `D3DKMTWaitForSynchronizationObjectFromCpu` carries the OS's registered fence waits; the
//!   event is signalled when all of them are released, which `WaitForSingleObject` waits for.
//! - Modules: `GetModuleHandleW`/`LoadLibraryW` know gdi32.dll (the one module the DLL looks
//!   up), `GetProcAddress` answers the run-time thunks (`super::gdi32::RUNTIME`), NULL
//!   otherwise (the DLL then reports `STATUS_NOT_SUPPORTED`, as on a Windows without them).
//! - ETW (`EventRegister` …): registration succeeds, no session ever enables the provider
//!   (`EventProviderEnabled` is FALSE), so the DLL writes no events.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::guest;
use super::process::{Handler, UserProcess};
use super::wait_group::wait_group;
use super::win32_state::{Event, Win32State};
use crate::base::lock::lock;
use crate::pe::cpu::{StubResult, STATUS_ACCESS_VIOLATION};

/// The process heap's handle (any non-null value: the DLL only passes it back).
const PROCESS_HEAP: u64 = 0x0000_7FFE_0001_0000;
/// gdi32.dll's module handle.
const GDI32: u64 = 0x0000_7FFE_0002_0000;
/// `HEAP_ZERO_MEMORY`.
const HEAP_ZERO_MEMORY: u64 = 0x8;
/// MEMORY_ALLOCATION_ALIGNMENT on x64.
const HEAP_ALIGN: usize = 16;
const WAIT_OBJECT_0: u64 = 0;
const WAIT_TIMEOUT: u64 = 0x102;
const WAIT_FAILED: u64 = 0xFFFF_FFFF;
const INFINITE: u64 = 0xFFFF_FFFF;
const TRUE: u64 = 1;
const FALSE: u64 = 0;
/// `ERROR_SUCCESS`.
const ERROR_SUCCESS: u64 = 0;

impl Win32State {
    pub(super) fn free_heap(&self) {
        for (p, l) in lock(&self.heap).drain() {
            // SAFETY: a block this heap allocated with layout `l`; the process is gone, so
            // nothing runs the DLL any more.
            unsafe { std::alloc::dealloc(p as *mut u8, l) };
        }
    }
}

/// The routine behind `module!name`.
pub(crate) fn import(module: &str, name: &str) -> Option<Handler> {
    Some(match (module, name) {
        ("kernel32.dll", "GetProcessHeap") => |_, _| StubResult::Return(PROCESS_HEAP),
        ("kernel32.dll", "HeapAlloc") => heap_alloc,
        ("kernel32.dll", "HeapFree") => heap_free,
        ("kernel32.dll", "AcquireSRWLockExclusive") => acquire_srw_exclusive,
        ("kernel32.dll", "ReleaseSRWLockExclusive") => release_srw_exclusive,
        ("kernel32.dll", "CreateEventW") => create_event,
        ("kernel32.dll", "WaitForSingleObject") => wait_for_single_object,
        ("kernel32.dll", "CloseHandle") => close_handle,
        ("kernel32.dll", "GetModuleHandleW") => get_module_handle,
        ("kernel32.dll", "LoadLibraryW") => get_module_handle,
        ("kernel32.dll", "GetProcAddress") => get_proc_address,
        ("kernel32.dll", "QueryPerformanceCounter") => query_performance_counter,
        ("kernel32.dll", "QueryPerformanceFrequency") => query_performance_frequency,
        ("advapi32.dll", "EventRegister") => event_register,
        ("advapi32.dll", "EventUnregister") => |_, _| StubResult::Return(ERROR_SUCCESS),
        ("advapi32.dll", "EventSetInformation") => |_, _| StubResult::Return(ERROR_SUCCESS),
        ("advapi32.dll", "EventProviderEnabled") => |_, _| StubResult::Return(FALSE),
        ("advapi32.dll", "EventWriteTransfer") => |_, _| StubResult::Return(ERROR_SUCCESS),
        _ => return None,
    })
}

/// Stores `v` at `at` for a `Query*` call: TRUE, or FALSE for a pointer it cannot write.
fn store_i64(at: u64, v: u64) -> StubResult {
    let v = i64::try_from(v).unwrap_or(i64::MAX);
    StubResult::Return(u64::from(super::guest::write(at, &v).is_ok()))
}

/// `QueryPerformanceCounter(lpPerformanceCount)`: the simulated OS's QPC, the clock its fence
/// log calibrations use (`crate::base::clock::qpc`).
/// <https://learn.microsoft.com/en-us/windows/win32/api/profileapi/nf-profileapi-queryperformancecounter>
fn query_performance_counter(_: &UserProcess, w: &[u64; 12]) -> StubResult {
    store_i64(w[0], crate::base::clock::qpc())
}

/// `QueryPerformanceFrequency(lpFrequency)`.
/// <https://learn.microsoft.com/en-us/windows/win32/api/profileapi/nf-profileapi-queryperformancefrequency>
fn query_performance_frequency(_: &UserProcess, w: &[u64; 12]) -> StubResult {
    store_i64(w[0], crate::base::clock::QPC_HZ)
}

/// `HeapAlloc(hHeap, dwFlags, dwBytes)`: NULL on failure (no HEAP_GENERATE_EXCEPTIONS).
/// <https://learn.microsoft.com/en-us/windows/win32/api/heapapi/nf-heapapi-heapalloc>
fn heap_alloc(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let (heap, flags, size) = (w[0], w[1], w[2]);
    if heap != PROCESS_HEAP || size > (1 << 32) {
        return StubResult::Return(0);
    }
    let Ok(layout) = std::alloc::Layout::from_size_align((size as usize).max(1), HEAP_ALIGN) else {
        return StubResult::Return(0);
    };
    // SAFETY: a layout of non-zero size.
    let ptr = unsafe {
        if flags & HEAP_ZERO_MEMORY != 0 {
            std::alloc::alloc_zeroed(layout)
        } else {
            std::alloc::alloc(layout)
        }
    };
    if !ptr.is_null() {
        lock(&p.win32.heap).insert(ptr as usize, layout);
    }
    StubResult::Return(ptr as u64)
}

/// `HeapFree(hHeap, dwFlags, lpMem)`: FALSE for a block this heap did not give out.
/// <https://learn.microsoft.com/en-us/windows/win32/api/heapapi/nf-heapapi-heapfree>
fn heap_free(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let (heap, ptr) = (w[0], w[2] as usize);
    if heap != PROCESS_HEAP {
        return StubResult::Return(FALSE);
    }
    let Some(layout) = lock(&p.win32.heap).remove(&ptr) else {
        return StubResult::Return(FALSE);
    };
    // SAFETY: a block this heap allocated with `layout`, removed from the table so freed once.
    unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
    StubResult::Return(TRUE)
}

/// The SRW lock word at `addr`, if the process may write it (8 bytes, pointer-aligned as
/// an SRWLOCK is).
fn srw_word(addr: u64) -> Option<&'static std::sync::atomic::AtomicU64> {
    if addr == 0 || !addr.is_multiple_of(8) || !guest::writable(addr, 8) {
        return None;
    }
    // SAFETY: 8 aligned bytes mapped writable in this process (checked); the DLL only ever
    // touches the word through these two routines, which use atomics. The DLL keeps the
    // lock's memory for as long as it uses the lock.
    Some(unsafe { std::sync::atomic::AtomicU64::from_ptr(addr as *mut u64) })
}

/// `AcquireSRWLockExclusive`: spins (yielding) until the word goes 0 → 1.
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-acquiresrwlockexclusive>
fn acquire_srw_exclusive(_p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let Some(word) = srw_word(w[0]) else {
        return StubResult::Raise(STATUS_ACCESS_VIOLATION);
    };
    while word
        .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
    StubResult::Return(0)
}

/// `ReleaseSRWLockExclusive`.
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-releasesrwlockexclusive>
fn release_srw_exclusive(_p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let Some(word) = srw_word(w[0]) else {
        return StubResult::Raise(STATUS_ACCESS_VIOLATION);
    };
    word.store(0, Ordering::Release);
    StubResult::Return(0)
}

/// `CreateEventW(lpEventAttributes, bManualReset, bInitialState, lpName)`: unnamed events
/// only (a name would need the object namespace; NULL, as a failure).
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-createeventw>
fn create_event(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    if w[3] != 0 {
        return StubResult::Return(0);
    }
    let ev = Event::default();
    {
        let mut st = lock(&ev.state);
        st.manual_reset = w[1] as u32 != 0;
        st.signalled = w[2] as u32 != 0;
    }
    // Kernel handles are multiples of 4, never 0. One process table on Windows; here the NT
    // objects of the OS (`crate::ob`, counted up from 4) have their own, so events start far
    // above them and the two never name the same value.
    let h = 0x4000_0000 + 4 * p.win32.next_handle.fetch_add(1, Ordering::Relaxed);
    lock(&p.win32.events).insert(h, Arc::new(ev));
    StubResult::Return(h)
}

/// A thread counted in a process's threads inside `WaitForSingleObject` while this lives.
struct Waiting<'a>(&'a AtomicU64);

impl<'a> Waiting<'a> {
    fn enter(n: &'a AtomicU64) -> Self {
        n.fetch_add(1, Ordering::AcqRel);
        Self(n)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `WaitForSingleObject(hHandle, dwMilliseconds)` on an event: WAIT_OBJECT_0 once signalled
/// (an auto-reset event is reset by the wait), WAIT_TIMEOUT after the time, WAIT_FAILED for a
/// handle that is not an event of this process. Registered fence waits are waited for here
/// (the OS signals the event when the last one is released).
/// <https://learn.microsoft.com/en-us/windows/win32/api/synchapi/nf-synchapi-waitforsingleobject>
fn wait_for_single_object(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let Some(ev) = p.win32.event(w[0]) else {
        return StubResult::Return(WAIT_FAILED);
    };
    let _waiting = Waiting::enter(&p.win32.waiting);
    let ms = w[1] & 0xFFFF_FFFF;
    // INFINITE: as long as the simulated OS lets any wait last (a wait nothing can end
    // would hang the test instead of failing it).
    let timeout = if ms == INFINITE {
        p.machine.os_config().wait_timeout
    } else {
        Duration::from_millis(ms)
    };
    let deadline = Instant::now() + timeout;
    let pending = std::mem::take(&mut lock(&ev.state).fence_waits);
    let registered = !pending.is_empty();
    let mut left = Vec::new();
    for fw in pending {
        let remaining = deadline.saturating_duration_since(Instant::now());
        // Abandoned (the fence went, the device was lost) signals the event too; the DLL
        // learns the rest from the fence.
        if wait_group(&p.machine, &fw, remaining).is_none() {
            left.push(fw);
        }
    }
    let mut st = lock(&ev.state);
    if !left.is_empty() {
        // Still registered: the OS signals the event when they are released.
        st.fence_waits.extend(left);
        return StubResult::Return(WAIT_TIMEOUT);
    }
    if registered {
        // Every registered wait was released: the OS has signalled the event.
        st.signalled = true;
    }
    if !st.signalled {
        let (g, _) = crate::base::lock::waiting(st, |st| {
            ev.cv
                .wait_timeout_while(
                    st,
                    deadline.saturating_duration_since(Instant::now()),
                    |s| !s.signalled,
                )
                .unwrap_or_else(|p| p.into_inner())
        });
        st = g;
        if !st.signalled {
            return StubResult::Return(WAIT_TIMEOUT);
        }
    }
    if !st.manual_reset {
        st.signalled = false;
    }
    StubResult::Return(WAIT_OBJECT_0)
}

/// `CloseHandle`: an event of this process, else an NT handle in the table of the process
/// behind one of its D3D devices (a shared fence's, from `D3DKMTShareObjects` or
/// duplicated in); FALSE for a handle this process does not have.
/// <https://learn.microsoft.com/en-us/windows/win32/api/handleapi/nf-handleapi-closehandle>
fn close_handle(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let r = lock(&p.win32.events).remove(&w[0]).is_some()
        || p.nt_processes()
            .into_iter()
            .any(|pid| p.machine().close_nt_handle(pid, w[0]).is_ok());
    StubResult::Return(if r { TRUE } else { FALSE })
}

/// `GetModuleHandleW(name)` / `LoadLibraryW(name)`: gdi32.dll (with or without the
/// extension, any case); NULL for any other module (or an unreadable name).
fn get_module_handle(_p: &UserProcess, w: &[u64; 12]) -> StubResult {
    let Ok(name) = guest::read_wstr(w[0], 260) else {
        return StubResult::Return(0);
    };
    let name = String::from_utf16_lossy(&name).to_ascii_lowercase();
    let known = name == "gdi32.dll" || name == "gdi32";
    StubResult::Return(if known { GDI32 } else { 0 })
}

/// `GetProcAddress(module, name)`: the run-time thunks of gdi32.dll; NULL otherwise.
/// <https://learn.microsoft.com/en-us/windows/win32/api/libloaderapi/nf-libloaderapi-getprocaddress>
fn get_proc_address(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    if w[0] != GDI32 {
        return StubResult::Return(0);
    }
    // An ordinal (high bits clear) names nothing here.
    if w[1] >> 16 == 0 {
        return StubResult::Return(0);
    }
    let Ok(name) = guest::read_cstr(w[1], 256) else {
        return StubResult::Return(0);
    };
    StubResult::Return(p.image.runtime_thunk(&name).map_or(0, |a| a as u64))
}

/// `EventRegister(ProviderId, EnableCallback, CallbackContext, RegHandle)`: a registration
/// handle; no session will enable it.
/// <https://learn.microsoft.com/en-us/windows/win32/api/evntprov/nf-evntprov-eventregister>
fn event_register(p: &UserProcess, w: &[u64; 12]) -> StubResult {
    const ERROR_INVALID_PARAMETER: u64 = 87;
    if w[0] == 0 || w[3] == 0 {
        return StubResult::Return(ERROR_INVALID_PARAMETER);
    }
    let h = 1 + p.win32.registrations.fetch_add(1, Ordering::Relaxed);
    match guest::write(w[3], &h) {
        Ok(()) => StubResult::Return(ERROR_SUCCESS),
        Err(_) => StubResult::Return(ERROR_INVALID_PARAMETER),
    }
}
