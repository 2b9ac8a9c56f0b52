//! This process's CPU waits on its native fences through one device ([`crate::wait::Waits`]):
//! every registration with the OS, and the re-arm after it, under one SRW lock, so that the
//! process's own waits never leave 24H2 a MonitoredValue above one of them.

use core::cell::UnsafeCell;
use core::ptr;

use rvgpu_ddi::d3dkmt::{d3dkmt_ptr, D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU};
use windows_sys::Wdk::Graphics::Direct3D::D3DKMTWaitForSynchronizationObjectFromCpu;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
use windows_sys::Win32::System::Threading::{
    AcquireSRWLockExclusive, CreateEventW, ReleaseSRWLockExclusive, SRWLOCK,
};

use super::device::WinKmt;
use super::status::check;
use crate::kmt::{KmtHandle, NtStatus};
use crate::wait::Waits;

/// The table and the event re-arming registrations signal (nobody waits on it: a re-arm
/// exists only to set MonitoredValue). Guarded by an SRW lock: a `WinKmt` is shared between
/// threads (the C API's adapters).
pub(super) struct CpuWaits {
    lock: UnsafeCell<SRWLOCK>,
    state: UnsafeCell<(Waits, HANDLE)>,
}

// SAFETY: `state` is only reached through `with`, which holds the SRW lock exclusively; the
// event handle is a process-wide kernel handle, usable from any thread.
unsafe impl Sync for CpuWaits {}
// SAFETY: as above; an unlocked SRWLOCK is plain data that may move.
unsafe impl Send for CpuWaits {}

impl core::fmt::Debug for CpuWaits {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("CpuWaits")
    }
}

impl CpuWaits {
    pub(super) fn new() -> Self {
        Self {
            // SRWLOCK_INIT is all zeros.
            lock: UnsafeCell::new(SRWLOCK {
                Ptr: ptr::null_mut(),
            }),
            state: UnsafeCell::new((Waits::default(), ptr::null_mut())),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Waits, &mut HANDLE) -> R) -> R {
        // SAFETY: `lock` is a valid, initialised SRWLOCK that does not move while `self` is
        // borrowed.
        unsafe { AcquireSRWLockExclusive(self.lock.get()) };
        // SAFETY: the exclusive lock is held, so this is the only reference to the state; `f`
        // does not reach `self` again (the closures below call the OS and `native_value`,
        // which takes another lock).
        let (w, e) = unsafe { &mut *self.state.get() };
        let r = f(w, e);
        // SAFETY: acquired above by this thread.
        unsafe { ReleaseSRWLockExclusive(self.lock.get()) };
        r
    }
}

impl Drop for CpuWaits {
    fn drop(&mut self) {
        let e = self.state.get_mut().1;
        if !e.is_null() {
            // SAFETY: the re-arm event this table created, closed once; the OS keeps its own
            // reference for registrations still pending.
            unsafe { CloseHandle(e) };
        }
    }
}

