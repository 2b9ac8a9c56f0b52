//! Native fences at scale: 100,000 fences on one adapter through the simulated OS
//! and the real driver (the ISR's registry and the handle map grow as fences are created),
//! growth that fails for memory, and slot reuse.

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;

use rvgpu_simos::testing::gpu::GpuQueue;
use rvgpu_simos::{
    LowResources, Machine, MachineConfig, Mode, NativeFence, NativeFenceDesc, SimError,
};

const STATUS_NO_MEMORY: i32 = 0xC000_0017_u32 as i32;

fn create(m: &Machine, pid: rvgpu_simos::ProcessId) -> Result<NativeFence, SimError> {
    m.create_native_fence(0, pid, NativeFenceDesc::default())
}

/// The slot part of a fence's report tag (the KMD's registry index).
fn slot(f: &NativeFence) -> u64 {
    f.pdd().report_tag & 0xFFFF_FFFF
}

/// A GPU signal of `f` to `v` from `q` releases a CPU waiter for `v`.
fn gpu_signal_reaches_waiter(m: &Machine, q: &mut GpuQueue, f: &NativeFence, v: u64) {
    let e = ok(m, m.wait_native_fence_event(f, v));
    ok(m, q.signal(f, v));
    ok(m, q.kick());
    ok(m, m.run_until_idle());
    assert!(
        e.is_signaled(),
        "wait for {v} on {:#x} not released",
        f.global_handle()
    );
    assert_eq!(f.current_value(), v);
}

/// 100,000 native fences live on one adapter, and a GPU signal of the last one created
/// still reaches its CPU waiter.
#[test]
fn hundred_thousand_native_fences_on_one_adapter() {
    let m = started(MachineConfig::single(Mode::Step));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let fences: Vec<NativeFence> = (0..100_000)
        .map(|i| match create(&m, q.pid()) {
            Ok(f) => f,
            Err(e) => panic!("create #{i}: {e}"),
        })
        .collect();
    let last = fences.last().expect("created");
    assert!(slot(last) >= 99_999, "every fence has its own slot");
    gpu_signal_reaches_waiter(&m, &mut q, last, 1);
    gpu_signal_reaches_waiter(&m, &mut q, &fences[0], 1);
    no_fault(&m);
}

/// When the create that must grow the driver's fence state cannot allocate, it
/// fails with STATUS_NO_MEMORY and changes nothing; the adapter stays usable, and the same
/// create succeeds once memory is back. Swept over every pool allocation of that create.
#[test]
fn fence_growth_without_memory_fails_the_create_cleanly() {
    let m = started(MachineConfig::single(Mode::Step));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    // The registry's first chunk and the handle map's first table hold 1,024 fences.
    let fences: Vec<NativeFence> = (0..1024).map(|_| ok(&m, create(&m, q.pid()))).collect();
    let mut n = 0;
    let grown = loop {
        m.set_low_resources(LowResources::FailFrom(n));
        let r = create(&m, q.pid());
        let stats = m.pool_stats();
        m.set_low_resources(LowResources::Off);
        no_fault(&m);
        match r {
            Ok(f) => {
                assert_eq!(
                    stats.failed, 0,
                    "allocation {n} failed, yet the create succeeded"
                );
                break f;
            }
            Err(e) if e.status().is_some() => {
                assert_eq!(e.status(), Some(STATUS_NO_MEMORY), "allocation {n}: {e}");
                assert!(
                    stats.failed > 0,
                    "failed without an allocation failure at {n}: {stats:?}"
                );
            }
            Err(e) => panic!("allocation {n}: {e}"),
        }
        // Nothing changed: the live fences still work.
        let f = &fences[n as usize];
        gpu_signal_reaches_waiter(&m, &mut q, f, 1);
        n += 1;
    };
    assert!(
        n >= 3,
        "the 1,025th create grows the handle map (two allocations) and the registry (one): {n}"
    );
    gpu_signal_reaches_waiter(&m, &mut q, &grown, 1);
    gpu_signal_reaches_waiter(&m, &mut q, &fences[1023], 1);
}

