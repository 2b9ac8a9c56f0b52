//! `Tdr.*`: timeout detection and recovery (TDR-01 … TDR-09, UM-10; docs/tdr.md),
//! one case per requirement, named after it, through the real KMD, the simulated VidSch/VidMm
//! and the emulated GPU.
//!
//! What a Windows backend could run through D3DKMT (its own TDR is always on): submit work,
//! hang an engine with a HANG packet, observe that the guilty device's queues are refused, its
//! device `HUNG` (`D3DKMTGetDeviceState`) and that other work completes
//! (`Tdr.ComputeHangCopyRuns`, `Tdr.GuiltyDeviceAborted`, `Tdr.UserModeTrafficSurvives` leave
//! out the simulation-only observations there), run work on every node the adapter has
//! (`Tdr.NodesAndAffinity` without its machines of 1 and 16 engines), and read the per-engine
//! reset claim the OS copied from the driver's caps (`Tdr.PerEngineCaps`, WDDM 1.2 caps). The
//! rest need what no program has, and are skipped elsewhere by the capability:
//! - VidSch's fence IDs and the order of the OS's recovery steps (`TdrTrace`), the DDI called
//!   directly (`DirectDdi`) and faults injected (`FaultInjection`). Where a program has the
//!   KMD's test hooks instead (`KmdJournal`, `KmdFaults`: the KMD's record of the DDIs the OS
//!   called, with their fence IDs, and faults armed in its recovery path), these cases run in a
//!   KMD form (`kmd`) with the checks that record supports, the rest left to the
//!   simulation: `Tdr.LastCompletedFence`, `Tdr.ResetSequence`, `Tdr.AbortedFenceInRange`,
//!   `Tdr.CollectDbgInfoLevelZero`, `Tdr.ResetFailsPromoted`, and the two paging cases,
//!   `Tdr.PagingResubmitOrder` and `Tdr.PagingPromotesAdapterReset`. Their OS form has VidMm
//!   page in a FILL when the case asks (`Paging`); their KMD form makes a program's paging, a
//!   new buffer's page-table updates, which go to the node VidMm pages on, found in the
//!   journal; and `Tdr.CompletedBeforeReset`, whose OS form times a FILL to finish between
//!   the snapshot and the reset (a timeout shorter than the FILL; Windows reads `TdrDelay` at
//!   boot) and whose KMD form releases a buffer blocked on a word in the armed reset.

mod aborted;
mod adapter;
mod caps;
mod fixtures;
mod isolation;
mod kmd;
mod reset;

use crate::backend::Capability;
use crate::case::Case;
use aborted::{aborted_fence_in_range, bugcheck_on_bad_aborted_fence, completed_before_reset};
use adapter::{paging_promotes_adapter_reset, reset_fails_promoted};
use caps::{collect_dbg_info_level_zero, nodes_and_affinity, per_engine_caps};
use isolation::{compute_hang_copy_runs, guilty_device_aborted, user_mode_traffic_survives};
use reset::{last_completed_fence, paging_resubmit_order, reset_sequence};

