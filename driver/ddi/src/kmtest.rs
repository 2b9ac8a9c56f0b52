//! The WDDM 3.2 kernel-mode testing interface (d3dukmdt.h, d3dkmddi.h): the feature interface
//! the KMD returns for `DXGK_FEATURE_KERNEL_MODE_TESTING`, the argument of its one function and
//! the known escape through which user mode reaches it.
//!
//! Overview: <https://learn.microsoft.com/en-us/windows-hardware/drivers/display/kernel-mode-testing-of-wddm-features>.
//! None of these types is in the 10.0.22621 headers the layout check reads; the offsets below
//! are those of the reference pages' declarations under the x64 ABI, and agree with how 24H2's
//! Dxgkrnl reads them (\[D\] `KnownEscapeBuildTestCommandBuffer` @ 0x1401D1030: a 0x70-byte
//! escape whose `Operation` is at 0x50, sizes at 0x68/0x6C; the 14-word
//! `DXGKARG_BUILDTESTCOMMANDBUFFER` it builds on its stack with the sizes at 0x60 and the flags
//! at 0x68).

use crate::basic::*;
use crate::macros::{c_enum, c_type, flag_word, union_debug};

c_enum! {
    /// `D3DDDI_TESTCOMMANDBUFFEROP`: what a test command buffer does.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-d3dddi_testcommandbufferop>
    pub type D3DDDI_TESTCOMMANDBUFFEROP = u32 {
        /// Not specified.
        D3DDDI_TESTCOMMANDBUFFEROP_INVALID,
        /// Copy (`D3DDDI_TESTCOMMANDBUFFER_COPY`).
        D3DDDI_TESTCOMMANDBUFFEROP_COPY,
        /// Fill (`D3DDDI_TESTCOMMANDBUFFER_FILL`).
        D3DDDI_TESTCOMMANDBUFFEROP_FILL,
        /// A hung engine: an infinite loop that must not be preemptible.
        D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_LOOP,
        /// A long-running command for preemption tests: an infinite loop that must be preemptible.
        D3DDDI_TESTCOMMANDBUFFEROP_INFINITE_PREEMPTABLE_LOOP,
        /// One past the last operation.
        D3DDDI_TESTCOMMANDBUFFEROP_MAX,
    }
}

c_type! {
    /// `D3DDDI_TESTCOMMANDBUFFER_COPY`: copy `NumBytes` (a multiple of 4) between GPU VAs.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_testcommandbuffer_copy>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(24)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct D3DDDI_TESTCOMMANDBUFFER_COPY {
        /// Source GPU VA.
        #[offset(0)]
        pub SrcAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Destination GPU VA.
        #[offset(8)]
        pub DstAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Bytes to copy, a multiple of 4.
        #[offset(16)]
        pub NumBytes: UINT,
    }
}

c_type! {
    /// `D3DDDI_TESTCOMMANDBUFFER_FILL`: fill `NumBytes` (a multiple of 4) with a 4-byte pattern
    /// repeated.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_testcommandbuffer_fill>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(16)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct D3DDDI_TESTCOMMANDBUFFER_FILL {
        /// Destination GPU VA.
        #[offset(0)]
        pub DstAddress: D3DGPU_VIRTUAL_ADDRESS,
        /// Bytes to fill, a multiple of 4.
        #[offset(8)]
        pub NumBytes: UINT,
        /// The 4 bytes written over and over.
        #[offset(12)]
        pub Pattern: UINT,
    }
}

c_type! {
    /// The anonymous union of [`D3DDDI_TESTCOMMANDBUFFER`] (64 bytes).
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(64)]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub union D3DDDI_TESTCOMMANDBUFFER_0 {
        /// `Operation` COPY.
        pub Copy: D3DDDI_TESTCOMMANDBUFFER_COPY,
        /// `Operation` FILL.
        pub Fill: D3DDDI_TESTCOMMANDBUFFER_FILL,
        /// The union's size.
        pub Reserved: [u8; 64],
    }
}

impl Default for D3DDDI_TESTCOMMANDBUFFER_0 {
    fn default() -> Self {
        Self { Reserved: [0; 64] }
    }
}

// Every member is plain data over the same 64 initialised bytes.
union_debug!(D3DDDI_TESTCOMMANDBUFFER_0 => Reserved);

c_type! {
    /// `D3DDDI_TESTCOMMANDBUFFER`: one test command.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_testcommandbuffer>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(72)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct D3DDDI_TESTCOMMANDBUFFER {
        /// The operation's arguments.
        #[offset(0)]
        pub Anonymous: D3DDDI_TESTCOMMANDBUFFER_0,
        /// [`D3DDDI_TESTCOMMANDBUFFEROP`].
        #[offset(64)]
        pub Operation: D3DDDI_TESTCOMMANDBUFFEROP,
        /// Reserved.
        #[offset(68)]
        pub Reserved1: UINT,
    }
}

