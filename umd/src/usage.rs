//! Allocation usage tracking and CPU access (AL-01, AL-02, AL-06;
//! docs/memory.md "CPU access").
//!
//! Since WDDM 2.0 command buffers carry no allocation list, so VidMm cannot know which
//! allocations queued work touches: the UMD does (seed 002, "allocation usage tracking").
//!
//! - **What is tracked.** A [`Buffer`] is one resource as the application sees it; behind it
//!   are one or more *backings* (allocations). Commands that touch a buffer are encoded through
//!   a [`Batch`] ([`Batch::fill`], [`Batch::copy`]), so the UMD knows from the commands it
//!   wrote which backing each batch reads or writes; [`submit`] then records, per backing and
//!   per queue ([`Timeline`]), the last progress value that reads it and the last that writes
//!   it.
//! - **Locks** ([`Buffer::lock`], AL-02). A read lock waits for the GPU's writes, a write lock
//!   for every GPU access. With [`LockFlags::DO_NOT_WAIT`] a busy buffer returns
//!   [`LockError::WasStillDrawing`] at once; without it the UMD blocks in
//!   `D3DKMTWaitForSynchronizationObjectFromCpu` on each queue's progress fence (the monitored
//!   fence the OS signals), never polling.
//! - **Renaming** (AL-01). [`LockFlags::DISCARD`] on a busy buffer gives it a fresh backing at
//!   once and retires the old one; a retired backing is reused or destroyed once its last
//!   recorded use completes. [`LockFlags::NO_OVERWRITE`] maps without waiting: the caller
//!   promises not to touch what queued work uses.
//! - **Destruction** ([`Buffer::destroy`]): a backing the UMD knows idle is destroyed with
//!   `AssumeNotInUse`; one still in use is left to VidMm's deferred destruction (AL-03).
//! - **Cache maintenance** (AL-06). On a platform without I/O coherency
//!   ([`Kmt::io_coherent`] false) the GPU does not see the CPU's caches: the UMD calls
//!   `D3DKMTInvalidateCache` after a CPU write, before the GPU can read (at unlock), and after a
//!   GPU write, before the CPU reads (at the next lock, once the write has completed), since
//!   the CPU may hold lines it read, or speculatively fetched, before the GPU wrote.
//!
//! A [`Buffer`] is used by one thread at a time (`!Sync`), like a D3D immediate context.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, Ordering};

use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::{
    AllocationKind, AllocationPdd, ALLOCATION_CPU_VISIBLE, ALLOCATION_PDD_VERSION, PDD_MAGIC,
};

use crate::kmt::{
    Allocation, AllocationCpu, DestroyFlags, Kmt, KmtHandle, MakeResidentError, MakeResidentFlags,
    NtStatus,
};
use crate::retain::Retained;
pub use crate::submit::TimelineId;
use crate::submit::{KernelQueue, SubmitError, UserQueue};

/// A queue whose progress values order the work a buffer's uses are recorded against.
pub trait Timeline {
    /// Its id.
    fn timeline_id(&self) -> TimelineId;
    /// The highest progress value known complete (non-blocking).
    fn completed(&self) -> u64;
    /// What to wait on for `value`: `None` if complete, else a monitored fence and its value.
    fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError>;
    /// Set once the queue is destroyed. When `D3DKMTDestroyHwQueue` returns the queue is off
    /// the hardware (its work completed, or never runs), so a use recorded on it is over. `None`: the
    /// queue cannot tell, and its uses must always be accounted for by passing it.
    fn retired_flag(&self) -> Option<Arc<AtomicBool>> {
        None
    }
    /// Whether the OS sees the queue's work, so that VidMm defers destroying memory it uses
    /// (AL-03). 24H2 does not see a user-mode queue's ([`UserQueue::os_sees_work`]).
    fn os_sees_work(&self) -> bool {
        true
    }
    /// Holds retained allocation `r` until the queue completes `value` ([`crate::retain`]);
    /// false if the queue cannot (the caller then waits for `value` and lets go itself).
    fn retain_until(&self, r: &Arc<Retained>, value: u64) -> bool {
        let _ = (r, value);
        false
    }
}

