//! Unit tests of the C API's buffer calls (AL-01 … AL-03): the `extern "C"` functions
//! themselves, over handles whose objects hold the mocks of [`super::mock`].

use super::mock::*;
use super::*;
use rvgpu_hw::cmd::Command;
use std::cell::RefCell;
use std::rc::Rc;

use super::buffer::{AdapterObj, AdapterState};
use super::handles::{self as handles, Kind};
use crate::kmt::KmtHandle;
use crate::usage::TimelineId;

/// An adapter handle over a fresh mock, and two queue handles on it.
struct Setup {
    kmt: MockKmt,
    adapter: *mut RvgpuAdapter,
    queues: [*mut RvgpuQueue; 2],
}

impl Setup {
    fn new(coherent: bool) -> Self {
        let kmt = MockKmt(Rc::new(RefCell::new(World {
            next: 0x100,
            coherent,
            ..World::default()
        })));
        let adapter = handle(
            handles::insert(
                Kind::Adapter,
                AdapterObj {
                    kmt: kmt.clone(),
                    state: std::sync::Arc::new(AdapterState::default()),
                },
            )
            .unwrap(),
        );
        let queue = |fence: KmtHandle| -> *mut RvgpuQueue {
            let q = MockQueue {
                w: kmt.0.clone(),
                id: TimelineId::fresh(),
                fence,
                last: 0,
            };
            handle(handles::insert(Kind::Queue, q).unwrap())
        };
        let queues = [queue(0x10), queue(0x20)];
        Self {
            kmt,
            adapter,
            queues,
        }
    }

    fn log(&self) -> Vec<Ev> {
        self.kmt.0.borrow().log.clone()
    }

    fn waits(&self) -> usize {
        self.log()
            .iter()
            .filter(|e| matches!(e, Ev::Wait(..)))
            .count()
    }

    /// The GPU completes everything submitted so far on every queue.
    fn complete_all(&self) {
        for q in self.queues {
            let obj = handles::get::<MockQueue>(Kind::Queue, q.addr()).unwrap();
            let (fence, last) = {
                let g = obj.lock();
                (g.fence, g.last)
            };
            self.kmt.0.borrow_mut().fences.insert(fence, last);
        }
    }

    fn buffer(&self, size: u64) -> *mut RvgpuBuffer {
        let mut b = ptr::null_mut();
        // SAFETY: a live adapter and a valid out-pointer.
        let st = unsafe { rvgpu_buffer_create(self.adapter, size, &mut b) };
        assert_eq!(st, RvgpuStatus::Ok);
        assert!(!b.is_null());
        b
    }

    /// `rvgpu_buffer_lock` with every queue listed; the status and the pointer.
    fn lock(&self, b: *mut RvgpuBuffer, flags: u32) -> (RvgpuStatus, *mut c_void) {
        let mut p = 8 as *mut c_void;
        // SAFETY: live handles, a valid queue array and out-pointer.
        let st = unsafe { rvgpu_buffer_lock(b, flags, self.queues.as_ptr(), 2, &mut p) };
        (st, p)
    }

    fn unlock(&self, b: *mut RvgpuBuffer) -> RvgpuStatus {
        // SAFETY: a live buffer handle.
        unsafe { rvgpu_buffer_unlock(b) }
    }

    fn fill(&self, q: usize, b: *mut RvgpuBuffer, pattern: u64) -> u64 {
        let mut v = 0;
        // SAFETY: live handles and a valid out-pointer.
        let st = unsafe { rvgpu_buffer_fill(self.queues[q], b, 0, 64, pattern, &mut v) };
        assert_eq!(st, RvgpuStatus::Ok);
        v
    }

    fn gpu_va(&self, b: *mut RvgpuBuffer) -> u64 {
        let mut va = 0;
        // SAFETY: a live buffer and a valid out-pointer.
        assert_eq!(unsafe { rvgpu_buffer_gpu_va(b, &mut va) }, RvgpuStatus::Ok);
        va
    }

    fn destroy(&self, b: *mut RvgpuBuffer) -> RvgpuStatus {
        // SAFETY: a live buffer and a valid queue array; the buffer is not used afterwards.
        unsafe { rvgpu_buffer_destroy(b, self.queues.as_ptr(), 2) }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        for q in self.queues {
            let _ = handles::take::<MockQueue>(Kind::Queue, q.addr());
        }
        let _ = handles::take::<AdapterObj<MockKmt>>(Kind::Adapter, self.adapter.addr());
    }
}

