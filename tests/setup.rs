//! The test command's own set-up (`scripts/setup.sh`, `tests/common/setup.rs`): a tool that is
//! missing and cannot be installed stops the run at once with one line naming the command to
//! run. The tools are hidden with `RVGPU_SETUP_HIDE`, so nothing is uninstalled.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

#[path = "common/setup.rs"]
mod setup;

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The lines a run wrote to stderr that come from the set-up.
fn setup_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("rvgpu setup:"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn setup_script_names_the_command_when_it_cannot_install() {
    let out = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .args(["mingw", "valgrind"])
        .env("RVGPU_SETUP_HIDE", "mingw")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "rvgpu setup: x86_64-w64-mingw32-gcc is missing; run: sudo apt-get install -y \
         gcc-mingw-w64-x86-64",
        "exactly one line, with the command"
    );
}

#[test]
fn setup_script_names_the_command_when_it_cannot_fetch_the_emulator() {
    let out = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .arg("unicorn")
        .env("RVGPU_SETUP_HIDE", "unicorn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "exactly one line: {stderr}");
    assert!(
        stderr
            .trim_end()
            .ends_with("; run: bash scripts/setup.sh unicorn"),
        "names the command: {stderr}"
    );
}

#[test]
fn setup_script_rejects_an_unknown_tool() {
    let out = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .arg("no-such-tool")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn package_script_stops_before_building_when_mingw_is_missing() {
    let out_dir = Scratch::new("package-no-mingw");
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(root().join("scripts/package.sh"))
        .arg(out_dir.join("package"))
        .env("RVGPU_SETUP_HIDE", "mingw")
        .env("CARGO", "false") // a build would fail loudly; it must not be reached
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(setup_lines(&out).len(), 1, "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(60), "not at once");
}

// Three tests that each need mingw, as the PE tests do; run only as the child of the test below.
#[test]
fn child_needs_mingw_1() {
    child();
}
#[test]
fn child_needs_mingw_2() {
    child();
}
#[test]
fn child_needs_mingw_3() {
    child();
}
fn child() {
    if std::env::var_os("RVGPU_SETUP_CHILD").is_some() {
        setup::require(&["mingw"]);
    }
}

#[test]
fn a_missing_tool_stops_the_test_binary_with_one_line() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_needs_mingw", "--test-threads=3"])
        .env("RVGPU_SETUP_CHILD", "1")
        .env("RVGPU_SETUP_HIDE", "mingw")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let lines = setup_lines(&out);
    assert_eq!(lines.len(), 1, "one line for three tests: {lines:?}");
    assert!(
        lines[0].contains("sudo apt-get install -y gcc-mingw-w64-x86-64"),
        "{lines:?}"
    );
    // The binary stopped: libtest never got to its summary.
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("test result"),
        "{out:?}"
    );
}

/// The install path, with stand-ins: `PATH` holds only a fake `apt-get` (which "installs" a fake
/// mingw gcc), an `id` that says root, and the few programs the script runs, so the real
/// packages are neither seen nor touched. Three set-ups at once install once, under the lock.
#[test]
fn setup_script_installs_once_when_several_ask_at_once() {
    let dir = Scratch::new("setup-install");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["flock", "mktemp", "rm", "sleep"] {
        let found = Command::new("bash")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let path = String::from_utf8(found.stdout).unwrap();
        assert!(found.status.success(), "{tool} is not installed");
        std::os::unix::fs::symlink(path.trim(), bin.join(tool)).unwrap();
    }
    let script = |name: &str, body: &str| {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
        let chmod = Command::new("chmod").arg("+x").arg(&path).status();
        assert!(chmod.unwrap().success());
    };
    script("id", "echo 0");
    let gcc = bin.join("x86_64-w64-mingw32-gcc");
    script(
        "apt-get",
        &format!(
            "echo \"$*\" >> {log}\n\
             if [ \"$1\" = install ]; then sleep 1; printf '#!/bin/bash\\n' > {gcc}; \
             /bin/chmod +x {gcc}; fi",
            log = dir.join("apt.log").display(),
            gcc = gcc.display()
        ),
    );
    let runs: Vec<_> = (0..3)
        .map(|_| {
            Command::new("/bin/bash")
                .arg(root().join("scripts/setup.sh"))
                .arg("mingw")
                .env("PATH", &bin)
                .env("TMPDIR", &dir)
                .env_remove("RVGPU_SETUP_HIDE")
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    assert!(gcc.exists(), "the fake gcc was not installed");
    let log = std::fs::read_to_string(dir.join("apt.log")).unwrap();
    let installs = log.lines().filter(|l| l.starts_with("install")).count();
    assert_eq!(
        installs, 1,
        "three set-ups at once installed {installs} times:\n{log}"
    );
    assert!(log.contains("gcc-mingw-w64-x86-64"), "{log}");
}

/// Each package `cargo tree` lists, with the features it is built with.
fn features(args: &[&str]) -> std::collections::BTreeMap<String, String> {
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root())
        .args(["tree", "--prefix", "none", "--format", "{p}|{f}"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim_end_matches(" (*)").split_once('|'))
        .map(|(p, f)| (p.to_owned(), f.to_owned()))
        .collect()
}

/// README's harness command after its test command builds nothing again: every package the
/// harness needs has the features the test command (dev-dependencies included) gives it. One
/// that differs makes `cargo run -p rvgpu-whlk` recompile it and all above it, the simulated OS
/// among them.
#[test]
fn harness_command_reuses_the_test_commands_build() {
    let test = features(&["--workspace", "--edges", "normal,build,dev"]);
    let harness = features(&["-p", "rvgpu-whlk", "--edges", "normal,build"]);
    assert!(harness.len() > 20, "{harness:?}");
    let differ: Vec<String> = harness
        .iter()
        .filter(|(p, f)| test.get(*p) != Some(*f))
        .map(|(p, f)| {
            format!(
                "{p}: [{f}] for the harness, {:?} for the tests",
                test.get(p)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
}
