//! The GPU MMU (device v2): page-table geometry, the entry format and fault records.
//!
//! docs/hardware.md §12 is the prose; docs/memory.md puts it in the WDDM GpuMmu model.
//!
//! - 48-bit GPU virtual addresses, four levels of 512 eight-byte entries (every table is one
//!   4 KiB page). Level 3 is the root, level 0 holds 4 KiB page entries; a level-1 entry with
//!   [`Pte::LARGE`] maps a 2 MiB page directly.
//! - One entry format at every level ([`Pte`]); permission bits count only in the entry that
//!   maps the page (the leaf), so the KMD's DXGK_PTE → entry translation is one function.
//! - Everything here is total: decoding never panics, arithmetic is checked.

use crate::addr::GpuVa;

/// Virtual-address width. VAs at or above `1 << VA_BITS` fault with [`FaultReason::NonCanonical`].
pub const VA_BITS: u32 = 48;
/// Number of page-table levels (level `LEVELS - 1` is the root).
pub const LEVELS: u8 = 4;
/// The root's level.
pub const ROOT_LEVEL: u8 = LEVELS - 1;
/// Entries per table at every level.
pub const ENTRIES_PER_TABLE: u64 = 512;
/// Size of one entry.
pub const ENTRY_SIZE: u64 = 8;
/// Size of every page table (also its required alignment).
pub const TABLE_SIZE: u64 = ENTRIES_PER_TABLE * ENTRY_SIZE;
/// Small page.
pub const PAGE_4K: u64 = 4096;
/// Large page: one level-1 entry with [`Pte::LARGE`].
pub const PAGE_2M: u64 = 2 << 20;
/// The level at which [`Pte::LARGE`] is allowed.
pub const LARGE_LEVEL: u8 = 1;

/// Lowest VA bit each level's 9-bit index starts at.
const fn shift(level: u8) -> Option<u32> {
    match level {
        0 => Some(12),
        1 => Some(21),
        2 => Some(30),
        3 => Some(39),
        _ => None,
    }
}

/// Index of `va`'s entry in the table at `level`, or `None` for a level that does not exist.
pub const fn index(va: GpuVa, level: u8) -> Option<u64> {
    match shift(level) {
        Some(s) => Some((va.get() >> s) & 0x1ff),
        None => None,
    }
}

/// Bytes of VA one entry at `level` covers (4 KiB at level 0, 2 MiB at level 1, ...).
pub const fn span(level: u8) -> Option<u64> {
    match shift(level) {
        Some(s) => Some(1u64 << s),
        None => None,
    }
}

const MASK_4K: u64 = PAGE_4K - 1;
const MASK_2M: u64 = PAGE_2M - 1;

/// True if `va` is inside the translated range.
pub const fn is_canonical(va: GpuVa) -> bool {
    va.get() >> VA_BITS == 0
}

/// Byte address of `va`'s entry in the table at `table` (level `level`).
pub fn entry_addr(table: u64, va: GpuVa, level: u8) -> Option<u64> {
    table.checked_add(index(va, level)?.checked_mul(ENTRY_SIZE)?)
}

/// One page-table entry (any level).
///
/// ```text
/// bit 0  V      valid
/// bit 1  W      writable (DXGK_PTE.ReadOnly inverted)
/// bit 2  U      user: reachable from a user-mode queue (NF-01: CurrentValue mapped U without
///               W, MonitoredValue never U)
/// bit 3  VRAM   location: 0 system memory (address = bus address), 1 local memory (address =
///               offset into VRAM; the device adds addr::VRAM_BASE). DXGK_PTE.Segment != 0.
/// bit 4  C      cache-coherent (informational for the emulated device)
/// bit 5  NX     no-execute: the CMP may not fetch ring or INDIRECT commands from the page
/// bit 6  LARGE  level 1 only: this entry maps a 2 MiB page, not a level-0 table
/// bits 7..11    reserved, 0 (DXGK_PTE.Zero is not supported: the caps say so)
/// bits 12..51   address of the next table or of the page, 4 KiB aligned (2 MiB for LARGE)
/// bits 52..63   reserved, 0
/// ```
/// W, U, NX count only in the leaf entry; in directory entries they are ignored (the KMD may
/// copy them from DXGK_PTE without cleaning). Reserved bits set at any level fault with
/// [`FaultReason::Reserved`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Pte(pub u64);

/// The single-bit fields of [`Pte`] (bits 0..=6 of the table above): for each, the mask
/// constant and a getter.
macro_rules! pte_bits {
    ($($mask:ident = $bit:literal, $get:ident;)*) => {
        impl Pte {
            $(
                pub const $mask: u64 = 1 << $bit;

                pub const fn $get(self) -> bool {
                    self.0 & Self::$mask != 0
                }
            )*
        }
    };
}