/// AL-02: DO_NOT_WAIT on a buffer queued work writes returns WAS_STILL_DRAWING at once (no
/// wait, nothing mapped, buffer left unlocked); without it the lock blocks on the queue's
/// fence and then maps.
#[test]
fn al02_do_not_wait_on_a_busy_buffer_returns_was_still_drawing() {
    let s = Setup::new(true);
    let b = s.buffer(4096);
    let v = s.fill(1, b, 0x55);
    assert_eq!(v, 1);
    for flags in [
        RVGPU_LOCK_WRITE | RVGPU_LOCK_DO_NOT_WAIT,
        RVGPU_LOCK_READ | RVGPU_LOCK_DO_NOT_WAIT,
        RVGPU_LOCK_READ | RVGPU_LOCK_WRITE | RVGPU_LOCK_DO_NOT_WAIT,
    ] {
        let (st, p) = s.lock(b, flags);
        assert_eq!(st, RvgpuStatus::WasStillDrawing, "flags {flags:#x}");
        assert_ne!(st, RvgpuStatus::Timeout);
        assert!(p.is_null(), "nothing mapped");
    }
    assert_eq!(s.waits(), 0, "DO_NOT_WAIT never blocks");
    // SAFETY: returns a static C string.
    let name = unsafe {
        core::ffi::CStr::from_ptr(rvgpu_status_string(RvgpuStatus::WasStillDrawing as u32))
    };
    assert_eq!(name.to_str().unwrap(), "was still drawing");

    // The blocking lock waits on queue 1's fence for value 1, then maps.
    let (st, p) = s.lock(b, RVGPU_LOCK_WRITE);
    assert_eq!(st, RvgpuStatus::Ok);
    assert!(!p.is_null());
    assert_eq!(s.log().last(), Some(&Ev::Wait(0x20, 1)));
    // The pointer is the mapping: write through it, read it back through a second lock.
    let word = p.cast::<u64>().wrapping_add(3);
    // SAFETY: the lock mapped at least 4096 bytes, 8-aligned; word 3 is inside.
    unsafe { word.write(0xABCD) };
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    let (st, p2) = s.lock(b, RVGPU_LOCK_READ | RVGPU_LOCK_DO_NOT_WAIT);
    assert_eq!(st, RvgpuStatus::Ok, "idle now");
    let word = p2.cast::<u64>().wrapping_add(3);
    // SAFETY: as above.
    assert_eq!(unsafe { word.read() }, 0xABCD);
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
}

/// AL-02: a GPU read (the source of a copy) does not block a CPU read, but does block a
/// CPU write; the destination blocks both.
#[test]
fn al02_copy_records_a_read_of_src_and_a_write_of_dst() {
    let s = Setup::new(true);
    let src = s.buffer(4096);
    let dst = s.buffer(4096);
    let mut v = 0;
    // SAFETY: live handles and a valid out-pointer.
    let st = unsafe { rvgpu_buffer_copy(s.queues[0], src, 8, dst, 16, 32, &mut v) };
    assert_eq!(st, RvgpuStatus::Ok);
    assert_eq!(v, 1);
    assert_eq!(
        s.kmt.0.borrow().cmds,
        vec![Command::Copy {
            src: s.gpu_va(src) + 8,
            dst: s.gpu_va(dst) + 16,
            bytes: 32
        }]
    );
    let nw = RVGPU_LOCK_DO_NOT_WAIT;
    assert_eq!(s.lock(src, RVGPU_LOCK_READ | nw).0, RvgpuStatus::Ok);
    assert_eq!(s.unlock(src), RvgpuStatus::Ok);
    assert_eq!(
        s.lock(src, RVGPU_LOCK_WRITE | nw).0,
        RvgpuStatus::WasStillDrawing
    );
    assert_eq!(
        s.lock(dst, RVGPU_LOCK_READ | nw).0,
        RvgpuStatus::WasStillDrawing
    );
    s.complete_all();
    assert_eq!(s.lock(dst, RVGPU_LOCK_READ | nw).0, RvgpuStatus::Ok);
    assert_eq!(s.unlock(dst), RvgpuStatus::Ok);
    assert_eq!(s.waits(), 0);
    // Copying a buffer onto itself is refused.
    // SAFETY: as above.
    let st = unsafe { rvgpu_buffer_copy(s.queues[0], src, 0, src, 64, 8, &mut v) };
    assert_eq!(st, RvgpuStatus::InvalidArgument);
    assert_eq!(v, 0);
    assert_eq!(s.destroy(src), RvgpuStatus::Ok);
    assert_eq!(s.destroy(dst), RvgpuStatus::Ok);
}

