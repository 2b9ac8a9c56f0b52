//! The D3DKMT backend's platform on Windows: the installed rvgpu driver, found among the
//! adapters `D3DKMTEnumAdapters2` lists by its PCI IDs, driven through the UMD's thunks
//! (`rvgpu_umd::kmt_windows::WinKmt`: one D3DKMT device each).
//!
//! Built here for `x86_64-pc-windows-gnu` (rvgpu-whlk.exe, scripts/package.sh) and run only on
//! a Windows test machine (docs/test-machine.md).
//!
//! References: D3DKMTEnumAdapters2
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtenumadapters2>,
//! D3DKMTQueryAdapterInfo with KMTQAITYPE_PHYSICALADAPTERDEVICEIDS
//! (`D3DKMT_QUERY_DEVICE_IDS`) and KMTQAITYPE_ADAPTERTYPE (`D3DKMT_ADAPTERTYPE`)
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ne-d3dkmthk-_kmtqueryadapterinfotype>.

use std::ffi::c_void;
use std::sync::Arc;

use std::time::Duration;

use rvgpu_umd::kmt::{FenceCpu, KmtHandle, NtStatus};
use rvgpu_umd::kmt_windows::{close_adapter, WaitOutcome, WinKmt, WinMonitoredFence};
use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTEnumAdapters2, D3DKMTQueryAdapterInfo, D3DKMT_ADAPTERINFO, D3DKMT_ADAPTERTYPE,
    D3DKMT_ENUMADAPTERS2, D3DKMT_QUERYADAPTERINFO, D3DKMT_QUERY_DEVICE_IDS, KMTQAITYPE_ADAPTERTYPE,
    KMTQAITYPE_PHYSICALADAPTERDEVICEIDS, KMTQUERYADAPTERINFOTYPE,
};
use windows_sys::Win32::Foundation::LUID;

use rvgpu_ddi::feature::{DXGK_FEATURE_KERNEL_MODE_TESTING, DXGK_ISFEATUREENABLED_RESULT};
use rvgpu_umd::kmt_windows::Wddm32Thunk;
use windows_sys::Wdk::Graphics::Direct3D::{
    D3DKMTEscape, D3DDDI_ESCAPEFLAGS, D3DKMT_ESCAPE, D3DKMT_ESCAPE_DRIVERPRIVATE,
};

use super::remote::Pipe;
use super::{FenceWait, KmtMachine, KmtPlatform, KmtSync, MonitoredSync};
use crate::backend::testing::TestThunks;
use crate::backend::{nth, nth_mut};
use crate::backend::{Failure, ProcessEnd, SessionConfig};

/// `D3DKMT_ADAPTERTYPE` bits (d3dkmthk.h): RenderSupported is bit 0, DisplaySupported bit 1.
const RENDER_SUPPORTED: u32 = 1 << 0;
const DISPLAY_SUPPORTED: u32 = 1 << 1;

/// The Windows platform.
#[derive(Clone, Copy, Debug, Default)]
pub struct WinPlatform;

/// One rvgpu adapter found by enumeration.
#[derive(Clone, Copy)]
struct Found {
    luid: LUID,
    adapter_type: u32,
}

fn query<T>(adapter: u32, ty: KMTQUERYADAPTERINFOTYPE, out: &mut T) -> Result<(), Failure> {
    let mut args = D3DKMT_QUERYADAPTERINFO {
        hAdapter: adapter,
        Type: ty,
        pPrivateDriverData: (out as *mut T).cast::<c_void>(),
        PrivateDriverDataSize: u32::try_from(std::mem::size_of::<T>())
            .map_err(|_| Failure::Backend("query buffer too large".into()))?,
    };
    // SAFETY: the argument block points at `out`, writable for its size, for the call.
    let st = unsafe { D3DKMTQueryAdapterInfo(&mut args) };
    if st < 0 {
        Err(Failure::DdiFailed(st))
    } else {
        Ok(())
    }
}

