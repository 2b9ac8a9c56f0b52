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
//! Audited: `DxgkDdiCreateProcess`; UPDATEPAGETABLE, maps and invalidations apart;
//! `DxgkDdiCreateAllocation` (device allocations) and its `DXGK_ALLOCATIONINFO` inputs;
//! `DxgkDdiCreateHwQueue`, kernel-mode and user-mode queues apart; `DxgkDdiCreateDoorbell`;
//! `DxgkDdiOpenAllocation` (the creating device's open) and its `DXGK_OPENALLOCATIONINFO`;
//! `DxgkDdiSubmitCommandToHwQueue` of a kernel-mode queue's buffers.
//!
//! Adding a DDI: a `pub const` [`Ddi`] of its block's type built with `filled_row!` and
//! `zero_row!` rows, and a call of the simulated OS's recorder where it hands the block over.

use crate::allocation::{
    DXGKARG_CREATEALLOCATION, DXGKARG_CREATEPROCESS, DXGKARG_OPENALLOCATION, DXGK_ALLOCATIONINFO,
    DXGK_OPENALLOCATIONINFO,
};
use crate::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE;
use crate::submission::{
    DXGKARG_CREATEDOORBELL, DXGKARG_CREATEHWQUEUE, DXGKARG_CREATEHWQUEUE_0,
    DXGKARG_SUBMITCOMMANDTOHWQUEUE,
};

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

/// Bit-field words: zero when their `Value` is.
macro_rules! word_is_zero {
    ($($t:ty),*) => {$(
        impl IsZero for $t {
            fn is_zero(&self) -> bool {
                self.Value == 0
            }
        }
    )*};
}

word_is_zero!(
    crate::allocation::DXGK_CREATEALLOCATIONFLAGS,
    crate::allocation::DXGK_SEGMENTBANKPREFERENCE,
    crate::allocation::DXGK_SEGMENTPREFERENCE,
    crate::allocation::DXGK_ALLOCATIONINFOFLAGS2
);

impl IsZero for crate::allocation::DXGK_ALLOCATIONINFO_0 {
    fn is_zero(&self) -> bool {
        // SAFETY: both arms are the same plain u32.
        (unsafe { self.PhysicalAdapterIndex }) == 0
    }
}

impl IsZero for crate::allocation::DXGK_ALLOCATIONINFO_1 {
    fn is_zero(&self) -> bool {
        // SAFETY: both arms are the same plain u32 flag word; any bit pattern is valid.
        unsafe { self.FlagsWddm2 }.Value == 0
    }
}

impl IsZero for DXGKARG_CREATEHWQUEUE_0 {
    fn is_zero(&self) -> bool {
        // SAFETY: both arms are plain data and the pointer-sized arm covers every byte of the
        // union, so any bit pattern read is a valid value.
        unsafe { self.hHwQueueNativeProgressFence }.is_null()
    }
}

impl IsZero for usize {
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
            "the caller's entries (for a map, the table's shadow from StartIndex, \
             M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70); for an invalidation one \
             zeroed DXGK_PTE on VidMm's stack"
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
            "the caller's flags (InitialUpdate on every update of a table not yet committed: \
             the first map into a fresh leaf table and the invalidations of the entries \
             outside its run, M:VIDMM_PAGE_TABLE::CommitVirtualAddressRange @0x1400F2030); \
             Repeat added when the caller passes no entries (every invalidation), and on a \
             leaf map whose commit repeats one 4 KiB page (a Map range longer than what the \
             allocation has past its offset, M:CVirtualAddressAllocator::MapVadVaRange \
             @0x14009AD34)"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.DriverProtection,
            false,
            "M:VIDMM_PAGE_TABLE::UpdatePageTable @0x1400AAE70",
            "for a map, its commit state's driver protection: the DriverProtection of the \
             D3DDDI_MAPGPUVIRTUALADDRESS the range was mapped with, unchecked \
             (M:CVirtualAddressAllocator::MapVirtualAddressRange @0x14009AF84 keeps it in the \
             mapped range, M:CVirtualAddressAllocator::CommitVirtualAddressRange @0x1400ADD10 \
             copies it to the commit state; M:VIDMM_GLOBAL::VidMmUpdateGpuVirtualAddress \
             @0x1400E34AC likewise for a MAP_PROTECT's, which neither it nor \
             K:DxgkUpdateGpuVirtualAddress @0x1402F7A50 refuses); zero for invalidations \
             (UpdatePageTableInvalidate passes none)"
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
            "the VA the first entry covers, its caller's page number shifted: for a leaf \
             table the VA the entry maps; for a directory \
             (M:VIDMM_PAGE_DIRECTORY::CommitVirtualAddressRange @0x1400F28C0) the first VA of \
             the span below entry StartIndex"
        ),
    ],
};

