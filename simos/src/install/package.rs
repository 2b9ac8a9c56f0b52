//! The test-signed package the simulated machines install: what `scripts/package.sh
//! --test-sign --driver-only` writes, made once per process (the script itself, so the
//! package installed here is the one a test machine gets), or the directory `RVGPU_PACKAGE`
//! names. Tests that need a package that differs (a file changed, an INF edited) make one with
//! [`remake`], which catalogs and signs it again with the same test certificate, as a
//! developer re-running the script would.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A package directory and the directory of the certificate and key it was signed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestPackage {
    pub dir: PathBuf,
    pub cert_dir: PathBuf,
}

impl TestPackage {
    /// The test certificate (DER) the package carries (`rvgpu-test.cer`), which the test
    /// machine's Root and TrustedPublisher stores hold.
    pub fn certificate(&self) -> Result<Vec<u8>, String> {
        std::fs::read(self.dir.join("rvgpu-test.cer"))
            .map_err(|e| format!("{}: {e}", self.dir.join("rvgpu-test.cer").display()))
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("RVGPU_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pe"),
        PathBuf::from,
    )
}

/// The workspace's test-signed package (see the module comment); once per process. A child
/// process gets the parent's through `RVGPU_PACKAGE` and `RVGPU_TEST_CERT_DIR`.
pub fn test_signed() -> Result<TestPackage, String> {
    static BUILT: std::sync::OnceLock<Result<TestPackage, String>> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let cert_dir = std::env::var_os("RVGPU_TEST_CERT_DIR")
                .map_or_else(|| target_dir().join("test-cert"), PathBuf::from);
            if let Some(dir) = std::env::var_os("RVGPU_PACKAGE") {
                return Ok(TestPackage {
                    dir: PathBuf::from(dir),
                    cert_dir,
                });
            }
            // One directory per process: test binaries and machines in other processes may be
            // reading theirs. Those of processes that have ended are removed, and store
            // folders no process has staged for an hour.
            sweep();
            let dir = target_dir().join(format!("package-{}", std::process::id()));
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let out = Command::new("bash")
                .arg(root.join("scripts/package.sh"))
                .args(["--test-sign", "--driver-only", "--cert-dir"])
                .arg(&cert_dir)
                .arg(&dir)
                .env("CARGO", cargo)
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .current_dir(&root)
                .output()
                .map_err(|e| format!("cannot run scripts/package.sh: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "scripts/package.sh --test-sign --driver-only failed:\n{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(TestPackage { dir, cert_dir })
        })
        .clone()
}

/// Removes `package-<pid>` directories of processes that no longer run, and driver-store
/// folders (`crate::install::store_root`) last written more than an hour ago.
fn sweep() {
    let Ok(entries) = std::fs::read_dir(target_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("package-") {
            if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let hour = std::time::Duration::from_secs(3600);
    for e in std::fs::read_dir(super::system::store_root())
        .into_iter()
        .flatten()
        .flatten()
    {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > hour);
        if old {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// What [`remake`] does with the catalog after the edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Catalog<'a> {
    /// Leaves it as the edit left it.
    Keep,
    /// Writes it anew from the copy's files but these (rvgpu-cat, as `package.sh` does) and
    /// signs it with the test certificate (osslsigncode).
    Resign { leave_out: &'a [&'a str] },
}

/// Copies `from` into `to`, lets `edit` change the copy, then treats the catalog as `catalog`
/// says.
pub fn remake(
    from: &TestPackage,
    to: &Path,
    catalog: Catalog<'_>,
    edit: impl FnOnce(&Path),
) -> Result<TestPackage, String> {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for name in [
        "rvgpu.inf",
        "rvgpu.cat",
        "rvgpu.sys",
        "rvgpu_umd.dll",
        "rvgpu-test.cer",
    ] {
        std::fs::copy(from.dir.join(name), to.join(name))
            .map_err(|e| format!("copying {name}: {e}"))?;
    }
    edit(to);
    if let Catalog::Resign { leave_out } = catalog {
        let (facts, mut files) =
            rvgpu_cat::package_files(to, "rvgpu.inf").map_err(|e| e.to_string())?;
        files.retain(|f| !leave_out.contains(&f.name.as_str()));
        let mut attrs = vec![("OS".to_string(), rvgpu_cat::CATALOG_OS.to_string())];
        for (i, id) in facts.hardware_ids.iter().enumerate() {
            attrs.push((format!("HWID{}", i + 1), id.clone()));
        }
        let der = rvgpu_cat::write_catalog(&files, &attrs, std::time::SystemTime::now())
            .map_err(|e| e.to_string())?;
        let cat = to.join("rvgpu.cat");
        std::fs::write(&cat, der).map_err(|e| e.to_string())?;
        let signed = to.join("rvgpu.cat.signed");
        let out = Command::new("osslsigncode")
            .args(["sign", "-certs"])
            .arg(from.cert_dir.join("rvgpu-test.pem"))
            .arg("-key")
            .arg(from.cert_dir.join("rvgpu-test.key"))
            .args(["-h", "sha256", "-n", "rvgpu", "-in"])
            .arg(&cat)
            .arg("-out")
            .arg(&signed)
            .output()
            .map_err(|e| format!("cannot run osslsigncode: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "osslsigncode sign: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::rename(&signed, &cat).map_err(|e| e.to_string())?;
    }
    Ok(TestPackage {
        dir: to.to_path_buf(),
        cert_dir: from.cert_dir.clone(),
    })
}
