//! The thunk checks 24H2 makes on an adapter's own facts, made on the facts the simulated
//! adapter holds: the `WDDMVersion` its driver reported in DRIVERCAPS (`D3DKMTCreate
//! SynchronizationObject2`'s dxgmms2 check, `D3DKMTCreateAllocation2`'s standard-allocation
//! check), the `DXGKDDI_INTERFACE_VERSION` it registered (`D3DKMTEscape`'s flag checks) and its
//! PCI vendor ID (`D3DKMTEscape`'s vendor 0x1002 screen). Each check is shown firing on an
//! adapter with the fact and not on one without it.

#[path = "common/mod.rs"]
mod common;

use common::start_edits::{edited_node_metadata, start_with, NODE_EDIT, REAL_NODE_METADATA};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::kmtest::DXGKARG_ESCAPE;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NOT_SUPPORTED, STATUS_SUCCESS};
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_simos::kmt::adapter::AdapterTable;
use rvgpu_simos::kmt::allocation::{
    dxgk_create_allocation_internal, D3DDDI_ALLOCATIONINFO2, D3DKMT_CREATEALLOCATION,
    STANDARD_ALLOCATION,
};
use rvgpu_simos::kmt::context_virtual::CallerMemory;
use rvgpu_simos::kmt::escape::{
    dxgk_escape, EscapeCaller, D3DKMT_ESCAPE, RESERVED, VIRTUAL_MACHINE_DATA,
};
use rvgpu_simos::{Machine, MachineConfig, Mode, ProcessId, UmsProcess};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use zerocopy::IntoBytes;

/// A node without user-mode submission, which a driver below WDDM 3.1 may not offer (BR-73).
fn no_ums(md: &mut DXGK_NODEMETADATA) {
    md.Flags = md
        .Flags
        .with(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 0);
}

/// rvgpu started with its DRIVERCAPS `WDDMVersion` reported as `wddm` (its nodes without
/// user-mode submission).
fn reporting(wddm: u32) -> Machine {
    reporting_with(wddm, |_| {})
}

/// [`reporting`] with `table` applied to the driver's table before `DxgkInitialize`.
fn reporting_with(
    wddm: u32,
    table: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
) -> Machine {
    NODE_EDIT.set(Some(no_ums));
    let (m, r) = start_with(
        move |c| c.WDDMVersion = wddm as _,
        |t| {
            let _ = REAL_NODE_METADATA.set(t.DxgkDdiGetNodeMetadata);
            t.DxgkDdiGetNodeMetadata = Some(edited_node_metadata);
            table(t);
        },
    );
    NODE_EDIT.set(None);
    if let Err(e) = r {
        panic!("a driver reporting WDDM {wddm:#x} starts: {e}");
    }
    m
}

/// MF-01: a monitored fence is made on a driver of WDDM 2.0 or later; a driver reporting
/// WDDM 1.3 puts its adapter off dxgmms2 (`DXGADAPTER::IsDxgmms2`), and the create is
/// STATUS_INVALID_PARAMETER.
#[test]
fn mf_01_a_monitored_fence_needs_a_driver_of_wddm_2_or_later() {
    for (wddm, made) in [(0x1300, false), (0x2000, true)] {
        let m = reporting(wddm);
        let p = m.create_process(0).expect("process");
        let r = m.kmt(&p).create_monitored_fence_with(0, 0).map(|(h, _)| h);
        if made {
            assert!(r.is_ok(), "WDDM {wddm:#x}: {r:?}");
        } else {
            assert_eq!(r, Err(NtStatus(STATUS_INVALID_PARAMETER)), "WDDM {wddm:#x}");
        }
    }
}

/// One allocation entry at [`Caller::LIST`], nothing else readable.
struct Caller(core::cell::RefCell<Vec<u8>>);

impl Caller {
    const LIST: u64 = 0x1_0000;

    fn new() -> Self {
        Self(core::cell::RefCell::new(
            D3DDDI_ALLOCATIONINFO2::default().as_bytes().to_vec(),
        ))
    }
}

