//! rvgpu kernel-mode driver core.
#![cfg_attr(not(test), no_std)]
extern crate alloc;

pub mod platform;
