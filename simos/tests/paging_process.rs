//! The paging (system) process has its own GPU VA space.
//!
//! At adapter start VidMm opens the adapter for the system process (`DxgkDdiCreateProcess`
//! with `SystemProcess`), builds its tables through the driver's paging buffers and gives its
//! root to the paging node's system context; the KMD makes it the CMP's system space
//! (`SYSTEM_PAGE_TABLE_BASE`, hardware.md 12.4). In that space the CMP reaches only what VidMm
//! mapped there: fence storage, native-fence log buffers and scheduling logs. Nothing of a
//! process's memory is reachable through it, and a log buffer leaves it when it is freed.

mod common;

use common::*;

use rvgpu_device::device::mmu::{Mmu, Privilege};
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::Access;
use rvgpu_hw::regs;
use rvgpu_simos::machine::answers::SystemVas;
use rvgpu_simos::sync::fencelog::LogKind;
use rvgpu_simos::{Machine, Mode, NativeFenceDesc};
use rvgpu_umd::kmt::Kmt;

fn system_root(m: &Machine) -> u64 {
    m.device(0).unwrap().read64(regs::SYSTEM_PAGE_TABLE_BASE)
}

/// Where the CMP's write to `va` in the system space would land, if anywhere.
fn system_pa(m: &Machine, va: u64) -> Option<u64> {
    let d = m.device(0).unwrap();
    Mmu::new()
        .translate_word(
            d.memory(),
            system_root(m),
            va,
            Access::Write,
            Privilege::Kernel,
        )
        .ok()
        .map(|(pa, _)| pa)
}

#[test]
fn paging_process_has_its_own_root_and_holds_only_what_the_cmp_needs() {
    let m = machine_with(Mode::Step, |_| {});
    let root = system_root(&m);
    assert_ne!(root, 0, "the system space is still the identity space");
    assert!(
        root >= rvgpu_hw::addr::VRAM_BASE,
        "page tables live in the local segment: {root:#x}"
    );
    let p = ok(&m, m.create_process(0));
    let f = ok(
        &m,
        m.create_native_fence(0, p.pid, NativeFenceDesc::default()),
    );
    // Fence storage is in the system space where the OS maps it there (NF-11:
    // MapToGpuSystemProcess; 26H1 and the pages), and not on 24H2, which never does.
    let mapped = m.os_config().reading.system_vas == SystemVas::Mapped;
    for va in [f.current_value_gpu(), f.monitored_value_gpu()] {
        assert_eq!(
            system_pa(&m, va),
            mapped.then_some(va),
            "fence word {va:#x}"
        );
    }
    // A process's own memory is not.
    let k = m.kmt(&p);
    let buf = okk(&m, k.create_allocation(4096));
    ok(&m, m.page_in(&p, 0, buf.gpu_va, 4096, 0x11));
    let backing = buf.mem.alloc().bus_addr;
    assert_eq!(system_pa(&m, backing), None, "{backing:#x}");
    assert_eq!(system_pa(&m, buf.gpu_va), None, "{:#x}", buf.gpu_va);
    no_fault(&m);
}

#[test]
fn native_fence_logs_enter_and_leave_the_paging_process_with_their_queue() {
    let m = machine_with(Mode::Step, |_| {});
    let (_p, k) = user_process(&m);
    let q = raw_queue(&m, &k);
    let logs: Vec<u64> = [LogKind::Wait, LogKind::Signal]
        .into_iter()
        .map(|kind| m.hw_queue_log(0, q.queue, kind).expect("log").0)
        .collect();
    for &log in &logs {
        assert_eq!(system_pa(&m, log), Some(log), "log {log:#x}");
    }
    okk(&m, k.destroy_doorbell(q.doorbell));
    okk(&m, k.destroy_hw_queue(q.queue));
    // Freed memory must not stay reachable by the CMP (VidMm unmapped and flushed it).
    for &log in &logs {
        assert_eq!(system_pa(&m, log), None, "log {log:#x} still mapped");
        let d = m.device(0).unwrap();
        assert!(
            !d.tlb_holds(system_root(&m), log, log + 4096),
            "stale translation of {log:#x}"
        );
    }
    no_fault(&m);
}

#[test]
fn paging_process_goes_with_the_adapter_and_comes_back_with_it() {
    let mut m = machine_with(Mode::Step, |_| {});
    let first = system_root(&m);
    assert_ne!(first, 0);
    let stopped = m.stop_adapter(0);
    ok(&m, stopped);
    let started = m.start_adapter(0);
    ok(&m, started);
    let again = system_root(&m);
    assert_ne!(
        again, 0,
        "the restarted adapter has no paging process space"
    );
    let p = ok(&m, m.create_process(0));
    let f = ok(
        &m,
        m.create_native_fence(0, p.pid, NativeFenceDesc::default()),
    );
    let va = f.current_value_gpu();
    let mapped = m.os_config().reading.system_vas == SystemVas::Mapped;
    assert_eq!(system_pa(&m, va), mapped.then_some(va));
    no_fault(&m);
}

under_the_pages!();
