//! The audit of a process's GpuMmu set-up: `DxgkDdiCreateProcess`, `DxgkDdiGetRootPageTableSize`
//! and `DxgkDdiSetRootPageTable`.

use super::Ddi;
use crate::allocation::DXGKARG_CREATEPROCESS;
use crate::process::{DXGKARG_GETROOTPAGETABLESIZE, DXGKARG_SETROOTPAGETABLE};

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

const SET_ROOT_BY: &str = "M:VidSchiEnsureRootPageTableUpdated @0x1400EAF40";

/// `DxgkDdiSetRootPageTable`: the block is built on the stack of `SET_ROOT_BY` (before a
/// context's first submission and when it resumes) when the root of the context's process
/// moved since the context last got one, from the process's root page table on the context's
/// physical adapter; every field is written, the padding after `SegmentId` and after
/// `NumEntries` zeroed.
pub const SET_ROOT_PAGE_TABLE: Ddi<DXGKARG_SETROOTPAGETABLE> = Ddi {
    name: "DxgkDdiSetRootPageTable",
    block: "DXGKARG_SETROOTPAGETABLE",
    rows: &[
        filled_row!(
            DXGKARG_SETROOTPAGETABLE.hContext,
            true,
            SET_ROOT_BY,
            "the driver's handle of the context"
        ),
        filled_row!(
            DXGKARG_SETROOTPAGETABLE.Address,
            true,
            SET_ROOT_BY,
            "the root page table's segment and its offset there (the root's allocation), \
             Padding zero"
        ),
        filled_row!(
            DXGKARG_SETROOTPAGETABLE.NumEntries,
            true,
            SET_ROOT_BY,
            "the root's entry count, as the process's root was sized (the level description's, \
             or DxgkDdiGetRootPageTableSize's NumberOfPte on an adapter with a variable-size root)"
        ),
    ],
};

const ROOT_SIZE_BY: &str = "M:CVirtualAddressAllocator::CommitVirtualAddressRange @0x1400ADD10";

/// `DxgkDdiGetRootPageTableSize` when a process's root page table on a physical adapter is
/// first made, or must grow to cover a committed range, and only when the GPU MMU has two
/// levels: `ROOT_SIZE_BY` builds the block on its stack, then keeps the driver's returned size
/// and the entry count read back from the block. A count below the one asked, or a size
/// below the table's previous one, is bug check 0x10E / 0x48.
pub const GET_ROOT_PAGE_TABLE_SIZE: Ddi<DXGKARG_GETROOTPAGETABLESIZE> = Ddi {
    name: "DxgkDdiGetRootPageTableSize",
    block: "DXGKARG_GETROOTPAGETABLESIZE",
    rows: &[
        filled_row!(
            DXGKARG_GETROOTPAGETABLESIZE.NumberOfPte,
            false,
            ROOT_SIZE_BY,
            "the root entries needed to reach the range's last page; the driver may raise it"
        ),
        filled_row!(
            DXGKARG_GETROOTPAGETABLESIZE.PhysicalAdapterIndex,
            true,
            ROOT_SIZE_BY,
            "the physical adapter the table is for"
        ),
    ],
};
