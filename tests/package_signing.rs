//! The test-signed package made on Linux (`scripts/package.sh --test-sign`), as the tester's
//! folder carries it (`scripts/tester-folder.sh`).
//!
//! Builds the tester's folder once per test binary into a temporary directory, with a
//! certificate made there, checks that it holds exactly the files docs/test-machine.md names,
//! then checks what Windows will check at `pnputil /add-driver`: the images and the
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

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use sha1::Sha1;
use sha2::{Digest, Sha256};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// This process's scratch directory (each test picks names of its own in it).
fn tmp() -> &'static Scratch {
    static DIR: OnceLock<Scratch> = OnceLock::new();
    DIR.get_or_init(|| Scratch::new("package_signing"))
}

/// The tester's folder (the signed package and what travels with it), built once, and the
/// certificate (PEM) it was signed with.
fn package() -> &'static (PathBuf, PathBuf) {
    static DIR: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIR.get_or_init(|| {
        setup::require(&["osslsigncode", "openssl", "mingw"]);
        // A folder of this process's own: the script refuses one holding files it does not make.
        let out = tmp().join("tester-folder");
        let cert_dir = tmp().join("cert");
        let status = Command::new("bash")
            .arg(root().join("scripts/tester-folder.sh"))
            .arg("--cert-dir")
            .arg(&cert_dir)
            .arg(&out)
            .env("CARGO", env!("CARGO"))
            .current_dir(root())
            .status()
            .expect("run scripts/tester-folder.sh");
        assert!(
            status.success(),
            "scripts/tester-folder.sh failed: {status}"
        );
        (out, cert_dir.join("rvgpu-test.pem"))
    })
}

/// The files under `dir`, as paths relative to it with `/` separators.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap();
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

/// The files docs/test-machine.md's step 0 names, in its paragraph "makes the tester's
/// folder:" (Windows separators made `/`; the command, which has spaces, left out).
fn runbook_folder() -> BTreeSet<String> {
    let page = std::fs::read_to_string(root().join("docs/test-machine.md")).unwrap();
    let para = page
        .split("\n\n")
        .find(|p| p.contains("makes the tester's folder:"))
        .expect("docs/test-machine.md: the paragraph `makes the tester's folder:`");
    para.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.contains(' '))
        .map(|s| s.replace('\\', "/"))
        .collect()
}

#[test]
fn the_testers_folder_holds_exactly_what_the_runbook_names() {
    let (dir, _) = package();
    let names = runbook_folder();
    assert!(
        names.contains("rvgpu.sys") && names.contains("rvgpu-whlk.exe"),
        "the runbook's list: {names:?}"
    );
    assert_eq!(
        files_under(dir),
        names,
        "scripts/tester-folder.sh's folder against docs/test-machine.md's step 0"
    );
    // What travels beside the package is the repository's copy, unchanged.
    for (name, source) in [
        ("README.txt", "scripts/tester/README.txt"),
        ("windbg/rvgpu.js", "scripts/windbg/rvgpu.js"),
        ("test-machine.sh", "scripts/test-machine.sh"),
        ("test-machine.md", "docs/test-machine.md"),
        ("qemu-guest.md", "docs/qemu-guest.md"),
    ] {
        assert_eq!(
            std::fs::read(dir.join(name)).unwrap(),
            std::fs::read(root().join(source)).unwrap(),
            "{name} is not {source}"
        );
    }
}

