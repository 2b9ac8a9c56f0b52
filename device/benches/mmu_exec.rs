//! Device cost of a command with and without the MMU, criterion, step mode.
//!
//! One queue on engine 0, its ring pre-filled with one kind of packet. An iteration publishes
//! one more packet (write_ptr store), writes `TLB_INVALIDATE`, rings the doorbell and runs one
//! CMP step, which executes exactly that packet: ring fetch, the command's own access, the
//! read_ptr store. Three address setups, each with the same register traffic:
//! - `identity`: root 0 (version 1: window-checked bus addresses); the invalidation names a
//!   root nothing uses;
//! - `tlb_hit`: ring, ring control and data translated through a 4-level table; the
//!   invalidation names a root nothing uses, so every translation hits;
//! - `tlb_miss`: the same, but the invalidation names the queue's root, so every access of
//!   the packet walks the tables again.
//!
//! Commands: TIMESTAMP (one 8-byte store) and FILL of 64 bytes. After criterion's report the
//! bench prints the mean cost per command and the ratios to identity. Run with
//! `cargo bench -p rvgpu-device --bench mmu_exec`.

use rvgpu_hw::addr::PhysAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rvgpu_device::{Device, DeviceConfig, LatchLine, Memory};
use rvgpu_hw::addr::{BusAddr, GpuVa};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::{self, PageAttrs, Pte};
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl};
use rvgpu_hw::regs;

mod support;

const RING: u32 = 4096;
const RING_VA: u64 = 0x5000_0000_0000;
const RC_VA: u64 = RING_VA + 0x1000;
const DATA_VA: u64 = RING_VA + 0x10_000;
/// A root no queue uses (the invalidation that changes nothing).
const OTHER_ROOT: u64 = 0x7fff_f000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Setup {
    Identity,
    TlbHit,
    TlbMiss,
}

struct Bench {
    dev: Arc<Device>,
    rc_pa: u64,
    wptr: u64,
    pkt: u64,
    inv_root: u64,
}

impl Bench {
    fn new(setup: Setup, cmd: MakeCmd) -> Self {
        let mem = Memory::new(16 << 20);
        let dev = Device::new(DeviceConfig::step(), Arc::clone(&mem), LatchLine::new());
        let arena = mem.alloc_system(1 << 20, 4096).expect("arena");
        let (b, s) = regs::syswin_regs(0).expect("window");
        dev.write64(b, arena.bus_addr);
        dev.write64(s, arena.len);
        let mut next = arena.bus_addr;
        let mut alloc = || {
            let a = next;
            next += 4096;
            a
        };
        let (ring, rc, prog, data, runlist) = (alloc(), alloc(), alloc(), alloc(), alloc());
        let translated = setup != Setup::Identity;
        let mut desc = QueueDescriptor {
            queue_id: 1,
            // A user-mode queue needs a root (hardware.md B20): the identity baseline is a
            // kernel-mode queue, which costs the same per packet under root 0.
            flags: if translated {
                QueueFlags::VALID.bits() | QueueFlags::USER_MODE.bits()
            } else {
                QueueFlags::VALID.bits()
            },
            ring_base: GpuVa::new(ring),
            ring_size: RING,
            doorbell: 0,
            ring_control: GpuVa::new(rc),
            progress_fence: GpuVa::new(prog),
            ..Default::default()
        };
        let mut data_va = data;
        if translated {
            let root = alloc();
            let rw = PageAttrs {
                writable: true,
                user: true,
                vram: false,
                coherent: true,
                no_execute: false,
            };
            let mut map = |va: u64, pa: u64| {
                let mut table = root;
                for level in (1..=mmu::ROOT_LEVEL).rev() {
                    let e = mmu::entry_addr(table, GpuVa::new(va), level).expect("entry");
                    let pte = Pte(mem.read_u64(PhysAddr::new(e)).expect("table"));
                    table = if pte.valid() {
                        pte.addr()
                    } else {
                        let t = alloc();
                        mem.write_u64(PhysAddr::new(e), Pte::table(t, false).expect("pte").0)
                            .expect("table");
                        t
                    };
                }
                let e = mmu::entry_addr(table, GpuVa::new(va), 0).expect("entry");
                mem.write_u64(PhysAddr::new(e), Pte::page(pa, rw, false).expect("pte").0)
                    .expect("leaf");
            };
            map(RING_VA, ring);
            map(RC_VA, rc);
            map(DATA_VA, data);
            desc.ring_base = GpuVa::new(RING_VA);
            desc.ring_control = GpuVa::new(RC_VA);
            // The descriptor's progress fence is the OS's, in the system space (identity here).
            desc.page_table_base = BusAddr::new(root);
            data_va = DATA_VA;
        }
        // Fill the ring with the packet, repeated.
        let c = cmd(data_va);
        let mut words = vec![0u64; c.len()];
        c.encode(&mut words).expect("encode");
        let pkt = (words.len() * 8) as u64;
        let mut off = 0;
        while off + pkt <= u64::from(RING) {
            mem.write_words(PhysAddr::new(ring + off), &words)
                .expect("ring");
            off += pkt;
        }
        assert_eq!(u64::from(RING) % pkt, 0, "packets tile the ring");
        mem.write_words(PhysAddr::new(runlist), &desc.to_words())
            .expect("runlist");
        dev.write32(regs::doorbell_bind_reg(0).expect("bind"), 1);
        let reg = |r| regs::engine_reg(0, r).expect("engine 0");
        dev.write64(reg(regs::engine::RUNLIST_BASE), runlist);
        dev.write32(reg(regs::engine::RUNLIST_COUNT), 1);
        dev.write32(reg(regs::engine::RUNLIST_COMMIT), 1);
        let inv_root = if setup == Setup::TlbMiss {
            desc.page_table_base.get()
        } else {
            OTHER_ROOT
        };
        Self {
            dev,
            rc_pa: rc,
            wptr: 0,
            pkt,
            inv_root,
        }
    }

