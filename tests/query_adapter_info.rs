//! DxgkDdiQueryAdapterInfo before DxgkDdiStartDevice, through the driver's own
//! `DRIVER_INITIALIZATION_DATA` the way Dxgkrnl calls it, on an adapter from the real AddDevice
//! (NullPlatform: no device behind it).
//!
//! Microsoft's reference pages say Dxgkrnl sends `DXGKQAITYPE_WDDMDEVICECAPS` and
//! `DXGKQAITYPE_IOMMU_CAPS` (with its companion `DXGKQAITYPE_PHYSICAL_MEMORY_CAPS`) after
//! AddDevice and before StartDevice, so they must be answered there; every other type still
//! needs a started adapter (STATUS_INVALID_DEVICE_STATE). Each answer is written into a buffer
//! with guard bytes after it: nothing past the structure may change.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::ptr;

use rvgpu_ddi::adapter::{
    DXGKDDI_WDDMv3_2, DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS,
    DXGKQAITYPE_HISTORYBUFFERPRECISION, DXGKQAITYPE_IOMMU_CAPS, DXGKQAITYPE_PHYSICAL_MEMORY_CAPS,
    DXGKQAITYPE_WDDMDEVICECAPS, DXGK_QUERYADAPTERINFOFLAGS, DXGK_QUERYADAPTERINFOTYPE,
};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_DEVICE_STATE, STATUS_INVALID_PARAMETER, STATUS_SUCCESS};
use rvgpu_ddi::{NTSTATUS, PDEVICE_OBJECT, PVOID};

mod common;
use common::NullPlatform;

const GUARD: u8 = 0x5A;

/// An adapter context from the real AddDevice, removed on drop.
struct Adapter {
    ctx: PVOID,
    d: DRIVER_INITIALIZATION_DATA,
    _pdo: Box<u64>,
}

impl Adapter {
    fn add() -> Self {
        let d = rvgpu_kmd::initialization_data::<NullPlatform>();
        let f = d.DxgkDdiAddDevice.expect("AddDevice filled");
        let mut pdo = Box::new(0u64);
        let p: PDEVICE_OBJECT = ptr::from_mut(&mut *pdo).cast();
        let mut ctx: PVOID = ptr::null_mut();
        // SAFETY: `p` is non-null and only stored by the driver; `&mut ctx` is a valid out
        // pointer for the call.
        let s = unsafe { f(p, &mut ctx) };
        assert_eq!(s, STATUS_SUCCESS, "AddDevice");
        assert!(!ctx.is_null());
        Self { ctx, d, _pdo: pdo }
    }

    /// Calls QueryAdapterInfo with an output buffer of `len` bytes followed by 16 guard bytes;
    /// returns the status and the whole buffer.
    fn query(&self, ty: DXGK_QUERYADAPTERINFOTYPE, len: usize) -> (NTSTATUS, Vec<u8>) {
        let f = self
            .d
            .DxgkDdiQueryAdapterInfo
            .expect("QueryAdapterInfo filled");
        let mut buf = vec![GUARD; len + 16];
        let args = DXGKARG_QUERYADAPTERINFO {
            Type: ty,
            pInputData: ptr::null_mut(),
            InputDataSize: 0,
            pOutputData: buf.as_mut_ptr().cast(),
            OutputDataSize: u32::try_from(len).expect("small"),
            Flags: DXGK_QUERYADAPTERINFOFLAGS::from_value(0),
            hKmdProcessHandle: ptr::null_mut(),
        };
        // SAFETY: live context from AddDevice; `args` and `buf` (len + 16 bytes) outlive the
        // call.
        let s = unsafe { f(self.ctx, &args) };
        (s, buf)
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        if let Some(f) = self.d.DxgkDdiRemoveDevice {
            // SAFETY: `ctx` came from AddDevice and is removed exactly once, here.
            let _ = unsafe { f(self.ctx) };
        }
    }
}

fn guards_intact(buf: &[u8], len: usize) -> bool {
    buf[len..].iter().all(|b| *b == GUARD)
}

#[test]
fn wddm_device_caps_are_answered_before_start() {
    let a = Adapter::add();
    let (s, buf) = a.query(DXGKQAITYPE_WDDMDEVICECAPS, 4);
    assert_eq!(s, STATUS_SUCCESS);
    assert_eq!(
        i32::from_le_bytes(buf[..4].try_into().expect("4 bytes")),
        DXGKDDI_WDDMv3_2
    );
    assert_eq!(DXGKDDI_WDDMv3_2, 0x3200);
    assert!(guards_intact(&buf, 4));
    let (s, buf) = a.query(DXGKQAITYPE_WDDMDEVICECAPS, 3);
    assert_eq!(s, STATUS_INVALID_PARAMETER);
    assert!(buf.iter().all(|b| *b == GUARD), "wrote into a short buffer");
}

#[test]
fn physical_memory_and_iommu_caps_are_answered_before_start() {
    let a = Adapter::add();
    let (s, buf) = a.query(DXGKQAITYPE_PHYSICAL_MEMORY_CAPS, 8);
    assert_eq!(s, STATUS_SUCCESS);
    let highest = u64::from_le_bytes(buf[..8].try_into().expect("8 bytes"));
    assert_eq!(highest, rvgpu_hw::addr::SYSMEM_LIMIT - 1);
    assert!(guards_intact(&buf, 8));

    let (s, buf) = a.query(DXGKQAITYPE_IOMMU_CAPS, 4);
    assert_eq!(s, STATUS_SUCCESS);
    // No IOMMU isolation, not required, no DMA remapping.
    assert_eq!(u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")), 0);
    assert!(guards_intact(&buf, 4));
}

#[test]
fn other_types_still_need_a_started_adapter() {
    let a = Adapter::add();
    for ty in [DXGKQAITYPE_DRIVERCAPS, DXGKQAITYPE_HISTORYBUFFERPRECISION] {
        let (s, buf) = a.query(ty, 1024);
        assert_eq!(s, STATUS_INVALID_DEVICE_STATE, "type {ty}");
        assert!(buf.iter().all(|b| *b == GUARD), "type {ty} wrote output");
    }
}
