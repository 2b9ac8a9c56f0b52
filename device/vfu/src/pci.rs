//! PCI configuration space of the rvgpu function (docs/hardware.md section 2 and "PCI front
//! end (vfio-user)").
//!
//! A type-0 header with the IDs and class of `rvgpu_hw::pci`, three memory BARs (BAR0 32-bit
//! registers, BAR2/3 64-bit doorbells, BAR4/5 64-bit prefetchable VRAM), interrupt pin INTA,
//! and three capabilities: power management (D0 and D3hot only), MSI (one message, 64-bit
//! address) and PCI Express (version 2, endpoint). The extended space (0x100..0x1000) is all
//! zero: no extended capabilities.
//!
//! Writes go through a per-byte writable mask, which also gives the BAR sizing protocol: a
//! BAR's writable bits are exactly the address bits above its size, so writing all-ones and
//! reading back yields `!(size - 1)` plus the read-only type bits.

use rvgpu_hw::pci;

/// Size of the configuration space (PCI Express: 4 KiB).
pub const CONFIG_SIZE: usize = 4096;

/// Offsets of the header registers used here.
pub mod off {
    pub const VENDOR_ID: usize = 0x00;
    pub const DEVICE_ID: usize = 0x02;
    pub const COMMAND: usize = 0x04;
    pub const STATUS: usize = 0x06;
    pub const REVISION_ID: usize = 0x08;
    pub const CLASS_CODE: usize = 0x09;
    pub const CACHE_LINE_SIZE: usize = 0x0C;
    pub const LATENCY_TIMER: usize = 0x0D;
    pub const BAR0: usize = 0x10;
    pub const SUBSYSTEM_VENDOR_ID: usize = 0x2C;
    pub const SUBSYSTEM_ID: usize = 0x2E;
    pub const CAPABILITIES_PTR: usize = 0x34;
    pub const INTERRUPT_LINE: usize = 0x3C;
    pub const INTERRUPT_PIN: usize = 0x3D;
    /// Power-management capability (id 0x01); its PMCSR is at `PM_CAP + 4`.
    pub const PM_CAP: usize = 0x40;
    /// MSI capability (id 0x05).
    pub const MSI_CAP: usize = 0x50;
    /// PCI Express capability (id 0x10).
    pub const PCIE_CAP: usize = 0x70;
}

/// Command register bits the device implements (memory space, bus master, parity error
/// response, SERR#, interrupt disable). I/O space is not: the function has no I/O BAR.
const COMMAND_WRITABLE: u16 = (1 << 1) | (1 << 2) | (1 << 6) | (1 << 8) | (1 << 10);
/// Command: INTx disable.
pub const COMMAND_INTX_DISABLE: u16 = 1 << 10;
/// Command: bus master enable (the function may issue DMA).
pub const COMMAND_BUS_MASTER: u16 = 1 << 2;
/// Status: the function's INTx is asserted (whatever the command's INTx disable says).
pub const STATUS_INTERRUPT: u16 = 1 << 3;
/// Status: the capability list is valid.
const STATUS_CAP_LIST: u16 = 1 << 4;

/// Capability IDs.
pub const CAP_ID_PM: u8 = 0x01;
pub const CAP_ID_MSI: u8 = 0x05;
pub const CAP_ID_PCIE: u8 = 0x10;

/// PMC: version 3 (PCI Bus Power Management Interface 1.2); no D1, no D2, no PME, no
/// auxiliary current. Read-only.
const PMC: u16 = 0b011;
/// PMCSR PowerState (bits 1:0): D0 and D3hot are the states this function supports.
pub const PMCSR_STATE_MASK: u16 = 0b11;
pub const PMCSR_D0: u16 = 0b00;
pub const PMCSR_D3HOT: u16 = 0b11;
/// PMCSR No_Soft_Reset (read-only 1): D3hot to D0 keeps the function's state (registers,
/// queues, configuration), so the driver's D0 call finds what its D3 call left.
pub const PMCSR_NO_SOFT_RESET: u16 = 1 << 3;

/// BAR type bits: 64-bit memory, prefetchable.
const BAR_MEM64: u32 = 0b100;
const BAR_PREFETCH: u32 = 0b1000;

/// The sizes of the three BARs, each a power of two of at least 4 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bars {
    /// BAR0: registers (`pci::MMIO_SIZE`).
    pub mmio: u64,
    /// BAR2: doorbell pages, rounded up to a power of two.
    pub doorbell: u64,
    /// BAR4: VRAM, rounded up to a power of two.
    pub vram: u64,
}

