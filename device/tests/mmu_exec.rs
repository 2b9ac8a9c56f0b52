//! Command execution through the GPU MMU (step 1, docs/hardware.md 12.4-12.6): queues
//! with a non-zero `page_table_base`, the system space (`SYSTEM_PAGE_TABLE_BASE`), page
//! faults, NF-01's USER/read-only rules, TLB invalidation by register and by packet and
//! WRITE_DATA (INDIRECT_VM is `mmu_indirect_vm`). Step mode unless the test name says threaded.
//!
//! Page tables are built in memory the way VidMm and the KMD's paging buffers would, with
//! `rvgpu_hw::mmu::Pte` (`common::spaces`); tables live in the rig's window, data pages are
//! allocated outside every window (translated pages are not window-checked).
mod common;

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;

use common::spaces::*;
use common::*;
use rvgpu_device::{DeviceConfig, Mode};
use rvgpu_hw::addr::{BusAddr, GpuVa};
use rvgpu_hw::cmd::{self, Command, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_hw::event::{EventKind, FaultCode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::{self, Access, FaultReason, PageAttrs, Pte};
use rvgpu_hw::queue::{QueueFlags, RingControl};
use rvgpu_hw::regs;

#[test]
fn device_reports_version_2_page_tables_and_vram_visible() {
    let rig = Rig::step();
    let v = regs::Version::new(rig.dev.read32(regs::VERSION));
    assert_eq!(v.major(), 2);
    let caps = regs::Caps::from_bits_retain(rig.dev.read32(regs::CAPS));
    assert!(caps.contains(regs::Caps::PAGE_TABLES));
    let size = rig.dev.read64(regs::VRAM_SIZE);
    assert_eq!(rig.dev.read64(regs::VRAM_VISIBLE), size, "default: all");
    let mem = rvgpu_device::Memory::new(64 << 20);
    let dev = rvgpu_device::Device::new(
        DeviceConfig {
            vram_visible: (16 << 20) + 5,
            ..DeviceConfig::step()
        },
        mem,
        rvgpu_device::LatchLine::new(),
    );
    assert_eq!(dev.read64(regs::VRAM_VISIBLE), 16 << 20, "whole pages");
    assert_eq!(dev.read64(regs::SYSTEM_PAGE_TABLE_BASE), 0);
    dev.write64(regs::SYSTEM_PAGE_TABLE_BASE, 0x5000);
    assert_eq!(dev.read64(regs::SYSTEM_PAGE_TABLE_BASE), 0x5000);
    assert_eq!(dev.read64(regs::TLB_INVALIDATE), 0, "write-only");
}

#[test]
fn translated_queue_runs_commands_in_pages_outside_every_window() {
    let (mut rig, pt, mut v, data) = kernel_rig();
    let data2 = page(&rig);
    pt.map(&mut rig, DATA_VA + 0x1000, data2, RW_KERNEL);
    submit(
        &rig,
        &mut v,
        &[
            // A FILL that crosses from one page into the next (two physical pages).
            Command::Fill {
                dst: DATA_VA + 0xff0,
                bytes: 32,
                pattern: 0xAB,
            },
            copy(DATA_VA + 0xff8, DATA_VA + 0x1100, 16),
            Command::Progress {
                irq: false,
                value: 9,
            },
        ],
    );
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_eq!(
        rig.mem.read_words(PhysAddr::new(data + 0xff0), 2).unwrap(),
        vec![0xAB; 2]
    );
    assert_eq!(
        rig.mem.read_words(PhysAddr::new(data2), 2).unwrap(),
        vec![0xAB; 2]
    );
    assert_eq!(
        rig.mem.read_words(PhysAddr::new(data2 + 0x100), 2).unwrap(),
        vec![0xAB; 2]
    );
    assert_eq!(rig.value(v.prog_pa), 9);
    assert_eq!(read_ptr(&rig, &v), v.q.wptr);
    assert!(rig.dev.tlb_stats().misses > 0);
}

/// Every command that carries an address faults with PageFault on an unmapped VA, writes
/// nothing, and the record names the queue, the VA and the MMU's reason/access/level.
#[test]
fn every_address_faults_on_an_unmapped_va_and_writes_nothing() {
    let fence_signal = |value_addr, monitored_addr| Command::FenceSignal {
        flags: SIGNAL_CONDITIONAL_IRQ,
        value_addr,
        value: 7,
        monitored_addr,
        report_tag: 1,
    };
    // (name, packet, faulting VA, access)
    let cases: Vec<(&str, Vec<u64>, u64, Access)> = vec![
        (
            "timestamp",
            encode(&[Command::Timestamp { addr: UNMAPPED_VA }]),
            UNMAPPED_VA,
            Access::Write,
        ),
        (
            "fence_wait",
            encode(&[Command::FenceWait {
                addr: UNMAPPED_VA,
                value: 1,
            }]),
            UNMAPPED_VA,
            Access::Read,
        ),
        (
            "fence_signal value",
            encode(&[fence_signal(UNMAPPED_VA, DATA_VA + 8)]),
            UNMAPPED_VA,
            Access::Write,
        ),
        (
            "fence_signal monitored",
            encode(&[fence_signal(DATA_VA, UNMAPPED_VA)]),
            UNMAPPED_VA,
            Access::Read,
        ),
        (
            "fill crossing into an unmapped page",
            encode(&[Command::Fill {
                dst: DATA_VA + 0xff8,
                bytes: 16,
                pattern: 0xEE,
            }]),
            DATA_VA + 0x1000,
            Access::Write,
        ),
        (
            "copy src",
            encode(&[copy(UNMAPPED_VA, DATA_VA, 8)]),
            UNMAPPED_VA,
            Access::Read,
        ),
        (
            "copy dst",
            encode(&[copy(DATA_VA, UNMAPPED_VA, 8)]),
            UNMAPPED_VA,
            Access::Write,
        ),
        (
            "indirect",
            encode(&[Command::Indirect {
                addr: UNMAPPED_VA,
                bytes: 64,
            }]),
            UNMAPPED_VA,
            Access::Execute,
        ),
        (
            "write_data crossing into an unmapped page",
            {
                let mut buf = [0u64; 8];
                let n = cmd::write_data(DATA_VA + 0xff8, &[0xEE, 0xEE], &mut buf).unwrap();
                buf[..n].to_vec()
            },
            DATA_VA + 0x1000,
            Access::Write,
        ),
    ];
    for (name, words, va, access) in cases {
        let (rig, _pt, mut v, data) = kernel_rig();
        submit_words(&rig, &mut v, &words);
        rig.run();
        let (r, info) = page_fault(&rig.drain());
        assert_eq!(r.queue_id, 1, "{name}");
        assert_eq!(r.arg1, va, "{name}: arg1 = faulting VA");
        assert_eq!(info.reason, FaultReason::NotPresent, "{name}");
        assert_eq!(info.access, access, "{name}");
        assert_eq!(info.level, 0, "{name}");
        assert!(!info.user, "{name}: kernel-mode queue");
        assert_eq!(info.rptr, 0, "{name}: read pointer of the packet");
        assert_eq!(read_ptr(&rig, &v), 0, "{name}: rptr stays on the packet");
        assert!(zeroed(&rig, data), "{name}: nothing written");
        let q = &rig.dev.queues()[0];
        assert_eq!(q.fault, Some(FaultCode::PageFault), "{name}");
    }
}

/// A packet of an indirect buffer is fetched a page at a time: one that runs
/// across two mapped pages on separate physical pages executes; once the second page is
/// unmapped, the fetch faults naming the first word it cannot read, as a word-by-word fetch
/// does, and nothing of the packet runs.
#[test]
fn indirect_packet_across_a_page_boundary_runs_or_faults_at_its_first_unreadable_word() {
    const BUF_VA: u64 = RING_VA + 0x40_000;
    for second_mapped in [true, false] {
        let (mut rig, pt, mut v, data) = kernel_rig();
        let (p0, p1) = (page(&rig), page(&rig));
        pt.map(&mut rig, BUF_VA, p0, RW_KERNEL);
        if second_mapped {
            pt.map(&mut rig, BUF_VA + 0x1000, p1, RW_KERNEL);
        }
        let start = BUF_VA + 0xff0;
        let words = store_crossing_fill(&rig, p0, p1);
        submit(
            &rig,
            &mut v,
            &[Command::Indirect {
                addr: start,
                bytes: 8 * words.len() as u64,
            }],
        );
        rig.run();
        crossing_fill_ran_or_faulted(&rig, second_mapped, BUF_VA + 0x1000, data);
        if second_mapped {
            assert_eq!(read_ptr(&rig, &v), v.q.wptr);
        }
    }
}

/// Stores a FILL of 0x5EED to `DATA_VA` two words before the end of physical page `p0`, its
/// other words at the start of `p1` (the next virtual page); returns its words.
fn store_crossing_fill(rig: &Rig, p0: u64, p1: u64) -> Vec<u64> {
    let words = encode(&[Command::Fill {
        dst: DATA_VA,
        bytes: 8,
        pattern: 0x5EED,
    }]);
    assert!(words.len() > 2, "the packet crosses the boundary");
    for (i, w) in words.iter().enumerate() {
        let off = 0xff0 + 8 * i as u64;
        let pa = if off < 0x1000 {
            p0 + off
        } else {
            p1 + off - 0x1000
        };
        rig.mem
            .store(PhysAddr::new(pa), *w, Ordering::Relaxed)
            .unwrap();
    }
    words
}

/// After a FILL of 0x5EED to `data` whose packet crosses into a second page: with that page
/// mapped it ran; without, the fetch faulted at `first_unreadable` (Execute, not present) and
/// nothing of the packet ran.
fn crossing_fill_ran_or_faulted(rig: &Rig, second_mapped: bool, first_unreadable: u64, data: u64) {
    let evs = rig.drain();
    if second_mapped {
        assert!(faults(&evs).is_empty(), "{evs:?}");
        assert_eq!(rig.value(data), 0x5EED);
    } else {
        let (r, info) = page_fault(&evs);
        assert_eq!(r.arg1, first_unreadable, "the first word it cannot read");
        assert_eq!(info.reason, FaultReason::NotPresent);
        assert_eq!(info.access, Access::Execute);
        assert_eq!(rig.value(data), 0, "nothing of the packet ran");
    }
}

/// A ring packet is fetched a page at a time too, unless the ring wraps under it:
/// in a user-mode ring of two pages on physical pages that are not contiguous, a FILL that
/// starts two words before the page boundary executes; with the second page unmapped, the
/// fetch faults naming the first word it cannot read, as a word-by-word fetch does, and
/// nothing of the packet runs.
#[test]
fn user_ring_packet_across_a_page_boundary_runs_or_faults_at_its_first_unreadable_word() {
    const RC2_VA: u64 = RING_VA + 0x5000;
    for second_mapped in [true, false] {
        let mut rig = Rig::step();
        let pt = Pt::new(&mut rig);
        let mut q = rig.queue_with(0, 1, 0, 0x2000, rvgpu_hw::log::ENTRIES_PER_BUFFER);
        let (rc_pa, prog_pa) = (q.desc.ring_control.get(), q.desc.progress_fence.get());
        pt.map(&mut rig, PROG_VA, prog_pa, RW_KERNEL);
        q.desc.progress_fence = GpuVa::new(PROG_VA);
        // A page between the two: the ring is not physically contiguous.
        let (p0, _gap, p1) = (page(&rig), page(&rig), page(&rig));
        pt.map(&mut rig, RING_VA, p0, RO_USER);
        if second_mapped {
            pt.map(&mut rig, RING_VA + 0x1000, p1, RO_USER);
        }
        pt.map(&mut rig, RC2_VA, rc_pa, RW_USER);
        q.desc.ring_base = GpuVa::new(RING_VA);
        q.desc.ring_control = GpuVa::new(RC2_VA);
        q.desc.page_table_base = BusAddr::new(pt.root);
        q.desc.flags |= QueueFlags::USER_MODE.bits();
        let data = page(&rig);
        pt.map(&mut rig, DATA_VA, data, RW_USER);
        rig.commit(0, &[&q]);

        // A NOP up to two words before the boundary (its padding is never read), then the FILL.
        let nop = encode(&[Command::Nop { len: 0x1fe }]);
        rig.mem
            .store(PhysAddr::new(p0), nop[0], Ordering::Relaxed)
            .unwrap();
        let fill = store_crossing_fill(&rig, p0, p1);
        q.wptr = 0xff0 + 8 * fill.len() as u64;
        rig.mem
            .store(
                PhysAddr::new(rc_pa + RingControl::WRITE_PTR),
                q.wptr,
                Ordering::Release,
            )
            .unwrap();
        rig.ring(&q);
        rig.run();
        crossing_fill_ran_or_faulted(&rig, second_mapped, RING_VA + 0x1000, data);
        if second_mapped {
            let rptr = rig
                .mem
                .read_u64(PhysAddr::new(rc_pa + RingControl::READ_PTR))
                .unwrap();
            assert_eq!(rptr, q.wptr);
        }
    }
}

#[test]
fn user_ring_and_ring_control_fault_in_the_queue_space_kernel_ones_live_in_the_system_space() {
    // A kernel-mode queue's ring, ring control and progress fence are the KMD's memory in the
    // system space: the queue's own tables need not map them, and PROGRESS lands.
    let (rig, _pt, mut v, _) = kernel_rig();
    submit(
        &rig,
        &mut v,
        &[Command::Progress {
            irq: false,
            value: 7,
        }],
    );
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_eq!(rig.value(v.prog_pa), 7);

    // User ring fetch: the ring page is unmapped (an Execute access).
    let (mut rig, pt, mut v, data) = user_rig();
    pt.unmap(&mut rig, RING_VA);
    rig.dev.write64(regs::TLB_INVALIDATE, pt.root);
    submit(&rig, &mut v, &[ts()]);
    rig.run();
    let (r, info) = page_fault(&rig.drain());
    assert_eq!(
        (r.arg1, info.access, info.level, info.user),
        (RING_VA, Access::Execute, 0, true)
    );
    assert_eq!(rig.value(data), 0);

    // User ring in a no-execute page.
    let (mut rig, pt, mut v, _) = user_rig();
    pt.map(
        &mut rig,
        RING_VA,
        v.ring_pa,
        PageAttrs {
            no_execute: true,
            ..attrs(true, false)
        },
    );
    rig.dev.write64(regs::TLB_INVALIDATE, 0);
    submit(&rig, &mut v, &[ts()]);
    rig.run();
    let (_, info) = page_fault(&rig.drain());
    assert_eq!(
        (info.reason, info.access),
        (FaultReason::NoExecute, Access::Execute)
    );

    // User ring control: unreadable when the queue enters the runlist (commit-time fault).
    let mut rig = Rig::step();
    let pt = Pt::new(&mut rig);
    let v = vqueue(&mut rig, pt, 0, 5, true);
    pt.unmap(&mut rig, RC_VA);
    rig.commit(0, &[&v.q]);
    let (r, info) = page_fault(&rig.drain());
    assert_eq!(r.queue_id, 5);
    assert_eq!(r.arg1, RC_VA + RingControl::READ_PTR);
    assert_eq!((info.access, info.rptr), (Access::Read, 0));

    // User ring control read-only: the read_ptr store after the first packet faults.
    let (mut rig, pt, mut v, data) = user_rig();
    pt.map(&mut rig, RC_VA, v.rc_pa, attrs(true, false));
    rig.dev.write64(regs::TLB_INVALIDATE, pt.root);
    submit(&rig, &mut v, &[ts()]);
    rig.run();
    let (r, info) = page_fault(&rig.drain());
    assert_eq!(r.arg1, RC_VA + RingControl::READ_PTR);
    assert_eq!(
        (info.reason, info.access),
        (FaultReason::ReadOnly, Access::Write)
    );
    // The TIMESTAMP itself had run; only its completion could not be published.
    assert_ne!(rig.mem.read_u64(PhysAddr::new(data)), Some(0));
}

#[test]
fn leaf_naming_missing_memory_is_bad_physical() {
    let (mut rig, pt, mut v, _) = kernel_rig();
    // A system bus address nothing is allocated at.
    pt.map(&mut rig, DATA_VA, 0x00ff_ff00_0000, RW_KERNEL);
    rig.dev.write64(regs::TLB_INVALIDATE, pt.root);
    submit(&rig, &mut v, &[ts()]);
    rig.run();
    let (r, info) = page_fault(&rig.drain());
    assert_eq!(r.arg1, DATA_VA);
    assert_eq!(info.reason, FaultReason::BadPhysical);
}

#[test]
fn misaligned_translated_address_is_still_bad_address() {
    let (rig, _pt, mut v, _) = kernel_rig();
    submit(&rig, &mut v, &[Command::Timestamp { addr: DATA_VA + 4 }]);
    rig.run();
    let f = faults(&rig.drain());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].arg0, FaultCode::BadAddress as u64);
    assert_eq!(f[0].arg1, DATA_VA + 4);
    assert_eq!(f[0].arg2, 0, "plain read pointer, not a FaultInfo");
}

