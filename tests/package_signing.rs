//! The test-signed package made on Linux (`scripts/package.sh --test-sign`).
//!
//! Builds the package once per test binary into a temporary directory, with a certificate made
//! there, then checks what Windows will check at `pnputil /add-driver`: the images and the
//! catalog carry Authenticode signatures that verify against the test certificate
//! (`osslsigncode verify`), the catalog lists exactly the INF and the files it copies, each
//! under its SHA-1 and SHA-256 hash, and a file changed after signing is caught.
//!
//! osslsigncode and openssl are Debian packages; when one is missing the set-up installs it as
//! root with apt-get, or fails at once saying which command to run.

// Host-side test code: the kernel no-panic lints do not apply.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

#[path = "common/setup.rs"]
mod setup;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use sha1::Sha1;
use sha2::{Digest, Sha256};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tmp() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("package_signing")
}

/// The signed package, built once, and the certificate (PEM) it was signed with.
fn package() -> &'static (PathBuf, PathBuf) {
    static DIR: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIR.get_or_init(|| {
        setup::require(&["osslsigncode", "openssl", "mingw"]);
        let out = tmp().join("package");
        let cert_dir = tmp().join("cert");
        let status = Command::new("bash")
            .arg(root().join("scripts/package.sh"))
            .args(["--test-sign", "--cert-dir"])
            .arg(&cert_dir)
            .arg(&out)
            .env("CARGO", env!("CARGO"))
            .current_dir(root())
            .status()
            .expect("run scripts/package.sh --test-sign");
        assert!(
            status.success(),
            "scripts/package.sh --test-sign failed: {status}"
        );
        (out, cert_dir.join("rvgpu-test.pem"))
    })
}

fn osslsigncode_verify(cert: &Path, args: &[&Path]) -> Output {
    let mut cmd = Command::new("osslsigncode");
    cmd.arg("verify").arg("-CAfile").arg(cert);
    for (i, a) in args.iter().enumerate() {
        // Paths come in pairs with their option: [-catalog CAT] -in FILE.
        if args.len() == 2 && i == 0 {
            cmd.arg("-catalog");
        } else {
            cmd.arg("-in");
        }
        cmd.arg(a);
    }
    cmd.output().expect("run osslsigncode")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The digest osslsigncode computes for a PE image ("Calculated message digest"): the
/// Authenticode hash by an implementation other than rvgpu-cat's.
fn osslsigncode_digest(out: &str) -> Vec<u8> {
    let line = out
        .lines()
        .find(|l| l.starts_with("Calculated message digest"))
        .unwrap_or_else(|| panic!("no calculated digest in:\n{out}"));
    let hex = line.split(':').nth(1).unwrap().trim();
    hex.as_bytes()
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

#[test]
fn osslsigncode_accepts_the_images_and_the_catalog() {
    let (dir, cert) = package();
    for name in ["rvgpu.sys", "rvgpu_umd.dll", "rvgpu.cat"] {
        let o = osslsigncode_verify(cert, &[&dir.join(name)]);
        let t = text(&o);
        assert!(o.status.success(), "osslsigncode verify {name}:\n{t}");
        assert!(
            t.contains("Signature verification: ok")
                && t.contains("Subject: /CN=rvgpu test signing"),
            "{name} is not signed by the test certificate:\n{t}"
        );
        assert!(
            t.contains("Message digest algorithm: SHA256"),
            "{name} is not signed with SHA-256:\n{t}"
        );
    }
    // The images are found in the catalog: what Windows checks at installation.
    for name in ["rvgpu.sys", "rvgpu_umd.dll"] {
        let o = osslsigncode_verify(cert, &[&dir.join("rvgpu.cat"), &dir.join(name)]);
        let t = text(&o);
        assert!(
            o.status.success() && t.contains("File is signed in catalog"),
            "osslsigncode does not find {name} in rvgpu.cat:\n{t}"
        );
    }
}

#[test]
fn the_catalog_lists_exactly_the_inf_files_with_their_hashes() {
    let (dir, cert) = package();
    let catalog = rvgpu_cat::read_catalog(&std::fs::read(dir.join("rvgpu.cat")).unwrap())
        .expect("rvgpu.cat parses as a catalog");
    assert_eq!(catalog.signers, 1, "one signature");
    assert_eq!(
        catalog.subject_algorithm,
        rvgpu_cat::oid::CATALOG_LIST_MEMBER2
    );

    // The INF and what its [SourceDisksFiles] names, nothing else (no PDB, no harness).
    let inf = std::fs::read_to_string(dir.join("rvgpu.inf")).unwrap();
    let facts = rvgpu_cat::read_inf(&inf);
    let mut expected: BTreeSet<String> = facts.source_files.iter().cloned().collect();
    expected.insert("rvgpu.inf".to_string());
    assert_eq!(
        expected,
        ["rvgpu.inf", "rvgpu.sys", "rvgpu_umd.dll"]
            .map(String::from)
            .into(),
        "the INF copies other files than this test knows"
    );
    let names: BTreeSet<String> = catalog
        .members
        .iter()
        .map(|m| m.file.clone().expect("every member has a File attribute"))
        .collect();
    assert_eq!(names, expected, "files in the catalog");
    assert_eq!(
        catalog.members.len(),
        2 * expected.len(),
        "two members a file"
    );

    for name in &expected {
        let data = std::fs::read(dir.join(name)).unwrap();
        let (sha1, sha256) = if name.ends_with(".inf") {
            (Sha1::digest(&data).to_vec(), Sha256::digest(&data).to_vec())
        } else {
            // SHA-256 as osslsigncode computes it; SHA-1 by rvgpu-cat, whose hashed ranges the
            // SHA-256 comparison checks.
            let o = osslsigncode_verify(cert, &[&dir.join(name)]);
            let theirs = osslsigncode_digest(&text(&o));
            let ours = rvgpu_cat::hash_file(name, &data);
            assert!(ours.pe, "{name} is hashed as a PE image");
            assert_eq!(
                rvgpu_cat::hex(&ours.sha256),
                rvgpu_cat::hex(&theirs),
                "{name}: Authenticode SHA-256"
            );
            (ours.sha1, theirs)
        };
        let of = |tag: &[u8]| {
            catalog
                .members
                .iter()
                .find(|m| m.tag == tag && m.file.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("{name}: no member tagged {}", rvgpu_cat::hex(tag)))
        };
        let m1 = of(&sha1);
        let m256 = of(&sha256);
        for m in [m1, m256] {
            assert_eq!(m.os_attr.as_deref(), Some("2:10.0"), "{name}: OSAttr");
            assert!(m.member_info2, "{name}: CAT_MEMBERINFO2");
        }
        let subject = if name.ends_with(".inf") {
            rvgpu_cat::Subject::Flat
        } else {
            rvgpu_cat::Subject::PeImage
        };
        assert_eq!(
            m256.digest,
            Some((subject, rvgpu_cat::oid::SHA256, sha256.clone())),
            "{name}: indirect data of the SHA-256 member"
        );
    }

    let attrs = &catalog.attributes;
    assert!(
        attrs.contains(&("OS".into(), rvgpu_cat::CATALOG_OS.into())),
        "OS attribute: {attrs:?}"
    );
    assert!(
        attrs.contains(&("HWID1".into(), "pci\\ven_1234&dev_5256".into())),
        "HWID1 attribute: {attrs:?}"
    );
    assert_eq!(
        rvgpu_cat::check_package(dir, "rvgpu.inf", &catalog),
        Vec::<String>::new()
    );
}

#[test]
fn the_inf_names_the_catalog_and_carries_the_package_version() {
    let (dir, _) = package();
    let facts = rvgpu_cat::read_inf(&std::fs::read_to_string(dir.join("rvgpu.inf")).unwrap());
    let cat = facts.catalog_file.expect("CatalogFile in [Version]");
    assert_eq!(cat, "rvgpu.cat");
    assert!(dir.join(&cat).is_file(), "the INF's catalog {cat} is there");
    let driver_ver = facts.driver_ver.expect("DriverVer in [Version]");
    let (date, version) = driver_ver
        .split_once(',')
        .expect("DriverVer = date,version");
    assert_eq!(
        version,
        format!("{}.0", env!("CARGO_PKG_VERSION")),
        "DriverVer version"
    );
    let parts: Vec<&str> = date.split('/').collect();
    assert!(
        parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()),
        "DriverVer date {date:?} is not MM/DD/YYYY"
    );
}

#[test]
fn the_certificate_for_the_test_machine_is_the_signer_and_has_no_key() {
    let (dir, cert) = package();
    let der = Command::new("openssl")
        .args(["x509", "-outform", "DER", "-in"])
        .arg(cert)
        .output()
        .unwrap();
    assert!(der.status.success());
    assert_eq!(
        std::fs::read(dir.join("rvgpu-test.cer")).unwrap(),
        der.stdout,
        "rvgpu-test.cer is the signing certificate in DER"
    );
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            !name.ends_with(".key") && !name.ends_with(".pem") && !name.ends_with(".pfx"),
            "{name}: no key material in the package"
        );
    }
}

