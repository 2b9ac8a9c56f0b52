//! rvgpu kernel-mode driver core: the logic behind the DxgkDdi entry points.
//!
//! `no_std` + `alloc`, generic over [`platform::Platform`] so that the same code runs in the
//! Windows image and under the simulated OS. One module per concept.
#![cfg_attr(not(test), no_std)]
// The infallible allocation APIs are banned by clippy.toml outside `kmem`; unit tests
// may use them (the library itself is linted without cfg(test)).
#![cfg_attr(
    test,
    allow(
        clippy::disallowed_methods,
        clippy::disallowed_types,
        clippy::disallowed_macros
    )
)]
// `unsafe` only where memory is not Rust's: the ten modules marked `allow(unsafe_code)` below
// and in `thunk` (the platform contract, MMIO, DMA and OS-owned words, the pool, the spin lock,
// the adapter table, the adapter's live state, Dxgkrnl's callbacks, the argument unions and a
// call's pointers, and Dxgkrnl's pointer contract); every other module is refused it.
#![deny(unsafe_code)]
extern crate alloc;

#[allow(unsafe_code)]
mod adapter;
mod allocation;
mod aperture;
#[allow(unsafe_code)]
mod args;
mod caps;
mod clock;
mod context;
mod dbginfo;
mod ddi_groups;
mod device;
#[allow(unsafe_code)]
mod dma;
mod doorbell;
#[allow(unsafe_code)]
mod dxgk;
mod escape;
pub mod etw;
mod features;
mod fence;
#[allow(unsafe_code)]
mod globals;
mod gpummu;
mod handle;
mod hwqueue;
mod hws;
mod interrupt;
#[allow(unsafe_code)]
mod kmem;
mod kmtest;
mod log;
mod mdl;
#[allow(unsafe_code)]
mod mmio;
mod node;
mod pagetable;
mod paging;
#[allow(unsafe_code)]
pub mod platform;
mod power;
mod present;
mod process;
mod quota;
mod removal;
mod reset;
mod resources;
mod runlist;
mod sched;
mod status;
mod submit;
#[allow(unsafe_code)]
mod sync;
mod testhooks;
mod thunk;
mod watchdog;

// The crate's surface: the platform contract (implemented by the image and the simulated
// OS), the DRIVER_INITIALIZATION_DATA the image hands to Dxgkrnl, and the few items the
// simulated OS and the tests need. Everything else is reached only through the DDI table.
pub use adapter::{Adapter, DISPLAY_ADAPTER_HW_ID};
pub use globals::MAX_ADAPTERS;
pub use thunk::initialization_data;

/// TDR-01's advertisement rule for device caps `caps` with the driver's own table: whether
/// StartDevice would set `SupportPerEngineTDR` (for the tests of the table, without an adapter).
pub fn per_engine_tdr_for<P: platform::Platform>(caps: rvgpu_hw::regs::Caps) -> bool {
    let ddis = ddi_groups::Filled::of(&initialization_data::<P>());
    reset::per_engine_tdr_rule(caps, ddis.per_engine_tdr)
}
