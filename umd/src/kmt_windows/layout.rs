//! The flag values the thunks pass, and one GPU VA update operation as the thunk takes it.
//! The structures are `rvgpu_ddi::d3dkmt`'s, each with its layout check.

use rvgpu_ddi::d3dkmt::D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION;

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

/// `D3DKMT_UPDATEGPUVIRTUALADDRESS::Flags.DoNotWait` (bit 0).
pub(super) const UPDATE_GPU_VA_DO_NOT_WAIT: u32 = 1 << 0;

/// One operation as the thunk takes it (the union arm its type names).
pub(super) fn update_operation(op: &UpdateGpuVaOp) -> D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
    let mut out = D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
        OperationType: op.operation_type,
        BaseAddress: op.base,
        SizeInBytes: op.size,
        ..Default::default()
    };
    match op.operation_type {
        UPDATE_GPU_VA_MAP | UPDATE_GPU_VA_MAP_PROTECT => {
            out.hAllocation = op.allocation;
            out.AllocationOffsetInBytes = op.allocation_offset;
            out.AllocationSizeInBytes = op.allocation_size;
            if op.operation_type == UPDATE_GPU_VA_MAP_PROTECT {
                out.Protection = op.protection.0;
                out.DriverProtection = op.driver_protection;
            }
        }
        UPDATE_GPU_VA_UNMAP => out.set_operand(op.protection.0),
        UPDATE_GPU_VA_COPY => out.set_operand(op.dest),
        // Any other type goes as it is: the OS refuses it.
        _ => {}
    }
    out
}

/// `D3DDDICB_DESTROYALLOCATION2FLAGS::AssumeNotInUse` (bit 0):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddicb_destroyallocation2flags>
pub(super) const DESTROY_ASSUME_NOT_IN_USE: u32 = 1 << 0;
/// `D3DDDI_MAKERESIDENT_FLAGS::CantTrimFurther` (bit 0):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_makeresident_flags>
pub(super) const MAKERESIDENT_CANT_TRIM_FURTHER: u32 = 1 << 0;

/// `D3DDDI_CREATEHWQUEUEFLAGS::UserModeSubmission` (bit 4):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_createhwqueueflags>
pub const CREATEHWQUEUE_USER_MODE_SUBMISSION: u32 = 1 << 4;
