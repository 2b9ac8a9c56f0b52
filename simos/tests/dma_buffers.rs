//! The kernel-mode DMA path (UM-01): `D3DKMTSubmitCommand` hands the KMD the process's own
//! command buffer by GPU VA and the GPU reads its words when it runs the packet, as on
//! Windows, so a UMD that writes over a buffer the GPU has not run yet is caught here. Step
//! mode holds the GPU between the submission and the run.

mod common;

use common::*;

use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{Machine, Mode, TdrConfig, UmsProcess};
use rvgpu_umd::dma::{DmaContext, Tracking};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, AllocationKind, Kmt, KmtHandle};

/// A step-mode machine whose node 0 is OS-scheduled (no hardware scheduling), so contexts
/// there take DMA buffers.
fn dma_machine() -> Machine {
    machine_with(Mode::Step, |a| a.hwsch_feature = false)
}

/// A process with a context on node 0, a 4 KiB target buffer and a 4 KiB command buffer.
struct Setup<'m> {
    p: UmsProcess,
    k: SimKmt<'m>,
    ctx: KmtHandle,
    target: Allocation<SimMem>,
    cb: Allocation<SimMem>,
}

fn setup(m: &Machine) -> Setup<'_> {
    let (p, k) = user_process(m);
    let ctx = okk(m, k.create_context(0));
    let target = okk(m, k.create_allocation(4096));
    let cb = okk(m, k.create_allocation_as(4096, AllocationKind::Commands));
    Setup {
        p,
        k,
        ctx,
        target,
        cb,
    }
}

/// Writes `cmds`' words at the start of `cb`; returns their bytes.
fn write_commands(cb: &Allocation<SimMem>, cmds: &[Command]) -> u32 {
    let mut at = 0u64;
    for c in cmds {
        let mut w = vec![0u64; c.len()];
        assert_eq!(c.encode(&mut w), Some(w.len()), "{c:?} encodes whole");
        for word in w {
            cb.mem.store(at, word);
            at += 8;
        }
    }
    u32::try_from(at).unwrap_or(u32::MAX)
}

fn node_idle(m: &Machine) -> bool {
    let (s, c) = m.legacy_fences(0, 0);
    s == c
}

/// UM-01: the GPU runs the words a submitted DMA buffer holds when it reaches the packet, not
/// the words it held at `D3DKMTSubmitCommand`: a FILL of 0x1111 submitted, then overwritten
/// in place with a FILL of 0x2222 while the GPU is held, writes 0x2222 (an OS that copied the
/// buffer at submission would write 0x1111).
#[test]
fn um_01_the_gpu_reads_a_dma_buffer_when_it_runs_it_not_at_submission() {
    let m = dma_machine();
    let s = setup(&m);
    let bytes = write_commands(&s.cb, &[fill(&s.target, 0, 0x1111)]);
    let (s0, _) = m.legacy_fences(0, 0);
    okk(&m, s.k.submit_command(s.ctx, s.cb.gpu_va, bytes));
    assert_eq!(m.legacy_fences(0, 0).0, s0 + 1, "one fence ID taken");
    assert_eq!(s.target.mem.load(0), 0, "the GPU ran before it was stepped");
    write_commands(&s.cb, &[fill(&s.target, 0, 0x2222)]);
    run_until(&m, "the DMA buffer", node_idle);
    assert_eq!(s.target.mem.load(0), 0x2222, "the words at submission ran");
    exits_clean(&m, &s.p);
}

/// UM-01 with TDR-03: a DMA buffer queued behind another process's hang is resubmitted after
/// the engine reset by the same GPU VA, so it runs what its buffer holds then: the FILL
/// written over it after the submission, not the one submitted.
#[test]
fn um_01_a_resubmitted_dma_buffer_runs_what_its_buffer_holds_then() {
    let m = dma_machine();
    enable_tdr(
        &m,
        TdrConfig {
            timeout_steps: 40,
            preempt_steps: 5,
            ..TdrConfig::default()
        },
    );
    let (h, kh) = user_process(&m);
    let hung = okk(&m, kh.create_context(0));
    let s = setup(&m);
    let bytes = write_commands(&s.cb, &[fill(&s.target, 0, 0x3333)]);
    ok(&m, m.submit_legacy(&h, hung, &[Command::Hang]));
    okk(&m, s.k.submit_command(s.ctx, s.cb.gpu_va, bytes));
    write_commands(&s.cb, &[fill(&s.target, 0, 0x4444)]);
    run_until(&m, "reset and resubmission", |m| {
        m.tdr_counts(0).0 == 1 && node_idle(m)
    });
    let ev = m.tdr_events(0);
    assert!(
        ev.iter()
            .any(|e| matches!(e, rvgpu_simos::TdrEvent::Resubmitted { paging: false, .. })),
        "{ev:#?}"
    );
    assert_eq!(s.target.mem.load(0), 0x4444);
    exits_clean(&m, &s.p);
}

