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

use rvgpu_ddi::basic::{HANDLE, NTSTATUS};
use rvgpu_ddi::memory::*;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_SUCCESS};
use rvgpu_ddi::tdr::{DXGKARG_BUILDPAGINGBUFFER_0, DXGK_OPERATION_UPDATE_PAGE_TABLE};
use rvgpu_device::device::mmu::{Mmu, Privilege};
use rvgpu_hw::cmd::Command;
use rvgpu_hw::mmio::MmioBus;
use rvgpu_hw::mmu::Access;
use rvgpu_hw::regs;
use rvgpu_simos::machine::answers::{Invalidations, PagingStart, SystemVas};

use rvgpu_simos::sync::fencelog::LogKind;
use rvgpu_simos::{HwsCall, Machine, MachineConfig, Mode, NativeFenceDesc};
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
            rvgpu_hw::addr::GpuVa::new(va),
            Access::Write,
            Privilege::Kernel,
        )
        .ok()
        .map(|(pa, _)| pa.get())
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
    let mapped = m.os_config().windows.reading().system_vas == SystemVas::Mapped;
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
    ok(
        &m,
        m.page_in(&p, 0, rvgpu_hw::addr::GpuVa::new(buf.gpu_va), 4096, 0x11),
    );
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
    let mapped = m.os_config().windows.reading().system_vas == SystemVas::Mapped;
    assert_eq!(system_pa(&m, va), mapped.then_some(va));
    no_fault(&m);
}

/// DDI-01, DDI-03: on 24H2 VidMm builds the paging process's space (its root, and the
/// scheduling logs the CMP writes) naming every table by CPU address (`UpdateMode =
/// CPU_VIRTUAL`, M `InitPagingProcessVaSpace` @0x1400F71BC); the driver stores the entries
/// itself, the adapter starts, and what it stored is what the CMP walks: each node's scheduling
/// log translates in the system space to itself. Under the pages' reading the driver's own mode
/// is used throughout.
#[test]
fn ddi_03_paging_space_built_by_cpu_address_is_the_space_the_cmp_walks() {
    let m = machine_with(Mode::Step, |_| {});
    let cpu = m.cpu_page_table_updates(0).expect("adapter");
    match m.os_config().windows.reading().paging_start {
        PagingStart::CpuVirtual => assert!(cpu > 0, "no CPU_VIRTUAL update at start"),
        PagingStart::DriverMode => assert_eq!(cpu, 0),
    }
    assert_ne!(system_root(&m), 0);
    let logs: Vec<u64> = m
        .hws_calls(0)
        .into_iter()
        .filter_map(|c| match c {
            HwsCall::SetSchedulingLogBuffer { gpu_va, .. } => Some(gpu_va),
            _ => None,
        })
        .collect();
    assert!(!logs.is_empty(), "no scheduling log");
    for log in logs {
        assert_eq!(system_pa(&m, log), Some(log), "scheduling log {log:#x}");
    }
    // The window closed with the start: later updates name tables as the driver reported.
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let buf = okk(&m, k.create_allocation(4096));
    ok(
        &m,
        m.page_in(&p, 0, rvgpu_hw::addr::GpuVa::new(buf.gpu_va), 4096, 0x11),
    );
    assert_eq!(m.cpu_page_table_updates(0).expect("adapter"), cpu);
    no_fault(&m);
}

/// DDI-03: unmapping invalidates through the driver however VidMm sends it, one zeroed entry
/// repeated (24H2, M `UpdatePageTableInvalidate` @0x1400AB920) or one per slot (the pages): a
/// freed range faults for the GPU afterwards and a range mapped again translates.
#[test]
fn ddi_03_invalidations_sent_as_repeated_entries_unmap_the_whole_range() {
    let m = machine_with(Mode::Step, |_| {});
    let repeated = m.os_config().windows.reading().invalidations == Invalidations::Repeated;
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let buf = okk(&m, k.create_allocation(64 * 1024));
    ok(
        &m,
        m.page_in(
            &p,
            0,
            rvgpu_hw::addr::GpuVa::new(buf.gpu_va),
            64 * 1024,
            0x22,
        ),
    );
    let (before, _) = m.handover(0, "DxgkDdiBuildPagingBuffer(UPDATE_PAGE_TABLE)");
    assert!(before > 0);
    let va = buf.gpu_va;
    okk(&m, k.destroy_allocation(buf.handle));
    for page in 0..16u64 {
        let at = va + page * 4096;
        assert!(
            matches!(
                m.gpu_va_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(at), Access::Read),
                Some(Err(_)) | None
            ),
            "{at:#x} still translates (repeated: {repeated})"
        );
    }
    no_fault(&m);
}

