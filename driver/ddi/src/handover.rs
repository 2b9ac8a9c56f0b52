//! The hand-over audit: for each argument block the simulated OS hands the driver, one row per
//! field, saying which function of Windows 11 24H2 fills it and how, or that 24H2 leaves it
//! zero (decompiled `11-24H2` of `nohuto/decompiled-pseudocode`; K: dxgkrnl, M: dxgmms2,
//! cited `K:Function @0xADDR`).
//!
//! Under the 24H2 reading the simulated OS fills exactly what 24H2 fills: it checks every block
//! of an audited DDI against [`Ddi::filled_zero`] as it hands it over, and its tests fail when
//! a field marked [`Fill::Zero`] arrives non-zero. A field filled only in some cases is
//! [`Fill::Filled`] with the cases in its text.
//!
//! Adding a DDI: a `pub const` [`Ddi`] of its block's type built with `filled_row!` and
//! `zero_row!` rows, and a call of the simulated OS's recorder where it hands the block over.

use crate::allocation::DXGKARG_CREATEPROCESS;
use crate::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE;

/// Who fills a field, in 24H2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// 24H2 fills it: the function that does (`K:`/`M:` name @address) and how.
    Filled {
        /// The function.
        by: &'static str,
        /// What it writes, and when.
        how: &'static str,
    },
    /// 24H2 leaves it zero: the function that zeroes the block, and why nothing writes it.
    Zero {
        /// The function.
        by: &'static str,
        /// Why the field stays zero.
        why: &'static str,
    },
}

/// One field of an argument block.
#[derive(Clone, Copy, Debug)]
pub struct Row<T> {
    /// The field's name in the WDK header.
    pub field: &'static str,
    /// Whether rvgpu's KMD reads it.
    pub kmd_reads: bool,
    /// Who fills it.
    pub fill: Fill,
    /// Whether the field of a block is zero (for [`Fill::Zero`] rows).
    pub is_zero: Option<fn(&T) -> bool>,
}

/// The rows of one DDI's argument block.
#[derive(Clone, Copy, Debug)]
pub struct Ddi<T: 'static> {
    /// The DDI (`DxgkDdiXxx`), with the operation for a multi-operation DDI.
    pub name: &'static str,
    /// The block's type name in the WDK header.
    pub block: &'static str,
    /// Its fields.
    pub rows: &'static [Row<T>],
}

impl<T> Ddi<T> {
    /// The fields of `b` that 24H2 leaves zero but that are not.
    pub fn filled_zero<'a>(&'a self, b: &'a T) -> impl Iterator<Item = &'static str> + 'a {
        self.rows
            .iter()
            .filter(move |r| r.is_zero.is_some_and(|z| !z(b)))
            .map(|r| r.field)
    }

    /// The row of `field`.
    pub fn row(&self, field: &str) -> Option<&Row<T>> {
        self.rows.iter().find(|r| r.field == field)
    }
}

/// A value that is all zero bits, or not.
pub trait IsZero {
    /// Whether it is zero.
    fn is_zero(&self) -> bool;
}

