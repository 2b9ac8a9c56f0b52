//! rvgpu.sys driver image (placeholder while the workspace is laid out).
#![cfg_attr(not(test), no_std)]
