//! The audit of engine resets and of a context's virtual submission.

use super::Ddi;
use crate::hws::{DXGKARG_RESETHWENGINE, DXGKARG_RESUMEHWENGINE};
use crate::tdr::{
    DXGKARG_COLLECTDBGINFO2, DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE,
    DXGKARG_SUBMITCOMMANDVIRTUAL,
};

const RESET_BY: &str = "M:VidSchiResetEngine @0x140047318";

/// `DxgkDdiResetEngine` of a software-scheduled engine that timed out
/// (`M:VidSchiResetEngines` @0x1400A690C, for each engine of the dependent group): `RESET_BY`
/// fills the engine from its VidSch node and zeroes the fence the driver answers.
pub const RESET_ENGINE: Ddi<DXGKARG_RESETENGINE> = Ddi {
    name: "DxgkDdiResetEngine",
    block: "DXGKARG_RESETENGINE",
    rows: &[
        filled_row!(
            DXGKARG_RESETENGINE.NodeOrdinal,
            true,
            RESET_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_RESETENGINE.EngineOrdinal,
            true,
            RESET_BY,
            "the driver's engine of the VidSch node"
        ),
        zero_row!(
            DXGKARG_RESETENGINE.LastAbortedFenceId,
            false,
            RESET_BY,
            "the driver's answer, zeroed before the call"
        ),
    ],
};

const HW_RESET_BY: &str = "M:VidSchiResetHwEngine @0x140052878";

/// `DxgkDdiResetHwEngine` of a hardware-scheduled engine (`M:VidSchiResetEngines`
/// @0x1400A690C picks it for a node with hardware scheduling): `HW_RESET_BY` builds the
/// two-field block on its stack and calls the driver through Dxgkrnl's core interface.
pub const RESET_HW_ENGINE: Ddi<DXGKARG_RESETHWENGINE> = Ddi {
    name: "DxgkDdiResetHwEngine",
    block: "DXGKARG_RESETHWENGINE",
    rows: &[
        filled_row!(
            DXGKARG_RESETHWENGINE.NodeOrdinal,
            true,
            HW_RESET_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_RESETHWENGINE.EngineOrdinal,
            true,
            HW_RESET_BY,
            "the driver's engine of the VidSch node"
        ),
    ],
};

/// `DxgkDdiResumeHwEngine`: `HW_RESET_BY` calls it right after a successful
/// `DxgkDdiResetHwEngine` of the same engine, with a block of its own built the same way.
pub const RESUME_HW_ENGINE: Ddi<DXGKARG_RESUMEHWENGINE> = Ddi {
    name: "DxgkDdiResumeHwEngine",
    block: "DXGKARG_RESUMEHWENGINE",
    rows: &[
        filled_row!(
            DXGKARG_RESUMEHWENGINE.NodeOrdinal,
            true,
            HW_RESET_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_RESUMEHWENGINE.EngineOrdinal,
            true,
            HW_RESET_BY,
            "the driver's engine of the VidSch node"
        ),
    ],
};

const VIRTUAL_BY: &str = "M:VidSchiSubmitRenderVirtualCommand @0x1400B6C90";

/// `DxgkDdiSubmitCommandVirtual` of a GPU-VA context's buffer: `VIRTUAL_BY` turns the queue
/// packet into an execution packet (sending the context's root page table first when it
/// moved) that the execution path hands the driver. The fields below are those the packet
/// carries; the block's other fields are not audited yet.
pub const SUBMIT_COMMAND_VIRTUAL: Ddi<DXGKARG_SUBMITCOMMANDVIRTUAL> = Ddi {
    name: "DxgkDdiSubmitCommandVirtual",
    block: "DXGKARG_SUBMITCOMMANDVIRTUAL",
    rows: &[
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.hContext,
            true,
            VIRTUAL_BY,
            "the driver's handle of the context"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferVirtualAddress,
            true,
            VIRTUAL_BY,
            "the caller's command buffer VA"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferSize,
            true,
            VIRTUAL_BY,
            "the caller's command length"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.pDmaBufferPrivateData,
            true,
            VIRTUAL_BY,
            "Dxgkrnl's copy of the submission's private data"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferPrivateDataSize,
            true,
            VIRTUAL_BY,
            "the size of that copy"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferUmdPrivateDataSize,
            true,
            VIRTUAL_BY,
            "the size the UMD passed"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.SubmissionFenceId,
            true,
            VIRTUAL_BY,
            "the node's next submission fence, counted by VidSch per node"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.Flags,
            true,
            VIRTUAL_BY,
            "bits 0-8 from the packet's submission flags (present, null rendering and the \
             like), none above"
        ),
    ],
};

