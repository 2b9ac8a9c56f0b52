//! `DxgkDdiQueryAdapterInfo`: what the adapter tells Dxgkrnl about itself.
//!
//! Reference: <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmddi/nc-d3dkmddi-dxgkddi_queryadapterinfo>.

use core::mem::size_of;

use rvgpu_ddi::adapter::{
    DXGKQAITYPE_DRIVERCAPS, DXGKQAITYPE_NATIVE_FENCE_CAPS, DXGKQAITYPE_USERMODESUBMISSION_CAPS,
    DXGK_DRIVERCAPS, DXGK_VIDSCHCAPS,
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
use crate::args::Request;
use crate::platform::Platform;
use crate::status::{self, Status};

/// `DXGK_DRIVERCAPS` for a render-only WDDM 3.2 adapter with hardware scheduling.
pub fn driver_caps<P: Platform>(live: &Live<P>) -> DXGK_DRIVERCAPS {
    let mut caps = DXGK_DRIVERCAPS {
        HighestAcceptableAddress: PHYSICAL_ADDRESS {
            QuadPart: (rvgpu_hw::addr::SYSMEM_LIMIT - 1).cast_signed(),
        },
        // The one interrupt we connect (line-based or the first MSI message).
        InterruptMessageNumber: 0,
        // SupportNonVGA is for display adapters that are not VGA-compatible; a render-only
        // adapter has no display, so the flag stays 0 (Microsoft's render-only caps table).
        SupportNonVGA: 0,
        // The WDDM level the driver implements (interface DXGKDDI_INTERFACE_VERSION_WDDM3_2).
        WDDMVersion: WDDM_VERSION,
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
        // table (crate::reset::ddi::per_engine_tdr); otherwise Dxgkrnl uses the adapter-wide path.
        SupportPerEngineTDR: u8::from(crate::reset::ddi::per_engine_tdr(live)),
        // UM-13: one power component per engine (crate::power), only when the device can
        // gate its engines; the two DDIs Dxgkrnl requires with the cap (BR-44) are always in
        // the table.
        SupportRuntimePowerManagement: u8::from(crate::power::ddi::supported(live)),
        // DxgkDdiNotifySurpriseRemoval is in the table for both kinds of removal
        // (in hibernation, and while running: `DxgkRemovalPnPNotify`).
        SupportSurpriseRemovalInHibernation: 1,
        SupportSurpriseRemoval: 1,
        ..Default::default()
    };
    caps.GpuEngineTopology.NbAsymetricProcessingNodes = live.identity.config.engines;
    // Microsoft's WDDM feature-caps table ("WDDM driver and feature caps") marks
    // FlipOnVSyncMmIo mandatory for render-only drivers as well as full ones since Windows 8.
    // With no VidPN source no flip is ever requested, so the cap promises nothing the
    // adapter would have to perform.
    caps.FlipCaps = rvgpu_ddi::adapter::DXGK_FLIPCAPS::default()
        .with(rvgpu_ddi::adapter::DXGK_FLIPCAPS::FlipOnVSyncMmIo, 1);
    let mut sched = DXGK_VIDSCHCAPS::default();
    sched.set(DXGK_VIDSCHCAPS::MultiEngineAware, 1);
    sched.set(DXGK_VIDSCHCAPS::NoDmaPatching, 1);
    sched.set(
        DXGK_VIDSCHCAPS::No64BitAtomics,
        u32::from(!live.identity.caps.contains(rvgpu_hw::regs::Caps::ATOMIC64)),
    );
    sched.set(
        DXGK_VIDSCHCAPS::NativeGpuFence,
        u32::from(live.native_gpu_fence()),
    );
    // LOG-08: fence interrupts name the hardware queue whose signal log to read.
    sched.set(
        DXGK_VIDSCHCAPS::OptimizedNativeFenceSignaledInterrupt,
        u32::from(live.optimized_fence_irq),
    );
    caps.SchedulingCaps = sched;
    // The GpuMmu model (crate::gpummu): VidMm owns per-process page tables the
    // driver writes through paging buffers; the node metadata and the GPUMMUCAPS answer say
    // the same (Dxgkrnl cross-checks them, docs/windows-bringup.md BR-68/71).
    if crate::gpummu::supported(live.mmu()) {
        let mut mm = rvgpu_ddi::adapter::DXGK_VIDMMCAPS_0::default();
        mm.set(
            rvgpu_ddi::adapter::DXGK_VIDMMCAPS_0::VirtualAddressingSupported,
            1,
        );
        mm.set(rvgpu_ddi::adapter::DXGK_VIDMMCAPS_0::GpuMmuSupported, 1);
        caps.MemoryManagementCaps = rvgpu_ddi::adapter::DXGK_VIDMMCAPS {
            Anonymous: mm,
            PagingNode: crate::gpummu::paging_node(live.mmu()),
        };
    }
    // AL-06: a device that does not snoop CPU caches makes the aperture non-coherent, and the
    // OS must know before it maps anything cached (Dxgkrnl refuses this on x86/x64, BR-50).
    caps.PresentationCaps.set(
        rvgpu_ddi::adapter::DXGK_PRESENTATIONCAPS::NoCacheCoherentApertureMemory,
        u32::from(!crate::gpummu::io_coherent(live.mmu())),
    );
    // HwQueuePacketCap stays 0: hardware flip queues are not built (render-only adapter).
    caps
}

/// LOG-08 (docs/logs.md#kmd): per-queue fence interrupts need the device cap (events name
/// the running queue), the device's log writes (`FENCE_LOG`) and native fences advertised
/// (with the log DDIs). A device without `CAPS.OPTIMIZED_FENCE_IRQ` gets the fence-array
/// reports of NF-14/NF-15.
pub fn optimized_fence_irq<P: Platform>(live: &Live<P>) -> bool {
    let caps = live.identity.caps;
    caps.contains(rvgpu_hw::regs::Caps::OPTIMIZED_FENCE_IRQ)
        && caps.contains(rvgpu_hw::regs::Caps::FENCE_LOG)
        && live.native_gpu_fence()
}

/// The sizes `DXGK_DRIVERCAPS` has had on x64, one per interface-version step of d3dkmddi.h
/// (each `#if DXGKDDI_INTERFACE_VERSION >= ...` block appends members): the end of the last
/// member of that step, rounded up to the structure's 8-byte alignment. An OS built for an
/// older interface passes its own, smaller size; the answer is then the prefix of ours that
/// its layout has.
pub const DRIVERCAPS_SIZES: [usize; 8] = {
    const fn round8(n: usize) -> usize {
        n.next_multiple_of(8)
    }
    use core::mem::offset_of;
    [
        // WDDM 1.0 (Vista): through GpuEngineTopology.
        round8(offset_of!(DXGK_DRIVERCAPS, WDDMVersion)),
        // WIN7: + WDDMVersion, Reserved, Reserved1.
        round8(offset_of!(DXGK_DRIVERCAPS, PreemptionCaps)),
        // WIN8: + PreemptionCaps .. SupportSurpriseRemovalInHibernation.
        round8(offset_of!(DXGK_DRIVERCAPS, HybridDiscrete)),
        // WDDM 1.3: + HybridDiscrete, MaxOverlayPlanes.
        round8(offset_of!(DXGK_DRIVERCAPS, HybridIntegrated)),
        // WDDM 2.0: + HybridIntegrated .. SupportSurpriseRemoval.
        round8(offset_of!(
            DXGK_DRIVERCAPS,
            SupportMultiPlaneOverlayImmediateFlip
        )),
        // WDDM 2.1: + the MPO flip members.
        round8(offset_of!(DXGK_DRIVERCAPS, MiscCaps)),
        // WDDM 2.4: + MiscCaps.
        round8(offset_of!(DXGK_DRIVERCAPS, MaxHwQueuedFlips)),
        // WDDM 2.9 and later (3.0, 3.1, 3.2): + MaxHwQueuedFlips, HwQueuedFlipCaps.
        size_of::<DXGK_DRIVERCAPS>(),
    ]
};

/// Writes `caps` into a DRIVERCAPS request: the whole structure when the buffer holds it,
/// else the prefix of the largest layout (see [`DRIVERCAPS_SIZES`]) that fits, as an OS of that
/// interface version reads exactly that many bytes. A buffer smaller than the WDDM 1.0 layout
/// is refused with STATUS_INVALID_PARAMETER (QueryAdapterInfo's status allow-list, BR-23).
pub fn write_driver_caps(q: &mut Request<'_>, caps: &DXGK_DRIVERCAPS) -> Result<(), Status> {
    q.write_prefix(caps, &DRIVERCAPS_SIZES)
}

/// The WDDM level reported in DRIVERCAPS and in the pre-start WDDMDEVICECAPS.
pub const WDDM_VERSION: rvgpu_ddi::adapter::DXGK_WDDMVERSION = rvgpu_ddi::adapter::DXGKDDI_WDDMv3_2;

/// QueryAdapterInfo types that Dxgkrnl sends after AddDevice and before StartDevice (their
/// reference pages say so). They are answered without the device: from constants of the
/// driver and of the hardware's address map. Other types return `None`.
pub fn query_pre_start(q: &mut Request<'_>) -> Option<Result<(), Status>> {
    use rvgpu_ddi::adapter::{
        DXGKQAITYPE_IOMMU_CAPS, DXGKQAITYPE_PHYSICAL_MEMORY_CAPS, DXGKQAITYPE_WDDMDEVICECAPS,
        DXGK_IOMMU_CAPS, DXGK_PHYSICAL_MEMORY_CAPS, DXGK_WDDMDEVICECAPS,
    };
    Some(match q.ty {
        DXGKQAITYPE_WDDMDEVICECAPS => q.write(&DXGK_WDDMDEVICECAPS {
            WDDMVersion: WDDM_VERSION,
        }),
        // The device reaches system memory below SYSMEM_LIMIT only (hardware.md, address map).
        DXGKQAITYPE_PHYSICAL_MEMORY_CAPS => q.write(&DXGK_PHYSICAL_MEMORY_CAPS {
            HighestVisibleAddress: PHYSICAL_ADDRESS {
                QuadPart: (rvgpu_hw::addr::SYSMEM_LIMIT - 1).cast_signed(),
            },
        }),
        // No IOMMU isolation or DMA remapping: the driver programs bus addresses directly and
        // does not use the IOMMU callbacks (MemoryManagementCaps claims neither model either,
        // and Dxgkrnl expects the two to agree).
        DXGKQAITYPE_IOMMU_CAPS => q.write(&DXGK_IOMMU_CAPS::default()),
        _ => return None,
    })
}

/// `DXGKQAITYPE_HISTORYBUFFERPRECISION`: history buffer timestamps are reads of the device's
/// 64-bit GPU_CLOCK counter, so all 64 bits are valid. The optional input names a physical
/// adapter, which must be 0 (no linked adapters).
pub fn history_buffer_precision(q: &mut Request<'_>) -> Result<(), Status> {
    use rvgpu_ddi::adapter::DXGKARG_HISTORYBUFFERPRECISION;
    check_adapter_index(q, false)?;
    q.write(&DXGKARG_HISTORYBUFFERPRECISION { PrecisionBits: 64 })
}

/// The 4-byte physical-adapter index some queries take as input
/// (`DXGK_QUERYHISTORYBUFFERPRECISIONIN`, `DXGK_QUERYPHYSICALADAPTERCAPSIN`): it must name
/// adapter 0, the only one (no linked adapters). `required`: absent input is refused, else it
/// means adapter 0.
fn check_adapter_index(q: &Request<'_>, required: bool) -> Result<(), Status> {
    use rvgpu_ddi::adapter::DXGK_QUERYPHYSICALADAPTERCAPSIN;
    if !q.has_input() && !required {
        return Ok(());
    }
    let input: DXGK_QUERYPHYSICALADAPTERCAPSIN = q.input()?;
    if input.PhysicalAdapterIndex != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    Ok(())
}

/// `DXGKQAITYPE_PHYSICALADAPTERCAPS` for physical adapter 0 (the only one): every node of the
/// adapter, the paging node DRIVERCAPS names, GpuMmu as MemoryManagementCaps claims it, and the
/// handle Dxgkrnl gave at start. No IoMmu, move paging, VPR or virtual copy engine. Dxgkrnl
/// asks with the size of the interface version it negotiated (20, 24 or 32 bytes,
/// docs/windows-bringup.md §5): the driver answers the prefix that fits.
pub fn physical_adapter_caps<P: Platform>(
    live: &Live<P>,
    q: &mut Request<'_>,
) -> Result<(), Status> {
    use rvgpu_ddi::adapter::{DXGK_PHYSICALADAPTERCAPS, DXGK_PHYSICALADAPTERFLAGS};
    check_adapter_index(q, true)?;
    let word = |v: u32| u16::try_from(v).map_err(|_| status::INVALID_PARAMETER);
    let mut flags = DXGK_PHYSICALADAPTERFLAGS::default();
    flags.set(
        DXGK_PHYSICALADAPTERFLAGS::GpuMmuSupported,
        u32::from(crate::gpummu::supported(live.mmu())),
    );
    let caps = DXGK_PHYSICALADAPTERCAPS {
        NumExecutionNodes: word(live.identity.config.engines)?,
        PagingNodeIndex: word(crate::gpummu::paging_node(live.mmu()))?,
        DxgkPhysicalAdapterHandle: live.dxgk.device_handle(),
        Flags: flags,
        ..Default::default()
    };
    q.write_prefix(&caps, &PHYSICAL_ADAPTER_CAPS_SIZES)
}

/// The `DXGK_PHYSICALADAPTERCAPS` sizes Dxgkrnl asks with: before WDDM 2.1 (nodes, paging
/// node, handle, flags), from 2.1 (+ `VPRPagingNode`, padded), from 2.7 (+
/// `VirtualCopyNodeIndex`, padded).
const PHYSICAL_ADAPTER_CAPS_SIZES: [usize; 3] = [20, 24, 32];

/// Handles one QueryAdapterInfo request.
pub fn query<P: Platform>(live: &Live<P>, q: &mut Request<'_>) -> Result<(), Status> {
    if let Some(answer) = query_pre_start(q) {
        return answer;
    }
    match q.ty {
        DXGKQAITYPE_DRIVERCAPS => {
            let caps = driver_caps(live);
            write_driver_caps(q, &caps)
        }
        rvgpu_ddi::adapter::DXGKQAITYPE_HISTORYBUFFERPRECISION => history_buffer_precision(q),
        rvgpu_ddi::adapter::DXGKQAITYPE_PHYSICALADAPTERCAPS => physical_adapter_caps(live, q),
        DXGKQAITYPE_NATIVE_FENCE_CAPS if live.native_gpu_fence() => {
            let caps = DXGK_NATIVE_FENCE_CAPS {
                // NF-05: non-shareable fences of a process are packed at this stride.
                MonitoredValueStride: u32::try_from(rvgpu_hw::fence::VALUE_STRIDE).unwrap_or(8),
                // NF-11: the CMP reaches fence values through system-process GPU VAs, which
                // the OS passes to CreateNativeFence.
                MapToGpuSystemProcess: 1,
                ..Default::default()
            };
            q.write(&caps)
        }
        // UM-04: the OS maps a dummy page of this size before connect and after disconnect.
        // Answered only when some node offers user-mode submission (the OS asks only then,
        // BR-76).
        DXGKQAITYPE_USERMODESUBMISSION_CAPS if crate::hws::ddi::user_mode_submission(live) => {
            q.write(&usermode_submission_caps())
        }
        // The memory model: segments always; the GPU MMU's caps and levels only
        // when DRIVERCAPS claims GpuMmu.
        rvgpu_ddi::adapter::DXGKQAITYPE_QUERYSEGMENT4 => {
            crate::gpummu::query_segments(live.mmu(), q)
        }
        rvgpu_ddi::adapter::DXGKQAITYPE_GPUMMUCAPS if crate::gpummu::supported(live.mmu()) => {
            crate::gpummu::query_mmu_caps(live.mmu(), q)
        }
        rvgpu_ddi::adapter::DXGKQAITYPE_PAGETABLELEVELDESC
            if crate::gpummu::supported(live.mmu()) =>
        {
            crate::gpummu::query_level(live.mmu(), q)
        }
        // UM-13, BR-100…BR-109: asked only when SupportRuntimePowerManagement is set
        // (POWERCOMPONENTPSTATEINFO stays unanswered: one fixed clock, BR-109 tolerates it).
        rvgpu_ddi::adapter::DXGKQAITYPE_NUMPOWERCOMPONENTS => {
            crate::power::ddi::query_count(live, q)
        }
        rvgpu_ddi::adapter::DXGKQAITYPE_POWERCOMPONENTINFO
            if crate::power::ddi::supported(live) =>
        {
            crate::power::ddi::query_info(live, q)
        }
        // Types this adapter does not implement. Dxgkrnl's QueryAdapterInfo wrapper accepts
        // SUCCESS, INVALID_PARAMETER, NOT_IMPLEMENTED and NO_MEMORY and logs anything else as
        // an invalid status (docs/windows-bringup.md BR-23; NOT_SUPPORTED was seen logged so
        // on 26100).
        _ => Err(status::NOT_IMPLEMENTED),
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
        // Context scheduling only with hardware scheduling (BR-71/72), user-mode submission only
        // on top of it with native fences (BR-73 and its 24H2 NativeGpuFence addition).
        Flags: DXGK_NODEMETADATA_FLAGS::default()
            .with(
                DXGK_NODEMETADATA_FLAGS::ContextSchedulingSupported,
                u32::from(crate::hws::ddi::active(live)),
            )
            .with(
                DXGK_NODEMETADATA_FLAGS::UserModeSubmission,
                u32::from(crate::hws::ddi::user_mode_submission(live)),
            )
            .with(
                DXGK_NODEMETADATA_FLAGS::SupportBuildTestCommandBuffer,
                // The OS enabled the kernel-mode testing feature (crate::kmtest).
                u32::from(live.features.kernel_mode_testing.is_some()),
            ),
        // Every engine translates through the GPU MMU when DRIVERCAPS claims it (BR-71).
        GpuMmuSupported: u8::from(crate::gpummu::supported(live.mmu())),
        ..Default::default()
    };
    Ok(md)
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use rvgpu_ddi::adapter::{
        DXGKARG_QUERYADAPTERINFO, DXGKQAITYPE_HISTORYBUFFERPRECISION, DXGK_QUERYADAPTERINFOFLAGS,
    };

    fn args(ty: u32, out: &mut [u8], input: Option<&mut [u8]>) -> DXGKARG_QUERYADAPTERINFO {
        let (p_in, n_in) = match input {
            Some(i) => (i.as_mut_ptr().cast(), u32::try_from(i.len()).unwrap()),
            None => (core::ptr::null_mut(), 0),
        };
        DXGKARG_QUERYADAPTERINFO {
            Type: ty.cast_signed(),
            pInputData: p_in,
            InputDataSize: n_in,
            pOutputData: out.as_mut_ptr().cast(),
            OutputDataSize: u32::try_from(out.len()).unwrap(),
            Flags: DXGK_QUERYADAPTERINFOFLAGS::from_value(0),
            hKmdProcessHandle: core::ptr::null_mut(),
        }
    }

    /// The request `a` describes; used within the statement that makes it.
    fn req(a: &DXGKARG_QUERYADAPTERINFO) -> Request<'_> {
        Request::from_test(a)
    }

    /// sizeof(DXGK_DRIVERCAPS) on x64 as clang computes it from the 10.0.22621 d3dkmddi.h with
    /// DXGKDDI_INTERFACE_VERSION set to Vista, WIN7, WIN8, WDDM 1.3, 2.0, 2.1, 2.4 and 2.9
    /// (3.0 and 3.1 add nothing): docs/windows.md has the command.
    #[test]
    fn drivercaps_sizes_per_interface_version() {
        assert_eq!(DRIVERCAPS_SIZES, [336, 528, 544, 552, 576, 576, 584, 592]);
        assert_eq!(DRIVERCAPS_SIZES[7], size_of::<DXGK_DRIVERCAPS>());
    }

    /// An OS of an older interface version passes its smaller DRIVERCAPS: it gets the prefix of
    /// our answer that its layout has, and nothing past it is written.
    #[test]
    fn drivercaps_answer_fits_the_buffer_the_os_passes() {
        let caps = DXGK_DRIVERCAPS {
            WDDMVersion: WDDM_VERSION,
            MaxHwQueuedFlips: 7,
            ..Default::default()
        };
        let whole = size_of::<DXGK_DRIVERCAPS>();
        // The WDDM 2.4-2.8 layout (no MaxHwQueuedFlips / HwQueuedFlipCaps) plus guard bytes.
        let len = DRIVERCAPS_SIZES[6];
        let mut buf = vec![0xEEu8; whole + 8];
        let mut a = args(DXGKQAITYPE_DRIVERCAPS as u32, &mut buf[..len], None);
        a.OutputDataSize = u32::try_from(len).unwrap();
        assert_eq!(write_driver_caps(&mut req(&a), &caps), Ok(()));
        let wv = core::mem::offset_of!(DXGK_DRIVERCAPS, WDDMVersion);
        assert_eq!(
            i32::from_le_bytes(buf[wv..wv + 4].try_into().unwrap()),
            WDDM_VERSION
        );
        assert!(buf[len..].iter().all(|b| *b == 0xEE), "wrote past {len}");
        // The whole structure when the buffer holds it (a larger one is not filled further).
        let mut buf = vec![0xEEu8; whole + 8];
        let a = args(DXGKQAITYPE_DRIVERCAPS as u32, &mut buf, None);
        assert_eq!(write_driver_caps(&mut req(&a), &caps), Ok(()));
        let mh = core::mem::offset_of!(DXGK_DRIVERCAPS, MaxHwQueuedFlips);
        assert_eq!(buf[mh], 7);
        assert!(buf[whole..].iter().all(|b| *b == 0xEE));
        // A size between two steps gets the smaller step; below the first step is refused.
        let mut buf = vec![0xEEu8; DRIVERCAPS_SIZES[1] + 3];
        let a = args(DXGKQAITYPE_DRIVERCAPS as u32, &mut buf, None);
        assert_eq!(write_driver_caps(&mut req(&a), &caps), Ok(()));
        assert!(buf[DRIVERCAPS_SIZES[1]..].iter().all(|b| *b == 0xEE));
        let mut buf = vec![0u8; DRIVERCAPS_SIZES[0] - 1];
        let a = args(DXGKQAITYPE_DRIVERCAPS as u32, &mut buf, None);
        assert_eq!(
            write_driver_caps(&mut req(&a), &caps),
            Err(status::INVALID_PARAMETER)
        );
    }

    #[test]
    fn history_buffer_precision_is_64_bits() {
        let mut out = [0u8; 4];
        let a = args(DXGKQAITYPE_HISTORYBUFFERPRECISION as u32, &mut out, None);
        assert_eq!(history_buffer_precision(&mut req(&a)), Ok(()));
        assert_eq!(u32::from_le_bytes(out), 64);
        let mut out = [0u8; 4];
        let mut input = 0u32.to_le_bytes();
        let a = args(
            DXGKQAITYPE_HISTORYBUFFERPRECISION as u32,
            &mut out,
            Some(&mut input),
        );
        assert_eq!(history_buffer_precision(&mut req(&a)), Ok(()));
        let mut input = 1u32.to_le_bytes();
        let a = args(
            DXGKQAITYPE_HISTORYBUFFERPRECISION as u32,
            &mut out,
            Some(&mut input),
        );
        assert_eq!(
            history_buffer_precision(&mut req(&a)),
            Err(status::INVALID_PARAMETER)
        );
        let mut small = [0u8; 3];
        let a = args(DXGKQAITYPE_HISTORYBUFFERPRECISION as u32, &mut small, None);
        assert_eq!(
            history_buffer_precision(&mut req(&a)),
            Err(status::INVALID_PARAMETER)
        );
    }
}
