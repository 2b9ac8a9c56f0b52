//! The device's interrupt line delivered through the client's eventfds.
//!
//! The device drives one level-triggered line ([`InterruptLine`]). The client gives eventfds
//! with SET_IRQS for two vfio interrupt indexes:
//! - **INTx** (index 0): vfio's level-interrupt protocol. The line going high signals the
//!   eventfd once and masks INTx (automasked); the client unmasks after the guest's end of
//!   interrupt (SET_IRQS ACTION_UNMASK), and if the line is still high then, the eventfd is
//!   signalled again. The command register's INTx disable bit holds delivery back the same
//!   way (PCI: the function keeps its interrupt status but does not assert INTA#).
//! - **MSI** (index 1, one message): each rising edge of the device's request is one message:
//!   the line going high, and the request rising again under a line still high (the device's
//!   reminder, [`InterruptLine::wake`] without a new `set`: an acknowledge and a new event
//!   between two of its evaluations), which an edge-sensitive message front end sees as a new
//!   edge. While an MSI eventfd is set, INTx is not delivered (PCI: enabling MSI disables
//!   INTx).
//!
//! - **D3hot** holds both back: a function in D3hot initiates no transactions but PME messages
//!   (PCIe base 3.0, 5.3.1.4). A line still high when the function is back in D0 is delivered
//!   then (INTx as usual; one MSI for the edge that was held, as a masked MSI vector keeps its
//!   message pending).
//!
//! The client's descriptors are taken only if they are eventfds ([`eventfd`]), and are made
//! non-blocking (again before each signal: the client shares the open file and could clear
//! it); signalling one is an 8-byte write done after the router's lock is released, so a
//! descriptor that does not take the write at once loses that signal and stalls nobody.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use rvgpu_device::InterruptLine;

#[derive(Debug, Default)]
struct State {
    /// The device's line as last driven.
    level: bool,
    intx: Option<Arc<File>>,
    /// INTx delivered and not yet unmasked by the client (or masked by it).
    intx_masked: bool,
    /// Command register: INTx disable.
    intx_disabled: bool,
    msi: Option<Arc<File>>,
    /// PMCSR says D3hot: nothing is delivered.
    d3hot: bool,
    /// A rising edge came in D3hot with an MSI eventfd set: sent at D0 if the line is high.
    msi_held: bool,
    /// Interrupts delivered (eventfd signals), for tests and statistics.
    delivered: u64,
}

/// An eventfd to signal once the router's lock is released (None: nothing to send).
type Signal = Option<Arc<File>>;

impl State {
    /// One message, if an MSI eventfd is set.
    fn send_msi(&mut self) -> Signal {
        let f = self.msi.clone()?;
        self.delivered += 1;
        Some(f)
    }

    /// INTx, if the line is high and nothing holds it back.
    fn try_intx(&mut self) -> Signal {
        if self.level
            && self.msi.is_none()
            && !self.intx_masked
            && !self.intx_disabled
            && !self.d3hot
        {
            let f = self.intx.clone()?;
            self.intx_masked = true;
            self.delivered += 1;
            return Some(f);
        }
        None
    }
}

/// Signals `f` (called without the router's lock held). The descriptor is an eventfd
/// ([`eventfd`]): the write fails only if the counter would overflow (a client that never
/// reads it), and the interrupt is then pending on the eventfd anyway.
fn signal(f: Signal) {
    if let Some(f) = f {
        // O_NONBLOCK lives on the open file, which the client shares and may clear again:
        // put it back before each write, so that only a client racing this very write could
        // make it block.
        let _ = nonblocking(f.as_raw_fd());
        let _ = (&*f).write(&1u64.to_ne_bytes());
    }
}

/// Sets O_NONBLOCK on `fd`'s open file if it is not set.
fn nonblocking(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: FFI calls on a descriptor the caller keeps open, with integer arguments; both
    // checked.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if flags & libc::O_NONBLOCK == 0
        && unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Accepts a client's descriptor for interrupts only if it is an eventfd, and makes it
/// non-blocking.
///
/// The check reads the descriptor's `/proc/self/fd` link: the kernel names an eventfd's
/// anonymous inode `anon_inode:[eventfd]` (proc(5)), which no pipe, socket, FIFO, file or
/// other anonymous-inode descriptor (timerfd, signalfd, epoll) carries; fstat cannot tell
/// the anonymous-inode kinds apart. Without /proc the descriptor is refused. An eventfd's
/// write blocks only when its counter would pass 2^64 - 2, and `O_NONBLOCK` (set here, on the
/// open file the client shares) turns that into EAGAIN.
pub fn eventfd(f: File) -> io::Result<File> {
    let fd = f.as_raw_fd();
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))?;
    if link.as_os_str() != "anon_inode:[eventfd]" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interrupt descriptor is not an eventfd",
        ));
    }
    nonblocking(fd)?;
    Ok(f)
}

/// Routes the device's line to the client's eventfds. Shared by the device (its threads drive
/// the line) and the vfio-user server thread (SET_IRQS, config-space writes).
#[derive(Debug, Default)]
pub struct IrqRouter {
    state: Mutex<State>,
}

