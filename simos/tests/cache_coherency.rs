//! AL-06: on a platform whose GPU does not snoop CPU caches (some ARM64 systems) the UMD must
//! call `D3DKMTInvalidateCache` after a CPU write before the GPU reads, and after a GPU write
//! before the CPU reads. These tests build such a platform (a device without
//! `CAPS.IO_COHERENT`, an ARM64 OS, a write-back CPU cache over cached CPU views) and show the
//! stale data a skipped invalidation leaves, and the fresh data after it; plus the start-up
//! side (what the KMD reports, BR-50 on x64) and the thunk's checks.

mod common;

use common::*;

use rvgpu_ddi::adapter::DXGK_PRESENTATIONCAPS;
use rvgpu_ddi::memory::{DXGK_GPUMMUCAPS_FLAGS, DXGK_SEGMENTFLAGS};
use rvgpu_ddi::ntstatus::STATUS_INVALID_PARAMETER;
use rvgpu_hw::cmd::Command;
use rvgpu_simos::kmt::{SimKmt, SimMem};
use rvgpu_simos::{CpuArch, Machine, MachineConfig, Mode, SimError};
use rvgpu_umd::kmt::{Allocation, AllocationCpu, Kmt, NtStatus};
use rvgpu_umd::submit::{KernelQueue, UserQueue};

const OLD: u64 = 0x01d0_01d0_01d0_01d0;
const NEW: u64 = 0x0ce1_0ce1_0ce1_0ce1;

/// The aperture segment's flags as VidMm learnt them from the KMD.
fn aperture_flags(m: &Machine) -> DXGK_SEGMENTFLAGS {
    let model = m.memory_model(0).expect("adapter 0");
    let aperture = model
        .segments
        .iter()
        .find(|s| s.Flags.is_set(DXGK_SEGMENTFLAGS::Aperture))
        .expect("an aperture segment");
    aperture.Flags
}

fn copy(src: &Allocation<SimMem>, dst: &Allocation<SimMem>, bytes: u64) -> Command {
    Command::Copy {
        src: src.gpu_va,
        dst: dst.gpu_va,
        bytes,
    }
}

fn fill_all(t: &Allocation<SimMem>, bytes: u64, pattern: u64) -> Command {
    Command::Fill {
        dst: t.gpu_va,
        bytes,
        pattern,
    }
}

/// AL-06 (a): a device without I/O coherency starts on ARM64, and the KMD says so everywhere
/// the OS looks: no `CacheCoherent` on the aperture or in GPUMMUCAPS,
/// `NoCacheCoherentApertureMemory` in DRIVERCAPS; the thunk reports it.
#[test]
fn al_06_non_coherent_adapter_starts_on_arm64_and_reports_no_coherency() {
    let mut m = Machine::new(MachineConfig::arm64_non_coherent(Mode::Step));
    m.load_driver().expect("load");
    let info = m
        .start_adapter(0)
        .expect("an ARM64 OS starts a non-coherent adapter");
    assert!(info
        .caps
        .PresentationCaps
        .is_set(DXGK_PRESENTATIONCAPS::NoCacheCoherentApertureMemory));
    assert!(!aperture_flags(&m).is_set(DXGK_SEGMENTFLAGS::CacheCoherent));
    let (mmu, _) = m
        .memory_model(0)
        .and_then(|mm| mm.gpummu)
        .expect("GpuMmu caps");
    assert!(!mmu
        .Flags
        .is_set(DXGK_GPUMMUCAPS_FLAGS::CacheCoherentMemorySupported));
    let p = ok(&m, m.create_process(0));
    assert!(!m.kmt(&p).io_coherent());
    exits_clean(&m, &p);
}

/// AL-06 (b): the same adapter on x64 is refused at start by BR-50 (Dxgkrnl does not accept
/// non-coherent aperture memory there).
#[test]
fn al_06_non_coherent_adapter_is_refused_on_x64_by_br_50() {
    let mut cfg = MachineConfig::arm64_non_coherent(Mode::Step);
    cfg.os.cpu_arch = CpuArch::X64;
    let mut m = Machine::new(cfg);
    m.load_driver().expect("load");
    match m.start_adapter(0) {
        Err(SimError::StartRefused { rule, status, .. }) => {
            assert_eq!((rule, status), ("BR-50", STATUS_INVALID_PARAMETER));
        }
        other => panic!("expected BR-50, got {other:?}"),
    }
}

