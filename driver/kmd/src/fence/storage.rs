//! Where a native fence's values may live (NF-06, NF-16): the placement rule create checks.
//!
//! The OS allocates the storage (VidMm, from the segments the driver names for
//! `D3DKMDT_STANDARDALLOCATION_FENCESTORAGE`) and passes its GPU addresses to
//! `DxgkDdiCreateNativeFence`; the driver checks them against the fence's type before the CMP
//! may use them. The rule (docs/architecture.md, "Native fences: design notes"):
//!
//! - `D3DDDI_NATIVEFENCE_TYPE_DEFAULT`: CurrentValue in system memory, always (the CPU reads it
//!   and it may be shared across adapters, NF-16). MonitoredValue in system memory, or in local
//!   memory only when the OS announced `SupportOptimizedDefaultFenceType` (the "optimized"
//!   default fence).
//! - `D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU`: both values in local memory (only this GPU signals and
//!   waits; no CPU access); system memory is accepted too (it is what the device reaches
//!   either way, hardware.md §9.1).

use rvgpu_ddi::fence::{
    D3DDDI_NATIVEFENCE_TYPE, D3DDDI_NATIVEFENCE_TYPE_DEFAULT, D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU,
};
use rvgpu_hw::addr::{classify, GpuVa, Target};

/// Where one 64-bit fence value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// System memory (a bus address below `addr::SYSMEM_LIMIT`).
    System,
    /// GPU-local memory (VRAM, `addr::VRAM_BASE` + offset).
    Local,
}

/// Why create refuses the fence's storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementError {
    /// Zero, misaligned, outside both memories, or CurrentValue == MonitoredValue.
    BadAddress,
    /// A type the driver does not know.
    UnknownType,
    /// A default fence's CurrentValue in local memory (NF-06, NF-16).
    CurrentValueLocal,
    /// A default fence's MonitoredValue in local memory without the OS's optimized-default cap.
    MonitoredValueLocal,
}

/// Where the 8 bytes at GPU address `va` live, for a VRAM of `vram_size` bytes.
pub fn placement(va: GpuVa, vram_size: u64) -> Option<Placement> {
    if va.is_null() || !va.is_aligned(8) {
        return None;
    }
    match classify(va, 8, vram_size)? {
        Target::System(_) => Some(Placement::System),
        Target::Local(_) => Some(Placement::Local),
    }
}

/// Checks a fence's storage against its type (NF-06, NF-16). `optimized_default` is the OS's
/// `SupportOptimizedDefaultFenceType`. Returns where (CurrentValue, MonitoredValue) live, or
/// `None` when the OS passed no addresses at all: 24H2 and 25H2 never do, whatever
/// `MapToGpuSystemProcess` says (docs/windows-bringup.md, "Where the code and the pages
/// disagree"). The device never needs them: it reaches the values through the submitting
/// process's own mapping, and a CPU signal then rescans every blocked wait.
pub fn check(
    fence_type: D3DDDI_NATIVEFENCE_TYPE,
    current: GpuVa,
    monitored: GpuVa,
    vram_size: u64,
    optimized_default: bool,
) -> Result<Option<(Placement, Placement)>, PlacementError> {
    if fence_type != D3DDDI_NATIVEFENCE_TYPE_DEFAULT
        && fence_type != D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU
    {
        return Err(PlacementError::UnknownType);
    }
    if current.is_null() && monitored.is_null() {
        return Ok(None);
    }
    check_placed(fence_type, current, monitored, vram_size, optimized_default).map(Some)
}