#[test]
fn the_testers_folder_refuses_a_folder_it_did_not_make() {
    let foreign = tmp().join("not-a-tester-folder");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"keep me").unwrap();
    let o = Command::new("bash")
        .arg(root().join("scripts/tester-folder.sh"))
        .arg(&foreign)
        .current_dir(root())
        .output()
        .expect("run scripts/tester-folder.sh");
    assert!(
        !o.status.success(),
        "it wrote into a folder it did not make"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a tester's folder"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read(foreign.join("notes.txt")).unwrap(),
        b"keep me",
        "the folder's file was touched"
    );
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
    // The SHA-256 members are named; their SHA-1 twins carry only CAT_MEMBERINFO2, as in
    // MakeCat's version 2 catalogs (makecat_catalog_facts_hold_for_ours).
    let names: BTreeSet<String> = catalog
        .members
        .iter()
        .filter(|m| m.tag.len() == 32)
        .map(|m| {
            m.file
                .clone()
                .expect("every SHA-256 member has a File attribute")
        })
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
                .find(|m| m.tag == tag)
                .unwrap_or_else(|| panic!("{name}: no member tagged {}", rvgpu_cat::hex(tag)))
        };
        let m1 = of(&sha1);
        let m256 = of(&sha256);
        assert_eq!(m256.file.as_deref(), Some(name.as_str()), "{name}: File");
        assert_eq!(m256.os_attr.as_deref(), Some("2:10.0"), "{name}: OSAttr");
        let kind = if name.ends_with(".inf") {
            rvgpu_cat::MEMBERINFO2_FLAT
        } else {
            rvgpu_cat::MEMBERINFO2_PE
        };
        for m in [m1, m256] {
            assert_eq!(m.member_info2, Some(kind), "{name}: CAT_MEMBERINFO2");
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

// --- MakeCat's catalog as the reference ----------------------------------------------------
//
// The osslsigncode project's `tests/files/unsigned.cat` is MakeCat output for a CDF with
// `CatalogVersion=2`, `HashAlgorithms=SHA256`, `PageHashes=true` and a catalog attribute
// `CATATTR1=0x11010001:OSAttr:2:6.0` (its `tests/sources/CatalogDefinitionFileName.cdf`); seven
// files, one of them a PE image. Read with `openssl asn1parse`, its structure is the list of
// facts below; the file itself is not part of this project. `makecat_catalog_facts_hold_for_ours`
// holds the unsigned catalog rvgpu-cat writes to each of them, by walking its DER with a reader
// of its own (not rvgpu-cat's).

/// One DER element: tag byte, content, and the bytes after it.
fn tlv(d: &[u8]) -> (u8, &[u8], &[u8]) {
    let tag = d[0];
    let (len, head) = match d[1] {
        n if n < 0x80 => (n as usize, 2),
        n => {
            let k = (n & 0x7F) as usize;
            let len = d[2..2 + k]
                .iter()
                .fold(0usize, |a, b| (a << 8) | *b as usize);
            (len, 2 + k)
        }
    };
    (tag, &d[head..head + len], &d[head + len..])
}

/// The elements of a constructed content.
fn children(mut d: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while !d.is_empty() {
        let (t, c, rest) = tlv(d);
        out.push((t, c));
        d = rest;
    }
    out
}

/// An OID's DER content as dotted text.
fn oid(c: &[u8]) -> String {
    let mut parts = vec![(c[0] / 40) as u64, (c[0] % 40) as u64];
    let mut v = 0u64;
    for b in &c[1..] {
        v = (v << 7) | (b & 0x7F) as u64;
        if b & 0x80 == 0 {
            parts.push(v);
            v = 0;
        }
    }
    parts
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

fn utf16z(b: &[u8]) -> String {
    let u: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(u.last(), Some(&0), "NUL-terminated UTF-16LE");
    String::from_utf16(&u[..u.len() - 1]).unwrap()
}

/// A CAT_NAMEVALUE's (name, flags, value).
fn name_value(c: &[u8]) -> (String, u32, String) {
    let f = children(c);
    assert_eq!(f.len(), 3, "CAT_NAMEVALUE is name, flags, value");
    assert_eq!(
        (f[0].0, f[1].0, f[2].0),
        (0x1E, 0x02, 0x04),
        "BMPString, INTEGER, OCTET STRING"
    );
    let name: Vec<u16> = f[0]
        .1
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    let flags = f[1].1.iter().fold(0u32, |a, b| (a << 8) | *b as u32);
    (String::from_utf16(&name).unwrap(), flags, utf16z(f[2].1))
}

#[test]
fn makecat_catalog_facts_hold_for_ours() {
    let (dir, _) = package();
    let (_, files) = rvgpu_cat::package_files(dir, "rvgpu.inf").unwrap();
    let der = rvgpu_cat::write_catalog(
        &files,
        &[("OS".into(), rvgpu_cat::CATALOG_OS.into())],
        std::time::SystemTime::now(),
    )
    .unwrap();

    // ContentInfo { signedData, [0] SignedData }.
    let (t, info, rest) = tlv(&der);
    assert!(t == 0x30 && rest.is_empty());
    let info = children(info);
    assert_eq!(oid(info[0].1), "1.2.840.113549.1.7.2", "signedData");
    assert_eq!(info[1].0, 0xA0);
    let (_, signed, _) = tlv(info[1].1);
    let signed = children(signed);
    // Fact 1: version 1, no digest algorithms and no signer until signed, no certificates;
    // the content type szOID_CTL and the trust list directly under [0] (PKCS #7, not CMS's
    // OCTET STRING).
    assert_eq!(
        signed.len(),
        4,
        "version, digestAlgorithms, content, signerInfos"
    );
    assert_eq!(signed[0], (0x02, &[1u8][..]), "version 1");
    assert_eq!(signed[1], (0x31, &[][..]), "empty digestAlgorithms");
    assert_eq!(signed[3], (0x31, &[][..]), "empty signerInfos");
    let encap = children(signed[2].1);
    assert_eq!(oid(encap[0].1), "1.3.6.1.4.1.311.10.1", "szOID_CTL");
    assert_eq!(encap[1].0, 0xA0);
    let (t, ctl, _) = tlv(encap[1].1);
    assert_eq!(t, 0x30, "the trust list itself, no OCTET STRING around it");

    // Fact 2: subjectUsage { szOID_CATALOG_LIST }, a 16-byte list identifier, UTCTime,
    // subjectAlgorithm { szOID_CATALOG_LIST_MEMBER2, NULL }, the members, [0] extensions; no
    // version, sequence number or next update.
    let ctl = children(ctl);
    let tags: Vec<u8> = ctl.iter().map(|(t, _)| *t).collect();
    assert_eq!(tags, [0x30, 0x04, 0x17, 0x30, 0x30, 0xA0]);
    assert_eq!(oid(children(ctl[0].1)[0].1), "1.3.6.1.4.1.311.12.1.1");
    assert_eq!(ctl[1].1.len(), 16);
    let alg = children(ctl[3].1);
    assert_eq!(oid(alg[0].1), "1.3.6.1.4.1.311.12.1.3");
    assert_eq!(alg[1], (0x05, &[][..]), "NULL parameters");

    // Fact 3: members in the order of their tags' bytes, a SHA-1 (20-byte) and a SHA-256
    // (32-byte) member for every file.
    let members = children(ctl[4].1);
    let mtags: Vec<&[u8]> = members.iter().map(|(_, m)| tlv(m).1).collect();
    let mut sorted = mtags.clone();
    sorted.sort();
    assert_eq!(mtags, sorted, "members in tag order");
    assert_eq!(mtags.iter().filter(|t| t.len() == 20).count(), files.len());
    assert_eq!(mtags.iter().filter(|t| t.len() == 32).count(), files.len());

    for f in &files {
        // Fact 6: CAT_MEMBERINFO2's value is an empty primitive [0] for a PE image, [2] for
        // a flat file, the same on both twins.
        let kind = if f.pe { 0x80 } else { 0x82 };
        for (tag, long) in [(&f.sha1, false), (&f.sha256, true)] {
            let (_, m) = members
                .iter()
                .find(|(_, m)| tlv(m).1 == tag.as_slice())
                .unwrap_or_else(|| panic!("{}: member", f.name));
            let (_, _, attrs) = tlv(m);
            let (t, attrs, _) = tlv(attrs);
            assert_eq!(t, 0x31, "attributes are a SET");
            // (type, the value's tag byte followed by its content)
            let attrs: Vec<(String, Vec<u8>)> = children(attrs)
                .iter()
                .map(|(_, a)| {
                    let a = children(a);
                    let values = children(a[1].1);
                    assert_eq!(values.len(), 1, "one value an attribute");
                    let mut v = vec![values[0].0];
                    v.extend_from_slice(values[0].1);
                    (oid(a[0].1), v)
                })
                .collect();
            // Fact 4: the SHA-1 twin carries CAT_MEMBERINFO2 alone.
            let ids: Vec<&str> = attrs.iter().map(|(o, _)| o.as_str()).collect();
            if !long {
                assert_eq!(ids, ["1.3.6.1.4.1.311.12.2.3"], "{}: SHA-1 twin", f.name);
            } else {
                // Fact 5: the SHA-256 member: CAT_MEMBERINFO2, the name-values, the indirect
                // data.
                assert_eq!(ids[0], "1.3.6.1.4.1.311.12.2.3", "{}", f.name);
                assert!(ids.contains(&"1.3.6.1.4.1.311.12.2.1"), "{}", f.name);
                assert_eq!(ids.last(), Some(&"1.3.6.1.4.1.311.2.1.4"), "{}", f.name);
            }
            assert_eq!(attrs[0].1, [kind], "{}: CAT_MEMBERINFO2 tag", f.name);
            if !long {
                continue;
            }
            // Fact 5: "File" with flags 0x10010001 (CRYPTCAT_ATTR_AUTHENTICATED |
            // DATAASCII | NAMEASCII; the CDF's 0x11010001 is stored as 0x10010001) and a
            // NUL-terminated UTF-16LE value; and the OSAttr Inf2Cat writes for Windows 10.0.
            let nvs: Vec<(String, u32, String)> = attrs
                .iter()
                .filter(|(o, _)| o == "1.3.6.1.4.1.311.12.2.1")
                .map(|(_, v)| name_value(&v[1..]))
                .collect();
            assert!(
                nvs.contains(&("File".into(), 0x1001_0001, f.name.clone())),
                "{nvs:?}"
            );
            // MakeCat's catalog carries OSAttr "2:6.0" for its CDF's Windows Vista target;
            // Windows 10 and 11 are NT 10.0: "2:10.0" (2 = VER_PLATFORM_WIN32_NT).
            assert!(
                nvs.contains(&("OSAttr".into(), 0x1001_0001, "2:10.0".into())),
                "{nvs:?}"
            );
            // Facts 7 and 8: the indirect data: SPC_CAB_DATA_OBJID with an empty
            // `[2] { [0] "" }` link for a flat file, SPC_PE_IMAGE_DATAOBJ for a PE image;
            // the digest SHA-256 with NULL parameters, equal to the member's tag.
            let (_, indirect) = attrs.last().unwrap();
            let ind = children(&indirect[1..]);
            let data = children(ind[0].1);
            let digest = children(ind[1].1);
            if f.pe {
                assert_eq!(oid(data[0].1), "1.3.6.1.4.1.311.2.1.15", "{}", f.name);
                // MakeCat's PE member (PageHashes=true) puts page hashes under [0] { [1]
                // SpcSerializedObject }; without page hashes the link is [0] { [2] { [0] } }.
                let pe_data = children(data[1].1);
                assert_eq!(pe_data[0].0, 0x03, "flags BIT STRING");
                assert_eq!(pe_data[1].0, 0xA0, "file [0]");
            } else {
                assert_eq!(oid(data[0].1), "1.3.6.1.4.1.311.2.1.25", "{}", f.name);
                assert_eq!(
                    data[1],
                    (0xA2, &[0x80u8, 0x00][..]),
                    "{}: [2] {{ [0] \"\" }}",
                    f.name
                );
            }
            let alg = children(digest[0].1);
            assert_eq!(oid(alg[0].1), "2.16.840.1.101.3.4.2.1", "sha256");
            assert_eq!(alg[1], (0x05, &[][..]));
            assert_eq!(
                digest[1],
                (0x04, tag.as_slice()),
                "{}: digest = tag",
                f.name
            );
        }
    }

    // Fact 9: catalog attributes: [0] { SEQUENCE OF Extension { CAT_NAMEVALUE, OCTET STRING
    // (the name-value's DER) } }, no critical flag, flags 0x10010001.
    let (t, exts, _) = tlv(ctl[5].1);
    assert_eq!(t, 0x30);
    for (_, ext) in children(exts) {
        let e = children(ext);
        assert_eq!(e.len(), 2, "extnID and extnValue, no critical flag");
        assert_eq!(oid(e[0].1), "1.3.6.1.4.1.311.12.2.1");
        assert_eq!(e[1].0, 0x04);
        let (name, flags, _) = name_value(tlv(e[1].1).1);
        assert_eq!(flags, 0x1001_0001, "{name}");
    }
}
