//! The GPU virtual-address thunks' blocks: `D3DKMTReserveGpuVirtualAddress`,
//! `D3DKMTMapGpuVirtualAddress`, `D3DKMTFreeGpuVirtualAddress` and
//! `D3DKMTUpdateGpuVirtualAddress` (the d3dukmdt.h blocks among them). Offsets follow from the
//! headers' member lists under the x64 rules (`D3DKMT_PTR` and `D3DKMT_ALIGN64` members
//! 8 bytes, 8-aligned; a flag word or a `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE` is its value).

use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::D3DKMT_PTR;
use crate::basic::*;
use crate::macros::c_type;

c_type! {
    /// `D3DDDI_RESERVEGPUVIRTUALADDRESS`: `D3DKMTReserveGpuVirtualAddress`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_reservegpuvirtualaddress>
    #[size(72)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_RESERVEGPUVIRTUALADDRESS {
        /// In: the paging queue, or (the union's other arm) the adapter.
        #[offset(0)]
        pub hPagingQueue: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(4)]
        pub Padding0: UINT,
        /// In: the address asked for, or 0.
        #[offset(8)]
        pub BaseAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: the lowest address acceptable.
        #[offset(16)]
        pub MinimumAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: the highest address acceptable.
        #[offset(24)]
        pub MaximumAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: bytes to reserve.
        #[offset(32)]
        pub Size: D3DGPU_SIZE_T,
        /// In: the `D3DDDIGPUVIRTUALADDRESS_RESERVATION_TYPE` (the union's other arm is
        /// `Reserved0`).
        #[offset(40)]
        pub ReservationType: INT,
        /// Alignment of the next member.
        #[offset(44)]
        pub Padding1: UINT,
        /// In: the driver's protection bits.
        #[offset(48)]
        pub DriverProtection: UINT64,
        /// Out: the reserved range's start.
        #[offset(56)]
        pub VirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Out: the paging fence value after which the range is usable.
        #[offset(64)]
        pub PagingFenceValue: UINT64,
    }
}

c_type! {
    /// `D3DDDI_MAPGPUVIRTUALADDRESS`: `D3DKMTMapGpuVirtualAddress`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_mapgpuvirtualaddress>
    #[size(104)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_MAPGPUVIRTUALADDRESS {
        /// In: the paging queue.
        #[offset(0)]
        pub hPagingQueue: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(4)]
        pub Padding0: UINT,
        /// In: the address asked for, or 0.
        #[offset(8)]
        pub BaseAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: the lowest address acceptable.
        #[offset(16)]
        pub MinimumAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: the highest address acceptable.
        #[offset(24)]
        pub MaximumAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: the allocation to map.
        #[offset(32)]
        pub hAllocation: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(36)]
        pub Padding1: UINT,
        /// In: the first page of the allocation mapped.
        #[offset(40)]
        pub OffsetInPages: D3DGPU_SIZE_T,
        /// In: pages mapped.
        #[offset(48)]
        pub SizeInPages: D3DGPU_SIZE_T,
        /// In: the `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE` word.
        #[offset(56)]
        pub Protection: UINT64,
        /// In: the driver's protection bits.
        #[offset(64)]
        pub DriverProtection: UINT64,
        /// Reserved, zero.
        #[offset(72)]
        pub Reserved0: UINT,
        /// Alignment of the next member.
        #[offset(76)]
        pub Padding2: UINT,
        /// Reserved, zero.
        #[offset(80)]
        pub Reserved1: UINT64,
        /// Out: the mapped range's start.
        #[offset(88)]
        pub VirtualAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Out: the paging fence value after which the mapping is usable.
        #[offset(96)]
        pub PagingFenceValue: UINT64,
    }
}

c_type! {
    /// `D3DKMT_FREEGPUVIRTUALADDRESS`: `D3DKMTFreeGpuVirtualAddress`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_freegpuvirtualaddress>
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_FREEGPUVIRTUALADDRESS {
        /// In: the adapter.
        #[offset(0)]
        pub hAdapter: D3DKMT_HANDLE,
        /// Alignment of the next member.
        #[offset(4)]
        pub Padding0: UINT,
        /// In: the range's start.
        #[offset(8)]
        pub BaseAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// In: its size in bytes.
        #[offset(16)]
        pub Size: D3DGPU_SIZE_T,
    }
}

