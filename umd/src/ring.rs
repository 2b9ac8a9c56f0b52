//! The UMD's ring writer (user-mode submission, UM-16/UM-19 building block).
//!
//! A hardware queue's ring is an array of 64-bit words the CMP reads at `ptr % size`
//! (docs/hardware.md, "Rings"). The writer keeps a free-running byte write pointer, appends
//! packets word by word (packets may wrap at the end of the ring), and never overwrites
//! commands the CMP has not consumed: free space is `size - (write_ptr - read_ptr)`, from the
//! read pointer the CMP publishes in ring control. Publishing stores the write pointer into
//! ring control with Release ordering; ringing the doorbell afterwards is the caller's job
//! (the doorbell write is the publication point the device acts on).
//!
//! The memory behind the ring differs between Windows (a mapped allocation) and the simulation
//! (the emulated machine's memory), so it is reached through [`RingMemory`].

use rvgpu_hw::cmd::{header, Command, Opcode};
use rvgpu_hw::queue::{ring_free, RING_MAX, RING_MIN};

use crate::packets::{Packets, Refused, WordBudget, WordSink};

/// Calls `put` with each encoded word of `cmd` (long NOP padding included); `false` if the
/// command does not encode (a zero-length NOP).
pub(crate) fn for_each_word(cmd: &Command, mut put: impl FnMut(u64)) -> bool {
    let mut buf = [0u64; 8];
    match cmd.encode(&mut buf) {
        Some(n) => {
            for w in buf.iter().take(n) {
                put(*w);
            }
            true
        }
        // Only padding NOPs are longer than the buffer: header, then zeros.
        None => match cmd {
            Command::Nop { len } if *len > 0 => {
                put(header(Opcode::Nop, 0, *len));
                for _ in 1..*len {
                    put(0);
                }
                true
            }
            _ => false,
        },
    }
}

/// Access to one ring and its ring control.
pub trait RingMemory {
    /// Stores `value` at word `index` of the ring (`index` < ring words).
    fn store_word(&self, index: u64, value: u64);
    /// Whether [`store_run`](Self::store_run) is cheaper than word by word (a mapping that
    /// checks its bound once per run); otherwise packets go out word by word.
    const RUNS: bool = false;
    /// Stores at most `len` items of `words` at words `index..index + len` of the ring (the
    /// caller splits a packet at the ring's end). Default: word by word; a mapped ring
    /// overrides it to check its bound once per run rather than once per word.
    #[inline(always)]
    fn store_run(&self, index: u64, len: usize, words: impl Iterator<Item = u64>) {
        let mut i = index;
        for w in words.take(len) {
            self.store_word(i, w);
            i = i.wrapping_add(1);
        }
    }
    /// Loads the CMP's read pointer from ring control (Acquire: the CMP is done with the words
    /// before it).
    fn load_read_ptr(&self) -> u64;
    /// Stores the write pointer into ring control (Release: the words before it are visible
    /// to the CMP first).
    fn store_write_ptr(&self, value: u64);
}

/// Why a write was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// Not enough free space: the caller waits for the CMP (or its progress fence) and retries.
    Full,
    /// Ring control is inconsistent (read pointer ahead of the write pointer, or more than a
    /// ring behind): the queue is unusable.
    Corrupt,
    /// The ring size is not a power of two in `RING_MIN..=RING_MAX`.
    BadSize,
}

/// Appends packets to one ring.
#[derive(Debug)]
pub struct RingWriter<M: RingMemory> {
    mem: M,
    size: u32,
    /// Ring words - 1: the ring is a power of two, so a word index is a mask, not a divide.
    mask: u64,
    write_ptr: u64,
    /// The read pointer last loaded from ring control. The CMP only moves it forward, so free
    /// space computed from it is never more than the real free space: the hot path
    /// ([`reserve`](Self::reserve)) loads ring control again only when this says "full".
    read_ptr: u64,
}