impl D3DDDI_TESTCOMMANDBUFFER_0 {
    /// The COPY arm.
    pub fn copy(&self) -> D3DDDI_TESTCOMMANDBUFFER_COPY {
        // SAFETY: a `Copy` arm of integers, valid for any bits.
        unsafe { self.Copy }
    }

    /// The FILL arm.
    pub fn fill(&self) -> D3DDDI_TESTCOMMANDBUFFER_FILL {
        // SAFETY: as `copy`.
        unsafe { self.Fill }
    }
}

impl D3DDDI_TESTCOMMANDBUFFER {
    /// A COPY command.
    pub fn copy(src: u64, dst: u64, bytes: u32) -> Self {
        Self {
            Anonymous: D3DDDI_TESTCOMMANDBUFFER_0 {
                Copy: D3DDDI_TESTCOMMANDBUFFER_COPY {
                    SrcAddress: src,
                    DstAddress: dst,
                    NumBytes: bytes,
                },
            },
            Operation: D3DDDI_TESTCOMMANDBUFFEROP_COPY,
            Reserved1: 0,
        }
    }

    /// A FILL command.
    pub fn fill(dst: u64, bytes: u32, pattern: u32) -> Self {
        let mut c = Self {
            Operation: D3DDDI_TESTCOMMANDBUFFEROP_FILL,
            ..Default::default()
        };
        c.Anonymous.Fill = D3DDDI_TESTCOMMANDBUFFER_FILL {
            DstAddress: dst,
            NumBytes: bytes,
            Pattern: pattern,
        };
        c
    }

    /// A command without arguments (the two loops, or any raw operation value).
    pub fn op(operation: D3DDDI_TESTCOMMANDBUFFEROP) -> Self {
        Self {
            Operation: operation,
            ..Default::default()
        }
    }

    /// The COPY arguments (meaningful when `Operation` is COPY).
    pub fn copy_args(&self) -> D3DDDI_TESTCOMMANDBUFFER_COPY {
        // SAFETY: plain data; every bit pattern of the union's bytes is a valid COPY.
        unsafe { self.Anonymous.Copy }
    }

    /// The FILL arguments (meaningful when `Operation` is FILL).
    pub fn fill_args(&self) -> D3DDDI_TESTCOMMANDBUFFER_FILL {
        // SAFETY: plain data; every bit pattern of the union's bytes is a valid FILL.
        unsafe { self.Anonymous.Fill }
    }
}

flag_word! {
    /// `D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS`: what `hContext` names.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_buildtestcommandbufferflags>
    pub struct D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS {
        /// 1: a hardware queue handle (`DxgkDdiCreateHwQueue`); 0: a context handle.
        HardwareQueue,
    }
}

c_type! {
    /// `DXGKARG_BUILDTESTCOMMANDBUFFER`: argument of `pfnBuildTestCommandBuffer`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkarg_buildtestcommandbuffer>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(112)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_BUILDTESTCOMMANDBUFFER {
        /// The KMD's context handle (`Flags.HardwareQueue` 0) or hardware queue handle (1).
        #[offset(0)]
        pub hContext: HANDLE,
        /// The command.
        #[offset(8)]
        pub Command: D3DDDI_TESTCOMMANDBUFFER,
        /// Where the KMD writes the device's commands (may be null: size query).
        #[offset(80)]
        pub pDmaBuffer: PVOID,
        /// Where the KMD writes data the commands need (may be null).
        #[offset(88)]
        pub pDmaBufferPrivateData: PVOID,
        /// In: `pDmaBuffer`'s size; out: bytes written, or needed with `STATUS_BUFFER_OVERFLOW`.
        #[offset(96)]
        pub DmaBufferSize: UINT,
        /// In: `pDmaBufferPrivateData`'s size; out: bytes written, or needed.
        #[offset(100)]
        pub DmaBufferPrivateDataSize: UINT,
        /// Flags.
        #[offset(104)]
        pub Flags: D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS,
    }
}

/// `DXGKDDI_BUILDTESTCOMMANDBUFFER` (PASSIVE_LEVEL): returns `STATUS_SUCCESS`,
/// `STATUS_BUFFER_OVERFLOW` with the sizes needed, or an error.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_buildtestcommandbuffer>
pub type PDXGKDDI_BUILDTESTCOMMANDBUFFER = DDI_FN<*mut DXGKARG_BUILDTESTCOMMANDBUFFER>;

