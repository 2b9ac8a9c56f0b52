//! Fixtures of the tests that run commands through the GPU MMU (`mmu_exec`,
//! `mmu_indirect_vm`): address spaces built in memory with `rvgpu_hw::mmu::Pte` the way VidMm
//! and the KMD's paging buffers would, queues whose ring, ring control and progress fence sit
//! at fixed VAs in a space, and fault checks.

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;

use super::{encode, Rig, Q};
use rvgpu_hw::addr::{BusAddr, GpuVa};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::mmu::{self, FaultInfo, PageAttrs, Pte};
use rvgpu_hw::queue::{QueueFlags, RingControl};

pub const RING_VA: u64 = 0x5000_0000_0000;
pub const RC_VA: u64 = RING_VA + 0x1000;
/// Data pages, in the same leaf table as the ring (an unmapped VA there faults at level 0).
pub const DATA_VA: u64 = RING_VA + 0x10_000;
/// Where [`vqueue`] maps the queue's progress fence.
pub const PROG_VA: u64 = RING_VA + 0x3000;
pub const UNMAPPED_VA: u64 = RING_VA + 0x20_000;
/// Where a space maps its own leaf table (for WRITE_DATA page-table updates).
pub const PT_VA: u64 = RING_VA + 0x30_000;

pub const fn attrs(user: bool, writable: bool) -> PageAttrs {
    PageAttrs {
        writable,
        user,
        vram: false,
        coherent: true,
        no_execute: false,
    }
}
pub const RW_USER: PageAttrs = attrs(true, true);
pub const RO_USER: PageAttrs = attrs(true, false);
pub const RW_KERNEL: PageAttrs = attrs(false, true);

/// One address space: a root table in the rig's window.
#[derive(Clone, Copy, Debug)]
pub struct Pt {
    pub root: u64,
}

impl Pt {
    pub fn new(rig: &mut Rig) -> Self {
        Pt {
            root: rig.alloc(mmu::TABLE_SIZE),
        }
    }

    /// Physical address of the entry for `va` at `level`, creating directory tables.
    pub fn entry(&self, rig: &mut Rig, va: u64, level: u8) -> u64 {
        rig.table_entry(self.root, va, level)
    }

    pub fn map(&self, rig: &mut Rig, va: u64, pa: u64, a: PageAttrs) {
        let e = self.entry(rig, va, 0);
        rig.mem
            .store(
                PhysAddr::new(e),
                Pte::page(pa, a, false).unwrap().0,
                Ordering::Release,
            )
            .unwrap();
    }

    pub fn unmap(&self, rig: &mut Rig, va: u64) {
        let e = self.entry(rig, va, 0);
        rig.mem
            .store(PhysAddr::new(e), 0, Ordering::Release)
            .unwrap();
    }
}

/// A data page outside every system window.
pub fn page(rig: &Rig) -> u64 {
    rig.mem.alloc_system(4096, 4096).unwrap().bus_addr
}

/// A queue whose ring, ring control and progress fence are at fixed VAs in `pt`.
pub struct VQ {
    pub q: Q,
    pub ring_pa: u64,
    pub rc_pa: u64,
    pub prog_pa: u64,
}

pub fn vqueue(rig: &mut Rig, pt: Pt, engine: u32, id: u32, user: bool) -> VQ {
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
pub fn submit_words(rig: &Rig, v: &mut VQ, words: &[u64]) {
    for w in words {
        let off = v.q.wptr % u64::from(v.q.desc.ring_size);
        rig.mem
            .store(PhysAddr::new(v.ring_pa + off), *w, Ordering::Relaxed)
            .unwrap();
        v.q.wptr += 8;
    }
    rig.mem
        .store(
            PhysAddr::new(v.rc_pa + RingControl::WRITE_PTR),
            v.q.wptr,
            Ordering::Release,
        )
        .unwrap();
    rig.ring(&v.q);
}

pub fn submit(rig: &Rig, v: &mut VQ, cmds: &[Command]) {
    submit_words(rig, v, &encode(cmds));
}

pub fn read_ptr(rig: &Rig, v: &VQ) -> u64 {
    rig.mem
        .read_u64(PhysAddr::new(v.rc_pa + RingControl::READ_PTR))
        .unwrap()
}

pub fn faults(evs: &[EventRecord]) -> Vec<EventRecord> {
    evs.iter()
        .copied()
        .filter(|e| e.kind == EventKind::Fault as u8)
        .collect()
}

/// The one page-fault record among `evs`, with its decoded `FaultInfo`.
pub fn page_fault(evs: &[EventRecord]) -> (EventRecord, FaultInfo) {
    let f = faults(evs);
    assert_eq!(f.len(), 1, "exactly one fault: {evs:?}");
    let r = f[0];
    assert_eq!(r.arg0, FaultCode::PageFault as u64, "{r:?}");
    (r, FaultInfo::decode(r.arg2).expect("arg2 is a FaultInfo"))
}

/// Every word of the 4 KiB page at `pa` is 0.
pub fn zeroed(rig: &Rig, pa: u64) -> bool {
    rig.mem
        .read_words(PhysAddr::new(pa), 512)
        .unwrap()
        .iter()
        .all(|&w| w == 0)
}

pub fn ts() -> Command {
    Command::Timestamp { addr: DATA_VA }
}

/// A step-mode rig with one space and a queue of it (id 1, engine 0; user-mode if `user`),
/// not committed yet.
pub fn space_rig(user: bool) -> (Rig, Pt, VQ) {
    let mut rig = Rig::step();
    let pt = Pt::new(&mut rig);
    let v = vqueue(&mut rig, pt, 0, 1, user);
    (rig, pt, v)
}

/// A rig with one space and a kernel queue (id 1, engine 0) mapping one data page at
/// `DATA_VA`.
pub fn kernel_rig() -> (Rig, Pt, VQ, u64) {
    let (mut rig, pt, v) = space_rig(false);
    let data = page(&rig);
    pt.map(&mut rig, DATA_VA, data, RW_KERNEL);
    rig.commit(0, &[&v.q]);
    (rig, pt, v, data)
}

/// A rig with one space and a user-mode queue (id 1, engine 0) whose ring and ring control
/// are in that space, mapping one user data page at `DATA_VA`.
pub fn user_rig() -> (Rig, Pt, VQ, u64) {
    let (mut rig, pt, v) = space_rig(true);
    let data = page(&rig);
    pt.map(&mut rig, DATA_VA, data, attrs(true, true));
    rig.commit(0, &[&v.q]);
    (rig, pt, v, data)
}