/// The rvgpu adapters on this machine, in enumeration order.
fn enumerate() -> Result<Vec<Found>, Failure> {
    let mut e = D3DKMT_ENUMADAPTERS2 {
        NumAdapters: 0,
        pAdapters: std::ptr::null_mut(),
    };
    // SAFETY: a null array asks for the count only.
    let st = unsafe { D3DKMTEnumAdapters2(&mut e) };
    if st < 0 {
        return Err(Failure::DdiFailed(st));
    }
    let n = e.NumAdapters as usize;
    let mut list: Vec<D3DKMT_ADAPTERINFO> = vec![
        // SAFETY: D3DKMT_ADAPTERINFO is plain data; all-zero is a valid value.
        unsafe { std::mem::zeroed() };
        n
    ];
    e.pAdapters = list.as_mut_ptr();
    // SAFETY: the array holds `NumAdapters` entries and outlives the call.
    let st = unsafe { D3DKMTEnumAdapters2(&mut e) };
    if st < 0 {
        return Err(Failure::DdiFailed(st));
    }
    list.truncate(e.NumAdapters as usize);
    let mut found = Vec::new();
    for a in &list {
        let mut ids = D3DKMT_QUERY_DEVICE_IDS {
            PhysicalAdapterIndex: 0,
            // SAFETY: plain data.
            DeviceIds: unsafe { std::mem::zeroed() },
        };
        let mut ty = D3DKMT_ADAPTERTYPE::default();
        let ours = query(a.hAdapter, KMTQAITYPE_PHYSICALADAPTERDEVICEIDS, &mut ids).is_ok()
            && ids.DeviceIds.VendorID == u32::from(rvgpu_hw::pci::VENDOR_ID)
            && ids.DeviceIds.DeviceID == u32::from(rvgpu_hw::pci::DEVICE_ID);
        if ours {
            query(a.hAdapter, KMTQAITYPE_ADAPTERTYPE, &mut ty)?;
            // SAFETY: every bit pattern of the union is a valid u32.
            let adapter_type = unsafe { ty.Anonymous.Value };
            found.push(Found {
                luid: a.AdapterLuid,
                adapter_type,
            });
        }
    }
    // The enumeration opened a handle to every adapter; close them all.
    for a in &list {
        close_adapter(a.hAdapter);
    }
    Ok(found)
}

impl KmtPlatform for WinPlatform {
    type Kmt = WinKmt;

    fn name(&self) -> &'static str {
        "windows"
    }

    fn open(&self, _config: &SessionConfig) -> Result<Box<dyn KmtMachine<Kmt = WinKmt>>, Failure> {
        Ok(Box::new(WinMachine {
            adapters: enumerate()?,
            devices: Vec::new(),
            children: std::collections::BTreeMap::new(),
        }))
    }
}

struct WinMachine {
    adapters: Vec<Found>,
    /// The devices the backend opened ("processes"), dropped (destroyed) when they end.
    devices: Vec<Option<Arc<WinKmt>>>,
    /// The process ID of each process that is a child, by its index among the processes.
    children: std::collections::BTreeMap<usize, u32>,
}

impl KmtMachine for WinMachine {
    type Kmt = WinKmt;

    fn adapters(&self) -> usize {
        self.adapters.len()
    }

    fn render_only(&self, i: usize) -> Result<bool, Failure> {
        let a = nth(&self.adapters, i, "adapter")?;
        Ok(a.adapter_type & RENDER_SUPPORTED != 0 && a.adapter_type & DISPLAY_SUPPORTED == 0)
    }

    fn open_device(&mut self, i: usize) -> Result<Arc<WinKmt>, Failure> {
        let a = nth(&self.adapters, i, "adapter")?;
        let k = Arc::new(WinKmt::open(a.luid).map_err(|s| Failure::DdiFailed(s.0))?);
        self.devices.push(Some(k.clone()));
        Ok(k)
    }

    /// A child `rvgpu-whlk` with a D3DKMT device of its own on the adapter (`crate::child`,
    /// role `process`): another address space and handle table, as another application.
    fn open_remote(&mut self, i: usize) -> Result<Option<Box<dyn Pipe>>, Failure> {
        let a = nth(&self.adapters, i, "adapter")?;
        let child = crate::child::start_process(a.luid.HighPart, a.luid.LowPart)
            .map_err(Failure::Backend)?;
        // The child stands at this index among the processes; it has no device here.
        self.children.insert(self.devices.len(), child.id());
        self.devices.push(None);
        Ok(Some(Box::new(crate::child::ChildPipe::new(child))))
    }

