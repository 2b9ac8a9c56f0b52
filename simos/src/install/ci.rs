//! Code integrity and the kernel loader when the service starts: the image in the driver
//! store must be covered by a trusted signature, and a test signature needs test-signing
//! mode; then the loader's checks on the file ([`super::loader`], LD-01..LD-05).
//!
//! Sources: "Kernel-Mode Code Signing Requirements" and "The TESTSIGNING Boot Configuration
//! Option" (learn.microsoft.com, windows-hardware/drivers/install/): x64 Windows loads a
//! kernel-mode driver only with a valid signature, a catalog's included; a test-signed one
//! (its chain ends in a root that is not one of Microsoft's) only with `bcdedit /set
//! testsigning on`. A driver refused by code integrity fails with STATUS_INVALID_IMAGE_HASH
//! and the device shows Code 52 ("Device Manager Error Messages": CM_PROB_UNSIGNED_DRIVER).
//! The image's own embedded signature is not checked here: the catalog is the route this
//! package is signed by, and Windows accepts either.

use super::catalog;
use super::codes::*;
use super::refusal::Refusal;
use super::system::{StoredPackage, System};

fn refuse(rule: &'static str, code: u32, problem: u32, why: impl Into<String>) -> Refusal {
    Refusal {
        stage: "CI",
        rule,
        code,
        problem: Some(problem),
        why: why.into(),
    }
}

/// CI-01, CI-02, then LD-01..LD-05 on the service binary of `package`, as stored; `Ok` with
/// the file's bytes when the driver may load.
pub fn load_checks(
    system: &System,
    package: &StoredPackage,
    memory_integrity: bool,
) -> Result<Vec<u8>, Refusal> {
    let path = package.dir.join(&package.plan.service.binary);
    let data = std::fs::read(&path).map_err(|e| {
        refuse(
            "CI-01",
            STATUS_INVALID_IMAGE_HASH,
            CM_PROB_UNSIGNED_DRIVER,
            format!("{}: {e}", path.display()),
        )
    })?;
    // CI-01: the image's hash is in the catalog installed with it (the catalog database
    // holds it since the install; its signature was checked then).
    catalog::check_members(
        &package.catalog,
        &[(package.plan.service.binary.clone(), data.clone())],
    )
    .map_err(|r| {
        refuse(
            "CI-01",
            STATUS_INVALID_IMAGE_HASH,
            CM_PROB_UNSIGNED_DRIVER,
            format!("no valid signature covers the image: {}", r.why),
        )
    })?;
    // CI-02: the package's root is no Microsoft root (none is in the simulated stores), so
    // the signature is a test signature.
    if !system.test_signing {
        return Err(refuse(
            "CI-02",
            STATUS_INVALID_IMAGE_HASH,
            CM_PROB_UNSIGNED_DRIVER,
            format!(
                "{} is test-signed ({}) and test signing is off",
                package.plan.service.binary,
                rvgpu_cat::signature::subject(&package.trust.root)
            ),
        ));
    }
    // LD-01..LD-05: the kernel loader on the file (docs/windows-bringup.md §2); the PE
    // machine exists only on Linux hosts.
    #[cfg(target_os = "linux")]
    super::loader::check_driver_image(&data, memory_integrity).map_err(|r| Refusal {
        stage: "loader",
        rule: r.rule,
        code: r.status,
        problem: Some(CM_PROB_DRIVER_FAILED_LOAD),
        why: r.why,
    })?;
    #[cfg(not(target_os = "linux"))]
    let _ = memory_integrity;
    Ok(data)
}
