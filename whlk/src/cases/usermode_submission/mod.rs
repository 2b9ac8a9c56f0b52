//! `UserModeSubmission.*`: user-mode work submission (UM-01 … UM-21) through the
//! UMD's submission core, the OS's thunks and the real KMD, one case per requirement group,
//! named after it.
//!
//! Work is checked with "tickets": batch `k` of a sequence copies a counter cell into slot `k`
//! and then sets the counter to `k + 1`. Slot `k` then reads `k` exactly when batch `k` ran
//! after batch `k − 1` and before batch `k + 1`; a batch that never ran leaves the slot's
//! sentinel, one that ran twice (or late) leaves a larger value. So a ticket check proves
//! "every batch ran exactly once, in submission order".

mod doorbells;
mod exits;
mod fixtures;
mod lifetime;
mod paths;
mod power;
mod rings;

use crate::backend::Capability;
use crate::case::Case;
use doorbells::{global_doorbell, reconnect_and_retry, victimisation_walkthrough};
use exits::{abnormal_exit, normal_exit};
use lifetime::device_loss_aborts_and_recreate;
use paths::{
    both_paths_together, node_metadata_and_caps, submit_order_and_progress_fence,
    user_queue_refuses_kernel_path,
};
use power::{d3_and_back, engine_f1, suspend_resume};
use rings::{ring_allocations_referenced, threaded_churn};