#[test]
fn a_modified_driver_image_fails_the_check() {
    let (dir, cert) = package();
    let copy = tmp().join("tampered");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(&copy).unwrap();
    for name in ["rvgpu.inf", "rvgpu.sys", "rvgpu_umd.dll", "rvgpu.cat"] {
        std::fs::copy(dir.join(name), copy.join(name)).unwrap();
    }
    // One byte in the middle of the image (code or data, inside what the hash covers).
    let sys = copy.join("rvgpu.sys");
    let mut data = std::fs::read(&sys).unwrap();
    let at = data.len() / 2;
    data[at] ^= 0x01;
    std::fs::write(&sys, &data).unwrap();

    let o = osslsigncode_verify(cert, &[&copy.join("rvgpu.cat"), &sys]);
    assert!(
        !o.status.success(),
        "osslsigncode still finds the modified rvgpu.sys in the catalog:\n{}",
        text(&o)
    );
    let o = osslsigncode_verify(cert, &[&sys]);
    assert!(
        !o.status.success(),
        "the modified rvgpu.sys still verifies:\n{}",
        text(&o)
    );
    let catalog = rvgpu_cat::read_catalog(&std::fs::read(copy.join("rvgpu.cat")).unwrap()).unwrap();
    let problems = rvgpu_cat::check_package(&copy, "rvgpu.inf", &catalog);
    assert!(
        problems.iter().any(|p| p.starts_with("rvgpu.sys:")),
        "the catalog check does not name rvgpu.sys: {problems:?}"
    );
    // The unmodified files are still fine.
    assert!(
        !problems
            .iter()
            .any(|p| p.starts_with("rvgpu_umd.dll:") || p.starts_with("rvgpu.inf:")),
        "{problems:?}"
    );
}