/// NF-01: a user-mode queue reaches only USER pages; a kernel-mode queue reaches any
/// mapped page.
#[test]
fn nf_01_user_queue_cannot_touch_a_page_without_user() {
    let (mut rig, pt, mut user) = space_rig(true);
    let data = page(&rig);
    pt.map(&mut rig, DATA_VA, data, RW_KERNEL);
    rig.commit(0, &[&user.q]);
    submit(&rig, &mut user, &[ts()]);
    rig.run();
    let (r, info) = page_fault(&rig.drain());
    assert_eq!(r.arg1, DATA_VA);
    assert_eq!(info.reason, FaultReason::Privileged);
    assert_eq!(info.access, Access::Write);
    assert!(info.user);
    assert_eq!(rig.value(data), 0, "nothing written");
    // A read is refused as well (FENCE_WAIT on a privileged page).
    let (mut rig2, pt2, mut user2) = space_rig(true);
    let d2 = page(&rig2);
    pt2.map(&mut rig2, DATA_VA, d2, RW_KERNEL);
    rig2.commit(0, &[&user2.q]);
    submit(
        &rig2,
        &mut user2,
        &[Command::FenceWait {
            addr: DATA_VA,
            value: 0,
        }],
    );
    rig2.run();
    let (_, info) = page_fault(&rig2.drain());
    assert_eq!(
        (info.reason, info.access, info.user),
        (FaultReason::Privileged, Access::Read, true)
    );

    // The same page from a kernel-mode queue in the same space: fine.
    let (rig, _pt, mut kq, data) = kernel_rig();
    submit(&rig, &mut kq, &[ts()]);
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_ne!(rig.mem.read_u64(PhysAddr::new(data)), Some(0));
}