/// A [`Timeline`] that takes batches.
pub trait TrackedQueue: Timeline {
    /// Submits `cmds`; returns the progress value that marks their completion.
    fn submit_commands(&mut self, cmds: &[Command]) -> Result<u64, SubmitError>;
}

macro_rules! timeline_for {
    ($q:ident { $($extra:item)* }) => {
        impl<K: Kmt> Timeline for $q<K> {
            $($extra)*
            fn timeline_id(&self) -> TimelineId {
                self.timeline()
            }
            fn completed(&self) -> u64 {
                $q::completed(self)
            }
            fn wait_target(&self, value: u64) -> Result<Option<(KmtHandle, u64)>, SubmitError> {
                $q::wait_target(self, value)
            }
            fn retired_flag(&self) -> Option<Arc<AtomicBool>> {
                Some(self.retired_flag())
            }
        }
        impl<K: Kmt> TrackedQueue for $q<K> {
            fn submit_commands(&mut self, cmds: &[Command]) -> Result<u64, SubmitError> {
                self.submit(cmds)
            }
        }
    };
}
timeline_for!(UserQueue {
    fn os_sees_work(&self) -> bool {
        UserQueue::os_sees_work(self)
    }
    fn retain_until(&self, r: &Arc<Retained>, value: u64) -> bool {
        UserQueue::retain_until(self, r.clone(), value);
        true
    }
});
timeline_for!(KernelQueue {});

/// How a buffer is locked (the C API's `RVGPU_LOCK_*` values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockFlags(pub u32);

impl LockFlags {
    /// The CPU reads: waits for the GPU's writes.
    pub const READ: Self = Self(1 << 0);
    /// The CPU writes: waits for every GPU access.
    pub const WRITE: Self = Self(1 << 1);
    /// Write, old contents not needed: renames a busy buffer instead of waiting.
    pub const DISCARD: Self = Self(1 << 2);
    /// Write where no queued work reads or writes: maps at once.
    pub const NO_OVERWRITE: Self = Self(1 << 3);
    /// Never block: a buffer that would need a wait returns
    /// [`LockError::WasStillDrawing`].
    pub const DO_NOT_WAIT: Self = Self(1 << 4);
    /// Every defined bit.
    pub const ALL: Self = Self(0x1f);

    /// Whether every bit of `f` is set.
    pub const fn contains(self, f: Self) -> bool {
        self.0 & f.0 == f.0
    }

    /// Both sets.
    pub const fn union(self, f: Self) -> Self {
        Self(self.0 | f.0)
    }

    /// Whether the CPU may write through this lock.
    pub const fn writes(self) -> bool {
        self.0 & (Self::WRITE.0 | Self::DISCARD.0 | Self::NO_OVERWRITE.0) != 0
    }
}

/// Why a buffer operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockError {
    /// The buffer is busy and the lock asked not to wait (AL-02).
    WasStillDrawing,
    /// A thunk failed.
    Kmt(NtStatus),
    /// A queue failed or was lost while the UMD waited on it.
    Submit(SubmitError),
    /// A recorded use names a queue the caller did not pass (pass every queue that may use
    /// the buffer).
    UnknownTimeline,
    /// Undefined flag bits, or a combination that means nothing (DISCARD with NO_OVERWRITE,
    /// DISCARD or NO_OVERWRITE for reading).
    BadFlags,
    /// Locked twice, or unlocked while not locked.
    LockState,
    /// A range outside the buffer, or not 8-byte aligned.
    OutOfRange,
}

impl From<NtStatus> for LockError {
    fn from(s: NtStatus) -> Self {
        Self::Kmt(s)
    }
}

