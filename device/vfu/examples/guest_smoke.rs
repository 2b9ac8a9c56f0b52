//! Guest-side smoke check of the rvgpu function behind `rvgpu-vfu`, run inside a Linux VM
//! (docs/qemu-guest.md, "The Linux guest"): finds the function in sysfs, maps BAR0 and
//! BAR2 (`resource0`, `resource2`), takes DMA memory from a physical range the kernel was told
//! to leave alone (`memmap=1M$0x10000000`, reached through `/dev/mem`), brings the device up,
//! runs a PROGRESS packet through a doorbell and one through QUEUE_KICK, waits for the
//! interrupt through `uio_pci_generic` (`/dev/uio0`) when it is bound, and measures what a
//! trapped register read, a doorbell ring and a signal-to-waiter round trip cost the guest;
//! last, puts the function in D3hot through its power-management capability and back.
//!
//! Build it static for the guest: `RUSTFLAGS="-C target-feature=+crt-static" cargo build
//! --release -p rvgpu-vfu --example guest_smoke --target x86_64-unknown-linux-gnu`.
//! Prints one `ok`/`FAIL` line per check and closes with `N passed, N failed`.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::Command;
use rvgpu_hw::event::{EventKind, EventRecord};
use rvgpu_hw::log::{ENTRIES_PER_BUFFER, LOG_TYPE_SIGNALS, LOG_TYPE_WAITS};
use rvgpu_hw::queue::{QueueDescriptor, QueueFlags, RingControl};
use rvgpu_hw::regs::{self, IntCause};

/// Physical (= bus) address and size of the DMA memory the kernel leaves alone.
const DMA_BASE: u64 = 0x1000_0000;
const DMA_SIZE: usize = 1 << 20;
const QUEUE_ID: u32 = 3;
const EVENT_RING_SIZE: u32 = 64;

/// A shared mapping of a file (a BAR's sysfs resource, or `/dev/mem`).
struct Map {
    ptr: *mut u8,
    len: usize,
}

impl Map {
    fn new(f: &File, offset: u64, len: usize) -> std::io::Result<Self> {
        // SAFETY: FFI call creating a fresh shared mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { ptr: p.cast(), len })
    }

    fn at(&self, off: u64, width: usize) -> *mut u8 {
        assert!(off as usize + width <= self.len && (off as usize).is_multiple_of(width));
        // SAFETY: in bounds (checked above).
        unsafe { self.ptr.add(off as usize) }
    }

    fn r32(&self, off: u64) -> u32 {
        // SAFETY: aligned, in bounds; device memory is read with one volatile access.
        unsafe { self.at(off, 4).cast::<u32>().read_volatile() }
    }

    fn w32(&self, off: u64, v: u32) {
        // SAFETY: aligned, in bounds; one volatile store.
        unsafe { self.at(off, 4).cast::<u32>().write_volatile(v) }
    }

    fn r64(&self, off: u64) -> u64 {
        // SAFETY: aligned, in bounds; one volatile load.
        unsafe { self.at(off, 8).cast::<u64>().read_volatile() }
    }

    fn w64(&self, off: u64, v: u64) {
        // SAFETY: aligned, in bounds; one volatile store.
        unsafe { self.at(off, 8).cast::<u64>().write_volatile(v) }
    }
}

struct Checks {
    passed: u32,
    failed: u32,
}

impl Checks {
    fn check(&mut self, what: &str, ok: bool, detail: String) {
        if ok {
            self.passed += 1;
            println!("ok   {what}: {detail}");
        } else {
            self.failed += 1;
            println!("FAIL {what}: {detail}");
        }
    }
}

fn find_function() -> Option<String> {
    for e in std::fs::read_dir("/sys/bus/pci/devices").ok()?.flatten() {
        let p = e.path();
        let id = |n: &str| std::fs::read_to_string(p.join(n)).unwrap_or_default();
        if id("vendor").trim() == "0x1234" && id("device").trim() == "0x5256" {
            return Some(p.to_string_lossy().into_owned());
        }
    }
    None
}