c_type! {
    /// `DXGKDDI_KERNELMODETESTINGINTERFACE`: what `DxgkDdiQueryFeatureInterface` returns for
    /// `DXGK_FEATURE_KERNEL_MODE_TESTING`.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-dxgkddi_kernelmodetestinginterface>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(8)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct DXGKDDI_KERNELMODETESTINGINTERFACE {
        /// The builder.
        #[offset(0)]
        pub pfnBuildTestCommandBuffer: PDXGKDDI_BUILDTESTCOMMANDBUFFER,
    }
}

c_enum! {
    /// `D3DDDI_DRIVERESCAPETYPE`: the known driver escapes (`D3DDDI_ESCAPEFLAGS::DriverKnownEscape`).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ne-d3dukmdt-_d3dddi_driverescapetype>
    pub type D3DDDI_DRIVERESCAPETYPE = u32 {
        /// Builds a test command buffer ([`D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER`]).
        D3DDDI_DRIVERESCAPETYPE_BUILDTESTCOMMANDBUFFER = 3,
    }
}

c_type! {
    /// `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER`: the escape's private data (x64 layout; the
    /// `D3DKMT_PTR` members are 8 bytes).
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-d3dddi_driverescape_buildtestcommandbuffer>
    // wdk-layout-check: skip: WDDM 3.2, absent from 10.0.22621
    #[size(112)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default)]
    pub struct D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER {
        /// [`D3DDDI_DRIVERESCAPETYPE_BUILDTESTCOMMANDBUFFER`].
        #[offset(0)]
        pub EscapeType: D3DDDI_DRIVERESCAPETYPE,
        /// The D3D device (D3DKMT handle).
        #[offset(4)]
        pub hDevice: D3DKMT_HANDLE,
        /// The context or hardware queue (D3DKMT handle).
        #[offset(8)]
        pub hContext: D3DKMT_HANDLE,
        /// Flags.
        #[offset(12)]
        pub Flags: D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS,
        /// The command.
        #[offset(16)]
        pub Command: D3DDDI_TESTCOMMANDBUFFER,
        /// User-mode buffer for the commands.
        #[offset(88)]
        pub pDmaBuffer: u64,
        /// User-mode buffer for the private data.
        #[offset(96)]
        pub pDmaBufferPrivateData: u64,
        /// In: `pDmaBuffer`'s size; out: bytes written.
        #[offset(104)]
        pub DmaBufferSize: UINT,
        /// In: `pDmaBufferPrivateData`'s size; out: bytes written.
        #[offset(108)]
        pub DmaBufferPrivateDataSize: UINT,
    }
}

impl D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER {
    /// The escape at the start of `data` (the escape's private data); `None` when `data` is
    /// shorter than the structure.
    pub fn read_from(data: &[u8]) -> Option<Self> {
        if data.len() < core::mem::size_of::<Self>() {
            return None;
        }
        // SAFETY: `data` holds the structure's bytes, read unaligned; integers and a union of
        // integer structs, so any bytes are a value of it.
        Some(unsafe { data.as_ptr().cast::<Self>().read_unaligned() })
    }

    /// The escape's bytes, field by field (no padding or unused union bytes are copied: the
    /// union is written as the arm `Operation` names, zero past it).
    pub fn to_bytes(&self) -> [u8; core::mem::size_of::<Self>()] {
        let mut b = [0u8; core::mem::size_of::<Self>()];
        let mut put = |at: usize, v: &[u8]| {
            if let Some(to) = b.get_mut(at..).and_then(|b| b.get_mut(..v.len())) {
                to.copy_from_slice(v);
            }
        };
        put(0, &self.EscapeType.to_le_bytes());
        put(4, &self.hDevice.to_le_bytes());
        put(8, &self.hContext.to_le_bytes());
        put(12, &self.Flags.Value.to_le_bytes());
        let c = &self.Command;
        match c.Operation {
            D3DDDI_TESTCOMMANDBUFFEROP_COPY => {
                let a = c.Anonymous.copy();
                put(16, &a.SrcAddress.to_le_bytes());
                put(24, &a.DstAddress.to_le_bytes());
                put(32, &a.NumBytes.to_le_bytes());
            }
            D3DDDI_TESTCOMMANDBUFFEROP_FILL => {
                let a = c.Anonymous.fill();
                put(16, &a.DstAddress.to_le_bytes());
                put(24, &a.NumBytes.to_le_bytes());
                put(28, &a.Pattern.to_le_bytes());
            }
            _ => {}
        }
        put(80, &c.Operation.to_le_bytes());
        put(84, &c.Reserved1.to_le_bytes());
        put(88, &self.pDmaBuffer.to_le_bytes());
        put(96, &self.pDmaBufferPrivateData.to_le_bytes());
        put(104, &self.DmaBufferSize.to_le_bytes());
        put(108, &self.DmaBufferPrivateDataSize.to_le_bytes());
        b
    }
}

