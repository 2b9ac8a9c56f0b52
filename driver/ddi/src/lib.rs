//! `#[repr(C)]` bindings for the subset of the WDDM kernel-mode headers (d3dkmddi.h,
//! dispmprt.h, d3dukmdt.h, d3dkmdt.h, wdm.h/ntddk.h) that rvgpu uses, for x86_64 Windows,
//! targeting `DXGKDDI_INTERFACE_VERSION_WDDM3_2`.
//!
//! Conventions:
//! * type and field names are the C names (`DXGK_DRIVERCAPS::HighestAcceptableAddress`);
//! * C enums are `pub type X = i32` plus one `pub const` per enumerator, declared through
//!   `c_enum!` with C's implicit values;
//! * anonymous C unions/structs become a field `Anonymous` (`Anonymous2`, ...) of type
//!   `<PARENT>_0` (`_1`, ...), as in windows-rs; named members of anonymous aggregates that
//!   need their own Rust type are named `<PARENT>_<Member>`;
//! * C bitfield unions are `#[repr(transparent)]` words (`Value`) with one associated
//!   [`basic::BitField`] constant per C bitfield (see [`macros`]);
//! * function pointers are `Option<unsafe extern "system" fn(..)>` under the header's typedef
//!   name, declared through `extern_fn!` or, for `(HANDLE, A) -> NTSTATUS`, [`basic::DDI_FN`];
//!   a slot whose signature is not bound yet uses [`basic::PFN_UNBOUND`];
//! * every struct has a reference-page link and compile-time size/offset assertions for x86_64
//!   (declared through `c_type!` as `#[size(N)]` and `#[offset(N)]` next to the type and its
//!   fields); layouts that could not be checked against a header or reference page carry an
//!   `UNVERIFIED:` comment;
//! * every type the declaring macros make is a [`basic::CType`], so a user of the bindings can
//!   bound on "a header's type" without listing them.
#![cfg_attr(not(test), no_std)]
#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals)]
#![allow(clippy::upper_case_acronyms)]
#![cfg_attr(
    test,
    allow(
        clippy::arithmetic_side_effects,
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::panic
    )
)]

pub mod macros;

#[cfg(feature = "abi-bridge")]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic,
    reason = "host-only bridge; the indexing and the panic are in const evaluation"
)]
pub mod abi;
pub mod adapter;
mod adapterinfo;
pub mod allocation;
pub mod basic;
pub mod catalog;
pub mod d3dkmt;
mod drivercaps;
pub mod dxgkrnl;
pub mod feature;
pub mod fence;
pub mod handover;
pub mod hws;
pub mod init;
pub mod interrupt;
pub mod kmtest;
pub mod mdl;
pub mod memory;
pub mod ntstatus;
mod pagingbuffer;
pub mod power;
pub mod present;
mod process;
pub mod submission;
pub mod tdr;

pub use basic::*;

#[cfg(test)]
mod tests {
    use crate::adapter::*;
    use crate::dxgkrnl::*;
    use crate::feature::*;
    use crate::interrupt::*;
    use crate::macros::assert_fields_fill_word;
    use crate::memory::*;

    /// Declared bitfields must start at bit 0, be contiguous and fill the word exactly.

    #[test]
    fn bitfields_are_contiguous() {
        assert_fields_fill_word!(
            DXGK_VIDSCHCAPS,
            crate::power::DXGK_POWER_COMPONENT_FLAGS,
            crate::power::DXGK_POWER_COMPONENT_INDEX,
            DXGK_SEGMENTFLAGS,
            DXGK_GPUMMUCAPS_FLAGS,
            DXGK_GPUMMUCAPS_LEGACY,
            DXGK_VIDMMCAPS_0,
            DXGK_FLIPCAPS,
            DXGK_PRESENTATIONCAPS,
            DXGK_POINTERFLAGS,
            DXGK_GAMMARAMPCAPS,
            DXGK_COLORTRANSFORMCAPS,
            DXGK_DRIVERCAPS_MiscCaps,
            DXGK_HWQUEUEDFLIP_CAPS,
            DXGK_QUERYADAPTERINFOFLAGS,
            DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS,
            DXGK_ISFEATUREENABLED_RESULT_0,
            DXGKARGCB_ISFEATUREENABLED2_FLAGS,
            DXGKCB_GETHANDLEDATAFLAGS,
            DXGK_INVALIDATEHWCONTEXTFLAGS,
            DXGKARGCB_DISCONNECTDOORBELL_FLAGS
        );
        // Declared without a Value member in C; only two bits are defined.
        crate::macros::check_fields(
            "DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1",
            2,
            DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::FIELDS,
        );
    }