/// AL-01 through the C API: DISCARD on a busy buffer gives new memory at once (new GPU VA,
/// no wait); NO_OVERWRITE maps the busy memory without waiting.
#[test]
fn al01_discard_renames_a_busy_buffer_without_waiting() {
    let s = Setup::new(true);
    let b = s.buffer(4096);
    let old = s.gpu_va(b);
    s.fill(0, b, 1);
    let (st, p) = s.lock(b, RVGPU_LOCK_DISCARD | RVGPU_LOCK_DO_NOT_WAIT);
    assert_eq!(st, RvgpuStatus::Ok);
    assert!(!p.is_null());
    assert_ne!(s.gpu_va(b), old, "renamed");
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    s.fill(0, b, 2);
    let (st, _) = s.lock(b, RVGPU_LOCK_NO_OVERWRITE | RVGPU_LOCK_DO_NOT_WAIT);
    assert_eq!(st, RvgpuStatus::Ok);
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    assert_eq!(s.waits(), 0);
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
}

/// AL-03 through the C API: destroying a buffer whose work completed frees it with
/// AssumeNotInUse; one still in use is left to the OS's deferred destruction.
#[test]
fn al03_destroy_assumes_not_in_use_only_when_idle() {
    let s = Setup::new(true);
    let idle = s.buffer(4096);
    let busy = s.buffer(4096);
    s.fill(0, idle, 1);
    s.complete_all();
    s.fill(0, busy, 2);
    let (hi, hb) = (0x101, 0x102);
    assert_eq!(s.destroy(idle), RvgpuStatus::Ok);
    assert_eq!(s.destroy(busy), RvgpuStatus::Ok);
    let log = s.log();
    assert!(log.contains(&Ev::Destroy(hi, true)), "{log:?}");
    assert!(log.contains(&Ev::Destroy(hb, false)), "{log:?}");
    assert_eq!(s.waits(), 0, "destroy never blocks");
}

/// AL-06 through the C API: on a non-coherent platform the unlock of a write lock writes the
/// CPU's caches back.
#[test]
fn al06_unlock_after_a_write_maintains_the_caches() {
    let s = Setup::new(false);
    let b = s.buffer(4096);
    assert_eq!(s.lock(b, RVGPU_LOCK_WRITE).0, RvgpuStatus::Ok);
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    assert_eq!(s.log().last(), Some(&Ev::Invalidate(0x101)));
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
}

