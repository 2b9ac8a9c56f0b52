//! The command set: packets in a hardware queue's ring.
//!
//! A ring is an array of 64-bit words. A packet is a header word followed by argument words;
//! packets may wrap around the end of the ring at any word. Header layout:
//!
//! | bits  | field                                        |
//! |-------|----------------------------------------------|
//! | 7:0   | opcode ([`Opcode`])                          |
//! | 15:8  | flags (per opcode)                           |
//! | 31:16 | length in words, header included             |
//! | 63:32 | reserved, must be zero                       |
//!
//! A bad opcode, a length that does not match the opcode, a non-zero reserved field, or an
//! argument the opcode forbids faults the queue (see [`crate::event::FaultCode`]).

use crate::event::FaultCode;

wire_enum! {
    /// Opcodes.
    pub enum Opcode: u8, from_u8 {
        /// Does nothing; any length >= 1 (the extra words are skipped: padding).
        Nop = 0x00,
        /// Writes a fence value, then decides the conditional interrupt (NF-03).
        FenceSignal = 0x01,
        /// Blocks the queue until the 64-bit value at an address is >= a value.
        FenceWait = 0x02,
        /// Writes a native-fence log entry (LOG-03).
        LogWrite = 0x03,
        /// Writes the GPU clock to an address.
        Timestamp = 0x04,
        /// Writes the queue's progress fence; optionally interrupts (DMA completed).
        Progress = 0x05,
        /// Copies bytes between device-visible addresses.
        Copy = 0x06,
        /// Fills bytes with a 64-bit pattern.
        Fill = 0x07,
        /// Never completes; only an engine or adapter reset gets the engine past it.
        Hang = 0x08,
        /// Executes the packets of a command buffer in memory as part of the queue ("call", like
        /// a batch-buffer start): see [`Command::Indirect`].
        Indirect = 0x09,
        /// Invalidates cached GPU translations of one root (0: all roots), ordered after the
        /// packets before it on the queue: the paging-buffer form of
        /// [`crate::regs::TLB_INVALIDATE`]. Kernel-mode queues only.
        TlbInvalidate = 0x0A,
        /// Writes 1..=[`WRITE_DATA_MAX`] words to consecutive addresses (page-table updates
        /// from paging buffers); see [`Command::WriteData`].
        WriteData = 0x0B,
        /// INDIRECT in another address space: the buffer, and every address its packets carry,
        /// translate under a given root with user privilege; see [`Command::IndirectVm`].
        /// Kernel-mode queues only.
        IndirectVm = 0x0C,
    }
}

impl Opcode {
    /// Exact length in words (header included), or `None` for the variable-length NOP and
    /// WRITE_DATA ([`Opcode::len_ok`]).
    pub const fn fixed_len(self) -> Option<u16> {
        match self {
            Self::Nop | Self::WriteData => None,
            Self::FenceSignal => Some(5),
            Self::FenceWait => Some(3),
            Self::LogWrite => Some(3),
            Self::Timestamp => Some(2),
            Self::Progress => Some(2),
            Self::Copy => Some(4),
            Self::Fill => Some(4),
            Self::Hang => Some(1),
            Self::Indirect => Some(3),
            Self::TlbInvalidate => Some(2),
            Self::IndirectVm => Some(4),
        }
    }

    /// Whether a header length of `len` words is allowed for this opcode: the fixed length,
    /// at least 1 for NOP, `2 + N` with N in 1..=[`WRITE_DATA_MAX`] for WRITE_DATA.
    pub const fn len_ok(self, len: u16) -> bool {
        match self {
            Self::Nop => len >= 1,
            Self::WriteData => len >= 3 && len as u64 <= 2 + WRITE_DATA_MAX,
            _ => match self.fixed_len() {
                Some(n) => n == len,
                None => false,
            },
        }
    }
}