/// NF-01: CurrentValue is mapped USER without WRITABLE: a user queue can wait on it but
/// not write it.
#[test]
fn nf_01_user_queue_cannot_write_a_read_only_page() {
    let (mut rig, pt, mut user) = space_rig(true);
    let cv = page(&rig);
    rig.mem.write_u64(PhysAddr::new(cv), 5).unwrap();
    pt.map(&mut rig, DATA_VA, cv, RO_USER);
    rig.commit(0, &[&user.q]);
    submit(
        &rig,
        &mut user,
        &[
            Command::FenceWait {
                addr: DATA_VA,
                value: 5,
            },
            Command::FenceSignal {
                flags: 0,
                value_addr: DATA_VA,
                value: 6,
                monitored_addr: 0,
                report_tag: 0,
            },
        ],
    );
    rig.run();
    let (r, info) = page_fault(&rig.drain());
    assert_eq!(r.arg1, DATA_VA);
    assert_eq!(
        (info.reason, info.access, info.user),
        (FaultReason::ReadOnly, Access::Write, true)
    );
    assert_eq!(info.rptr, 24, "the FENCE_SIGNAL after the completed wait");
    assert_eq!(rig.value(cv), 5, "not written");
    assert_eq!(read_ptr(&rig, &user), 24);
}

