//! The server against a hostile client: each test plays a client that abuses the protocol or
//! the memory it is given, over the real socket, and checks that the server survives it and
//! that the next client gets a working device it alone can reach.

mod common;

use common::*;
use rvgpu_hw::addr::PhysAddr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rvgpu_device::{DeviceConfig, RamBacking};
use rvgpu_hw::regs;
use rvgpu_vfu::backend::{irq_index, region};
use rvgpu_vfu::shm::{Mapping, Memfd};
use rvgpu_vfu::{SessionEnd, VfuServer};
use vfio_user::Client;

const MIB: u64 = 1 << 20;

/// The next client gets a working device: registers answer, VRAM reads back what it writes.
fn next_client_works(h: &Harness) {
    let mut c = h.client();
    assert_eq!(reg(&mut c, regs::ID), regs::ID_VALUE);
    c.region_write(region::BAR4, 64, &0x5AFEu64.to_le_bytes())
        .unwrap();
    let mut b = [0u8; 8];
    c.region_read(region::BAR4, 64, &mut b).unwrap();
    assert_eq!(u64::from_le_bytes(b), 0x5AFE);
}

/// The client's own mapping of a region's memfd (its whole mmap-able area).
fn map_region(c: &Client, index: u32) -> Mapping {
    let r = c.region(index).unwrap();
    let f = r.file_offset.as_ref().expect("the region offers its memfd");
    Mapping::new(f.file(), f.start(), r.sparse_areas[0].size).unwrap()
}

/// A server for two sessions: the test's raw connection, then the client that checks the
/// server survived it ([`survived`]).
fn raw_session() -> (Harness, UnixStream) {
    let h = Harness::start(2);
    let s = h.raw();
    (h, s)
}

/// Ends the raw session `s` and checks that the next client gets a working device.
fn survived(h: &Harness, s: UnixStream) {
    drop(s);
    next_client_works(h);
}

/// The little-endian bytes of each value, one after another (a message payload).
macro_rules! le {
    ($($v:expr),* $(,)?) => {
        [$(&($v).to_le_bytes()[..]),*].concat()
    };
}

/// Sends `msg` with `fds` (SCM_RIGHTS on its first byte).
fn send_with_fds(s: &UnixStream, msg: &[u8], fds: &[RawFd]) {
    let mut cbuf = [0u64; 4];
    let mut iov = libc::iovec {
        iov_base: msg.as_ptr().cast_mut().cast(),
        iov_len: msg.len(),
    };
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
    m.msg_iov = &mut iov;
    m.msg_iovlen = 1;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE/CMSG_LEN compute sizes; the control buffer (32 bytes) holds one
        // header and up to two descriptors, and CMSG_FIRSTHDR/CMSG_DATA point inside it.
        unsafe {
            m.msg_control = cbuf.as_mut_ptr().cast();
            m.msg_controllen = libc::CMSG_SPACE(bytes) as usize;
            let c = libc::CMSG_FIRSTHDR(&m);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
        }
    }
    // SAFETY: `m` points at live buffers of the lengths given.
    let n = unsafe { libc::sendmsg(s.as_raw_fd(), &m, 0) };
    assert_eq!(n, msg.len() as isize);
}

/// A reply: (flags, error, payload after the header).
fn reply(s: &mut UnixStream) -> (u32, u32, Vec<u8>) {
    let mut hdr = [0u8; 16];
    s.read_exact(&mut hdr).unwrap();
    let word = |i: usize| u32::from_le_bytes(hdr[i..i + 4].try_into().unwrap());
    let mut body = vec![0u8; word(4) as usize - 16];
    s.read_exact(&mut body).unwrap();
    (word(8), word(12), body)
}

fn call(s: &mut UnixStream, msg: &[u8], fds: &[RawFd]) -> (u32, u32, Vec<u8>) {
    send_with_fds(s, msg, fds);
    reply(s)
}

const ERROR: u32 = 1 << 5;

fn region_read_msg(id: u16, region: u32, offset: u64, count: u32) -> Vec<u8> {
    message(id, 9, &le![offset, region, count])
}

fn dma_map_msg(id: u16, offset: u64, address: u64, size: u64) -> Vec<u8> {
    message(id, 2, &le![32u32, 3u32, offset, address, size])
}

fn dma_unmap_msg(id: u16, address: u64, size: u64) -> Vec<u8> {
    message(id, 3, &le![24u32, 0u32, address, size])
}

fn set_irqs_msg(id: u16, index: u32, flags: u32, count: u32) -> Vec<u8> {
    message(id, 8, &le![20u32, flags, index, 0u32, count])
}

