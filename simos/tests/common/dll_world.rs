//! The DLL process the memory thunks' suites call raw (`pe_thunks_memory`,
//! `pe_thunks_allocation`): its device, buffer and paging queues, and the
//! `D3DKMTCreateAllocation2` cases both drive.

use std::sync::Arc;

use rvgpu_simos::pe::umd::UserProcess;
use rvgpu_simos::Machine;

use super::dll::*;
use super::pe::{pe_machine, umd};

pub const UNTOUCHED: u64 = 0xDEAD_BEEF_0000;
pub const BAD_HANDLE: u32 = 0x4000_0BAD;
/// Why a "the device not active" check of a doorbell or paging-queue thunk has no case in a
/// conformance suite: a stopped device needs an adapter-wide recovery, which
/// `device_loss_thunks` makes and drives it under.
pub const BY_DEVICE_LOSS_THUNKS: &str =
    "driven by device_loss_thunks: a stopped device needs an adapter-wide recovery";

/// Why a "the device not active" check has no case of its own in a suite: the MustSucceed
/// case (and the UM-10 cases after it) removes the adapter under the device in error and
/// drives it for each thunk.
pub const BY_MUST_SUCCEED: &str =
    "driven by ddi_03_makeresident_mustsucceed_over_budget_puts_the_device_in_error";

/// A DLL process with its device (through the C API), one 4 KiB buffer allocation and a
/// paging queue of its own, and a second device of the process on the same adapter with a
/// paging queue: the objects the cases name.
pub struct World {
    pub m: Arc<Machine>,
    pub p: Arc<UserProcess>,
    /// An adapter handle of the process (`D3DKMTOpenAdapterFromLuid`).
    pub adapter: u32,
    pub device: u32,
    pub allocation: u32,
    pub queue: u32,
    pub other_device: u32,
    pub other_queue: u32,
}

