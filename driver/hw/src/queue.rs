//! Hardware queues: runlist entries (queue descriptors) and ring control.

use crate::addr::{BusAddr, GpuVa};
use bitflags::bitflags;
use zerocopy::IntoBytes;

/// "No queue" in registers and event records.
pub const NO_QUEUE: u32 = u32::MAX;
/// "No doorbell" in a descriptor.
pub const NO_DOORBELL: u32 = u32::MAX;
/// Most descriptors in one runlist.
pub const RUNLIST_MAX: u32 = 4096;
/// Smallest ring in bytes.
pub const RING_MIN: u32 = 256;
/// Largest ring in bytes.
pub const RING_MAX: u32 = 16 << 20;

bitflags! {
    /// [`QueueDescriptor::flags`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct QueueFlags: u32 {
        /// The entry describes a queue; entries without it are skipped.
        const VALID = 1 << 0;
        /// Fed by user mode through a doorbell (UM-05). Decides the queue's privilege: a
        /// user-mode queue reaches only pages mapped with `mmu::Pte::USER` and may not use
        /// privileged packets (TLB_INVALIDATE); without it the queue is kernel-mode.
        /// Needs a non-zero `page_table_base`: a user-mode queue under the identity root is a
        /// bad descriptor.
        const USER_MODE = 1 << 1;
        /// `wait_log` is an address in the queue's own space (its root, kernel privilege)
        /// rather than the system space: the OS may map a queue's wait log only into the
        /// queue's process (hardware.md 12.4).
        const WAIT_LOG_IN_QUEUE = 1 << 2;
    }
}

wire_struct! {
    /// One runlist entry: everything the CMP needs to run a hardware queue. 128 bytes.
    #[size(128)]
    pub struct QueueDescriptor {
        /// Driver-chosen id, unique per device; reported in events and engine registers.
        pub queue_id: u32,
        /// [`QueueFlags`].
        pub flags: u32,
        /// GPU address of the ring (8-byte aligned).
        pub ring_base: GpuVa,
        /// Ring size in bytes: a power of two in [`RING_MIN`]..=[`RING_MAX`].
        pub ring_size: u32,
        /// Physical doorbell index in dedicated mode, or [`NO_DOORBELL`]. Informational (for
        /// debugging and for the driver's own bookkeeping): the device routes a doorbell write
        /// by [`crate::regs::DOORBELL_BIND`] only, which the driver can change without a runlist
        /// commit (victimisation, UM-20).
        pub doorbell: u32,
        /// GPU address of the queue's [`RingControl`].
        #[offset(0x18)]
        pub ring_control: GpuVa,
        /// GPU address of the 64-bit progress fence PROGRESS writes.
        pub progress_fence: GpuVa,
        /// GPU address of the wait log buffer (LOG-01), 0 if none: system space, or the
        /// queue's space with [`QueueFlags::WAIT_LOG_IN_QUEUE`].
        pub wait_log: GpuVa,
        /// GPU address of the signal log buffer, 0 if none.
        pub signal_log: GpuVa,
        /// Higher runs first among runnable queues of one engine; equal priorities round-robin.
        pub priority: u32,
        /// Process (GPU address space) id, chosen by the driver, never [`NO_QUEUE`]. In global
        /// doorbell mode a page bound to this id ([`crate::regs::DOORBELL_BIND`]) is the only
        /// one that can ring the queue, and only if it is [`QueueFlags::USER_MODE`]; otherwise
        /// informational.
        pub process_id: u32,
        /// Root of the queue's GPU page tables: the 4 KiB-aligned device physical address of its
        /// root table ([`crate::mmu`]), or 0 for identity (version 1 behaviour, kernel-mode queues
        /// only). Every address the queue uses is translated through it with the privilege
        /// [`QueueFlags::USER_MODE`] gives.
        #[offset(0x40)]
        pub page_table_base: BusAddr,
        /// Opaque tag of the scheduling context the queue belongs to: the value the CMP writes
        /// as `hKmdContext` into the engine's scheduling log ([`crate::schedlog`]) when that
        /// context starts or stops running. 0: the queue's activity is not logged.
        #[offset(0x48)]
        pub context_tag: u64,
        pub reserved: [u64; 6],
    }
}

impl QueueDescriptor {
    /// The descriptor as 16 words in memory order.
    pub fn to_words(&self) -> [u64; 16] {
        let mut out = [0u64; 16];
        for (o, chunk) in out.iter_mut().zip(self.as_bytes().chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *o = u64::from_le_bytes(b);
        }
        out
    }

    /// Rebuilds a descriptor from 16 words.
    pub fn from_words(w: &[u64; 16]) -> Self {
        let mut d = Self::default();
        for (chunk, word) in d.as_mut_bytes().chunks_exact_mut(8).zip(w) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        d
    }

