//! The rvgpu function served over vfio-user, driven by a vfio-user client in the
//! test (rust-vmm's `vfio_user::Client`, and raw messages where that client cannot express a
//! bad request), without QEMU. Each test runs its own server on a socket in a temp dir.

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};

use rvgpu_device::RamBacking;
use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::event::{EventKind, EventRecord};
use rvgpu_hw::log::{ENTRIES_PER_BUFFER, LOG_TYPE_SIGNALS, LOG_TYPE_WAITS};
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl};
use rvgpu_hw::regs::{self, IntCause};
use rvgpu_vfu::backend::{irq_index, region};
use rvgpu_vfu::shm::{Mapping, Memfd};
use rvgpu_vfu::SessionEnd;
use vfio_user::Client;

const GUEST_SIZE: u64 = 1 << 20;

/// Waits (bounded: 10 s, a hang guard, not a timing assertion) until `efd` is signalled and
/// returns its count; 0 if it never was.
fn wait_eventfd(efd: &File) -> u64 {
    let mut p = libc::pollfd {
        fd: efd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: FFI call with one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, 10_000) };
    if n <= 0 {
        return 0;
    }
    let mut b = [0u8; 8];
    (&*efd).read_exact(&mut b).unwrap();
    u64::from_ne_bytes(b)
}

/// The eventfd's count without waiting (0 if not signalled).
fn take_eventfd(efd: &File) -> u64 {
    let mut b = [0u8; 8];
    match (&*efd).read(&mut b) {
        Ok(8) => u64::from_ne_bytes(b),
        _ => 0,
    }
}

/// Guest RAM: a memfd the test maps (the "guest" side) and hands to the server.
struct GuestRam {
    fd: Memfd,
    map: Mapping,
}

impl GuestRam {
    fn new() -> Self {
        let fd = Memfd::new("guest-ram", GUEST_SIZE).unwrap();
        let map = fd.map().unwrap();
        Self { fd, map }
    }

    fn word(&self, gpa: u64) -> &AtomicU64 {
        &self.map.words()[((gpa - GUEST_BASE) / 8) as usize]
    }

    fn read(&self, gpa: u64) -> u64 {
        self.word(gpa).load(Ordering::Acquire)
    }

    fn write(&self, gpa: u64, v: u64) {
        self.word(gpa).store(v, Ordering::Release)
    }
}

// Guest-RAM layout of the mini driver below (page offsets from GUEST_BASE).
const EVENT_RING: u64 = GUEST_BASE;
const EVENT_RING_SIZE: u32 = 64;
const RING: u64 = GUEST_BASE + 0x1000;
const RING_SIZE: u32 = 4096;
const RING_CONTROL: u64 = GUEST_BASE + 0x2000;
const PROGRESS: u64 = GUEST_BASE + 0x3000;
const WAIT_LOG: u64 = GUEST_BASE + 0x4000;
const SIGNAL_LOG: u64 = GUEST_BASE + 0x5000;
const RUNLIST: u64 = GUEST_BASE + 0x6000;
const QUEUE_ID: u32 = 7;

/// An eventfd the server signals for interrupt `index` (INTx or MSI; SET_IRQS, trigger).
fn irq_eventfd(c: &mut Client, index: u32) -> File {
    let efd = eventfd(libc::EFD_NONBLOCK);
    c.set_irqs(
        index,
        ACTION_TRIGGER | DATA_EVENTFD,
        0,
        1,
        &[efd.as_raw_fd()],
    )
    .unwrap();
    efd
}

/// An eventfd the server signals on INTx.
fn intx_eventfd(c: &mut Client) -> File {
    irq_eventfd(c, irq_index::INTX)
}

/// What a KMD does at start, over the protocol: guest RAM mapped for DMA, a window over it,
/// event ring, interrupts, one queue on engine 0 with doorbell page 0.
fn bring_up(c: &mut Client, ram: &GuestRam) {
    map_ram(c, ram);
    enable_bus_master(c);
    let (b, s) = regs::syswin_regs(0).unwrap();
    set_reg64(c, b, GUEST_BASE);
    set_reg64(c, s, GUEST_SIZE);
    set_reg64(c, regs::EVENT_RING_BASE, EVENT_RING);
    set_reg(c, regs::EVENT_RING_SIZE, EVENT_RING_SIZE);
    set_reg(c, regs::EVENT_RING_CTRL, 1);
    set_reg(c, regs::INT_ACK, u32::MAX);
    set_reg(c, regs::INT_ENABLE, IntCause::all().bits());
    for (log, ty) in [(WAIT_LOG, LOG_TYPE_WAITS), (SIGNAL_LOG, LOG_TYPE_SIGNALS)] {
        ram.write(log + 8, u64::from(ty));
        ram.write(log + 16, ENTRIES_PER_BUFFER);
    }
    let desc = QueueDescriptor {
        queue_id: QUEUE_ID,
        flags: QueueFlags::VALID.bits(),
        ring_base: GpuVa::new(RING),
        ring_size: RING_SIZE,
        doorbell: 0,
        ring_control: GpuVa::new(RING_CONTROL),
        progress_fence: GpuVa::new(PROGRESS),
        wait_log: GpuVa::new(WAIT_LOG),
        signal_log: GpuVa::new(SIGNAL_LOG),
        ..Default::default()
    };
    for (i, w) in desc.to_words().iter().enumerate() {
        ram.write(RUNLIST + 8 * i as u64, *w);
    }
    set_reg(c, regs::doorbell_bind_reg(0).unwrap(), QUEUE_ID);
    let e = |r| regs::engine_reg(0, r).unwrap();
    set_reg64(c, e(regs::engine::RUNLIST_BASE), RUNLIST);
    set_reg(c, e(regs::engine::RUNLIST_COUNT), 1);
    set_reg(c, e(regs::engine::RUNLIST_COMMIT), 1);
}

