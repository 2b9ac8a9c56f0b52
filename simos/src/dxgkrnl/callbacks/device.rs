//! Device information and BAR mappings: `DxgkCbGetDeviceInformation`, `DxgkCbMapMemory`,
//! `DxgkCbUnmapMemory`.

use rvgpu_ddi::adapter::*;
use rvgpu_ddi::basic::*;
use rvgpu_ddi::ntstatus::*;
use rvgpu_hw::pci;

use super::view::Place;
use crate::adapter::callback::enter_status;
use crate::adapter::kernel;
use crate::adapter::resources;
use crate::base::lock::lock;

/// `DxgkCbGetDeviceInformation` (PASSIVE). As in 24H2's `K:DpGetDeviceInformation`
/// @0x1403C44A0, a NULL handle or structure is `STATUS_INVALID_PARAMETER` before anything else;
/// the whole structure is written (`DockingState` zero: 24H2 reads it from the registry only on
/// a dock-aware machine).
pub(super) fn get_device_information(
    handle: HANDLE,
    info: Option<impl Place<DXGK_DEVICE_INFO>>,
    entry: usize,
) -> NTSTATUS {
    let Some(info) = info.filter(|_| !handle.is_null()) else {
        return STATUS_INVALID_PARAMETER;
    };
    let a = enter_status!(DxgkCbGetDeviceInformation, handle, entry);
    let r = &a.resources;
    let out = DXGK_DEVICE_INFO {
        MiniportDeviceContext: a.context(),
        PhysicalDeviceObject: r.pdo(),
        DeviceRegistryPath: r.registry_path_string(),
        TranslatedResourceList: r.list_ptr(),
        SystemMemorySize: LARGE_INTEGER::from_i64(16 << 30),
        HighestPhysicalAddress: LARGE_INTEGER::from_i64((rvgpu_hw::addr::SYSMEM_LIMIT - 1) as i64),
        AgpApertureBase: LARGE_INTEGER::from_i64(0),
        AgpApertureSize: 0,
        DockingState: DockStateUnsupported,
    };
    info.write(out);
    STATUS_SUCCESS
}

/// `DxgkCbMapMemory` (PASSIVE): maps a range of one of the adapter's BARs. BAR0 and BAR2 must
/// be mapped from their start (the trap window is the BAR); BAR4 may be mapped at any offset.
pub(super) fn map_memory(
    handle: HANDLE,
    translated: PHYSICAL_ADDRESS,
    length: ULONG,
    in_io_space: BOOLEAN,
    map_to_user_mode: BOOLEAN,
    virtual_address: Option<impl Place<PVOID>>,
    entry: usize,
) -> NTSTATUS {
    // 24H2's `K:DpMapMemory` @0x1403F3E90 refuses these before it looks at anything else.
    let Some(virtual_address) = virtual_address.filter(|_| !handle.is_null() && length != 0) else {
        return STATUS_INVALID_PARAMETER;
    };
    let a = enter_status!(DxgkCbMapMemory, handle, entry);
    // The adapter has no port resources, so `K:DpiVerifyResources` @0x1403D9D80 finds none.
    if in_io_space != 0 {
        return STATUS_INVALID_PARAMETER;
    }
    if map_to_user_mode != 0 {
        // User-mode mappings come with user-mode submission (doorbell pages, UM-09).
        a.state
            .raise_sim_error("DxgkCbMapMemory with MapToUserMode is not simulated");
        return STATUS_NOT_SUPPORTED;
    }
    let addr = translated.get() as u64;
    let len = u64::from(length);
    let idx = a.index;
    let doorbells = u64::from(a.device.config().doorbells) * rvgpu_hw::PAGE_SIZE;
    let vram = a.device.memory().vram_size();
    let within = |base: u64, size: u64| {
        addr >= base && addr.checked_add(len).is_some_and(|e| e <= base + size)
    };
    let va = if addr == resources::bar_base(idx, pci::BAR_MMIO) && len <= pci::MMIO_SIZE {
        kernel::map_trap_window(&a.register_bus, len as usize)
    } else if addr == resources::bar_base(idx, pci::BAR_DOORBELL) && len <= doorbells {
        let va = kernel::map_trap_window(&a.doorbell_bus, len as usize);
        lock(&a.doorbell_windows).insert(va.as_ptr() as usize, len as usize);
        va
    } else if within(resources::bar_base(idx, pci::BAR_VRAM), vram) {
        let off = addr - resources::bar_base(idx, pci::BAR_VRAM);
        let Some(base) = a.device.memory().vram_cpu_ptr() else {
            return STATUS_INVALID_PARAMETER;
        };
        // `off + len <= vram` (checked by `within`): the window stays inside the VRAM backing,
        // which lives as long as the machine's `Memory`.
        let Some(p) = std::ptr::NonNull::new(base.as_ptr().cast::<u8>().wrapping_add(off as usize))
        else {
            return STATUS_INVALID_PARAMETER;
        };
        kernel::map_memory_window(p, len as usize);
        p
    } else {
        a.state.push_log(
            rvgpu_kmd::platform::Level::Error,
            format!("DxgkCbMapMemory: {addr:#x}+{len:#x} is not inside a BAR of adapter {idx}"),
        );
        return STATUS_INVALID_PARAMETER;
    };
    *lock(&a.mm.mappings)
        .entry(va.as_ptr() as usize)
        .or_insert(0) += 1;
    virtual_address.write(va.as_ptr().cast());
    STATUS_SUCCESS
}

/// `DxgkCbUnmapMemory` as 24H2's `K:DpUnmapMemory` @0x1403F0330 does it: a NULL handle or
/// address is `STATUS_INVALID_PARAMETER`; else the address is looked up among the adapter's
/// mappings, one reference dropped and the last one unmapped. An address that is not a mapping
/// of the adapter is not reported: nothing is done and the answer is `STATUS_SUCCESS`.
pub(super) fn unmap_memory(handle: HANDLE, key: usize, entry: usize) -> NTSTATUS {
    if handle.is_null() || key == 0 {
        return STATUS_INVALID_PARAMETER;
    }
    let a = enter_status!(DxgkCbUnmapMemory, handle, entry);
    let live = {
        let mut maps = lock(&a.mm.mappings);
        match maps.get_mut(&key) {
            Some(n) => {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    maps.remove(&key);
                }
                true
            }
            None => false,
        }
    };
    if !live {
        return STATUS_SUCCESS;
    }
    if !lock(&a.mm.mappings).contains_key(&key) {
        // BAR2 trap windows are never shared, so the last unmap of the base ends it.
        lock(&a.doorbell_windows).remove(&key);
    }
    kernel::unmap_window(key);
    STATUS_SUCCESS
}
