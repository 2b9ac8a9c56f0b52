//! The Windows backend's code (`backend::kmt::KmtBackend`) over the simulated thunks: the same
//! adapter discovery, buffers, queues, submissions, fences and waits the Windows executable performs
//! through gdi32, run here against the driver on the emulated GPU. Every case passes or is
//! skipped with a reason; none fails, and the cases a D3DKMT program can observe pass.

use rvgpu_whlk::backend::kmt::sim::SimPlatform;
use rvgpu_whlk::backend::kmt::KmtBackend;
use rvgpu_whlk::backend::{Backend, Capability};
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::junit;

mod support;

#[test]
fn kmt_backend_passes_or_skips_every_case() {
    let b = KmtBackend::new(SimPlatform);
    assert_eq!(
        b.capabilities().iter().collect::<Vec<_>>(),
        [
            Capability::Fences,
            Capability::MonitoredFences,
            Capability::UserModeSubmission,
            Capability::AllocationUsage,
            Capability::GpuVaPlacement,
            Capability::NativeFences,
            Capability::KernelModeTesting
        ],
        "a D3DKMT program offers native and monitored fences, user-mode submission, the UMD's \
         tracked buffers, the GPU VA thunks, native fences and the kernel-mode testing escape"
    );
    // What user mode can observe runs and passes, monitored fences signalled and waited on by
    // the CPU and by user-mode queues too.
    let reports = support::run_every_case(
        &b,
        support::USER_MODE_CASES
            .iter()
            .copied()
            .chain(["MonitoredFence.GpuSignalThreaded"]),
    );
    // What user mode cannot see is skipped, naming the capability it needs, not failed or
    // dropped.
    for (name, why) in [
        ("NativeFence.MonitoredValueTracksWaiters", "FenceInternals"),
        ("NativeFence.PackedStorage", "FenceInternals"),
        ("NativeFence.HandleLifetimes", "DirectDdi"),
        ("UserModeSubmission.NodeMetadataAndCaps", "KmdCaps"),
        ("UserModeSubmission.UserQueueRefusesKernelPath", "UmdBypass"),
    ] {
        let r = reports
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no case {name}"));
        assert!(
            matches!(&r.outcome, Outcome::Skip(m) if m.contains(why)),
            "{name}: {:?}",
            r.outcome
        );
    }
    // The runner skips by capability, before a session opens: no method of this backend
    // answers `Unsupported` at run time.
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(why.starts_with("needs capability"), "{}: {why}", r.name);
        }
    }
    // Every skip says why, in the table and in the JUnit report.
    let xml = junit::render(b.name(), &reports);
    for r in &reports {
        if let Outcome::Skip(why) = &r.outcome {
            assert!(!why.is_empty(), "{}: skipped without a reason", r.name);
        }
    }
    assert!(xml.contains("<skipped message="), "{xml}");
    assert!(xml.contains("kmt-sim"), "{xml}");
}