/// An UPDATEPAGETABLE for the paging process of a leaf table at CPU address `cpu`, or at the
/// local segment's start when `None` (built, never run), writing `n` slots from 8 of
/// `entries`.
fn update_op(
    m: &Machine,
    cpu: Option<*mut u64>,
    entries: &mut [DXGK_PTE],
    n: u32,
    flags: DXGK_UPDATEPAGETABLEFLAGS,
) -> DXGKARG_BUILDPAGINGBUFFER_0 {
    let (mode, address) = match cpu {
        Some(p) => (
            DXGK_PAGETABLEUPDATE_CPU_VIRTUAL,
            DXGK_PAGETABLEUPDATEADDRESS_0 {
                CpuVirtual: p.cast(),
            },
        ),
        None => (
            DXGK_PAGETABLEUPDATE_GPU_PHYSICAL,
            DXGK_PAGETABLEUPDATEADDRESS_0 {
                GpuPhysical: D3DGPU_PHYSICAL_ADDRESS {
                    SegmentId: 2,
                    Padding: 0,
                    SegmentOffset: 0,
                },
            },
        ),
    };
    DXGKARG_BUILDPAGINGBUFFER_0 {
        UpdatePageTable: DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
            PageTableLevel: 0,
            hAllocation: std::ptr::null_mut(),
            PageTableAddress: DXGK_PAGETABLEUPDATEADDRESS { Anonymous: address },
            pPageTableEntries: entries.as_mut_ptr(),
            StartIndex: 8,
            NumPageTableEntries: n,
            Reserved0: 0,
            Flags: flags,
            DriverProtection: 0,
            AllocationOffsetInBytes: 0,
            hProcess: m.paging_process_kmd(0).expect("paging process") as HANDLE,
            UpdateMode: mode,
            pPageTableEntries64KB: std::ptr::null_mut(),
            FirstPteVirtualAddress: 0,
        },
    }
}

/// A valid leaf of the local segment's first page (segment 2); `bad` sets a bit the entry must
/// not have.
fn leaf(bad: bool) -> DXGK_PTE {
    let f = DXGK_PTE_0::from_value(0)
        .with(DXGK_PTE_0::Valid, 1)
        .with(DXGK_PTE_0::Segment, 2)
        .with(DXGK_PTE_0::Zero, u64::from(bad));
    DXGK_PTE::from_raw(f.Value, 0)
}

fn run(m: &Machine, op: DXGKARG_BUILDPAGINGBUFFER_0) -> (NTSTATUS, usize) {
    let r = ok(
        m,
        m.build_paging(0, DXGK_OPERATION_UPDATE_PAGE_TABLE, op, 4096),
    );
    let (st, words) = r.last().cloned().expect("a pass");
    (st, words.len())
}

