//! INDIRECT_VM through the GPU MMU (opcode 0x0C, docs/hardware.md 6.2 and 12.4): a
//! kernel-mode ring runs a process's DMA buffer in that process's space, with user privilege.
//! Step mode; spaces and queues are `common::spaces`'s.
mod common;

use common::spaces::*;
use common::*;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_hw::cmd::{self, Command};
use rvgpu_hw::event::FaultCode;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::{Access, FaultReason, PageAttrs};
use rvgpu_hw::regs;

/// Where a process keeps its DMA buffer (same leaf table as `DATA_VA`).
const BUF_VA: u64 = RING_VA + 0x40_000;
/// A second buffer page of the process (for nested packets).
const BUF2_VA: u64 = RING_VA + 0x41_000;

/// A process space: a DMA-buffer page at `BUF_VA` and a data page at `DATA_VA`, both `USER`.
struct Proc {
    pt: Pt,
    /// Physical page behind `BUF_VA`.
    buf: u64,
    /// Physical page behind `DATA_VA`.
    data: u64,
}

/// A step-mode rig with a [`Proc`] space.
fn process_rig() -> (Rig, Proc) {
    let mut rig = Rig::step();
    let pt = Pt::new(&mut rig);
    let (buf, data) = (page(&rig), page(&rig));
    pt.map(&mut rig, BUF_VA, buf, RO_USER);
    pt.map(&mut rig, DATA_VA, data, RW_USER);
    (rig, Proc { pt, buf, data })
}

/// Writes `words` at physical `pa` (a buffer page); returns their size in bytes.
fn put_buffer(rig: &Rig, pa: u64, words: &[u64]) -> u64 {
    rig.mem.write_words(PhysAddr::new(pa), words).unwrap();
    words.len() as u64 * 8
}

fn ivm(addr: u64, bytes: u64, root: u64) -> Command {
    Command::IndirectVm { addr, bytes, root }
}

/// A kernel-mode queue in the identity space (root 0): ring, ring control and progress fence
/// at their bus addresses in the rig's window.
fn identity_kqueue(rig: &mut Rig, engine: u32, id: u32) -> VQ {
    let q = rig.queue(engine, id);
    VQ {
        ring_pa: q.desc.ring_base.get(),
        rc_pa: q.desc.ring_control.get(),
        prog_pa: q.desc.progress_fence.get(),
        q,
    }
}

fn fill(dst: u64, pattern: u64) -> Command {
    Command::Fill {
        dst,
        bytes: 8,
        pattern,
    }
}