/// NF-01: MonitoredValue is never mapped USER, yet a user queue's conditional signal still
/// makes its interrupt decision: the CMP reads it with kernel privilege.
#[test]
fn nf_01_monitored_value_read_is_the_cmps_not_the_queues() {
    let (mut rig, pt, mut user) = space_rig(true);
    // CurrentValue: USER (writable here, this queue signals it). MonitoredValue: kernel
    // only, read-only.
    let fence = page(&rig);
    let mv_page = page(&rig);
    pt.map(&mut rig, DATA_VA, fence, RW_USER);
    pt.map(&mut rig, DATA_VA + 0x1000, mv_page, attrs(false, false));
    rig.mem.write_u64(PhysAddr::new(mv_page), 3).unwrap();
    rig.commit(0, &[&user.q]);
    let signal = |value| Command::FenceSignal {
        flags: SIGNAL_CONDITIONAL_IRQ,
        value_addr: DATA_VA,
        value,
        monitored_addr: DATA_VA + 0x1000,
        report_tag: 77,
    };
    submit(&rig, &mut user, &[signal(2), signal(4)]);
    rig.run();
    let evs = rig.drain();
    assert!(faults(&evs).is_empty(), "{evs:?}");
    let sig: Vec<_> = evs
        .iter()
        .filter(|e| e.kind == EventKind::FenceSignaled as u8)
        .collect();
    assert_eq!(sig.len(), 1, "only 4 >= MonitoredValue 3 interrupts");
    assert_eq!(sig[0].arg1, 4);
    assert_eq!(rig.value(fence), 4);
    // But the queue itself cannot read that page.
    submit(
        &rig,
        &mut user,
        &[Command::FenceWait {
            addr: DATA_VA + 0x1000,
            value: 0,
        }],
    );
    rig.run();
    let (_, info) = page_fault(&rig.drain());
    assert_eq!(info.reason, FaultReason::Privileged);
}