/// Maps `ram` for DMA at [`GUEST_BASE`] (the client's DMA_MAP).
fn map_ram(c: &mut Client, ram: &GuestRam) {
    c.dma_map(0, GUEST_BASE, GUEST_SIZE, ram.fd.raw_fd())
        .unwrap();
}

/// A one-session server and its client with fresh guest RAM mapped for DMA (bus master off).
fn mapped() -> (Harness, Client, GuestRam) {
    let (h, mut c) = Harness::session();
    let ram = GuestRam::new();
    map_ram(&mut c, &ram);
    (h, c, ram)
}

/// A one-session server and its client after [`bring_up`] on fresh guest RAM, with an eventfd
/// for each interrupt index of `irqs`, set before the bring-up.
fn brought_up<const N: usize>(irqs: [u32; N]) -> (Harness, Client, GuestRam, [File; N]) {
    let (h, mut c) = Harness::session();
    let ram = GuestRam::new();
    let efds = irqs.map(|index| irq_eventfd(&mut c, index));
    bring_up(&mut c, &ram);
    (h, c, ram, efds)
}

/// Command register: memory space and bus master on (what the OS does before the driver
/// starts the device).
fn enable_bus_master(c: &mut Client) {
    c.region_write(region::CONFIG, 0x04, &0x0006u16.to_le_bytes())
        .unwrap();
}

/// Appends `cmd` to the ring in guest RAM and publishes the write pointer; returns it.
fn push(ram: &GuestRam, wptr: &mut u64, cmd: Command) -> u64 {
    let mut words = vec![0u64; cmd.len()];
    cmd.encode(&mut words).unwrap();
    for w in words {
        ram.write(RING + *wptr % u64::from(RING_SIZE), w);
        *wptr += 8;
    }
    ram.write(RING_CONTROL + RingControl::WRITE_PTR, *wptr);
    *wptr
}

/// Queues `PROGRESS(value)` with an interrupt and rings doorbell page 0 through BAR2.
fn ring_progress(c: &mut Client, ram: &GuestRam, wptr: &mut u64, value: u64) {
    let w = push(ram, wptr, Command::Progress { irq: true, value });
    w64(c, region::BAR2, 0, w);
}

/// The ISR over the protocol: status, ack, drain to WPTR. Returns (status, records).
fn isr(c: &mut Client, ram: &GuestRam, rptr: &mut u32) -> (u32, Vec<EventRecord>) {
    let status = reg(c, regs::INT_STATUS);
    set_reg(c, regs::INT_ACK, status);
    let wptr = reg(c, regs::EVENT_RING_WPTR);
    let mut out = Vec::new();
    while *rptr != wptr {
        let slot = EVENT_RING + u64::from(*rptr % EVENT_RING_SIZE) * 32;
        let w = [0, 8, 16, 24].map(|o| ram.read(slot + o));
        out.push(EventRecord::from_words(w));
        *rptr = rptr.wrapping_add(1);
    }
    set_reg(c, regs::EVENT_RING_RPTR, *rptr);
    (status, out)
}