/// A kernel-mode ring (identity space, or its own translated space) runs a process's buffer:
/// its packets write the process's pages, never the ring space's page at the same VA; the
/// read pointer stays on the INDIRECT_VM while the buffer runs; COMPLETED_COMMANDS counts the
/// buffer's packets plus one for the INDIRECT_VM.
#[test]
fn indirect_vm_runs_a_process_buffer_in_its_space() {
    for translated in [false, true] {
        let what = if translated { "translated" } else { "identity" };
        let (mut rig, p) = process_rig();
        // The ring's own space (when translated) maps the same VAs to other pages: the
        // buffer VA to a zero page (a NOP of length 0 there would fault BadLength), the data
        // VA to a page that must stay untouched.
        let (kbuf, kdata) = (page(&rig), page(&rig));
        let mut k = if translated {
            let kpt = Pt::new(&mut rig);
            kpt.map(&mut rig, BUF_VA, kbuf, RW_KERNEL);
            kpt.map(&mut rig, DATA_VA, kdata, RW_KERNEL);
            vqueue(&mut rig, kpt, 0, 1, false)
        } else {
            identity_kqueue(&mut rig, 0, 1)
        };
        rig.commit(0, &[&k.q]);
        let mut words = encode(&[Command::Fill {
            dst: DATA_VA,
            bytes: 16,
            pattern: 0x5A5A,
        }]);
        let mut wd = [0u64; 8];
        let n = cmd::write_data(DATA_VA + 0x100, &[1, 2, 3], &mut wd).unwrap();
        words.extend_from_slice(&wd[..n]);
        words.extend(encode(&[Command::Timestamp {
            addr: DATA_VA + 0x200,
        }]));
        let bytes = put_buffer(&rig, p.buf, &words);
        submit(&rig, &mut k, &[ivm(BUF_VA, bytes, p.pt.root)]);

        // The first pass starts the buffer and runs nothing of it.
        assert!(rig.dev.step());
        let s = snap(&rig, 1).unwrap();
        assert_eq!((s.read_ptr, s.indirect), (0, Some((BUF_VA, 0))), "{what}");
        assert_eq!(rig.dev.completed_commands(0), 0, "{what}");
        assert_eq!(rig.value(p.data), 0, "{what}");
        // Then one packet per pass, the read pointer on the INDIRECT_VM.
        assert!(rig.dev.step());
        assert_eq!(
            rig.mem.read_words(PhysAddr::new(p.data), 2).unwrap(),
            vec![0x5A5A; 2]
        );
        assert_eq!(read_ptr(&rig, &k), 0, "{what}: still on the INDIRECT_VM");
        assert_eq!(rig.dev.completed_commands(0), 1, "{what}");

        rig.run();
        let evs = rig.drain();
        assert!(faults(&evs).is_empty(), "{what}: {evs:?}");
        assert_eq!(
            rig.mem
                .read_words(PhysAddr::new(p.data + 0x100), 3)
                .unwrap(),
            vec![1, 2, 3],
            "{what}"
        );
        assert_ne!(
            rig.mem.read_u64(PhysAddr::new(p.data + 0x200)),
            Some(0),
            "{what}"
        );
        assert!(
            zeroed(&rig, kdata),
            "{what}: the ring space's page at the same VA is untouched"
        );
        assert_eq!(read_ptr(&rig, &k), 32, "{what}: past the INDIRECT_VM");
        assert_eq!(snap(&rig, 1).unwrap().indirect, None, "{what}");
        assert_eq!(
            rig.dev.completed_commands(0),
            4,
            "{what}: 3 buffer packets + the INDIRECT_VM"
        );
        assert_eq!(
            rig.engine_read64(0, regs::engine::COMPLETED_COMMANDS),
            4,
            "{what}: the register"
        );

        // The ring goes on after it, in its own space again (PROGRESS: system space).
        submit(
            &rig,
            &mut k,
            &[Command::Progress {
                irq: false,
                value: 9,
            }],
        );
        rig.run();
        assert!(faults(&rig.drain()).is_empty(), "{what}");
        assert_eq!(rig.value(k.prog_pa), 9, "{what}");
        assert_eq!(read_ptr(&rig, &k), k.q.wptr, "{what}");
        assert_eq!(rig.dev.completed_commands(0), 5, "{what}");
    }
}

/// The buffer runs with user privilege: a process page mapped without `USER` faults
/// (Privileged, user bit set) even though the kernel-mode ring itself, in that very space,
/// may write it. The packets before keep their effects, nothing of the faulting one or after
/// it happens, the read pointer stays on the INDIRECT_VM, and only that queue stops.
#[test]
fn indirect_vm_buffer_cannot_touch_a_process_page_without_user() {
    let (mut rig, p) = process_rig();
    const KPAGE_VA: u64 = DATA_VA + 0x1000;
    let kpage = page(&rig);
    p.pt.map(&mut rig, KPAGE_VA, kpage, RW_KERNEL);
    // A kernel-mode queue whose own space is the process's (kernel privilege), and another
    // kernel-mode queue on the same engine.
    let mut k = vqueue(&mut rig, p.pt, 0, 1, false);
    let mut other = identity_kqueue(&mut rig, 0, 2);
    rig.commit(0, &[&k.q, &other.q]);
    // From its ring, the kernel queue may write the kernel-only page (and the translation
    // is now cached).
    submit(&rig, &mut k, &[fill(KPAGE_VA, 1)]);
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_eq!(rig.value(kpage), 1);
    let rp = read_ptr(&rig, &k);
    assert_eq!(rp, 32);

    let bytes = put_buffer(
        &rig,
        p.buf,
        &encode(&[
            fill(DATA_VA, 0x22),
            Command::Fill {
                dst: KPAGE_VA,
                bytes: 4096,
                pattern: 0xBAD,
            },
            Command::Timestamp { addr: DATA_VA + 8 },
        ]),
    );
    let before = rig.dev.completed_commands(0);
    submit(
        &rig,
        &mut k,
        &[
            ivm(BUF_VA, bytes, p.pt.root),
            Command::Progress {
                irq: false,
                value: 5,
            },
        ],
    );
    rig.run();
    let (r, info) = page_fault(&rig.drain());
    assert_eq!((r.queue_id, r.arg1), (1, KPAGE_VA));
    assert_eq!(
        (info.reason, info.access, info.level, info.user),
        (FaultReason::Privileged, Access::Write, 0, true)
    );
    assert_eq!(info.rptr, rp as u32, "the INDIRECT_VM's read pointer");
    assert_eq!(
        rig.mem.read_words(PhysAddr::new(kpage), 512).unwrap(),
        {
            let mut v = vec![0; 512];
            v[0] = 1;
            v
        },
        "nothing written to the kernel-only page"
    );
    assert_eq!(rig.value(p.data), 0x22, "the packet before ran");
    assert_eq!(rig.value(p.data + 8), 0, "the packet after did not");
    assert_eq!(
        read_ptr(&rig, &k),
        rp,
        "read pointer stays on the INDIRECT_VM"
    );
    assert_eq!(rig.value(k.prog_pa), 0, "PROGRESS did not run");
    assert_eq!(
        rig.dev.completed_commands(0),
        before + 1,
        "the FILL before; the INDIRECT_VM is not counted"
    );
    assert_eq!(snap(&rig, 1).unwrap().fault, Some(FaultCode::PageFault));

    // The other queue of the engine keeps running; the faulted one stays stopped.
    let ts_pa = rig.alloc(8);
    submit(&rig, &mut other, &[Command::Timestamp { addr: ts_pa }]);
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_ne!(rig.mem.read_u64(PhysAddr::new(ts_pa)), Some(0));
    assert_eq!(read_ptr(&rig, &other), other.q.wptr);
    assert_eq!(snap(&rig, 2).unwrap().fault, None);
    assert_eq!(read_ptr(&rig, &k), rp);
    assert_eq!(rig.value(p.data + 8), 0);
}

