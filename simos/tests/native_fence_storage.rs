//! NF-06: where native fence values live, by `D3DDDI_NATIVEFENCE_TYPE` (docs/architecture.md,
//! "Native fences: design notes"). `INTRA_GPU` fences keep CurrentValue and MonitoredValue in
//! local memory (VRAM, reached by the CPU through BAR4); default and cross-adapter fences keep
//! them in system memory (NF-16). The driver refuses storage that breaks the rule.

mod common;

use common::*;
use std::time::Duration;

use rvgpu_ddi::fence::{D3DDDI_NATIVEFENCE_TYPE_DEFAULT, D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU};
use rvgpu_hw::addr::{SYSMEM_LIMIT, VRAM_BASE};
use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, ProcessId, SimError, WaitOutcome,
};

const STATUS_INVALID_PARAMETER: i32 = 0xC000_000D_u32 as i32;

fn create(m: &Machine, p: ProcessId, intra: bool, shareable: bool) -> NativeFence {
    ok(
        m,
        m.create_native_fence(
            0,
            p,
            NativeFenceDesc {
                shareable,
                fence_type: if intra {
                    D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU
                } else {
                    D3DDDI_NATIVEFENCE_TYPE_DEFAULT
                },
                ..Default::default()
            },
        ),
    )
}

/// A started step-mode machine and a process with a D3D device on its adapter.
fn machine_and_process() -> (Machine, ProcessId) {
    let m = started(MachineConfig::single(Mode::Step));
    let p = common::device_process(&m, 0);
    (m, p)
}

fn in_vram(gpu: u64) -> bool {
    gpu >= VRAM_BASE
}

/// NF-06: an `INTRA_GPU` fence's CurrentValue and MonitoredValue are in VRAM (GPU address
/// `VRAM_BASE` + offset; the kernel CPU address is the BAR4 view of the same bytes). A GPU
/// signal on one queue releases a GPU wait on another, and the OS reads the new value.
#[test]
fn nf_06_intra_gpu_fence_lives_in_vram_and_gpu_signal_wait_work() {
    let m = started(MachineConfig::single(Mode::Step));
    // Queues of two processes: the fence is shared between them.
    let mut qa = ok(&m, GpuQueue::new(&m, 0, 0));
    let mut qb = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = create(&m, qa.pid(), true, true);
    let fb = ok(&m, m.open_native_fence(&f, qb.pid()));
    assert!(f.current_value_is_local() && f.monitored_value_is_local());
    assert!(
        in_vram(f.current_value_gpu()),
        "{:#x}",
        f.current_value_gpu()
    );
    assert!(in_vram(f.monitored_value_gpu()));
    assert_eq!(
        m.native_fence_local_pages(0),
        2,
        "one CurrentValue, one MonitoredValue page"
    );
    assert_eq!(f.monitored_value(), u64::MAX);
    // GPU wait on queue A, signal from queue B.
    ok(&m, qa.wait(&f, 5));
    ok(&m, qa.kick());
    ok(&m, m.run_until_idle());
    assert!(!qa.drained(), "the wait must block until the signal");
    ok(&m, qb.signal(&fb, 5));
    ok(&m, qb.kick());
    ok(&m, m.run_until_idle());
    assert!(qa.drained(), "GPU wait on a VRAM fence not released");
    assert_eq!(
        f.current_value(),
        5,
        "the OS reads CurrentValue through BAR4"
    );
    // Nobody waits on the CPU: the conditional signal raised no report for it, and
    // MonitoredValue was never touched.
    assert_eq!(f.monitored_value(), u64::MAX);
    assert!(m.bugcheck().is_none());
}

/// NF-06: `INTRA_GPU` fences have no CPU wait or signal (Microsoft's D3DDDI_NATIVEFENCE_TYPE
/// reference); the OS refuses both, while a default fence's CPU wait is released by a GPU
/// signal as before (its values in system memory).
#[test]
fn nf_06_cpu_wait_and_signal_only_on_system_memory_fences() {
    let (m, p1) = machine_and_process();
    let intra = create(&m, p1, true, false);
    assert!(matches!(
        m.wait_native_fence_event(&intra, 1),
        Err(SimError::NotAllowed { rule: "NF-06", .. })
    ));
    assert!(matches!(
        m.signal_native_fence_from_cpu(&intra, 1),
        Err(SimError::NotAllowed { rule: "NF-06", .. })
    ));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let d = create(&m, q.pid(), false, false);
    assert!(!d.current_value_is_local() && !d.monitored_value_is_local());
    assert!(d.current_value_gpu() < SYSMEM_LIMIT);
    ok(&m, q.signal(&d, 3));
    ok(&m, q.kick());
    let r = ok(&m, m.wait_native_fence(&d, 3, Duration::from_secs(5)));
    assert_eq!(r, WaitOutcome::Satisfied);
    assert!(m.bugcheck().is_none());
}

