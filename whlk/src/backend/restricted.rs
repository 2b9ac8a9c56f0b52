//! A backend with fewer capabilities than the one it wraps: the same sessions, with the hidden
//! capabilities' `as_x` returning `None`. It shows how a case list runs on a backend that can
//! do less (a Windows backend, say) and proves the runner's skipping in tests.

use std::time::Duration;

use super::caps::{capability_table, Capabilities, Capability};
use super::{Backend, Failure, Session, SessionConfig, StartedAdapter, Until};

/// Inside `impl Session for RestrictedSession`: every accessor forwards to the inner session's
/// while its capability is kept.
macro_rules! kept {
    ($(
        $(#[$doc:meta])*
        $cap:ident, $on:ident
        $(: $tr:path = $get:ident $(/ $get_ref:ident)?, $h:ident $(/ $h_ref:ident)?)?;
    )*) => {
        $($(
            fn $get(&mut self) -> Option<&mut dyn $tr> {
                let kept = self.keep.contains(Capability::$cap);
                kept.then(|| self.inner.$get()).flatten()
            }
            $(
                fn $get_ref(&self) -> Option<&dyn $tr> {
                    let kept = self.keep.contains(Capability::$cap);
                    kept.then(|| self.inner.$get_ref()).flatten()
                }
            )?
        )?)*
    };
}

/// Inside `impl Session for View`: the shared accessors forward while the capability is kept;
/// the mutable ones stay `None` (a condition only reads).
macro_rules! kept_shared {
    ($(
        $(#[$doc:meta])*
        $cap:ident, $on:ident
        $(: $tr:path = $get:ident $(/ $get_ref:ident)?, $h:ident $(/ $h_ref:ident)?)?;
    )*) => {
        $($(
            $(
                fn $get_ref(&self) -> Option<&dyn $tr> {
                    let kept = self.keep.contains(Capability::$cap);
                    kept.then(|| self.inner.$get_ref()).flatten()
                }
            )?
        )?)*
    };
}

/// `inner` with only the capabilities in `keep`.
#[derive(Clone, Copy, Debug)]
pub struct Restricted<B> {
    inner: B,
    keep: Capabilities,
}

impl<B: Backend> Restricted<B> {
    /// `inner` without `hide`.
    pub fn without(inner: B, hide: &[Capability]) -> Self {
        Self {
            inner,
            keep: Capabilities::all().difference(Capabilities::of(hide)),
        }
    }
}

impl<B: Backend> Backend for Restricted<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities().intersection(self.keep)
    }

    fn open_session(&self, config: &SessionConfig) -> Result<Box<dyn Session>, Failure> {
        Ok(Box::new(RestrictedSession {
            inner: self.inner.open_session(config)?,
            keep: self.keep,
        }))
    }
}

struct RestrictedSession {
    inner: Box<dyn Session>,
    keep: Capabilities,
}

/// What a `run_until` condition sees: the session, read-only, with the same capabilities.
struct View<'a> {
    inner: &'a dyn Session,
    keep: Capabilities,
}

fn read_only<T>() -> Result<T, Failure> {
    Err(Failure::Backend(
        "a run_until condition cannot change the session".into(),
    ))
}

impl Session for RestrictedSession {
    fn adapter_count(&self) -> usize {
        self.inner.adapter_count()
    }
    fn load_driver(&mut self) -> Result<(), Failure> {
        self.inner.load_driver()
    }
    fn start_adapter(&mut self, i: usize) -> Result<StartedAdapter, Failure> {
        self.inner.start_adapter(i)
    }
    fn stop_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.inner.stop_adapter(i)
    }
    fn remove_adapter(&mut self, i: usize) -> Result<(), Failure> {
        self.inner.remove_adapter(i)
    }
    fn unload(&mut self) -> Result<(), Failure> {
        self.inner.unload()
    }
    fn run_until(&mut self, budget: Duration, done: Until<'_>) -> Result<bool, Failure> {
        let keep = self.keep;
        self.inner
            .run_until(budget, &mut |s| done(&View { inner: s, keep }))
    }
    capability_table!(kept);
}

impl Session for View<'_> {
    fn adapter_count(&self) -> usize {
        self.inner.adapter_count()
    }
    fn load_driver(&mut self) -> Result<(), Failure> {
        read_only()
    }
    fn start_adapter(&mut self, _i: usize) -> Result<StartedAdapter, Failure> {
        read_only()
    }
    fn stop_adapter(&mut self, _i: usize) -> Result<(), Failure> {
        read_only()
    }
    fn remove_adapter(&mut self, _i: usize) -> Result<(), Failure> {
        read_only()
    }
    fn unload(&mut self) -> Result<(), Failure> {
        read_only()
    }
    fn run_until(&mut self, _budget: Duration, _done: Until<'_>) -> Result<bool, Failure> {
        read_only()
    }
    capability_table!(kept_shared);
}