#[test]
fn tlb_invalidate_packet_is_privileged() {
    let (mut rig, _, mut user) = space_rig(true);
    rig.commit(0, &[&user.q]);
    submit_words(&rig, &mut user, &cmd::tlb_invalidate(0));
    let before = rig.dev.tlb_stats().invalidations;
    rig.run();
    let f = faults(&rig.drain());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].arg0, FaultCode::BadArgument as u64);
    assert_eq!(
        rig.dev.tlb_stats().invalidations,
        before,
        "nothing invalidated"
    );
}

#[test]
fn misaligned_root_is_a_bad_descriptor() {
    let (mut rig, pt, mut v) = space_rig(false);
    v.q.desc.page_table_base = BusAddr::new(pt.root + 8);
    rig.commit(0, &[&v.q]);
    let f = faults(&rig.drain());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].arg0, FaultCode::BadDescriptor as u64);
    assert!(rig.dev.queues().is_empty());
}

/// hardware.md B20: a user-mode queue under the identity root would reach every
/// page the system windows open. The device refuses it as a bad descriptor and never runs
/// it, even when its ring is published and its doorbell rung; a kernel-mode queue committed
/// beside it still runs.
#[test]
fn user_mode_queue_with_root_0_is_a_bad_descriptor() {
    let mut rig = Rig::step();
    let target = rig.fence(0);
    let mut user = rig.queue(0, 1);
    user.desc.flags |= QueueFlags::USER_MODE.bits();
    assert_eq!(user.desc.page_table_base.get(), 0);
    let mut kernel = rig.queue(0, 2);
    rig.commit(0, &[&user, &kernel]);
    let f = faults(&rig.drain());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].arg0, FaultCode::BadDescriptor as u64);
    assert_eq!(f[0].queue_id, 1);
    assert_eq!(
        rig.dev.queues().len(),
        1,
        "only the kernel-mode queue is loaded"
    );
    let signal = |addr, value| Command::FenceSignal {
        flags: 0,
        value_addr: addr,
        value,
        monitored_addr: 0,
        report_tag: 0,
    };
    rig.push(&mut user, &[signal(target.cv, 7)]);
    rig.ring(&user);
    rig.push(&mut kernel, &[signal(target.mv, 9)]);
    rig.kick(&kernel);
    rig.run();
    assert_eq!(rig.value(target.cv), 0, "the user-mode queue never ran");
    assert_eq!(rig.value(target.mv), 9, "the kernel-mode queue ran");
}