/// DDI-03: a CPU_VIRTUAL update is stored through the CPU address during the call, leaving
/// the paging buffer empty; with Repeat the one entry passed fills every slot.
#[test]
fn ddi_03_cpu_virtual_update_is_stored_through_the_cpu_address() {
    let m = machine_with(Mode::Step, |_| {});
    let mut table = vec![0u64; 512];
    let mut entries = [leaf(false), leaf(false)];
    let op = update_op(
        &m,
        Some(table.as_mut_ptr()),
        &mut entries,
        2,
        Default::default(),
    );
    assert_eq!(run(&m, op), (STATUS_SUCCESS, 0));
    let stored = table[8];
    assert_ne!(stored, 0);
    assert_eq!(table[9], stored);
    assert!(table
        .iter()
        .enumerate()
        .all(|(i, w)| (8..10).contains(&i) || *w == 0));
    let mut table = vec![0u64; 512];
    let mut one = [leaf(false)];
    let repeat = DXGK_UPDATEPAGETABLEFLAGS::default().with(DXGK_UPDATEPAGETABLEFLAGS::Repeat, 1);
    let op = update_op(&m, Some(table.as_mut_ptr()), &mut one, 100, repeat);
    assert_eq!(run(&m, op), (STATUS_SUCCESS, 0));
    assert!(
        table[8..108].iter().all(|w| *w == stored),
        "every slot takes the one entry"
    );
    assert!(table[..8].iter().chain(&table[108..]).all(|w| *w == 0));
    no_fault(&m);
}

/// DDI-03 (the attacker): a CPU_VIRTUAL update without a usable table address (NULL, not
/// 8-byte aligned) is STATUS_INVALID_PARAMETER, and one with an entry the driver refuses stores
/// none of its entries, not even those before it.
#[test]
fn ddi_03_cpu_virtual_update_refused_whole_stores_nothing() {
    let m = machine_with(Mode::Step, |_| {});
    let mut entries = [leaf(false), leaf(false)];
    let null = update_op(
        &m,
        Some(std::ptr::null_mut()),
        &mut entries,
        2,
        Default::default(),
    );
    assert_eq!(run(&m, null).0, STATUS_INVALID_PARAMETER);
    let mut table = vec![0u64; 513];
    let odd = table
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(4)
        .cast::<u64>();
    let op = update_op(&m, Some(odd), &mut entries, 2, Default::default());
    assert_eq!(run(&m, op).0, STATUS_INVALID_PARAMETER);
    assert!(table.iter().all(|w| *w == 0));
    let mut entries = [leaf(false), leaf(true)];
    let op = update_op(
        &m,
        Some(table.as_mut_ptr()),
        &mut entries,
        2,
        Default::default(),
    );
    assert_eq!(run(&m, op).0, STATUS_INVALID_PARAMETER);
    assert!(table.iter().all(|w| *w == 0), "half an update stored");
    no_fault(&m);
}

/// DDI-03: a GPU_PHYSICAL update with Repeat writes the one entry passed to every slot: one
/// WRITE_DATA of identical words, however many slots (never read past VidMm's one entry).
#[test]
fn ddi_03_repeated_entry_is_written_to_every_slot() {
    let m = machine_with(Mode::Step, |_| {});
    let mut one = [leaf(false)];
    let repeat = DXGK_UPDATEPAGETABLEFLAGS::default().with(DXGK_UPDATEPAGETABLEFLAGS::Repeat, 1);
    let op = update_op(&m, None, &mut one, 40, repeat);
    let r = ok(
        &m,
        m.build_paging(0, DXGK_OPERATION_UPDATE_PAGE_TABLE, op, 4096),
    );
    let (st, words) = r.last().cloned().expect("a pass");
    assert_eq!(st, STATUS_SUCCESS);
    match rvgpu_hw::cmd::decode(&words) {
        Ok(Command::WriteData { count: 40, .. }) => {
            let data = &words[2..42];
            assert!(data.iter().all(|w| *w == data[0] && *w != 0), "{data:x?}");
        }
        other => panic!("{other:?}"),
    }
}