impl From<SubmitError> for LockError {
    fn from(e: SubmitError) -> Self {
        Self::Submit(e)
    }
}

/// The last recorded use of a backing by one queue (0: none).
#[derive(Clone, Debug)]
struct Use {
    timeline: TimelineId,
    /// The queue's [`Timeline::retired_flag`].
    retired: Option<Arc<AtomicBool>>,
    read: u64,
    write: u64,
}

#[derive(Debug)]
struct Backing<M> {
    alloc: Allocation<M>,
    uses: Vec<Use>,
    /// The GPU may have written it since the CPU last invalidated its caches over it.
    gpu_wrote: bool,
}

impl<M> Backing<M> {
    /// The recorded values that must complete before the CPU touches it: every use for a
    /// write, the writes for a read.
    fn pending<'t>(
        &self,
        timelines: &[&'t dyn Timeline],
        for_write: bool,
    ) -> Result<Vec<(&'t dyn Timeline, u64)>, LockError> {
        let mut out = Vec::new();
        for u in &self.uses {
            let v = if for_write {
                u.read.max(u.write)
            } else {
                u.write
            };
            if v == 0 {
                continue;
            }
            let Some(t) = timelines.iter().find(|t| t.timeline_id() == u.timeline) else {
                // A queue the caller did not name: over only if it has been destroyed.
                if u.retired
                    .as_ref()
                    .is_some_and(|r| r.load(Ordering::Acquire))
                {
                    continue;
                }
                return Err(LockError::UnknownTimeline);
            };
            if t.completed() < v {
                out.push((*t, v));
            }
        }
        Ok(out)
    }

    fn idle(&self, timelines: &[&dyn Timeline]) -> Result<bool, LockError> {
        Ok(self.pending(timelines, true)?.is_empty())
    }
}

/// Most backings retired by renames and not yet complete; a discard beyond it waits for the
/// oldest (or, with DO_NOT_WAIT, reports WasStillDrawing), bounding the memory renames take.
pub const MAX_RENAMES_IN_FLIGHT: usize = 16;
/// Idle retired backings kept for the next discard instead of being destroyed.
const SPARE_BACKINGS: usize = 2;

#[derive(Debug)]
struct Inner<M> {
    current: Backing<M>,
    /// Renamed away: still in use, or idle spares.
    retired: Vec<Backing<M>>,
    pdd: AllocationPdd,
    coherent: bool,
    locked: Option<LockFlags>,
    renames: u64,
    waits: u64,
}

/// A resource with its own usage tracking: see the module documentation.
#[derive(Debug)]
pub struct Buffer<M> {
    inner: RefCell<Inner<M>>,
}

/// What [`Buffer::stats`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Discards that gave the buffer a new backing.
    pub renames: u64,
    /// Locks that blocked on a fence.
    pub waits: u64,
    /// Backings that exist (current and retired).
    pub backings: usize,
}

/// `D3DKMTMakeResident` of one allocation, waiting for the paging fence when VidMm returned
/// before its paging finished. Thunks without a residency model (`STATUS_NOT_SUPPORTED`)
/// keep allocations resident from creation.
fn make_resident<K: Kmt>(kmt: &K, h: KmtHandle) -> Result<(), NtStatus> {
    match kmt.make_resident(&[h], MakeResidentFlags::default()) {
        Ok(pf) if pf.fence != 0 && pf.value != 0 => kmt.wait_for_fence(pf.fence, pf.value),
        Ok(_) => Ok(()),
        Err(MakeResidentError::Status(s)) if s == crate::kmt::STATUS_NOT_SUPPORTED => Ok(()),
        Err(MakeResidentError::Status(s)) => Err(s),
        Err(MakeResidentError::OverBudget { .. }) => Err(crate::kmt::STATUS_NO_MEMORY),
    }
}