/// A reset the case causes on a DMA context and follows in a record: the OS's
/// (`TdrTrace` and the sim's controls) or, on Windows, the KMD's through its test hooks
/// (`KmdJournal`, `KmdFaults`): the case chooses its form ([`kmd::form`]).
const RECORDED: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::Tdr,
    Capability::DmaContexts,
];
/// What either form may use beyond [`RECORDED`].
const EITHER_RECORD: &[Capability] = &[
    Capability::TdrTrace,
    Capability::FaultInjection,
    Capability::DirectDdi,
    Capability::ConfiguredMachine,
    Capability::KmdJournal,
    Capability::KmdFaults,
    Capability::BugChecks,
];
/// TDR as an application sees it through user-mode queues.
const APP_VIEW: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::Tdr,
    Capability::NativeFences,
];

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Tdr.PerEngineCaps",
        requirements: &["TDR-01"],
        summary: "SupportPerEngineTDR set with PER_ENGINE_RESET, clear without; a table without \
                  DxgkDdiResetEngine that claims it is refused at start; through D3DKMT alone, \
                  KMTQAITYPE_WDDM_1_2_CAPS answers it set",
        needs: &[Capability::UserModeSubmission],
        optional: &[
            Capability::Tdr,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
            Capability::BugChecks,
        ],
        run: per_engine_caps,
    },
    Case {
        name: "Tdr.CollectDbgInfoLevelZero",
        requirements: &["TDR-01"],
        summary: "threaded: CollectDbgInfo(0x141) in a loop beside QueryAdapterInfo while a \
                  HANG is detected and reset; no deadlock, bounded non-empty text",
        needs: RECORDED,
        optional: EITHER_RECORD,
        run: collect_dbg_info_level_zero,
    },
    Case {
        name: "Tdr.NodesAndAffinity",
        requirements: &["TDR-02"],
        summary: "1, 2 and 16 engines: one node each, dependent group 1 << n, a context and a \
                  DMA buffer run on every node; through D3DKMT alone, a queue on each node \
                  runs and the node past the last is refused",
        needs: &[Capability::UserModeSubmission],
        optional: &[
            Capability::TdrTrace,
            Capability::DirectDdi,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
            Capability::DmaContexts,
            Capability::BugChecks,
        ],
        run: nodes_and_affinity,
    },
    Case {
        name: "Tdr.PagingResubmitOrder",
        requirements: &["TDR-03"],
        summary: "a render hang with two paging buffers and a render buffer behind it: paging \
                  resubmitted first with their IDs, in order; the render buffer gets an ID > S",
        needs: RECORDED,
        optional: &[
            Capability::TdrTrace,
            Capability::ConfiguredMachine,
            Capability::Paging,
            Capability::KmdJournal,
            Capability::BugChecks,
        ],
        run: paging_resubmit_order,
    },
    Case {
        name: "Tdr.LastCompletedFence",
        requirements: &["TDR-04"],
        summary: "C advances only on completion; DmaPreempted carries C; C = LastAborted after \
                  an engine reset, C = S after an adapter reset, in the OS and the KMD",
        needs: RECORDED,
        optional: EITHER_RECORD,
        run: last_completed_fence,
    },
    Case {
        name: "Tdr.ResetSequence",
        requirements: &["TDR-05"],
        summary: "nothing in flight: no ResetEngine; a HANG: detect, preempt, timeout, \
                  CollectDbgInfo, snapshot, DPC flush, group, status, ResetEngine, recover, \
                  device error, in that order; the node runs new work",
        needs: RECORDED,
        optional: EITHER_RECORD,
        run: reset_sequence,
    },
    Case {
        name: "Tdr.AbortedFenceInRange",
        requirements: &["TDR-06"],
        summary: "every ResetEngine's LastAbortedFenceId lies in the snapshot's [C, S]: the \
                  hung DMA buffer's ID, then C for a hardware-queue hang (context invalidated)",
        needs: RECORDED,
        optional: EITHER_RECORD,
        run: aborted_fence_in_range,
    },
    Case {
        name: "Simulation.BugcheckOnBadAbortedFence",
        requirements: &["TDR-06"],
        summary: "a ResetEngine reporting S + 1, then C - 1, halts with 0x119 (0xA, \
                  LastAborted, C, node)",
        needs: &[
            Capability::UserModeSubmission,
            Capability::Tdr,
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::BugChecks,
            Capability::ConfiguredMachine,
            Capability::KmdCaps,
            Capability::DmaContexts,
        ],
        optional: &[],
        run: bugcheck_on_bad_aborted_fence,
    },
    Case {
        name: "Tdr.CompletedBeforeReset",
        requirements: &["TDR-07"],
        summary: "the long FILL completes between snapshot and ResetEngine: LastAborted = S, \
                  its interrupt ignored, its device still in error",
        needs: RECORDED,
        optional: EITHER_RECORD,
        run: completed_before_reset,
    },
    Case {
        name: "Tdr.PagingPromotesAdapterReset",
        requirements: &["TDR-08", "TDR-09"],
        summary: "a hang mid paging FILL: adapter reset with reason 9, the paged allocation's \
                  owner in error, an idle process's device reset; a new process pages in and \
                  runs new work",
        needs: RECORDED,
        optional: &[
            Capability::TdrTrace,
            Capability::FaultInjection,
            Capability::ConfiguredMachine,
            Capability::Paging,
            Capability::KmdJournal,
            Capability::KmdFaults,
            Capability::BugChecks,
        ],
        run: paging_promotes_adapter_reset,
    },
    Case {
        name: "Tdr.ResetFailsPromoted",
        requirements: &["TDR-09"],
        summary: "ResetEngine fails: ResetFromTimeout, RestartFromTimeout, reason 9, C = S, \
                  both engines run; without PER_ENGINE_RESET only the adapter path (reason 2)",
        needs: RECORDED,
        optional: EITHER_RECORD,
        run: reset_fails_promoted,
    },
    Case {
        name: "Tdr.ComputeHangCopyRuns",
        requirements: &["TDR-05", "UM-10"],
        summary: "a user-mode HANG on node 0: the copy queue on node 1 submits and completes \
                  through detection and reset; none lost, none twice; the guilty queue refused",
        needs: APP_VIEW,
        optional: &[Capability::TdrTrace, Capability::BugChecks],
        run: compute_hang_copy_runs,
    },
    Case {
        name: "Tdr.GuiltyDeviceAborted",
        requirements: &["UM-10"],
        summary: "a user-mode HANG: the KMD aborts the guilty device's doorbells \
                  (DISCONNECTED_ABORT), its submissions refused; the other device never \
                  disconnected; a new process works",
        needs: APP_VIEW,
        optional: &[
            Capability::TdrTrace,
            Capability::OsTrace,
            Capability::BugChecks,
        ],
        run: guilty_device_aborted,
    },
    Case {
        name: "Tdr.UserModeTrafficSurvives",
        requirements: &["UM-10", "TDR-05"],
        summary: "threaded: 4 processes x 2 engines submit continuously while a fifth hangs \
                  node 0; every innocent batch runs exactly once, traffic continues past the reset",
        needs: APP_VIEW,
        optional: &[Capability::TdrTrace, Capability::BugChecks],
        run: user_mode_traffic_survives,
    },
];
