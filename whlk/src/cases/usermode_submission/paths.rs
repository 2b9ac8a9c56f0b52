//! The two submission paths: node metadata and caps (UM-03, UM-04), both paths together and
//! the kernel path refused to a user-mode queue (UM-01, UM-05), submission order and the
//! progress fence (UM-16).

use crate::backend::{
    Backend, DoorbellStatus, ExecMode, Failure, NewQueue, OsEvent, SubmitPath, Work,
};
use crate::case::CaseResult;
use crate::ensure;

use super::super::common::{fill, observe, session, wait};
use super::fixtures::{
    count, end_normally, enough_doorbells, expect_path, expect_status, mark, process_with_buffer,
    settle, submit_tickets, trace, user_and_kernel_queues, user_queue, Tickets, BUF,
    STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED,
};

// ---------------------------------------------------------------------------------------------
// UM-03, UM-04.

pub(super) fn node_metadata_and_caps(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let nodes = s.kmd_caps()?.driver_caps(0)?.nodes;
    let caps = s.kmd_caps()?.submission_caps(0)?;
    ensure!(
        caps.user_mode_nodes.len() == nodes as usize,
        "node metadata for {} nodes, DRIVERCAPS reports {nodes}",
        caps.user_mode_nodes.len()
    );
    ensure!(
        caps.user_mode_nodes.iter().any(|u| *u),
        "no node reports UserModeSubmission"
    );
    let size = caps.doorbell_size;
    ensure!(
        size.is_some_and(|z| (1..=4096).contains(&z)),
        "USERMODESUBMISSION_CAPS doorbell size {size:?}, must be 1..=4096"
    );
    let (p, t) = process_with_buffer(&mut *s)?;
    for (node, ums) in caps.user_mode_nodes.iter().enumerate() {
        let node = node as u32;
        let kq = s.ums()?.create_queue(p, NewQueue::kernel_mode(node))?;
        let v = s
            .ums()?
            .submit(kq, &[fill(t, 8 * u64::from(node), 0x100 + u64::from(node))])?;
        wait(&mut *s, kq, v, "kernel-mode queue")?;
        match user_queue(&mut *s, p, node) {
            Ok(q) => {
                ensure!(
                    *ums,
                    "a user-mode queue was created on node {node}, which has no UserModeSubmission"
                );
                expect_path(&*s, q, SubmitPath::UserMode, "new user-mode queue")?;
                expect_status(&*s, q, DoorbellStatus::Connected, "new user-mode queue")?;
                let v = s
                    .ums()?
                    .submit(q, &[fill(t, 64 + 8 * u64::from(node), 0x200)])?;
                wait(&mut *s, q, v, "user-mode queue")?;
                s.ums()?.close_queue(q)?;
            }
            Err(Failure::DdiFailed(STATUS_NOT_SUPPORTED)) => {
                ensure!(
                    !*ums,
                    "node {node} reports UserModeSubmission but refused a user-mode queue"
                );
            }
            Err(e) => return Err(e.into()),
        }
        s.ums()?.close_queue(kq)?;
        ensure!(
            s.ums_ref()?.read_buffer(t, 8 * u64::from(node))? == 0x100 + u64::from(node),
            "node {node}: kernel-mode work did not run"
        );
    }
    end_normally(&mut *s, p)
}

// ---------------------------------------------------------------------------------------------
// UM-01, UM-05.

pub(super) fn both_paths_together(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let (uq, tu, kq, tk) = user_and_kernel_queues(&mut *s, p, buf, 16, (1024, 16), 0)?;
    let m = observe(mark(&*s))?;
    let (mut lu, mut lk) = (0, 0);
    for k in 0..16 {
        lu = s.ums()?.submit(uq, &tu.batch(k))?;
        lk = s.ums()?.submit(kq, &tk.batch(k))?;
    }
    wait(&mut *s, uq, lu, "user-mode queue")?;
    wait(&mut *s, kq, lk, "kernel-mode queue")?;
    tu.check(&*s, 16, "user-mode queue")?;
    tk.check(&*s, 16, "kernel-mode queue")?;
    expect_path(&*s, uq, SubmitPath::UserMode, "user-mode queue")?;
    expect_path(&*s, kq, SubmitPath::KernelMode, "kernel-mode queue")?;
    if let Some(ev) = trace(&*s, m)? {
        let ks = count(
            &ev,
            |e| matches!(e, OsEvent::KernelSubmit { queue, .. } if *queue == Some(kq)),
        );
        let us = count(
            &ev,
            |e| matches!(e, OsEvent::KernelSubmit { queue, .. } if *queue == Some(uq)),
        );
        ensure!(
            ks == 16,
            "{ks} kernel submissions of the kernel-mode queue, expected 16"
        );
        ensure!(
            us == 0,
            "the user-mode queue went through the kernel {us} times"
        );
    }
    s.ums()?.close_queue(uq)?;
    s.ums()?.close_queue(kq)?;
    end_normally(&mut *s, p)
}

