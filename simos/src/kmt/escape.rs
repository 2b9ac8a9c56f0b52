//! `D3DKMTEscape`'s kernel entry, as 24H2 `K:DxgkEscape` @0x140419AB0 answers it: the caller's
//! `D3DKMT_ESCAPE` as written, `DxgkEscape`'s own checks in their order with their statuses
//! (the private data captured first, then the flags, the handles, the adapter's and device's
//! state), then either the driver-known `D3DDDI_DRIVERESCAPE_BUILDTESTCOMMANDBUFFER`
//! (`K:DxgkpDriverKnownEscape` @0x1403C1B14, [`crate::dxgkrnl::kmtest`]) or the driver's own
//! `DxgkDdiEscape` with Dxgkrnl's kernel copy of the data; the copy goes back on success. The
//! other types' checks and answers are [`super::escape_types`].

pub use rvgpu_ddi::d3dkmt::D3DKMT_ESCAPE;
use rvgpu_ddi::kmtest::DXGKARG_ESCAPE;
use rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED;
use rvgpu_ddi::HANDLE;
use rvgpu_umd::kmt::{KmtHandle, NtStatus};

use super::adapter::AdapterTable;
use super::context_virtual::CallerMemory;
use super::escape_types::{self as types, EscapeCheck};
pub use super::escape_types::{
    DRIVER_COMMON_ESCAPE, DRIVER_KNOWN_ESCAPE, HARDWARE_ACCESS, NO_ADAPTER_SYNCHRONIZATION,
    RESERVED, RESERVED2, VIRTUAL_MACHINE_DATA,
};
use super::refusal::row::*;
use crate::adapter::ddi::{self, At};
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// `D3DKMT_ESCAPE_DRIVERPRIVATE`.
pub const ESCAPE_DRIVERPRIVATE: u32 = 0;
/// `D3DKMT_ESCAPE_VIDMM`.
pub const ESCAPE_VIDMM: u32 = 1;
/// `D3DKMT_ESCAPE_VIDSCH`.
pub const ESCAPE_VIDSCH: u32 = 3;
/// The smallest `D3DKMT_ESCAPE_VIDMM` private data `DxgkEscape` accepts.
const VIDMM_MIN: u32 = 0x840;
/// The largest private data the simulation copies (24H2 copies any size it has pool for;
/// above this the copy is the pool failure, STATUS_NO_MEMORY).
pub const MAX_PRIVATE_DATA: u32 = 64 * 1024;

/// The caller's handles an escape names.
pub trait EscapeCaller: AdapterTable {
    /// The device `h` names in the caller's table.
    fn device(&self, h: KmtHandle) -> Option<UmsProcess>;
}

fn st(s: i32) -> NtStatus {
    NtStatus(s)
}

/// The `DXGKDDI_INTERFACE_VERSION` adapter `a`'s driver registered: what
/// `K:DXGADAPTER::Initialize` @0x14018FAF8 keeps at DXGADAPTER +0x8E8 and `DxgkEscape` reads
/// there.
fn interface_version(a: &crate::adapter::AdapterShared) -> u32 {
    a.table.slot(|t| t.Version).unwrap_or(0)
}

/// Whether `h` is a context (`DXGCONTEXT`) of device `d`.
fn context_of(m: &Machine, d: &UmsProcess, h: KmtHandle) -> bool {
    m.adapter_shared(d.adapter).is_ok_and(|a| {
        lock(&a.ums)
            .contexts
            .get(&h)
            .is_some_and(|c| c.device == d.device)
    })
}

