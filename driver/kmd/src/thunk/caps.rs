//! What the driver tells Dxgkrnl about the adapter (crate::caps): QueryAdapterInfo and node
//! metadata.

use super::contract::{generic_ddis, own_thunks, Call};
use crate::adapter::Adapter;
use crate::caps;
use crate::platform::Platform;
use crate::status::{self, Status};
use rvgpu_ddi::adapter::DXGKARG_QUERYADAPTERINFO;
use rvgpu_ddi::submission::DXGKARG_GETNODEMETADATA;
use rvgpu_ddi::{HANDLE, NTSTATUS, UINT};

generic_ddis! {
    /// DxgkDdiQueryAdapterInfo (PASSIVE).
    QueryAdapterInfo: OnAdapter<DXGKARG_QUERYADAPTERINFO> =>
        |call, a, args| query_adapter_info(call, a, args);
}

own_thunks! {
    /// DxgkDdiGetNodeMetadata (PASSIVE).
    fn get_node_metadata<P: Platform>(
        call,
        h_adapter: HANDLE,
        node_and_adapter: UINT,
        out: *mut DXGKARG_GETNODEMETADATA,
    ) -> NTSTATUS {
        let Some((a, out)) = call.adapter_and_mut::<P, _>(h_adapter, out) else {
            return status::INVALID_PARAMETER.code();
        };
        let Some(live) = a.live() else {
            return status::INVALID_DEVICE_STATE.code();
        };
        match caps::node_metadata(live, node_and_adapter) {
            Ok(md) => {
                *out = md;
                status::SUCCESS
            }
            Err(e) => e.code(),
        }
    }
}

/// DxgkDdiQueryAdapterInfo's logic: the request's buffers resolved once
/// ([`crate::args::Request`]), then answered by `caps`.
fn query_adapter_info<P: Platform>(
    call: Call<'_>,
    a: &Adapter<P>,
    args: &DXGKARG_QUERYADAPTERINFO,
) -> Result<(), Status> {
    let mut q = call.qai_request(args);
    match a.live() {
        Some(live) => caps::query(live, &mut q),
        // Before StartDevice only the types Dxgkrnl sends at that stage have an answer.
        None => caps::query_pre_start(&mut q).unwrap_or(Err(status::INVALID_DEVICE_STATE)),
    }
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiQueryAdapterInfo = Some(super::contract::on_adapter::<P, QueryAdapterInfo, _>);
    t.DxgkDdiGetNodeMetadata = Some(get_node_metadata::<P>);
}
