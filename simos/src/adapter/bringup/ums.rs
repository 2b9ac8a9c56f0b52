//! The user-mode submission phase: \[D\] `ADAPTER_RENDER::Initialize` asks
//! `DXGKQAITYPE_USERMODESUBMISSION_CAPS` (38, 28 bytes) after the node rules when some node
//! claims user-mode submission, and checks the answer (BR-76).

use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_ddi::submission::DXGK_USERMODESUBMISSION_CAPS;
use rvgpu_ddi::NTSTATUS;

use super::rule::{Facts, Rule, Violation};

/// The answer the rows read: the caps, or the status the query failed with.
pub struct UmsCaps(pub Result<DXGK_USERMODESUBMISSION_CAPS, NTSTATUS>);

impl Facts for UmsCaps {
    fn driver_status(&self) -> Option<NTSTATUS> {
        self.0.err()
    }
}

const SOURCE: &str = "[D] ADAPTER_RENDER::Initialize; [M] user-mode work submission";

/// `SecondaryDoorbellSupported`, the one flag bit defined.
const SECONDARY: u32 = 1;

fn size_ok(n: u32) -> bool {
    (1..=0x4000).contains(&n)
}

/// The answered caps, for the rows that read them.
fn caps(u: &UmsCaps) -> Option<&DXGK_USERMODESUBMISSION_CAPS> {
    u.0.as_ref().ok()
}

/// The user-mode submission phase's rows, in Windows' order.
pub const UMS_CAPS_RULES: &[Rule<UmsCaps>] = &[
    Rule::driver_status(
        "BR-76",
        SOURCE,
        "`USERMODESUBMISSION_CAPS` (38), asked when a node claims user-mode submission, succeeds",
        |u| {
            u.0.err().map(|status| {
                format!(
                    "a node reports UserModeSubmission but DXGKQAITYPE_USERMODESUBMISSION_CAPS \
                     failed ({:#010x}, UM-04)",
                    status as u32
                )
            })
        },
    ),
    Rule::refuse(
        "BR-76",
        SOURCE,
        "`DoorbellSizeInBytes` 1 to 0x4000",
        STATUS_INVALID_PARAMETER,
        |u| {
            let n = caps(u)?.DoorbellSizeInBytes;
            (!size_ok(n)).then(|| {
                format!("USERMODESUBMISSION_CAPS: DoorbellSizeInBytes {n:#x} outside 1..=0x4000")
            })
        },
    ),
    Rule::refuse(
        "BR-76",
        SOURCE,
        "no flag but `SecondaryDoorbellSupported`",
        STATUS_INVALID_PARAMETER,
        |u| {
            let flags = caps(u)?.Flags.Value;
            (flags & !SECONDARY != 0)
                .then(|| format!("USERMODESUBMISSION_CAPS: reserved flag bits set ({flags:#x})"))
        },
    ),
    Rule::refuse(
        "BR-76",
        SOURCE,
        "with `SecondaryDoorbellSupported`, `SecondaryDoorbellSizeInBytes` 1 to 0x4000",
        STATUS_INVALID_PARAMETER,
        |u| {
            let c = caps(u)?;
            let n = c.SecondaryDoorbellSizeInBytes;
            (c.Flags.Value & SECONDARY != 0 && !size_ok(n)).then(|| {
                format!(
                    "USERMODESUBMISSION_CAPS: SecondaryDoorbellSizeInBytes {n:#x} outside \
                     1..=0x4000"
                )
            })
        },
    ),
];

/// The rows over the answer; the first that fires.
pub fn check_ums_caps(answer: Result<DXGK_USERMODESUBMISSION_CAPS, NTSTATUS>) -> Option<Violation> {
    super::rule::first(UMS_CAPS_RULES, &UmsCaps(answer))
}
