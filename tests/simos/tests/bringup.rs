//! Adapter bring-up through the driver's DRIVER_INITIALIZATION_DATA table, in both modes.

use rvgpu_ddi::adapter::DXGK_VIDSCHCAPS;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

fn bring_up_and_down(mode: Mode) -> Result<(), SimError> {
    let mut m = Machine::new(MachineConfig::single(mode));
    m.load_driver()?;
    let info = m.start_adapter(0)?;
    assert_eq!((info.sources, info.children), (0, 0), "render-only adapter");
    let caps = m.query_driver_caps(0)?;
    assert_eq!(
        caps.SchedulingCaps.Value, info.caps.SchedulingCaps.Value,
        "caps are stable across queries"
    );
    m.stop_adapter(0)?;
    m.remove_adapter(0)?;
    m.unload()?;
    assert_eq!(m.bugcheck(), None);
    Ok(())
}

#[test]
fn start_stop_step_mode() {
    if let Err(e) = bring_up_and_down(Mode::Step) {
        panic!("step-mode bring-up failed: {e}");
    }
}

#[test]
fn start_stop_threaded_mode() {
    if let Err(e) = bring_up_and_down(Mode::Threaded) {
        panic!("threaded bring-up failed: {e}");
    }
}

#[test]
fn two_adapters_start_and_stop_independently() {
    let mut m = Machine::new(MachineConfig::igpu_dgpu(Mode::Step));
    let r = (|| {
        m.load_driver()?;
        m.start_adapter(0)?;
        m.start_adapter(1)?;
        m.stop_adapter(1)?;
        m.remove_adapter(1)?;
        m.stop_adapter(0)?;
        m.remove_adapter(0)?;
        m.unload()
    })();
    if let Err(e) = r {
        panic!(
            "two-adapter bring-up failed: {e}; log: {:?}",
            m.driver_log()
        );
    }
}

#[test]
fn restart_after_stop() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    let r = (|| {
        m.load_driver()?;
        m.start_adapter(0)?;
        m.stop_adapter(0)?;
        m.start_adapter(0)?;
        m.stop_adapter(0)?;
        m.remove_adapter(0)
    })();
    if let Err(e) = r {
        panic!("restart failed: {e}");
    }
}

/// NF-10: the driver must not advertise native fences when the OS disabled the feature; with
/// the feature off, whatever the driver answers must be consistent with it.
#[test]
fn nf_10_native_fence_cap_follows_os_feature() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = false;
    let mut m = Machine::new(cfg);
    if let Err(e) = m.load_driver() {
        panic!("load: {e}");
    }
    match m.start_adapter(0) {
        Ok(info) => assert!(
            !info
                .caps
                .SchedulingCaps
                .is_set(DXGK_VIDSCHCAPS::NativeGpuFence),
            "started with NativeGpuFence although the OS feature is off"
        ),
        Err(SimError::Rejected(why)) => panic!("driver advertised native fences: {why}"),
        Err(e) => panic!("start: {e}"),
    }
}

/// The OS side of NF-10: a driver that advertises native fences with the feature disabled is
/// refused at start.
#[test]
fn nf_10_start_fails_when_native_fences_advertised_without_feature() {
    use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS, DXGK_DRIVERCAPS};
    use rvgpu_ddi::{HANDLE, NTSTATUS};
    use std::sync::OnceLock;

    type Qai = unsafe extern "system" fn(HANDLE, *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS;
    static REAL: OnceLock<Qai> = OnceLock::new();
    /// Wraps the real QueryAdapterInfo and sets NativeGpuFence in the caps.
    unsafe extern "system" fn lying_qai(
        ctx: HANDLE,
        args: *const DXGKARG_QUERYADAPTERINFO,
    ) -> NTSTATUS {
        let Some(real) = REAL.get() else { return -1 };
        // SAFETY: forwarding the OS's arguments to the driver's own routine.
        let s = unsafe { real(ctx, args) };
        // SAFETY: the OS passes a valid argument block; for DRIVERCAPS its output buffer is a
        // DXGK_DRIVERCAPS.
        unsafe {
            if s >= 0 && (*args).Type == DXGKQAITYPE_DRIVERCAPS {
                let caps = &mut *(*args).pOutputData.cast::<DXGK_DRIVERCAPS>();
                caps.SchedulingCaps.set(DXGK_VIDSCHCAPS::NativeGpuFence, 1);
            }
        }
        s
    }

    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = false;
    let mut m = Machine::new(cfg);
    let loaded = m.load_driver_with(|t| {
        if let Some(real) = t.DxgkDdiQueryAdapterInfo {
            let _ = REAL.set(real);
            t.DxgkDdiQueryAdapterInfo = Some(lying_qai);
        }
    });
    if let Err(e) = loaded {
        panic!("load: {e}");
    }
    match m.start_adapter(0) {
        Err(SimError::Rejected(why)) => assert!(why.contains("NF-10"), "{why}"),
        other => panic!(
            "expected the OS to refuse the start, got {other:?}; log {:#?}",
            m.driver_log()
        ),
    }
}

#[test]
fn dxgk_initialize_rejects_missing_mandatory_slot() {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    // The hook runs after validation, so to test validation we check the listed slots instead.
    assert!(rvgpu_simos::dxgkrnl::MANDATORY_SLOTS.contains(&"DxgkDdiInterruptRoutine"));
    if let Err(e) = m.load_driver() {
        panic!("load: {e}");
    }
    let again = m.load_driver();
    assert!(matches!(again, Err(SimError::Simulation(_))), "{again:?}");
}
