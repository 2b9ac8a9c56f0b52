//! `DxgkDdiQueryAdapterInfo`: what the adapter tells Dxgkrnl about itself.
//!
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryadapterinfo>.

use core::mem::size_of;

use rvgpu_ddi::adapter::{
    DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_DRIVERCAPS, DXGKQAITYPE_NATIVE_FENCE_CAPS,
    DXGKQAITYPE_USERMODESUBMISSION_CAPS, DXGK_DRIVERCAPS, DXGK_VIDSCHCAPS,
};
use rvgpu_ddi::fence::DXGK_NATIVE_FENCE_CAPS;
use rvgpu_ddi::submission::{
    DXGK_ENGINE_TYPE, DXGK_ENGINE_TYPE_3D, DXGK_ENGINE_TYPE_COPY, DXGK_ENGINE_TYPE_OTHER,
    DXGK_MAX_METADATA_NAME_LENGTH, DXGK_NODEMETADATA, DXGK_NODEMETADATA_FLAGS,
    DXGK_USERMODESUBMISSION_CAPS,
};
use rvgpu_ddi::PHYSICAL_ADDRESS;
use rvgpu_hw::engine::{ENGINE_COMPUTE, ENGINE_COPY};

use crate::adapter::Live;
use crate::platform::Platform;
use crate::status::{self, Status};

/// `DXGK_DRIVERCAPS` for a render-only WDDM 3.2 adapter with hardware scheduling.
pub fn driver_caps<P: Platform>(live: &Live<P>) -> DXGK_DRIVERCAPS {
    let mut caps = DXGK_DRIVERCAPS {
        HighestAcceptableAddress: PHYSICAL_ADDRESS {
            QuadPart: (rvgpu_hw::addr::SYSMEM_LIMIT - 1) as i64,
        },
        // The one interrupt we connect (line-based or the first MSI message).
        InterruptMessageNumber: 0,
        // SupportNonVGA is for display adapters that are not VGA-compatible; a render-only
        // adapter has no display, so the flag stays 0 (Microsoft's render-only caps table).
        SupportNonVGA: 0,
        // The WDDM level the driver implements (interface DXGKDDI_INTERFACE_VERSION_WDDM3_2).
        WDDMVersion: rvgpu_ddi::adapter::DXGKDDI_WDDMv3_2,
        // The device finishes the packet (or 4 KiB COPY/FILL chunk) in flight and never
        // resumes inside a DMA buffer it was switched away from (docs/hardware.md M12), so the
        // honest granularity is the DMA buffer boundary for both graphics and compute.
        PreemptionCaps: rvgpu_ddi::adapter::D3DKMDT_PREEMPTION_CAPS {
            GraphicsPreemptionGranularity:
                rvgpu_ddi::adapter::D3DKMDT_GRAPHICS_PREEMPTION_DMA_BUFFER_BOUNDARY,
            ComputePreemptionGranularity:
                rvgpu_ddi::adapter::D3DKMDT_COMPUTE_PREEMPTION_DMA_BUFFER_BOUNDARY,
        },
        // TDR-01: only with the device's PER_ENGINE_RESET and the four DDIs it obliges in the
        // table (crate::reset::per_engine_tdr); otherwise Dxgkrnl uses the adapter-wide path.
        SupportPerEngineTDR: u8::from(crate::reset::per_engine_tdr(live)),
        ..Default::default()
    };
    caps.GpuEngineTopology.NbAsymetricProcessingNodes = live.identity.config.engines;
    let mut sched = DXGK_VIDSCHCAPS::default();
    sched.set(DXGK_VIDSCHCAPS::MultiEngineAware, 1);
    sched.set(DXGK_VIDSCHCAPS::NoDmaPatching, 1);
    sched.set(
        DXGK_VIDSCHCAPS::No64BitAtomics,
        u32::from(!live.identity.caps.contains(rvgpu_hw::regs::Caps::ATOMIC64)),
    );
    sched.set(
        DXGK_VIDSCHCAPS::NativeGpuFence,
        u32::from(native_gpu_fence(live)),
    );
    // LOG-08: fence interrupts name the hardware queue whose signal log to read.
    sched.set(
        DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt,
        u32::from(live.optimized_fence_irq),
    );
    caps.SchedulingCaps = sched;
    // What hardware queues would further need, and why it is not reported:
    // - MemoryManagementCaps: the queue DDIs take GPU virtual addresses (DMA buffer, progress
    //   fence, rings), which v1 treats as bus addresses (identity, docs/hardware.md 12.2).
    //   That is neither the GpuMmu nor the IoMmu model, and VirtualAddressingSupported
    //   obliges one of them (with their DDIs), so no VA bit is claimed.
    // - HwQueuePacketCap, ContextSchedulingSupported (node metadata): hardware flip queues
    //   and the OS-driven HW-context runlist (DxgkDdiSwitchToHwContextList) are not built.
    caps
}

