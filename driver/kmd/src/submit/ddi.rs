//! Kernel-mode submission: `DxgkDdiSubmitCommandToHwQueue` (UM-01, docs/hardware.md 5.6).
//!
//! The KMD appends to the queue's own ring `INDIRECT_VM(DmaBufferVirtualAddress,
//! DmaBufferSize, root)` under the queue's process's root (a plain INDIRECT for the OS's
//! queues), split into several of at most `cmd::MAX_INDIRECT` bytes for a bigger buffer,
//! and `PROGRESS(PROGRESS_IRQ, HwQueueProgressFenceId)`, stores `write_ptr` with release
//! ordering and writes the queue id to the engine's `QUEUE_KICK` (hardware.md 8.5, P1..P4).
//! The PROGRESS makes the device post a `Progress` event, which the ISR reports as a
//! monitored-fence signal so the OS reads the progress fence.
//!
//! Nothing blocks (the GPU may be waiting for a CPU signal the caller makes only after this
//! returns): a ring without room holds the submission back, within the process's backlog quota
//! ([`hold`]), and the DPC appends it once the CMP frees room; a user-mode queue refuses it with
//! `STATUS_INVALID_PARAMETER` (UM-05). Submissions to one queue are serialised by the
//! scheduler lock, which also keeps the queue alive while its ring is written.

use rvgpu_hw::addr::GpuVa;

use rvgpu_ddi::submission::{DXGKARG_SUBMITCOMMANDTOHWQUEUE, DXGK_SUBMITCOMMANDFLAGS};
use rvgpu_hw::regs;

use super::{append, drain, encode, MAX_WORDS, SMALL_WORDS};
use crate::adapter::{Adapter, Live};
use crate::handle::{Handle, Kind};
use crate::kmem::{backlog_cost, BACKLOG_PROCESS_BYTES};
use crate::platform::Platform;
use crate::status::{self, Status};
use rvgpu_hw::cmd::MAX_INDIRECT;

/// DxgkDdiSubmitCommandToHwQueue (PASSIVE).
pub fn submit<P: Platform>(
    a: &Adapter<P>,
    args: &DXGKARG_SUBMITCOMMANDTOHWQUEUE,
) -> Result<(), Status> {
    let h = Handle::decode_on(args.hHwQueue, Kind::Queue, a.table_slot())?;
    let live = a.started()?;
    {
        let addr = GpuVa::new(args.DmaBufferVirtualAddress);
        let bytes = u64::from(args.DmaBufferSize);
        if bytes == 0 {
            return Err(status::INVALID_PARAMETER);
        }
        crate::node::check_range(addr, bytes)?;
        if args.DmaBufferPrivateDataSize != 0 && args.pDmaBufferPrivateData.is_null() {
            return Err(status::INVALID_PARAMETER);
        }
        if args.Flags.get(DXGK_SUBMITCOMMANDFLAGS::Reserved) != 0 {
            return Err(status::INVALID_PARAMETER);
        }
        let null_rendering = args.Flags.is_set(DXGK_SUBMITCOMMANDFLAGS::NullRendering);
        // The common buffer fits one INDIRECT_VM: only the longest submission clears the
        // whole stack buffer (zeroing it was a tenth of the DDI's own instructions).
        let mut small = [0u64; SMALL_WORDS];
        let mut large: [u64; MAX_WORDS];
        let words: &mut [u64] = if bytes <= MAX_INDIRECT {
            &mut small
        } else {
            large = [0u64; MAX_WORDS];
            &mut large
        };
        let mut guard = live.sched.lock();
        // One lookup of the queue; the device check reads the other tables beside it.
        let s = &mut *guard;
        let q = s.queues.get_mut(&h).ok_or(status::INVALID_HANDLE)?;
        // The buffer is the queue's process's: it runs under that process's root with user
        // privilege (INDIRECT_VM), not with the kernel privilege of the queue's own ring; the
        // OS's queues keep their space (plain INDIRECT). A process queue without a root is
        // refused (docs/robustness.md, "Whose buffer runs where"). One walk of the context and
        // device tables answers that and the device's error state.
        let (in_error, root) =
            crate::sched::buffer_root(&s.contexts, &s.devices, &s.processes, &q.context);
        // UM-10: nothing more from a device put in error by an engine reset.
        if in_error {
            return Err(status::DEVICE_REMOVED);
        }
        if q.user_mode {
            // UM-05: user-mode queues are fed through their doorbell only.
            return Err(status::INVALID_PARAMETER);
        }
        let root = root?.unwrap_or(0);
        let n = encode(
            addr,
            bytes,
            root,
            args.HwQueueProgressFenceId,
            null_rendering,
            words,
        )
        .ok_or(status::INVALID_PARAMETER)?;
        let packets = words.get(..n).ok_or(status::INVALID_PARAMETER)?;
        let k = q.kernel.as_mut().ok_or(status::INVALID_DEVICE_STATE)?;
        // Earlier submissions held back go first; this one joins them if they still do not
        // fit or the ring is full (Windows turns a failure here into a device error, so a full
        // ring is not one: `drain_backlog` appends it once the CMP frees room).
        if !k.backlog.is_empty() {
            drain(k);
        }
        let held =
            !k.backlog.is_empty() || append(k, packets) == Err(status::INSUFFICIENT_RESOURCES);
        let q = if held {
            // The slow path (the ring is full): the process's quota, then the queue again.
            let context = q.context;
            hold::<P>(s, &h, context, packets)?;
            live.backlogged
                .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            s.queues.get_mut(&h).ok_or(status::INVALID_HANDLE)?
        } else {
            q
        };
        q.last_submitted = args.HwQueueProgressFenceId;
        // Read here, not before the ring is written: nothing is kept live across those calls.
        let (engine, id) = (q.engine, q.id);
        // P4: the CMP loads write_ptr before this write returns (a suspended queue picks it
        // up when it re-enters the runlist).
        crate::etw::events::emit::<P, 2>(&crate::etw::events::DOORBELL_RING, || {
            [id.into(), engine.into()]
        });
        live.regs.write_at(engine, regs::QueueKick::new(id));
        Ok(())
    }
}

