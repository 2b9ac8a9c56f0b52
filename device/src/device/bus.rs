//! The GPU's view of memory: every device access goes through here.
//!
//! Every access names an address space ([`Space`]): a root and a privilege.
//! - Root 0 is the identity (version 1): a GPU address is a bus address. System addresses are
//!   reachable only inside a registered SYSWIN (the allow-list that stands in for an IOMMU);
//!   VRAM is always reachable. A bad address is a [`FaultCode::BadAddress`].
//! - A non-zero root is translated by the device MMU (`mmu.rs`, docs/hardware.md 12.4) with
//!   the space's privilege. The page tables are the allow-list then: translated system pages
//!   are not checked against the windows, but the physical page must exist. A failed
//!   translation is a [`FaultCode::PageFault`] carrying the MMU's reason, access kind and
//!   level; the access does not happen. Multi-word accesses translate every page before any
//!   word moves.
//!
//! Misaligned addresses are `BadAddress` in both cases (alignment is not the MMU's business).
//! Nothing here panics on a device- or driver-supplied value.

use std::sync::atomic::{AtomicU64, Ordering};

use rvgpu_hw::addr::{classify, BusAddr, GpuVa, PhysAddr, Target, ACCESS_ALIGN};
use rvgpu_hw::event::FaultCode;
use rvgpu_hw::mmu::{Access, FaultInfo, FaultReason};
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags};

use super::mmu::{self as dmmu, Privilege};
use super::Core;
use crate::memory::Span;

/// The MMU part of a page fault (what goes into the record's `arg2` with the read pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageInfo {
    pub(crate) reason: FaultReason,
    pub(crate) access: Access,
    pub(crate) level: u8,
    pub(crate) user: bool,
}

/// A queue fault: what went wrong and at which GPU address (null if none); for a page
/// fault, the MMU's details too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) code: FaultCode,
    pub(crate) addr: GpuVa,
    pub(crate) page: Option<PageInfo>,
}

impl Fault {
    pub(crate) fn new(code: FaultCode, addr: GpuVa) -> Self {
        Self {
            code,
            addr,
            page: None,
        }
    }

    pub(crate) fn bad_address(addr: GpuVa) -> Self {
        Self::new(FaultCode::BadAddress, addr)
    }

    fn page_fault(va: u64, info: PageInfo) -> Self {
        Self {
            code: FaultCode::PageFault,
            addr: GpuVa::new(va),
            page: Some(info),
        }
    }

    fn from_mmu(f: dmmu::Fault, who: Privilege) -> Self {
        Self::page_fault(
            f.va,
            PageInfo {
                reason: f.reason,
                access: f.access,
                level: f.level,
                user: who == Privilege::User,
            },
        )
    }

    /// The Fault record's `arg2`: the packet's read pointer, or for a page fault the packed
    /// [`FaultInfo`] (which keeps the read pointer's low 32 bits).
    pub(crate) fn arg2(&self, rptr: u64) -> u64 {
        match self.page {
            None => rptr,
            Some(p) => FaultInfo {
                reason: p.reason,
                access: p.access,
                level: p.level,
                user: p.user,
                rptr: rptr as u32,
            }
            .encode(),
        }
    }
}

/// An address space: a page-table root (0 = identity) and the privilege of the accessor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Space {
    pub(crate) root: u64,
    pub(crate) who: Privilege,
}

impl Space {
    /// Bus addresses, kernel: the structures the KMD allocates itself (contiguous memory,
    /// known to the device only by bus address) and programs into registers or descriptors.
    /// The SYSWIN windows (the IOMMU stand-in, 3.5) are the allow-list.
    pub(crate) const BUS: Self = Self {
        root: 0,
        who: Privilege::Kernel,
    };

    /// A queue's space: its descriptor's root, user privilege if it is a user-mode queue.
    pub(crate) fn of_queue(d: &QueueDescriptor) -> Self {
        let user = QueueFlags::from_bits_retain(d.flags).contains(QueueFlags::USER_MODE);
        Self {
            root: d.page_table_base.get(),
            who: if user {
                Privilege::User
            } else {
                Privilege::Kernel
            },
        }
    }

    /// The same root with kernel privilege (the CMP's own reads in a queue's space, e.g. the
    /// MonitoredValue read of a conditional fence signal).
    pub(crate) fn kernel(self) -> Self {
        Self {
            who: Privilege::Kernel,
            ..self
        }
    }

