//! The [`Paging`] capability: the OS's paging of a buffer (simulation only).

use crate::backend::common::Failure;

use super::user_mode::BufferRef;

/// `count` 4 KiB pages of a buffer from page `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pages {
    pub first: u64,
    pub count: u64,
}

/// A FILL VidMm pages in with ([`Paging::page_in`]): `bytes` at `offset` of the buffer set to
/// the 32-bit `pattern`, as paging buffers on `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagingFill {
    pub node: u32,
    pub offset: u64,
    pub bytes: u64,
    pub pattern: u32,
}

/// VidMm's paging transfers into a buffer, built by the driver. Simulation only (Windows pages
/// when it decides to).
pub trait Paging {
    /// VidMm pages in part of `b` with the FILL `fill` describes, built by
    /// `DxgkDdiBuildPagingBuffer` and submitted as paging buffers on its node; returns their
    /// fence IDs. Simulation only.
    fn page_in(&mut self, b: BufferRef, fill: PagingFill) -> Result<Vec<u32>, Failure>;
}
