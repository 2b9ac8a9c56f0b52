//! The simulation bug-checks where Windows would.

use rvgpu_simos::base::bugcheck::{self, vidsch, BugCheck};
use rvgpu_simos::testing::{self, BAD_FENCE_HANDLE};
use rvgpu_simos::{Irql, Machine, MachineConfig, Mode, SimError};

mod common;
use common::{contiguous, dxgkrnl_interface, started_with};

fn started(mode: Mode) -> Machine {
    common::started(MachineConfig::single(mode))
}

/// NF-14: an ISR reporting a native fence handle the OS never handed out halts the machine
/// with 0x119 (subtype 1, the handle, the interrupt type, its index). Device without
/// `CAPS.OPTIMIZED_FENCE_IRQ`: the OS reads the fence array (with the cap it reads
/// `hHWQueue` and ignores the array, LOG-08).
#[test]
fn nf_14_unknown_fence_handle_in_interrupt_is_0x119() {
    for mode in [Mode::Step, Mode::Threaded] {
        let mut cfg = MachineConfig::single(mode);
        for a in &mut cfg.adapters {
            a.device.optimized_fence_irq = false;
        }
        let m = started_with(cfg, |t| {
            t.DxgkDdiInterruptRoutine = Some(testing::isr_reports_unknown_fence_handle)
        });
        let _ = m.raise_interrupt(0);
        let halted = m.run_until(10, std::time::Duration::from_secs(5), |m| {
            m.bugcheck().is_some()
        });
        assert!(
            matches!(halted, Err(SimError::Bugcheck(_))),
            "{mode:?}: {halted:?}"
        );
        assert_eq!(
            m.bugcheck(),
            Some(BugCheck::video_scheduler(
                vidsch::DRIVER_REPORTED_INVALID_FENCE_ID,
                BAD_FENCE_HANDLE as u64,
                rvgpu_ddi::interrupt::DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED as u64,
                0
            )),
            "{mode:?}"
        );
        // Halted: every later call fails with the same bug check.
        assert!(matches!(m.query_driver_caps(0), Err(SimError::Bugcheck(b)) if b.code == 0x119));
    }
}

/// A known handle is accepted (the check is not "reject everything") exactly when the adapter
/// may report native fences at all: the OS enabled the feature (it is, by default) and the
/// driver advertised NativeGpuFence in the caps it actually reported (NF-10). Otherwise the
/// report is of a type this adapter may not raise: 0x119 with the simulation's subtype.
#[test]
fn known_fence_handle_is_accepted_exactly_when_native_fences_are_advertised() {
    use rvgpu_ddi::adapter::DXGK_VIDSCHCAPS;
    use rvgpu_ddi::interrupt::DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED;
    let m = started_with(MachineConfig::single(Mode::Step), |t| {
        t.DxgkDdiInterruptRoutine = Some(testing::isr_reports_unknown_fence_handle)
    });
    let caps = match m.query_driver_caps(0) {
        Ok(c) => c,
        Err(e) => panic!("caps: {e}"),
    };
    let advertised = caps.SchedulingCaps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence);
    m.add_native_fence_handle(0, BAD_FENCE_HANDLE);
    // The start paged the paging process in: its completions are there already.
    let before = m.notifications(0).len();
    let r = m.raise_interrupt(0);
    if advertised {
        assert_eq!(r, Ok(()));
        assert_eq!(
            m.notifications(0).len(),
            before + 1,
            "{:?}",
            m.notifications(0)
        );
    } else {
        assert_eq!(
            r,
            Err(SimError::Bugcheck(BugCheck::video_scheduler(
                vidsch::SIM_UNKNOWN_INTERRUPT_TYPE,
                DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED as u64,
                1,
                0
            )))
        );
    }
}

/// A DDI entered at a level Windows forbids: QueryAdapterInfo (PASSIVE) at DISPATCH is 0xA.
#[test]
fn ddi_at_wrong_irql_is_0xa() {
    let m = started(Mode::Step);
    let r = m.at_irql(Irql::Dispatch, |m| m.query_driver_caps(0));
    match r {
        Err(SimError::Bugcheck(b)) => {
            assert_eq!(b.code, bugcheck::IRQL_NOT_LESS_OR_EQUAL);
            assert_eq!(b.params[1], 2, "IRQL parameter");
            assert_eq!(b.params[2], 8, "execute");
        }
        other => panic!("expected 0xA, got {other:?}"),
    }
}