/// `D3DKMTEscape`'s row of the thunk catalog ([`super::catalog`]).
pub const ESCAPE: Thunk = Thunk {
    name: "D3DKMTEscape",
    source: Some(&[
        src("DxgkEscape", 0x140419AB0),
        src("DxgkpDriverKnownEscape", 0x1403C1B14),
    ]),
    checks: types::ESCAPE_CHECKS,
    written_back: &[
        "pPrivateDriverData: the kernel copy as the driver or the known escape left it, on \
         any NT_SUCCESS status (not on STATUS_BUFFER_OVERFLOW)",
        "pPrivateDriverData after the adapter's checks, on success: HISTORY_BUFFER_STATUS \
         (first byte 0 without history tracing, second dword 0), QUERY_IOMMU_STATUS and \
         QUERY_DMA_REMAPPING_STATUS (first byte 0 without an IOMMU), ACTIVATE_SPECIFIC_DIAG \
         command 0 and VIDSCH command 3 (as captured)",
    ],
    pending: Pending::No,
    entry: Some("escape::dxgk_escape"),
    gaps: "Win32k's types (1024 and up) are STATUS_NOT_SUPPORTED (24H2 hands them to Win32k, \
           which the simulation has not); so is what 24H2 answers from state the simulation \
           keeps none of, past that type's checks: VidMm's evictions, suspend and other \
           commands, VidSch's commands but 2 and 3, DRT tests with test signing, the \
           diagnostics buffers, Miracast and IDD requests, SoftGPU HMDs, the CCD database, \
           TDRDBGCTRL commands 0 to 2 and without data, DEVICE (DXGDEVICE::Escape), \
           DEBUG_SNAPSHOT, WHQL_INFO, BRIGHTNESS, EDID_CACHE, MIRACAST_ADAPTER_DIAG_INFO \
           (and its IsDiagnosticAllowed refusal) and the verifier options; a delay (VIDSCH \
           command 3) does not sleep; DRT is taken as off and the process as neither on the \
           console session nor admin; the vendor 0x1002 check reads the adapter's configured \
           PCI vendor ID and takes its flag 8 (DXGADAPTER +444 bit 3, not identified) as \
           clear; adapter access (exclusive with \
           Flags.HardwareAccess, which also flushes the scheduler) is not taken: an adapter \
           not active is STATUS_DEVICE_REMOVED whatever the flags; the known escape's and \
           DxgkDdiEscape's statuses are returned as they are; the harness's simulated backend \
           names no adapter handle and starts at the known escape's own checks \
           (SimKmt::escape_driver_private goes through the entry with its process's adapter \
           and device); the GPU-PV forward to the host is not modelled",
};

