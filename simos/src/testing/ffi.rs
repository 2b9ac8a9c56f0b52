//! What the stand-ins tests put in the driver's DDI slots are built from: the generic slot
//! entries that receive the OS's raw arguments and hand safe stand-ins references, the
//! callback table a stand-in calls, the driver's own ISR and DPC a stand-in runs, and readers
//! of the arrays the OS's blocks point to. A stand-in is driver code, so the FFI behind these
//! lives with the driver's: its entries and its calls with the driver->OS side
//! (`dxgkrnl::callbacks::ffi`), its reads of the OS's blocks with the OS->driver side
//! (`adapter::ddi`). This module and the stand-ins (the sibling modules) are safe code.

use std::sync::Mutex;

pub(crate) use crate::adapter::ddi::blocks;
pub use crate::dxgkrnl::callbacks::ffi::stand_in::{
    allocate_contiguous, block_ref, driver_dpc, driver_isr, free_contiguous, handle_index_mut,
    handle_mut, handle_ref, isr, Callbacks, DeviceContext, HandleIndexMutStandIn, HandleMutStandIn,
    HandleRefStandIn, IsrFn, IsrStandIn, RefStandIn,
};

use crate::adapter::ddi::{Ddi, Prototype};
use crate::base::lock::lock;

/// The driver's own DDI a stand-in replaced in its slot, saved when the stand-in was installed
/// (the latest driver's: one driver per test at a time).
pub struct Saved<F>(Mutex<Option<Ddi<F>>>);

impl<F: Prototype> Default for Saved<F> {
    fn default() -> Self {
        Self::new()
    }
}

impl<F: Prototype> Saved<F> {
    /// Nothing saved yet.
    pub const fn new() -> Self {
        Saved(Mutex::new(None))
    }

    /// Saves the slot's DDI, read with `in_table!` (`None`: the slot was empty).
    pub fn save(&self, slot: Option<Ddi<F>>) {
        *lock(&self.0) = slot;
    }

    /// Calls the saved DDI with the arguments the OS passed the stand-in; `None` when none is
    /// saved. The OS's call of the stand-in has applied the DDI's rules already.
    pub fn call(&self, args: F::Args<'_>) -> Option<F::Ret> {
        let ddi = (*lock(&self.0))?;
        Some(ddi.call_bare(args))
    }
}
