//! The blocking server loop: one client at a time, the device renewed between clients.
//!
//! The socket lives in a directory only the server's user can enter (created with mode 0700,
//! or an existing one that is already that private), so no other user can reach it at all;
//! a connecting process must also run as an allowed user (SO_PEERCRED; by default the
//! server's own). A socket file left by a server that died is removed at start, but only if
//! it is a socket and nobody listens on it.
//!
//! Each accepted connection is served through [`crate::guard`]: the guard reads and checks
//! the client's messages and passes them over a private socket pair to the protocol library,
//! whose replies it relays back.

use std::collections::BTreeSet;
use std::fs::DirBuilder;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rvgpu_device::DeviceConfig;
use vfio_user::Server;

use crate::backend::{Backend, Probe};
use crate::guard;

/// How a client's session ended.
#[derive(Debug)]
pub enum SessionEnd {
    /// The client closed the connection.
    Closed,
    /// The connection failed (the client died mid-message, or a protocol error the server
    /// could not reply to).
    Failed(vfio_user::Error),
    /// Handling a message panicked inside the protocol library (malformed input it does not
    /// check); the connection was dropped and the device reset like after any disconnect.
    Panicked,
    /// The client broke what the guard lets through in a way the stream cannot be followed
    /// past, stopped mid-message, or did not take a reply in time.
    Dropped(io::Error),
    /// The connection was refused before any message was read (a peer of a user not allowed,
    /// or the server could not set the session up).
    Refused(String),
}

/// An rvgpu function served over vfio-user on a UNIX socket.
pub struct VfuServer {
    listener: UnixListener,
    socket: PathBuf,
    /// The socket file's identity (device, inode), so that only our own is removed at exit.
    socket_id: (u64, u64),
    allowed_uids: BTreeSet<u32>,
    backend: Backend,
}

impl std::fmt::Debug for VfuServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfuServer")
            .field("socket", &self.socket)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes `dir` a directory only this user can enter: created with mode 0700 if it does not
/// exist; an existing one must be a real directory (not a symlink) owned by this user with no
/// group or other permissions.
fn private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new().mode(0o700).create(dir)?;
            // The umask can only take bits away; make sure it did not take the owner's.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(e) => Err(e),
        Ok(m) => {
            if m.file_type().is_dir() && m.uid() == euid() && m.mode() & 0o077 == 0 {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{} must be a directory of uid {} with mode 0700, or not exist (then it is \
                         created so): put the socket in a directory of its own, e.g. \
                         /run/rvgpu-vfu/rvgpu.sock",
                        dir.display(),
                        euid()
                    ),
                ))
            }
        }
    }
}

/// Removes a socket file a dead server left at `path`: only a socket, and only if connecting
/// to it is refused (nobody listens). Anything else at the path is left alone and an error.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    let m = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(m) => m,
    };
    if !m.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("a server is listening on {}", path.display()),
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => std::fs::remove_file(path),
        Err(e) => Err(e),
    }
}

/// The uid of the process at the other end of `s` (SO_PEERCRED: the credentials it had when
/// it connected).
fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: FFI call with a valid out-buffer and its length; the result is checked.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// A listening socket the library can accept exactly one connection from: bound at `path`
/// (in the private directory), connected to by us, and unlinked before the library accepts.
fn inner_pair(path: &Path) -> io::Result<(UnixListener, UnixStream)> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    let ours = UnixStream::connect(path);
    let _ = std::fs::remove_file(path);
    Ok((listener, ours?))
}

impl VfuServer {
    /// Binds `socket` (its directory made or checked private, a stale socket there removed)
    /// and powers the device on. Only the server's own user may connect
    /// ([`VfuServer::allow_uid`] adds others).
    pub fn new(socket: &Path, cfg: DeviceConfig) -> io::Result<Self> {
        let dir = match socket.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        private_dir(&dir)?;
        remove_stale_socket(socket)?;
        let backend = Backend::new(cfg)?;
        let listener = UnixListener::bind(socket)?;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
        let m = std::fs::symlink_metadata(socket)?;
        Ok(Self {
            listener,
            socket: socket.to_path_buf(),
            socket_id: (m.dev(), m.ino()),
            allowed_uids: BTreeSet::from([euid()]),
            backend,
        })
    }