impl IsZero for u32 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl IsZero for u64 {
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl<T> IsZero for *mut T {
    fn is_zero(&self) -> bool {
        self.is_null()
    }
}

/// A row 24H2 fills: `filled_row!(Block.Field, reads, "K:Function @0x…", "how")`.
#[macro_export]
macro_rules! filled_row {
    ($t:ident . $f:ident, $reads:expr, $by:expr, $how:expr) => {{
        // The field exists in the block.
        let _ = core::mem::offset_of!($t, $f);
        $crate::handover::Row::<$t> {
            field: stringify!($f),
            kmd_reads: $reads,
            fill: $crate::handover::Fill::Filled { by: $by, how: $how },
            is_zero: None,
        }
    }};
}

/// A row 24H2 leaves zero: `zero_row!(Block.Field, reads, "K:Function @0x…", "why")`.
#[macro_export]
macro_rules! zero_row {
    ($t:ident . $f:ident, $reads:expr, $by:expr, $why:expr) => {
        $crate::handover::Row::<$t> {
            field: stringify!($f),
            kmd_reads: $reads,
            fill: $crate::handover::Fill::Zero { by: $by, why: $why },
            is_zero: Some(|b: &$t| $crate::handover::IsZero::is_zero(&b.$f)),
        }
    };
}

const CREATE_PROCESS_BY: &str = "K:DXGPROCESS_RENDER_ADAPTER_INFO::Initialize @0x1403ACC00";

/// `DxgkDdiCreateProcess`: the block is built on the stack of `CREATE_PROCESS_BY`, zeroed
/// from `hKmdProcess` on, for every process that opens the adapter (and by VidMm for the
/// paging process, M `VIDMM_PAGING_PROCESS::InitPagingProcess`).
pub const CREATE_PROCESS: Ddi<DXGKARG_CREATEPROCESS> = Ddi {
    name: "DxgkDdiCreateProcess",
    block: "DXGKARG_CREATEPROCESS",
    rows: &[
        filled_row!(
            DXGKARG_CREATEPROCESS.hDxgkProcess,
            true,
            CREATE_PROCESS_BY,
            "the DXGPROCESS's handle"
        ),
        filled_row!(
            DXGKARG_CREATEPROCESS.Flags,
            true,
            CREATE_PROCESS_BY,
            "SystemProcess and GdiProcess from the process; VirtualMachineProcess and \
             VirtualMachineWorkerProcess for a VM's processes; bit 4 for a session-isolated \
             container"
        ),
        filled_row!(
            DXGKARG_CREATEPROCESS.NumPasid,
            true,
            CREATE_PROCESS_BY,
            "the adapter's physical-adapter count, for every process, whatever the adapter \
             supports"
        ),
        zero_row!(
            DXGKARG_CREATEPROCESS.pPasid,
            false,
            CREATE_PROCESS_BY,
            "the PASID array exists only on an adapter with a GPU-VA IOMMU or for a VM's \
             process (K:DXGPROCESS_ADAPTER_INFO_PASID_DATA::Allocate); rvgpu's adapter has none"
        ),
        zero_row!(
            DXGKARG_CREATEPROCESS.hKmdVmWorkerProcess,
            false,
            CREATE_PROCESS_BY,
            "written only for a virtual machine's process"
        ),
        zero_row!(
            DXGKARG_CREATEPROCESS.ProcessNameLength,
            false,
            CREATE_PROCESS_BY,
            "written only for a virtual machine's process"
        ),
        zero_row!(
            DXGKARG_CREATEPROCESS.pProcessName,
            false,
            CREATE_PROCESS_BY,
            "written only for a virtual machine's process"
        ),
    ],
};

const UPDATE_BY: &str = "M:VIDMM_GLOBAL::UpdatePageTable @0x1400ABE20";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_UPDATE_PAGE_TABLE`: `UPDATE_BY` zeroes the
/// whole `DXGKARG_BUILDPAGINGBUFFER` and fills the operation from its caller: for maps
/// M `VIDMM_PAGE_TABLE::UpdatePageTable` @0x1400AAE70, for invalidations (unmaps, and a fresh
/// table cleared before its first use) M `VIDMM_PAGE_TABLE::UpdatePageTableInvalidate`
/// @0x1400AB920.
pub const UPDATE_PAGE_TABLE: Ddi<DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(UPDATE_PAGE_TABLE)",
    block: "DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE",
    rows: &[
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.PageTableLevel,
            true,
            UPDATE_BY,
            "the level of the table"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.hAllocation,
            true,
            "M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70",
            "the driver's allocation for a map of owner type 1 or 3; none for other maps and \
             for invalidations (UpdatePageTableInvalidate passes none)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.PageTableAddress,
            true,
            "M:VIDMM_PAGE_TABLE_BASE::GetDriverUpdateAddress @0x1400ABA84",
            "the table's CPU address while VidMm builds the paging process's space \
             (M:VIDMM_GLOBAL::InitPagingProcessVaSpace @0x1400F71BC), else its segment and \
             offset"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.pPageTableEntries,
            true,
            UPDATE_BY,
            "the caller's entries; for an invalidation one zeroed DXGK_PTE on VidMm's stack"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.StartIndex,
            true,
            UPDATE_BY,
            "the caller's first entry"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.NumPageTableEntries,
            true,
            UPDATE_BY,
            "the caller's count; for an invalidation the whole range, with one entry passed"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.Reserved0,
            false,
            UPDATE_BY,
            "zeroed with the block; nothing writes it"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.Flags,
            true,
            UPDATE_BY,
            "the caller's flags (InitialUpdate, NativeFence where set); Repeat added when the \
             caller passes no entries (every invalidation)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.AllocationOffsetInBytes,
            true,
            UPDATE_BY,
            "the offset in the allocation when the caller names one, else zero"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.hProcess,
            true,
            UPDATE_BY,
            "the driver's handle of the table's process on this adapter"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.UpdateMode,
            true,
            UPDATE_BY,
            "CPU_VIRTUAL while VidMm builds the paging process's space, else the table's mode \
             (the driver's DXGK_GPUMMUCAPS::PageTableUpdateMode)"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.pPageTableEntries64KB,
            false,
            UPDATE_BY,
            "set only on an adapter with 64 KB pages; rvgpu's has none"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.FirstPteVirtualAddress,
            true,
            UPDATE_BY,
            "the VA the first entry maps"
        ),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn cites(f: Fill) -> bool {
        let (by, text) = match f {
            Fill::Filled { by, how } => (by, how),
            Fill::Zero { by, why } => (by, why),
        };
        (by.starts_with("K:") || by.starts_with("M:")) && by.contains(" @0x") && !text.is_empty()
    }

    fn check<T>(d: &Ddi<T>) {
        for (i, r) in d.rows.iter().enumerate() {
            assert!(cites(r.fill), "{}.{}: no 24H2 citation", d.block, r.field);
            assert_eq!(
                matches!(r.fill, Fill::Zero { .. }),
                r.is_zero.is_some(),
                "{}.{}",
                d.block,
                r.field
            );
            assert!(
                d.rows.iter().skip(i + 1).all(|o| o.field != r.field),
                "{}.{} twice",
                d.block,
                r.field
            );
        }
    }

    /// Every row names a 24H2 function by address, every field once; zero rows check.
    #[test]
    fn every_row_cites_24h2_once() {
        check(&CREATE_PROCESS);
        check(&UPDATE_PAGE_TABLE);
    }

    /// A block filled where the audit says zero is caught, field by field.
    #[test]
    fn a_field_24h2_leaves_zero_is_caught_when_filled() {
        let mut b = DXGKARG_CREATEPROCESS {
            NumPasid: 1,
            ..Default::default()
        };
        assert_eq!(CREATE_PROCESS.filled_zero(&b).count(), 0);
        let mut pasid = 0u32;
        b.pPasid = &mut pasid;
        b.ProcessNameLength = 3;
        let got: std::vec::Vec<_> = CREATE_PROCESS.filled_zero(&b).collect();
        assert_eq!(got, ["pPasid", "ProcessNameLength"]);
    }
}
