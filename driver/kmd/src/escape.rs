//! `DxgkDdiEscape`: the UMD's private channel to the KMD. It answers one request, the report
//! tag of a native fence the calling device opened from an NT handle
//! ([`rvgpu_hw::pdd::NativeFenceTagEscape`], NF-14): 24H2 gives the opener no private data from
//! the open (`K:NtDxgkOpenNativeFenceFromNtHandleInternal` @0x1401E15EC passes
//! `DXGSYNCOBJECT::Open` @0x1401F4640 no buffer for it and copies the caller's own bytes back),
//! so the creator's [`rvgpu_hw::pdd::NativeFencePdd`] never reaches it. A request that starts
//! with [`rvgpu_hw::testhooks::TestHookEscape`]'s magic and version goes to the test hooks
//! ([`crate::testhooks::escape`]), which answer only when the software key turned them on.
//! Anything else is STATUS_INVALID_PARAMETER, and nothing is written.

use rvgpu_ddi::kmtest::DXGKARG_ESCAPE;
use rvgpu_hw::pdd::{NativeFenceTagEscape, NATIVE_FENCE_TAG_ESCAPE_VERSION, PDD_MAGIC};
use zerocopy::{FromBytes, IntoBytes};

use crate::adapter::Adapter;
use crate::platform::Platform;
use crate::status::{self, Status};

/// DxgkDdiEscape (PASSIVE) with `data`, Dxgkrnl's kernel copy of the caller's private data
/// (`None` if the OS passed none). Only a request of exactly [`NativeFenceTagEscape`]'s size,
/// magic and version, without escape flags and with a device, is answered.
pub fn escape<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_ESCAPE,
    data: Option<&mut [u8]>,
) -> Result<(), Status> {
    let data = data.ok_or(status::INVALID_PARAMETER)?;
    if args.Flags != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    if crate::testhooks::is_request(data) {
        return crate::testhooks::escape(a, data);
    }
    let mut q =
        NativeFenceTagEscape::read_from_bytes(data).map_err(|_| status::INVALID_PARAMETER)?;
    if q.magic != PDD_MAGIC || q.version != NATIVE_FENCE_TAG_ESCAPE_VERSION {
        return Err(status::INVALID_PARAMETER);
    }
    q.report_tag = crate::fence::ddi::tag_of_open(a, args.hDevice, q.current_value_gpu)?;
    data.copy_from_slice(q.as_bytes());
    Ok(())
}
