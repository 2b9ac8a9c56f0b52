//! A batch's packets as the submitter holds them, checked and stored into the ring in one pass
//! (the user-mode submission hot path): a Rust caller's [`Command`]s, or a C caller's dwords
//! ([`Dwords`], `rvgpu_submit`), whose words are validated packet by packet and copied
//! straight into the ring, with no decoded packet in between.
//!
//! A packet is checked whole before any of its words is stored, and a batch is published
//! only once every packet went in: a refused batch leaves the write pointer where it was
//! (what it stored lies in free, unpublished ring space the CMP never reads).

use alloc::borrow::Cow;
use alloc::vec::Vec;

use rvgpu_hw::cmd::{
    allowed_flags, decode, decode_header, header, indirect_ok, ranges_overlap, root_ok,
    transfer_ok, Command, Header, LogKind, Opcode, LOG_SIGNAL, PROGRESS_IRQ,
};

/// Why a one-pass store stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A packet is malformed, or one the UMD does not pass on (a zero-length NOP, a
    /// WRITE_DATA).
    Bad,
    /// The room given ran out: the caller measures the batch ([`Packets::words`]) and makes
    /// room.
    Room,
}

/// Where a batch's words go, a whole packet at a time: room is checked once per packet, and
/// no word is stored beyond it.
pub trait WordSink {
    /// Stores `words`, one packet; `false` (nothing stored) when they do not fit.
    fn packet(&mut self, words: &[u64]) -> bool;
    /// Stores one packet given as dword pairs, low half first (`dwords.len() / 2` words; an
    /// odd last dword is not stored); `false` (nothing stored) when they do not fit.
    fn pairs(&mut self, dwords: &[u32]) -> bool;
    /// Stores a NOP of `len` words (its header, then zeros); `false` (nothing stored) when it
    /// does not fit.
    fn nop(&mut self, len: u16) -> bool;
}

/// Words a [`WordSink`] may still store.
#[derive(Clone, Copy, Debug)]
pub struct WordBudget {
    room: u64,
}

impl WordBudget {
    /// A budget of `room` words.
    pub fn new(room: u64) -> Self {
        Self { room }
    }

    /// Takes `n` words; `false` (nothing taken) when they do not fit.
    #[inline(always)]
    pub fn take(&mut self, n: u64) -> bool {
        match self.room.checked_sub(n) {
            Some(left) => {
                self.room = left;
                true
            }
            None => false,
        }
    }

    /// Words not yet taken.
    pub fn room(&self) -> u64 {
        self.room
    }
}

/// A batch of packets that can be validated and stored in one pass.
pub trait Packets {
    /// Stores every packet into `out` in order, each validated before its first word is
    /// stored.
    fn store<S: WordSink>(&self, out: &mut S) -> Result<(), Refused>;
    /// The batch's length in words, every packet validated (`Err(Bad)` otherwise).
    fn words(&self) -> Result<u64, Refused>;
    /// The batch's length in words as cheaply as it is known, before anything is stored:
    /// `None` when the batch is surely refused; a batch [`store`](Self::store) accepts is
    /// exactly this long.
    fn size(&self) -> Option<u64>;
    /// The packets decoded (the kernel-mode path copies commands into a command buffer).
    fn commands(&self) -> Result<Cow<'_, [Command]>, Refused>;
}

/// Stores one packet of a fixed-length opcode: its header and the `N - 1` words of `args`.
#[inline(always)]
fn emit<S: WordSink, const N: usize>(
    out: &mut S,
    op: Opcode,
    flags: u8,
    args: [u64; N],
) -> Result<(), Refused> {
    // At most 5 words: the length field holds it.
    let mut words = args;
    if let Some(first) = words.first_mut() {
        *first = header(op, flags, N as u16);
    }
    if out.packet(&words) {
        Ok(())
    } else {
        Err(Refused::Room)
    }
}

