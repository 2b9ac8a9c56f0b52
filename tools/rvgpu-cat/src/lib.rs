//! The driver package's catalog (`rvgpu.cat`), written and read on any host.
//!
//! A catalog is a PKCS #7 SignedData whose content is a Microsoft certificate trust list
//! (szOID_CTL). Its subjects are the package's files, each named by its hash; Windows finds a
//! file's entry by hashing the file and checks that the catalog is signed by a trusted
//! publisher. This crate writes the catalog unsigned (no signer, no certificate), in the layout
//! of a version 2 (SHA-256) catalog as MakeCat and Inf2Cat write it; `osslsigncode sign` then
//! adds the Authenticode signature (scripts/package.sh). It also reads a catalog back and checks
//! it against the files, which the package tests and `package.sh` use.
//!
//! Layout (docs/windows.md, "The catalog written on Linux", has the sources):
//!
//! ```text
//! ContentInfo { signedData, SignedData { version 1, digestAlgorithms {}, encapContentInfo {
//!   szOID_CTL, CertificateTrustList {
//!     subjectUsage     { szOID_CATALOG_LIST }
//!     listIdentifier   16 bytes
//!     thisUpdate       UTCTime
//!     subjectAlgorithm { szOID_CATALOG_LIST_MEMBER2, NULL }
//!     trustedSubjects  per file: one member tagged by its SHA-1 hash, one by its SHA-256 hash
//!     [0] extensions   CAT_NAMEVALUE "OS", "HWID1", ...
//!   } }, signerInfos {} } }
//! ```

pub mod signature;

use std::fmt;
use std::path::Path;

use der::asn1::{Any, BitString, BmpString, ContextSpecific, ObjectIdentifier, OctetString};
use der::asn1::{SetOfVec, UtcTime};
use der::{Decode, Encode, Sequence, Tag, TagMode, TagNumber, Tagged};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use spki::AlgorithmIdentifierOwned;
use x509_cert::attr::Attribute;
use x509_cert::ext::Extension;

/// Object identifiers of the catalog format (wincrypt.h, mscat.h, wintrust.h).
pub mod oid {
    use der::asn1::ObjectIdentifier as Oid;

    /// PKCS #7 signedData.
    pub const SIGNED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.2");
    /// szOID_CTL: the SignedData's content type.
    pub const CTL: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.10.1");
    /// szOID_CATALOG_LIST: the trust list's subject usage.
    pub const CATALOG_LIST: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.12.1.1");
    /// szOID_CATALOG_LIST_MEMBER: subject algorithm of a version 1 (SHA-1) catalog.
    pub const CATALOG_LIST_MEMBER: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.12.1.2");
    /// szOID_CATALOG_LIST_MEMBER2: subject algorithm of a version 2 (SHA-256) catalog.
    pub const CATALOG_LIST_MEMBER2: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.12.1.3");
    /// CAT_NAMEVALUE_OBJID: a named string attribute ("File", "OSAttr", "OS", "HWID1").
    pub const CAT_NAMEVALUE: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.12.2.1");
    /// CAT_MEMBERINFO_OBJID: subject interface package GUID of a version 1 member.
    pub const CAT_MEMBERINFO: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.12.2.2");
    /// CAT_MEMBERINFO2_OBJID: the version 2 member information.
    pub const CAT_MEMBERINFO2: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.12.2.3");
    /// SPC_INDIRECT_DATA_OBJID: what was hashed, and the digest.
    pub const SPC_INDIRECT_DATA: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.2.1.4");
    /// SPC_PE_IMAGE_DATAOBJ: the digest is an Authenticode PE image hash.
    pub const SPC_PE_IMAGE_DATA: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.2.1.15");
    /// SPC_CAB_DATA_OBJID: the digest is a hash of the whole file ("flat").
    pub const SPC_CAB_DATA: Oid = Oid::new_unwrap("1.3.6.1.4.1.311.2.1.25");
    /// id-sha1.
    pub const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");
    /// id-sha256.
    pub const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
}

/// CRYPTCAT_ATTR_AUTHENTICATED | CRYPTCAT_ATTR_DATAASCII | CRYPTCAT_ATTR_NAMEASCII (mscat.h):
/// the flags of every name-value attribute Inf2Cat writes.
pub const NAMEVALUE_FLAGS: u32 = 0x1001_0001;