impl Bars {
    /// The BARs of a device with `doorbells` doorbell pages and `vram_size` bytes of VRAM.
    pub fn new(doorbells: u32, vram_size: u64) -> Self {
        let page = rvgpu_hw::PAGE_SIZE;
        let pow2 = |n: u64| n.max(page).checked_next_power_of_two().unwrap_or(1 << 63);
        Self {
            mmio: pci::MMIO_SIZE,
            doorbell: pow2(u64::from(doorbells).saturating_mul(page)),
            // A device without VRAM has no BAR4.
            vram: if vram_size == 0 { 0 } else { pow2(vram_size) },
        }
    }
}

/// The configuration space: current contents and which bits software may change.
#[derive(Clone)]
pub struct ConfigSpace {
    data: Box<[u8; CONFIG_SIZE]>,
    wmask: Box<[u8; CONFIG_SIZE]>,
    bars: Bars,
}

impl std::fmt::Debug for ConfigSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigSpace")
            .field("bars", &self.bars)
            .field("command", &self.u16_at(off::COMMAND))
            .finish_non_exhaustive()
    }
}

impl ConfigSpace {
    /// Power-on contents for a function with `bars`.
    pub fn new(bars: Bars) -> Self {
        let mut c = Self {
            data: Box::new([0; CONFIG_SIZE]),
            wmask: Box::new([0; CONFIG_SIZE]),
            bars,
        };
        c.put16(off::VENDOR_ID, pci::VENDOR_ID, 0);
        c.put16(off::DEVICE_ID, pci::DEVICE_ID, 0);
        c.put16(off::COMMAND, 0, COMMAND_WRITABLE);
        c.put16(off::STATUS, STATUS_CAP_LIST, 0);
        c.put8(off::REVISION_ID, pci::REVISION_ID, 0);
        let [prog_if, subclass, class, _] = pci::CLASS_CODE.to_le_bytes();
        c.put8(off::CLASS_CODE, prog_if, 0);
        c.put8(off::CLASS_CODE + 1, subclass, 0);
        c.put8(off::CLASS_CODE + 2, class, 0);
        c.put8(off::CACHE_LINE_SIZE, 0, 0xFF);
        c.put8(off::LATENCY_TIMER, 0, 0xFF);
        // BAR0: 32-bit, non-prefetchable; BAR1 unimplemented (reads 0, ignores writes).
        c.bar32(0, bars.mmio, 0);
        // BAR2/3: 64-bit, non-prefetchable doorbells; BAR4/5: 64-bit, prefetchable VRAM.
        c.bar64(2, bars.doorbell, BAR_MEM64);
        c.bar64(4, bars.vram, BAR_MEM64 | BAR_PREFETCH);
        // Subsystem IDs = vendor/device (hardware.md M1). No expansion ROM (0x30 reads 0).
        c.put16(off::SUBSYSTEM_VENDOR_ID, pci::VENDOR_ID, 0);
        c.put16(off::SUBSYSTEM_ID, pci::DEVICE_ID, 0);
        c.put8(off::CAPABILITIES_PTR, off::PM_CAP as u8, 0);
        c.put8(off::INTERRUPT_LINE, 0, 0xFF);
        // INTA#.
        c.put8(off::INTERRUPT_PIN, 1, 0);
        // Power management, which every PCI Express function has (PCIe base 3.0, 7.6): D0 and
        // D3hot only. PowerState is writable; PME_En and PME_Status are hardwired 0 (no PME),
        // and there is no Data register.
        let pm = off::PM_CAP;
        c.put8(pm, CAP_ID_PM, 0);
        c.put8(pm + 1, off::MSI_CAP as u8, 0);
        c.put16(pm + 2, PMC, 0);
        c.put16(pm + 4, PMCSR_D0 | PMCSR_NO_SOFT_RESET, PMCSR_STATE_MASK);
        c.put16(pm + 6, 0, 0);
        // MSI: one message (MMC = 0), 64-bit address capable; enable (bit 0) and MME (6:4)
        // writable. Address low is dword aligned.
        let m = off::MSI_CAP;
        c.put8(m, CAP_ID_MSI, 0);
        c.put8(m + 1, off::PCIE_CAP as u8, 0);
        c.put16(m + 2, 1 << 7, 0x0071);
        c.put32(m + 4, 0, 0xFFFF_FFFC);
        c.put32(m + 8, 0, 0xFFFF_FFFF);
        c.put16(m + 12, 0, 0xFFFF);
        // PCI Express capability v2, endpoint (device/port type 0); 128-byte payload, x1 at
        // 2.5 GT/s. Device control's usual fields are writable; nothing else is.
        let p = off::PCIE_CAP;
        c.put8(p, CAP_ID_PCIE, 0);
        c.put8(p + 1, 0, 0);
        c.put16(p + 2, 0x0002, 0);
        c.put32(p + 4, 0, 0); // device capabilities
        c.put16(p + 8, 0x2810, 0x7CFF); // device control (default: max read 512 B, no snoop, RO)
        c.put32(p + 0x0C, 0x0000_0011, 0); // link capabilities: x1, 2.5 GT/s
        c.put16(p + 0x12, 0x0011, 0); // link status: x1, 2.5 GT/s
        c
    }

