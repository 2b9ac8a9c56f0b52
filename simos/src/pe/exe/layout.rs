//! Where things live in the process's data block (the C runtime's exported variables, its
//! streams and locale, the PEB and the TEB).

/// `_commode` (int).
pub const COMMODE: usize = 0x000;
/// `_fmode` (int).
pub const FMODE: usize = 0x008;
/// `__initenv` (char **).
pub const INITENV: usize = 0x010;
/// `_acmdln` (char *).
pub const ACMDLN: usize = 0x018;
/// The main thread's `errno`.
pub const ERRNO: usize = 0x020;
/// `struct lconv` of the "C" locale.
pub const LCONV: usize = 0x040;
/// Its strings: "." then "".
pub const LCONV_STRINGS: usize = 0x0C0;
/// `_iob`: msvcrt's 20 `FILE`s of 48 bytes.
pub const IOB: usize = 0x100;
/// The message buffer `strerror` returns.
pub const STRERROR: usize = 0x500;
/// The TEB's `ThreadLocalStoragePointer` array (one slot: the image's index 0).
pub const TLS_ARRAY: usize = 0x600;
/// The PEB.
pub const PEB: usize = 0x1000;
/// The TEB of the process's one thread.
pub const TEB: usize = 0x2000;
/// The whole block.
pub const SIZE: usize = 0x4000;
