//! The event ring: how the device tells the driver what an interrupt was about.
//!
//! The driver programs a ring of [`EventRecord`]s in system memory
//! ([`crate::regs::EVENT_RING_BASE`]). For every occurrence of an interrupt cause the device
//! writes one record at `WPTR % size`, then publishes it by incrementing
//! [`crate::regs::EVENT_RING_WPTR`] (release), then sets the cause bit in `INT_STATUS`.
//! When `WPTR - RPTR == size` the ring is full: the record is dropped and
//! [`crate::regs::IntCause::EVENT_OVERFLOW`] is raised instead.
//!
//! ISR protocol: read `INT_STATUS`; write the bits read to `INT_ACK` *before* draining (a
//! record published during the drain raises its bit again, so nothing is lost); read `WPTR`
//! (acquire); consume records up to it; write `RPTR`.

/// Report tag meaning "this device cannot say which fence" (no exact fence report).
pub const NO_TAG: u64 = u64::MAX;

/// [`EventRecord::flags`] of a FenceSignaled record: the signal had the always-interrupt
/// (legacy monitored fence) flag rather than the conditional one, so the driver reports it as
/// a monitored-fence signal (MF-04) rather than a native one.
pub const FLAG_LEGACY_SIGNAL: u16 = 1 << 0;

/// [`EventRecord::flags`] of a FenceSignaled record: the signal-log `LOG_WRITE` right behind
/// the signal ran as part of it, before the interrupt decision, and logs the value the signal
/// stored. Without it no log holds the signal, whatever queue ran it, so a report that names
/// only the queue would hide it (docs/hardware.md §8.2).
pub const FLAG_LOGGED: u16 = 1 << 1;

wire_enum! {
    /// Kinds of event records.
    pub enum EventKind: u8, from_u8 {
        /// `arg0` report tag (or [`NO_TAG`]), `arg1` value written, `arg2` MonitoredValue address.
        FenceSignaled = 1,
        /// `arg0` progress value, `arg1` ring read pointer after the command.
        Progress = 2,
        /// `arg0` previous [`crate::engine::EngineState`], `arg1` new state.
        EngineState = 3,
        /// `arg0` [`FaultCode`], `arg1` faulting GPU address (0 for decode faults, which have
        /// none), `arg2` read pointer of the faulting packet (the queue's read pointer stays on it;
        /// the packet had no effect).
        Fault = 4,
        /// `arg0` [`crate::engine::ResetResult`], `arg1` aborted queue, `arg2` aborted rptr.
        ResetDone = 5,
        /// The engine's scheduling log reached its interrupt entry ([`crate::schedlog`]):
        /// `arg0` the header value (`AtomicWraparoundAndEntryIndex`) just after that entry was
        /// written; `queue_id` is [`crate::queue::NO_QUEUE`].
        SchedLog = 6,
    }
}

wire_struct! {
    /// One 32-byte record of the event ring.
    #[size(32)]
    pub struct EventRecord {
        /// [`EventKind`] as a byte.
        pub kind: u8,
        /// Engine the event comes from.
        pub engine: u8,
        /// Kind-specific flags ([`FLAG_LEGACY_SIGNAL`]); zero otherwise.
        pub flags: u16,
        /// Queue the event concerns (for fence events: the queue that was running, LOG-08), or
        /// [`crate::queue::NO_QUEUE`].
        pub queue_id: u32,
        pub arg0: u64,
        pub arg1: u64,
        pub arg2: u64,
    }
}

impl EventRecord {
    /// The record as four 64-bit words, in memory order (the device writes words).
    pub fn to_words(&self) -> [u64; 4] {
        let w0 = u64::from(self.kind)
            | (u64::from(self.engine) << 8)
            | (u64::from(self.flags) << 16)
            | (u64::from(self.queue_id) << 32);
        [w0, self.arg0, self.arg1, self.arg2]
    }

    /// Rebuilds a record from four words read from memory.
    pub fn from_words(w: [u64; 4]) -> Self {
        let [w0, arg0, arg1, arg2] = w;
        Self {
            kind: (w0 & 0xFF) as u8,
            engine: ((w0 >> 8) & 0xFF) as u8,
            flags: ((w0 >> 16) & 0xFFFF) as u16,
            queue_id: (w0 >> 32) as u32,
            arg0,
            arg1,
            arg2,
        }
    }
}

wire_enum! {
    /// Why a queue faulted. A faulted queue executes nothing more until its runlist entry is
    /// replaced (the driver recreates it) or the adapter is reset; an engine reset keeps the fault
    /// (docs/hardware.md 10.1). Other queues are unaffected.
    pub enum FaultCode: u32, from_u32 {
        /// Unknown opcode.
        BadOpcode = 1,
        /// Length does not match the opcode, or the packet runs past the write pointer.
        BadLength = 2,
        /// An address outside VRAM and outside every registered system-memory window, or
        /// misaligned.
        BadAddress = 3,
        /// Reserved header bits set.
        BadHeader = 4,
        /// An argument the opcode does not allow (unknown flag, bad size, overlapping copy).
        BadArgument = 5,
        /// Ring control is inconsistent (write pointer behind read pointer, or more than a ring
        /// ahead, or misaligned).
        BadRingControl = 6,
        /// A LOG_WRITE to a queue that has no log of that kind.
        NoLog = 7,
        /// A runlist entry failed [`crate::queue::QueueDescriptor::validate`], or the runlist
        /// could not be read, or two entries share a queue id. `arg1` is the GPU address of the
        /// bad entry (of the runlist if it could not be read); the queue id is the entry's, or
        /// [`crate::queue::NO_QUEUE`].
        BadDescriptor = 8,
        /// An INDIRECT packet inside an indirect buffer (INDIRECT nests one level only,
        /// [`crate::cmd::Command::Indirect`]). `arg1` is 0; `arg2` is the read pointer of the
        /// ring's INDIRECT packet.
        NestedIndirect = 9,
        /// A GPU page fault (docs/hardware.md 12.6): a translation through the queue's (or the
        /// CMP's) page tables failed, and the access did not happen. `arg1` is the faulting GPU
        /// virtual address; `arg2` is [`crate::mmu::FaultInfo::encode`] (reason, access kind,
        /// level, user bit, low 32 bits of the faulting packet's read pointer) instead of the
        /// plain read pointer.
        PageFault = 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn record_words_round_trip() {
        let r = EventRecord {
            kind: 1,
            engine: 1,
            flags: 0,
            queue_id: 77,
            arg0: 5,
            arg1: 6,
            arg2: 7,
        };
        assert_eq!(EventRecord::from_words(r.to_words()), r);
        assert_eq!(
            r.to_words().as_bytes(),
            r.as_bytes(),
            "word order is memory order"
        );
    }
}
