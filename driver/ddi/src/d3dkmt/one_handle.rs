//! The blocks that carry one handle: `D3DKMTCloseAdapter`'s and the destroy thunks' of a
//! device, context, hardware queue, paging queue and synchronization object. Each is its
//! handle, 4 bytes.

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DKMT_CLOSEADAPTER`: `D3DKMTCloseAdapter`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_closeadapter>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_CLOSEADAPTER {
        /// In: the adapter to close.
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_DESTROYDEVICE`: `D3DKMTDestroyDevice`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_destroydevice>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_DESTROYDEVICE {
        /// In: the device to destroy.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_DESTROYCONTEXT`: `D3DKMTDestroyContext`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_destroycontext>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_DESTROYCONTEXT {
        /// In: the context to destroy.
        #[offset(0)]
        pub hContext: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_DESTROYHWQUEUE`: `D3DKMTDestroyHwQueue`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_destroyhwqueue>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_DESTROYHWQUEUE {
        /// In: the hardware queue to destroy.
        #[offset(0)]
        pub hHwQueue: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DDDI_DESTROYPAGINGQUEUE`: `D3DKMTDestroyPagingQueue`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_destroypagingqueue>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_DESTROYPAGINGQUEUE {
        /// In: the paging queue to destroy.
        #[offset(0)]
        pub hPagingQueue: D3DKMT_HANDLE,
    }
}

c_type! {
    /// `D3DKMT_DESTROYSYNCHRONIZATIONOBJECT`: `D3DKMTDestroySynchronizationObject`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_destroysynchronizationobject>
    #[size(4)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_DESTROYSYNCHRONIZATIONOBJECT {
        /// In: the synchronization object to destroy.
        #[offset(0)]
        pub hSyncObject: D3DKMT_HANDLE,
    }
}
