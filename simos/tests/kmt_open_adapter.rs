//! `D3DKMTOpenAdapterFromLuid`'s kernel entry as 24H2's `K:DxgkOpenAdapterFromLuidImpl`
//! @0x14035AC38 answers a caller whose handle table is full: the table's status, and the zero
//! handle written back (24H2 copies its handle, still 0, to `hAdapter` on every path past the
//! adapter's stop lock). Every test runs on both driver builds and both readings.

mod common;

use common::*;

use rvgpu_ddi::d3dkmt::D3DKMT_OPENADAPTERFROMLUID;
use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_NO_MEMORY};
use rvgpu_simos::kmt::adapter::{dxgk_open_adapter_from_luid_impl, AdapterTable};
use rvgpu_simos::{Mode, ProcessId};
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

/// A caller with no adapter open, no process on any adapter and no handle left.
struct FullTable;

impl AdapterTable for FullTable {
    fn adapter(&self, _: KmtHandle) -> Option<usize> {
        None
    }
    fn process(&self, _: usize) -> Option<ProcessId> {
        None
    }
    fn open(&self, _: usize) -> Result<KmtHandle, NtStatus> {
        Err(NtStatus(STATUS_NO_MEMORY))
    }
    fn close(&self, _: KmtHandle) -> bool {
        false
    }
}

/// UM-17: a started adapter's LUID with a full handle table is the table's STATUS_NO_MEMORY
/// and `hAdapter` 0 whatever the caller left there; an unknown LUID is refused before the
/// adapter is looked at and leaves `hAdapter` as it was.
#[test]
fn um_17_open_adapter_from_luid_with_a_full_handle_table_writes_back_the_zero_handle() {
    let m = machine_with(Mode::Step, |_| {});
    let mut a = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_simos::adapter::adapter_luid(0),
        hAdapter: 0x7777,
    };
    let r = dxgk_open_adapter_from_luid_impl(&m, &mut a, &FullTable);
    assert_eq!(r, Err(NtStatus(STATUS_NO_MEMORY)));
    assert_eq!({ a.hAdapter }, 0, "the zero handle goes back");

    let mut unknown = D3DKMT_OPENADAPTERFROMLUID {
        AdapterLuid: rvgpu_simos::adapter::adapter_luid(9),
        hAdapter: 0x7777,
    };
    let r = dxgk_open_adapter_from_luid_impl(&m, &mut unknown, &FullTable);
    assert_eq!(r, Err(NtStatus(STATUS_INVALID_PARAMETER)));
    assert_eq!({ unknown.hAdapter }, 0x7777, "nothing goes back");
    no_fault(&m);
}

against_the_pe_image!();

under_the_pages!(image);
