//! The bridge's trace (`RVGPU_PE_TRACE`): stub calls, register-window accesses and faults on
//! standard error.

/// Whether the trace is on (read once).
pub(crate) fn trace() -> bool {
    static T: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *T.get_or_init(|| std::env::var_os("RVGPU_PE_TRACE").is_some())
}