/// AL-06 (c): a CPU write to a cached buffer stays in the CPU cache: a GPU COPY (user-mode
/// queue) from it copies the old contents; after `invalidate_cache` it copies the new ones.
#[test]
fn al_06_cpu_write_is_invisible_to_the_gpu_until_invalidated() {
    let m = started(MachineConfig::arm64_non_coherent(Mode::Step));
    let (p, k) = user_process(&m);
    let src = okk(&m, k.create_cached_allocation(4096));
    let dst = okk(&m, k.create_allocation(4096));
    assert!(
        src.mem.cache().is_some(),
        "cached view on a non-coherent adapter"
    );
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    // Memory holds OLD before the CPU touches the buffer.
    submit_wait(&m, &mut q, &[fill_all(&src, 64, OLD)]);

    for i in 0..8 {
        src.mem.store(8 * i, NEW);
    }
    submit_wait(&m, &mut q, &[copy(&src, &dst, 64)]);
    for i in 0..8 {
        assert_eq!(
            dst.mem.load(8 * i),
            OLD,
            "word {i}: the GPU read memory, not the cache"
        );
    }

    okk(&m, k.invalidate_cache(src.handle, 0, 64));
    submit_wait(&m, &mut q, &[copy(&src, &dst, 64)]);
    for i in 0..8 {
        assert_eq!(dst.mem.load(8 * i), NEW, "word {i}: written back");
    }
    okk(&m, q.close());
    exits_clean(&m, &p);
}

/// AL-06 (d): the CPU read a buffer (its lines are cached); a GPU FILL (kernel-mode queue)
/// then changes it: the CPU still loads the old data until it invalidates the range.
#[test]
fn al_06_gpu_write_is_invisible_to_the_cpu_until_invalidated() {
    let m = started(MachineConfig::arm64_non_coherent(Mode::Step));
    let (p, k) = user_process(&m);
    let buf = okk(&m, k.create_cached_allocation(4096));
    let mut q = okk(&m, KernelQueue::new(k, &config(0)));
    submit_wait(&m, &mut q, &[fill_all(&buf, 128, OLD)]);
    // The CPU reads the first line: it is now cached.
    assert_eq!(buf.mem.load(0), OLD);

    submit_wait(&m, &mut q, &[fill_all(&buf, 128, NEW)]);
    assert_eq!(buf.mem.load(0), OLD, "stale line: the GPU does not snoop");
    assert_eq!(buf.mem.load(8), OLD, "the whole line is stale");
    // A line the CPU had not read is filled now, from memory.
    assert_eq!(buf.mem.load(64), NEW);

    okk(&m, k.invalidate_cache(buf.handle, 0, 64));
    assert_eq!(buf.mem.load(0), NEW);
    assert_eq!(buf.mem.load(8), NEW);
    okk(&m, q.close());
    exits_clean(&m, &p);
}

/// AL-06 (e): on the default (I/O-coherent, x64) machine nothing is cached: the aperture is
/// coherent, no cached view has a cache, the GPU sees a CPU write at once, and
/// `invalidate_cache` succeeds doing nothing.
#[test]
fn al_06_coherent_adapter_has_no_cache_and_invalidate_is_a_no_op() {
    let m = started(MachineConfig::single(Mode::Step));
    assert!(aperture_flags(&m).is_set(DXGK_SEGMENTFLAGS::CacheCoherent));
    let (p, k) = user_process(&m);
    assert!(k.io_coherent());
    let src = okk(&m, k.create_cached_allocation(4096));
    let dst = okk(&m, k.create_allocation(4096));
    assert!(src.mem.cache().is_none());
    assert!(dst.mem.cache().is_none());
    src.mem.store(0, NEW);
    let mut q = okk(&m, UserQueue::new(k, &config(0)));
    submit_wait(&m, &mut q, &[copy(&src, &dst, 8)]);
    assert_eq!(dst.mem.load(0), NEW);
    okk(&m, k.invalidate_cache(src.handle, 0, src.size));
    assert_eq!(src.mem.load(0), NEW);
    okk(&m, q.close());
    exits_clean(&m, &p);
}