/// Creates one backing: `D3DKMTCreateAllocation2`, its GPU VA
/// ([`crate::kmt::map_new_allocation`]: 24H2 gives none at create), `D3DKMTMakeResident` (a
/// new allocation is on no residency list: "Residency overview"), a wait for the paging fence
/// of the Map, then one `D3DKMTLock2` kept for its life (seed 002: a UMD may keep an
/// allocation mapped while it exists).
fn create_backing<K: Kmt>(kmt: &K, pdd: &AllocationPdd) -> Result<Backing<K::Mem>, LockError> {
    let m = kmt.create_allocation_pdd(pdd)?;
    let made = crate::kmt::map_new_allocation(kmt, &m, pdd).and_then(|(va, paging)| {
        make_resident(kmt, m.handle)?;
        crate::kmt::wait_paging(kmt, paging)?;
        Ok((va, kmt.lock2(m.handle)?))
    });
    match made {
        Ok((gpu_va, mem)) => Ok(Backing {
            alloc: Allocation {
                handle: m.handle,
                gpu_va,
                size: m.size,
                mem,
            },
            uses: Vec::new(),
            gpu_wrote: false,
        }),
        Err(e) => {
            let _ = kmt.destroy_allocation2(
                m.handle,
                DestroyFlags {
                    assume_not_in_use: true,
                },
            );
            Err(e.into())
        }
    }
}

/// Waits (blocking, on monitored fences) until every `(timeline, value)` completed.
fn wait_all<K: Kmt>(kmt: &K, pending: &[(&dyn Timeline, u64)]) -> Result<(), LockError> {
    for &(t, v) in pending {
        if let Some((fence, fv)) = t.wait_target(v)? {
            kmt.wait_for_fence(fence, fv)?;
        }
    }
    Ok(())
}

impl<M: AllocationCpu + Clone> Buffer<M> {
    /// A CPU-visible data buffer of `size` bytes; `extra_flags` are further
    /// `rvgpu_hw::pdd::ALLOCATION_*` bits (e.g. `ALLOCATION_CPU_CACHED`).
    pub fn new<K: Kmt<Mem = M>>(kmt: &K, size: u64, extra_flags: u32) -> Result<Self, LockError> {
        let pdd = AllocationPdd {
            magic: PDD_MAGIC,
            version: ALLOCATION_PDD_VERSION,
            size,
            kind: AllocationKind::Buffer as u32,
            flags: ALLOCATION_CPU_VISIBLE | extra_flags,
            reserved: 0,
        };
        let current = create_backing(kmt, &pdd)?;
        Ok(Self {
            inner: RefCell::new(Inner {
                current,
                retired: Vec::new(),
                pdd,
                coherent: kmt.io_coherent(),
                locked: None,
                renames: 0,
                waits: 0,
            }),
        })
    }