/// NF-10: native GPU fences are advertised only when the OS enabled
/// `DXGK_FEATURE_NATIVE_FENCE` (the OS fails adapter start otherwise), the device implements
/// them, and the driver's table provides the native-fence DDIs (advertising obliges them,
/// NF-12). Tying the last condition to the table itself means the bit cannot get ahead of
/// the implementation.
pub fn native_gpu_fence<P: Platform>(live: &Live<P>) -> bool {
    let os = live.features.native_fence.is_some();
    let device = live
        .identity
        .caps
        .contains(rvgpu_hw::regs::Caps::NATIVE_FENCE);
    let table = crate::ddi::initialization_data::<P>();
    let ddis = table.DxgkDdiCreateNativeFence.is_some()
        && table.DxgkDdiUpdateMonitoredValues.is_some()
        && table.DxgkDdiUpdateCurrentValuesFromCpu.is_some();
    os && device && ddis && log_ddis(&table)
}

/// LOG-09: native fences oblige the two log DDIs (the OS gives every user-mode queue both
/// logs), so the native-fence bit requires them in the table.
pub fn log_ddis(table: &rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA) -> bool {
    table.DxgkDdiSetNativeFenceLogBuffer.is_some() && table.DxgkDdiUpdateNativeFenceLogs.is_some()
}

/// LOG-08 (docs/logs.md §3.1): per-queue fence interrupts need the device cap (events name
/// the running queue), the device's log writes (`FENCE_LOG`) and native fences advertised
/// (with the log DDIs). A device without `CAPS.OPTIMIZED_FENCE_IRQ` gets the fence-array
/// reports of NF-14/NF-15.
pub fn optimized_fence_irq<P: Platform>(live: &Live<P>) -> bool {
    let caps = live.identity.caps;
    caps.contains(rvgpu_hw::regs::Caps::OPTIMIZED_FENCE_IRQ)
        && caps.contains(rvgpu_hw::regs::Caps::FENCE_LOG)
        && native_gpu_fence(live)
}

/// Handles one QueryAdapterInfo request.
pub fn query<P: Platform>(live: &Live<P>, args: &DXGKARG_QUERYADAPTERINFO) -> Result<(), Status> {
    match args.Type {
        DXGKQAITYPE_DRIVERCAPS => {
            let caps = driver_caps(live);
            write_out(args, &caps)
        }
        DXGKQAITYPE_NATIVE_FENCE_CAPS if native_gpu_fence(live) => {
            let caps = DXGK_NATIVE_FENCE_CAPS {
                // NF-05: non-shareable fences of a process are packed at this stride.
                MonitoredValueStride: u32::try_from(rvgpu_hw::fence::VALUE_STRIDE).unwrap_or(8),
                // NF-11: the CMP reaches fence values through system-process GPU VAs, which
                // the OS passes to CreateNativeFence.
                MapToGpuSystemProcess: 1,
                ..Default::default()
            };
            write_out(args, &caps)
        }
        // UM-04: the OS maps a dummy page of this size before connect and after disconnect.
        DXGKQAITYPE_USERMODESUBMISSION_CAPS => write_out(args, &usermode_submission_caps()),
        // Types this adapter does not implement: Dxgkrnl treats STATUS_NOT_SUPPORTED as "not
        // available" for optional queries.
        _ => Err(status::NOT_SUPPORTED),
    }
}

