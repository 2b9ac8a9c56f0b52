//! The native fence logs (docs/logs.md#kmd; crate::log::ddi).

use rvgpu_ddi::fence::{DXGKARG_SETNATIVEFENCELOGBUFFER, DXGKARG_UPDATENATIVEFENCELOGS};

use super::contract::generic_ddis;

generic_ddis! {
    /// DxgkDdiSetNativeFenceLogBuffer (DISPATCH_LEVEL, LOG-01).
    SetNativeFenceLogBuffer: OnArgs<DXGKARG_SETNATIVEFENCELOGBUFFER> =>
        crate::log::ddi::set_log_buffer::<P>;
    /// DxgkDdiUpdateNativeFenceLogs (DISPATCH_LEVEL, LOG-07).
    UpdateNativeFenceLogs: OnArgs<DXGKARG_UPDATENATIVEFENCELOGS> =>
        crate::log::ddi::update_logs::<P>;
}
