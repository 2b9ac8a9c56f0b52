//! `D3DKMTEscape`'s driver-private path to `DxgkDdiEscape`, as 24H2 `K:DxgkEscape`
//! @0x140419AB0 answers it: the caller's `D3DKMT_ESCAPE` as written, its checks in that
//! function's order with its statuses, then the driver's escape with Dxgkrnl's kernel copy of
//! the data, copied back to the caller on any NT_SUCCESS status. The known escapes
//! (`Flags.DriverKnownEscape`, [`crate::dxgkrnl::kmtest`]) and the other types do not come here.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::kmtest::DXGKARG_ESCAPE;
use rvgpu_ddi::ntstatus::{STATUS_DEVICE_REMOVED, STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::HANDLE;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::adapter::ddi::{self, At};
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DKMT_ESCAPE` in the released x64 layout (32 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dkmtEscape {
    /// `hAdapter`.
    pub h_adapter: u32,
    /// `hDevice` (0: none).
    pub h_device: u32,
    /// `Type` (`D3DKMT_ESCAPETYPE`).
    pub escape_type: u32,
    /// `Flags` (`D3DDDI_ESCAPEFLAGS`).
    pub flags: u32,
    /// `pPrivateDriverData`.
    pub p_private_driver_data: u64,
    /// `PrivateDriverDataSize`.
    pub private_driver_data_size: u32,
    /// `hContext` (0: none).
    pub h_context: u32,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(D3dkmtEscape, flags) == 12);
    assert!(offset_of!(D3dkmtEscape, p_private_driver_data) == 16);
    assert!(offset_of!(D3dkmtEscape, private_driver_data_size) == 24);
    assert!(offset_of!(D3dkmtEscape, h_context) == 28);
    assert!(size_of::<D3dkmtEscape>() == 32);
};

/// `D3DKMT_ESCAPE_DRIVERPRIVATE`.
pub const ESCAPE_DRIVERPRIVATE: u32 = 0;
/// `D3DDDI_ESCAPEFLAGS::Reserved` (bit 4) and `Reserved2` (bits 8..31): refused on an adapter
/// of DDI version 0x5023 or later (every simulated one).
pub const ESCAPE_FLAGS_RESERVED: u32 = 0xFFFF_FF10;
/// `D3DDDI_ESCAPEFLAGS::VirtualMachineData`.
pub const ESCAPE_VIRTUAL_MACHINE_DATA: u32 = 1 << 5;
/// `D3DDDI_ESCAPEFLAGS::DriverKnownEscape`.
pub const ESCAPE_DRIVER_KNOWN: u32 = 1 << 6;
/// `D3DDDI_ESCAPEFLAGS::DriverCommonEscape`.
pub const ESCAPE_DRIVER_COMMON: u32 = 1 << 7;

/// `DxgkEscape` (24H2 @0x140419AB0) for a `D3DKMT_ESCAPE_DRIVERPRIVATE` escape `a` whose data
/// the caller's bridge copied into `data` (`PrivateDriverDataSize` bytes, read before any
/// handle is looked at), in 24H2's order; STATUS_INVALID_PARAMETER unless said:
/// 1. `hAdapter` not an adapter handle in the caller's table (`adapter`);
/// 2. `hDevice` not 0 and not a device of that adapter in the caller's table (`device`);
/// 3. `hContext` not 0 and not a context of `hDevice`;
/// 4. a reserved flag bit, then `VirtualMachineData`;
/// 5. the adapter not started (STATUS_DEVICE_REMOVED);
/// 6. the driver without `DxgkDdiEscape` (STATUS_NOT_SUPPORTED);
/// 7. no data;
/// 8. `DriverCommonEscape` (STATUS_NOT_SUPPORTED).
///
/// Then `DxgkDdiEscape` with the driver's device, context and process handles, whose status
/// is returned; `data` holds what the driver left, for the bridge to copy back on success.
pub fn dxgk_escape(
    m: &Machine,
    a: &D3dkmtEscape,
    data: &mut [u8],
    adapter: impl FnOnce(KmtHandle) -> Option<usize>,
    device: impl FnOnce(KmtHandle) -> Option<UmsProcess>,
) -> Result<(), NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    if a.escape_type != ESCAPE_DRIVERPRIVATE || a.flags & ESCAPE_DRIVER_KNOWN != 0 {
        // Not this entry's: the catalog's gaps say which paths the simulation leaves out.
        return Err(NtStatus(STATUS_NOT_SUPPORTED));
    }
    let i = adapter(a.h_adapter).ok_or(bad)?;
    let shared = m.adapter_shared(i).map_err(|_| bad)?;
    let p = match a.h_device {
        0 => None,
        h => Some(device(h).filter(|p| p.adapter == i).ok_or(bad)?),
    };
    let (kmd_device, kmd_process) = match p {
        Some(p) => {
            let os = lock(&shared.ums);
            let d = os.devices.get(&p.device).ok_or(bad)?;
            let process = lock(&shared.mm.vidmm).process(p.pid).map(|(k, _, _)| k);
            (d.kmd, process.unwrap_or(0))
        }
        None => (0, 0),
    };
    let kmd_context = match (a.h_context, p) {
        (0, _) => 0,
        (h, Some(p)) => {
            let os = lock(&shared.ums);
            match os.contexts.get(&h) {
                Some(c) if c.device == p.device => c.kmd,
                _ => return Err(bad),
            }
        }
        (_, None) => return Err(bad),
    };
    if a.flags & ESCAPE_FLAGS_RESERVED != 0 || a.flags & ESCAPE_VIRTUAL_MACHINE_DATA != 0 {
        return Err(bad);
    }
    if !m.adapter_started(i) {
        return Err(NtStatus(STATUS_DEVICE_REMOVED));
    }
    let escape = ddi::table_slot!(shared, DxgkDdiEscape)
        .ok()
        .flatten()
        .ok_or(NtStatus(STATUS_NOT_SUPPORTED))?;
    if data.is_empty() {
        return Err(bad);
    }
    if a.flags & ESCAPE_DRIVER_COMMON != 0 {
        return Err(NtStatus(STATUS_NOT_SUPPORTED));
    }
    let args = DXGKARG_ESCAPE {
        hDevice: kmd_device as HANDLE,
        Flags: a.flags,
        pPrivateDriverData: data.as_mut_ptr().cast(),
        PrivateDriverDataSize: u32::try_from(data.len()).map_err(|_| bad)?,
        hContext: kmd_context as HANDLE,
        hKmdProcessHandle: kmd_process as HANDLE,
    };
    let ctx = shared.context();
    let st = ddi::call(shared, escape, At::Caller, |f| {
        // SAFETY: the driver's DDI with its context and a valid argument block whose data
        // pointer names `data` (`PrivateDriverDataSize` bytes) for the call.
        unsafe { f(ctx, &args) }
    })
    .map_err(super::status)?;
    if st < 0 {
        return Err(NtStatus(st));
    }
    Ok(())
}

impl super::SimKmt<'_> {
    /// `D3DKMTEscape` of type `D3DKMT_ESCAPE_DRIVERPRIVATE` on this process's device with
    /// `data` (in/out), through the thunk's kernel entry ([`dxgk_escape`]).
    pub fn escape_driver_private(&self, data: &mut [u8]) -> Result<(), NtStatus> {
        self.thunk()?;
        let a = D3dkmtEscape {
            h_device: self.p.device,
            private_driver_data_size: u32::try_from(data.len())
                .map_err(|_| NtStatus(STATUS_INVALID_PARAMETER))?,
            ..D3dkmtEscape::default()
        };
        let own = self.p;
        dxgk_escape(
            self.m,
            &a,
            data,
            |_| Some(own.adapter),
            |h| (h == own.device).then_some(own),
        )
    }
}