impl WinKmt {
    /// `D3DKMTWaitForSynchronizationObjectFromCpu` of one fence for `value` signalling `event`
    /// (null: the call blocks until the fence reaches it).
    pub(super) fn register(
        &self,
        fence: KmtHandle,
        value: u64,
        event: HANDLE,
    ) -> Result<(), NtStatus> {
        let args = D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
            hDevice: self.device,
            ObjectCount: 1,
            ObjectHandleArray: d3dkmt_ptr(&fence),
            FenceValueArray: d3dkmt_ptr(&value),
            hAsyncEvent: d3dkmt_ptr(event),
            ..Default::default()
        };
        // SAFETY: the D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU layout (asserted with its
        // definition); the arrays point to one handle and one value on this stack frame; the
        // OS validates the event handle (null: no event) and holds its own reference to it.
        check(unsafe { D3DKMTWaitForSynchronizationObjectFromCpu(ptr::from_ref(&args).cast()) })
    }

    /// A wait of this process on native fence `fence` for `value`, signalling `event`: the
    /// registration, then the re-arm at the process's lowest pending wait below it
    /// ([`Waits`]). Returns the waiter's id, for `end_native_wait`
    /// (an async wait never ends: it is forgotten once its value is seen reached).
    pub(super) fn register_native_wait(
        &self,
        fence: KmtHandle,
        value: u64,
        event: HANDLE,
    ) -> Result<u64, NtStatus> {
        self.waits.with(|w, rearm_event| {
            let Some(va) = w.board_of(fence) else {
                self.register(fence, value, event)?;
                let current = self.native_value(fence).unwrap_or(0);
                let (id, rearm) = w.add(fence, value, current);
                if let Some(low) = rearm {
                    self.rearm(fence, low, rearm_event);
                }
                return Ok(id);
            };
            // On the board: published before the registration, the others read after it
            // (crate::waitboard).
            let before = self.native_value(fence).unwrap_or(0);
            let slot = w.published(fence, before, Some(value));
            if let Some(slot) = w.changed(fence, slot) {
                if self.board(va, Some(slot), before, before).is_none() {
                    w.off_board(fence);
                }
            }
            self.register(fence, value, event)?;
            let current = self.native_value(fence).unwrap_or(0);
            let (id, rearm) = w.add(fence, value, current);
            let low = match w
                .board_of(fence)
                .and_then(|_| self.board(va, None, before, current))
            {
                Some(peers) => w.rearm_among(fence, value, current, peers),
                None => rearm,
            };
            if let Some(low) = low {
                self.rearm_on_board(fence, va, low, rearm_event);
            }
            Ok(id)
        })
    }

    /// The KMD's wait board of `fence` (named by `va`), publishing `slot` if any; the answer
    /// about the other openers, `None` if the KMD refused (no board: the C + 1 rule).
    fn board(
        &self,
        va: u64,
        slot: Option<crate::waitboard::Slot>,
        from: u64,
        to: u64,
    ) -> Option<crate::waitboard::Peers> {
        use zerocopy::IntoBytes;
        let asked = crate::waitboard::request(va, slot, from, to);
        let mut q = asked;
        self.escape_driver_private(q.as_mut_bytes()).ok()?;
        Some(crate::waitboard::answer(&asked, &q))
    }

    /// A re-arm at `value` on a fence on the board, checked against the board read after it
    /// (itself a registration, it may have raised MonitoredValue over a wait published
    /// meanwhile: [`Waits::confirm_among`]).
    fn rearm_on_board(&self, fence: KmtHandle, va: u64, value: u64, event: &mut HANDLE) {
        let before = self.native_value(fence).unwrap_or(0);
        self.rearm(fence, value, event);
        let current = self.native_value(fence).unwrap_or(0);
        let peers =
            self.board(va, None, before, current)
                .unwrap_or(crate::waitboard::Peers::Lowest {
                    next: u64::MAX,
                    passed: true,
                });
        if let Some(r) = Waits::confirm_among(value, current, peers) {
            self.rearm(fence, r, event);
        }
    }

    /// Waiter `id` of `fence` leaves; when the OS `released` it, the process's lowest wait
    /// still pending on the fence is re-armed (24H2 leaves MonitoredValue where the released
    /// wait had it while other waits remain: stale, below CurrentValue); on a shared fence
    /// nothing is ([`Waits::after_release`]).
    pub(super) fn end_native_wait(&self, fence: KmtHandle, id: u64, released: bool) {
        self.waits.with(|w, rearm_event| {
            w.remove(fence, id);
            if !released {
                return;
            }
            let current = self.native_value(fence).unwrap_or(0);
            if let Some(va) = w.board_of(fence) {
                // One call: the publish, answered with the others.
                let slot = w.published(fence, current, None);
                let slot = w.changed(fence, slot);
                let peers = self.board(va, slot, current, current);
                let low = match peers {
                    Some(peers) => w.after_release_among(fence, current, peers),
                    None => {
                        w.off_board(fence);
                        w.after_release(fence, current)
                    }
                };
                if let Some(low) = low {
                    self.rearm_on_board(fence, va, low, rearm_event);
                }
                return;
            }
            if let Some(low) = w.after_release(fence, current) {
                self.rearm(fence, low, rearm_event);
            }
        });
    }

    /// `fence` is shared with other processes from now on: its registrations re-arm at
    /// CurrentValue + 1 ([`Waits`]), or, when the KMD keeps a board for it (an escape
    /// publishing this process's pending waits is answered), at the lowest
    /// pending wait of every sharer. `current_gpu` names the fence to the KMD: CurrentValue's
    /// GPU VA in this process.
    pub fn share_waits(&self, fence: KmtHandle, current_gpu: u64) {
        self.waits.with(|w, _| {
            w.share(fence);
            if w.board_of(fence).is_some() {
                return;
            }
            // Waits made before the fence was shared are published too.
            let current = self.native_value(fence).unwrap_or(0);
            let slot = w.published(fence, current, None);
            if self
                .board(current_gpu, Some(slot), current, current)
                .is_some()
            {
                w.on_board(fence, current_gpu, slot);
            }
        });
    }

    /// After the OS queued a GPU wait on `fence` (`M:VidSchiAcquireSyncObjectForHwQueue`
    /// @0x14000396C moves MonitoredValue as a CPU wait does): the process's lowest CPU wait on
    /// it is re-armed (CurrentValue + 1 on a shared fence).
    pub(super) fn rearm_after_gpu_wait(&self, fence: KmtHandle) {
        let Some(current) = self.native_value(fence) else {
            return;
        };
        self.waits.with(|w, rearm_event| {
            if let Some(low) = w.after_gpu_wait(fence, current) {
                self.rearm(fence, low, rearm_event);
            }
        });
    }

    /// `fence` is destroyed: its waits go with it.
    pub(super) fn forget_native_waits(&self, fence: KmtHandle) {
        self.waits.with(|w, _| w.forget(fence));
    }

    /// One re-arming registration for `value` on the table's event (created at first use). A
    /// failure leaves MonitoredValue as the OS had it: the waits are still registered, and the
    /// blocking ones still re-read CurrentValue after each slice.
    fn rearm(&self, fence: KmtHandle, value: u64, event: &mut HANDLE) {
        if event.is_null() {
            // SAFETY: default security, manual reset, initially non-signalled, unnamed.
            *event = unsafe { CreateEventW(ptr::null(), 1, 0, ptr::null()) };
        }
        if !event.is_null() {
            let _ = self.register(fence, value, *event);
        }
    }
}