    /// Publishes, invalidates, rings and executes one packet.
    fn one(&mut self) {
        self.wptr += self.pkt;
        let mem = self.dev.memory();
        mem.store(
            PhysAddr::new(self.rc_pa + RingControl::WRITE_PTR),
            self.wptr,
            Ordering::Release,
        )
        .expect("write_ptr");
        self.dev.write64(regs::TLB_INVALIDATE, self.inv_root);
        self.dev.doorbell_write(0, self.wptr);
        self.dev.step();
    }

    fn check(&self) {
        let rptr = self
            .dev
            .memory()
            .read_u64(PhysAddr::new(self.rc_pa + RingControl::READ_PTR))
            .expect("read_ptr");
        assert_eq!(rptr, self.wptr, "every packet ran, none faulted");
        assert!(self.dev.queues().iter().all(|q| q.fault.is_none()));
    }
}

/// Builds the benchmarked packet for a data address.
type MakeCmd = fn(u64) -> Command;

fn timestamp(va: u64) -> Command {
    Command::Timestamp { addr: va }
}

fn fill(va: u64) -> Command {
    Command::Fill {
        dst: va,
        bytes: 64,
        pattern: 0x5A,
    }
}

fn main() {
    let mut c = support::criterion(Duration::from_millis(200), Duration::from_secs(1));
    let setups = [
        ("identity", Setup::Identity),
        ("tlb_hit", Setup::TlbHit),
        ("tlb_miss", Setup::TlbMiss),
    ];
    let cmds: [(&str, MakeCmd); 2] = [("timestamp", timestamp), ("fill64", fill)];
    let mut report = Vec::new();
    for (cname, cmd) in cmds {
        let mut means = Vec::new();
        for (sname, setup) in setups {
            let mut b = Bench::new(setup, cmd);
            let (mut total, mut n) = (Duration::ZERO, 0u64);
            c.bench_function(&format!("mmu_exec/{cname}/{sname}"), |bn| {
                bn.iter_custom(|iters| {
                    let t0 = Instant::now();
                    for _ in 0..iters {
                        b.one();
                    }
                    let d = t0.elapsed();
                    total += d;
                    n += iters;
                    d
                });
            });
            b.check();
            let mean_ns = total.as_secs_f64() * 1e9 / n.max(1) as f64;
            means.push((sname, mean_ns));
        }
        report.push((cname, means));
    }
    c.final_summary();
    println!(
        "\nmmu_exec: mean device cost per command (publish + TLB_INVALIDATE + doorbell + step)"
    );
    for (cname, means) in report {
        let base = means.first().map_or(1.0, |m| m.1.max(1e-9));
        for (sname, ns) in means {
            println!(
                "  {cname:<10} {sname:<9} {:>9.0} ns   x{:.2} of identity",
                ns,
                ns / base
            );
        }
    }
}