/// A callback called at a wrong level: a PASSIVE callback from the ISR is 0xA.
#[test]
fn callback_at_wrong_irql_is_0xa() {
    let m = started_with(MachineConfig::single(Mode::Step), |t| {
        t.DxgkDdiInterruptRoutine = Some(testing::isr_calls_passive_callback)
    });
    let r = m.raise_interrupt(0);
    match r {
        Err(SimError::Bugcheck(b)) => {
            assert_eq!(b.code, bugcheck::IRQL_NOT_LESS_OR_EQUAL, "{b}");
            assert_eq!(b.params[1], bugcheck::kirql(Irql::Device));
        }
        other => panic!("expected 0xA, got {other:?}"),
    }
}

/// Freeing contiguous memory twice is Driver Verifier's 0xC4 / 0x10 with the address.
#[test]
fn contiguous_memory_double_free_is_0xc4() {
    let m = started(Mode::Step);
    let (iface, h, p) = contiguous(&m, 8192);
    // SAFETY: the table the simulation handed out; the test stands in for the driver.
    assert_eq!(unsafe { testing::free_contiguous(&iface, h, p) }, 0);
    assert!(m.bugcheck().is_none());
    // SAFETY: as above; the second free is the violation under test.
    let s2 = unsafe { testing::free_contiguous(&iface, h, p) };
    assert!(s2 < 0);
    assert_eq!(
        m.bugcheck(),
        Some(BugCheck::verifier(
            bugcheck::verifier::FREE_BAD_ADDRESS,
            h as usize as u64,
            0,
            0
        ))
    );
}

/// Contiguous memory has a bus address the platform resolves.
#[test]
fn contiguous_memory_has_a_bus_address() {
    use rvgpu_kmd::platform::Platform;
    let m = started(Mode::Step);
    let (iface, h, p) = contiguous(&m, 4096);
    let bus = std::ptr::NonNull::new(p.cast::<u8>()).and_then(rvgpu_simos::SimKernel::bus_address);
    assert!(bus.is_some_and(|b| b.get() >= rvgpu_device::SYSMEM_START));
    // SAFETY: the table the simulation handed out; the test stands in for the driver.
    assert_eq!(unsafe { testing::free_contiguous(&iface, h, p) }, 0);
}

/// An ISR that never claims a level-triggered interrupt that stays asserted is an interrupt
/// storm: 0xF2 with the ISR address and the number of unclaimed calls.
#[test]
fn unclaimed_interrupt_storm_is_0xf2() {
    unsafe extern "system" fn never_mine(ctx: rvgpu_ddi::PVOID, msg: u32) -> u8 {
        // The start pages through the GPU: the real driver services that; from then on
        // nothing claims the line.
        if !testing::adapter_started(ctx) {
            // SAFETY: our own arguments, passed on.
            return unsafe { testing::driver_isr(ctx, msg) };
        }
        0
    }
    let mut cfg = MachineConfig::single(Mode::Step);
    // An idle engine requests F1 after 50 ticks; the driver enabled the cause at start, and
    // nobody acknowledges it, so the line stays up.
    cfg.adapters[0].device.idle_f1_ticks = 50;
    // A storm is a level that stays up: a line-based interrupt (a message carries no level).
    cfg.adapters[0].msi = false;
    let m = started_with(cfg, |t| t.DxgkDdiInterruptRoutine = Some(never_mine));
    let r = m.run_steps(200);
    match r {
        Err(SimError::Bugcheck(b)) => {
            assert_eq!(b.code, bugcheck::HARDWARE_INTERRUPT_STORM, "{b}");
            // At least the limit of consecutive unclaimed calls, over several device steps.
            assert!(
                b.params[3] >= rvgpu_simos::adapter::irq::UNCLAIMED_STORM_LIMIT,
                "{b}"
            );
        }
        other => panic!("expected 0xF2, got {other:?}"),
    }
}

