//! The argument checks 24H2's Dxgkrnl makes on `D3DKMTCreateAllocation2` and
//! `D3DKMTDestroyAllocation2` before it reaches the device's allocations, in 24H2's order
//! (`K:DxgkCreateAllocationInternal` @0x140304ED8, `K:DxgkDestroyAllocation2` @0x14032F7A0,
//! `K:DxgkDestroyAllocationHelper` @0x14032FBB8). The handle lookups between them are the
//! caller's (each is one closure here), so the gdi32 bridge and a test share one order.
//! Both thunks have their kernel entries here ([`dxgk_create_allocation_internal`],
//! [`dxgk_destroy_allocation2`]).

use zerocopy::{FromBytes, IntoBytes};

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use crate::adapter::AdapterShared;
use crate::machine::Machine;
use crate::ums::UmsProcess;

use super::refusal::row::*;
pub use rvgpu_ddi::d3dkmt::{
    D3DDDI_ALLOCATIONINFO2, D3DKMT_CREATEALLOCATION, D3DKMT_DESTROYALLOCATION2,
};

/// `D3DDDICB_DESTROYALLOCATION2FLAGS::AssumeNotInUse`.
pub const DESTROY_ASSUME_NOT_IN_USE: u32 = 1 << 0;

/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateResource`.
pub const CREATE_RESOURCE: u32 = 1 << 0;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateShared`.
pub const CREATE_SHARED: u32 = 1 << 1;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateProtected`.
pub const CREATE_PROTECTED: u32 = 1 << 3;
/// `D3DKMT_CREATEALLOCATIONFLAGS::ExistingSysMem`.
pub const EXISTING_SYS_MEM: u32 = 1 << 5;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateWriteCombined`.
pub const CREATE_WRITE_COMBINED: u32 = 1 << 8;
/// `D3DKMT_CREATEALLOCATIONFLAGS::CreateCached`.
pub const CREATE_CACHED: u32 = 1 << 9;
/// `D3DKMT_CREATEALLOCATIONFLAGS::OpenCrossAdapter`.
pub const OPEN_CROSS_ADAPTER: u32 = 1 << 12;
/// `D3DKMT_CREATEALLOCATIONFLAGS::StandardAllocation`.
pub const STANDARD_ALLOCATION: u32 = 1 << 16;
/// `D3DKMT_CREATEALLOCATIONFLAGS::ExistingSection`.
pub const EXISTING_SECTION: u32 = 1 << 17;
/// `D3DKMT_CREATEALLOCATIONFLAGS::NoKmdAccess`.
pub const NO_KMD_ACCESS: u32 = 1 << 20;
/// Most allocations one `D3DKMTCreateAllocation2` takes.
pub const MAX_CREATE_ALLOCATIONS: u32 = 0x682AA;
/// `D3DDDICB_DESTROYALLOCATION2FLAGS` bits 2 to 30 (`Reserved`): refused from user mode.
pub const DESTROY_RESERVED: u32 = 0x7FFF_FFFC;

fn bad() -> NtStatus {
    NtStatus(STATUS_INVALID_PARAMETER)
}

