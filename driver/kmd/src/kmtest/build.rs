//! From a vendor-neutral test command to rvgpu packets: validation against what the device
//! can do (docs/hardware.md §6.2) and the encoding. Pure: no adapter state, so every refusal is
//! tested here with plain values.

use rvgpu_ddi::kmtest::{
    D3DDDI_TESTCOMMANDBUFFER, D3DDDI_TESTCOMMANDBUFFEROP_COPY, D3DDDI_TESTCOMMANDBUFFEROP_FILL,
    D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP, D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP,
};
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{Command, MAX_TRANSFER};
use rvgpu_hw::mmu::VA_BITS;

use crate::status::{self, Status};

/// What the buffer will run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A context: its node's ring (INDIRECT_VM in the process's space).
    Context,
    /// A hardware queue, whose progress fence is at `progress` in the process's space.
    Queue { progress: GpuVa },
}

/// The packets of one test command: a run of COPY or FILL chunks, or one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Packets {
    /// `bytes` from `src` to `dst`, in chunks of at most `MAX_TRANSFER`.
    Copy { src: u64, dst: u64, bytes: u64 },
    /// `bytes` at `dst` with the 8-byte `pattern`, in chunks.
    Fill { dst: u64, bytes: u64, pattern: u64 },
    /// One packet.
    One(Command),
}

/// Device words per COPY or FILL packet.
const TRANSFER_WORDS: u64 = 4;

impl Packets {
    fn chunks(bytes: u64) -> Option<u64> {
        bytes
            .checked_add(MAX_TRANSFER - 1)?
            .checked_div(MAX_TRANSFER)
    }

    /// The buffer's size in bytes.
    pub(crate) fn bytes(&self) -> Option<u32> {
        let words = match *self {
            Self::Copy { bytes, .. } | Self::Fill { bytes, .. } => {
                Self::chunks(bytes)?.checked_mul(TRANSFER_WORDS)?
            }
            Self::One(c) => u64::try_from(c.len()).ok()?,
        };
        u32::try_from(words.checked_mul(8)?).ok()
    }

    /// The `i`-th packet.
    fn packet(&self, i: u64) -> Option<Command> {
        let chunk = |bytes: u64| -> Option<(u64, u64)> {
            let off = i.checked_mul(MAX_TRANSFER)?;
            (off < bytes).then(|| (off, bytes.saturating_sub(off).min(MAX_TRANSFER)))
        };
        match *self {
            Self::Copy { src, dst, bytes } => {
                let (off, n) = chunk(bytes)?;
                Some(Command::Copy {
                    src: src.checked_add(off)?,
                    dst: dst.checked_add(off)?,
                    bytes: n,
                })
            }
            Self::Fill {
                dst,
                bytes,
                pattern,
            } => {
                let (off, n) = chunk(bytes)?;
                Some(Command::Fill {
                    dst: dst.checked_add(off)?,
                    bytes: n,
                    pattern,
                })
            }
            Self::One(c) => (i == 0).then_some(c),
        }
    }

    /// Writes the packets (little-endian words) to `out`, which must hold [`Packets::bytes`].
    pub(crate) fn write(&self, out: &mut [u8]) -> Option<()> {
        let mut at = 0usize;
        let mut i = 0u64;
        while let Some(c) = self.packet(i) {
            let mut words = [0u64; 8];
            let n = c.encode(&mut words)?;
            for w in words.get(..n)? {
                let end = at.checked_add(8)?;
                out.get_mut(at..end)?.copy_from_slice(&w.to_le_bytes());
                at = end;
            }
            i = i.checked_add(1)?;
        }
        Some(())
    }
}

