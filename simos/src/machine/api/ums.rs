//! The `Machine`'s methods on user-mode submission.

use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsEvent;

impl Machine {
    /// Every OS step of user-mode submission on adapter `i`, in order.
    pub fn ums_events(&self, i: usize) -> Vec<UmsEvent> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| lock(&a.ums).events.clone())
    }

    /// Forgets the recorded events of adapter `i`.
    pub fn clear_ums_events(&self, i: usize) {
        if let Ok(a) = self.adapter_shared(i) {
            lock(&a.ums).events.clear();
        }
    }
}
