//! the driver stack inside a Linux VM, across QEMU's PCIe, against the emulated GPU
//! served by `rvgpu-vfu` over vfio-user.
//!
//! Runs `device/vfu/vm/run-guest-smoke.sh` (docs/qemu-guest.md, "The Linux guest"): a
//! Debian trixie chroot with QEMU from trixie-backports (made once under `target/vm`), the
//! server and the guest programs as the test command built them, a busybox initramfs, and
//! three boots through `scripts/test-machine.sh`, the Windows test machine's script: one
//! function under TCG, with the guest's closing `N passed, N failed` lines; two functions with
//! the gdb stub holding the CPUs until the host has read their registers, then the harness's
//! `Adapter.TwoAdapters` with each function an adapter; and the Windows
//! machine's own command line (firmware, TPM, disk) held the same way, then run for a few
//! seconds. Every stage is bounded by `timeout` in the script; the whole run by [`LIMIT`] here.
//!
//! The script's prerequisite check runs without root, QEMU or a guest
//! (`test_machine_names_each_missing_prerequisite_on_one_line`).
//!
//! When it skips, it says why on stderr and the test passes:
//! - the Debian package registry cannot be reached and no chroot is cached (nothing to boot);
//! - the process is not root (debootstrap, chroot and the mounts need it), unless
//!   `RVGPU_VM_TEST=require`, which `.ci/run` sets, makes that a failure.
//!   `RVGPU_VM_TEST=skip` skips it on purpose (a developer machine without the time).

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The whole run: chroot (about 3 min with the packages), the debug build when this test runs
/// alone (nothing to build under the test command), the boots (under a minute each). Generous:
/// CI's own limit is 90 minutes.
const LIMIT: Duration = Duration::from_secs(40 * 60);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn vm_dir() -> PathBuf {
    root().join("target/vm")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// The mirror apt uses on this machine, as the script picks it.
fn mirror() -> String {
    std::fs::read_to_string("/etc/apt/sources.list.d/debian.sources")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("URIs:").map(|u| u.trim().to_string()))
        })
        .unwrap_or_else(|| "http://deb.debian.org/debian".to_string())
}

