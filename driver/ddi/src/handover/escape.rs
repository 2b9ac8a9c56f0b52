//! The audit of a driver's private escape and of the test command buffer a known escape asks for.

use super::Ddi;
use crate::kmtest::{DXGKARG_BUILDTESTCOMMANDBUFFER, DXGKARG_ESCAPE};

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

const TEST_BUFFER_BY: &str = "K:KnownEscapeBuildTestCommandBuffer @0x1401D1030";

/// `pfnBuildTestCommandBuffer` of the kernel-mode testing interface, for a test process's known
/// escape (K:DxgkpDriverKnownEscape @0x1403C1B14), only with test signing on: `TEST_BUFFER_BY`
/// checks the escape (at least 112 bytes, a command from 1 to 4, a buffer of 4 to 4096 bytes
/// and private data of at most 1024), zeroes a 112-byte block on its stack and fills it;
/// K:ADAPTER_RENDER::DdiBuildTestCommandBuffer @0x1401A12AC calls the driver when the slot is
/// filled. Sizes the driver reports above those it was given fail the escape.
pub const BUILD_TEST_COMMAND_BUFFER: Ddi<DXGKARG_BUILDTESTCOMMANDBUFFER> = Ddi {
    name: "DxgkDdiBuildTestCommandBuffer",
    block: "DXGKARG_BUILDTESTCOMMANDBUFFER",
    rows: &[
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.hContext,
            true,
            TEST_BUFFER_BY,
            "the driver's handle of the escape's context, or of its hardware queue when the \
             escape says so"
        ),
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.Command,
            true,
            TEST_BUFFER_BY,
            "copied from the escape"
        ),
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.pDmaBuffer,
            true,
            TEST_BUFFER_BY,
            "a kernel pool buffer of the escape's size (for a process the kernel does not copy \
             for, the escape's own bytes after its header)"
        ),
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.pDmaBufferPrivateData,
            true,
            TEST_BUFFER_BY,
            "a kernel pool buffer of the escape's private size; null when that is 0"
        ),
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.DmaBufferSize,
            true,
            TEST_BUFFER_BY,
            "the escape's buffer size, 4 to 4096"
        ),
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.DmaBufferPrivateDataSize,
            true,
            TEST_BUFFER_BY,
            "the escape's private size, at most 1024"
        ),
        filled_row!(
            DXGKARG_BUILDTESTCOMMANDBUFFER.Flags,
            true,
            TEST_BUFFER_BY,
            "HardwareQueue when the escape names a hardware queue; no other bit"
        ),
    ],
};
