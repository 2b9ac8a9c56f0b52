//! Interrupt handling: reading the device's causes and its event ring (ISR side).
//!
//! The ISR follows the protocol of docs/hardware.md "Interrupts": read INT_STATUS, ack the
//! bits read *before* draining (a record published during the drain raises its cause again,
//! so none is lost), read WPTR, consume records, write RPTR. Everything here runs at device
//! IRQL, allocates nothing, and trusts nothing the device wrote: a record of an unknown kind
//! is counted and skipped; a write pointer more than a ring ahead is treated as an overflow.

use core::sync::atomic::{fence, Ordering};
use rvgpu_hw::addr::GpuVa;

use rvgpu_hw::engine::{EngineState, ResetResult};
use rvgpu_hw::event::{EventKind, EventRecord, FaultCode};
use rvgpu_hw::regs::{self, IntCause};

use crate::dma::DmaBuffer;
use crate::mmio::Regs;
use crate::platform::Platform;

/// One decoded event record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceEvent {
    /// A fence signal needed an interrupt (NF-03).
    FenceSignaled {
        engine: u32,
        queue: u32,
        tag: u64,
        value: u64,
        monitored_addr: GpuVa,
        /// An always-interrupt (legacy monitored-fence) signal.
        legacy: bool,
    },
    /// PROGRESS with interrupt: DMA completed up to `value` on `queue`.
    Progress { engine: u32, queue: u32, value: u64 },
    /// An engine changed state.
    EngineState {
        engine: u32,
        old: Option<EngineState>,
        new: Option<EngineState>,
    },
    /// A queue faulted.
    Fault {
        engine: u32,
        queue: u32,
        code: Option<FaultCode>,
        addr: GpuVa,
        rptr: u64,
    },
    /// An engine reset finished.
    ResetDone {
        engine: u32,
        result: Option<ResetResult>,
        queue: u32,
        rptr: u64,
    },
    /// An engine's scheduling log reached its interrupt entry (`header`: the log's
    /// `AtomicWraparoundAndEntryIndex` after it).
    SchedLog { engine: u32, header: u64 },
}

impl DeviceEvent {
    /// Decodes a record; `None` for an unknown kind.
    pub fn decode(r: &EventRecord) -> Option<Self> {
        let engine = u32::from(r.engine);
        let queue = r.queue_id;
        let small = |v: u64| u32::try_from(v).ok();
        Some(match EventKind::from_u8(r.kind)? {
            EventKind::FenceSignaled => Self::FenceSignaled {
                engine,
                queue,
                tag: r.arg0,
                value: r.arg1,
                monitored_addr: GpuVa::new(r.arg2),
                legacy: r.flags & rvgpu_hw::event::FLAG_LEGACY_SIGNAL != 0,
            },
            EventKind::Progress => Self::Progress {
                engine,
                queue,
                value: r.arg0,
            },
            EventKind::EngineState => Self::EngineState {
                engine,
                old: small(r.arg0).and_then(EngineState::from_u32),
                new: small(r.arg1).and_then(EngineState::from_u32),
            },
            EventKind::Fault => Self::Fault {
                engine,
                queue,
                code: small(r.arg0).and_then(FaultCode::from_u32),
                addr: GpuVa::new(r.arg1),
                rptr: r.arg2,
            },
            EventKind::ResetDone => Self::ResetDone {
                engine,
                result: small(r.arg0).and_then(ResetResult::from_u32),
                queue: small(r.arg1).unwrap_or(rvgpu_hw::queue::NO_QUEUE),
                rptr: r.arg2,
            },
            EventKind::SchedLog => Self::SchedLog {
                engine,
                header: r.arg0,
            },
        })
    }
}

/// What one ISR pass saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IsrSummary {
    /// Causes read from INT_STATUS (and acknowledged).
    pub causes: u32,
    /// Records consumed.
    pub records: u32,
    /// Records of unknown kind (skipped).
    pub unknown: u32,
    /// Records may have been lost: the device reported an overflow, or its write pointer was
    /// implausible. Fence reports must then say "scan everything" (NF-14).
    pub overflow: bool,
}

/// The driver's side of the event ring. Touched only by the ISR (and by start/stop before
/// interrupts are enabled / after they are disabled).
#[derive(Debug)]
pub struct EventRing {
    buf: DmaBuffer,
    /// Records in the ring (power of two).
    size: u32,
    /// Free-running count of records consumed.
    rptr: u32,
}

/// Records per event ring: 4 KiB of 32-byte records.
pub const EVENT_RING_RECORDS: u32 = 128;

impl EventRing {
    /// Wraps a zeroed buffer of at least `size * 32` bytes; `size` must be a power of two.
    pub fn new(buf: DmaBuffer, size: u32) -> Option<Self> {
        let need = u64::from(size).checked_mul(32)?;
        (size.is_power_of_two() && buf.bytes() >= need).then_some(Self { buf, size, rptr: 0 })
    }

    /// The buffer (for programming the device and for freeing).
    pub fn buffer(&self) -> &DmaBuffer {
        &self.buf
    }

    /// Takes the buffer back (at stop).
    pub fn into_buffer(self) -> DmaBuffer {
        self.buf
    }

    /// Programs the device's event-ring registers and enables posting (resets pointers).
    pub fn program<P: Platform>(&mut self, regs: &Regs<P>) {
        self.rptr = 0;
        regs.write(regs::EventRingBase::new(self.buf.gpu().get()));
        regs.write(regs::EventRingSize::new(self.size));
        regs.write(regs::EventRingCtrl::new(1));
    }

    /// Runs the ISR protocol: returns `None` if the interrupt is not ours (no cause pending,
    /// or the device is gone and reads all-ones), otherwise calls `on_event` for each record
    /// and returns what it saw.
    pub fn service<P: Platform>(
        &mut self,
        regs: &Regs<P>,
        mut on_event: impl FnMut(DeviceEvent),
    ) -> Option<IsrSummary> {
        let status = regs.read::<regs::IntStatus>().raw();
        if status == 0 || status == u32::MAX {
            return None;
        }
        // Ack first: anything posted from here on raises its cause again.
        regs.write(regs::IntAck::new(status));
        let mut summary = IsrSummary {
            causes: status,
            overflow: IntCause::from_bits_retain(status).contains(IntCause::EVENT_OVERFLOW),
            ..Default::default()
        };
        let wptr = regs.read::<regs::EventRingWptr>().raw();
        // The WPTR read is the device's release point; order record reads after it.
        fence(Ordering::Acquire);
        let pending = wptr.wrapping_sub(self.rptr);
        if pending > self.size {
            // The device claims more than a ring: records were overwritten or it is broken.
            summary.overflow = true;
            self.rptr = wptr;
        }
        while self.rptr != wptr {
            let slot = u64::from(self.rptr & self.size.wrapping_sub(1));
            let base = slot.wrapping_mul(4);
            let mut w = [0u64; 4];
            for (i, word) in w.iter_mut().enumerate() {
                let idx = base.wrapping_add(i as u64);
                *word = self.buf.load(idx, Ordering::Relaxed).unwrap_or(0);
            }
            match DeviceEvent::decode(&EventRecord::from_words(w)) {
                Some(e) => on_event(e),
                None => summary.unknown = summary.unknown.saturating_add(1),
            }
            summary.records = summary.records.saturating_add(1);
            self.rptr = self.rptr.wrapping_add(1);
        }
        regs.write(regs::EventRingRptr::new(self.rptr));
        Some(summary)
    }
}
