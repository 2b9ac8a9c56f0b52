//! What the callback handlers see of the driver's pointers: the driver->OS FFI
//! ([`super::ffi`]) implements these over the raw pointers it took once, and passes each
//! handler its own entry point's address (bug-check parameters). The handlers name nothing of
//! the FFI, so they sit below it.

use rvgpu_ddi::basic::{BOOLEAN, HANDLE, INTERFACE};
use rvgpu_ddi::interrupt::DXGKARGCB_NOTIFY_INTERRUPT_DATA;

/// An out-parameter of the driver, checked non-null: written once, whole.
pub(crate) trait Place<T> {
    /// Writes the answer.
    fn write(self, value: T);
}

/// A `DxgkCbNotifyInterrupt` report, copied at the call.
pub(crate) trait ReportView:
    std::ops::Deref<Target = DXGKARGCB_NOTIFY_INTERRUPT_DATA>
{
    /// The first `n` handles a native-fence report lists (`None` for another type, a NULL
    /// array or more than its count).
    fn signaled_fences(&self, n: usize) -> Option<&[HANDLE]>;
}

/// The driver's synchronized routine with its context.
pub(crate) trait SyncView {
    /// Runs it (under the interrupt lock at device IRQL).
    fn run(&self) -> BOOLEAN;
    /// The routine's address.
    fn address(&self) -> u64;
    /// The context's address.
    fn context(&self) -> u64;
}

/// The interface buffer of `DxgkCbQueryServices`, non-null.
pub(crate) trait InterfaceView {
    /// Its `INTERFACE` header.
    fn header(&self) -> INTERFACE;
    /// Fills it with the feature interface of adapter handle `context` when its `Size` is
    /// exactly that interface's; `false` (nothing written) otherwise.
    fn write_feature(self, context: HANDLE) -> bool;
}