/// The buffer does not get the ring's space: an address the kernel-mode queue's own space
/// reaches (its translated page, or a window address under identity) but the process does
/// not map faults NotPresent, with the user bit, and is not written.
#[test]
fn indirect_vm_buffer_does_not_get_the_rings_space() {
    for translated in [false, true] {
        let what = if translated { "translated" } else { "identity" };
        let (mut rig, p) = process_rig();
        let (mut k, target, target_pa) = if translated {
            let kpt = Pt::new(&mut rig);
            let kdata = page(&rig);
            const K_VA: u64 = DATA_VA + 0x2000;
            kpt.map(&mut rig, K_VA, kdata, RW_KERNEL);
            (vqueue(&mut rig, kpt, 0, 1, false), K_VA, kdata)
        } else {
            let a = rig.alloc(4096);
            (identity_kqueue(&mut rig, 0, 1), a, a)
        };
        rig.commit(0, &[&k.q]);
        // The ring itself reaches the target.
        submit(&rig, &mut k, &[fill(target, 0x600D)]);
        rig.run();
        assert!(faults(&rig.drain()).is_empty(), "{what}");
        assert_eq!(rig.value(target_pa), 0x600D, "{what}");

        let bytes = put_buffer(&rig, p.buf, &encode(&[fill(target, 0xBAD)]));
        submit(&rig, &mut k, &[ivm(BUF_VA, bytes, p.pt.root)]);
        rig.run();
        let (r, info) = page_fault(&rig.drain());
        assert_eq!((r.queue_id, r.arg1), (1, target), "{what}");
        assert_eq!(
            (info.reason, info.access, info.user),
            (FaultReason::NotPresent, Access::Write, true),
            "{what}"
        );
        assert_eq!(info.rptr, 32, "{what}");
        assert_eq!(rig.value(target_pa), 0x600D, "{what}: not written");
        assert_eq!(read_ptr(&rig, &k), 32, "{what}");
        assert_eq!(
            rig.dev.completed_commands(0),
            1,
            "{what}: only the ring FILL"
        );
    }
}

