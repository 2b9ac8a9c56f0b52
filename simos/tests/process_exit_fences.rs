//! Found by the `ddi` fuzz target's leak check: process exit, normal or abnormal,
//! closes the sync objects the process still holds, as Windows closes a process's handles —
//! its monitored fences and its native-fence instances — so none outlive it in the OS.

mod common;

use common::*;
use rvgpu_simos::Mode;

/// UM-17 (normal exit) and UM-18 (abnormal exit) leave none of the process's fences behind.
#[test]
fn process_exit_closes_its_native_and_monitored_fences() {
    let m = with_doorbells(Mode::Step, 4);
    let (before, _) = m.fence_live_counts(0);
    for kill in [false, true] {
        let (p, k) = user_process(&m);
        let native = okk(&m, rvgpu_umd::kmt::Kmt::create_native_fence(&k, 1));
        let (monitored, _) = okk(&m, k.create_monitored_fence(1));
        let (during, _) = m.fence_live_counts(0);
        assert_eq!(during.0, before.0 + 1, "one native fence");
        assert_eq!(during.1, before.1 + 1, "one monitored fence");
        if kill {
            ok(&m, m.kill_process(&p));
        } else {
            ok(&m, m.exit_process(&p));
        }
        let (after, _) = m.fence_live_counts(0);
        assert_eq!(
            after, before,
            "fences outlived their process (kill: {kill})"
        );
        // The handles are gone: nothing resolves them any more.
        assert!(m.native_fence_by_kmt(0, native.kmt).is_none());
        let _ = monitored;
        no_fault(&m);
    }
}

under_the_pages!();
