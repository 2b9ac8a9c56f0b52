//! The DDIs' way from a KMD handle to the scheduler state of its adapter.

use rvgpu_ddi::HANDLE;

use crate::adapter::{Adapter, Live};
use crate::globals::ADAPTERS;
use crate::handle::{Handle, Kind};
use crate::platform::Platform;
use crate::status::{self, Status};

/// Runs `f` on the started adapter that `h` names, with the decoded handle. A handle that
/// names no live adapter of this platform is `STATUS_INVALID_HANDLE`.
pub fn with_adapter<P: Platform, R>(
    raw: HANDLE,
    kind: Kind,
    f: impl FnOnce(&Adapter<P>, &Live<P>, Handle) -> Result<R, Status>,
) -> Result<R, Status> {
    let h = Handle::decode(raw, kind).ok_or(status::INVALID_HANDLE)?;
    ADAPTERS
        .with(h.slot(), |a: &Adapter<P>| match a.live() {
            Some(live) => f(a, live, h),
            None => Err(status::INVALID_HANDLE),
        })
        .unwrap_or(Err(status::INVALID_HANDLE))
}
