//! VidMm's answers and the paging process (docs/windows-bringup.md §9): BR-60 to BR-69.

use super::*;

refused_starts! {
    /// BR-60: a driver that cannot address the machine's highest physical page gets no VidMm
    /// (no IOMMU remapping here), which fails the start with STATUS_NO_MEMORY.
    #[test]
    fn br_60_highest_acceptable_address_must_cover_physical_memory() = start_with(
        |c| c.HighestAcceptableAddress = rvgpu_ddi::basic::LARGE_INTEGER::from_i64(0xFFFF_FFFF),
        no_table,
    ) => "BR-60", STATUS_NO_MEMORY;

    /// BR-61: VidMm cannot be created without the segment answer: the start fails with
    /// STATUS_NO_MEMORY (VidMmiInit, ADAPTER_RENDER::Initialize).
    #[test]
    fn br_61_segment_query_failure_fails_the_start_with_no_memory() =
        start_with_knob(&REFUSE_TYPE, Some(rvgpu_ddi::adapter::DXGKQAITYPE_QUERYSEGMENT4))
        => "BR-61", STATUS_NO_MEMORY;

    /// BR-62: more than 32 segments is refused (VidMmiQuerySegmentInfo4); VidMmiInit turns the
    /// failure into STATUS_NO_MEMORY.
    #[test]
    fn br_62_more_than_32_segments_is_refused() =
        start_with_knob(&SEGMENT_COUNT, Some(33)) => "BR-62", STATUS_NO_MEMORY;

    /// BR-64: a segment with SupportsCpuHostAperture may not also be an aperture (InitSegments,
    /// inside VidMmiInit: NO_MEMORY). rvgpu's first segment is its aperture.
    #[test]
    fn br_64_host_aperture_segment_is_not_an_aperture() =
        start_with_knob(&FIRST_SEGMENT_FLAGS, 1 << 13) => "BR-64", STATUS_NO_MEMORY;

    /// BR-65(a): the paging buffers' segment must be 0 or a reported segment (VIDMM_GLOBAL::Init,
    /// inside VidMmiInit: NO_MEMORY).
    #[test]
    fn br_65_paging_buffer_segment_beyond_the_segments_is_refused() =
        start_with_knob(&PAGING_POOL, Some((9, 4096))) => "BR-65", STATUS_NO_MEMORY;
}

/// BR-68: a GpuMmu adapter must answer GPUMMUCAPS with 2..=6 levels.
/// BR-63: NumUEFIFrameBufferRanges (byte 92 of the descriptor) is 0 or 1, on one segment at
/// most; otherwise VidMmiQuerySegmentInfo4 fails and the start with it (NO_MEMORY).
#[test]
fn br_63_uefi_frame_buffer_ranges_on_one_segment_at_most() {
    for ranges in [[2, 0], [1, 1]] {
        let (_, r) = start_with_knob(&UEFI_RANGES, Some(ranges));
        refused(r, "BR-63", STATUS_NO_MEMORY);
    }
}

/// BR-65(b): the paging DMA pool accepts only aperture segments (InitDmaPools →
/// VIDMM_DMA_POOL::Init → VerifySegmentSet: INVALID_PARAMETER, the paging process fails and the
/// start with it). rvgpu's segment 2 is CPU-visible VRAM, its segment 1 the aperture.
#[test]
fn br_65_paging_buffers_only_in_an_aperture_segment() {
    let (_, r) = start_with_knob(&PAGING_POOL, Some((2, 4096)));
    refused(r, "BR-65", STATUS_INVALID_PARAMETER);
    let (m, r) = start_with_knob(&PAGING_POOL, Some((1, 4096)));
    assert!(
        r.is_ok(),
        "an aperture paging segment starts: {r:?}; {:#?}",
        m.driver_log()
    );
    let (_, r) = start_with_knob(&PAGING_POOL, Some((0, 0)));
    refused(r, "BR-65", STATUS_NO_MEMORY);
}

