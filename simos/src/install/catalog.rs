//! The package's catalog as Windows checks it at `pnputil /add-driver`: its signature, the
//! signer's chain to the machine's Root store, the publisher in TrustedPublisher, then every
//! file the INF copies (and the INF) found in it by the member tag Windows computes for that
//! catalog version. The parsing and hashing are `tools/rvgpu-cat`'s (one reader for the
//! package tests, `package.sh` and this stage).
//!
//! Sources: "Authenticode Digital Signatures" and "Driver Signing" / "Installing a
//! Test-Signed Driver Package" (learn.microsoft.com, windows-hardware/drivers/install/):
//! an Authenticode-signed catalog installs silently only when its certificate chains to a
//! root in Trusted Root Certification Authorities and the publisher's certificate is in
//! Trusted Publishers; "Windows Authenticode Portable Executable Signature Format" (the PE
//! hash); the member tags of a version 2 catalog are the raw SHA-256 hashes (MakeCat's
//! `CatalogVersion=2`, "MakeCat" on learn.microsoft.com, and the MakeCat catalog held in
//! tests/package_signing.rs).

use rvgpu_cat::signature::{self, SignatureError};

use super::codes::*;
use super::refusal::Refusal;

/// The machine's certificate stores (DER certificates).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertStores {
    /// Trusted Root Certification Authorities (`certutil -addstore Root`).
    pub root: Vec<Vec<u8>>,
    /// Trusted Publishers (`certutil -addstore TrustedPublisher`).
    pub trusted_publisher: Vec<Vec<u8>>,
}

/// The trusted chain found for a catalog: its signer, and the root it ends in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trust {
    pub signer: Vec<u8>,
    pub root: Vec<u8>,
}

/// CA-01..CA-03: the catalog's signature, its chain to a Root certificate, and the publisher
/// in TrustedPublisher.
pub fn trust(catalog: &[u8], stores: &CertStores) -> Result<Trust, Refusal> {
    // CA-01: WinVerifyTrust on the catalog: no signer is TRUST_E_NOSIGNATURE; a digest or
    // signature that does not verify is TRUST_E_BAD_DIGEST. A catalog this reader cannot
    // parse as a signature is taken as unsigned ([I]).
    let signed = signature::verify(catalog).map_err(|e| {
        let code = match e {
            SignatureError::NoSignature | SignatureError::Malformed(_) => TRUST_E_NOSIGNATURE,
            SignatureError::BadDigest | SignatureError::BadSignature => TRUST_E_BAD_DIGEST,
        };
        Refusal::pnp("CA-01", code, format!("the catalog's signature: {e}"))
    })?;
    // CA-02: the chain from the signer up, through the certificates the catalog carries and
    // the Root store, must end in a certificate of the Root store. A chain that ends in a
    // self-issued certificate not in Root is CERT_E_UNTRUSTEDROOT; one with a missing link,
    // CERT_E_CHAINING.
    let mut cert = signed.signer.clone();
    let mut root = None;
    for _ in 0..8 {
        if stores.root.contains(&cert) {
            root = Some(cert.clone());
            break;
        }
        if signature::self_issued(&cert) {
            break;
        }
        let issuer = signed
            .certificates
            .iter()
            .chain(stores.root.iter())
            .find(|i| signature::certificate_signed_by(&cert, i));
        match issuer {
            Some(i) => cert = i.clone(),
            None => {
                return Err(Refusal::pnp(
                    "CA-02",
                    CERT_E_CHAINING,
                    format!(
                        "no issuer found for {} in the catalog or the Root store",
                        signature::subject(&cert)
                    ),
                ))
            }
        }
    }
    let Some(root) = root else {
        return Err(Refusal::pnp(
            "CA-02",
            CERT_E_UNTRUSTEDROOT,
            format!(
                "the chain of {} ends in {}, which is not in the Root store",
                signature::subject(&signed.signer),
                signature::subject(&cert)
            ),
        ));
    };
    // CA-03: a silent install needs the publisher in TrustedPublisher; otherwise Windows
    // would ask the user ("Would you like to install this device software?"), which
    // `pnputil` in a script cannot answer.
    if !stores.trusted_publisher.contains(&signed.signer) {
        return Err(Refusal::pnp(
            "CA-03",
            ERROR_AUTHENTICODE_TRUST_NOT_ESTABLISHED,
            format!(
                "the publisher {} is not in the TrustedPublisher store",
                signature::subject(&signed.signer)
            ),
        ));
    }
    Ok(Trust {
        signer: signed.signer,
        root,
    })
}

/// The member tag Windows looks a file up by in a catalog (`version2`: its subject algorithm
/// is szOID_CATALOG_LIST_MEMBER2): its SHA-256
/// hash for a version 2 catalog (szOID_CATALOG_LIST_MEMBER2), its SHA-1 hash for version 1;
/// the Authenticode hash for a PE image, the hash of the whole file otherwise
/// (`rvgpu_cat::hash_file`).
pub fn member_tag(version2: bool, name: &str, data: &[u8]) -> Vec<u8> {
    let h = rvgpu_cat::hash_file(name, data);
    if version2 {
        h.sha256
    } else {
        h.sha1
    }
}

/// CA-04, CA-05: every file (name, bytes) is a member of the catalog, found by its tag; a
/// member's OSAttr, when present, covers Windows 10.0 (`2:10.0`).
pub fn check_members(catalog: &[u8], files: &[(String, Vec<u8>)]) -> Result<(), Refusal> {
    let cat = rvgpu_cat::read_catalog(catalog)
        .map_err(|e| Refusal::pnp("CA-01", TRUST_E_NOSIGNATURE, format!("the catalog: {e}")))?;
    for (name, data) in files {
        let version2 = cat.subject_algorithm == rvgpu_cat::oid::CATALOG_LIST_MEMBER2;
        let tag = member_tag(version2, name, data);
        let Some(m) = cat.members.iter().find(|m| m.tag == tag) else {
            return Err(Refusal::pnp(
                "CA-04",
                ERROR_FILE_HASH_NOT_IN_CATALOG,
                format!(
                    "{name}: its hash {} is not in the catalog",
                    rvgpu_cat::hex(&tag)
                ),
            ));
        };
        if let Some(os) = &m.os_attr {
            if !os.split(',').any(|o| o.trim() == "2:10.0") {
                return Err(Refusal::pnp(
                    "CA-05",
                    ERROR_SIGNATURE_OSATTRIBUTE_MISMATCH,
                    format!("{name}: OSAttr {os:?} does not cover Windows 10.0"),
                ));
            }
        }
    }
    Ok(())
}
