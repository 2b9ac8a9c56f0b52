//! `D3DKMTIsFeatureEnabled`'s kernel entry, as 24H2 `K:NtDxgkIsFeatureEnabled` @0x1401D1A40
//! answers it: the caller's 12-byte `D3DKMT_ISFEATUREENABLED` captured whole, `hAdapter` 0
//! asking the global feature database (`DpiIsFeatureEnabled` @0x14024E064 with no adapter),
//! another handle the database of the render adapter paired with it; `Result` written back on
//! success only.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use rvgpu_ddi::feature::DXGK_FEATURE_ID;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::machine::Machine;

/// `D3DKMT_ISFEATUREENABLED` in the released x64 layout (12 bytes).
#[derive(FromBytes, IntoBytes, Immutable, KnownLayout, Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct D3dkmtIsFeatureEnabled {
    /// `hAdapter` (in): 0 for the global database.
    pub h_adapter: u32,
    /// `FeatureId` (in).
    pub feature_id: DXGK_FEATURE_ID,
    /// `Result` (`DXGK_ISFEATUREENABLED_RESULT`: `Version` in the low 16 bits, then
    /// `Enabled`, `KnownFeature`; out).
    pub result: u32,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<D3dkmtIsFeatureEnabled>() == 12);
    assert!(offset_of!(D3dkmtIsFeatureEnabled, result) == 8);
};

/// `DXGK_ISFEATUREENABLED_RESULT` as a dword (d3dukmdt.h): the version, `Enabled` (bit 16),
/// `KnownFeature` (bit 17).
fn result_dword(version: Option<u16>, known: bool) -> u32 {
    u32::from(version.unwrap_or(0))
        | (u32::from(version.is_some()) << 16)
        | (u32::from(known) << 17)
}

/// `NtDxgkIsFeatureEnabled` for the caller's structure `a` (captured whole by the bridge: a
/// fault is its status), in 24H2's order:
/// 1. `hAdapter` 0: the global database's answer. The simulation has no OS-wide feature
///    configuration: no feature is enabled there (`Version` 0, `Enabled` 0), `KnownFeature` as
///    for an adapter;
/// 2. `hAdapter` not an adapter handle of the caller (`adapter`): STATUS_INVALID_PARAMETER;
/// 3. the paired render adapter (the adapter itself: it is render-only) answers from its
///    feature database, as the driver's `IsFeatureEnabled` callback is answered.
///
/// On success `a.result` is the answer; on failure `a` is unchanged.
pub fn nt_dxgk_is_feature_enabled(
    m: &Machine,
    a: &mut D3dkmtIsFeatureEnabled,
    adapter: impl FnOnce(KmtHandle) -> Option<usize>,
) -> Result<(), NtStatus> {
    let known = crate::dxgkrnl::features::DRIVER_FEATURES.contains(&a.feature_id);
    if a.h_adapter == 0 {
        a.result = result_dword(None, known);
        return Ok(());
    }
    let i = adapter(a.h_adapter).ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
    let version = m.feature_db(i).version(a.feature_id);
    a.result = result_dword(version, known);
    Ok(())
}
