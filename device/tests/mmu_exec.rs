//! Command execution through the GPU MMU (step 1, docs/hardware.md 12.4-12.6): queues
//! with a non-zero `page_table_base`, the system space (`SYSTEM_PAGE_TABLE_BASE`), page
//! faults, NF-01's USER/read-only rules, TLB invalidation by register and by packet,
//! WRITE_DATA, and INDIRECT_VM (a kernel-mode ring running a process's buffer in that
//! process's space with user privilege). Step mode unless the test name says threaded.
//!
//! Page tables are built in memory the way VidMm and the KMD's paging buffers would, with
//! `rvgpu_hw::mmu::Pte`; tables live in the rig's window, data pages are allocated outside
//! every window (translated pages are not window-checked).
mod common;

use std::sync::atomic::Ordering;

use common::*;
use rvgpu_device::{DeviceConfig, Mode};
use rvgpu_hw::addr::{BusAddr, GpuVa};
use rvgpu_hw::cmd::{self, Command, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::{self, Access, FaultInfo, FaultReason, PageAttrs, Pte};
use rvgpu_hw::queue::{QueueFlags, RingControl};
use rvgpu_hw::regs;

const RING_VA: u64 = 0x5000_0000_0000;
const RC_VA: u64 = RING_VA + 0x1000;
/// Data pages, in the same leaf table as the ring (an unmapped VA there faults at level 0).
const DATA_VA: u64 = RING_VA + 0x10_000;
/// Where [`vqueue`] maps the queue's progress fence.
const PROG_VA: u64 = RING_VA + 0x3000;
const UNMAPPED_VA: u64 = RING_VA + 0x20_000;
/// Where a space maps its own leaf table (for WRITE_DATA page-table updates).
const PT_VA: u64 = RING_VA + 0x30_000;

const fn attrs(user: bool, writable: bool) -> PageAttrs {
    PageAttrs {
        writable,
        user,
        vram: false,
        coherent: true,
        no_execute: false,
    }
}
const RW_USER: PageAttrs = attrs(true, true);
const RO_USER: PageAttrs = attrs(true, false);
const RW_KERNEL: PageAttrs = attrs(false, true);

/// One address space: a root table in the rig's window.
#[derive(Clone, Copy, Debug)]
struct Pt {
    root: u64,
}

impl Pt {
    fn new(rig: &mut Rig) -> Self {
        Pt {
            root: rig.alloc(mmu::TABLE_SIZE),
        }
    }

    /// Physical address of the entry for `va` at `level`, creating directory tables.
    fn entry(&self, rig: &mut Rig, va: u64, level: u8) -> u64 {
        rig.table_entry(self.root, va, level)
    }

    fn map(&self, rig: &mut Rig, va: u64, pa: u64, a: PageAttrs) {
        let e = self.entry(rig, va, 0);
        rig.mem
            .store(e, Pte::page(pa, a, false).unwrap().0, Ordering::Release)
            .unwrap();
    }

    fn unmap(&self, rig: &mut Rig, va: u64) {
        let e = self.entry(rig, va, 0);
        rig.mem.store(e, 0, Ordering::Release).unwrap();
    }
}

/// A data page outside every system window.
fn page(rig: &Rig) -> u64 {
    rig.mem.alloc_system(4096, 4096).unwrap().bus_addr
}

/// A queue whose ring, ring control and progress fence are at fixed VAs in `pt`.
struct VQ {
    q: Q,
    ring_pa: u64,
    rc_pa: u64,
    prog_pa: u64,
}

fn vqueue(rig: &mut Rig, pt: Pt, engine: u32, id: u32, user: bool) -> VQ {
    let mut q = rig.queue(engine, id);
    let (ring_pa, rc_pa, prog_pa) = (
        q.desc.ring_base.get(),
        q.desc.ring_control.get(),
        q.desc.progress_fence.get(),
    );
    q.desc.page_table_base = BusAddr::new(pt.root);
    // The progress fence is the OS's monitored fence at its VA in the queue's process
    // (kernel-only here: PROGRESS writes it with kernel privilege, hardware.md 12.4).
    pt.map(rig, PROG_VA, prog_pa, RW_KERNEL);
    q.desc.progress_fence = GpuVa::new(PROG_VA);
    if user {
        // A user-mode queue's ring and ring control are its process's allocations (this
        // table).
        pt.map(rig, RING_VA, ring_pa, attrs(true, false));
        pt.map(rig, RC_VA, rc_pa, attrs(true, true));
        q.desc.ring_base = GpuVa::new(RING_VA);
        q.desc.ring_control = GpuVa::new(RC_VA);
        q.desc.flags |= QueueFlags::USER_MODE.bits();
    }
    // A kernel-mode queue's ring and ring control are the KMD's memory, reached by bus
    // address: they keep their bus addresses.
    VQ {
        q,
        ring_pa,
        rc_pa,
        prog_pa,
    }
}

/// Writes `words` into the ring through its physical page, publishes write_ptr, rings.
fn submit_words(rig: &Rig, v: &mut VQ, words: &[u64]) {
    for w in words {
        let off = v.q.wptr % u64::from(v.q.desc.ring_size);
        rig.mem
            .store(v.ring_pa + off, *w, Ordering::Relaxed)
            .unwrap();
        v.q.wptr += 8;
    }
    rig.mem
        .store(
            v.rc_pa + RingControl::WRITE_PTR,
            v.q.wptr,
            Ordering::Release,
        )
        .unwrap();
    rig.ring(&v.q);
}

fn submit(rig: &Rig, v: &mut VQ, cmds: &[Command]) {
    submit_words(rig, v, &encode(cmds));
}

fn read_ptr(rig: &Rig, v: &VQ) -> u64 {
    rig.mem.read_u64(v.rc_pa + RingControl::READ_PTR).unwrap()
}

fn faults(evs: &[EventRecord]) -> Vec<EventRecord> {
    evs.iter()
        .copied()
        .filter(|e| e.kind == EventKind::Fault as u8)
        .collect()
}

/// The one page-fault record among `evs`, with its decoded `FaultInfo`.
fn page_fault(evs: &[EventRecord]) -> (EventRecord, FaultInfo) {
    let f = faults(evs);
    assert_eq!(f.len(), 1, "exactly one fault: {evs:?}");
    let r = f[0];
    assert_eq!(r.arg0, FaultCode::PageFault as u64, "{r:?}");
    (r, FaultInfo::decode(r.arg2).expect("arg2 is a FaultInfo"))
}

/// Every word of the 4 KiB page at `pa` is 0.
fn zeroed(rig: &Rig, pa: u64) -> bool {
    rig.mem.read_words(pa, 512).unwrap().iter().all(|&w| w == 0)
}

fn ts() -> Command {
    Command::Timestamp { addr: DATA_VA }
}

/// A step-mode rig with one space and a queue of it (id 1, engine 0; user-mode if `user`),
/// not committed yet.
fn space_rig(user: bool) -> (Rig, Pt, VQ) {
    let mut rig = Rig::step();
    let pt = Pt::new(&mut rig);
    let v = vqueue(&mut rig, pt, 0, 1, user);
    (rig, pt, v)
}

/// A rig with one space and a kernel queue (id 1, engine 0) mapping one data page at
/// `DATA_VA`.
fn kernel_rig() -> (Rig, Pt, VQ, u64) {
    let (mut rig, pt, v) = space_rig(false);
    let data = page(&rig);
    pt.map(&mut rig, DATA_VA, data, RW_KERNEL);
    rig.commit(0, &[&v.q]);
    (rig, pt, v, data)
}

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
    assert_eq!(rig.mem.read_words(data + 0xff0, 2).unwrap(), vec![0xAB; 2]);
    assert_eq!(rig.mem.read_words(data2, 2).unwrap(), vec![0xAB; 2]);
    assert_eq!(rig.mem.read_words(data2 + 0x100, 2).unwrap(), vec![0xAB; 2]);
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
        rig.mem.store(pa, *w, Ordering::Relaxed).unwrap();
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
        rig.mem.store(p0, nop[0], Ordering::Relaxed).unwrap();
        let fill = store_crossing_fill(&rig, p0, p1);
        q.wptr = 0xff0 + 8 * fill.len() as u64;
        rig.mem
            .store(rc_pa + RingControl::WRITE_PTR, q.wptr, Ordering::Release)
            .unwrap();
        rig.ring(&q);
        rig.run();
        crossing_fill_ran_or_faulted(&rig, second_mapped, RING_VA + 0x1000, data);
        if second_mapped {
            let rptr = rig.mem.read_u64(rc_pa + RingControl::READ_PTR).unwrap();
            assert_eq!(rptr, q.wptr);
        }
    }
}