const INVALIDATE_BY: &str = "M:VIDMM_PAGE_TABLE::UpdatePageTableInvalidate @0x1400AB920";

/// `DxgkDdiBuildPagingBuffer` with `DXGK_OPERATION_UPDATE_PAGE_TABLE` for an invalidation
/// (every entry zero: an unmap, M `VIDMM_PAGE_TABLE::UncommitVirtualAddressRange`
/// @0x1400CD6C0, or the entries a fresh table does not map yet, M
/// `VIDMM_PAGE_TABLE::CommitVirtualAddressRange` @0x1400F2030): the fields
/// [`UPDATE_PAGE_TABLE`] fills only for a map. `INVALIDATE_BY` calls `UPDATE_BY` with no
/// allocation, no global allocation, offset zero and protection zero; `UPDATE_BY` writes
/// `hAllocation` and `AllocationOffsetInBytes` only with a global allocation. The other
/// fields are as for [`UPDATE_PAGE_TABLE`] (`FirstPteVirtualAddress`: the VA of the first
/// entry invalidated, which the caller passes).
pub const UPDATE_PAGE_TABLE_INVALIDATE: Ddi<DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE> = Ddi {
    name: "DxgkDdiBuildPagingBuffer(UPDATE_PAGE_TABLE invalidation)",
    block: "DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE",
    rows: &[
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.hAllocation,
            true,
            INVALIDATE_BY,
            "no allocation is passed; the block is zeroed by M:VIDMM_GLOBAL::UpdatePageTable \
             @0x1400ABE20"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.AllocationOffsetInBytes,
            true,
            INVALIDATE_BY,
            "written only with a global allocation, which an invalidation has none of"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.DriverProtection,
            false,
            INVALIDATE_BY,
            "passed as zero"
        ),
        filled_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.FirstPteVirtualAddress,
            true,
            INVALIDATE_BY,
            "the VA of the first entry invalidated (the unmapped range's start; for a fresh \
             table, the VA its first invalidated entry covers)"
        ),
        zero_row!(
            DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE.pPageTableEntries64KB,
            false,
            INVALIDATE_BY,
            "set only on an adapter with 64 KB pages; rvgpu's has none"
        ),
    ],
};

const ALLOCATION_BY: &str = "K:DXGDEVICE::CreateDriverAllocations @0x1403231E0";

/// `DxgkDdiCreateAllocation` of device allocations (no resource: rvgpu's UMD creates none):
/// `ALLOCATION_BY` builds the block on its stack (the padding after `Flags` zeroed) and calls
/// the driver through `K:ADAPTER_RENDER::DdiCreateAllocation` @0x1402A5CE4, unless the caller
/// asked for no KMD access.
pub const CREATE_ALLOCATION: Ddi<DXGKARG_CREATEALLOCATION> = Ddi {
    name: "DxgkDdiCreateAllocation",
    block: "DXGKARG_CREATEALLOCATION",
    rows: &[
        filled_row!(
            DXGKARG_CREATEALLOCATION.pPrivateDriverData,
            true,
            ALLOCATION_BY,
            "a pool copy of the caller's resource-wide private data when it gives any, else \
             null"
        ),
        filled_row!(
            DXGKARG_CREATEALLOCATION.PrivateDriverDataSize,
            true,
            ALLOCATION_BY,
            "that copy's size, else zero"
        ),
        filled_row!(
            DXGKARG_CREATEALLOCATION.NumAllocations,
            true,
            ALLOCATION_BY,
            "the caller's count"
        ),
        filled_row!(
            DXGKARG_CREATEALLOCATION.pAllocationInfo,
            true,
            ALLOCATION_BY,
            "Dxgkrnl's DXGK_ALLOCATIONINFO array (ALLOCATION_INFO)"
        ),
        zero_row!(
            DXGKARG_CREATEALLOCATION.hResource,
            false,
            ALLOCATION_BY,
            "the resource's driver handle, written only for a resource's allocations"
        ),
        zero_row!(
            DXGKARG_CREATEALLOCATION.Flags,
            true,
            ALLOCATION_BY,
            "Resource is set only for a resource's allocations; no other bit is written"
        ),
    ],
};

