//! The catalog's Authenticode signature, checked as Windows' trust provider checks a signed
//! catalog before it trusts any member of it: the PKCS #7 SignedData carries a signer, the
//! signer's certificate is in the SignedData, the signed attributes name the trust list as the
//! content and carry its digest, and the signature over the signed attributes verifies with
//! the certificate's key (RFC 2315 §9.3: the digest covers the content octets of the content
//! field, without its identifier and length octets; RFC 2315 §9.3 again: the signature covers the DER
//! of the authenticated attributes as a SET OF). Who may be trusted is the caller's question
//! (the machine's certificate stores); [`certificate_signed_by`] checks one link of a chain.
//!
//! Only RSA PKCS #1 v1.5 with SHA-256 is understood, what `osslsigncode sign -h sha256` and
//! `signtool sign /fd sha256` write with an RSA key; anything else is refused as malformed.

use der::asn1::ObjectIdentifier;
use der::{Decode, Encode};
use rsa::pkcs8::DecodePublicKey;
use rsa::{Pkcs1v15Sign, RsaPublicKey};
use sha2::{Digest, Sha256};
use x509_cert::Certificate;

use crate::oid;

/// PKCS #9 contentType.
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
/// PKCS #9 messageDigest.
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
/// rsaEncryption (the signature algorithm signers write for PKCS #1 v1.5).
const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// sha256WithRSAEncryption.
const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");

/// Why a catalog's signature does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// No signer at all: the unsigned catalog (Windows: `TRUST_E_NOSIGNATURE`).
    NoSignature,
    /// The signed attributes' digest is not the trust list's (Windows: `TRUST_E_BAD_DIGEST`).
    BadDigest,
    /// The signature does not verify with the signer's key (Windows: `TRUST_E_BAD_DIGEST`,
    /// the status WinVerifyTrust gives for a signature that does not match).
    BadSignature,
    /// Not a signature this reader understands, with what was found.
    Malformed(String),
}

impl std::fmt::Display for SignatureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoSignature => f.write_str("the catalog carries no signature"),
            Self::BadDigest => f.write_str("the signed digest is not the catalog content's"),
            Self::BadSignature => {
                f.write_str("the signature does not verify with the signer's key")
            }
            Self::Malformed(why) => write!(f, "malformed signature: {why}"),
        }
    }
}

fn malformed<T>(why: impl Into<String>) -> Result<T, SignatureError> {
    Err(SignatureError::Malformed(why.into()))
}

/// A verified signature: the signer's certificate and every certificate the SignedData
/// carries (DER each, the signer's among them), for the caller's chain building.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    pub signer: Vec<u8>,
    pub certificates: Vec<Vec<u8>>,
}

fn der_of<T: Encode>(t: &T) -> Result<Vec<u8>, SignatureError> {
    t.to_der()
        .map_err(|e| SignatureError::Malformed(format!("ASN.1: {e}")))
}

fn rsa_key(cert: &Certificate) -> Result<RsaPublicKey, SignatureError> {
    let spki = der_of(&cert.tbs_certificate.subject_public_key_info)?;
    RsaPublicKey::from_public_key_der(&spki)
        .map_err(|e| SignatureError::Malformed(format!("the certificate's key: {e}")))
}