/// FENCE_SIGNAL flag: compare with the MonitoredValue and interrupt if CurrentValue is
/// greater (native fence, NF-03).
pub const SIGNAL_CONDITIONAL_IRQ: u8 = 1 << 0;
/// FENCE_SIGNAL flag: interrupt after every signal (legacy monitored fence, MF-04).
pub const SIGNAL_ALWAYS_IRQ: u8 = 1 << 1;
/// PROGRESS flag: post a PROGRESS event and raise [`crate::regs::IntCause::PROGRESS`].
pub const PROGRESS_IRQ: u8 = 1 << 0;
/// The word of an encoded FENCE_SIGNAL that holds the value (header, value address, value,
/// MonitoredValue address, report tag): what a writer that encodes the packet once changes
/// per use.
pub const FENCE_SIGNAL_VALUE_WORD: usize = 2;
/// LOG_WRITE flag: bit 0 selects the log: 0 = wait log, 1 = signal log.
pub const LOG_SIGNAL: u8 = 1 << 0;

/// Largest COPY or FILL in bytes (keeps one command's duration bounded: 16 MiB).
pub const MAX_TRANSFER: u64 = 16 << 20;

/// Largest INDIRECT buffer in bytes (1 MiB = 131072 words). A bigger DMA buffer is split
/// into several INDIRECT packets by the driver.
pub const MAX_INDIRECT: u64 = 1 << 20;

/// Most data words in one WRITE_DATA packet: with its header and destination word a packet is
/// at most 511 words (4088 bytes), so it fits a 4 KiB ring or indirect-buffer page; a whole
/// page table (512 entries) takes two packets.
pub const WRITE_DATA_MAX: u64 = 509;

/// Which native-fence log a LOG_WRITE targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// The queue's wait log (entries are WAIT_UNBLOCKED).
    Wait,
    /// The queue's signal log (entries are SIGNAL_EXECUTED).
    Signal,
}

/// A decoded command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Padding of `len` words.
    Nop { len: u16 },
    /// Write `value` to `value_addr`; then, per `flags`, compare with the MonitoredValue at
    /// `monitored_addr` and post a fence event carrying `report_tag`.
    FenceSignal {
        flags: u8,
        value_addr: u64,
        value: u64,
        monitored_addr: u64,
        report_tag: u64,
    },
    /// Wait until `*addr >= value`.
    FenceWait { addr: u64, value: u64 },
    /// Write log entry number `index` (free-running) of the selected log.
    LogWrite {
        log: LogKind,
        index: u32,
        fence_handle: u32,
        fence_value: u64,
    },
    /// Write the GPU clock to `addr`.
    Timestamp { addr: u64 },
    /// Write `value` to the queue's progress fence.
    Progress { irq: bool, value: u64 },
    /// Copy `bytes` (multiple of 8) from `src` to `dst`; the ranges must not overlap.
    Copy { src: u64, dst: u64, bytes: u64 },
    /// Fill `bytes` (multiple of 8) at `dst` with `pattern`.
    Fill { dst: u64, bytes: u64, pattern: u64 },
    /// Never completes.
    Hang,
    /// Executes the `bytes` (non-zero, multiple of 8, at most [`MAX_INDIRECT`]) of packets at
    /// `addr` (8-aligned) in order, as part of the calling queue, then continues after this
    /// packet. The ring's read pointer stays on the INDIRECT until the whole buffer has
    /// completed. Packets in the buffer follow the ring rules, except that they may not wrap
    /// (a packet that runs past the buffer end faults [`FaultCode::BadLength`]) and that an
    /// INDIRECT inside a buffer faults [`FaultCode::NestedIndirect`] (one level only). A bad
    /// `bytes` is a decode fault ([`FaultCode::BadArgument`]); a misaligned or unreachable
    /// buffer faults [`FaultCode::BadAddress`] with `addr`. The
    /// engine may switch queues between the buffer's packets, exactly as between ring
    /// packets; the queue keeps its position in the buffer while it stays in the runlist.
    /// A queue that (re)enters a runlist reloads its read pointer from ring control, which
    /// still points at the INDIRECT, so the buffer restarts from its first packet.
    Indirect { addr: u64, bytes: u64 },
    /// An [`Command::Indirect`] whose buffer runs in the address space rooted at `root` (the
    /// physical address of a root table, as in a queue descriptor's `page_table_base`) with
    /// user privilege: the buffer is fetched there and every address its packets carry is
    /// translated there, exactly as if it ran on a user-mode queue of that process. This is
    /// how a kernel-mode ring runs a process's DMA buffer (DxgkDdiSubmitCommandVirtual)
    /// without giving it the ring's own (system) space. Allowed only on a kernel-mode queue
    /// (on a user-mode queue it faults [`FaultCode::BadArgument`]); `root` 0 or not
    /// table-aligned is a decode fault (`BadArgument`); `bytes` as for INDIRECT.
    IndirectVm { addr: u64, bytes: u64, root: u64 },
    /// Invalidates cached translations of `root` (0: every root), after every earlier packet
    /// of the queue completed. Allowed only on a kernel-mode queue (descriptor without
    /// `QueueFlags::USER_MODE`); on a user-mode queue it faults [`FaultCode::BadArgument`].
    TlbInvalidate { root: u64 },
    /// Writes the packet's `count` data words (1..=[`WRITE_DATA_MAX`], the words after `dst`
    /// in the packet) to `dst`, `dst + 8`, ... with Release stores. Every page of the range is
    /// translated and checked before any word is written: a fault writes nothing. The
    /// decoded command carries only the count; the executor reads the words from the packet.
    WriteData { dst: u64, count: u16 },
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub opcode: Opcode,
    pub flags: u8,
    pub len: u16,
}