/// Holds `packets` back on queue `h` (of `context`): refused with
/// STATUS_INSUFFICIENT_RESOURCES when the queue's process would hold more than
/// [`BACKLOG_PROCESS_BYTES`] across its kernel-mode queues (a scan of the queues, on the
/// full-ring path only), or when the pool is exhausted; nothing changes then.
fn hold<P: Platform>(
    s: &mut crate::sched::Sched,
    h: &Handle,
    context: Handle,
    packets: &[u64],
) -> Result<(), Status> {
    let process_of = |c: &Handle| {
        s.contexts
            .get(c)
            .and_then(|c| s.devices.get(&c.device))
            .and_then(|d| d.process)
    };
    let process = process_of(&context);
    let held = s
        .queues
        .values()
        .filter(|o| process_of(&o.context) == process)
        .filter_map(|o| o.kernel.as_ref())
        .fold(0usize, |sum, k| sum.saturating_add(k.backlog.bytes()));
    if held.saturating_add(backlog_cost(packets.len())) > BACKLOG_PROCESS_BYTES {
        return Err(status::INSUFFICIENT_RESOURCES);
    }
    s.queues
        .get_mut(h)
        .and_then(|q| q.kernel.as_mut())
        .ok_or(status::INVALID_DEVICE_STATE)?
        .backlog
        .try_push::<P>(packets)
        .map_err(|_| status::INSUFFICIENT_RESOURCES)
}