/// What the BuildPagingBuffer spy saw: `(DmaSize, hSystemContext)` per call.
static PAGING_CALLS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());
static REAL_BUILD: std::sync::OnceLock<rvgpu_ddi::tdr::PDXGKDDI_BUILDPAGINGBUFFER> =
    std::sync::OnceLock::new();
/// System contexts the driver created (`hContext` of CreateContext with `SystemContext`), and
/// the DMA segment sets of every context it created.
static BR65_SYSTEM_CONTEXTS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
static CONTEXT_DMA_SETS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

unsafe extern "system" fn spy_build_paging(
    ctx: HANDLE,
    args: *mut rvgpu_ddi::tdr::DXGKARG_BUILDPAGINGBUFFER,
) -> NTSTATUS {
    // SAFETY: the OS's argument block.
    let (size, system) = unsafe { ((*args).DmaSize, (*args).hSystemContext as usize) };
    PAGING_CALLS.lock().unwrap().push((size, system));
    let real = REAL_BUILD.get().copied().flatten().expect("real DDI");
    // SAFETY: forwarded unchanged to the driver's DDI.
    unsafe { real(ctx, args) }
}

unsafe extern "system" fn spy_create_context(
    device: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    let real = REAL_CREATE_CONTEXT
        .get()
        .copied()
        .flatten()
        .expect("real DDI");
    // SAFETY: forwarded unchanged to the driver's DDI; the block is the OS's.
    let s = unsafe { real(device, args) };
    if s >= 0 {
        // SAFETY: the OS's argument block, filled by the driver.
        let a = unsafe { &*args };
        let system = a
            .Flags
            .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext);
        if system {
            BR65_SYSTEM_CONTEXTS
                .lock()
                .unwrap()
                .push(a.hContext as usize);
        }
        CONTEXT_DMA_SETS
            .lock()
            .unwrap()
            .push(a.ContextInfo.DmaBufferSegmentSet);
    }
    s
}

/// BR-65: every paging buffer is one of the paging pool's, of the driver's PagingBufferSize,
/// and names the driver's paging context (VIDMM_GLOBAL::SetupForBuildPagingBuffer). BR-67: the
/// contexts rvgpu creates take their DMA buffers from its aperture segment, which the DMA pools
/// accept; with none a GPU-VA context's privileged pool would bug-check Windows.
#[test]
fn br_65_67_paging_buffers_and_context_dma_segments() {
    PAGING_POOL.set(Some((0, 8192)));
    let (m, r) = start_with(no_edit, |t| {
        let _ = REAL_BUILD.set(t.DxgkDdiBuildPagingBuffer);
        t.DxgkDdiBuildPagingBuffer = Some(spy_build_paging);
        let _ = REAL_CREATE_CONTEXT.set(t.DxgkDdiCreateContext);
        t.DxgkDdiCreateContext = Some(spy_create_context);
    });
    PAGING_POOL.set(None);
    assert!(r.is_ok(), "start: {r:?}; {:#?}", m.driver_log());
    let p = m.create_process(0).expect("process");
    rvgpu_umd::kmt::Kmt::create_context(&m.kmt(&p), 0).expect("context");
    // Only this test installs these spies, so parallel tests add nothing to their records.
    let calls = PAGING_CALLS.lock().unwrap().clone();
    let systems = BR65_SYSTEM_CONTEXTS.lock().unwrap().clone();
    assert!(
        !calls.is_empty(),
        "the paging process's tables were built by paging buffers"
    );
    for (size, system) in calls {
        assert_eq!(
            size, 8192,
            "a paging buffer of the driver's PagingBufferSize"
        );
        assert!(
            system != 0 && systems.contains(&system),
            "hSystemContext {system:#x} is one of the driver's system contexts {systems:x?}"
        );
    }
    let model = m.memory_model(0).expect("model");
    let sets = CONTEXT_DMA_SETS.lock().unwrap().clone();
    assert!(
        sets.len() > systems.len(),
        "a process context was created too"
    );
    for set in sets {
        assert_ne!(set, 0, "a GPU-VA context names a DMA buffer segment");
        assert_eq!(
            rvgpu_simos::vidmm::dmapool::verify_segment_set(&model, set),
            Ok(()),
            "the DMA pools accept segment set {set:#x}"
        );
    }
}

