//! Host addresses that are never reused: where images, stub pages and register windows live.
//!
//! The emulator sees host memory at the host's own addresses (so a pointer means the same on
//! both sides) and caches translated code by address. If a dropped machine's image were
//! unmapped and another image mapped at the same address, an emulated processor could run a
//! stale translation or a stale instruction hook. So every such range comes from one large
//! reservation (inaccessible until handed out, never handed out twice); a released range is
//! made inaccessible again and its memory returned to the host, but its addresses stay taken.

use std::sync::Mutex;

use crate::base::lock::lock;

/// Size of the reservation: address space only (no memory is committed until a range is used).
const RESERVATION: usize = 1 << 38;
const PAGE: usize = 4096;

struct Arena {
    base: usize,
    /// Next free address for memory (the lower half).
    next: usize,
    /// Next free address for register windows (the upper half, so that one memory hook can
    /// cover every window and nothing else).
    next_window: usize,
    end: usize,
}

/// Where the windows half starts.
const WINDOWS_OFFSET: usize = RESERVATION / 2;

static ARENA: Mutex<Option<Arena>> = Mutex::new(None);

fn reserve() -> Result<Arena, String> {
    // SAFETY: a fresh private anonymous mapping with no access; it overlaps nothing.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            RESERVATION,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err("cannot reserve address space for the PE image".into());
    }
    let base = p as usize;
    Ok(Arena {
        base,
        next: base,
        next_window: base + WINDOWS_OFFSET,
        end: base + RESERVATION,
    })
}

/// What kind of range to hand out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Readable and writable host memory (zero-filled).
    ReadWrite,
    /// Address space only: a register window the emulator routes to the device.
    Window,
}

/// Hands out `len` bytes (rounded up to pages) at fresh addresses; returns the base.
pub fn alloc(len: usize, access: Access) -> Result<usize, String> {
    let len = len.checked_add(PAGE - 1).ok_or("range too large")? & !(PAGE - 1);
    let mut g = lock(&ARENA);
    if g.is_none() {
        *g = Some(reserve()?);
    }
    let a = g.as_mut().ok_or("no arena")?;
    let (cursor, limit) = match access {
        Access::ReadWrite => (&mut a.next, a.base + WINDOWS_OFFSET),
        Access::Window => (&mut a.next_window, a.end),
    };
    let base = *cursor;
    let end = base
        .checked_add(len)
        .filter(|&e| e <= limit)
        .ok_or("address arena exhausted")?;
    // A guard page between ranges: an overrun faults instead of reaching a neighbour.
    *cursor = end + PAGE;
    if access == Access::ReadWrite {
        // SAFETY: [base, end) lies inside our reservation and belongs to no one else.
        let r = unsafe {
            libc::mprotect(
                base as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if r != 0 {
            return Err("mprotect failed for a PE range".into());
        }
    }
    Ok(base)
}

/// Returns the memory of a range handed out by [`alloc`] to the host and makes it
/// inaccessible; its addresses are never handed out again.
pub fn release(base: usize, len: usize) {
    let len = (len + PAGE - 1) & !(PAGE - 1);
    // SAFETY: the range came from `alloc` and nothing uses it any more (its owner is gone);
    // remapping it PROT_NONE drops its pages.
    unsafe {
        libc::mmap(
            base as *mut libc::c_void,
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
            -1,
            0,
        );
    }
}

/// The half of the arena register windows are placed in, `[start, end)`.
pub fn window_span() -> Result<(usize, usize), String> {
    let mut g = lock(&ARENA);
    if g.is_none() {
        *g = Some(reserve()?);
    }
    let a = g.as_ref().ok_or("no arena")?;
    Ok((a.base + WINDOWS_OFFSET, a.end))
}

/// Whether `addr` lies in the arena (its ranges are mapped by their owners, never on demand).
pub fn contains(addr: usize) -> bool {
    lock(&ARENA)
        .as_ref()
        .is_some_and(|a| (a.base..a.end).contains(&addr))
}
