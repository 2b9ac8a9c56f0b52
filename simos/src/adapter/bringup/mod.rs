//! The start-up rules Dxgkrnl applies between DriverEntry and a started adapter, numbered as in
//! docs/windows-bringup.md (BR-nn), each with its source: \[D\] decompiled dxgkrnl/dxgmms2,
//! \[M\] Microsoft's documentation, \[H\] observed on 24H2 by a driver that starts there.
//!
//! One table per phase, each a list of [`Rule`] rows applied by one loop ([`apply`]) at the point
//! Windows applies it: [`load`] (`DxgkInitialize`), [`add_device`] (`DpiAddDevice`), [`caps`]
//! (`DXGADAPTER::Initialize` up to the render core), [`vidmm`] (the memory answers, while the
//! render core is created), [`nodes`] (each node's metadata), [`ums`] (the user-mode submission
//! caps), [`render_core`] (the end of `ADAPTER_RENDER::Initialize`), [`paging`] (the paging
//! process and each hardware-scheduled node) and [`power`] (`InitializePowerManagement`). What the rows read is gathered once per phase ([`facts`]).
//! docs/windows-bringup.md's rule tables are generated from the rows ([`tables`],
//! `simos/tests/startup_rules_page.rs`).
//!
//! A violated rule fails the start with the status Windows returns ([`SimError::StartRefused`]).
//! Policies Windows takes from the registry are `OsConfig` fields with Windows' defaults:
//! `validate_wddm_caps` (`ValidateWDDMCaps`, off) gates BR-52.
//!
//! [`SimError::StartRefused`]: crate::SimError::StartRefused

pub mod add_device;
pub mod caps;
pub mod facts;
pub mod load;
pub mod nodes;
pub mod paging;
pub mod power;
pub mod render_core;
pub mod rule;
pub mod ums;
pub mod vidmm;

use rvgpu_ddi::NTSTATUS;

use crate::adapter::rules;

pub use caps::check_caps;
pub use facts::{StartFacts, UmdName};
pub use load::{check_load, driver_data_size, table_as_copied, LOAD_SLOTS};
pub use nodes::UmsEnablement;
pub use render_core::check_render_core;
pub use rule::{
    apply, first, Answer, Facts, Outcome, RowDoc, Rule, Violation,
    STATUS_DEVICE_CONFIGURATION_ERROR, STATUS_OBJECT_NAME_NOT_FOUND, STATUS_REVISION_MISMATCH,
};

/// Every phase's table, by the name its generated region on the page carries, in the order the
/// start applies them.
pub fn tables() -> Vec<(&'static str, Vec<RowDoc>)> {
    fn docs<F>(rows: &[Rule<F>]) -> Vec<RowDoc> {
        rows.iter().map(Rule::doc).collect()
    }
    vec![
        ("load", docs(load::LOAD_RULES)),
        ("add device", docs(add_device::ADD_DEVICE_RULES)),
        ("caps", docs(caps::CAPS_RULES)),
        ("vidmm", {
            let mut d = docs(vidmm::ADDRESS_RULES);
            d.extend(docs(vidmm::COUNT_RULES));
            d.extend(docs(vidmm::SEGMENT_RULES));
            d.extend(docs(vidmm::GPUMMU_RULES));
            d.extend(docs(vidmm::LEVEL_RULES));
            d
        }),
        ("nodes", {
            let mut d = docs(nodes::METADATA_RULES);
            d.extend(docs(nodes::NODE_RULES));
            d
        }),
        ("ums", docs(ums::UMS_CAPS_RULES)),
        ("render core", docs(render_core::RENDER_CORE_RULES)),
        ("paging", {
            let mut d = docs(paging::PAGING_PROCESS_RULES);
            d.extend(docs(paging::PAGING_POOL_RULES));
            d.extend(docs(paging::PRIORITY_BAND_RULES));
            d.extend(docs(paging::SCHEDULING_LOG_RULES));
            d
        }),
        ("power", {
            let mut d = docs(power::COUNT_RULES);
            d.extend(docs(power::COMPONENT_RULES));
            d.extend(docs(power::MAPPING_RULES));
            d.extend(docs(power::P_STATE_RULES));
            d
        }),
    ]
}

/// BR-23: whether Dxgkrnl's wrapper of `ddi` accepts `status` (the statuses column of the rule
/// table); anything else is logged to the triage log as an invalid status (not refused).
pub fn status_allowed(ddi: &str, status: NTSTATUS) -> bool {
    rules::status_allowed(ddi, status)
}
