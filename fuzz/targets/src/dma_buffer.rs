//! `dma_buffer`: a process's own DMA buffer, any words, run on a kernel-mode hardware queue
//! (`D3DKMTSubmitCommandToHwQueue`: INDIRECT_VM under the process's root) and on a node
//! context (`D3DKMTSubmitCommand`: `DxgkDdiSubmitCommandVirtual`), judged by the isolation
//! oracle of the shared machine ([`World::check`]): the innocent process's memory is unchanged
//! and it still completes work, the machine does not halt, and the kill gives every object and
//! byte back. What the buffer may change is the hostile process's own writable memory only.
//!
//! Input: a flags byte (bit 0: the kernel-mode queue, bit 1: the node context, bits 2..=6:
//! machine rounds after the submissions), then the buffer's words, little-endian (at most
//! [`MAX_WORDS`]; a short last word is zero-filled).
//!
//! [`World::check`]: crate::world::World::check

use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::{HwQueuePdd, HW_QUEUE_PDD_VERSION, PDD_MAGIC};
use rvgpu_umd::kmt::{AllocationCpu, AllocationKind, Kmt};
use zerocopy::IntoBytes;

use crate::input::Writer;
use crate::world::with_world;

/// Words of the buffer at most (one 4 KiB allocation).
pub const MAX_WORDS: usize = 512;

/// Runs one input.
pub fn run(data: &[u8]) {
    let (flags, rest) = data.split_first().map_or((3, &[][..]), |(f, r)| (*f, r));
    let words: Vec<u64> = rest
        .chunks(8)
        .take(MAX_WORDS)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect();
    with_world(|w| {
        let p = w.hostile();
        let k = w.m.kmt(&p);
        if let Ok(buf) = k.create_allocation_as(4096, AllocationKind::Commands) {
            for (i, v) in words.iter().enumerate() {
                buf.mem.store(i as u64 * 8, *v);
            }
            // An empty buffer is still submitted with one word (the DDIs refuse size 0).
            let bytes = (words.len().max(1) * 8) as u32;
            if flags & 1 != 0 {
                if let Ok(context) = k.create_context(0) {
                    let mut pdd = HwQueuePdd {
                        magic: PDD_MAGIC,
                        version: HW_QUEUE_PDD_VERSION,
                        ..Default::default()
                    };
                    if let Ok(q) = k.create_hw_queue(context, false, pdd.as_mut_bytes()) {
                        let _ = k.submit_command_to_hw_queue(q.handle, 1, buf.gpu_va, bytes);
                    }
                }
            }
            if flags & 2 != 0 {
                if let Ok(context) = k.create_context(0) {
                    let _ = w.m.submit_legacy_va(
                        &p,
                        context,
                        rvgpu_hw::addr::GpuVa::new(buf.gpu_va),
                        bytes,
                    );
                }
            }
            w.no_fault("during the input");
            let _ = w.m.run_steps(usize::from((flags >> 2) & 0x1F) + 8);
            w.no_fault("after the input ran");
        }
        w.kill(&p);
        w.check();
    });
}

/// Seeds: a harmless buffer, and the privileged or foreign packets a process's buffer must not
/// get to act on (TLB_INVALIDATE, INDIRECT_VM naming a root, writes to kernel and unmapped
/// addresses), on both paths.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let cases: Vec<(&str, Vec<Command>)> = vec![
        ("nop", vec![Command::Nop { len: 2 }]),
        ("tlb-invalidate", vec![Command::TlbInvalidate { root: 0 }]),
        (
            "indirect-vm",
            vec![Command::IndirectVm {
                addr: 0x1000,
                bytes: 64,
                root: 0x4000,
            }],
        ),
        (
            "fill-kernel-bus-address",
            vec![Command::Fill {
                dst: 0x1000_0000,
                bytes: 4096,
                pattern: 0xBAD,
            }],
        ),
        (
            "fill-unmapped",
            vec![Command::Fill {
                dst: 0x7000_0000_0000,
                bytes: 64,
                pattern: 0xBAD,
            }],
        ),
        ("every-command", crate::commands::every_command(0x1000)),
    ];
    let mut out = Vec::new();
    for (name, cmds) in cases {
        for (path, flags) in [("queue", 1u8), ("node", 2u8)] {
            let mut w = Writer::new();
            w.u8(flags);
            for v in crate::commands::encode(&cmds) {
                w.u64(v);
            }
            out.push((format!("{path}-{name}"), w.finish()));
        }
    }
    out
}