impl<M: RingMemory> RingWriter<M> {
    /// A writer for a ring of `size` bytes whose write pointer currently is `write_ptr`.
    pub fn new(mem: M, size: u32, write_ptr: u64) -> Result<Self, RingError> {
        if !size.is_power_of_two() || !(RING_MIN..=RING_MAX).contains(&size) {
            return Err(RingError::BadSize);
        }
        if !write_ptr.is_multiple_of(8) {
            return Err(RingError::Corrupt);
        }
        Ok(Self {
            mem,
            size,
            mask: u64::from(size / 8).wrapping_sub(1),
            write_ptr,
            // Unknown until loaded: assume a full ring, which is never more room than there is.
            read_ptr: write_ptr.saturating_sub(u64::from(size)),
        })
    }

    /// The (unpublished) write pointer.
    pub fn write_ptr(&self) -> u64 {
        self.write_ptr
    }

    /// Free bytes, from the CMP's current read pointer (loaded now, and remembered).
    pub fn free(&mut self) -> Result<u64, RingError> {
        let read = self.mem.load_read_ptr();
        let free = ring_free(self.size, read, self.write_ptr).ok_or(RingError::Corrupt)?;
        // Never backwards: a read pointer that moved back is caught by the check above only
        // if it falls behind the ring; keeping the larger one keeps the cache conservative.
        self.read_ptr = self.read_ptr.max(read);
        Ok(free)
    }

    /// Whether `bytes` fit, from the remembered read pointer first and ring control only when
    /// that says they do not (most submissions load nothing).
    pub fn reserve(&mut self, bytes: u64) -> Result<bool, RingError> {
        let cached = ring_free(self.size, self.read_ptr, self.write_ptr).unwrap_or(0);
        if cached >= bytes {
            return Ok(true);
        }
        Ok(self.free()? >= bytes)
    }

    fn store(&mut self, word: u64) {
        let index = (self.write_ptr / 8) & self.mask;
        self.mem.store_word(index, word);
        self.write_ptr = self.write_ptr.wrapping_add(8);
    }

    /// Appends `cmd`, or refuses with [`RingError::Full`] having written nothing.
    pub fn push(&mut self, cmd: &Command) -> Result<(), RingError> {
        self.push_all(core::slice::from_ref(cmd))
    }

    /// Appends all of `cmds` or none of them (the read pointer is read once).
    pub fn push_all(&mut self, cmds: &[Command]) -> Result<(), RingError> {
        let bytes = Self::bytes_of(cmds)?;
        if bytes > self.free()? {
            return Err(RingError::Full);
        }
        if cmds.iter().any(|c| matches!(c, Command::Nop { len: 0 })) {
            return Err(RingError::Full);
        }
        for c in cmds {
            for_each_word(c, |w| self.store(w));
        }
        Ok(())
    }

    /// Appends all of `cmds` and then the pre-encoded words of `tail` (the batch's closing
    /// packet), `bytes` long together as the caller computed, or nothing: `Ok(false)` when
    /// the room is not there, checked with [`reserve`](Self::reserve) (the submission hot
    /// path: one batch and its closing PROGRESS, usually without loading ring control). Never
    /// writes past `bytes` from the write pointer: each packet is checked against what is left
    /// before any of its words is stored; if the commands turn out longer, the write pointer
    /// goes back and the batch is refused with [`RingError::Full`] (what was stored lies in
    /// reserved, unpublished space).
    pub fn push_batch(
        &mut self,
        cmds: &[Command],
        tail: &[u64],
        bytes: u64,
    ) -> Result<bool, RingError> {
        if !self.reserve(bytes)? {
            return Ok(false);
        }
        let start = self.write_ptr;
        let mut room = bytes / 8;
        for c in cmds {
            if !self.push_within(c, &mut room) {
                self.write_ptr = start;
                return Err(RingError::Full);
            }
        }
        if tail.len() as u64 > room {
            self.write_ptr = start;
            return Err(RingError::Full);
        }
        self.store_all(tail);
        Ok(true)
    }