    pub(crate) fn is_identity(self) -> bool {
        self.root == 0
    }
}

/// One translated 8-byte word, ready to access; `fail` is the fault to report if the
/// physical word turns out not to exist.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word {
    pub(crate) pa: PhysAddr,
    fail: Fault,
}

impl Core {
    /// Checks that the device may access `[addr, addr + bytes)`: aligned, and in VRAM or
    /// inside one registered system-memory window.
    fn gpu_check(&self, addr: GpuVa, bytes: u64) -> Result<(), Fault> {
        let bad = Fault::bad_address(addr);
        if !addr.is_aligned(ACCESS_ALIGN) || !bytes.is_multiple_of(ACCESS_ALIGN) {
            return Err(bad);
        }
        match classify(addr, bytes, self.mem.vram_size()).ok_or(bad)? {
            Target::Local(_) => Ok(()),
            Target::System(a) => {
                let end = a.checked_add(bytes).ok_or(bad)?;
                let inside = self
                    .regs
                    .syswin_base
                    .iter()
                    .zip(self.regs.syswin_size.iter())
                    .any(|(b, s)| {
                        // Relaxed: window registers are plain configuration; the driver
                        // programs them before it submits work that uses them, and the
                        // submission (doorbell/commit) is the synchronising operation.
                        let base = BusAddr::new(b.load(Ordering::Relaxed));
                        let size = s.load(Ordering::Relaxed);
                        size != 0 && a >= base && base.checked_add(size).is_some_and(|e| end <= e)
                    });
                if inside {
                    Ok(())
                } else {
                    Err(bad)
                }
            }
        }
    }

    /// Where a queue's ring and ring control live: a user-mode queue's are the UMD's
    /// allocations, in its process (the queue's space, user privilege); a kernel-mode queue's
    /// are the KMD's own memory, reached by bus address (hardware.md 12.4).
    pub(crate) fn ring_space(&self, d: &QueueDescriptor) -> Space {
        let user = QueueFlags::from_bits_retain(d.flags).contains(QueueFlags::USER_MODE);
        if user {
            Space::of_queue(d)
        } else {
            Space::BUS
        }
    }

    /// The system (paging) process's space: `SYSTEM_PAGE_TABLE_BASE`, kernel. It holds what
    /// the OS maps into the paging process and names by VA (log buffers, scheduling logs,
    /// fence storage named to `WAIT_RESCAN`); the CMP's own structures the KMD programs by
    /// bus address are in [`Space::BUS`] instead (hardware.md 12.4).
    pub(crate) fn system_space(&self) -> Space {
        Space {
            // Acquire: the driver wrote the tables before programming the root.
            root: self.regs.system_root.load(Ordering::Acquire),
            who: Privilege::Kernel,
        }
    }

    /// Translates the word at `va` in `sp` for `access`.
    pub(crate) fn word(&self, sp: Space, va: GpuVa, access: Access) -> Result<Word, Fault> {
        if sp.is_identity() {
            self.gpu_check(va, 8)?;
            return Ok(Word {
                pa: va.identity_pa(),
                fail: Fault::bad_address(va),
            });
        }
        if !va.is_aligned(ACCESS_ALIGN) {
            return Err(Fault::bad_address(va));
        }
        let (pa, level) = self
            .mmu
            .translate_word(&self.mem, sp.root, va, access, sp.who)
            .map_err(|f| Fault::from_mmu(f, sp.who))?;
        let fail = Fault::page_fault(
            va.get(),
            PageInfo {
                reason: FaultReason::BadPhysical,
                access,
                level,
                user: sp.who == Privilege::User,
            },
        );
        Ok(Word { pa, fail })
    }

    pub(crate) fn load_word(&self, w: Word, order: Ordering) -> Result<u64, Fault> {
        self.mem.load(w.pa, order).ok_or(w.fail)
    }

    pub(crate) fn store_word(&self, w: Word, value: u64, order: Ordering) -> Result<(), Fault> {
        self.mem.store(w.pa, value, order).ok_or(w.fail)
    }

    /// Loads the word at `va` in `sp`.
    pub(crate) fn sp_load(
        &self,
        sp: Space,
        va: GpuVa,
        access: Access,
        order: Ordering,
    ) -> Result<u64, Fault> {
        self.load_word(self.word(sp, va, access)?, order)
    }

    /// Stores the word at `va` in `sp` (a write access).
    pub(crate) fn sp_store(
        &self,
        sp: Space,
        va: GpuVa,
        value: u64,
        order: Ordering,
    ) -> Result<(), Fault> {
        self.store_word(self.word(sp, va, Access::Write)?, value, order)
    }