    /// A device of this process, not another process: both ends destroy the device (which
    /// destroys what is left on it, as process exit does).
    fn close_device(&mut self, p: usize, _how: ProcessEnd) -> Result<(), Failure> {
        let slot = nth_mut(&mut self.devices, p, "process")?;
        slot.take();
        Ok(())
    }

    /// From `from`'s table into `to`'s, as a broker does: each end that is a child is
    /// opened with `PROCESS_DUP_HANDLE` (`OpenProcess`), this program's own is its
    /// pseudo-handle; the source keeps its handle (its holder closes it).
    fn duplicate_nt_handle(&self, from: usize, nt: u64, to: usize) -> Result<u64, Failure> {
        use windows_sys::Win32::Foundation::{DuplicateHandle, DUPLICATE_SAME_ACCESS, HANDLE};
        use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_DUP_HANDLE};
        // `GetCurrentProcess()`'s pseudo-handle.
        let me = -1isize as HANDLE;
        let open = |p: usize| -> Result<Option<crate::child::Owned>, Failure> {
            match self.children.get(&p) {
                // SAFETY: no pointers; a process that has exited fails (NULL).
                Some(pid) => {
                    crate::child::Owned::new(unsafe { OpenProcess(PROCESS_DUP_HANDLE, 0, *pid) })
                        .map(Some)
                        .ok_or_else(|| {
                            Failure::Backend(format!("OpenProcess of child process {pid} failed"))
                        })
                }
                None => Ok(None),
            }
        };
        let (source, target) = (open(from)?, open(to)?);
        let from_process = source.as_ref().map_or(me, crate::child::Owned::raw);
        let into = target.as_ref().map_or(me, crate::child::Owned::raw);
        let mut dup: HANDLE = std::ptr::null_mut();
        // SAFETY: `dup` is a valid out-pointer; both process handles are valid for the call; a
        // handle the source process does not hold fails. The target's copy is closed by the
        // target.
        let ok = unsafe {
            DuplicateHandle(
                from_process,
                nt as usize as HANDLE,
                into,
                &raw mut dup,
                0,
                0,
                DUPLICATE_SAME_ACCESS,
            )
        };
        if ok == 0 {
            return Err(Failure::Backend(format!(
                "DuplicateHandle of NT handle {nt:#x} failed"
            )));
        }
        Ok(dup as usize as u64)
    }

    /// Timeout detection and recovery is the machine's: on unless `TdrLevel` is 0, with
    /// `TdrDelay` and the other keys the runbook sets (docs/test-machine.md §6), read at boot.
    /// A program cannot change them, so the case's timeouts are not honoured.
    fn enable_tdr(&self, i: usize, _t: crate::backend::TdrTimeouts) -> Result<(), Failure> {
        nth(&self.adapters, i, "adapter").map(|_| ())
    }
}

/// A monitored fence's CPU mapping, shareable with the session's event threads.
#[derive(Debug)]
pub struct WinMonitoredValue(WinMonitoredFence);

// SAFETY: the view is a read-only OS mapping read with atomic loads only; the mapping does not
// belong to a thread.
unsafe impl Send for WinMonitoredValue {}
// SAFETY: as above: concurrent atomic loads of read-only memory.
unsafe impl Sync for WinMonitoredValue {}

impl FenceCpu for WinMonitoredValue {
    fn value(&self) -> u64 {
        self.0.value()
    }
}

/// gdi32's sync-object thunks, through `WinKmt`.
impl KmtSync for WinKmt {
    type Value = WinMonitoredValue;

    fn testing(&self) -> Option<&dyn TestThunks> {
        Some(self)
    }

    fn create_monitored_fence(&self, initial: u64) -> Result<MonitoredSync<Self::Value>, NtStatus> {
        let f = WinKmt::create_monitored_fence(self, initial)?;
        Ok(MonitoredSync {
            handle: f.handle,
            value_gpu: f.value_gpu,
            value: WinMonitoredValue(f),
        })
    }

    fn signal_from_cpu(&self, fence: KmtHandle, value: u64) -> Result<(), NtStatus> {
        WinKmt::signal_from_cpu(self, fence, value)
    }