    /// The BAR sizes this space was built with.
    pub fn bars(&self) -> Bars {
        self.bars
    }

    fn put8(&mut self, at: usize, v: u8, wmask: u8) {
        if let (Some(d), Some(w)) = (self.data.get_mut(at), self.wmask.get_mut(at)) {
            *d = v;
            *w = wmask;
        }
    }

    fn put16(&mut self, at: usize, v: u16, wmask: u16) {
        for (i, (b, m)) in v.to_le_bytes().iter().zip(wmask.to_le_bytes()).enumerate() {
            self.put8(at + i, *b, m);
        }
    }

    fn put32(&mut self, at: usize, v: u32, wmask: u32) {
        for (i, (b, m)) in v.to_le_bytes().iter().zip(wmask.to_le_bytes()).enumerate() {
            self.put8(at + i, *b, m);
        }
    }

    fn bar32(&mut self, n: usize, size: u64, flags: u32) {
        let mask = !(u32::try_from(size).unwrap_or(0).wrapping_sub(1)) & !0xF;
        self.put32(off::BAR0 + 4 * n, flags, mask);
    }

    fn bar64(&mut self, n: usize, size: u64, flags: u32) {
        if size == 0 {
            // Unimplemented: reads 0, ignores writes (the power-on contents already say so).
            return;
        }
        let mask = !(size.wrapping_sub(1)) & !0xF;
        self.put32(off::BAR0 + 4 * n, flags, mask as u32);
        self.put32(off::BAR0 + 4 * (n + 1), 0, (mask >> 32) as u32);
    }

    /// The 16-bit value at `at` (0 outside the space).
    pub fn u16_at(&self, at: usize) -> u16 {
        let b = |i: usize| self.data.get(i).copied().unwrap_or(0);
        u16::from_le_bytes([b(at), b(at + 1)])
    }

    /// Whether the command register's bus-master bit is set.
    pub fn bus_master(&self) -> bool {
        self.u16_at(off::COMMAND) & COMMAND_BUS_MASTER != 0
    }

    /// Whether the command register's INTx disable bit is set.
    pub fn intx_disabled(&self) -> bool {
        self.u16_at(off::COMMAND) & COMMAND_INTX_DISABLE != 0
    }

    /// PMCSR PowerState: [`PMCSR_D0`] or [`PMCSR_D3HOT`] (the only states a write can set).
    pub fn power_state(&self) -> u16 {
        self.u16_at(off::PM_CAP + 4) & PMCSR_STATE_MASK
    }

    /// Whether the function is in D3hot: it then decodes configuration accesses only (PCI
    /// Bus Power Management Interface 1.2, 5.4.1), and initiates no transactions, neither
    /// DMA nor interrupt messages (PCIe base 3.0, 5.3.1.4).
    pub fn d3hot(&self) -> bool {
        self.power_state() == PMCSR_D3HOT
    }

    /// Reads `out.len()` bytes at `offset`; `intx_asserted` is the live interrupt status
    /// (status bit 3). False, leaving `out` alone, if the range is not inside the space.
    pub fn read(&self, offset: u64, out: &mut [u8], intx_asserted: bool) -> bool {
        let Some(range) = range(offset, out.len()) else {
            return false;
        };
        let Some(src) = self.data.get(range.clone()) else {
            return false;
        };
        out.copy_from_slice(src);
        // Status bit 3 is live, not stored.
        if range.contains(&off::STATUS) && intx_asserted {
            if let Some(b) = out.get_mut(off::STATUS - range.start) {
                *b |= STATUS_INTERRUPT as u8;
            }
        }
        true
    }