const ALLOCATION_INFO_ZEROED_BY: &str = "K:DXGDEVICE::CreateAllocation @0x140356E10";

/// One `DXGK_ALLOCATIONINFO` of [`CREATE_ALLOCATION`]: `ALLOCATION_INFO_ZEROED_BY` zeroes the
/// whole array (`NumAllocations` entries) right before it calls `ALLOCATION_BY`, which fills
/// the two private data fields of each entry whose `D3DDDI_ALLOCATIONINFO2` carries private
/// data (a pool copy for a caller in user mode); every other field is the driver's answer and
/// arrives zero.
pub const ALLOCATION_INFO: Ddi<DXGK_ALLOCATIONINFO> = Ddi {
    name: "DxgkDdiCreateAllocation(DXGK_ALLOCATIONINFO)",
    block: "DXGK_ALLOCATIONINFO",
    rows: &[
        filled_row!(
            DXGK_ALLOCATIONINFO.pPrivateDriverData,
            true,
            ALLOCATION_BY,
            "the allocation's private data, copied; null (with size zero) when the caller \
             passes none"
        ),
        filled_row!(
            DXGK_ALLOCATIONINFO.PrivateDriverDataSize,
            true,
            ALLOCATION_BY,
            "its size"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Alignment,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Size,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.PitchAlignedSize,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.HintedBank,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.PreferredSegment,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.SupportedReadSegmentSet,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.SupportedWriteSegmentSet,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.EvictionSegmentSet,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Anonymous,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "PhysicalAdapterIndex: an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.hAllocation,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Anonymous2,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "Flags: an answer; the array is zeroed, and ALLOCATION_BY sets a bit before the \
             call only for a standard allocation's create, which rvgpu's UMD makes none of"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.pAllocationUsageHint,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.AllocationPriority,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
        zero_row!(
            DXGK_ALLOCATIONINFO.Flags2,
            false,
            ALLOCATION_INFO_ZEROED_BY,
            "an answer; the array is zeroed"
        ),
    ],
};

const OPEN_BY: &str = "K:DXGDEVICE::OpenAllocations @0x140324850";

/// `DxgkDdiOpenAllocation` of the creating device's open of device allocations, which
/// `K:DXGDEVICE::CreateAllocation` @0x140356E10 makes for every allocation it creates:
/// `OPEN_BY` builds the block on its stack, zeroing the padding and both outputs.
pub const OPEN_ALLOCATION: Ddi<DXGKARG_OPENALLOCATION> = Ddi {
    name: "DxgkDdiOpenAllocation",
    block: "DXGKARG_OPENALLOCATION",
    rows: &[
        filled_row!(
            DXGKARG_OPENALLOCATION.NumAllocations,
            true,
            OPEN_BY,
            "the caller's count"
        ),
        filled_row!(
            DXGKARG_OPENALLOCATION.pOpenAllocation,
            true,
            OPEN_BY,
            "Dxgkrnl's DXGK_OPENALLOCATIONINFO array (OPEN_ALLOCATION_INFO)"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.pPrivateDriverData,
            false,
            OPEN_BY,
            "a pool copy of the create's resource-wide private data, which a device \
             allocation's create has none of"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.PrivateDriverSize,
            false,
            OPEN_BY,
            "the create's resource-wide private-data size: none for a device allocation"
        ),
        filled_row!(
            DXGKARG_OPENALLOCATION.Flags,
            true,
            OPEN_BY,
            "Create for the creating device's open; bit 1 from the caller's create flags"
        ),
        filled_row!(
            DXGKARG_OPENALLOCATION.SubresourceIndex,
            false,
            OPEN_BY,
            "the caller's subresource index"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.SubresourceOffset,
            false,
            OPEN_BY,
            "an output, zeroed"
        ),
        zero_row!(
            DXGKARG_OPENALLOCATION.Pitch,
            false,
            OPEN_BY,
            "an output, zeroed"
        ),
    ],
};

/// One `DXGK_OPENALLOCATIONINFO` of [`OPEN_ALLOCATION`], written by `OPEN_BY` per allocation.
pub const OPEN_ALLOCATION_INFO: Ddi<DXGK_OPENALLOCATIONINFO> = Ddi {
    name: "DxgkDdiOpenAllocation(DXGK_OPENALLOCATIONINFO)",
    block: "DXGK_OPENALLOCATIONINFO",
    rows: &[
        filled_row!(
            DXGK_OPENALLOCATIONINFO.hAllocation,
            true,
            OPEN_BY,
            "the allocation's kernel handle"
        ),
        filled_row!(
            DXGK_OPENALLOCATIONINFO.pPrivateDriverData,
            true,
            OPEN_BY,
            "Dxgkrnl's copy of the allocation's private data"
        ),
        filled_row!(
            DXGK_OPENALLOCATIONINFO.PrivateDriverDataSize,
            true,
            OPEN_BY,
            "its size"
        ),
        zero_row!(
            DXGK_OPENALLOCATIONINFO.hDeviceSpecificAllocation,
            false,
            OPEN_BY,
            "zeroed; the driver's answer"
        ),
    ],
};

const HWQUEUE_BY: &str = "K:DXGHWQUEUE::Initialize @0x1402BBA30";

/// `DxgkDdiCreateHwQueue` for a queue the KMD submits to (`DxgkDdiSubmitCommandToHwQueue`):
/// `HWQUEUE_BY` builds the block on its stack, field by field, after creating the queue's
/// progress fence.
pub const CREATE_HWQUEUE: Ddi<DXGKARG_CREATEHWQUEUE> = Ddi {
    name: "DxgkDdiCreateHwQueue",
    block: "DXGKARG_CREATEHWQUEUE",
    rows: &[
        filled_row!(
            DXGKARG_CREATEHWQUEUE.hHwQueue,
            true,
            HWQUEUE_BY,
            "Dxgkrnl's queue object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.Flags,
            true,
            HWQUEUE_BY,
            "the caller's D3DKMT_CREATEHWQUEUE flags, bit 0 added when the context or the \
             adapter disables GPU timeouts"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.PrivateDriverDataSize,
            true,
            HWQUEUE_BY,
            "the caller's size"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.pPrivateDriverData,
            true,
            HWQUEUE_BY,
            "Dxgkrnl's kernel copy of the caller's data"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.Anonymous,
            true,
            HWQUEUE_BY,
            "hHwQueueProgressFence: the monitored fence it created for the queue"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceCPUVirtualAddress,
            true,
            HWQUEUE_BY,
            "the progress fence's current-value storage, kernel mapping"
        ),
        filled_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceGPUVirtualAddress,
            true,
            HWQUEUE_BY,
            "the progress fence's GPU VA"
        ),
    ],
};

