//! `D3DKMTShareObjects`' kernel entry, as 24H2 answers it: `K:DxgkShareObjects` @0x14032A230
//! (the user-mode call) into `K:DxgkShareObjectsInternal` @0x14032A300, with
//! `K:CreateSharedSyncNtObject` @0x1403289FC for a sync object: the caller's five arguments as
//! written, the checks in their order with their statuses, then a new NT handle in the
//! caller's table written to `*phSharedNtHandle`.
//!
//! The object manager's part (`ObCreateObject` capturing the `OBJECT_ATTRIBUTES`,
//! `ObInsertObject` granting `dwDesiredAccess`) is `crate::ob` and `crate::sync::fence::share`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use super::native_fence::SYNC_NT_SECURITY_SHARING;
use super::refusal::row::*;
use super::sync_from_cpu::{CallerProcess, SyncObject};
use crate::machine::Machine;

/// `D3DKMTShareObjects`' arguments (five, not one structure): `cObjects`, `hObjects`,
/// `pObjectAttributes`, `dwDesiredAccess`, `phSharedNtHandle`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShareObjects {
    /// `cObjects`.
    pub c_objects: u32,
    /// `hObjects`, an address in the caller's process.
    pub h_objects: u64,
    /// `pObjectAttributes`, an address in the caller's process.
    pub p_object_attributes: u64,
    /// `dwDesiredAccess`.
    pub desired_access: u32,
    /// `phSharedNtHandle`, an address in the caller's process.
    pub ph_shared_nt_handle: u64,
}

/// `OBJECT_ATTRIBUTES` in the x64 layout (48 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct ObjectAttributes {
    /// `Length`.
    pub length: u32,
    /// Alignment.
    pub _pad: u32,
    /// `RootDirectory`.
    pub root_directory: u64,
    /// `ObjectName` (a `UNICODE_STRING` address).
    pub object_name: u64,
    /// `Attributes`.
    pub attributes: u32,
    /// Alignment.
    pub _pad1: u32,
    /// `SecurityDescriptor`.
    pub security_descriptor: u64,
    /// `SecurityQualityOfService`.
    pub security_quality_of_service: u64,
}

const _: () = assert!(core::mem::size_of::<ObjectAttributes>() == 48);

/// Most handles one call takes (`cObjects - 1 > 2` is refused).
pub const MAX_OBJECTS: u32 = 3;

/// The Rust caller's own memory refusing an address it does not hold.
fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

