//! What every thunk shares: the statuses it returns, reading and writing the DLL's structures,
//! the process's handles, the DLL's memory as the kernel entries see it.

use std::mem::size_of;

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::base::lock::lock;
use crate::kmt::SimKmt;
use crate::pe::cpu::StubResult;
use crate::pe::umd::guest;
use crate::pe::umd::process::{Device, UserProcess};
use rvgpu_ddi::ntstatus;

// The statuses the thunks return, as the `u32` the bridge hands the DLL; the values are
// ntstatus.h's.
/// `STATUS_UNSUCCESSFUL`.
pub const STATUS_UNSUCCESSFUL: u32 = ntstatus::STATUS_UNSUCCESSFUL as u32;
pub(super) const STATUS_INVALID_PARAMETER: u32 = ntstatus::STATUS_INVALID_PARAMETER as u32;
pub(super) const STATUS_ACCESS_VIOLATION: u32 = ntstatus::STATUS_ACCESS_VIOLATION as u32;
pub(super) const STATUS_NOT_SUPPORTED: u32 = ntstatus::STATUS_NOT_SUPPORTED as u32;
pub(super) const STATUS_NO_MEMORY: u32 = ntstatus::STATUS_NO_MEMORY as u32;
/// What a blocking CPU wait returns when the simulated OS's wait limit passes (the same
/// status [`crate::kmt::SimKmt`]'s waits return).
pub(super) const STATUS_IO_TIMEOUT: u32 = ntstatus::STATUS_IO_TIMEOUT as u32;

/// Most allocations per `D3DKMTDestroyAllocation2` / `D3DKMTMakeResident` here (the DLL
/// passes one; a bound keeps the copies small).
pub(super) const MAX_ALLOCATIONS: u32 = 256;

pub(super) type Status = Result<(), u32>;

pub(super) fn status_of(r: Status) -> StubResult {
    StubResult::Return(u64::from(match r {
        Ok(()) => 0,
        Err(s) => s,
    }))
}

// ---------------------------------------------------------------------------------------------
// Reading and writing the DLL's structures.

pub(super) fn bad(b: guest::Bad) -> u32 {
    match b {
        guest::Bad::Null => STATUS_INVALID_PARAMETER,
        guest::Bad::Fault => STATUS_ACCESS_VIOLATION,
    }
}

/// The argument structure at `at`.
pub(super) fn args<T: FromBytes>(at: u64) -> Result<T, u32> {
    guest::read(at).map_err(bad)
}

/// The probe for a structure the thunk writes into: writable throughout, before any work.
pub(super) fn probe_out<T>(at: u64) -> Status {
    if guest::writable(at, size_of::<T>()) {
        Ok(())
    } else {
        Err(STATUS_ACCESS_VIOLATION)
    }
}

/// Writes `v` at byte `offset` of the structure at `at` (an output member).
pub(super) fn put<T: IntoBytes + Immutable>(at: u64, offset: usize, v: &T) -> Status {
    guest::write(at.wrapping_add(offset as u64), v).map_err(bad)
}

/// `count` items of the array the DLL passed at `at`, bounded by `max`.
pub(super) fn array<T: FromBytes>(at: u64, count: u32, max: u32) -> Result<Vec<T>, u32> {
    if count > max {
        return Err(STATUS_INVALID_PARAMETER);
    }
    guest::read_array(at, count as usize).map_err(bad)
}

pub(super) fn nt(s: rvgpu_umd::kmt::NtStatus) -> u32 {
    s.0 as u32
}

// ---------------------------------------------------------------------------------------------
// Handles.

impl UserProcess {
    /// The device `h` of this process.
    pub(super) fn device(&self, h: u32) -> Result<Device, u32> {
        lock(&self.handles)
            .devices
            .get(&h)
            .copied()
            .ok_or(STATUS_INVALID_PARAMETER)
    }

    /// The device that owns object `h` of this process.
    pub(super) fn owner(&self, h: u32) -> Result<Device, u32> {
        let hs = lock(&self.handles);
        hs.owner
            .get(&h)
            .and_then(|d| hs.devices.get(d))
            .copied()
            .ok_or(STATUS_INVALID_PARAMETER)
    }

    pub(super) fn record(&self, h: u32, device: u32) {
        let mut hs = lock(&self.handles);
        hs.owner.insert(h, device);
        hs.sync_flags.remove(&h);
    }

    pub(super) fn forget(&self, h: u32) {
        lock(&self.handles).owner.remove(&h);
    }

    pub(super) fn kmt(&self, d: Device) -> SimKmt<'_> {
        self.machine.kmt(&d.sim)
    }
}

pub(super) fn sim_status(e: &crate::SimError) -> u32 {
    e.status().map_or(STATUS_UNSUCCESSFUL, |s| s as u32)
}

/// The DLL's process memory as a thunk's kernel entry reads and writes it (the entry bounds
/// what it captures, as 24H2's does).
pub(super) struct GuestMemory;

impl crate::kmt::context_virtual::CallerMemory for GuestMemory {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, rvgpu_umd::kmt::NtStatus> {
        guest::read_capture(at, size as usize).map_err(|b| rvgpu_umd::kmt::NtStatus(bad(b) as i32))
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), rvgpu_umd::kmt::NtStatus> {
        guest::write_bytes(at, bytes).map_err(|b| rvgpu_umd::kmt::NtStatus(bad(b) as i32))
    }
}