/// DDI-03: a leaf map with Repeat (24H2 sends it for a Map range that repeats one page of its
/// allocation, with the table's shadow entries after the first) writes entry 0 to every slot
/// and never reads the entries after it: here they name another page, which no slot takes.
#[test]
fn ddi_03_repeated_map_writes_entry_zero_to_every_slot() {
    let m = machine_with(Mode::Step, |_| {});
    let page = |p: u64| {
        let f = DXGK_PTE_0::from_value(0)
            .with(DXGK_PTE_0::Valid, 1)
            .with(DXGK_PTE_0::Segment, 2);
        DXGK_PTE::from_raw(f.Value, p)
    };
    let words = |n: u32, flags| {
        let mut two = [page(1), page(7)];
        let op = update_op(&m, None, &mut two, n, flags);
        let r = ok(
            &m,
            m.build_paging(0, DXGK_OPERATION_UPDATE_PAGE_TABLE, op, 4096),
        );
        let (st, words) = r.last().cloned().expect("a pass");
        assert_eq!(st, STATUS_SUCCESS);
        match rvgpu_hw::cmd::decode(&words) {
            Ok(Command::WriteData { count, .. }) if u32::from(count) == n => {
                words[2..2 + n as usize].to_vec()
            }
            other => panic!("{other:?}"),
        }
    };
    let plain = words(2, DXGK_UPDATEPAGETABLEFLAGS::default());
    assert_ne!(plain[0], plain[1], "two pages, two entries");
    let repeat = DXGK_UPDATEPAGETABLEFLAGS::default().with(DXGK_UPDATEPAGETABLEFLAGS::Repeat, 1);
    let repeated = words(16, repeat);
    assert!(repeated.iter().all(|w| *w == plain[0]), "{repeated:x?}");
    no_fault(&m);
}

/// DDI-01 (the attacker): `DxgkDdiCreateProcess` takes one PASID count per physical GPU
/// whether the array is there or not (24H2 passes 1 and NULL), never reads the array (a
/// pointer nothing backs is accepted without a fault), and refuses more PASIDs than the
/// adapter has GPUs.
#[test]
fn ddi_01_create_process_takes_the_pasid_count_and_never_reads_the_array() {
    let m = machine_with(Mode::Step, |_| {});
    let mut pasid = [7u32];
    for (n, p) in [(0, 0), (1, 0), (1, pasid.as_mut_ptr() as usize), (1, 0x10)] {
        assert_eq!(
            m.ddi_create_process_with_pasids(0, n, p).expect("ddi"),
            STATUS_SUCCESS,
            "NumPasid {n}, pPasid {p:#x}"
        );
    }
    for n in [2, u32::MAX] {
        assert_eq!(
            m.ddi_create_process_with_pasids(0, n, pasid.as_mut_ptr() as usize)
                .expect("ddi"),
            STATUS_INVALID_PARAMETER
        );
    }
    no_fault(&m);
}

/// The hand-over audit (`rvgpu_ddi::handover`): under the 24H2 reading, no process the OS
/// opens and no page-table update it sends (the paging process's start by CPU address,
/// maps, repeated invalidations, which name no allocation and no offset) fills a field 24H2
/// leaves zero, and every audited DDI was checked.
#[test]
fn ddi_01_the_os_fills_no_field_24h2_leaves_zero() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    let m = started(cfg);
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let buf = okk(&m, k.create_allocation(64 * 1024));
    ok(
        &m,
        m.page_in(
            &p,
            0,
            rvgpu_hw::addr::GpuVa::new(buf.gpu_va),
            64 * 1024,
            // VidMm only clears (FillPattern 0, M:VIDMM_GLOBAL::FillAllocationInternal).
            0,
        ),
    );
    okk(&m, k.destroy_allocation(buf.handle));
    for ddi in [
        rvgpu_ddi::handover::CREATE_PROCESS.name,
        rvgpu_ddi::handover::UPDATE_PAGE_TABLE.name,
        rvgpu_ddi::handover::UPDATE_PAGE_TABLE_INVALIDATE.name,
        rvgpu_ddi::handover::CREATE_ALLOCATION.name,
        rvgpu_ddi::handover::ALLOCATION_INFO.name,
        rvgpu_ddi::handover::OPEN_ALLOCATION.name,
        rvgpu_ddi::handover::OPEN_ALLOCATION_INFO.name,
    ] {
        let (blocks, filled) = m.handover(0, ddi);
        assert!(blocks > 0, "no {ddi} checked");
        assert!(
            filled.is_empty(),
            "fields 24H2 leaves zero, filled: {filled:?}"
        );
    }
    no_fault(&m);
}

