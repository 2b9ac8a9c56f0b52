//! The runtime of rvgpu_umd.dll, which is linked without the C runtime (`/NODEFAULTLIB`,
//! `/NOENTRY`: scripts/package.sh) because the MSVC CRT import libraries are not available off
//! Windows: a global allocator over the process heap, a panic handler that fails fast, and the
//! `mem*` routines the compiler calls, imported from ntdll.dll (which every process has).

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use windows_sys::Win32::System::Memory::{GetProcessHeap, HeapAlloc, HeapFree, HEAP_ZERO_MEMORY};

/// Heap blocks are 16-byte aligned on x64 (MEMORY_ALLOCATION_ALIGNMENT); larger alignments
/// are refused (null), which `alloc` reports as an allocation failure.
const HEAP_ALIGNMENT: usize = 16;

struct ProcessHeap;

// SAFETY: blocks come from HeapAlloc on the process heap with at most 16-byte alignment
// (checked) and go back to the same heap exactly once (GlobalAlloc's caller contract).
unsafe impl GlobalAlloc for ProcessHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > HEAP_ALIGNMENT {
            return core::ptr::null_mut();
        }
        // SAFETY: GetProcessHeap has no preconditions.
        let heap = unsafe { GetProcessHeap() };
        // SAFETY: the process heap is always valid; any size is accepted.
        unsafe { HeapAlloc(heap, 0, layout.size()) }.cast()
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() > HEAP_ALIGNMENT {
            return core::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        let heap = unsafe { GetProcessHeap() };
        // SAFETY: as for `alloc`.
        unsafe { HeapAlloc(heap, HEAP_ZERO_MEMORY, layout.size()) }.cast()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: as for `alloc`.
        let heap = unsafe { GetProcessHeap() };
        // SAFETY: `ptr` came from `alloc` on the same heap (caller contract).
        unsafe { HeapFree(heap, 0, ptr.cast()) };
    }
}

#[global_allocator]
static ALLOCATOR: ProcessHeap = ProcessHeap;

/// FAST_FAIL_FATAL_APP_EXIT (winnt.h).
const FAST_FAIL_FATAL_APP_EXIT: u32 = 7;

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `int 0x29` with the code in ECX is __fastfail: the process terminates at once
    // (Windows 8 and later), which is what a panic in a driver library must do.
    unsafe {
        core::arch::asm!("int 0x29", in("ecx") FAST_FAIL_FATAL_APP_EXIT, options(noreturn, nostack));
    }
}

// The compiler lowers copies and fills to these C routines; without the CRT they come from
// ntdll.dll, which exports them and is mapped into every process.
#[link(name = "ntdll.dll", kind = "raw-dylib", modifiers = "+verbatim")]
#[allow(dead_code)] // referenced by compiler-generated calls, not by name
unsafe extern "C" {
    fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memset(dest: *mut c_void, c: i32, n: usize) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32;
}
