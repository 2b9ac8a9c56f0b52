//! `D3DKMTQueryAdapterInfo`'s kernel entry, as 24H2 `K:DxgkQueryAdapterInfoImpl` @0x140383210
//! answers it, for the two types this simulation models: `KMTQAITYPE_NODEMETADATA`, how a
//! runtime learns that a node is hardware-scheduled (`NodeData.Flags.ContextSchedulingSupported`,
//! the driver's `DXGK_NODEMETADATA` handed on unchanged), and `KMTQAITYPE_WDDM_1_2_CAPS`, how a
//! program learns whether the adapter resets engines one by one (`SupportPerEngineTDR`, from the
//! `DXGK_DRIVERCAPS` the driver reported at start).

use rvgpu_ddi::adapter::DXGK_DRIVERCAPS;
pub use rvgpu_ddi::d3dkmt::D3DKMT_QUERYADAPTERINFO;
use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_ddi::submission::DXGK_NODEMETADATA;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::context_virtual::CallerMemory;
use super::hw_queue::Buffer;
use super::refusal::row::*;
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `KMTQAITYPE_NODEMETADATA`.
pub const KMTQAITYPE_NODEMETADATA: u32 = 25;
/// `sizeof(D3DKMT_NODEMETADATA)`: `NodeOrdinalAndAdapterIndex` and the packed 74-byte
/// `DXGK_NODEMETADATA`.
pub const NODEMETADATA_SIZE: u32 = 78;

/// `KMTQAITYPE_WDDM_1_2_CAPS`.
pub const KMTQAITYPE_WDDM_1_2_CAPS: u32 = 17;
/// `sizeof(D3DKMT_WDDM_1_2_CAPS)`: `PreemptionCaps` (two granularities) and the flags word.
pub const WDDM_1_2_CAPS_SIZE: u32 = 12;
/// `D3DKMT_WDDM_1_2_CAPS` flags: `SupportNonVGA` (bit 0), `SupportSmoothRotation` (bit 1),
/// `SupportPerEngineTDR` (bit 2), `SupportCCD` (bit 4), `SupportSurpriseRemovalInHibernation`
/// (bit 9).
pub const WDDM_1_2_NON_VGA: u32 = 1 << 0;
/// `SupportSmoothRotation`.
pub const WDDM_1_2_SMOOTH_ROTATION: u32 = 1 << 1;
/// `SupportPerEngineTDR`.
pub const WDDM_1_2_PER_ENGINE_TDR: u32 = 1 << 2;
/// `SupportCCD`.
pub const WDDM_1_2_CCD: u32 = 1 << 4;
/// `SupportSurpriseRemovalInHibernation`.
pub const WDDM_1_2_SURPRISE_REMOVAL_IN_HIBERNATION: u32 = 1 << 9;

/// The 12 bytes of `D3DKMT_WDDM_1_2_CAPS` for a render adapter whose driver reported `caps`, as
/// the type's case of `K:DxgkQueryAdapterInfoImpl` @0x140383210 fills them: the two preemption
/// granularities, `SupportNonVGA`, `SupportSmoothRotation`, `SupportPerEngineTDR` and
/// `SupportSurpriseRemovalInHibernation` copied from the driver's caps, `SupportCCD` always
/// set. The other bits come from the adapter's display side and its own state
/// (`SupportKernelModeCommandBuffer`, `SupportSoftwareDeviceBitmaps`, `SupportGammaRamp`,
/// `SupportHWCursor`, `SupportHWVSync`, the last only with a display adapter): a render-only
/// adapter's, which this simulation models as clear.
fn wddm_1_2_caps(caps: &DXGK_DRIVERCAPS) -> [u8; 12] {
    let p = caps.PreemptionCaps;
    let bit = |b: u8, v: u32| if b != 0 { v } else { 0 };
    let flags = bit(caps.SupportNonVGA, WDDM_1_2_NON_VGA)
        | bit(caps.SupportSmoothRotation, WDDM_1_2_SMOOTH_ROTATION)
        | bit(caps.SupportPerEngineTDR, WDDM_1_2_PER_ENGINE_TDR)
        | WDDM_1_2_CCD
        | bit(
            caps.SupportSurpriseRemovalInHibernation,
            WDDM_1_2_SURPRISE_REMOVAL_IN_HIBERNATION,
        );
    let mut out = [0u8; 12];
    out[..4].copy_from_slice(&p.GraphicsPreemptionGranularity.to_le_bytes());
    out[4..8].copy_from_slice(&p.ComputePreemptionGranularity.to_le_bytes());
    out[8..].copy_from_slice(&flags.to_le_bytes());
    out
}

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

