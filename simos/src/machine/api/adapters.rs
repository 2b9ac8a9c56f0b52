//! The `Machine`'s methods on what Dxgkrnl negotiated with and logged of an adapter: the
//! feature database, the triage log, and the kernel-mode testing escape.

use rvgpu_ddi::NTSTATUS;

use crate::adapter::featuredb::FeatureDb;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::dxgkrnl::kmtest;
use crate::machine::Machine;
use crate::sync::fence::ProcessId;

impl Machine {
    /// The feature database adapter `i` negotiated at its last start.
    pub fn feature_db(&self, i: usize) -> FeatureDb {
        self.adapter_shared(i)
            .map_or_else(|_| FeatureDb::default(), |a| lock(&a.features).clone())
    }

    /// Dxgkrnl's triage log of adapter `i`: statuses outside a DDI wrapper's allow-list
    /// (BR-23).
    pub fn triage_log(&self, i: usize) -> Vec<String> {
        self.adapter_shared(i)
            .map_or_else(|_| Vec::new(), |a| a.observer().triage_log())
    }

    /// Argument blocks of `ddi` (a [`rvgpu_ddi::handover::Ddi::name`]) adapter `i`'s OS checked
    /// against the hand-over audit, and each `DDI: field` it filled that the audit says 24H2
    /// leaves zero (meaningful under the 24H2 reading).
    pub fn handover(&self, i: usize, ddi: &str) -> (u64, Vec<String>) {
        self.adapter_shared(i).map_or_else(
            |_| (0, Vec::new()),
            |a| {
                let o = a.observer();
                (o.handed_blocks(ddi), o.handed_filled_zero())
            },
        )
    }

    /// `D3DKMTEscape` with `D3DDDI_ESCAPEFLAGS::DriverKnownEscape` of process `pid` on adapter
    /// `adapter`, `data` being the private driver data (a
    /// `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER`, or shorter to be refused). The escape's
    /// `pDmaBuffer`/`pDmaBufferPrivateData` name the caller's buffers, which are `dma` and
    /// `private` (the process's memory): a pointer that is not the slice's address, or a size
    /// beyond the slice, is a buffer the process does not have and faults like a failed probe.
    /// Returns the escape's status (rules KT-2 … KT-9).
    pub fn escape_build_test_command_buffer(
        &self,
        adapter: usize,
        pid: ProcessId,
        data: &mut [u8],
        dma: &mut [u8],
        private: &mut [u8],
    ) -> Result<NTSTATUS, SimError> {
        let a = self.adapter_shared(adapter)?.clone();
        kmtest::escape_build_test_command_buffer(&a, pid, data, dma, private)
    }
}
