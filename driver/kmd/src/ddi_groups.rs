//! Which optional DDI groups a table of entry points fills.
//!
//! A capability that obliges DDIs is advertised only when the table fills them, so the bit
//! cannot get ahead of the code (NF-10/NF-12, LOG-09, TDR-01, the HWS DDIs). StartDevice takes
//! this answer from the driver's table once (`thunk::adapter`) and hands it to the adapter
//! (`Live::ddis`); the logic reads it there and never reaches for the FFI table itself.

use rvgpu_ddi::catalog::{self, Group};
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;

/// The DDI groups the table fills, one flag per group a capability obliges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filled {
    /// CreateNativeFence, UpdateMonitoredValues and UpdateCurrentValuesFromCpu (NF-12).
    pub native_fence: bool,
    /// SetNativeFenceLogBuffer and UpdateNativeFenceLogs (LOG-09: native fences oblige them,
    /// the OS gives every user-mode queue both logs).
    pub fence_logs: bool,
    /// QueryDependentEngineGroup, QueryEngineStatus, ResetEngine and CollectDbgInfo, which
    /// `SupportPerEngineTDR` obliges (TDR-01).
    pub per_engine_tdr: bool,
    /// The HWS DDIs the OS calls on a hardware-scheduled node.
    pub hws: bool,
}

impl Filled {
    /// The groups `t` fills: a group is filled when every slot the DDI catalog puts in it is
    /// (`rvgpu_ddi::catalog::Group`), so a DDI joins its group by its catalog row alone.
    pub fn of(t: &DRIVER_INITIALIZATION_DATA) -> Self {
        Self {
            native_fence: fills(t, Group::NativeFence),
            fence_logs: fills(t, Group::FenceLogs),
            per_engine_tdr: fills(t, Group::PerEngineTdr),
            hws: fills(t, Group::Hws),
        }
    }
}

/// Whether `t` fills every slot of `group`.
fn fills(t: &DRIVER_INITIALIZATION_DATA, group: Group) -> bool {
    let names = DRIVER_INITIALIZATION_DATA::SLOT_NAMES;
    let checks = DRIVER_INITIALIZATION_DATA::SLOT_CHECKS;
    catalog::of_group(group).all(|d| {
        names
            .iter()
            .position(|n| *n == d.name)
            .and_then(|i| checks.get(i))
            .is_some_and(|filled| filled(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kmem::Host as TestKernel;

    /// The driver's own table fills every group.
    #[test]
    fn the_driver_table_fills_every_obliged_group() {
        let f = Filled::of(&crate::initialization_data::<TestKernel>());
        assert_eq!(
            f,
            Filled {
                native_fence: true,
                fence_logs: true,
                per_engine_tdr: true,
                hws: true
            }
        );
    }

    /// LOG-09: both log DDIs are needed.
    #[test]
    fn log_09_native_fence_cap_requires_log_ddis() {
        let mut t = crate::initialization_data::<TestKernel>();
        t.DxgkDdiUpdateNativeFenceLogs = None;
        assert!(!Filled::of(&t).fence_logs, "both log DDIs are needed");
        let mut t = crate::initialization_data::<TestKernel>();
        t.DxgkDdiSetNativeFenceLogBuffer = None;
        assert!(!Filled::of(&t).fence_logs, "both log DDIs are needed");
        assert!(!Filled::of(&DRIVER_INITIALIZATION_DATA::default()).fence_logs);
    }

    /// TDR-01: the per-engine group needs all four DDIs.
    #[test]
    fn tdr_01_per_engine_tdr_needs_all_four_ddis() {
        type Clear = fn(&mut DRIVER_INITIALIZATION_DATA);
        let clears: [Clear; 4] = [
            |t| t.DxgkDdiQueryDependentEngineGroup = None,
            |t| t.DxgkDdiQueryEngineStatus = None,
            |t| t.DxgkDdiResetEngine = None,
            |t| t.DxgkDdiCollectDbgInfo = None,
        ];
        for (i, clear) in clears.iter().enumerate() {
            let mut t = crate::initialization_data::<TestKernel>();
            clear(&mut t);
            assert!(!Filled::of(&t).per_engine_tdr, "slot {i} missing");
        }
    }

    /// Each flag reads exactly the slots of its group in the DDI catalog
    /// (`rvgpu_ddi::catalog::Group`): taking out a slot of the group clears the flag, taking out
    /// any other slot leaves it set.
    #[test]
    fn each_group_is_the_catalogs() {
        use rvgpu_ddi::catalog::{of_group, Group};
        let full = crate::initialization_data::<TestKernel>();
        let groups = [
            (
                Group::NativeFence,
                (|f| f.native_fence) as fn(Filled) -> bool,
            ),
            (Group::FenceLogs, |f| f.fence_logs),
            (Group::PerEngineTdr, |f| f.per_engine_tdr),
            (Group::Hws, |f| f.hws),
        ];
        let slots = DRIVER_INITIALIZATION_DATA::SLOT_NAMES.iter();
        for (name, clear) in slots.zip(DRIVER_INITIALIZATION_DATA::SLOT_CLEARS) {
            let mut t = full;
            clear(&mut t);
            let f = Filled::of(&t);
            for (group, flag) in groups {
                let member = of_group(group).any(|d| d.name == *name);
                assert_eq!(flag(f), !member, "{name} and {group:?}");
            }
        }
    }

    /// NF-12 and the HWS group: one missing slot clears the group.
    #[test]
    fn nf_12_and_hws_groups_need_every_slot() {
        let mut t = crate::initialization_data::<TestKernel>();
        t.DxgkDdiUpdateCurrentValuesFromCpu = None;
        t.DxgkDdiResumeHwEngine = None;
        let f = Filled::of(&t);
        assert!(!f.native_fence && !f.hws && f.fence_logs && f.per_engine_tdr);
    }
}