/// Operating-system attribute of each member: NT 10.0 (Windows 10 and 11), in the
/// "platform:major.minor" form of the OSAttr catalog attribute (2 = VER_PLATFORM_WIN32_NT).
pub const OS_ATTR: &str = "2:10.0";

/// Catalog-level "OS" attribute for Inf2Cat's `/os:10_GE_X64` (Windows 11 24H2, x64). The
/// value is a best reading of Inf2Cat's naming (`_v100_X64` for 10_X64), not checked against
/// Inf2Cat's own output; PnP matches members by hash, not by this attribute.
pub const CATALOG_OS: &str = "_v100_X64_24H2";

/// An error of the catalog writer or checker, with what was found.
#[derive(Debug)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<der::Error> for Error {
    fn from(e: der::Error) -> Self {
        Error(format!("ASN.1: {e}"))
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

// --- ASN.1 types -------------------------------------------------------------------------

/// CertificateTrustList (wincrypt.h's CTL_INFO). `version`, `sequenceNumber` and `nextUpdate`
/// are absent in catalogs.
#[derive(Clone, Debug, Sequence)]
struct CertificateTrustList {
    subject_usage: Vec<ObjectIdentifier>,
    list_identifier: OctetString,
    this_update: UtcTime,
    subject_algorithm: AlgorithmIdentifierOwned,
    trusted_subjects: Vec<TrustedSubject>,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    extensions: Option<Vec<Extension>>,
}

/// One member: its tag (the file's hash) and its attributes.
#[derive(Clone, Debug, Sequence)]
struct TrustedSubject {
    identifier: OctetString,
    attributes: SetOfVec<Attribute>,
}

/// CAT_NAMEVALUE: a name (BMPString), CRYPTCAT_ATTR_* flags, and the value as a
/// NUL-terminated UTF-16LE string.
#[derive(Clone, Debug, Sequence)]
struct CatNameValue {
    name: BmpString,
    flags: u32,
    value: OctetString,
}

/// SpcIndirectDataContent (Authenticode): what was hashed, and the digest.
#[derive(Clone, Debug, Sequence)]
struct SpcIndirectDataContent {
    data: SpcAttributeTypeAndOptionalValue,
    message_digest: DigestInfo,
}

#[derive(Clone, Debug, Sequence)]
struct SpcAttributeTypeAndOptionalValue {
    kind: ObjectIdentifier,
    value: Any,
}

#[derive(Clone, Debug, Sequence)]
struct DigestInfo {
    algorithm: AlgorithmIdentifierOwned,
    digest: OctetString,
}

/// SpcPeImageData { flags, file [0] SpcLink }.
#[derive(Clone, Debug, Sequence)]
struct SpcPeImageData {
    flags: BitString,
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT")]
    file: Any,
}

// --- hashes ------------------------------------------------------------------------------

/// A file of the package with the hashes a catalog lists for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHashes {
    /// The file name as the INF names it.
    pub name: String,
    /// Whether the hashes are Authenticode PE image hashes (else hashes of the whole file).
    pub pe: bool,
    pub sha1: Vec<u8>,
    pub sha256: Vec<u8>,
}

/// The parts of a PE file that an Authenticode hash covers: everything but the checksum, the
/// certificate-table directory entry and the certificate table itself (Microsoft's
/// "Windows Authenticode Portable Executable Signature Format"). `None` if `data` is not a PE
/// image.
///
/// An image without a certificate table is hashed as if zero-padded to 8 bytes, as signing
/// pads it before appending the table (osslsigncode and signtool both do), so the hash of an
/// image is the same before and after it is signed.
pub fn pe_hashed_ranges(data: &[u8]) -> Option<Vec<std::ops::Range<usize>>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(data.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(data.get(o..o + 4)?.try_into().ok()?));
    if data.get(0..2)? != b"MZ" {
        return None;
    }
    let pe = u32_at(0x3c)? as usize;
    if data.get(pe..pe + 4)? != b"PE\0\0" {
        return None;
    }
    let opt = pe + 24;
    let dirs = match u16_at(opt)? {
        0x10b => opt + 96,
        0x20b => opt + 112,
        _ => return None,
    };
    let checksum = opt + 64;
    // Data directory 4: IMAGE_DIRECTORY_ENTRY_SECURITY (a file offset, not an RVA).
    let cert_entry = dirs + 4 * 8;
    let cert_offset = u32_at(cert_entry)? as usize;
    let cert_size = u32_at(cert_entry + 4)? as usize;
    let end = if cert_size != 0 && cert_offset <= data.len() {
        cert_offset
    } else {
        data.len()
    };
    if cert_entry + 8 > end {
        return None;
    }
    Some(vec![
        0..checksum,
        checksum + 4..cert_entry,
        cert_entry + 8..end,
    ])
}

