//! A simulated process's D3DKMT thunks ([`SimKmt`]) and what every kernel entry of
//! `crate::kmt` shares: the CPU views the thunks hand out ([`SimMem`], [`SimDoorbell`],
//! [`SimFence`]), the thunk's entry cost and the mapping of the simulated kernel's errors to
//! the caller's status. Below every entry: the entries name it, it names none of them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rvgpu_ddi::ntstatus::{STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_UNSUCCESSFUL};
use rvgpu_device::SysAlloc;
use rvgpu_umd::kmt::{AllocationCpu, DoorbellCpu, DoorbellStatus, FenceCpu, KmtHandle, NtStatus};

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::machine::cpucache::CpuCache;
use crate::machine::Machine;
use crate::sync::fence::{MonitoredFence, NativeFence, NativeFenceDesc};
use crate::ums::{DoorbellCpuState, UmsProcess};

/// Burns `rounds` rounds of a loop the compiler cannot remove: the modelled system-call and
/// thunk-entry cost of one D3DKMT call ([`crate::OsConfig::thunk_cost`]). Deterministic, so
/// instruction counts stay exact; its own symbol so callgrind can report it apart.
#[inline(never)]
pub fn charge_thunk_cost(rounds: u32) {
    let mut x = 0u32;
    for i in 0..rounds {
        x = std::hint::black_box(x ^ i);
    }
    std::hint::black_box(x);
}

/// The status of a destroy or share naming a handle that is not (any longer) in the caller's
/// D3DKMT handle table: destroyed before, another process's, 0, a global handle or an NT
/// handle. Wine's `dlls/win32u/tests/d3dkmt.c`, whose `ok()` lines pass on Windows:
/// `D3DKMTDestroySynchronizationObject` and `D3DKMTDestroyAllocation` "destroying multiple
/// times fails" with STATUS_INVALID_PARAMETER, as do a zeroed argument, the global handle
/// ("cannot destroy the global D3DKMT_HANDLE") and an NT handle ("cannot destroy the
/// handle"); `D3DKMTShareObjects` of a destroyed handle is STATUS_INVALID_PARAMETER too.
pub(super) fn not_in_table(s: NtStatus) -> NtStatus {
    if s.0 == STATUS_INVALID_HANDLE {
        NtStatus(STATUS_INVALID_PARAMETER)
    } else {
        s
    }
}

/// `got`'s value, or its error as a status after `undo` ran (the object made for it goes).
pub(super) fn handle_or_undo<T>(
    got: Result<T, SimError>,
    undo: impl FnOnce(),
) -> Result<T, NtStatus> {
    got.map_err(|e| {
        undo();
        status(e)
    })
}

pub(super) fn status(e: SimError) -> NtStatus {
    NtStatus(e.status().unwrap_or(STATUS_UNSUCCESSFUL))
}

/// CPU view of an allocation: its memory, word by word, or through the CPU cache when the
/// view is cached and the GPU does not snoop (AL-06).
#[derive(Clone, Debug)]
pub struct SimMem {
    pub(super) alloc: SysAlloc,
    pub(super) cache: Option<Arc<CpuCache>>,
}

impl SimMem {
    /// The allocation.
    pub fn alloc(&self) -> &SysAlloc {
        &self.alloc
    }

    /// The CPU cache this view goes through (`None`: the view reaches memory directly).
    pub fn cache(&self) -> Option<&Arc<CpuCache>> {
        self.cache.as_ref()
    }
}

impl AllocationCpu for SimMem {
    fn store(&self, offset: u64, value: u64) {
        if let Some(c) = &self.cache {
            return c.store(offset, value);
        }
        if let Some(w) = self.alloc.word(offset) {
            w.store(value, Ordering::Release);
        }
    }
    fn load(&self, offset: u64) -> u64 {
        if let Some(c) = &self.cache {
            return c.load(offset);
        }
        self.alloc
            .word(offset)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }
}

/// CPU views of a doorbell: the OS mapping object, its status page and the queue's
/// last-queued progress value.
#[derive(Clone, Debug)]
pub struct SimDoorbell {
    pub(super) cpu: Arc<DoorbellCpuState>,
}

impl SimDoorbell {
    /// The OS object behind the views (tests: where the mapping points, write counts).
    pub fn state(&self) -> &Arc<DoorbellCpuState> {
        &self.cpu
    }
}

impl DoorbellCpu for SimDoorbell {
    fn ring(&self, value: u64) {
        self.cpu.ring(value);
    }
    fn status(&self) -> DoorbellStatus {
        DoorbellStatus::from_raw(self.cpu.status())
    }
    fn set_last_queued(&self, value: u64) {
        self.cpu.set_last_queued(value);
    }
}

/// Read-only CPU view of a fence value: a monitored fence the OS made (a progress or paging
/// fence), or a native fence's CurrentValue.
#[derive(Clone, Debug)]
pub enum SimFence {
    /// A monitored fence.
    Monitored(MonitoredFence),
    /// A native fence of the process.
    Native(NativeFence),
}

