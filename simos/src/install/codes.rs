//! The codes Windows gives when it refuses a driver package or its image, by where they come
//! from. SetupAPI's are `APPLICATION_ERROR_MASK | ERROR_SEVERITY_ERROR | n` (setupapi.h, in
//! the Windows SDK; pnputil and setupapi.dev.log print them as 0xE0000nnn); the trust
//! provider's are HRESULTs (winerror.h); the kernel's are NTSTATUS values (ntstatus.h); the
//! device's problem code is what Device Manager shows (cfg.h, "Device Manager Error
//! Messages" on learn.microsoft.com).

/// setupapi.h `ERROR_WRONG_INF_STYLE`: not a Windows NT INF (`[Version] Signature`).
pub const ERROR_WRONG_INF_STYLE: u32 = 0xE000_0100;
/// setupapi.h `ERROR_SECTION_NOT_FOUND`: a directive names a section the INF lacks.
pub const ERROR_SECTION_NOT_FOUND: u32 = 0xE000_0101;
/// setupapi.h `ERROR_LINE_NOT_FOUND`: a required line (directive) is missing.
pub const ERROR_LINE_NOT_FOUND: u32 = 0xE000_0102;
/// setupapi.h `ERROR_GENERAL_SYNTAX`: a line that does not parse.
pub const ERROR_GENERAL_SYNTAX: u32 = 0xE000_0003;
/// setupapi.h `ERROR_INVALID_CLASS`: the class name and class GUID disagree.
pub const ERROR_INVALID_CLASS: u32 = 0xE000_0206;
/// setupapi.h `ERROR_NO_SUCH_DEVINST`: no device has a hardware ID the INF matches
/// (`UpdateDriverForPlugAndPlayDevices`, which `pnputil /install` uses).
pub const ERROR_NO_SUCH_DEVINST: u32 = 0xE000_020B;
/// setupapi.h `ERROR_NO_CATALOG_FOR_OEM_INF`: the INF names no catalog, or it is absent.
pub const ERROR_NO_CATALOG_FOR_OEM_INF: u32 = 0xE000_022F;
/// setupapi.h `ERROR_AUTHENTICODE_TRUST_NOT_ESTABLISHED`: the catalog's publisher is not in
/// the TrustedPublisher store (an interactive install would ask the user).
pub const ERROR_AUTHENTICODE_TRUST_NOT_ESTABLISHED: u32 = 0xE000_0242;
/// setupapi.h `ERROR_SIGNATURE_OSATTRIBUTE_MISMATCH`: the member's OSAttr does not cover
/// this Windows version.
pub const ERROR_SIGNATURE_OSATTRIBUTE_MISMATCH: u32 = 0xE000_0244;
/// setupapi.h `ERROR_FILE_HASH_NOT_IN_CATALOG`: "The hash for the file is not present in the
/// specified catalog file. The file is likely corrupt or the victim of tampering."
pub const ERROR_FILE_HASH_NOT_IN_CATALOG: u32 = 0xE000_024B;
/// winerror.h `ERROR_FILE_NOT_FOUND`: a file the INF copies is not in the package.
pub const ERROR_FILE_NOT_FOUND: u32 = 2;
/// winerror.h `TRUST_E_NOSIGNATURE`: no signature was present in the subject.
pub const TRUST_E_NOSIGNATURE: u32 = 0x800B_0100;
/// winerror.h `TRUST_E_BAD_DIGEST`: the digital signature of the object did not verify.
pub const TRUST_E_BAD_DIGEST: u32 = 0x8009_6010;
/// winerror.h `CERT_E_UNTRUSTEDROOT`: a chain that ends in a root the Root store lacks.
pub const CERT_E_UNTRUSTEDROOT: u32 = 0x800B_0109;
/// winerror.h `CERT_E_CHAINING`: no chain to a root could be built.
pub const CERT_E_CHAINING: u32 = 0x800B_010A;
/// ntstatus.h `STATUS_INVALID_IMAGE_HASH`: code integrity finds no valid signature for the
/// image's hash (a file changed after signing, or a test signature without test signing).
pub const STATUS_INVALID_IMAGE_HASH: u32 = rvgpu_ddi::ntstatus::STATUS_INVALID_IMAGE_HASH as u32;
/// Device Manager Code 52, `CM_PROB_UNSIGNED_DRIVER`: "Windows cannot verify the digital
/// signature for the drivers required for this device."
pub const CM_PROB_UNSIGNED_DRIVER: u32 = 52;
/// Device Manager Code 39, `CM_PROB_DRIVER_FAILED_LOAD`: the driver's image did not load.
pub const CM_PROB_DRIVER_FAILED_LOAD: u32 = 39;