impl IrqRouter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The line's level (PCI status bit 3, "interrupt status").
    pub fn level(&self) -> bool {
        self.lock().level
    }

    /// Interrupts delivered to eventfds so far.
    pub fn delivered(&self) -> u64 {
        self.lock().delivered
    }

    /// Sets (Some) or removes (None) the INTx eventfd. Setting it clears the mask, so a line
    /// that is already high is delivered at once.
    pub fn set_intx(&self, fd: Option<File>) {
        let mut s = self.lock();
        s.intx = fd.map(Arc::new);
        s.intx_masked = false;
        let send = s.try_intx();
        drop(s);
        signal(send);
    }

    /// Sets or removes the MSI eventfd. Removing it lets a high line through INTx again.
    pub fn set_msi(&self, fd: Option<File>) {
        let mut s = self.lock();
        s.msi = fd.map(Arc::new);
        let send = s.try_intx();
        drop(s);
        signal(send);
    }

    /// SET_IRQS ACTION_MASK on INTx.
    pub fn mask_intx(&self) {
        self.lock().intx_masked = true;
    }

    /// SET_IRQS ACTION_UNMASK on INTx: re-delivers if the line is still high.
    pub fn unmask_intx(&self) {
        let mut s = self.lock();
        s.intx_masked = false;
        let send = s.try_intx();
        drop(s);
        signal(send);
    }

    /// SET_IRQS ACTION_TRIGGER with no data: signals the eventfd of `msi` or INTx (a loopback
    /// the client uses to test its path). False if there is none. Not held in D3hot: it is
    /// the client's own request, not the function's.
    pub fn fire(&self, msi: bool) -> bool {
        let mut s = self.lock();
        let Some(f) = (if msi { s.msi.clone() } else { s.intx.clone() }) else {
            return false;
        };
        s.delivered += 1;
        drop(s);
        signal(Some(f));
        true
    }

    /// The command register's INTx disable bit changed.
    pub fn set_intx_disabled(&self, disabled: bool) {
        let mut s = self.lock();
        s.intx_disabled = disabled;
        let send = s.try_intx();
        drop(s);
        signal(send);
    }

    /// The function entered D3hot (true) or came back to D0 (false); at D0 a line still high
    /// is delivered.
    pub fn set_d3hot(&self, d3hot: bool) {
        let mut s = self.lock();
        s.d3hot = d3hot;
        if d3hot {
            return;
        }
        let msi = if std::mem::take(&mut s.msi_held) && s.level {
            s.send_msi()
        } else {
            None
        };
        let intx = s.try_intx();
        drop(s);
        signal(msi);
        signal(intx);
    }

    /// Power-on: the line is low and nothing is masked; the eventfds stay (a function reset
    /// does not undo the client's interrupt setup).
    pub fn reset(&self) {
        let mut s = self.lock();
        s.level = false;
        s.intx_masked = false;
        s.intx_disabled = false;
        s.d3hot = false;
        s.msi_held = false;
    }

    /// Client gone: forget its eventfds too.
    pub fn disconnect(&self) {
        let mut s = self.lock();
        *s = State::default();
    }
}

impl InterruptLine for IrqRouter {
    fn set(&self, asserted: bool) {
        let mut s = self.lock();
        let rising = asserted && !s.level;
        s.level = asserted;
        // A message goes out from `wake`, which the device calls after every raise and
        // every reminder: sending here too would make two of one edge.
        if rising && s.msi.is_none() {
            let send = s.try_intx();
            drop(s);
            signal(send);
        }
    }

    fn wake(&self) {
        let mut s = self.lock();
        if s.msi.is_none() || !s.level {
            return;
        }
        if s.d3hot {
            s.msi_held = true;
        } else {
            let send = s.send_msi();
            drop(s);
            signal(send);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// An eventfd stand-in: a pipe whose write end the router signals.
    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: FFI call with a valid two-element array.
        assert_eq!(
            unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) },
            0
        );
        // SAFETY: both descriptors were just created and are owned by nothing else.
        unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
    }

    fn messages(r: &mut File) -> usize {
        let mut b = [0u8; 64];
        r.read(&mut b).map_or(0, |n| n / 8)
    }

    /// A message for the line's rise and one for each reminder (the request rising
    /// again under a line still high), none for a wake with the line low; held in D3hot.
    #[test]
    fn msi_is_sent_on_each_raise_and_reminder() {
        let irq = IrqRouter::new();
        let (mut rx, tx) = pipe();
        irq.set_msi(Some(tx));
        irq.set(true);
        assert_eq!(
            messages(&mut rx),
            0,
            "sent at the device's wake, not at set"
        );
        irq.wake();
        assert_eq!(messages(&mut rx), 1, "the rise");
        irq.wake();
        assert_eq!(messages(&mut rx), 1, "a reminder under a high line");
        irq.set(false);
        irq.wake();
        assert_eq!(messages(&mut rx), 0, "nothing requested");
        irq.set_d3hot(true);
        irq.set(true);
        irq.wake();
        assert_eq!(messages(&mut rx), 0, "held in D3hot");
        irq.set_d3hot(false);
        assert_eq!(messages(&mut rx), 1, "the held message at D0");
        assert_eq!(irq.delivered(), 3);
    }
}