/// Checks that the server still answers on the raw session: a REGION_READ (message `id`) of
/// the ID register.
fn answers_id(s: &mut UnixStream, id: u16) {
    let (flags, _, body) = call(
        s,
        &region_read_msg(id, region::BAR0, regs::ID as u64, 4),
        &[],
    );
    assert_eq!(flags & ERROR, 0);
    assert_eq!(body[16..20], regs::ID_VALUE.to_le_bytes());
}

/// REGION_WRITE of the command register (configuration offset 4): memory space and bus
/// master on.
fn bus_master_on_msg(id: u16) -> Vec<u8> {
    message(id, 10, &le![4u64, region::CONFIG, 2u32, 6u16])
}

fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: FFI call with a valid two-element array.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) },
        0
    );
    // SAFETY: both descriptors were just created and are owned by nothing else.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

fn memfd(name: &str, flags: u32, len: u64) -> File {
    let cname = std::ffi::CString::new(name).unwrap();
    // SAFETY: FFI call with a valid name; the result is checked and owned by the File.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC | flags) };
    assert!(fd >= 0);
    // SAFETY: a new descriptor nothing else owns.
    let f = unsafe { File::from_raw_fd(fd) };
    f.set_len(len).unwrap();
    f
}

#[test]
fn hostile_client_truncating_vram_cannot_crash_the_server() {
    let h = Harness::start(2);
    let mut c = h.client();
    for index in [region::BAR4, region::BAR2] {
        let r = c.region(index).unwrap();
        let f = r.file_offset.as_ref().unwrap().file();
        let e = f.set_len(0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM), "BAR{index}: shrinking");
        let e = f.set_len(1 << 30).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPERM), "BAR{index}: growing");
    }
    // The device reaches all of its VRAM still (a truncated file would be SIGBUS here).
    w64(&mut c, region::BAR4, 16 * MIB - 8, 0x1234);
    assert_eq!(r64(&mut c, region::BAR4, 16 * MIB - 8), 0x1234);
    drop(c);
    next_client_works(&h);
    h.finish_closed();
}

#[test]
fn client_keeping_its_mappings_after_disconnect_cannot_reach_the_next_clients_vram_or_doorbells() {
    let h = Harness::start(3);
    let (old_vram, old_doorbells) = {
        let mut c = h.client();
        let vram = map_region(&c, region::BAR4);
        let doorbells = map_region(&c, region::BAR2);
        w64(&mut c, region::BAR4, 0, 0x0DD);
        assert_eq!(vram.words()[0].load(Ordering::Acquire), 0x0DD);
        c.shutdown().unwrap();
        (vram, doorbells)
    };
    let mut c = h.client();
    assert_eq!(
        r64(&mut c, region::BAR4, 0),
        0,
        "the next VM's VRAM starts clear"
    );
    // The old mapping writes: the new client's VRAM does not change ...
    old_vram.words()[1].store(0xBAD, Ordering::Release);
    assert_eq!(r64(&mut c, region::BAR4, 8), 0);
    // ... and what the new client writes does not show in the old mapping.
    w64(&mut c, region::BAR4, 16, 0x600D);
    assert_eq!(old_vram.words()[2].load(Ordering::Acquire), 0);
    // A store to the old doorbell page rings nothing: nobody polls that memory any more.
    let before = h.probe.device().doorbell_stats();
    old_doorbells.words()[0].store(0x40, Ordering::Release);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(old_doorbells.words()[0].load(Ordering::Acquire), 0x40);
    assert_eq!(h.probe.device().doorbell_stats(), before);
    drop(c);
    next_client_works(&h);
}

