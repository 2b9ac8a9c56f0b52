//! Starts of rvgpu with its answers edited, for the start-up rule suites (`bringup_rules`,
//! `feature_negotiation`): per-thread hooks on what QueryAdapterInfo and GetNodeMetadata
//! return, slots filled with a stub, and the driver's own StartDevice kept for stand-ins that
//! wrap it. The start-time queries run on the test thread, so the hooks keep parallel tests
//! apart.

use std::cell::{Cell, RefCell};

use super::{real_qai, start_with_qai_hook};
use rvgpu_ddi::adapter::{
    DXGKARG_HISTORYBUFFERPRECISION, DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS,
    DXGKQAITYPE_HISTORYBUFFERPRECISION, DXGKQAITYPE_PHYSICALADAPTERCAPS, DXGK_DRIVERCAPS,
    DXGK_PHYSICALADAPTERCAPS,
};
use rvgpu_ddi::init::{DRIVER_INITIALIZATION_DATA, PDXGKDDI_GETNODEMETADATA};
use rvgpu_ddi::memory::{DXGK_GPUMMUCAPS, DXGK_QUERYSEGMENTOUT4};
use rvgpu_ddi::ntstatus::{STATUS_NOT_SUPPORTED, STATUS_SUCCESS};
use rvgpu_ddi::submission::{DXGK_NODEMETADATA, DXGK_USERMODESUBMISSION_CAPS};
use rvgpu_ddi::{HANDLE, NTSTATUS};
use rvgpu_simos::{Machine, MachineConfig, Mode, SimError};

pub type CapsEdit = Box<dyn Fn(&mut DXGK_DRIVERCAPS)>;
pub type PhysicalEdit = Box<dyn Fn(&mut DXGK_PHYSICALADAPTERCAPS)>;

thread_local! {
    // The start-time queries run on the test thread, so per-thread hooks keep parallel tests
    // apart.
    pub static CAPS_EDIT: RefCell<Option<CapsEdit>> = const { RefCell::new(None) };
    pub static PHYSICAL_EDIT: RefCell<Option<PhysicalEdit>> = const { RefCell::new(None) };
    pub static PRECISION: Cell<Option<u32>> = const { Cell::new(None) };
    pub static REFUSE_TYPE: Cell<Option<i32>> = const { Cell::new(None) };
    pub static SEGMENT_COUNT: Cell<Option<u32>> = const { Cell::new(None) };
    pub static MMU_LEVELS: Cell<Option<u32>> = const { Cell::new(None) };
    pub static UEFI_RANGES: Cell<Option<[u32; 2]>> = const { Cell::new(None) };
    pub static FIRST_SEGMENT_FLAGS: Cell<u32> = const { Cell::new(0) };
    /// BR-65: `(PagingBufferSegmentId, PagingBufferSize)` instead of the driver's.
    pub static PAGING_POOL: Cell<Option<(u32, u32)>> = const { Cell::new(None) };
    pub static UMS_CAPS_EDIT: Cell<Option<fn(&mut DXGK_USERMODESUBMISSION_CAPS)>> =
        const { Cell::new(None) };
    /// BR-55: the answer to FRAMEBUFFERSAVESIZE instead of the driver's (status, size).
    pub static FB_SAVE: Cell<Option<(NTSTATUS, u64)>> = const { Cell::new(None) };
}