/// [`check`] for a fence whose two addresses the OS passed.
fn check_placed(
    fence_type: D3DDDI_NATIVEFENCE_TYPE,
    current: GpuVa,
    monitored: GpuVa,
    vram_size: u64,
    optimized_default: bool,
) -> Result<(Placement, Placement), PlacementError> {
    if current == monitored {
        return Err(PlacementError::BadAddress);
    }
    let cv = placement(current, vram_size).ok_or(PlacementError::BadAddress)?;
    let mv = placement(monitored, vram_size).ok_or(PlacementError::BadAddress)?;
    match fence_type {
        D3DDDI_NATIVEFENCE_TYPE_DEFAULT => {
            if cv == Placement::Local {
                return Err(PlacementError::CurrentValueLocal);
            }
            if mv == Placement::Local && !optimized_default {
                return Err(PlacementError::MonitoredValueLocal);
            }
        }
        D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU => {}
        _ => return Err(PlacementError::UnknownType),
    }
    Ok((cv, mv))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check` with raw addresses, as the OS passes them.
    fn check(
        t: D3DDDI_NATIVEFENCE_TYPE,
        current: u64,
        monitored: u64,
        vram_size: u64,
        optimized_default: bool,
    ) -> Result<(Placement, Placement), PlacementError> {
        super::check_placed(
            t,
            GpuVa::new(current),
            GpuVa::new(monitored),
            vram_size,
            optimized_default,
        )
    }
    use rvgpu_hw::addr::VRAM_BASE;

    const VRAM: u64 = 16 << 20;
    const SYS: u64 = 0x10_0000;

    #[test]
    fn nf_06_default_fence_values_in_system_memory() {
        let d = D3DDDI_NATIVEFENCE_TYPE_DEFAULT;
        assert_eq!(
            check(d, SYS, SYS + 8, VRAM, false),
            Ok((Placement::System, Placement::System))
        );
        assert_eq!(
            check(d, VRAM_BASE, SYS, VRAM, false),
            Err(PlacementError::CurrentValueLocal)
        );
        // Even with the optimized-default cap, CurrentValue stays in system memory.
        assert_eq!(
            check(d, VRAM_BASE, SYS, VRAM, true),
            Err(PlacementError::CurrentValueLocal)
        );
        assert_eq!(
            check(d, SYS, VRAM_BASE, VRAM, false),
            Err(PlacementError::MonitoredValueLocal)
        );
        assert_eq!(
            check(d, SYS, VRAM_BASE, VRAM, true),
            Ok((Placement::System, Placement::Local))
        );
    }

    #[test]
    fn nf_06_intra_gpu_fence_values_in_local_memory() {
        let t = D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU;
        let top = VRAM_BASE + VRAM - 8;
        assert_eq!(
            check(t, top, VRAM_BASE, VRAM, false),
            Ok((Placement::Local, Placement::Local))
        );
        assert_eq!(
            check(t, SYS, SYS + 8, VRAM, false),
            Ok((Placement::System, Placement::System))
        );
    }

    #[test]
    fn nf_06_bad_addresses_and_types() {
        let d = D3DDDI_NATIVEFENCE_TYPE_DEFAULT;
        let bad = Err(PlacementError::BadAddress);
        assert_eq!(check(d, 0, SYS, VRAM, false), bad);
        assert_eq!(check(d, SYS + 4, SYS + 16, VRAM, false), bad);
        assert_eq!(check(d, SYS, SYS, VRAM, false), bad);
        let t = D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU;
        // Past the end of VRAM, and in the hole above it.
        assert_eq!(check(t, VRAM_BASE + VRAM, SYS, VRAM, false), bad);
        assert_eq!(check(t, VRAM_BASE + VRAM - 4, SYS, VRAM, false), bad);
        assert_eq!(
            check(7, SYS, SYS + 8, VRAM, false),
            Err(PlacementError::UnknownType)
        );
    }

    #[test]
    fn nf_11_no_system_process_addresses_is_accepted_but_half_of_them_is_not() {
        let d = D3DDDI_NATIVEFENCE_TYPE_DEFAULT;
        let va = GpuVa::new;
        assert_eq!(super::check(d, va(0), va(0), VRAM, false), Ok(None));
        assert_eq!(
            super::check(D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU, va(0), va(0), VRAM, false),
            Ok(None)
        );
        assert_eq!(
            super::check(d, va(0), va(SYS), VRAM, false),
            Err(PlacementError::BadAddress)
        );
        assert_eq!(
            super::check(d, va(SYS), va(0), VRAM, false),
            Err(PlacementError::BadAddress)
        );
        assert_eq!(
            super::check(7, va(0), va(0), VRAM, false),
            Err(PlacementError::UnknownType)
        );
    }
}