/// `DxgkCreateAllocationInternal`'s checks on `D3DKMT_CREATEALLOCATION` from an ordinary
/// process (DXGPROCESS +0x198 bit 8 clear: every process of the simulation), each
/// STATUS_INVALID_PARAMETER, in 24H2's order after `hDevice` was found in the caller's table:
/// `NoKmdAccess` with `StandardAllocation`, or without test signing; `NumAllocations` above
/// [`MAX_CREATE_ALLOCATIONS`]; `CreateProtected`, `CreateWriteCombined`, `CreateCached` or
/// `OpenCrossAdapter`; `ExistingSysMem` or `ExistingSection` without `StandardAllocation`;
/// (`StandardAllocation`'s own parameters next, not read); `CreateShared` without
/// `CreateResource`; neither `hResource` nor an allocation.
pub fn create_allocation_checks(
    test_signing: bool,
    flags: u32,
    num_allocations: u32,
    h_resource: u32,
) -> Result<(), NtStatus> {
    type C = CreateAllocation2Check;
    let standard = flags & STANDARD_ALLOCATION != 0;
    if flags & NO_KMD_ACCESS != 0 && standard {
        return Err(C::FlagsNoKmdAccessFlags.refuse());
    }
    if flags & NO_KMD_ACCESS != 0 && !test_signing {
        return Err(C::FlagsNoKmdAccessWithout.refuse());
    }
    if num_allocations > MAX_CREATE_ALLOCATIONS {
        return Err(C::NumAllocationsAboveX682AA.refuse());
    }
    let privileged = CREATE_PROTECTED | CREATE_WRITE_COMBINED | CREATE_CACHED | OPEN_CROSS_ADAPTER;
    if flags & privileged != 0 {
        return Err(C::CreateProtectedCreateWriteCombinedCreateCached.refuse());
    }
    if flags & EXISTING_SYS_MEM != 0 && !standard {
        return Err(C::ExistingSysMemWithoutStandardAllocation.refuse());
    }
    if flags & EXISTING_SECTION != 0 && !standard {
        return Err(C::ExistingSectionWithoutStandardAllocation.refuse());
    }
    if flags & CREATE_SHARED != 0 && flags & CREATE_RESOURCE == 0 {
        return Err(C::CreateSharedWithoutCreateResource.refuse());
    }
    if h_resource == 0 && num_allocations == 0 {
        return Err(C::HResourceNumAllocations.refuse());
    }
    Ok(())
}

/// `DxgkDestroyAllocation2`'s and `DxgkDestroyAllocationHelper`'s checks on
/// `D3DKMT_DESTROYALLOCATION2` before `hDevice` is looked up, each
/// STATUS_INVALID_PARAMETER: a `Flags` bit of [`DESTROY_RESERVED`]; `hResource` with
/// `AllocationCount`.
pub fn destroy_allocation2_checks(
    flags: u32,
    h_resource: u32,
    allocation_count: u32,
) -> Result<(), NtStatus> {
    if flags & DESTROY_RESERVED != 0 {
        return Err(DestroyAllocation2Check::Flags.refuse());
    }
    if h_resource != 0 && allocation_count != 0 {
        return Err(DestroyAllocation2Check::ResourceAndCount.refuse());
    }
    Ok(())
}

refusals! {
    /// `D3DKMTDestroyAllocation2`'s refusals, in 24H2's order.
    DestroyAllocation2Check => DESTROY_ALLOCATION2_CHECKS {
        Flags: "a Flags bit of 0x7FFFFFFC" => INVALID_PARAMETER;
        ResourceAndCount: "hResource with AllocationCount" => INVALID_PARAMETER;
        Device: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
    }
}

/// `D3DKMTDestroyAllocation2`'s row of the thunk catalog ([`super::catalog`]).
pub const DESTROY_ALLOCATION2: Thunk = Thunk {
    name: "D3DKMTDestroyAllocation2",
    source: Some(&[
        src("DxgkDestroyAllocation2", 0x14032F7A0),
        src("DxgkDestroyAllocationHelper", 0x14032FBB8),
    ]),
    checks: DESTROY_ALLOCATION2_CHECKS,
    written_back: &[],
    pending: Pending::No,
    entry: Some("allocation::dxgk_destroy_allocation2"),
    gaps: "DxgkDestroyAllocationInternal not read: a listed handle that is not an \
           allocation of hDevice is STATUS_INVALID_PARAMETER here, before any is \
           destroyed; hResource is STATUS_NOT_SUPPORTED (the UMD makes no resources)",
};

