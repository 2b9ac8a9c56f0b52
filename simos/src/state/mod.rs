//! What each Windows component keeps, apart from what it does: VidMm's books ([`vidmm`]),
//! VidSch's ([`vidsch`]), the fences' and fence logs' ([`sync`]) and UMS's ([`ums`]). The
//! adapter core holds one of each; the components' operations (`crate::vidmm`,
//! `crate::vidsch`, `crate::sync`, `crate::ums`) sit above the adapter and work on them. A
//! layer of leaves: nothing here imports the adapter or an operation, so the adapter can
//! hold these without a circle.

pub mod sync;
pub mod ums;
pub mod vidmm;
pub mod vidsch;