/// Checks the signature of the catalog `der_bytes` (see the module comment).
pub fn verify(der_bytes: &[u8]) -> Result<Signed, SignatureError> {
    let bad = |e: der::Error| SignatureError::Malformed(format!("ASN.1: {e}"));
    let info = cms::content_info::ContentInfo::from_der(der_bytes).map_err(bad)?;
    if info.content_type != oid::SIGNED_DATA {
        return malformed("not a signedData");
    }
    let signed: cms::signed_data::SignedData = info.content.decode_as().map_err(bad)?;
    let Some(signer) = signed.signer_infos.0.iter().next() else {
        return Err(SignatureError::NoSignature);
    };
    let certificates: Vec<Certificate> = signed
        .certificates
        .iter()
        .flat_map(|set| set.0.iter())
        .filter_map(|c| match c {
            cms::cert::CertificateChoices::Certificate(c) => Some(c.clone()),
            cms::cert::CertificateChoices::Other(_) => None,
        })
        .collect();
    let cms::signed_data::SignerIdentifier::IssuerAndSerialNumber(id) = &signer.sid else {
        return malformed("the signer is named by key identifier");
    };
    let Some(cert) = certificates.iter().find(|c| {
        c.tbs_certificate.issuer == id.issuer && c.tbs_certificate.serial_number == id.serial_number
    }) else {
        return malformed("the signer's certificate is not in the SignedData");
    };
    if signer.digest_alg.oid != oid::SHA256 {
        return malformed(format!("digest algorithm {}", signer.digest_alg.oid));
    }
    let alg = signer.signature_algorithm.oid;
    if alg != RSA_ENCRYPTION && alg != SHA256_WITH_RSA {
        return malformed(format!("signature algorithm {alg}"));
    }
    let Some(content) = &signed.encap_content_info.econtent else {
        return malformed("no content");
    };
    let Some(attrs) = &signer.signed_attrs else {
        return malformed("no signed attributes");
    };
    let single = |oid: ObjectIdentifier| {
        attrs
            .iter()
            .find(|a| a.oid == oid)
            .and_then(|a| a.values.iter().next())
    };
    match single(CONTENT_TYPE).map(|v| v.decode_as::<ObjectIdentifier>()) {
        Some(Ok(t)) if t == signed.encap_content_info.econtent_type => {}
        _ => return malformed("the contentType attribute is not the content's type"),
    }
    let digest = match single(MESSAGE_DIGEST).map(|v| v.decode_as::<der::asn1::OctetString>()) {
        Some(Ok(d)) => d,
        _ => return malformed("no messageDigest attribute"),
    };
    if digest.as_bytes() != Sha256::digest(content.value()).as_slice() {
        return Err(SignatureError::BadDigest);
    }
    let key = rsa_key(cert)?;
    let hashed = Sha256::digest(der_of(attrs)?);
    key.verify(
        Pkcs1v15Sign::new::<Sha256>(),
        &hashed,
        signer.signature.as_bytes(),
    )
    .map_err(|_| SignatureError::BadSignature)?;
    Ok(Signed {
        signer: der_of(cert)?,
        certificates: certificates.iter().map(der_of).collect::<Result<_, _>>()?,
    })
}

/// Whether the certificate `cert` (DER) names `issuer` (DER) as its issuer and carries a
/// sha256WithRSAEncryption signature that verifies with `issuer`'s key: one link of a chain.
pub fn certificate_signed_by(cert: &[u8], issuer: &[u8]) -> bool {
    let (Ok(c), Ok(i)) = (Certificate::from_der(cert), Certificate::from_der(issuer)) else {
        return false;
    };
    if c.tbs_certificate.issuer != i.tbs_certificate.subject
        || c.signature_algorithm.oid != SHA256_WITH_RSA
    {
        return false;
    }
    let (Ok(key), Ok(tbs)) = (rsa_key(&i), c.tbs_certificate.to_der()) else {
        return false;
    };
    let Some(sig) = c.signature.as_bytes() else {
        return false;
    };
    key.verify(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(tbs), sig)
        .is_ok()
}

/// The subject of the certificate `cert` (DER) as text, for messages.
pub fn subject(cert: &[u8]) -> String {
    Certificate::from_der(cert).map_or_else(
        |_| "(not a certificate)".into(),
        |c| c.tbs_certificate.subject.to_string(),
    )
}

/// Whether `cert` (DER) is self-issued (its issuer is its subject).
pub fn self_issued(cert: &[u8]) -> bool {
    Certificate::from_der(cert).is_ok_and(|c| c.tbs_certificate.issuer == c.tbs_certificate.subject)
}