    /// Atomic `fetch_max` on the word at `va` in `sp` (a write access).
    pub(crate) fn sp_fetch_max(
        &self,
        sp: Space,
        va: GpuVa,
        value: u64,
        order: Ordering,
    ) -> Result<u64, Fault> {
        let w = self.word(sp, va, Access::Write)?;
        self.mem.fetch_max(w.pa, value, order).ok_or(w.fail)
    }

    /// Resolves `[va, va + bytes)` in `sp` to runs of words, every page checked before
    /// anything is returned (so a caller that writes after this writes all or nothing,
    /// unless memory disappears in between).
    pub(crate) fn sp_spans(
        &self,
        sp: Space,
        va: GpuVa,
        bytes: u64,
        access: Access,
    ) -> Result<Spans, Fault> {
        if sp.is_identity() {
            return Ok(Spans::One(self.gpu_span(va, bytes)?));
        }
        if !va.is_aligned(ACCESS_ALIGN) || !bytes.is_multiple_of(ACCESS_ALIGN) || bytes == 0 {
            return Err(Fault::bad_address(va));
        }
        let bad_physical = |at: u64| {
            Fault::page_fault(
                at,
                PageInfo {
                    reason: FaultReason::BadPhysical,
                    access,
                    level: 0,
                    user: sp.who == Privilege::User,
                },
            )
        };
        // Inside one page (a packet, a log entry, an event record): one translation and no
        // allocation, the same checks and the same fault as the page-by-page path below
        // (that path's two vectors were most of a log entry's cost).
        let (pa, left) = self
            .mmu
            .translate_page(&self.mem, sp.root, va, access, sp.who)
            .map_err(|f| Fault::from_mmu(f, sp.who))?;
        if left >= bytes {
            return self
                .mem
                .span(pa, bytes)
                .map(Spans::One)
                .ok_or(bad_physical(va.get()));
        }
        let chunks = self
            .mmu
            .translate(&self.mem, sp.root, va, bytes, access, sp.who)
            .map_err(|f| Fault::from_mmu(f, sp.who))?;
        let mut out = Vec::with_capacity(chunks.len());
        let mut off = 0u64;
        for c in chunks {
            let at = va.get().saturating_add(off);
            let span = self.mem.span(c.pa, c.len).ok_or(bad_physical(at))?;
            out.push(span);
            off = off.saturating_add(c.len);
        }
        Ok(Spans::Many(out))
    }

    /// Checks that `[va, va + bytes)` is reachable in `sp` for `access`, without touching it.
    pub(crate) fn sp_check(
        &self,
        sp: Space,
        va: GpuVa,
        bytes: u64,
        access: Access,
    ) -> Result<(), Fault> {
        if sp.is_identity() {
            return self.gpu_check(va, bytes);
        }
        self.sp_spans(sp, va, bytes, access).map(|_| ())
    }

    /// A checked run of words for bulk work in the identity space (window-checked).
    fn gpu_span(&self, addr: GpuVa, bytes: u64) -> Result<Span, Fault> {
        self.gpu_check(addr, bytes)?;
        self.mem
            .span(addr.identity_pa(), bytes)
            .ok_or(Fault::bad_address(addr))
    }
}

/// A resolved range: one physical run (the usual case, kept without an allocation) or
/// several (a range across pages that are not contiguous). Derefs to the runs in order.
pub(crate) enum Spans {
    One(Span),
    Many(Vec<Span>),
}

impl std::ops::Deref for Spans {
    type Target = [Span];

    fn deref(&self) -> &[Span] {
        match self {
            Self::One(s) => std::slice::from_ref(s),
            Self::Many(v) => v,
        }
    }
}

/// The words of `spans` in order (a translated range may be several physical runs).
pub(crate) fn words(spans: &[Span]) -> impl Iterator<Item = &AtomicU64> {
    spans.iter().flat_map(|s| s.as_slice().iter())
}

/// The address of a ring-control field. Descriptors are validated with a 64-byte aligned
/// ring control, so adding a field offset (< 64) cannot overflow; if it ever did, the
/// all-ones address faults like any unreachable one.
pub(crate) fn ctl(ring_control: GpuVa, field: u64) -> GpuVa {
    ring_control
        .checked_add(field)
        .unwrap_or(GpuVa::new(u64::MAX))
}