fn pe_digest<D: Digest>(data: &[u8], ranges: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut h = D::new();
    for r in ranges {
        h.update(&data[r.clone()]);
    }
    let last = ranges.last().map_or(0, |r| r.end);
    if last == data.len() && !last.is_multiple_of(8) {
        h.update(&[0u8; 8][..8 - last % 8]);
    }
    h.finalize().to_vec()
}

/// The catalog hashes of one file: Authenticode for a PE image, flat otherwise.
pub fn hash_file(name: &str, data: &[u8]) -> FileHashes {
    match pe_hashed_ranges(data) {
        Some(ranges) => FileHashes {
            name: name.to_string(),
            pe: true,
            sha1: pe_digest::<Sha1>(data, &ranges),
            sha256: pe_digest::<Sha256>(data, &ranges),
        },
        None => FileHashes {
            name: name.to_string(),
            pe: false,
            sha1: Sha1::digest(data).to_vec(),
            sha256: Sha256::digest(data).to_vec(),
        },
    }
}

// --- the INF -----------------------------------------------------------------------------

/// What the catalog needs from the INF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InfFacts {
    /// `[Version] CatalogFile`.
    pub catalog_file: Option<String>,
    /// `[Version] DriverVer`, as written.
    pub driver_ver: Option<String>,
    /// The files of `[SourceDisksFiles]` (and its decorated forms), in order.
    pub source_files: Vec<String>,
    /// The hardware IDs of the models sections (`desc = install, HWID`), lower case.
    pub hardware_ids: Vec<String>,
}

/// Reads the facts above from an INF's text. Section and key names are case-insensitive, as
/// Windows reads them.
pub fn read_inf(text: &str) -> InfFacts {
    let mut facts = InfFacts {
        catalog_file: None,
        driver_ver: None,
        source_files: Vec::new(),
        hardware_ids: Vec::new(),
    };
    let mut section = String::new();
    let mut models: Vec<String> = Vec::new();
    let mut lines: Vec<(String, String)> = Vec::new();
    for raw in text.lines() {
        let line = raw.split(';').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_ascii_lowercase();
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (line.to_string(), String::new()),
        };
        if section == "version" {
            match key.to_ascii_lowercase().as_str() {
                "catalogfile" | "catalogfile.ntamd64" => facts.catalog_file = Some(value.clone()),
                "driverver" => facts.driver_ver = Some(value.clone()),
                _ => {}
            }
        } else if section == "sourcedisksfiles" || section.starts_with("sourcedisksfiles.") {
            facts.source_files.push(key.clone());
        } else if section == "manufacturer" {
            // `%Name% = Models, TargetOS...`: the models sections are Models.TargetOS.
            let mut parts = value.split(',').map(|p| p.trim().to_ascii_lowercase());
            if let Some(base) = parts.next() {
                let decorations: Vec<String> = parts.collect();
                if decorations.is_empty() {
                    models.push(base);
                } else {
                    models.extend(decorations.iter().map(|d| format!("{base}.{d}")));
                }
            }
        }
        lines.push((section.clone(), line.to_string()));
    }
    for (sect, line) in &lines {
        if models.contains(sect) {
            if let Some((_, v)) = line.split_once('=') {
                for id in v.split(',').skip(1) {
                    let id = id.trim().to_ascii_lowercase();
                    if !id.is_empty() && !facts.hardware_ids.contains(&id) {
                        facts.hardware_ids.push(id);
                    }
                }
            }
        }
    }
    facts
}