/// The driver's QueryAdapterInfo, with the test's edits applied to its answers.
unsafe extern "system" fn edited_qai(h: HANDLE, args: *const DXGKARG_QUERYADAPTERINFO) -> NTSTATUS {
    // SAFETY: the OS's argument block.
    let ty = unsafe { (*args).Type };
    if REFUSE_TYPE.get() == Some(ty) {
        return STATUS_NOT_SUPPORTED;
    }
    if let (Some((status, size)), rvgpu_ddi::adapter::DXGKQAITYPE_FRAMEBUFFERSAVESIZE) =
        (FB_SAVE.get(), ty)
    {
        // SAFETY: the OS's 8-byte output block for this query.
        unsafe { (*args).pOutputData.cast::<u64>().write_unaligned(size) };
        return status;
    }
    // SAFETY: forwarded unchanged.
    let s = unsafe { real_qai(h, args) };
    if s >= 0 && ty == DXGKQAITYPE_DRIVERCAPS {
        // SAFETY: a DRIVERCAPS answer is a DXGK_DRIVERCAPS the OS sized for it.
        let caps = unsafe { &mut *(*args).pOutputData.cast::<DXGK_DRIVERCAPS>() };
        CAPS_EDIT.with(|e| {
            if let Some(f) = e.borrow().as_ref() {
                f(caps);
            }
        });
    }
    if s >= 0 && ty == DXGKQAITYPE_PHYSICALADAPTERCAPS {
        // SAFETY: the OS sized the output for a (possibly shorter) DXGK_PHYSICALADAPTERCAPS;
        // the simulated OS always gives the whole structure's storage.
        let caps = unsafe { &mut *(*args).pOutputData.cast::<DXGK_PHYSICALADAPTERCAPS>() };
        PHYSICAL_EDIT.with(|e| {
            if let Some(f) = e.borrow().as_ref() {
                f(caps);
            }
        });
    }
    if s >= 0 && ty == rvgpu_ddi::adapter::DXGKQAITYPE_QUERYSEGMENT4 {
        // SAFETY: a QUERYSEGMENT4 answer is the OS's DXGK_QUERYSEGMENTOUT4; in the filling call
        // its array holds NbSegment descriptors at the stated stride.
        unsafe {
            let out = &*(*args).pOutputData.cast::<DXGK_QUERYSEGMENTOUT4>();
            let first = out
                .pSegmentDescriptor
                .cast::<rvgpu_ddi::memory::DXGK_SEGMENTDESCRIPTOR4>();
            if !first.is_null() && out.NbSegment > 0 {
                (*first).Flags.Value |= FIRST_SEGMENT_FLAGS.get();
            }
            if let (Some(r), false) = (UEFI_RANGES.get(), out.pSegmentDescriptor.is_null()) {
                for (i, n) in r.iter().enumerate().take(out.NbSegment as usize) {
                    let d = out
                        .pSegmentDescriptor
                        .add(i * out.SegmentDescriptorStride)
                        .cast::<rvgpu_ddi::memory::DXGK_SEGMENTDESCRIPTOR4>();
                    (*d).NumUEFIFrameBufferRanges = *n;
                }
            }
        }
        if let Some((segment, size)) = PAGING_POOL.get() {
            // SAFETY: a QUERYSEGMENT4 answer is the OS's DXGK_QUERYSEGMENTOUT4.
            let out = unsafe { &mut *(*args).pOutputData.cast::<DXGK_QUERYSEGMENTOUT4>() };
            out.PagingBufferSegmentId = segment;
            out.PagingBufferSize = size;
        }
        if let Some(n) = SEGMENT_COUNT.get() {
            // SAFETY: a QUERYSEGMENT4 answer is the OS's DXGK_QUERYSEGMENTOUT4.
            unsafe { (*(*args).pOutputData.cast::<DXGK_QUERYSEGMENTOUT4>()).NbSegment = n };
        }
    }
    if s >= 0 && ty == rvgpu_ddi::adapter::DXGKQAITYPE_GPUMMUCAPS {
        if let Some(n) = MMU_LEVELS.get() {
            // SAFETY: a GPUMMUCAPS answer is the OS's DXGK_GPUMMUCAPS.
            unsafe { (*(*args).pOutputData.cast::<DXGK_GPUMMUCAPS>()).PageTableLevelCount = n };
        }
    }
    if s >= 0 && ty == rvgpu_ddi::adapter::DXGKQAITYPE_USERMODESUBMISSION_CAPS {
        if let Some(edit) = UMS_CAPS_EDIT.get() {
            // SAFETY: a USERMODESUBMISSION_CAPS answer is the OS's 28-byte block.
            edit(unsafe { &mut *(*args).pOutputData.cast::<DXGK_USERMODESUBMISSION_CAPS>() });
        }
    }
    if s >= 0 && ty == DXGKQAITYPE_HISTORYBUFFERPRECISION {
        if let Some(bits) = PRECISION.get() {
            // SAFETY: the OS's 4-byte output block.
            unsafe {
                (*args)
                    .pOutputData
                    .cast::<DXGKARG_HISTORYBUFFERPRECISION>()
                    .write_unaligned(DXGKARG_HISTORYBUFFERPRECISION {
                        PrecisionBits: bits,
                    })
            };
        }
    }
    s
}

/// A step-mode machine; `validate_wddm_caps` is Windows' `ValidateWDDMCaps` (off by default).
pub fn machine(validate_wddm_caps: bool) -> Machine {
    Machine::new(step_config(validate_wddm_caps))
}

/// The configuration of [`machine`].
fn step_config(validate_wddm_caps: bool) -> MachineConfig {
    let mut cfg = MachineConfig::single(Mode::Step);
    cfg.os.validate_wddm_caps = validate_wddm_caps;
    cfg
}

/// Loads rvgpu with its QueryAdapterInfo answers edited, and `table` applied to its table.
pub fn start_with(
    edit: impl Fn(&mut DXGK_DRIVERCAPS) + 'static,
    table: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
) -> (Machine, Result<(), SimError>) {
    start_with_policy(false, edit, table)
}

/// [`start_with`] with neither caps nor table edited, `knob` (one of the hooks' answers above)
/// set to `value` for the start only.
pub fn start_with_knob<T: Copy + Default>(
    knob: &'static std::thread::LocalKey<Cell<T>>,
    value: T,
) -> (Machine, Result<(), SimError>) {
    knob.set(value);
    let out = start_with(no_edit, no_table);
    knob.set(T::default());
    out
}

