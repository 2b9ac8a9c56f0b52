//! an exhausted pool is an NTSTATUS, never a bug check.
//!
//! On Windows the driver's global allocator is `ExAllocatePool2`, which returns NULL when the
//! pool is exhausted. This test gives the driver exactly that: a global allocator that returns
//! NULL for the N-th allocation of the calling thread (no platform hook involved: the same path
//! the image takes). DxgkDdiAddDevice is swept over every allocation point: it returns
//! STATUS_INSUFFICIENT_RESOURCES, frees what it had, and succeeds once nothing fails. Before
//! the driver's allocations were fallible, the first NULL went to the alloc-error handler: the
//! test process aborted (on Windows, the panic handler's bug check).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr;

use rvgpu_ddi::ntstatus::{STATUS_INSUFFICIENT_RESOURCES, STATUS_SUCCESS};
use rvgpu_ddi::{PDEVICE_OBJECT, PVOID};

mod common;
use common::NullPlatform;

thread_local! {
    /// Bytes allocated minus bytes freed by this thread.
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
    /// Allocations of this thread still allowed before one returns NULL (`None`: no limit).
    static FAIL_AFTER: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The system allocator, counting per thread, returning NULL where the test says.
struct Exhaustible;

fn account(delta: isize) {
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get().wrapping_add(delta)));
}

/// Whether this allocation fails (the pool returns NULL).
fn refuse() -> bool {
    FAIL_AFTER
        .try_with(|f| match f.get() {
            None => false,
            Some(left) => {
                if left == 0 {
                    // One failure, then the pool recovers (systematic low-resources style).
                    f.set(None);
                    true
                } else {
                    f.set(Some(left.saturating_sub(1)));
                    false
                }
            }
        })
        .unwrap_or(false)
}

// SAFETY: forwards to `System` unchanged or returns NULL (a valid allocation failure); the
// bookkeeping neither allocates nor unwinds.
unsafe impl GlobalAlloc for Exhaustible {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if refuse() {
            return ptr::null_mut();
        }
        // SAFETY: same contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            account(layout.size().cast_signed());
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if refuse() {
            return ptr::null_mut();
        }
        // SAFETY: same contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            account((new_size.cast_signed()).wrapping_sub(layout.size().cast_signed()));
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account((layout.size().cast_signed()).wrapping_neg());
        // SAFETY: same contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Exhaustible = Exhaustible;

fn live_bytes() -> isize {
    LIVE_BYTES.with(Cell::get)
}

#[test]
fn pool_exhaustion_in_add_device_is_insufficient_resources_at_every_allocation() {
    let d = rvgpu_kmd::initialization_data::<NullPlatform>();
    let add = d.DxgkDdiAddDevice.expect("AddDevice filled");
    let remove = d.DxgkDdiRemoveDevice.expect("RemoveDevice filled");
    let mut pdo_stand_in = 0u64;
    let pdo: PDEVICE_OBJECT = ptr::from_mut(&mut pdo_stand_in).cast();
    for n in 0..64u64 {
        let before = live_bytes();
        let mut ctx: PVOID = ptr::null_mut();
        FAIL_AFTER.with(|f| f.set(Some(n)));
        // SAFETY: non-null opaque PDO (stored, never dereferenced); valid out pointer.
        let s = unsafe { add(pdo, &mut ctx) };
        let failed = FAIL_AFTER.with(|f| f.replace(None)).is_none();
        if !failed {
            // Nothing failed: AddDevice made fewer than n + 1 allocations and must succeed.
            assert_eq!(s, STATUS_SUCCESS, "AddDevice with no failure: {s:#x}");
            assert!(n > 0, "AddDevice made no allocation at all");
            // SAFETY: the context from this AddDevice, removed once.
            assert_eq!(unsafe { remove(ctx) }, STATUS_SUCCESS);
            assert_eq!(live_bytes(), before, "RemoveDevice left bytes allocated");
            return;
        }
        assert_eq!(
            s, STATUS_INSUFFICIENT_RESOURCES,
            "AddDevice with allocation {n} failing: {s:#x}"
        );
        assert!(ctx.is_null(), "a failed AddDevice wrote a context");
        assert_eq!(
            live_bytes(),
            before,
            "AddDevice with allocation {n} failing left {} bytes allocated",
            live_bytes().wrapping_sub(before)
        );
    }
    panic!("AddDevice still failing after 64 allocation points");
}
