//! `D3DKMTQueryAdapterInfo`'s kernel entry, as 24H2 `K:DxgkQueryAdapterInfoImpl` @0x140383210
//! answers it, for the one type this simulation models: `KMTQAITYPE_NODEMETADATA`, how a
//! runtime learns that a node is hardware-scheduled (`NodeData.Flags.ContextSchedulingSupported`,
//! the driver's `DXGK_NODEMETADATA` handed on unchanged).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED};
use rvgpu_ddi::submission::DXGK_NODEMETADATA;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use crate::machine::Machine;

/// `D3DKMT_QUERYADAPTERINFO` in the released x64 layout (24 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dkmtQueryAdapterInfo {
    /// `hAdapter`.
    pub h_adapter: u32,
    /// `Type` (`KMTQUERYADAPTERINFOTYPE`).
    pub info_type: u32,
    /// `pPrivateDriverData`: the type's structure in the caller's process.
    pub p_private_driver_data: u64,
    /// `PrivateDriverDataSize`.
    pub private_driver_data_size: u32,
    /// Alignment.
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<D3dkmtQueryAdapterInfo>() == 24);

/// `KMTQAITYPE_NODEMETADATA`.
pub const KMTQAITYPE_NODEMETADATA: u32 = 25;
/// `sizeof(D3DKMT_NODEMETADATA)`: `NodeOrdinalAndAdapterIndex` and the packed 74-byte
/// `DXGK_NODEMETADATA`.
pub const NODEMETADATA_SIZE: u32 = 78;

/// The 74 bytes of `md` as d3dkmdt.h lays them out.
fn metadata_bytes(md: &DXGK_NODEMETADATA) -> [u8; 74] {
    let mut out = [0u8; 74];
    let engine = md.EngineType;
    let name = md.FriendlyName;
    let flags = md.Flags.Value;
    out[..4].copy_from_slice(&engine.to_le_bytes());
    for (i, w) in name.iter().enumerate() {
        let at = 4 + 2 * i;
        if let Some(d) = out.get_mut(at..at + 2) {
            d.copy_from_slice(&w.to_le_bytes());
        }
    }
    out[68..72].copy_from_slice(&flags.to_le_bytes());
    out[72] = md.GpuMmuSupported;
    out[73] = md.IoMmuSupported;
    out
}

/// `DxgkQueryAdapterInfoImpl` for the caller's structure `a`, in 24H2's order, every refusal
/// STATUS_INVALID_PARAMETER unless said:
/// 1. `pPrivateDriverData` NULL; `PrivateDriverDataSize` 0, or overflowing when rounded up to 8;
/// 2. the type's input captured from `mem` (its fault status);
/// 3. `hAdapter` not in the caller's table (`adapter`);
/// 4. `KMTQAITYPE_NODEMETADATA`: a size other than 78; the physical adapter index (the input's
///    high 16 bits) past the one physical adapter; the node (its low 16 bits) past the
///    adapter's nodes; no metadata for it, STATUS_NOT_SUPPORTED;
/// 5. the output written back to `mem`, the whole size.
///
/// Every other type is STATUS_NOT_SUPPORTED here: the simulation's answer, not 24H2's (the
/// UMD asks for none of them).
pub fn dxgk_query_adapter_info_impl(
    m: &Machine,
    a: &D3dkmtQueryAdapterInfo,
    adapter: impl FnOnce(KmtHandle) -> Option<usize>,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    let bad = NtStatus(STATUS_INVALID_PARAMETER);
    let size = a.private_driver_data_size;
    if a.p_private_driver_data == 0 || size == 0 || size.checked_add(7).is_none() {
        return Err(bad);
    }
    if a.info_type != KMTQAITYPE_NODEMETADATA {
        return Err(NtStatus(STATUS_NOT_SUPPORTED));
    }
    let mut out = mem.read(a.p_private_driver_data, size)?;
    let i = adapter(a.h_adapter).ok_or(bad)?;
    if size != NODEMETADATA_SIZE {
        return Err(bad);
    }
    let input = out
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes);
    let (node, physical) = (input & 0xFFFF, input >> 16);
    if physical >= 1 {
        return Err(bad);
    }
    let all = m.node_metadata(i);
    if node as usize >= all.len() {
        return Err(bad);
    }
    let md = all
        .get(node as usize)
        .ok_or(NtStatus(STATUS_NOT_SUPPORTED))?;
    if let Some(d) = out.get_mut(4..78) {
        d.copy_from_slice(&metadata_bytes(md));
    }
    mem.write(a.p_private_driver_data, &out)
}
