//! `ddi`: a hostile process driving every DDI that takes user-mode private data, through the
//! simulated OS's D3DKMT thunks ([`SimKmt`]) exactly as its UMD could: hardware queues
//! (`HwQueuePdd`), allocations (`AllocationPdd`), doorbells (`DoorbellPdd`), native fences
//! (create, open by a guessed handle, destroy), monitored fences, kernel-mode submissions,
//! residency, and the ring and ring-control memory it owns. Handles are either ones it created
//! or guessed numbers (which may be the innocent process's).
//!
//! Escape: `DxgkDdiEscape` gets arbitrary private data, the native-fence tag request
//! (`NativeFenceTagEscape`) and the wait-board request (`WaitBoardEscape`, any slot contents)
//! for VAs of fences the process holds and guessed ones.
//!
//! Input: a sequence of operations, each an opcode byte and its arguments ([`Input`]); at most
//! [`MAX_OPS`] run. See [`seeds`] for valid sequences.

use rvgpu_hw::mmu::PAGE_2M;
use rvgpu_hw::pdd::{
    AllocationPdd, DoorbellPdd, HwQueuePdd, NativeFenceTagEscape, WaitBoardEscape,
    ALLOCATION_CPU_VISIBLE, ALLOCATION_PDD_VERSION, HW_QUEUE_PDD_VERSION,
    NATIVE_FENCE_TAG_ESCAPE_VERSION, PDD_MAGIC, WAIT_BOARD_ESCAPE_VERSION,
};
use rvgpu_hw::queue::RingControl;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::UmsProcess;
use rvgpu_umd::kmt::{
    Allocation, AllocationCpu, AllocationKind, DestroyFlags, EvictFlags, Kmt, KmtHandle,
    MakeResidentFlags,
};
use zerocopy::{FromBytes, IntoBytes};

use crate::input::{Input, Writer};
use crate::world::{with_world, World};

/// Operations per input at most.
pub const MAX_OPS: usize = 48;

/// Opcodes.
#[allow(missing_docs)]
pub mod op {
    pub const CONTEXT: u8 = 0;
    pub const HW_QUEUE: u8 = 1;
    pub const ALLOC_PDD: u8 = 2;
    pub const ALLOC: u8 = 3;
    pub const DOORBELL: u8 = 4;
    pub const CONNECT: u8 = 5;
    pub const NOTIFY: u8 = 6;
    pub const RING: u8 = 7;
    pub const WRITE: u8 = 8;
    pub const SUBMIT: u8 = 9;
    pub const DESTROY: u8 = 10;
    pub const NATIVE_FENCE: u8 = 11;
    pub const OPEN_NATIVE: u8 = 12;
    pub const DESTROY_NATIVE: u8 = 13;
    pub const STEPS: u8 = 14;
    pub const RESIDENCY: u8 = 15;
    pub const LOCK: u8 = 16;
    pub const MONITORED: u8 = 17;
    pub const OS_WAIT_SIGNAL: u8 = 18;
    pub const ESCAPE: u8 = 19;
    pub const COUNT: u8 = 20;
}

/// Handle choice: index into what the process made, or (high bit) a guessed raw handle.
fn pick(inp: &mut Input<'_>, have: &[KmtHandle]) -> KmtHandle {
    let b = inp.u8();
    if b & 0x80 != 0 {
        return inp.u32();
    }
    if have.is_empty() {
        return u32::from(b);
    }
    have[usize::from(b) % have.len()]
}

fn pick_alloc<'a>(
    inp: &mut Input<'_>,
    have: &'a [Allocation<SimMem>],
) -> Option<&'a Allocation<SimMem>> {
    let b = usize::from(inp.u8());
    if have.is_empty() {
        None
    } else {
        have.get(b % have.len())
    }
}

/// The size a mostly valid allocation header asks for: up to 256 KiB, or, when the two top
/// bits are set, 2 or 4 MiB and a tail, which VidMm maps with 2 MiB pages (the large-page
/// paths: map, evict, restore, a ring inside one). Rare, since zeroing megabytes is slow.
fn valid_size(raw: u64) -> u64 {
    let small = raw & 0x3_ffff;
    if raw >> 62 == 3 {
        (PAGE_2M << ((raw >> 61) & 1)) + small
    } else {
        small
    }
}