    fn wait_timeout(
        &self,
        fence: KmtHandle,
        value: u64,
        timeout: Duration,
    ) -> Result<FenceWait, NtStatus> {
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX - 1);
        match WinKmt::wait_timeout(self, fence, value, ns.min(u64::MAX - 1))? {
            WaitOutcome::Reached => Ok(FenceWait::Reached),
            WaitOutcome::TimedOut => Ok(FenceWait::TimedOut),
        }
    }

    fn wddm_1_2_caps(&self) -> Result<u32, NtStatus> {
        WinKmt::wddm_1_2_caps(self).map(|c| c[2])
    }
}

/// `D3DDDI_ESCAPEFLAGS::DriverKnownEscape` (bit 6 of the flags word, d3dukmdt.h):
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dukmdt/ns-d3dukmdt-_d3dddi_escapeflags>.
const DRIVER_KNOWN_ESCAPE: u32 = 1 << 6;

/// `D3DKMT_ISFEATUREENABLED`, absent from windows-sys 0.61:
/// <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/ns-d3dkmthk-d3dkmt_isfeatureenabled>.
#[repr(C)]
#[derive(Default)]
struct IsFeatureEnabled {
    h_adapter: u32,
    feature_id: rvgpu_ddi::feature::DXGK_FEATURE_ID,
    result: DXGK_ISFEATUREENABLED_RESULT,
}
const _: () = assert!(std::mem::size_of::<IsFeatureEnabled>() == 12);

/// The kernel-mode testing thunks on Windows: the known escape through `D3DKMTEscape`, the
/// feature's state through `D3DKMTIsFeatureEnabled` (looked up in gdi32.dll: a Windows before
/// 24H2 lacks it, and there the interface is reported missing).
impl TestThunks for WinKmt {
    fn escape_build_test_command_buffer(
        &self,
        data: &mut [u8],
        _dma: &mut [u8],
        _private: &mut [u8],
    ) -> Result<(), NtStatus> {
        // `data`'s pointers already name `_dma` and `_private` (the caller built it so); the OS
        // copies the driver's output into them.
        let mut flags = D3DDDI_ESCAPEFLAGS::default();
        flags.Anonymous.Value = DRIVER_KNOWN_ESCAPE;
        let args = D3DKMT_ESCAPE {
            hAdapter: self.adapter(),
            hDevice: self.device(),
            Type: D3DKMT_ESCAPE_DRIVERPRIVATE,
            Flags: flags,
            pPrivateDriverData: data.as_mut_ptr().cast::<c_void>(),
            PrivateDriverDataSize: u32::try_from(data.len())
                .map_err(|_| NtStatus(rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER))?,
            hContext: 0,
        };
        // SAFETY: the argument block names `data`, writable for its length, and the buffers
        // `data` points at are the caller's, alive for the call.
        let st = unsafe { D3DKMTEscape(&args) };
        if st < 0 {
            Err(NtStatus(st))
        } else {
            Ok(())
        }
    }

    fn kernel_mode_testing_enabled(&self) -> Result<bool, NtStatus> {
        let mut args = IsFeatureEnabled {
            h_adapter: self.adapter(),
            feature_id: DXGK_FEATURE_KERNEL_MODE_TESTING,
            ..Default::default()
        };
        // SAFETY: the thunk's argument block, on this frame for the call.
        let st = unsafe {
            rvgpu_umd::kmt_windows::call(
                Wddm32Thunk::IsFeatureEnabled,
                (&raw mut args).cast::<c_void>(),
            )
        };
        match st {
            rvgpu_ddi::ntstatus::STATUS_NOT_SUPPORTED => Ok(false),
            st if st < 0 => Err(NtStatus(st)),
            _ => Ok(args
                .result
                .Anonymous
                .is_set(rvgpu_ddi::feature::DXGK_ISFEATUREENABLED_RESULT_0::Enabled)),
        }
    }

    /// Timeout detection and recovery is always on for a Windows adapter.
    fn arm_tdr(&self) -> Result<(), NtStatus> {
        Ok(())
    }

    fn escape_driver_private(&self, data: &mut [u8]) -> Result<(), NtStatus> {
        WinKmt::escape_driver_private(self, data)
    }
}