const UMS_HWQUEUE_BY: &str = "K:DXGHWQUEUE::InitializeForUserModeSubmission @0x1401DA74C";

/// `DxgkDdiCreateHwQueue` for a user-mode-submission queue (`UserModeSubmission` set):
/// `HWQUEUE_BY` hands it to `UMS_HWQUEUE_BY`, which creates no progress fence and zeroes the
/// three progress-fence fields; the others are as for [`CREATE_HWQUEUE`].
pub const CREATE_HWQUEUE_USER_MODE: Ddi<DXGKARG_CREATEHWQUEUE> = Ddi {
    name: "DxgkDdiCreateHwQueue(UserModeSubmission)",
    block: "DXGKARG_CREATEHWQUEUE",
    rows: &[
        zero_row!(
            DXGKARG_CREATEHWQUEUE.Anonymous,
            true,
            UMS_HWQUEUE_BY,
            "zeroed with the next two; a user-mode queue has no progress fence"
        ),
        zero_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceCPUVirtualAddress,
            true,
            UMS_HWQUEUE_BY,
            "zeroed; no progress fence"
        ),
        zero_row!(
            DXGKARG_CREATEHWQUEUE.HwQueueProgressFenceGPUVirtualAddress,
            true,
            UMS_HWQUEUE_BY,
            "zeroed; no progress fence"
        ),
    ],
};

