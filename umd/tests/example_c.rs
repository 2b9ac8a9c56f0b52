//! `examples/two_queues.c`, the first program the README shows, is strict C99 against
//! `umd/include/rvgpu_umd.h` for the DLL's target: it compiles with mingw-w64
//! (`x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Werror -pedantic`) and uses only
//! functions the header declares.

use std::path::Path;
use std::process::Command;

#[test]
fn the_two_queues_example_compiles_for_windows_as_strict_c99() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("../examples/two_queues.c");
    let obj = std::env::temp_dir().join(format!("rvgpu_two_queues_{}.o", std::process::id()));
    let out = Command::new("x86_64-w64-mingw32-gcc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-Werror=implicit-function-declaration")
        .arg("-I")
        .arg(root.join("include"))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("mingw-w64 runs (bash scripts/setup.sh mingw)");
    let _ = std::fs::remove_file(&obj);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every rvgpu_ call it makes is declared in the header.
    let c = std::fs::read_to_string(&src).expect("the example");
    let h = std::fs::read_to_string(root.join("include/rvgpu_umd.h")).expect("the header");
    let calls: Vec<&str> = c
        .split("rvgpu_")
        .skip(1)
        .filter_map(|rest| {
            let end = rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))?;
            rest[end..].starts_with('(').then(|| &rest[..end])
        })
        .collect();
    assert!(calls.len() > 10, "{calls:?}");
    for f in calls {
        assert!(
            h.contains(&format!("rvgpu_{f}(")),
            "rvgpu_{f} is not in rvgpu_umd.h"
        );
    }
}