refusals! {
    /// `D3DKMTQueryAdapterInfo`'s refusals, in 24H2's order.
    QueryAdapterInfoCheck => QUERY_ADAPTER_INFO_CHECKS {
        NullData: "pPrivateDriverData NULL" => INVALID_PARAMETER;
        Size: "PrivateDriverDataSize 0, or overflowing when rounded up to 8" => INVALID_PARAMETER;
        InputUnreadable: "KMTQAITYPE_NODEMETADATA's input not readable" => ACCESS_VIOLATION,
            elsewhere "the caller's memory answers it (`CallerMemory::read`)";
        Adapter: "hAdapter not in the caller's handle table" => INVALID_PARAMETER;
        MetadataSize: "KMTQAITYPE_NODEMETADATA: PrivateDriverDataSize not 78" => INVALID_PARAMETER;
        PhysicalAdapter: "KMTQAITYPE_NODEMETADATA: adapter index past the physical adapters" => INVALID_PARAMETER;
        Node: "KMTQAITYPE_NODEMETADATA: node past the adapter's" => INVALID_PARAMETER;
        NoMetadata: "KMTQAITYPE_NODEMETADATA: no node metadata" => NOT_SUPPORTED;
        CapsSize: "KMTQAITYPE_WDDM_1_2_CAPS: PrivateDriverDataSize not 12" => INVALID_PARAMETER;
        NoCaps: "KMTQAITYPE_WDDM_1_2_CAPS: no render adapter (no caps reported)" => UNSUCCESSFUL;
    }
}

/// `D3DKMTQueryAdapterInfo`'s row of the thunk catalog ([`super::catalog`]).
pub const QUERY_ADAPTER_INFO: Thunk = Thunk {
    name: "D3DKMTQueryAdapterInfo",
    source: Some(&[src("DxgkQueryAdapterInfoImpl", 0x140383210)]),
    checks: QUERY_ADAPTER_INFO_CHECKS,
    written_back: &[
        "KMTQAITYPE_NODEMETADATA: NodeData, the driver's DXGK_NODEMETADATA unchanged \
         (Flags.ContextSchedulingSupported: the node is hardware-scheduled)",
        "KMTQAITYPE_WDDM_1_2_CAPS: the driver's PreemptionCaps, SupportNonVGA, \
         SupportSmoothRotation, SupportPerEngineTDR and SupportSurpriseRemovalInHibernation; \
         SupportCCD set; the display-side bits clear on a render-only adapter",
    ],
    pending: Pending::No,
    entry: Some("query_adapter_info::dxgk_query_adapter_info_impl"),
    gaps: "only KMTQAITYPE_NODEMETADATA and KMTQAITYPE_WDDM_1_2_CAPS are modelled (every \
           other type: STATUS_NOT_SUPPORTED): the UMD and the DLL ask for the first alone \
           (umd/src/nodes.rs), the harness's D3DKMT program for the second (Tdr.PerEngineCaps); \
           the harness asks for KMTQAITYPE_PHYSICALADAPTERDEVICEIDS and \
           KMTQAITYPE_ADAPTERTYPE on Windows only, its simulated backends read the machine",
};