const DOORBELL_BY: &str = "K:DXGDOORBELL::Initialize @0x1401D9E74";

/// `DxgkDdiCreateDoorbell`: `DOORBELL_BY` builds the block on its stack, every field written
/// (the padding after the two 32-bit fields zeroed), after it checked both allocations
/// belong to the queue's device and set up the doorbell's status slot and CPU page; it skips
/// the call on an adapter whose driver reports no doorbells to create.
pub const CREATE_DOORBELL: Ddi<DXGKARG_CREATEDOORBELL> = Ddi {
    name: "DxgkDdiCreateDoorbell",
    block: "DXGKARG_CREATEDOORBELL",
    rows: &[
        filled_row!(
            DXGKARG_CREATEDOORBELL.hHwQueue,
            true,
            DOORBELL_BY,
            "the driver's handle of the queue (from DxgkDdiCreateHwQueue)"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.hDoorbell,
            true,
            DOORBELL_BY,
            "Dxgkrnl's doorbell object; the driver writes its own handle over it"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.PrivateDriverDataSize,
            true,
            DOORBELL_BY,
            "the caller's size"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.PrivateDriverData,
            true,
            DOORBELL_BY,
            "the caller's data"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.hRingBuffer,
            true,
            DOORBELL_BY,
            "the creating device's open of the ring's allocation (its hDeviceSpecificAllocation, \
             K:DXGDEVICE::OpenAllocations @0x140324850)"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.hRingBufferControl,
            true,
            DOORBELL_BY,
            "the same for the ring control's allocation"
        ),
        filled_row!(
            DXGKARG_CREATEDOORBELL.Flags,
            true,
            DOORBELL_BY,
            "the caller's D3DKMT_CREATE_DOORBELL flags word, unchanged: RequireSecondaryCpuVA \
             in bit 0 (refused before on an adapter without secondary doorbells), \
             ResizeRingBufferOperation in bit 1, where DXGKARG_CREATEDOORBELL_FLAGS names bit 0 \
             ResizeRingBufferOperation (the pages' reading translates)"
        ),
    ],
};

const SUBMIT_BY: &str = "M:SubmitRenderToHwQueue @0x14000E8B0";

