//! What both vfio-user test binaries share: a server on a socket in a fresh private directory,
//! region and register accessors over a client, and the vfio SET_IRQS flag bits.
#![allow(dead_code)]

use std::fs::File;
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;

use rvgpu_device::DeviceConfig;
use rvgpu_vfu::backend::region;
use rvgpu_vfu::{Probe, SessionEnd, VfuServer};
use vfio_user::Client;

// vfio SET_IRQS flags (linux/vfio.h).
pub const DATA_NONE: u32 = 1 << 0;
pub const DATA_EVENTFD: u32 = 1 << 2;
pub const ACTION_UNMASK: u32 = 1 << 4;
pub const ACTION_TRIGGER: u32 = 1 << 5;

/// Where the test's "guest RAM" appears on the device's bus (a guest physical address).
pub const GUEST_BASE: u64 = 0x4000_0000;

pub struct Harness {
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub probe: Probe,
    server: Option<JoinHandle<Vec<SessionEnd>>>,
}

impl Harness {
    /// A server for `sessions` clients, one after another, on a socket in a fresh temp dir.
    pub fn start(sessions: usize) -> Self {
        Self::start_with(sessions, |_| {})
    }

    /// A server for one client, and that client.
    pub fn session() -> (Self, Client) {
        let h = Self::start(1);
        let c = h.client();
        (h, c)
    }

    /// [`Harness::start`], with `setup` adjusting the server before it serves.
    pub fn start_with(sessions: usize, setup: impl FnOnce(&mut VfuServer)) -> Self {
        let dir = fresh_dir();
        let socket = dir.join("rvgpu.sock");
        let mut server = VfuServer::new(&socket, DeviceConfig::default()).unwrap();
        setup(&mut server);
        let probe = server.probe();
        let server =
            std::thread::spawn(move || (0..sessions).map(|_| server.serve_one()).collect());
        Self {
            dir,
            socket,
            probe,
            server: Some(server),
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&self.socket).unwrap()
    }

    /// A raw connection to the socket, for a client that speaks the protocol by hand.
    pub fn raw(&self) -> UnixStream {
        UnixStream::connect(&self.socket).unwrap()
    }

    /// Waits for the server to finish its sessions; returns how each ended.
    pub fn finish(mut self) -> Vec<SessionEnd> {
        self.server.take().unwrap().join().unwrap()
    }

    /// Waits for the server to finish its sessions and checks that every client closed its
    /// own.
    pub fn finish_closed(self) {
        let ends = self.finish();
        assert!(
            ends.iter().all(|e| matches!(e, SessionEnd::Closed)),
            "{ends:?}"
        );
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh directory path (not created: the server makes it, private).
pub fn fresh_dir() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "rvgpu-vfu-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub fn r32(c: &mut Client, region: u32, off: u64) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(region, off, &mut b).unwrap();
    u32::from_le_bytes(b)
}

pub fn r64(c: &mut Client, region: u32, off: u64) -> u64 {
    let mut b = [0u8; 8];
    c.region_read(region, off, &mut b).unwrap();
    u64::from_le_bytes(b)
}

pub fn w32(c: &mut Client, region: u32, off: u64, v: u32) {
    c.region_write(region, off, &v.to_le_bytes()).unwrap();
}

pub fn w64(c: &mut Client, region: u32, off: u64, v: u64) {
    c.region_write(region, off, &v.to_le_bytes()).unwrap();
}

/// A BAR0 register.
pub fn reg(c: &mut Client, off: usize) -> u32 {
    r32(c, region::BAR0, off as u64)
}

pub fn set_reg(c: &mut Client, off: usize, v: u32) {
    w32(c, region::BAR0, off as u64, v)
}

pub fn set_reg64(c: &mut Client, off: usize, v: u64) {
    w64(c, region::BAR0, off as u64, v)
}

/// A new eventfd (close-on-exec, and `flags`).
pub fn eventfd(flags: i32) -> File {
    // SAFETY: FFI call; the result is checked and owned by the File.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | flags) };
    assert!(fd >= 0);
    // SAFETY: a new descriptor nothing else owns.
    unsafe { File::from_raw_fd(fd) }
}

/// A raw vfio-user message: header (id, command, size, flags 0, error 0) and payload.
pub fn message(id: u16, command: u16, payload: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(&command.to_le_bytes());
    m.extend_from_slice(&(16 + payload.len() as u32).to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(&0u32.to_le_bytes());
    m.extend_from_slice(payload);
    m
}
