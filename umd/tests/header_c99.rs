//! `umd/include/rvgpu_umd.h` is plain C99: it compiles with `-std=c99 -Wall -Wextra -Werror
//! -pedantic`, its structures have the sizes and field offsets of the Rust declarations in
//! `capi.rs`, and every `RVGPU_*` constant of capi.rs has its `#define` with the same value
//! (tests/umd_header.rs checks the function signatures and status values).

use std::collections::BTreeMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use rvgpu_umd::capi::{
    RvgpuBufferStatus, RvgpuDeviceStatus, RvgpuFenceLogEntry, RvgpuFenceValue, RvgpuQueueDesc,
    RvgpuQueueStatus, RvgpuSubmitDesc,
};

fn header_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// `(C expression, value)` pairs the compiled program checks at compile time.
fn layout_checks() -> Vec<(String, usize)> {
    let mut v = Vec::new();
    macro_rules! s {
        ($t:ident $(, $f:ident)*) => {
            v.push((format!("sizeof({})", stringify!($t)), size_of::<$t>()));
            $(v.push((
                format!("offsetof({}, {})", stringify!($t), stringify!($f)),
                offset_of!($t, $f),
            ));)*
        };
    }
    s!(RvgpuQueueDesc, node, kind, priority, ring_size);
    s!(RvgpuFenceValue, fence, value);
    s!(
        RvgpuSubmitDesc,
        commands,
        dword_count,
        waits,
        wait_count,
        signals,
        signal_count
    );
    s!(
        RvgpuQueueStatus,
        submitted,
        completed,
        dropped_log_entries,
        kind,
        lost,
        queue_id
    );
    s!(RvgpuDeviceStatus, lost, reset_count);
    s!(RvgpuBufferStatus, gpu_va, renames, lock_waits, backings);
    s!(
        RvgpuFenceLogEntry,
        value,
        cpu_timestamp,
        queue_id,
        kind,
        index,
        logged,
        os_fence
    );
    v
}

#[test]
fn header_compiles_as_strict_c99_with_the_rust_layouts() {
    let dir = std::env::temp_dir().join(format!("rvgpu-umd-c99-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = String::from("#include <stddef.h>\n#include \"rvgpu_umd.h\"\n");
    for (i, (expr, value)) in layout_checks().iter().enumerate() {
        // C99 has no _Static_assert: an array of negative size fails the build instead.
        c.push_str(&format!(
            "typedef char rvgpu_check_{i}[({expr} == {value}) ? 1 : -1];\n"
        ));
    }
    c.push_str(
        "int main(void) {\n    RvgpuStatus s = RVGPU_STATUS_INVALID_HANDLE;\n    \
         return s == RVGPU_STATUS_OK;\n}\n",
    );
    let src = dir.join("check.c");
    std::fs::write(&src, c).unwrap();
    let out = Command::new("cc")
        .args([
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-c",
            "-o",
        ])
        .arg(dir.join("check.o"))
        .arg("-I")
        .arg(header_dir())
        .arg(&src)
        .output()
        .expect("a C compiler (cc) runs");
    assert!(
        out.status.success(),
        "rvgpu_umd.h does not compile as C99 with the Rust layouts:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn parse(v: &str) -> u64 {
    let v = v.trim().trim_end_matches(';').trim_end_matches('u');
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16).unwrap(),
        None => v.replace('_', "").parse().unwrap(),
    }
}

#[test]
fn every_constant_has_its_define_with_the_same_value() {
    let src =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/capi.rs")).unwrap();
    let rust: BTreeMap<String, u64> = src
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub const RVGPU_"))
        .map(|l| {
            let (n, v) = l.split_once('=').unwrap();
            let name = n.split(':').next().unwrap().trim();
            (format!("RVGPU_{name}"), parse(v))
        })
        .collect();
    let h = std::fs::read_to_string(header_dir().join("rvgpu_umd.h")).unwrap();
    let header: BTreeMap<String, u64> = h
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("#define RVGPU_"))
        .filter(|l| !l.starts_with("UMD_H"))
        .map(|l| {
            let (n, v) = l.split_once(char::is_whitespace).unwrap();
            (format!("RVGPU_{n}"), parse(v))
        })
        .collect();
    assert!(rust.len() >= 10, "capi.rs: {rust:?}");
    assert_eq!(rust, header, "RVGPU_* constants (Rust vs header)");
}