const DBG_INFO_BY: &str = "K:TdrCollectDbgInfoStage1 @0x140368AC0";

/// `DxgkDdiCollectDbgInfo2` at a TDR's first stage: `DBG_INFO_BY` builds the block on its
/// stack and hands it to `K:DXGADAPTER::_DdiCollectDbgInfoNoLocks` @0x1403698F8, which calls
/// `DxgkDdiCollectDbgInfo2`, or `DxgkDdiCollectDbgInfo` with the same block when the former is
/// empty (never for rvgpu, which fills both).
pub const COLLECT_DBG_INFO2: Ddi<DXGKARG_COLLECTDBGINFO2> = Ddi {
    name: "DxgkDdiCollectDbgInfo2",
    block: "DXGKARG_COLLECTDBGINFO2",
    rows: &[
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.Reason,
            true,
            DBG_INFO_BY,
            "0x141 (VIDEO_ENGINE_TIMEOUT_DETECTED) for an engine timeout (recovery types 6 and \
             12), else 0x117 (VIDEO_TDR_TIMEOUT_DETECTED)"
        ),
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.pBuffer,
            true,
            DBG_INFO_BY,
            "a 16 MiB segment of the zeroed dump buffer, with a canary past its end"
        ),
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.BufferSize,
            true,
            DBG_INFO_BY,
            "0x1000000"
        ),
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.pExtension,
            true,
            DBG_INFO_BY,
            "a zeroed 32-byte pool block (with a canary after it); null when that allocation \
             failed"
        ),
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.TdrType,
            true,
            DBG_INFO_BY,
            "the recovery context's type"
        ),
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.TdrPayloadSize,
            true,
            DBG_INFO_BY,
            "the caller's payload size (0x28 for an engine timeout from VidSch's engine reset), \
             16 for type 3"
        ),
        filled_row!(
            DXGKARG_COLLECTDBGINFO2.TdrPayload,
            true,
            DBG_INFO_BY,
            "the caller's payload (for an engine timeout its context pointer cleared first), \
             or a 16-byte one of the context's values for type 3; may be null"
        ),
    ],
};

const ENGINE_STATUS_BY: &str = "M:VidSchiCheckNodeTimeout @0x1400B6030";

/// `DxgkDdiQueryEngineStatus`: `ENGINE_STATUS_BY` asks only when a node made no progress for
/// the TDR delay, on a node that allows it, and only while the running device allows
/// long-running packets; an answer of "responsive" spares the engine. The block is built on
/// its stack.
pub const QUERY_ENGINE_STATUS: Ddi<DXGKARG_QUERYENGINESTATUS> = Ddi {
    name: "DxgkDdiQueryEngineStatus",
    block: "DXGKARG_QUERYENGINESTATUS",
    rows: &[
        filled_row!(
            DXGKARG_QUERYENGINESTATUS.NodeOrdinal,
            true,
            ENGINE_STATUS_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_QUERYENGINESTATUS.EngineOrdinal,
            true,
            ENGINE_STATUS_BY,
            "the driver's engine of the VidSch node"
        ),
        zero_row!(
            DXGKARG_QUERYENGINESTATUS.EngineStatus,
            false,
            ENGINE_STATUS_BY,
            "the driver's answer, zeroed before the call"
        ),
    ],
};
