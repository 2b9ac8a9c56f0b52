//! The same suite against the shipped image: [`rerun_against_the_pe_image`] runs
//! this test binary again, every machine installing the test-signed package
//! (`scripts/package.sh --test-sign`) and loading its `rvgpu.sys` in the x86-64 emulator
//! instead of the Linux build of the driver, so that a behaviour difference between the two
//! builds fails a test of the README's test command.
//!
//! Also the UMD DLL's fixtures: its image, a threaded machine to load it into, and a call of
//! one of its exports.

use std::process::Command;
use std::sync::Arc;

use rvgpu_simos::pe::umd::{UmdImage, UserProcess};
use rvgpu_simos::pe::{build_umd, DriverBuild};
use rvgpu_simos::{Machine, MachineConfig, Mode};

/// `rvgpu_umd.dll`, built for the emulator and loaded.
pub fn umd() -> Arc<UmdImage> {
    let path = build_umd().unwrap_or_else(|e| panic!("{e}"));
    UmdImage::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// A started machine running `driver`, threaded (as a Windows machine runs its GPU,
/// interrupts and DPCs on their own).
pub fn threaded_machine(driver: DriverBuild) -> Arc<Machine> {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.driver = driver;
    Arc::new(super::started(cfg))
}

/// A started machine (threaded) running `rvgpu.sys` in the emulator.
pub fn pe_machine() -> Arc<Machine> {
    threaded_machine(DriverBuild::Pe(None))
}

/// [`pe_machine`] with hardware scheduling off (`DXGK_FEATURE_HWSCH` not enabled): its nodes
/// are software-scheduled, so a process's contexts take `D3DKMTSubmitCommand`.
pub fn pe_machine_sw() -> Arc<Machine> {
    let mut cfg = MachineConfig::single(Mode::Threaded);
    cfg.driver = DriverBuild::Pe(None);
    cfg.os.hwsch_feature = false;
    Arc::new(super::started(cfg))
}

/// Calls export `name` of the DLL in process `p` (its 32-bit result); a stop (an exception in
/// the DLL) fails the test with the driver's log.
pub fn call(p: &Arc<UserProcess>, name: &str, args: &[u64]) -> u64 {
    match p.call(name, args) {
        Ok(v) => v as u32 as u64,
        Err(e) => panic!("{name}: {e:?}\n{}", log_of(p.machine())),
    }
}

/// The driver's log, one entry a line.
pub fn log_of(m: &Machine) -> String {
    m.driver_log()
        .iter()
        .map(|l| format!("{l:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs every test of this binary (but `skips`, each with the reason it cannot run against
/// the image) in a child process with `RVGPU_DRIVER=pe`, and fails with the child's report if
/// any fails. Does nothing when the build is already chosen (`RVGPU_DRIVER` set: the child
/// itself, or a whole run on one build).
pub fn rerun_against_the_pe_image(skips: &[(&str, &str)]) {
    if std::env::var_os("RVGPU_DRIVER").is_some() {
        return;
    }
    if let Err(e) = rvgpu_simos::pe::unicorn::api() {
        panic!("{e}");
    }
    let package = rvgpu_simos::install::package::test_signed().unwrap_or_else(|e| panic!("{e}"));
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.env("RVGPU_DRIVER", "pe")
        .env("RVGPU_PACKAGE", &package.dir)
        .env("RVGPU_TEST_CERT_DIR", &package.cert_dir)
        .args(["--skip", "against_the_pe_image"]);
    run_child(
        cmd,
        skips,
        &format!("installed from {}", package.dir.display()),
    );
}

/// Runs the test binary `cmd` (but `skips`) and fails with its report if any test failed;
/// `what` says how the child differs from this run.
fn run_child(mut cmd: Command, skips: &[(&str, &str)], what: &str) {
    for (name, _why) in skips {
        cmd.args(["--skip", name]);
    }
    let out = cmd.output().expect("running the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("test result:"))
        .unwrap_or("no summary");
    assert!(
        out.status.success(),
        "{what}, this suite failed ({summary}):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{what}: {summary}");
}

/// Declares the test that reruns the suite against the image.
#[macro_export]
macro_rules! against_the_pe_image {
    ($($skip:literal => $why:literal),* $(,)?) => {
        /// Every test of this file again, against `rvgpu.sys` in the x86-64 emulator.
        #[test]
        fn against_the_pe_image() {
            $crate::common::pe::rerun_against_the_pe_image(&[$(($skip, $why)),*]);
        }
    };
}

/// Runs every test of this binary (but `skips`) again in a child process whose machines play
/// Microsoft's pages where the decompiled 24H2 code disagrees with them
/// (`RVGPU_WINDOWS=pages`, docs/windows-bringup.md §13), on the Linux build and, with
/// `image`, on `rvgpu.sys` too. Does nothing inside such a child or a run that chose its build.
#[allow(dead_code)]
pub fn rerun_under_the_pages(skips: &[(&str, &str)], image: bool) {
    if std::env::var_os("RVGPU_WINDOWS").is_some() || std::env::var_os("RVGPU_DRIVER").is_some() {
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut builds = vec![("linux", None)];
    if image {
        if let Err(e) = rvgpu_simos::pe::unicorn::api() {
            panic!("{e}");
        }
        let package =
            rvgpu_simos::install::package::test_signed().unwrap_or_else(|e| panic!("{e}"));
        builds.push(("pe", Some(package)));
    }
    for (build, package) in builds {
        let mut cmd = Command::new(&exe);
        cmd.env("RVGPU_WINDOWS", "pages")
            .env("RVGPU_DRIVER", build)
            .args([
                "--skip",
                "against_the_pe_image",
                "--skip",
                "under_the_pages",
            ]);
        if let Some(package) = &package {
            cmd.env("RVGPU_PACKAGE", &package.dir)
                .env("RVGPU_TEST_CERT_DIR", &package.cert_dir);
        }
        run_child(
            cmd,
            skips,
            &format!("under the pages' answers ({build} build)"),
        );
    }
}

/// Declares the test that reruns the suite under the pages' answers: `under_the_pages!()` on
/// the Linux build, `under_the_pages!(image)` on `rvgpu.sys` as well.
#[macro_export]
macro_rules! under_the_pages {
    ($($skip:literal => $why:literal),* $(,)?) => {
        /// Every test of this file again, the OS playing Microsoft's pages (windows-bringup.md §13).
        #[test]
        fn under_the_pages() {
            $crate::common::pe::rerun_under_the_pages(&[$(($skip, $why)),*], false);
        }
    };
    (image $(, $skip:literal => $why:literal)* $(,)?) => {
        /// Every test of this file again, the OS playing Microsoft's pages (windows-bringup.md §13), on both builds.
        #[test]
        fn under_the_pages() {
            $crate::common::pe::rerun_under_the_pages(&[$(($skip, $why)),*], true);
        }
    };
}

/// A package in a scratch directory of its own, removed with it.
pub struct ScratchPackage {
    package: rvgpu_simos::install::package::TestPackage,
    _dir: super::scratch::Scratch,
}

impl std::ops::Deref for ScratchPackage {
    type Target = rvgpu_simos::install::package::TestPackage;
    fn deref(&self) -> &Self::Target {
        &self.package
    }
}

/// The test-signed package remade in a scratch directory named after `name` with `image` as
/// its `rvgpu.sys`, signed again (so it installs, and only the loader judges the image).
#[allow(dead_code)]
pub fn package_with_driver_image(name: &str, image: &[u8]) -> ScratchPackage {
    use rvgpu_simos::install::package::{self, Catalog};
    let signed = package::test_signed().unwrap_or_else(|e| panic!("{e}"));
    let dir = super::scratch::Scratch::new(name);
    let package = package::remake(&signed, &dir, Catalog::Resign { leave_out: &[] }, |d| {
        std::fs::write(d.join("rvgpu.sys"), image).unwrap_or_else(|e| panic!("{e}"))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    ScratchPackage { package, _dir: dir }
}

/// Asserts that `load` refuses `image` with its import `name` renamed to `renamed` (see
/// [`with_renamed_import`], written to `file` in a scratch directory), naming the import as
/// `named` (`module!renamed`).
#[allow(dead_code)]
pub fn assert_unknown_import_refused<T: std::fmt::Debug>(
    load: impl FnOnce(&std::path::Path) -> Result<T, String>,
    image: &std::path::Path,
    (name, renamed): (&str, &str),
    file: &str,
    named: &str,
) {
    let dir = super::scratch::Scratch::new("renamed-import");
    let path = with_renamed_import(image, name, renamed, &dir.join(file));
    let e = load(&path).expect_err("an unknown import must fail the load");
    assert!(e.contains(named), "{e}");
}

/// `image` (a PE file) written to `path` with its import `name` renamed to `renamed` (same
/// length): an import no simulated module exports.
#[allow(dead_code)]
pub fn with_renamed_import(
    image: &std::path::Path,
    name: &str,
    renamed: &str,
    path: &std::path::Path,
) -> std::path::PathBuf {
    assert_eq!(name.len(), renamed.len(), "a rename keeps the length");
    let mut data = std::fs::read(image).unwrap_or_else(|e| panic!("{}: {e}", image.display()));
    let needle = format!("{name}\0");
    let at = data
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap_or_else(|| panic!("{name}: not imported by {}", image.display()));
    data[at..at + name.len()].copy_from_slice(renamed.as_bytes());
    std::fs::write(path, &data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path.to_path_buf()
}