/// The buffer itself is fetched under `root` with user privilege, and checked whole before
/// its first packet runs: not mapped there (though the ring's space maps that VA), mapped
/// without `USER`, or running into an unmapped page all fault with an Execute page fault and
/// run nothing.
#[test]
fn indirect_vm_buffer_is_fetched_under_its_root_with_user_privilege() {
    // (name, how the process maps BUF_VA / BUF2_VA, bytes, faulting VA, reason)
    let cases: [(&str, Option<PageAttrs>, u64, u64, FaultReason); 3] = [
        (
            "not mapped in the process",
            None,
            32,
            BUF_VA,
            FaultReason::NotPresent,
        ),
        (
            "mapped without USER",
            Some(RW_KERNEL),
            32,
            BUF_VA,
            FaultReason::Privileged,
        ),
        (
            "runs into an unmapped page",
            Some(RO_USER),
            4096 + 32,
            BUF2_VA,
            FaultReason::NotPresent,
        ),
    ];
    for (what, buf_attrs, bytes, va, reason) in cases {
        let (mut rig, p) = process_rig();
        match buf_attrs {
            Some(a) => p.pt.map(&mut rig, BUF_VA, p.buf, a),
            None => p.pt.unmap(&mut rig, BUF_VA),
        }
        // The kernel queue's own space maps the buffer VA, with a runnable buffer there.
        let kpt = Pt::new(&mut rig);
        kpt.map(&mut rig, BUF_VA, p.buf, RW_KERNEL);
        kpt.map(&mut rig, BUF2_VA, p.buf, RW_KERNEL);
        kpt.map(&mut rig, DATA_VA, p.data, RW_KERNEL);
        let mut k = vqueue(&mut rig, kpt, 0, 1, false);
        rig.commit(0, &[&k.q]);
        put_buffer(&rig, p.buf, &encode(&[fill(DATA_VA, 0xBAD); 128]));
        submit(&rig, &mut k, &[ivm(BUF_VA, bytes, p.pt.root)]);
        rig.run();
        let (r, info) = page_fault(&rig.drain());
        assert_eq!(r.arg1, va, "{what}");
        assert_eq!(
            (info.reason, info.access, info.user, info.rptr),
            (reason, Access::Execute, true, 0),
            "{what}"
        );
        assert_eq!(rig.value(p.data), 0, "{what}: nothing ran");
        assert_eq!(
            snap(&rig, 1).unwrap().indirect,
            None,
            "{what}: never started"
        );
        assert_eq!(rig.dev.completed_commands(0), 0, "{what}");
    }
}

/// Only a kernel-mode queue may choose another space: on a user-mode queue INDIRECT_VM faults
/// BadArgument (even naming the queue's own root), and nothing of the buffer runs.
#[test]
fn indirect_vm_on_a_user_mode_queue_faults_bad_argument() {
    let (mut rig, pt, mut v, data) = user_rig();
    let buf = page(&rig);
    pt.map(&mut rig, BUF_VA, buf, RO_USER);
    let bytes = put_buffer(&rig, buf, &encode(&[fill(DATA_VA, 0xBAD)]));
    // The same buffer through a plain INDIRECT runs (the buffer and its FILL are fine).
    submit(
        &rig,
        &mut v,
        &[Command::Indirect {
            addr: BUF_VA,
            bytes,
        }],
    );
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_eq!(rig.value(data), 0xBAD);
    rig.mem.write_u64(PhysAddr::new(data), 0).unwrap();

    submit(
        &rig,
        &mut v,
        &[fill(DATA_VA + 8, 1), ivm(BUF_VA, bytes, pt.root)],
    );
    rig.run();
    let f = faults(&rig.drain());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].queue_id, 1);
    assert_eq!(f[0].arg0, FaultCode::BadArgument as u64);
    assert_eq!(f[0].arg1, 0);
    assert_eq!(f[0].arg2, 24 + 32, "plain read pointer of the INDIRECT_VM");
    assert_eq!(rig.value(data + 8), 1, "the packet before ran");
    assert_eq!(rig.value(data), 0, "the buffer did not");
    assert_eq!(read_ptr(&rig, &v), 24 + 32);
    let s = snap(&rig, 1).unwrap();
    assert_eq!((s.fault, s.indirect), (Some(FaultCode::BadArgument), None));
}

