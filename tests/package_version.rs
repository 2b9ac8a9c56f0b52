//! BR-14 on the packaging side: one version for the INF's `DriverVer` and the images'
//! `VS_VERSION_INFO` FILEVERSION (Dxgkrnl fails AddDevice when they differ and either major is
//! 21 or more; docs/windows-bringup.md BR-14). scripts/package.sh stamps the INF, build.rs and
//! umd/build.rs write the resources with build/version_res.rs; the images' resources are read
//! back by `simos/tests/kmd_version.rs` as Dxgkrnl reads them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

#[allow(dead_code)]
#[path = "../build/version_res.rs"]
mod version_res;

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The version part of the DriverVer scripts/package.sh writes.
fn stamped_driver_ver() -> String {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stamped-rvgpu.inf");
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
