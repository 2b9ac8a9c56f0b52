//! The TDR caps check at start.

use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;

/// TDR-01: `SupportPerEngineTDR` set with any of the four per-engine DDIs null fails the
/// adapter start (the OS would call a null pointer).
pub(crate) fn validate_caps(
    caps: &rvgpu_ddi::adapter::DXGK_DRIVERCAPS,
    t: &DRIVER_INITIALIZATION_DATA,
) -> Result<(), String> {
    if caps.SupportPerEngineTDR == 0 {
        return Ok(());
    }
    let missing: Vec<&str> = [
        (
            "DxgkDdiQueryDependentEngineGroup",
            t.DxgkDdiQueryDependentEngineGroup.is_some(),
        ),
        (
            "DxgkDdiQueryEngineStatus",
            t.DxgkDdiQueryEngineStatus.is_some(),
        ),
        ("DxgkDdiResetEngine", t.DxgkDdiResetEngine.is_some()),
        ("DxgkDdiCollectDbgInfo", t.DxgkDdiCollectDbgInfo.is_some()),
    ]
    .into_iter()
    .filter(|(_, ok)| !ok)
    .map(|(n, _)| n)
    .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "SupportPerEngineTDR = 1 without {} (TDR-01)",
            missing.join(", ")
        ))
    }
}