/// Builds a header word. Pure bit packing; validity is the decoder's job.
pub const fn header(op: Opcode, flags: u8, len: u16) -> u64 {
    (op as u64) | ((flags as u64) << 8) | ((len as u64) << 16)
}

/// Decodes and validates a header word.
pub fn decode_header(word: u64) -> Result<Header, FaultCode> {
    if word >> 32 != 0 {
        return Err(FaultCode::BadHeader);
    }
    let opcode = Opcode::from_u8((word & 0xFF) as u8).ok_or(FaultCode::BadOpcode)?;
    let flags = ((word >> 8) & 0xFF) as u8;
    let len = ((word >> 16) & 0xFFFF) as u16;
    if !opcode.len_ok(len) {
        return Err(FaultCode::BadLength);
    }
    Ok(Header { opcode, flags, len })
}

/// Decodes a packet whose words are `words` (header first; exactly `header.len` words).
/// Returns a fault for malformed arguments; address ranges are checked by the executor.
pub fn decode(words: &[u64]) -> Result<Command, FaultCode> {
    let first = *words.first().ok_or(FaultCode::BadLength)?;
    let h = decode_header(first)?;
    if words.len() != usize::from(h.len) {
        return Err(FaultCode::BadLength);
    }
    let arg = |i: usize| words.get(i).copied().ok_or(FaultCode::BadLength);
    if h.flags & !allowed_flags(h.opcode) != 0 {
        return Err(FaultCode::BadArgument);
    }
    Ok(match h.opcode {
        Opcode::Nop => Command::Nop { len: h.len },
        Opcode::FenceSignal => Command::FenceSignal {
            flags: h.flags,
            value_addr: arg(1)?,
            value: arg(2)?,
            monitored_addr: arg(3)?,
            report_tag: arg(4)?,
        },
        Opcode::FenceWait => Command::FenceWait {
            addr: arg(1)?,
            value: arg(2)?,
        },
        Opcode::LogWrite => {
            let w = arg(1)?;
            Command::LogWrite {
                log: if h.flags & LOG_SIGNAL != 0 {
                    LogKind::Signal
                } else {
                    LogKind::Wait
                },
                index: (w & 0xFFFF_FFFF) as u32,
                fence_handle: (w >> 32) as u32,
                fence_value: arg(2)?,
            }
        }
        Opcode::Timestamp => Command::Timestamp { addr: arg(1)? },
        Opcode::Progress => Command::Progress {
            irq: h.flags & PROGRESS_IRQ != 0,
            value: arg(1)?,
        },
        Opcode::Copy => {
            let (src, dst, bytes) = (arg(1)?, arg(2)?, arg(3)?);
            check_transfer(bytes)?;
            if ranges_overlap(src, dst, bytes) {
                return Err(FaultCode::BadArgument);
            }
            Command::Copy { src, dst, bytes }
        }
        Opcode::Fill => {
            let (dst, bytes) = (arg(1)?, arg(2)?);
            check_transfer(bytes)?;
            Command::Fill {
                dst,
                bytes,
                pattern: arg(3)?,
            }
        }
        Opcode::Hang => Command::Hang,
        Opcode::Indirect => {
            let (addr, bytes) = (arg(1)?, arg(2)?);
            if !indirect_ok(bytes) {
                return Err(FaultCode::BadArgument);
            }
            Command::Indirect { addr, bytes }
        }
        Opcode::IndirectVm => {
            let (addr, bytes, root) = (arg(1)?, arg(2)?, arg(3)?);
            if !indirect_ok(bytes) {
                return Err(FaultCode::BadArgument);
            }
            if !root_ok(root) {
                return Err(FaultCode::BadArgument);
            }
            Command::IndirectVm { addr, bytes, root }
        }
        Opcode::TlbInvalidate => Command::TlbInvalidate { root: arg(1)? },
        // decode_header checked the length: 3..=2 + WRITE_DATA_MAX.
        Opcode::WriteData => Command::WriteData {
            dst: arg(1)?,
            count: h.len.saturating_sub(2),
        },
    })
}