#[test]
fn dma_map_past_the_end_of_the_file_is_refused_and_a_file_that_can_shrink_is_never_mapped() {
    let (h, mut s) = raw_session();
    let small = Memfd::new("guest-ram", MIB).unwrap();
    // Longer than the file, or running past its end from an offset: error replies.
    for (id, offset, size) in [
        (1, 0, 2 * MIB),
        (2, MIB / 2, MIB),
        (3, u64::MAX - 4095, MIB),
    ] {
        let (flags, _, _) = call(
            &mut s,
            &dma_map_msg(id, offset, GUEST_BASE, size),
            &[small.raw_fd()],
        );
        assert_ne!(flags & ERROR, 0, "DMA_MAP {offset:#x}+{size:#x}");
    }
    // A regular file could be truncated under the mapping: accepted (QEMU would not survive
    // a refusal of its RAM) but left unreachable, as a map without a descriptor is.
    let dir = fresh_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.join("ram"))
        .unwrap();
    file.set_len(MIB).unwrap();
    let (flags, _, _) = call(
        &mut s,
        &dma_map_msg(4, 0, GUEST_BASE, MIB),
        &[file.as_raw_fd()],
    );
    assert_eq!(flags & ERROR, 0, "a regular file");
    // A memfd whose sealing is closed without the shrink seal: the same.
    let closed = memfd("closed", 0, MIB);
    let (flags, _, _) = call(
        &mut s,
        &dma_map_msg(5, 0, GUEST_BASE, MIB),
        &[closed.as_raw_fd()],
    );
    assert_eq!(flags & ERROR, 0, "an unsealable memfd");
    assert!(h.probe.dma_regions().is_empty());
    // Their owner can still shrink them: the device never mapped them.
    file.set_len(0).unwrap();
    closed.set_len(0).unwrap();
    // A sealable memfd is taken, and sealed so that it can no longer shrink.
    let open = memfd("open", libc::MFD_ALLOW_SEALING, MIB);
    let (flags, _, _) = call(
        &mut s,
        &dma_map_msg(6, 0, GUEST_BASE, MIB),
        &[open.as_raw_fd()],
    );
    assert_eq!(flags & ERROR, 0);
    assert_eq!(
        open.set_len(0).unwrap_err().raw_os_error(),
        Some(libc::EPERM)
    );
    // Bus master on: the whole mapping is reachable, its last word included.
    let (flags, _, _) = call(&mut s, &bus_master_on_msg(7), &[]);
    assert_eq!(flags & ERROR, 0);
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, MIB)]);
    let mem = std::sync::Arc::clone(h.probe.device().memory());
    assert_eq!(mem.read_u64(PhysAddr::new(GUEST_BASE + MIB - 8)), Some(0));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
    next_client_works(&h);
}

#[test]
fn partial_dma_unmap_is_refused_and_changes_nothing() {
    let (h, mut s) = raw_session();
    let ram = Memfd::new("guest-ram", 2 * MIB).unwrap();
    let (flags, _, _) = call(
        &mut s,
        &dma_map_msg(1, 0, GUEST_BASE, 2 * MIB),
        &[ram.raw_fd()],
    );
    assert_eq!(flags & ERROR, 0);
    // Bus master on, so the mapping is on the device's bus.
    let cmd = bus_master_on_msg(2);
    assert_eq!(call(&mut s, &cmd, &[]).0 & ERROR, 0);
    for (id, address, size) in [
        (3, GUEST_BASE, MIB),
        (4, GUEST_BASE + MIB, MIB),
        (5, GUEST_BASE - MIB, 2 * MIB),
    ] {
        let (flags, _, _) = call(&mut s, &dma_unmap_msg(id, address, size), &[]);
        assert_ne!(flags & ERROR, 0, "DMA_UNMAP {address:#x}+{size:#x}");
        assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, 2 * MIB)]);
    }
    // A range that meets no mapping is no error; one that covers it whole unmaps it.
    assert_eq!(
        call(&mut s, &dma_unmap_msg(6, 0x1000_0000, MIB), &[]).0 & ERROR,
        0
    );
    assert_eq!(h.probe.dma_regions(), [(GUEST_BASE, 2 * MIB)]);
    assert_eq!(
        call(&mut s, &dma_unmap_msg(7, GUEST_BASE - MIB, 4 * MIB), &[]).0 & ERROR,
        0
    );
    assert!(h.probe.dma_regions().is_empty());
    survived(&h, s);
}

#[test]
fn a_pipe_nobody_reads_given_for_interrupts_cannot_hang_the_server() {
    let (h, mut s) = raw_session();
    let (_rx, tx) = pipe();
    // Fill the pipe: a blocking write to it would never return.
    while (&tx).write(&[0u8; 4096]).is_ok() {}
    for index in [irq_index::INTX, irq_index::MSI] {
        let msg = set_irqs_msg(1, index, ACTION_TRIGGER | DATA_EVENTFD, 1);
        let (flags, _, _) = call(&mut s, &msg, &[tx.as_raw_fd()]);
        assert_ne!(flags & ERROR, 0, "a pipe is refused (index {index})");
    }
    // A socket, a regular file and a timerfd are not eventfds either.
    let (a, _b) = UnixStream::pair().unwrap();
    let memory = memfd("not-an-eventfd", 0, 4096);
    // SAFETY: FFI call; the result is checked and owned by the File.
    let tfd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    assert!(tfd >= 0);
    // SAFETY: a new descriptor nothing else owns.
    let timer = unsafe { File::from_raw_fd(tfd) };
    for fd in [a.as_raw_fd(), memory.as_raw_fd(), timer.as_raw_fd()] {
        let msg = set_irqs_msg(2, irq_index::INTX, ACTION_TRIGGER | DATA_EVENTFD, 1);
        assert_ne!(call(&mut s, &msg, &[fd]).0 & ERROR, 0);
    }
    // The loopback trigger has nothing to signal, and the server still answers.
    let msg = set_irqs_msg(3, irq_index::INTX, ACTION_TRIGGER | DATA_NONE, 1);
    assert_ne!(call(&mut s, &msg, &[]).0 & ERROR, 0);
    answers_id(&mut s, 4);
    survived(&h, s);
}