/// `DxgkDestroyAllocation2` for the caller's structure `a`, in 24H2's order:
/// 1. [`destroy_allocation2_checks`];
/// 2. `hDevice` not in the caller's handle table (`device`): STATUS_INVALID_PARAMETER;
/// 3. a resource: STATUS_NOT_SUPPORTED (the simulation makes none);
/// 4. the list read from the caller (`list`: its fault status); a handle not an allocation
///    of `hDevice` in the caller's table (`allocation`: its device): STATUS_INVALID_PARAMETER,
///    before any allocation is destroyed;
/// 5. each allocation to VidMm's deferred destruction (AL-03; `AssumeNotInUse`: at once), then
///    what VidMm can free now is freed.
///
/// Returns the destroyed handles (the caller's table forgets them); nothing is written back.
pub fn dxgk_destroy_allocation2(
    m: &Machine,
    a: &D3DKMT_DESTROYALLOCATION2,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    list: impl FnOnce(u64, u32) -> Result<Vec<KmtHandle>, NtStatus>,
    allocation: impl Fn(KmtHandle) -> Option<KmtHandle>,
) -> Result<Vec<KmtHandle>, NtStatus> {
    destroy_allocation2_checks(a.Flags, a.hResource, a.AllocationCount)?;
    let p = device(a.hDevice).ok_or(DestroyAllocation2Check::Device.refuse())?;
    if a.hResource != 0 {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    let handles = list(a.phAllocationList, a.AllocationCount)?;
    if handles.iter().any(|&h| allocation(h) != Some(p.device)) {
        return Err(gap(STATUS_INVALID_PARAMETER));
    }
    let sh = m.kmt(&p).thunk()?;
    let assume_not_in_use = a.Flags & DESTROY_ASSUME_NOT_IN_USE != 0;
    for &h in &handles {
        crate::ums::allocation::destroy_allocation2(m, &sh, p.device, h, assume_not_in_use)
            .map_err(|e| super::process::not_in_table(super::process::status(e)))?;
    }
    m.reap_allocations(&sh).map_err(super::process::status)?;
    Ok(handles)
}

/// What `DxgkCreateAllocationInternal` writes back into the caller's structure once
/// `DXGDEVICE::CreateAllocation` ran, whatever it answered: `hResource` and `hGlobalShare`
/// (4..12) and `Flags` (56..60).
pub const CREATE_WRITTEN_BACK: [core::ops::Range<usize>; 2] = [4..12, 56..60];
/// `D3DKMT_CREATEALLOCATIONFLAGS::CrossAdapter`.
pub const CROSS_ADAPTER: u32 = 1 << 11;
/// `D3DDDI_ALLOCATIONINFOFLAGS::Primary`.
pub const INFO_PRIMARY: u32 = 1 << 0;
/// `D3DDDI_ALLOCATIONINFOFLAGS::Stereo`.
pub const INFO_STEREO: u32 = 1 << 1;
/// Most private driver data one allocation's copy takes here; above it the pool allocation
/// fails, STATUS_NO_MEMORY as 24H2's `operator new[]` failing answers (24H2 asks the pool for
/// twice the size; the simulation bounds what a caller makes it copy).
pub const MAX_ALLOCATION_PRIVATE_DATA: u32 = 1 << 20;

/// One allocation the call made: its handle, the GPU VA the reading gives at create (0 under
/// 24H2) and its size.
pub type Made = rvgpu_umd::kmt::MappedGpu;

refusals! {
    /// `D3DKMTCreateAllocation2`'s refusals, in 24H2's order.
    CreateAllocation2Check => CREATE_ALLOCATION2_CHECKS {
        StructureReadable: "the structure not readable" => ACCESS_VIOLATION,
            elsewhere "the caller captures the structure before the entry";
        HDeviceCallerS: "hDevice not in the caller's handle table" => INVALID_PARAMETER;
        FlagsNoKmdAccessFlags: "Flags.NoKmdAccess with Flags.StandardAllocation" => INVALID_PARAMETER;
        FlagsNoKmdAccessWithout: "Flags.NoKmdAccess without test signing" => INVALID_PARAMETER;
        NumAllocationsAboveX682AA: "NumAllocations above 0x682AA" => INVALID_PARAMETER;
        CreateProtectedCreateWriteCombinedCreateCached: "CreateProtected, CreateWriteCombined, CreateCached or OpenCrossAdapter \
            from an unprivileged process" => INVALID_PARAMETER;
        ExistingSysMemWithoutStandardAllocation: "ExistingSysMem without StandardAllocation from an unprivileged process" => INVALID_PARAMETER;
        ExistingSectionWithoutStandardAllocation: "ExistingSection without StandardAllocation" => INVALID_PARAMETER;
        CreateSharedWithoutCreateResource: "CreateShared without CreateResource" => INVALID_PARAMETER;
        HResourceNumAllocations: "no hResource and NumAllocations 0" => INVALID_PARAMETER;
        DeviceActive: "the device not active" => DEVICE_REMOVED;
        PoolHandleList: "no pool for the handle list" => NO_MEMORY,
            elsewhere "not modelled: NumAllocations is bounded before, and the simulated pool holds that list";
        StandardAllocationDriverBelow: "StandardAllocation on a driver below WDDM 2.0" => INVALID_PARAMETER;
        CrossAdapterAdapterWithout: "CrossAdapter on an adapter without cross-adapter resources, or without CreateShared" => INVALID_PARAMETER;
        PAllocationInfo2Readable: "pAllocationInfo2 not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        EntrySFlags: "an entry's Flags.Stereo without Flags.Primary, or with CrossAdapter" => INVALID_PARAMETER;
        EntrySPrivateDriverDataSize: "an entry's PrivateDriverDataSize above 0x7FFFFFFF" => INVALID_PARAMETER;
        PoolEntryS: "no pool for an entry's private driver data" => NO_MEMORY;
        EntrySPPrivateDriverData: "an entry's pPrivateDriverData not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        PAllocationInfo2StructureWritable: "pAllocationInfo2 or the structure not writable (what was made is destroyed)" => ACCESS_VIOLATION,
            elsewhere "the caller's memory and `write_back` answer it";
    }
}

/// `D3DKMTCreateAllocation2`'s row of the thunk catalog ([`super::catalog`]).
pub const CREATE_ALLOCATION2: Thunk = Thunk {
    name: "D3DKMTCreateAllocation2",
    source: Some(&[
        src("DxgkCreateAllocationInternal", 0x140304ED8),
        src("DXGDEVICE::CreateAllocation", 0x140356E10),
        src("VIDMM_GLOBAL::CreateOneAllocation", 0x1400DCBA4),
    ]),
    checks: CREATE_ALLOCATION2_CHECKS,
    written_back: &[
        "each entry's hAllocation (no GpuVirtualAddress: a VA comes only from Map)",
        "hResource, hGlobalShare and Flags once DXGDEVICE::CreateAllocation ran, whatever it \
         answered: on success hResource and hGlobalShare 0 (no resource), on a failure the \
         caller's hResource and hGlobalShare 0",
    ],
    pending: Pending::No,
    entry: Some("allocation::dxgk_create_allocation_internal"),
    gaps: "ValidateStandardAllocationParams and DXGDEVICE::OpenResourceObject not read; after \
           24H2's checks a resource, a flag, StandardAllocation, runtime or driver data of the \
           whole call, pSystemMem and a Primary entry (whose display-source checks are not \
           modelled) are STATUS_NOT_SUPPORTED (the UMD uses none); the adapter's cross-adapter \
           bit is not modelled (CrossAdapter with CreateShared is refused with the resource); \
           the simulated pool gives an entry at most 1 MiB of private driver data; the \
           unprivileged process is DXGPROCESS +0x198 bit 8 clear, which every process of the \
           simulation is",
};

/// `DxgkCreateAllocationInternal` (`K:` @0x140304ED8) and `DXGDEVICE::CreateAllocation`
/// (`K:` @0x140356E10) for the caller's structure `a` as written, in 24H2's order,
/// STATUS_INVALID_PARAMETER unless said:
/// 1. `hDevice` not in the caller's handle table (`device`);
/// 2. [`create_allocation_checks`];
/// 3. `K:COREDEVICEACCESS::AcquireShared` @0x14000F550: the device not active (stopped with
///    its adapter, `lock::device_active`; a device VidSch put in error goes on),
///    STATUS_DEVICE_REMOVED; then `StandardAllocation` on an adapter whose D3DKMT driver
///    version is below WDDM 2.0's (`d3dkmt_driver_version`);
/// 4. `CreateAllocation`: `CrossAdapter` without `CreateShared` (the adapter's cross-adapter
///    bit is checked first with the same status);
/// 5. the `NumAllocations` entries at `pAllocationInfo2` captured from `mem` (its fault
///    status); per entry, `Stereo` without `Primary`, and with `CrossAdapter`, `Stereo`;
/// 6. per entry, `PrivateDriverDataSize` above 0x7FFFFFFF, then its private data captured
///    (above [`MAX_ALLOCATION_PRIVATE_DATA`], STATUS_NO_MEMORY; a fault, its status);
/// 7. what the simulation does not make, STATUS_NOT_SUPPORTED (the catalog's gaps): a
///    resource (`hResource`, `CreateResource`), any other flag, a `Primary` entry, runtime or
///    whole-call driver data, `pSystemMem`;
/// 8. each allocation: `DxgkDdiCreateAllocation` with the entry's private data (the UMD's
///    `AllocationPdd`; another size is STATUS_INVALID_PARAMETER, what the KMD's DDI answers
///    for it) and VidMm's `M:VIDMM_GLOBAL::CreateOneAllocation` @0x1400DCBA4; a failure
///    destroys those made before it;
/// 9. each entry's `hAllocation` written to the caller's list (and the VA where the reading
///    gives one at create);
///
/// from step 4 on, `write_back` gets `a` with what 24H2 writes ([`CREATE_WRITTEN_BACK`]:
/// `hResource` 0 and `hGlobalShare` 0 on success, the caller's `hResource` on failure). A
/// fault writing the list or the structure destroys what was made and answers the fault, as
/// `DxgkCreateAllocationInternal` destroys the allocations when the copy back fails.
pub fn dxgk_create_allocation_internal(
    m: &Machine,
    a: &mut D3DKMT_CREATEALLOCATION,
    device: impl FnOnce(u32) -> Option<UmsProcess>,
    mem: &dyn CallerMemory,
    write_back: impl FnOnce(&D3DKMT_CREATEALLOCATION) -> Result<(), NtStatus>,
) -> Result<Vec<Made>, NtStatus> {
    let p = device(a.hDevice).ok_or(CreateAllocation2Check::HDeviceCallerS.refuse())?;
    let signing = m.os_config().test_signing;
    create_allocation_checks(signing, a.Flags, a.NumAllocations, a.hResource)?;
    let sh = m.kmt(&p).thunk()?;
    super::lock::device_active(&sh, p.device, CreateAllocation2Check::DeviceActive.refuse())?;
    if a.Flags & STANDARD_ALLOCATION != 0 && d3dkmt_driver_version(&sh) < KMT_DRIVERVERSION_WDDM_2_0
    {
        return Err(CreateAllocation2Check::StandardAllocationDriverBelow.refuse());
    }
    a.hGlobalShare = 0;
    let made = device_create_allocation(m, &sh, p, a, mem);
    let written = write_back(a);
    match (made, written) {
        (Ok(made), Ok(())) => Ok(made),
        (Ok(made), Err(e)) => {
            undo(m, &sh, p, &made);
            Err(e)
        }
        (Err(e), _) => Err(e),
    }
}

/// `KMT_DRIVERVERSION_WDDM_2_0`, below which 24H2 refuses a standard allocation.
const KMT_DRIVERVERSION_WDDM_2_0: u32 = 2000;

/// The adapter's D3DKMT driver version (DXGADAPTER +3004), which `K:DXGADAPTER::Initialize`
/// @0x14018FAF8 derives from the `WDDMVersion` the driver reported in its DRIVERCAPS with
/// `K:DxgkConvertWddmVersionToD3DKMTDriverVersion` @0x14007E640 (that table, and 1105 for a
/// version it does not list). Below WDDM 1.3 `Initialize` picks 1000, 1105, 1200 or 1300 from
/// state the simulation does not keep; all are below 2000, the one value the create compares
/// with, as the table's answers there are.
fn d3dkmt_driver_version(a: &AdapterShared) -> u32 {
    let wddm = crate::base::lock::lock(&a.caps).map_or(0, |c| c.WDDMVersion as u32);
    match wddm {
        0x3200 => 3200,
        0x3100 => 3100,
        0x3000 => 3000,
        0x2900 => 2900,
        0x2800 => 2800,
        0x2700 => 2700,
        0x2600 => 2600,
        0x2500 => 2500,
        0x2400 => 2400,
        0x2300 => 2300,
        0x2200 => 2200,
        0x2100 => 2100,
        0x2000 => 2000,
        0x1300 => 1300,
        0x1200 => 1200,
        _ => 1105,
    }
}

/// `DXGDEVICE::CreateAllocation` (`K:` @0x140356E10) from its first check on: steps 4 to 9 of
/// [`dxgk_create_allocation_internal`]. On success `a.hResource` is 0 (no resource).
fn device_create_allocation(
    m: &Machine,
    sh: &AdapterShared,
    p: UmsProcess,
    a: &mut D3DKMT_CREATEALLOCATION,
    mem: &dyn CallerMemory,
) -> Result<Vec<Made>, NtStatus> {
    type C = CreateAllocation2Check;
    let cross = a.Flags & CROSS_ADAPTER != 0;
    if cross && a.Flags & CREATE_SHARED == 0 {
        return Err(C::CrossAdapterAdapterWithout.refuse());
    }
    let stride = core::mem::size_of::<D3DDDI_ALLOCATIONINFO2>() as u32;
    // At most 0x682AA entries (step 2): 96 bytes each fit in a u32.
    let list = match a.NumAllocations {
        0 => Vec::new(),
        n => mem.read(a.pAllocationInfo2, n.saturating_mul(stride))?,
    };
    let infos: Vec<D3DDDI_ALLOCATIONINFO2> = list
        .chunks_exact(stride as usize)
        .filter_map(|c| D3DDDI_ALLOCATIONINFO2::read_from_bytes(c).ok())
        .collect();
    for info in &infos {
        let stereo = info.Flags & INFO_STEREO != 0;
        if stereo && (cross || info.Flags & INFO_PRIMARY == 0) {
            return Err(C::EntrySFlags.refuse());
        }
    }
    let mut pdds = Vec::with_capacity(infos.len());
    for info in &infos {
        let size = info.PrivateDriverDataSize;
        if size > 0x7FFF_FFFF {
            return Err(C::EntrySPrivateDriverDataSize.refuse());
        }
        pdds.push(if info.pPrivateDriverData == 0 || size == 0 {
            Vec::new()
        } else if size > MAX_ALLOCATION_PRIVATE_DATA {
            return Err(C::PoolEntryS.refuse());
        } else {
            mem.read(info.pPrivateDriverData, size)?
        });
    }
    let runtime = a.pPrivateRuntimeData != 0 || a.pPrivateDriverData != 0;
    let primary = infos.iter().any(|i| i.Flags & INFO_PRIMARY != 0);
    let sysmem = infos.iter().any(|i| i.pSystemMem != 0);
    if a.hResource != 0 || a.Flags != 0 || runtime || primary || sysmem {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    let mut made = Vec::with_capacity(pdds.len());
    m.reap_allocations(sh).map_err(super::process::status)?;
    for bytes in &pdds {
        let one = rvgpu_umd::kmt::AllocationPdd::read_from_bytes(bytes)
            .map_err(|_| gap(STATUS_INVALID_PARAMETER))
            .and_then(|pdd| {
                m.create_allocation2(sh, p.device, pdd.size, bytes)
                    .map_err(super::process::status)
            });
        match one {
            Ok((handle, alloc, gpu_va)) => made.push(Made {
                handle,
                gpu_va,
                size: alloc.len,
            }),
            Err(e) => {
                undo(m, sh, p, &made);
                return Err(e);
            }
        }
    }
    for (i, one) in made.iter().enumerate() {
        let entry = a
            .pAllocationInfo2
            .wrapping_add(u64::from(stride).wrapping_mul(i as u64));
        let mut out = mem.write(entry, one.handle.as_bytes());
        // 24H2 writes no VA back (`answers::AllocationVa::MappedByCaller`); the pages'
        // reading returns one.
        if one.gpu_va != 0 && out.is_ok() {
            let at = entry
                .wrapping_add(
                    core::mem::offset_of!(D3DDDI_ALLOCATIONINFO2, GpuVirtualAddress) as u64,
                );
            out = mem.write(at, one.gpu_va.as_bytes());
        }
        if let Err(e) = out {
            undo(m, sh, p, &made);
            return Err(e);
        }
    }
    a.hResource = 0;
    Ok(made)
}

/// What a failed create made goes again, at once (nothing referenced it yet).
fn undo(m: &Machine, sh: &AdapterShared, p: UmsProcess, made: &[Made]) {
    for one in made {
        let _ = crate::ums::allocation::destroy_allocation2(m, sh, p.device, one.handle, true);
    }
    let _ = m.reap_allocations(sh);
}

/// A Rust caller's memory for one `D3DKMTCreateAllocation2` (the Rust UMD, through
/// [`super::SimKmt`]): the allocation list and each entry's private data at addresses of
/// their own, as the Windows thunk's structures would be in the caller's process.
pub(crate) struct HostCreate {
    list: core::cell::RefCell<Vec<u8>>,
    pdd: Vec<u8>,
}

impl HostCreate {
    const LIST_AT: u64 = 0x1_0000;
    const PDD_AT: u64 = 0x1_0000_0000;

    /// One allocation described by `pdd`.
    pub(crate) fn one(pdd: &[u8]) -> Self {
        let info = D3DDDI_ALLOCATIONINFO2 {
            pPrivateDriverData: Self::PDD_AT,
            PrivateDriverDataSize: u32::try_from(pdd.len()).unwrap_or(u32::MAX),
            ..Default::default()
        };
        Self {
            list: core::cell::RefCell::new(info.as_bytes().to_vec()),
            pdd: pdd.to_vec(),
        }
    }

    /// The structure the UMD's Windows thunk fills for it on `h_device`.
    pub(crate) fn structure(&self, h_device: u32) -> D3DKMT_CREATEALLOCATION {
        D3DKMT_CREATEALLOCATION {
            hDevice: h_device,
            NumAllocations: 1,
            pAllocationInfo2: Self::LIST_AT,
            ..Default::default()
        }
    }
}

impl CallerMemory for HostCreate {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let got = match at {
            Self::LIST_AT => self.list.borrow().get(..size as usize).map(<[u8]>::to_vec),
            Self::PDD_AT => self.pdd.get(..size as usize).map(<[u8]>::to_vec),
            _ => None,
        };
        got.ok_or_else(bad)
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus> {
        let mut list = self.list.borrow_mut();
        let from = usize::try_from(at.wrapping_sub(Self::LIST_AT)).map_err(|_| bad())?;
        let to = from.checked_add(bytes.len()).ok_or_else(bad)?;
        list.get_mut(from..to)
            .ok_or_else(bad)?
            .copy_from_slice(bytes);
        Ok(())
    }
}
