//! The kernel platforms this image provides. The host platform lives in the simulated OS
//! (`simos`); only the Windows kernel one is here.

#[cfg(target_os = "windows")]
pub mod windows;
