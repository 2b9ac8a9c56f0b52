//! A QueryAdapterInfo that answers `DXGKQAITYPE_NATIVE_FENCE_CAPS` with a stride of 12 (not a
//! multiple of 8) and without `MapToGpuSystemProcess`, and forwards everything else to the
//! real driver: the OS must refuse the start (NF-11). Install with
//! [`install_bad_native_fence_caps`].

use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_NATIVE_FENCE_CAPS};
use rvgpu_ddi::basic::HANDLE;
use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_CAPS;
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_QUERYADAPTERINFO};
use rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
use rvgpu_ddi::NTSTATUS;

use crate::adapter::ddi::{in_table, SlotType};
use crate::testing::ffi::{self, HandleRefStandIn, Saved};

static REAL: Saved<<PDXGKDDI_QUERYADAPTERINFO as SlotType>::F> = Saved::new();

/// Table hook.
pub fn install_bad_native_fence_caps(t: &mut DRIVER_INITIALIZATION_DATA) {
    REAL.save(in_table!(t, DxgkDdiQueryAdapterInfo));
    t.DxgkDdiQueryAdapterInfo = Some(ffi::handle_ref::<Query>);
}

struct Query;
impl HandleRefStandIn for Query {
    type Block = DXGKARG_QUERYADAPTERINFO;
    fn run(h: HANDLE, args: &DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
        let Some(status) = REAL.call((h, args)) else {
            return STATUS_NOT_IMPLEMENTED;
        };
        if args.Type == DXGKQAITYPE_NATIVE_FENCE_CAPS {
            if let Some(caps) = ffi::blocks::adapter_info_output::<DXGK_NATIVE_FENCE_CAPS>(args) {
                caps.MonitoredValueStride = 12;
                caps.MapToGpuSystemProcess = 0;
            }
        }
        status
    }
}