    #[test]
    fn bitfield_helpers_round_trip() {
        let mut caps = DXGK_VIDSCHCAPS::default();
        caps.set(DXGK_VIDSCHCAPS::NativeGpuFence, 1);
        assert_eq!(caps.Value, 1 << 11);
        caps.set(DXGK_VIDSCHCAPS::HwQueuePacketCap, 0b1011);
        assert_eq!(caps.get(DXGK_VIDSCHCAPS::HwQueuePacketCap), 0b1011);
        assert_eq!(caps.Value, (1 << 11) | (0b1011 << 7));
        // Out-of-range values are truncated to the field width and leave neighbours alone.
        caps.set(DXGK_VIDSCHCAPS::HwQueuePacketCap, 0xFF);
        assert_eq!(caps.get(DXGK_VIDSCHCAPS::HwQueuePacketCap), 0xF);
        assert!(caps.is_set(DXGK_VIDSCHCAPS::NativeGpuFence));
        caps.set(DXGK_VIDSCHCAPS::NativeGpuFence, 0);
        assert_eq!(caps.Value, 0xF << 7);
        assert_eq!(
            DXGK_VIDSCHCAPS::mask(DXGK_VIDSCHCAPS::Reserved),
            0xFFFF_E000
        );
        let flags = DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::default().with(
            DXGKCB_NOTIFY_INTERRUPT_DATA_FLAGS::EvaluateLegacyMonitoredFences,
            1,
        );
        assert_eq!(flags.Value, 4);
        let mm = DXGK_VIDMMCAPS_0::default()
            .with(DXGK_VIDMMCAPS_0::VirtualAddressingSupported, 1)
            .with(DXGK_VIDMMCAPS_0::GpuMmuSupported, 1);
        assert_eq!(mm.Value, 0x60);
        let fe = DXGK_FAULT_ERROR_CODE::device_specific(0x1234);
        assert_eq!(fe.Value, (0x1234 << 1) | 1);
        assert_eq!(fe.get(DXGK_FAULT_ERROR_CODE::DeviceSpecificCode), 0x1234);
        assert_eq!(
            DXGK_FAULT_ERROR_CODE::general(DXGK_GENERAL_ERROR_INVALID_INSTRUCTION).Value,
            2
        );
        let r = DXGK_ISFEATUREENABLED_RESULT_0::from_value(0b101);
        assert!(r.is_set(DXGK_ISFEATUREENABLED_RESULT_0::Enabled));
        assert!(!r.is_set(DXGK_ISFEATUREENABLED_RESULT_0::KnownFeature));
        assert!(r.is_set(DXGK_ISFEATUREENABLED_RESULT_0::SupportedByDriver));
        let full =
            DXGK_HWQUEUEDFLIP_CAPS::default().with(DXGK_HWQUEUEDFLIP_CAPS::Reserved, u32::MAX);
        assert_eq!(full.Value, u32::MAX);
    }

    #[test]
    fn interrupt_constructors() {
        let d = DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_completed(7, 1, 0);
        assert_eq!(d.InterruptType, DXGK_INTERRUPT_DMA_COMPLETED);
        // SAFETY: dma_completed initialises the DmaCompleted arm.
        let c = unsafe { d.Anonymous.DmaCompleted };
        assert_eq!(
            (c.SubmissionFenceId, c.NodeOrdinal, c.EngineOrdinal),
            (7, 1, 0)
        );
        let p = DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_preempted(9, 8, 1, 0);
        assert_eq!(p.InterruptType, DXGK_INTERRUPT_DMA_PREEMPTED);
        // SAFETY: dma_preempted initialises the DmaPreempted arm.
        let pa = unsafe { p.Anonymous.DmaPreempted };
        assert_eq!(
            (
                pa.PreemptionFenceId,
                pa.LastCompletedFenceId,
                pa.NodeOrdinal
            ),
            (9, 8, 1)
        );
        let f = DXGKARGCB_NOTIFY_INTERRUPT_DATA::dma_faulted(5, -1, 0, 0);
        assert_eq!(f.InterruptType, DXGK_INTERRUPT_DMA_FAULTED);
        // SAFETY: dma_faulted initialises the DmaFaulted arm.
        assert_eq!(unsafe { f.Anonymous.DmaFaulted }.FaultedFenceId, 5);
        let e = DXGKARGCB_NOTIFY_INTERRUPT_DATA::engine_state_change(1, 0, DXGK_ENGINE_STATE_HUNG);
        // SAFETY: engine_state_change initialises the EngineStateChange arm.
        assert_eq!(unsafe { e.Anonymous.EngineStateChange }.NewState, 2);
        let n =
            DXGKARGCB_NOTIFY_INTERRUPT_DATA::native_fence_signaled(0, 0, 0, core::ptr::null_mut());
        assert_eq!(n.InterruptType, 19);
        assert_eq!(DxgkServicesFeature, 7);
        assert_eq!(DXGK_FEATURE_NATIVE_FENCE, 37);
        assert_eq!(DXGKQAITYPE_NATIVE_FENCE_CAPS, 37);
    }

    /// Bit positions match d3dkmddi.h's documented masks (CpuVisible 0x4, Use64KBPages 0x800,
    /// LocalBudgetGroup 0x80000; GPUMMUCAPS LargePageSupported is bit 6).
    #[test]
    fn memory_model_bit_positions() {
        let f = DXGK_SEGMENTFLAGS::default()
            .with(DXGK_SEGMENTFLAGS::CpuVisible, 1)
            .with(DXGK_SEGMENTFLAGS::Use64KBPages, 1)
            .with(DXGK_SEGMENTFLAGS::LocalBudgetGroup, 1);
        assert_eq!(f.Value, 0x4 | 0x800 | 0x8_0000);
        let c = DXGK_GPUMMUCAPS_FLAGS::default()
            .with(DXGK_GPUMMUCAPS_FLAGS::LargePageSupported, 1)
            .with(DXGK_GPUMMUCAPS_FLAGS::CachedPageTables, 1);
        assert_eq!(c.Value, (1 << 6) | (1 << 12));
    }
}
