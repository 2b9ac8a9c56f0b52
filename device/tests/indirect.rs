//! INDIRECT (opcode 0x09): a queue "calls" a command buffer in memory. This is the
//! kernel-mode submission path (UM-01): for DxgkDdiSubmitCommandToHwQueue the KMD writes
//! `INDIRECT(dma buffer, size)` and `PROGRESS(PROGRESS_IRQ, fence id)` into its own ring.
//! Step mode unless the test name says threaded.
mod common;

use common::*;
use rvgpu_device::DeviceConfig;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::{self, Command, LogKind, Opcode, MAX_INDIRECT};
use rvgpu_hw::engine::{ResetResult, ENGINE_CTRL_RESET};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::log::{OP_SIGNAL_EXECUTED, OP_WAIT_UNBLOCKED};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::regs;

/// The value and read pointer the first PROGRESS event the ISR drains reports.
fn progress(rig: &Rig) -> (u64, u64) {
    let (_, evs) = rig.isr();
    let p = of_kind(&evs, EventKind::Progress);
    (p[0].arg0, p[0].arg1)
}

/// UM-01 (kernel-mode submission path): the buffer's packets run in order as part of the
/// queue, one per quantum; the ring read pointer stays on the INDIRECT until the last one
/// completes and then moves past it. COMPLETED_COMMANDS counts every packet of the buffer
/// and the INDIRECT itself once, when its buffer is done. A PROGRESS inside the buffer
/// reports the ring read pointer as it is after the packet.
#[test]
fn um_01_indirect_runs_the_buffer_in_order_then_moves_past_it() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let ts = rig.alloc(8);
    let mut q = rig.queue_committed(0, 1);
    let buf = rig.buffer(&[
        signal(f, 1, 0, 0),
        Command::Timestamp { addr: ts },
        progress_irq(5),
        signal(f, 2, 0, 0),
        progress_irq(6),
    ]);
    rig.submit(&mut q, &[indirect(buf), progress_irq(7)]);
    let step = |rig: &Rig| assert!(rig.dev.step());

    // Pass 1 starts the buffer and runs nothing of it.
    step(&rig);
    let s = snap(&rig, 1).unwrap();
    assert_eq!((s.read_ptr, s.indirect), (0, Some((buf.0, 0))));
    assert_eq!(rig.read_ptr(&q), 0);
    assert_eq!(rig.value(f.cv), 0);
    assert_eq!(rig.dev.completed_commands(0), 0);

    // Then one packet of the buffer per pass; read_ptr stays on the INDIRECT.
    step(&rig);
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 40)));
    assert_eq!(rig.read_ptr(&q), 0);
    assert_eq!(rig.dev.completed_commands(0), 1);
    step(&rig);
    assert_eq!(rig.value(ts), rig.dev.gpu_clock());
    step(&rig);
    assert_eq!(rig.value(q.desc.progress_fence.get()), 5);
    assert_eq!(progress(&rig), (5, 0), "read_ptr still on the INDIRECT");
    step(&rig);
    assert_eq!(rig.value(f.cv), 2);
    assert_eq!(rig.read_ptr(&q), 0);
    assert_eq!(rig.dev.completed_commands(0), 4);

    // The buffer's last packet completes the INDIRECT in the same pass.
    step(&rig);
    let s = snap(&rig, 1).unwrap();
    assert_eq!((s.read_ptr, s.indirect), (24, None));
    assert_eq!(rig.read_ptr(&q), 24);
    assert_eq!(
        rig.dev.completed_commands(0),
        6,
        "5 in the buffer + INDIRECT"
    );
    assert_eq!(progress(&rig), (6, 24), "last packet: past the INDIRECT");

    // The ring goes on after the INDIRECT.
    step(&rig);
    assert_eq!(rig.read_ptr(&q), q.wptr);
    assert_eq!(rig.value(q.desc.progress_fence.get()), 7);
    assert_eq!(progress(&rig), (7, 40));
    assert_eq!(rig.dev.completed_commands(0), 7);
    assert!(!rig.dev.step(), "idle");
    assert!(snap(&rig, 1).unwrap().fault.is_none());
}

