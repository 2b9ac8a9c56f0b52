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
use std::sync::OnceLock;

// The harness's collect plan, read from its source (this package does not depend on the
// harness); only its table is used here.
#[allow(dead_code, clippy::arithmetic_side_effects)]
#[path = "../whlk/src/collect.rs"]
mod collect;
use collect::{Step, LOG, PLAN};

#[path = "common/setup.rs"]
mod setup;

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// Where Debian's `wine64` package puts the loader (it is not on PATH).
const WINE64: &str = "/usr/lib/wine/wine64";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `name` in this process's scratch directory: the package, the run directory and the Wine
/// prefix are the process's own.
fn tmp(name: &str) -> PathBuf {
    static DIR: OnceLock<Scratch> = OnceLock::new();
    DIR.get_or_init(|| Scratch::new("wine")).join(name)
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

/// `wine program args` with the test's own prefix; Wine's own messages off; no Mono or Gecko
/// install prompt for a console program.
fn wine_command(wine: &Path, program: &str) -> Command {
    let mut command = Command::new(wine);
    command
        .arg(program)
        .env("WINEPREFIX", tmp("wine-prefix"))
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=");
    command
}

/// Makes the test's prefix before any test runs Wine in it. Debian's Wine names the
/// wineserver's directory in the prefix (a `mkdtemp` under /tmp, written to the prefix's
/// `wineserver` file) when it first makes the prefix: two processes starting on a fresh prefix
/// at once each make a directory, and the one whose name loses finds no server there
/// ("chdir to /tmp/wine-XXXXXX/server-…: No such file or directory"). One `wineboot --init`
/// first makes the prefix and its one name; every later process reads that name.
fn make_prefix(wine: &Path) {
    setup::succeeded(
        wine_command(wine, "wineboot").arg("--init"),
        "making the Wine prefix",
    );
    assert!(
        tmp("wine-prefix").join("wineserver").exists(),
        "Wine made its prefix without naming its server directory in it"
    );
}

/// Runs `rvgpu-whlk.exe args` under Wine in `dir`: (success, stdout, stderr).
fn whlk(wine: &Path, dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = wine_command(wine, "rvgpu-whlk.exe")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running Wine");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Wine and the run directory, made once for the tests of this file (they share the
/// package's directory); `None` without Wine.
fn setup() -> Option<(PathBuf, PathBuf)> {
    static ONCE: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    ONCE.get_or_init(|| {
        let wine = wine()?;
        make_prefix(&wine);
        Some((wine, run_dir(&package())))
    })
    .clone()
}

#[test]
fn wine_runs_the_windows_harness_and_every_sim_case_passes_then_collects() {
    let Some((wine, dir)) = setup() else {
        return;
    };
    let (ok, list, err) = whlk(&wine, &dir, &["--list"]);
    assert!(
        ok,
        "rvgpu-whlk.exe --list under Wine failed:\n{list}\n{err}"
    );
    let cases = list.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(cases > 0, "no cases listed:\n{list}");

    // As the runbook's step 8 names its files (the console output too, as Tee-Object would).
    let (ok, out, err) = whlk(
        &wine,
        &dir,
        &[
            "--backend",
            "sim",
            "--junit",
            "rvgpu-results.xml",
            "--timeline",
            "rvgpu-timeline.json",
        ],
    );
    let summary = format!("{cases} passed, 0 failed, 0 skipped");
    assert!(
        ok && out.contains(&summary),
        "rvgpu-whlk.exe --backend sim under Wine: expected `{summary}`:\n{out}\n{err}"
    );
    std::fs::write(dir.join("rvgpu-whlk.txt"), &out).unwrap();
    eprintln!("wine: rvgpu-whlk.exe --backend sim: {summary}");
    collects(&wine, &dir);
}

/// `rvgpu-whlk.exe collect` after the run: it succeeds, writes every text file of the plan
/// and its log, takes the harness's files, and notes (not fails on) what Wine lacks: the
/// Windows tools, the dumps, and tar.exe, so the folder stays.
fn collects(wine: &Path, dir: &Path) {
    let out_dir = dir.join("collected");
    let _ = std::fs::remove_dir_all(&out_dir);
    let (ok, out, err) = whlk(wine, dir, &["collect", "--out", "collected"]);
    assert!(
        ok,
        "rvgpu-whlk.exe collect under Wine failed:\n{out}\n{err}"
    );
    let made: Vec<PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(made.len(), 1, "{made:?}\n{out}");
    let work = &made[0];
    assert!(
        work.is_dir()
            && work
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("rvgpu-collect-"),
        "Wine has no tar.exe: the folder stays, not {}\n{out}",
        work.display()
    );
    assert!(
        out.contains("no archive") && out.contains("send the folder"),
        "the output says to send the folder:\n{out}"
    );
    let log = std::fs::read_to_string(work.join(LOG)).unwrap();
    for step in PLAN {
        if let Step::Run { file, .. } = step {
            assert!(work.join(file).is_file(), "{file} not written:\n{log}");
        }
    }
    for f in ["rvgpu-results.xml", "rvgpu-timeline.json", "rvgpu-whlk.txt"] {
        assert_eq!(
            std::fs::read(work.join("run").join(f)).unwrap(),
            std::fs::read(dir.join(f)).unwrap(),
            "run\\{f} is not the harness's file"
        );
    }
    // Wine has `cmd`, `reg` and a `wevtutil` that writes no log file, none of the boot,
    // Verifier, BitLocker or PnP tools, no dumps, and no ETW trace was taken.
    let ver = std::fs::read_to_string(work.join("ver.txt")).unwrap();
    assert!(ver.contains("> cmd /c ver"), "{ver}");
    for absent in [
        "absent: bcdedit",
        "absent: verifier",
        "absent: tracelog",
        "absent: manage-bde",
        "absent: pnputil",
        "Minidump\\*.dmp",
        "rvgpu.etl",
        "absent: System.evtx (not written by wevtutil)",
        "tar.exe is not on this machine",
        "absent: the KMD's journal",
    ] {
        assert!(
            log.contains(absent),
            "collect-log.txt lacks `{absent}`:\n{log}"
        );
    }
    // No rvgpu adapter under Wine: the journal's file says why there is none.
    let journal = std::fs::read_to_string(work.join("journal.txt")).unwrap();
    assert!(journal.starts_with("no journal: "), "{journal}");
    assert!(
        !log.contains("MEMORY.DMP"),
        "MEMORY.DMP is taken only with --memory-dump:\n{log}"
    );
    eprintln!(
        "wine: rvgpu-whlk.exe collect: {} with {} entries; absent tools and files noted",
        work.display(),
        std::fs::read_dir(work).unwrap().count()
    );
}

#[test]
fn wine_runs_a_child_process_that_uses_the_handles_its_parent_duplicated() {
    let Some((wine, dir)) = setup() else {
        return;
    };
    let (ok, out, err) = whlk(&wine, &dir, &["child-check"]);
    assert!(
        ok && out.contains("child protocol: child process")
            && out.contains("killed while it waited")
            && out.contains("a case's process over a simulated machine")
            && out.contains("read it back through the requests, and was killed"),
        "rvgpu-whlk.exe child-check under Wine:\n{out}\n{err}"
    );
    eprintln!("wine: {}", out.trim());
}