/// Waits up to 5 s for an interrupt on `/dev/uio0`; returns the UIO event count.
fn wait_uio(uio: &mut File) -> Option<u32> {
    let mut p = libc::pollfd {
        fd: uio.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: FFI call with one valid pollfd.
    if unsafe { libc::poll(&mut p, 1, 5000) } <= 0 {
        return None;
    }
    let mut b = [0u8; 4];
    uio.read_exact(&mut b).ok()?;
    Some(u32::from_ne_bytes(b))
}

/// Re-enables the interrupt after uio_pci_generic's handler masked it: uio_pci_generic has no
/// irqcontrol, so user space clears the command register's INTx disable bit (bit 10, bit 2 of
/// the byte at offset 5) through the sysfs config file, as the UIO documentation describes.
fn uio_unmask(config: &File) {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; 1];
    if config.read_exact_at(&mut b, 5).is_ok() && b[0] & 0x04 != 0 {
        let _ = config.write_all_at(&[b[0] & !0x04], 5);
    }
}

/// The mean time of `n` BAR0 register reads (SCRATCH), and what they read (kept live).
fn mean_read(bar0: &Map, n: u32) -> (Duration, u32) {
    let t = Instant::now();
    let mut x = 0u32;
    for _ in 0..n {
        x ^= bar0.r32(regs::SCRATCH as u64);
    }
    (t.elapsed() / n, x)
}

/// `guest_smoke costs`: a register read and a doorbell ring as the guest pays them once QEMU
/// maps BAR2. QEMU's vfio-pci turns BAR mappings off while it emulates INTx (its
/// end-of-interrupt detection traps every BAR access) and back on 1.1 s after the last INTx,
/// so this runs with the function on MSI and waits that long first. The ring stores 0 to the
/// last page: the same store as any ring, which the server's poller takes as no ring
/// (crate::doorbell), so the server's count of mapped rings stays the harness's.
fn costs(dev: &str) -> std::process::ExitCode {
    let open = |p: &str| OpenOptions::new().read(true).write(true).open(p);
    let (Ok(r0), Ok(r2)) = (
        open(&format!("{dev}/resource0")),
        open(&format!("{dev}/resource2")),
    ) else {
        println!("FAIL cannot open the BARs of {dev}");
        return std::process::ExitCode::FAILURE;
    };
    let (Ok(bar0), Ok(bar2)) = (Map::new(&r0, 0, 0x1_0000), Map::new(&r2, 0, 0x1_0000)) else {
        println!("FAIL cannot map the BARs of {dev}");
        return std::process::ExitCode::FAILURE;
    };
    std::thread::sleep(Duration::from_millis(1500));
    let n = 2000u32;
    let (read, x) = mean_read(&bar0, n);
    let t = Instant::now();
    for _ in 0..n {
        bar2.w64(15 * 0x1000, 0);
    }
    let ring = t.elapsed() / n;
    println!(
        "measure (MSI, BAR2 mapped): one BAR0 register read {} ns, one doorbell ring {} ns \
         (means of {n}; {x})",
        read.as_nanos(),
        ring.as_nanos()
    );
    std::process::ExitCode::SUCCESS
}