/// AL-02: null pointers, bad flags, bad ranges, lock-state misuse and a missing queue return
/// INVALID_ARGUMENT (never a crash), clear the outputs, and leave the buffer usable.
#[test]
fn al02_null_and_invalid_arguments_return_invalid_argument() {
    // Each call passes pointers that are null, live handles or valid out-pointers.
    macro_rules! c {
        ($call:expr) => {
            // SAFETY: every pointer argument is null, a live handle or a valid out-pointer,
            // which each function's contract allows.
            unsafe { $call }
        };
    }
    let s = Setup::new(true);
    let inval = RvgpuStatus::InvalidArgument;
    let null_q: *const *mut RvgpuQueue = ptr::null();
    let mut out_b = 8 as *mut RvgpuBuffer;
    let mut out_p = 8 as *mut c_void;
    let mut out_v = 7u64;
    assert_eq!(
        c!(rvgpu_buffer_create(ptr::null_mut(), 64, &mut out_b)),
        inval
    );
    assert!(out_b.is_null());
    assert_eq!(
        c!(rvgpu_buffer_create(s.adapter, 64, ptr::null_mut())),
        inval
    );
    assert_eq!(c!(rvgpu_buffer_create(s.adapter, 0, &mut out_b)), inval);
    assert_eq!(
        c!(rvgpu_buffer_lock(
            ptr::null_mut(),
            RVGPU_LOCK_READ,
            null_q,
            0,
            &mut out_p
        )),
        inval
    );
    assert!(out_p.is_null());
    assert_eq!(c!(rvgpu_buffer_unlock(ptr::null_mut())), inval);
    assert_eq!(c!(rvgpu_buffer_destroy(ptr::null_mut(), null_q, 0)), inval);
    assert_eq!(c!(rvgpu_buffer_gpu_va(ptr::null_mut(), &mut out_v)), inval);
    assert_eq!(
        c!(rvgpu_buffer_fill(
            ptr::null_mut(),
            ptr::null_mut(),
            0,
            8,
            0,
            &mut out_v
        )),
        inval
    );
    assert_eq!(
        c!(rvgpu_buffer_copy(
            ptr::null_mut(),
            ptr::null_mut(),
            0,
            ptr::null_mut(),
            0,
            8,
            &mut out_v
        )),
        inval
    );
    let b = s.buffer(4096);
    assert_eq!(c!(rvgpu_buffer_gpu_va(b, ptr::null_mut())), inval);
    assert_eq!(
        c!(rvgpu_buffer_lock(
            b,
            RVGPU_LOCK_READ,
            null_q,
            0,
            ptr::null_mut()
        )),
        inval
    );
    // A count with no array, and a null entry.
    out_p = 8 as *mut c_void;
    assert_eq!(
        c!(rvgpu_buffer_lock(b, RVGPU_LOCK_READ, null_q, 1, &mut out_p)),
        inval
    );
    assert!(out_p.is_null());
    let with_null = [s.queues[0], ptr::null_mut()];
    assert_eq!(
        c!(rvgpu_buffer_lock(
            b,
            RVGPU_LOCK_READ,
            with_null.as_ptr(),
            2,
            &mut out_p
        )),
        inval
    );
    assert_eq!(c!(rvgpu_buffer_destroy(b, with_null.as_ptr(), 2)), inval);
    assert_eq!(c!(rvgpu_buffer_destroy(b, null_q, 3)), inval);
    // Bad ranges.
    assert_eq!(
        c!(rvgpu_buffer_fill(s.queues[0], b, 4, 8, 0, &mut out_v)),
        inval
    );
    assert_eq!(
        c!(rvgpu_buffer_fill(s.queues[0], b, 0, 8192, 0, &mut out_v)),
        inval
    );
    assert_eq!(
        c!(rvgpu_buffer_fill(
            s.queues[0],
            b,
            u64::MAX - 7,
            16,
            0,
            &mut out_v
        )),
        inval
    );
    assert_eq!(
        c!(rvgpu_buffer_fill(s.queues[0], b, 0, 0, 0, &mut out_v)),
        inval
    );
    assert_eq!(out_v, 0);
    assert_eq!(
        c!(rvgpu_buffer_fill(s.queues[0], b, 0, 8, 0, ptr::null_mut())),
        inval
    );
    // Flags: none, undefined bits, and meaningless combinations.
    for flags in [
        0,
        RVGPU_LOCK_DO_NOT_WAIT,
        0x20,
        RVGPU_LOCK_READ | 0x8000_0000,
        RVGPU_LOCK_DISCARD | RVGPU_LOCK_NO_OVERWRITE,
        RVGPU_LOCK_READ | RVGPU_LOCK_DISCARD,
        RVGPU_LOCK_READ | RVGPU_LOCK_NO_OVERWRITE,
    ] {
        let (st, p) = s.lock(b, flags);
        assert_eq!(st, inval, "flags {flags:#x}");
        assert!(p.is_null());
    }
    // Lock state: unlock while unlocked, lock twice.
    assert_eq!(s.unlock(b), inval);
    assert_eq!(s.lock(b, RVGPU_LOCK_READ).0, RvgpuStatus::Ok);
    assert_eq!(s.lock(b, RVGPU_LOCK_READ).0, inval);
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    // Work on queue 0 and a lock that lists only queue 1: the UMD cannot tell whether the
    // work completed, so it refuses rather than guess.
    s.fill(0, b, 9);
    let only_q1 = [s.queues[1]];
    out_p = 8 as *mut c_void;
    // SAFETY: live handles, a valid queue array and out-pointer.
    let st = unsafe { rvgpu_buffer_lock(b, RVGPU_LOCK_READ, only_q1.as_ptr(), 1, &mut out_p) };
    assert_eq!(st, inval);
    assert!(out_p.is_null());
    // The buffer is still fine.
    s.complete_all();
    assert_eq!(s.lock(b, RVGPU_LOCK_READ).0, RvgpuStatus::Ok);
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    assert_eq!(s.waits(), 0);
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
}

