//! `scripts/under-load.sh`, the way to run the test command with CPU-bound loops beside it
//! (CONTRIBUTING.md): it answers with the command's status, and when it is stopped (a TERM to
//! the script alone, as a CI limit or a supervisor sends it) it ends at once, taking the
//! command's process tree and its loops with it, so no busy loop outlives a stopped run.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/under-load.sh")
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let state = s.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

/// Every process whose parent is `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// Waits for `child` to exit; a watchdog: a script that does not end fails the test.
fn exit_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn under_load_script_answers_with_its_command_s_status() {
    let status = Command::new("bash")
        .arg(script())
        .args(["-n", "2", "sh", "-c", "exit 7"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(7));
}

#[test]
fn under_load_script_stopped_ends_its_command_tree_and_its_loops_at_once() {
    let dir = Scratch::new("under-load");
    let pidfile = dir.join("grandchild.pid");
    // The command starts a process of its own and waits for it: both must go.
    let cmd = format!("sleep 600 & echo $! > {}; wait", pidfile.display());
    let mut run = Command::new("bash")
        .arg(script())
        .args(["-n", "2", "sh", "-c", &cmd])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(run.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("busy loop"), "{line}");
    let t0 = Instant::now();
    let grandchild = loop {
        if let Some(p) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the command never ran"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let started = children(run.id());
    assert_eq!(started.len(), 3, "two loops and the command: {started:?}");
    let kill = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // The command would sleep for ten minutes: the script must not wait for it.
    let code = exit_within(&mut run, Duration::from_secs(30));
    let left: Vec<u32> = started
        .iter()
        .copied()
        .chain([grandchild])
        .filter(|&p| {
            let t0 = Instant::now();
            while alive(p) && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
            }
            alive(p)
        })
        .collect();
    for p in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &p.to_string()])
            .status();
    }
    assert_eq!(code, Some(143), "the script ended by its TERM");
    assert!(left.is_empty(), "processes outlived the script: {left:?}");
}
