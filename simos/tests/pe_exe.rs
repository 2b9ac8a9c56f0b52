//! Windows programs under the simulated OS: a console `.exe` built with mingw-w64, loaded as a
//! process (`rvgpu_simos::pe::exe`), its C runtime start-up (`mainCRTStartup`) and `main` run
//! in the x86-64 emulator against the shipped `rvgpu_umd.dll` and either build of the driver.
//! Skipped, saying so, only when mingw-w64 is missing (`bash scripts/setup.sh mingw`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::pe::{threaded_machine, umd};
use common::scratch::Scratch;
use rvgpu_simos::pe::exe::{ExeProcess, ExitStatus, Outcome};
use rvgpu_simos::pe::{build_umd, DriverBuild};
use rvgpu_simos::Machine;

const STATUS_ACCESS_VIOLATION: u32 = 0xC000_0005;
const STATUS_HEAP_CORRUPTION: u32 = 0xC000_0374;
const STATUS_INVALID_CRT_PARAMETER: u32 = 0xC000_0417;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn have_mingw() -> bool {
    let ok = Command::new("x86_64-w64-mingw32-gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipped: x86_64-w64-mingw32-gcc is missing (bash scripts/setup.sh mingw installs it)"
        );
    }
    ok
}

/// Compiles `src` with mingw-w64 into `dir/exe`, linked against the shipped DLL.
fn build(dir: &Scratch, src: &Path, exe: &str, extra: &[&str]) -> PathBuf {
    let dll = build_umd().unwrap_or_else(|e| panic!("{e}"));
    let out = dir.join(exe);
    let r = Command::new("x86_64-w64-mingw32-gcc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(root().join("umd/include"))
        .args(extra)
        .arg(src)
        .arg(&dll)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("x86_64-w64-mingw32-gcc runs");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    out
}

/// A C program written for the test, built in `dir`.
fn program(dir: &Scratch, name: &str, text: &str, extra: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).expect("write the program");
    build(dir, &src, &format!("{name}.exe"), extra)
}

/// Loads and runs `exe` with `args` on `m`.
fn run(m: &Arc<Machine>, exe: &Path, args: &[&str]) -> Outcome {
    let p = ExeProcess::load(m.clone(), umd(), exe, args).unwrap_or_else(|e| panic!("{e}"));
    p.run()
        .unwrap_or_else(|e| panic!("{}: {e:?}", exe.display()))
}

/// UM-06 and MF-03 from C, as the README shows them: `examples/two_queues.c`, built with
/// mingw-w64 as strict C99, runs as a Windows process — mingw's `mainCRTStartup`, then
/// `main` — against the shipped DLL: each of its two queues gets its doorbell through the
/// thunks, queue A fills a buffer and signals a native fence, queue B waits for it on the GPU
/// and copies (the GPU wait holds the copy back), the CPU waits for B and checks the copy. It
/// prints "two_queues: ok" and exits with 0 on both driver builds, `rvgpu.sys` in the
/// emulator and the Linux build, submitting through doorbells only and leaving no D3D device
/// open.
#[test]
fn um_06_mf_03_the_two_queues_example_runs_on_both_driver_builds() {
    if !have_mingw() {
        return;
    }
    let dir = Scratch::new("pe_exe");
    let exe = build(
        &dir,
        &root().join("examples/two_queues.c"),
        "two_queues_run.exe",
        &[],
    );
    for driver in [DriverBuild::Pe(None), DriverBuild::Linux] {
        let m = threaded_machine(driver.clone());
        let p = ExeProcess::load(m.clone(), umd(), &exe, &[]).unwrap_or_else(|e| panic!("{e}"));
        let out = p.run().unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            (out.exit.clone(), out.stdout_text().as_str()),
            (ExitStatus::Code(0), "two_queues: ok\n"),
            "{} build; stderr: {}",
            driver.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            p.user_process().open_devices(),
            0,
            "{} build",
            driver.name()
        );
        // The DLL submitted through its doorbells, never through the kernel.
        assert_eq!(p.user_process().calls("D3DKMTCreateDoorbell"), 2);
        assert!(
            p.user_process().doorbell_rings() > 0,
            "{} build",
            driver.name()
        );
        assert_eq!(p.user_process().calls("D3DKMTSubmitCommandToHwQueue"), 0);
    }
}

