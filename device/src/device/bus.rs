//! The GPU's view of memory: every device access goes through here.
//!
//! A GPU address is a bus address (version 1 has no page tables). System addresses are
//! reachable only inside a registered SYSWIN (the allow-list that stands in for an IOMMU);
//! VRAM is always reachable. Misaligned, unmapped or disallowed addresses are a
//! [`FaultCode::BadAddress`] for the queue that used them, never a panic.

use std::sync::atomic::Ordering;

use rvgpu_hw::addr::{classify, BusAddr, GpuVa, Target, ACCESS_ALIGN};
use rvgpu_hw::event::FaultCode;

use super::Core;
use crate::memory::Span;

/// A queue fault: what went wrong and at which GPU address (null if none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) code: FaultCode,
    pub(crate) addr: GpuVa,
}

impl Fault {
    pub(crate) fn new(code: FaultCode, addr: GpuVa) -> Self {
        Self { code, addr }
    }

    pub(crate) fn bad_address(addr: GpuVa) -> Self {
        Self::new(FaultCode::BadAddress, addr)
    }
}

impl Core {
    /// Checks that the device may access `[addr, addr + bytes)`: aligned, and in VRAM or
    /// inside one registered system-memory window.
    pub(crate) fn gpu_check(&self, addr: GpuVa, bytes: u64) -> Result<(), Fault> {
        let bad = Fault::bad_address(addr);
        if !addr.is_aligned(ACCESS_ALIGN) || !bytes.is_multiple_of(ACCESS_ALIGN) {
            return Err(bad);
        }
        match classify(addr, bytes, self.mem.vram_size()).ok_or(bad)? {
            Target::Local(_) => Ok(()),
            Target::System(a) => {
                let end = a.checked_add(bytes).ok_or(bad)?;
                let inside = self
                    .regs
                    .syswin_base
                    .iter()
                    .zip(self.regs.syswin_size.iter())
                    .any(|(b, s)| {
                        // Relaxed: window registers are plain configuration; the driver
                        // programs them before it submits work that uses them, and the
                        // submission (doorbell/commit) is the synchronising operation.
                        let base = BusAddr::new(b.load(Ordering::Relaxed));
                        let size = s.load(Ordering::Relaxed);
                        size != 0 && a >= base && base.checked_add(size).is_some_and(|e| end <= e)
                    });
                if inside {
                    Ok(())
                } else {
                    Err(bad)
                }
            }
        }
    }

    pub(crate) fn gpu_load(&self, addr: GpuVa, order: Ordering) -> Result<u64, Fault> {
        self.gpu_check(addr, 8)?;
        self.mem
            .load(addr.get(), order)
            .ok_or(Fault::bad_address(addr))
    }

    pub(crate) fn gpu_store(&self, addr: GpuVa, value: u64, order: Ordering) -> Result<(), Fault> {
        self.gpu_check(addr, 8)?;
        self.mem
            .store(addr.get(), value, order)
            .ok_or(Fault::bad_address(addr))
    }

    pub(crate) fn gpu_fetch_max(
        &self,
        addr: GpuVa,
        value: u64,
        order: Ordering,
    ) -> Result<u64, Fault> {
        self.gpu_check(addr, 8)?;
        self.mem
            .fetch_max(addr.get(), value, order)
            .ok_or(Fault::bad_address(addr))
    }

    /// A checked run of words for bulk work (COPY/FILL chunks, ring and record writes).
    pub(crate) fn gpu_span(&self, addr: GpuVa, bytes: u64) -> Result<Span, Fault> {
        self.gpu_check(addr, bytes)?;
        self.mem
            .span(addr.get(), bytes)
            .ok_or(Fault::bad_address(addr))
    }
}

/// The address of a ring-control field. Descriptors are validated with a 64-byte aligned
/// ring control, so adding a field offset (< 64) cannot overflow; if it ever did, the
/// all-ones address faults like any unreachable one.
pub(crate) fn ctl(ring_control: GpuVa, field: u64) -> GpuVa {
    ring_control
        .checked_add(field)
        .unwrap_or(GpuVa::new(u64::MAX))
}
