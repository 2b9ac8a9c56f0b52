//! Contexts and their DMA buffers as 24H2 hands them to the driver (UM-10, UM-01):
//! `DxgkDdiCreateContext` receives Dxgkrnl's context handle block, which
//! `DxgkCbInvalidateHwContext` follows when the KMD blames a context, and
//! `DxgkDdiSubmitCommandVirtual` runs at PASSIVE_LEVEL with the buffer's private data. Every
//! test runs on both driver builds and both readings.

mod common;

use common::tdr::*;
use common::*;

use rvgpu_simos::{Machine, MachineConfig, Mode, TdrEvent};
use rvgpu_umd::kmt::{AllocationCpu, Kmt};
use rvgpu_umd::submit::UserQueue;

thread_local! {
    /// `DxgkDdiCreateContext` calls the thread saw: (input `hContext`, output `hContext`,
    /// `Flags`). Step mode calls the DDI on the test's thread.
    static CONTEXTS_SEEN: std::cell::RefCell<Vec<(usize, usize, u32)>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// The real DDI of the thread's machine (each machine may load its own image).
    static REAL_CREATE_CONTEXT: std::cell::Cell<rvgpu_ddi::init::PDXGKDDI_CREATECONTEXT> =
        const { std::cell::Cell::new(None) };
}