/// Stores `c`'s encoded words (the layout of [`Command::encode`]); `Bad` for a command that
/// does not encode whole.
#[inline(always)]
pub(crate) fn store_command<S: WordSink>(c: &Command, out: &mut S) -> Result<(), Refused> {
    match *c {
        Command::Nop { len: 0 } | Command::WriteData { .. } => Err(Refused::Bad),
        Command::Nop { len } => {
            if out.nop(len) {
                Ok(())
            } else {
                Err(Refused::Room)
            }
        }
        Command::FenceSignal {
            flags,
            value_addr,
            value,
            monitored_addr,
            report_tag,
        } => emit(
            out,
            Opcode::FenceSignal,
            flags,
            [0, value_addr, value, monitored_addr, report_tag],
        ),
        Command::FenceWait { addr, value } => emit(out, Opcode::FenceWait, 0, [0, addr, value]),
        Command::LogWrite {
            log,
            index,
            fence_handle,
            fence_value,
        } => emit(
            out,
            Opcode::LogWrite,
            if matches!(log, LogKind::Signal) {
                LOG_SIGNAL
            } else {
                0
            },
            [
                0,
                u64::from(index) | (u64::from(fence_handle) << 32),
                fence_value,
            ],
        ),
        Command::Timestamp { addr } => emit(out, Opcode::Timestamp, 0, [0, addr]),
        Command::Progress { irq, value } => emit(
            out,
            Opcode::Progress,
            if irq { PROGRESS_IRQ } else { 0 },
            [0, value],
        ),
        Command::Copy { src, dst, bytes } => emit(out, Opcode::Copy, 0, [0, src, dst, bytes]),
        Command::Fill {
            dst,
            bytes,
            pattern,
        } => emit(out, Opcode::Fill, 0, [0, dst, bytes, pattern]),
        Command::Hang => emit(out, Opcode::Hang, 0, [0]),
        Command::Indirect { addr, bytes } => emit(out, Opcode::Indirect, 0, [0, addr, bytes]),
        Command::IndirectVm { addr, bytes, root } => {
            emit(out, Opcode::IndirectVm, 0, [0, addr, bytes, root])
        }
        Command::TlbInvalidate { root } => emit(out, Opcode::TlbInvalidate, 0, [0, root]),
    }
}

impl Packets for [Command] {
    // Always inlined: its callers are the submission hot paths, where the sink's offset then
    // stays in a register across the stores.
    #[inline(always)]
    fn store<S: WordSink>(&self, out: &mut S) -> Result<(), Refused> {
        for c in self {
            store_command(c, out)?;
        }
        Ok(())
    }

    fn words(&self) -> Result<u64, Refused> {
        let mut words = 0u64;
        for c in self {
            if matches!(c, Command::Nop { len: 0 } | Command::WriteData { .. }) {
                return Err(Refused::Bad);
            }
            words = words.saturating_add(c.len() as u64);
        }
        Ok(words)
    }

    #[inline]
    fn size(&self) -> Option<u64> {
        self.words().ok()
    }

    fn commands(&self) -> Result<Cow<'_, [Command]>, Refused> {
        self.words()?;
        Ok(Cow::Borrowed(self))
    }
}

/// A C caller's command stream: 64-bit packet words, each as two dwords, low half first
/// (`rvgpu_submit`). A stream is refused ([`Refused::Bad`]) exactly when decoding it packet by
/// packet would fail: an odd dword count, a packet cut short, a header or argument the
/// hardware's decoder refuses, or a WRITE_DATA (its data words belong to the kernel's paging
/// buffers).
#[derive(Clone, Copy, Debug)]
pub struct Dwords<'a>(pub &'a [u32]);

/// The 64-bit word of a (low, high) dword pair at `at` dwords into `d`.
#[inline(always)]
pub(crate) fn pair(d: &[u32], at: usize) -> Option<u64> {
    match d.get(at..at.checked_add(2)?)? {
        &[lo, hi] => Some(u64::from(lo) | (u64::from(hi) << 32)),
        _ => None,
    }
}

/// A packet found in a stream: its header word, header and dwords, and the rest of the
/// stream.
type Packet<'a> = (u64, Header, &'a [u32], &'a [u32]);

