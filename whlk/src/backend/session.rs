//! The session every backend opens (the driver and adapter life cycle, and the way to its
//! capabilities) and the backend that opens it.

use std::cell::Cell;
use std::time::Duration;

use super::caps::{capability_table, Capabilities, Capability};
use super::common::Failure;
use super::config::SessionConfig;
use super::device::DeviceSettings;

/// The condition [`Session::run_until`] waits for, asked of the session between rounds.
pub type Until<'a> = &'a mut dyn FnMut(&dyn Session) -> bool;

/// Inside `impl Session for T`: the accessors of the capability traits `T` implements, each
/// answering `Some(self)`. A row `as_x / as_x_ref: Trait` gives both; `as_x: Trait` only the
/// mutable one (the traits without a shared accessor).
macro_rules! capabilities {
    ($($get:ident $(/ $get_ref:ident)? : $tr:path),* $(,)?) => {
        $(
            fn $get(&mut self) -> Option<&mut dyn $tr> {
                Some(self)
            }
            $(
                fn $get_ref(&self) -> Option<&dyn $tr> {
                    Some(self)
                }
            )?
        )*
    };
}
pub(crate) use capabilities;

/// `Session`'s accessors, each answering `None` (a backend overrides those it has).
macro_rules! session_accessors {
    ($(
        $(#[$doc:meta])*
        $cap:ident, $on:ident
        $(: $tr:path = $get:ident $(/ $get_ref:ident)?, $h:ident $(/ $h_ref:ident)?)?;
    )*) => {
        $($(
            #[doc = concat!(
                "The [`", stringify!($cap), "`](Capability::", stringify!($cap),
                ") capability, if the backend has it."
            )]
            fn $get(&mut self) -> Option<&mut dyn $tr> {
                None
            }
            $(
                #[doc = concat!("[`Session::", stringify!($get), "`] for shared access.")]
                fn $get_ref(&self) -> Option<&dyn $tr> {
                    None
                }
            )?
        )?)*
    };
}

/// The helpers on `dyn Session` that reach a capability and record the use.
macro_rules! session_helpers {
    ($(
        $(#[$doc:meta])*
        $cap:ident, $on:ident
        $(: $tr:path = $get:ident $(/ $get_ref:ident)?, $h:ident $(/ $h_ref:ident)?)?;
    )*) => {
        $($(
            #[doc = concat!(
                "The [`", stringify!($cap), "`](Capability::", stringify!($cap), ") capability."
            )]
            pub fn $h(&mut self) -> Result<&mut dyn $tr, Failure> {
                reach(Capability::$cap, self.$get())
            }
            $(
                #[doc = concat!(
                    "The [`", stringify!($cap), "`](Capability::", stringify!($cap),
                    ") capability, shared."
                )]
                pub fn $h_ref(&self) -> Result<&dyn $tr, Failure> {
                    reach(Capability::$cap, self.$get_ref())
                }
            )?
        )?)*
    };
}

/// What adapter start reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartedAdapter {
    /// Video present sources (0 for a render-only adapter).
    pub sources: u32,
    /// Children (0 for a render-only adapter).
    pub children: u32,
}

/// One machine with its adapters, for one case: the driver and adapter life cycle every
/// backend has, and the capability traits ([`super::caps`]) the backend implements. `as_x` returns
/// `None` for a capability the backend lacks; cases reach them through [`dyn Session`]'s
/// helpers (`s.fences()?`, `s.fences_ref()?`), which report a missing one as
/// [`Failure::Unsupported`] and let the runner check that the case declared what it used.
pub trait Session {
    /// Number of adapters.
    fn adapter_count(&self) -> usize;

    /// Loads the driver (DriverEntry → DxgkInitialize).
    fn load_driver(&mut self) -> Result<(), Failure>;

    /// Adds and starts adapter `i` (AddDevice, StartDevice, the start-time adapter queries).
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure>;

    /// Stops adapter `i`.
    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure>;

    /// Removes adapter `i`. Default: nothing to do, for a backend whose adapters PnP keeps
    /// (a real machine's, or the D3DKMT backends' view of the simulated one).
    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure> {
        let _ = i;
        Ok(())
    }

    /// Unloads the driver. Default: nothing to do, for a backend that did not load it.
    fn unload(&mut self) -> Result<(), Failure> {
        Ok(())
    }

