//! `D3DKMTIsFeatureEnabled`'s kernel entry, as 24H2 `K:NtDxgkIsFeatureEnabled` @0x1401D1A40
//! answers it: the caller's 12-byte `D3DKMT_ISFEATUREENABLED` captured whole, `hAdapter` 0
//! asking the global feature database (`DpiIsFeatureEnabled` @0x14024E064 with no adapter),
//! another handle the database of the render adapter paired with it; `Result` written back on
//! success only.

use rvgpu_ddi::d3dkmt::D3DKMT_ISFEATUREENABLED;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::refusal::row::*;
use crate::machine::Machine;

/// `DXGK_ISFEATUREENABLED_RESULT` as a dword (d3dukmdt.h): the version, `Enabled` (bit 16),
/// `KnownFeature` (bit 17).
fn result_dword(version: Option<u16>, known: bool) -> u32 {
    u32::from(version.unwrap_or(0))
        | (u32::from(version.is_some()) << 16)
        | (u32::from(known) << 17)
}

refusals! {
    /// `D3DKMTIsFeatureEnabled`'s refusals, in 24H2's order.
    IsFeatureEnabledCheck => IS_FEATURE_ENABLED_CHECKS {
        ProcessContext: "hAdapter not 0: no process context" => INVALID_PARAMETER,
            elsewhere "every simulated caller is a process";
        AdapterHandle: "hAdapter not 0 and not an adapter handle in the caller's table" => INVALID_PARAMETER;
        PairedRenderAdapter: "the paired render adapter's device extension without the port's 'Dprt' \
            signature or of another version than 2" => INVALID_PARAMETER,
            elsewhere "every simulated adapter's extension is the port's, version 2";
    }
}

/// `D3DKMTIsFeatureEnabled`'s row of the thunk catalog ([`super::catalog`]).
pub const IS_FEATURE_ENABLED: Thunk = Thunk {
    name: "D3DKMTIsFeatureEnabled",
    source: Some(&[
        src("NtDxgkIsFeatureEnabled", 0x1401D1A40),
        src("DpiIsFeatureEnabled", 0x14024E064),
    ]),
    checks: IS_FEATURE_ENABLED_CHECKS,
    written_back: &[
        "Result, on success: the global feature database's answer when hAdapter is 0, \
         else that of the render adapter paired with hAdapter",
    ],
    pending: Pending::No,
    entry: Some("feature::nt_dxgk_is_feature_enabled"),
    gaps: "hAdapter 0: the simulation has no OS-wide feature configuration and answers \
           Version 0, Enabled 0 (24H2's DpiIsFeatureEnabled without an adapter reads the \
           global database); KnownFeature is the simulated OS's list of driver features; \
           the harness's simulated backend answers from the adapter's feature database \
           without the thunk's checks; a failed pairing lookup, adapter access or database \
           lookup (DxgkIsFeatureEnabled) returns its status, not catalog checks",
};

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
    let i = adapter(a.hAdapter).ok_or(IsFeatureEnabledCheck::AdapterHandle.refuse())?;
    let version = m.feature_db(i).version(a.FeatureId);
    a.Result = result_dword(version, known);
    Ok(())
}