/// UM-01 (kernel-mode submission path): a buffer of exactly `cmd::MAX_INDIRECT` bytes is
/// accepted, and a buffer in VRAM works like one in system memory.
#[test]
fn um_01_largest_buffer_and_vram_buffer_run() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    // 131072 words: NOP(65535) + NOP(65535) + NOP(2); padding is never read.
    let mut words = vec![0u64; (MAX_INDIRECT / 8) as usize];
    words[0] = cmd::header(Opcode::Nop, 0, 0xFFFF);
    words[0xFFFF] = cmd::header(Opcode::Nop, 0, 0xFFFF);
    words[2 * 0xFFFF] = cmd::header(Opcode::Nop, 0, 2);
    let big = rig.buffer_words(&words);
    assert_eq!(big.1, MAX_INDIRECT);
    let vram = rvgpu_hw::addr::VRAM_BASE + 0x2000;
    rig.mem
        .write_words(PhysAddr::new(vram), &encode(&[signal(f, 3, 0, 0)]))
        .unwrap();
    rig.submit(&mut q, &[indirect(big), indirect((vram, 40))]);
    rig.run();
    assert!(snap(&rig, 1).unwrap().fault.is_none());
    assert_eq!(rig.read_ptr(&q), 48);
    assert_eq!(rig.value(f.cv), 3);
    assert_eq!(rig.dev.completed_commands(0), 4 + 2);
}

/// UM-01 (kernel-mode submission path): a FENCE_WAIT inside a buffer blocks the queue (with
/// the cursor on the wait, read_ptr on the INDIRECT) while other queues run; it is
/// re-evaluated on the 5.4 triggers only, released by a FENCE_SIGNAL from another queue, and
/// the buffer then continues after the wait. A wait-log LOG_WRITE after it gets the wait's
/// first-evaluation time (LOG-03).
#[test]
fn um_01_fence_wait_in_a_buffer_blocks_until_another_queue_signals() {
    let mut rig = Rig::step();
    let (a, b, done, g) = (rig.fence(0), rig.fence(0), rig.fence(0), rig.fence(0));
    let [mut q1, mut q2] = rig.queues_committed(0, [1, 2]);
    let buf = rig.buffer(&[
        signal(a, 1, 0, 0),
        fence_wait(g, 5),
        log_write(LogKind::Wait, 0, 0x77, 5),
        signal(b, 1, 0, 0),
    ]);
    rig.submit(&mut q1, &[indirect(buf), signal(done, 1, 0, 0)]);
    rig.dev.step(); // INDIRECT
    rig.dev.step(); // signal a
    rig.dev.step(); // FENCE_WAIT: first evaluation
    let first = rig.dev.gpu_clock();
    let s = snap(&rig, 1).unwrap();
    assert_eq!(s.blocked_on, Some((g.cv, 5)));
    assert_eq!(s.indirect, Some((buf.0, 40)), "cursor on the wait");
    assert_eq!(s.read_ptr, 0);
    assert_eq!(rig.value(a.cv), 1);
    steps(&rig, 10);
    // Another queue runs meanwhile; a too-small signal does not release the wait.
    rig.submit(&mut q2, &[signal(g, 4, 0, 0)]);
    rig.run();
    assert_eq!(rig.read_ptr(&q2), q2.wptr);
    assert_eq!(snap(&rig, 1).unwrap().blocked_on, Some((g.cv, 5)));
    assert_eq!(rig.value(b.cv), 0);
    rig.submit(&mut q2, &[signal(g, 5, 0, 0)]);
    rig.run();
    assert_eq!(rig.value(b.cv), 1);
    assert_eq!(rig.value(done.cv), 1);
    assert_eq!(rig.read_ptr(&q1), q1.wptr);
    let s = snap(&rig, 1).unwrap();
    assert_eq!((s.blocked_on, s.indirect, s.fault), (None, None, None));
    let e = log_entry(&rig, q1.desc.wait_log.get(), 0);
    assert_eq!(e.operation_type, OP_WAIT_UNBLOCKED);
    assert_eq!((e.h_native_fence, e.fence_value), (0x77, 5));
    assert_eq!(e.fence_observed_gpu_timestamp, first, "first evaluation");
    assert!(e.fence_end_gpu_timestamp > first);
}