pte_bits! {
    VALID = 0, valid;
    WRITABLE = 1, writable;
    USER = 2, user;
    VRAM = 3, vram;
    COHERENT = 4, coherent;
    NO_EXECUTE = 5, no_execute;
    LARGE = 6, large;
}

impl Pte {
    /// Bits 12..51.
    pub const ADDR_MASK: u64 = ((1u64 << 52) - 1) & !(PAGE_4K - 1);
    /// Every bit that must be 0.
    pub const RESERVED_MASK: u64 = !(Self::ADDR_MASK | 0x7f);

    /// An invalid entry.
    pub const INVALID: Self = Self(0);

    /// A directory entry pointing at a table (`table` 4 KiB aligned; system bus address or
    /// VRAM offset as `vram` says). `None` if the address does not fit.
    pub const fn table(table: u64, vram: bool) -> Option<Self> {
        if table & !Self::ADDR_MASK != 0 {
            return None;
        }
        Some(Self(
            table | Self::VALID | if vram { Self::VRAM } else { 0 },
        ))
    }

    /// A leaf entry mapping the page at `addr` (aligned to 4 KiB, or 2 MiB when `large`).
    pub const fn page(addr: u64, attrs: PageAttrs, large: bool) -> Option<Self> {
        let align_mask = if large { MASK_2M } else { MASK_4K };
        if addr & !Self::ADDR_MASK != 0 || addr & align_mask != 0 {
            return None;
        }
        let mut v = addr | Self::VALID;
        if attrs.writable {
            v |= Self::WRITABLE;
        }
        if attrs.user {
            v |= Self::USER;
        }
        if attrs.vram {
            v |= Self::VRAM;
        }
        if attrs.coherent {
            v |= Self::COHERENT;
        }
        if attrs.no_execute {
            v |= Self::NO_EXECUTE;
        }
        if large {
            v |= Self::LARGE;
        }
        Some(Self(v))
    }

    /// The address field (next table or page; a VRAM offset when [`Self::vram`]).
    pub const fn addr(self) -> u64 {
        self.0 & Self::ADDR_MASK
    }
    pub const fn attrs(self) -> PageAttrs {
        PageAttrs {
            writable: self.writable(),
            user: self.user(),
            vram: self.vram(),
            coherent: self.coherent(),
            no_execute: self.no_execute(),
        }
    }

    /// Classifies this entry as read at `level` (the walker's one decision).
    pub const fn decode(self, level: u8) -> Decoded {
        if !self.valid() {
            return Decoded::Fault(FaultReason::NotPresent);
        }
        if self.0 & Self::RESERVED_MASK != 0 || level >= LEVELS {
            return Decoded::Fault(FaultReason::Reserved);
        }
        if level == 0 {
            // LARGE means nothing at level 0: reject it rather than guess.
            if self.large() {
                return Decoded::Fault(FaultReason::Reserved);
            }
            return Decoded::Page { size: PAGE_4K };
        }
        if self.large() {
            if level != LARGE_LEVEL || self.addr() & MASK_2M != 0 {
                return Decoded::Fault(FaultReason::Reserved);
            }
            return Decoded::Page { size: PAGE_2M };
        }
        Decoded::Table
    }
}

/// What an entry means at the level it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Points at the next level's table.
    Table,
    /// Maps a page of `size` bytes at [`Pte::addr`].
    Page { size: u64 },
    /// Translation stops here.
    Fault(FaultReason),
}

/// Leaf attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PageAttrs {
    pub writable: bool,
    pub user: bool,
    pub vram: bool,
    pub coherent: bool,
    pub no_execute: bool,
}

wire_enum! {
    /// The kind of access that faulted.
    #[derive(Hash)]
    pub enum Access: u8, from_u8 {
        Read = 0,
        Write = 1,
        /// Command fetch (ring, INDIRECT): a read that [`Pte::NO_EXECUTE`] forbids.
        Execute = 2,
    }
}

wire_enum! {
    /// Why a translation failed.
    #[derive(Hash)]
    pub enum FaultReason: u8, from_u8 {
        /// The entry at the fault's level is not valid.
        NotPresent = 1,
        /// Reserved bits set, LARGE at a level that does not allow it, or a misaligned large page.
        Reserved = 2,
        /// Write to a page without W.
        ReadOnly = 3,
        /// A user-mode queue touched a page without U.
        Privileged = 4,
        /// Command fetch from an NX page.
        NoExecute = 5,
        /// VA at or above `1 << VA_BITS`, or the access runs past it.
        NonCanonical = 6,
        /// The table the entry lives in is not memory the device can read (bad root or table
        /// address). The fault's level is that table's level.
        TableUnreadable = 7,
        /// The translated page is not memory (outside VRAM / unmapped system address).
        BadPhysical = 8,
    }
}

