//! The runtime of an image linked without the C runtime (`/NODEFAULTLIB`): `DriverEntry`, the
//! global allocator, the panic handler, and the `mem*` routines the compiler calls.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;
use core::fmt::Write;

use crate::logbuf::LogBuffer;
use crate::ntos;
use crate::platform::windows::{raw_irql, WinKernel};
use crate::{driver_entry, NTSTATUS};

/// The image's entry point (`/ENTRY:DriverEntry`), called by the I/O manager at
/// PASSIVE_LEVEL with the driver object and the service key path.
///
/// <https://learn.microsoft.com/windows-hardware/drivers/display/driverentry-of-display-miniport-driver>
///
/// # Safety
/// Called only by the kernel, with a valid `DRIVER_OBJECT*` and `UNICODE_STRING*`.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn DriverEntry(
    driver_object: *mut c_void,
    registry_path: *const c_void,
) -> NTSTATUS {
    // SAFETY: the kernel's DriverEntry arguments, passed unchanged to the Rust equivalent of
    // displib's DxgkInitialize, which is sound for them at PASSIVE_LEVEL.
    unsafe {
        driver_entry::<WinKernel>(
            driver_object,
            registry_path,
            crate::dxgkinit::dxgk_initialize,
        )
    }
}

/// Pool tag of every allocation the driver makes: shows as `Rvgp` in `!poolused` / poolmon
/// (tags are stored little-endian, so the bytes are in reading order).
pub const POOL_TAG: u32 = u32::from_le_bytes(*b"Rvgp");

/// Alignment of every pool block on x64 (`MEMORY_ALLOCATION_ALIGNMENT`).
const POOL_ALIGNMENT: usize = 16;
/// Blocks of at least a page are page-aligned (ExAllocatePool2 documentation).
const PAGE_SIZE: usize = 4096;
/// Highest IRQL at which non-paged pool may be allocated or freed.
const DISPATCH_LEVEL: u64 = 2;

/// The global allocator over the non-paged, non-executable pool.
///
/// - `ExAllocatePool2(POOL_FLAG_NON_PAGED, ..)` returns zeroed, NX memory, so `alloc_zeroed`
///   is the same call.
/// - Alignment: pool blocks are 16-byte aligned, and blocks of a page or more are
///   page-aligned; any other request (align > 16 below a page, or align > a page) is refused
///   with null, which the `alloc` crate reports as an allocation failure. No type in the driver
///   needs more.
/// - IRQL: pool may be used at DISPATCH_LEVEL or below. Above it (ISR, SynchronizeExecution
///   callbacks) the allocator returns null instead of letting the kernel bug-check; the driver
///   core does not allocate there, and the null makes a mistake visible.
struct PoolAllocator;

fn pool_can_align(layout: Layout) -> bool {
    layout.align() <= POOL_ALIGNMENT || (layout.align() <= PAGE_SIZE && layout.size() >= PAGE_SIZE)
}

// SAFETY: blocks come from ExAllocatePool2 with the requested size and an alignment checked
// by `pool_can_align`; they are returned to the pool with the same tag, exactly once, by
// `dealloc` (GlobalAlloc's caller contract).
unsafe impl GlobalAlloc for PoolAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !pool_can_align(layout) || raw_irql() > DISPATCH_LEVEL {
            return core::ptr::null_mut();
        }
        // SAFETY: IRQL <= DISPATCH_LEVEL (checked); any size is accepted (0 never occurs
        // through GlobalAlloc, whose callers must pass a non-zero size).
        unsafe { ntos::ExAllocatePool2(ntos::POOL_FLAG_NON_PAGED, layout.size(), POOL_TAG) }.cast()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: `ptr` came from `alloc` above with the same tag (caller contract); freeing
        // non-paged pool is allowed at IRQL <= DISPATCH_LEVEL, which holds wherever the driver
        // core frees.
        unsafe { ntos::ExFreePoolWithTag(ptr.cast(), POOL_TAG) }
    }
}

#[global_allocator]
static ALLOCATOR: PoolAllocator = PoolAllocator;

/// Bug-check code of a Rust panic in rvgpu.sys: 0x52564750, "RVGP" in ASCII.
///
/// Parameters: 1 = address of the source file name (not NUL-terminated), 2 = its length,
/// 3 = line, 4 = column. In WinDbg: `!analyze -v`, then `da <p1> L<p2>` for the file; the
/// panic message was printed with DbgPrintEx just before (docs/windows.md).
pub const RVGPU_PANIC_BUGCHECK: u32 = u32::from_be_bytes(*b"RVGP");
const _: () = assert!(RVGPU_PANIC_BUGCHECK == 0x5256_4750);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let mut line = LogBuffer::new();
    // Formatting into the fixed buffer cannot fail (it truncates).
    let _ = write!(line, "rvgpu: PANIC: {}", info.message());
    if let Some(loc) = info.location() {
        let _ = write!(line, " at {}:{}:{}", loc.file(), loc.line(), loc.column());
    }
    let text = line.finish();
    // SAFETY: NUL-terminated message and a `%s` format; DbgPrintEx is callable at any IRQL.
    unsafe {
        ntos::DbgPrintEx(
            ntos::DPFLTR_IHVVIDEO_ID,
            0,
            c"%s".as_ptr().cast(),
            text.as_ptr(),
        );
    }
    let (file, file_len, line_no, column) = info.location().map_or((0, 0, 0, 0), |l| {
        (
            l.file().as_ptr() as usize,
            l.file().len(),
            l.line() as usize,
            l.column() as usize,
        )
    });
    // SAFETY: KeBugCheckEx may be called at any IRQL and does not return.
    unsafe { ntos::KeBugCheckEx(RVGPU_PANIC_BUGCHECK, file, file_len, line_no, column) }
}

// The compiler lowers copies and fills to these C routines; without the C runtime they come
// from ntoskrnl, which exports them for exactly this purpose.
#[link(name = "ntoskrnl.exe", kind = "raw-dylib", modifiers = "+verbatim")]
#[allow(dead_code)] // referenced by compiler-generated calls, not by name
unsafe extern "C" {
    fn memcpy(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memmove(dest: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
    fn memset(dest: *mut c_void, c: i32, n: usize) -> *mut c_void;
    fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> i32;
}
