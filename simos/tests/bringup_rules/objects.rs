//! The runtime rules of the object chain (docs/windows-bringup.md §11, not start-up): BR-91 to
//! BR-96.

use super::*;

// ---------------------------------------------------------------------------------------------
// Section 8: the OS side of the D3DKMT calls.

/// BR-92: `DXGCONTEXT::Initialize`'s flag rules beyond the node checks (simos/tests/hws.rs):
/// with `HwQueueSupported`, a reserved flag or a non-virtual context is refused with
/// `STATUS_UNSUCCESSFUL` and a triage line; a synchronisation-only context is exempt from the
/// rules (its `HwQueueSupported` is dropped).
#[test]
fn br_92_context_flag_rules() {
    const HW_QUEUE: u32 = 1 << 4;
    let m = common::started(MachineConfig::single(Mode::Step));
    let p = m.create_process(0).expect("process");
    let node = *m.hws_nodes(0).first().expect("an HWS node");
    let br92 = |m: &Machine| {
        m.triage_log(0)
            .iter()
            .filter(|l| l.starts_with("BR-92"))
            .count()
    };
    let unsuccessful = Err(SimError::DdiFailed(
        rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL,
    ));
    assert_eq!(
        m.create_context_raw(&p, node, HW_QUEUE | 1 << 7, true),
        unsuccessful
    );
    assert_eq!(br92(&m), 1);
    assert_eq!(
        m.create_context_raw(&p, node, HW_QUEUE, false),
        unsuccessful
    );
    assert_eq!(br92(&m), 2);
    // Synchronisation-only: no BR-92 refusal whatever HwQueueSupported says.
    let _ = m.create_context_raw(&p, node, 1 << 3 | HW_QUEUE, true);
    assert_eq!(br92(&m), 2, "{:#?}", m.triage_log(0));
    m.create_context_raw(&p, node, HW_QUEUE, true)
        .expect("a well-formed virtual HWS context");
}

/// BR-92: `HwQueueSupported` needs a D3DKMT (WDDM) version of 2.5 or later. A WDDM 2.4
/// driver (its nodes without user-mode submission, which needs 3.1: BR-73) starts, and its
/// hardware-queue contexts are refused.
#[test]
fn br_92_hw_queue_contexts_need_wddm_2_5() {
    fn no_ums(md: &mut DXGK_NODEMETADATA) {
        md.Flags = md.Flags.with(
            rvgpu_ddi::submission::DXGK_NODEMETADATA_FLAGS::UserModeSubmission,
            0,
        );
    }
    NODE_EDIT.set(Some(no_ums));
    let (m, r) = start_with(
        |c| c.WDDMVersion = 0x2400,
        |t| {
            let _ = REAL_NODE_METADATA.set(t.DxgkDdiGetNodeMetadata);
            t.DxgkDdiGetNodeMetadata = Some(edited_node_metadata);
        },
    );
    NODE_EDIT.set(None);
    r.expect("a WDDM 2.4 driver with HWS nodes starts");
    let p = m.create_process(0).expect("process");
    let node = *m.hws_nodes(0).first().expect("an HWS node");
    assert_eq!(
        m.create_context_raw(&p, node, 1 << 4, true),
        Err(SimError::DdiFailed(
            rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL
        ))
    );
    assert!(
        m.triage_log(0)
            .iter()
            .any(|l| l.starts_with("BR-92") && l.contains("< 2.5")),
        "{:#?}",
        m.triage_log(0)
    );
}