unsafe extern "system" fn create_context_seen(
    device: rvgpu_ddi::HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> rvgpu_ddi::NTSTATUS {
    let Some(real) = REAL_CREATE_CONTEXT.with(std::cell::Cell::get) else {
        return 0xC000_0001_u32 as i32;
    };
    // SAFETY: the OS's argument block, valid for the call.
    let before = unsafe { ((*args).hContext as usize, (*args).Flags.Value) };
    // SAFETY: the real DDI with the OS's arguments.
    let status = unsafe { real(device, args) };
    // SAFETY: as above.
    let after = unsafe { (*args).hContext as usize };
    CONTEXTS_SEEN.with(|c| c.borrow_mut().push((before.0, after, before.1)));
    status
}

/// A started machine whose `DxgkDdiCreateContext` calls are recorded in [`CONTEXTS_SEEN`].
fn context_spy_machine(f: impl FnOnce(&mut rvgpu_simos::AdapterConfig)) -> Machine {
    let mut cfg = MachineConfig::single(Mode::Step);
    f(&mut cfg.adapters[0]);
    CONTEXTS_SEEN.with(|c| c.borrow_mut().clear());
    // The hook runs on this thread, at load.
    started_with(cfg, |t| {
        REAL_CREATE_CONTEXT.with(|r| r.set(t.DxgkDdiCreateContext));
        t.DxgkDdiCreateContext = Some(create_context_seen);
    })
}

/// The contexts created since the machine `m` started, but system contexts: (input
/// `hContext`, the driver's handle, `Flags`).
fn contexts_seen(from: usize) -> Vec<(usize, usize, u32)> {
    use rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS as F;
    let seen = CONTEXTS_SEEN.with(|c| c.borrow().clone());
    let mine: Vec<_> = seen
        .iter()
        .skip(from)
        .filter(|(_, _, f)| !F::from_value(*f).is_set(F::SystemContext))
        .copied()
        .collect();
    assert!(!mine.is_empty(), "no context created: {seen:x?}");
    mine
}

/// How many contexts were recorded so far (tests of this binary share the record).
fn contexts_mark() -> usize {
    CONTEXTS_SEEN.with(|c| c.borrow().len())
}

/// `DxgkCbInvalidateHwContext` of adapter 0 naming `h`.
fn invalidate(m: &Machine, h: usize) -> rvgpu_ddi::NTSTATUS {
    let iface = dxgkrnl_interface(m);
    let Some(cb) = iface.DxgkCbInvalidateHwContext else {
        panic!("no DxgkCbInvalidateHwContext")
    };
    let args = rvgpu_ddi::dxgkrnl::DXGKARGCB_INVALIDATEHWCONTEXT {
        hAdapter: iface.DeviceHandle,
        hHwContext: h as rvgpu_ddi::HANDLE,
        ..Default::default()
    };
    // SAFETY: the OS's callback with a valid argument block.
    unsafe { cb(&args) }
}

/// UM-10 (24H2 `K:DXGCONTEXT::Initialize`): a context's `DxgkDdiCreateContext` gets Dxgkrnl's
/// context handle as its input `hContext` (not NULL) and the flags the context asks for: a
/// user-mode queue's context is virtual and hardware-queue capable. The KMD's reset names the
/// guilty context by that handle, which the callback follows (`K:DxgkInvalidateHwContextCB`):
/// the hung queue's device goes in error without a fault.
#[test]
fn um_10_create_context_hands_dxgkrnl_context_handle() {
    let m = context_spy_machine(|_| {});
    enable_tdr(&m, fast());
    let mark = contexts_mark();
    let h = hang_a_user_queue_until_resumed(&m);
    use rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS as F;
    for (input, kmd, flags) in contexts_seen(mark) {
        assert_ne!(input, 0, "24H2 passes its context handle block");
        assert_ne!(input, kmd);
        let f = F::from_value(flags);
        assert!(
            f.is_set(F::VirtualAddressing) && f.is_set(F::HwQueueSupported),
            "{flags:#x}"
        );
        assert!(!f.is_set(F::GdiContext), "{flags:#x}");
    }
    let ev = m.tdr_events(0);
    assert!(
        ev.iter()
            .any(|e| matches!(e, TdrEvent::Invalidated { device } if *device == h.device)),
        "{ev:#?}"
    );
    no_fault(&m);
}

/// UM-10: `DxgkCbInvalidateHwContext` reads +8 of what it is given (24H2
/// `K:DxgkInvalidateHwContextCB` @0x14006C2E0): the driver's own context handle is no
/// Dxgkrnl object, and the read is a page fault (bug check 0x50).
#[test]
fn um_10_invalidate_hw_context_with_the_drivers_handle_is_0x50() {
    let m = context_spy_machine(|_| {});
    let mark = contexts_mark();
    let (_p, k) = user_process(&m);
    let q = okk(&m, UserQueue::new(k, &config(0)));
    let (input, kmd, _) = contexts_seen(mark)[0];
    assert_ne!(input, 0);
    let _ = invalidate(&m, kmd);
    let b = m.bugcheck().map(|b| b.code);
    assert_eq!(
        b,
        Some(rvgpu_simos::base::bugcheck::PAGE_FAULT_IN_NONPAGED_AREA)
    );
    std::mem::forget(q);
}

/// UM-10: a context without a hardware context (a kernel-mode DMA context on a node the OS
/// schedules) leaves +8 of its handle block zero, and `DxgkCbInvalidateHwContext` naming it
/// succeeds and does nothing (24H2 `K:DxgkInvalidateHwContextCB` returns 0 without VidSch).
#[test]
fn um_10_invalidate_hw_context_without_a_hw_context_does_nothing() {
    let m = context_spy_machine(|a| a.hwsch_feature = false);
    let mark = contexts_mark();
    let (_p, _k, _ctx) = process_with_context(&m);
    let (input, _, flags) = contexts_seen(mark)[0];
    assert_ne!(input, 0);
    use rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS as F;
    assert!(
        !F::from_value(flags).is_set(F::HwQueueSupported),
        "{flags:#x}"
    );
    assert_eq!(invalidate(&m, input), 0);
    assert!(
        !m.tdr_events(0)
            .iter()
            .any(|e| matches!(e, TdrEvent::Invalidated { .. })),
        "{:#?}",
        m.tdr_events(0)
    );
    no_fault(&m);
}

/// One `DxgkDdiSubmitCommandVirtual` call: IRQL, private data pointer, its size, the UMD's
/// part, flags.
type VirtualCall = (rvgpu_simos::Irql, usize, u32, u32, u32);

thread_local! {
    /// `DxgkDdiSubmitCommandVirtual` calls the thread saw.
    static VIRTUAL_SEEN: std::cell::RefCell<Vec<VirtualCall>> =
        const { std::cell::RefCell::new(Vec::new()) };
    static REAL_SUBMIT_VIRTUAL: std::cell::Cell<rvgpu_ddi::init::PDXGKDDI_SUBMITCOMMANDVIRTUAL> =
        const { std::cell::Cell::new(None) };
}

unsafe extern "system" fn submit_virtual_seen(
    ctx: rvgpu_ddi::HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMANDVIRTUAL,
) -> rvgpu_ddi::NTSTATUS {
    let Some(real) = REAL_SUBMIT_VIRTUAL.with(std::cell::Cell::get) else {
        return 0xC000_0001_u32 as i32;
    };
    // SAFETY: the OS's argument block, valid for the call.
    let a = unsafe { &*args };
    VIRTUAL_SEEN.with(|v| {
        v.borrow_mut().push((
            rvgpu_simos::base::processor::current_irql(),
            a.pDmaBufferPrivateData as usize,
            a.DmaBufferPrivateDataSize,
            a.DmaBufferUmdPrivateDataSize,
            a.Flags.Value,
        ))
    });
    // SAFETY: the real DDI with the OS's arguments.
    unsafe { real(ctx, args) }
}

/// UM-01 (24H2 `M:VidSchiSendToExecutionQueue`, `M:VidSchiFillSubmitCommandDataVirtual`): a
/// process's kernel-mode DMA buffer reaches `DxgkDdiSubmitCommandVirtual` at PASSIVE_LEVEL
/// (VidSch lowers the IRQL it raised before the call) with the buffer's private data (the
/// context's `DmaBufferPrivateDataSize` bytes, none of it the UMD's here) and no flag; the KMD
/// runs it.
#[test]
fn um_01_submit_command_virtual_at_passive_with_private_data() {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.adapters[0].hwsch_feature = false;
    VIRTUAL_SEEN.with(|v| v.borrow_mut().clear());
    // The hook runs on this thread, at load.
    let m = started_with(cfg, |t| {
        REAL_SUBMIT_VIRTUAL.with(|r| r.set(t.DxgkDdiSubmitCommandVirtual));
        t.DxgkDdiSubmitCommandVirtual = Some(submit_virtual_seen);
    });
    let (p, k, ctx) = process_with_context(&m);
    let t = okk(&m, k.create_allocation(4096));
    let f = ok(&m, m.submit_legacy(&p, ctx, &[fill(&t, 0, 0x5A)]));
    run_until(&m, "the buffer", |m| m.legacy_fences(0, 0).1 >= f);
    assert_eq!(t.mem.load(0), 0x5A);
    let seen = VIRTUAL_SEEN.with(|v| v.borrow().clone());
    assert!(!seen.is_empty(), "no SubmitCommandVirtual");
    for (irql, private, _size, umd, flags) in seen {
        assert_eq!(irql, rvgpu_simos::Irql::Passive);
        assert_ne!(private, 0, "24H2 always passes the buffer's private data");
        assert_eq!(umd, 0);
        assert_eq!(flags, 0);
    }
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