// --- writing -----------------------------------------------------------------------------

fn utf16le_nul(s: &str) -> Vec<u8> {
    s.encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect()
}

fn from_utf16le_nul(b: &[u8]) -> String {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units)
}

fn name_value(name: &str, value: &str) -> Result<CatNameValue, Error> {
    Ok(CatNameValue {
        name: BmpString::from_utf8(name)?,
        flags: NAMEVALUE_FLAGS,
        value: OctetString::new(utf16le_nul(value))?,
    })
}

fn attribute(oid: ObjectIdentifier, value: Any) -> Result<Attribute, Error> {
    Ok(Attribute {
        oid,
        values: SetOfVec::try_from(vec![value])?,
    })
}

fn null_params(oid: ObjectIdentifier) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned {
        oid,
        parameters: Some(Any::null()),
    }
}

/// `file [2] EXPLICIT SpcString { unicode [0] IMPLICIT "" }`: the empty SpcLink catalogs carry
/// where a signed file would name itself.
fn empty_link() -> Result<Any, Error> {
    let link = ContextSpecific {
        tag_number: TagNumber::N2,
        tag_mode: TagMode::Explicit,
        value: ContextSpecific {
            tag_number: TagNumber::N0,
            tag_mode: TagMode::Implicit,
            value: BmpString::from_utf8("")?,
        },
    };
    Ok(Any::encode_from(&link)?)
}

/// SpcIndirectDataContent for a member: SpcPeImageData for a PE image (flags
/// includeResources | includeImportAddressTable, as Inf2Cat's catalogs are reported to carry), SPC_CAB_DATA with an empty
/// link for a flat file, and the SHA-256 digest.
fn indirect_data(pe: bool, sha256: &[u8]) -> Result<SpcIndirectDataContent, Error> {
    let (kind, value) = if pe {
        let data = SpcPeImageData {
            flags: BitString::new(5, [0xa0])?,
            file: empty_link()?,
        };
        (oid::SPC_PE_IMAGE_DATA, Any::encode_from(&data)?)
    } else {
        (oid::SPC_CAB_DATA, empty_link()?)
    };
    Ok(SpcIndirectDataContent {
        data: SpcAttributeTypeAndOptionalValue { kind, value },
        message_digest: DigestInfo {
            algorithm: null_params(oid::SHA256),
            digest: OctetString::new(sha256)?,
        },
    })
}

/// CAT_MEMBERINFO2's value: an empty context-specific primitive whose tag number names the
/// kind of subject interface package that hashed the file. MakeCat's version 2 catalog (the
/// osslsigncode project's `tests/files/unsigned.cat`, tests/package_signing.rs) writes `[0]`
/// for a PE image, `[1]` for a cabinet and `[2]` for a flat file, on both twins of a file.
pub const MEMBERINFO2_PE: u8 = 0;
/// CAT_MEMBERINFO2 `[2]`: a file hashed flat.
pub const MEMBERINFO2_FLAT: u8 = 2;

/// The two members of one file: tagged by its SHA-1 and by its SHA-256 hash (raw bytes, as
/// version 2 catalogs tag them). As in MakeCat's version 2 catalogs, the SHA-1 twin carries
/// only CAT_MEMBERINFO2; the SHA-256 member carries it too, with the file name, the OS
/// attribute and the indirect data with the digest.
fn members(file: &FileHashes) -> Result<[TrustedSubject; 2], Error> {
    let kind = if file.pe {
        MEMBERINFO2_PE
    } else {
        MEMBERINFO2_FLAT
    };
    let member_info = attribute(
        oid::CAT_MEMBERINFO2,
        Any::new(
            Tag::ContextSpecific {
                constructed: false,
                number: TagNumber::new(kind),
            },
            Vec::<u8>::new(),
        )?,
    )?;
    let full = vec![
        member_info.clone(),
        attribute(
            oid::CAT_NAMEVALUE,
            Any::encode_from(&name_value("File", &file.name)?)?,
        )?,
        attribute(
            oid::CAT_NAMEVALUE,
            Any::encode_from(&name_value("OSAttr", OS_ATTR)?)?,
        )?,
        attribute(
            oid::SPC_INDIRECT_DATA,
            Any::encode_from(&indirect_data(file.pe, &file.sha256)?)?,
        )?,
    ];
    Ok([
        TrustedSubject {
            identifier: OctetString::new(file.sha1.clone())?,
            attributes: SetOfVec::try_from(vec![member_info])?,
        },
        TrustedSubject {
            identifier: OctetString::new(file.sha256.clone())?,
            attributes: SetOfVec::try_from(full)?,
        },
    ])
}

