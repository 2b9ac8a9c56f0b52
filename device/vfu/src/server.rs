//! The blocking server loop: one client at a time, the device reset between clients.

use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rvgpu_device::DeviceConfig;
use vfio_user::Server;

use crate::backend::{Backend, Probe};

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
}

/// An rvgpu function served over vfio-user on a UNIX socket.
pub struct VfuServer {
    server: Server,
    backend: Backend,
}

impl std::fmt::Debug for VfuServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfuServer")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl VfuServer {
    /// Binds `socket` (which must not exist) and powers the device on.
    pub fn new(socket: &Path, cfg: DeviceConfig) -> io::Result<Self> {
        let backend = Backend::new(cfg)?;
        let server = Server::new(socket, true, Backend::irqs(), backend.regions())
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Self { server, backend })
    }

    /// A handle for looking at the served device from outside the protocol.
    pub fn probe(&self) -> Probe {
        self.backend.probe()
    }

    /// Waits for a client, serves it until it goes away, then resets the function for the
    /// next one (guest RAM mappings and eventfds dropped, VRAM cleared, device powered on
    /// afresh). The device's threads run beside this loop the whole time.
    pub fn serve_one(&mut self) -> SessionEnd {
        let server = &self.server;
        let backend = &mut self.backend;
        // The protocol library trusts some message fields (a VERSION message's length and
        // string); a panic there must end this client's session, not the server.
        let end = match catch_unwind(AssertUnwindSafe(|| server.run(backend))) {
            Ok(Ok(())) => SessionEnd::Closed,
            Ok(Err(e)) => SessionEnd::Failed(e),
            Err(_) => SessionEnd::Panicked,
        };
        self.backend.disconnect();
        end
    }

    /// Serves clients one after another, forever.
    pub fn serve_forever(&mut self) -> ! {
        loop {
            let end = self.serve_one();
            eprintln!("rvgpu-vfu: client session ended ({end:?}); device reset, waiting for the next client");
        }
    }
}