/// A TLB_INVALIDATE packet for `root` (0: every root).
pub const fn tlb_invalidate(root: u64) -> [u64; 2] {
    [header(Opcode::TlbInvalidate, 0, 2), root]
}

/// Encodes a WRITE_DATA packet writing `data` at `dst` into `out` (no allocation: kernel code
/// uses it to build paging buffers). Returns the words written (`2 + data.len()`), or `None`
/// if `data` is empty or longer than [`WRITE_DATA_MAX`], or `out` is too short.
pub fn write_data(dst: u64, data: &[u64], out: &mut [u64]) -> Option<usize> {
    let count = u16::try_from(data.len()).ok()?;
    if count == 0 || u64::from(count) > WRITE_DATA_MAX {
        return None;
    }
    let n = data.len().checked_add(2)?;
    let dst_words = out.get_mut(..n)?;
    let (head, rest) = dst_words.split_first_mut()?;
    let (addr, body) = rest.split_first_mut()?;
    *head = header(Opcode::WriteData, 0, count.checked_add(2)?);
    *addr = dst;
    body.copy_from_slice(data);
    Some(n)
}

fn check_transfer(bytes: u64) -> Result<(), FaultCode> {
    if !transfer_ok(bytes) {
        return Err(FaultCode::BadArgument);
    }
    Ok(())
}

// The argument rules of `decode`, one function each, so that a checker that validates packets
// without decoding them (the UMD's one-pass store) applies the same ones.

/// The header flags `op` accepts; any other bit set is `BadArgument`.
#[inline]
pub const fn allowed_flags(op: Opcode) -> u8 {
    match op {
        Opcode::FenceSignal => SIGNAL_CONDITIONAL_IRQ | SIGNAL_ALWAYS_IRQ,
        Opcode::LogWrite => LOG_SIGNAL,
        Opcode::Progress => PROGRESS_IRQ,
        _ => 0,
    }
}

/// A FILL or COPY length: non-zero, a multiple of 8, at most [`MAX_TRANSFER`].
#[inline]
pub const fn transfer_ok(bytes: u64) -> bool {
    bytes != 0 && bytes.is_multiple_of(8) && bytes <= MAX_TRANSFER
}

/// An INDIRECT or INDIRECT_VM length: non-zero, a multiple of 8, at most [`MAX_INDIRECT`].
#[inline]
pub const fn indirect_ok(bytes: u64) -> bool {
    bytes != 0 && bytes.is_multiple_of(8) && bytes <= MAX_INDIRECT
}

/// Whether COPY's source and destination ranges overlap (a COPY must not).
#[inline]
pub const fn ranges_overlap(src: u64, dst: u64, bytes: u64) -> bool {
    src < dst.saturating_add(bytes) && dst < src.saturating_add(bytes)
}

