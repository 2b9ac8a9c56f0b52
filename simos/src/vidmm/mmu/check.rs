//! The oracle that holds the driver to VidMm's books: after a page-table change completes,
//! every page it touched is walked with the device's own walker and compared with what VidMm
//! asked for (the module docs of `mmu`, "Strictness").

use rvgpu_device::device::mmu::Mmu;
use rvgpu_hw::mmu::FaultReason;

use super::{segment_pa, sim};
use crate::adapter::AdapterShared;
use crate::base::error::SimError;
use crate::base::lock::lock;
use crate::base::process_id::ProcessId;

/// The oracle: every page of `[va, va + pages * 4 KiB)` translates as VidMm asked (or
/// faults when unmapped), walked with the device's walker from the process's root. Where
/// VidMm mapped a large page and the walk ends in a large page at the same place, one walk
/// answers for all of it (both map it linearly); so does a walk that stops at an invalid
/// entry above the leaves where VidMm maps nothing under that entry.
pub(super) fn vidmm_check(
    a: &AdapterShared,
    pid: ProcessId,
    va: u64,
    pages: u64,
) -> Result<(), SimError> {
    let v = lock(&a.mm.vidmm);
    let Some(p) = v.processes.get(&pid) else {
        return Ok(());
    };
    let root = segment_pa(a, p.space.geometry.segment, p.space.root)
        .ok_or_else(|| sim("root outside its segment".into()))?;
    let mem = a.device.memory();
    let end = va + pages * 4096;
    let mut page = va;
    while page < end {
        let walked = Mmu::walk_now(mem, root, rvgpu_hw::addr::GpuVa::new(page));
        let got = walked.map(|(pa, _)| pa.get());
        let want = p.space.leaf(rvgpu_hw::addr::GpuVa::new(page));
        let ok = match (want, got) {
            (None, Err(_)) => true,
            (Some(l), Ok(pa)) => {
                let expect = if l.phys.0 == 0 {
                    Some(l.phys.1)
                } else if v.aperture.is_aperture(l.phys.0) {
                    // An aperture page: the bus page VidMm had the driver map there.
                    v.aperture.bus_of(l.phys.0, l.phys.1)
                } else {
                    segment_pa(a, l.phys.0, l.phys.1)
                };
                Some(pa) == expect
            }
            _ => false,
        };
        if !ok {
            let msg = format!(
                "driver bug: after UPDATEPAGETABLE, process {} VA {page:#x} translates to \
                 {got:?}; VidMm mapped {want:?}",
                pid.0
            );
            a.state.raise_sim_error(msg.clone());
            return Err(sim(msg));
        }
        page = match (walked, p.space.large_at(rvgpu_hw::addr::GpuVa::new(page))) {
            (Ok((_, size)), Some(first))
                if size == p.space.geometry.large_page() && first == page =>
            {
                (page + size).min(end)
            }
            // An invalid entry above the leaves: the device faults on all it covers, so
            // when VidMm maps none of that either, one walk answers for it.
            (Err(f), None) if f.reason == FaultReason::NotPresent && f.level >= 1 => {
                let bits = p.space.geometry.index_bits * u32::from(f.level);
                let span = 4096u64.checked_shl(bits).unwrap_or(u64::MAX);
                let next = (page - page % span).saturating_add(span).min(end);
                if p.space.any_mapped(
                    rvgpu_hw::addr::GpuVa::new(page),
                    rvgpu_hw::addr::GpuVa::new(next),
                ) {
                    page + 4096
                } else {
                    next
                }
            }
            _ => page + 4096,
        };
    }
    Ok(())
}