/// DDI-01: `DxgkDdiSetRootPageTable` and FLUSHTLB reach the driver checked against the
/// hand-over audit (every field as 24H2 fills it: `M:VidSchiEnsureRootPageTableUpdated`
/// @0x1400EAF40, `M:VIDMM_GLOBAL::FlushGpuVaTlb` @0x1400E8D80): the paging node's system
/// context's root at start and an unmap's flush each counted, none filling a field 24H2
/// leaves zero.
#[test]
fn ddi_01_set_root_and_flush_tlb_are_handed_over_as_24h2_fills_them() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.windows = rvgpu_simos::Windows::W24H2;
    let m = started(cfg);
    let roots = || {
        m.handover(0, rvgpu_ddi::handover::SET_ROOT_PAGE_TABLE.name)
            .0
    };
    let flushes = || m.handover(0, rvgpu_ddi::handover::FLUSH_TLB.name).0;
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let before = flushes();
    let buf = okk(&m, k.create_allocation(4096));
    ok(
        &m,
        m.page_in(&p, 0, rvgpu_hw::addr::GpuVa::new(buf.gpu_va), 4096, 0),
    );
    okk(&m, k.destroy_allocation(buf.handle));
    assert!(roots() > 0, "no DxgkDdiSetRootPageTable checked");
    assert!(flushes() > before, "no FLUSH_TLB checked");
    let (_, filled) = m.handover(0, rvgpu_ddi::handover::FLUSH_TLB.name);
    assert!(
        filled.is_empty(),
        "fields 24H2 leaves zero, filled: {filled:?}"
    );
    no_fault(&m);
}

under_the_pages!();

/// Whether the next DPC of the started adapter sleeps first ([`stalled_dpc`]).
static STALL_NEXT_DPC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The driver's DPC, after [`STALL_MS`] of sleep when [`STALL_NEXT_DPC`] is armed: the
/// completion it reports reaches VidSch that much later.
unsafe extern "system" fn stalled_dpc(ctx: rvgpu_ddi::PVOID) {
    if rvgpu_simos::testing::adapter_started(ctx)
        && STALL_NEXT_DPC.swap(false, std::sync::atomic::Ordering::SeqCst)
    {
        std::thread::sleep(std::time::Duration::from_millis(STALL_MS));
    }
    // SAFETY: the OS's own argument, passed on to the driver's DPC.
    unsafe { rvgpu_simos::testing::driver_dpc(ctx) }
}

const STALL_MS: u64 = 300;

/// MF-04, the OS's paging wait (threaded): VidMm sleeps on VidSch's completion event until
/// the DPC that completes its paging buffer wakes it (24H2: `M:VIDMM_GLOBAL::WaitForFence`
/// @0x140038E5C waits on the fence's event), rather than looking at the fence every tick. A
/// completion whose wake-up were lost would leave the map waiting out the OS's wait limit
/// (a "did not complete" failure); a polling wait looks hundreds of times while the DPC
/// stalls.
#[test]
fn mf_04_a_paging_wait_sleeps_until_the_completion_wakes_it() {
    let m = started_with(MachineConfig::single(Mode::Threaded), |t| {
        t.DxgkDdiDpcRoutine = Some(stalled_dpc);
    });
    let p = ok(&m, m.create_process(0));
    let k = m.kmt(&p);
    let before = m.paging_wait_looks(0);
    STALL_NEXT_DPC.store(true, std::sync::atomic::Ordering::SeqCst);
    // A new allocation is mapped through the driver's paging buffers and waited for.
    let buf = okk(&m, k.create_allocation(4096));
    let looks = m.paging_wait_looks(0) - before;
    assert!(
        !STALL_NEXT_DPC.load(std::sync::atomic::Ordering::SeqCst),
        "no DPC ran while the map waited"
    );
    assert!(
        (1..=LOOKS_PER_MAP).contains(&looks),
        "the map's paging waits looked {looks} times at their fences while one DPC stalled \
         {STALL_MS} ms (a wait looks once, then once per wake-up)"
    );
    assert!(m
        .gpu_translate(0, p.pid, rvgpu_hw::addr::GpuVa::new(buf.gpu_va))
        .is_some());
    no_fault(&m);
}

/// Looks of a map's paging waits: one per wait and one per completion event setting.
const LOOKS_PER_MAP: u64 = 12;
