//! Instructions the processors handle themselves: CR8 accesses (the IRQL) and `pause` (the
//! guest lock is released while a processor spins).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, RwLock};

use rvgpu_kmd::platform::Irql;

use super::turns::outside;
use crate::base::bugcheck;
use crate::base::processor;
use crate::pe::image::Special;
use crate::pe::unicorn::{self, reg, Uc};

/// The instructions of loaded images the processors handle themselves, by registration
/// number. A dropped image's entry goes, and each processor deletes its hooks before it next
/// runs: they could never fire again (its addresses are never reused), but every hook a
/// processor has costs it time at each instruction it translates, and a process's copy of the
/// DLL registers its own.
/// One image's special instructions: (address, length, what).
pub type Sites = Arc<[(usize, u32, Special)]>;

pub(super) static SPECIALS: RwLock<BTreeMap<u64, Sites>> = RwLock::new(BTreeMap::new());
static SPECIALS_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Makes every processor handle `sites` (an image's CR8 accesses and `pause`s); returns the
/// registration to pass to [`unregister_specials`].
pub fn register_specials(sites: Sites) -> u64 {
    let seq = SPECIALS_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    SPECIALS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(seq, sites);
    seq
}

/// Forgets an image's instructions (the image is gone).
pub fn unregister_specials(seq: u64) {
    let removed = SPECIALS
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&seq)
        .is_some();
    if removed {
        UNREGISTERED.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// How many registrations have been forgotten; each processor keeps the count it last saw.
pub(super) static UNREGISTERED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A special instruction as a hook's user data: kind, register and length in one word.
pub(super) fn encode(len: u32, s: Special) -> usize {
    let (kind, reg) = match s {
        Special::ReadCr8 { reg } => (1usize, reg as usize),
        Special::WriteCr8 { reg } => (2, reg as usize),
        Special::Pause => (3, 0),
    };
    kind | (reg & 0xFFFF) << 8 | (len as usize & 0xFF) << 24
}

fn decode(word: usize) -> Option<(u32, Special)> {
    let reg = ((word >> 8) & 0xFFFF) as i32;
    let len = ((word >> 24) & 0xFF) as u32;
    let s = match word & 0xFF {
        1 => Special::ReadCr8 { reg },
        2 => Special::WriteCr8 { reg },
        3 => Special::Pause,
        _ => return None,
    };
    Some((len, s))
}

pub(super) unsafe extern "C" fn on_special(uc: Uc, addr: u64, _size: u32, user: *mut c_void) {
    let Some((len, kind)) = decode(user as usize) else {
        return;
    };
    let Some(api) = unicorn::api().ok() else {
        return;
    };
    let read = |r: i32| {
        let mut v = 0u64;
        // SAFETY: 64-bit register into a u64, on the instance running this hook.
        unsafe { (api.reg_read)(uc, r, (&raw mut v).cast()) };
        v
    };
    let write = |r: i32, v: u64| {
        // SAFETY: as above.
        unsafe { (api.reg_write)(uc, r, (&raw const v).cast()) };
    };
    match kind {
        Special::ReadCr8 { reg: r } => {
            write(r, bugcheck::kirql(processor::current_irql()));
            write(reg::RIP, addr + u64::from(len));
        }
        Special::WriteCr8 { reg: r } => {
            processor::set_irql(irql_from_cr8(read(r)));
            write(reg::RIP, addr + u64::from(len));
        }
        Special::Pause => outside(std::thread::yield_now),
    }
}

/// The IRQL a CR8 value stands for (x64: CR8 is the IRQL).
pub fn irql_from_cr8(v: u64) -> Irql {
    match v {
        0 => Irql::Passive,
        1 => Irql::Apc,
        2 => Irql::Dispatch,
        _ => Irql::Device,
    }
}