/// `root` 0 (identity) or not 4 KiB aligned is a decode fault: BadArgument, `arg1` 0, nothing
/// of the buffer runs (root 0 is tried with a buffer that identity would run).
#[test]
fn indirect_vm_with_root_0_or_misaligned_is_a_bad_argument_decode_fault() {
    for bad in ["root 0", "root + 8", "root + 0x800"] {
        let (mut rig, p) = process_rig();
        let mut k = identity_kqueue(&mut rig, 0, 1);
        rig.commit(0, &[&k.q]);
        // Under identity, a buffer in the window filling a window page.
        let (win_buf, win_data) = (rig.alloc(4096), rig.alloc(4096));
        let id_bytes = put_buffer(&rig, win_buf, &encode(&[fill(win_data, 0xBAD)]));
        let bytes = put_buffer(&rig, p.buf, &encode(&[fill(DATA_VA, 0xBAD)]));
        let ts_pa = rig.alloc(8);
        let packet = match bad {
            "root 0" => ivm(win_buf, id_bytes, 0),
            "root + 8" => ivm(BUF_VA, bytes, p.pt.root + 8),
            _ => ivm(BUF_VA, bytes, p.pt.root + 0x800),
        };
        submit(&rig, &mut k, &[Command::Timestamp { addr: ts_pa }, packet]);
        rig.run();
        let f = faults(&rig.drain());
        assert_eq!(f.len(), 1, "{bad}: {f:?}");
        assert_eq!(f[0].arg0, FaultCode::BadArgument as u64, "{bad}");
        assert_eq!((f[0].arg1, f[0].arg2), (0, 16), "{bad}: decode fault");
        assert_ne!(
            rig.mem.read_u64(PhysAddr::new(ts_pa)),
            Some(0),
            "{bad}: packet before ran"
        );
        assert_eq!(rig.value(win_data), 0, "{bad}");
        assert_eq!(rig.value(p.data), 0, "{bad}");
        assert_eq!(read_ptr(&rig, &k), 16, "{bad}");
        assert_eq!(rig.dev.completed_commands(0), 1, "{bad}");
        let s = snap(&rig, 1).unwrap();
        assert_eq!(
            (s.fault, s.indirect),
            (Some(FaultCode::BadArgument), None),
            "{bad}"
        );
    }
}

/// One level only: an INDIRECT or INDIRECT_VM inside an INDIRECT_VM buffer, or an
/// INDIRECT_VM inside a plain INDIRECT buffer, faults NestedIndirect; the packets before it
/// in the buffer keep their effects, the inner buffer never runs.
#[test]
fn indirect_inside_an_indirect_vm_buffer_faults_nested_indirect() {
    for what in [
        "INDIRECT in INDIRECT_VM",
        "INDIRECT_VM in INDIRECT_VM",
        "INDIRECT_VM in INDIRECT",
    ] {
        let (mut rig, p) = process_rig();
        // An inner buffer the process could run: it fills DATA_VA + 8.
        let inner = page(&rig);
        p.pt.map(&mut rig, BUF2_VA, inner, RO_USER);
        let inner_bytes = put_buffer(&rig, inner, &encode(&[fill(DATA_VA + 8, 0xBAD)]));
        let mut k = identity_kqueue(&mut rig, 0, 1);
        rig.commit(0, &[&k.q]);
        // (the ring's packet, the physical word the buffer's first packet fills)
        let (outer, prefix_pa) = match what {
            "INDIRECT in INDIRECT_VM" => {
                let bytes = put_buffer(
                    &rig,
                    p.buf,
                    &encode(&[
                        fill(DATA_VA, 0x11),
                        Command::Indirect {
                            addr: BUF2_VA,
                            bytes: inner_bytes,
                        },
                    ]),
                );
                (ivm(BUF_VA, bytes, p.pt.root), p.data)
            }
            "INDIRECT_VM in INDIRECT_VM" => {
                let bytes = put_buffer(
                    &rig,
                    p.buf,
                    &encode(&[fill(DATA_VA, 0x11), ivm(BUF2_VA, inner_bytes, p.pt.root)]),
                );
                (ivm(BUF_VA, bytes, p.pt.root), p.data)
            }
            _ => {
                // A plain INDIRECT buffer of the (identity) kernel queue: its first packet
                // runs in the identity space, the INDIRECT_VM after it must not start.
                let (win_buf, win_data) = (rig.alloc(4096), rig.alloc(4096));
                let bytes = put_buffer(
                    &rig,
                    win_buf,
                    &encode(&[fill(win_data, 0x11), ivm(BUF2_VA, inner_bytes, p.pt.root)]),
                );
                let outer = Command::Indirect {
                    addr: win_buf,
                    bytes,
                };
                (outer, win_data)
            }
        };
        submit(&rig, &mut k, &[outer]);
        rig.run();
        let f = faults(&rig.drain());
        assert_eq!(f.len(), 1, "{what}: {f:?}");
        assert_eq!(
            (f[0].arg0, f[0].arg1, f[0].arg2),
            (FaultCode::NestedIndirect as u64, 0, 0),
            "{what}: arg2 = the outer packet's read pointer"
        );
        assert_eq!(rig.value(prefix_pa), 0x11, "{what}: prefix ran");
        assert_eq!(rig.value(p.data + 8), 0, "{what}: inner did not");
        assert_eq!(read_ptr(&rig, &k), 0, "{what}");
        assert_eq!(rig.dev.completed_commands(0), 1, "{what}: the prefix only");
        let s = snap(&rig, 1).unwrap();
        assert_eq!(
            (s.fault, s.read_ptr),
            (Some(FaultCode::NestedIndirect), 0),
            "{what}"
        );
    }
}

