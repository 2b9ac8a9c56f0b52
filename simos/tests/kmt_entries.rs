//! Thunk kernel entries (`rvgpu_simos::kmt`) called directly, as 24H2 answers them:
//!
//! - the CPU wait on a device an adapter-wide recovery stopped (UM-10): 24H2's
//!   `K:WaitForSynchronizationObjectFromCpu` @0x1402AD200 takes the device's core access and
//!   refuses a device whose state (DXGDEVICE +608) is not active with STATUS_DEVICE_REMOVED,
//!   before it references `hAsyncEvent` or looks at an object;
//! - `D3DKMTOpenAdapterFromLuid` for a caller whose handle table is full (UM-17): 24H2's
//!   `K:DxgkOpenAdapterFromLuidImpl` @0x14035AC38 answers the table's status and copies its
//!   handle, still 0, to `hAdapter` on every path past the adapter's stop lock.
//!
//! Every test runs on both driver builds and both readings.

mod common;

use common::tdr::*;
use common::*;

use rvgpu_ddi::d3dkmt::D3DKMT_OPENADAPTERFROMLUID;
use rvgpu_ddi::ntstatus::{
    STATUS_DEVICE_REMOVED, STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY,
};
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::adapter::{dxgk_open_adapter_from_luid_impl, AdapterTable};
use rvgpu_simos::kmt::sync_from_cpu::{
    dxgk_wait_for_synchronization_object_from_cpu_internal, HostArrays,
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU,
};
use rvgpu_simos::{Mode, ProcessId};
use rvgpu_umd::kmt::{DeviceExecutionState, Kmt, KmtHandle, NtStatus};
use rvgpu_umd::submit::UserQueue;

/// The wait's structure for one object of `device` with an event handle that names nothing.
fn wait_with_event(device: u32) -> D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
    D3DKMT_WAITFORSYNCHRONIZATIONOBJECTFROMCPU {
        hDevice: device,
        ObjectCount: 1,
        ObjectHandleArray: HostArrays::HANDLES,
        FenceValueArray: HostArrays::VALUES,
        hAsyncEvent: 0x4444,
        ..Default::default()
    }
}

/// UM-10: a live device's wait reaches the event (an event handle of nobody's:
/// STATUS_INVALID_HANDLE); once an adapter-wide recovery stopped the device, the same wait is
/// STATUS_DEVICE_REMOVED (the device's state is read before the event), and so is the UMD's
/// blocking wait on one of its fences.
#[test]
fn um_10_a_stopped_device_gets_device_removed_from_the_cpu_wait_before_its_event() {
    let m = tdr_machine(Mode::Step, |_| {});
    let (o, ko) = user_process(&m);
    let (fence, _) = okk(&m, ko.create_monitored_fence(0));
    let no_event = |_: u64| Err(NtStatus(STATUS_INVALID_HANDLE));
    let mem = HostArrays::one(fence, 1);
    let a = wait_with_event(o.device);
    let live = dxgk_wait_for_synchronization_object_from_cpu_internal(&m, &a, &ko, &mem, &no_event);
    assert_eq!(
        live.err(),
        Some(NtStatus(STATUS_INVALID_HANDLE)),
        "live device"
    );

    // Another process hangs node 0 and its engine reset fails: the adapter-wide path.
    let (_h, kh) = user_process(&m);
    let mut hq = okk(&m, UserQueue::new(kh, &config(0)));
    m.device(0).unwrap().fail_next_reset(0);
    okk(&m, hq.submit(&[Command::Hang]));
    run_until(&m, "adapter reset", |m| adapter_resets(m) == 1);
    assert_eq!(ko.device_execution_state(), Ok(DeviceExecutionState::RESET));

    let stopped =
        dxgk_wait_for_synchronization_object_from_cpu_internal(&m, &a, &ko, &mem, &no_event);
    assert_eq!(
        stopped.err(),
        Some(NtStatus(STATUS_DEVICE_REMOVED)),
        "stopped device, with an event"
    );
    assert_eq!(
        ko.wait_for_fence(fence, 1),
        Err(NtStatus(STATUS_DEVICE_REMOVED)),
        "stopped device, the UMD's blocking wait"
    );
    no_fault(&m);
}

/// A caller with no adapter open, no process on any adapter and no handle left.
struct FullTable;

impl AdapterTable for FullTable {
    fn adapter(&self, _: KmtHandle) -> Option<usize> {
        None
    }
    fn process(&self, _: usize) -> Option<ProcessId> {
        None
    }
    fn open(&self, _: usize) -> Result<KmtHandle, NtStatus> {
        Err(NtStatus(STATUS_NO_MEMORY))
    }
    fn close(&self, _: KmtHandle) -> bool {
        false
    }
}

/// UM-17: a started adapter's LUID with a full handle table is the table's STATUS_NO_MEMORY
/// and `hAdapter` 0 whatever the caller left there; an unknown LUID is refused before the
/// adapter is looked at and leaves `hAdapter` as it was.
#[test]
fn um_17_open_adapter_from_luid_with_a_full_handle_table_writes_back_the_zero_handle() {
    let m = machine_with(Mode::Step, |_| {});
    let mut a = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_simos::adapter::adapter_luid(0),
        hAdapter: 0x7777,
    };
    let r = dxgk_open_adapter_from_luid_impl(&m, &mut a, &FullTable);
    assert_eq!(r, Err(NtStatus(STATUS_NO_MEMORY)));
    assert_eq!({ a.hAdapter }, 0, "the zero handle goes back");

    let mut unknown = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_simos::adapter::adapter_luid(9),
        hAdapter: 0x7777,
    };
    let r = dxgk_open_adapter_from_luid_impl(&m, &mut unknown, &FullTable);
    assert_eq!(r, Err(NtStatus(STATUS_INVALID_PARAMETER)));
    assert_eq!({ unknown.hAdapter }, 0x7777, "nothing goes back");
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