impl FenceCpu for SimFence {
    fn value(&self) -> u64 {
        match self {
            Self::Monitored(f) => f.value(),
            Self::Native(f) => f.current_value(),
        }
    }
}

/// The D3DKMT thunks of one simulated process (its D3D device on one adapter).
#[derive(Clone, Copy, Debug)]
pub struct SimKmt<'m> {
    pub(super) m: &'m Machine,
    pub(super) p: UmsProcess,
}

impl Machine {
    /// The D3DKMT thunks of `p` (what its UMD calls).
    pub fn kmt(&self, p: &UmsProcess) -> SimKmt<'_> {
        SimKmt::new(self, *p)
    }
}

impl<'m> SimKmt<'m> {
    /// The thunks of `p` on machine `m` (see [`Machine::kmt`]).
    pub fn new(m: &'m Machine, p: UmsProcess) -> Self {
        Self { m, p }
    }

    /// The process.
    pub fn process(&self) -> UmsProcess {
        self.p
    }

    /// The machine.
    pub fn machine(&self) -> &'m Machine {
        self.m
    }

    /// A native fence of this process as `desc` describes it.
    pub(super) fn create_default_fence(
        &self,
        desc: NativeFenceDesc,
    ) -> Result<NativeFence, NtStatus> {
        self.m.create_native_fence_on(&self.p, desc).map_err(status)
    }

    /// `f` with its new D3DKMT handle, as a thunk returns it to a user-mode image; a fence that
    /// gets no handle is destroyed again.
    pub(super) fn with_raw_kmt_handle(
        &self,
        f: NativeFence,
    ) -> Result<(KmtHandle, NativeFence), NtStatus> {
        let h = self.kmt_handle_or_destroy(&f)?;
        Ok((h, f))
    }

    /// A new D3DKMT handle for `f`; a fence that gets none is destroyed again (no object
    /// without a handle outlives the failed create or open).
    pub(super) fn kmt_handle_or_destroy(&self, f: &NativeFence) -> Result<KmtHandle, NtStatus> {
        handle_or_undo(self.m.native_fence_kmt_handle(f), || {
            let _ = self.m.destroy_native_fence(f);
        })
    }

    /// This process's instance with D3DKMT handle `h` (another process's handle names
    /// nothing here).
    pub(super) fn own_native_fence(&self, h: KmtHandle) -> Result<NativeFence, NtStatus> {
        match self.m.native_fence_by_kmt(self.p.adapter, h) {
            Some(f) if f.process() == self.p.pid => Ok(f),
            _ => Err(NtStatus(STATUS_INVALID_HANDLE)),
        }
    }

    /// Entry of one D3DKMT call: charges the modelled transition cost, then resolves the
    /// adapter.
    pub(super) fn thunk(&self) -> Result<Arc<AdapterShared>, NtStatus> {
        self.thunk_borrowed().cloned()
    }

    /// [`Self::thunk`] with the adapter borrowed from the machine, for a call that keeps no
    /// count of its own (the submission's).
    pub(super) fn thunk_borrowed(&self) -> Result<&'m Arc<AdapterShared>, NtStatus> {
        let a = self.m.adapter_shared(self.p.adapter).map_err(status)?;
        charge_thunk_cost(a.os.thunk_cost);
        Ok(a)
    }

    /// A D3DKMT call that is one thunk on this process's device: [`Self::thunk`], then `f` with
    /// the adapter and the device handle, its error as the caller's status.
    pub(super) fn on_device<T>(
        &self,
        f: impl FnOnce(&AdapterShared, KmtHandle) -> Result<T, SimError>,
    ) -> Result<T, NtStatus> {
        let a = self.thunk()?;
        f(&a, self.p.device).map_err(status)
    }

    pub(super) fn adapter(&self) -> Result<Arc<AdapterShared>, NtStatus> {
        self.m
            .adapter_shared(self.p.adapter)
            .map(Arc::clone)
            .map_err(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NF-13 local handles: a fence whose D3DKMT handle cannot be made is destroyed again
    /// (the undo runs once) and the caller gets the handle table's status; a handle that is
    /// made undoes nothing.
    #[test]
    fn nf_13_a_fence_without_a_kmt_handle_is_destroyed_with_the_failure() {
        let mut undone = 0;
        let got: Result<KmtHandle, NtStatus> = handle_or_undo(
            Err(SimError::DdiFailed(
                rvgpu_ddi::ntstatus::STATUS_INSUFFICIENT_RESOURCES,
            )),
            || undone += 1,
        );
        assert_eq!(
            got,
            Err(NtStatus(rvgpu_ddi::ntstatus::STATUS_INSUFFICIENT_RESOURCES))
        );
        assert_eq!(undone, 1);
        let got = handle_or_undo(Ok::<KmtHandle, SimError>(0xC000_0040), || undone += 1);
        assert_eq!(got, Ok(0xC000_0040));
        assert_eq!(undone, 1);
    }
}