/// Whether the package registry answers (trixie's and trixie-backports' release files). Without
/// `curl` there is no cheap way to ask, so the run goes ahead and fails loudly if it cannot
/// fetch (never a silent skip).
fn registry_reachable(mirror: &str) -> bool {
    let have_curl = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_curl {
        return true;
    }
    ["trixie", "trixie-backports"].iter().all(|suite| {
        Command::new("curl")
            .args(["-sfI", "--max-time", "20"])
            .arg(format!("{mirror}/dists/{suite}/InRelease"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Counts from the guest's `N passed, M failed[, K skipped]` lines.
fn results(log: &str) -> Vec<(u64, u64)> {
    log.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (passed, rest) = l.split_once(" passed, ")?;
            let failed = rest.split(' ').next()?;
            Some((passed.parse().ok()?, failed.parse().ok()?))
        })
        .collect()
}

#[test]
fn results_parser() {
    let log = "ok  id\n7 passed, 0 failed\n12 passed, 1 failed, 40 skipped\nnoise passed, x";
    assert_eq!(results(log), vec![(7, 0), (12, 1)]);
}

#[test]
fn driver_stack_in_a_linux_guest_across_qemu_pcie() {
    let mode = std::env::var("RVGPU_VM_TEST").unwrap_or_default();
    if mode == "skip" {
        eprintln!("VM test: skipped (RVGPU_VM_TEST=skip)");
        return;
    }
    if !is_root() {
        assert_ne!(
            mode, "require",
            "VM test: RVGPU_VM_TEST=require but not root (debootstrap, chroot and \
             mounts need root)"
        );
        eprintln!(
            "VM test: skipped: not root (debootstrap, chroot and mounts need root; \
             CI runs it as root)"
        );
        return;
    }
    let vm = vm_dir();
    let cached = vm.join("trixie/usr/bin/qemu-system-x86_64").exists();
    let mirror = mirror();
    if !cached && !registry_reachable(&mirror) {
        eprintln!(
            "VM test: skipped: the Debian package registry ({mirror}) cannot be \
             reached and no chroot is cached in {}",
            vm.display()
        );
        return;
    }

    std::fs::create_dir_all(&vm).unwrap();
    let log_path = vm.join("run.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let started = Instant::now();
    let status = Command::new("timeout")
        .arg(LIMIT.as_secs().to_string())
        .arg("bash")
        .arg(root().join("device/vfu/vm/run-guest-smoke.sh"))
        .arg(&vm)
        .env("MIRROR", &mirror)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .expect("run device/vfu/vm/run-guest-smoke.sh");
    let out = std::fs::read_to_string(&log_path).unwrap_or_default();
    let stages: Vec<&str> = out.lines().filter(|l| l.starts_with("== ")).collect();
    eprintln!(
        "VM test: {:.0} s; stages:\n{}",
        started.elapsed().as_secs_f64(),
        stages.join("\n")
    );
    assert!(
        status.success(),
        "the VM run failed ({status}); its log, {}:\n{}\n{}",
        log_path.display(),
        tail(&out, 80),
        diagnosis(&out, &vm)
    );
    let runs = results(&out);
    // guest_smoke, the harness on INTx, the harness on MSI, the harness on two functions.
    assert!(
        runs.len() >= 4 && runs.iter().all(|&(p, f)| p > 0 && f == 0),
        "the guest did not report every check passed ({runs:?}); log tail:\n{}\n{}",
        tail(&out, 80),
        diagnosis(&out, &vm)
    );
    // The second boot: both functions in the guest's PCI list, and the debugger's view of the
    // CPU before its first instruction (the reset vector).
    assert!(
        out.lines().any(|l| l.trim() == "guest: 2 rvgpu functions"),
        "the guest of the two-function boot did not list two rvgpu functions; log tail:\n{}",
        tail(&out, 80)
    );
    // There, the harness made each function an adapter and the two-adapter case passed.
    assert!(
        out.lines()
            .any(|l| l.starts_with("PCI board: 2 rvgpu function(s), one adapter each: ")),
        "the harness of the two-function boot did not take both functions; log tail:\n{}",
        tail(&out, 80)
    );
    assert!(
        out.lines().any(|l| {
            let mut cells = l.split_whitespace();
            cells.next() == Some("Adapter.TwoAdapters") && cells.next() == Some("pass")
        }),
        "Adapter.TwoAdapters did not pass on the two functions; log tail:\n{}\n{}",
        tail(&out, 80),
        diagnosis(&out, &vm)
    );
    assert!(
        out.lines().any(|l| l.starts_with("gdb stub: stop reply ")
            && l.contains("; RIP f0ff000000000000; detach OK")),
        "the gdb stub did not hold the CPU at the reset vector for the host; log tail:\n{}",
        tail(&out, 80)
    );
    // The third: the Windows machine's command line (firmware, TPM, disk) taken by QEMU.
    assert!(
        out.lines().any(
            |l| l.starts_with("Windows command line: gdb stub: stop reply ")
                && l.ends_with("; RIP f0ff000000000000; detach OK; running 5 s after detach: yes")
        ),
        "QEMU did not run the Windows machine's command line; log tail:\n{}",
        tail(&out, 80)
    );
    for kind in ["INTx", "MSI"] {
        assert!(
            out.lines().any(|l| l.starts_with("PCI board: ")
                && l.ends_with(&format!(" {kind} interrupts delivered through UIO"))
                && !l.starts_with("PCI board: 0 ")),
            "no {kind} interrupt reached the harness in the guest; log tail:\n{}",
            tail(&out, 80)
        );
    }
}

/// What CI's output needs to diagnose a failed guest run without the machine: each failed
/// harness row with the stage it ran in (INTx or MSI), and the device server's last lines.
fn diagnosis(out: &str, vm: &Path) -> String {
    let mut stage = "";
    let mut failed = Vec::new();
    for line in out.lines() {
        if line.starts_with("== ") {
            stage = line;
        } else if line.split_whitespace().nth(1) == Some("FAIL") {
            failed.push(format!("{stage}\n  {line}"));
        }
    }
    let server = std::fs::read_to_string(vm.join("vfu.log")).unwrap_or_default();
    format!(
        "failed cases:\n{}\ndevice server ({}), last lines:\n{}",
        failed.join("\n"),
        vm.join("vfu.log").display(),
        tail(&server, 40)
    )
}

#[test]
fn diagnosis_names_each_failed_case_with_its_stage() {
    let log = "== guest: rvgpu-whlk --board pci\nA.B  pass  1.0 ms\n\
               == guest: rvgpu-whlk --board pci (MSI)\nU.Submit  FAIL  2.0 ms  UM-16  Ring(Corrupt)\n";
    let d = diagnosis(log, Path::new("/nonexistent"));
    assert!(
        d.contains("(MSI)\n  U.Submit  FAIL  2.0 ms  UM-16  Ring(Corrupt)"),
        "{d}"
    );
    assert!(!d.contains("A.B"), "{d}");
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A stand-in `qemu-system-x86_64` in a directory of its own, printing `version` and, for
/// `-device help`, `devices`.
fn fake_qemu(dir: &Path, version: &str, devices: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("qemu-system-x86_64");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ncase \"$1\" in\n--version) echo 'QEMU emulator version {version}';;\n\
             -device) echo '{devices}';;\nesac\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.to_path_buf()
}

/// Runs `scripts/test-machine.sh --check` for a Windows disk that does not exist, with `qemu`'s
/// directory first on PATH and no rvgpu-vfu: (exit code, the lines naming what is missing).
fn check_with(qemu: &Path, work: &Path) -> (Option<i32>, Vec<String>) {
    let path = format!("{}:/usr/bin:/bin", qemu.display());
    let o = Command::new("bash")
        .arg(root().join("scripts/test-machine.sh"))
        .args(["--check", "--accel", "tcg", "--gdb-port", "0", "--vfu"])
        .arg(work.join("no-rvgpu-vfu"))
        .arg("--dir")
        .arg(work.join("state"))
        .arg(work.join("no-such-disk.qcow2"))
        .env("PATH", path)
        .output()
        .expect("run scripts/test-machine.sh");
    let lines = String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_owned)
        .collect();
    (o.status.code(), lines)
}

/// The test machine's script checks everything before it starts anything, and says what is
/// missing one line each (status 3): QEMU older than 10.1, a QEMU without `vfio-user-pci`, no
/// server, no disk image. Nothing is made in the state directory by a check.
#[test]
fn test_machine_names_each_missing_prerequisite_on_one_line() {
    let work = std::env::temp_dir().join(format!("rvgpu-test-machine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    for (version, devices, want) in [
        (
            "9.2.0",
            "name \"vfio-user-pci\"",
            "QEMU: version 9.2.0; vfio-user-pci needs 10.1 or later",
        ),
        (
            "10.1.0",
            "name \"e1000e\"",
            "QEMU: 10.1.0 has no vfio-user-pci device",
        ),
    ] {
        let qemu = fake_qemu(&work.join(version), version, devices);
        let (code, lines) = check_with(&qemu, &work);
        assert_eq!(code, Some(3), "{lines:#?}");
        for line in &lines {
            assert!(
                line.starts_with("test-machine.sh: missing: "),
                "not a prerequisite line: {line}"
            );
        }
        let mut unique = lines.clone();
        unique.dedup();
        assert_eq!(unique, lines, "a prerequisite named twice");
        for expected in [want, "rvgpu-vfu: not found", "disk: "] {
            assert_eq!(
                lines.iter().filter(|l| l.contains(expected)).count(),
                1,
                "one line with `{expected}`: {lines:#?}"
            );
        }
    }
    assert!(
        !work.join("state").exists(),
        "--check made the state directory"
    );
    let _ = std::fs::remove_dir_all(&work);
}