    /// Lets processes of `uid` connect too (e.g. QEMU under its own user, which must also be
    /// able to enter the socket's directory).
    pub fn allow_uid(&mut self, uid: u32) {
        self.allowed_uids.insert(uid);
    }

    /// Lets only processes of `uid` connect (tests use it to be refused).
    pub fn allow_only_uid(&mut self, uid: u32) {
        self.allowed_uids = BTreeSet::from([uid]);
    }

    /// A handle for looking at the served device from outside the protocol.
    pub fn probe(&self) -> Probe {
        self.backend.probe()
    }

    /// Waits for a client, serves it until it goes away, then renews the function for the
    /// next one (guest RAM mappings and eventfds dropped, new VRAM and doorbell memory, device
    /// powered on afresh). The device's threads run beside this loop the whole time.
    pub fn serve_one(&mut self) -> SessionEnd {
        let client = match self.listener.accept() {
            Ok((c, _)) => c,
            Err(e) => {
                // Out of descriptors, say: not a reason to spin on accept.
                std::thread::sleep(std::time::Duration::from_millis(100));
                return SessionEnd::Refused(format!("accept failed: {e}"));
            }
        };
        match peer_uid(&client) {
            Ok(uid) if self.allowed_uids.contains(&uid) => {}
            Ok(uid) => return SessionEnd::Refused(format!("peer uid {uid} is not allowed")),
            Err(e) => return SessionEnd::Refused(format!("peer credentials unknown: {e}")),
        }
        if !self.backend.ready() {
            return SessionEnd::Refused("no fresh device memory for a client".into());
        }
        let end = match self.session(&client) {
            Ok(end) => end,
            Err(e) => SessionEnd::Refused(format!("session setup failed: {e}")),
        };
        let _ = client.shutdown(std::net::Shutdown::Both);
        self.backend.disconnect();
        end
    }

    fn session(&mut self, client: &UnixStream) -> io::Result<SessionEnd> {
        guard::set_send_timeout(client)?;
        // Short: a socket path has at most 107 bytes, and the public one may be near that.
        // Unique within the process too (two servers may share a directory).
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let inner_path = self
            .socket
            .with_file_name(format!(".{}.{n}.i", std::process::id()));
        let (inner_listener, inner) = inner_pair(&inner_path)?;
        self.backend.connect()?;
        let server = Server::from_owned_fd(
            OwnedFd::from(inner_listener),
            true,
            Backend::irqs(),
            self.backend.regions(),
        );
        let backend = &mut self.backend;
        let send = Mutex::new(());
        let shut = |s: &UnixStream| {
            let _ = s.shutdown(std::net::Shutdown::Both);
        };
        let (lib, requests, replies) = std::thread::scope(|scope| {
            let requests = scope.spawn(|| {
                let end = guard::requests(client, &inner, &send);
                // The library sees the end of its stream and returns.
                shut(&inner);
                end
            });
            let replies = scope.spawn(|| {
                let r = guard::replies(client, &inner, &send);
                shut(client);
                shut(&inner);
                r
            });
            // The protocol library trusts some message fields; the guard keeps what it cannot
            // take away from it, and a panic that still happens ends this client's session,
            // not the server.
            let lib = catch_unwind(AssertUnwindSafe(|| server.run(backend)));
            shut(client);
            shut(&inner);
            (lib, requests.join(), replies.join())
        });
        let _ = replies;
        Ok(match (lib, requests) {
            (Err(_), _) => SessionEnd::Panicked,
            (Ok(Err(e)), _) => SessionEnd::Failed(e),
            (Ok(Ok(())), Ok(guard::Ended::Failed(e))) => SessionEnd::Dropped(e),
            (Ok(Ok(())), _) => SessionEnd::Closed,
        })
    }

    /// Serves clients one after another, forever.
    pub fn serve_forever(&mut self) -> ! {
        loop {
            let end = self.serve_one();
            eprintln!("rvgpu-vfu: client session ended ({end:?}); device reset, waiting for the next client");
        }
    }
}

impl Drop for VfuServer {
    fn drop(&mut self) {
        // Only the socket this server bound: a path replaced since is someone else's.
        if std::fs::symlink_metadata(&self.socket)
            .is_ok_and(|m| (m.dev(), m.ino()) == self.socket_id)
        {
            let _ = std::fs::remove_file(&self.socket);
        }
    }
}
