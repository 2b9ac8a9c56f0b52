//! `GpuVa.*`: GPU virtual addresses a process places itself (docs/memory.md "GPU VA
//! thunks"): reserve a range, map part of a buffer at a VA of the process's choosing, have a
//! user-mode queue write through it, free it and see the GPU fault there.

use std::time::Duration;

use crate::backend::{
    Backend, Capability, DoorbellStatus, ExecMode, Failure, NewQueue, Pages, SessionConfig,
};
use crate::case::{Case, CaseResult};
use crate::ensure;

use super::common::{fill, no_fault, session, wait};
use rvgpu_ddi::ntstatus::STATUS_DEVICE_REMOVED;

const PAGE: u64 = 4096;
/// A VA the process picks: 64 KiB aligned, high in its space.
const CHOSEN: u64 = 0x7000_0000_0000;
const PATTERN: u64 = 0x6A7A_0012_6A7A_0012;
/// Submissions tried (10 ms of machine time apart) before the fault must have been seen.
const POLLS: u64 = 500;

/// The cases of this area.
pub const CASES: &[Case] = &[Case {
    name: "GpuVa.MapSubRangeAtChosenVaThenFree",
    requirements: &["DDI-03", "UM-10"],
    summary: "a process reserves a range, maps pages 1-2 of a buffer at a VA it chose, a user-mode queue writes there and the buffer's page 1 changes; after the free the same write page-faults, writes nothing and the device is lost to the UMD (doorbell aborted where observable)",
    needs: &[Capability::UserModeSubmission, Capability::GpuVaPlacement, Capability::NativeFences],
    optional: &[Capability::BugChecks],
    run: map_sub_range_then_free,
}];

/// One user-mode queue with a doorbell of its own (any machine that has one).
fn one_doorbell(c: &mut SessionConfig) {
    c.min_doorbells = Some(1);
}

fn map_sub_range_then_free(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, one_doorbell)?;
    let p = s.ums()?.open_process(0)?;
    let buf = s.ums()?.create_buffer(p, 4 * PAGE)?;
    let q = s.ums()?.create_queue(p, NewQueue::user_mode(0))?;
    let va = s.gpu_va()?.reserve_va(p, CHOSEN, 0x1_0000)?;
    ensure!(va == CHOSEN, "reserved at {va:#x}, asked for {CHOSEN:#x}");
    // Buffer pages 1 and 2 at CHOSEN + 4 KiB.
    s.gpu_va()?
        .map_va(buf, Pages { first: 1, count: 2 }, CHOSEN + PAGE)?;
    let v = s.gpu_va()?.fill_va(q, CHOSEN + PAGE + 8, PATTERN)?;
    wait(&mut *s, q, v, "the write through the chosen VA")?;
    ensure!(
        s.ums_ref()?.read_buffer(buf, PAGE + 8)? == PATTERN,
        "the write did not land at the mapped offset (buffer page 1)"
    );
    ensure!(
        s.ums_ref()?.read_buffer(buf, 8)? == 0,
        "buffer page 0 was written: it is not mapped there"
    );
    s.gpu_va()?.free_va(p, CHOSEN)?;
    // Through the freed VA: a page fault, nothing written, the device in error (UM-10). The
    // fault reaches the OS on its own time; the UMD learns of it at its next submission: by
    // the pages its doorbell is aborted; 24H2 writes no doorbell status on a device error
    // (only `K:DXGDOORBELL::Initialize`, `Connect`, `Disconnect` and `DestroyCoreState` do)
    // and signals its progress past anything submitted, which the UMD reads as the loss.
    // With the GPU on its own threads the fault can reach the OS before this submission
    // returns: the UMD reads its doorbell's status right after ringing (UM-19), finds it
    // aborted and reports the device removed for this very submission. That is the refusal
    // the loop below waits for, arrived early.
    let mut refused = match s.gpu_va()?.fill_va(q, CHOSEN + PAGE + 16, 0xBAD) {
        Ok(_) => None,
        Err(e @ Failure::DdiFailed(STATUS_DEVICE_REMOVED)) => Some(e),
        Err(e) => return Err(e.into()),
    };
    // Every doorbell status the backend showed (a UMD that saw the loss first may have torn
    // its doorbell down already): connected (24H2) or aborted (the pages), nothing else.
    let mut other = None;
    for i in 0..POLLS {
        s.run_until(Duration::from_millis(10), &mut |s| {
            s.ums_ref().and_then(|u| u.doorbell_status(q)) == Ok(DoorbellStatus::DisconnectedAbort)
        })?;
        if let Ok(st) = s.ums_ref().and_then(|u| u.doorbell_status(q)) {
            if !matches!(
                st,
                DoorbellStatus::DisconnectedAbort
                    | DoorbellStatus::Connected
                    | DoorbellStatus::ConnectedNotify
            ) {
                other = Some(st);
            }
        }
        if refused.is_some() {
            break;
        }
        if let Err(e) = s.ums()?.submit(q, &[fill(buf, 3 * PAGE, i)]) {
            refused = Some(e);
            break;
        }
    }
    ensure!(
        refused == Some(Failure::DdiFailed(STATUS_DEVICE_REMOVED)),
        "after the write through a freed VA the queue still takes work ({refused:?})"
    );
    ensure!(
        s.ums_ref()?.queue_info(q)?.lost,
        "the UMD does not consider the queue lost"
    );
    ensure!(
        other.is_none(),
        "the faulting device's doorbell read {other:?}, neither connected nor aborted"
    );
    ensure!(
        s.ums_ref()?.read_buffer(buf, PAGE + 16)? == 0,
        "the write through the freed VA reached the buffer"
    );
    no_fault(&*s)
}