/// `DXGK_USERMODESUBMISSION_CAPS`: a doorbell is one BAR2 page (hardware.md 2, UM-04); no
/// secondary doorbells.
pub fn usermode_submission_caps() -> DXGK_USERMODESUBMISSION_CAPS {
    DXGK_USERMODESUBMISSION_CAPS {
        DoorbellSizeInBytes: u32::try_from(rvgpu_hw::PAGE_SIZE).unwrap_or(4096),
        ..Default::default()
    }
}

/// The engine type of engine `e`: engine 0 is the render (compute) node, engine 1 copy, and
/// engines 2 and up more compute-class engines, which WDDM has no type for ("Other" with a
/// name) (hardware.md 4.1).
pub fn engine_type(e: u32) -> (DXGK_ENGINE_TYPE, &'static str) {
    match e {
        ENGINE_COMPUTE => (DXGK_ENGINE_TYPE_3D, ""),
        ENGINE_COPY => (DXGK_ENGINE_TYPE_COPY, ""),
        _ => (DXGK_ENGINE_TYPE_OTHER, "Compute"),
    }
}

/// DxgkDdiGetNodeMetadata (PASSIVE): the low 16 bits of `node_and_adapter` are the node
/// (engine), the high 16 bits the physical adapter index, which is always 0 (one physical
/// adapter). Every node can ring user-mode queues through a doorbell (UM-03).
pub fn node_metadata<P: Platform>(
    live: &Live<P>,
    node_and_adapter: u32,
) -> Result<DXGK_NODEMETADATA, Status> {
    let node = node_and_adapter & 0xFFFF;
    if node_and_adapter >> 16 != 0 || node >= live.identity.config.engines {
        return Err(status::INVALID_PARAMETER);
    }
    let (engine_type, name) = engine_type(node);
    // DXGK_NODEMETADATA is packed (74 bytes): build the name apart and store it by value, as
    // no reference into the struct may be taken.
    let mut friendly = [0u16; DXGK_MAX_METADATA_NAME_LENGTH];
    let mut chars = name.encode_utf16();
    // Keep the last WCHAR for the terminating NUL.
    for slot in friendly
        .iter_mut()
        .take(DXGK_MAX_METADATA_NAME_LENGTH.saturating_sub(1))
    {
        *slot = chars.next().unwrap_or(0);
    }
    let md = DXGK_NODEMETADATA {
        EngineType: engine_type,
        FriendlyName: friendly,
        Flags: DXGK_NODEMETADATA_FLAGS::default()
            .with(DXGK_NODEMETADATA_FLAGS::UserModeSubmission, 1),
        ..Default::default()
    };
    Ok(md)
}

/// Copies `value` to the request's output buffer after checking its size.
fn write_out<T: Copy>(args: &DXGKARG_QUERYADAPTERINFO, value: &T) -> Result<(), Status> {
    let need = size_of::<T>();
    let have = usize::try_from(args.OutputDataSize).map_err(|_| status::INVALID_PARAMETER)?;
    if args.pOutputData.is_null() {
        return Err(status::INVALID_PARAMETER);
    }
    if have < need {
        return Err(status::BUFFER_TOO_SMALL);
    }
    // SAFETY: Dxgkrnl provides `OutputDataSize` writable bytes at `pOutputData` (checked to be
    // at least `size_of::<T>()` above); unaligned write because the OS buffer's alignment is
    // not promised.
    unsafe { args.pOutputData.cast::<T>().write_unaligned(*value) };
    Ok(())
}