    /// Writes `data` at `offset` through the writable mask (read-only bits keep their
    /// value). False, writing nothing, if the range is not inside the space.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> bool {
        let Some(range) = range(offset, data.len()) else {
            return false;
        };
        let state = self.power_state();
        let (Some(dst), Some(mask)) = (self.data.get_mut(range.clone()), self.wmask.get(range))
        else {
            return false;
        };
        for ((d, m), v) in dst.iter_mut().zip(mask).zip(data) {
            *d = (*d & !*m) | (*v & *m);
        }
        // A write of a state the function does not support (D1, D2) completes but is
        // discarded: the state does not change (PCI PM 1.2, 3.2.4, PowerState).
        if !matches!(self.power_state(), PMCSR_D0 | PMCSR_D3HOT) {
            let at = off::PM_CAP + 4;
            if let Some(b) = self.data.get_mut(at) {
                *b = (*b & !(PMCSR_STATE_MASK as u8)) | state as u8;
            }
        }
        true
    }
}

fn range(offset: u64, len: usize) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(len)?;
    (end <= CONFIG_SIZE).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dword(c: &ConfigSpace, at: u64) -> u32 {
        let mut b = [0; 4];
        assert!(c.read(at, &mut b, false));
        u32::from_le_bytes(b)
    }

    #[test]
    fn bar_sizing_reads_back_size_and_type() {
        let mut c = ConfigSpace::new(Bars::new(16, 16 << 20));
        for n in 0..6u64 {
            assert!(c.write(0x10 + 4 * n, &u32::MAX.to_le_bytes()));
        }
        assert_eq!(dword(&c, 0x10), 0xFFFF_0000, "BAR0: 64 KiB, mem32");
        assert_eq!(dword(&c, 0x14), 0, "BAR1 unimplemented");
        assert_eq!(dword(&c, 0x18), 0xFFFF_0004, "BAR2: 64 KiB, mem64");
        assert_eq!(dword(&c, 0x1C), u32::MAX);
        assert_eq!(
            dword(&c, 0x20),
            0xFF00_000C,
            "BAR4: 16 MiB, mem64 prefetchable"
        );
        assert_eq!(dword(&c, 0x24), u32::MAX);
        // Programming an address keeps the type bits and drops bits below the size.
        assert!(c.write(0x10, &0xFEBF_1234u32.to_le_bytes()));
        assert_eq!(dword(&c, 0x10), 0xFEBF_0000);
    }

    #[test]
    fn bar_sizes_round_up_to_powers_of_two() {
        let b = Bars::new(3, 5 << 20);
        assert_eq!(b.doorbell, 16 << 10);
        assert_eq!(b.vram, 8 << 20);
        assert_eq!(Bars::new(1, 1).vram, 4096);
        let mut c = ConfigSpace::new(Bars::new(1, 0));
        assert!(c.write(0x20, &u32::MAX.to_le_bytes()));
        assert_eq!(dword(&c, 0x20), 0, "no VRAM, no BAR4");
    }

    #[test]
    fn power_management_capability_takes_d0_and_d3hot_only() {
        let mut c = ConfigSpace::new(Bars::new(16, 1 << 20));
        assert_eq!(dword(&c, 0x34) & 0xFF, 0x40, "the list starts at PM");
        assert_eq!(
            dword(&c, 0x40),
            0x0003_5001,
            "PM, next MSI, version 3, no D1/D2/PME"
        );
        assert_eq!(dword(&c, 0x44), 0x8, "D0, No_Soft_Reset");
        assert!(!c.d3hot());
        assert!(c.write(0x44, &0xFFFF_u16.to_le_bytes()));
        assert_eq!(dword(&c, 0x44), 0xB, "D3hot; PME bits and Data stay 0");
        assert!(c.d3hot());
        // D1 and D2 are unsupported: the write completes and changes nothing.
        for s in [1u8, 2] {
            assert!(c.write(0x44, &[s]));
            assert_eq!(c.power_state(), PMCSR_D3HOT, "D{s} discarded");
        }
        assert!(c.write(0x44, &[0]));
        assert_eq!(dword(&c, 0x44), 0x8, "back in D0");
        assert!(c.write(0x44, &[2]));
        assert_eq!(c.power_state(), PMCSR_D0, "D2 discarded from D0 too");
    }

    #[test]
    fn config_space_rejects_ranges_outside_it() {
        let mut c = ConfigSpace::new(Bars::new(16, 1 << 20));
        let mut b = [0xAA; 4];
        assert!(!c.read(4094, &mut b, false));
        assert_eq!(b, [0xAA; 4]);
        assert!(!c.write(u64::MAX, &[1]));
        assert!(c.read(4092, &mut b, false));
    }
}
