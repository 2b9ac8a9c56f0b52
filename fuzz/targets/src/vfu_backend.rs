//! Target `vfu_backend`: the vfio-user server's message handling with arbitrary arguments, as
//! a hostile client would send them. Each input is a sequence of operations on one
//! [`rvgpu_vfu::Backend`] through the `ServerBackend` calls the protocol library makes (region
//! reads and writes, configuration space included; DMA_MAP with memory files of every kind;
//! DMA_UNMAP; SET_IRQS with eventfds and other descriptors; reset; disconnect and reconnect),
//! and whole messages through the guard's checks ([`rvgpu_vfu::guard::verdict`]).
//!
//! Invariants: nothing panics; a read fills exactly the bytes asked for; a refused DMA_UNMAP
//! changes no mapping; after a disconnect no guest RAM is on the bus and the device is a new
//! one; a message the guard forwards has the size its header claims and moves at most
//! `MAX_DATA` bytes.

use rvgpu_hw::addr::PhysAddr;
use std::fs::File;
use std::os::fd::FromRawFd;
use std::sync::Arc;

use rvgpu_device::DeviceConfig;
use rvgpu_vfu::shm::Memfd;
use rvgpu_vfu::{guard, Backend};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, ServerBackend};

use crate::input::{Input, Writer};

/// Where guest RAM is put on the bus, mostly (so maps, unmaps and accesses meet).
const GUEST: u64 = 0x4000_0000;
const PAGE: u64 = 4096;
/// Operations per input, at most.
const MAX_OPS: usize = 256;

