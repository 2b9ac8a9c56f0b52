//! BR-14 on the packaging side: one version for the INF's `DriverVer` and the images'
//! `VS_VERSION_INFO` FILEVERSION (Dxgkrnl fails AddDevice when they differ and either major is
//! 21 or more; docs/windows-bringup.md BR-14). scripts/package.sh stamps the INF, build.rs and
//! umd/build.rs write the resources with build/version_res.rs; the images' resources are read
//! back by `simos/tests/kmd_version.rs` as Dxgkrnl reads them, and `rvgpu-cat check` refuses a
//! package whose images do not carry DriverVer (tested here on small PE32+ files the test
//! makes with the resource the build scripts write).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

#[allow(dead_code)]
#[path = "../build/version_res.rs"]
mod version_res;

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

use std::path::Path;
use std::process::Command;

use rvgpu_cat::{check_file_versions, driver_ver_version, read_inf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The version part of the DriverVer scripts/package.sh writes.
fn stamped_driver_ver() -> String {
    let dir = Scratch::new("stamped-inf");
    let out = dir.join("rvgpu.inf");
    let status = Command::new("bash")
        .arg(root().join("scripts/package.sh"))
        .arg("--stamp-inf")
        .arg(&out)
        .env("RVGPU_DRIVER_DATE", "01/02/2030")
        .status()
        .expect("running scripts/package.sh --stamp-inf");
    assert!(status.success(), "package.sh --stamp-inf: {status}");
    let inf = std::fs::read_to_string(&out).unwrap();
    let line = inf
        .lines()
        .find(|l| l.starts_with("DriverVer"))
        .expect("a DriverVer line");
    let value = line.split_once('=').unwrap().1.trim();
    let (date, version) = value.split_once(',').unwrap();
    assert_eq!(date, "01/02/2030");
    version.to_owned()
}

/// Reads `dwFileVersionMS` / `LS` out of a `VS_VERSION_INFO` block.
fn fixed_file_version(block: &[u8]) -> [u16; 4] {
    let key: Vec<u8> = "VS_VERSION_INFO\0"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    assert_eq!(&block[6..6 + key.len()], key.as_slice(), "key");
    let word = |at: usize| u32::from_le_bytes(block[at..at + 4].try_into().unwrap());
    assert_eq!(
        word(40),
        version_res::VS_FFI_SIGNATURE,
        "VS_FIXEDFILEINFO signature"
    );
    let (ms, ls) = (word(48), word(52));
    [(ms >> 16) as u16, ms as u16, (ls >> 16) as u16, ls as u16]
}

#[test]
fn br_14_driver_ver_is_the_version_stamped_into_the_images() {
    let driver_ver = stamped_driver_ver();
    let version = version_res::version_from_cargo(env!("CARGO_PKG_VERSION"))
        .expect("the workspace version is a.b.c");
    assert_eq!(driver_ver, version_res::dotted(version));
    for (file_type, name) in [
        (version_res::VFT_DRV, "rvgpu.sys"),
        (version_res::VFT_DLL, "rvgpu_umd.dll"),
    ] {
        let block = version_res::version_info(&version_res::ImageVersion {
            version,
            file_type,
            file_subtype: 0,
            file_name: name,
            description: name,
        });
        assert_eq!(
            usize::from(u16::from_le_bytes([block[0], block[1]])),
            block.len()
        );
        assert!(block.len() >= 0x5C, "Dxgkrnl needs at least 0x5C bytes");
        assert_eq!(version_res::dotted(fixed_file_version(&block)), driver_ver);
    }
}

/// The `.res` file starts with the empty entry lld-link (and cvtres) look for, then one
/// `RT_VERSION` #1 entry holding the block.
#[test]
fn br_14_version_res_file_is_well_formed() {
    let v = version_res::ImageVersion {
        version: [1, 2, 3, 4],
        file_type: version_res::VFT_DRV,
        file_subtype: version_res::VFT2_DRV_DISPLAY,
        file_name: "rvgpu.sys",
        description: "d",
    };
    let res = version_res::res_file(&v);
    let mut null = vec![0u8; 32];
    null[4] = 0x20;
    null[8..10].copy_from_slice(&[0xFF, 0xFF]);
    null[12..14].copy_from_slice(&[0xFF, 0xFF]);
    assert_eq!(&res[..32], null.as_slice(), "empty first entry");
    let size = u32::from_le_bytes(res[32..36].try_into().unwrap()) as usize;
    assert_eq!(u32::from_le_bytes(res[36..40].try_into().unwrap()), 32);
    assert_eq!(&res[40..44], &[0xFF, 0xFF, 16, 0], "RT_VERSION");
    assert_eq!(&res[44..48], &[0xFF, 0xFF, 1, 0], "name 1");
    let data = &res[64..64 + size];
    assert_eq!(fixed_file_version(data), [1, 2, 3, 4]);
    assert_eq!(res.len() % 4, 0);
}

/// A PE32+ file whose only section, `.rsrc` at RVA 0x1000, holds an `RT_VERSION` #1 resource
/// (language 0x409) with `version` as its file version; `None`: an empty resource directory.
fn image(version: Option<[u16; 4]>) -> Vec<u8> {
    let mut rsrc = Vec::new();
    let dir = |rsrc: &mut Vec<u8>, id: u32, target: u32| {
        rsrc.extend_from_slice(&[0u8; 12]);
        rsrc.extend_from_slice(&0u16.to_le_bytes()); // named entries
        rsrc.extend_from_slice(&1u16.to_le_bytes()); // ID entries
        rsrc.extend_from_slice(&id.to_le_bytes());
        rsrc.extend_from_slice(&target.to_le_bytes());
    };
    if let Some(v) = version {
        let block = version_res::version_info(&version_res::ImageVersion {
            version: v,
            file_type: version_res::VFT_DRV,
            file_subtype: version_res::VFT2_DRV_DISPLAY,
            file_name: "rvgpu.sys",
            description: "test",
        });
        dir(&mut rsrc, 16, 0x8000_0018); // type 16 → name directory at 24
        dir(&mut rsrc, 1, 0x8000_0030); // name 1 → language directory at 48
        dir(&mut rsrc, 0x409, 0x48); // language → data entry at 72
        rsrc.extend_from_slice(&(0x1000u32 + 88).to_le_bytes());
        rsrc.extend_from_slice(&(block.len() as u32).to_le_bytes());
        rsrc.extend_from_slice(&[0u8; 8]);
        rsrc.extend_from_slice(&block);
    } else {
        rsrc.extend_from_slice(&[0u8; 16]);
    }
    let raw = rsrc.len().div_ceil(0x200) * 0x200;
    rsrc.resize(raw, 0);
    let mut f = vec![0u8; 0x200];
    f[0..2].copy_from_slice(b"MZ");
    f[0x3C..0x40].copy_from_slice(&0x40u32.to_le_bytes());
    f[0x40..0x44].copy_from_slice(b"PE\0\0");
    let fh = 0x44;
    f[fh..fh + 2].copy_from_slice(&0x8664u16.to_le_bytes());
    f[fh + 2..fh + 4].copy_from_slice(&1u16.to_le_bytes());
    f[fh + 16..fh + 18].copy_from_slice(&240u16.to_le_bytes());
    f[fh + 18..fh + 20].copy_from_slice(&0x2022u16.to_le_bytes());
    let opt = 0x58;
    f[opt..opt + 2].copy_from_slice(&0x20Bu16.to_le_bytes());
    f[opt + 108..opt + 112].copy_from_slice(&16u32.to_le_bytes());
    f[opt + 128..opt + 132].copy_from_slice(&0x1000u32.to_le_bytes());
    f[opt + 132..opt + 136].copy_from_slice(&(raw as u32).to_le_bytes());
    let s = opt + 240;
    f[s..s + 5].copy_from_slice(b".rsrc");
    f[s + 8..s + 12].copy_from_slice(&(raw as u32).to_le_bytes());
    f[s + 12..s + 16].copy_from_slice(&0x1000u32.to_le_bytes());
    f[s + 16..s + 20].copy_from_slice(&(raw as u32).to_le_bytes());
    f[s + 20..s + 24].copy_from_slice(&0x200u32.to_le_bytes());
    f.extend_from_slice(&rsrc);
    f
}

fn package(name: &str, driver_ver: &str, sys: &[u8]) -> (Scratch, rvgpu_cat::InfFacts) {
    let dir = Scratch::new(name);
    let inf = format!(
        "[Version]\nDriverVer = {driver_ver}\nCatalogFile = rvgpu.cat\n\n\
         [SourceDisksFiles]\nrvgpu.sys = 1\n"
    );
    std::fs::write(dir.join("rvgpu.inf"), &inf).unwrap();
    std::fs::write(dir.join("rvgpu.sys"), sys).unwrap();
    (dir, read_inf(&inf))
}

#[test]
fn br_14_reader_reads_what_the_build_scripts_write() {
    assert_eq!(
        version_res::read_file_version(&image(Some([31, 0, 101, 5590]))),
        Ok(0x001F_0000_0065_15D6)
    );
    assert_eq!(version_res::read_file_version(&image(None)), Ok(0));
    assert!(version_res::read_file_version(b"MZ").is_err());
    // Every truncation of a valid image is read without a panic.
    let full = image(Some([1, 2, 3, 4]));
    for n in 0..full.len() {
        let _ = version_res::read_file_version(&full[..n]);
    }
}

#[test]
fn br_14_package_check_wants_driver_ver_as_file_version() {
    assert_eq!(
        driver_ver_version("01/02/2030,25.1.2.3"),
        Some(0x0019_0001_0002_0003)
    );
    assert_eq!(driver_ver_version("01/02/2030,25.1.2"), None);
    let (dir, facts) = package(
        "versions-match",
        "01/02/2030,25.1.2.3",
        &image(Some([25, 1, 2, 3])),
    );
    assert_eq!(check_file_versions(&dir, &facts), Vec::<String>::new());
    let (dir, facts) = package(
        "versions-differ",
        "01/02/2030,25.1.2.3",
        &image(Some([25, 1, 2, 4])),
    );
    let problems = check_file_versions(&dir, &facts);
    assert!(
        problems.len() == 1 && problems[0].contains("25.1.2.4"),
        "{problems:?}"
    );
    let (dir, facts) = package("versions-none", "01/02/2030,0.1.0.0", &image(None));
    let problems = check_file_versions(&dir, &facts);
    assert!(
        problems.len() == 1 && problems[0].contains("no VS_VERSION_INFO"),
        "{problems:?}"
    );
}
