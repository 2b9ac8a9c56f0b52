//! The workload for `scripts/callgrind-fences.sh` (instructions per
//! `DxgkDdiUpdateMonitoredValues` call and per ISR). Not timed: run under
//! `valgrind --tool=callgrind --toggle-collect=<driver function>` it gives the instructions
//! executed inside the driver's function (and what it calls, OS callbacks included), which
//! the script divides by the call counts this program prints.
//!
//! One step-mode dGPU machine, one native fence, then K rounds (K from `RVGPU_CALLGRIND_OPS`,
//! default 1000) of:
//! 1. a CPU event wait for the next value: the OS lowers MonitoredValue with one
//!    `UpdateMonitoredValues` call (one fence);
//! 2. a GPU FENCE_SIGNAL of that value from a user-mode queue (`testing::gpu::GpuQueue`, rung
//!    through its doorbell): the conditional interrupt fires, the ISR reports the fence (one
//!    event), the DPC releases the wait and re-arms MonitoredValue to u64::MAX with a second
//!    `UpdateMonitoredValues` call.
//!
//! `RVGPU_CALLGRIND_FENCES=N` creates N idle native fences first (the scaling table).
//!
//! With `RVGPU_CALLGRIND_MODE=null` (the NULL-report row) the driver's ISR is a
//! stand-in that reports every interrupt as a NULL native-fence array, and each round is: a
//! CPU wait on the measured fence, its CurrentValue written behind the OS's back (as a GPU
//! write would), one interrupt. The script counts VidSch's DPC-time fence work
//! (`process_dpc_work`), which resamples the fences a NULL report can concern; the idle
//! fences must not add to it. It prints `null_calls=<k>`.
//!
//! With `RVGPU_CALLGRIND_MODE=legacy` (the baseline for the ISR figure) the adapter has no
//! native fences and each round is one legacy monitored-fence signal (SIGNAL_ALWAYS_IRQ): one
//! ISR reporting one MONITORED_FENCE_SIGNALED event, no `UpdateMonitoredValues`.
//!
//! It prints `umv_calls=<n> isr_calls=<n>` for the whole process (the machine is fresh, so
//! these are every call callgrind saw; a few ISRs are VidMm's paging completions from mapping
//! the queue and the fence).

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue};
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFenceDesc};

fn main() {
    let k: u64 = std::env::var("RVGPU_CALLGRIND_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mode = std::env::var("RVGPU_CALLGRIND_MODE").unwrap_or_default();
    let legacy = mode == "legacy";
    let idle: u64 = std::env::var("RVGPU_CALLGRIND_FENCES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if mode == "null" {
        null_reports(k, idle);
        return;
    }
    if mode == "destroy" {
        destroys(k, idle);
        return;
    }
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = !legacy;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    if legacy {
        // An adapter without native fences has no user-mode queues: a kernel-mode one (so one
        // PROGRESS interrupt per kick is in these ISR counts too, as in fence_interrupts' (c)).
        let mut q = ok(&m, KernelGpuQueue::new(&m, 0, 0));
        let f = ok(&m, m.create_monitored_fence(0, q.pid(), 0));
        for v in 1..=k {
            ok(&m, q.signal_monitored(&f, v));
            ok(&m, q.kick(&m));
            ok(&m, m.run_until_idle());
        }
        assert_eq!(f.value(), k);
        let isr = m.interrupt_counts(0).0;
        println!("mode=legacy ops={k} umv_calls=0 isr_calls={isr}");
        return;
    }
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    // Flat with scale: idle native fences beside the measured one
    // (`RVGPU_CALLGRIND_FENCES`, default 0); the ISR and UpdateMonitoredValues must not care.
    let _idle = (0..idle)
        .map(|_| {
            ok(
                &m,
                m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
            )
        })
        .collect::<Vec<_>>();
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    for v in 1..=k {
        let e = ok(&m, m.wait_native_fence_event(&f, v));
        ok(&m, q.signal(&f, v));
        ok(&m, q.kick());
        ok(&m, m.run_until_idle());
        assert!(e.is_signaled(), "wait for {v} not released");
    }
    let umv = m.native_fence_counts(0).0;
    let isr = m.interrupt_counts(0).0;
    println!(
        "mode=native ops={k} fences={} umv_calls={umv} isr_calls={isr}",
        idle + 1
    );
}

/// The NULL-report rounds (`RVGPU_CALLGRIND_MODE=null`).
fn null_reports(k: u64, idle: u64) {
    let mut cfg = MachineConfig::single(Mode::Step);
    for a in &mut cfg.adapters {
        a.device.optimized_fence_irq = false;
    }
    let mut m = Machine::new(cfg);
    m.load_driver_with(|t| {
        t.DxgkDdiInterruptRoutine = Some(rvgpu_simos::testing::isr_reports_null);
    })
    .expect("load");
    m.start_adapter(0).expect("start");
    // A native fence belongs to a D3D device of its process.
    let pid = ok(&m, m.create_process(0)).pid;
    let _idle = (0..idle)
        .map(|_| {
            ok(
                &m,
                m.create_native_fence(0, pid, NativeFenceDesc::default()),
            )
        })
        .collect::<Vec<_>>();
    let f = ok(
        &m,
        m.create_native_fence(0, pid, NativeFenceDesc::default()),
    );
    for v in 1..=k {
        let e = ok(&m, m.wait_native_fence_event(&f, v));
        m.memory()
            .write_u64(PhysAddr::new(f.current_value_gpu()), v);
        ok(&m, m.raise_interrupt(0));
        assert!(e.is_signaled(), "wait for {v} not released");
    }
    println!("mode=null ops={k} fences={} null_calls={k}", idle + 1);
}

/// The teardown rounds (`RVGPU_CALLGRIND_MODE=destroy`): `idle` native fences of one process
/// stay alive throughout; K more are created, then destroyed oldest first. A destroy must cost
/// the same whatever the number of fences beside it (the scaling rows of
/// `scripts/callgrind-fences.sh`). Prints `destroy_calls=<K>`.
fn destroys(k: u64, idle: u64) {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    m.load_driver().expect("load");
    m.start_adapter(0).expect("start");
    let p = ok(&m, m.create_process(0));
    let create = || {
        ok(
            &m,
            m.create_native_fence(0, p.pid, NativeFenceDesc::default()),
        )
    };
    let _idle = (0..idle).map(|_| create()).collect::<Vec<_>>();
    let measured = (0..k).map(|_| create()).collect::<Vec<_>>();
    for f in &measured {
        ok(&m, m.destroy_native_fence(f));
    }
    println!("mode=destroy ops={k} fences={} destroy_calls={k}", idle + k);
}