pub(super) fn user_queue_refuses_kernel_path(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let (p, t) = process_with_buffer(&mut *s)?;
    let q = user_queue(&mut *s, p, 0)?;
    let st = s
        .umd_bypass()?
        .kernel_submit_on_user_queue(q, &[fill(t, 0, 0xBAD)])?;
    ensure!(
        st == STATUS_INVALID_PARAMETER,
        "D3DKMTSubmitCommandToHwQueue on a user-mode queue returned {:#010x}, expected \
         STATUS_INVALID_PARAMETER",
        st as u32
    );
    let direct = observe(
        s.direct_ddi()
            .and_then(|d| d.ddi_submit_on_user_queue(q, &[fill(t, 8, 0xBAD)])),
    )?;
    ensure!(
        direct.is_none_or(|st| st < 0),
        "the KMD accepted DxgkDdiSubmitCommandToHwQueue on a user-mode queue ({:#010x})",
        direct.unwrap_or(0) as u32
    );
    settle(&mut *s)?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 0)? == 0 && s.ums_ref()?.read_buffer(t, 8)? == 0,
        "refused kernel-mode work ran"
    );
    let v = s.ums()?.submit(q, &[fill(t, 16, 0x600D)])?;
    ensure!(v == 1, "first user-mode progress value {v}, expected 1");
    wait(&mut *s, q, v, "user-mode queue after the refusals")?;
    ensure!(
        s.ums_ref()?.read_buffer(t, 16)? == 0x600D,
        "user-mode work did not run"
    );
    s.ums()?.close_queue(q)?;
    end_normally(&mut *s, p)
}

// ---------------------------------------------------------------------------------------------
// UM-16.

pub(super) fn submit_order_and_progress_fence(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, enough_doorbells(4))?;
    let (p, buf) = process_with_buffer(&mut *s)?;
    let gate = s.ums()?.create_buffer(p, BUF)?;
    let t = Tickets::new(&mut *s, buf, 0, 250)?;
    let q = user_queue(&mut *s, p, 0)?;
    // Behind a closed gate: values are handed out in order, nothing completes.
    let g = s.ums()?.submit(
        q,
        &[Work::WaitAtLeast {
            buffer: gate,
            offset: 0,
            value: 1,
        }],
    )?;
    ensure!(g == 1, "first progress value {g}, expected 1");
    for k in 0..10 {
        let v = s.ums()?.submit(q, &t.batch(k))?;
        ensure!(
            v == k + 2,
            "batch {k} got progress value {v}, expected {}",
            k + 2
        );
    }
    settle(&mut *s)?;
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        info.last_submitted == 11 && info.completed == 0,
        "behind the gate: last submitted {}, completed {} (expected 11, 0)",
        info.last_submitted,
        info.completed
    );
    t.check(&*s, 0, "behind the gate")?;
    s.ums()?.write_buffer(gate, 0, 1)?;
    wait(&mut *s, q, 11, "after opening the gate")?;
    t.check(&*s, 10, "after opening the gate")?;
    // Many more than the 4 KiB ring holds: the UMD wraps and waits for room.
    let last = submit_tickets(&mut *s, q, &t, 10..250)?;
    ensure!(last == 251, "last progress value {last}, expected 251");
    wait(&mut *s, q, last, "250 batches")?;
    t.check(&*s, 250, "250 batches")?;
    let info = s.ums_ref()?.queue_info(q)?;
    ensure!(
        info.completed == 251,
        "completed {} after the wait",
        info.completed
    );
    expect_path(&*s, q, SubmitPath::UserMode, "after 250 batches")?;
    s.ums()?.close_queue(q)?;
    end_normally(&mut *s, p)
}