#[test]
fn a_saturated_eventfd_cannot_block_the_server() {
    let (h, mut s) = raw_session();
    // Blocking as the client made it; the server makes it non-blocking.
    let efd = eventfd(0);
    let msg = set_irqs_msg(1, irq_index::MSI, ACTION_TRIGGER | DATA_EVENTFD, 1);
    assert_eq!(call(&mut s, &msg, &[efd.as_raw_fd()]).0 & ERROR, 0);
    // SAFETY: FFI call on a descriptor we own.
    let fl = unsafe { libc::fcntl(efd.as_raw_fd(), libc::F_GETFL) };
    assert_ne!(fl & libc::O_NONBLOCK, 0, "the server made it non-blocking");
    // The client makes it blocking again and fills the counter: one more signal could only
    // be added by a write that waits for a read nobody does.
    // SAFETY: FFI call on a descriptor we own, with integer arguments.
    assert_eq!(
        unsafe { libc::fcntl(efd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK) },
        0
    );
    (&efd).write_all(&(u64::MAX - 1).to_ne_bytes()).unwrap();
    let t = Instant::now();
    for id in 2..50 {
        let msg = set_irqs_msg(id, irq_index::MSI, ACTION_TRIGGER | DATA_NONE, 1);
        assert_eq!(call(&mut s, &msg, &[]).0 & ERROR, 0);
    }
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "signals did not block"
    );
    survived(&h, s);
}

#[test]
fn region_accesses_of_gigabytes_are_refused_before_anything_is_allocated() {
    let (h, mut s) = raw_session();
    // A 4 GiB read: an error reply (E2BIG), and the session goes on.
    let (flags, err, _) = call(&mut s, &region_read_msg(1, region::BAR4, 0, u32::MAX), &[]);
    assert_ne!(flags & ERROR, 0);
    assert_eq!(err, libc::E2BIG as u32);
    answers_id(&mut s, 2);
    // A write whose size (header + count) would overflow 32 bits: the stream cannot be
    // followed past it; an error reply, then the session ends.
    let mut w = message(3, 10, &le![0u64, 4u32, 0xFFFF_FFF0u32]);
    w[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    s.write_all(&w).unwrap();
    let (flags, _, _) = reply(&mut s);
    assert_ne!(flags & ERROR, 0);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty());
    next_client_works(&h);
    let ends = h.finish();
    assert!(matches!(ends[0], SessionEnd::Dropped(_)), "{ends:?}");
}

#[test]
fn a_client_stopping_mid_message_loses_its_session_and_the_next_client_is_served() {
    let (h, mut s) = raw_session();
    // Half a header, then nothing.
    s.write_all(&region_read_msg(1, region::BAR0, 0, 4)[..8])
        .unwrap();
    let t = Instant::now();
    next_client_works(&h);
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(30),
        "the next client waited {waited:?}"
    );
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let ends = h.finish();
    assert!(matches!(ends[0], SessionEnd::Dropped(_)), "{ends:?}");
}

#[test]
fn a_client_that_stops_taking_replies_loses_its_session() {
    let (h, s) = raw_session();
    // Reads of 1 MiB each, replies never taken: the socket buffers fill, the server's send
    // times out.
    let writer = std::thread::spawn(move || {
        let mut s = s;
        for id in 0..64 {
            if s.write_all(&region_read_msg(id, region::BAR4, 0, MIB as u32))
                .is_err()
            {
                break;
            }
        }
        s
    });
    let t = Instant::now();
    next_client_works(&h);
    assert!(t.elapsed() < Duration::from_secs(30));
    drop(writer.join().unwrap());
    let ends = h.finish();
    assert!(
        matches!(ends[0], SessionEnd::Dropped(_) | SessionEnd::Failed(_)),
        "{ends:?}"
    );
}