#[test]
fn config_space_ids_bar_sizing_and_capabilities() {
    let (h, mut c) = Harness::session();
    let cfg = region::CONFIG;
    assert_eq!(r32(&mut c, cfg, 0x00), 0x5256_1234, "device/vendor");
    assert_eq!(
        r32(&mut c, cfg, 0x08),
        0x0302_0001,
        "class 3D controller, rev 1"
    );
    assert_eq!(
        r32(&mut c, cfg, 0x2C),
        0x5256_1234,
        "subsystem = vendor/device"
    );
    let mut pin = [0u8; 1];
    c.region_read(cfg, 0x3D, &mut pin).unwrap();
    assert_eq!(pin[0], 1, "INTA");
    // BAR sizing: all-ones in, size mask and type bits out.
    for n in 0..6u64 {
        w32(&mut c, cfg, 0x10 + 4 * n, u32::MAX);
    }
    let bars: Vec<u32> = (0..6u64).map(|n| r32(&mut c, cfg, 0x10 + 4 * n)).collect();
    assert_eq!(
        bars,
        [0xFFFF_0000, 0, 0xFFFF_0004, u32::MAX, 0xFF00_000C, u32::MAX],
        "64 KiB mem32 registers; 64 KiB mem64 doorbells (16 pages); 16 MiB mem64 prefetchable VRAM"
    );
    // Region sizes agree with the BARs.
    let size = |c: &Client, i| c.region(i).unwrap().size;
    assert_eq!(size(&c, region::BAR0), 0x1_0000);
    assert_eq!(size(&c, region::BAR2), 0x1_0000);
    assert_eq!(size(&c, region::BAR4), 16 << 20);
    assert_eq!(size(&c, region::CONFIG), 4096);
    assert_eq!(size(&c, 1), 0);
    // Capability list: power management, MSI, PCI Express, then the end.
    let mut caps = Vec::new();
    let mut p = r32(&mut c, cfg, 0x34) as u8;
    while p != 0 && caps.len() < 8 {
        let hdr = r32(&mut c, cfg, u64::from(p));
        caps.push((p, hdr as u8));
        p = (hdr >> 8) as u8;
    }
    assert_eq!(caps, [(0x40, 0x01), (0x50, 0x05), (0x70, 0x10)]);
    assert_ne!(
        r32(&mut c, cfg, 0x04) >> 16 & (1 << 4),
        0,
        "status: capability list"
    );
    // Interrupt indexes: INTx (maskable, automasked) and one MSI vector.
    let intx = c.get_irq_info(irq_index::INTX).unwrap();
    assert_eq!((intx.count, intx.flags), (1, 0b111));
    assert_eq!(c.get_irq_info(irq_index::MSI).unwrap().count, 1);
    assert_eq!(c.get_irq_info(2).unwrap().count, 0, "no MSI-X");
    // Read-only header bits stay.
    w32(&mut c, cfg, 0x00, 0);
    assert_eq!(r32(&mut c, cfg, 0x00), 0x5256_1234);
    drop(c);
    h.finish_closed();
}

#[test]
fn bar0_registers_answer_through_the_mmio_bus() {
    let (h, mut c) = Harness::session();
    assert_eq!(reg(&mut c, regs::ID), regs::ID_VALUE);
    assert_eq!(reg(&mut c, regs::VERSION), regs::VERSION_VALUE);
    let caps = regs::Caps::from_bits_retain(reg(&mut c, regs::CAPS));
    assert!(caps.contains(regs::Caps::NATIVE_FENCE | regs::Caps::ATOMIC64));
    assert_eq!(r64(&mut c, region::BAR0, regs::VRAM_SIZE as u64), 16 << 20);
    set_reg(&mut c, regs::SCRATCH, 0x1234_5678);
    assert_eq!(reg(&mut c, regs::SCRATCH), 0x1234_5678);
    assert_eq!(
        h.probe.device().completed_commands(0),
        0,
        "the probe sees the same device"
    );
}

#[test]
fn ring_in_guest_ram_runs_and_raises_the_intx_eventfd() {
    let (h, mut c, ram, [efd]) = brought_up([irq_index::INTX]);
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, GUEST_SIZE)]);

    // User-mode path: the ring in guest RAM, then a doorbell write to BAR2 page 0.
    let mut wptr = 0;
    ring_progress(&mut c, &ram, &mut wptr, 0x1111);
    assert_eq!(wait_eventfd(&efd), 1, "INTx eventfd signalled once");
    assert_eq!(
        ram.read(PROGRESS),
        0x1111,
        "the device wrote PROGRESS into guest RAM"
    );
    assert_eq!(ram.read(RING_CONTROL + RingControl::READ_PTR), wptr);
    // Status bit 3 shows the pending INTx until the ISR acknowledges it.
    assert_ne!(r32(&mut c, region::CONFIG, 0x04) & (1 << 19), 0);
    let mut rptr = 0;
    let (status, recs) = isr(&mut c, &ram, &mut rptr);
    assert_ne!(status & IntCause::PROGRESS.bits(), 0);
    assert!(recs.iter().any(|r| r.kind == EventKind::Progress as u8
        && r.arg0 == 0x1111
        && r.queue_id == QUEUE_ID));
    // The line follows the ack, possibly delivered by the device's own thread a moment
    // later (it may be the one driving the line just then): wait for it, bounded.
    let t = std::time::Instant::now();
    while r32(&mut c, region::CONFIG, 0x04) & (1 << 19) != 0 {
        assert!(t.elapsed().as_secs() < 10, "line still high after ack");
        std::thread::yield_now();
    }
    // End of interrupt: the client unmasks INTx.
    c.set_irqs(irq_index::INTX, ACTION_UNMASK | DATA_NONE, 0, 1, &[])
        .unwrap();

    // Kernel-mode path: QUEUE_KICK; the unmasked INTx is delivered again.
    let _ = push(
        &ram,
        &mut wptr,
        Command::Progress {
            irq: true,
            value: 0x2222,
        },
    );
    set_reg(
        &mut c,
        regs::engine_reg(0, regs::engine::QUEUE_KICK).unwrap(),
        QUEUE_ID,
    );
    assert_eq!(wait_eventfd(&efd), 1);
    assert_eq!(ram.read(PROGRESS), 0x2222);
    let (_, recs) = isr(&mut c, &ram, &mut rptr);
    assert!(recs.iter().any(|r| r.arg0 == 0x2222));
    assert_eq!(h.probe.device().doorbell_stats().accepted, 1);
}