/// UM-01 (kernel-mode submission path), 5.4 scheduling: the round-robin switch happens
/// between the packets of an indirect buffer as between ring packets, and each queue keeps
/// its own position.
#[test]
fn um_01_round_robin_switches_between_packets_of_a_buffer() {
    let mut rig = Rig::step();
    let t = rig.alloc(32);
    let u = rig.alloc(32);
    let [mut q1, mut q2] = rig.queues_committed(0, [1, 2]);
    let ts = |base: u64| -> Vec<Command> {
        (0..4)
            .map(|i| Command::Timestamp { addr: base + i * 8 })
            .collect()
    };
    let buf = rig.buffer(&ts(t));
    rig.submit(&mut q1, &[indirect(buf)]);
    rig.submit(&mut q2, &ts(u));
    rig.run();
    let tv = rig.mem.read_words(PhysAddr::new(t), 4).unwrap();
    let uv = rig.mem.read_words(PhysAddr::new(u), 4).unwrap();
    for i in 0..4 {
        assert!(uv[i] < tv[i], "{uv:?} {tv:?}");
        if i < 3 {
            assert!(tv[i] < uv[i + 1], "alternating: {uv:?} {tv:?}");
        }
    }
    assert_eq!(rig.read_ptr(&q1), q1.wptr);
    assert_eq!(rig.read_ptr(&q2), q2.wptr);
}

/// UM-01 (kernel-mode submission path), 5.2: a runlist commit that keeps the queue keeps its
/// position in the buffer; nothing is executed twice.
#[test]
fn um_01_commit_that_keeps_the_queue_keeps_its_buffer_position() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue(0, 1);
    let other = rig.queue(0, 2);
    rig.commit(0, &[&q]);
    let buf = rig.buffer(&[signal(f, 1, 0, 0), signal(f, 2, 0, 0), signal(f, 3, 0, 0)]);
    rig.submit(&mut q, &[indirect(buf)]);
    steps(&rig, 2);
    assert_eq!(rig.value(f.cv), 1);
    rig.commit(0, &[&other, &q]);
    let s = snap(&rig, 1).unwrap();
    assert_eq!((s.read_ptr, s.indirect), (0, Some((buf.0, 40))));
    rig.dev.step();
    assert_eq!(rig.value(f.cv), 2, "continues, does not restart");
    rig.run();
    assert_eq!(rig.value(f.cv), 3);
    assert_eq!(rig.read_ptr(&q), q.wptr);
    assert_eq!(rig.dev.completed_commands(0), 4, "each packet once");
}

/// UM-01 (kernel-mode submission path), 5.2 / UM-11 / UM-12: a queue that leaves the runlist
/// inside a buffer and enters it again reloads read_ptr from ring control, which is still on
/// the INDIRECT, so the buffer runs again from its first packet.
#[test]
fn um_01_queue_that_leaves_and_reenters_restarts_the_buffer() {
    let mut rig = Rig::step();
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut q = rig.queue_committed(0, 1);
    let buf = rig.buffer(&[signal(f, 1, 0, 0), fence_wait(g, 1), signal(f, 2, 0, 0)]);
    rig.submit(
        &mut q,
        &[
            indirect(buf),
            Command::Progress {
                irq: false,
                value: 9,
            },
        ],
    );
    rig.run();
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 40)));
    assert_eq!(rig.dev.completed_commands(0), 1);
    // Mark the first signal's effect, so that running it again shows.
    rig.mem.write_u64(PhysAddr::new(f.cv), 0).unwrap();
    rig.commit(0, &[]);
    assert_eq!(rig.read_ptr(&q), 0, "ring control: on the INDIRECT");
    rig.commit(0, &[&q]);
    let s = snap(&rig, 1).unwrap();
    assert_eq!((s.read_ptr, s.indirect, s.blocked_on), (0, None, None));
    rig.run();
    assert_eq!(rig.value(f.cv), 1, "first packet ran again");
    assert_eq!(snap(&rig, 1).unwrap().blocked_on, Some((g.cv, 1)));
    rig.mem.write_u64(PhysAddr::new(g.cv), 1).unwrap();
    rig.dev.write64(regs::WAIT_RESCAN, g.cv);
    rig.run();
    assert_eq!(rig.value(f.cv), 2);
    assert_eq!(rig.value(q.desc.progress_fence.get()), 9);
    assert_eq!(rig.read_ptr(&q), q.wptr);
    assert_eq!(rig.dev.completed_commands(0), 1 + 4 + 1);
}

