//! Paging buffers (crate::paging).

use super::contract::generic_ddis;
use crate::status::{self};
use rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER;

generic_ddis! {
    /// DxgkDdiBuildPagingBuffer (PASSIVE per the public headers). Its logic answers success or
    /// a failure status (crate::paging), which the round trip through `Result` keeps.
    BuildPagingBuffer: OnAdapterMut<DXGKARG_BUILDPAGINGBUFFER> =>
        |call, a, args| status::check(crate::paging::build_paging_buffer(call, a, args));
}

/// This concept's slots of the miniport's table ([`super::initialization_data`]).
pub(super) fn fill<P: crate::platform::Platform>(
    t: &mut rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA,
) {
    t.DxgkDdiBuildPagingBuffer = Some(super::contract::on_adapter_mut::<P, BuildPagingBuffer>);
}