/// The C flag values are `LockFlags`' bits (also asserted at compile time in capi.rs).
#[test]
fn al02_lock_flag_values_are_the_rust_flags() {
    use crate::usage::LockFlags;
    assert_eq!(RVGPU_LOCK_READ, LockFlags::READ.0);
    assert_eq!(RVGPU_LOCK_WRITE, LockFlags::WRITE.0);
    assert_eq!(RVGPU_LOCK_DISCARD, LockFlags::DISCARD.0);
    assert_eq!(RVGPU_LOCK_NO_OVERWRITE, LockFlags::NO_OVERWRITE.0);
    assert_eq!(RVGPU_LOCK_DO_NOT_WAIT, LockFlags::DO_NOT_WAIT.0);
}

/// AL-02: a destroyed buffer's handle, a queue handle passed as a buffer and a forged value
/// are refused with INVALID_HANDLE and touch nothing; the live buffer is unaffected.
#[test]
fn al02_stale_wrong_kind_and_forged_handles_return_invalid_handle() {
    let s = Setup::new(true);
    let stale = s.buffer(4096);
    assert_eq!(s.destroy(stale), RvgpuStatus::Ok);
    let b = s.buffer(4096);
    let bad = RvgpuStatus::InvalidHandle;
    let as_buffer = handle::<RvgpuBuffer>(s.queues[0].addr());
    let forged = handle::<RvgpuBuffer>(0x0123_4567_0400_0042);
    for h in [stale, as_buffer, forged] {
        let (st, p) = s.lock(h, RVGPU_LOCK_READ);
        assert_eq!((st, p), (bad, ptr::null_mut()));
        assert_eq!(s.unlock(h), bad);
        assert_eq!(s.destroy(h), bad);
        let mut v = 7u64;
        // SAFETY: a valid out-pointer; the handle is only looked up.
        assert_eq!(unsafe { rvgpu_buffer_gpu_va(h, &mut v) }, bad);
        assert_eq!(v, 0);
        // SAFETY: as above.
        let st = unsafe { rvgpu_buffer_fill(s.queues[0], h, 0, 8, 0, &mut v) };
        assert_eq!(st, bad);
    }
    // A buffer passed where a queue belongs.
    let mut v = 0u64;
    // SAFETY: a valid out-pointer; handles are only looked up.
    let st = unsafe { rvgpu_buffer_fill(handle(b.addr()), b, 0, 8, 0, &mut v) };
    assert_eq!(st, bad);
    assert_eq!(s.lock(b, RVGPU_LOCK_READ).0, RvgpuStatus::Ok);
    assert_eq!(s.unlock(b), RvgpuStatus::Ok);
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
}