    /// Stores `words` from the write pointer (the caller checked the room).
    #[inline]
    fn store_all(&mut self, words: &[u64]) {
        let mut ptr = self.write_ptr;
        for &w in words {
            self.mem.store_word((ptr / 8) & self.mask, w);
            ptr = ptr.wrapping_add(8);
        }
        self.write_ptr = ptr;
    }

    /// Stores `cmd` if its words fit in `room` (words), taking them from it; `false` (nothing
    /// stored) if they do not or the command does not encode.
    #[inline]
    fn push_within(&mut self, cmd: &Command, room: &mut u64) -> bool {
        let mut buf = [0u64; 8];
        match cmd.encode(&mut buf) {
            Some(n) => {
                let Some(words) = buf.get(..n) else {
                    return false;
                };
                let Some(left) = room.checked_sub(n as u64) else {
                    return false;
                };
                *room = left;
                self.store_all(words);
                true
            }
            // Only padding NOPs are longer than the buffer: header, then zeros.
            None => match *cmd {
                Command::Nop { len } if len > 0 => {
                    let Some(left) = room.checked_sub(u64::from(len)) else {
                        return false;
                    };
                    *room = left;
                    self.store(header(Opcode::Nop, 0, len));
                    for _ in 1..len {
                        self.store(0);
                    }
                    true
                }
                _ => false,
            },
        }
    }

    /// Free bytes by the read pointer last loaded (no load of ring control): never more than
    /// the real free space.
    #[inline]
    pub fn known_free(&self) -> u64 {
        ring_free(self.size, self.read_ptr, self.write_ptr).unwrap_or(0)
    }

    /// Appends the packets of `batch`, validated as they are stored (one pass), and then the
    /// pre-encoded words of `tail` (the batch's closing packet), all within `room` bytes from
    /// the write pointer, or nothing: on a refusal the write pointer stays where it was (the
    /// words stored lie in free, unpublished space). `room` must not exceed the free space
    /// ([`known_free`](Self::known_free), or what [`reserve`](Self::reserve) accepted).
    #[inline]
    pub fn push_packets<P: Packets + ?Sized>(
        &mut self,
        batch: &P,
        tail: &[u64],
        room: u64,
    ) -> Result<(), Refused> {
        let mut sink = RingSink {
            mem: &self.mem,
            mask: self.mask,
            ptr: self.write_ptr,
            budget: WordBudget::new(room / 8),
        };
        batch.store(&mut sink)?;
        if !sink.packet(tail) {
            return Err(Refused::Room);
        }
        self.write_ptr = sink.ptr;
        Ok(())
    }

    fn bytes_of(cmds: &[Command]) -> Result<u64, RingError> {
        let total: usize = cmds.iter().map(Command::len).sum();
        Ok(u64::try_from(total)
            .map_err(|_| RingError::Full)?
            .saturating_mul(8))
    }

    /// Makes everything pushed so far visible to the CMP; returns the write pointer, the
    /// value a dedicated doorbell is rung with.
    pub fn publish(&mut self) -> u64 {
        self.mem.store_write_ptr(self.write_ptr);
        self.write_ptr
    }
}

/// Stores words from a write pointer into a ring, within a budget of words.
struct RingSink<'a, M: RingMemory> {
    mem: &'a M,
    mask: u64,
    ptr: u64,
    budget: WordBudget,
}