    /// Lets the device, the ISR and DPCs run until `done` holds or `budget` passes.
    fn run_until(&mut self, budget: Duration, done: Until<'_>) -> Result<bool, Failure>;

    capability_table!(session_accessors);
}

thread_local! {
    /// Capabilities the case running on this thread reached through the helpers below.
    static USED: Cell<Capabilities> = const { Cell::new(Capabilities::NONE) };
}

/// Forgets the capabilities recorded on this thread (the runner, before a case).
pub(crate) fn reset_used() {
    USED.with(|u| u.set(Capabilities::NONE));
}

/// The capabilities used on this thread since [`reset_used`].
pub(crate) fn used() -> Capabilities {
    USED.with(Cell::get)
}

fn reach<T>(cap: Capability, found: Option<T>) -> Result<T, Failure> {
    USED.with(|u| u.set(u.get().with(cap)));
    found.ok_or_else(|| Failure::Unsupported(format!("the backend lacks the {cap} capability")))
}

/// How cases reach a session's capabilities: `Err(Unsupported)` when the backend lacks it (the
/// case is skipped, or leaves out an optional observation), and the use is recorded for the
/// runner's check of the case's declaration.
impl dyn Session + '_ {
    capability_table!(session_helpers);
}

/// Something that opens sessions.
pub trait Backend: Send + Sync {
    /// Name shown in reports (`sim`, later `windows`).
    fn name(&self) -> &'static str;
    /// What its sessions can do beyond the life cycle: every capability listed here has its
    /// `Session::as_x` return `Some`.
    fn capabilities(&self) -> Capabilities;
    /// Opens a fresh session for `config` (cases call [`dyn Backend`]'s `open`, which first
    /// checks the capabilities the configuration needs).
    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure>;
}

impl dyn Backend + '_ {
    /// Opens a fresh session. A configuration that builds a particular machine
    /// ([`SessionConfig::configures_machine`]) needs [`Capability::ConfiguredMachine`], one
    /// with a misbehaving driver [`Capability::FaultInjection`]: `Unsupported` on a backend
    /// without them, and recorded for the runner's check of the case's declaration.
    pub fn open(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        let has = self.capabilities();
        if config.configures_machine() {
            let c = Capability::ConfiguredMachine;
            reach(c, has.contains(c).then_some(()))?;
        }
        if config.misbehaviour.is_some() {
            let c = Capability::FaultInjection;
            reach(c, has.contains(c).then_some(()))?;
        }
        self.open_session(config)
    }
}

impl SessionConfig {
    /// Why device `d` (one adapter's) is not the one this configuration asks for, naming the
    /// `rvgpu-vfu` options that start one that is (`None`: it is). A backend that does not
    /// build its machine runs the case on the device it has, or skips it with this.
    pub fn device_mismatch(&self, d: &DeviceSettings) -> Option<String> {
        let doorbells = match (self.doorbells, self.min_doorbells, self.max_doorbells) {
            (Some(n), ..) => (d.doorbells != n).then_some(n),
            (None, lo, hi) => (lo.is_some_and(|lo| d.doorbells < lo)
                || hi.is_some_and(|hi| d.doorbells > hi))
            .then(|| hi.or(lo).unwrap_or(d.doorbells)),
        };
        let engines = self.engines.filter(|n| *n != d.engines);
        let global = d.global_doorbell != self.global_doorbell;
        if doorbells.is_none() && engines.is_none() && !global {
            return None;
        }
        // The options of a device that fits: the case's asks, the rest as the device has it.
        let want = DeviceSettings {
            doorbells: doorbells.unwrap_or(d.doorbells),
            global_doorbell: self.global_doorbell,
            engines: engines.unwrap_or(d.engines),
        };
        Some(format!(
            "needs a device started as `rvgpu-vfu {}` (kmt-sim: --device {}); this machine's \
             has {d}",
            want.vfu_options(),
            want.device_option()
        ))
    }
}

#[cfg(test)]
mod device_tests {
    use crate::backend::{DeviceSettings, ExecMode, SessionConfig};

    #[test]
    fn um_20_device_mismatch_names_the_rvgpu_vfu_options() {
        let dev = |spec| DeviceSettings::parse(spec).expect("a device").0;
        let mut c = SessionConfig::new(ExecMode::Step);
        assert!(!c.asks_device());
        c.doorbells = Some(1);
        assert!(c.asks_device() && !c.configures_machine());
        assert_eq!(c.device_mismatch(&dev("doorbells=1")), None);
        let why = c
            .device_mismatch(&DeviceSettings::default())
            .expect("16 is not 1");
        assert!(
            why.contains("`rvgpu-vfu --engines 2 --doorbells 1`")
                && why.contains("--device engines=2,doorbells=1")
                && why.contains("has 16 doorbells, 2 engines"),
            "{why}"
        );
        let mut bounds = SessionConfig::new(ExecMode::Step);
        bounds.max_doorbells = Some(2);
        assert_eq!(bounds.device_mismatch(&dev("doorbells=1")), None);
        assert!(bounds.device_mismatch(&dev("doorbells=3")).is_some());
        bounds.max_doorbells = None;
        bounds.min_doorbells = Some(4);
        assert!(bounds.device_mismatch(&dev("doorbells=3")).is_some());
        assert_eq!(bounds.device_mismatch(&dev("doorbells=4")), None);
        // A global doorbell is asked for, or not: a global device fits no dedicated case.
        assert!(bounds
            .device_mismatch(&dev("doorbells=4,global-doorbell"))
            .is_some());
    }
}