/// Private data: the valid structure with one field mutated (mode 0), or raw bytes of any
/// length (mode 1).
fn private(inp: &mut Input<'_>, valid: &[u8]) -> Vec<u8> {
    match inp.u8() % 3 {
        0 => valid.to_vec(),
        1 => {
            let mut v = valid.to_vec();
            if !v.is_empty() {
                let at = usize::from(inp.u8()) % v.len();
                let val = inp.u8();
                v[at] = val;
            }
            v
        }
        _ => inp.bytes(96).to_vec(),
    }
}

#[derive(Default)]
struct Hostile {
    contexts: Vec<KmtHandle>,
    queues: Vec<KmtHandle>,
    allocs: Vec<Allocation<SimMem>>,
    doorbells: Vec<(
        KmtHandle,
        rvgpu_umd::kmt::Doorbell<rvgpu_simos::kmt::SimDoorbell>,
    )>,
    /// Allocations the CPU cannot map (handle, GPU VA).
    gpu_only: Vec<(KmtHandle, u64)>,
    native: Vec<KmtHandle>,
    monitored: Vec<KmtHandle>,
    /// Escapes the driver answered with success.
    escapes_answered: usize,
}

impl Hostile {
    /// Every allocation handle, the CPU-visible ones first.
    fn alloc_handles(&self) -> Vec<KmtHandle> {
        let cpu = self.allocs.iter().map(|a| a.handle);
        cpu.chain(self.gpu_only.iter().map(|a| a.0)).collect()
    }
}