impl<M: RingMemory> RingSink<'_, M> {
    #[inline(always)]
    fn store(&mut self, word: u64) {
        // A ring's words fit in 32 bits (its size is a `u32` of bytes, `mask` < 2^29): as a
        // `u32` the index lets the compiler drop the store's overflow check on the offset.
        let index = (self.ptr / 8) as u32 & self.mask as u32;
        self.mem.store_word(u64::from(index), word);
        self.ptr = self.ptr.wrapping_add(8);
    }

    /// Stores a packet of `len` words from the write pointer, `part(a, b)` giving its words
    /// `a..b`: one run up to the ring's end and, for a packet that wraps, a second from word 0
    /// (the caller took `len` from the budget, so the second never reaches the first).
    #[inline(always)]
    fn run<I: Iterator<Item = u64>>(&mut self, len: usize, part: impl Fn(usize, usize) -> I) {
        let mask = self.mask as u32;
        let index = (self.ptr / 8) as u32 & mask;
        let to_end = (mask - index) as usize + 1;
        let first = len.min(to_end);
        self.mem.store_run(u64::from(index), first, part(0, first));
        if first < len {
            self.mem.store_run(0, len - first, part(first, len));
        }
        self.ptr = self.ptr.wrapping_add((len as u64).wrapping_mul(8));
    }
}