refusals! {
    /// `D3DKMTShareObjects`'s refusals, in 24H2's order.
    ShareObjectsCheck => SHARE_OBJECTS_CHECKS {
        Count: "cObjects 0 or above 3" => INVALID_PARAMETER;
        ObjectsUnreadable: "hObjects not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        NullAttributes: "pObjectAttributes NULL" => INVALID_PARAMETER;
        ZeroObject: "hObjects[0] 0" => INVALID_PARAMETER;
        Unknown: "hObjects[0] neither a resource, a sync object nor a protected session of the caller's" => INVALID_PARAMETER;
        SyncCount: "a sync object with cObjects other than 1" => INVALID_PARAMETER;
        NotNtShared: "a sync object made without NtSecuritySharing" => INVALID_PARAMETER;
        Misaligned: "pObjectAttributes not 8-byte aligned" => DATATYPE_MISALIGNMENT;
        AttributesUnreadable: "pObjectAttributes not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Length: "Length not 48" => INVALID_PARAMETER;
        Attributes: "an Attributes bit of 0xFFFEE00D" => INVALID_PARAMETER;
        RootWithoutName: "RootDirectory without ObjectName" => OBJECT_NAME_INVALID;
        HandleUnwritable: "phSharedNtHandle not writable (the new handle is closed again)" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::write`); the entry closes the handle";
    }
}

/// `D3DKMTShareObjects`'s row of the thunk catalog ([`super::catalog`]).
pub const SHARE_OBJECTS: Thunk = Thunk {
    name: "D3DKMTShareObjects",
    source: Some(&[
        src("DxgkShareObjectsInternal", 0x14032A300),
        src("CreateSharedSyncNtObject", 0x1403289FC),
        src("ObpCaptureObjectCreateInformation", 0x14089CCA0),
    ]),
    checks: SHARE_OBJECTS_CHECKS,
    written_back: &["*phSharedNtHandle"],
    pending: Pending::No,
    entry: Some("share::dxgk_share_objects_internal"),
    gaps: "the simulated object manager holds only native fences: a monitored fence made with \
           NtSecuritySharing is refused with STATUS_NOT_SUPPORTED where 24H2 shares it; \
           attributes with a name, a security descriptor or quality of service are refused with STATUS_NOT_SUPPORTED where ObCreateObject captures them; \
           dwDesiredAccess is honoured for the handle's specific rights, READ_CONTROL and \
           GENERIC_ALL/MAXIMUM_ALLOWED (all), but GENERIC_READ, GENERIC_WRITE and \
           GENERIC_EXECUTE grant nothing: the type's GENERIC_MAPPING is data the pseudocode \
           does not show",
};

/// `DxgkShareObjectsInternal` for the caller's arguments `a`, in 24H2's order,
/// STATUS_INVALID_PARAMETER unless said:
/// 1. `cObjects` 0 or above [`MAX_OBJECTS`];
/// 2. `hObjects` captured from `mem` (its fault status);
/// 3. `pObjectAttributes` NULL;
/// 4. `hObjects[0]` 0;
/// 5. `hObjects[0]` not a sync object of the caller's (`caller`; 24H2's resource and protected
///    session entries: the simulation makes neither), or a sync object with `cObjects` other
///    than 1;
/// 6. `CreateSharedSyncNtObject`: the object made without `NtSecuritySharing` (a native fence:
///    not created shareable);
/// 7. `ObCreateObject`'s capture of the attributes from `mem` (`capture_attributes`);
/// 8. `ObInsertObject` with `dwDesiredAccess` (a full table: its status);
/// 9. the handle written to `phSharedNtHandle` (a fault: the handle closed again, as the
///    function's failure path closes it, and the fault's status).
///
/// Returns the new NT handle, in the caller's table.
pub fn dxgk_share_objects_internal(
    m: &Machine,
    a: &ShareObjects,
    caller: &dyn CallerProcess,
    mem: &dyn CallerMemory,
) -> Result<u64, NtStatus> {
    if a.c_objects.wrapping_sub(1) > MAX_OBJECTS - 1 {
        return Err(ShareObjectsCheck::Count.refuse());
    }
    let handles = mem.read(a.h_objects, a.c_objects * 4)?;
    if a.p_object_attributes == 0 {
        return Err(ShareObjectsCheck::NullAttributes.refuse());
    }
    let first = handles
        .get(..4)
        .and_then(|b| KmtHandle::read_from_bytes(b).ok())
        .unwrap_or(0);
    if first == 0 {
        return Err(ShareObjectsCheck::ZeroObject.refuse());
    }
    let o = caller
        .object(first)
        .ok_or(ShareObjectsCheck::Unknown.refuse())?;
    if a.c_objects != 1 {
        return Err(ShareObjectsCheck::SyncCount.refuse());
    }
    let p = caller
        .device(o.device)
        .ok_or(ShareObjectsCheck::Unknown.refuse())?;
    m.kmt(&p).thunk()?;
    let SyncObject::Native(f) = &o.object else {
        // A monitored fence: `CreateSharedSyncNtObject` refuses it without
        // `NtSecuritySharing`; with it, the simulation has no NT object of that kind.
        return Err(if o.flags & SYNC_NT_SECURITY_SHARING == 0 {
            ShareObjectsCheck::NotNtShared.refuse()
        } else {
            gap(STATUS_NOT_SUPPORTED)
        });
    };
    if !f.obj.shareable {
        return Err(ShareObjectsCheck::NotNtShared.refuse());
    }
    capture_attributes(mem, a.p_object_attributes)?;
    let nt = m
        .share_native_fence_with_access(f, a.desired_access)
        .map_err(super::process::status)?;
    if let Err(e) = mem.write(a.ph_shared_nt_handle, nt.as_bytes()) {
        let _ = m.close_nt_handle(f.process, nt);
        return Err(e);
    }
    Ok(nt)
}

/// `Attributes` bits the object manager refuses (`ObpCaptureObjectCreateInformation`).
pub const ATTRIBUTES_REFUSED: u32 = 0xFFFE_E00D;

/// `ObCreateObject`'s capture of the caller's `OBJECT_ATTRIBUTES` at `at`
/// (`ObpCaptureObjectCreateInformation` @0x14089CCA0 in 24H2's ntoskrnl), in its order: an
/// address not 8-byte aligned, STATUS_DATATYPE_MISALIGNMENT; the 48 bytes read (a fault, its
/// status); `Length` not 48 or an `Attributes` bit of [`ATTRIBUTES_REFUSED`],
/// STATUS_INVALID_PARAMETER; a security descriptor or quality of service, then a name,
/// STATUS_NOT_SUPPORTED (not modelled); a `RootDirectory` without a name,
/// STATUS_OBJECT_NAME_INVALID.
fn capture_attributes(mem: &dyn CallerMemory, at: u64) -> Result<ObjectAttributes, NtStatus> {
    if at & 7 != 0 {
        return Err(ShareObjectsCheck::Misaligned.refuse());
    }
    let size = core::mem::size_of::<ObjectAttributes>() as u32;
    let bytes = mem.read(at, size)?;
    let oa = ObjectAttributes::read_from_bytes(&bytes)
        .map_err(|_| ShareObjectsCheck::Length.refuse())?;
    if oa.length != size {
        return Err(ShareObjectsCheck::Length.refuse());
    }
    if oa.attributes & ATTRIBUTES_REFUSED != 0 {
        return Err(ShareObjectsCheck::Attributes.refuse());
    }
    if oa.security_descriptor != 0 || oa.security_quality_of_service != 0 || oa.object_name != 0 {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    if oa.root_directory != 0 {
        return Err(ShareObjectsCheck::RootWithoutName.refuse());
    }
    Ok(oa)
}

/// A Rust caller's memory for one `D3DKMTShareObjects` of one object (the Rust UMD, through
/// [`super::SimKmt`]): the handle array, attributes that name nothing, and the output handle,
/// each at an address of its own.
pub(crate) struct HostShare {
    handle: KmtHandle,
    out: core::cell::Cell<u64>,
}

impl HostShare {
    const HANDLES: u64 = 0x1_0000;
    const ATTRIBUTES: u64 = 0x2_0000;
    const OUT: u64 = 0x3_0000;

    /// The arguments the UMD's Windows thunk passes to share `handle` asking `desired`.
    pub(crate) fn args(desired: u32) -> ShareObjects {
        ShareObjects {
            c_objects: 1,
            h_objects: Self::HANDLES,
            p_object_attributes: Self::ATTRIBUTES,
            desired_access: desired,
            ph_shared_nt_handle: Self::OUT,
        }
    }

    /// The memory behind [`Self::args`] for `handle`.
    pub(crate) fn new(handle: KmtHandle) -> Self {
        Self {
            handle,
            out: core::cell::Cell::new(0),
        }
    }
}

impl CallerMemory for HostShare {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let oa = ObjectAttributes {
            length: core::mem::size_of::<ObjectAttributes>() as u32,
            ..Default::default()
        };
        let bytes = match at {
            Self::HANDLES => self.handle.as_bytes().to_vec(),
            Self::ATTRIBUTES => oa.as_bytes().to_vec(),
            _ => return Err(bad()),
        };
        bytes
            .get(..size as usize)
            .map(<[u8]>::to_vec)
            .ok_or_else(bad)
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus> {
        let v = u64::read_from_bytes(bytes).map_err(|_| bad())?;
        if at != Self::OUT {
            return Err(bad());
        }
        self.out.set(v);
        Ok(())
    }
}