/// UM-01, the shipped UMD's side: its DMA context never writes over a submission the GPU has
/// not read. Without hardware scheduling the OS offers no native fence, so the context makes a
/// new command buffer when the one it has is full and destroys the old one, which VidMm keeps
/// until the packets reading it have run (AL-03). In step mode the GPU runs only once the
/// test steps it, so 40 submissions of 16 KiB (four per 68 KiB buffer) each FILL their own
/// word with their own value before any runs, and every value lands: a buffer written over or
/// freed before it ran would lose one or fault.
#[test]
fn um_01_the_umd_dma_context_never_overwrites_a_buffer_before_the_gpu_ran_it() {
    const SUBMISSIONS: u64 = 40;
    let m = dma_machine();
    let (p, k) = user_process(&m);
    let target = okk(&m, k.create_allocation(4096));
    let mut c = okk(&m, DmaContext::new(k, 0));
    assert!(
        matches!(c.tracking(), Tracking::Rotate),
        "{:?}",
        c.tracking()
    );
    for i in 0..SUBMISSIONS {
        let cmds = [
            Command::Nop { len: 2040 },
            fill(&target, 8 * i, 0xD0_0000 + i),
        ];
        okk(&m, c.submit(&cmds));
    }
    run_until(&m, "every submission", node_idle);
    for i in 0..SUBMISSIONS {
        assert_eq!(target.mem.load(8 * i), 0xD0_0000 + i, "submission {i}");
    }
    okk(&m, c.close());
    exits_clean(&m, &p);
}

/// AL-03 on the DMA path: a command buffer destroyed (without `AssumeNotInUse`) while a DMA
/// buffer in it waits behind 128 KiB of other DMA buffers keeps its memory and mapping until
/// that packet ran: a command buffer made and written right after does not get them, and the
/// queued FILL lands (unmapped at once, the GPU's fetch would fault).
#[test]
fn al_03_a_command_buffer_destroyed_under_a_queued_dma_buffer_lives_until_it_ran() {
    let m = dma_machine();
    let s = setup(&m);
    let pad = okk(
        &m,
        s.k.create_allocation_as(16384, AllocationKind::Commands),
    );
    let pad_bytes = write_commands(&pad, &[Command::Nop { len: 2048 }]);
    let bytes = write_commands(&s.cb, &[fill(&s.target, 0, 0x5555)]);
    for _ in 0..8 {
        okk(&m, s.k.submit_command(s.ctx, pad.gpu_va, pad_bytes));
    }
    okk(&m, s.k.submit_command(s.ctx, s.cb.gpu_va, bytes));
    okk(&m, s.k.destroy_allocation(s.cb.handle));
    let next = okk(&m, s.k.create_allocation_as(4096, AllocationKind::Commands));
    write_commands(&next, &[fill(&s.target, 0, 0x6666)]);
    run_until(&m, "the DMA buffers", node_idle);
    assert_eq!(s.target.mem.load(0), 0x5555);
    exits_clean(&m, &s.p);
}

/// UM-01 on a hardware-scheduled node, the UMD's Rust code over the simulated thunks: the DMA
/// context learns the node's scheduling from `D3DKMTQueryAdapterInfo`, creates its context
/// with `HwQueueSupported` and one kernel-mode hardware queue, and its packet lists run through
/// `D3DKMTSubmitCommandToHwQueue` (no fence ID of VidSch's kernel-mode DMA path is taken),
/// completion read from the queue's progress fence; `D3DKMTSubmitCommand` on that context is
/// refused (STATUS_INVALID_PARAMETER, 24H2 `K:DxgkSubmitCommandInternal` @0x1402A4B90).
#[test]
fn um_01_the_umd_dma_context_on_a_hws_node_goes_through_its_hardware_queue() {
    let m = machine_with(Mode::Step, |_| {});
    let (p, k) = user_process(&m);
    assert_eq!(k.node_hw_scheduled(0), Ok(true));
    let target = okk(&m, k.create_allocation(4096));
    let before = m.legacy_fences(0, 0);
    let mut c = okk(&m, DmaContext::new(k, 0));
    assert!(
        matches!(c.tracking(), Tracking::Queue { .. }),
        "{:?}",
        c.tracking()
    );
    for i in 0..4 {
        okk(&m, c.submit(&[fill(&target, 8 * i, 0xE0_0000 + i)]));
    }
    let cb = okk(&m, k.create_allocation_as(4096, AllocationKind::Commands));
    assert_eq!(
        k.submit_command(c.handle(), cb.gpu_va, 8),
        Err(rvgpu_umd::kmt::STATUS_INVALID_PARAMETER)
    );
    okk(&m, c.close());
    for i in 0..4 {
        assert_eq!(target.mem.load(8 * i), 0xE0_0000 + i, "submission {i}");
    }
    assert_eq!(
        m.legacy_fences(0, 0),
        before,
        "no kernel-mode DMA fence ID taken"
    );
    okk(&m, k.destroy_allocation(cb.handle));
    exits_clean(&m, &p);
}