impl CallerMemory for Caller {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let list = self.0.borrow();
        match at {
            Self::LIST => list.get(..size as usize).map(<[u8]>::to_vec),
            _ => None,
        }
        .ok_or(NtStatus(rvgpu_ddi::ntstatus::STATUS_ACCESS_VIOLATION))
    }
    fn write(&self, _: u64, _: &[u8]) -> Result<(), NtStatus> {
        Err(NtStatus(rvgpu_ddi::ntstatus::STATUS_ACCESS_VIOLATION))
    }
}

/// DDI-03: `StandardAllocation` on an adapter whose driver reported WDDM 1.3 (its D3DKMT
/// driver version 1300, below 2000) is STATUS_INVALID_PARAMETER; on a WDDM 2.0 driver the
/// create passes that check (and is then the simulation's STATUS_NOT_SUPPORTED for a
/// standard allocation).
#[test]
fn ddi_03_a_standard_allocation_needs_a_driver_of_wddm_2_or_later() {
    for (wddm, status) in [
        (0x1300, STATUS_INVALID_PARAMETER),
        (0x2000, STATUS_NOT_SUPPORTED),
    ] {
        let m = reporting(wddm);
        let p = m.create_process(0).expect("process");
        let mut a = D3DKMT_CREATEALLOCATION {
            hDevice: p.device,
            NumAllocations: 1,
            pAllocationInfo2: Caller::LIST,
            Flags: STANDARD_ALLOCATION,
            ..Default::default()
        };
        let r = dxgk_create_allocation_internal(
            &m,
            &mut a,
            |h| (h == p.device).then_some(p),
            &Caller::new(),
            |_| Ok(()),
        );
        assert_eq!(
            r.map(|made| made.len()),
            Err(NtStatus(status)),
            "WDDM {wddm:#x}"
        );
    }
}

/// A driver-private escape's data with `third` as its third dword.
fn escape_data(third: u32) -> Vec<u8> {
    [0u32, 0, third].as_bytes().to_vec()
}

/// NF-13 (a shared fence's wait-board requests reach the KMD as driver-private escapes): on
/// an adapter of PCI vendor 0x1002, 24H2 screens them before the driver: fewer than 12 bytes,
/// or a third dword that, its low byte cleared, is 0x01000C00 to 0x01000E00, is
/// STATUS_NOT_SUPPORTED; 0x01000F00 and other data reach the driver (whose answer to an
/// escape it does not know is STATUS_INVALID_PARAMETER). On the stock adapter every one of
/// them reaches the driver.
#[test]
fn nf_13_a_vendor_1002_adapter_screens_driver_private_escapes_before_the_driver() {
    let screened = [
        vec![0u8; 8],
        escape_data(0x0100_0C00),
        escape_data(0x0100_0D42),
        escape_data(0x0100_0EFF),
    ];
    let passed = [escape_data(0x0100_0F00), escape_data(0x0100_0B00)];
    for vendor in [0x1002_u16, rvgpu_hw::pci::VENDOR_ID] {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.adapters[0].pci_vendor_id = vendor;
        let m = common::started(cfg);
        let p = m.create_process(0).expect("process");
        let k = m.kmt(&p);
        for data in screened.iter().chain(&passed) {
            let mut buf = data.clone();
            let to_driver = vendor != 0x1002 || passed.contains(data);
            let status = if to_driver {
                STATUS_INVALID_PARAMETER
            } else {
                STATUS_NOT_SUPPORTED
            };
            assert_eq!(
                k.escape_driver_private(&mut buf),
                Err(NtStatus(status)),
                "vendor {vendor:#x}, {data:02x?}"
            );
        }
    }
}

/// How many times [`escape_stand_in`] ran, and the `Flags` it was last handed.
static STAND_IN_CALLS: AtomicU32 = AtomicU32::new(0);
static STAND_IN_FLAGS: AtomicU32 = AtomicU32::new(0);

/// A `DxgkDdiEscape` that records the flags Dxgkrnl hands it and succeeds.
unsafe extern "system" fn escape_stand_in(_: HANDLE, args: *const DXGKARG_ESCAPE) -> NTSTATUS {
    // SAFETY: Dxgkrnl hands a valid block for the call's duration.
    let flags = unsafe { (*args).Flags };
    STAND_IN_FLAGS.store(flags, Ordering::SeqCst);
    STAND_IN_CALLS.fetch_add(1, Ordering::SeqCst);
    STATUS_SUCCESS
}

/// The caller's handles: adapter handle [`OneDevice::ADAPTER`] and its process's device.
struct OneDevice(UmsProcess);

