//! What each hot path costs on the bus, counted by the device model (register reads
//! are non-posted, a full round trip on PCIe; register and doorbell writes are posted). The
//! table is printed (`cargo test -p rvgpu-simos --test bus_cost -- --nocapture`, the figures in
//! docs/performance.md) and the reads are held: a hot path that gains a register read fails
//! here. With `RVGPU_BUS_GATE=1` each row is also printed as `bus|path|reads|writes` for
//! scripts/callgrind-gate.sh, which compares them with its baseline (no read may be added).

mod common;

use common::*;
use rvgpu_device::BusCounts;
use rvgpu_simos::testing::gpu::{GpuQueue, KernelGpuQueue};
use rvgpu_simos::{Machine, MachineConfig, Mode, NativeFenceDesc};
use rvgpu_umd::submit::{KernelQueue, UserQueue};

const K: u64 = 50;

/// Per-call accesses of each DDI over `run` (after `warm` rounds), from the OS's ledger.
fn per_call(m: &Machine, run: impl FnOnce(&Machine)) -> Vec<(String, u64, BusCounts)> {
    let before = m.bus_costs(0);
    run(m);
    m.bus_costs(0)
        .into_iter()
        .filter_map(|(name, n, c)| {
            let (n0, c0) = before
                .iter()
                .find(|(b, _, _)| *b == name)
                .map_or((0, BusCounts::default()), |(_, n0, c0)| (*n0, *c0));
            let calls = n - n0;
            (calls > 0).then(|| (name, calls, c.since(&c0)))
        })
        .collect()
}

fn row(rows: &[(String, u64, BusCounts)], ddi: &str) -> (u64, BusCounts) {
    rows.iter()
        .find(|(n, _, _)| n == ddi)
        .map(|(_, n, c)| (*n, *c))
        .unwrap_or_else(|| panic!("{ddi} not called: {rows:?}"))
}

/// The bus-cost model (docs/performance.md): per-access costs in µs. Hardware: assumed
/// (a PCIe read round trip, a posted write). Guest: measured in the QEMU guest over vfio-user
/// (a BAR0 register read; a BAR0 write, which traps like a read there; a doorbell ring to the
/// mapped BAR2, a store to memory, `guest_smoke costs`).
const HW_READ_US: f64 = 0.8;
const HW_WRITE_US: f64 = 0.1;
const GUEST_READ_US: f64 = 26.2;
const GUEST_WRITE_US: f64 = 26.6;
const GUEST_DOORBELL_US: f64 = 0.07;

/// Prints one table row: reads and writes per call (as a fraction when not whole) and the
/// estimated bus time on hardware and in the guest.
fn show(path: &str, calls: u64, c: BusCounts) -> (f64, f64) {
    let r = c.reads as f64 / calls as f64;
    let w = (c.writes + c.doorbell_writes) as f64 / calls as f64;
    let (rw, db) = (
        c.writes as f64 / calls as f64,
        c.doorbell_writes as f64 / calls as f64,
    );
    let hw = r * HW_READ_US + w * HW_WRITE_US;
    let guest = r * GUEST_READ_US + rw * GUEST_WRITE_US + db * GUEST_DOORBELL_US;
    println!("| {path} | {r:.2} | {w:.2} | {hw:.1} | {guest:.1} | {calls} |");
    if std::env::var_os("RVGPU_BUS_GATE").is_some() {
        println!("bus|{path}|{r:.2}|{w:.2}");
    }
    (r, w)
}

/// K native-fence signals from a user-mode queue, each with a CPU waiter, on an adapter with
/// a message (`msi`) or line interrupt: the per-DDI ledger of the run.
fn native_signals(msi: bool) -> Vec<(String, u64, BusCounts)> {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].msi = msi;
    let m = started(cfg);
    let mut q = ok(&m, GpuQueue::new(&m, 0, 0));
    let f = ok(
        &m,
        m.create_native_fence(0, q.pid(), NativeFenceDesc::default()),
    );
    let rows = per_call(&m, |m| {
        for v in 1..=K {
            let e = ok(m, m.wait_native_fence_event(&f, v));
            ok(m, q.signal(&f, v));
            ok(m, q.kick());
            ok(m, m.run_until_idle());
            assert!(e.is_signaled());
        }
    });
    no_fault(&m);
    rows
}