#[test]
fn br_68_gpummu_caps_are_required_and_checked() {
    let (_, r) = start_with_knob(
        &REFUSE_TYPE,
        Some(rvgpu_ddi::adapter::DXGKQAITYPE_GPUMMUCAPS),
    );
    refused(r, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR);
    let (_, r) = start_with_knob(&MMU_LEVELS, Some(7));
    refused(r, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR);
    let (_, r) = start_with_knob(
        &REFUSE_TYPE,
        Some(rvgpu_ddi::adapter::DXGKQAITYPE_PAGETABLELEVELDESC),
    );
    refused(r, "BR-68", STATUS_DEVICE_CONFIGURATION_ERROR);
}

// ---------------------------------------------------------------------------------------------
// BR-66: the system device and contexts (VidSchCreateSystemDevices).

/// The driver's own CreateContext, for the stand-ins that wrap it (BR-65, BR-66).
static REAL_CREATE_CONTEXT: std::sync::OnceLock<rvgpu_ddi::submission::PDXGKDDI_CREATECONTEXT> =
    std::sync::OnceLock::new();
static REAL_SUBMIT: std::sync::OnceLock<rvgpu_ddi::init::PDXGKDDI_SUBMITCOMMAND> =
    std::sync::OnceLock::new();
/// System contexts the driver created: (node, driver handle).
static SYSTEM_CONTEXTS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());
/// Paging submissions seen: (node, hContext).
static PAGING_SUBMITS: std::sync::Mutex<Vec<(u32, usize)>> = std::sync::Mutex::new(Vec::new());

/// rvgpu's CreateContext, refusing system contexts.
unsafe extern "system" fn no_system_context(
    h: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    // SAFETY: the OS's argument block.
    let system = unsafe { (*args).Flags }
        .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext);
    if system {
        return rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED;
    }
    forward_to!(REAL_CREATE_CONTEXT(h, args))
}

/// A driver that cannot make a system context does not start (helios: Code 43 on 26100).
#[test]
fn br_66_system_context_refused_fails_the_start() {
    let (_, r) = start_with(no_edit, |t| {
        let _ = REAL_CREATE_CONTEXT.set(t.DxgkDdiCreateContext);
        t.DxgkDdiCreateContext = Some(no_system_context);
    });
    refused(r, "BR-66", rvgpu_ddi::ntstatus::STATUS_NOT_IMPLEMENTED);
}

/// rvgpu's CreateContext, recording the system contexts it returns.
unsafe extern "system" fn recording_create_context(
    h: HANDLE,
    args: *mut rvgpu_ddi::submission::DXGKARG_CREATECONTEXT,
) -> NTSTATUS {
    // The block is read back after the call.
    let s = forward_to!(REAL_CREATE_CONTEXT(h, args));
    // SAFETY: the OS's argument block, filled by the driver.
    let a = unsafe { &*args };
    if s >= 0
        && a.Flags
            .is_set(rvgpu_ddi::submission::DXGK_CREATECONTEXTFLAGS::SystemContext)
    {
        SYSTEM_CONTEXTS
            .lock()
            .unwrap()
            .push((a.NodeOrdinal, a.hContext as usize));
    }
    s
}

/// rvgpu's SubmitCommand, recording the context of every paging buffer.
unsafe extern "system" fn recording_submit(
    h: HANDLE,
    args: *const rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMAND,
) -> NTSTATUS {
    // SAFETY: the OS's argument block; both union arms are a HANDLE.
    let (paging, node, ctx) = unsafe {
        let a = &*args;
        (
            a.Flags
                .is_set(rvgpu_ddi::submission::DXGK_SUBMITCOMMANDFLAGS::Paging),
            a.NodeOrdinal,
            a.Anonymous.hContext as usize,
        )
    };
    if paging {
        PAGING_SUBMITS.lock().unwrap().push((node, ctx));
    }
    forward_to!(REAL_SUBMIT(h, args))
}