impl OneDevice {
    const ADAPTER: KmtHandle = 1;
}

impl AdapterTable for OneDevice {
    fn adapter(&self, h: KmtHandle) -> Option<usize> {
        (h == Self::ADAPTER).then_some(self.0.adapter)
    }
    fn process(&self, i: usize) -> Option<ProcessId> {
        (i == self.0.adapter).then_some(self.0.pid)
    }
    fn open(&self, _: usize) -> Result<KmtHandle, NtStatus> {
        Err(NtStatus(STATUS_NOT_SUPPORTED))
    }
    fn close(&self, _: KmtHandle) -> bool {
        false
    }
}

impl EscapeCaller for OneDevice {
    fn device(&self, h: KmtHandle) -> Option<UmsProcess> {
        (h == self.0.device).then_some(self.0)
    }
}

/// The caller's private data: 16 bytes at [`EscapeData::AT`].
struct EscapeData(core::cell::RefCell<Vec<u8>>);

impl EscapeData {
    const AT: u64 = 0x2000;
}

impl CallerMemory for EscapeData {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let data = self.0.borrow();
        (at == Self::AT)
            .then(|| data.get(..size as usize).map(<[u8]>::to_vec))
            .flatten()
            .ok_or(NtStatus(rvgpu_ddi::ntstatus::STATUS_ACCESS_VIOLATION))
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus> {
        let mut data = self.0.borrow_mut();
        match data.get_mut(..bytes.len()) {
            Some(d) if at == Self::AT => {
                d.copy_from_slice(bytes);
                Ok(())
            }
            _ => Err(NtStatus(rvgpu_ddi::ntstatus::STATUS_ACCESS_VIOLATION)),
        }
    }
}

/// DDI-01 (the interface version a driver registers in its `DRIVER_INITIALIZATION_DATA`):
/// `DxgkEscape` refuses a driver-private escape with `Flags.Reserved`, a bit of 8..31 or
/// `Flags.VirtualMachineData` with STATUS_INVALID_PARAMETER only on an adapter whose driver
/// registered `DXGKDDI_INTERFACE_VERSION` 0x5023 (WDDM 2.0) or later. A WDDM 1.3 driver
/// (0x4002), or one just below 0x5023, gets the escape with the flags as sent, but
/// `VirtualMachineData` cleared: Dxgkrnl sets that bit to whether the caller is a VM's process.
#[test]
fn ddi_01_escape_flags_are_refused_from_interface_version_wddm_2_0_on() {
    for (interface, wddm) in [(0x4002, 0x1300), (0x5022, 0x2000), (0x5023, 0x2000)] {
        let m = reporting_with(wddm, move |t| {
            t.Version = interface;
            t.DxgkDdiEscape = Some(escape_stand_in);
        });
        let p = m.create_process(0).expect("process");
        for (flags, handed) in [
            (0, 0),
            (RESERVED, RESERVED),
            (1 << 8, 1 << 8),
            (1 << 31, 1 << 31),
            (VIRTUAL_MACHINE_DATA, 0),
        ] {
            let a = D3DKMT_ESCAPE {
                hAdapter: OneDevice::ADAPTER,
                hDevice: p.device,
                Flags: flags,
                pPrivateDriverData: EscapeData::AT,
                PrivateDriverDataSize: 16,
                ..D3DKMT_ESCAPE::default()
            };
            let data = EscapeData(core::cell::RefCell::new(vec![0x5A; 16]));
            let calls = STAND_IN_CALLS.load(Ordering::SeqCst);
            let r = dxgk_escape(&m, &a, &OneDevice(p), &data);
            let what = format!("interface {interface:#x}, flags {flags:#x}");
            if interface >= 0x5023 && flags != 0 {
                assert_eq!(r, Err(NtStatus(STATUS_INVALID_PARAMETER)), "{what}");
                assert_eq!(STAND_IN_CALLS.load(Ordering::SeqCst), calls, "{what}");
            } else {
                assert_eq!(r, Ok(()), "{what}");
                assert_eq!(STAND_IN_CALLS.load(Ordering::SeqCst), calls + 1, "{what}");
                assert_eq!(STAND_IN_FLAGS.load(Ordering::SeqCst), handed, "{what}");
            }
        }
    }
}