/// UM-01 (kernel-mode submission path): a COPY/FILL inside a buffer runs in chunks like one
/// in the ring; the cursor stays on it until it is done.
#[test]
fn um_01_fill_inside_a_buffer_runs_in_chunks() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let dst = rig.alloc(12 << 10);
    let mut q = rig.queue_committed(0, 1);
    let fill = Command::Fill {
        dst,
        bytes: 12 << 10,
        pattern: 0xABCD,
    };
    let buf = rig.buffer(&[fill, signal(f, 1, 0, 0)]);
    rig.submit(&mut q, &[indirect(buf)]);
    rig.dev.step(); // INDIRECT
    rig.dev.step(); // chunk 1
    rig.dev.step(); // chunk 2
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 0)));
    rig.dev.step(); // chunk 3: the FILL completes
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 32)));
    assert_eq!(rig.read_ptr(&q), 0);
    rig.dev.step();
    assert_eq!(rig.read_ptr(&q), 24);
    assert_eq!(rig.value(f.cv), 1);
    let words = rig
        .mem
        .read_words(PhysAddr::new(dst), (12 << 10) / 8)
        .unwrap();
    assert!(words.iter().all(|&w| w == 0xABCD));
}

/// UM-01 (kernel-mode submission path), LOG-04: a signal-log LOG_WRITE right after a
/// FENCE_SIGNAL in the same buffer is absorbed into it; the look-ahead does not cross the
/// end of the buffer into the ring.
#[test]
fn um_01_signal_log_lookahead_stays_inside_the_buffer() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    let log = |index: u32, value: u64| log_write(LogKind::Signal, index, 0x55, value);
    let buf = rig.buffer(&[signal(f, 1, 0, 0), log(0, 1)]);
    rig.submit(&mut q, &[indirect(buf)]);
    steps(&rig, 2);
    assert_eq!(
        rig.read_ptr(&q),
        24,
        "signal + its log: one unit, buffer done"
    );
    assert_eq!(rig.dev.completed_commands(0), 3);
    let e = log_entry(&rig, q.desc.signal_log.get(), 0);
    assert_eq!((e.operation_type, e.fence_value), (OP_SIGNAL_EXECUTED, 1));

    let buf2 = rig.buffer(&[signal(f, 2, 0, 0)]);
    rig.submit(&mut q, &[indirect(buf2), log(1, 2)]);
    steps(&rig, 2);
    assert_eq!(
        rig.read_ptr(&q),
        48,
        "the INDIRECT completed, the LOG_WRITE not yet"
    );
    assert_eq!(log_entry(&rig, q.desc.signal_log.get(), 1).fence_value, 0);
    rig.dev.step();
    assert_eq!(rig.read_ptr(&q), q.wptr);
    assert_eq!(log_entry(&rig, q.desc.signal_log.get(), 1).fence_value, 2);
}

/// Submits `words` after a NOP (so the INDIRECT is at read pointer 8), runs, and returns the
/// only Fault event.
fn fault_after_nop(rig: &mut Rig, q: &mut Q, words: &[u64]) -> EventRecord {
    rig.push(q, &[Command::Nop { len: 1 }]);
    rig.push_words(q, words);
    rig.ring(q);
    rig.run();
    let (_, evs) = rig.isr();
    let faults = of_kind(&evs, EventKind::Fault);
    assert_eq!(faults.len(), 1, "{evs:?}");
    assert_eq!(faults[0].queue_id, q.id());
    let s = snap(rig, q.id()).unwrap();
    assert_eq!(s.fault, FaultCode::from_u32(faults[0].arg0 as u32));
    assert_eq!(rig.read_ptr(q), 8, "read_ptr stays on the INDIRECT");
    faults[0]
}