/// Every node gets a system context at start, and VidMm's paging buffers are submitted on
/// them: never with a null `hContext` (which no Windows build passes).
#[test]
fn br_66_paging_buffers_run_on_the_system_contexts() {
    let (m, r) = start_with(no_edit, |t| {
        let _ = REAL_CREATE_CONTEXT.set(t.DxgkDdiCreateContext);
        let _ = REAL_SUBMIT.set(t.DxgkDdiSubmitCommand);
        t.DxgkDdiCreateContext = Some(recording_create_context);
        t.DxgkDdiSubmitCommand = Some(recording_submit);
    });
    r.expect("start");
    let system = SYSTEM_CONTEXTS.lock().unwrap().clone();
    let nodes: Vec<u32> = system.iter().map(|&(n, _)| n).collect();
    assert_eq!(nodes, vec![0, 1], "one system context per node, in order");
    // A process's allocation is mapped through paging buffers.
    let p = m.create_process(0).expect("process");
    let _buf = rvgpu_umd::kmt::Kmt::create_allocation(&m.kmt(&p), 64 * 1024).expect("allocation");
    let paging = PAGING_SUBMITS.lock().unwrap().clone();
    assert!(!paging.is_empty(), "the mapping submitted paging buffers");
    for (node, ctx) in paging {
        assert!(
            system.contains(&(node, ctx)),
            "paging buffer on node {node} with hContext {ctx:#x}, system contexts {system:?}"
        );
    }
}

static CONTEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// rvgpu's StartDevice, remembering the MiniportDeviceContext (so the test can call a DDI).
unsafe extern "system" fn start_remembering_context(
    ctx: rvgpu_ddi::PVOID,
    info: *mut rvgpu_ddi::adapter::DXGK_START_INFO,
    iface: *mut rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE,
    sources: *mut u32,
    children: *mut u32,
) -> NTSTATUS {
    CONTEXT.store(ctx as usize, std::sync::atomic::Ordering::Relaxed);
    forward_to!(REAL_START_DEVICE(ctx, info, iface, sources, children))
}

/// BR-66: Windows always names a context in `DxgkDdiSubmitCommand` (its own
/// work runs on the system contexts it creates at start), so rvgpu refuses a null `hContext`
/// with `STATUS_INVALID_PARAMETER` instead of running the buffer as "system" work.
#[test]
fn br_66_submit_command_without_a_context_is_invalid_parameter() {
    use rvgpu_ddi::tdr::DXGKARG_SUBMITCOMMAND;
    let mut m = machine(false);
    m.load_driver_with(|t| {
        let _ = REAL_START_DEVICE.set(t.DxgkDdiStartDevice);
        t.DxgkDdiStartDevice = Some(start_remembering_context);
    })
    .expect("load");
    m.start_adapter(0).expect("start");
    let submit = m
        .driver_table(0)
        .and_then(|t| t.DxgkDdiSubmitCommand)
        .expect("SubmitCommand");
    let ctx = CONTEXT.load(std::sync::atomic::Ordering::Relaxed) as *mut std::ffi::c_void;
    // An empty, well-formed buffer on node 0 with a fence ID above anything submitted: only
    // the missing context is wrong.
    let args = DXGKARG_SUBMITCOMMAND {
        SubmissionFenceId: 0x7000_0000,
        NodeOrdinal: 0,
        ..Default::default()
    };
    let s = m.at_irql(rvgpu_kmd::platform::Irql::Dispatch, |m| {
        let _c = m.enter_context();
        // SAFETY: the driver's DDI with its own context and a live argument block.
        unsafe { submit(ctx, &args) }
    });
    assert_eq!(s, STATUS_INVALID_PARAMETER);
    assert!(m.bugcheck().is_none() && m.fault().is_none());
}
