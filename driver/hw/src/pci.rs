//! PCI identity and BAR layout. The INF matches these IDs.
//!
//! 0x1234 is the placeholder vendor ID emulators commonly use for devices that belong to no
//! real vendor; a product would use its own PCI-SIG vendor ID. Device 0x5256 is "RV".

/// PCI vendor ID.
pub const VENDOR_ID: u16 = 0x1234;
/// PCI device ID.
pub const DEVICE_ID: u16 = 0x5256;
/// Revision of this specification.
pub const REVISION_ID: u8 = 0x01;
/// Class code: display controller (0x03), 3D controller (0x02), interface 0. A render-only
/// adapter has no display outputs, which is what this class says.
pub const CLASS_CODE: u32 = 0x03_02_00;
/// PnP hardware ID the INF installs on.
pub const HARDWARE_ID: &str = "PCI\\VEN_1234&DEV_5256";

/// BAR0: 64 KiB of 32/64-bit registers ([`crate::regs`]). Non-prefetchable memory.
pub const BAR_MMIO: u8 = 0;
/// Size of BAR0.
pub const MMIO_SIZE: u64 = 0x1_0000;
/// BAR2 (64-bit): doorbell aperture, one 4 KiB page per physical doorbell.
pub const BAR_DOORBELL: u8 = 2;
/// BAR4 (64-bit, prefetchable): CPU-visible local memory (all of VRAM).
pub const BAR_VRAM: u8 = 4;