impl<M: RingMemory> WordSink for RingSink<'_, M> {
    #[inline(always)]
    fn packet(&mut self, words: &[u64]) -> bool {
        if !self.budget.take(words.len() as u64) {
            return false;
        }
        if !M::RUNS {
            for &w in words {
                self.store(w);
            }
            return true;
        }
        self.run(words.len(), |a, b| {
            words.get(a..b).unwrap_or_default().iter().copied()
        });
        true
    }

    #[inline(always)]
    fn pairs(&mut self, dwords: &[u32]) -> bool {
        let len = dwords.len() / 2;
        if !self.budget.take(len as u64) {
            return false;
        }
        if !M::RUNS {
            for p in dwords.chunks_exact(2) {
                self.store(crate::packets::pair(p, 0).unwrap_or(0));
            }
            return true;
        }
        self.run(len, |a, b| {
            dwords
                .get(2 * a..2 * b)
                .unwrap_or_default()
                .chunks_exact(2)
                .map(|p| crate::packets::pair(p, 0).unwrap_or(0))
        });
        true
    }

    #[inline(always)]
    fn nop(&mut self, len: u16) -> bool {
        if !self.budget.take(u64::from(len)) {
            return false;
        }
        self.store(header(Opcode::Nop, 0, len));
        for _ in 1..len {
            self.store(0);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::RefCell;
    use rvgpu_hw::cmd::decode;

    /// Host memory standing in for the ring and ring control.
    struct Mem {
        words: RefCell<Vec<u64>>,
        read_ptr: RefCell<u64>,
        write_ptr: RefCell<u64>,
        read_ptr_loads: RefCell<u32>,
    }

    impl RingMemory for &Mem {
        fn store_word(&self, index: u64, value: u64) {
            self.words.borrow_mut()[index as usize] = value;
        }
        fn load_read_ptr(&self) -> u64 {
            *self.read_ptr_loads.borrow_mut() += 1;
            *self.read_ptr.borrow()
        }
        fn store_write_ptr(&self, value: u64) {
            *self.write_ptr.borrow_mut() = value;
        }
    }

    fn mem(size: u32) -> Mem {
        Mem {
            words: RefCell::new(vec![0; size as usize / 8]),
            read_ptr: RefCell::new(0),
            write_ptr: RefCell::new(0),
            read_ptr_loads: RefCell::new(0),
        }
    }

    /// A closing PROGRESS packet's words.
    fn progress_words(value: u64) -> [u64; 2] {
        let mut w = [0; 2];
        Command::Progress { irq: true, value }
            .encode(&mut w)
            .unwrap();
        w
    }

    /// Reads the packet at byte pointer `ptr` as the CMP does (wrapping at the ring's end).
    fn read_packet(m: &Mem, ptr: u64, len: usize) -> Vec<u64> {
        let w = m.words.borrow();
        let n = w.len() as u64;
        (0..len as u64)
            .map(|i| w[((ptr / 8 + i) % n) as usize])
            .collect()
    }

    #[test]
    fn packets_wrap_at_the_ring_end_and_decode() {
        let m = mem(256);
        // Start 16 bytes before the end so a 5-word signal wraps.
        *m.read_ptr.borrow_mut() = 240;
        let mut r = RingWriter::new(&m, 256, 240).unwrap();
        let sig = Command::FenceSignal {
            flags: 0,
            value_addr: 0x1000,
            value: 7,
            monitored_addr: 0x2000,
            report_tag: 1,
        };
        r.push(&sig).unwrap();
        assert_eq!(r.publish(), 280);
        assert_eq!(*m.write_ptr.borrow(), 280, "published");
        assert_eq!(decode(&read_packet(&m, 240, 5)).unwrap(), sig);
    }

    #[test]
    fn never_overwrites_unconsumed_commands() {
        let m = mem(256);
        let mut r = RingWriter::new(&m, 256, 0).unwrap();
        let wait = Command::FenceWait {
            addr: 0x1000,
            value: 1,
        };
        for _ in 0..10 {
            r.push(&wait).unwrap(); // 10 x 24 = 240 bytes
        }
        assert_eq!(r.free(), Ok(16));
        let before = m.words.borrow().clone();
        assert_eq!(r.push(&wait), Err(RingError::Full));
        assert_eq!(*m.words.borrow(), before, "a refused push writes nothing");
        assert_eq!(
            r.push_all(&[Command::Nop { len: 1 }, wait]),
            Err(RingError::Full)
        );
        assert_eq!(*m.words.borrow(), before, "all or nothing");
        // The CMP consumes two packets: room again.
        *m.read_ptr.borrow_mut() = 48;
        r.push(&wait).unwrap();
        assert_eq!(r.free(), Ok(40));
    }

    #[test]
    fn long_nop_padding_and_corrupt_ring_control() {
        let m = mem(256);
        let mut r = RingWriter::new(&m, 256, 0).unwrap();
        r.push(&Command::Nop { len: 12 }).unwrap();
        assert_eq!(
            decode(&read_packet(&m, 0, 12)).unwrap(),
            Command::Nop { len: 12 }
        );
        *m.read_ptr.borrow_mut() = 200; // ahead of the write pointer
        assert_eq!(r.free(), Err(RingError::Corrupt));
        assert_eq!(r.push(&Command::Hang), Err(RingError::Corrupt));
        assert_eq!(RingWriter::new(&m, 100, 0).err(), Some(RingError::BadSize));
        assert_eq!(RingWriter::new(&m, 256, 4).err(), Some(RingError::Corrupt));
    }

    /// UMD hot path: a batch that fits by the read pointer the writer last loaded
    /// loads nothing from ring control; ring control is loaded again only when the remembered
    /// pointer says the ring is too full, and the writer never overwrites unconsumed words.
    #[test]
    fn push_batch_loads_the_read_pointer_only_when_the_ring_looks_full() {
        let m = mem(256);
        let mut r = RingWriter::new(&m, 256, 0).unwrap();
        let fill = Command::Fill {
            dst: 0x1000,
            bytes: 64,
            pattern: 1,
        };
        let tail = progress_words(1);
        let bytes = 8 * (fill.len() + tail.len()) as u64;
        // A writer starting at 0 knows the ring is empty; the pushes fit by that.
        while r.write_ptr() + bytes <= 256 {
            assert_eq!(r.push_batch(&[fill], &tail, bytes), Ok(true));
        }
        assert_eq!(*m.read_ptr_loads.borrow(), 0, "no load while it fits");
        // Full by the remembered pointer and by ring control: one load, refused, nothing
        // written.
        let before = m.words.borrow().clone();
        assert_eq!(r.push_batch(&[fill], &tail, bytes), Ok(false));
        assert_eq!(*m.read_ptr_loads.borrow(), 1);
        assert_eq!(*m.words.borrow(), before);
        // The CMP consumed everything: the next push loads once and goes in.
        *m.read_ptr.borrow_mut() = r.write_ptr();
        assert_eq!(r.push_batch(&[fill], &tail, bytes), Ok(true));
        assert_eq!(*m.read_ptr_loads.borrow(), 2);
        assert_eq!(
            decode(&read_packet(&m, r.write_ptr() - bytes, fill.len())).unwrap(),
            fill
        );
    }

    /// `push_batch` never stores past the bytes the caller reserved, even if the commands are
    /// longer than it said: the write pointer goes back and the batch is refused.
    #[test]
    fn push_batch_never_writes_past_the_reserved_bytes() {
        let m = mem(256);
        *m.read_ptr.borrow_mut() = 0;
        let mut r = RingWriter::new(&m, 256, 0).unwrap();
        let tail = progress_words(1);
        let fill = Command::Fill {
            dst: 0x1000,
            bytes: 64,
            pattern: 1,
        };
        // One word short.
        let bytes = 8 * (fill.len() + tail.len()) as u64 - 8;
        assert_eq!(r.push_batch(&[fill], &tail, bytes), Err(RingError::Full));
        assert_eq!(r.write_ptr(), 0);
        assert!(m.words.borrow()[(bytes / 8) as usize..]
            .iter()
            .all(|w| *w == 0));
    }

    /// Ring memory that records each run it is given (its bound checked once per run).
    struct RunMem {
        words: RefCell<Vec<u64>>,
        runs: RefCell<Vec<(u64, usize)>>,
    }

    impl RingMemory for &RunMem {
        const RUNS: bool = true;
        fn store_word(&self, _: u64, _: u64) {
            panic!("a packet is stored as runs, not word by word");
        }
        fn store_run(&self, index: u64, len: usize, words: impl Iterator<Item = u64>) {
            self.runs.borrow_mut().push((index, len));
            let mut w = self.words.borrow_mut();
            for (k, v) in words.take(len).enumerate() {
                w[index as usize + k] = v;
            }
        }
        fn load_read_ptr(&self) -> u64 {
            0
        }
        fn store_write_ptr(&self, _: u64) {}
    }

    /// UM-16 (the ring append): each packet, given as words or as dword pairs, reaches the
    /// ring memory as one run of contiguous words, or two where it wraps at the ring's end
    /// (its end, then word 0), so a mapped ring checks its bound once per run; the words
    /// land where the CMP reads them.
    #[test]
    fn um_16_packets_reach_ring_memory_as_one_run_or_two_at_the_wrap() {
        let fill = Command::Fill {
            dst: 0x1000,
            bytes: 64,
            pattern: 1,
        };
        let tail = progress_words(9);
        let mut enc = [0u64; 8];
        let n = fill.encode(&mut enc).unwrap();
        let dwords: Vec<u32> = enc[..n]
            .iter()
            .flat_map(|w| [*w as u32, (*w >> 32) as u32])
            .collect();
        for batch in [&[fill][..], &[]] {
            let m = RunMem {
                words: RefCell::new(vec![0; 32]),
                runs: RefCell::new(Vec::new()),
            };
            // Two words before the end: the FILL wraps, the PROGRESS follows from word 2.
            let start = 256 - 16;
            let mut r = RingWriter::new(&m, 256, start).unwrap();
            let d = crate::packets::Dwords(&dwords);
            let stored = if batch.is_empty() {
                r.push_packets(&d, &tail, 256)
            } else {
                r.push_packets(batch, &tail, 256)
            };
            assert_eq!(stored, Ok(()));
            let what = if batch.is_empty() { "pairs" } else { "words" };
            assert_eq!(
                *m.runs.borrow(),
                [(30, 2), (0, n - 2), ((n - 2) as u64, 2)],
                "{what}"
            );
            let w = m.words.borrow();
            let read: Vec<u64> = (0..n).map(|i| w[(30 + i) % 32]).collect();
            assert_eq!(decode(&read).unwrap(), fill, "{what}");
            assert_eq!(&w[n - 2..n], &tail, "{what}");
            assert_eq!(r.write_ptr(), start + 8 * (n as u64 + 2), "{what}");
        }
    }
}