fn raw_indirect(flags: u8, addr: u64, bytes: u64) -> [u64; 3] {
    [cmd::header(Opcode::Indirect, flags, 3), addr, bytes]
}

/// UM-01 (kernel-mode submission path), 6.3: a size that is 0, not a multiple of 8 or above
/// `cmd::MAX_INDIRECT`, or flags on INDIRECT, are decode faults (BadArgument, arg1 = 0,
/// arg2 = the INDIRECT's read pointer); nothing of the buffer runs.
#[test]
fn um_01_bad_size_or_flags_fault_bad_argument() {
    for (flags, bytes) in [(0, 0), (0, 12), (0, MAX_INDIRECT + 8), (1, 8)] {
        let mut rig = Rig::step();
        let f = rig.fence(0);
        let mut q = rig.queue_committed(0, 1);
        let buf = rig.buffer(&[signal(f, 1, 0, 0)]);
        let e = fault_after_nop(&mut rig, &mut q, &raw_indirect(flags, buf.0, bytes));
        assert_eq!(
            (e.arg0, e.arg1, e.arg2),
            (FaultCode::BadArgument as u64, 0, 8),
            "flags {flags} bytes {bytes}"
        );
        assert_eq!(rig.value(f.cv), 0);
        assert_eq!(snap(&rig, 1).unwrap().indirect, None);
        assert_eq!(rig.dev.completed_commands(0), 1, "only the NOP");
    }
}

/// UM-01 (kernel-mode submission path), 6.3: a misaligned buffer, one outside every window,
/// and one that runs off the end of its window fault BadAddress with arg1 = the buffer
/// address, before any of it runs.
#[test]
fn um_01_misaligned_or_unreachable_buffer_faults_bad_address() {
    for case in 0..3 {
        let mut rig = Rig::step();
        let mut q = rig.queue_committed(0, 1);
        let end = rig.arena.bus_addr + rig.arena.len;
        let aligned = rig.alloc(64);
        let (addr, bytes) = [(aligned + 4, 8), (end, 8), (end - 8, 16)][case];
        let e = fault_after_nop(&mut rig, &mut q, &raw_indirect(0, addr, bytes));
        assert_eq!(
            (e.arg0, e.arg1, e.arg2),
            (FaultCode::BadAddress as u64, addr, 8),
            "addr {addr:#x} bytes {bytes}"
        );
        assert_eq!(snap(&rig, 1).unwrap().indirect, None);
    }
}

/// UM-01 (kernel-mode submission path), 6.3: memory that becomes unreachable while the
/// buffer runs faults the next packet fetched from it (BadAddress, arg1 = that word); the
/// packets before it keep their effects.
#[test]
fn um_01_buffer_that_becomes_unreachable_faults_at_the_next_packet() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    let page = rig.mem.alloc_system(4096, 4096).unwrap();
    let (b, s) = regs::syswin_regs(1).unwrap();
    rig.dev.write64(b, page.bus_addr);
    rig.dev.write64(s, page.len);
    let words = encode(&[signal(f, 1, 0, 0), signal(f, 2, 0, 0)]);
    rig.mem
        .write_words(PhysAddr::new(page.bus_addr), &words)
        .unwrap();
    rig.submit(&mut q, &[indirect((page.bus_addr, 80))]);
    steps(&rig, 2);
    assert_eq!(rig.value(f.cv), 1);
    rig.dev.write64(s, 0);
    rig.run();
    let (_, evs) = rig.isr();
    let e = of_kind(&evs, EventKind::Fault)[0];
    assert_eq!(
        (e.arg0, e.arg1, e.arg2),
        (FaultCode::BadAddress as u64, page.bus_addr + 40, 0)
    );
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((page.bus_addr, 40)));
}

