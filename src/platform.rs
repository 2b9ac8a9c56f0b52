//! The kernel platforms this image provides. The host platform lives in the simulated OS
//! (`simos`); only the Windows kernel one is here.

#[cfg(kernel_image)]
pub mod windows;