/// An INDIRECT_VM page-table root: non-zero and table-aligned.
#[inline]
pub const fn root_ok(root: u64) -> bool {
    root != 0 && root.is_multiple_of(crate::mmu::TABLE_SIZE)
}

impl Command {
    /// Length of the encoded packet in words.
    pub const fn len(&self) -> usize {
        match self {
            Self::Nop { len } => *len as usize,
            Self::FenceSignal { .. } => 5,
            Self::FenceWait { .. } => 3,
            Self::LogWrite { .. } => 3,
            Self::Timestamp { .. } => 2,
            Self::Progress { .. } => 2,
            Self::Copy { .. } | Self::Fill { .. } => 4,
            Self::Hang => 1,
            Self::Indirect { .. } => 3,
            Self::IndirectVm { .. } => 4,
            Self::TlbInvalidate { .. } => 2,
            Self::WriteData { count, .. } => (*count as usize).saturating_add(2),
        }
    }

    /// Always false: every packet has a header word. (Present for clippy's `len` rule.)
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Encodes into `out`, returning the number of words written, or `None` if `out` is too
    /// short, a NOP length is zero or a WRITE_DATA count is outside 1..=[`WRITE_DATA_MAX`].
    /// Padding words of a NOP are written as zero. A WRITE_DATA gets its header and
    /// destination only: its `count` data words (`out[2..2 + count]`) are left as the caller
    /// put them ([`write_data`] encodes a whole packet from a slice).
    pub fn encode(&self, out: &mut [u64]) -> Option<usize> {
        let n = self.len();
        let dst = out.get_mut(..n)?;
        let (head, args) = dst.split_first_mut()?;
        // Every variant's argument words are exactly `args` (a fixed count per variant, so the
        // copy is a few moves, not a call).
        let mut put = |words: &[u64]| {
            if let Some(d) = args.get_mut(..words.len()) {
                d.copy_from_slice(words);
            }
        };
        if let Self::WriteData { count, .. } = *self {
            if count == 0 || u64::from(count) > WRITE_DATA_MAX {
                return None;
            }
        }
        *head = match *self {
            Self::Nop { len } => {
                if len == 0 {
                    return None;
                }
                put(&[]);
                for w in args.iter_mut() {
                    *w = 0;
                }
                header(Opcode::Nop, 0, len)
            }
            Self::FenceSignal {
                flags,
                value_addr,
                value,
                monitored_addr,
                report_tag,
            } => {
                put(&[value_addr, value, monitored_addr, report_tag]);
                header(Opcode::FenceSignal, flags, 5)
            }
            Self::FenceWait { addr, value } => {
                put(&[addr, value]);
                header(Opcode::FenceWait, 0, 3)
            }
            Self::LogWrite {
                log,
                index,
                fence_handle,
                fence_value,
            } => {
                put(&[
                    u64::from(index) | (u64::from(fence_handle) << 32),
                    fence_value,
                ]);
                let flags = if matches!(log, LogKind::Signal) {
                    LOG_SIGNAL
                } else {
                    0
                };
                header(Opcode::LogWrite, flags, 3)
            }
            Self::Timestamp { addr } => {
                put(&[addr]);
                header(Opcode::Timestamp, 0, 2)
            }
            Self::Progress { irq, value } => {
                put(&[value]);
                header(Opcode::Progress, if irq { PROGRESS_IRQ } else { 0 }, 2)
            }
            Self::Copy { src, dst, bytes } => {
                put(&[src, dst, bytes]);
                header(Opcode::Copy, 0, 4)
            }
            Self::Fill {
                dst,
                bytes,
                pattern,
            } => {
                put(&[dst, bytes, pattern]);
                header(Opcode::Fill, 0, 4)
            }
            Self::Hang => header(Opcode::Hang, 0, 1),
            Self::Indirect { addr, bytes } => {
                put(&[addr, bytes]);
                header(Opcode::Indirect, 0, 3)
            }
            Self::IndirectVm { addr, bytes, root } => {
                put(&[addr, bytes, root]);
                header(Opcode::IndirectVm, 0, 4)
            }
            Self::TlbInvalidate { root } => {
                put(&[root]);
                header(Opcode::TlbInvalidate, 0, 2)
            }
            Self::WriteData { dst, count } => {
                if let Some(a) = args.first_mut() {
                    *a = dst;
                }
                header(Opcode::WriteData, 0, count.saturating_add(2))
            }
        };
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_signal_value_word_holds_the_value() {
        let mut w = [0u64; 5];
        let c = Command::FenceSignal {
            flags: SIGNAL_CONDITIONAL_IRQ,
            value_addr: 0x1000,
            value: 0xABCD,
            monitored_addr: 0x2000,
            report_tag: 7,
        };
        assert_eq!(
            c.encode(&mut w),
            Opcode::FenceSignal.fixed_len().map(usize::from)
        );
        assert_eq!(w[FENCE_SIGNAL_VALUE_WORD], 0xABCD);
    }

    fn all() -> Vec<Command> {
        vec![
            Command::Nop { len: 3 },
            Command::FenceSignal {
                flags: SIGNAL_CONDITIONAL_IRQ,
                value_addr: 0x1000,
                value: 42,
                monitored_addr: 0x2000,
                report_tag: 7,
            },
            Command::FenceWait {
                addr: 0x1000,
                value: 41,
            },
            Command::LogWrite {
                log: LogKind::Signal,
                index: 9,
                fence_handle: 0x4000_0001,
                fence_value: 5,
            },
            Command::Timestamp { addr: 0x3000 },
            Command::Progress {
                irq: true,
                value: 11,
            },
            Command::Copy {
                src: 0x1000,
                dst: 0x9000,
                bytes: 64,
            },
            Command::Fill {
                dst: 0x9000,
                bytes: 4096,
                pattern: 0xAB,
            },
            Command::Hang,
            Command::Indirect {
                addr: 0x8000,
                bytes: 64,
            },
            Command::Indirect {
                addr: 0x8000,
                bytes: MAX_INDIRECT,
            },
            Command::IndirectVm {
                addr: 0x8000,
                bytes: 64,
                root: 0x5000,
            },
            Command::IndirectVm {
                addr: 0x7fff_f000,
                bytes: MAX_INDIRECT,
                root: 0x0000_00ff_ffff_f000,
            },
            Command::TlbInvalidate { root: 0x5000 },
            Command::TlbInvalidate { root: 0 },
            Command::WriteData {
                dst: 0x7000,
                count: 3,
            },
        ]
    }

    #[test]
    fn every_command_round_trips() {
        for c in all() {
            let mut buf = [0u64; 8];
            let n = c.encode(&mut buf).unwrap();
            assert_eq!(n, c.len());
            assert_eq!(decode(&buf[..n]).unwrap(), c, "{c:?}");
        }
    }

    #[test]
    fn malformed_packets_fault() {
        assert_eq!(decode_header(0xFF), Err(FaultCode::BadOpcode));
        assert_eq!(
            decode_header(header(Opcode::FenceWait, 0, 2)),
            Err(FaultCode::BadLength)
        );
        assert_eq!(
            decode_header(header(Opcode::Nop, 0, 0)),
            Err(FaultCode::BadLength)
        );
        assert_eq!(
            decode_header(header(Opcode::Hang, 0, 1) | 1 << 40),
            Err(FaultCode::BadHeader)
        );
        let fill = [header(Opcode::Fill, 0, 4), 0x1000, 12, 0];
        assert_eq!(
            decode(&fill),
            Err(FaultCode::BadArgument),
            "not a multiple of 8"
        );
        let copy = [header(Opcode::Copy, 0, 4), 0x1000, 0x1008, 64];
        assert_eq!(decode(&copy), Err(FaultCode::BadArgument), "overlap");
        let sig = [header(Opcode::FenceSignal, 0x80, 5), 0, 0, 0, 0];
        assert_eq!(decode(&sig), Err(FaultCode::BadArgument), "unknown flag");
        let wait = [header(Opcode::FenceWait, 1, 3), 0x1000, 1];
        assert_eq!(
            decode(&wait),
            Err(FaultCode::BadArgument),
            "flags on a flagless opcode"
        );
        assert_eq!(decode(&[]), Err(FaultCode::BadLength));
    }

    #[test]
    fn indirect_encoding_and_argument_checks() {
        let ind = |flags: u8, bytes: u64| [header(Opcode::Indirect, flags, 3), 0x8000, bytes];
        assert_eq!(Opcode::from_u8(0x09), Some(Opcode::Indirect));
        assert_eq!(Opcode::Indirect.fixed_len(), Some(3));
        let mut buf = [0u64; 3];
        let c = Command::Indirect {
            addr: 0x8000,
            bytes: 24,
        };
        assert_eq!(c.encode(&mut buf), Some(3));
        assert_eq!(buf, ind(0, 24), "header, address, size");
        assert_eq!(
            decode(&ind(0, 8)),
            Ok(Command::Indirect {
                addr: 0x8000,
                bytes: 8
            })
        );
        assert_eq!(decode(&ind(0, 0)), Err(FaultCode::BadArgument), "empty");
        assert_eq!(
            decode(&ind(0, 12)),
            Err(FaultCode::BadArgument),
            "not words"
        );
        assert_eq!(
            decode(&ind(0, MAX_INDIRECT + 8)),
            Err(FaultCode::BadArgument),
            "too big"
        );
        assert_eq!(decode(&ind(1, 8)), Err(FaultCode::BadArgument), "flags");
        assert_eq!(
            decode_header(header(Opcode::Indirect, 0, 2)),
            Err(FaultCode::BadLength)
        );
        // The address is the executor's business (alignment and reachability).
        let odd = [header(Opcode::Indirect, 0, 3), 0x8004, 8];
        assert_eq!(
            decode(&odd),
            Ok(Command::Indirect {
                addr: 0x8004,
                bytes: 8
            })
        );
    }

    #[test]
    fn indirect_vm_encoding_round_trips() {
        assert_eq!(Opcode::from_u8(0x0C), Some(Opcode::IndirectVm));
        assert_eq!(Opcode::IndirectVm as u8, 0x0C);
        assert_eq!(Opcode::IndirectVm.fixed_len(), Some(4));
        let c = Command::IndirectVm {
            addr: 0x1_2345_6000,
            bytes: 24,
            root: 0x9000,
        };
        assert_eq!(c.len(), 4);
        let mut buf = [0u64; 4];
        assert_eq!(c.encode(&mut buf), Some(4));
        assert_eq!(
            buf,
            [header(Opcode::IndirectVm, 0, 4), 0x1_2345_6000, 24, 0x9000],
            "header, address, size, root"
        );
        assert_eq!(buf[0], 0x0004_000C, "opcode 0x0C, no flags, length 4");
        assert_eq!(decode(&buf), Ok(c));
        // The smallest and the largest buffer.
        for bytes in [8, MAX_INDIRECT] {
            let w = [header(Opcode::IndirectVm, 0, 4), 0x8000, bytes, 0x9000];
            assert_eq!(
                decode(&w),
                Ok(Command::IndirectVm {
                    addr: 0x8000,
                    bytes,
                    root: 0x9000
                }),
                "bytes {bytes}"
            );
        }
        // The buffer address is the executor's business, as for INDIRECT.
        let odd = [header(Opcode::IndirectVm, 0, 4), 0x8004, 8, 0x9000];
        assert_eq!(
            decode(&odd),
            Ok(Command::IndirectVm {
                addr: 0x8004,
                bytes: 8,
                root: 0x9000
            })
        );
        // Too short an output buffer.
        assert_eq!(c.encode(&mut [0u64; 3]), None);
    }

    #[test]
    fn indirect_vm_decode_faults() {
        let ivm = |flags: u8, bytes: u64, root: u64| {
            [header(Opcode::IndirectVm, flags, 4), 0x8000, bytes, root]
        };
        let bad = |w: [u64; 4], why: &str| {
            assert_eq!(decode(&w), Err(FaultCode::BadArgument), "{why}");
        };
        bad(ivm(0, 8, 0), "root 0 (identity is not a process space)");
        bad(ivm(0, 8, 0x9008), "root not 4 KiB aligned");
        bad(ivm(0, 8, 0x9800), "root only 2 KiB aligned");
        bad(ivm(0, 8, 1), "root odd");
        bad(ivm(0, 0, 0x9000), "empty buffer");
        bad(ivm(0, 12, 0x9000), "bytes not a multiple of 8");
        bad(ivm(0, 4, 0x9000), "bytes below a word");
        bad(ivm(0, MAX_INDIRECT + 8, 0x9000), "bytes > MAX_INDIRECT");
        bad(ivm(0, !7, 0x9000), "huge bytes");
        bad(ivm(1, 8, 0x9000), "flags on a flagless opcode");
        bad(ivm(0x80, 8, 0x9000), "flags on a flagless opcode");
        // Any multiple of mmu::TABLE_SIZE is a root, however high.
        assert!(decode(&ivm(0, 8, crate::mmu::TABLE_SIZE)).is_ok());
        assert!(decode(&ivm(0, 8, !(crate::mmu::TABLE_SIZE - 1))).is_ok());
        // Length: exactly 4 words.
        for len in [0u16, 1, 2, 3, 5, 6] {
            assert_eq!(
                decode_header(header(Opcode::IndirectVm, 0, len)),
                Err(FaultCode::BadLength),
                "len {len}"
            );
        }
        // A packet whose header says 4 but is given 3 words.
        assert_eq!(
            decode(&[header(Opcode::IndirectVm, 0, 4), 0x8000, 8]),
            Err(FaultCode::BadLength)
        );
        // Reserved header bits still fault first.
        assert_eq!(
            decode(&[
                header(Opcode::IndirectVm, 0, 4) | 1 << 40,
                0x8000,
                8,
                0x9000
            ]),
            Err(FaultCode::BadHeader)
        );
    }

    #[test]
    fn tlb_invalidate_and_write_data_encoding() {
        assert_eq!(Opcode::from_u8(0x0A), Some(Opcode::TlbInvalidate));
        assert_eq!(Opcode::from_u8(0x0B), Some(Opcode::WriteData));
        assert_eq!(
            decode(&tlb_invalidate(0x9000)),
            Ok(Command::TlbInvalidate { root: 0x9000 })
        );
        let mut buf = [0u64; 600];
        let data: Vec<u64> = (0..WRITE_DATA_MAX).collect();
        let n = write_data(0x7000, &data, &mut buf).unwrap();
        assert_eq!(n, 511);
        assert_eq!(
            decode(&buf[..n]),
            Ok(Command::WriteData {
                dst: 0x7000,
                count: 509
            })
        );
        assert_eq!(&buf[2..n], &data[..]);
        assert_eq!(write_data(0x7000, &[], &mut buf), None, "empty");
        let too_many: Vec<u64> = (0..=WRITE_DATA_MAX).collect();
        assert_eq!(write_data(0x7000, &too_many, &mut buf), None, "too many");
        assert_eq!(write_data(0x7000, &[1, 2], &mut [0u64; 3]), None, "short");
        for len in [0u16, 1, 2, 512] {
            assert_eq!(
                decode_header(header(Opcode::WriteData, 0, len)),
                Err(FaultCode::BadLength),
                "len {len}"
            );
        }
        assert_eq!(
            decode_header(header(Opcode::TlbInvalidate, 0, 3)),
            Err(FaultCode::BadLength)
        );
        assert_eq!(
            decode(&[header(Opcode::WriteData, 1, 3), 0, 0]),
            Err(FaultCode::BadArgument),
            "flags"
        );
        assert_eq!(
            Command::WriteData { dst: 0, count: 510 }.encode(&mut buf),
            None
        );
    }

    #[test]
    fn encode_refuses_short_buffers() {
        let mut buf = [0u64; 2];
        assert_eq!(
            Command::FenceWait { addr: 0, value: 0 }.encode(&mut buf),
            None
        );
        assert_eq!(Command::Nop { len: 0 }.encode(&mut buf), None);
    }
}