/// A rig with one space and a user-mode queue (id 1, engine 0) whose ring and ring control
/// are in that space, mapping one user data page at `DATA_VA`.
fn user_rig() -> (Rig, Pt, VQ, u64) {
    let (mut rig, pt, v) = space_rig(true);
    let data = page(&rig);
    pt.map(&mut rig, DATA_VA, data, attrs(true, true));
    rig.commit(0, &[&v.q]);
    (rig, pt, v, data)
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
    assert_ne!(rig.mem.read_u64(data), Some(0));
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
    assert_ne!(rig.mem.read_u64(data), Some(0));
}

/// NF-01: CurrentValue is mapped USER without WRITABLE: a user queue can wait on it but
/// not write it.
#[test]
fn nf_01_user_queue_cannot_write_a_read_only_page() {
    let (mut rig, pt, mut user) = space_rig(true);
    let cv = page(&rig);
    rig.mem.write_u64(cv, 5).unwrap();
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
    rig.mem.write_u64(mv_page, 3).unwrap();
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
    assert_ne!(rig.mem.read_u64(c_ts), Some(0));
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
    rig.mem.write_u64(fence, 3).unwrap();
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
    let entry = rig.mem.read_words(log_pa + off, 6).unwrap();
    assert_eq!(entry[0], 3, "{entry:x?}");
    assert_eq!(entry[1] & 0xffff_ffff, 0x42, "{entry:x?}");

    // A log buffer named by its bus address is not in the system space: the LOG_WRITE
    // page-faults (kernel access) and writes nothing.
    let wpt = Pt::new(&mut rig);
    let mut w = vqueue(&mut rig, wpt, 1, 2, false);
    let wlog = w.q.desc.wait_log.get();
    rig.commit(1, &[&w.q]);
    let before = rig.mem.read_words(wlog, 512).unwrap();
    submit(&rig, &mut w, &[log_write(cmd::LogKind::Wait, 0, 0x43, 1)]);
    rig.run();
    let (rec, info) = page_fault(&rig.drain());
    assert_eq!(rec.arg1, wlog);
    assert!(!info.user);
    assert_eq!(rig.mem.read_words(wlog, 512).unwrap(), before);
}