/// UM-01 (kernel-mode submission path), 6.3: an INDIRECT inside a buffer faults
/// NestedIndirect (arg1 = 0, arg2 = the ring INDIRECT's read pointer); the packets before it
/// keep their effects, the nested buffer and the rest of the ring do not run.
#[test]
fn um_01_nested_indirect_faults() {
    let mut rig = Rig::step();
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut q = rig.queue_committed(0, 1);
    let inner = rig.buffer(&[signal(g, 1, 0, 0)]);
    let buf = rig.buffer(&[signal(f, 1, 0, 0), indirect(inner)]);
    let mut words = raw_indirect(0, buf.0, buf.1).to_vec();
    words.extend(encode(&[progress_irq(9)]));
    let e = fault_after_nop(&mut rig, &mut q, &words);
    assert_eq!(
        (e.arg0, e.arg1, e.arg2),
        (FaultCode::NestedIndirect as u64, 0, 8)
    );
    assert_eq!(FaultCode::from_u32(9), Some(FaultCode::NestedIndirect));
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(rig.value(g.cv), 0);
    assert_eq!(rig.value(q.desc.progress_fence.get()), 0);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 40)));
    assert_eq!(rig.dev.completed_commands(0), 2, "NOP + signal");
}

/// UM-01 (kernel-mode submission path), 6.3: a packet that runs past the end of the buffer
/// faults BadLength (even if memory after the buffer would complete it); a bad opcode inside
/// a buffer faults BadOpcode. Both report the ring INDIRECT's read pointer in arg2.
#[test]
fn um_01_packet_past_buffer_end_or_bad_opcode_faults() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    // NOP, then a whole FENCE_SIGNAL in memory, but the buffer ends after its header.
    let words = encode(&[Command::Nop { len: 1 }, signal(f, 1, 0, 0)]);
    let (addr, _) = rig.buffer_words(&words);
    let e = fault_after_nop(&mut rig, &mut q, &raw_indirect(0, addr, 16));
    assert_eq!(
        (e.arg0, e.arg1, e.arg2),
        (FaultCode::BadLength as u64, 0, 8)
    );
    assert_eq!(rig.value(f.cv), 0);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((addr, 8)));
    assert_eq!(rig.dev.completed_commands(0), 2, "ring NOP + buffer NOP");

    let mut rig = Rig::step();
    let mut q = rig.queue_committed(0, 1);
    let (addr, bytes) = rig.buffer_words(&[0x1_00EE]);
    let e = fault_after_nop(&mut rig, &mut q, &raw_indirect(0, addr, bytes));
    assert_eq!(
        (e.arg0, e.arg1, e.arg2),
        (FaultCode::BadOpcode as u64, 0, 8)
    );
}

/// UM-01 (kernel-mode submission path), TDR-01/TDR-06 (10.1): an engine reset inside a
/// buffer aborts the INDIRECT: RESET_RPTR (and ResetDone arg2, ring_control.read_ptr) is the
/// INDIRECT's read pointer, and the INDIRECT is not counted. After the driver fixes the
/// buffer and recommits, the buffer runs again from its first packet.
#[test]
fn um_01_engine_reset_inside_a_buffer_reports_the_indirect() {
    let mut rig = Rig::step();
    let f = rig.fence(0);
    let mut q = rig.queue_committed(0, 1);
    let buf = rig.buffer(&[signal(f, 1, 0, 0), Command::Hang, signal(f, 2, 0, 0)]);
    rig.submit(
        &mut q,
        &[Command::Nop { len: 1 }, indirect(buf), progress_irq(9)],
    );
    rig.run();
    assert_eq!(rig.value(f.cv), 1);
    assert_eq!(snap(&rig, 1).unwrap().indirect, Some((buf.0, 40)));
    rig.dev
        .write32(rig.engine_reg(0, regs::engine::CTRL), ENGINE_CTRL_RESET);
    let reg = |r| rig.engine_reg(0, r);
    assert_eq!(
        rig.dev.read32(reg(regs::engine::RESET_RESULT)),
        ResetResult::Ok as u32
    );
    assert_eq!(rig.dev.read32(reg(regs::engine::RESET_QUEUE)), 1);
    assert_eq!(rig.dev.read64(reg(regs::engine::RESET_RPTR)), 8);
    assert_eq!(rig.read_ptr(&q), 8);
    assert_eq!(rig.dev.completed_commands(0), 2, "NOP + first signal");
    let (_, evs) = rig.isr();
    let r = of_kind(&evs, EventKind::ResetDone)[0];
    assert_eq!((r.arg1, r.arg2), (1, 8));

    // Resubmission: the driver replaces the HANG and recommits; the buffer restarts.
    rig.mem.write_u64(PhysAddr::new(f.cv), 0).unwrap();
    rig.mem
        .write_u64(PhysAddr::new(buf.0 + 40), cmd::header(Opcode::Nop, 0, 1))
        .unwrap();
    rig.commit(0, &[&q]);
    rig.kick(&q);
    steps(&rig, 2);
    assert_eq!(rig.value(f.cv), 1, "from the first packet");
    rig.run();
    assert_eq!(rig.value(f.cv), 2);
    assert_eq!(rig.value(q.desc.progress_fence.get()), 9);
    assert_eq!(rig.read_ptr(&q), q.wptr);
}