/// The MMU part of a page-fault event record: packed into the record's `arg2` word beside
/// `arg1` = faulting VA (docs/hardware.md §12.6). Layout: bits 0..7 reason, 8..15 access,
/// 16..23 level, 24 user (the access came from a user-mode queue), 32..63 the read pointer's
/// low 32 bits of the faulting packet (rings are far smaller than 4 GiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaultInfo {
    pub reason: FaultReason,
    pub access: Access,
    pub level: u8,
    pub user: bool,
    pub rptr: u32,
}

impl FaultInfo {
    pub const fn encode(self) -> u64 {
        (self.reason as u64)
            | (self.access as u64) << 8
            | (self.level as u64) << 16
            | (self.user as u64) << 24
            | (self.rptr as u64) << 32
    }

    pub const fn decode(v: u64) -> Option<Self> {
        let Some(reason) = FaultReason::from_u8((v & 0xff) as u8) else {
            return None;
        };
        let Some(access) = Access::from_u8(((v >> 8) & 0xff) as u8) else {
            return None;
        };
        let level = ((v >> 16) & 0xff) as u8;
        if level >= LEVELS || (v >> 25) & 0x7f != 0 {
            return None;
        }
        Some(Self {
            reason,
            access,
            level,
            user: (v >> 24) & 1 != 0,
            rptr: ((v >> 32) & 0xffff_ffff) as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry() {
        let va = GpuVa::new((3u64 << 39) | (5 << 30) | (7 << 21) | (9 << 12) | 0x123);
        assert_eq!(index(va, 3), Some(3));
        assert_eq!(index(va, 2), Some(5));
        assert_eq!(index(va, 1), Some(7));
        assert_eq!(index(va, 0), Some(9));
        assert_eq!(index(va, 4), None);
        assert_eq!(span(0), Some(PAGE_4K));
        assert_eq!(span(1), Some(PAGE_2M));
        assert_eq!(span(3), Some(1 << 39));
        assert_eq!(TABLE_SIZE, PAGE_4K);
        assert!(is_canonical(GpuVa::new((1 << 48) - 1)));
        assert!(!is_canonical(GpuVa::new(1 << 48)));
        assert_eq!(entry_addr(0x1000, va, 0), Some(0x1000 + 9 * 8));
        assert_eq!(entry_addr(u64::MAX, va, 0), None);
    }

    #[test]
    fn entries_round_trip_and_decode() {
        let a = PageAttrs {
            writable: true,
            user: true,
            vram: true,
            coherent: false,
            no_execute: true,
        };
        let p = Pte::page(0x20_0000, a, true).unwrap();
        assert_eq!(p.attrs(), a);
        assert_eq!(p.addr(), 0x20_0000);
        assert_eq!(p.decode(1), Decoded::Page { size: PAGE_2M });
        assert_eq!(p.decode(2), Decoded::Fault(FaultReason::Reserved));
        assert_eq!(p.decode(0), Decoded::Fault(FaultReason::Reserved));
        assert_eq!(Pte::page(0x1000, a, true), None);
        assert_eq!(Pte::page(1 << 52, a, false), None);
        let t = Pte::table(0x5000, false).unwrap();
        assert_eq!(t.decode(3), Decoded::Table);
        assert_eq!(t.decode(0), Decoded::Page { size: PAGE_4K });
        assert_eq!(
            Pte::INVALID.decode(2),
            Decoded::Fault(FaultReason::NotPresent)
        );
        assert_eq!(
            Pte(t.0 | 1 << 60).decode(3),
            Decoded::Fault(FaultReason::Reserved)
        );
        assert_eq!(
            Pte(t.0 | 1 << 7).decode(3),
            Decoded::Fault(FaultReason::Reserved)
        );
        assert_eq!(Pte::table(0x5001, false), None);
    }

    #[test]
    fn fault_info_round_trip() {
        let f = FaultInfo {
            reason: FaultReason::Privileged,
            access: Access::Write,
            level: 2,
            user: true,
            rptr: 0xdead_beef,
        };
        assert_eq!(FaultInfo::decode(f.encode()), Some(f));
        assert_eq!(FaultInfo::decode(0), None);
        assert_eq!(FaultInfo::decode(1 | 4 << 16), None);
    }
}
