//! The audit of engine resets, preemption and the execution queue's submissions (virtual and
//! physical).

use super::Ddi;
use crate::hws::{DXGKARG_RESETHWENGINE, DXGKARG_RESUMEHWENGINE};
use crate::tdr::{
    DXGKARG_COLLECTDBGINFO2, DXGKARG_PREEMPTCOMMAND, DXGKARG_QUERYDEPENDENTENGINEGROUP,
    DXGKARG_QUERYENGINESTATUS, DXGKARG_RESETENGINE, DXGKARG_SUBMITCOMMAND,
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

const VIRTUAL_BY: &str = "M:VidSchiFillSubmitCommandDataVirtual @0x140018280";

/// `DxgkDdiSubmitCommandVirtual` of a GPU-VA context's packet (built by
/// M:VidSchiSubmitRenderVirtualCommand @0x1400B6C90, which sends the context's root page table
/// first when it moved): M:VidSchiSendToExecutionQueue @0x140017660 zeroes a 96-byte block on
/// its stack, has `VIRTUAL_BY` fill it from the packet, its context and its node, and calls the
/// driver at PASSIVE_LEVEL (it lowers the IRQL first); a failure is bug check 0x119 / 0x2
/// unless the caller waits, which marks the device in error instead.
pub const SUBMIT_COMMAND_VIRTUAL: Ddi<DXGKARG_SUBMITCOMMANDVIRTUAL> = Ddi {
    name: "DxgkDdiSubmitCommandVirtual",
    block: "DXGKARG_SUBMITCOMMANDVIRTUAL",
    rows: &[
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.hContext,
            true,
            VIRTUAL_BY,
            "the driver's handle of the packet's context"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferVirtualAddress,
            true,
            VIRTUAL_BY,
            "the packet's command buffer VA"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferSize,
            true,
            VIRTUAL_BY,
            "the packet's command length"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.pDmaBufferPrivateData,
            true,
            VIRTUAL_BY,
            "Dxgkrnl's copy of the private data: its base plus the packet's start offset"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferPrivateDataSize,
            true,
            VIRTUAL_BY,
            "the packet's end offset less its start offset"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.DmaBufferUmdPrivateDataSize,
            true,
            VIRTUAL_BY,
            "the size the UMD passed, kept in the packet"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.SubmissionFenceId,
            true,
            VIRTUAL_BY,
            "the packet's submission fence, counted by VidSch per node"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.VidPnSourceId,
            false,
            VIRTUAL_BY,
            "the flip's source for a packet that flips; zero otherwise (zeroed with the block)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.FlipInterval,
            false,
            VIRTUAL_BY,
            "the flip's interval for a packet that flips; zero otherwise"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.Flags,
            true,
            VIRTUAL_BY,
            "Paging for a paging packet; NullRendering when the context or the packet's queue \
             asks for it; ContextSwitch from packet bit 12; Resubmission from packet bit 14; \
             VirtualMachineData from the context; for a render packet also Flip and \
             FlipWithNoWait for a flip, Present (packet bit 8) and RedirectedPresent (packet \
             bit 3). Reserved bits stay zero"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.EngineOrdinal,
            true,
            VIRTUAL_BY,
            "the engine of the packet's VidSch node"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDVIRTUAL.NodeOrdinal,
            true,
            VIRTUAL_BY,
            "the driver's node of the packet's VidSch node"
        ),
    ],
};

const SUBMIT_BY: &str = "M:VidSchiFillSubmitCommandData @0x14003CFF8";