#[test]
fn intx_stays_masked_until_unmask_and_obeys_intx_disable() {
    let (h, mut c, ram, [efd]) = brought_up([irq_index::INTX]);
    let mut wptr = 0;
    ring_progress(&mut c, &ram, &mut wptr, 1);
    assert_eq!(wait_eventfd(&efd), 1);
    // No ack and no unmask: the line stays high while more work raises more causes.
    ring_progress(&mut c, &ram, &mut wptr, 2);
    while ram.read(PROGRESS) != 2 {
        std::thread::yield_now();
    }
    // Unmasking with the line still high re-delivers at once (level semantics).
    c.set_irqs(irq_index::INTX, ACTION_UNMASK | DATA_NONE, 0, 1, &[])
        .unwrap();
    assert_eq!(take_eventfd(&efd), 1, "re-delivered on unmask, once");
    assert_eq!(h.probe.interrupts_delivered(), 2);
    // With INTx disabled in the command register, an unmask delivers nothing; clearing the
    // bit delivers the still-pending interrupt.
    let cmd = r32(&mut c, region::CONFIG, 0x04) as u16;
    c.region_write(region::CONFIG, 0x04, &(cmd | 1 << 10).to_le_bytes())
        .unwrap();
    c.set_irqs(irq_index::INTX, ACTION_UNMASK | DATA_NONE, 0, 1, &[])
        .unwrap();
    assert_eq!(take_eventfd(&efd), 0, "INTx disabled");
    assert_ne!(
        r32(&mut c, region::CONFIG, 0x04) & (1 << 19),
        0,
        "status still says pending"
    );
    c.region_write(region::CONFIG, 0x04, &cmd.to_le_bytes())
        .unwrap();
    assert_eq!(
        take_eventfd(&efd),
        1,
        "delivered once INTx is enabled again"
    );
}

#[test]
fn msi_eventfd_takes_over_from_intx() {
    let (_h, mut c, ram, [intx, msi]) = brought_up([irq_index::INTX, irq_index::MSI]);
    let mut wptr = 0;
    let mut rptr = 0;
    for v in 1..=2 {
        ring_progress(&mut c, &ram, &mut wptr, v);
        assert_eq!(wait_eventfd(&msi), 1, "one message per rising edge");
        let _ = isr(&mut c, &ram, &mut rptr);
    }
    assert_eq!(take_eventfd(&intx), 0, "no INTx while MSI is set up");
}

#[test]
fn vram_bar_is_the_devices_vram_shared_by_mmap() {
    let (h, mut c) = Harness::session();
    let r = c.region(region::BAR4).unwrap();
    assert_eq!(r.sparse_areas.len(), 1);
    assert_eq!(r.sparse_areas[0].size, 16 << 20);
    let f = r.file_offset.as_ref().expect("BAR4 offers its memfd");
    let vram = Mapping::new(f.file(), f.start(), 16 << 20).unwrap();
    // Client's mapping -> device's VRAM (the trapped path reads the same bytes) ...
    vram.words()[2].store(0xC0FFEE, Ordering::Release);
    assert_eq!(r64(&mut c, region::BAR4, 16), 0xC0FFEE);
    // ... and device -> client's mapping.
    w64(&mut c, region::BAR4, 24, 0xBEEF);
    assert_eq!(vram.words()[3].load(Ordering::Acquire), 0xBEEF);
    let dev = h.probe.device();
    assert_eq!(
        dev.memory()
            .read_u64(PhysAddr::new(rvgpu_hw::addr::VRAM_BASE + 16)),
        Some(0xC0FFEE)
    );
}

