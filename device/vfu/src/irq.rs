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
//! Signalling an eventfd is a non-blocking 8-byte write; nothing here blocks on the client.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

use rvgpu_device::InterruptLine;

#[derive(Debug, Default)]
struct State {
    /// The device's line as last driven.
    level: bool,
    intx: Option<File>,
    /// INTx delivered and not yet unmasked by the client (or masked by it).
    intx_masked: bool,
    /// Command register: INTx disable.
    intx_disabled: bool,
    msi: Option<File>,
    /// PMCSR says D3hot: nothing is delivered.
    d3hot: bool,
    /// A rising edge came in D3hot with an MSI eventfd set: sent at D0 if the line is high.
    msi_held: bool,
    /// Interrupts delivered (eventfd signals), for tests and statistics.
    delivered: u64,
}

impl State {
    /// Sends one message, if an MSI eventfd is set.
    fn send_msi(&mut self) {
        if let Some(f) = &self.msi {
            signal(f);
            self.delivered += 1;
        }
    }

    /// Delivers INTx if the line is high and nothing holds it back.
    fn try_intx(&mut self) {
        if self.level
            && self.msi.is_none()
            && !self.intx_masked
            && !self.intx_disabled
            && !self.d3hot
        {
            if let Some(f) = &self.intx {
                signal(f);
                self.intx_masked = true;
                self.delivered += 1;
            }
        }
    }
}

fn signal(f: &File) {
    // An eventfd write fails only if the counter would overflow (the client is not reading);
    // the interrupt is then pending on the eventfd anyway.
    let _ = (&*f).write(&1u64.to_ne_bytes());
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
        s.intx = fd;
        s.intx_masked = false;
        s.try_intx();
    }

    /// Sets or removes the MSI eventfd. Removing it lets a high line through INTx again.
    pub fn set_msi(&self, fd: Option<File>) {
        let mut s = self.lock();
        s.msi = fd;
        s.try_intx();
    }

    /// SET_IRQS ACTION_MASK on INTx.
    pub fn mask_intx(&self) {
        self.lock().intx_masked = true;
    }

    /// SET_IRQS ACTION_UNMASK on INTx: re-delivers if the line is still high.
    pub fn unmask_intx(&self) {
        let mut s = self.lock();
        s.intx_masked = false;
        s.try_intx();
    }

    /// SET_IRQS ACTION_TRIGGER with no data: signals the eventfd of `msi` or INTx (a loopback
    /// the client uses to test its path). False if there is none. Not held in D3hot: it is
    /// the client's own request, not the function's.
    pub fn fire(&self, msi: bool) -> bool {
        let mut s = self.lock();
        let f = if msi { &s.msi } else { &s.intx };
        match f {
            Some(f) => {
                signal(f);
                s.delivered += 1;
                true
            }
            None => false,
        }
    }

    /// The command register's INTx disable bit changed.
    pub fn set_intx_disabled(&self, disabled: bool) {
        let mut s = self.lock();
        s.intx_disabled = disabled;
        s.try_intx();
    }

    /// The function entered D3hot (true) or came back to D0 (false); at D0 a line still high
    /// is delivered.
    pub fn set_d3hot(&self, d3hot: bool) {
        let mut s = self.lock();
        s.d3hot = d3hot;
        if d3hot {
            return;
        }
        if std::mem::take(&mut s.msi_held) && s.level {
            s.send_msi();
        }
        s.try_intx();
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
            s.try_intx();
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
            s.send_msi();
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

    /// Issue 46: a message for the line's rise and one for each reminder (the request rising
    /// again under a line still high), none for a wake with the line low; held in D3hot.
    #[test]
    fn issue_46_msi_is_sent_on_each_raise_and_reminder() {
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
