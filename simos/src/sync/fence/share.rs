//! Native fences across processes by NT handle (`crate::ob`): share, duplicate, open, close.
//!
//! A fence created shareable gets an NT handle in its creator's table
//! (`D3DKMTShareObjects`); the creator duplicates it into another process (`DuplicateHandle`),
//! which opens the fence from the handle in its own table
//! (`D3DKMTOpenNativeFenceFromNtHandle`,
//! <https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopennativefencefromnthandle>).
//! Each handle holds a reference on the OS's fence object: the fence outlives its instances
//! while a handle to it is open. Every failure a process can cause is an NTSTATUS.

use rvgpu_ddi::ntstatus::{STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER};

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::machine::Machine;

use super::monitored::MonitoredFence;
use super::state::{NativeFence, NtObject, ProcessVas};

impl Machine {
    /// `D3DKMTShareObjects` of `fence` (its process's instance): a new NT handle in that
    /// process's table. A fence not created shareable cannot be shared
    /// (`STATUS_INVALID_PARAMETER`).
    pub fn share_native_fence(&self, fence: &NativeFence) -> Result<u64, SimError> {
        let obj = &fence.obj;
        if !obj.shareable {
            return Err(SimError::DdiFailed(STATUS_INVALID_PARAMETER));
        }
        let _s = lock(&obj.settle_lock);
        {
            let mut st = lock(&obj.st);
            if st.destroyed || !st.instances.contains_key(&fence.local) {
                return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
            }
            st.nt_refs = st.nt_refs.saturating_add(1);
        }
        self.handles
            .insert(fence.process, NtObject::NativeFence(obj.clone()))
            .map_err(|s| {
                let mut st = lock(&obj.st);
                st.nt_refs = st.nt_refs.saturating_sub(1);
                SimError::DdiFailed(s)
            })
    }

    /// `DuplicateHandle` of `from`'s NT handle `h` into `to`'s table (the caller stands for a
    /// process holding `PROCESS_DUP_HANDLE` on both, as the creator or a broker does); returns
    /// the handle in `to`'s table.
    pub fn duplicate_handle(
        &self,
        from: ProcessId,
        h: u64,
        to: ProcessId,
    ) -> Result<u64, SimError> {
        let obj = self.handles.get(from, h).map_err(SimError::DdiFailed)?;
        let NtObject::NativeFence(f) = &obj;
        let _s = lock(&f.settle_lock);
        {
            let mut st = lock(&f.st);
            st.nt_refs = st.nt_refs.saturating_add(1);
        }
        self.handles.insert(to, obj.clone()).map_err(|s| {
            let mut st = lock(&f.st);
            st.nt_refs = st.nt_refs.saturating_sub(1);
            SimError::DdiFailed(s)
        })
    }

    /// `CloseHandle` of `process`'s NT handle `h`. The last reference to a fence without
    /// instances destroys it.
    pub fn close_nt_handle(&self, process: ProcessId, h: u64) -> Result<(), SimError> {
        let obj = self
            .handles
            .remove(process, h)
            .map_err(SimError::DdiFailed)?;
        self.release_nt_object(obj)
    }

    /// Process exit: every NT handle `process` still holds is closed.
    pub(crate) fn close_nt_handles_of(&self, process: ProcessId) -> Result<(), SimError> {
        for obj in self.handles.take_process(process) {
            self.release_nt_object(obj)?;
        }
        Ok(())
    }

    /// NT handles `process` holds (tests: nothing is left after exit).
    pub fn nt_handle_count(&self, process: ProcessId) -> usize {
        self.handles.count(process)
    }

    fn release_nt_object(&self, obj: NtObject) -> Result<(), SimError> {
        let NtObject::NativeFence(f) = obj;
        let _s = lock(&f.settle_lock);
        let last = {
            let mut st = lock(&f.st);
            st.nt_refs = st.nt_refs.saturating_sub(1);
            st.nt_refs == 0 && st.instances.is_empty() && !st.destroyed
        };
        if !last {
            return Ok(());
        }
        // The adapter may have gone meanwhile (it destroyed every fence as it stopped).
        let Some(a) = f.adapter.upgrade() else {
            return Ok(());
        };
        self.destroy_object(&a, &f)
    }

    /// `D3DKMTOpenNativeFenceFromNtHandle` for `process` on adapter `adapter`: `h` must be a
    /// handle in `process`'s own table. On the fence's adapter this opens an instance
    /// (NF-13); on another adapter with native fences, the cross-adapter fence (NF-16).
    pub fn open_native_fence_from_nt_handle(
        &self,
        adapter: usize,
        process: ProcessId,
        h: u64,
    ) -> Result<NativeFence, SimError> {
        let template = self.fence_of_nt_handle(process, h)?;
        if adapter == template.adapter() {
            self.open_native_fence(&template, process)
        } else {
            self.open_native_fence_cross_adapter(&template, adapter, process)
        }
    }

    /// The same, opened as a legacy monitored fence on an adapter without native fences
    /// (NF-18).
    pub fn open_native_fence_as_monitored_from_nt_handle(
        &self,
        adapter: usize,
        process: ProcessId,
        h: u64,
    ) -> Result<MonitoredFence, SimError> {
        let template = self.fence_of_nt_handle(process, h)?;
        self.open_native_fence_as_monitored(&template, adapter, process)
    }

    /// The fence `process`'s handle `h` refers to, as a stand-in instance of its creator for
    /// the open paths (they use only the object and its adapter).
    fn fence_of_nt_handle(&self, process: ProcessId, h: u64) -> Result<NativeFence, SimError> {
        let NtObject::NativeFence(f) = self.handles.get(process, h).map_err(SimError::DdiFailed)?;
        if lock(&f.st).destroyed {
            return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
        }
        Ok(NativeFence {
            process: f.creator,
            obj: f,
            local: 0,
            va: ProcessVas::default(),
        })
    }
}
