//! The GPU's view of memory: every device access goes through here.
//!
//! A GPU address is a bus address (version 1 has no page tables). System addresses are
//! reachable only inside a registered SYSWIN (the allow-list that stands in for an IOMMU);
//! VRAM is always reachable. Misaligned, unmapped or disallowed addresses are a
//! [`FaultCode::BadAddress`] for the queue that used them, never a panic.

use std::sync::atomic::Ordering;

use rvgpu_hw::addr::{classify, Target, ACCESS_ALIGN};
use rvgpu_hw::event::FaultCode;

use super::Core;
use crate::memory::Span;

/// A queue fault: what went wrong and at which GPU address (0 if none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) code: FaultCode,
    pub(crate) addr: u64,
}

impl Fault {
    pub(crate) fn new(code: FaultCode, addr: u64) -> Self {
        Self { code, addr }
    }

    pub(crate) fn bad_address(addr: u64) -> Self {
        Self::new(FaultCode::BadAddress, addr)
    }
}

impl Core {
    /// Checks that the device may access `[addr, addr + bytes)`: aligned, and in VRAM or
    /// inside one registered system-memory window.
    pub(crate) fn gpu_check(&self, addr: u64, bytes: u64) -> Result<(), Fault> {
        let bad = Fault::bad_address(addr);
        if !addr.is_multiple_of(ACCESS_ALIGN) || !bytes.is_multiple_of(ACCESS_ALIGN) {
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
                        let base = b.load(Ordering::Relaxed);
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

    pub(crate) fn gpu_load(&self, addr: u64, order: Ordering) -> Result<u64, Fault> {
        self.gpu_check(addr, 8)?;
        self.mem.load(addr, order).ok_or(Fault::bad_address(addr))
    }

    pub(crate) fn gpu_store(&self, addr: u64, value: u64, order: Ordering) -> Result<(), Fault> {
        self.gpu_check(addr, 8)?;
        self.mem
            .store(addr, value, order)
            .ok_or(Fault::bad_address(addr))
    }

    pub(crate) fn gpu_fetch_max(
        &self,
        addr: u64,
        value: u64,
        order: Ordering,
    ) -> Result<u64, Fault> {
        self.gpu_check(addr, 8)?;
        self.mem
            .fetch_max(addr, value, order)
            .ok_or(Fault::bad_address(addr))
    }

    /// A checked run of words for bulk work (COPY/FILL chunks, ring and record writes).
    pub(crate) fn gpu_span(&self, addr: u64, bytes: u64) -> Result<Span, Fault> {
        self.gpu_check(addr, bytes)?;
        self.mem.span(addr, bytes).ok_or(Fault::bad_address(addr))
    }
}
