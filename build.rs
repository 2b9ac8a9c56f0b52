//! Build script of the driver image (rvgpu.sys).
//!
//! 1. Link settings of the Windows kernel image (x86_64-pc-windows-msvc only; the host build
//!    of this crate is a plain rlib and gets nothing). They apply to the `cdylib` the
//!    packaging step builds (`cargo rustc -p rvgpu --profile driver --target
//!    x86_64-pc-windows-msvc --crate-type cdylib`, see scripts/package.sh):
//!    - `/DRIVER`, `/SUBSYSTEM:NATIVE`: a kernel-mode image;
//!    - `/ENTRY:DriverEntry`: no CRT startup code; the kernel calls `DriverEntry` directly;
//!    - `/NODEFAULTLIB`: no C runtime or user-mode import libraries; every import is declared
//!      by the crate itself (`raw-dylib`, ntoskrnl.exe only);
//!    - `/NXCOMPAT`, `/DYNAMICBASE`: NX-compatible, relocatable (HVCI and KASLR need both);
//!    - `/DEBUG:FULL` + `/PDBALTPATH:%_PDB%`: a PDB, named in the debug directory by file
//!      name only (`rvgpu.pdb`), not by the build machine's path;
//!    - `/OPT:REF,ICF`: drop unreferenced code (lld's default with /DEBUG is to keep it);
//!    - `/RELEASE`: set the PE checksum, which the kernel checks for boot-start drivers and
//!      driver verification tools expect on every driver.
//!
//!    Not set: `/INTEGRITYCHECK` (FORCE_INTEGRITY). It is only required of drivers that use
//!    ObRegisterCallbacks, PsSetCreateProcessNotifyRoutineEx and similar callbacks, which this
//!    driver does not, and it would make the image refuse to load with a test signature on
//!    some configurations. docs/windows.md has the details.
//!
//!    The image's version resource (`VS_VERSION_INFO`) is linked in as a `.res` file written
//!    here (build/version_res.rs): its `FILEVERSION` is the INF's `DriverVer`, as Dxgkrnl
//!    requires when it adds the device (docs/windows-bringup.md BR-14).
//!
//! 2. With `--features wdk-layout-check` and Microsoft's headers (`RVGPU_WDK_INCLUDE`, else an
//!    installed WDK): bindgen over dispmprt.h and d3dkmddi.h, and compile-time assertions that
//!    every `rvgpu-ddi` type and integer constant has the headers' size, alignment, field
//!    offsets and value (generator: build/layout_gen.rs, unit-tested by tests/layout_gen.rs;
//!    docs/windows.md, "Layouts checked against Microsoft's headers"). Without headers this
//!    step is skipped without a word.

// Host build tooling, not kernel code: the kernel no-panic lints do not apply.
#[allow(
    dead_code, // parts are used only by the wdk-layout-check feature
    clippy::string_slice,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
#[path = "build/layout_gen.rs"]
mod layout_gen;

// Host build tooling too (see above).
#[allow(
    dead_code, // the constants the other image's build script uses
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
#[path = "build/version_res.rs"]
mod version_res;

use std::env;

/// Linker arguments of the kernel image (see the module documentation for each).
const DRIVER_LINK_ARGS: &[&str] = &[
    "/DRIVER",
    "/SUBSYSTEM:NATIVE,10.00",
    "/ENTRY:DriverEntry",
    "/NODEFAULTLIB",
    "/NXCOMPAT",
    "/DYNAMICBASE",
    "/DEBUG:FULL",
    "/PDBALTPATH:%_PDB%",
    "/OPT:REF,ICF",
    "/RELEASE",
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=build/layout_gen.rs");
    println!("cargo::rerun-if-changed=build/version_res.rs");
    println!("cargo::rerun-if-env-changed=WDKContentRoot");
    println!("cargo::rerun-if-env-changed=RVGPU_WDK_INCLUDE");
    println!("cargo::rustc-check-cfg=cfg(wdk_layout_check)");
    println!("cargo::rustc-check-cfg=cfg(kernel_image)");

    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os == "windows" && target_env == "msvc" {
        // The driver image is built for the MSVC target only. Other Windows targets (the
        // harness executable, x86_64-pc-windows-gnu) link this crate as a plain user-mode
        // library: no kernel runtime, no ntoskrnl imports.
        println!("cargo::rustc-cfg=kernel_image");
        for arg in DRIVER_LINK_ARGS {
            // `rustc-link-arg`, not `rustc-cdylib-link-arg`: the package declares only an
            // rlib (so host builds never try to link a no_std cdylib); the cdylib is requested
            // on the command line, which cargo's per-crate-type variant does not see.
            println!("cargo::rustc-link-arg={arg}");
        }
        version_resource();
    }

    #[cfg(feature = "wdk-layout-check")]
    wdk::layout_check();
}

