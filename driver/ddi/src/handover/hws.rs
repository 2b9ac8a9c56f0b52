//! The audit of hardware scheduling's set-up and of a hardware context's suspension.

use super::Ddi;
use crate::hws::{
    DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES, DXGKARG_SETSCHEDULINGLOGBUFFER,
    DXGKARG_SETUPPRIORITYBANDS,
};
use crate::submission::{DXGKARG_RESUMECONTEXT, DXGKARG_SUSPENDCONTEXT};

const SCHED_LOG_BY: &str = "M:VidSchiCreateNodeSchedulingLog @0x1400523B8";

/// `DxgkDdiSetSchedulingLogBuffer` of a hardware-scheduled node, when the paging process is
/// set up (`M:VIDMM_GLOBAL::VidMmInitializePagingProcess` @0x1400D339C) and when VidSch resizes
/// the log: `SCHED_LOG_BY` zeroes the block, creates the log (its header's entry count
/// written) and fills every field. A STATUS_NOT_IMPLEMENTED answer counts as success.
pub const SET_SCHEDULING_LOG_BUFFER: Ddi<DXGKARG_SETSCHEDULINGLOGBUFFER> = Ddi {
    name: "DxgkDdiSetSchedulingLogBuffer",
    block: "DXGKARG_SETSCHEDULINGLOGBUFFER",
    rows: &[
        filled_row!(
            DXGKARG_SETSCHEDULINGLOGBUFFER.NodeOrdinal,
            true,
            SCHED_LOG_BY,
            "the driver's node of the VidSch node"
        ),
        filled_row!(
            DXGKARG_SETSCHEDULINGLOGBUFFER.EngineOrdinal,
            true,
            SCHED_LOG_BY,
            "the driver's engine of the VidSch node"
        ),
        filled_row!(
            DXGKARG_SETSCHEDULINGLOGBUFFER.NumberOfEntries,
            true,
            SCHED_LOG_BY,
            "the caller's entry count, also in the log's header"
        ),
        filled_row!(
            DXGKARG_SETSCHEDULINGLOGBUFFER.LogBufferCpuVa,
            true,
            SCHED_LOG_BY,
            "the log's kernel mapping"
        ),
        filled_row!(
            DXGKARG_SETSCHEDULINGLOGBUFFER.LogBufferGpuVa,
            true,
            SCHED_LOG_BY,
            "the log's GPU VA"
        ),
        filled_row!(
            DXGKARG_SETSCHEDULINGLOGBUFFER.InterruptEntry,
            true,
            SCHED_LOG_BY,
            "three quarters of the entry count, rounded down"
        ),
    ],
};

const PROPERTIES_BY: &str = "M:VidSchiUpdateDdiHwContextPriority @0x140101C64";

/// `DxgkDdiSetContextSchedulingProperties` when a hardware context is created
/// (`M:VidSchiCreateHwContextInternal` @0x140021FC4) and when its priority changes:
/// `PROPERTIES_BY` zeroes the block kept in the context and fills it; it skips the call for a
/// context the driver does not know.
pub const SET_CONTEXT_SCHEDULING_PROPERTIES: Ddi<DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES> = Ddi {
    name: "DxgkDdiSetContextSchedulingProperties",
    block: "DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES",
    rows: &[
        filled_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.hContext,
            true,
            PROPERTIES_BY,
            "the driver's handle of the context"
        ),
        filled_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.priorityBand,
            true,
            PROPERTIES_BY,
            "the band from the context's or the process's priority (0 to 3)"
        ),
        filled_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.realtimeBandPriorityLevel,
            true,
            PROPERTIES_BY,
            "the realtime level for the realtime band (3); zero in the other bands"
        ),
        filled_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.inProcessPriority,
            true,
            PROPERTIES_BY,
            "the context's priority inside its process"
        ),
        filled_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.quantum,
            true,
            PROPERTIES_BY,
            "20000 (100 ns units)"
        ),
        filled_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.gracePeriodSamePriority,
            true,
            PROPERTIES_BY,
            "10000 (100 ns units)"
        ),
        zero_row!(
            DXGKARG_SETCONTEXTSCHEDULINGPROPERTIES.gracePeriodLowerPriority,
            true,
            PROPERTIES_BY,
            "written as zero"
        ),
    ],
};

const SUSPEND_BY: &str = "M:VidSchiSuspendResumeHwContext @0x140020730";

/// `DxgkDdiSuspendContext` (`M:VidSchiSuspendResumeHwContexts` @0x14001F968, a device's
/// hardware contexts when the device is suspended or marked in error): `SUSPEND_BY` counts the
/// context's suspensions and passes the count with the context, through Dxgkrnl's core
/// interface; it skips a context the driver does not know.
pub const SUSPEND_CONTEXT: Ddi<DXGKARG_SUSPENDCONTEXT> = Ddi {
    name: "DxgkDdiSuspendContext",
    block: "DXGKARG_SUSPENDCONTEXT",
    rows: &[
        filled_row!(
            DXGKARG_SUSPENDCONTEXT.hContext,
            true,
            SUSPEND_BY,
            "the driver's handle of the context"
        ),
        filled_row!(
            DXGKARG_SUSPENDCONTEXT.contextSuspendFence,
            true,
            SUSPEND_BY,
            "the context's suspension count, one more than at its last suspension"
        ),
    ],
};

/// `DxgkDdiResumeContext`: `SUSPEND_BY` first sends the context's root page table if it moved,
/// then names the context.
pub const RESUME_CONTEXT: Ddi<DXGKARG_RESUMECONTEXT> = Ddi {
    name: "DxgkDdiResumeContext",
    block: "DXGKARG_RESUMECONTEXT",
    rows: &[filled_row!(
        DXGKARG_RESUMECONTEXT.hContext,
        true,
        SUSPEND_BY,
        "the driver's handle of the context"
    )],
};

const BANDS_BY: &str = "M:VidSchiInitializeNode @0x1400A7B94";

/// `DxgkDdiSetupPriorityBands` once per hardware-scheduled node as VidSch sets the adapter up
/// (M:VidSchInitializeAdapter @0x140115F70): `BANDS_BY` zeroes the block on its stack and
/// writes fixed periods (100 ns units, bands idle, normal, focus, realtime). A driver's
/// STATUS_NOT_IMPLEMENTED counts as success; any other failure fails the adapter.
pub const SETUP_PRIORITY_BANDS: Ddi<DXGKARG_SETUPPRIORITYBANDS> = Ddi {
    name: "DxgkDdiSetupPriorityBands",
    block: "DXGKARG_SETUPPRIORITYBANDS",
    rows: &[
        filled_row!(
            DXGKARG_SETUPPRIORITYBANDS.gracePeriodForBand,
            true,
            BANDS_BY,
            "10000 for the focus band; the others left zero"
        ),
        filled_row!(
            DXGKARG_SETUPPRIORITYBANDS.processQuantumForBand,
            true,
            BANDS_BY,
            "50000, 50000, 10000, 20000"
        ),
        filled_row!(
            DXGKARG_SETUPPRIORITYBANDS.processGracePeriodForBand,
            true,
            BANDS_BY,
            "20000, 20000, 30000, 50000"
        ),
        filled_row!(
            DXGKARG_SETUPPRIORITYBANDS.targetNormalBandPercentage,
            true,
            BANDS_BY,
            "VidSch's normal-band share"
        ),
    ],
};