#[test]
fn a_peer_of_a_user_not_allowed_is_refused() {
    // SAFETY: geteuid cannot fail.
    let other = unsafe { libc::geteuid() } ^ 1;
    let h = Harness::start_with(1, |s| s.allow_only_uid(other));
    let mut s = h.raw();
    let _ = s.write_all(&region_read_msg(1, region::BAR0, 0, 4));
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "no reply to a refused peer");
    let ends = h.finish();
    assert!(matches!(ends[0], SessionEnd::Refused(_)), "{ends:?}");
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_socket_lives_in_a_private_directory_and_only_a_stale_socket_is_replaced() {
    let dir = fresh_dir();
    let socket = dir.join("rvgpu.sock");
    let server = VfuServer::new(&socket, DeviceConfig::default()).unwrap();
    assert_eq!(mode(&dir), 0o700, "directory created private");
    assert_eq!(mode(&socket), 0o600);
    // A second server on the same path: somebody listens, refused; the first keeps it.
    let e = VfuServer::new(&socket, DeviceConfig::default()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    drop(server);
    assert!(!socket.exists(), "removed at exit");
    // A socket nobody listens on (a server that died): replaced.
    drop(UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let server = VfuServer::new(&socket, DeviceConfig::default()).unwrap();
    drop(server);
    // Something that is not a socket is left alone.
    std::fs::write(&socket, b"not a socket").unwrap();
    assert!(VfuServer::new(&socket, DeviceConfig::default()).is_err());
    assert_eq!(std::fs::read(&socket).unwrap(), b"not a socket");
    std::fs::remove_file(&socket).unwrap();
    // A directory others may enter is refused.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = VfuServer::new(&socket, DeviceConfig::default()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The server binary, its stderr in a file.
struct Process {
    child: std::process::Child,
    log: PathBuf,
    dir: PathBuf,
    socket: PathBuf,
}

impl Process {
    fn start(dir: &Path, once: bool) -> Self {
        let socket = dir.join("rvgpu.sock");
        let log = std::env::temp_dir().join(format!(
            "{}.log",
            dir.file_name().unwrap().to_string_lossy()
        ));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rvgpu-vfu"));
        cmd.arg("--socket").arg(&socket);
        if once {
            cmd.arg("--once");
        }
        let child = cmd.stderr(File::create(&log).unwrap()).spawn().unwrap();
        let t = Instant::now();
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("listening")
        {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Self {
            child,
            log,
            dir: dir.to_path_buf(),
            socket,
        }
    }

    fn threads_named(&self, prefix: &str) -> usize {
        let tasks = format!("/proc/{}/task", self.child.id());
        std::fs::read_dir(tasks)
            .map(|d| {
                d.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                    .filter(|c| c.starts_with(prefix))
                    .count()
            })
            .unwrap_or(0)
    }

    /// CPU time used so far (user + system), in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = after.split(' ').collect();
        // Fields 14 and 15 (utime, stime), counted from the state field (3).
        f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_guest_toggling_power_states_cannot_flood_the_log_and_no_client_means_no_polling() {
    let p = Process::start(&fresh_dir(), true);
    assert_eq!(
        p.threads_named("rvgpu-vfu-doorb"),
        0,
        "no poller without a client"
    );
    let idle = p.cpu_ticks();
    std::thread::sleep(Duration::from_secs(1));
    let used = p.cpu_ticks() - idle;
    // SAFETY: sysconf has no memory arguments.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    assert!(
        used * 100 <= hz * 2,
        "idle server used {used} ticks in a second"
    );
    let mut c = Client::new(&p.socket).unwrap();
    // A new thread names itself once it runs: wait for that (bounded).
    let t = Instant::now();
    while p.threads_named("rvgpu-vfu-doorb") != 1 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the poller runs with a client"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..1000 {
        for state in [3u16, 0] {
            c.region_write(region::CONFIG, 0x44, &state.to_le_bytes())
                .unwrap();
        }
    }
    drop(c);
    let mut child = p;
    let status = child.child.wait().unwrap();
    assert!(status.success());
    let log = std::fs::read_to_string(&child.log).unwrap();
    let lines = log.lines().filter(|l| l.contains("function in D")).count();
    assert!(
        (2..=64).contains(&lines),
        "{lines} power-state lines for 2000 changes"
    );
    assert!(log.contains("further log lines of that client were held back"));
}

#[test]
fn a_server_killed_leaves_a_socket_the_next_start_replaces() {
    let dir = fresh_dir();
    let mut p = Process::start(&dir, false);
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    assert!(
        p.socket.exists(),
        "the killed server's socket is left behind"
    );
    let next = Process::start(&dir, false);
    let mut c = Client::new(&next.socket).unwrap();
    assert_eq!(reg(&mut c, regs::ID), regs::ID_VALUE);
}
