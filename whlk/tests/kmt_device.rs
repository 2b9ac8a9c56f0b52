//! The D3DKMT backend on the device a test machine has (`--device`, as `rvgpu-vfu`'s options):
//! a case asking for doorbells the device has runs, one asking for others is skipped naming the
//! `rvgpu-vfu` options that give them. One test: the device is the run's, process-wide.

use rvgpu_whlk::backend::kmt::sim::{set_device, SimPlatform};
use rvgpu_whlk::backend::kmt::KmtBackend;
use rvgpu_whlk::backend::DeviceSettings;
use rvgpu_whlk::case::Outcome;
use rvgpu_whlk::runner;

fn outcome(b: &KmtBackend<SimPlatform>, name: &str) -> Outcome {
    let all = rvgpu_whlk::cases::all();
    let case = all
        .iter()
        .find(|c| c.name == name)
        .expect("a case of that name");
    runner::run_case(case, b).outcome
}

#[test]
fn um_20_doorbell_cases_run_on_the_device_that_has_their_doorbells() {
    let b = KmtBackend::new(SimPlatform);
    // One physical doorbell: the victimisation cases run, seen through the status pages and
    // the work (the churn's processes are child processes, each churning on threads of its
    // own); a case needing four doorbells names the option that gives them.
    let one = DeviceSettings::parse("doorbells=1").expect("a device").0;
    set_device(one, None);
    for name in [
        "UserModeSubmission.DoorbellVictimisationWalkthrough",
        "UserModeSubmission.ReconnectAndRetry",
        "UserModeSubmission.ThreadedChurn",
    ] {
        assert_eq!(outcome(&b, name), Outcome::Pass, "{name}");
    }
    match outcome(&b, "UserModeSubmission.UserQueueRefusesKernelPath") {
        Outcome::Skip(why) => assert!(
            why.contains("rvgpu-vfu --engines 2 --doorbells 4")
                && why.contains("--device engines=2,doorbells=4")
                && why.contains("has 1 doorbells, 2 engines"),
            "{why}"
        ),
        other => panic!("four doorbells asked on a one-doorbell device: {other:?}"),
    }
    match outcome(&b, "UserModeSubmission.GlobalDoorbell") {
        Outcome::Skip(why) => assert!(why.contains("--global-doorbell"), "{why}"),
        other => panic!("the global doorbell asked on a dedicated one: {other:?}"),
    }
    // UM-21: the global doorbell device runs the global-doorbell case.
    let global = DeviceSettings::parse("doorbells=1,global-doorbell")
        .expect("a device")
        .0;
    set_device(global, None);
    assert_eq!(
        outcome(&b, "UserModeSubmission.GlobalDoorbell"),
        Outcome::Pass
    );
    set_device(DeviceSettings::default(), None);
    // UM-05: on the default device, the kernel path on a user-mode queue is refused by the
    // thunk the program calls with its own queue's handle.
    assert_eq!(
        outcome(&b, "UserModeSubmission.UserQueueRefusesKernelPath"),
        Outcome::Pass
    );
}