/// S3: the storm decision uses the device's own request and a minimum duration: thousands of
/// quick unclaimed calls while the clock does not move are not a storm, a request that went
/// away resets the run, and a run that lasts is.
#[test]
fn storm_needs_the_device_request_and_a_minimum_duration() {
    use rvgpu_simos::adapter::irq::{STORM_MIN_STEPS, UNCLAIMED_STORM_LIMIT};
    let m = started(Mode::Step);
    let iface = dxgkrnl_interface(&m);
    let Some(a) = rvgpu_simos::adapter::AdapterShared::from_handle(iface.DeviceHandle) else {
        panic!("no adapter")
    };
    for _ in 0..5 * UNCLAIMED_STORM_LIMIT {
        assert_eq!(a.storm_check(false, true, 1_000), None, "no time passed");
    }
    assert_eq!(a.storm_check(false, false, 1_000), None);
    let t0 = 10_000;
    for _ in 0..UNCLAIMED_STORM_LIMIT - 1 {
        assert_eq!(a.storm_check(false, true, t0), None);
    }
    let later = t0 + STORM_MIN_STEPS * rvgpu_device::STEP_TICKS;
    assert_eq!(
        a.storm_check(false, true, later),
        Some(UNCLAIMED_STORM_LIMIT),
        "limit reached over the minimum duration"
    );
    assert!(m.bugcheck().is_none());
}

/// T2: the caps buffer reaches QueryAdapterInfo filled with 0xCD, so a driver that leaves
/// fields unset is caught: here one writes only SchedulingCaps and the node count, leaving
/// the deprecated Reserved blocks (which must be zero) and WDDMVersion as garbage: the OS fails
/// the start. In Windows' order the garbage version (≥ 0x2000) makes the OS ask for the
/// physical adapter caps, which this driver "answers", so BR-36(a) (a WDDM 2.0+ driver without
/// MultiEngineAware) fails before BR-33 (the unknown version, checked after the MiscCaps rules).
#[test]
fn caps_fields_left_unset_are_visible_and_rejected() {
    use rvgpu_ddi::adapter::{DXGKARG_QUERYADAPTERINFO, DXGK_DRIVERCAPS};
    use rvgpu_ddi::{HANDLE, NTSTATUS};
    unsafe extern "system" fn partial_qai(
        _ctx: HANDLE,
        args: *const DXGKARG_QUERYADAPTERINFO,
    ) -> NTSTATUS {
        // SAFETY: the OS's argument block; for DRIVERCAPS the output is a DXGK_DRIVERCAPS.
        unsafe {
            let caps = (*args).pOutputData.cast::<DXGK_DRIVERCAPS>();
            (*caps).SchedulingCaps = Default::default();
            (*caps).GpuEngineTopology.NbAsymetricProcessingNodes = 2;
            (*caps).InterruptMessageNumber = 0;
        }
        0
    }
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    if let Err(e) = m.load_driver_with(|t| t.DxgkDdiQueryAdapterInfo = Some(partial_qai)) {
        panic!("load: {e}");
    }
    match m.start_adapter(0) {
        Err(SimError::StartRefused { rule, status, why }) => {
            assert_eq!((rule, status), ("BR-36", 0xC000_000D_u32 as i32), "{why}");
            assert!(why.contains("0xcdcdcdcd"), "{why}");
        }
        other => panic!("expected the start to be refused, got {other:?}"),
    }
}

/// T2: the real driver's caps pass the OS's checks and say what the device is.
#[test]
fn driver_caps_are_fully_initialised() {
    let m = started(Mode::Step);
    let caps = match m.query_driver_caps(0) {
        Ok(c) => c,
        Err(e) => panic!("caps: {e}"),
    };
    assert_eq!(rvgpu_simos::pnp::validate_caps(&caps), Ok(()));
    assert_eq!(caps.GpuEngineTopology.NbAsymetricProcessingNodes, 2);
    assert_eq!(caps.InterruptMessageNumber, 0);
    // SAFETY: PHYSICAL_ADDRESS is a union of integers; any bit pattern is valid.
    let highest = unsafe { caps.HighestAcceptableAddress.QuadPart } as u64;
    assert_ne!(highest, 0xCDCD_CDCD_CDCD_CDCD);
    assert_ne!(caps.MaxAllocationListSlotId, 0xCDCD_CDCD);
    assert_ne!(caps.SchedulingCaps.Value, 0xCDCD_CDCD);
    assert_ne!(
        caps.PreemptionCaps.GraphicsPreemptionGranularity as u32,
        0xCDCD_CDCD
    );
}

against_the_pe_image!();
