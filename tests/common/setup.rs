//! Host tools a test needs, installed or asked for once (`scripts/setup.sh`).
//!
//! A test that needs mingw-w64 or valgrind calls [`require`] first. When the tool is missing and
//! cannot be installed here, the script prints one line with the command to run and the whole
//! test binary stops at once with status 1, rather than every test of the binary failing with
//! the same message.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// Makes sure `tools` (names known to `scripts/setup.sh`: `mingw`, `valgrind`, `osslsigncode`,
/// `openssl`) are installed, or ends the test process with the script's one line on stderr.
pub fn require(tools: &[&str]) {
    // One set-up at a time within this binary; the script locks against other binaries.
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The script's stderr is inherited: its line reaches the terminal even though the test
    // harness captures what the test itself prints, and that capture is lost on exit.
    let status = Command::new("bash")
        .arg(root.join("scripts/setup.sh"))
        .args(tools)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(_) => std::process::exit(1),
        Err(e) => stop(&format!(
            "rvgpu setup: cannot run bash scripts/setup.sh: {e}"
        )),
    }
}

/// Ends the test process with one line on stderr (not captured by the test harness).
pub fn stop(line: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
    std::process::exit(1)
}

/// Runs `cmd` and returns what it wrote; fails the test, saying `what` it was and what the
/// command printed, unless it ran and exited with success.
#[allow(dead_code)]
pub fn succeeded(cmd: &mut Command, what: &str) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {:?} does not run: {e}", cmd.get_program()));
    assert!(
        out.status.success(),
        "{what}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
