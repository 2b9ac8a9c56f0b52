//! `rvgpu.sys` under a real debugger: Debian's LLDB attaches to the emulator's GDB stub
//! (`simos/src/pe/gdb`, docs/pe-image.md "Debugging the image"), loads the image and its PDB at
//! the base the loader chose, stops in the native-fence creation DDI by its Rust name, unwinds
//! through the PDB, and reads the driver's adapter table — the static the WinDbg script reads.

mod common;

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use rvgpu_simos::pe::{gdb, DriverBuild};
use rvgpu_simos::{Irql, MachineConfig, Mode, NativeFenceDesc};

/// The DDI `DxgkDdiCreateNativeFence` points at: the thunk instantiated for the Windows platform
/// and the create-native-fence DDI (driver/kmd/src/thunk/fence.rs), as the PDB names it.
const CREATE_NATIVE_FENCE: &str = "rvgpu_kmd::thunk::contract::on_adapter_mut<enum2$<rvgpu::platform::windows::WinKernel>,enum2$<rvgpu_kmd::thunk::fence::CreateNativeFence> >";

/// How long LLDB may take (it is killed after).
const LLDB_LIMIT: Duration = Duration::from_secs(60);

fn require_lldb() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/setup.sh");
    let ok = Command::new("bash")
        .arg(script)
        .arg("lldb")
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        // The script printed the one line saying what to install.
        std::process::exit(1);
    }
}

/// The PDB of the package's rvgpu.sys: beside it, else where package.sh's build left it.
fn pdb(package: &Path) -> PathBuf {
    let beside = package.join("rvgpu.pdb");
    if beside.is_file() {
        return beside;
    }
    let target = std::env::var_os("RVGPU_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pe"),
        PathBuf::from,
    );
    target.join("x86_64-pc-windows-msvc/driver/rvgpu.pdb")
}

/// Runs LLDB with `commands` in batch mode, and `on_crash` once the process stops with a signal
/// (batch mode runs nothing more from `commands` then); its stdout and stderr.
fn lldb(commands: &[String], on_crash: &[&str]) -> String {
    let mut cmd = Command::new("lldb-22");
    cmd.arg("-b")
        .arg("--no-lldbinit")
        // LLDB 14 reads PDBs natively only when asked (its DIA reader is Windows-only).
        .env("LLDB_USE_NATIVE_PDB_READER", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for c in commands {
        cmd.arg("-o").arg(c);
    }
    for c in on_crash {
        cmd.arg("-k").arg(c);
    }
    let mut child = cmd.spawn().expect("run lldb");
    let start = Instant::now();
    let mut out = String::new();
    let mut err = String::new();
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let ereader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > LLDB_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            out.push_str("\n[lldb killed after the time limit]\n");
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    out.insert_str(0, &reader.join().unwrap_or_default());
    err.push_str(&ereader.join().unwrap_or_default());
    format!("{out}\n--- stderr ---\n{err}")
}

/// The first hexadecimal number after `key` in `text`.
fn hex_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let rest = &rest[rest.find("0x")? + 2..];
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(rest.len());
    u64::from_str_radix(&rest[..end], 16).ok()
}

