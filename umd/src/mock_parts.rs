//! What the unit tests' mock thunk sets ([`crate::dma`]'s and the C API's) share: host words
//! behind an allocation's CPU view, a doorbell and fence with no CPU side, and the thunks of a
//! mock that has no hardware queues.

use alloc::rc::Rc;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::kmt::{AllocationCpu, DoorbellCpu, DoorbellStatus, FenceCpu};

/// An allocation's CPU view over host words (a store out of range is dropped, a load reads 0).
#[derive(Clone, Debug)]
pub(crate) struct WordsMem(pub(crate) Rc<[AtomicU64]>);

impl AllocationCpu for WordsMem {
    fn store(&self, offset: u64, value: u64) {
        if let Some(w) = self.0.get((offset / 8) as usize) {
            w.store(value, Ordering::Release);
        }
    }
    fn load(&self, offset: u64) -> u64 {
        self.0
            .get((offset / 8) as usize)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }
    fn cpu_ptr(&self) -> *mut u8 {
        // Atomics have interior mutability: writes through this pointer are allowed.
        self.0.as_ptr().cast_mut().cast()
    }
}

/// A doorbell (always disconnected) and a fence (always 0) with no CPU side.
#[derive(Debug)]
pub(crate) struct NoCpu;

impl DoorbellCpu for NoCpu {
    fn ring(&self, _value: u64) {}
    fn status(&self) -> DoorbellStatus {
        DoorbellStatus::DisconnectedAbort
    }
    fn set_last_queued(&self, _value: u64) {}
}

impl FenceCpu for NoCpu {
    fn value(&self) -> u64 {
        0
    }
}

/// Inside `impl Kmt for T` with `type Doorbell = NoCpu; type Fence = NoCpu;`: the hardware-queue
/// and doorbell thunks of a mock without hardware queues, each `STATUS_NOT_SUPPORTED`.
macro_rules! no_hw_queues {
    () => {
        $crate::mock_parts::no_hw_queues! { @each
            fn create_hw_queue(&self, _context: $crate::kmt::KmtHandle, _user_mode_submission: bool, _private_data: &mut [u8]) -> Result<$crate::kmt::HwQueue<$crate::mock_parts::NoCpu>, $crate::kmt::NtStatus>;
            fn destroy_hw_queue(&self, _queue: $crate::kmt::KmtHandle) -> Result<(), $crate::kmt::NtStatus>;
            fn create_doorbell(&self, _queue: $crate::kmt::KmtHandle, _ring: $crate::kmt::KmtHandle, _ring_control: $crate::kmt::KmtHandle, _private_data: &mut [u8]) -> Result<$crate::kmt::Doorbell<$crate::mock_parts::NoCpu>, $crate::kmt::NtStatus>;
            fn connect_doorbell(&self, _doorbell: $crate::kmt::KmtHandle) -> Result<(), $crate::kmt::NtStatus>;
            fn destroy_doorbell(&self, _doorbell: $crate::kmt::KmtHandle) -> Result<(), $crate::kmt::NtStatus>;
            fn notify_work_submission(&self, _doorbell: $crate::kmt::KmtHandle) -> Result<(), $crate::kmt::NtStatus>;
            fn submit_command_to_hw_queue(&self, _queue: $crate::kmt::KmtHandle, _progress_fence_value: u64, _command_buffer_gpu: u64, _command_bytes: u32) -> Result<(), $crate::kmt::NtStatus>;
        }
    };
    (@each $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> $ret {
                Err($crate::kmt::STATUS_NOT_SUPPORTED)
            }
        )*
    };
}
pub(crate) use no_hw_queues;