pub fn open_raw_adapter(p: &Arc<UserProcess>) -> u32 {
    // D3DKMT_OPENADAPTERFROMLUID: AdapterLuid (8 bytes), hAdapter out.
    let mut o = [LUID_LOW as u32, 0, 0];
    assert_eq!(
        thunk(p, "D3DKMTOpenAdapterFromLuid", o.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    o[2]
}

pub fn create_device(p: &Arc<UserProcess>, adapter: u32) -> u32 {
    // D3DKMT_CREATEDEVICE: hAdapter, ..., Flags, hDevice out (byte 12).
    let mut d = [0u32; 16];
    d[0] = adapter;
    assert_eq!(
        thunk(p, "D3DKMTCreateDevice", d.as_mut_ptr() as u64),
        STATUS_SUCCESS
    );
    d[3]
}

/// `D3DKMT_CREATEPAGINGQUEUE` for `device` with `edit` applied: its status and the structure.
pub fn paging_queue(
    p: &Arc<UserProcess>,
    device: u32,
    edit: impl FnOnce(&mut [u32; 8]),
) -> (u64, [u32; 8]) {
    // hDevice, Priority, hPagingQueue, hSyncObject, FenceValueCPUVirtualAddress (words 4-5),
    // PhysicalAdapterIndex (word 6).
    let mut q = [0u32; 8];
    q[0] = device;
    edit(&mut q);
    let s = thunk(p, "D3DKMTCreatePagingQueue", q.as_mut_ptr() as u64);
    (s, q)
}

pub fn world() -> World {
    world_on(pe_machine())
}

/// [`world`] on machine `m`.
pub fn world_on(m: Arc<Machine>) -> World {
    let p = UserProcess::new(m.clone(), umd());
    let (c_adapter, _) = open_queue(&p);
    let device = p.devices()[0].device;
    let before = p.objects();
    buffer_4k(&p, c_adapter);
    let made: Vec<u32> = p
        .objects()
        .into_iter()
        .filter(|h| !before.contains(h))
        .collect();
    let [allocation] = made[..] else {
        panic!("a buffer is one allocation: {made:?}");
    };
    let adapter = open_raw_adapter(&p);
    let (s, q) = paging_queue(&p, device, |_| {});
    assert_eq!(s, STATUS_SUCCESS);
    let other_device = create_device(&p, adapter);
    let (s, oq) = paging_queue(&p, other_device, |_| {});
    assert_eq!(s, STATUS_SUCCESS);
    World {
        m,
        p,
        adapter,
        device,
        allocation,
        queue: q[2],
        other_device,
        other_queue: oq[2],
    }
}

impl World {
    pub fn call<T>(&self, name: &str, a: &mut T) -> u64 {
        thunk(&self.p, name, addr(a))
    }

    /// A second adapter handle names the one device of the process on the adapter only when
    /// there is one: the VA thunks named by adapter need the process's first device alone.
    pub fn done(self) {
        assert!(self.m.fault().is_none(), "{:?}", self.m.fault());
    }
}

/// One `D3DKMTCreateAllocation2` case: the structure's `hDevice`, `NumAllocations`, `Flags`
/// and `pAllocationInfo2` (`None`: the one entry), an edit of that entry, and whether 24H2
/// reached `DXGDEVICE::CreateAllocation` (it writes `hGlobalShare` back then).
pub struct CreateCase {
    pub what: &'static str,
    pub device: u32,
    pub count: u32,
    pub flags: u64,
    pub list: Option<u64>,
    pub edit: fn(&mut [u64; 12]),
    pub ran: bool,
}

/// An address nothing is mapped at in the DLL's process.
pub const UNMAPPED: u64 = 0x10;
/// What a case presets `hGlobalShare` to, so that a write-back shows.
pub const SHARE_PRESET: u64 = 0x5EED;

/// A 4 KiB buffer's private data, as the UMD writes it.
pub fn buffer_private_data() -> Vec<u8> {
    let pdd = rvgpu_umd::kmt::allocation_private_data(4096, rvgpu_hw::pdd::AllocationKind::Buffer);
    zerocopy::IntoBytes::as_bytes(&pdd).to_vec()
}

/// A `D3DDDI_ALLOCATIONINFO2` (12 words: hAllocation, ..., pPrivateDriverData at word 2,
/// PrivateDriverDataSize at 3, Flags at 4, GpuVirtualAddress at 5) with `hAllocation` preset
/// and private data `bytes`.
pub fn buffer_entry(bytes: &[u8]) -> [u64; 12] {
    let mut info = [0u64; 12];
    info[0] = UNTOUCHED;
    info[2] = bytes.as_ptr() as u64;
    info[3] = bytes.len() as u64;
    info
}

/// `D3DKMT_CREATEALLOCATION` of one entry as `c` says, the entry describing a 4 KiB buffer
/// with `hAllocation` preset: the status, `hResource`, `hGlobalShare` and `Flags` after, and
/// the entry after.
pub fn create_case(w: &World, c: &CreateCase) -> (u64, [u64; 3], [u64; 12]) {
    let bytes = buffer_private_data();
    let mut info = buffer_entry(&bytes);
    (c.edit)(&mut info);
    // D3DKMT_CREATEALLOCATION: hDevice and hResource (word 0), hGlobalShare (word 1), ...,
    // NumAllocations (high half of word 5), pAllocationInfo2 (word 6), Flags (word 7).
    let mut args = [0u64; 9];
    args[0] = u64::from(c.device);
    args[1] = SHARE_PRESET;
    args[5] = u64::from(c.count) << 32;
    args[6] = c.list.unwrap_or(info.as_mut_ptr() as u64);
    args[7] = c.flags;
    let s = w.call("D3DKMTCreateAllocation2", &mut args);
    (s, [args[0] >> 32, args[1], args[7]], info)
}

/// `D3DKMT_LOCK2` (hDevice, hAllocation, Flags, pData at word 2) and `D3DKMT_UNLOCK2`.
pub fn lock2(w: &World, device: u32, allocation: u32) -> (u64, u64) {
    let mut l = [0u64; 3];
    l[0] = u64::from(device) | (u64::from(allocation) << 32);
    l[2] = UNTOUCHED;
    let s = w.call("D3DKMTLock2", &mut l);
    (s, l[2])
}

pub fn unlock2(w: &World, device: u32, allocation: u32) -> u64 {
    let mut u = [device, allocation];
    w.call("D3DKMTUnlock2", &mut u)
}