    fn inner(&self) -> Result<core::cell::RefMut<'_, Inner<M>>, LockError> {
        self.inner
            .try_borrow_mut()
            .map_err(|_| LockError::LockState)
    }

    /// GPU VA of the current backing (commands encoded now use it).
    pub fn gpu_va(&self) -> u64 {
        self.inner
            .try_borrow()
            .map_or(0, |i| i.current.alloc.gpu_va)
    }

    /// The current backing's allocation handle.
    pub fn handle(&self) -> KmtHandle {
        self.inner
            .try_borrow()
            .map_or(0, |i| i.current.alloc.handle)
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.inner.try_borrow().map_or(0, |i| i.current.alloc.size)
    }

    /// Renames, waits and backings so far.
    pub fn stats(&self) -> BufferStats {
        self.inner
            .try_borrow()
            .map_or(BufferStats::default(), |i| BufferStats {
                renames: i.renames,
                waits: i.waits,
                backings: i.retired.len().saturating_add(1),
            })
    }

    /// Whether queued work on any of `timelines` still reads or writes the current backing.
    pub fn is_busy(&self, timelines: &[&dyn Timeline]) -> Result<bool, LockError> {
        Ok(!self.inner()?.current.idle(timelines)?)
    }

    /// Records that progress value `value` of `timeline` reads (and with `write`, writes) the
    /// backing `handle` (the one the command was encoded against).
    fn record(
        &self,
        handle: KmtHandle,
        timeline: TimelineId,
        retired: Option<&Arc<AtomicBool>>,
        value: u64,
        write: bool,
    ) {
        let Ok(mut i) = self.inner.try_borrow_mut() else {
            return;
        };
        let i = &mut *i;
        let b = if i.current.alloc.handle == handle {
            &mut i.current
        } else if let Some(b) = i.retired.iter_mut().find(|b| b.alloc.handle == handle) {
            b
        } else {
            return;
        };
        let u = match b.uses.iter_mut().find(|u| u.timeline == timeline) {
            Some(u) => u,
            None => {
                b.uses.push(Use {
                    timeline,
                    retired: retired.cloned(),
                    read: 0,
                    write: 0,
                });
                match b.uses.last_mut() {
                    Some(u) => u,
                    None => return,
                }
            }
        };
        u.read = u.read.max(value);
        if write {
            u.write = u.write.max(value);
            b.gpu_wrote = true;
        }
    }

    /// Maps the buffer for the CPU (AL-01, AL-02). `timelines` are the queues that may have
    /// used it. Returns the CPU view of the backing the caller must use until
    /// [`unlock`](Self::unlock).
    pub fn lock<K: Kmt<Mem = M>>(
        &self,
        kmt: &K,
        flags: LockFlags,
        timelines: &[&dyn Timeline],
    ) -> Result<M, LockError> {
        let discard = flags.contains(LockFlags::DISCARD);
        let no_overwrite = flags.contains(LockFlags::NO_OVERWRITE);
        let bad = flags.0 & !LockFlags::ALL.0 != 0
            || (discard && no_overwrite)
            || ((discard || no_overwrite) && flags.contains(LockFlags::READ))
            || !(flags.writes() || flags.contains(LockFlags::READ));
        if bad {
            return Err(LockError::BadFlags);
        }
        let mut i = self.inner()?;
        if i.locked.is_some() {
            return Err(LockError::LockState);
        }
        let no_wait = flags.contains(LockFlags::DO_NOT_WAIT);
        reclaim(kmt, &mut i, timelines)?;
        if discard {
            if !i.current.idle(timelines)? {
                rename(kmt, &mut i, timelines, no_wait)?;
            }
        } else if !no_overwrite {
            let pending = i.current.pending(timelines, flags.writes())?;
            if !pending.is_empty() {
                if no_wait {
                    return Err(LockError::WasStillDrawing);
                }
                wait_all(kmt, &pending)?;
                i.waits = i.waits.saturating_add(1);
            }
        }
        // AL-06: drop lines the CPU read before the GPU wrote (written work has completed,
        // except under NO_OVERWRITE, where the caller only touches ranges no work uses).
        if !i.coherent && i.current.gpu_wrote {
            let (h, size) = (i.current.alloc.handle, i.current.alloc.size);
            kmt.invalidate_cache(h, 0, size)?;
            i.current.gpu_wrote = false;
        }
        i.locked = Some(flags);
        Ok(i.current.alloc.mem.clone())
    }

    /// Ends a lock. After a CPU write on a non-coherent platform, writes the CPU's caches back
    /// so the GPU reads what the CPU wrote (AL-06).
    pub fn unlock<K: Kmt<Mem = M>>(&self, kmt: &K) -> Result<(), LockError> {
        let mut i = self.inner()?;
        let flags = i.locked.take().ok_or(LockError::LockState)?;
        if !i.coherent && flags.writes() {
            let (h, size) = (i.current.alloc.handle, i.current.alloc.size);
            kmt.invalidate_cache(h, 0, size)?;
        }
        Ok(())
    }

    /// Destroys every backing: the ones the UMD knows idle with `AssumeNotInUse`, the others
    /// through VidMm's deferred destruction (AL-03). A backing that work the OS cannot see
    /// still uses ([`Timeline::os_sees_work`]: 24H2's user-mode queues) is held by each such
    /// queue and destroyed when the last is done with it ([`crate::retain`]). Never blocks.
    pub fn destroy<K: Kmt<Mem = M>>(
        self,
        kmt: &K,
        timelines: &[&dyn Timeline],
    ) -> Result<(), LockError> {
        let i = self.inner.into_inner();
        let mut first = Ok(());
        for b in core::iter::once(i.current).chain(i.retired) {
            let r = destroy_backing(kmt, &b, timelines);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// [`Buffer::destroy`] of one backing.
fn destroy_backing<K: Kmt, M>(
    kmt: &K,
    b: &Backing<M>,
    timelines: &[&dyn Timeline],
) -> Result<(), LockError> {
    let handle = b.alloc.handle;
    // A use on a queue the caller did not name: let VidMm decide.
    let pending = b.pending(timelines, true).ok();
    let idle = pending.as_ref().is_some_and(Vec::is_empty);
    let blind: Vec<(&dyn Timeline, u64)> = pending
        .unwrap_or_default()
        .into_iter()
        .filter(|(t, _)| !t.os_sees_work())
        .collect();
    if !blind.is_empty() {
        // Every such queue holds it; the last to finish destroys it. A queue that cannot hold
        // it is waited for here and lets go even if the wait failed (its work is over or will
        // never run), so the count always reaches zero; the first error is returned.
        let r = Retained::new(handle, blind.len());
        let mut first = Ok(());
        for (t, value) in blind {
            if !t.retain_until(&r, value) {
                let waited = wait_all(kmt, &[(t, value)]);
                let released = r.release(kmt).map_err(LockError::from);
                if first.is_ok() {
                    first = waited.and(released);
                }
            }
        }
        return first;
    }
    kmt.destroy_allocation2(
        handle,
        DestroyFlags {
            assume_not_in_use: idle,
        },
    )
    .map_err(LockError::from)
}

/// Retired backings whose work completed: keep a few as spares, destroy the rest (known idle,
/// so `AssumeNotInUse`).
fn reclaim<K: Kmt>(
    kmt: &K,
    i: &mut Inner<K::Mem>,
    timelines: &[&dyn Timeline],
) -> Result<(), LockError> {
    let mut spares = 0usize;
    let mut keep = Vec::with_capacity(i.retired.len());
    for mut b in core::mem::take(&mut i.retired) {
        if !b.idle(timelines)? {
            keep.push(b);
        } else if spares < SPARE_BACKINGS {
            spares += 1;
            b.uses.clear();
            keep.push(b);
        } else {
            kmt.destroy_allocation2(
                b.alloc.handle,
                DestroyFlags {
                    assume_not_in_use: true,
                },
            )?;
        }
    }
    i.retired = keep;
    Ok(())
}

/// Gives the buffer an idle backing (a spare, or a new allocation) and retires the busy one.
fn rename<K: Kmt>(
    kmt: &K,
    i: &mut Inner<K::Mem>,
    timelines: &[&dyn Timeline],
    no_wait: bool,
) -> Result<(), LockError> {
    let spare = i.retired.iter().position(|b| b.uses.is_empty());
    let fresh = match spare {
        Some(p) => i.retired.swap_remove(p),
        None => {
            if i.retired.len() >= MAX_RENAMES_IN_FLIGHT {
                // Too much renamed memory in flight: wait for the oldest instead.
                if no_wait {
                    return Err(LockError::WasStillDrawing);
                }
                let Some(oldest) = i.retired.first() else {
                    return Err(LockError::LockState);
                };
                let pending = oldest.pending(timelines, true)?;
                wait_all(kmt, &pending)?;
                i.waits = i.waits.saturating_add(1);
                i.retired.remove(0)
            } else {
                create_backing(kmt, &i.pdd)?
            }
        }
    };
    let old = core::mem::replace(&mut i.current, fresh);
    i.current.uses.clear();
    i.retired.push(old);
    i.renames = i.renames.saturating_add(1);
    Ok(())
}

/// Commands with the buffers they touch, for [`submit`].
#[derive(Debug)]
pub struct Batch<'b, M> {
    cmds: Vec<Command>,
    uses: Vec<(&'b Buffer<M>, KmtHandle, bool)>,
}

impl<M> Default for Batch<'_, M> {
    fn default() -> Self {
        Self {
            cmds: Vec::new(),
            uses: Vec::new(),
        }
    }
}

/// `[offset, offset + bytes)` as a GPU VA in `buf`'s current backing, and that backing.
fn span<M: AllocationCpu + Clone>(
    buf: &Buffer<M>,
    offset: u64,
    bytes: u64,
) -> Result<(u64, KmtHandle), LockError> {
    let i = buf.inner.try_borrow().map_err(|_| LockError::LockState)?;
    let end = offset.checked_add(bytes).ok_or(LockError::OutOfRange)?;
    if bytes == 0
        || !offset.is_multiple_of(8)
        || !bytes.is_multiple_of(8)
        || end > i.current.alloc.size
    {
        return Err(LockError::OutOfRange);
    }
    let va = i
        .current
        .alloc
        .gpu_va
        .checked_add(offset)
        .ok_or(LockError::OutOfRange)?;
    Ok((va, i.current.alloc.handle))
}

impl<'b, M: AllocationCpu + Clone> Batch<'b, M> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// FILL `bytes` of `dst` at `offset` with `pattern` (the GPU writes `dst`).
    pub fn fill(
        &mut self,
        dst: &'b Buffer<M>,
        offset: u64,
        bytes: u64,
        pattern: u64,
    ) -> Result<(), LockError> {
        let (va, h) = span(dst, offset, bytes)?;
        self.cmds.push(Command::Fill {
            dst: va,
            bytes,
            pattern,
        });
        self.uses.push((dst, h, true));
        Ok(())
    }

    /// COPY `bytes` from `src` at `src_offset` to `dst` at `dst_offset` (the GPU reads `src`
    /// and writes `dst`; they must be different buffers).
    pub fn copy(
        &mut self,
        src: &'b Buffer<M>,
        src_offset: u64,
        dst: &'b Buffer<M>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<(), LockError> {
        if core::ptr::eq(src, dst) {
            return Err(LockError::OutOfRange);
        }
        let (s, sh) = span(src, src_offset, bytes)?;
        let (d, dh) = span(dst, dst_offset, bytes)?;
        self.cmds.push(Command::Copy {
            src: s,
            dst: d,
            bytes,
        });
        self.uses.push((src, sh, false));
        self.uses.push((dst, dh, true));
        Ok(())
    }

    /// A command that touches no tracked buffer (fence operations, timestamps, NOPs).
    pub fn command(&mut self, c: Command) {
        self.cmds.push(c);
    }

    /// The encoded commands.
    pub fn commands(&self) -> &[Command] {
        &self.cmds
    }
}

/// Submits `batch` on `queue` and records, for every buffer it touches, that the returned
/// progress value reads or writes the backing each command was encoded against (AL-01).
pub fn submit<Q: TrackedQueue, M: AllocationCpu + Clone>(
    queue: &mut Q,
    batch: Batch<'_, M>,
) -> Result<u64, SubmitError> {
    let value = queue.submit_commands(&batch.cmds)?;
    let id = queue.timeline_id();
    let retired = queue.retired_flag();
    for (buf, h, write) in batch.uses {
        buf.record(h, id, retired.as_ref(), value, write);
    }
    Ok(value)
}