#[test]
fn bad_accesses_get_hardware_answers() {
    let (h, mut c) = Harness::session();
    let mut two = [0u8; 2];
    c.region_read(region::BAR0, 0, &mut two).unwrap();
    assert_eq!(two, [0xFF; 2], "2-byte register read");
    assert_eq!(r32(&mut c, region::BAR0, 2), u32::MAX, "unaligned");
    assert_eq!(
        r64(&mut c, region::BAR0, 4),
        u64::MAX,
        "8-byte read at a 4-byte offset"
    );
    assert_eq!(r32(&mut c, region::BAR0, 0x1_0000), u32::MAX, "past BAR0");
    assert_eq!(
        r32(&mut c, region::BAR0, u64::MAX - 1),
        u32::MAX,
        "offset overflow"
    );
    assert_eq!(r32(&mut c, 1, 0), u32::MAX, "size-0 region (BAR1)");
    assert_eq!(r32(&mut c, region::BAR4, 16 << 20), u32::MAX, "past VRAM");
    assert_eq!(
        r32(&mut c, region::CONFIG, 4094),
        u32::MAX,
        "past config space"
    );
    // Writes that are not register writes are dropped.
    set_reg(&mut c, regs::SCRATCH, 0xAAAA_AAAA);
    w32(&mut c, region::BAR0, regs::SCRATCH as u64 + 2, 0x5555_5555);
    c.region_write(region::BAR0, regs::SCRATCH as u64, &[1, 2])
        .unwrap();
    w64(&mut c, region::BAR0, 0x1_0000, 0);
    assert_eq!(reg(&mut c, regs::SCRATCH), 0xAAAA_AAAA);
    // A doorbell is a 4- or 8-byte write at a page's offset 0; anything else is dropped
    // before the device sees it. Page 0 is unbound here, so a real ring counts as ignored.
    let before = h.probe.device().doorbell_stats();
    w64(&mut c, region::BAR2, 8, 1);
    c.region_write(region::BAR2, 0, &[1]).unwrap();
    w64(&mut c, region::BAR2, 0x1_0000, 1);
    assert_eq!(h.probe.device().doorbell_stats(), before);
    w32(&mut c, region::BAR2, 0, 1);
    assert_eq!(
        h.probe.device().doorbell_stats().ignored,
        before.ignored + 1
    );
    assert_eq!(r32(&mut c, region::BAR2, 0), 0, "doorbell pages read 0");
    // The server is still there and the device still answers.
    assert_eq!(reg(&mut c, regs::ID), regs::ID_VALUE);
}

/// Sends `msg` and returns the reply header's (flags, error).
fn raw_call(s: &mut UnixStream, msg: &[u8]) -> (u32, u32) {
    s.write_all(msg).unwrap();
    let mut hdr = [0u8; 16];
    s.read_exact(&mut hdr).unwrap();
    let word = |i: usize| u32::from_le_bytes(hdr[i..i + 4].try_into().unwrap());
    (word(8), word(12))
}

#[test]
fn protocol_errors_get_error_replies_and_a_crashing_message_only_drops_the_client() {
    let h = Harness::start(2);
    let mut s = UnixStream::connect(&h.socket).unwrap();
    // REGION_READ (9) of region 20: no such region.
    let mut p = Vec::new();
    p.extend_from_slice(&0u64.to_le_bytes());
    p.extend_from_slice(&20u32.to_le_bytes());
    p.extend_from_slice(&4u32.to_le_bytes());
    let (flags, err) = raw_call(&mut s, &message(1, 9, &p));
    assert_eq!(
        (flags & 0xF, flags & (1 << 5) != 0, err),
        (1, true, libc::EINVAL as u32)
    );
    // DMA_READ (11): not offered by this server. (Header only: the protocol library answers
    // an unsupported command without reading its payload, so a payload would be taken for
    // the next message.)
    let (flags, _) = raw_call(&mut s, &message(2, 11, &[]));
    assert_ne!(flags & (1 << 5), 0, "error reply");
    // A VERSION (1) message whose size field is smaller than its fixed part (header, major,
    // minor): the protocol library would not check it; the server's guard answers with an
    // error. The 4 bytes after it are then the start of a message that never completes: the
    // session ends after the message time limit; the server does not.
    let mut version = message(3, 1, &[0; 4]);
    version[4..8].copy_from_slice(&16u32.to_le_bytes());
    s.write_all(&version).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.len() >= 16, "an error reply came first");
    assert_ne!(rest[8] & (1 << 5), 0, "error reply");
    drop(s);
    // The next client gets a working device.
    let mut c = h.client();
    assert_eq!(reg(&mut c, regs::ID), regs::ID_VALUE);
    drop(c);
    let ends = h.finish();
    assert!(matches!(ends[0], SessionEnd::Dropped(_)), "{ends:?}");
    assert!(matches!(ends[1], SessionEnd::Closed), "{ends:?}");
}