/// A FENCE_WAIT blocked inside an INDIRECT_VM buffer translated under the buffer's root: it
/// is released by a signal of the same physical word from another queue of that process, and
/// a TLB invalidation of that root (not the ring's, which is identity here) makes it translate
/// again: after an unmap it faults instead of waiting on the old page.
#[test]
fn indirect_vm_fence_wait_belongs_to_the_buffers_root() {
    for unmap in [false, true] {
        let what = if unmap { "unmap" } else { "signal" };
        let (mut rig, p) = process_rig();
        let mut k = identity_kqueue(&mut rig, 0, 1);
        // Another queue of the process (user mode, its own ring) on the other engine.
        let mut u = vqueue(&mut rig, p.pt, 1, 2, true);
        rig.commit(0, &[&k.q]);
        rig.commit(1, &[&u.q]);
        let bytes = put_buffer(
            &rig,
            p.buf,
            &encode(&[
                Command::FenceWait {
                    addr: DATA_VA,
                    value: 1,
                },
                fill(DATA_VA + 8, 0x77),
            ]),
        );
        submit(&rig, &mut k, &[ivm(BUF_VA, bytes, p.pt.root)]);
        rig.run();
        assert_eq!(
            snap(&rig, 1).unwrap().blocked_on,
            Some((DATA_VA, 1)),
            "{what}"
        );
        assert_eq!(rig.value(p.data + 8), 0, "{what}");
        if unmap {
            p.pt.unmap(&mut rig, DATA_VA);
            rig.dev.write64(regs::TLB_INVALIDATE, p.pt.root);
            rig.run();
            let (r, info) = page_fault(&rig.drain());
            assert_eq!((r.queue_id, r.arg1), (1, DATA_VA));
            assert_eq!(
                (info.reason, info.access, info.user),
                (FaultReason::NotPresent, Access::Read, true)
            );
            assert_eq!(rig.value(p.data + 8), 0);
        } else {
            submit(
                &rig,
                &mut u,
                &[Command::FenceSignal {
                    flags: 0,
                    value_addr: DATA_VA,
                    value: 1,
                    monitored_addr: 0,
                    report_tag: 0,
                }],
            );
            rig.run();
            assert!(faults(&rig.drain()).is_empty());
            assert_eq!(rig.value(p.data + 8), 0x77);
            assert_eq!(read_ptr(&rig, &k), 32);
            assert_eq!(rig.dev.completed_commands(0), 3);
        }
    }
}

/// TLB_INVALIDATE is the kernel's: inside an INDIRECT_VM buffer (a process's DMA buffer, user
/// privilege) it faults BadArgument before acting; the packets before it keep their effects,
/// the ones after it never run.
#[test]
fn tlb_invalidate_inside_an_indirect_vm_buffer_faults() {
    let (mut rig, p) = process_rig();
    let mut k = identity_kqueue(&mut rig, 0, 1);
    rig.commit(0, &[&k.q]);
    let bytes = put_buffer(
        &rig,
        p.buf,
        &encode(&[
            fill(DATA_VA, 0x11),
            Command::TlbInvalidate { root: 0 },
            fill(DATA_VA + 8, 0x22),
        ]),
    );
    submit(&rig, &mut k, &[ivm(BUF_VA, bytes, p.pt.root)]);
    rig.run();
    let f = faults(&rig.drain());
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].arg0, FaultCode::BadArgument as u64);
    assert_eq!(rig.value(p.data), 0x11, "the packet before ran");
    assert_eq!(rig.value(p.data + 8), 0, "nothing after it");
    assert_eq!(snap(&rig, 1).unwrap().fault, Some(FaultCode::BadArgument));
}
