//! What must be released by RemoveDevice and Unload, and the feature interface's reference
//! rules (S9), plus contiguous memory limits (S4 through the callback).

mod common;

use common::{contiguous, dxgkrnl_interface, pe};

use rvgpu_ddi::dxgkrnl::DxgkServicesFeature;
use rvgpu_ddi::feature::{DXGK_FEATURE_INTERFACE, DXGK_FEATURE_INTERFACE_VERSION_1};
use rvgpu_ddi::ntstatus::{STATUS_INSUFFICIENT_RESOURCES, STATUS_NO_MEMORY};
use rvgpu_simos::base::bugcheck;
use rvgpu_simos::testing;
use rvgpu_simos::{Irql, Machine, MachineConfig, Mode, SimError};

fn started() -> Machine {
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    if let Err(e) = m
        .load_driver()
        .and_then(|()| m.start_adapter(0).map(|_| ()))
    {
        panic!("bring-up: {e}");
    }
    m
}

/// A routine of the feature interface that takes its context.
type ContextFn = unsafe extern "system" fn(rvgpu_ddi::PVOID);

/// The feature interface's InterfaceReference and InterfaceDereference (the OS fills both).
fn ref_counting(fi: &DXGK_FEATURE_INTERFACE) -> (ContextFn, ContextFn) {
    let (Some(reference), Some(deref)) = (fi.InterfaceReference, fi.InterfaceDereference) else {
        panic!("no InterfaceReference or InterfaceDereference")
    };
    (reference, deref)
}

fn feature_interface(m: &Machine) -> DXGK_FEATURE_INTERFACE {
    let iface = dxgkrnl_interface(m);
    let Some(qs) = iface.DxgkCbQueryServices else {
        panic!("no QueryServices")
    };
    let mut fi = DXGK_FEATURE_INTERFACE {
        Size: std::mem::size_of::<DXGK_FEATURE_INTERFACE>() as u16,
        Version: DXGK_FEATURE_INTERFACE_VERSION_1,
        Context: std::ptr::null_mut(),
        InterfaceReference: None,
        InterfaceDereference: None,
        IsFeatureEnabled: None,
        QueryFeatureInterface: None,
    };
    // SAFETY: the OS's callback with its handle and a buffer of the declared size.
    let s = unsafe {
        qs(
            iface.DeviceHandle,
            DxgkServicesFeature,
            (&mut fi as *mut DXGK_FEATURE_INTERFACE).cast(),
        )
    };
    assert_eq!(s, 0);
    fi
}