/// Two processes: the same VA is different memory; B cannot reach A's pages; A keeps
/// running after B faults, and so does the other engine.
#[test]
fn two_spaces_are_isolated_and_a_fault_stops_only_its_queue() {
    let mut rig = Rig::step();
    let (a, b) = (Pt::new(&mut rig), Pt::new(&mut rig));
    let mut qa = vqueue(&mut rig, a, 0, 1, true);
    let mut qb = vqueue(&mut rig, b, 0, 2, true);
    let mut qc = rig.queue(1, 3); // identity queue on the other engine
    let (pa_a, pa_b) = (page(&rig), page(&rig));
    let secret = page(&rig);
    a.map(&mut rig, DATA_VA, pa_a, RW_USER);
    b.map(&mut rig, DATA_VA, pa_b, RW_USER);
    a.map(&mut rig, DATA_VA + 0x1000, secret, RW_USER); // A only
    rig.commit(0, &[&qa.q, &qb.q]);
    rig.commit(1, &[&qc]);
    let fill = |dst, pattern| Command::Fill {
        dst,
        bytes: 8,
        pattern,
    };
    submit(&rig, &mut qa, &[fill(DATA_VA, 0xA)]);
    submit(
        &rig,
        &mut qb,
        &[fill(DATA_VA, 0xB), fill(DATA_VA + 0x1000, 0xBAD)],
    );
    rig.run();
    assert_eq!(rig.value(pa_a), 0xA);
    assert_eq!(rig.value(pa_b), 0xB);
    assert_eq!(rig.value(secret), 0, "B cannot reach A's page");
    let (r, info) = page_fault(&rig.drain());
    assert_eq!((r.queue_id, r.arg1), (2, DATA_VA + 0x1000));
    assert_eq!(info.reason, FaultReason::NotPresent);
    // A keeps completing, the other engine keeps running.
    submit(&rig, &mut qa, &[fill(DATA_VA + 0x1000, 0x5EC)]);
    let c_ts = rig.alloc(8);
    rig.submit(&mut qc, &[Command::Timestamp { addr: c_ts }]);
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_eq!(rig.value(secret), 0x5EC);
    assert_eq!(read_ptr(&rig, &qa), qa.q.wptr);
    assert_ne!(rig.mem.read_u64(PhysAddr::new(c_ts)), Some(0));
    let snap = rig.dev.queues();
    let b_snap = snap.iter().find(|q| q.queue_id == 2).unwrap();
    assert_eq!(b_snap.fault, Some(FaultCode::PageFault));
}

/// A shared fence at different VAs in two processes: a wait in A is released by a signal in
/// B (matched by physical word); a signal at A's VA in a third space (other memory) is not.
#[test]
fn fence_wait_in_one_space_released_by_a_signal_at_another_va_in_another() {
    let mut rig = Rig::step();
    let (a, b, c) = (Pt::new(&mut rig), Pt::new(&mut rig), Pt::new(&mut rig));
    let mut qa = vqueue(&mut rig, a, 0, 1, true);
    let mut qb = vqueue(&mut rig, b, 1, 2, true);
    let mut qc = vqueue(&mut rig, c, 1, 3, true);
    let shared = page(&rig);
    let other = page(&rig);
    a.map(&mut rig, DATA_VA, shared, RW_USER);
    b.map(&mut rig, DATA_VA + 0x5000, shared, RW_USER);
    c.map(&mut rig, DATA_VA, other, RW_USER);
    rig.commit(0, &[&qa.q]);
    rig.commit(1, &[&qb.q, &qc.q]);
    submit(
        &rig,
        &mut qa,
        &[
            Command::FenceWait {
                addr: DATA_VA,
                value: 5,
            },
            Command::Progress {
                irq: false,
                value: 1,
            },
        ],
    );
    rig.run();
    assert_eq!(
        rig.dev.queues()[0].blocked_on,
        Some((DATA_VA, 5)),
        "blocked, reported at its own VA"
    );
    let plain = |value_addr, value| Command::FenceSignal {
        flags: 0,
        value_addr,
        value,
        monitored_addr: 0,
        report_tag: 0,
    };
    // Same VA, different space, different word: no wake-up.
    submit(&rig, &mut qc, &[plain(DATA_VA, 9)]);
    rig.run();
    assert_eq!(rig.value(other), 9);
    assert_eq!(rig.value(qa.prog_pa), 0, "still blocked");
    assert!(rig.dev.queues()[0].blocked_on.is_some());
    // Different VA, same word: released.
    submit(&rig, &mut qb, &[plain(DATA_VA + 0x5000, 5)]);
    rig.run();
    assert!(faults(&rig.drain()).is_empty());
    assert_eq!(rig.value(qa.prog_pa), 1);
    assert_eq!(read_ptr(&rig, &qa), qa.q.wptr);
}