/// The packet at the start of `rest` (dwords): its header word, header and dwords, and what
/// follows it; every argument checked as the hardware's decoder checks it.
#[inline(always)]
fn packet(rest: &[u32]) -> Result<Packet<'_>, Refused> {
    let bad = Refused::Bad;
    let first = pair(rest, 0).ok_or(bad)?;
    let h = decode_header(first).map_err(|_| bad)?;
    let (packet, after) = rest.split_at_checked(usize::from(h.len) * 2).ok_or(bad)?;
    let arg = |k: usize| pair(packet, k * 2).ok_or(bad);
    // The hardware decoder's own rules (`rvgpu_hw::cmd`), applied without decoding.
    if h.flags & !allowed_flags(h.opcode) != 0 {
        return Err(bad);
    }
    let ok = match h.opcode {
        // A WRITE_DATA would reach the GPU without the kernel's say (and a `Command` cannot
        // carry its data): the UMD passes none on.
        Opcode::WriteData => false,
        Opcode::Fill => transfer_ok(arg(2)?),
        Opcode::Copy => {
            let (src, dst, bytes) = (arg(1)?, arg(2)?, arg(3)?);
            transfer_ok(bytes) && !ranges_overlap(src, dst, bytes)
        }
        Opcode::Indirect => indirect_ok(arg(2)?),
        Opcode::IndirectVm => {
            let root = arg(3)?;
            indirect_ok(arg(2)?) && root_ok(root)
        }
        _ => true,
    };
    if !ok {
        return Err(bad);
    }
    Ok((first, h, packet, after))
}

impl Dwords<'_> {
    /// The stream's length in words (pairs of dwords).
    #[inline(always)]
    fn len_words(&self) -> Result<usize, Refused> {
        if !self.0.len().is_multiple_of(2) {
            return Err(Refused::Bad);
        }
        Ok(self.0.len() / 2)
    }
}