/// `DxgkDdiSubmitCommandToHwQueue` of a kernel-mode queue's buffer
/// (`D3DKMTSubmitCommandToHwQueue`): `K:DXGHWQUEUE::SubmitCommand` @0x1402C6610 queues the
/// caller's buffer to VidSch (refusing private data larger than the context's
/// `DmaBufferPrivateDataSize`, and copying it to the pool), and VidSch's release of the
/// packet (`M:VidSchiReleasePacketToGpu` @0x140011740) hands it to `SUBMIT_BY`, which builds
/// the block on its stack with the padding after `Flags` zeroed. VidMm's paging buffers go
/// through `M:SubmitPagingToHwQueue` @0x140045C20 instead (`Flags.Paging`), to the paging
/// process's queue.
pub const SUBMIT_COMMAND_TO_HWQUEUE: Ddi<DXGKARG_SUBMITCOMMANDTOHWQUEUE> = Ddi {
    name: "DxgkDdiSubmitCommandToHwQueue",
    block: "DXGKARG_SUBMITCOMMANDTOHWQUEUE",
    rows: &[
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.hHwQueue,
            true,
            SUBMIT_BY,
            "the driver's handle of the queue (from DxgkDdiCreateHwQueue)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.HwQueueProgressFenceId,
            true,
            SUBMIT_BY,
            "the packet's progress fence value: the caller's HwQueueProgressFenceId"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.DmaBufferVirtualAddress,
            true,
            SUBMIT_BY,
            "the caller's CommandBuffer"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.DmaBufferSize,
            true,
            SUBMIT_BY,
            "the caller's CommandLength"
        ),
        zero_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.DmaBufferPrivateDataSize,
            true,
            SUBMIT_BY,
            "the size of Dxgkrnl's copy of the caller's private data, which \
             K:DXGHWQUEUE::SubmitCommand @0x1402C6610 refuses above the context's \
             DmaBufferPrivateDataSize; rvgpu's KMD asks for none"
        ),
        zero_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.pDmaBufferPrivateData,
            true,
            SUBMIT_BY,
            "Dxgkrnl's copy of the caller's private data, null when there is none (as above)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.Flags,
            true,
            SUBMIT_BY,
            "Present and RedirectedPresent from the packet's present flags, no other bit (a \
             D3DKMTSubmitCommandToHwQueue buffer is no present: zero)"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.HwQueueProgressFenceGpuVa,
            false,
            SUBMIT_BY,
            "the queue's progress fence's GPU VA, from the packet"
        ),
        filled_row!(
            DXGKARG_SUBMITCOMMANDTOHWQUEUE.HwQueueProgressFenceCpuVa,
            false,
            SUBMIT_BY,
            "the queue's progress fence's current-value storage, kernel mapping (the packet's; \
             VidSch writes the value there itself when it completes a packet without the call)"
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
        check(&UPDATE_PAGE_TABLE_INVALIDATE);
        check(&CREATE_ALLOCATION);
        check(&ALLOCATION_INFO);
        check(&OPEN_ALLOCATION);
        check(&OPEN_ALLOCATION_INFO);
        check(&CREATE_HWQUEUE);
        check(&CREATE_HWQUEUE_USER_MODE);
        check(&CREATE_DOORBELL);
        check(&SUBMIT_COMMAND_TO_HWQUEUE);
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

    /// An allocation info handed over with an answer already in it is caught: 24H2 zeroes
    /// the array.
    #[test]
    fn an_allocation_info_with_an_answer_is_caught() {
        let mut b = DXGK_ALLOCATIONINFO {
            PrivateDriverDataSize: 16,
            ..Default::default()
        };
        assert_eq!(ALLOCATION_INFO.filled_zero(&b).count(), 0);
        b.Size = 4096;
        b.hAllocation = 8 as crate::HANDLE;
        let got: std::vec::Vec<_> = ALLOCATION_INFO.filled_zero(&b).collect();
        assert_eq!(got, ["Size", "hAllocation"]);
    }

    /// An invalidation that names the allocation it unmaps, or its offset, is caught: 24H2's
    /// carry neither.
    #[test]
    fn an_invalidation_naming_an_allocation_is_caught() {
        let mut b = DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
            FirstPteVirtualAddress: 0x20_0000,
            ..Default::default()
        };
        assert_eq!(UPDATE_PAGE_TABLE_INVALIDATE.filled_zero(&b).count(), 0);
        b.hAllocation = 8 as crate::HANDLE;
        b.AllocationOffsetInBytes = 0x1000;
        let got: std::vec::Vec<_> = UPDATE_PAGE_TABLE_INVALIDATE.filled_zero(&b).collect();
        assert_eq!(got, ["hAllocation", "AllocationOffsetInBytes"]);
        assert_eq!(
            UPDATE_PAGE_TABLE.filled_zero(&b).count(),
            0,
            "a map may name one"
        );
    }
}
