//! GpuMmu processes and their root page tables (`DxgkDdiCreateProcess`,
//! `DxgkDdiDestroyProcess`, `DxgkDdiGetRootPageTableSize`, `DxgkDdiSetRootPageTable`;
//! d3dkmddi.h, WDDM 2.0+). Reached through [`crate::allocation`], whose docs give the IRQL,
//! pointer and layout conventions.

use crate::basic::*;
use crate::macros::{c_type, extern_fn, flag_word};
use crate::memory::D3DGPU_PHYSICAL_ADDRESS;

// ---------------------------------------------------------------------------------------------
// Processes and root page tables (WDDM 2.0+)
// ---------------------------------------------------------------------------------------------

flag_word! {
    /// `DXGK_CREATEPROCESSFLAGS`: kind of process in [`DXGKARG_CREATEPROCESS::Flags`].
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgk_createprocessflags>
    pub struct DXGK_CREATEPROCESSFLAGS {
        /// The OS's system process (the paging process lives here).
        SystemProcess,
        /// The GDI process.
        GdiProcess,
        /// A virtual-machine process (WDDM 2.2+).
        VirtualMachineProcess,
        /// A VM worker process (WDDM 2.4+).
        VirtualMachineWorkerProcess,
        /// A process in a session-isolated container (WDDM 2.5+).
        SessionIsolatedContainer,
    }
}

c_type! {
    /// `DXGKARG_CREATEPROCESS`: argument of `DxgkDdiCreateProcess` (members through WDDM 2.4).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_createprocess>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_CREATEPROCESS {
        /// In: Dxgkrnl's handle of the process (the `FaultedProcessHandle` of page faults).
        #[offset(0)]
        pub hDxgkProcess: HANDLE,
        /// Out: the driver's handle; passed back as `hProcess` in paging operations and to
        /// `DxgkDdiDestroyProcess`.
        #[offset(8)]
        pub hKmdProcess: HANDLE,
        /// In: kind of process.
        #[offset(16)]
        pub Flags: DXGK_CREATEPROCESSFLAGS,
        /// In: elements of `pPasid`.
        #[offset(20)]
        pub NumPasid: UINT,
        /// In: PASIDs of the process (IoMmu).
        #[offset(24)]
        pub pPasid: *mut ULONG,
        /// In: the driver's VM worker process when `Flags.VirtualMachineProcess` (WDDM 2.4+).
        #[offset(32)]
        pub hKmdVmWorkerProcess: HANDLE,
        /// In: length of `pProcessName` in characters (WDDM 2.4+).
        #[offset(40)]
        pub ProcessNameLength: UINT,
        /// In: process name, may be null (WDDM 2.4+).
        #[offset(48)]
        pub pProcessName: *mut WCHAR,
    }
}

/// `DXGKDDI_CREATEPROCESS` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
/// INOUT_PDXGKARG_CREATEPROCESS pArgs)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_createprocess>
pub type PDXGKDDI_CREATEPROCESS = DDI_FN<*mut DXGKARG_CREATEPROCESS>;

/// `DXGKDDI_DESTROYPROCESS` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter, IN_CONST_HANDLE
/// hKmdProcess)`. There is no argument structure: the second parameter is the driver's own
/// process handle from [`DXGKARG_CREATEPROCESS::hKmdProcess`].
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_destroyprocess>
pub type PDXGKDDI_DESTROYPROCESS = DDI_FN<HANDLE>;

c_type! {
    /// `DXGKARG_GETROOTPAGETABLESIZE`: argument of `DxgkDdiGetRootPageTableSize`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_getrootpagetablesize>
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
    pub struct DXGKARG_GETROOTPAGETABLESIZE {
        /// In: entries VidMm wants; out: entries the root table will hold (the driver may round
        /// up).
        #[offset(0)]
        pub NumberOfPte: UINT,
        /// In: physical adapter.
        #[offset(4)]
        pub PhysicalAdapterIndex: UINT,
    }
}

extern_fn! {
    /// `DXGKDDI_GETROOTPAGETABLESIZE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
    /// INOUT_PDXGKARG_GETROOTPAGETABLESIZE pArgs)`, returns `SIZE_T`: the root table's size in
    /// bytes for `pArgs.NumberOfPte` entries (no NTSTATUS; it cannot fail).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_getrootpagetablesize>
    pub type PDXGKDDI_GETROOTPAGETABLESIZE = fn(
        hAdapter: HANDLE,
        pArgs: *mut DXGKARG_GETROOTPAGETABLESIZE,
    ) -> SIZE_T;
}

c_type! {
    /// `DXGKARG_SETROOTPAGETABLE`: argument of `DxgkDdiSetRootPageTable`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_setrootpagetable>
    #[size(32)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_SETROOTPAGETABLE {
        /// Driver context handle (from `DxgkDdiCreateContext`) whose address space changes.
        #[offset(0)]
        pub hContext: HANDLE,
        /// Where the root page table now is (segment + offset).
        #[offset(8)]
        pub Address: D3DGPU_PHYSICAL_ADDRESS,
        /// Entries in the root table.
        #[offset(24)]
        pub NumEntries: UINT,
    }
}

extern_fn! {
    /// `DXGKDDI_SETROOTPAGETABLE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter,
    /// IN_CONST_PDXGKARG_SETROOTPAGETABLE pSetPageTable)`, returns VOID: it must not fail.
    /// Called when a context is created and whenever its root page table moves.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_setrootpagetable>
    pub type PDXGKDDI_SETROOTPAGETABLE = fn(
        hAdapter: HANDLE,
        pSetPageTable: *const DXGKARG_SETROOTPAGETABLE,
    );
}
