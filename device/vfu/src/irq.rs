//! The device's interrupt line delivered through the client's eventfds.
//!
//! The device drives one level-triggered line ([`InterruptLine`]). The client gives eventfds
//! with SET_IRQS for two vfio interrupt indexes:
//! - **INTx** (index 0): vfio's level-interrupt protocol. The line going high signals the
//!   eventfd once and masks INTx (automasked); the client unmasks after the guest's end of
//!   interrupt (SET_IRQS ACTION_UNMASK), and if the line is still high then, the eventfd is
//!   signalled again. The command register's INTx disable bit holds delivery back the same
//!   way (PCI: the function keeps its interrupt status but does not assert INTA#).
//! - **MSI** (index 1, one message): each rising edge of the line is one message. While an
//!   MSI eventfd is set, INTx is not delivered (PCI: enabling MSI disables INTx).
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
        if !rising {
            return;
        }
        if s.msi.is_none() {
            s.try_intx();
        } else if s.d3hot {
            s.msi_held = true;
        } else {
            s.send_msi();
        }
    }
}