#[test]
fn disconnect_resets_the_device_and_a_new_client_is_served() {
    let h = Harness::start(2);
    let ram = GuestRam::new();
    let first = {
        let mut c = h.client();
        let efd = intx_eventfd(&mut c);
        bring_up(&mut c, &ram);
        set_reg(&mut c, regs::SCRATCH, 0xABCD);
        w64(&mut c, region::BAR4, 0, 0x5EC2E7);
        let mut wptr = 0;
        ring_progress(&mut c, &ram, &mut wptr, 9);
        assert_eq!(wait_eventfd(&efd), 1);
        // Taken before the disconnect: once the server sees it, it may reset at any time.
        let first = h.probe.device();
        c.shutdown().unwrap();
        first
    };
    // Second client (connects once the server has reset the function for it).
    let mut c = h.client();
    assert!(
        !std::sync::Arc::ptr_eq(&first, &h.probe.device()),
        "a fresh device"
    );
    assert_eq!(reg(&mut c, regs::SCRATCH), 0, "registers at reset values");
    assert_eq!(
        r64(&mut c, region::BAR4, 0),
        0,
        "VRAM cleared for the next VM"
    );
    assert!(
        h.probe.dma_regions().is_empty(),
        "the old guest RAM is off the bus"
    );
    assert_eq!(
        h.probe.device().engine_snapshot(0).unwrap().queues.len(),
        0,
        "no runlist"
    );
    // The new client can bring the device up again on the same guest RAM.
    let efd = intx_eventfd(&mut c);
    ram.write(RING_CONTROL, 0);
    ram.write(RING_CONTROL + RingControl::READ_PTR, 0);
    bring_up(&mut c, &ram);
    let mut wptr = 0;
    ring_progress(&mut c, &ram, &mut wptr, 10);
    assert_eq!(wait_eventfd(&efd), 1);
    assert_eq!(ram.read(PROGRESS), 10);
    drop(c);
    h.finish_closed();
}

#[test]
fn device_reset_message_powers_the_function_on_again() {
    let (h, mut c) = Harness::session();
    set_reg(&mut c, regs::SCRATCH, 0xABCD);
    let before = h.probe.device();
    let ram = GuestRam::new();
    map_ram(&mut c, &ram);
    enable_bus_master(&mut c);
    assert_eq!(h.probe.dma_regions().len(), 1);
    // Reset from D3hot: the function comes back in D0.
    set_power_state(&mut c, 3);
    c.reset().unwrap();
    assert_eq!(r32(&mut c, region::CONFIG, PMCSR) & 3, 0, "D0 after reset");
    assert_eq!(reg(&mut c, regs::SCRATCH), 0);
    assert_eq!(
        r32(&mut c, region::CONFIG, 0x04) & 0xFFFF,
        0,
        "command at power-on"
    );
    assert!(
        h.probe.dma_regions().is_empty(),
        "no bus mastering after reset"
    );
    // The client's mapping survives the reset: bus mastering on again reaches it.
    enable_bus_master(&mut c);
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, GUEST_SIZE)]);
    assert!(!std::sync::Arc::ptr_eq(&before, &h.probe.device()));
}

#[test]
fn dma_unmap_takes_guest_ram_off_the_bus_and_overlaps_are_refused() {
    let (h, mut c, ram) = mapped();
    enable_bus_master(&mut c);
    // Overlapping the mapped range: refused (error reply), the first mapping stays alone.
    c.dma_map(0, GUEST_BASE + 0x1000, 0x1000, ram.fd.raw_fd())
        .unwrap();
    // Not page aligned: refused too.
    c.dma_map(0, 0x8000_0800, 0x1000, ram.fd.raw_fd()).unwrap();
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, GUEST_SIZE)]);
    let dev = h.probe.device();
    assert_eq!(
        dev.memory().read_u64(PhysAddr::new(GUEST_BASE + 8)),
        Some(0)
    );
    c.dma_unmap(GUEST_BASE, GUEST_SIZE).unwrap();
    assert!(h.probe.dma_regions().is_empty());
    assert_eq!(
        dev.memory().read_u64(PhysAddr::new(GUEST_BASE + 8)),
        None,
        "off the bus"
    );
    // The server still answers after the refused requests.
    assert_eq!(reg(&mut c, regs::ID), regs::ID_VALUE);
}

#[test]
fn guest_ram_is_reachable_only_while_bus_master_is_on() {
    let (h, mut c, ram) = mapped();
    let dev = h.probe.device();
    assert!(
        h.probe.dma_regions().is_empty(),
        "mapped by the client, bus master off"
    );
    assert_eq!(dev.memory().read_u64(PhysAddr::new(GUEST_BASE)), None);
    enable_bus_master(&mut c);
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, GUEST_SIZE)]);
    ram.write(GUEST_BASE, 77);
    assert_eq!(dev.memory().read_u64(PhysAddr::new(GUEST_BASE)), Some(77));
    c.region_write(region::CONFIG, 0x04, &0x0002u16.to_le_bytes())
        .unwrap();
    assert_eq!(
        dev.memory().read_u64(PhysAddr::new(GUEST_BASE)),
        None,
        "bus master off again"
    );
}

/// PMCSR (power-management capability at 0x40).
const PMCSR: u64 = 0x44;

