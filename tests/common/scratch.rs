//! Scratch directories for tests, one per use: `CARGO_TARGET_TMPDIR/<name>-<pid>-<n>`. Test
//! binaries run side by side (two suites, two runs of the test command, a suite's rerun of
//! itself), and tests of one binary run on threads: a fixed name would be written by all of
//! them at once. Shared by the root package's tests and the simulated OS's (`#[path]`); each
//! test binary uses a part, hence `dead_code` is allowed here. Host-side test code: the
//! kernel's no-panic lint does not apply.
#![allow(dead_code, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// An empty directory of this process alone, removed when dropped. After a failure it is left
/// to look at; a later process removes it once this one has ended.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new directory named after `name`.
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        sweep(base, name);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{name}-{}-{n}", std::process::id()));
        // A directory of an ended process that had this process's id.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Self(dir)
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Removes the `name-<pid>-<n>` directories of processes that have ended (a directory held in
/// a static is never dropped; one of a failed test is left). Only where `/proc` tells which
/// processes live.
fn sweep(base: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let prefix = format!("{name}-");
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some((pid, n)) = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split_once('-'))
        else {
            continue;
        };
        let ours = pid.parse::<u32>().is_ok() && n.parse::<u64>().is_ok();
        if ours && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