/// AL-06 (f): `invalidate_cache` takes only the caller's allocations and only ranges inside
/// them, overflow included; Dxgkrnl answers both with `STATUS_INVALID_PARAMETER`
/// (DxgkInvalidateCache, VIDMM_GLOBAL::InvalidateCache). Length 0 means the whole allocation.
#[test]
fn al_06_invalidate_cache_checks_handle_and_range() {
    let m = started(MachineConfig::arm64_non_coherent(Mode::Step));
    let p = ok(&m, m.create_process(0));
    let other = ok(&m, m.create_process(0));
    let k: SimKmt<'_> = m.kmt(&p);
    let buf = okk(&m, k.create_cached_allocation(4096));
    let theirs = okk(&m, m.kmt(&other).create_cached_allocation(4096));
    let handle = Err(NtStatus(STATUS_INVALID_PARAMETER));
    let param = Err(NtStatus(STATUS_INVALID_PARAMETER));

    assert_eq!(k.invalidate_cache(0xdead, 0, 8), handle);
    assert_eq!(k.invalidate_cache(theirs.handle, 0, 8), handle);
    assert_eq!(k.invalidate_cache(buf.handle, 0, buf.size + 1), param);
    assert_eq!(k.invalidate_cache(buf.handle, buf.size, 1), param);
    assert_eq!(k.invalidate_cache(buf.handle, 8, u64::MAX), param);
    assert_eq!(k.invalidate_cache(buf.handle, u64::MAX, 2), param);
    // The edges are fine, an empty range too.
    assert_eq!(k.invalidate_cache(buf.handle, 0, buf.size), Ok(()));
    assert_eq!(
        k.invalidate_cache(buf.handle, buf.size, 0),
        param,
        "offset at the end"
    );
    assert_eq!(k.invalidate_cache(buf.handle, 8, 0), Ok(()), "to the end");
    // A destroyed allocation is no longer the caller's.
    okk(&m, k.destroy_allocation(buf.handle));
    assert_eq!(k.invalidate_cache(buf.handle, 0, 8), handle);
    ok(&m, m.exit_process(&other));
    exits_clean(&m, &p);
}

/// AL-06 through the UMD: a cached `Buffer` on the non-coherent platform. The UMD writes back
/// after the CPU's write (at unlock) and invalidates before the CPU reads what the GPU wrote
/// (at the next lock), so both directions come out right; the tests above show what the same
/// accesses read without those two steps.
#[test]
fn al_06_umd_buffer_maintains_the_caches() {
    use rvgpu_hw::pdd::ALLOCATION_CPU_CACHED;
    use rvgpu_umd::usage::{self, Batch, Buffer, LockFlags};
    let m = started(MachineConfig::arm64_non_coherent(Mode::Step));
    let p = ok(&m, m.create_process(0));
    let k: SimKmt<'_> = m.kmt(&p);
    assert!(!k.io_coherent());
    let mut q = okk(&m, UserQueue::new(&k, &config(0)));
    let src = okk(&m, Buffer::new(&k, 4096, ALLOCATION_CPU_CACHED));
    let dst = okk(&m, Buffer::new(&k, 4096, ALLOCATION_CPU_CACHED));
    // The CPU reads dst first: its lines are now cached (stale once the GPU writes).
    let mem = okk(&m, dst.lock(&k, LockFlags::READ, &[&q]));
    assert_eq!(mem.load(0), 0);
    okk(&m, dst.unlock(&k));
    let mem = okk(&m, src.lock(&k, LockFlags::WRITE, &[&q]));
    for i in 0..512 {
        mem.store(i * 8, NEW);
    }
    okk(&m, src.unlock(&k));
    let mut batch = Batch::new();
    okk(&m, batch.copy(&src, 0, &dst, 0, 4096));
    okk(&m, usage::submit(&mut q, batch));
    let mem = okk(&m, dst.lock(&k, LockFlags::READ, &[&q]));
    for i in 0..512 {
        assert_eq!(mem.load(i * 8), NEW, "word {i}");
    }
    okk(&m, dst.unlock(&k));
    okk(&m, src.destroy(&k, &[&q]));
    okk(&m, dst.destroy(&k, &[&q]));
    okk(&m, q.close());
    exits_clean(&m, &p);
}