/// The system (paging-process) space translated: the log buffer and the fence named to
/// WAIT_RESCAN are at system VAs that differ from their bus addresses, while the runlist, the
/// event ring and a kernel-mode queue's ring stay at their bus addresses, which the system
/// space does not map at all (hardware.md 12.4).
#[test]
fn system_space_holds_the_os_mappings_and_the_kmd_structures_stay_on_the_bus() {
    let mut rig = Rig::step();
    // The system space maps only what the OS puts in the paging process: the log buffer and
    // the fence page, each at a VA that is not its bus address.
    const SYS_LOG_VA: u64 = 0x6000_0000_0000;
    const SYS_FENCE_VA: u64 = 0x6000_0001_0000;
    let sys = Pt::new(&mut rig);
    let pt = Pt::new(&mut rig);
    let mut v = vqueue(&mut rig, pt, 0, 1, false);
    let log_pa = v.q.desc.wait_log.get();
    sys.map(&mut rig, SYS_LOG_VA, log_pa, RW_KERNEL);
    v.q.desc.wait_log = GpuVa::new(SYS_LOG_VA);
    let fence = page(&rig);
    pt.map(&mut rig, DATA_VA, fence, RW_KERNEL);
    sys.map(&mut rig, SYS_FENCE_VA, fence, RW_KERNEL);
    rig.dev.write64(regs::SYSTEM_PAGE_TABLE_BASE, sys.root);
    // Runlist at its bus address: it still commits.
    rig.commit(0, &[&v.q]);
    submit(
        &rig,
        &mut v,
        &[
            Command::FenceWait {
                addr: DATA_VA,
                value: 3,
            },
            log_write(cmd::LogKind::Wait, 0, 0x42, 3),
            progress_irq(8),
        ],
    );
    rig.run();
    assert!(rig.dev.queues()[0].blocked_on.is_some());
    rig.mem.write_u64(PhysAddr::new(fence), 3).unwrap();
    // Neither the waiter's VA nor the bus address means anything in the system space.
    for wrong in [DATA_VA, fence] {
        rig.dev.write64(regs::WAIT_RESCAN, wrong);
        rig.run();
        assert!(rig.dev.queues()[0].blocked_on.is_some(), "{wrong:#x}");
    }
    rig.dev.write64(regs::WAIT_RESCAN, SYS_FENCE_VA);
    rig.run();
    assert_eq!(rig.value(v.prog_pa), 8);
    let evs = rig.drain();
    assert!(faults(&evs).is_empty(), "{evs:?}");
    // The PROGRESS record came through the event ring at its bus address; the log entry
    // through the translated log buffer.
    assert!(evs
        .iter()
        .any(|e| e.kind == EventKind::Progress as u8 && e.arg0 == 8));
    let off = rvgpu_hw::log::entry_offset(0, rvgpu_hw::log::ENTRIES_PER_BUFFER).unwrap();
    let entry = rig.mem.read_words(PhysAddr::new(log_pa + off), 6).unwrap();
    assert_eq!(entry[0], 3, "{entry:x?}");
    assert_eq!(entry[1] & 0xffff_ffff, 0x42, "{entry:x?}");

    // A log buffer named by its bus address is not in the system space: the LOG_WRITE
    // page-faults (kernel access) and writes nothing.
    let wpt = Pt::new(&mut rig);
    let mut w = vqueue(&mut rig, wpt, 1, 2, false);
    let wlog = w.q.desc.wait_log.get();
    rig.commit(1, &[&w.q]);
    let before = rig.mem.read_words(PhysAddr::new(wlog), 512).unwrap();
    submit(&rig, &mut w, &[log_write(cmd::LogKind::Wait, 0, 0x43, 1)]);
    rig.run();
    let (rec, info) = page_fault(&rig.drain());
    assert_eq!(rec.arg1, wlog);
    assert!(!info.user);
    assert_eq!(
        rig.mem.read_words(PhysAddr::new(wlog), 512).unwrap(),
        before
    );
}