/// UM-01 (kernel-mode submission path), threaded mode: the KMD pattern on a kernel-mode
/// queue (no doorbell, QUEUE_KICK): per DMA buffer, `INDIRECT` + `PROGRESS(IRQ, fence id)`.
/// Every buffer runs, progress reaches the last id and each PROGRESS event reports the
/// read pointer past it.
#[test]
fn um_01_threaded_kernel_mode_submissions_through_indirect() {
    let mut rig = Rig::new(DeviceConfig::default());
    let f = rig.fence(0);
    let stamps = rig.alloc(50 * 8);
    let mut q = rig.queue(0, 1).without_doorbell();
    rig.commit(0, &[&q]);
    for i in 1..=50u64 {
        let buf = rig.buffer(&[
            Command::Timestamp {
                addr: stamps + (i - 1) * 8,
            },
            signal(f, i, 0, 0),
        ]);
        rig.submit(&mut q, &[indirect(buf), progress_irq(i)]);
    }
    rig.wait_until("last fence id", || {
        rig.mem.read_u64(PhysAddr::new(q.desc.progress_fence.get())) == Some(50)
    });
    rig.wait_until("read_ptr", || rig.read_ptr(&q) == q.wptr);
    assert_eq!(rig.value(f.cv), 50);
    let ts = rig.mem.read_words(PhysAddr::new(stamps), 50).unwrap();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]) && ts[0] > 0, "{ts:?}");
    rig.wait_until("completed", || rig.dev.completed_commands(0) == 50 * 4);
    // The event is posted right after the packet completes: collect until all are in.
    let mut p = Vec::new();
    rig.wait_until("50 PROGRESS events", || {
        p.extend(of_kind(&rig.isr().1, EventKind::Progress));
        p.len() >= 50
    });
    assert_eq!(p.len(), 50);
    for (i, e) in (1..).zip(&p) {
        assert_eq!((e.arg0, e.arg1), (i, i * 40));
    }
}

/// UM-01 (kernel-mode submission path), threaded mode: a FENCE_WAIT inside a buffer blocks
/// its queue until a FENCE_SIGNAL from a queue on another engine releases it.
#[test]
fn um_01_threaded_wait_in_a_buffer_released_from_another_engine() {
    let mut rig = Rig::new(DeviceConfig::default());
    let (f, g) = (rig.fence(0), rig.fence(0));
    let mut q1 = rig.queue_committed(0, 1);
    let mut q2 = rig.queue_committed(1, 2);
    let buf = rig.buffer(&[fence_wait(g, 1), signal(f, 1, 0, 0)]);
    rig.submit(&mut q1, &[indirect(buf)]);
    rig.wait_until("blocked in the buffer", || {
        let s = snap(&rig, 1).unwrap();
        s.blocked_on == Some((g.cv, 1)) && s.indirect == Some((buf.0, 0))
    });
    assert_eq!(rig.read_ptr(&q1), 0);
    rig.submit(&mut q2, &[signal(g, 1, 0, 0)]);
    rig.wait_until("released", || rig.read_ptr(&q1) == q1.wptr);
    assert_eq!(rig.value(f.cv), 1);
    assert!(snap(&rig, 1).unwrap().indirect.is_none());
}