/// Writes the unsigned catalog (DER) for `files`, with the catalog-level name-value
/// attributes `catalog_attrs` (e.g. "OS", "HWID1") and `this_update` as its time.
pub fn write_catalog(
    files: &[FileHashes],
    catalog_attrs: &[(String, String)],
    this_update: std::time::SystemTime,
) -> Result<Vec<u8>, Error> {
    let mut subjects = Vec::new();
    for f in files {
        subjects.extend(members(f)?);
    }
    // Inf2Cat's catalogs list the members in the order of their tags' bytes.
    subjects.sort_by(|a, b| a.identifier.as_bytes().cmp(b.identifier.as_bytes()));
    // MakeCat keeps one member per tag, so two files with the same contents would leave one of
    // them unnamed; no package of ours has such a pair, so refuse rather than guess.
    if let Some(w) = subjects
        .windows(2)
        .find(|w| w[0].identifier == w[1].identifier)
    {
        return err(format!(
            "two files have the same contents (hash {})",
            hex(w[0].identifier.as_bytes())
        ));
    }
    let mut extensions = Vec::new();
    for (name, value) in catalog_attrs {
        extensions.push(Extension {
            extn_id: oid::CAT_NAMEVALUE,
            critical: false,
            extn_value: OctetString::new(name_value(name, value)?.to_der()?)?,
        });
    }
    // The list identifier only has to tell catalogs apart; deriving it from the members keeps
    // the catalog a function of the package's contents and time.
    let mut id = Sha256::new();
    for f in files {
        id.update(&f.sha256);
    }
    let ctl = CertificateTrustList {
        subject_usage: vec![oid::CATALOG_LIST],
        list_identifier: OctetString::new(&id.finalize()[..16])?,
        this_update: UtcTime::from_system_time(this_update)?,
        subject_algorithm: null_params(oid::CATALOG_LIST_MEMBER2),
        trusted_subjects: subjects,
        extensions: (!extensions.is_empty()).then_some(extensions),
    };
    let signed = cms::signed_data::SignedData {
        version: cms::content_info::CmsVersion::V1,
        digest_algorithms: SetOfVec::new(),
        encap_content_info: cms::signed_data::EncapsulatedContentInfo {
            econtent_type: oid::CTL,
            // PKCS #7 form: the content itself under [0], not wrapped in an OCTET STRING as
            // CMS would for a non-data type. Windows and osslsigncode read catalogs this way.
            econtent: Some(Any::encode_from(&ctl)?),
        },
        certificates: None,
        crls: None,
        signer_infos: cms::signed_data::SignerInfos(SetOfVec::new()),
    };
    let info = cms::content_info::ContentInfo {
        content_type: oid::SIGNED_DATA,
        content: Any::encode_from(&signed)?,
    };
    Ok(info.to_der()?)
}

// --- reading -----------------------------------------------------------------------------

/// What a digest in a member's indirect data is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    PeImage,
    Flat,
}

/// One member of a catalog, as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's tag: the file's hash.
    pub tag: Vec<u8>,
    /// Its "File" attribute.
    pub file: Option<String>,
    /// Its "OSAttr" attribute.
    pub os_attr: Option<String>,
    /// The indirect data: what the digest is of, its algorithm and the digest.
    pub digest: Option<(Subject, ObjectIdentifier, Vec<u8>)>,
    /// CAT_MEMBERINFO2's tag number ([`MEMBERINFO2_PE`], [`MEMBERINFO2_FLAT`]), if present.
    pub member_info2: Option<u8>,
}

