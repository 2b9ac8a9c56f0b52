//! The adapter's BARs as the CPU reaches them: BAR0 (registers) and BAR2 (doorbells) as MMIO
//! buses over the board, and the D3hot state under which neither decodes. The adapter holds
//! them (trap windows of `DxgkCbMapMemory` map them); the OS sets D3hot around power IRPs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use rvgpu_hw::mmio::MmioBus;

/// The function is in D3hot: the PCI Bus Power Management Interface Specification (1.2,
/// section 5.4.1) has a function in D3hot respond only to configuration accesses, so a memory
/// read of its BARs completes with all-ones (no completer) and a write is dropped. The OS
/// sets it after `DxgkDdiSetPowerState(D3)` returns (the bus driver powers the device down
/// then) and clears it before `DxgkDdiSetPowerState(D0)` (powered up first), as Windows
/// orders a device power IRP: down the stack for power-down, bus driver first for power-up
/// (learn.microsoft.com, "Handling Device Power-Down IRPs" and "... Power-Up IRPs").
///
/// Such an access is not an error Windows reports, but a driver that makes one reads garbage
/// (all-ones, which also means "device lost"): the accesses are counted
/// ([`crate::Machine::d3hot_accesses`]) so tests can require none.
#[derive(Debug, Default)]
pub struct D3Hot {
    on: AtomicBool,
    strays: AtomicU64,
    rings: AtomicU64,
}

impl D3Hot {
    /// Whether BAR0 accesses reach the device; counts one that does not.
    pub fn decoding(&self) -> bool {
        let on = self.on.load(Ordering::Acquire);
        if on {
            self.strays.fetch_add(1, Ordering::Relaxed);
        }
        !on
    }

    /// Whether BAR2 (doorbell) accesses reach the device; counts one that does not apart: UMDs
    /// make those, through doorbells the OS left connected into D3 (24H2, docs/windows-bringup.md
    /// windows-bringup.md §13), and the work they announce runs when the queues resume.
    pub fn decoding_doorbell(&self) -> bool {
        let on = self.on.load(Ordering::Acquire);
        if on {
            self.rings.fetch_add(1, Ordering::Relaxed);
        }
        !on
    }

    /// Doorbell BAR accesses made while in D3hot.
    pub fn rings(&self) -> u64 {
        self.rings.load(Ordering::Relaxed)
    }

    /// Enters (or leaves) D3hot.
    pub fn set(&self, d3hot: bool) {
        self.on.store(d3hot, Ordering::Release);
    }

    /// BAR0 accesses made while in D3hot.
    pub fn strays(&self) -> u64 {
        self.strays.load(Ordering::Relaxed)
    }
}

/// BAR0 as the CPU reaches it: the device's registers, or nothing in D3hot. Holds the board
/// (the trap window holds this weakly, so a stale mapping still reaches nothing).
pub struct RegisterBus {
    pub board: Arc<dyn super::Board>,
    pub d3hot: Arc<D3Hot>,
}

impl MmioBus for RegisterBus {
    fn read32(&self, offset: usize) -> u32 {
        if self.d3hot.decoding() {
            self.board.read32(offset)
        } else {
            u32::MAX
        }
    }
    fn write32(&self, offset: usize, value: u32) {
        if self.d3hot.decoding() {
            self.board.write32(offset, value);
        }
    }
    fn read64(&self, offset: usize) -> u64 {
        if self.d3hot.decoding() {
            self.board.read64(offset)
        } else {
            u64::MAX
        }
    }
    fn write64(&self, offset: usize, value: u64) {
        if self.d3hot.decoding() {
            self.board.write64(offset, value);
        }
    }
}

/// BAR2 seen as an MMIO bus: 32/64-bit writes at `page * 4096` ring doorbell `page` (not in
/// D3hot).
pub struct DoorbellBus {
    pub board: Weak<dyn super::Board>,
    pub d3hot: Arc<D3Hot>,
}

impl MmioBus for DoorbellBus {
    fn read32(&self, _offset: usize) -> u32 {
        if self.d3hot.decoding_doorbell() {
            0
        } else {
            u32::MAX
        }
    }
    fn write32(&self, offset: usize, value: u32) {
        self.write64(offset, u64::from(value));
    }
    fn read64(&self, _offset: usize) -> u64 {
        if self.d3hot.decoding_doorbell() {
            0
        } else {
            u64::MAX
        }
    }
    fn write64(&self, offset: usize, value: u64) {
        if !self.d3hot.decoding_doorbell() {
            return;
        }
        if let (Some(d), Ok(page)) = (
            self.board.upgrade(),
            u32::try_from(offset / rvgpu_hw::PAGE_SIZE as usize),
        ) {
            d.doorbell_write(page, value);
        }
    }
}