c_type! {
    /// `D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION`: one operation of
    /// `D3DKMTUpdateGpuVirtualAddress`. The union after `OperationType` is laid out as its
    /// widest arm, `MapProtect`; the other arms share its first three members' offsets (`Copy`:
    /// `SourceAddress` at 8, `DestAddress` at 24; `Unmap`: `Protection` at 24), read and
    /// written through [`operand`](Self::operand).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_updategpuvirtualaddress_operation>
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
        /// The `D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION_TYPE`: which arm follows.
        #[offset(0)]
        pub OperationType: INT,
        /// Alignment of the union.
        #[offset(4)]
        pub Padding0: UINT,
        /// The range's start (`Copy`: the source).
        #[offset(8)]
        pub BaseAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// The range's size in bytes.
        #[offset(16)]
        pub SizeInBytes: D3DGPU_SIZE_T,
        /// `Map`, `MapProtect`: the allocation (the low half of [`operand`](Self::operand)).
        #[offset(24)]
        pub hAllocation: D3DKMT_HANDLE,
        /// Its alignment padding (the high half of [`operand`](Self::operand)).
        #[offset(28)]
        pub Padding1: UINT,
        /// `Map`, `MapProtect`: the first byte of the allocation mapped.
        #[offset(32)]
        pub AllocationOffsetInBytes: D3DGPU_SIZE_T,
        /// `Map`, `MapProtect`: bytes of the allocation mapped.
        #[offset(40)]
        pub AllocationSizeInBytes: D3DGPU_SIZE_T,
        /// `MapProtect`: the `D3DDDIGPUVIRTUALADDRESS_PROTECTION_TYPE` word.
        #[offset(48)]
        pub Protection: UINT64,
        /// `MapProtect`: the driver's protection bits.
        #[offset(56)]
        pub DriverProtection: UINT64,
    }
}

impl D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION {
    /// The 8 bytes at offset 24, whichever arm's they are: `hAllocation` (`Map`,
    /// `MapProtect`), `Protection` (`Unmap`) or `DestAddress` (`Copy`).
    pub const fn operand(&self) -> UINT64 {
        (self.Padding1 as UINT64) << 32 | self.hAllocation as UINT64
    }

    /// Sets the 8 bytes at offset 24 (see [`operand`](Self::operand)).
    pub fn set_operand(&mut self, value: UINT64) {
        let [l0, l1, l2, l3, h0, h1, h2, h3] = value.to_le_bytes();
        self.hAllocation = UINT::from_le_bytes([l0, l1, l2, l3]);
        self.Padding1 = UINT::from_le_bytes([h0, h1, h2, h3]);
    }
}

c_type! {
    /// `D3DKMT_UPDATEGPUVIRTUALADDRESS`: `D3DKMTUpdateGpuVirtualAddress`'s block.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-_d3dkmt_updategpuvirtualaddress>
    #[size(56)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[derive(FromBytes, IntoBytes, Immutable)]
    pub struct D3DKMT_UPDATEGPUVIRTUALADDRESS {
        /// In: the device.
        #[offset(0)]
        pub hDevice: D3DKMT_HANDLE,
        /// In: the context whose queue orders the update.
        #[offset(4)]
        pub hContext: D3DKMT_HANDLE,
        /// In: the fence the update waits for.
        #[offset(8)]
        pub hFenceObject: D3DKMT_HANDLE,
        /// In: entries at `Operations`.
        #[offset(12)]
        pub NumOperations: UINT,
        /// In: the operations (a [`D3DDDI_UPDATEGPUVIRTUALADDRESS_OPERATION`] array).
        #[offset(16)]
        pub Operations: D3DKMT_PTR,
        /// Reserved, zero.
        #[offset(24)]
        pub Reserved0: UINT,
        /// Alignment of the next member.
        #[offset(28)]
        pub Padding0: UINT,
        /// Reserved, zero.
        #[offset(32)]
        pub Reserved1: UINT64,
        /// In: the value of `hFenceObject` waited for.
        #[offset(40)]
        pub FenceValue: UINT64,
        /// In: the `Flags` word (`DoNotWait` bit 0).
        #[offset(48)]
        pub Flags: UINT,
        /// Tail padding to the 8-byte alignment.
        #[offset(52)]
        pub Padding1: UINT,
    }
}
