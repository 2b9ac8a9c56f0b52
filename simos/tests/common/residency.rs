//! Allocations only the GPU touches, and reading them back through the GPU: shared by the
//! residency and MDL paging tests.

use rvgpu_hw::cmd::Command;
use rvgpu_hw::pdd::{AllocationKind, AllocationPdd, ALLOCATION_PDD_VERSION, PDD_MAGIC};
use rvgpu_simos::kmt::SimKmt;
use rvgpu_simos::vidmm::residency::Place;
use rvgpu_simos::Machine;
use rvgpu_umd::kmt::{AllocationCpu, Kmt, MakeResidentFlags, MappedGpu};
use rvgpu_umd::submit::UserQueue;

use super::okk;

/// A GPU-only allocation (VRAM when there is room), created and made resident.
pub fn gpu_only(m: &Machine, k: &SimKmt<'_>, size: u64) -> MappedGpu {
    let a = created(m, k, size);
    make_resident(m, k, &a);
    a
}

/// [`gpu_only`] allocations of `size` until VRAM is full: every one returned is in VRAM; the
/// first that did not fit is destroyed again.
pub fn fill_vram(m: &Machine, k: &SimKmt<'_>, size: u64) -> Vec<MappedGpu> {
    let mut held = Vec::new();
    loop {
        let a = gpu_only(m, k, size);
        if !matches!(place(m, &a), Place::Local { .. }) {
            okk(m, k.destroy_allocation(a.handle));
            return held;
        }
        held.push(a);
        assert!(held.len() < 64, "VRAM never fills");
    }
}

/// `D3DKMTMakeResident` of `a` alone, which must succeed.
pub fn make_resident(m: &Machine, k: &SimKmt<'_>, a: &MappedGpu) {
    okk(
        m,
        k.make_resident(&[a.handle], MakeResidentFlags::default()),
    );
}

/// A GPU-only allocation, created (`D3DKMTCreateAllocation2`) and given its GPU VA as the UMD
/// gets it (`rvgpu_umd::kmt::map_new_allocation`: mapped on the device's paging queue under
/// 24H2, whose create gives none), the paging fence waited for: on no residency list.
pub fn created(m: &Machine, k: &SimKmt<'_>, size: u64) -> MappedGpu {
    let pdd = AllocationPdd {
        magic: PDD_MAGIC,
        version: ALLOCATION_PDD_VERSION,
        size,
        kind: AllocationKind::Buffer as u32,
        flags: 0,
        reserved: 0,
    };
    let mut a = okk(m, k.create_allocation_pdd(&pdd));
    let (va, paging) = okk(m, rvgpu_umd::kmt::map_new_allocation(k, &a, &pdd));
    okk(m, rvgpu_umd::kmt::wait_paging(k, paging));
    a.gpu_va = va;
    a
}

/// Where VidMm has placed `a`.
pub fn place(m: &Machine, a: &MappedGpu) -> Place {
    m.allocation_residency(0, a.handle).expect("tracked").0
}

/// What `a` holds, copied by the GPU into memory the CPU maps.
pub fn gpu_read(
    m: &Machine,
    k: &SimKmt<'_>,
    q: &mut UserQueue<&SimKmt<'_>>,
    a: &MappedGpu,
) -> Vec<u64> {
    let dst = okk(m, k.create_allocation(a.size));
    let v = okk(
        m,
        q.submit(&[Command::Copy {
            src: a.gpu_va,
            dst: dst.gpu_va,
            bytes: a.size,
        }]),
    );
    okk(m, q.wait(v));
    let words = (0..a.size / 8).map(|i| dst.mem.load(i * 8)).collect();
    okk(m, k.destroy_allocation(dst.handle));
    words
}