/// `DxgkEscape` for the caller's structure `a`, in 24H2's order, STATUS_INVALID_PARAMETER
/// unless said:
/// 1. `Type` Win32k's (1024 and up): STATUS_NOT_SUPPORTED (the simulation's answer: 24H2 hands
///    it to Win32k); VIDMM, VIDSCH, 28 or 29 without test signing: STATUS_ACCESS_DENIED; VIDMM
///    with less than 0x840 bytes of private data;
/// 2. the private data captured from `mem` (more than the simulation copies: STATUS_NO_MEMORY;
///    a NULL or unreadable pointer with a size: STATUS_ACCESS_VIOLATION), before any handle;
/// 3. `Flags.DriverKnownEscape` with another `Type`, `hAdapter` 0 or `Flags.HardwareAccess`;
/// 4. the types 24H2 answers before any handle (`types::before_handles`);
/// 5. `hAdapter` not an adapter handle of the caller; `hDevice` not 0 and not a device of that
///    adapter; `hContext` not 0 and not a context of `hDevice`;
/// 6. on an adapter whose driver registered `DXGKDDI_INTERFACE_VERSION` 0x5023 (WDDM 2.0) or
///    later: `Flags.Reserved`, bits 8..31 or `Flags.VirtualMachineData` set; an older driver's
///    escape goes on with them;
/// 7. VIDMM's suspend refused (`types::before_access`); the adapter not active
///    (`K:COREADAPTERACCESS::AcquireShared` @0x14000F940 reads DXGADAPTER +200: not started,
///    or removed), then `hDevice`'s DXGDEVICE not active (+608, `super::lock::device_active`:
///    stopped with its adapter; a device VidSch put in error is active and its escape goes on
///    to the driver): STATUS_DEVICE_REMOVED;
/// 8. any other type but DRIVERPRIVATE: its own checks and answer (`types::with_adapter`),
///    the kernel copy back when it writes one;
/// 9. `Flags.DriverKnownEscape`: the known escape on the kernel copy (its status as it is);
///    else, for the driver: its `DxgkDdiEscape` missing (STATUS_NOT_SUPPORTED), no data,
///    an adapter of PCI vendor 0x1002 and data it screens out (`types::vendor_refuses`,
///    STATUS_NOT_SUPPORTED), `Flags.DriverCommonEscape` (STATUS_NOT_SUPPORTED), then `DxgkDdiEscape` with the driver's
///    device, context and process handles and `Flags` with `VirtualMachineData` cleared, whose
///    status is returned.
///
/// On an `NT_SUCCESS` status the kernel copy is written back to the caller's private data.
pub fn dxgk_escape(
    m: &Machine,
    a: &D3DKMT_ESCAPE,
    t: &dyn EscapeCaller,
    mem: &dyn CallerMemory,
) -> Result<(), NtStatus> {
    type C = EscapeCheck;
    let signing = m.os_config().test_signing;
    let size = a.PrivateDriverDataSize;
    if a.Type >= types::WIN32K_START {
        // 24H2 hands these to Win32k (the process's callback); the simulation has no Win32k.
        return Err(gap(STATUS_NOT_SUPPORTED));
    }
    if matches!(a.Type, ESCAPE_VIDMM | ESCAPE_VIDSCH | 28 | 29) && !signing {
        return Err(C::TypeVIDMMVIDSCH.refuse());
    }
    if a.Type == ESCAPE_VIDMM && size < VIDMM_MIN {
        return Err(C::TypeVIDMMPrivateDriverDataSize.refuse());
    }
    if size > MAX_PRIVATE_DATA {
        return Err(C::PrivateDriverDataSizeOverX200.refuse());
    }
    let mut data = match (size, a.pPrivateDriverData) {
        (0, _) => Vec::new(),
        (_, 0) => return Err(C::PPrivateDriverDataReadablePrivateDriverDataSize.refuse()),
        (n, at) => mem.read(at, n)?,
    };
    let known = a.Flags & DRIVER_KNOWN_ESCAPE != 0;
    let hw = a.Flags & HARDWARE_ACCESS != 0;
    if known && (a.Type != ESCAPE_DRIVERPRIVATE || a.hAdapter == 0 || hw) {
        return Err(C::FlagsDriverKnownEscapeType.refuse());
    }
    if let Some(r) = types::before_handles(a, &data, signing) {
        return r;
    }
    let i = t
        .adapter(a.hAdapter)
        .ok_or(C::HAdapterAdapterHandle.refuse())?;
    let device = match a.hDevice {
        0 => None,
        h => Some(
            t.device(h)
                .filter(|d| d.adapter == i)
                .ok_or(C::HDeviceDeviceHAdapter.refuse())?,
        ),
    };
    if a.hContext != 0 && !device.is_some_and(|d| context_of(m, &d, a.hContext)) {
        return Err(C::HContextContextHDevice.refuse());
    }
    let shared = m
        .adapter_shared(i)
        .map_err(|_| C::AdapterActiveStarted.refuse())?;
    let wddm2 = interface_version(shared) >= types::INTERFACE_WDDM2_0;
    if wddm2 && a.Flags & (RESERVED | RESERVED2) != 0 {
        return Err(C::AdapterDDIVersion.refuse());
    }
    if wddm2 && a.Flags & VIRTUAL_MACHINE_DATA != 0 {
        return Err(C::AdapterDDIVersion2.refuse());
    }
    types::before_access(a, &data)?;
    // A driver-private escape that takes no adapter access only reads the adapter's state;
    // either way an adapter not active is refused.
    let unsynchronized = wddm2 && a.Flags & NO_ADAPTER_SYNCHRONIZATION != 0;
    let removed = if a.Type == ESCAPE_DRIVERPRIVATE
        && (a.Flags & DRIVER_COMMON_ESCAPE != 0 || unsynchronized)
    {
        C::DRIVERPRIVATEWithoutAdapter.refuse()
    } else {
        C::AdapterActiveStarted.refuse()
    };
    if !m.adapter_started(i) || crate::ums::adapter_removed(shared) {
        return Err(removed);
    }
    if let Some(d) = device {
        super::lock::device_active(shared, d.device, EscapeCheck::DeviceActive.refuse())?;
    }
    if a.Type != ESCAPE_DRIVERPRIVATE {
        if types::with_adapter(a, &mut data, device.is_some())? && !data.is_empty() {
            mem.write(a.pPrivateDriverData, &data)?;
        }
        return Ok(());
    }
    if !known {
        driver_private(m, i, device, a, &mut data)?;
        if !data.is_empty() {
            mem.write(a.pPrivateDriverData, &data)?;
        }
        return Ok(());
    }
    // `DxgkpDriverKnownEscape`'s test target is a context or queue of the caller's process
    // (a process with no device there has none).
    let pid = device
        .map(|d| d.pid)
        .or_else(|| t.process(i))
        .unwrap_or(ProcessId(0));
    let shared = m
        .adapter_shared(i)
        .map_err(|_| C::AdapterActiveStarted.refuse())?
        .clone();
    let mut out = |at: u64, bytes: &[u8]| mem.write(at, bytes).map_err(|NtStatus(s)| s);
    let s = crate::dxgkrnl::kmtest::build_test_command_buffer(&shared, pid, &mut data, &mut out)
        .map_err(super::process::status)?;
    if s < 0 {
        return Err(st(s));
    }
    if !data.is_empty() {
        mem.write(a.pPrivateDriverData, &data)?;
    }
    Ok(())
}