/// A catalog, as read back.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub subject_algorithm: ObjectIdentifier,
    pub members: Vec<Member>,
    /// Catalog-level name-value attributes.
    pub attributes: Vec<(String, String)>,
    /// Number of signers (0 for the unsigned catalog).
    pub signers: usize,
}

fn bmp_to_string(b: &BmpString) -> String {
    let units: Vec<u16> = b
        .as_bytes()
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

/// Parses a catalog (signed or not).
pub fn read_catalog(der_bytes: &[u8]) -> Result<Catalog, Error> {
    let info = cms::content_info::ContentInfo::from_der(der_bytes)?;
    if info.content_type != oid::SIGNED_DATA {
        return err(format!(
            "content type {} is not signedData",
            info.content_type
        ));
    }
    let signed: cms::signed_data::SignedData = info.content.decode_as()?;
    let encap = &signed.encap_content_info;
    if encap.econtent_type != oid::CTL {
        return err(format!("content {} is not szOID_CTL", encap.econtent_type));
    }
    let Some(content) = &encap.econtent else {
        return err("the SignedData carries no trust list");
    };
    let ctl: CertificateTrustList = content.decode_as()?;
    if ctl.subject_usage != [oid::CATALOG_LIST] {
        return err("subject usage is not szOID_CATALOG_LIST");
    }
    let mut members = Vec::new();
    for s in &ctl.trusted_subjects {
        let mut m = Member {
            tag: s.identifier.as_bytes().to_vec(),
            file: None,
            os_attr: None,
            digest: None,
            member_info2: None,
        };
        for a in s.attributes.iter() {
            for v in a.values.iter() {
                if a.oid == oid::CAT_NAMEVALUE {
                    let nv: CatNameValue = v.decode_as()?;
                    let value = from_utf16le_nul(nv.value.as_bytes());
                    match bmp_to_string(&nv.name).as_str() {
                        "File" => m.file = Some(value),
                        "OSAttr" => m.os_attr = Some(value),
                        _ => {}
                    }
                } else if a.oid == oid::CAT_MEMBERINFO2 {
                    m.member_info2 = Some(match v.tag() {
                        Tag::ContextSpecific { number, .. } => number.value(),
                        _ => return err("CAT_MEMBERINFO2 is not a context-specific tag"),
                    });
                } else if a.oid == oid::SPC_INDIRECT_DATA {
                    let ind: SpcIndirectDataContent = v.decode_as()?;
                    let subject = match ind.data.kind {
                        k if k == oid::SPC_PE_IMAGE_DATA => Subject::PeImage,
                        k if k == oid::SPC_CAB_DATA => Subject::Flat,
                        k => return err(format!("unknown indirect data type {k}")),
                    };
                    m.digest = Some((
                        subject,
                        ind.message_digest.algorithm.oid,
                        ind.message_digest.digest.as_bytes().to_vec(),
                    ));
                }
            }
        }
        members.push(m);
    }
    let mut attributes = Vec::new();
    for e in ctl.extensions.iter().flatten() {
        if e.extn_id == oid::CAT_NAMEVALUE {
            let nv = CatNameValue::from_der(e.extn_value.as_bytes())?;
            attributes.push((
                bmp_to_string(&nv.name),
                from_utf16le_nul(nv.value.as_bytes()),
            ));
        }
    }
    Ok(Catalog {
        subject_algorithm: ctl.subject_algorithm.oid,
        members,
        attributes,
        signers: signed.signer_infos.0.len(),
    })
}

// --- the package -------------------------------------------------------------------------

/// The files a package's catalog lists: the INF itself and every file of its
/// `[SourceDisksFiles]`, with their hashes, read from `dir`.
pub fn package_files(dir: &Path, inf_name: &str) -> Result<(InfFacts, Vec<FileHashes>), Error> {
    let read = |name: &str| {
        std::fs::read(dir.join(name))
            .map_err(|e| Error(format!("{}: {e}", dir.join(name).display())))
    };
    let inf_bytes = read(inf_name)?;
    let facts = read_inf(&String::from_utf8_lossy(&inf_bytes));
    let mut files = vec![hash_file(inf_name, &inf_bytes)];
    for name in &facts.source_files {
        files.push(hash_file(name, &read(name)?));
    }
    Ok((facts, files))
}

/// Checks a catalog against the package: exactly two members per file (the INF and its source
/// files), tagged by the file's SHA-1 and SHA-256 hashes, named after it, the SHA-256 one with
/// the digest as indirect data of the right kind. Returns every mismatch found.
pub fn check_package(dir: &Path, inf_name: &str, catalog: &Catalog) -> Vec<String> {
    let mut problems = Vec::new();
    let files = match package_files(dir, inf_name) {
        Ok((_, files)) => files,
        Err(e) => return vec![e.0],
    };
    if catalog.subject_algorithm != oid::CATALOG_LIST_MEMBER2 {
        problems.push(format!(
            "subject algorithm {} is not szOID_CATALOG_LIST_MEMBER2",
            catalog.subject_algorithm
        ));
    }
    let mut matched = vec![false; catalog.members.len()];
    for f in &files {
        for (algorithm, hash) in [("SHA-1", &f.sha1), ("SHA-256", &f.sha256)] {
            let found = catalog.members.iter().position(|m| &m.tag == hash);
            let Some(i) = found else {
                problems.push(format!(
                    "{}: no member tagged with its {algorithm} hash {}",
                    f.name,
                    hex(hash)
                ));
                continue;
            };
            matched[i] = true;
            let m = &catalog.members[i];
            let kind = if f.pe {
                MEMBERINFO2_PE
            } else {
                MEMBERINFO2_FLAT
            };
            if m.member_info2 != Some(kind) {
                problems.push(format!(
                    "{}: the {algorithm} member's CAT_MEMBERINFO2 is {:?}, not [{kind}]",
                    f.name, m.member_info2
                ));
            }
            if algorithm == "SHA-256" && m.file.as_deref() != Some(f.name.as_str()) {
                problems.push(format!(
                    "{}: the {algorithm} member is named {:?}",
                    f.name, m.file
                ));
            }
            if algorithm == "SHA-256" {
                let kind = if f.pe {
                    Subject::PeImage
                } else {
                    Subject::Flat
                };
                if m.digest != Some((kind, oid::SHA256, f.sha256.clone())) {
                    problems.push(format!(
                        "{}: the SHA-256 member's digest is {:?}, not the file's ({kind:?}, {})",
                        f.name,
                        m.digest
                            .as_ref()
                            .map(|(k, a, d)| (k, a.to_string(), hex(d))),
                        hex(&f.sha256)
                    ));
                }
            }
        }
    }
    for (m, used) in catalog.members.iter().zip(&matched) {
        if !used {
            problems.push(format!(
                "member {} ({:?}) is no file of the package",
                hex(&m.tag),
                m.file
            ));
        }
    }
    problems
}

// The images' version resources: written by the build scripts, read back here.
#[allow(dead_code)]
#[path = "../../../build/version_res.rs"]
mod version_res;

/// The version part of a `DriverVer` value (`MM/DD/YYYY,a.b.c.d`) as the 64-bit value Windows
/// compares with an image's FILEVERSION (`a<<16|b : c<<16|d`); `None` when it is not four
/// 16-bit decimal numbers.
pub fn driver_ver_version(driver_ver: &str) -> Option<u64> {
    let (_, version) = driver_ver.split_once(',')?;
    let mut out = 0u64;
    let mut parts = 0;
    for p in version.trim().split('.') {
        let n: u16 = p.trim().parse().ok()?;
        out = (out << 16) | u64::from(n);
        parts += 1;
    }
    (parts == 4).then_some(out)
}

/// The package's one-version rule: every PE image the INF installs carries the INF's
/// `DriverVer` as its `VS_VERSION_INFO` FILEVERSION. For the kernel-mode driver Windows
/// requires it (Dxgkrnl fails AddDevice with 0xC0000182 on a difference once either major
/// number is 21 or more; docs/windows-bringup.md BR-14); for the user-mode library it is this
/// project's rule (both are stamped from one version). Returns every mismatch found.
pub fn check_file_versions(dir: &Path, facts: &InfFacts) -> Vec<String> {
    let Some(driver_ver) = facts.driver_ver.as_deref() else {
        return vec!["the INF has no DriverVer".into()];
    };
    let Some(want) = driver_ver_version(driver_ver) else {
        return vec![format!(
            "DriverVer {driver_ver:?} is not MM/DD/YYYY,a.b.c.d"
        )];
    };
    // The four 16-bit fields of a 64-bit file version, high to low.
    let dotted = |v: u64| {
        version_res::dotted([48, 32, 16, 0].map(|s| u16::try_from((v >> s) & 0xFFFF).unwrap_or(0)))
    };
    let mut problems = Vec::new();
    for name in &facts.source_files {
        let Ok(data) = std::fs::read(dir.join(name)) else {
            problems.push(format!("{name}: cannot be read"));
            continue;
        };
        if !data.starts_with(b"MZ") {
            continue;
        }
        match version_res::read_file_version(&data) {
            Ok(v) if v == want => {}
            Ok(0) => problems.push(format!(
                "{name}: no VS_VERSION_INFO file version (DriverVer is {})",
                dotted(want)
            )),
            Ok(v) => problems.push(format!(
                "{name}: file version {} is not DriverVer's {}",
                dotted(v),
                dotted(want)
            )),
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    problems
}

/// Upper-case hex, as Windows shows catalog tags.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: &str = include_str!("../../../inf/rvgpu.inf");

    #[test]
    fn reads_the_repository_inf() {
        let facts = read_inf(INF);
        assert_eq!(facts.catalog_file.as_deref(), Some("rvgpu.cat"));
        assert_eq!(
            facts.driver_ver.as_deref(),
            Some(""),
            "unstamped in the source"
        );
        assert_eq!(facts.source_files, ["rvgpu.sys", "rvgpu_umd.dll"]);
        assert_eq!(facts.hardware_ids, ["pci\\ven_1234&dev_5256"]);
    }

    #[test]
    fn a_written_catalog_reads_back() {
        let files = [
            hash_file("a.inf", b"[Version]\n"),
            FileHashes {
                name: "b.sys".into(),
                pe: true,
                sha1: vec![0x11; 20],
                sha256: vec![0x22; 32],
            },
        ];
        let attrs = [("OS".to_string(), CATALOG_OS.to_string())];
        let der = write_catalog(&files, &attrs, std::time::SystemTime::now()).unwrap();
        let cat = read_catalog(&der).unwrap();
        assert_eq!(cat.signers, 0);
        assert_eq!(cat.subject_algorithm, oid::CATALOG_LIST_MEMBER2);
        assert_eq!(cat.attributes, attrs);
        assert_eq!(cat.members.len(), 4);
        let tags: Vec<&[u8]> = cat.members.iter().map(|m| m.tag.as_slice()).collect();
        let mut sorted = tags.clone();
        sorted.sort();
        assert_eq!(tags, sorted, "members in tag order");
        let pe = cat.members.iter().find(|m| m.tag == [0x22; 32]).unwrap();
        assert_eq!(pe.file.as_deref(), Some("b.sys"));
        assert_eq!(pe.os_attr.as_deref(), Some(OS_ATTR));
        assert_eq!(
            pe.digest,
            Some((Subject::PeImage, oid::SHA256, vec![0x22; 32]))
        );
        assert_eq!(pe.member_info2, Some(MEMBERINFO2_PE));
        let sha1_member = cat.members.iter().find(|m| m.tag == [0x11; 20]).unwrap();
        assert_eq!(sha1_member.member_info2, Some(MEMBERINFO2_PE));
        assert!(sha1_member.digest.is_none() && sha1_member.file.is_none());
    }

    #[test]
    fn files_with_the_same_contents_are_refused() {
        let files = [hash_file("a.inf", b"x"), hash_file("b.inf", b"x")];
        let e = write_catalog(&files, &[], std::time::SystemTime::now()).unwrap_err();
        assert!(e.0.contains("same contents"), "{e}");
    }

    #[test]
    fn only_pe_images_get_authenticode_hashes() {
        assert!(pe_hashed_ranges(b"MZ not really").is_none());
        assert!(pe_hashed_ranges(INF.as_bytes()).is_none());
        assert!(!hash_file("rvgpu.inf", INF.as_bytes()).pe);
    }
}
