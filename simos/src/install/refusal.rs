//! Why Windows refuses a package or a driver: the one type every stage of the install and the
//! service start reports with.

/// Why Windows refuses the package or the driver: where (`PnP`, `InfVerif`, `CI`,
/// `loader`), the rule (docs/windows-bringup.md §1, §2), Windows' code (a SetupAPI error,
/// an HRESULT or an NTSTATUS), the device's problem code when the device shows one, and what
/// was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub stage: &'static str,
    pub rule: &'static str,
    pub code: u32,
    pub problem: Option<u32>,
    pub why: String,
}

impl Refusal {
    /// A refusal at the PnP stage with no device problem code.
    pub(crate) fn pnp(rule: &'static str, code: u32, why: impl Into<String>) -> Self {
        Self {
            stage: "PnP",
            rule,
            code,
            problem: None,
            why: why.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {:#010x}", self.stage, self.rule, self.code)?;
        if let Some(p) = self.problem {
            write!(f, " (Code {p})")?;
        }
        write!(f, ": {}", self.why)
    }
}