fn main() -> std::process::ExitCode {
    let mut c = Checks {
        passed: 0,
        failed: 0,
    };
    if std::env::args().nth(1).as_deref() == Some("costs") {
        return match find_function() {
            Some(dev) => costs(&dev),
            None => {
                println!("FAIL no 1234:5256 function");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let Some(dev) = find_function() else {
        println!("FAIL no 1234:5256 function in /sys/bus/pci/devices\n0 passed, 1 failed");
        return std::process::ExitCode::FAILURE;
    };
    let open = |p: &str| OpenOptions::new().read(true).write(true).open(p);
    let bar0 = Map::new(&open(&format!("{dev}/resource0")).unwrap(), 0, 0x1_0000).unwrap();
    let bar2 = Map::new(&open(&format!("{dev}/resource2")).unwrap(), 0, 0x1000).unwrap();
    let mem_file = open("/dev/mem").unwrap();
    let dma = Map::new(&mem_file, DMA_BASE, DMA_SIZE).unwrap();
    let mut uio = open("/dev/uio0").ok();
    let config = open(&format!("{dev}/config")).unwrap();
    println!("rvgpu at {dev}; uio: {}", uio.is_some());

    // Memory space and bus master on: nothing has enabled DMA for a function without a kernel
    // driver, and the function reaches no memory without it.
    {
        use std::os::unix::fs::FileExt;
        let mut b = [0u8; 2];
        config.read_exact_at(&mut b, 4).unwrap();
        let cmd = u16::from_le_bytes(b) | 0x0006;
        config.write_all_at(&cmd.to_le_bytes(), 4).unwrap();
    }

    let id = bar0.r32(regs::ID as u64);
    c.check("ID", id == regs::ID_VALUE, format!("{id:#x}"));
    let ver = bar0.r32(regs::VERSION as u64);
    c.check("VERSION", ver == regs::VERSION_VALUE, format!("{ver:#x}"));

    // Guest RAM layout (offsets in the DMA range), as the host test does.
    let (ev, ring, rc, progress, wlog, slog, rl) =
        (0, 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000);
    let ga = |off: u64| DMA_BASE + off;
    for off in (0..0x7000).step_by(8) {
        dma.w64(off, 0);
    }
    let (b, s) = regs::syswin_regs(0).unwrap();
    bar0.w64(b as u64, DMA_BASE);
    bar0.w64(s as u64, DMA_SIZE as u64);
    bar0.w64(regs::EVENT_RING_BASE as u64, ga(ev));
    bar0.w32(regs::EVENT_RING_SIZE as u64, EVENT_RING_SIZE);
    bar0.w32(regs::EVENT_RING_CTRL as u64, 1);
    bar0.w32(regs::INT_ACK as u64, u32::MAX);
    bar0.w32(regs::INT_ENABLE as u64, IntCause::all().bits());
    for (log, ty) in [(wlog, LOG_TYPE_WAITS), (slog, LOG_TYPE_SIGNALS)] {
        dma.w64(log + 8, u64::from(ty));
        dma.w64(log + 16, ENTRIES_PER_BUFFER);
    }
    let desc = QueueDescriptor {
        queue_id: QUEUE_ID,
        flags: QueueFlags::VALID.bits(),
        ring_base: GpuVa::new(ga(ring)),
        ring_size: 4096,
        doorbell: 0,
        ring_control: GpuVa::new(ga(rc)),
        progress_fence: GpuVa::new(ga(progress)),
        wait_log: GpuVa::new(ga(wlog)),
        signal_log: GpuVa::new(ga(slog)),
        ..Default::default()
    };
    for (i, w) in desc.to_words().iter().enumerate() {
        dma.w64(rl + 8 * i as u64, *w);
    }
    bar0.w32(regs::doorbell_bind_reg(0).unwrap() as u64, QUEUE_ID);
    let e = |r| regs::engine_reg(0, r).unwrap() as u64;
    bar0.w64(e(regs::engine::RUNLIST_BASE), ga(rl));
    bar0.w32(e(regs::engine::RUNLIST_COUNT), 1);
    bar0.w32(e(regs::engine::RUNLIST_COMMIT), 1);

    let mut wptr = 0u64;
    let mut push = |value: u64, irq: bool| {
        let cmd = Command::Progress { irq, value };
        let mut words = vec![0u64; cmd.len()];
        cmd.encode(&mut words).unwrap();
        for w in words {
            dma.w64(ring + wptr % 4096, w);
            wptr += 8;
        }
        dma.w64(rc + RingControl::WRITE_PTR, wptr);
        wptr
    };
    let wait_progress = |v: u64| {
        let t = Instant::now();
        while dma.r64(progress) != v && t.elapsed() < Duration::from_secs(5) {
            std::hint::spin_loop();
        }
        (dma.r64(progress) == v, t.elapsed())
    };
    let mut rptr = 0u32;
    let mut isr = |bar0: &Map| {
        let status = bar0.r32(regs::INT_STATUS as u64);
        bar0.w32(regs::INT_ACK as u64, status);
        let w = bar0.r32(regs::EVENT_RING_WPTR as u64);
        let mut recs = Vec::new();
        while rptr != w {
            let slot = ev + u64::from(rptr % EVENT_RING_SIZE) * 32;
            recs.push(EventRecord::from_words(
                [0, 8, 16, 24].map(|o| dma.r64(slot + o)),
            ));
            rptr = rptr.wrapping_add(1);
        }
        bar0.w32(regs::EVENT_RING_RPTR as u64, rptr);
        (status, recs)
    };

    // 1. Doorbell (BAR2 page 0) -> PROGRESS in guest RAM -> interrupt.
    if uio.is_some() {
        uio_unmask(&config);
    }
    let w = push(0x1111, true);
    bar2.w64(0, w);
    let (ok, _) = wait_progress(0x1111);
    c.check(
        "doorbell: device wrote PROGRESS into guest RAM",
        ok,
        format!("{:#x}", dma.r64(progress)),
    );
    if let Some(u) = uio.as_mut() {
        let n = wait_uio(u);
        c.check(
            "doorbell: INTx reached the guest (uio)",
            n.is_some(),
            format!("{n:?}"),
        );
    }
    let (status, recs) = isr(&bar0);
    c.check(
        "doorbell: PROGRESS cause and event record",
        status & IntCause::PROGRESS.bits() != 0
            && recs
                .iter()
                .any(|r| r.kind == EventKind::Progress as u8 && r.arg0 == 0x1111),
        format!("status {status:#x}, {} records", recs.len()),
    );

    // 2. QUEUE_KICK (kernel-mode path), interrupt again.
    if uio.is_some() {
        uio_unmask(&config);
    }
    let _ = push(0x2222, true);
    bar0.w32(e(regs::engine::QUEUE_KICK), QUEUE_ID);
    let (ok, _) = wait_progress(0x2222);
    c.check("kick: PROGRESS", ok, format!("{:#x}", dma.r64(progress)));
    if let Some(u) = uio.as_mut() {
        let n = wait_uio(u);
        c.check("kick: second interrupt", n.is_some(), format!("{n:?}"));
    }
    let _ = isr(&bar0);

    // 3. Costs seen by the guest (TCG: every BAR0/BAR2 access is a vfio-user round trip).
    let n = 500u32;
    let (read, x) = mean_read(&bar0, n);
    println!("measure: one BAR0 register read {read:?} (mean of {n}; {x})");
    let last = push(0x2FFF, false);
    let t = Instant::now();
    for _ in 0..n {
        bar2.w64(0, last);
    }
    let ring_cost = t.elapsed() / n;
    println!("measure: one doorbell ring {ring_cost:?} (mean of {n}; no new work)");
    if let Some(u) = uio.as_mut() {
        let mut lat = Vec::new();
        for i in 0..20u64 {
            uio_unmask(&config);
            let v = 0x3000 + i;
            let w = push(v, true);
            let t = Instant::now();
            bar2.w64(0, w);
            if wait_uio(u).is_none() {
                break;
            }
            lat.push(t.elapsed());
            let _ = isr(&bar0);
        }
        lat.sort();
        if let Some(m) = lat.get(lat.len() / 2) {
            println!(
                "measure: doorbell -> GPU PROGRESS -> guest interrupt wake-up, median of {}: {m:?}",
                lat.len()
            );
        }
    }
    // 4. D3hot through the power-management capability, as Windows' bus driver would put the
    // function there after the driver's D3 call: the BARs stop decoding, and D0 finds the
    // register state as it was (No_Soft_Reset).
    {
        use std::os::unix::fs::FileExt;
        let mut b = [0u8; 4];
        let pm = config
            .read_exact_at(&mut b[..1], 0x34)
            .map(|()| u64::from(b[0]));
        let cap = pm.and_then(|at| config.read_exact_at(&mut b, at).map(|()| (at, b)));
        c.check(
            "PM capability first in the list",
            matches!(cap, Ok((0x40, [0x01, ..]))),
            format!("{cap:?}"),
        );
        bar0.w32(regs::SCRATCH as u64, 0x5EED_D3D3);
        let set = |state: u16| config.write_all_at(&state.to_le_bytes(), 0x44);
        let in_d3 = set(3).map(|()| {
            let mut s = [0u8; 2];
            let _ = config.read_exact_at(&mut s, 0x44);
            (u16::from_le_bytes(s) & 3, bar0.r32(regs::ID as u64))
        });
        c.check(
            "D3hot: PMCSR says D3, BAR0 does not decode",
            matches!(in_d3, Ok((3, id)) if id != regs::ID_VALUE),
            format!("(PowerState, ID read) {in_d3:x?}"),
        );
        // PCI PM 1.2: 10 ms before touching a function brought back from D3hot.
        let back = set(0).map(|()| {
            std::thread::sleep(Duration::from_millis(10));
            (bar0.r32(regs::ID as u64), bar0.r32(regs::SCRATCH as u64))
        });
        c.check(
            "D0 again: registers answer and kept their values",
            matches!(back, Ok((id, 0x5EED_D3D3)) if id == regs::ID_VALUE),
            format!("(ID, SCRATCH) {back:x?}"),
        );
    }

    println!("{} passed, {} failed", c.passed, c.failed);
    if c.failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