/// [`start_with`] with `ValidateWDDMCaps` set as given.
pub fn start_with_policy(
    validate_wddm_caps: bool,
    edit: impl Fn(&mut DXGK_DRIVERCAPS) + 'static,
    table: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
) -> (Machine, Result<(), SimError>) {
    start_with_config(step_config(validate_wddm_caps), edit, table)
}

/// [`start_with`] on a machine built from `cfg`.
pub fn start_with_config(
    cfg: MachineConfig,
    edit: impl Fn(&mut DXGK_DRIVERCAPS) + 'static,
    table: impl FnOnce(&mut DRIVER_INITIALIZATION_DATA) + Send + 'static,
) -> (Machine, Result<(), SimError>) {
    CAPS_EDIT.with(|e| *e.borrow_mut() = Some(Box::new(edit)));
    let mut m = Machine::new(cfg);
    let r = start_with_qai_hook(&mut m, edited_qai, table);
    CAPS_EDIT.with(|e| *e.borrow_mut() = None);
    (m, r)
}

/// [`start_with`] with `physical` editing the driver's PHYSICALADAPTERCAPS answer.
pub fn start_with_physical(
    edit: impl Fn(&mut DXGK_DRIVERCAPS) + 'static,
    physical: impl Fn(&mut DXGK_PHYSICALADAPTERCAPS) + 'static,
) -> (Machine, Result<(), SimError>) {
    PHYSICAL_EDIT.with(|e| *e.borrow_mut() = Some(Box::new(physical)));
    let out = start_with(edit, no_table);
    PHYSICAL_EDIT.with(|e| *e.borrow_mut() = None);
    out
}

pub fn no_edit(_: &mut DXGK_DRIVERCAPS) {}
pub fn no_table(_: &mut DRIVER_INITIALIZATION_DATA) {}

unsafe extern "system" fn stub_ddi() -> NTSTATUS {
    STATUS_SUCCESS
}

/// A non-null slot value for table-shape rules (never called: the start is refused first).
pub fn stub<F>() -> Option<F> {
    let f: unsafe extern "system" fn() -> NTSTATUS = stub_ddi;
    // SAFETY: both are non-null `extern "system"` function pointers of the same size; the
    // value is only tested for presence by the OS under test, never called.
    Some(unsafe { std::mem::transmute_copy::<_, F>(&f) })
}

pub type NodeEdit = fn(&mut DXGK_NODEMETADATA);

thread_local! {
    pub static NODE_EDIT: Cell<Option<NodeEdit>> = const { Cell::new(None) };
}
pub static REAL_NODE_METADATA: std::sync::OnceLock<PDXGKDDI_GETNODEMETADATA> =
    std::sync::OnceLock::new();

/// rvgpu's GetNodeMetadata with the test's edit applied to every node's answer.
pub unsafe extern "system" fn edited_node_metadata(
    h: HANDLE,
    node: u32,
    out: *mut DXGK_NODEMETADATA,
) -> NTSTATUS {
    let Some(Some(real)) = REAL_NODE_METADATA.get().copied() else {
        return STATUS_NOT_SUPPORTED;
    };
    // SAFETY: forwarded unchanged.
    let s = unsafe { real(h, node, out) };
    if s >= 0 {
        if let Some(edit) = NODE_EDIT.get() {
            // SAFETY: the OS's 74-byte entry (align 1), just filled by the driver.
            edit(unsafe { &mut *out });
        }
    }
    s
}

pub fn start_with_node_edit(
    caps: impl Fn(&mut DXGK_DRIVERCAPS) + 'static,
    edit: NodeEdit,
) -> Result<(), SimError> {
    NODE_EDIT.set(Some(edit));
    let (_, r) = start_with(caps, |t| {
        let _ = REAL_NODE_METADATA.set(t.DxgkDdiGetNodeMetadata);
        t.DxgkDdiGetNodeMetadata = Some(edited_node_metadata);
    });
    NODE_EDIT.set(None);
    r
}

pub static REAL_START_DEVICE: std::sync::OnceLock<rvgpu_ddi::init::PDXGKDDI_START_DEVICE> =
    std::sync::OnceLock::new();

/// `c` made to reach the start checks of its Windows. A 22631-kernel machine's install is
/// refused on either build (IN-08: the shipped INF's models need build 26100; checked here),
/// so the Linux build then loads as if installed (`MachineConfig::install` off), and
/// `rvgpu.sys`, which only its package brings, never reaches them (`None`). Another Windows:
/// `c` as it is.
pub fn past_the_installer(mut c: MachineConfig) -> Option<MachineConfig> {
    if c.os.windows.kernel() != rvgpu_simos::Kernel::W22631 {
        return Some(c);
    }
    match Machine::new(c.clone()).load_driver() {
        Err(SimError::StartRefused { rule: "IN-08", .. }) => {}
        other => panic!("22631: expected the install's IN-08, got {other:?}"),
    }
    if matches!(c.driver, rvgpu_simos::pe::DriverBuild::Pe(_)) {
        return None;
    }
    c.install = false;
    Some(c)
}