/// Writes the image's version resource (`rvgpu.res`, build/version_res.rs) and hands it to the
/// linker: `FILEVERSION` = the workspace version with a build number of 0, the version
/// scripts/package.sh stamps into the INF's `DriverVer`.
fn version_resource() {
    let cargo_version = env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let Some(version) = version_res::version_from_cargo(&cargo_version) else {
        println!("cargo::warning=rvgpu: version {cargo_version:?} is not a.b.c with 16-bit parts");
        std::process::exit(1);
    };
    let res = version_res::res_file(&version_res::ImageVersion {
        version,
        file_type: version_res::VFT_DRV,
        file_subtype: version_res::VFT2_DRV_DISPLAY,
        file_name: "rvgpu.sys",
        description: "rvgpu display miniport (WDDM 3.2, render only)",
    });
    let path = std::path::Path::new(&env::var("OUT_DIR").unwrap_or_default()).join("rvgpu.res");
    if let Err(e) = std::fs::write(&path, res) {
        println!("cargo::warning=rvgpu: cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
    println!("cargo::rustc-link-arg={}", path.display());
}

#[cfg(feature = "wdk-layout-check")]
mod wdk {
    //! Header root: `RVGPU_WDK_INCLUDE` if set (a directory holding `km`, `shared`, `um` and
    //! `ucrt`, i.e. one `Include\10.x` of a kit or an extracted copy of one; on any host).
    //! Else WDK detection as windows-drivers-rs' `wdk-build` does it: `WDKContentRoot` (set by
    //! the eWDK's LaunchBuildEnv.cmd and by VS developer prompts), then the installed kits root
    //! from the registry, then the default install path; the newest `Include\10.*` that has
    //! `km\d3dkmddi.h` wins (d3dkmddi.h lives in `shared` in newer kits, `km` in older).

    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::{env, fs};

    use super::layout_gen;

    fn kits_root() -> Option<PathBuf> {
        if let Some(root) = env::var_os("WDKContentRoot") {
            return Some(PathBuf::from(root));
        }
        if cfg!(windows) {
            let out = Command::new("reg")
                .args([
                    "query",
                    r"HKLM\SOFTWARE\Microsoft\Windows Kits\Installed Roots",
                    "/v",
                    "KitsRoot10",
                ])
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout);
            if let Some(path) = text
                .lines()
                .find(|l| l.contains("KitsRoot10"))
                .and_then(|l| l.split("REG_SZ").nth(1))
            {
                return Some(PathBuf::from(path.trim()));
            }
            let default = PathBuf::from(r"C:\Program Files (x86)\Windows Kits\10");
            return default.is_dir().then_some(default);
        }
        None
    }

    fn has_ddi_header(include: &Path) -> bool {
        ["km", "shared"]
            .iter()
            .any(|d| include.join(d).join("d3dkmddi.h").is_file())
    }

    fn include_dir(root: &Path) -> Option<PathBuf> {
        let mut versions: Vec<PathBuf> = fs::read_dir(root.join("Include"))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| has_ddi_header(p))
            .collect();
        versions.sort();
        versions.pop()
    }

    pub fn layout_check() {
        let explicit = env::var_os("RVGPU_WDK_INCLUDE").map(PathBuf::from);
        let include = match explicit {
            Some(dir) if has_ddi_header(&dir) => dir,
            Some(dir) => {
                // Asked for explicitly: say why nothing is checked instead of passing quietly.
                println!(
                    "cargo::warning=wdk-layout-check: RVGPU_WDK_INCLUDE={} has no km/ or shared/ d3dkmddi.h",
                    dir.display()
                );
                return;
            }
            None => match kits_root().and_then(|r| include_dir(&r)) {
                Some(dir) => dir,
                None => return, // No WDK: skip quietly.
            },
        };
        let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
        let ddi_src = manifest.join("driver").join("ddi").join("src");
        println!("cargo::rerun-if-changed={}", ddi_src.display());
        let header = "#include <ntddk.h>\n#include <dispmprt.h>\n#include <d3dkmddi.h>\n";
        let bindings = bindgen::Builder::default()
            .header_contents("rvgpu_wdk.h", header)
            .clang_args([
                "--target=x86_64-pc-windows-msvc".to_string(),
                "-fms-extensions".to_string(),
                "-fms-compatibility".to_string(),
                "-D_AMD64_".to_string(),
                "-D_WIN64".to_string(),
                "-D_KERNEL_MODE".to_string(),
                "-DDXGKDDI_INTERFACE_VERSION=0x11007".to_string(),
                format!("-I{}", include.join("km").display()),
                format!("-I{}", include.join("km").join("crt").display()),
                format!("-I{}", include.join("shared").display()),
            ])
            .layout_tests(true)
            // Enumerators under their own names, as rvgpu-ddi declares them.
            .prepend_enum_name(false)
            .derive_debug(false)
            .generate_comments(false)
            .generate();
        let bindings = match bindings {
            Ok(b) => b.to_string(),
            Err(e) => {
                println!("cargo::warning=wdk-layout-check: bindgen failed on the WDK headers: {e}");
                return;
            }
        };
        let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap_or_default());
        // Kept for reading when an assertion fails (what bindgen made of the headers).
        let _ = fs::write(out_dir.join("wdk_bindings.rs"), &bindings);
        let wdk = layout_gen::parse_bindgen(&bindings);
        let (ddi, consts) = layout_gen::scan_ddi_dir(&ddi_src);
        let mut generated = layout_gen::generate(&wdk, &ddi, "rvgpu_ddi");
        let missing = layout_gen::generate_consts(&wdk, &consts, "rvgpu_ddi", &mut generated);
        let mut report = format!(
            "headers: {}\nassertions: {}\n",
            include.display(),
            generated.assertions
        );
        let sections = [
            ("compared types", &generated.checked),
            ("not compared", &generated.unchecked),
            ("constants not in these headers", &missing),
        ];
        for (title, lines) in sections {
            report.push_str(&format!("\n# {title} ({})\n", lines.len()));
            for line in lines {
                report.push_str(line);
                report.push('\n');
            }
        }
        let _ = fs::write(out_dir.join("wdk_layout_report.txt"), report);
        if fs::write(out_dir.join("wdk_layout.rs"), generated.code).is_ok() {
            println!("cargo::rustc-cfg=wdk_layout_check");
        }
        println!(
            "cargo::warning=wdk-layout-check: {} assertions over {} types; {} items not compared \
             (list: {})",
            generated.assertions,
            generated.checked.len(),
            generated.unchecked.len(),
            out_dir.join("wdk_layout_report.txt").display()
        );
    }
}
