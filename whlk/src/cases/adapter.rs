//! `Adapter.*`: bring-up through the driver's table.

use crate::backend::{Backend, Capability, ExecMode, SessionConfig};
use crate::case::{Case, CaseError, CaseResult};
use crate::ensure;

use super::common::{no_fault, session, shut_down};

/// The cases of this area.
pub const CASES: &[Case] = &[
    Case {
        name: "Adapter.StartStop",
        requirements: &["DDI-01"],
        summary: "load, start, stop, remove, unload through DRIVER_INITIALIZATION_DATA (step mode)",
        needs: &[],
        optional: &[Capability::BugChecks],
        run: start_stop_step,
    },
    Case {
        name: "Adapter.StartStopThreaded",
        requirements: &["DDI-01"],
        summary: "the same life cycle with device, interrupt and DPC threads",
        needs: &[],
        optional: &[Capability::BugChecks],
        run: start_stop_threaded,
    },
    Case {
        name: "Adapter.RestartAfterStop",
        requirements: &["DDI-01"],
        summary: "StartDevice again after StopDevice",
        needs: &[],
        optional: &[],
        run: restart,
    },
    Case {
        name: "Adapter.TwoAdapters",
        requirements: &["DDI-01"],
        summary: "an iGPU and a dGPU start and stop independently under one driver",
        needs: &[],
        optional: &[],
        run: two_adapters,
    },
    Case {
        name: "Adapter.DriverCaps",
        requirements: &["NF-10", "TDR-02"],
        summary:
            "DRIVERCAPS is render-only, multi-engine, 64-bit atomics, consistent with the device",
        needs: &[Capability::KmdCaps],
        optional: &[],
        run: driver_caps,
    },
    Case {
        name: "Adapter.NativeFenceFeatureDisabled",
        requirements: &["NF-10"],
        summary: "with DXGK_FEATURE_NATIVE_FENCE off the driver starts without NativeGpuFence \
                  (Windows: the caps the KMD reports on a machine whose OS enabled no native \
                  fences)",
        needs: &[Capability::KmdCaps],
        optional: &[Capability::ConfiguredMachine],
        run: native_fence_disabled,
    },
];

fn life_cycle(b: &dyn Backend, mode: ExecMode) -> CaseResult {
    let mut s = b.open(&SessionConfig::new(mode))?;
    s.load_driver()?;
    let started = s.start_adapter(0)?;
    ensure!(
        started.sources == 0 && started.children == 0,
        "render-only adapter reported {} sources and {} children",
        started.sources,
        started.children
    );
    shut_down(&mut *s, 1)?;
    no_fault(&*s)
}

fn start_stop_step(b: &dyn Backend) -> CaseResult {
    life_cycle(b, ExecMode::Step)
}

fn start_stop_threaded(b: &dyn Backend) -> CaseResult {
    life_cycle(b, ExecMode::Threaded)
}

fn restart(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |_| {})?;
    s.stop_adapter(0)?;
    s.start_adapter(0)?;
    shut_down(&mut *s, 1)
}

fn two_adapters(b: &dyn Backend) -> CaseResult {
    let mut cfg = SessionConfig::new(ExecMode::Step);
    cfg.adapters = 2;
    let mut s = b.open(&cfg)?;
    ensure!(
        s.adapter_count() == 2,
        "expected 2 adapters, got {}",
        s.adapter_count()
    );
    s.load_driver()?;
    s.start_adapter(0)?;
    s.start_adapter(1)?;
    shut_down(&mut *s, 2)
}

fn driver_caps(b: &dyn Backend) -> CaseResult {
    let mut s = session(b, ExecMode::Step, |_| {})?;
    let c = s.kmd_caps()?.driver_caps(0)?;
    ensure!(
        c.nodes >= 2,
        "GpuEngineTopology reports {} nodes, the device has 2",
        c.nodes
    );
    ensure!(
        c.multi_engine_aware,
        "MultiEngineAware not set with {} nodes",
        c.nodes
    );
    ensure!(
        !c.no_64bit_atomics,
        "No64BitAtomics set although the device has ATOMIC64 (NF-01)"
    );
    ensure!(
        c.interrupt_message_number == 0,
        "line-based interrupt must report message 0, got {}",
        c.interrupt_message_number
    );
    let again = s.kmd_caps()?.driver_caps(0)?;
    ensure!(
        again == c,
        "DRIVERCAPS changed between two queries: {c:?} then {again:?}"
    );
    Ok(())
}

/// The OS turns the feature off for the case where the backend builds its machine; elsewhere
/// the machine's OS must be one that enabled no native fences (a test machine with hardware
/// scheduling off, the runbook's second pass), whose KMD's caps a program reads through its
/// test hooks.
fn native_fence_disabled(b: &dyn Backend) -> CaseResult {
    let caps = b.capabilities();
    let builds = caps.contains(Capability::ConfiguredMachine);
    if !builds && caps.contains(Capability::NativeFences) {
        return Err(CaseError::Skip(format!(
            "needs a machine whose OS enables no native fences, as on the runbook's second pass \
             (HwSchMode = 1; kmt-sim: --hwsch off); backend {} has them",
            b.name()
        )));
    }
    let mut s = session(b, ExecMode::Step, |cfg| {
        if builds {
            cfg.native_fence_feature = false;
        }
    })?;
    let c = s.kmd_caps()?.driver_caps(0)?;
    ensure!(
        !c.native_gpu_fence,
        "NativeGpuFence advertised while the OS disabled native fences"
    );
    Ok(())
}
