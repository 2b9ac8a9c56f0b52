//! Stubs: the addresses the image calls to leave it for a host routine (an ntoskrnl import, a
//! Dxgkrnl callback): an `int3` whose hook runs the routine, then a `ret`.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::memory::{register_range, unregister_range, Range};
use crate::pe::arena;

/// What a stub does when the image calls it: its result for RAX, or the call does not return.
pub enum StubResult {
    /// Return this in RAX.
    Return(u64),
    /// The routine does not return (`KeBugCheckEx`): the image stops here.
    NoReturn,
    /// The routine raises this exception (an NTSTATUS) in a user-mode caller (an access
    /// violation on a bad pointer to `AcquireSRWLockExclusive`): nothing in the DLL handles it,
    /// so the process ends there ([`Stop::UserException`](super::Stop::UserException)).
    Raise(u32),
}

/// A host routine the image can call.
pub type StubFn = Arc<dyn Fn(&[u64; 12]) -> StubResult + Send + Sync>;

/// Bytes per stub: `int3` (the hook runs the routine), `ret` (back to the caller), and `int3`
/// padding.
const STUB_STRIDE: usize = 16;

/// A stub's bytes.
const STUB: [u8; 2] = [0xCC, 0xC3];

/// A page of stubs.
pub struct Stubs {
    base: usize,
    len: usize,
    routines: RwLock<Vec<(Arc<str>, StubFn)>>,
}

static STUB_PAGES: RwLock<BTreeMap<usize, Arc<Stubs>>> = RwLock::new(BTreeMap::new());

impl Stubs {
    /// Room for `count` stubs.
    pub fn new(count: usize) -> Result<Arc<Self>, String> {
        let len = count.max(1) * STUB_STRIDE;
        let base = arena::alloc(len, arena::Access::ReadWrite)?;
        // SAFETY: fresh read-write memory of `len` bytes (rounded up to a page by the arena).
        unsafe { std::ptr::write_bytes(base as *mut u8, 0xCC, len) };
        for at in (base..base + len).step_by(STUB_STRIDE) {
            // SAFETY: inside the fresh memory (`len` is a whole number of strides).
            unsafe { std::ptr::copy_nonoverlapping(STUB.as_ptr(), at as *mut u8, STUB.len()) };
        }
        register_range(base, len, Range::Ram);
        let s = Arc::new(Self {
            base,
            len,
            routines: RwLock::new(Vec::new()),
        });
        STUB_PAGES
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(base, s.clone());
        Ok(s)
    }

    /// Adds a routine; returns the address the image calls.
    pub fn add(&self, name: &str, f: StubFn) -> Result<usize, String> {
        let mut r = self.routines.write().unwrap_or_else(|p| p.into_inner());
        let at = r.len() * STUB_STRIDE;
        if at >= self.len {
            return Err("stub page full".into());
        }
        r.push((Arc::from(name), f));
        Ok(self.base + at)
    }

    fn routine(&self, addr: usize) -> Option<(Arc<str>, StubFn)> {
        let i = addr.checked_sub(self.base)? / STUB_STRIDE;
        self.routines
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(i)
            .cloned()
    }
}

impl Drop for Stubs {
    fn drop(&mut self) {
        unregister_range(self.base);
        arena::release(self.base, self.len);
    }
}

/// Forgets a stub page (its driver is gone).
pub fn drop_stubs(s: &Arc<Stubs>) {
    STUB_PAGES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&s.base);
}

pub(super) fn stub_at(addr: usize) -> Option<(Arc<str>, StubFn)> {
    let pages = STUB_PAGES.read().unwrap_or_else(|p| p.into_inner());
    let (_, s) = pages.range(..=addr).next_back()?;
    if addr >= s.base + s.len {
        return None;
    }
    s.routine(addr)
}