/// `[addr, addr + bytes)` is a non-empty range the device can move: 8-aligned, whole words,
/// inside the 48-bit space and not at the null page's address 0.
fn range(addr: u64, bytes: u64) -> Result<(), Status> {
    let end = addr.checked_add(bytes).ok_or(status::INVALID_PARAMETER)?;
    if addr == 0 || !addr.is_multiple_of(8) || !bytes.is_multiple_of(8) || end > 1u64 << VA_BITS {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(())
}

/// A transfer size: non-zero and a multiple of 4 (the reference pages), then of 8 (the device).
fn size(bytes: u32) -> Result<u64, Status> {
    if bytes == 0 || !bytes.is_multiple_of(4) {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(u64::from(bytes))
}

/// Validates `c` for `target` and returns its packets.
pub(crate) fn packets(c: &D3DDDI_TESTCOMMANDBUFFER, target: Target) -> Result<Packets, Status> {
    if c.Reserved1 != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    match c.Operation {
        D3DDDI_TESTCOMMANDBUFFEROP_COPY => {
            let a = c.copy_args();
            let bytes = size(a.NumBytes)?;
            range(a.SrcAddress, bytes)?;
            range(a.DstAddress, bytes)?;
            // The device refuses overlapping ranges (hardware.md §6.2).
            let (lo, hi) = if a.SrcAddress <= a.DstAddress {
                (a.SrcAddress, a.DstAddress)
            } else {
                (a.DstAddress, a.SrcAddress)
            };
            if lo.checked_add(bytes).ok_or(status::INVALID_PARAMETER)? > hi {
                return Err(status::INVALID_PARAMETER);
            }
            Ok(Packets::Copy {
                src: a.SrcAddress,
                dst: a.DstAddress,
                bytes,
            })
        }
        D3DDDI_TESTCOMMANDBUFFEROP_FILL => {
            let f = c.fill_args();
            let bytes = size(f.NumBytes)?;
            range(f.DstAddress, bytes)?;
            let p = u64::from(f.Pattern);
            Ok(Packets::Fill {
                dst: f.DstAddress,
                bytes,
                pattern: p | (p << 32),
            })
        }
        D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP => Ok(Packets::One(Command::Hang)),
        D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP => match target {
            // Without a progress fence (24H2 gives user-mode queues none) the wait would be
            // at VA 0, a word the process may map and write: refused.
            Target::Queue { progress } if progress.is_null() => Err(status::INVALID_PARAMETER),
            Target::Queue { progress } => Ok(Packets::One(Command::FenceWait {
                addr: progress.get(),
                value: u64::MAX,
            })),
            Target::Context => Err(status::INVALID_PARAMETER),
        },
        _ => Err(status::INVALID_PARAMETER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_ddi::kmtest::{D3DDDI_TESTCOMMANDBUFFEROP_INVALID, D3DDDI_TESTCOMMANDBUFFEROP_MAX};
    use rvgpu_hw::cmd::decode;

    const Q: Target = Target::Queue {
        progress: GpuVa::new(0x10_0000),
    };

    fn words(p: &Packets) -> alloc::vec::Vec<u64> {
        let n = p.bytes().unwrap() as usize;
        let mut b = alloc::vec![0u8; n];
        p.write(&mut b).unwrap();
        b.chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn kmt_fill_is_fill_packets_with_the_pattern_twice() {
        let p = packets(
            &D3DDDI_TESTCOMMANDBUFFER::fill(0x2000, 4096, 0xA1B2_C3D4),
            Q,
        )
        .unwrap();
        let w = words(&p);
        assert_eq!(w.len(), 4);
        assert_eq!(
            decode(&w).unwrap(),
            Command::Fill {
                dst: 0x2000,
                bytes: 4096,
                pattern: 0xA1B2_C3D4_A1B2_C3D4
            }
        );
    }

    #[test]
    fn kmt_copy_larger_than_one_transfer_is_split() {
        let big = u32::try_from(MAX_TRANSFER).unwrap() + 8;
        let p = packets(
            &D3DDDI_TESTCOMMANDBUFFER::copy(0x1000_0000, 0x4000_0000, big),
            Target::Context,
        )
        .unwrap();
        assert_eq!(p.bytes(), Some(64));
        let w = words(&p);
        assert_eq!(
            decode(&w[4..]).unwrap(),
            Command::Copy {
                src: 0x1000_0000 + MAX_TRANSFER,
                dst: 0x4000_0000 + MAX_TRANSFER,
                bytes: 8
            }
        );
    }

    #[test]
    fn kmt_loops_hang_the_engine_or_block_only_the_queue() {
        let hang = packets(
            &D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP),
            Target::Context,
        )
        .unwrap();
        assert_eq!(decode(&words(&hang)).unwrap(), Command::Hang);
        let wait = packets(
            &D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP),
            Q,
        )
        .unwrap();
        assert_eq!(
            decode(&words(&wait)).unwrap(),
            Command::FenceWait {
                addr: 0x10_0000,
                value: u64::MAX
            }
        );
        // A queue the OS gave no progress fence (24H2's user-mode queues): the wait would be
        // at VA 0, a word the process may map and write. Refused.
        assert_eq!(
            packets(
                &D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP),
                Target::Queue {
                    progress: GpuVa::new(0)
                }
            ),
            Err(status::INVALID_PARAMETER)
        );
        // A context's node ring is preempted only by draining: no preemptible loop there.
        assert_eq!(
            packets(
                &D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP),
                Target::Context
            ),
            Err(status::INVALID_PARAMETER)
        );
    }

    #[test]
    fn kmt_hostile_commands_are_invalid_parameter() {
        let bad = [
            D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_INVALID),
            D3DDDI_TESTCOMMANDBUFFER::op(D3DDDI_TESTCOMMANDBUFFEROP_MAX),
            D3DDDI_TESTCOMMANDBUFFER::op(u32::MAX),
            // Sizes: zero, not a multiple of 4, a multiple of 4 but not of the device's 8.
            D3DDDI_TESTCOMMANDBUFFER::fill(0x2000, 0, 1),
            D3DDDI_TESTCOMMANDBUFFER::fill(0x2000, 6, 1),
            D3DDDI_TESTCOMMANDBUFFER::fill(0x2000, 12, 1),
            D3DDDI_TESTCOMMANDBUFFER::copy(0x2000, 0x8000, 10),
            // Addresses: null, misaligned, past the 48-bit space, wrapping.
            D3DDDI_TESTCOMMANDBUFFER::fill(0, 8, 1),
            D3DDDI_TESTCOMMANDBUFFER::fill(0x2004, 8, 1),
            D3DDDI_TESTCOMMANDBUFFER::fill(1 << VA_BITS, 8, 1),
            D3DDDI_TESTCOMMANDBUFFER::fill((1 << VA_BITS) - 8, 16, 1),
            D3DDDI_TESTCOMMANDBUFFER::copy(u64::MAX - 7, 0x2000, 16),
            D3DDDI_TESTCOMMANDBUFFER::copy(0x2000, 0x2000 + 4096, 8192),
            // Overlapping copy.
            D3DDDI_TESTCOMMANDBUFFER::copy(0x2000, 0x2008, 64),
            D3DDDI_TESTCOMMANDBUFFER::copy(0x2008, 0x2000, 64),
        ];
        for c in bad {
            assert_eq!(packets(&c, Q), Err(status::INVALID_PARAMETER), "{c:?}");
        }
        let mut reserved = D3DDDI_TESTCOMMANDBUFFER::fill(0x2000, 8, 1);
        reserved.Reserved1 = 1;
        assert_eq!(packets(&reserved, Q), Err(status::INVALID_PARAMETER));
    }

    #[test]
    fn kmt_write_refuses_a_short_buffer() {
        let p = packets(&D3DDDI_TESTCOMMANDBUFFER::fill(0x2000, 8, 1), Q).unwrap();
        let mut b = [0u8; 31];
        assert_eq!(p.write(&mut b), None);
    }
}
