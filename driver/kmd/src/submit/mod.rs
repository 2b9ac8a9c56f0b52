//! A kernel-mode queue's submissions as packets: encoding a DMA buffer into INDIRECTs and a
//! PROGRESS, appending them to the queue's ring (docs/hardware.md 5.6), and the backlog a
//! full ring holds. `DxgkDdiSubmitCommandToHwQueue` is in [`ddi`].

use core::sync::atomic::Ordering;
use rvgpu_hw::addr::GpuVa;

use rvgpu_hw::cmd::{Command, MAX_INDIRECT};
use rvgpu_hw::queue::{ring_free, RingControl};

use crate::hwqueue::KernelRing;
use crate::status::{self, Status};

pub mod ddi;

/// Largest DMA buffer accepted in one submission (16 INDIRECTs).
pub const MAX_SUBMIT_BYTES: u64 = 16 * MAX_INDIRECT;

/// Words of the longest submission: 16 INDIRECT_VMs and a PROGRESS.
const MAX_WORDS: usize = 16 * 4 + 2;

/// Words of a submission of at most `MAX_INDIRECT` bytes: one INDIRECT_VM and a PROGRESS.
const SMALL_WORDS: usize = 4 + 2;

/// The packet that runs `bytes` at `addr`: INDIRECT in the ring's own space (`root` 0: the
/// OS's buffers, paging and the system context), INDIRECT_VM in a process's space (its
/// context's root: the buffer is that process's and reaches only what it maps).
fn indirect(addr: GpuVa, bytes: u64, root: u64) -> Command {
    if root == 0 {
        Command::Indirect {
            addr: addr.get(),
            bytes,
        }
    } else {
        Command::IndirectVm {
            addr: addr.get(),
            bytes,
            root,
        }
    }
}

/// Encodes a submission into `out`: INDIRECTs covering `[addr, addr + bytes)` in the space of
/// `root` (none when `null_rendering`), then the PROGRESS. Returns the number of words.
pub fn encode(
    addr: GpuVa,
    bytes: u64,
    root: u64,
    fence: u64,
    null_rendering: bool,
    out: &mut [u64],
) -> Option<usize> {
    let mut n = 0usize;
    if !null_rendering {
        let mut off = 0u64;
        while off < bytes {
            let chunk = bytes.saturating_sub(off).min(MAX_INDIRECT);
            let at = addr.checked_add(off)?;
            n = n.checked_add(indirect(at, chunk, root).encode(out.get_mut(n..)?)?)?;
            off = off.checked_add(chunk)?;
        }
    }
    let progress = Command::Progress {
        irq: true,
        value: fence,
    };
    n.checked_add(progress.encode(out.get_mut(n..)?)?)
}

/// Appends `words` to the kernel ring and publishes them (release store of `write_ptr`).
/// Refuses, writing nothing, when the ring lacks room.
pub fn append(k: &mut KernelRing, words: &[u64]) -> Result<(), Status> {
    let need = u64::try_from(words.len())
        .ok()
        .and_then(|w| w.checked_mul(8))
        .ok_or(status::INVALID_PARAMETER)?;
    let read = k.read_ptr().ok_or(status::DEVICE_HARDWARE_ERROR)?;
    // Inconsistent pointers mean the CMP's read pointer is not ours to trust: refuse rather
    // than overwrite unconsumed commands.
    let free = ring_free(k.size, read, k.write_ptr).ok_or(status::DEVICE_HARDWARE_ERROR)?;
    if free < need {
        return Err(status::INSUFFICIENT_RESOURCES);
    }
    let ring_words = u64::from(k.size) / 8;
    // One division for the first word; the next ones step and wrap.
    let mut idx = (k.write_ptr / 8).checked_rem(ring_words);
    for w in words {
        let i = idx.ok_or(status::INVALID_PARAMETER)?;
        k.buf.store(i, *w, Ordering::Relaxed);
        // `i < ring_words <= u64::MAX / 8`: no overflow.
        let next = i.wrapping_add(1);
        idx = Some(if next == ring_words { 0 } else { next });
    }
    let new = k
        .write_ptr
        .checked_add(need)
        .ok_or(status::INVALID_PARAMETER)?;
    // P3: the packets are visible before the new write pointer.
    k.buf.store(
        k.control_word(RingControl::WRITE_PTR),
        new,
        Ordering::Release,
    );
    k.write_ptr = new;
    Ok(())
}

/// Appends the held-back submissions of `k` that now fit, oldest first; `true` if any moved.
fn drain(k: &mut KernelRing) -> bool {
    // Taken out while the ring is written (moving it allocates nothing).
    let mut backlog = core::mem::take(&mut k.backlog);
    let mut moved = false;
    while let Some(run) = backlog.front() {
        if append_fits(k, run.len()) && append(k, run).is_ok() {
            backlog.pop_front();
            moved = true;
        } else {
            break;
        }
    }
    k.backlog = backlog;
    moved
}

/// Whether `words` words fit in `k` now.
fn append_fits(k: &KernelRing, words: usize) -> bool {
    let need = u64::try_from(words).ok().and_then(|w| w.checked_mul(8));
    let free = k
        .read_ptr()
        .and_then(|read| ring_free(k.size, read, k.write_ptr));
    matches!((need, free), (Some(n), Some(f)) if f >= n)
}