/// DDI-03: an application places a buffer's pages at a VA it chose: the reservation is where
/// it asked, the mapping names the buffer's allocation, pages and VA, the call returns only
/// after waiting for the paging fence, and its paging queue is gone after; the free names the
/// range.
#[test]
fn ddi_03_map_va_waits_for_the_paging_fence() {
    const CHOSEN: u64 = 0x7000_0000_0000;
    let s = Setup::new(true);
    let b = s.buffer(4 * 4096);
    let alloc = match s.log().last() {
        Some(Ev::Create(h)) => *h,
        e => panic!("the buffer's allocation was the last thing made, not {e:?}"),
    };
    let mut va = 1;
    // SAFETY: a live adapter and a valid out-pointer.
    let st = unsafe { rvgpu_va_reserve(s.adapter, CHOSEN, 0x1_0000, &mut va) };
    assert_eq!((st, va), (RvgpuStatus::Ok, CHOSEN));
    // SAFETY: as above; the OS chooses.
    let st = unsafe { rvgpu_va_reserve(s.adapter, 0, 0x1_0000, &mut va) };
    assert_eq!((st, va), (RvgpuStatus::Ok, MOCK_VA));
    let before = s.log().len();
    // SAFETY: a live buffer handle.
    let st = unsafe { rvgpu_buffer_map_va(b, CHOSEN + 4096, 1, 2) };
    assert_eq!(st, RvgpuStatus::Ok);
    let ev = s.log().split_off(before);
    let Some(Ev::PagingQueue(pq)) = ev.first().cloned() else {
        panic!("no paging queue first: {ev:?}");
    };
    assert_eq!(
        ev,
        vec![
            Ev::PagingQueue(pq),
            Ev::Map(alloc, CHOSEN + 4096, 1, 2),
            Ev::Wait(pq + 1, MOCK_PAGING_VALUE),
            Ev::PagingQueueGone(pq),
        ]
    );
    // SAFETY: a live adapter handle.
    let st = unsafe { rvgpu_va_free(s.adapter, CHOSEN, 0x1_0000) };
    assert_eq!(st, RvgpuStatus::Ok);
    assert_eq!(s.log().last(), Some(&Ev::Free(CHOSEN, 0x1_0000)));
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
}

/// DDI-03 with what an attacker passes: NULL handles and out-pointers are
/// `InvalidArgument` (the out-pointer cleared), forged, destroyed and wrong-kind handles
/// `InvalidHandle`, pages past the buffer's end `InvalidArgument`; none reaches the thunks.
#[test]
fn ddi_03_va_calls_refuse_bad_handles_and_ranges() {
    let s = Setup::new(true);
    let b = s.buffer(2 * 4096);
    let forged = 0x5A5A_5A58usize;
    let before = s.log().len();
    let mut va = 7;
    // SAFETY: null is part of the contract.
    let st = unsafe { rvgpu_va_reserve(ptr::null_mut(), 0, 4096, &mut va) };
    assert_eq!((st, va), (RvgpuStatus::InvalidArgument, 0));
    // SAFETY: as above.
    let st = unsafe { rvgpu_va_reserve(s.adapter, 0, 4096, ptr::null_mut()) };
    assert_eq!(st, RvgpuStatus::InvalidArgument);
    for a in [handle::<RvgpuAdapter>(forged), handle(b.addr())] {
        va = 7;
        // SAFETY: handles are only looked up; a valid out-pointer.
        let st = unsafe { rvgpu_va_reserve(a, 0, 4096, &mut va) };
        assert_eq!((st, va), (RvgpuStatus::InvalidHandle, 0));
        // SAFETY: as above.
        let st = unsafe { rvgpu_va_free(a, 0x1_0000, 4096) };
        assert_eq!(st, RvgpuStatus::InvalidHandle);
    }
    // SAFETY: as above.
    let st = unsafe { rvgpu_va_free(ptr::null_mut(), 0x1_0000, 4096) };
    assert_eq!(st, RvgpuStatus::InvalidArgument);
    // SAFETY: null is part of the contract.
    let st = unsafe { rvgpu_buffer_map_va(ptr::null_mut(), 0x1_0000, 0, 1) };
    assert_eq!(st, RvgpuStatus::InvalidArgument);
    for bad in [handle::<RvgpuBuffer>(forged), handle(s.adapter.addr())] {
        // SAFETY: handles are only looked up.
        let st = unsafe { rvgpu_buffer_map_va(bad, 0x1_0000, 0, 1) };
        assert_eq!(st, RvgpuStatus::InvalidHandle);
    }
    for (first, pages) in [(0, 3), (2, 1), (1, 2)] {
        // SAFETY: a live buffer handle.
        let st = unsafe { rvgpu_buffer_map_va(b, 0x1_0000, first, pages) };
        assert_eq!(
            st,
            RvgpuStatus::InvalidArgument,
            "pages {first}+{pages} of 2"
        );
    }
    assert_eq!(s.log().len(), before, "a refused call reached the thunks");
    assert_eq!(s.destroy(b), RvgpuStatus::Ok);
    // SAFETY: a destroyed handle is only looked up.
    let st = unsafe { rvgpu_buffer_map_va(b, 0x1_0000, 0, 1) };
    assert_eq!(st, RvgpuStatus::InvalidHandle);
}
