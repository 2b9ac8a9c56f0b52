//! `D3DKMTIsFeatureEnabled`'s kernel entry, as 24H2 `K:NtDxgkIsFeatureEnabled` @0x1401D1A40
//! answers it: the caller's 12-byte `D3DKMT_ISFEATUREENABLED` captured whole, `hAdapter` 0
//! asking the global feature database (`DpiIsFeatureEnabled` @0x14024E064 with no adapter),
//! another handle the database of the render adapter paired with it; `Result` written back on
//! success only.

use rvgpu_ddi::d3dkmt::D3DKMT_ISFEATUREENABLED;
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use crate::machine::Machine;

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
/// On success `a.Result` is the answer; on failure `a` is unchanged.
pub fn nt_dxgk_is_feature_enabled(
    m: &Machine,
    a: &mut D3DKMT_ISFEATUREENABLED,
    adapter: impl FnOnce(KmtHandle) -> Option<usize>,
) -> Result<(), NtStatus> {
    let known = crate::dxgkrnl::features::DRIVER_FEATURES.contains(&a.FeatureId);
    if a.hAdapter == 0 {
        a.Result = result_dword(None, known);
        return Ok(());
    }
    let i = adapter(a.hAdapter).ok_or(NtStatus(STATUS_INVALID_PARAMETER))?;
    let version = m.feature_db(i).version(a.FeatureId);
    a.Result = result_dword(version, known);
    Ok(())
}