/// `DxgkQueryAdapterInfoImpl` for the caller's structure `a`, in 24H2's order, every refusal
/// STATUS_INVALID_PARAMETER unless said:
/// 1. `pPrivateDriverData` NULL; `PrivateDriverDataSize` 0, or overflowing when rounded up to 8;
/// 2. `KMTQAITYPE_NODEMETADATA`'s input captured from `mem` (its fault status);
/// 3. `hAdapter` not in the caller's table (`adapter`);
/// 4. `KMTQAITYPE_NODEMETADATA`: a size other than 78; the physical adapter index (the input's
///    high 16 bits) past the one physical adapter; the node (its low 16 bits) past the
///    adapter's nodes; no metadata for it, STATUS_NOT_SUPPORTED;
///    `KMTQAITYPE_WDDM_1_2_CAPS`: a size other than 12; no render adapter (here: no caps
///    reported), STATUS_UNSUCCESSFUL;
/// 5. the output written back to `mem`, the whole size.
///
/// Every other type is STATUS_NOT_SUPPORTED here: the simulation's answer, not 24H2's (the
/// UMD asks for neither; the harness's D3DKMT program asks for the WDDM 1.2 caps).
pub fn dxgk_query_adapter_info_impl(
    m: &Machine,
    a: &D3DKMT_QUERYADAPTERINFO,
    adapter: impl FnOnce(KmtHandle) -> Option<usize>,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = QueryAdapterInfoCheck;
    let size = a.PrivateDriverDataSize;
    if a.pPrivateDriverData == 0 {
        return Err(C::NullData.refuse());
    }
    if size == 0 || size.checked_add(7).is_none() {
        return Err(C::Size.refuse());
    }
    if a.Type != KMTQAITYPE_NODEMETADATA && a.Type != KMTQAITYPE_WDDM_1_2_CAPS {
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    if a.Type == KMTQAITYPE_WDDM_1_2_CAPS {
        // Not among the types whose input 24H2 captures: the buffer starts zeroed.
        let i = adapter(a.hAdapter).ok_or(C::Adapter.refuse())?;
        if size != WDDM_1_2_CAPS_SIZE {
            return Err(C::CapsSize.refuse());
        }
        let shared = m.adapter_shared(i).map_err(|_| C::NoCaps.refuse())?;
        let caps = (*lock(&shared.caps)).ok_or(C::NoCaps.refuse())?;
        return mem.write(a.pPrivateDriverData, &wddm_1_2_caps(&caps));
    }
    let mut out = mem.read(a.pPrivateDriverData, size)?;
    let i = adapter(a.hAdapter).ok_or(C::Adapter.refuse())?;
    if size != NODEMETADATA_SIZE {
        return Err(C::MetadataSize.refuse());
    }
    let input = out
        .get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes);
    let (node, physical) = (input & 0xFFFF, input >> 16);
    if physical >= 1 {
        return Err(C::PhysicalAdapter.refuse());
    }
    let all = m.node_metadata(i);
    if node as usize >= all.len() {
        return Err(C::Node.refuse());
    }
    let md = all.get(node as usize).ok_or(C::NoMetadata.refuse())?;
    if let Some(d) = out.get_mut(4..78) {
        d.copy_from_slice(&metadata_bytes(md));
    }
    mem.write(a.pPrivateDriverData, &out)
}

/// `KMTQAITYPE_WDDM_1_2_CAPS` as process `p` asks it of the adapter its device is on (a
/// simulated process opens no adapter handle of its own).
pub(super) fn process_wddm_1_2_caps(m: &Machine, p: &UmsProcess) -> Result<[u8; 12], NtStatus> {
    let mut out = [0u8; 12];
    {
        let buf = Buffer::new(&mut out);
        let (at, size) = buf.pointer();
        let a = D3DKMT_QUERYADAPTERINFO {
            hAdapter: 0,
            Type: KMTQAITYPE_WDDM_1_2_CAPS,
            pPrivateDriverData: at,
            PrivateDriverDataSize: size,
            Padding0: 0,
        };
        let adapter = p.adapter;
        dxgk_query_adapter_info_impl(m, &a, |_| Some(adapter), &buf)?;
    }
    Ok(out)
}