/// LLDB attaches before DriverEntry, breaks in the native-fence creation DDI by its PDB name,
/// unwinds through the inlined frames to the DDI, and reads the adapter table the WinDbg script
/// reads (`rvgpu_kmd::globals::ADAPTERS`): slot 0 holds the adapter the DDI was called for, and
/// that adapter's own `table_slot` says 0. A bug check the image then causes (a page fault in
/// `memcpy`) stops LLDB with SIGSEGV before it is raised, and is raised once LLDB lets go.
#[test]
fn lldb_stops_in_the_native_fence_ddi_reads_the_adapter_and_catches_a_bug_check() {
    require_lldb();
    rvgpu_simos::pe::unicorn::api().unwrap_or_else(|e| panic!("{e}"));
    let package = rvgpu_simos::install::package::test_signed().unwrap_or_else(|e| panic!("{e}"));
    let sys = package.dir.join("rvgpu.sys");
    let pdb = pdb(&package.dir);
    assert!(pdb.is_file(), "no PDB at {}", pdb.display());
    let at = gdb::listen("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));

    // The machine: loads the image (its first instruction waits for the debugger), starts the
    // adapter, creates one native fence, then makes the image fault.
    let machine = std::thread::spawn(|| {
        let mut cfg = MachineConfig::single(Mode::Step);
        cfg.driver = DriverBuild::Pe(None);
        let m = started(cfg);
        let pid = device_process(&m, 0);
        let created = m
            .create_native_fence(0, pid, NativeFenceDesc::default())
            .is_ok();
        let dst = [0u8; 16];
        let _ = m.call_pe_import("memcpy", Irql::Passive, &[dst.as_ptr() as u64, 0x10, 16]);
        (created, m.bugcheck().map(|b| b.code))
    });

    let start = Instant::now();
    let base = loop {
        let modules = gdb::modules();
        if let Some((_, base, _)) = modules.into_iter().find(|(n, _, _)| n == "rvgpu.sys") {
            break base;
        }
        assert!(start.elapsed() < LLDB_LIMIT, "the image was never mapped");
        std::thread::sleep(Duration::from_millis(20));
    };
    let slide = gdb::slide(base).expect("the image's headers");

    let out = lldb(
        &[
            format!("target create {}", sys.display()),
            format!("target symbols add {}", pdb.display()),
            format!("gdb-remote {}", at.port()),
            format!("target modules load --file rvgpu.sys --slide {slide:#x}"),
            format!("breakpoint set --name '{CREATE_NATIVE_FENCE}'"),
            "continue".into(),
            "bt".into(),
            "target variable ADAPTERS.slots[0].ptr.p.value".into(),
            "frame select 3".into(),
            "frame variable self->table_slot.v.value".into(),
            "breakpoint delete --force".into(),
            "continue".into(),
        ],
        &["bt 1", "process plugin packet monitor bugcheck", "detach"],
    );
    // Whatever LLDB did, the machine must not wait for it: a connection that closes at once
    // ends a session that never started.
    let _ = TcpStream::connect(at);
    let (created, bugcheck) = machine.join().expect("the machine thread");
    let elapsed = start.elapsed();
    assert!(created, "the native fence was not created\n{out}");
    assert!(
        out.contains("stop reason = breakpoint 1.1"),
        "LLDB did not stop at the breakpoint\n{out}"
    );
    let ddi = format!("rvgpu.sys`{CREATE_NATIVE_FENCE}(h_adapter=");
    assert!(
        out.contains(&ddi),
        "the backtrace does not name the DDI\n{out}"
    );
    assert!(
        out.contains("rvgpu.sys`rvgpu_kmd::fence::ddi::create(a="),
        "the backtrace does not show the inlined fence::ddi::create\n{out}"
    );
    let adapter = hex_after(&out, "(h_adapter=").expect("the DDI's adapter argument");
    let slot0 = hex_after(&out, "ADAPTERS.slots[0].ptr.p.value =").expect("slot 0 of the table");
    assert_eq!(slot0, adapter, "slot 0 is not the DDI's adapter\n{out}");
    assert!(
        out.contains("self->table_slot.v.value = '\\0'"),
        "the adapter's table slot is not 0\n{out}"
    );
    assert!(
        out.contains("stop reason = signal SIGSEGV"),
        "LLDB did not stop at the bug check\n{out}"
    );
    assert!(
        out.contains("PAGE_FAULT_IN_NONPAGED_AREA (0x50)"),
        "the stub did not name the bug check\n{out}"
    );
    assert_eq!(
        bugcheck,
        Some(0x50),
        "the bug check after the debugger let go\n{out}"
    );
    assert!(elapsed < LLDB_LIMIT, "took {elapsed:?}");
}