#[test]
fn bus_cost_of_each_hot_path() {
    println!(
        "| hot path | register reads per call | posted writes per call | bus µs, hardware \
         (est.) | bus µs, guest (est.) | calls |"
    );
    println!("|---|---:|---:|---:|---:|---:|");

    // The same signal on a line-based interrupt (the guest's INTx, or an INF without
    // MSISupported): the ISR must ask the device whether the interrupt is its own.
    let rows = native_signals(false);
    let (n, c) = row(&rows, "DxgkDdiInterruptRoutine");
    let (line_isr_reads, _) = show("DxgkDdiInterruptRoutine, native-fence signal, INTx", n, c);

    // Native-fence signal with a CPU waiter (MSI): UpdateMonitoredValues, ISR, DPC.
    let rows = native_signals(true);
    let (n, c) = row(&rows, "DxgkDdiInterruptRoutine");
    let (isr_reads, _) = show("DxgkDdiInterruptRoutine, native-fence signal, MSI", n, c);
    let (n, c) = row(&rows, "DxgkDdiDpcRoutine");
    let (dpc_reads, _) = show("DxgkDdiDpcRoutine", n, c);
    let (n, c) = row(&rows, "DxgkDdiUpdateMonitoredValues");
    let (umv_reads, _) = show("DxgkDdiUpdateMonitoredValues", n, c);

    // Legacy monitored-fence signal (kernel-mode queue).
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.native_fence_feature = false;
    let m = started(cfg);
    let mut kq = ok(&m, KernelGpuQueue::new(&m, 0, 0));
    let lf = ok(&m, m.create_monitored_fence(0, kq.pid(), 0));
    let rows = per_call(&m, |m| {
        for v in 1..=K {
            ok(m, kq.signal_monitored(&lf, v));
            ok(m, kq.kick(m));
            ok(m, m.run_until_idle());
        }
    });
    let (n, c) = row(&rows, "DxgkDdiInterruptRoutine");
    let (legacy_isr_reads, _) = show("DxgkDdiInterruptRoutine, legacy monitored fence, MSI", n, c);
    no_fault(&m);
    drop(m);

    // Kernel-mode submission and user-mode submission through the UMD; ConnectDoorbell.
    let m = with_doorbells(Mode::Step, 1);
    let (_p, k) = user_process(&m);
    let buf = okk(&m, rvgpu_umd::kmt::Kmt::create_allocation(&k, 4096));
    let mut kmq = okk(&m, KernelQueue::new(k, &config(0)));
    let rows = per_call(&m, |m| {
        for v in 1..=K {
            let t = okk(m, kmq.submit(&[fill(&buf, 0, v)]));
            okk(m, kmq.wait(t));
        }
    });
    let (n, c) = row(&rows, "DxgkDdiSubmitCommandToHwQueue");
    let (submit_reads, _) = show("DxgkDdiSubmitCommandToHwQueue", n, c);

    let mut a = okk(&m, UserQueue::new(k, &config(0)));
    let mut b = okk(&m, UserQueue::new(k, &config(0)));
    // One physical doorbell: each queue's first submission after the other's connects again
    // (DISCONNECTED_RETRY), victimising the other.
    let rows = per_call(&m, |m| {
        for v in 1..=K {
            let q = if v % 2 == 0 { &mut a } else { &mut b };
            let t = okk(m, q.submit(&[fill(&buf, 8, v)]));
            okk(m, q.wait(t));
        }
    });
    let (n, c) = row(&rows, "DxgkDdiConnectDoorbell");
    let (connect_reads, _) = show("DxgkDdiConnectDoorbell, victimising", n, c);
    ok(&m, m.run_until_idle());

    // A user-mode submission on a connected doorbell: what the device sees between the
    // UMD's call and its return (no DDI runs).
    let before = m.bus_counts(0).expect("counts");
    let mut ums_total = BusCounts::default();
    for v in 1..=K {
        let b0 = m.bus_counts(0).expect("counts");
        let t = okk(&m, a.submit(&[fill(&buf, 16, v)]));
        let b1 = m.bus_counts(0).expect("counts");
        ums_total.add(&b1.since(&b0));
        okk(&m, a.wait(t));
    }
    assert!(m.bus_counts(0).expect("counts").reads >= before.reads);
    let (ums_reads, ums_writes) = show("user-mode submission (UMD, no DDI)", K, ums_total);
    no_fault(&m);

    // Held: reads per call of each path (the ISR reads at most the status register
    // on a line-based interrupt and nothing with MSI; user-mode submission reads nothing
    // and writes one doorbell).
    let held = [
        ("ISR, native-fence signal, MSI", isr_reads, 0.0),
        ("ISR, native-fence signal, INTx", line_isr_reads, 1.0),
        ("ISR, legacy monitored fence, MSI", legacy_isr_reads, 0.0),
        ("DPC", dpc_reads, 0.0),
        ("UpdateMonitoredValues", umv_reads, 0.0),
        ("SubmitCommandToHwQueue", submit_reads, 0.0),
        ("ConnectDoorbell", connect_reads, 1.0),
        ("user-mode submission", ums_reads, 0.0),
    ];
    for (path, got, max) in held {
        assert!(
            got <= max,
            "{path}: {got} register reads per call, held at {max}"
        );
    }
    assert!(
        (ums_writes - 1.0).abs() < f64::EPSILON,
        "one doorbell write per user-mode submission: {ums_writes}"
    );
}

/// The package asks Windows for the message interrupt the simulated OS grants by
/// default (`AdapterConfig::msi`): `MSISupported` in a section the install's `.HW` section
/// adds.
#[test]
fn the_inf_asks_for_msi() {
    let inf = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../inf/rvgpu.inf"))
        .expect("inf/rvgpu.inf");
    let section = |name: &str| -> Vec<String> {
        let head = format!("[{name}]");
        inf.lines()
            .skip_while(|l| l.trim() != head)
            .skip(1)
            .take_while(|l| !l.trim_start().starts_with('['))
            .map(|l| l.split(';').next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let hw = section("Rvgpu_Inst.HW");
    let addreg = hw
        .iter()
        .find_map(|l| l.strip_prefix("AddReg"))
        .map(|r| r.trim_start_matches([' ', '=']).trim().to_string())
        .expect("Rvgpu_Inst.HW has an AddReg");
    let lines = section(&addreg);
    assert!(
        lines.iter().any(|l| l
            == "HKR,Interrupt Management\\MessageSignaledInterruptProperties,MSISupported,%REG_DWORD%,1"),
        "{addreg}: {lines:?}"
    );
    assert!(rvgpu_simos::AdapterConfig::dgpu().msi);
}

// The shipped image reads and writes what the Linux build does.
against_the_pe_image!();
