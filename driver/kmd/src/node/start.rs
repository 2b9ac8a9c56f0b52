//! The node rings' bring-up step: on the scheduler state and the registers, at StartDevice.

use crate::dxgk::Dxgk;
use crate::mmio::Regs;
use crate::platform::Platform;
use crate::sched::Sched;
use crate::status::{self, Status};

use super::{NodeRings, NodeSlots};

/// Bring-up step (StartDevice, PASSIVE): allocates the node rings, records their descriptors in
/// `sched` and commits every engine's runlist so each node ring is loaded (first entry) before
/// the OS can submit. On failure nothing is kept.
pub fn bring_up<P: Platform>(
    dxgk: &Dxgk,
    regs: &Regs<P>,
    sched: &mut Sched,
    engines: u32,
) -> Result<NodeRings, Status> {
    let mut nodes = NodeRings::alloc::<P>(dxgk, engines, &mut sched.ids)?;
    sched.nodes = match nodes.try_slots::<P>() {
        Ok(slots) => slots,
        Err(_) => {
            nodes.free(dxgk, &mut sched.ids);
            return Err(status::INSUFFICIENT_RESOURCES);
        }
    };
    for engine in 0..engines {
        if let Err(e) = crate::runlist::commit(regs, sched, engine) {
            sched.nodes = NodeSlots::default();
            crate::device::quiesce(regs, engines);
            nodes.free(dxgk, &mut sched.ids);
            return Err(e);
        }
    }
    Ok(nodes)
}
