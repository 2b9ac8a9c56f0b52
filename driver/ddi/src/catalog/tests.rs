use super::*;
use crate::init::DRIVER_INITIALIZATION_DATA;

#[test]
fn slot_rows_name_real_slots() {
    for d in CATALOG.iter().filter(|d| d.is_slot()) {
        assert!(
            DRIVER_INITIALIZATION_DATA::SLOT_NAMES.contains(&d.name),
            "{}",
            d.name
        );
        assert_eq!(d.name, d.member);
    }
}

#[test]
fn every_row_has_a_page_and_a_classified_row_a_reason() {
    for d in CATALOG {
        assert!(!d.page.is_empty(), "{}: no reference page", d.name);
        assert!(
            !d.page.starts_with("http"),
            "{}: page relative to MS",
            d.name
        );
        if d.class != Class::Unclassified {
            assert!(!d.reason.is_empty(), "{}: no reason", d.name);
            assert!(!d.doc.0.is_empty(), "{}: no docs cell", d.name);
        }
        if let Some(r) = d.irql {
            assert!(r.min <= r.max, "{}", d.name);
        }
    }
}

#[test]
fn find_finds_every_row_and_nothing_else() {
    for d in CATALOG {
        assert_eq!(find(d.name), Some(d));
    }
    assert_eq!(find("DxgkDdiNoSuchThing"), None);
    assert!(str_eq("", "") && !str_eq("a", "ab") && !str_eq("ab", "ac"));
}

#[test]
fn groups_and_classes() {
    let n = |g| of_group(g).count();
    assert_eq!(
        [
            Group::NativeFence,
            Group::FenceLogs,
            Group::PerEngineTdr,
            Group::Hws
        ]
        .map(n),
        [3, 2, 4, 5]
    );
    assert!(of_group(Group::NativeFence).all(|d| d.class == Class::Mandatory));
    assert!(of_class(Class::Mandatory).count() > 50);
}