/// The driver-private tail of [`dxgk_escape`] on adapter `i` (started, handles checked): the
/// driver's `DxgkDdiEscape` on `data`, Dxgkrnl's kernel copy of the caller's data.
fn driver_private(
    m: &Machine,
    i: usize,
    device: Option<UmsProcess>,
    a: &D3DKMT_ESCAPE,
    data: &mut [u8],
) -> Result<(), NtStatus> {
    type C = EscapeCheck;
    let shared = m
        .adapter_shared(i)
        .map_err(|_| C::AdapterActiveStarted.refuse())?;
    let escape = ddi::table_slot!(shared, DxgkDdiEscape)
        .ok()
        .flatten()
        .ok_or(C::DRIVERPRIVATEDriverHas.refuse())?;
    if data.is_empty() {
        return Err(C::DRIVERPRIVATEPrivateDriverDataSizePPrivateDriverData.refuse());
    }
    if types::vendor_refuses(shared.config.pci_vendor_id, data) {
        return Err(C::DRIVERPRIVATEVendorX1002.refuse());
    }
    if a.Flags & DRIVER_COMMON_ESCAPE != 0 {
        return Err(C::DRIVERPRIVATEFlagsDriverCommonEscape.refuse());
    }
    // The handles were checked above; one destroyed since is refused as the check does.
    let bad_device = C::HDeviceDeviceHAdapter.refuse();
    let bad_context = C::HContextContextHDevice.refuse();
    let (kmd_device, kmd_process, kmd_context) = match device {
        Some(d) => {
            let os = lock(&shared.ums);
            let kmd_device = os.devices.get(&d.device).ok_or(bad_device)?.kmd;
            let kmd_context = match a.hContext {
                0 => 0,
                h => os.contexts.get(&h).ok_or(bad_context)?.kmd,
            };
            drop(os);
            let process = lock(&shared.mm.vidmm).process(d.pid).map(|(k, _, _)| k);
            (kmd_device, process.unwrap_or(0), kmd_context)
        }
        None => (0, 0, 0),
    };
    let args = DXGKARG_ESCAPE {
        hDevice: kmd_device as HANDLE,
        // 24H2 sets VirtualMachineData to whether the caller is a VM's process
        // (`DXGPROCESS::IsVmProcessOrVmValidation`): no simulated process is.
        Flags: a.Flags & !VIRTUAL_MACHINE_DATA,
        pPrivateDriverData: data.as_mut_ptr().cast(),
        PrivateDriverDataSize: u32::try_from(data.len())
            .map_err(|_| C::PrivateDriverDataSizeOverX200.refuse())?,
        hContext: kmd_context as HANDLE,
        hKmdProcessHandle: kmd_process as HANDLE,
    };
    let ctx = shared.context();
    shared
        .observer()
        .handed(&rvgpu_ddi::handover::ESCAPE, &args);
    // The block was audited just above (`handed`), so the call skips the central audit.
    let s = escape
        .call_unaudited(shared, At::Caller, (ctx, &args))
        .map_err(super::process::status)?;
    if s < 0 {
        return Err(st(s));
    }
    Ok(())
}

/// [`super::SimKmt`]'s own handles for [`dxgk_escape`]: adapter handle [`SIM_ADAPTER`] and
/// its process's device.
struct OwnHandles(UmsProcess);

/// The adapter handle `SimKmt` passes (it opens none; the process's one adapter).
const SIM_ADAPTER: KmtHandle = 1;

impl AdapterTable for OwnHandles {
    fn adapter(&self, h: KmtHandle) -> Option<usize> {
        (h == SIM_ADAPTER).then_some(self.0.adapter)
    }
    fn process(&self, i: usize) -> Option<ProcessId> {
        (i == self.0.adapter).then_some(self.0.pid)
    }
    fn open(&self, _: usize) -> Result<KmtHandle, NtStatus> {
        Err(st(STATUS_NOT_SUPPORTED))
    }
    fn close(&self, _: KmtHandle) -> bool {
        false
    }
}

impl EscapeCaller for OwnHandles {
    fn device(&self, h: KmtHandle) -> Option<UmsProcess> {
        (h == self.0.device).then_some(self.0)
    }
}

impl super::process::SimKmt<'_> {
    /// `D3DKMTEscape` of type `D3DKMT_ESCAPE_DRIVERPRIVATE` on this process's device with
    /// `data` (in/out), through the thunk's kernel entry ([`dxgk_escape`]).
    pub fn escape_driver_private(&self, data: &mut [u8]) -> Result<(), NtStatus> {
        self.thunk()?;
        let p = self.p;
        let mem = super::hw_queue::Buffer::new(data);
        let (at, size) = mem.pointer();
        let a = D3DKMT_ESCAPE {
            hAdapter: SIM_ADAPTER,
            hDevice: p.device,
            pPrivateDriverData: at,
            PrivateDriverDataSize: size,
            ..D3DKMT_ESCAPE::default()
        };
        dxgk_escape(self.m, &a, &OwnHandles(p), &mem)
    }
}
