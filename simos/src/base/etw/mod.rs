//! ETW's state in the kernel: the provider registrations (`EtwRegister`), each machine's
//! session and the events it recorded ([`session`]), decoded from their TraceLogging metadata
//! ([`decode`]). Names nothing above the base, so the kernel's services and the machine state
//! hold it; enabling a machine's session and Dxgkrnl's `DxgkDdiControlEtwLogging` are above, in
//! `crate::etw`.

pub mod decode;
pub mod session;
