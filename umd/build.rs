//! Build script of the user-mode driver: for the Windows DLL (`--features dll` on
//! x86_64-pc-windows-msvc, scripts/package.sh) it writes the DLL's version resource
//! (`VS_VERSION_INFO`, ../build/version_res.rs) and hands it to the linker, stamped with the
//! same version as rvgpu.sys and the INF's `DriverVer`. Any other build gets nothing.

#[allow(dead_code)] // the driver image's constants
#[path = "../build/version_res.rs"]
mod version_res;

use std::env;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../build/version_res.rs");
    let windows_msvc = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|v| v == "windows")
        && env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|v| v == "msvc");
    if !windows_msvc || env::var_os("CARGO_FEATURE_DLL").is_none() {
        return;
    }
    let cargo_version = env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let Some(version) = version_res::version_from_cargo(&cargo_version) else {
        println!(
            "cargo::warning=rvgpu-umd: version {cargo_version:?} is not a.b.c with 16-bit parts"
        );
        std::process::exit(1);
    };
    let res = version_res::res_file(&version_res::ImageVersion {
        version,
        file_type: version_res::VFT_DLL,
        file_subtype: 0,
        file_name: "rvgpu_umd.dll",
        description: "rvgpu user-mode driver",
    });
    let path = std::path::Path::new(&env::var("OUT_DIR").unwrap_or_default()).join("rvgpu_umd.res");
    if let Err(e) = std::fs::write(&path, res) {
        println!(
            "cargo::warning=rvgpu-umd: cannot write {}: {e}",
            path.display()
        );
        std::process::exit(1);
    }
    println!("cargo::rustc-link-arg={}", path.display());
}