/// User-mode queues on a device with the doorbells the case names: a backend that does not
/// build its machine runs the case where its device has them, or skips naming the
/// `rvgpu-vfu` options that give them (`SessionConfig::device_mismatch`).
const ON_DEVICE: &[Capability] = &[Capability::UserModeSubmission, Capability::NativeFences];
/// User-mode queues on a configured machine whose OS the case reads and steers.
const STEERED: &[Capability] = &[
    Capability::UserModeSubmission,
    Capability::OsTrace,
    Capability::OsControl,
    Capability::ConfiguredMachine,
    Capability::NativeFences,
];

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "UserModeSubmission.NodeMetadataAndCaps",
        requirements: &["UM-03", "UM-04"],
        summary: "node metadata for every node, a doorbell size in 1..=4096; user-mode queues \
                  exactly on the nodes that report UserModeSubmission, kernel-mode on all",
        needs: &[
            Capability::UserModeSubmission,
            Capability::NativeFences,
            Capability::KmdCaps,
        ],
        optional: &[Capability::BugChecks],
        run: node_metadata_and_caps,
    },
    Case {
        name: "UserModeSubmission.BothPathsTogether",
        requirements: &["UM-01"],
        summary: "a user-mode and a kernel-mode queue on one engine run interleaved batches \
                  exactly once each; only the kernel-mode queue goes through the kernel",
        needs: &[Capability::UserModeSubmission, Capability::NativeFences],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: both_paths_together,
    },
    Case {
        name: "UserModeSubmission.UserQueueRefusesKernelPath",
        requirements: &["UM-05"],
        summary: "SubmitCommandToHwQueue on a user-mode queue is refused by the OS \
                  (INVALID_PARAMETER) and by the KMD; nothing runs; the queue still works",
        needs: &[
            Capability::UserModeSubmission,
            Capability::NativeFences,
            Capability::UmdBypass,
        ],
        optional: &[Capability::DirectDdi, Capability::BugChecks],
        run: user_queue_refuses_kernel_path,
    },
    Case {
        name: "UserModeSubmission.SubmitOrderAndProgressFence",
        requirements: &["UM-16"],
        summary: "progress values 1, 2, 3…; nothing completes behind a closed gate; 250 \
                  batches through a 4 KiB ring run exactly once, in order",
        needs: &[Capability::UserModeSubmission, Capability::NativeFences],
        optional: &[Capability::BugChecks],
        run: submit_order_and_progress_fence,
    },
    Case {
        name: "UserModeSubmission.DoorbellVictimisationWalkthrough",
        requirements: &["UM-20"],
        summary: "one physical doorbell, the seed's steps in order: connect 1; create + \
                  connect 2 victimises 1 (callback, RETRY, dummy page) before 2 maps page 0; \
                  1's submission reconnects, victimising 2; all work once",
        needs: ON_DEVICE,
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: victimisation_walkthrough,
    },
    Case {
        name: "UserModeSubmission.ReconnectAndRetry",
        requirements: &["UM-19", "UM-09"],
        summary: "three queues, one doorbell: every submission reconnects after RETRY and \
                  rings again, all on the user-mode path; losers map the dummy page",
        needs: ON_DEVICE,
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: reconnect_and_retry,
    },
    Case {
        name: "UserModeSubmission.GlobalDoorbell",
        requirements: &["UM-21"],
        summary: "global doorbell: three queues connect to page 0 at once, nobody is \
                  victimised, all work runs",
        needs: ON_DEVICE,
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: global_doorbell,
    },
    Case {
        name: "UserModeSubmission.SuspendResume",
        requirements: &["UM-11", "UM-12"],
        summary: "suspended: doorbell stays connected, queues leave the runlist, new work \
                  (user and kernel mode) waits; resumed: it runs, once",
        needs: STEERED,
        optional: &[Capability::BugChecks],
        run: suspend_resume,
    },
    Case {
        name: "UserModeSubmission.EngineF1",
        requirements: &["UM-13"],
        summary: "an idle engine's F1 request on an OS that disconnects doorbells first (the \
                  pages; 24H2 does not): that engine's doorbells RETRY, not the other's, then \
                  F1; the next submission brings F0 back",
        needs: &[
            Capability::UserModeSubmission,
            Capability::OsTrace,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
            Capability::EngineIdle,
        ],
        optional: &[Capability::BugChecks],
        run: engine_f1,
    },
    Case {
        name: "UserModeSubmission.D3AndBack",
        requirements: &["UM-14", "UM-16"],
        summary: "no D3 while a queue has work; idle, on an OS that disconnects doorbells \
                  (the pages; 24H2 does not): suspend all, disconnect all, D3; a submission: \
                  D0, connect, resume, work runs",
        needs: STEERED,
        optional: &[Capability::BugChecks],
        run: d3_and_back,
    },
    Case {
        name: "UserModeSubmission.NormalExit",
        requirements: &["UM-17"],
        summary: "exit with queues open: disconnect, wait for the last queued value (where \
                  the OS sees the queue's work), destroy doorbell, queue, allocations, \
                  context, device; all work the OS waited for ran. On Windows (a child exits): fences \
                  it shared read u64::MAX, the survivor's queues run, new ones connect",
        needs: ON_DEVICE,
        optional: exits::OPTIONAL,
        run: normal_exit,
    },
    Case {
        name: "UserModeSubmission.AbnormalExit",
        requirements: &["UM-18"],
        summary: "kill: device in error, suspend before disconnect, no waiting; nothing of \
                  the process runs afterwards; another process is unaffected (on Windows: a child \
                  killed with work in flight)",
        needs: ON_DEVICE,
        optional: exits::OPTIONAL,
        run: abnormal_exit,
    },
    Case {
        name: "UserModeSubmission.DeviceLossAbortsAndRecreate",
        requirements: &["UM-10"],
        summary: "device lost: the KMD aborts the doorbell (ABORT status, no OS write), the \
                  queue reports the loss; a new process works",
        needs: STEERED,
        optional: &[Capability::BugChecks],
        run: device_loss_aborts_and_recreate,
    },
    Case {
        name: "UserModeSubmission.RingAllocationsReferenced",
        requirements: &["UM-07", "UM-08"],
        summary: "the doorbell holds the ring: the UMD's handles closed, the ring stays and \
                  keeps running work (also while victimised) until the queue is destroyed",
        needs: &[
            Capability::UserModeSubmission,
            Capability::ConfiguredMachine,
            Capability::NativeFences,
            Capability::UmdBypass,
        ],
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: ring_allocations_referenced,
    },
    Case {
        name: "UserModeSubmission.ThreadedChurn",
        requirements: &["UM-19", "UM-20"],
        summary: "threaded: 3 processes x 2 engines churn queues on 2 doorbells next to 3 \
                  long-lived queues; every batch runs exactly once, doorbells are victimised",
        needs: ON_DEVICE,
        optional: &[Capability::OsTrace, Capability::BugChecks],
        run: threaded_churn,
    },
];
