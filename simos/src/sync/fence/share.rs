//! Native fences across processes by NT handle (`crate::ob`): share, duplicate, open, close.
//!
//! A fence created shareable gets an NT handle in its creator's table
//! (`D3DKMTShareObjects`); the creator duplicates it into another process (`DuplicateHandle`),
//! which opens the fence from the handle in its own table
//! (`D3DKMTOpenNativeFenceFromNtHandle`,
//! <https://learn.microsoft.com/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtopennativefencefromnthandle>).
//! Each handle holds a reference on the OS's fence object: the fence outlives its instances
//! while a handle to it is open. Every failure a process can cause is an NTSTATUS.

use std::sync::Arc;

use rvgpu_ddi::ntstatus::{STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER};

/// The shared sync object's specific right to wait on it: an open through a handle without
/// it is `NoWait` (`K:NtDxgkOpenNativeFenceFromNtHandleInternal` @0x1401E15EC sets `NoWait`
/// from bit 0 of the handle's granted access and `NoSignal` from bit 1).
pub const SYNC_ACCESS_WAIT: u32 = 0x1;
/// The right to signal it (see [`SYNC_ACCESS_WAIT`]).
pub const SYNC_ACCESS_SIGNAL: u32 = 0x2;
/// `READ_CONTROL`: what the open references the handle for (`ObReferenceObjectByHandle` with
/// 0x20000 in the same function); without it the open is STATUS_ACCESS_DENIED.
pub const READ_CONTROL: u32 = 0x0002_0000;
/// `GENERIC_ALL`.
pub const GENERIC_ALL: u32 = 0x1000_0000;
/// `MAXIMUM_ALLOWED`.
pub const MAXIMUM_ALLOWED: u32 = 0x0200_0000;
/// `STANDARD_RIGHTS_ALL` and the two specific rights: what `GENERIC_ALL` and
/// `MAXIMUM_ALLOWED` grant the creator here (the type's `GENERIC_MAPPING` is data the
/// pseudocode does not show; the catalog's gaps say so).
pub const ALL_ACCESS: u32 = 0x001F_0000 | SYNC_ACCESS_WAIT | SYNC_ACCESS_SIGNAL;

/// The access a handle made with `desired` (`D3DKMTShareObjects`' `dwDesiredAccess`, through
/// `ObInsertObject` in `K:DxgkShareObjectsInternal` @0x14032A300) grants: `GENERIC_ALL` or
/// `MAXIMUM_ALLOWED` all of [`ALL_ACCESS`], the standard and specific bits as asked; the other
/// generic bits grant nothing here (not modelled).
pub fn granted(desired: u32) -> u32 {
    if desired & (GENERIC_ALL | MAXIMUM_ALLOWED) != 0 {
        return ALL_ACCESS;
    }
    desired & ALL_ACCESS
}

use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::ob::HandleTables;

use super::native::destroy_object;
use crate::state::sync::fence::{FenceObj, NativeFence, NtObject, ProcessVas};

/// `D3DKMTShareObjects` of `fence` (its process's instance): a new NT handle in that
/// process's table, granting [`granted`]`(desired)`. A fence not created shareable cannot be
/// shared (`STATUS_INVALID_PARAMETER`).
pub(crate) fn share(
    handles: &HandleTables<NtObject>,
    fence: &NativeFence,
    desired: u32,
) -> Result<u64, SimError> {
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
    insert_counted(handles, fence.process, obj, granted(desired))
}

/// `DuplicateHandle` of `from`'s NT handle `h` into `to`'s table with the same access; returns
/// the handle in `to`'s table.
pub(crate) fn duplicate(
    handles: &HandleTables<NtObject>,
    from: ProcessId,
    h: u64,
    to: ProcessId,
) -> Result<u64, SimError> {
    let NtObject::NativeFence(f, access) = handles.get(from, h).map_err(SimError::DdiFailed)?;
    let _s = lock(&f.settle_lock);
    {
        let mut st = lock(&f.st);
        st.nt_refs = st.nt_refs.saturating_add(1);
    }
    insert_counted(handles, to, &f, access)
}

/// Puts a handle to `f` in `process`'s table, its NT reference already counted by the caller
/// (under `f`'s settle lock); a table that refuses it takes the count back.
fn insert_counted(
    handles: &HandleTables<NtObject>,
    process: ProcessId,
    f: &Arc<FenceObj>,
    access: u32,
) -> Result<u64, SimError> {
    handles
        .insert(process, NtObject::NativeFence(f.clone(), access))
        .map_err(|s| {
            let mut st = lock(&f.st);
            st.nt_refs = st.nt_refs.saturating_sub(1);
            SimError::DdiFailed(s)
        })
}

/// `CloseHandle` of `process`'s NT handle `h`. The last reference to a fence without
/// instances destroys it.
pub(crate) fn close(
    handles: &HandleTables<NtObject>,
    process: ProcessId,
    h: u64,
) -> Result<(), SimError> {
    let obj = handles.remove(process, h).map_err(SimError::DdiFailed)?;
    release(obj)
}

/// Process exit: every NT handle `process` still holds is closed.
pub(crate) fn close_all_of(
    handles: &HandleTables<NtObject>,
    process: ProcessId,
) -> Result<(), SimError> {
    for obj in handles.take_process(process) {
        release(obj)?;
    }
    Ok(())
}

fn release(obj: NtObject) -> Result<(), SimError> {
    let NtObject::NativeFence(f, _) = obj;
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
    let Some(a) = f.adapter() else {
        return Ok(());
    };
    destroy_object(&a, &f)
}

/// The fence `process`'s handle `h` refers to, as a stand-in instance of its creator for
/// the open paths (they use only the object and its adapter), with the handle's access.
pub(crate) fn fence_of_nt_handle(
    handles: &HandleTables<NtObject>,
    process: ProcessId,
    h: u64,
) -> Result<(NativeFence, u32), SimError> {
    let NtObject::NativeFence(f, access) = handles.get(process, h).map_err(SimError::DdiFailed)?;
    if lock(&f.st).destroyed {
        return Err(SimError::DdiFailed(STATUS_INVALID_HANDLE));
    }
    Ok((
        NativeFence {
            process: f.creator,
            obj: f,
            local: 0,
            va: ProcessVas::default(),
        },
        access,
    ))
}