/// `DxgkDdiSubmitCommand` of a packet without GPU VA (the paging node's buffers on a GPU-VA
/// adapter): M:VidSchiSendToExecutionQueue @0x140017660 has `SUBMIT_BY` zero a 96-byte block
/// and fill it from the packet, its DMA buffer, its context and its node, and calls the
/// driver at DISPATCH_LEVEL; a failure is bug check 0x119 / 0x2 unless the caller waits.
pub const SUBMIT_COMMAND: Ddi<DXGKARG_SUBMITCOMMAND> = Ddi {
    name: "DxgkDdiSubmitCommand",
    block: "DXGKARG_SUBMITCOMMAND",
    rows: &[
        filled_row!(
            DXGKARG_SUBMITCOMMAND.Anonymous,
            true,
            SUBMIT_BY,
            "hContext: the driver's handle of the packet's context"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferSegmentId,
            true,
            SUBMIT_BY,
            "the packet's segment (0: system memory)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferPhysicalAddress,
            true,
            SUBMIT_BY,
            "the packet's buffer address in that segment"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferSize,
            true,
            SUBMIT_BY,
            "the size of the packet's DMA buffer; 0 when the packet has none"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferSubmissionStartOffset,
            true,
            SUBMIT_BY,
            "the packet's start offset"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferSubmissionEndOffset,
            true,
            SUBMIT_BY,
            "the packet's end offset"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.pDmaBufferPrivateData,
            true,
            SUBMIT_BY,
            "the DMA buffer's private data; null when the packet has no buffer"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferPrivateDataSize,
            true,
            SUBMIT_BY,
            "that private data's size"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferPrivateDataSubmissionStartOffset,
            false,
            SUBMIT_BY,
            "the packet's private-data start offset"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferPrivateDataSubmissionEndOffset,
            false,
            SUBMIT_BY,
            "the packet's private-data end offset"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.SubmissionFenceId,
            true,
            SUBMIT_BY,
            "the packet's submission fence, counted by VidSch per node"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.VidPnSourceId,
            false,
            SUBMIT_BY,
            "the flip's source for a packet that flips; zero otherwise"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.FlipInterval,
            false,
            SUBMIT_BY,
            "the flip's interval for a packet that flips; zero otherwise"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.Flags,
            true,
            SUBMIT_BY,
            "as for DxgkDdiSubmitCommandVirtual (VIRTUAL_BY), without VirtualMachineData"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.EngineOrdinal,
            true,
            SUBMIT_BY,
            "the engine of the packet's VidSch node"
        ),
        zero_row!(
            DXGKARG_SUBMITCOMMAND.DmaBufferVirtualAddress,
            true,
            SUBMIT_BY,
            "never written: zeroed with the block (the KMD reads it only when the physical \
             address is null, which 24H2 never passes)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMAND.NodeOrdinal,
            true,
            SUBMIT_BY,
            "the driver's node of the packet's VidSch node"
        ),
    ],
};

const PREEMPT_BY: &str = "M:VidSchiSendToExecutionQueue @0x140017660";

/// `DxgkDdiPreemptCommand` for a preemption packet (queued by
/// M:VidSchiSubmitPreemptionCommand @0x1400B633C from scheduling, suspension, engine reset and
/// the hardware-progress check): `PREEMPT_BY` zeroes a 96-byte block on its stack, takes the
/// node's next fence from the counter submissions also draw from, and calls the driver at
/// DISPATCH_LEVEL (PASSIVE_LEVEL when VidSch runs its scheduler at passive); a failure is bug
/// check 0x119 / 0x2 unless the caller waits. The call goes through
/// K:ADAPTER_RENDER::DdiPreemptCommand @0x1400152B8, which only logs.
pub const PREEMPT_COMMAND: Ddi<DXGKARG_PREEMPTCOMMAND> = Ddi {
    name: "DxgkDdiPreemptCommand",
    block: "DXGKARG_PREEMPTCOMMAND",
    rows: &[
        filled_row!(
            DXGKARG_PREEMPTCOMMAND.PreemptionFenceId,
            true,
            PREEMPT_BY,
            "the node's next fence (its counter incremented), also kept as the node's last \
             submitted fence"
        ),
        filled_row!(
            DXGKARG_PREEMPTCOMMAND.NodeOrdinal,
            true,
            PREEMPT_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_PREEMPTCOMMAND.EngineOrdinal,
            true,
            PREEMPT_BY,
            "the engine of the VidSch node"
        ),
        zero_row!(
            DXGKARG_PREEMPTCOMMAND.Flags,
            true,
            PREEMPT_BY,
            "written zero with the fence"
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

const DEPENDENT_BY: &str = "M:VidSchiPrepareToResetEngine @0x1400A67D4";

/// `DxgkDdiQueryDependentEngineGroup` before an engine reset (from the hardware-progress check
/// and a timed-out completion wait), only while TDRs are on and the engine can be reset:
/// `DEPENDENT_BY` builds the block on its stack, zeroing the answer as it writes the engine.
/// A failure skips the engine reset; the answer's other nodes are preempted.
pub const QUERY_DEPENDENT_ENGINE_GROUP: Ddi<DXGKARG_QUERYDEPENDENTENGINEGROUP> = Ddi {
    name: "DxgkDdiQueryDependentEngineGroup",
    block: "DXGKARG_QUERYDEPENDENTENGINEGROUP",
    rows: &[
        filled_row!(
            DXGKARG_QUERYDEPENDENTENGINEGROUP.NodeOrdinal,
            true,
            DEPENDENT_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_QUERYDEPENDENTENGINEGROUP.EngineOrdinal,
            true,
            DEPENDENT_BY,
            "the engine of the VidSch node"
        ),
        zero_row!(
            DXGKARG_QUERYDEPENDENTENGINEGROUP.DependentNodeOrdinalMask,
            false,
            DEPENDENT_BY,
            "the driver's answer: its low half zeroed by the 64-bit write of the engine, its \
             high half written zero"
        ),
    ],
};
