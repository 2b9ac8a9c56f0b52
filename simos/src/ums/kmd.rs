//! Calls into the KMD shared by the thunks: DDIs a driver must have, destroy DDIs, the
//! handles create DDIs return.

use rvgpu_ddi::basic::HANDLE;

use crate::adapter::ddi::{self, must_succeed, sim_err};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;

/// A step of VidSch's worker failed: a simulation error, unless the machine halted already
/// (the halt is why it failed, and stays the machine's fault).
pub(crate) fn worker_step_failed(a: &AdapterShared, what: String) {
    if !a.state.is_halted() {
        a.state.raise_sim_error(what);
    }
}

/// DDI `name`, which a driver that `since` (has doorbells, created a doorbell, has hardware
/// queues) must implement: a missing one is the driver's bug, a simulation error.
pub(crate) fn needed<F>(
    a: &AdapterShared,
    f: Option<F>,
    name: &str,
    since: &str,
) -> Result<F, SimError> {
    f.ok_or_else(|| sim_err(a, format!("driver {since} but has no {name}")))
}

/// [`needed`] for slot `$slot` of adapter `$a`'s table.
macro_rules! needed_ddi {
    ($a:expr, $slot:ident, $since:literal) => {
        $crate::ums::kmd::needed(
            $a,
            $crate::adapter::ddi::table_slot!($a, $slot)?,
            stringify!($slot),
            $since,
        )
    };
}
pub(super) use needed_ddi;

/// [`destroy_kmd_object`] with slot `$slot` of table `$t`.
macro_rules! destroy_kmd {
    ($a:expr, $t:expr, $slot:ident, $what:expr, $kmd:expr) => {
        $crate::ums::kmd::destroy_kmd_object(
            $a,
            $what,
            stringify!($slot),
            $crate::adapter::ddi::in_table!($t, $slot),
            $kmd,
        )
    };
}
pub(crate) use destroy_kmd;

/// Calls `DxgkDdiDestroy*` `name`, `f`, that takes only the KMD's handle of a `what` (device,
/// context, hardware queue) at PASSIVE_LEVEL. The driver created the object, so the DDI must
/// exist, and it must succeed; either failure is a simulation error.
pub(crate) fn destroy_kmd_object(
    a: &AdapterShared,
    what: &str,
    name: &str,
    f: Option<ddi::HandleFn>,
    kmd: usize,
) -> Result<(), SimError> {
    let f = f.ok_or_else(|| sim_err(a, format!("driver created a {what} but has no {name}")))?;
    let status = f.passive(a, kmd as HANDLE)?;
    must_succeed(a, f, status)
}

/// The handle a create DDI returned: non-null and not the handle of another live object of
/// the same kind (the OS could not tell them apart).
pub(crate) fn check_kmd_handle(
    a: &AdapterShared,
    ddi: &str,
    field: &str,
    kmd: usize,
    live: impl Iterator<Item = usize>,
) -> Result<(), SimError> {
    if kmd == 0 {
        return Err(sim_err(
            a,
            format!("driver bug: {ddi} succeeded with a NULL {field}"),
        ));
    }
    let mut live = live;
    if live.any(|h| h == kmd) {
        return Err(sim_err(
            a,
            format!(
                "driver bug: {ddi} returned {field} = {kmd:#x}, the handle of another live \
                 object of the same kind"
            ),
        ));
    }
    Ok(())
}