/// Writes PMCSR's PowerState: 3 = D3hot, 0 = D0.
fn set_power_state(c: &mut Client, state: u16) {
    c.region_write(region::CONFIG, PMCSR, &state.to_le_bytes())
        .unwrap();
}

/// A PROGRESS cause left pending with delivery masked (INT_ENABLE 0), as a driver's D3 entry
/// may leave one.
fn pending_masked_progress(c: &mut Client, ram: &GuestRam, wptr: &mut u64, value: u64) {
    set_reg(c, regs::INT_ENABLE, 0);
    ring_progress(c, ram, wptr, value);
    while reg(c, regs::INT_STATUS) & IntCause::PROGRESS.bits() == 0 {
        std::thread::yield_now();
    }
}

/// The device raises its line behind the bus (the client cannot reach the registers in
/// D3hot): configuration status shows the line high.
fn raise_line_behind_the_bus(h: &Harness, c: &mut Client) {
    use rvgpu_hw::mmio::MmioBus;
    h.probe
        .device()
        .write32(regs::INT_ENABLE, IntCause::all().bits());
    assert_ne!(
        r32(c, region::CONFIG, 0x04) & (1 << 19),
        0,
        "interrupt status: the line is high"
    );
}

#[test]
fn d3hot_decodes_config_only_takes_dma_off_and_holds_the_interrupt_until_d0() {
    use rvgpu_hw::mmio::MmioBus;
    let (h, mut c, ram, [msi]) = brought_up([irq_index::MSI]);
    let mut wptr = 0;
    pending_masked_progress(&mut c, &ram, &mut wptr, 1);
    assert_eq!(take_eventfd(&msi), 0, "INT_ENABLE masks it");
    let accepted = h.probe.device().doorbell_stats().accepted;
    let ring_size = reg(&mut c, regs::EVENT_RING_SIZE);

    set_power_state(&mut c, 3);
    assert_eq!(r32(&mut c, region::CONFIG, PMCSR) & 3, 3, "D3hot");
    // Memory requests are not decoded: reads are all-ones, writes are dropped.
    assert_eq!(reg(&mut c, regs::CAPS), u32::MAX);
    assert_eq!(
        r64(&mut c, region::BAR2, 0),
        u64::MAX,
        "D0 doorbells read 0"
    );
    set_reg(&mut c, regs::EVENT_RING_SIZE, 1);
    set_reg(&mut c, regs::INT_ACK, u32::MAX);
    w64(&mut c, region::BAR2, 0, wptr + 16);
    assert_eq!(h.probe.d3hot_accesses(), 5);
    assert!(h.probe.dma_regions().is_empty(), "no DMA in D3hot");
    // The line rises, but no message is sent.
    raise_line_behind_the_bus(&h, &mut c);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(take_eventfd(&msi), 0, "held in D3hot");

    set_power_state(&mut c, 0);
    assert_eq!(take_eventfd(&msi), 1, "the held message, sent at D0");
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, GUEST_SIZE)]);
    // No_Soft_Reset: the state from before D3hot is all there, and nothing written in
    // D3hot reached it.
    assert_eq!(reg(&mut c, regs::EVENT_RING_SIZE), ring_size);
    assert_ne!(reg(&mut c, regs::INT_STATUS) & IntCause::PROGRESS.bits(), 0);
    assert_eq!(h.probe.device().doorbell_stats().accepted, accepted);
    let caps = regs::Caps::from_bits_retain(reg(&mut c, regs::CAPS));
    assert!(caps.contains(regs::Caps::NATIVE_FENCE));

    // A line that rose and fell again in D3hot sends nothing at D0: the held message was for
    // a condition that is gone.
    set_reg(&mut c, regs::INT_ACK, u32::MAX);
    pending_masked_progress(&mut c, &ram, &mut wptr, 2);
    let _ = take_eventfd(&msi);
    set_power_state(&mut c, 3);
    raise_line_behind_the_bus(&h, &mut c);
    h.probe.device().write32(regs::INT_ACK, u32::MAX);
    assert_eq!(r32(&mut c, region::CONFIG, 0x04) & (1 << 19), 0);
    set_power_state(&mut c, 0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(take_eventfd(&msi), 0, "nothing pending at D0, nothing sent");
}

#[test]
fn d3hot_holds_intx_until_d0() {
    let (h, mut c, ram, [efd]) = brought_up([irq_index::INTX]);
    let mut wptr = 0;
    pending_masked_progress(&mut c, &ram, &mut wptr, 1);
    set_power_state(&mut c, 3);
    raise_line_behind_the_bus(&h, &mut c);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(take_eventfd(&efd), 0, "INTx held in D3hot");
    set_power_state(&mut c, 0);
    assert_eq!(take_eventfd(&efd), 1, "delivered at D0");
    assert_eq!(h.probe.d3hot_accesses(), 0);
}