/// Largest DMA buffer the escape accepts ("limited to 4 KB", overview page; \[D\]
/// `KnownEscapeBuildTestCommandBuffer`: `DmaBufferSize - 4 > 0xFFC` is refused).
pub const TEST_DMA_BUFFER_MAX: u32 = 4096;
/// Smallest DMA buffer the escape accepts (\[D\] as above).
pub const TEST_DMA_BUFFER_MIN: u32 = 4;
/// Largest private data the escape accepts ("limited to 1 KB"; \[D\]: `> 0x400` refused).
pub const TEST_PRIVATE_DATA_MAX: u32 = 1024;

c_type! {
    /// `DXGKARG_ESCAPE`: argument of `DxgkDdiEscape` (WDDM 2.2 and later: with
    /// `hKmdProcessHandle`). `pPrivateDriverData` is Dxgkrnl's kernel copy of the caller's
    /// `D3DKMT_ESCAPE` data, copied back to the caller on success.
    ///
    /// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/ns-d3dkmddi-_dxgkarg_escape>
    #[size(48)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct DXGKARG_ESCAPE {
        /// The driver's device handle (`DxgkDdiCreateDevice`), NULL when the caller named none.
        #[offset(0)]
        pub hDevice: HANDLE,
        /// `D3DDDI_ESCAPEFLAGS` as a word.
        #[offset(8)]
        pub Flags: UINT,
        /// In/out: the escape's data.
        #[offset(16)]
        pub pPrivateDriverData: *mut core::ffi::c_void,
        /// Its size in bytes.
        #[offset(24)]
        pub PrivateDriverDataSize: UINT,
        /// The driver's context handle, NULL when the caller named none.
        #[offset(32)]
        pub hContext: HANDLE,
        /// The driver's process handle (`DxgkDdiCreateProcess`).
        #[offset(40)]
        pub hKmdProcessHandle: HANDLE,
    }
}

/// `DXGKDDI_ESCAPE` (PASSIVE_LEVEL): `(IN_CONST_HANDLE hAdapter, IN_CONST_PDXGKARG_ESCAPE
/// pEscape)`.
///
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_escape>
pub type PDXGKDDI_ESCAPE = DDI_FN<*const DXGKARG_ESCAPE>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The escape's bytes put every field at its asserted offset: read back, they are the
    /// fields written (a COPY and a FILL command, whose arms differ).
    #[test]
    fn kt_escape_bytes_round_trip_field_by_field() {
        for command in [
            D3DDDI_TESTCOMMANDBUFFER::copy(0x1000, 0x2000, 64),
            D3DDDI_TESTCOMMANDBUFFER::fill(0x3000, 32, 0xABCD_EF01),
        ] {
            let esc = D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER {
                EscapeType: D3DDDI_DRIVERESCAPETYPE_BUILDTESTCOMMANDBUFFER,
                hDevice: 7,
                hContext: 9,
                Flags: D3DDDI_BUILDTESTCOMMANDBUFFERFLAGS { Value: 1 },
                Command: command,
                pDmaBuffer: 0x1111_2222_3333,
                pDmaBufferPrivateData: 0x4444_5555,
                DmaBufferSize: 4096,
                DmaBufferPrivateDataSize: 16,
            };
            let bytes = esc.to_bytes();
            let back =
                D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER::read_from(&bytes).expect("whole");
            assert_eq!(
                (
                    back.EscapeType,
                    back.hDevice,
                    back.hContext,
                    back.Flags.Value
                ),
                (esc.EscapeType, 7, 9, 1)
            );
            assert_eq!(
                (back.pDmaBuffer, back.pDmaBufferPrivateData),
                (esc.pDmaBuffer, esc.pDmaBufferPrivateData)
            );
            assert_eq!(
                (back.DmaBufferSize, back.DmaBufferPrivateDataSize),
                (4096, 16)
            );
            assert_eq!(back.Command.Operation, command.Operation);
            let (a, b) = (back.Command.Anonymous, command.Anonymous);
            if command.Operation == D3DDDI_TESTCOMMANDBUFFEROP_COPY {
                let (a, b) = (a.copy(), b.copy());
                assert_eq!(
                    (a.SrcAddress, a.DstAddress, a.NumBytes),
                    (b.SrcAddress, b.DstAddress, b.NumBytes)
                );
            } else {
                let (a, b) = (a.fill(), b.fill());
                assert_eq!(
                    (a.DstAddress, a.NumBytes, a.Pattern),
                    (b.DstAddress, b.NumBytes, b.Pattern)
                );
            }
        }
        assert!(D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER::read_from(&[0; 111]).is_none());
    }
}
