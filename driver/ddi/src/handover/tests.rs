//! The audit's own checks.

use super::*;
use crate::allocation::{DXGKARG_CREATEPROCESS, DXGK_ALLOCATIONINFO};
use crate::memory::DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE;

fn cites(f: Fill) -> bool {
    let (by, text) = match f {
        Fill::Filled { by, how } => (by, how),
        Fill::Zero { by, why } => (by, why),
    };
    (by.starts_with("K:") || by.starts_with("M:")) && by.contains(" @0x") && !text.is_empty()
}

fn check<T>(d: &Ddi<T>) {
    for (i, r) in d.rows.iter().enumerate() {
        assert!(cites(r.fill), "{}.{}: no 24H2 citation", d.block, r.field);
        assert_eq!(
            matches!(r.fill, Fill::Zero { .. }),
            r.is_zero.is_some(),
            "{}.{}",
            d.block,
            r.field
        );
        assert!(
            d.rows.iter().skip(i + 1).all(|o| o.field != r.field),
            "{}.{} twice",
            d.block,
            r.field
        );
    }
}

/// Every row names a 24H2 function by address, every field once; zero rows check.
#[test]
fn every_row_cites_24h2_once() {
    check(&CREATE_PROCESS);
    check(&SET_ROOT_PAGE_TABLE);
    check(&UPDATE_PAGE_TABLE);
    check(&FLUSH_TLB);
    check(&UPDATE_PAGE_TABLE_INVALIDATE);
    check(&CREATE_ALLOCATION);
    check(&ALLOCATION_INFO);
    check(&OPEN_ALLOCATION);
    check(&OPEN_ALLOCATION_INFO);
    check(&CREATE_HWQUEUE);
    check(&CREATE_HWQUEUE_USER_MODE);
    check(&CREATE_DOORBELL);
    check(&SUBMIT_COMMAND_TO_HWQUEUE);
}

/// A block filled where the audit says zero is caught, field by field.
#[test]
fn a_field_24h2_leaves_zero_is_caught_when_filled() {
    let mut b = DXGKARG_CREATEPROCESS {
        NumPasid: 1,
        ..Default::default()
    };
    assert_eq!(CREATE_PROCESS.filled_zero(&b).count(), 0);
    let mut pasid = 0u32;
    b.pPasid = &mut pasid;
    b.ProcessNameLength = 3;
    let got: std::vec::Vec<_> = CREATE_PROCESS.filled_zero(&b).collect();
    assert_eq!(got, ["pPasid", "ProcessNameLength"]);
}

/// An allocation info handed over with an answer already in it is caught: 24H2 zeroes
/// the array.
#[test]
fn an_allocation_info_with_an_answer_is_caught() {
    let mut b = DXGK_ALLOCATIONINFO {
        PrivateDriverDataSize: 16,
        ..Default::default()
    };
    assert_eq!(ALLOCATION_INFO.filled_zero(&b).count(), 0);
    b.Size = 4096;
    b.hAllocation = 8 as crate::HANDLE;
    let got: std::vec::Vec<_> = ALLOCATION_INFO.filled_zero(&b).collect();
    assert_eq!(got, ["Size", "hAllocation"]);
}

/// An invalidation that names the allocation it unmaps, or its offset, is caught: 24H2's
/// carry neither.
#[test]
fn an_invalidation_naming_an_allocation_is_caught() {
    let mut b = DXGK_BUILDPAGINGBUFFER_UPDATEPAGETABLE {
        FirstPteVirtualAddress: 0x20_0000,
        ..Default::default()
    };
    assert_eq!(UPDATE_PAGE_TABLE_INVALIDATE.filled_zero(&b).count(), 0);
    b.hAllocation = 8 as crate::HANDLE;
    b.AllocationOffsetInBytes = 0x1000;
    let got: std::vec::Vec<_> = UPDATE_PAGE_TABLE_INVALIDATE.filled_zero(&b).collect();
    assert_eq!(got, ["hAllocation", "AllocationOffsetInBytes"]);
    assert_eq!(
        UPDATE_PAGE_TABLE.filled_zero(&b).count(),
        0,
        "a map may name one"
    );
}
