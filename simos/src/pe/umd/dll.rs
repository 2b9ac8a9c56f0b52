//! The DLL file as the simulated OS keeps it once per host process: its bytes, its layout and
//! what its imports are bound to; each process maps a copy of it (the loading and the binding
//! are the parent's).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::mapping::Mapping;
use crate::pe::cpu::Stubs;
use crate::pe::image;

/// The DLL file, loaded once per host process per file (like the driver image): its bytes,
/// what its imports bind to and the stubs of the thunks it finds with `GetProcAddress`, shared
/// by every process's copy (`mapping`; a stub runs for the calling thread's process).
pub struct UmdImage {
    pub(super) data: Vec<u8>,
    /// A first mapping of the file, which never runs: the layout and the special instructions
    /// every process's copy has.
    pub(super) layout: image::Image,
    pub(super) path: PathBuf,
    pub(super) _stubs: Arc<Stubs>,
    /// What each import (module, name) is bound to: a stub, or the shared copy of an ntdll
    /// routine's machine code.
    pub(super) targets: HashMap<(String, String), usize>,
    /// `GetProcAddress(gdi32, name)` answers: the run-time thunks' stubs.
    pub(super) runtime: HashMap<&'static str, usize>,
}

impl std::fmt::Debug for UmdImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UmdImage")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl UmdImage {
    /// A new copy of the DLL for one process: mapped from the file, its imports bound.
    pub(super) fn map(&self) -> Result<Mapping, String> {
        let img = image::Image::map_again(&self.data, &self.layout)?;
        for i in &img.imports {
            let at = self
                .targets
                .get(&(i.module.clone(), i.name.clone()))
                .ok_or_else(|| format!("{}!{} is not bound", i.module, i.name))?;
            img.bind(i, *at);
        }
        Ok(Mapping::new(img))
    }

    /// The DLL's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The DLL's imports, as `module!name`.
    pub fn imports(&self) -> Vec<String> {
        self.layout
            .imports
            .iter()
            .map(|i| format!("{}!{}", i.module, i.name))
            .collect()
    }

    /// The DLL's named exports.
    pub fn exports(&self) -> Vec<String> {
        self.layout.exports.iter().map(|(n, _)| n.clone()).collect()
    }

    /// `GetProcAddress(gdi32, name)`.
    pub(super) fn runtime_thunk(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?;
        self.runtime.get(name).copied()
    }
}
