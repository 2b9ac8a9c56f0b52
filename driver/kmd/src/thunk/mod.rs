//! The DDI entry points: `extern "system"` functions in the `DRIVER_INITIALIZATION_DATA`.
//!
//! This module is the FFI boundary and nothing else. Each thunk does three things only: turn
//! the raw pointers into references under Dxgkrnl's pointer contract (stated once, in
//! [`contract`]), check the raw arguments (null pointers, sizes), and call the module holding the
//! logic. Every thunk returns an NTSTATUS (or what its signature demands) and never panics: a
//! bad argument is STATUS_INVALID_PARAMETER. Each concept's module also fills its own slots of
//! the table (its `fill`), so a new DDI is written in its concept's module, not here.
//!
//! The thunks are grouped as the concepts are: `thunk::fence` calls `crate::fence::ddi`,
//! `thunk::doorbell` calls `crate::doorbell::ddi`, and so on; [`adapter`] holds the adapter's
//! life cycle and interrupt entry points. [`contract`] states Dxgkrnl's pointer contract once
//! and holds the generic thunks, the adapter context's lifetime (AddDevice, RemoveDevice) and
//! the adapter lookups; the typed accessors of the OS's arrays are `crate::args::Call`'s.
//!
//! The table is monomorphised per platform: `initialization_data::<WinKernel>()` in the
//! Windows image, `initialization_data::<SimKernel>()` under the simulated OS.

use core::ffi::c_void;

mod adapter;
mod allocation;
mod caps;
mod clock;
mod context;
#[allow(unsafe_code)]
pub(crate) mod contract;
mod dbginfo;
mod doorbell;
mod features;
mod fence;
mod hwqueue;
mod hws;
mod log;
mod node;
mod paging;
mod power;
mod present;
mod process;
mod reset;
mod submit;

use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, DXGKDDI_INTERFACE_VERSION};

use crate::platform::Platform;
use crate::status;

/// The slot after `DxgkDdiNotifyWorkSubmission` (byte 1368): `DxgkDdiFlushHwQueue` on
/// Microsoft's reference page and in pre-release headers, `Reserved4` in the 26100 WDK. The
/// 22631 kernel refuses a user-mode-submission node unless it is filled (\[D\]
/// `ADAPTER_RENDER::Initialize`, triage event 1290, `STATUS_INVALID_PARAMETER`) and never calls
/// it; its signature is not published. Filled so that the node starts under either reading
/// (docs/windows-bringup.md §15, question 2); if a kernel ever calls it, it refuses and reads
/// nothing (an x64 callee may ignore whatever it is passed).
extern "system" fn flush_hw_queue_slot() -> rvgpu_ddi::NTSTATUS {
    status::NOT_SUPPORTED.code()
}

/// The miniport's entry-point table for platform `P`.
pub fn initialization_data<P: Platform>() -> DRIVER_INITIALIZATION_DATA {
    let mut t = DRIVER_INITIALIZATION_DATA {
        Version: DXGKDDI_INTERFACE_VERSION,
        Reserved4: flush_hw_queue_slot as *const () as *mut c_void,
        ..Default::default()
    };
    contract::fill::<P>(&mut t);
    adapter::fill::<P>(&mut t);
    features::fill::<P>(&mut t);
    caps::fill::<P>(&mut t);
    fence::fill::<P>(&mut t);
    context::fill::<P>(&mut t);
    hwqueue::fill::<P>(&mut t);
    submit::fill::<P>(&mut t);
    doorbell::fill::<P>(&mut t);
    reset::fill::<P>(&mut t);
    hws::fill::<P>(&mut t);
    dbginfo::fill::<P>(&mut t);
    log::fill::<P>(&mut t);
    clock::fill::<P>(&mut t);
    power::fill::<P>(&mut t);
    node::fill::<P>(&mut t);
    paging::fill::<P>(&mut t);
    present::fill(&mut t);
    process::fill::<P>(&mut t);
    allocation::fill::<P>(&mut t);
    t
}