/// Destroyed fences' slots are reused by later creates (the registry does not grow
/// under create/destroy churn), and a reused slot's old tag is not the new fence's.
#[test]
fn destroy_and_recreate_reuse_slots() {
    let m = started(MachineConfig::single(Mode::Step));
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let mut fences: Vec<NativeFence> = (0..2000).map(|_| ok(&m, create(&m, q.pid()))).collect();
    let most = fences.iter().map(slot).max().expect("created");
    for round in 0..3 {
        let gone: Vec<NativeFence> = fences.drain(500..1500).collect();
        let mut freed: Vec<u64> = gone.iter().map(slot).collect();
        let old_tags: Vec<u64> = gone.iter().map(|f| f.pdd().report_tag).collect();
        for f in &gone {
            ok(&m, m.destroy_native_fence(f));
        }
        let again: Vec<NativeFence> = (0..1000).map(|_| ok(&m, create(&m, q.pid()))).collect();
        let mut reused: Vec<u64> = again.iter().map(slot).collect();
        freed.sort_unstable();
        reused.sort_unstable();
        assert_eq!(reused, freed, "round {round}: the freed slots, no new ones");
        for f in &again {
            assert!(!old_tags.contains(&f.pdd().report_tag), "a new generation");
        }
        fences.extend(again);
    }
    assert_eq!(fences.iter().map(slot).max(), Some(most));
    let f = fences.last().expect("live");
    gpu_signal_reaches_waiter(&m, &mut q, f, 1);
    no_fault(&m);
}

/// A machine whose ISR reports every interrupt as a NULL native-fence array (device without
/// the optimized cap, so the OS reads the array).
fn null_report_machine() -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    for a in &mut cfg.adapters {
        a.device.optimized_fence_irq = false;
    }
    let mut m = Machine::new(cfg);
    m.load_driver_with(|t| {
        t.DxgkDdiInterruptRoutine = Some(rvgpu_simos::testing::isr_reports_null)
    })
    .expect("load");
    m.start_adapter(0).expect("start");
    m
}

/// A NULL native-fence report resamples only the fences that can need it (Windows:
/// "scans all pending native fence waiters"), yet releases every wait whose fence moved,
/// wherever the fence is among thousands of idle ones, and a fence rejoins the scan when it
/// gets a new waiter after its last one was released.
#[test]
fn null_report_releases_every_moved_waiter_and_scans_only_waited_fences() {
    let m = null_report_machine();
    let pid = common::device_process(&m, 0);
    let all: Vec<NativeFence> = (0..3000).map(|_| ok(&m, create(&m, pid))).collect();
    // Waited fences spread over the handle range, first and last included.
    let waited: Vec<&NativeFence> = all.iter().step_by(97).chain(all.last()).collect();
    let events: Vec<_> = waited
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let v = 1 + (i as u64 % 3);
            (v, ok(&m, m.wait_native_fence_event(f, v)))
        })
        .collect();
    // Every fence moves to 2 behind the OS's back (as GPU writes would), idle ones included.
    for f in &all {
        m.memory()
            .write_u64(PhysAddr::new(f.current_value_gpu()), 2);
    }
    let before = m.native_fence_counts(0).2;
    ok(&m, m.raise_interrupt(0));
    for (i, (v, e)) in events.iter().enumerate() {
        assert_eq!(e.is_signaled(), *v <= 2, "waiter {i} for {v}");
    }
    let resampled = m.native_fence_counts(0).2 - before;
    assert_eq!(
        resampled,
        waited.len() as u64,
        "the NULL report resampled the waited fences only"
    );
    // A released fence leaves the scan; with a new waiter it is scanned again.
    let f = waited[0];
    let e = ok(&m, m.wait_native_fence_event(f, 5));
    m.memory()
        .write_u64(PhysAddr::new(f.current_value_gpu()), 5);
    ok(&m, m.raise_interrupt(0));
    assert!(e.is_signaled(), "a re-armed fence is scanned again");
    no_fault(&m);
}