impl Packets for Dwords<'_> {
    #[inline]
    fn store<S: WordSink>(&self, out: &mut S) -> Result<(), Refused> {
        self.len_words()?;
        let mut rest = self.0;
        while !rest.is_empty() {
            let (_, h, words, after) = packet(rest)?;
            let stored = if h.opcode == Opcode::Nop {
                // Padding goes out as zeros, whatever the caller left in it.
                out.nop(h.len)
            } else {
                out.pairs(words)
            };
            if !stored {
                return Err(Refused::Room);
            }
            rest = after;
        }
        Ok(())
    }

    fn words(&self) -> Result<u64, Refused> {
        let n = self.len_words()?;
        let mut rest = self.0;
        while !rest.is_empty() {
            rest = packet(rest)?.3;
        }
        Ok(n as u64)
    }

    /// Packets tile the stream: a stream `store` accepts is as long as it is.
    #[inline]
    fn size(&self) -> Option<u64> {
        self.len_words().ok().map(|n| n as u64)
    }

    fn commands(&self) -> Result<Cow<'_, [Command]>, Refused> {
        let n = self.len_words()?;
        let mut out = Vec::with_capacity(n.min(16));
        let mut words = Vec::new();
        let mut rest = self.0;
        while !rest.is_empty() {
            let (_, _, packet, after) = packet(rest)?;
            words.clear();
            words.extend(packet.chunks_exact(2).map(|p| pair(p, 0).unwrap_or(0)));
            out.push(decode(&words).map_err(|_| Refused::Bad)?);
            rest = after;
        }
        Ok(Cow::Owned(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use rvgpu_hw::cmd::SIGNAL_CONDITIONAL_IRQ;

    /// A sink into a vector with a word budget.
    struct VecSink {
        words: Vec<u64>,
        room: u64,
    }

    impl WordSink for VecSink {
        fn packet(&mut self, words: &[u64]) -> bool {
            match self.room.checked_sub(words.len() as u64) {
                Some(r) => {
                    self.room = r;
                    self.words.extend_from_slice(words);
                    true
                }
                None => false,
            }
        }
        fn pairs(&mut self, dwords: &[u32]) -> bool {
            let words: Vec<u64> = dwords
                .chunks_exact(2)
                .map(|p| pair(p, 0).unwrap())
                .collect();
            self.packet(&words)
        }
        fn nop(&mut self, len: u16) -> bool {
            match self.room.checked_sub(u64::from(len)) {
                Some(r) => {
                    self.room = r;
                    self.words.push(header(Opcode::Nop, 0, len));
                    self.words.extend((1..len).map(|_| 0));
                    true
                }
                None => false,
            }
        }
    }

    fn stored<P: Packets + ?Sized>(p: &P, room: u64) -> Result<Vec<u64>, Refused> {
        let mut s = VecSink {
            words: Vec::new(),
            room,
        };
        p.store(&mut s).map(|()| s.words)
    }

    fn encoded(cmds: &[Command]) -> Vec<u64> {
        let mut out = Vec::new();
        for c in cmds {
            let mut w = vec![0u64; c.len()];
            assert_eq!(c.encode(&mut w), Some(c.len()), "{c:?}");
            out.extend(w);
        }
        out
    }

    fn every_command() -> Vec<Command> {
        vec![
            Command::Nop { len: 1 },
            Command::Nop { len: 12 },
            Command::FenceSignal {
                flags: SIGNAL_CONDITIONAL_IRQ,
                value_addr: 0x1000,
                value: 42,
                monitored_addr: 0x2000,
                report_tag: 7,
            },
            Command::FenceWait {
                addr: 0x1000,
                value: 3,
            },
            Command::LogWrite {
                log: LogKind::Signal,
                index: 9,
                fence_handle: 0x4000_0002,
                fence_value: 5,
            },
            Command::LogWrite {
                log: LogKind::Wait,
                index: 1,
                fence_handle: 2,
                fence_value: 3,
            },
            Command::Timestamp { addr: 0x3000 },
            Command::Progress {
                irq: true,
                value: 11,
            },
            Command::Progress {
                irq: false,
                value: 12,
            },
            Command::Copy {
                src: 0x1000,
                dst: 0x9000,
                bytes: 64,
            },
            Command::Fill {
                dst: 0x1000,
                bytes: 64,
                pattern: 0x55,
            },
            Command::Hang,
            Command::Indirect {
                addr: 0x8000,
                bytes: 32,
            },
            Command::IndirectVm {
                addr: 0x8000,
                bytes: 32,
                root: rvgpu_hw::mmu::TABLE_SIZE,
            },
            Command::TlbInvalidate { root: 0 },
        ]
    }

    fn dwords_of(words: &[u64]) -> Vec<u32> {
        words
            .iter()
            .flat_map(|w| [*w as u32, (*w >> 32) as u32])
            .collect()
    }

    /// UM-16: a command goes into the ring as exactly the words `Command::encode` gives it,
    /// from a Rust caller's commands and from a C caller's dwords alike.
    #[test]
    fn um_16_every_command_is_stored_as_it_encodes() {
        let cmds = every_command();
        let words = encoded(&cmds);
        assert_eq!(stored(&cmds[..], u64::MAX).unwrap(), words);
        assert_eq!(cmds[..].words(), Ok(words.len() as u64));
        let d = dwords_of(&words);
        assert_eq!(stored(&Dwords(&d), u64::MAX).unwrap(), words);
        assert_eq!(Dwords(&d).words(), Ok(words.len() as u64));
        assert_eq!(Dwords(&d).size(), Some(words.len() as u64));
        assert_eq!(cmds[..].size(), Some(words.len() as u64));
        assert_eq!(Dwords(&d).commands().unwrap().as_ref(), &cmds[..]);
        // Not a word more than the room: a batch one word short is refused for room.
        let short = words.len() as u64 - 1;
        assert_eq!(stored(&cmds[..], short), Err(Refused::Room));
        assert_eq!(stored(&Dwords(&d), short), Err(Refused::Room));
    }

    /// What does not encode whole is refused, in either form.
    #[test]
    fn zero_length_nops_and_write_data_are_refused() {
        for c in [
            Command::Nop { len: 0 },
            Command::WriteData {
                dst: 0x1000,
                count: 1,
            },
        ] {
            let batch = [Command::Hang, c];
            assert_eq!(stored(&batch[..], u64::MAX), Err(Refused::Bad), "{c:?}");
            assert_eq!(batch[..].words(), Err(Refused::Bad));
            assert_eq!(batch[..].commands().err(), Some(Refused::Bad));
        }
        let mut wd = [0u64; 3];
        rvgpu_hw::cmd::write_data(0x3000, &[0xDEAD_BEEF], &mut wd).unwrap();
        let d = dwords_of(&wd);
        assert_eq!(stored(&Dwords(&d), u64::MAX), Err(Refused::Bad));
    }

    /// NOP padding goes out as zeros, as the decoded-and-encoded packet would.
    #[test]
    fn nop_padding_is_stored_as_zeros() {
        let mut words = encoded(&[Command::Nop { len: 3 }]);
        words[1] = 0xAAAA;
        words[2] = 0xBBBB;
        let d = dwords_of(&words);
        assert_eq!(
            stored(&Dwords(&d), u64::MAX).unwrap(),
            encoded(&[Command::Nop { len: 3 }])
        );
    }

    /// Attacker-style: random streams and bit-flipped valid ones. The one-pass check refuses
    /// exactly what decoding packet by packet refuses (the hardware decoder plus the UMD's own
    /// refusals), and what it accepts it stores as the decoded packets encode.
    #[test]
    fn the_one_pass_check_refuses_what_decoding_refuses() {
        let valid = dwords_of(&encoded(&every_command()));
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut accepted = 0;
        for i in 0..20_000 {
            let stream: Vec<u32> = match i % 3 {
                0 => (0..1 + next() % 24).map(|_| next() as u32).collect(),
                // Plausible headers with random arguments.
                1 => (0..1 + next() % 12)
                    .flat_map(|_| {
                        let op = next() % 14;
                        let len = 1 + next() % 6;
                        let flags = if next() % 4 == 0 { next() % 4 } else { 0 };
                        let mut p = vec![op | (flags << 8) | (len << 16)];
                        p.extend((1..len).map(|_| match next() % 4 {
                            0 => 64,
                            1 => next() % 0x10000 * 8,
                            _ => next(),
                        }));
                        dwords_of(&p)
                    })
                    .collect(),
                _ => {
                    let mut s = valid.clone();
                    for _ in 0..1 + next() % 3 {
                        let bit = next() as usize % (32 * s.len());
                        s[bit / 32] ^= 1 << (bit % 32);
                    }
                    if next() % 4 == 0 {
                        s.truncate(next() as usize % s.len());
                    }
                    s
                }
            };
            let d = Dwords(&stream);
            let reference = reference_parse(&stream);
            match &reference {
                Some(cmds) => {
                    accepted += 1;
                    assert_eq!(
                        stored(&d, u64::MAX).as_ref().ok(),
                        Some(&encoded(cmds)),
                        "{stream:x?}"
                    );
                    assert_eq!(d.commands().ok().as_deref(), Some(&cmds[..]));
                }
                None => {
                    assert_eq!(stored(&d, u64::MAX), Err(Refused::Bad), "{stream:x?}");
                    assert_eq!(d.words(), Err(Refused::Bad), "{stream:x?}");
                    assert_eq!(d.commands().err(), Some(Refused::Bad));
                }
            }
        }
        assert!(accepted > 1000, "only {accepted} streams were valid");
    }

    /// Decoding packet by packet with the hardware's decoder, as the C API did before its
    /// streams went into the ring in one pass: the reference the one-pass check must match.
    fn reference_parse(dwords: &[u32]) -> Option<Vec<Command>> {
        if !dwords.len().is_multiple_of(2) {
            return None;
        }
        let words: Vec<u64> = dwords
            .chunks(2)
            .map(|p| u64::from(p[0]) | (u64::from(p[1]) << 32))
            .collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let len = usize::from(decode_header(words[i]).ok()?.len);
            let packet = words.get(i..i + len)?;
            match decode(packet).ok()? {
                Command::WriteData { .. } => return None,
                c => out.push(c),
            }
            i += len;
        }
        Some(out)
    }
}