/// Unmap, TLB_INVALIDATE by register, access again: faults, never the old page.
#[test]
fn unmap_then_register_invalidate_faults_instead_of_using_the_old_page() {
    for root_written in [true, false] {
        let (mut rig, pt, mut v, data) = kernel_rig();
        submit(&rig, &mut v, &[ts()]);
        rig.run();
        let first = rig.mem.read_u64(PhysAddr::new(data)).unwrap();
        assert_ne!(first, 0);
        pt.unmap(&mut rig, DATA_VA);
        let inv = rig.dev.tlb_stats().invalidations;
        rig.dev
            .write64(regs::TLB_INVALIDATE, if root_written { pt.root } else { 0 });
        assert_eq!(rig.dev.tlb_stats().invalidations, inv + 1);
        submit(&rig, &mut v, &[ts()]);
        rig.run();
        let (_, info) = page_fault(&rig.drain());
        assert_eq!(info.reason, FaultReason::NotPresent);
        assert_eq!(rig.value(data), first, "old page untouched");
    }
}

/// The same from a paging buffer: WRITE_DATA writes the entries, the TLB_INVALIDATE packet
/// orders the invalidation after them, and the next access in the same ring uses the new
/// mapping (remap) or faults (unmap).
#[test]
fn write_data_updates_page_tables_used_after_a_tlb_invalidate_packet() {
    let (mut rig, pt, mut v, old) = kernel_rig();
    let new = page(&rig);
    // The space maps its own leaf table at PT_VA (kernel-only), so its paging queue can
    // write entries by VA.
    let leaf = pt.entry(&mut rig, DATA_VA, 0) & !0xfff;
    pt.map(&mut rig, PT_VA, leaf, RW_KERNEL);
    let entry_va = PT_VA + mmu::index(GpuVa::new(DATA_VA), 0).unwrap() * 8;
    let remap = Pte::page(new, RW_KERNEL, false).unwrap().0;
    let fill = |pattern| Command::Fill {
        dst: DATA_VA,
        bytes: 8,
        pattern,
    };
    let mut words = encode(&[fill(0x11)]);
    let mut buf = [0u64; 8];
    let n = cmd::write_data(entry_va, &[remap], &mut buf).unwrap();
    words.extend_from_slice(&buf[..n]);
    words.extend_from_slice(&cmd::tlb_invalidate(pt.root));
    words.extend(encode(&[fill(0x22)]));
    // Unmap, invalidate all roots, access: fault.
    let n = cmd::write_data(entry_va, &[0], &mut buf).unwrap();
    words.extend_from_slice(&buf[..n]);
    words.extend_from_slice(&cmd::tlb_invalidate(0));
    words.extend(encode(&[fill(0x33)]));
    submit_words(&rig, &mut v, &words);
    rig.run();
    assert_eq!(rig.value(old), 0x11);
    assert_eq!(rig.value(new), 0x22);
    let (r, info) = page_fault(&rig.drain());
    assert_eq!((r.arg1, info.reason), (DATA_VA, FaultReason::NotPresent));
    assert_eq!(rig.value(old), 0x11, "never the old page");
    assert_eq!(rig.value(new), 0x22);
}

/// Threaded: the CMP runs a stream of FILLs through one page while the CPU unmaps it and
/// writes TLB_INVALIDATE. Once the write returns, the old page is never written again.
#[test]
fn threaded_unmap_and_invalidate_never_writes_the_old_page_afterwards() {
    for round in 0..10u64 {
        let mut rig = Rig::new(DeviceConfig {
            mode: Mode::Threaded,
            ..DeviceConfig::default()
        });
        let pt = Pt::new(&mut rig);
        let mut v = vqueue(&mut rig, pt, 0, 1, false);
        let data = page(&rig);
        pt.map(&mut rig, DATA_VA, data, RW_KERNEL);
        rig.commit(0, &[&v.q]);
        // 120 FILL packets of 4 KiB each (32 bytes per packet: fits the 4 KiB ring).
        let cmds: Vec<Command> = (1..=120)
            .map(|i| Command::Fill {
                dst: DATA_VA,
                bytes: 4096,
                pattern: i,
            })
            .collect();
        submit(&rig, &mut v, &cmds);
        // Let some of them run (varying with the round), then unmap and invalidate.
        std::thread::sleep(std::time::Duration::from_micros(50 * round));
        pt.unmap(&mut rig, DATA_VA);
        rig.dev.write64(regs::TLB_INVALIDATE, pt.root);
        let after = rig.mem.read_words(PhysAddr::new(data), 512).unwrap();
        rig.wait_until("queue done or faulted", || {
            let q = &rig.dev.queues()[0];
            q.fault.is_some() || q.read_ptr == v.q.wptr
        });
        assert_eq!(
            rig.mem.read_words(PhysAddr::new(data), 512).unwrap(),
            after,
            "round {round}: old page written after the invalidation returned"
        );
        let q = &rig.dev.queues()[0];
        if q.read_ptr != v.q.wptr {
            assert_eq!(q.fault, Some(FaultCode::PageFault));
        }
    }
}
