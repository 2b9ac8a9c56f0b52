//! BR-06: how `rvgpu.sys` registers with Dxgkrnl. Its `DxgkInitialize` (src/dxgkinit.rs) asks
//! for the Windows 8 entry point first (IOCTL 0x230047, `DpiInitializeWin8`) and falls back to
//! `IOCTL_VIDEO_DDI_FUNC_REGISTER` (0x23003F, `DpiInitialize`) only when Dxgkrnl does not know
//! the first; the simulated Dxgkrnl answers both as the 24H2 `DxgkInternalDeviceIoctl` does.

use rvgpu_simos::pe::{unicorn, DriverBuild};
use rvgpu_simos::{Machine, MachineConfig, Mode};

const WIN8: u32 = 0x0023_0047;
const FUNC_REGISTER: u32 = 0x0023_003F;
const STATUS_INVALID_DEVICE_REQUEST: i32 = 0xC000_0010_u32 as i32;

/// Loads `rvgpu.sys` on a machine whose Dxgkrnl does (or does not) know 0x230047, starts the
/// adapter, and returns the requests the image sent.
fn registration(knows_win8: bool) -> Vec<(u32, i32)> {
    if let Err(e) = unicorn::api() {
        panic!("{e}");
    }
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.driver = DriverBuild::Pe(None);
    cfg.os.dxgkrnl_knows_win8_initialize = knows_win8;
    let mut m = Machine::new(cfg);
    m.load_driver()
        .unwrap_or_else(|e| panic!("load: {e}; log {:#?}", m.driver_log()));
    m.start_adapter(0)
        .unwrap_or_else(|e| panic!("start: {e}; log {:#?}", m.driver_log()));
    m.pe_image()
        .expect("a PE machine")
        .kernel
        .dxgkrnl_requests()
}

/// On 24H2 the image gets its entry point from the Windows 8 request and sends nothing else.
#[test]
fn br_06_dxgk_initialize_asks_for_the_win8_entry_point_first() {
    assert_eq!(registration(true), [(WIN8, 0)]);
}

/// A Dxgkrnl that fails 0x230047 with `STATUS_INVALID_DEVICE_REQUEST` gets 0x23003F next,
/// and the driver loads and starts through it.
#[test]
fn br_06_dxgk_initialize_falls_back_to_ddi_func_register() {
    assert_eq!(
        registration(false),
        [(WIN8, STATUS_INVALID_DEVICE_REQUEST), (FUNC_REGISTER, 0)]
    );
}