/// BAR2 is offered as a memfd the client maps (dedicated doorbells), so a guest's
/// ring is a store to memory that never reaches the server; the device's poller rings the page.
/// Eight queues on eight doorbell pages, 300 submissions each rung through the mapping with no
/// wait between them: every queue runs to its last submission (merged rings lose nothing), and
/// none of the rings was a trapped BAR2 write. In D3hot a store rings nothing.
#[test]
fn mapped_doorbells_ring_without_a_trap_and_lose_no_work() {
    const QUEUES: u64 = 8;
    const ROUNDS: u64 = 300;
    let (h, mut c) = Harness::session();
    let r = c.region(region::BAR2).unwrap();
    assert_eq!(r.sparse_areas.len(), 1, "BAR2 is mappable");
    let f = r.file_offset.as_ref().expect("BAR2 offers its memfd");
    let db = Mapping::new(f.file(), f.start(), r.sparse_areas[0].size).unwrap();
    let page_word = |i: u64| &db.words()[(i * 4096 / 8) as usize];

    let ram = GuestRam::new();
    bring_up(&mut c, &ram);
    // Replace bring_up's one queue by QUEUES queues, queue i on doorbell page i.
    let base = |i: u64| GUEST_BASE + 0x10000 + i * 0x3000;
    let (ring, control, progress) = (|i| base(i), |i| base(i) + 0x1000, |i| base(i) + 0x2000);
    let mut words = Vec::new();
    for i in 0..QUEUES {
        let desc = QueueDescriptor {
            queue_id: 100 + i as u32,
            flags: QueueFlags::VALID.bits(),
            ring_base: GpuVa::new(ring(i)),
            ring_size: RING_SIZE,
            doorbell: i as u32,
            ring_control: GpuVa::new(control(i)),
            progress_fence: GpuVa::new(progress(i)),
            wait_log: GpuVa::new(WAIT_LOG),
            signal_log: GpuVa::new(SIGNAL_LOG),
            ..Default::default()
        };
        words.extend(desc.to_words());
        set_reg(
            &mut c,
            regs::doorbell_bind_reg(i as u32).unwrap(),
            100 + i as u32,
        );
    }
    for (k, w) in words.iter().enumerate() {
        ram.write(RUNLIST + 8 * k as u64, *w);
    }
    let e = |r| regs::engine_reg(0, r).unwrap();
    set_reg(&mut c, e(regs::engine::RUNLIST_COUNT), QUEUES as u32);
    set_reg(&mut c, e(regs::engine::RUNLIST_COMMIT), 1);

    let accepted = h.probe.device().doorbell_stats().accepted;
    let mut wptr = [0u64; QUEUES as usize];
    for round in 1..=ROUNDS {
        for i in 0..QUEUES {
            let w = &mut wptr[i as usize];
            let mut cmd = vec![
                0u64;
                Command::Progress {
                    irq: false,
                    value: round
                }
                .len()
            ];
            Command::Progress {
                irq: false,
                value: round,
            }
            .encode(&mut cmd)
            .unwrap();
            for word in cmd {
                ram.write(ring(i) + *w % u64::from(RING_SIZE), word);
                *w += 8;
            }
            // The ring can hold 4 KiB: wait for room (the device is behind by design).
            let t = std::time::Instant::now();
            while *w - ram.read(control(i) + RingControl::READ_PTR) > u64::from(RING_SIZE) - 64 {
                assert!(t.elapsed().as_secs() < 20, "queue {i} stalled");
                std::thread::yield_now();
            }
            ram.write(control(i) + RingControl::WRITE_PTR, *w);
            page_word(i).store(*w, Ordering::Release);
        }
    }
    let t = std::time::Instant::now();
    for i in 0..QUEUES {
        while ram.read(progress(i)) != ROUNDS
            || ram.read(control(i) + RingControl::READ_PTR) != wptr[i as usize]
        {
            assert!(
                t.elapsed().as_secs() < 20,
                "queue {i}: progress {} of {ROUNDS}, read pointer {} of {}",
                ram.read(progress(i)),
                ram.read(control(i) + RingControl::READ_PTR),
                wptr[i as usize]
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let rings = h.probe.polled_rings();
    assert!(rings >= QUEUES, "rings taken from the mapping: {rings}");
    assert_eq!(
        h.probe.device().doorbell_stats().accepted - accepted,
        rings,
        "every ring the device accepted came from the mapping"
    );

    // D3hot: the BARs do not decode; a store found then rings nothing.
    set_power_state(&mut c, 3);
    let before = h.probe.device().doorbell_stats();
    page_word(0).store(wptr[0] + 8, Ordering::Release);
    let t = std::time::Instant::now();
    while page_word(0).load(Ordering::Acquire) != 0 {
        assert!(
            t.elapsed().as_secs() < 10,
            "the poller did not take the word"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(
        h.probe.device().doorbell_stats(),
        before,
        "no ring in D3hot"
    );
}
