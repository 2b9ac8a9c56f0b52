//! Which process of the simulated OS owns an object (a leaf: fences, VidMm, user-mode
//! submission and the trace name processes, none of them needs more than the number).

/// A process of the simulated OS (owner of local handles and of packed fence pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessId(pub u32);