/// Unmap, TLB_INVALIDATE by register, access again: faults, never the old page.
#[test]
fn unmap_then_register_invalidate_faults_instead_of_using_the_old_page() {
    for root_written in [true, false] {
        let (mut rig, pt, mut v, data) = kernel_rig();
        submit(&rig, &mut v, &[ts()]);
        rig.run();
        let first = rig.mem.read_u64(data).unwrap();
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
    let entry_va = PT_VA + mmu::index(DATA_VA, 0).unwrap() * 8;
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
        let after = rig.mem.read_words(data, 512).unwrap();
        rig.wait_until("queue done or faulted", || {
            let q = &rig.dev.queues()[0];
            q.fault.is_some() || q.read_ptr == v.q.wptr
        });
        assert_eq!(
            rig.mem.read_words(data, 512).unwrap(),
            after,
            "round {round}: old page written after the invalidation returned"
        );
        let q = &rig.dev.queues()[0];
        if q.read_ptr != v.q.wptr {
            assert_eq!(q.fault, Some(FaultCode::PageFault));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// INDIRECT_VM (opcode 0x0C, docs/hardware.md 6.2 and 12.4): a kernel-mode ring runs a process's
// DMA buffer in that process's space, with user privilege.

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
    rig.mem.write_words(pa, words).unwrap();
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
        assert_eq!(rig.mem.read_words(p.data, 2).unwrap(), vec![0x5A5A; 2]);
        assert_eq!(read_ptr(&rig, &k), 0, "{what}: still on the INDIRECT_VM");
        assert_eq!(rig.dev.completed_commands(0), 1, "{what}");

        rig.run();
        let evs = rig.drain();
        assert!(faults(&evs).is_empty(), "{what}: {evs:?}");
        assert_eq!(
            rig.mem.read_words(p.data + 0x100, 3).unwrap(),
            vec![1, 2, 3],
            "{what}"
        );
        assert_ne!(rig.mem.read_u64(p.data + 0x200), Some(0), "{what}");
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
        rig.mem.read_words(kpage, 512).unwrap(),
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
    assert_ne!(rig.mem.read_u64(ts_pa), Some(0));
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
    rig.mem.write_u64(data, 0).unwrap();

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
        assert_ne!(rig.mem.read_u64(ts_pa), Some(0), "{bad}: packet before ran");
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