fn step(k: &SimKmt<'_>, h: &mut Hostile, inp: &mut Input<'_>) {
    let m = k.machine();
    let code = inp.u8() % op::COUNT;
    match code {
        op::CONTEXT => {
            if let Ok(c) = k.create_context(u32::from(inp.u8() % 4)) {
                h.contexts.push(c);
            }
        }
        op::HW_QUEUE => {
            let ctx = pick(inp, &h.contexts);
            let ums = inp.u8() & 1 == 0;
            let valid = HwQueuePdd {
                magic: PDD_MAGIC,
                version: HW_QUEUE_PDD_VERSION,
                priority: u32::from(inp.u8()),
                ..Default::default()
            };
            let mut pd = private(inp, valid.as_bytes());
            if let Ok(q) = k.create_hw_queue(ctx, ums, &mut pd) {
                h.queues.push(q.handle);
            }
        }
        op::ALLOC_PDD => {
            let raw: [u8; 32] = inp.array();
            let mut pdd = AllocationPdd::read_from_bytes(&raw).unwrap_or_default();
            if inp.u8() & 1 == 0 {
                // Mostly valid headers, so the fields behind them are reached.
                pdd.magic = PDD_MAGIC;
                pdd.version = ALLOCATION_PDD_VERSION;
                pdd.size = valid_size(pdd.size);
            }
            if let Ok(a) = k.create_allocation_pdd(&pdd) {
                match k.lock2(a.handle) {
                    Ok(mem) => h.allocs.push(Allocation {
                        handle: a.handle,
                        gpu_va: a.gpu_va,
                        size: a.size,
                        mem,
                    }),
                    // Not CPU-visible: kept for residency and lock calls, freed when the
                    // process dies.
                    Err(_) => h.gpu_only.push((a.handle, a.gpu_va)),
                }
            }
        }
        op::ALLOC => {
            let size = u64::from(inp.u16()) * 16;
            let kind = match inp.u8() % 3 {
                0 => AllocationKind::Buffer,
                1 => AllocationKind::Commands,
                _ => AllocationKind::RingControl,
            };
            if let Ok(a) = k.create_allocation_as(size, kind) {
                h.allocs.push(a);
            }
        }
        op::DOORBELL => {
            let q = pick(inp, &h.queues);
            let ring = pick_alloc(inp, &h.allocs);
            let control = pick_alloc(inp, &h.allocs);
            // The ring's addresses come from the allocations the call names (any of the
            // process's, or a guessed handle); the private data states only the ring size.
            let rh = ring.map_or_else(|| inp.u32(), |a| a.handle);
            let ch = control.map_or_else(|| inp.u32(), |a| a.handle);
            // Sizes up to twice RING_MAX (16 MiB); a large allocation holds rings up to 4 MiB.
            let valid = DoorbellPdd::for_ring(1 << (inp.u8() % 26));
            let mut pd = private(inp, valid.as_bytes());
            if let Ok(d) = k.create_doorbell(q, rh, ch, &mut pd) {
                h.doorbells.push((d.handle, d));
            }
        }
        op::CONNECT => {
            let hs: Vec<_> = h.doorbells.iter().map(|d| d.0).collect();
            let _ = k.connect_doorbell(pick(inp, &hs));
        }
        op::NOTIFY => {
            let hs: Vec<_> = h.doorbells.iter().map(|d| d.0).collect();
            let _ = k.notify_work_submission(pick(inp, &hs));
        }
        op::RING => {
            let i = usize::from(inp.u8());
            let v = inp.u64();
            if !h.doorbells.is_empty() {
                use rvgpu_umd::kmt::DoorbellCpu;
                let d = &h.doorbells[i % h.doorbells.len()].1;
                d.cpu.set_last_queued(v);
                d.cpu.ring(v);
            }
        }
        op::WRITE => {
            let off = u64::from(inp.u16()) * 8;
            let n = usize::from(inp.u8() % 16);
            let a = pick_alloc(inp, &h.allocs);
            for i in 0..n {
                let w = inp.u64();
                if let Some(a) = a {
                    a.mem.store(off + i as u64 * 8, w);
                }
            }
        }
        op::SUBMIT => {
            let q = pick(inp, &h.queues);
            let value = inp.u64();
            let a = pick_alloc(inp, &h.allocs);
            let off = u64::from(inp.u16()) * 8;
            let va = a.map_or_else(|| inp.u64(), |a| a.gpu_va.wrapping_add(off));
            let bytes = u32::from(inp.u16());
            let _ = k.submit_command_to_hw_queue(q, value, va, bytes);
        }
        op::DESTROY => {
            let kind = inp.u8() % 5;
            let i = usize::from(inp.u8());
            match kind {
                0 if !h.contexts.is_empty() => {
                    let c = h.contexts.remove(i % h.contexts.len());
                    let _ = k.destroy_context(c);
                }
                1 if !h.queues.is_empty() => {
                    let q = h.queues.remove(i % h.queues.len());
                    let _ = k.destroy_hw_queue(q);
                }
                2 if !h.allocs.is_empty() => {
                    let a = h.allocs.remove(i % h.allocs.len());
                    let _ = k.destroy_allocation2(
                        a.handle,
                        DestroyFlags {
                            assume_not_in_use: i & 1 != 0,
                        },
                    );
                }
                3 if !h.doorbells.is_empty() => {
                    let d = h.doorbells.remove(i % h.doorbells.len());
                    let _ = k.destroy_doorbell(d.0);
                }
                _ => {
                    // A guessed handle of any kind.
                    let g = inp.u32();
                    let _ = match i % 4 {
                        0 => k.destroy_context(g),
                        1 => k.destroy_hw_queue(g),
                        2 => k.destroy_allocation(g),
                        _ => k.destroy_doorbell(g),
                    };
                }
            }
        }
        op::NATIVE_FENCE => {
            let initial = inp.u64();
            let r = if inp.u8().is_multiple_of(2) {
                k.create_native_fence(initial)
            } else {
                k.create_shareable_native_fence(initial)
            };
            if let Ok(f) = r {
                h.native.push(f.kmt);
            }
        }
        op::OPEN_NATIVE => {
            // By an NT handle the process made for one of its fences, or by a guess (a
            // D3DKMT handle, a small value): only the first can open anything.
            let g = pick(inp, &h.native);
            let nt = match inp.u8() % 3 {
                0 => k.share_native_fence(g).ok(),
                1 => Some(u64::from(g)),
                _ => Some(u64::from(inp.u8()) * 4),
            };
            if let Some(nt) = nt {
                if let Ok(f) = k.open_native_fence(nt) {
                    h.native.push(f.kmt);
                }
                let _ = k.close_nt_handle(nt);
            }
        }
        op::ESCAPE => {
            // `D3DKMTEscape` to `DxgkDdiEscape`: the tag request or the wait-board request for
            // a VA of a fence it holds or a guessed one, with any other field, or arbitrary
            // bytes.
            let kind = inp.u8() % 3;
            let mut data = if kind < 2 {
                let g = pick(inp, &h.native);
                let held = m
                    .native_fence_by_kmt(k.process().adapter, g)
                    .map(|f| f.current_value_va());
                let guess = inp.u64();
                let current_value_gpu = if inp.u8() & 1 == 0 {
                    held.unwrap_or(guess)
                } else {
                    guess
                };
                if kind == 0 {
                    let q = NativeFenceTagEscape {
                        magic: PDD_MAGIC,
                        version: NATIVE_FENCE_TAG_ESCAPE_VERSION,
                        current_value_gpu,
                        report_tag: inp.u64(),
                    };
                    q.as_bytes().to_vec()
                } else {
                    // Publishing garbage (waits in any order, `more` and `publish` out of
                    // range, `from` above `to`) into the process's own slot, or reading the
                    // others' answer.
                    let q = WaitBoardEscape {
                        magic: PDD_MAGIC,
                        version: WAIT_BOARD_ESCAPE_VERSION,
                        current_value_gpu,
                        publish: u32::from(inp.u8() % 3),
                        more: u32::from(inp.u8() % 3),
                        waits: [inp.u64(), inp.u64(), inp.u64(), inp.u64()],
                        from: inp.u64(),
                        to: inp.u64(),
                        known: inp.u32(),
                        passed: inp.u32(),
                        next: inp.u64(),
                    };
                    q.as_bytes().to_vec()
                }
            } else {
                let n = usize::from(inp.u8() % 96);
                (0..n).map(|_| inp.u8()).collect()
            };
            if k.escape_driver_private(&mut data).is_ok() {
                h.escapes_answered += 1;
            }
        }
        op::DESTROY_NATIVE => {
            let g = pick(inp, &h.native);
            if k.destroy_native_fence(g).is_ok() {
                h.native.retain(|x| *x != g);
            }
        }
        op::STEPS => {
            let _ = m.run_steps(usize::from(inp.u8() % 32));
        }
        op::RESIDENCY => {
            let hs = h.alloc_handles();
            let n = usize::from(inp.u8() % 4);
            let mut list = Vec::new();
            for _ in 0..n {
                list.push(pick(inp, &hs));
            }
            if inp.u8() & 1 == 0 {
                let _ = k.make_resident(
                    &list,
                    MakeResidentFlags {
                        cant_trim_further: inp.u8() & 1 != 0,
                    },
                );
            } else {
                let b = inp.u8();
                let _ = k.evict(
                    &list,
                    EvictFlags {
                        evict_only_if_necessary: b & 1 != 0,
                        not_written_to: b & 2 != 0,
                    },
                );
            }
        }
        op::LOCK => {
            let hs = h.alloc_handles();
            let g = pick(inp, &hs);
            match inp.u8() % 3 {
                0 => drop(k.lock2(g)),
                1 => drop(k.unlock2(g)),
                _ => drop(k.invalidate_cache(g, inp.u64() % 8192, inp.u64() % 8192)),
            }
        }
        op::MONITORED => match inp.u8() % 4 {
            0 => {
                if let Ok((f, _)) = k.create_monitored_fence(inp.u64()) {
                    h.monitored.push(f);
                }
            }
            1 => {
                let g = pick(inp, &h.monitored);
                let _ = k.signal_fence_from_cpu(g, inp.u64());
            }
            2 => {
                let g = pick(inp, &h.monitored);
                // Step mode: a wait that cannot be satisfied ends when the machine is idle.
                let _ = k.wait_for_fence(g, inp.u64() % 4);
            }
            _ => {
                let g = pick(inp, &h.monitored);
                if k.destroy_monitored_fence(g).is_ok() {
                    h.monitored.retain(|x| *x != g);
                }
            }
        },
        _ => {
            let q = pick(inp, &h.queues);
            let f = pick(inp, &h.monitored);
            let v = inp.u64() % 4;
            let _ = if inp.u8() & 1 == 0 {
                k.submit_wait_to_hw_queue(q, &[(f, v)])
            } else {
                k.submit_signal_to_hw_queue(q, &[(f, v)])
            };
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    run_with(data, |_, _, _| {});
}

/// Runs one input; `end` sees the hostile process's objects after the machine ran on, before
/// the process is killed (the seeds' tests), and what it returns is returned.
fn run_with<R>(data: &[u8], end: impl FnOnce(&World, &UmsProcess, &Hostile) -> R) -> R {
    with_world(|w| {
        let p = w.hostile();
        let k = w.m.kmt(&p);
        let mut h = Hostile::default();
        let mut inp = Input::new(data);
        for _ in 0..MAX_OPS {
            if inp.is_empty() {
                break;
            }
            step(&k, &mut h, &mut inp);
            w.no_fault("during the input");
        }
        let _ = w.m.run_steps(8);
        w.no_fault("after the input ran");
        let r = end(w, &p, &h);
        drop(h);
        w.kill(&p);
        w.check();
        r
    })
}

/// Seeds: the UMD's own sequences (a working user-mode queue with a doorbell, a kernel-mode
/// submission, native and monitored fences), each one operation at a time.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // A user-mode queue as the UMD builds it: context, queue, ring, ring control, doorbell,
    // connect, commands written, write pointer published, doorbell rung.
    let mut w = Writer::new();
    w.u8(op::CONTEXT).u8(0);
    w.u8(op::HW_QUEUE).u8(0).u8(0).u8(0).u8(0);
    w.u8(op::ALLOC).u16(4096 / 16).u8(1);
    w.u8(op::ALLOC).u16(RingControl::SIZE as u16 / 16).u8(2);
    w.u8(op::DOORBELL).u8(0).u8(0).u8(1).u8(12).u8(0);
    w.u8(op::CONNECT).u8(0);
    let full = w.clone();
    out.push(("umq-doorbell".to_string(), w.finish()));
    let mut w = full.clone();
    // A two-word NOP at ring offset 0, then the write pointer 16 (no PROGRESS: 24H2 gives a
    // user-mode queue no progress fence for it to write).
    let progress = {
        let c = rvgpu_hw::cmd::Command::Nop { len: 2 };
        let mut b = [0u64; 2];
        let _ = c.encode(&mut b);
        b
    };
    // The packet at the start of allocation 0.
    let packet = |w: &mut Writer| {
        w.u8(op::WRITE)
            .u16(0)
            .u8(2)
            .u8(0)
            .u64(progress[0])
            .u64(progress[1]);
    };
    // The packet into the ring (allocation 0), write pointer 16 into its control block
    // (allocation 1), the doorbell rung, the GPU run.
    let submit = |w: &mut Writer| {
        packet(w);
        w.u8(op::WRITE).u16(0).u8(1).u8(1).u64(16);
        w.u8(op::RING).u8(0).u64(16);
        w.u8(op::STEPS).u8(16);
    };
    submit(&mut w);
    out.push(("umq-submit".to_string(), w.finish()));
    // Bad doorbell private data: raw bytes.
    let mut w = full.clone();
    w.u8(op::DOORBELL).u8(0).u8(0).u8(1).u8(12).u8(2).u8(8);
    w.0.extend_from_slice(&PDD_MAGIC.to_le_bytes());
    w.0.extend_from_slice(&[1, 0, 0, 0]);
    out.push(("doorbell-short-pdd".to_string(), w.finish()));
    // Kernel-mode queue and a submission from a command allocation.
    let mut w = Writer::new();
    w.u8(op::CONTEXT).u8(1);
    w.u8(op::HW_QUEUE).u8(0).u8(1).u8(3).u8(0);
    w.u8(op::ALLOC).u16(4096 / 16).u8(1);
    packet(&mut w);
    w.u8(op::SUBMIT).u8(0).u64(1).u8(0).u16(0).u16(16);
    w.u8(op::STEPS).u8(16);
    out.push(("kernel-queue-submit".to_string(), w.finish()));
    // Allocation private data.
    let pdd = AllocationPdd {
        magic: PDD_MAGIC,
        version: ALLOCATION_PDD_VERSION,
        size: 8192,
        kind: 0,
        flags: 0,
        reserved: 0,
    };
    let mut w = Writer::new();
    w.u8(op::ALLOC_PDD);
    w.0.extend_from_slice(pdd.as_bytes());
    w.u8(1);
    w.u8(op::RESIDENCY).u8(1).u8(0).u8(1).u8(0);
    w.u8(op::RESIDENCY).u8(1).u8(0).u8(0).u8(0);
    w.u8(op::LOCK).u8(0).u8(2).u64(0).u64(0);
    out.push(("allocation-pdd".to_string(), w.finish()));
    // Large allocations (see `valid_size`): 2 MiB and 8 KiB of VRAM, evicted, made resident
    // again and locked; and a user-mode queue whose 4 MiB ring is a 4 MiB CPU-visible
    // allocation (system memory, two large pages).
    let large = |twice: u64, tail: u64, kind: AllocationKind, flags: u32| {
        let pdd = AllocationPdd {
            magic: PDD_MAGIC,
            version: ALLOCATION_PDD_VERSION,
            size: (3 << 62) | (twice << 61) | tail,
            kind: kind as u32,
            flags,
            reserved: 0,
        };
        let mut w = Writer::new();
        w.u8(op::ALLOC_PDD);
        w.0.extend_from_slice(pdd.as_bytes());
        w.u8(0);
        w
    };
    let mut w = large(0, 8192, AllocationKind::Buffer, 0);
    w.u8(op::RESIDENCY).u8(1).u8(0).u8(1).u8(0);
    w.u8(op::RESIDENCY).u8(1).u8(0).u8(0).u8(0);
    w.u8(op::LOCK).u8(0).u8(0);
    out.push(("allocation-pdd-large".to_string(), w.finish()));
    let mut w = Writer::new();
    w.u8(op::CONTEXT).u8(0);
    w.u8(op::HW_QUEUE).u8(0).u8(0).u8(0).u8(0);
    w.0.extend_from_slice(&large(1, 0, AllocationKind::Commands, ALLOCATION_CPU_VISIBLE).0);
    w.u8(op::ALLOC).u16(RingControl::SIZE as u16 / 16).u8(2);
    // Created, then made resident (as the UMD does; `ALLOC` does both).
    w.u8(op::RESIDENCY).u8(1).u8(0).u8(0).u8(0);
    w.u8(op::DOORBELL).u8(0).u8(0).u8(1).u8(22).u8(0);
    w.u8(op::CONNECT).u8(0);
    submit(&mut w);
    out.push(("umq-large-ring".to_string(), w.finish()));
    // Native fences: create, open by a guessed handle, destroy.
    let mut w = Writer::new();
    w.u8(op::NATIVE_FENCE).u64(5);
    w.u8(op::OPEN_NATIVE).u8(0x80).u32(0x4000_0001);
    w.u8(op::OPEN_NATIVE).u8(0);
    w.u8(op::DESTROY_NATIVE).u8(0);
    out.push(("native-fences".to_string(), w.finish()));
    // A shareable native fence and its wait board: the process publishes two pending waits
    // into its own slot and reads the answer about the other opens (there are none).
    let mut w = Writer::new();
    w.u8(op::NATIVE_FENCE).u64(5).u8(1);
    w.u8(op::ESCAPE).u8(1).u8(0).u64(0).u8(0).u8(1).u8(0);
    w.u64(7).u64(9).u64(u64::MAX).u64(u64::MAX).u64(5).u64(5);
    w.u32(0).u32(0).u64(0);
    out.push(("wait-board".to_string(), w.finish()));
    // Monitored fences and OS-scheduled waits/signals on a kernel-mode queue.
    let mut w = Writer::new();
    w.u8(op::CONTEXT).u8(0);
    w.u8(op::HW_QUEUE).u8(0).u8(1).u8(0).u8(0);
    w.u8(op::MONITORED).u8(0).u64(0);
    w.u8(op::OS_WAIT_SIGNAL).u8(0).u8(0).u64(1).u8(0);
    w.u8(op::OS_WAIT_SIGNAL).u8(0).u8(0).u64(1).u8(1);
    w.u8(op::MONITORED).u8(1).u8(0).u64(1);
    w.u8(op::STEPS).u8(8);
    w.u8(op::MONITORED).u8(2).u8(0).u64(1);
    out.push(("monitored-fences".to_string(), w.finish()));
    // Guessed handles everywhere.
    let mut w = Writer::new();
    for g in [1u32, 2, 3, 0x4000_0000, 0x4000_0004, 0x8000_0001] {
        w.u8(op::DESTROY).u8(4).u8(0).u32(g);
        w.u8(op::CONNECT).u8(0x80).u32(g);
        w.u8(op::SUBMIT)
            .u8(0x80)
            .u32(g)
            .u64(1)
            .u8(0)
            .u16(0)
            .u64(0x1000)
            .u16(16);
    }
    out.push(("guessed-handles".to_string(), w.finish()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_hw::PAGE_SIZE;

    /// Runs the seed called `name`; `look` reads its end state (asserted on after the process
    /// is gone, so a failure leaves the shared world clean for the other tests).
    fn seed<R>(name: &str, look: impl FnOnce(&World, &UmsProcess, &Hostile) -> R) -> R {
        let (_, bytes) = seeds()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no seed {name}"));
        run_with(&bytes, look)
    }

    fn read_ptr(h: &Hostile) -> Option<u64> {
        h.allocs.get(1).map(|a| a.mem.load(RingControl::READ_PTR))
    }

    fn page(w: &World, p: &UmsProcess, va: u64) -> Option<u64> {
        w.m.gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(va))
            .map(|(_, size)| size)
    }

    // The seeds are where the fuzzer starts: one whose first call fails (as the doorbell
    // seeds once did, with two stray bytes) leaves the fuzzer to find the working sequence alone.
    #[test]
    fn ddi_seed_umq_submit_runs_its_packet_through_the_doorbell() {
        let (doorbells, rptr) = seed("umq-submit", |_, _, h| (h.doorbells.len(), read_ptr(h)));
        assert_eq!(doorbells, 1);
        assert_eq!(rptr, Some(16), "the GPU consumed the packet");
    }

    #[test]
    fn ddi_seed_wait_board_request_on_a_held_fence_is_answered() {
        assert_eq!(
            seed("wait-board", |_, _, h| (h.native.len(), h.escapes_answered)),
            (1, 1)
        );
    }

    #[test]
    fn ddi_seed_short_doorbell_pdd_is_refused_after_a_valid_one() {
        assert_eq!(seed("doorbell-short-pdd", |_, _, h| h.doorbells.len()), 1);
    }

    #[test]
    fn ddi_seed_allocation_stays_when_the_cpu_cannot_map_it() {
        assert_eq!(seed("allocation-pdd", |_, _, h| h.gpu_only.len()), 1);
    }

    #[test]
    fn ddi_seed_large_allocation_is_mapped_with_large_pages() {
        let pages = seed("allocation-pdd-large", |w, p, h| {
            let va = h.gpu_only.first().map_or(0, |a| a.1);
            [PAGE_2M - 8, PAGE_2M, PAGE_2M + PAGE_SIZE].map(|off| page(w, p, va + off))
        });
        // Evicted and made resident again: a large page, then the 8 KiB tail in small ones;
        // under 24H2 the raw create gets no VA (the seed maps nothing itself).
        let want = if gives_va_at_create() {
            [Some(PAGE_2M), Some(PAGE_SIZE), Some(PAGE_SIZE)]
        } else {
            [None; 3]
        };
        assert_eq!(pages, want);
    }

    #[test]
    fn ddi_seed_ring_in_a_large_system_page_runs_its_packet() {
        let (doorbells, ring, rptr) = seed("umq-large-ring", |w, p, h| {
            let ring = h.allocs.first().map(|a| page(w, p, a.gpu_va));
            (h.doorbells.len(), ring, read_ptr(h))
        });
        if gives_va_at_create() {
            assert_eq!(doorbells, 1);
            assert_eq!(ring, Some(Some(PAGE_2M)));
            assert_eq!(rptr, Some(16), "the GPU consumed the packet");
        } else {
            // 24H2: the ring the seed creates has no VA, so no doorbell names it.
            assert_eq!((doorbells, ring), (0, Some(None)));
        }
    }

    /// Whether the reading these seeds run under gives an allocation its VA at create (the
    /// seeds were written for that; under 24H2 a VA comes only from a Map they do not make).
    fn gives_va_at_create() -> bool {
        rvgpu_simos::Windows::from_env().reading().allocation_va
            == rvgpu_simos::machine::answers::AllocationVa::AtCreate
    }
}