/// A new descriptor of the kind `kind` picks: a sealed memfd, a sealable one, one that
/// cannot be sealed, an eventfd, a pipe's write end. None if the system refuses one.
fn descriptor(kind: u8) -> Option<File> {
    let memfd = |flags: u32, len: u64| -> Option<File> {
        // SAFETY: FFI call with a NUL-terminated name; the result is checked and owned below.
        let fd = unsafe { libc::memfd_create(c"fuzz".as_ptr(), libc::MFD_CLOEXEC | flags) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a new descriptor nothing else owns.
        let f = unsafe { File::from_raw_fd(fd) };
        f.set_len(len).ok()?;
        Some(f)
    };
    match kind % 5 {
        0 => {
            let m = Memfd::new("fuzz-ram", 16 * PAGE).ok()?;
            // A second descriptor of the same sealed file (the Memfd keeps its own).
            File::options()
                .read(true)
                .write(true)
                .open(format!("/proc/self/fd/{}", m.raw_fd()))
                .ok()
        }
        1 => memfd(libc::MFD_ALLOW_SEALING, 16 * PAGE),
        2 => memfd(0, 16 * PAGE),
        3 => {
            // SAFETY: FFI call; the result is checked and owned below.
            let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
            // SAFETY: a new descriptor nothing else owns.
            (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
        }
        _ => {
            let mut fds = [0; 2];
            // SAFETY: FFI call with a valid two-element array; checked.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return None;
            }
            // SAFETY: both descriptors are new and owned by nothing else; the read end is
            // closed at once.
            unsafe {
                drop(File::from_raw_fd(fds[0]));
                Some(File::from_raw_fd(fds[1]))
            }
        }
    }
}

/// A bus address: mostly pages near [`GUEST`], sometimes anything.
fn address(inp: &mut Input) -> u64 {
    match inp.u8() % 4 {
        0 => inp.u64(),
        _ => GUEST + u64::from(inp.u8() % 32) * PAGE,
    }
}

/// A length: mostly a few pages, sometimes anything.
fn length(inp: &mut Input) -> u64 {
    match inp.u8() % 4 {
        0 => inp.u64(),
        _ => u64::from(inp.u8() % 17) * PAGE,
    }
}

/// An offset into a region: mostly small, sometimes anything.
fn offset(inp: &mut Input) -> u64 {
    match inp.u8() % 4 {
        0 => inp.u64(),
        1 => u64::from(inp.u16()) & !3,
        _ => u64::from(inp.u8()) * 4,
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    let cfg = DeviceConfig {
        vram_size: 1 << 20,
        engines: 1,
        doorbells: 4,
        ..DeviceConfig::default()
    };
    let Ok(mut be) = Backend::new(cfg) else {
        return;
    };
    let probe = be.probe();
    if be.connect().is_err() {
        return;
    }
    let mut ops = 0;
    while !inp.is_empty() && ops < MAX_OPS {
        ops += 1;
        match inp.u8() % 9 {
            0 => {
                let region = u32::from(inp.u8() % 10);
                let off = offset(&mut inp);
                let len = usize::from(inp.u8() % 17);
                let mut buf = vec![0xA5u8; len];
                let _ = be.region_read(region, off, &mut buf);
                assert_eq!(buf.len(), len);
            }
            1 => {
                let region = u32::from(inp.u8() % 10);
                let off = offset(&mut inp);
                let bytes = inp.bytes(16).to_vec();
                let _ = be.region_write(region, off, &bytes);
            }
            2 => {
                // Configuration space where it matters: command, BARs, PMCSR, MSI.
                let off = match inp.u8() % 6 {
                    0 => 0x04,
                    1 => 0x44,
                    2 => 0x10 + u64::from(inp.u8() % 6) * 4,
                    3 => 0x50 + u64::from(inp.u8() % 16),
                    _ => u64::from(inp.u16() % 0x1100),
                };
                let bytes = inp.bytes(8).to_vec();
                let _ = be.region_write(7, off, &bytes);
            }
            3 => {
                let flags = if inp.u8().is_multiple_of(4) {
                    DmaMapFlags::from_bits_retain(inp.u32())
                } else {
                    DmaMapFlags::READ_WRITE
                };
                let file_offset = match inp.u8() % 4 {
                    0 => inp.u64(),
                    _ => u64::from(inp.u8() % 20) * PAGE,
                };
                let addr = address(&mut inp);
                let size = length(&mut inp);
                let fd = match inp.u8() % 6 {
                    5 => None,
                    k => descriptor(k),
                };
                let _ = be.dma_map(flags, file_offset, addr, size, fd);
                // Whatever was mapped lies wholly inside its 16-page file: touch its end.
                let mem = Arc::clone(probe.device().memory());
                for (base, len) in probe.dma_regions() {
                    assert!(
                        len <= 16 * PAGE,
                        "mapping of {len:#x} bytes from a 64 KiB file"
                    );
                    let _ = mem.read_u64(PhysAddr::new(base + len - 8));
                }
            }
            4 => {
                let flags = DmaUnmapFlags::from_bits_retain(if inp.u8().is_multiple_of(8) {
                    inp.u32()
                } else {
                    0
                });
                let addr = address(&mut inp);
                let size = length(&mut inp);
                let before = probe.dma_regions();
                if be.dma_unmap(flags, addr, size).is_err() {
                    assert_eq!(
                        probe.dma_regions(),
                        before,
                        "a refused unmap changed nothing"
                    );
                }
            }
            5 => {
                let index = u32::from(inp.u8() % 6);
                let flags = match inp.u8() % 4 {
                    0 => inp.u32(),
                    // TRIGGER with EVENTFD, with NONE; UNMASK / MASK with NONE.
                    1 => (1 << 5) | (1 << 2),
                    2 => (1 << 5) | 1,
                    _ => {
                        (if inp.u8().is_multiple_of(2) {
                            1 << 4
                        } else {
                            1 << 3
                        }) | 1
                    }
                };
                let start = u32::from(inp.u8() % 3);
                let count = u32::from(inp.u8() % 3);
                let fds: Vec<File> = (0..inp.u8() % 3)
                    .filter_map(|_| {
                        let k = inp.u8();
                        descriptor(k)
                    })
                    .collect();
                let _ = be.set_irqs(index, flags, start, count, fds);
            }
            6 => {
                let _ = be.reset();
            }
            7 => {
                let old = probe.device();
                be.disconnect();
                assert!(probe.dma_regions().is_empty(), "guest RAM left on the bus");
                assert!(!Arc::ptr_eq(&old, &probe.device()), "the same device again");
                if be.connect().is_err() {
                    return;
                }
            }
            _ => {
                let fds = usize::from(inp.u8() % 3);
                let msg = inp.bytes(300);
                if guard::verdict(msg, fds).is_ok() {
                    let size = u32::from_le_bytes([msg[4], msg[5], msg[6], msg[7]]);
                    assert_eq!(size as usize, msg.len());
                    assert!(size <= guard::MAX_MESSAGE);
                    assert!(fds <= 1);
                }
            }
        }
    }
    be.disconnect();
    assert!(probe.dma_regions().is_empty());
}

/// Hand-made seeds: a client's bring-up (maps, bus master, eventfds), hostile maps and unmaps,
/// interrupt descriptors of every kind, power-state toggling, reconnects, and messages.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // Map the sealed memfd at GUEST (4 pages), bus master on, read its last word via BAR4,
    // unmap half of it (refused), then all of it.
    let mut w = Writer::new();
    w.u8(3).u8(1).u8(1).u8(0).u8(1).u8(0).u8(1).u8(4).u8(0);
    w.u8(2).u8(0).bytes(&[6, 0], false);
    w.u8(4).u8(1).u8(1).u8(0).u8(1).u8(2);
    w.u8(4).u8(1).u8(1).u8(0).u8(1).u8(4);
    out.push(("map-bus-master-unmap".into(), w.finish()));
    // Maps of every descriptor kind, the last past its file's end.
    let mut w = Writer::new();
    for kind in 0..6u8 {
        w.u8(3)
            .u8(1)
            .u8(1)
            .u8(0)
            .u8(1)
            .u8(kind * 4)
            .u8(1)
            .u8(2)
            .u8(kind);
    }
    w.u8(3).u8(1).u8(1).u8(15).u8(1).u8(28).u8(1).u8(4).u8(0);
    out.push(("maps-of-every-kind".into(), w.finish()));
    // SET_IRQS with each descriptor kind on INTx and MSI, then a loopback trigger.
    let mut w = Writer::new();
    for index in 0..2u8 {
        for kind in 0..5u8 {
            w.u8(5).u8(index).u8(1).u8(0).u8(1).u8(1).u8(kind);
        }
        w.u8(5).u8(index).u8(2).u8(0).u8(1).u8(0);
    }
    out.push(("interrupt-descriptors".into(), w.finish()));
    // D3hot and back many times, with a reset and a reconnect between.
    let mut w = Writer::new();
    for i in 0..40u8 {
        w.u8(2).u8(1).bytes(&[3, 0], false);
        w.u8(2).u8(1).bytes(&[0, 0], false);
        if i % 10 == 0 {
            w.u8(6);
        }
        if i % 20 == 0 {
            w.u8(7);
        }
    }
    out.push(("power-toggling-resets-reconnects".into(), w.finish()));
    // Region accesses of every width at odd offsets on every region.
    let mut w = Writer::new();
    for region in 0..10u8 {
        w.u8(0).u8(region).u8(2).u8(1).u8(16);
        w.u8(1).u8(region).u8(3).u8(7).bytes(&[1, 2, 3], false);
    }
    out.push(("region-accesses".into(), w.finish()));
    // Messages: a REGION_READ of 4 GiB, a VERSION without its NUL, a well-formed DMA_MAP.
    let header = |command: u16, size: u32| {
        let mut m = vec![1, 0];
        m.extend_from_slice(&command.to_le_bytes());
        m.extend_from_slice(&size.to_le_bytes());
        m.extend_from_slice(&[0; 8]);
        m
    };
    let mut read = header(9, 32);
    read.extend_from_slice(&[0; 12]);
    read.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut version = header(1, 22);
    version.extend_from_slice(&[0, 0, 0, 0, b'{', b'}']);
    let mut map = header(2, 48);
    map.extend_from_slice(&[0; 32]);
    let mut w = Writer::new();
    w.u8(8).u8(0).bytes(&read, true);
    w.u8(8).u8(0).bytes(&version, true);
    w.u8(8).u8(1).bytes(&map, true);
    out.push(("guard-messages".into(), w.finish()));
    out
}
