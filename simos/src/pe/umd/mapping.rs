//! One process's copy of the DLL.
//!
//! Windows maps a DLL into every process that loads it: its read-only sections (code,
//! constants) are the same pages in all of them, its writable sections (`.data`, `.bss`, any
//! section with `IMAGE_SCN_MEM_WRITE`) are copy-on-write, so each process has its own statics,
//! initialised from the file; only a section also marked `IMAGE_SCN_MEM_SHARED` is one copy
//! for all (<https://learn.microsoft.com/en-us/windows/win32/debug/pe-format#section-flags>,
//! <https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-data>).
//!
//! The simulated processes share one host address space, so a private page cannot sit at the
//! same address in two of them: each process maps the whole image afresh, at addresses of its
//! own, relocated and bound like the first. Its code is the same instructions, its writable
//! sections start as the file has them, and what one process writes there no other process's
//! calls see. A writable shared section cannot be modelled so (its pointers would be relocated
//! for one base): the DLL load refuses it ([`super::UmdImage::load`]).

use object::pe;

use crate::pe::arena;
use crate::pe::cpu;
use crate::pe::image;

/// A process's mapping of the DLL, registered with the processors; its addresses are never
/// handed out again once it drops.
pub(super) struct Mapping {
    pub(super) image: image::Image,
    /// The registration of its special instructions (`pause`).
    specials: u64,
}

impl Mapping {
    /// Registers `image` (freshly mapped, imports bound) with the processors: its range as
    /// memory, its instructions counted as user mode's (counting mode), its `pause`s.
    pub(super) fn new(image: image::Image) -> Self {
        cpu::register_range(image.base, image.size, cpu::Range::Ram);
        cpu::register_user_count_range(image.base, image.base + image.size);
        let specials = cpu::register_specials(image.specials.clone().into());
        Self { image, specials }
    }

    /// The address of export `name` in this mapping.
    pub(super) fn export(&self, name: &str) -> Option<usize> {
        self.image
            .exports
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| *a)
    }

    /// The writable sections (each process's own).
    pub(super) fn writable(&self) -> impl Iterator<Item = &image::Section> {
        self.image
            .sections
            .iter()
            .filter(|s| s.characteristics & pe::IMAGE_SCN_MEM_WRITE != 0)
    }
}

impl Drop for Mapping {
    /// The process is gone: no call runs its copy any more (a call holds the process).
    fn drop(&mut self) {
        cpu::unregister_specials(self.specials);
        cpu::unregister_range(self.image.base);
        arena::release(self.image.base, self.image.size);
    }
}

/// The first writable section that is also shared, by name: what a per-process mapping cannot
/// model.
pub(super) fn writable_shared(image: &image::Image) -> Option<&str> {
    let both = pe::IMAGE_SCN_MEM_WRITE | pe::IMAGE_SCN_MEM_SHARED;
    image
        .sections
        .iter()
        .find(|s| s.characteristics & both == both)
        .map(|s| s.name.as_str())
}