    /// Checks what the CMP checks before it runs the queue. `Err` names the bad field.
    pub fn validate(&self) -> Result<(), &'static str> {
        if !QueueFlags::from_bits_retain(self.flags).contains(QueueFlags::VALID) {
            return Err("flags");
        }
        if !self.ring_size.is_power_of_two() || !(RING_MIN..=RING_MAX).contains(&self.ring_size) {
            return Err("ring_size");
        }
        let aligned = |a: GpuVa| a.is_aligned(8);
        // Ring control is 64-byte aligned so that the read pointer has its own cache line.
        let control_ok = self.ring_control.is_aligned(64);
        if !aligned(self.ring_base) || !control_ok || !aligned(self.progress_fence) {
            return Err("alignment");
        }
        if !self.page_table_base.is_aligned(crate::mmu::TABLE_SIZE) {
            return Err("page_table_base");
        }
        // A user-mode queue under the identity root would reach every page the system windows
        // open, so isolation would rest on the driver never forgetting a root: the device
        // refuses it instead (hardware.md B20).
        if QueueFlags::from_bits_retain(self.flags).contains(QueueFlags::USER_MODE)
            && self.page_table_base.get() == 0
        {
            return Err("page_table_base");
        }
        Ok(())
    }
}

/// Ring control: the pointers shared by the producer (UMD or KMD) and the CMP.
///
/// Pointers are free-running byte counts (the ring position is `ptr % ring_size`), so
/// `write_ptr - read_ptr` is the number of unconsumed bytes. Publication protocol: the
/// producer writes commands, then stores `write_ptr` (release), then rings the doorbell (or
/// writes QUEUE_KICK); the CMP loads `write_ptr` (acquire) after seeing the doorbell and
/// stores `read_ptr` (release) after each packet completes. The write pointer is at offset 0
/// (as the seed's pseudocode assumes); the read pointer is on its own cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingControl;

impl RingControl {
    /// Byte offset of `write_ptr` (u64) in the ring-control allocation.
    pub const WRITE_PTR: u64 = 0;
    /// Byte offset of `read_ptr` (u64).
    pub const READ_PTR: u64 = 64;
    /// Size of the ring-control allocation.
    pub const SIZE: u64 = 128;
}

/// Free bytes in a ring of `size` bytes with the given pointers, or `None` if the pointers
/// are inconsistent (more than a ring apart, or read ahead of write).
pub fn ring_free(size: u32, read_ptr: u64, write_ptr: u64) -> Option<u64> {
    let used = write_ptr.checked_sub(read_ptr)?;
    u64::from(size).checked_sub(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_words_round_trip() {
        let d = QueueDescriptor {
            queue_id: 3,
            flags: QueueFlags::VALID.bits(),
            ring_base: GpuVa::new(0x1000),
            ring_size: 4096,
            doorbell: 2,
            ring_control: GpuVa::new(0x3000),
            progress_fence: GpuVa::new(0x4000),
            priority: 1,
            ..Default::default()
        };
        assert_eq!(QueueDescriptor::from_words(&d.to_words()), d);
        assert_eq!(d.validate(), Ok(()));
        assert_eq!(
            QueueDescriptor {
                ring_size: 100,
                ..d
            }
            .validate(),
            Err("ring_size")
        );
        assert_eq!(QueueDescriptor { flags: 0, ..d }.validate(), Err("flags"));
        let rooted = QueueDescriptor {
            page_table_base: BusAddr::new(0x1234_5000),
            ..d
        };
        assert_eq!(rooted.validate(), Ok(()));
        assert_eq!(
            QueueDescriptor {
                page_table_base: BusAddr::new(0x1234_5008),
                ..d
            }
            .validate(),
            Err("page_table_base")
        );
    }

    #[test]
    fn user_mode_queue_needs_a_root() {
        let user = QueueDescriptor {
            queue_id: 1,
            flags: (QueueFlags::VALID | QueueFlags::USER_MODE).bits(),
            ring_base: GpuVa::new(0x1000),
            ring_size: 4096,
            ring_control: GpuVa::new(0x3000),
            progress_fence: GpuVa::new(0x4000),
            ..Default::default()
        };
        assert_eq!(user.validate(), Err("page_table_base"));
        let rooted = QueueDescriptor {
            page_table_base: BusAddr::new(0x1234_5000),
            ..user
        };
        assert_eq!(rooted.validate(), Ok(()));
        // Kernel-mode queues keep the identity root.
        let kernel = QueueDescriptor {
            flags: QueueFlags::VALID.bits(),
            ..user
        };
        assert_eq!(kernel.validate(), Ok(()));
    }

    #[test]
    fn free_space() {
        assert_eq!(ring_free(256, 0, 0), Some(256));
        assert_eq!(ring_free(256, 8, 264), Some(0));
        assert_eq!(ring_free(256, 8, 272), None);
        assert_eq!(ring_free(256, 16, 8), None);
    }
}