/// BR-96: Windows refuses more than 16 bytes of doorbell private data
/// (`STATUS_INVALID_PARAMETER`, logged to the triage log). rvgpu's private data is exactly 16
/// bytes (the ring's addresses come from the allocations the call names), so its doorbell is
/// created; the same data padded to 17 bytes is refused before the driver sees it.
#[test]
fn br_96_doorbell_private_data_over_16_bytes_is_refused() {
    use rvgpu_umd::kmt::{AllocationKind, Kmt};
    use zerocopy::IntoBytes;
    let m = common::started(MachineConfig::single(Mode::Step));
    let p = m.create_process(0).expect("process");
    let k = m.kmt(&p);
    let context = k.create_context(0).expect("context");
    let mut qp = rvgpu_hw::pdd::HwQueuePdd {
        magic: rvgpu_hw::pdd::PDD_MAGIC,
        version: rvgpu_hw::pdd::HW_QUEUE_PDD_VERSION,
        ..Default::default()
    };
    let queue = k
        .create_hw_queue(context, true, qp.as_mut_bytes())
        .expect("queue")
        .handle;
    let ring = k
        .create_allocation_as(4096, AllocationKind::Commands)
        .expect("ring");
    let control = k
        .create_allocation_as(
            rvgpu_hw::queue::RingControl::SIZE,
            AllocationKind::RingControl,
        )
        .expect("control");
    let pdd = rvgpu_hw::pdd::DoorbellPdd::for_ring(4096);
    assert_eq!(
        pdd.as_bytes().len(),
        rvgpu_simos::ums::DOORBELL_PRIVATE_DATA_MAX
    );
    let mut long = pdd.as_bytes().to_vec();
    long.push(0);
    let r = k.create_doorbell(queue, ring.handle, control.handle, &mut long);
    assert_eq!(r.err().map(|e| e.0), Some(STATUS_INVALID_PARAMETER));
    assert!(
        m.triage_log(0).iter().any(|l| l.starts_with("BR-96")),
        "{:#?}",
        m.triage_log(0)
    );
    let mut exact = pdd;
    k.create_doorbell(queue, ring.handle, control.handle, exact.as_mut_bytes())
        .expect("rvgpu's 16-byte private data is accepted");
}

// ---------------------------------------------------------------------------------------------
// BR-91: D3DKMTCreateDevice's status allow-list.

static BR91_REAL_CREATE_DEVICE: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_CREATEDEVICE> =
    std::sync::OnceLock::new();

thread_local! {
    /// The status the next non-system CreateDevice returns instead of calling rvgpu.
    static BR91_STATUS: Cell<Option<NTSTATUS>> = const { Cell::new(None) };
}

unsafe extern "system" fn br91_create_device(
    h: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATEDEVICE,
) -> NTSTATUS {
    // SAFETY: the OS's argument block; the OS fills the flags arm of the union.
    let system = unsafe { (*args).Anonymous.Flags }
        .is_set(rvgpu_ddi::submission::DXGK_CREATEDEVICEFLAGS::SystemDevice);
    if let (false, Some(s)) = (system, BR91_STATUS.get()) {
        return s;
    }
    let real = BR91_REAL_CREATE_DEVICE
        .get()
        .copied()
        .flatten()
        .expect("real DDI");
    // SAFETY: forwarded unchanged.
    unsafe { real(h, args) }
}

/// BR-91: a CreateDevice failure other than NO_MEMORY is "an invalid NTSTATUS code" in the
/// triage log ([D] ADAPTER_RENDER::DdiCreateDevice); either way the caller gets the status.
#[test]
fn br_91_create_device_status_outside_the_allow_list_is_logged() {
    let (m, r) = start_with(no_edit, |t| {
        let _ = BR91_REAL_CREATE_DEVICE.set(t.DxgkDdiCreateDevice);
        t.DxgkDdiCreateDevice = Some(br91_create_device);
    });
    r.expect("start");
    BR91_STATUS.set(Some(rvgpu_ddi::ntstatus::STATUS_NO_MEMORY));
    let e = m.create_process(0).map(|_| ()).expect_err("refused");
    assert_eq!(
        e,
        SimError::Ddi {
            ddi: "DxgkDdiCreateDevice",
            status: rvgpu_ddi::ntstatus::STATUS_NO_MEMORY
        }
    );
    assert!(m.triage_log(0).is_empty(), "NO_MEMORY is allowed");
    BR91_STATUS.set(Some(STATUS_INVALID_PARAMETER));
    let e = m.create_process(0).map(|_| ()).expect_err("refused");
    BR91_STATUS.set(None);
    assert_eq!(
        e,
        SimError::Ddi {
            ddi: "DxgkDdiCreateDevice",
            status: STATUS_INVALID_PARAMETER
        }
    );
    let log = m.triage_log(0);
    assert!(
        log.iter().any(|l| l.starts_with("BR-91:")),
        "triage log {log:?}"
    );
    // rvgpu's own CreateDevice succeeds and adds nothing.
    let before = m.triage_log(0).len();
    m.create_process(0).expect("process");
    assert_eq!(m.triage_log(0).len(), before);
}
