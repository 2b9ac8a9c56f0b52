//! The audit of the adapter's questions: `DxgkDdiQueryAdapterInfo` (the kernel's own questions,
//! and a process's UMDRIVERPRIVATE question) and `DxgkDdiCalibrateGpuClock`.

use super::{Ddi, Fill, Row};
use crate::adapter::{DXGKARG_QUERYADAPTERINFO, DXGK_GPUCLOCKDATA};

const WRAPPER_BY: &str = "K:DXGADAPTER::DdiQueryAdapterInfo @0x14035DC70";
const KERNEL_BY: &str = "K:ADAPTER_RENDER::Initialize @0x14019D8EC";

/// `DxgkDdiQueryAdapterInfo` for a question the kernel asks itself (adapter and render-core
/// start-up, power set-up, performance data, the type-67 path of
/// K:DxgkQueryAdapterInfoImpl @0x140383210): the caller builds the block on its stack, writing
/// the type and the sizes as 64-bit words (their padding zero) and the flags together with the
/// process handle as zero; `WRAPPER_BY` passes it on, adding VirtualMachineData when the
/// calling process is a virtual machine's.
pub const QUERY_ADAPTER_INFO: Ddi<DXGKARG_QUERYADAPTERINFO> = Ddi {
    name: "DxgkDdiQueryAdapterInfo",
    block: "DXGKARG_QUERYADAPTERINFO",
    rows: &[
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.Type,
            true,
            KERNEL_BY,
            "the question (GPU MMU caps per physical adapter, then each page-table level's, \
             and so on)"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.pInputData,
            true,
            KERNEL_BY,
            "the question's input on the caller's stack (a physical adapter or level index), \
             or none"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.InputDataSize,
            true,
            KERNEL_BY,
            "the input's size, 0 without input"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.pOutputData,
            true,
            KERNEL_BY,
            "where the kernel keeps the answer (its own adapter state or a stack variable); \
             not cleared first"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.OutputDataSize,
            true,
            KERNEL_BY,
            "the answer's size for the driver's interface version (a level's caps are 16 \
             bytes below 0x5012, 20 from it)"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.Flags,
            false,
            WRAPPER_BY,
            "written zero by the caller; VirtualMachineData set when the calling process is a \
             virtual machine's (never at start-up, which runs in the system process)"
        ),
        zero_row!(
            DXGKARG_QUERYADAPTERINFO.hKmdProcessHandle,
            false,
            KERNEL_BY,
            "written zero with the flags: the question belongs to no process"
        ),
    ],
};

const UMD_BY: &str = "K:DxgkQueryAdapterInfoImpl @0x140383210";

/// `DxgkDdiQueryAdapterInfo` with DXGKQAITYPE_UMDRIVERPRIVATE, for a process's
/// D3DKMTQueryAdapterInfo of KMTQAITYPE_UMDRIVERPRIVATE: `UMD_BY` rejects a null buffer or a
/// zero size, allocates a kernel copy of the caller's size rounded up to 8 bytes and zeroed
/// (nothing of the caller's buffer is copied in), zeroes the block's first 24 bytes, and
/// copies the answer back out when the driver succeeds.
pub const QUERY_ADAPTER_INFO_UMD: Ddi<DXGKARG_QUERYADAPTERINFO> = Ddi {
    name: "DxgkDdiQueryAdapterInfo(UMDRIVERPRIVATE)",
    block: "DXGKARG_QUERYADAPTERINFO",
    rows: &[
        zero_row!(
            DXGKARG_QUERYADAPTERINFO.pInputData,
            true,
            UMD_BY,
            "zeroed with the block's first 24 bytes: the question has no input"
        ),
        zero_row!(
            DXGKARG_QUERYADAPTERINFO.InputDataSize,
            true,
            UMD_BY,
            "zeroed with the block's first 24 bytes"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.pOutputData,
            true,
            UMD_BY,
            "the zeroed kernel copy"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.OutputDataSize,
            true,
            UMD_BY,
            "the size the process passed, unrounded"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.Flags,
            false,
            UMD_BY,
            "for a virtual machine's process VirtualMachineData and, from the machine's \
             settings, bit 1; else zero, and K:DXGADAPTER::DdiQueryAdapterInfo @0x14035DC70 \
             sets VirtualMachineData for a process it counts as a virtual machine's"
        ),
        filled_row!(
            DXGKARG_QUERYADAPTERINFO.hKmdProcessHandle,
            false,
            UMD_BY,
            "the driver's handle of the calling process on the render adapter \
             (DxgkDdiCreateProcess), read under the adapter's process-list lock; null when \
             the process has none there"
        ),
    ],
};

const CLOCK_BY: &str = "K:ADAPTER_RENDER::PerformClockCalibration @0x140013EBC";

/// A row of the packed clock block that 24H2 hands zeroed (`zero_row!` takes a reference to
/// the field, which a packed block does not allow).
const fn clock_zero(
    field: &'static str,
    is_zero: fn(&DXGK_GPUCLOCKDATA) -> bool,
) -> Row<DXGK_GPUCLOCKDATA> {
    Row {
        field,
        kmd_reads: false,
        fill: Fill::Zero {
            by: CLOCK_BY,
            why: "an answer: the block is zeroed on the caller's stack (the calibration timer \
                  DPC, for every node of every physical adapter); a process's query \
                  (K:DxgkQueryClockCalibrationInternal @0x14036C8A8) zeroes its copy likewise",
        },
        is_zero: Some(is_zero),
    }
}

/// `DxgkDdiCalibrateGpuClock`: K:ADAPTER_RENDER::DdiCalibrateGpuClock @0x140015728 passes the
/// node, the physical adapter as the engine, and the block, which holds only the driver's
/// answer. A failure is only logged.
pub const CALIBRATE_GPU_CLOCK: Ddi<DXGK_GPUCLOCKDATA> = Ddi {
    name: "DxgkDdiCalibrateGpuClock",
    block: "DXGK_GPUCLOCKDATA",
    rows: &[
        clock_zero("GpuFrequency", |b| {
            let v = b.GpuFrequency;
            v == 0
        }),
        clock_zero("GpuClockCounter", |b| {
            let v = b.GpuClockCounter;
            v == 0
        }),
        clock_zero("CpuClockCounter", |b| {
            let v = b.CpuClockCounter;
            v == 0
        }),
        clock_zero("Flags", |b| {
            let v = b.Flags;
            v.Value == 0
        }),
    ],
};