/// A wrong LUID on the command line: the example names the failing call and exits with 1
/// (`__getmainargs` hands it argv; `strtoul` parses it).
#[test]
fn the_two_queues_example_reports_a_wrong_adapter_and_exits_with_1() {
    if !have_mingw() {
        return;
    }
    let dir = Scratch::new("pe_exe");
    let exe = build(
        &dir,
        &root().join("examples/two_queues.c"),
        "two_queues_luid.exe",
        &[],
    );
    let m = threaded_machine(DriverBuild::Linux);
    let out = run(&m, &exe, &["0x4242"]);
    assert_eq!(out.exit, ExitStatus::Code(1));
    assert!(
        out.stdout_text()
            .starts_with("two_queues: rvgpu_open_adapter: "),
        "{}",
        out.stdout_text()
    );
}

const PROBE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bye(void) { fprintf(stdout, "atexit ran\n"); }

int main(int argc, char **argv)
{
    if (argc < 2)
        return 99;
    if (strcmp(argv[1], "exit") == 0) {
        atexit(bye);
        exit((int)strtol(argv[2], NULL, 10));
    }
    if (strcmp(argv[1], "args") == 0) {
        int i;
        for (i = 0; i < argc; i++)
            fprintf(stdout, "[%s]", argv[i]);
        fprintf(stdout, " %lu %ld|%5.2f|%-4d|%#x\n", strtoul(argv[2], NULL, 0),
                strtol("-12", NULL, 10), 2.5, 7, 255u);
        fprintf(stderr, "to stderr\n");
        return 3;
    }
    if (strcmp(argv[1], "badptr") == 0)
        fwrite((const void *)16, 1, 4, stdout);
    if (strcmp(argv[1], "badfree") == 0) {
        char *volatile inside = argv[1] + 1;
        free(inside);
    }
    if (strcmp(argv[1], "badfmt") == 0)
        fprintf(stdout, "%s\n", (const char *)32);
    if (strcmp(argv[1], "notafile") == 0)
        fputc('x', (FILE *)argv);
    if (strcmp(argv[1], "heap") == 0) {
        volatile size_t huge = (size_t)-1;
        char *a = malloc(100), *b = calloc(10, 10);
        int ok = a != NULL && b != NULL && b[99] == 0 && calloc(huge, 16) == NULL;
        free(a);
        free(b);
        free(NULL);
        fprintf(stdout, "%s\n", ok ? "heap ok" : "heap bad");
        return 0;
    }
    return 42;
}
"#;

/// The C runtime the program imports is msvcrt's, modelled: argv from the command line,
/// `fprintf` to `stdout` and `stderr` (msvcrt's format language), `strtol`/`strtoul`, the heap,
/// `atexit` functions run by `exit`, and `exit(n)` or `main`'s return ending the process with
/// that code.
#[test]
fn a_programs_c_runtime_calls_behave_as_msvcrt() {
    if !have_mingw() {
        return;
    }
    let dir = Scratch::new("pe_exe");
    // msvcrt's own printf family (not mingw's replacement).
    let exe = program(&dir, "crt_probe", PROBE, &["-D__USE_MINGW_ANSI_STDIO=0"]);
    let m = threaded_machine(DriverBuild::Linux);
    let out = run(&m, &exe, &["exit", "7"]);
    assert_eq!(out.exit, ExitStatus::Code(7));
    assert_eq!(out.stdout_text(), "atexit ran\n");
    let out = run(&m, &exe, &["args", "0x10", "two words"]);
    assert_eq!(out.exit, ExitStatus::Code(3));
    assert_eq!(
        out.stdout_text(),
        "[crt_probe.exe][args][0x10][two words] 16 -12| 2.50|7   |0xff\n"
    );
    assert_eq!(out.stderr, b"to stderr\n");
    let out = run(&m, &exe, &["heap"]);
    assert_eq!(
        (out.exit.clone(), out.stdout_text().as_str()),
        (ExitStatus::Code(0), "heap ok\n")
    );
    let out = run(&m, &exe, &[]);
    assert_eq!(out.exit, ExitStatus::Code(99));
}