/// Stops adapter 0, then expects RemoveDevice to fail naming `leak`.
fn stop_then_remove_fails(m: &mut Machine, leak: &str) {
    if let Err(e) = m.stop_adapter(0) {
        panic!("stop: {e}");
    }
    match m.remove_adapter(0) {
        Err(SimError::Violation(msg)) => assert!(msg.contains(leak), "{msg}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// S9: RemoveDevice returning while the driver still holds contiguous memory of the adapter
/// is a failure (it can never be freed: freeing needs the dead handle).
#[test]
fn remove_with_leaked_contiguous_memory_fails() {
    let mut m = started();
    let _leaked = contiguous(&m, 4096);
    stop_then_remove_fails(&mut m, "1 contiguous");
}

/// S9: RemoveDevice with a feature-interface reference still held fails.
#[test]
fn remove_with_a_held_interface_reference_fails() {
    let mut m = started();
    let _fi = feature_interface(&m); // one more reference, never released
    stop_then_remove_fails(&mut m, "1 feature-interface");
}

/// S9: dereferencing the interface more often than referenced never goes negative: it is a
/// failure at the call.
#[test]
fn interface_dereference_underflow_is_a_failure() {
    let m = started();
    let fi = feature_interface(&m);
    let (_, deref) = ref_counting(&fi);
    // SAFETY: the interface's own routine with its own context.
    unsafe {
        deref(fi.Context); // ours
        deref(fi.Context); // the driver's (it will not be able to release it now)
        assert!(m.fault().is_none(), "{:?}", m.fault());
        deref(fi.Context); // one too many
    }
    assert!(
        matches!(m.fault(), Some(SimError::Violation(ref s)) if s.contains("negative")),
        "{:?}",
        m.fault()
    );
    assert_eq!(m.feature_usage(0).0, 0, "never negative");
}

/// S9: InterfaceReference is callable at IRQL <= DISPATCH_LEVEL only, and its context must be
/// a live adapter handle.
#[test]
fn interface_reference_checks_irql_and_handle() {
    let m = started();
    let fi = feature_interface(&m);
    let (reference, _) = ref_counting(&fi);
    // SAFETY: the interface's routine, at device IRQL (the violation under test).
    m.at_irql(Irql::Device, |_| unsafe { reference(fi.Context) });
    assert_eq!(
        m.bugcheck().map(|b| b.code),
        Some(bugcheck::IRQL_NOT_LESS_OR_EQUAL)
    );

    let mut m = started();
    let fi = feature_interface(&m);
    let (_, deref) = ref_counting(&fi);
    // SAFETY: release the test's own reference so the adapter can be removed cleanly.
    unsafe { deref(fi.Context) };
    let r = m.stop_adapter(0).and_then(|()| m.remove_adapter(0));
    if let Err(e) = r {
        panic!("down: {e}");
    }
    let (reference, _) = ref_counting(&fi);
    // SAFETY: the interface's routine with the removed adapter's context (caught).
    unsafe { reference(fi.Context) };
    assert_eq!(
        m.bugcheck().map(|b| (b.code, b.params[0])),
        Some((
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            fi.Context as usize as u64
        ))
    );
}

/// S4: a huge DxgkCbAllocateContiguousMemory fails with a resource status, at once, without
/// the host allocating anything.
#[test]
fn huge_contiguous_allocation_fails_cleanly() {
    let m = started();
    let iface = dxgkrnl_interface(&m);
    for bytes in [usize::MAX / 2, 1usize << 40, (1usize << 30) + 4096] {
        // SAFETY: the table the simulation handed out.
        let (s, h, p) = unsafe { testing::allocate_contiguous(&iface, bytes) };
        assert!(
            s == STATUS_INSUFFICIENT_RESOURCES || s == STATUS_NO_MEMORY,
            "{bytes:#x}: {s:#x}"
        );
        assert!(h.is_null() && p.is_null());
    }
    assert!(m.fault().is_none());
}

/// S5: freed contiguous memory is quarantined (kept alive and poisoned), so a write through
/// a stale pointer is memory-safe and is caught at Unload: 0xD5
/// DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL at the written address.
#[test]
fn write_after_free_of_contiguous_memory_is_caught_at_unload() {
    for write_after_free in [false, true] {
        let mut m = started();
        let (iface, h, p) = contiguous(&m, 8192);
        // SAFETY: the table the simulation handed out; the test stands in for the driver.
        assert_eq!(unsafe { testing::free_contiguous(&iface, h, p) }, 0);
        let stale = p.cast::<u64>().wrapping_add(3);
        if write_after_free {
            // SAFETY: the quarantine keeps the backing alive, so the stale write is memory
            // safe on the host; it is the driver bug under test. Atomic, as the memory
            // contract requires.
            unsafe { std::sync::atomic::AtomicU64::from_ptr(stale) }
                .store(1, std::sync::atomic::Ordering::Release);
        }
        let r = m
            .stop_adapter(0)
            .and_then(|()| m.remove_adapter(0))
            .and_then(|()| m.unload());
        if write_after_free {
            assert_eq!(
                r.err().and_then(|e| match e {
                    SimError::Bugcheck(b) => Some((b.code, b.params[0], b.params[1])),
                    _ => None,
                }),
                Some((
                    bugcheck::DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL,
                    stale as usize as u64,
                    1
                ))
            );
        } else {
            assert_eq!(r, Ok(()));
        }
    }
}

/// Every test of this file again, against `rvgpu.sys` in the x86-64 emulator.
#[test]
fn against_the_pe_image() {
    pe::rerun_against_the_pe_image(&[]);
}
