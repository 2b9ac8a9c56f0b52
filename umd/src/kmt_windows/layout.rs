//! The layouts of the windows-sys structures the thunks take, checked, and their flag values.
//! The WDDM 3.2 thunks' structures, which windows-sys lacks, are `rvgpu_ddi::d3dkmt`'s.

use windows_sys::Wdk::Graphics::Direct3D::{
    D3DDDI_ALLOCATIONINFO2, D3DDDI_MAPGPUVIRTUALADDRESS, D3DDDI_RESERVEGPUVIRTUALADDRESS,
    D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION, D3DKMT_CREATEALLOCATION,
    D3DKMT_CREATESYNCHRONIZATIONOBJECT2, D3DKMT_DESTROYALLOCATION2, D3DKMT_FREEGPUVIRTUALADDRESS,
    D3DKMT_UPDATEGPUVIRTUALADDRESS,
};

use crate::kmt::{
    UpdateGpuVaOp, UPDATE_GPU_VA_COPY, UPDATE_GPU_VA_MAP, UPDATE_GPU_VA_MAP_PROTECT,
    UPDATE_GPU_VA_UNMAP,
};

/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::Shared` (bit 0): the fence may be shared by NT handle.
pub(super) const SYNC_FLAG_SHARED: u32 = 1 << 0;
/// `D3DDDI_SYNCHRONIZATIONOBJECT_FLAGS::NtSecuritySharing` (bit 1): shared through
/// `D3DKMTShareObjects` (an NT handle) rather than a global handle.
pub(super) const SYNC_FLAG_NT_SECURITY_SHARING: u32 = 1 << 1;
/// `GENERIC_ALL`: what a D3D runtime asks for when it shares a sync object by NT handle.
pub(super) const GENERIC_ALL: u32 = 0x1000_0000;

/// Compile-time layout checks of one structure: `layout!(T { Field: offset, ... } size N)`
/// asserts `offset_of!(T, Field) == offset` for each field listed and `size_of::<T>() == N`
/// (either part may be left out).
macro_rules! layout {
    ($t:ident $({ $($field:ident: $off:literal),* $(,)? })? $(size $size:literal)?) => {
        $($(assert!(core::mem::offset_of!($t, $field) == $off);)*)?
        $(assert!(core::mem::size_of::<$t>() == $size);)?
    };
}

// The GPU VA thunks' structures come from windows-sys; their layout checked against the
// 22621 SDK's d3dukmdt.h / d3dkmthk.h (every D3DKMT_ALIGN64 member 8-aligned).
#[cfg(target_pointer_width = "64")]
const _: () = {
    layout!(D3DDDI_MAPGPUVIRTUALADDRESS {
        hAllocation: 32,
        Protection: 56,
        VirtualAddress: 88,
        PagingFenceValue: 96,
    } size 104);
    layout!(D3DDDI_RESERVEGPUVIRTUALADDRESS { Size: 32, VirtualAddress: 56 } size 72);
    layout!(D3DKMT_FREEGPUVIRTUALADDRESS size 24);
    // D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION: the type, then a 56-byte union (MapProtect's
    // members, hAllocation padded to 8); 22631 dxgkrnl copies operations at a 64-byte stride
    // and reads a MAP's hAllocation at offset 24.
    layout!(D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION { Anonymous: 8 } size 64);
    layout!(D3DKMT_UPDATEGPUVIRTUALADDRESS { Operations: 16, FenceValue: 40, Flags: 48 } size 56);
};

/// `D3DKMT_UPDATEGPUVIRTUALADDRESS::Flags.DoNotWait` (bit 0).
pub(super) const UPDATE_GPU_VA_DO_NOT_WAIT: u32 = 1 << 0;

/// One operation as the thunk takes it (the union member its type names).
pub(super) fn update_operation(op: &UpdateGpuVaOp) -> D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
    use windows_sys::Wdk::Graphics::Direct3D::{
        D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE, D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_0,
        D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_1, D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_2,
        D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_3,
    };
    let mut protection = D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE::default();
    protection.Anonymous.Value = op.protection.0;
    let mut out = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
        OperationType: op.operation_type,
        ..Default::default()
    };
    match op.operation_type {
        UPDATE_GPU_VA_MAP => {
            out.Anonymous.Map = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_0 {
                BaseAddress: op.base,
                SizeInBytes: op.size,
                hAllocation: op.allocation,
                AllocationOffsetInBytes: op.allocation_offset,
                AllocationSizeInBytes: op.allocation_size,
            };
        }
        UPDATE_GPU_VA_MAP_PROTECT => {
            out.Anonymous.MapProtect = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_1 {
                BaseAddress: op.base,
                SizeInBytes: op.size,
                hAllocation: op.allocation,
                AllocationOffsetInBytes: op.allocation_offset,
                AllocationSizeInBytes: op.allocation_size,
                Protection: protection,
                DriverProtection: op.driver_protection,
            };
        }
        UPDATE_GPU_VA_UNMAP => {
            out.Anonymous.Unmap = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_2 {
                BaseAddress: op.base,
                SizeInBytes: op.size,
                Protection: protection,
            };
        }
        UPDATE_GPU_VA_COPY => {
            out.Anonymous.Copy = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_0_3 {
                SourceAddress: op.base,
                SizeInBytes: op.size,
                DestAddress: op.dest,
            };
        }
        // Any other type goes as it is: the OS refuses it.
        _ => {}
    }
    out
}

// windows-sys' `D3DKMT_CREATESYNCHRONIZATIONOBJECT2` against the Windows SDK's d3dkmthk.h and
// d3dukmdt.h (x64): `Info` 8-aligned because its union has `D3DKMT_ALIGN64` members and a
// 64-byte `Reserved[8]` arm; in the monitored-fence arm the initial value, CPU address, GPU
// address and engine affinity follow each other at 8-byte steps.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use windows_sys::Wdk::Graphics::Direct3D::{
        D3DDDI_SYNCHRONIZATIONOBJECTINFO2, D3DDDI_SYNCHRONIZATIONOBJECTINFO2_0_4,
    };
    layout!(D3DDDI_SYNCHRONIZATIONOBJECTINFO2 { Anonymous: 8, SharedHandle: 72 } size 80);
    layout!(D3DDDI_SYNCHRONIZATIONOBJECTINFO2_0_4 {
        FenceValueCPUVirtualAddress: 8,
        FenceValueGPUVirtualAddress: 16,
        EngineAffinity: 24,
    });
    layout!(D3DKMT_CREATESYNCHRONIZATIONOBJECT2 { Info: 8, hSyncObject: 88 } size 96);
};

// The windows-sys structures of the allocation and residency thunks, checked against the
// member lists of d3dkmthk.h / d3dukmdt.h in the Windows SDK (x64 rules: pointers,
// `D3DKMT_ALIGN64` and `SIZE_T` members 8 bytes and 8-aligned; flag unions one UINT):
// - D3DKMT_CREATEALLOCATION:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_createallocation>
// - D3DDDI_ALLOCATIONINFO2:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_allocationinfo2>
// - D3DKMT_DESTROYALLOCATION2:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_destroyallocation2>
// - D3DDDICB_DESTROYALLOCATION2FLAGS:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddicb_destroyallocation2flags>
// - D3DDDI_MAKERESIDENT_FLAGS:
//   <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_makeresident_flags>
#[cfg(target_pointer_width = "64")]
const _: () = {
    use windows_sys::Wdk::Graphics::Direct3D::{
        D3DDDICB_DESTROYALLOCATION2FLAGS, D3DDDI_MAKERESIDENT_FLAGS,
    };
    layout!(D3DKMT_CREATEALLOCATION {
        pPrivateRuntimeData: 16,
        PrivateDriverDataSize: 40,
        NumAllocations: 44,
        Anonymous2: 48,
        Flags: 56,
        hPrivateRuntimeResourceHandle: 64,
    } size 72);
    layout!(D3DDDI_ALLOCATIONINFO2 {
        pPrivateDriverData: 16,
        PrivateDriverDataSize: 24,
        Flags: 32,
        GpuVirtualAddress: 40,
        Reserved: 56,
    } size 96);
    layout!(D3DKMT_DESTROYALLOCATION2 {
        phAllocationList: 8,
        AllocationCount: 16,
        Flags: 20,
    } size 24);
    layout!(D3DDDICB_DESTROYALLOCATION2FLAGS size 4);
    layout!(D3DDDI_MAKERESIDENT_FLAGS size 4);
};

/// `D3DDDICB_DESTROYALLOCATION2FLAGS::AssumeNotInUse` (bit 0).
pub(super) const DESTROY_ASSUME_NOT_IN_USE: u32 = 1 << 0;
/// `D3DDDI_MAKERESIDENT_FLAGS::CantTrimFurther` (bit 0).
pub(super) const MAKERESIDENT_CANT_TRIM_FURTHER: u32 = 1 << 0;

/// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission` (bit 4):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_createhwqueueflags>
pub const CREATEHWQUEUE_USER_MODE_SUBMISSION: u32 = 1 << 4;
