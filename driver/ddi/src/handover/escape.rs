//! The audit of a driver's private escape.

use super::Ddi;
use crate::kmtest::DXGKARG_ESCAPE;

const ESCAPE_BY: &str = "K:DxgkEscape @0x140419AB0";

/// `DxgkDdiEscape` of `D3DKMT_ESCAPE_DRIVERPRIVATE` (the escapes rvgpu's UMD and tools make):
/// `ESCAPE_BY` copies the caller's private data into a buffer of its own, refuses an escape
/// with bit 7 of its flags set, and fills the block from the caller's adapter, device and
/// context. (Dxgkrnl's own escapes, such as the known escape that builds a test command
/// buffer, reach other DDIs.)
pub const ESCAPE: Ddi<DXGKARG_ESCAPE> = Ddi {
    name: "DxgkDdiEscape",
    block: "DXGKARG_ESCAPE",
    rows: &[
        filled_row!(
            DXGKARG_ESCAPE.hDevice,
            true,
            ESCAPE_BY,
            "the driver's handle of the caller's device when it names one, else null"
        ),
        filled_row!(
            DXGKARG_ESCAPE.Flags,
            true,
            ESCAPE_BY,
            "the caller's flags word, bit 5 replaced by whether the caller is a virtual \
             machine's process"
        ),
        filled_row!(
            DXGKARG_ESCAPE.pPrivateDriverData,
            true,
            ESCAPE_BY,
            "Dxgkrnl's copy of the caller's data (copied back to the caller afterwards)"
        ),
        filled_row!(
            DXGKARG_ESCAPE.PrivateDriverDataSize,
            true,
            ESCAPE_BY,
            "the caller's size"
        ),
        filled_row!(
            DXGKARG_ESCAPE.hContext,
            true,
            ESCAPE_BY,
            "the driver's handle of the caller's context when it names one, else null"
        ),
        filled_row!(
            DXGKARG_ESCAPE.hKmdProcessHandle,
            true,
            ESCAPE_BY,
            "the driver's handle of the caller's process on this adapter (from \
             DxgkDdiCreateProcess)"
        ),
    ],
};