/// NF-05 with NF-06: non-shareable `INTRA_GPU` fences of one process are packed into one VRAM
/// page at the caps' stride; another process gets pages of its own; a shareable one gets a
/// page of its own (it may be shared across processes, not across adapters).
#[test]
fn nf_06_vram_fence_values_packed_per_process() {
    let (m, p1) = machine_and_process();
    let p2 = common::device_process(&m, 0);
    let stride = u64::from(m.native_fence_caps(0).expect("caps").MonitoredValueStride);
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let a = create(&m, q.pid(), true, false);
    let b = create(&m, q.pid(), true, false);
    assert_eq!(b.current_value_gpu(), a.current_value_gpu() + stride);
    assert_eq!(b.monitored_value_gpu(), a.monitored_value_gpu() + stride);
    assert_eq!(m.native_fence_local_pages(0), 2);
    let c = create(&m, p2, true, false);
    assert_ne!(
        c.current_value_gpu() & !0xFFF,
        a.current_value_gpu() & !0xFFF
    );
    assert_eq!(m.native_fence_local_pages(0), 4);
    let s = create(&m, p1, true, true);
    assert!(s.current_value_is_local());
    assert_eq!(s.current_value_gpu() & 0xFFF, 0, "own page");
    assert_eq!(m.native_fence_local_pages(0), 6);
    let s2 = ok(&m, m.open_native_fence(&s, p2));
    assert_eq!(s2.current_value_gpu(), s.current_value_gpu());
    ok(&m, m.destroy_native_fence(&s2));
    // Two GPU signals through neighbouring slots stay apart.
    ok(&m, q.signal(&a, 7));
    ok(&m, q.signal(&b, 9));
    ok(&m, q.kick());
    ok(&m, m.run_until_idle());
    assert_eq!((a.current_value(), b.current_value()), (7, 9));
    assert!(m.bugcheck().is_none());
}

/// NF-06, NF-16: a shareable default fence and its cross-adapter instances stay in system
/// memory; an `INTRA_GPU` fence cannot cross adapters.
#[test]
fn nf_06_shareable_and_cross_adapter_fences_stay_in_system_memory() {
    let m = started(MachineConfig::igpu_dgpu(Mode::Step));
    let p1 = common::device_process(&m, 0);
    let p2 = common::device_process(&m, 1);
    let s = create(&m, p1, false, true);
    assert!(!s.current_value_is_local() && !s.monitored_value_is_local());
    let x = ok(&m, m.open_native_fence_cross_adapter(&s, 1, p2));
    assert_eq!(x.current_value_gpu(), s.current_value_gpu());
    assert!(!x.current_value_is_local() && !x.monitored_value_is_local());
    let intra = create(&m, p1, true, true);
    assert!(m.open_native_fence_cross_adapter(&intra, 1, p2).is_err());
    assert_eq!(m.native_fence_local_pages(1), 0);
    assert!(m.bugcheck().is_none());
}

/// NF-06, NF-16: the driver refuses a default fence whose CurrentValue (or, without the OS's
/// optimized-default cap, MonitoredValue) is in local memory, and accepts an `INTRA_GPU`
/// fence there.
#[test]
fn nf_06_driver_refuses_default_fence_values_in_vram() {
    let (m, p1) = machine_and_process();
    // Storage the OS really owns, so an accepted fence touches nothing foreign.
    let sys = create(&m, p1, false, true);
    let sys_cv = sys.current_value_gpu();
    let sys_mv = sys.monitored_value_gpu();
    // A VRAM address below the OS's fence pages (they come from the top).
    let vram = VRAM_BASE + 0x1000;
    let d = D3DDDI_NATIVEFENCE_TYPE_DEFAULT;
    let st = |t, cv, mv| ok(&m, m.ddi_create_native_fence_at(0, t, cv, mv));
    assert_eq!(st(d, vram, sys_mv), STATUS_INVALID_PARAMETER);
    assert_eq!(st(d, sys_cv, vram), STATUS_INVALID_PARAMETER);
    assert_eq!(st(D3DDDI_NATIVEFENCE_TYPE_INTRA_GPU, vram, vram + 8), 0);
    assert!(m.bugcheck().is_none());
}

/// NF-06: VRAM fence pages go back with their fences (destroy, and Dxgkrnl's destruction of
/// what is left at stop); a freed page is reused.
#[test]
fn nf_06_vram_fence_pages_freed() {
    let mut m = started(MachineConfig::single(Mode::Step));
    let p1 = common::device_process(&m, 0);
    let p2 = common::device_process(&m, 0);
    let a = create(&m, p1, true, false);
    let b = create(&m, p1, true, false);
    assert_eq!(m.native_fence_local_pages(0), 2);
    ok(&m, m.destroy_native_fence(&a));
    assert_eq!(m.native_fence_local_pages(0), 2, "b still uses the pages");
    ok(&m, m.destroy_native_fence(&b));
    assert_eq!(m.native_fence_local_pages(0), 0);
    let c = create(&m, p1, true, false);
    assert!(
        c.current_value_gpu() == a.current_value_gpu()
            || c.current_value_gpu() == a.monitored_value_gpu()
    );
    assert_eq!(c.current_value(), 0, "a reused page starts clean");
    let _d = create(&m, p2, true, true);
    assert_eq!(m.native_fence_local_pages(0), 4);
    let r = m.stop_adapter(0);
    ok(&m, r);
    assert_eq!(
        m.native_fence_local_pages(0),
        0,
        "stop leaks no VRAM fence page"
    );
    assert!(m.bugcheck().is_none());
}

under_the_pages!();