/// Attacker-style: a pointer the program hands the C runtime that it cannot use is the
/// exception the real routine would take, ending the process with its code — an access
/// violation for an unreadable buffer or string, heap corruption for a block the heap never
/// gave out, an invalid CRT parameter for what is not a stream — and never a host crash; the
/// machine goes on running the next program.
#[test]
fn a_bad_pointer_ends_the_process_not_the_host() {
    if !have_mingw() {
        return;
    }
    let dir = Scratch::new("pe_exe");
    let exe = program(
        &dir,
        "crt_probe_bad",
        PROBE,
        &["-D__USE_MINGW_ANSI_STDIO=0"],
    );
    let m = threaded_machine(DriverBuild::Linux);
    for (arg, code) in [
        ("badptr", STATUS_ACCESS_VIOLATION),
        ("badfmt", STATUS_ACCESS_VIOLATION),
        ("badfree", STATUS_HEAP_CORRUPTION),
        ("notafile", STATUS_INVALID_CRT_PARAMETER),
    ] {
        let out = run(&m, &exe, &[arg]);
        assert!(
            matches!(out.exit, ExitStatus::Exception { code: c, .. } if c == code),
            "{arg}: {:?}",
            out.exit
        );
    }
    assert_eq!(run(&m, &exe, &["none"]).exit, ExitStatus::Code(42));
}

/// An import nothing models — a system routine, or a C API function the DLL does not
/// export — fails the load with its name (the DLL's and the driver's rule): the program never
/// starts.
#[test]
fn an_unmodelled_import_fails_the_exe_load_with_its_name() {
    if !have_mingw() {
        return;
    }
    let dir = Scratch::new("pe_exe");
    let exe = program(
        &dir,
        "imports_unmodelled",
        "extern unsigned long GetTickCount(void);\nint main(void) { return (int)GetTickCount(); }\n",
        &[],
    );
    let m = threaded_machine(DriverBuild::Linux);
    let e = ExeProcess::load(m, umd(), &exe, &[]).expect_err("an unmodelled import");
    assert!(e.contains("kernel32.dll!GetTickCount"), "{e}");
    assert!(e.contains("does not implement"), "{e}");
    // A C API function the DLL does not export: the same.
    let exe = build(
        &dir,
        &root().join("examples/two_queues.c"),
        "two_queues_renamed.exe",
        &[],
    );
    let mut bytes = std::fs::read(&exe).expect("the program");
    let (from, to) = (b"rvgpu_buffer_copy\0", b"rvgpu_buffer_copX\0");
    let mut renamed = 0;
    for at in 0..bytes.len() - from.len() {
        if &bytes[at..at + from.len()] == from {
            bytes[at..at + from.len()].copy_from_slice(to);
            renamed += 1;
        }
    }
    assert!(renamed > 0);
    let path = dir.join("two_queues_renamed_import.exe");
    std::fs::write(&path, &bytes).expect("write");
    let e = ExeProcess::load(threaded_machine(DriverBuild::Linux), umd(), &path, &[])
        .expect_err("an import the DLL does not export");
    assert!(e.contains("rvgpu_umd.dll!rvgpu_buffer_copX"), "{e}");
    assert!(e.contains("does not export"), "{e}");
}

/// Reads the processor's `gs` base in a kernel-mode call (`rdmsr IA32_GS_BASE`).
fn gs_base_in_a_kernel_call() -> u64 {
    use rvgpu_simos::pe::{arena, cpu};
    static PROBE_CODE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let f = *PROBE_CODE.get_or_init(|| {
        // mov ecx, 0xC0000101; rdmsr; shl rdx, 32; or rax, rdx; ret
        let code = [
            0xB9u8, 0x01, 0x01, 0x00, 0xC0, 0x0F, 0x32, 0x48, 0xC1, 0xE2, 0x20, 0x48, 0x09, 0xD0,
            0xC3,
        ];
        let f = arena::alloc(code.len(), arena::Access::ReadWrite).expect("arena");
        // SAFETY: fresh read-write memory of at least `code.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), f as *mut u8, code.len()) };
        cpu::register_range(f, code.len(), cpu::Range::Ram);
        f
    });
    cpu::call(f, &[]).expect("the probe ran")
}

/// A program's calls point `gs` at its TEB only while they run: after the process ends (its
/// TEB freed), a kernel-mode call on the processor that ran it sees the `gs` base kernel code
/// had before, not the program's TEB.
#[test]
fn a_programs_gs_base_ends_with_its_calls() {
    if !have_mingw() {
        return;
    }
    let dir = Scratch::new("pe_exe");
    let exe = program(&dir, "crt_probe_gs", PROBE, &["-D__USE_MINGW_ANSI_STDIO=0"]);
    let m = threaded_machine(DriverBuild::Linux);
    let before = gs_base_in_a_kernel_call();
    let p = ExeProcess::load(m.clone(), umd(), &exe, &["none"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.run().expect("ran").exit, ExitStatus::Code(42));
    assert_eq!(gs_base_in_a_kernel_call(), before);
}
