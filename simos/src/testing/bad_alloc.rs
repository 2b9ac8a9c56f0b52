//! A DxgkDdiCreateAllocation that answers like the real driver and then drops the aperture
//! segment from every allocation's segment sets: VidMm must refuse a CPU-visible allocation
//! it could not always give a CPU address (AL-04). Install with
//! [`install_no_aperture_for_cpu_visible`].

use rvgpu_ddi::allocation::DXGKARG_CREATEALLOCATION;
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_CREATEALLOCATION};
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::ddi::{in_table, SlotType};
use crate::testing::ffi::{self, HandleMutStandIn, Saved};

static REAL: Saved<<PDXGKDDI_CREATEALLOCATION as SlotType>::F> = Saved::new();

/// Table hook.
pub fn install_no_aperture_for_cpu_visible(t: &mut DRIVER_INITIALIZATION_DATA) {
    REAL.save(in_table!(t, DxgkDdiCreateAllocation));
    t.DxgkDdiCreateAllocation = Some(ffi::handle_mut::<Create>);
}

struct Create;
impl HandleMutStandIn for Create {
    type Block = DXGKARG_CREATEALLOCATION;
    fn run(h: HANDLE, args: &mut DXGKARG_CREATEALLOCATION) -> NTSTATUS {
        let Some(status) = REAL.call((h, &mut *args)) else {
            return STATUS_NOT_IMPLEMENTED;
        };
        for info in ffi::blocks::allocation_infos(args) {
            // Segment 1 is the aperture (docs/memory.md).
            info.SupportedReadSegmentSet &= !1;
            info.SupportedWriteSegmentSet &= !1;
        }
        status
    }
}
