//! FILLs of a process's GPU VA range through the driver's paging buffers: segment memory
//! directly, system memory through a range VidMm maps in the aperture for the purpose (the
//! rules: `Machine::page_in`). Above [`crate::vidmm::paging`], [`crate::vidmm::mmu`] and
//! [`crate::vidmm::aperture`], which it combines.

use rvgpu_ddi::basic::*;
use rvgpu_ddi::tdr::*;

use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::process_id::ProcessId;
use crate::ob::KmtHandle;
use crate::vidmm::host::Host;
use crate::vidmm::paging::paging_op;

const PAGE: u64 = rvgpu_hw::PAGE_SIZE;

/// VidMm pages in `bytes` at `gpu_va` of an allocation of process `pid` (for `device`) with FILLs on the
/// system context of `node` (the rules: `Machine::page_in`). Returns the fence IDs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn page_in(
    host: &dyn Host,
    a: &AdapterShared,
    pid: ProcessId,
    device: KmtHandle,
    node: u32,
    gpu_va: u64,
    bytes: u64,
    pattern: u32,
) -> Result<Vec<u32>, SimError> {
    let mut ids = Vec::new();
    for (segment, addr, len) in crate::vidmm::mmu::vidmm_runs(a, pid, gpu_va, bytes)? {
        if segment != 0 {
            ids.extend(page_fill(
                host, a, node, device, segment, addr, len, pattern,
            )?);
            continue;
        }
        let first = addr - addr % PAGE;
        let pages: Vec<u64> = (first..addr + len).step_by(PAGE as usize).collect();
        let range = crate::vidmm::aperture::aperture_map(host, a, &pages, 0, 0, vec![device])?;
        let filled = page_fill(
            host,
            a,
            node,
            device,
            range.segment,
            range.offset + (addr - first),
            len,
            pattern,
        );
        let unmapped = crate::vidmm::aperture::aperture_unmap(host, a, range, 0, 0, vec![device]);
        ids.extend(filled?);
        unmapped?;
    }
    Ok(ids)
}

/// One FILL of `len` bytes at `addr` of `segment`.
#[allow(clippy::too_many_arguments)]
fn page_fill(
    host: &dyn Host,
    a: &AdapterShared,
    node: u32,
    device: KmtHandle,
    segment: u32,
    addr: u64,
    len: u64,
    pattern: u32,
) -> Result<Vec<u32>, SimError> {
    let mut op = DXGKARG_BUILDPAGINGBUFFER_0 {
        Fill: DXGKARG_BUILDPAGINGBUFFER_Fill {
            // The fill names no allocation of the OS's (the audit's row allows null).
            hAllocation: std::ptr::null_mut(),
            FillSize: len as SIZE_T,
            FillPattern: pattern,
            Destination: DXGKARG_BUILDPAGINGBUFFER_Fill_Destination {
                SegmentId: segment,
                SegmentAddress: LARGE_INTEGER {
                    QuadPart: addr as i64,
                },
            },
        },
    };
    paging_op(host, a, node, DXGK_OPERATION_FILL, &mut op, vec![device])
}
