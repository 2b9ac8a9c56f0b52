//! Stand-ins around the driver's user-mode submission discovery (UM-03, UM-04): a
//! `DxgkDdiGetNodeMetadata` that clears `UserModeSubmission` on node 1, and a
//! `DxgkDdiQueryAdapterInfo` that fails `DXGKQAITYPE_USERMODESUBMISSION_CAPS`. Everything else
//! goes to the real driver. Install with [`crate::Machine::load_driver_with`].

use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_USERMODESUBMISSION_CAPS};
use rvgpu_ddi::basic::{HANDLE, UINT};
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_QUERYADAPTERINFO};
use rvgpu_ddi::ntstatus::{STATUS_NOT_IMPLEMENTED, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::submission::{
    DXGKARG_GETNODEMETADATA, DXGK_NODEMETADATA_FLAGS, PDXGKDDI_GETNODEMETADATA,
};
use rvgpu_ddi::NTSTATUS;

use crate::adapter::ddi::{in_table, SlotType};
use crate::testing::ffi::{self, HandleIndexMutStandIn, HandleRefStandIn, Saved};

static REAL_MD: Saved<<PDXGKDDI_GETNODEMETADATA as SlotType>::F> = Saved::new();
static REAL_QAI: Saved<<PDXGKDDI_QUERYADAPTERINFO as SlotType>::F> = Saved::new();

/// Table hook: node 1 reports no user-mode submission.
pub fn install_node1_without_ums(t: &mut DRIVER_INITIALIZATION_DATA) {
    REAL_MD.save(in_table!(t, DxgkDdiGetNodeMetadata));
    t.DxgkDdiGetNodeMetadata = Some(ffi::handle_index_mut::<Metadata>);
}

/// Table hook: `DXGKQAITYPE_USERMODESUBMISSION_CAPS` fails.
pub fn install_failing_ums_caps(t: &mut DRIVER_INITIALIZATION_DATA) {
    REAL_QAI.save(in_table!(t, DxgkDdiQueryAdapterInfo));
    t.DxgkDdiQueryAdapterInfo = Some(ffi::handle_ref::<Query>);
}

struct Metadata;
impl HandleIndexMutStandIn for Metadata {
    type Block = DXGKARG_GETNODEMETADATA;
    fn run(h: HANDLE, node: UINT, out: &mut DXGKARG_GETNODEMETADATA) -> NTSTATUS {
        let Some(s) = REAL_MD.call((h, node, &mut *out)) else {
            return STATUS_NOT_IMPLEMENTED;
        };
        if node == 1 {
            out.Flags = out
                .Flags
                .with(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 0);
        }
        s
    }
}

struct Query;
impl HandleRefStandIn for Query {
    type Block = DXGKARG_QUERYADAPTERINFO;
    fn run(h: HANDLE, args: &DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
        if args.Type == DXGKQAITYPE_USERMODESUBMISSION_CAPS {
            return STATUS_NOT_SUPPORTED;
        }
        REAL_QAI.call((h, args)).unwrap_or(STATUS_NOT_IMPLEMENTED)
    }
}