/// The DPC's part (DISPATCH): every kernel-mode queue with held-back submissions appends what
/// the CMP has made room for and is kicked. Nothing to do (one atomic load) while no queue
/// holds any.
pub fn drain_backlog<P: Platform>(live: &Live<P>) {
    if live.backlogged.load(core::sync::atomic::Ordering::Relaxed) == 0 {
        return;
    }
    let mut s = live.sched.lock();
    let mut left = 0usize;
    for q in s.queues.values_mut() {
        let (engine, id) = (q.engine, q.id);
        let Some(k) = q.kernel.as_mut() else {
            continue;
        };
        if drain(k) {
            live.regs.write_at(engine, regs::QueueKick::new(id));
        }
        left = left.saturating_add(k.backlog.len());
    }
    live.backlogged
        .store(left, core::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    // The packets and the ring writer the DDI uses (the parent module).
    use super::super::*;

    /// `encode` with a raw GPU address.
    fn encode(addr: u64, bytes: u64, fence: u64, null: bool, out: &mut [u64]) -> Option<usize> {
        super::encode(GpuVa::new(addr), bytes, 0, fence, null, out)
    }
    use rvgpu_hw::cmd::decode;

    #[test]
    fn small_buffer_is_one_indirect_and_a_progress() {
        let mut w = [0u64; MAX_WORDS];
        let n = encode(0x10_0000, 4096, 9, false, &mut w).unwrap();
        assert_eq!(n, 5);
        assert_eq!(
            decode(&w[..3]),
            Ok(Command::Indirect {
                addr: 0x10_0000,
                bytes: 4096
            })
        );
        assert_eq!(
            decode(&w[3..5]),
            Ok(Command::Progress {
                irq: true,
                value: 9
            })
        );
    }

    #[test]
    fn big_buffer_is_split_at_max_indirect() {
        let mut w = [0u64; MAX_WORDS];
        let bytes = 2 * MAX_INDIRECT + 8;
        let n = encode(0x1000, bytes, 1, false, &mut w).unwrap();
        assert_eq!(n, 3 * 3 + 2);
        let chunks: Vec<_> = (0..3)
            .map(|i| decode(&w[i * 3..i * 3 + 3]).unwrap())
            .collect();
        assert_eq!(
            chunks,
            vec![
                Command::Indirect {
                    addr: 0x1000,
                    bytes: MAX_INDIRECT
                },
                Command::Indirect {
                    addr: 0x1000 + MAX_INDIRECT,
                    bytes: MAX_INDIRECT
                },
                Command::Indirect {
                    addr: 0x1000 + 2 * MAX_INDIRECT,
                    bytes: 8
                },
            ]
        );
        let n = encode(0x1000, MAX_SUBMIT_BYTES, 1, false, &mut w).unwrap();
        assert_eq!(n, 16 * 3 + 2);
        let n = super::encode(
            GpuVa::new(0x1000),
            MAX_SUBMIT_BYTES,
            0x2000,
            1,
            false,
            &mut w,
        )
        .unwrap();
        assert_eq!(n, MAX_WORDS, "the largest submission fits the stack buffer");
        assert_eq!(
            decode(&w[..4]),
            Ok(Command::IndirectVm {
                addr: 0x1000,
                bytes: MAX_INDIRECT,
                root: 0x2000
            }),
            "a process's buffer runs in its space"
        );
    }

    /// A kernel ring over leaked host memory (bus address = a made-up value; only the CPU
    /// side is exercised).
    fn host_ring(size: u32) -> KernelRing {
        let words = (size as usize).saturating_add(4096) / 8;
        let buf = crate::dma::DmaBuffer::leak_host(
            (words as u64).saturating_mul(8),
            rvgpu_hw::addr::BusAddr::new(0x10_0000),
        );
        KernelRing {
            buf,
            size,
            write_ptr: 0,
            backlog: crate::kmem::Backlog::default(),
        }
    }

    #[test]
    fn append_wraps_publishes_and_refuses_when_full() {
        let mut k = host_ring(256);
        let packet = [1u64, 2, 3, 4, 5];
        let set_read = |k: &KernelRing, v: u64| {
            k.buf
                .store(k.control_word(RingControl::READ_PTR), v, Ordering::Release);
        };
        // 6 packets of 40 bytes fit in 256; the 7th does not.
        for _ in 0..6 {
            append(&mut k, &packet).unwrap();
        }
        assert_eq!(k.write_ptr, 240);
        assert_eq!(append(&mut k, &packet), Err(status::INSUFFICIENT_RESOURCES));
        assert_eq!(k.write_ptr, 240, "a refused submission writes nothing");
        let published = k
            .buf
            .load(k.control_word(RingControl::WRITE_PTR), Ordering::Acquire);
        assert_eq!(published, Some(240));
        // The CMP consumed two packets: the next one wraps around the ring end.
        set_read(&k, 80);
        append(&mut k, &packet).unwrap();
        assert_eq!(k.write_ptr, 280);
        assert_eq!(
            k.buf.load(30, Ordering::Relaxed),
            Some(1),
            "words 30, 31 at the end"
        );
        assert_eq!(k.buf.load(31, Ordering::Relaxed), Some(2));
        assert_eq!(
            k.buf.load(0, Ordering::Relaxed),
            Some(3),
            "then from the start"
        );
        assert_eq!(k.buf.load(2, Ordering::Relaxed), Some(5));
        // A read pointer ahead of the write pointer is never trusted.
        set_read(&k, 1000);
        assert_eq!(append(&mut k, &packet), Err(status::DEVICE_HARDWARE_ERROR));
    }

    #[test]
    fn full_ring_holds_submissions_back_and_drains_them_in_order() {
        let mut k = host_ring(256);
        let set_read = |k: &KernelRing, v: u64| {
            k.buf
                .store(k.control_word(RingControl::READ_PTR), v, Ordering::Release);
        };
        for i in 0..6u64 {
            append(&mut k, &[i; 5]).unwrap();
        }
        // The ring is full: what `submit` does with the next two.
        for i in [6u64, 7] {
            assert!(!append_fits(&k, 5));
            k.backlog.try_push::<crate::kmem::Host>(&[i; 5]).unwrap();
        }
        assert!(!drain(&mut k), "no room yet");
        assert_eq!(k.backlog.len(), 2);
        // Room for one: only the oldest moves, the order kept.
        set_read(&k, 40);
        assert!(drain(&mut k));
        assert_eq!((k.backlog.len(), k.write_ptr), (1, 280));
        assert_eq!(k.buf.load(30, Ordering::Relaxed), Some(6));
        set_read(&k, 120);
        assert!(drain(&mut k));
        assert!(k.backlog.is_empty());
        assert_eq!(k.write_ptr, 320);
        assert_eq!(k.buf.load((280 / 8) % 32, Ordering::Relaxed), Some(7));
    }

    /// The backlog keeps its runs in order and what it holds is what it costs; taking runs
    /// from the front moves amortised O(1) words each, however long it is (exact counts).
    #[test]
    fn a_backlog_keeps_order_and_its_cost_and_pops_in_amortised_constant_moves() {
        crate::kmem::assert_moves_per_item("words moved per pop", 14.0, [10_000, 100_000], |n| {
            let mut b = crate::kmem::Backlog::default();
            for i in 0..n as u64 {
                b.try_push::<crate::kmem::Host>(&[i; 6]).unwrap();
            }
            assert_eq!(b.bytes(), n * crate::kmem::backlog_cost(6));
            crate::kmem::take_moves();
            for i in 0..n as u64 {
                assert_eq!(b.front(), Some(&[i; 6][..]));
                b.pop_front();
            }
            assert!(b.is_empty() && b.bytes() == 0 && b.front().is_none());
        });
    }

    /// The figures docs/usermode-submission.md states for a full kernel-mode ring: small
    /// submissions (one INDIRECT_VM) a ring holds, and what a process's backlog quota holds
    /// behind a wait of those and of the largest.
    #[test]
    fn um_01_the_documented_backlog_figures_are_the_drivers() {
        let mut w = [0u64; MAX_WORDS];
        let small = super::encode(GpuVa::new(0x1000), 8, 0x2000, 1, false, &mut w).unwrap();
        let ring = crate::hwqueue::KERNEL_RING_BYTES as usize / (small * 8);
        let quota = crate::kmem::BACKLOG_PROCESS_BYTES;
        let held_small = quota / crate::kmem::backlog_cost(small);
        let held_largest = quota / crate::kmem::backlog_cost(MAX_WORDS);
        let thousands = |n: usize| {
            let s = n.to_string();
            let mut out = String::new();
            for (i, c) in s.chars().enumerate() {
                if i > 0 && (s.len() - i).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let doc = include_str!("../../../../docs/usermode-submission.md").replace("\n  ", " ");
        let stated = format!(
            "holds at most {} MiB (`kmem::BACKLOG_PROCESS_BYTES`, 8 bytes per word and per \
             submission): past a ring's {} small submissions, {} more, or {} of the largest",
            quota >> 20,
            thousands(ring),
            thousands(held_small),
            thousands(held_largest)
        );
        assert!(
            doc.contains(&stated),
            "docs/usermode-submission.md should say: {stated}"
        );
    }

    /// UM-01: a buffer of up to `MAX_INDIRECT` bytes, in a process's space, encodes into the
    /// short stack buffer the DDI uses for it; one byte more needs the long one.
    #[test]
    fn um_01_a_buffer_of_one_indirect_fits_the_short_stack_buffer() {
        let mut w = [0u64; SMALL_WORDS];
        let n = super::encode(GpuVa::new(0x1000), MAX_INDIRECT, 0x2000, 1, false, &mut w);
        assert_eq!(n, Some(SMALL_WORDS));
        let more = super::encode(
            GpuVa::new(0x1000),
            MAX_INDIRECT + 8,
            0x2000,
            1,
            false,
            &mut w,
        );
        assert_eq!(more, None, "two INDIRECT_VMs do not fit");
    }

    #[test]
    fn null_rendering_only_signals_progress() {
        let mut w = [0u64; MAX_WORDS];
        assert_eq!(encode(0x1000, 64, 5, true, &mut w), Some(2));
    }
}
