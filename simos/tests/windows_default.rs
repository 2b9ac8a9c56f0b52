//! BR-110, IN-08: a machine's adapter keys are what installing the driver writes on the Windows
//! that machine plays, whatever Windows the process's default names
//! ([`Windows::set_default`], the harness's `--windows`). The default is the process's, so this
//! binary holds one test.

use rvgpu_ddi::feature::DXGK_FEATURE_NATIVE_FENCE;
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError, Windows};

/// With the process's default on the 22631 kernel, which the INF does not target: a machine
/// set to 24H2 or 25H2 still gets its own install's keys (the INF's `Features\37` value, so
/// native fences), and a machine left on the default is refused at install as Windows refuses
/// the INF there.
#[test]
fn br_110_a_machines_keys_follow_its_own_windows_not_the_process_default() {
    Windows::set_default(Windows::W22631);
    for windows in [Windows::W24H2, Windows::W25H2] {
        let mut c = MachineConfig::single(Mode::Step);
        assert_eq!(c.os.windows, Windows::W22631);
        c.os.windows = windows;
        let mut m = Machine::new(c);
        m.load_driver().expect("load");
        m.start_adapter(0)
            .unwrap_or_else(|e| panic!("{}: {e}", windows.name()));
        assert!(
            m.feature_db(0).version(DXGK_FEATURE_NATIVE_FENCE).is_some(),
            "{}: the INF's Features\\37 value enables native fences",
            windows.name()
        );
    }
    let mut m = Machine::new(MachineConfig::single(Mode::Step));
    match m.load_driver() {
        Err(SimError::StartRefused { rule: "IN-08", .. }) => {}
        other => panic!("22631: expected the install's IN-08, got {other:?}"),
    }
}
