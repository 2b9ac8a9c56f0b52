//! A second Windows loader for the user-mode files: Debian's Wine runs `rvgpu-whlk.exe` as
//! `scripts/package.sh` builds it, and its `sim` backend (the emulated GPU under the simulated
//! OS, embedded in the executable) passes every case inside the Windows executable. What the
//! Windows build of the harness does differently from the Linux one (its loader's imports, the
//! C runtime mingw links against, threads, timers, console output) shows here before a Windows
//! machine.
//!
//! Wine comes from `scripts/setup.sh wine` (Debian's `wine64`, installed when this runs as
//! root; otherwise the test prints the script's one line and passes without running).
//!
//! Wine 8 has no `bcryptprimitives.dll`, whose `ProcessPrng` Rust's standard library imports
//! on Windows 10 and later: the test builds a stand-in from `tests/wine/bcryptprimitives.c`
//! with mingw-w64 next to a copy of the executable. The stand-in is the test's, never the
//! package's.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/setup.rs"]
mod setup;

/// Where Debian's `wine64` package puts the loader (it is not on PATH).
const WINE64: &str = "/usr/lib/wine/wine64";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Wine, installed if it can be; `None` (after the script's one line) when it cannot.
fn wine() -> Option<PathBuf> {
    let status = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .arg("wine")
        .status()
        .expect("bash scripts/setup.sh");
    // Status 3: the script printed its one line (the command to run); the test passes
    // without Wine.
    if status.code() == Some(3) {
        return None;
    }
    assert!(status.success(), "scripts/setup.sh wine: {status}");
    Some(PathBuf::from(WINE64))
}

/// The package (scripts/package.sh, as a person builds it).
fn package() -> PathBuf {
    setup::require(&["mingw"]);
    let out = tmp("wine-package");
    let status = Command::new("bash")
        .arg(root().join("scripts/package.sh"))
        .arg(&out)
        .env("CARGO", env!("CARGO"))
        .current_dir(root())
        .status()
        .expect("bash scripts/package.sh");
    assert!(status.success(), "scripts/package.sh: {status}");
    out
}

/// A directory with a copy of the harness and the test-side `bcryptprimitives.dll` beside it
/// (the loader looks in the executable's directory first).
fn run_dir(package: &Path) -> PathBuf {
    assert!(
        !package.join("bcryptprimitives.dll").exists(),
        "the package ships a bcryptprimitives.dll"
    );
    let dir = tmp("wine-run");
    std::fs::create_dir_all(&dir).expect("run directory");
    std::fs::copy(package.join("rvgpu-whlk.exe"), dir.join("rvgpu-whlk.exe"))
        .expect("copy rvgpu-whlk.exe");
    setup::succeeded(
        Command::new("x86_64-w64-mingw32-gcc")
            .args(["-shared", "-O2", "-o"])
            .arg(dir.join("bcryptprimitives.dll"))
            .arg(root().join("tests/wine/bcryptprimitives.c"))
            .arg("-ladvapi32"),
        "building the bcryptprimitives.dll stand-in",
    );
    dir
}

/// Runs `rvgpu-whlk.exe args` under Wine in `dir`: (success, stdout, stderr).
fn whlk(wine: &Path, dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(wine)
        .arg("rvgpu-whlk.exe")
        .args(args)
        .current_dir(dir)
        // A prefix of the test's own, made on first use; Wine's own messages off; no
        // Mono or Gecko install prompt for a console program.
        .env("WINEPREFIX", tmp("wine-prefix"))
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
        .output()
        .expect("running Wine");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn wine_runs_the_windows_harness_and_every_sim_case_passes() {
    let Some(wine) = wine() else {
        return;
    };
    let dir = run_dir(&package());
    let (ok, list, err) = whlk(&wine, &dir, &["--list"]);
    assert!(
        ok,
        "rvgpu-whlk.exe --list under Wine failed:\n{list}\n{err}"
    );
    let cases = list.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(cases > 0, "no cases listed:\n{list}");

    let (ok, out, err) = whlk(&wine, &dir, &["--backend", "sim", "--no-timeline"]);
    let summary = format!("{cases} passed, 0 failed, 0 skipped");
    assert!(
        ok && out.contains(&summary),
        "rvgpu-whlk.exe --backend sim under Wine: expected `{summary}`:\n{out}\n{err}"
    );
    eprintln!("wine: rvgpu-whlk.exe --backend sim: {summary}");
}
