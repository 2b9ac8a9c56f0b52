//! The native-fence DDIs (NF-01 … NF-18): their logic, over the fence table, the ISR's
//! registry and the handle map (the module docs of [`super`] say where the values live).

use core::sync::atomic::{fence, Ordering};
use rvgpu_hw::addr::GpuVa;

use rvgpu_ddi::feature::DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1;
use rvgpu_ddi::fence::{
    DXGKARG_CLOSENATIVEFENCE, DXGKARG_CREATENATIVEFENCE, DXGKARG_DESTROYNATIVEFENCE,
    DXGKARG_OPENNATIVEFENCE, DXGKARG_UPDATECURRENTVALUESFROMCPU, DXGKARG_UPDATEMONITOREDVALUES,
    DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS,
};
use rvgpu_ddi::HANDLE;
use rvgpu_hw::pdd::{NativeFencePdd, NATIVE_FENCE_PDD_VERSION, PDD_MAGIC};
use rvgpu_hw::regs;
use zerocopy::IntoBytes;

use super::handles::{FenceLocation, GrowError, MapError};
use super::registry::{IsrFence, Registry, RegistryError};
use super::table::{Fence, TableError};
use crate::adapter::{Adapter, Live};
use crate::dma::OsWords;
use crate::globals::{ADAPTERS, MAX_ADAPTERS};
use crate::platform::{Irql, Platform};
use crate::status::{self, Status};

use super::{registry, storage, MAX_FENCES_PER_UPDATE};

fn table_status(e: TableError) -> Status {
    match e {
        TableError::Exists => status::INVALID_PARAMETER,
        TableError::Unknown => status::INVALID_HANDLE,
        TableError::StillOpen => status::INVALID_DEVICE_STATE,
        // DxgkDdiCreateNativeFence / OpenNativeFence could not allocate, or the opener holds
        // its share of opens (crate::quota::FENCE_OPENS): the status of the adapter's
        // other shares.
        TableError::NoMemory | TableError::AtShare => status::NO_MEMORY,
    }
}

fn started<P: Platform>(a: &Adapter<P>) -> Result<&Live<P>, Status> {
    let live = a.started()?;
    // The OS calls the native-fence DDIs only when it enabled the feature (NF-10).
    if live.features.native_fence.is_none() {
        return Err(status::INVALID_DEVICE_STATE);
    }
    Ok(live)
}

/// DxgkDdiCreateNativeFence (PASSIVE).
pub fn create<P: Platform>(
    a: &Adapter<P>,
    args: &mut DXGKARG_CREATENATIVEFENCE,
) -> Result<(), Status> {
    let live = started(a)?;
    let h = args.hGlobalNativeFence as usize;
    if h == 0 || args.Flags.Value != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let cv = GpuVa::new(args.CurrentValueSystemProcessGpuVa);
    let mv = GpuVa::new(args.MonitoredValueSystemProcessGpuVa);
    // NF-06/NF-16: the values must be where the fence's type allows (fence::storage).
    let optimized_default = live.features.native_fence.as_ref().is_some_and(|f| {
        f.os_caps
            .is_set(DXGKARGCB_FEATURE_NATIVEFENCE_CAPS_1::SupportOptimizedDefaultFenceType)
    });
    // `None`: the OS passed no addresses (24H2); both stay 0 and mean "unknown".
    storage::check(
        args.Type,
        cv,
        mv,
        live.identity.vram_size,
        optimized_default,
    )
    .map_err(|_| status::INVALID_PARAMETER)?;
    // The table lock serialises every writer of this adapter's fence state (the handle map
    // requires it); the registry changes under the interrupt lock inside it.
    let mut table = live.fences.lock();
    // Room in the table first: the steps below change ISR-visible state, and a
    // failure after them would have to undo it.
    table.try_reserve::<P>().map_err(table_status)?;
    // Room for the page records of storage the OS did not name (fence::pages), noted when
    // the OS maps it. Which process will map it no create argument says: a process's share
    // of the records is applied when they are noted, and its refusal reported at the
    // creator's open.
    if cv.is_null() {
        table
            .pages
            .try_reserve::<P>()
            .map_err(|_| status::NO_MEMORY)?;
    } else {
        // Room to keep a named MonitoredValue's page from user queues (below).
        table
            .pages
            .try_reserve_protect::<P>()
            .map_err(|_| status::NO_MEMORY)?;
    }
    // Room in the handle map (it grows here, before anything changed).
    if !a.fence_handles.has_room(h) && a.fence_handles.get(h).is_none() {
        a.fence_handles.try_grow::<P>(h).map_err(|e| match e {
            GrowError::NoMemory => status::NO_MEMORY,
            GrowError::AtLimit => status::INSUFFICIENT_RESOURCES,
        })?;
    }
    // The ISR must be able to name this fence before any GPU signal of it can interrupt.
    let tag = register(live, IsrFence { os_handle: h })?;
    let undo_tag = |live: &Live<P>| {
        let _ = live.synchronized(|isr| isr.fences.remove(tag));
    };
    if let Err(e) = a.fence_handles.insert(h, cv.get()) {
        undo_tag(live);
        return Err(match e {
            MapError::Duplicate | MapError::BadHandle => status::INVALID_PARAMETER,
            MapError::Full | MapError::AtLimit => status::INSUFFICIENT_RESOURCES,
        });
    }
    let fence = Fence {
        tag,
        current_gpu: cv,
        monitored_gpu: mv,
        words: None,
        guarded: None,
        fence_type: u8::try_from(args.Type).unwrap_or(u8::MAX),
        opens: 0,
        opened: false,
    };
    if let Err(e) = table.create::<P>(h, fence) {
        a.fence_handles.remove(h);
        undo_tag(live);
        return Err(table_status(e));
    }
    // NF-01: where the OS named MonitoredValue (a device address in the identity paging
    // process), its page is kept from user queues before any process maps it, so no leaf of
    // it is ever a user page; otherwise from the first open on (`open`).
    if !mv.is_null() && table.pages.protect(mv.get()).is_some() {
        if let Some(f) = table.get_mut(h) {
            f.guarded = Some(mv.get());
        }
    }
    drop(table);
    // Tell the UMD the report tag. Not the addresses: the ones above are the system
    // process's; each process gets its own from the OS (D3DDDI_NATIVEFENCEMAPPING).
    let pdd = NativeFencePdd {
        magic: PDD_MAGIC,
        version: NATIVE_FENCE_PDD_VERSION,
        report_tag: tag,
        reserved: [0; 6],
    };
    for (d, s) in args.pPrivateDriverData.iter_mut().zip(pdd.as_bytes()) {
        *d = *s;
    }
    Ok(())
}

/// Gives `fence` a tag in the ISR's registry: when every linked slot is in use, a
/// chunk is allocated here, outside the interrupt lock, and only linked in under it, so
/// nothing allocates at device IRQL. The caller holds the fence table's lock (one writer).
fn register<P: Platform>(live: &Live<P>, fence: IsrFence) -> Result<u64, Status> {
    match live.synchronized(|isr| isr.fences.insert(fence))? {
        Ok(tag) => return Ok(tag),
        Err(RegistryError::AtLimit) => return Err(status::INSUFFICIENT_RESOURCES),
        Err(RegistryError::Full) => {}
    }
    let chunk = Registry::try_chunk::<P>().map_err(Status::from)?;
    let linked = live.synchronized(|isr| match isr.fences.add_chunk(chunk) {
        Ok(()) => Ok(isr.fences.insert(fence)),
        // Handed back: freed below, outside the interrupt lock.
        Err(c) => Err(c),
    })?;
    match linked {
        Ok(Ok(tag)) => Ok(tag),
        Ok(Err(_)) | Err(_) => Err(status::INSUFFICIENT_RESOURCES),
    }
}

/// DxgkDdiOpenNativeFence (PASSIVE). Only the fields both published layouts share are read
/// (docs/architecture.md, "Open's layout").
pub fn open<P: Platform>(a: &Adapter<P>, args: &DXGKARG_OPENNATIVEFENCE) -> Result<(), Status> {
    let live = started(a)?;
    let (g, l) = (
        args.hGlobalNativeFence as usize,
        args.hLocalNativeFence as usize,
    );
    if g == 0 || l == 0 || args.Flags.Value != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    // The opening device's process, for a fence whose storage the OS did not name (below).
    let process = device_process(a, live, args.hDevice);
    let mut table = live.fences.lock();
    let fence = *table.get(g).ok_or(status::INVALID_HANDLE)?;
    let words = match fence.words {
        Some(w) => Some(w),
        // 24H2: learn the physical words from this process's mappings, once per fence.
        None if fence.current_gpu.is_null() => {
            let process = process.ok_or(status::INVALID_PARAMETER)?;
            let cv = table
                .pages
                .resolve(process, GpuVa::new(args.CurrentValueGpuVa));
            let mv = table
                .pages
                .resolve(process, GpuVa::new(args.MonitoredValueGpuVa));
            match (cv, mv) {
                (Some(cv), Some(mv)) if cv != mv => Some((cv, mv)),
                // Not mapped where the OS says, or the record did not fit: the fence would
                // be unusable (no CPU signal, no CPU wait), so the open fails cleanly. Past
                // the process's share of the records (crate::quota) or the pool's end, that
                // is STATUS_NO_MEMORY, as for the adapter's other shares: the creator's open
                // failing makes the OS destroy the new fence.
                _ if table.pages.dropped_for_memory()
                    || !table.pages.grants(process, &live.quotas.fence_pages) =>
                {
                    return Err(status::NO_MEMORY)
                }
                _ => return Err(status::INVALID_PARAMETER),
            }
        }
        None => None,
    };
    // The process's share of the table (crate::quota): the last free fences go only to a
    // process holding few; the creator's open failing makes the OS destroy the new global, so
    // creation is refused too. STATUS_NO_MEMORY, as for queues and contexts.
    let free = (registry::MAX_FENCES as usize).saturating_sub(table.len());
    let owner = process.map(crate::handle::Handle::raw);
    let held = &*table;
    live.quotas
        .fences
        .admit(free, owner.map(|p| move || held.opens_of_process(p)))?;
    // NF-01: from the first open on, MonitoredValue's page is kept from user-mode queues in
    // every process (fence::pages): the learnt word on 24H2, the system address (a device
    // address in the identity paging process) where the OS named it.
    let guard = match (fence.guarded, words) {
        (Some(_), _) => None,
        (None, Some((_, mv))) => Some(mv),
        (None, None) => (!fence.monitored_gpu.is_null()).then(|| fence.monitored_gpu.get()),
    };
    if guard.is_some() {
        table
            .pages
            .try_reserve_protect::<P>()
            .map_err(|_| status::NO_MEMORY)?;
    }
    // The CurrentValue page learnt here tells a later opener's mapping of it from a new
    // fence's (fence::pages): room for it before anything changes.
    let learnt = words.filter(|_| fence.words.is_none());
    if learnt.is_some() {
        table
            .pages
            .try_reserve_learn::<P>()
            .map_err(|_| status::NO_MEMORY)?;
    }
    table
        .open::<P>(
            g,
            l,
            args.hDevice as usize,
            owner.unwrap_or(0),
            args.CurrentValueGpuVa,
            &live.quotas.fence_opens,
        )
        .map_err(table_status)?;
    if let Some(w) = learnt {
        if let Some(f) = table.get_mut(g) {
            f.words = Some(w);
            a.fence_handles.set_words(g, w.0, w.1);
            table.pages.learn(w.0);
        }
    }
    let mut stripped = 0;
    if let Some(mv) = guard {
        if let Some(fresh) = table.pages.protect(mv) {
            if let Some(f) = table.get_mut(g) {
                f.guarded = Some(mv);
            }
            if fresh {
                // The leaves VidMm wrote before this open (the opener's own mapping, made
                // just before it: K:DXGDEVICESYNCOBJECT::Initialize @0x1401F5EEC).
                stripped = table.pages.strip_user(mv, |pte, entry| {
                    crate::pagetable::store_entry(live, pte, entry)
                });
            }
        }
    }
    drop(table);
    if stripped != 0 {
        // No translation of the old leaves may be used after this (hardware.md 12.5); which
        // roots cache them the records do not say, so every root's.
        live.regs.write(regs::TlbInvalidate::new(0));
    }
    Ok(())
}

/// The report tag of the native fence device `h_device` opened with CurrentValue at
/// `current_gpu` in its process (`crate::escape`, NF-14): 24H2 returns no private data from an
/// open by NT handle, so the opener asks here. Only the calling device's own opens answer: a
/// VA another process mapped, a fence it closed or one it never opened is
/// STATUS_INVALID_PARAMETER.
pub fn tag_of_open<P: Platform>(
    a: &Adapter<P>,
    h_device: HANDLE,
    current_gpu: u64,
) -> Result<u64, Status> {
    let live = started(a)?;
    if h_device.is_null() || current_gpu == 0 {
        return Err(status::INVALID_PARAMETER);
    }
    live.fences
        .lock()
        .tag_of_open(h_device as usize, current_gpu)
        .ok_or(status::INVALID_PARAMETER)
}

/// The wait board of the native fence device `h_device` holds open with CurrentValue at
/// `current_gpu` in its process ([`super::table::FenceTable::board`]): `publish` replaces that
/// open's slot, the answer covers the fence's other opens. STATUS_INVALID_PARAMETER if the
/// device holds no open there.
pub fn board<P: Platform>(
    a: &Adapter<P>,
    h_device: HANDLE,
    current_gpu: u64,
    publish: Option<super::table::BoardSlot>,
    (from, to): (u64, u64),
) -> Result<super::table::BoardAnswer, Status> {
    let live = started(a)?;
    if h_device.is_null() || current_gpu == 0 {
        return Err(status::INVALID_PARAMETER);
    }
    live.fences
        .lock()
        .board::<P>(h_device as usize, current_gpu, publish, from, to)
        .map_err(|e| match e {
            TableError::NoMemory => status::NO_MEMORY,
            _ => status::INVALID_PARAMETER,
        })
}

/// The driver process of device `h_device` on this adapter, if it names one.
fn device_process<P: Platform>(
    a: &Adapter<P>,
    live: &Live<P>,
    h_device: HANDLE,
) -> Option<crate::handle::Handle> {
    let h = crate::handle::Handle::decode_on(h_device, crate::handle::Kind::Device, a.table_slot())
        .ok()?;
    live.sched.lock().devices.get(&h).and_then(|d| d.process)
}

/// DxgkDdiCloseNativeFence (PASSIVE).
pub fn close<P: Platform>(a: &Adapter<P>, args: &DXGKARG_CLOSENATIVEFENCE) -> Result<(), Status> {
    let live = started(a)?;
    let l = args.hLocalNativeFence as usize;
    if l == 0 || args.Flags.Value != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    live.fences
        .lock()
        .close(l)
        .map(|_| ())
        .map_err(table_status)
}

/// Finds the adapter (slot, tag) that owns OS fence handle `h`.
fn locate<P: Platform>(h: usize) -> Option<FenceLocation> {
    (0..MAX_ADAPTERS).find_map(|i| {
        let slot = u8::try_from(i).ok()?;
        let current_gpu = ADAPTERS
            .with(slot, |a: &Adapter<P>| a.fence_handles.get(h))
            .flatten()
            .map(GpuVa::new)?;
        Some(FenceLocation {
            adapter: slot,
            current_gpu,
        })
    })
}

/// The adapter of fence `h` and its physical (CurrentValue, MonitoredValue) words, if learnt:
/// one lookup per adapter, where [`locate`] then [`words`] would look the handle up twice.
fn locate_words<P: Platform>(h: usize) -> Option<(u8, (u64, u64))> {
    (0..MAX_ADAPTERS).find_map(|i| {
        let slot = u8::try_from(i).ok()?;
        Some((slot, words::<P>(slot, h)?))
    })
}

/// The physical (CurrentValue, MonitoredValue) words of fence `h` on adapter `slot`, if learnt
/// (`pages`): only the update DDIs called without CPU addresses need them.
fn words<P: Platform>(slot: u8, h: usize) -> Option<(u64, u64)> {
    ADAPTERS
        .with(slot, |a: &Adapter<P>| a.fence_handles.words(h))
        .flatten()
}

/// DxgkDdiDestroyNativeFence (PASSIVE): no adapter handle, found through the handle maps.
pub fn destroy<P: Platform>(args: &DXGKARG_DESTROYNATIVEFENCE) -> Result<(), Status> {
    let h = args.hGlobalNativeFence as usize;
    if h == 0 || args.Flags.Value != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let loc = locate::<P>(h).ok_or(status::INVALID_HANDLE)?;
    ADAPTERS
        .with(loc.adapter, |a: &Adapter<P>| -> Result<(), Status> {
            let live = a.started()?;
            // Serialises with create (see there).
            let mut table = live.fences.lock();
            let fence = *table.get(h).ok_or(status::INVALID_HANDLE)?;
            if fence.opens != 0 {
                return Err(table_status(TableError::StillOpen));
            }
            // First the step that can fail: from here on the ISR can no longer name the
            // fence (NF-14: never a destroyed handle). The table's tag is the full one.
            let removed = live.synchronized(|isr| isr.fences.remove(fence.tag))?;
            if removed.is_none() {
                // The registry and the table disagree: keep the fence, report the fault.
                return Err(status::UNSUCCESSFUL);
            }
            table.destroy(h).map_err(table_status)?;
            if let Some(mv) = fence.guarded {
                table.pages.unprotect(mv);
            }
            if let Some((cv, _)) = fence.words {
                table.pages.unlearn(cv);
            }
            a.fence_handles.remove(h);
            Ok(())
        })
        .unwrap_or(Err(status::INVALID_HANDLE))
}

/// The three parallel arrays of an update DDI (handles, new values, kernel CPU addresses of
/// the values to store), resolved by the thunk. An array is `None` if the OS passed null, or if
/// the count is out of range (the DDI refuses that count before it looks at any array).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FenceArrays<'a> {
    handles: Option<&'a [HANDLE]>,
    updated: Option<&'a [u64]>,
    values_cpu: Option<OsWords<'a>>,
}

impl<'a> FenceArrays<'a> {
    /// The arrays of an update DDI.
    #[inline]
    pub(crate) fn new(
        handles: Option<&'a [HANDLE]>,
        updated: Option<&'a [u64]>,
        values_cpu: Option<OsWords<'a>>,
    ) -> Self {
        Self {
            handles,
            updated,
            values_cpu,
        }
    }

    fn handle(&self, i: u32) -> Option<HANDLE> {
        self.handles?.get(usize::try_from(i).ok()?).copied()
    }

    fn updated(&self, i: u32) -> Option<u64> {
        self.updated?.get(usize::try_from(i).ok()?).copied()
    }

    /// Whether the value address `i` is present and usable (non-null, 8-byte aligned).
    fn value_cpu_valid(&self, i: u32) -> bool {
        self.values_cpu.is_some_and(|w| w.valid(i))
    }

    /// Stores `v` at the value address `i`; false if there is none or it is unusable.
    fn store_cpu(&self, i: u32, v: u64, order: Ordering) -> bool {
        self.values_cpu.is_some_and(|w| w.store(i, v, order))
    }
}

/// DxgkDdiUpdateMonitoredValues (device IRQL, synchronised with the ISR): NF-07.
///
/// Order: every new MonitoredValue is stored; a full barrier; then FENCE_SYNC on each adapter
/// involved, which returns only when every fence-signal decision that began before it is
/// finished. So when this returns, any CurrentValue the OS reads was either written by a
/// signal that decided against the new MonitoredValue, or is visible to the OS's resample:
/// no wake-up is lost (NF-09, modelled in tests/models).
pub(crate) fn update_monitored<P: Platform>(
    args: &DXGKARG_UPDATEMONITOREDVALUES,
    arrays: &FenceArrays<'_>,
) -> Result<(), Status> {
    let n = args.NumFences;
    if n == 0 || n > MAX_FENCES_PER_UPDATE || args.Flags.Value != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    // Validate everything before changing anything. No CPU address array: the OS stored
    // the values itself (24H2, module doc); only the barrier and the sync are ours.
    let stores = arrays.values_cpu.is_some();
    let mut adapters: u32 = 0;
    for i in 0..n {
        let loc = arrays
            .handle(i)
            .and_then(|h| locate::<P>(h as usize))
            .ok_or(status::INVALID_HANDLE)?;
        if stores {
            if !arrays.value_cpu_valid(i) {
                return Err(status::INVALID_PARAMETER);
            }
            arrays.updated(i).ok_or(status::INVALID_PARAMETER)?;
        }
        adapters |= 1u32.checked_shl(u32::from(loc.adapter)).unwrap_or(0);
    }
    for i in 0..n {
        let Some(v) = arrays.updated(i) else {
            continue;
        };
        crate::etw::events::emit::<P, 2>(&crate::etw::events::NATIVE_FENCE_WAIT, || {
            [arrays.handle(i).map_or(0, |h| h as u64), v]
        });
        if stores {
            // Validated above: a 64-bit location the OS owns and told us to update (its
            // MonitoredValue storage is ours to write here).
            arrays.store_cpu(i, v, Ordering::Relaxed);
            if let Some(loc) = arrays.handle(i).and_then(|h| locate::<P>(h as usize)) {
                journal_monitored::<P>(loc.adapter, v);
            }
        } else if let Some(h) = arrays.handle(i) {
            // 24H2: no CPU address; the device stores the word (hardware.md 8.3). A fence
            // never opened has no known word, and no waiter either.
            if let Some((slot, (_, mv))) = locate_words::<P>(h as usize) {
                // The journal under the same adapter lookup as the store: this is the path
                // 24H2 calls for every waiter it arms.
                fence_store::<P>(slot, mv, v, |live| note_monitored(live, v))?;
            }
        }
    }
    fence(Ordering::SeqCst);
    sync_adapters::<P>(adapters, |live| live.regs.write(regs::FenceSync::new(1)));
    Ok(())
}

/// `FENCE_STORE` of `value` at the physical fence word `pa` on adapter `slot` (hardware.md
/// 8.3). The device latches the address, so the pair must never interleave with another
/// writer's pair on the adapter: ADDR_a, ADDR_b, VALUE_b, VALUE_a would store one fence's
/// value in another's word. Every pair is therefore issued under the adapter's interrupt lock:
/// - at device IRQL the caller already holds it: the OS calls the update DDIs there only
///   from `DxgkCbSynchronizeExecution` of the fence's adapter (24H2 for both DDIs), and the
///   ISR never stores. The pair is written directly; one IRQL read is all this path adds.
/// - below it (UpdateCurrentValuesFromCpu at DISPATCH_LEVEL, as the pages have it) the pair
///   runs as a `DxgkCbSynchronizeExecution` routine, so it excludes the ISR, the OS's
///   synchronised calls and other processors alike.
///
/// No deadlock: the lock is taken only below device IRQL, where the caller cannot hold it (a
/// holder runs at device IRQL until it releases), and nothing else is held inside; a plain
/// driver spinlock instead would be waited for at device IRQL by the OS's synchronised call
/// interrupting its holder on the same processor. A failed synchronisation (interrupt not
/// connected: the adapter is stopping) stores nothing and is the caller's failure.
/// `then` runs on the adapter after a store that was issued.
fn fence_store<P: Platform>(
    slot: u8,
    pa: u64,
    value: u64,
    then: impl FnOnce(&Live<P>),
) -> Result<(), Status> {
    ADAPTERS
        .with(slot, |a: &Adapter<P>| {
            let Some(live) = a.live() else {
                return Ok(());
            };
            let pair = || {
                live.regs.write(regs::FenceStoreAddr::new(pa));
                live.regs.write(regs::FenceStore::new(value));
            };
            if P::current_irql() >= Irql::Device {
                pair();
            } else {
                live.synchronized(|_| pair())?;
            }
            then(live);
            Ok(())
        })
        .unwrap_or(Ok(()))
}

/// The test hooks' record of a MonitoredValue the OS armed on adapter `slot` (any IRQL): the
/// one place a program on Windows learns it (NF-02), the OS mapping it for the GPU only.
fn journal_monitored<P: Platform>(slot: u8, value: u64) {
    ADAPTERS.with(slot, |a: &Adapter<P>| {
        if let Some(live) = a.live() {
            note_monitored(live, value);
        }
    });
}

/// [`journal_monitored`] on an adapter already in hand.
fn note_monitored<P: Platform>(live: &Live<P>, value: u64) {
    crate::testhooks::note(&live.hooks, || {
        crate::testhooks::rec(
            rvgpu_hw::testhooks::JournalKind::MonitoredValue,
            0,
            value,
            0,
        )
    });
}

/// Runs `f` on each started adapter whose slot bit is set in `mask`.
fn sync_adapters<P: Platform>(mask: u32, f: impl Fn(&Live<P>)) {
    for slot in 0..u8::try_from(MAX_ADAPTERS).unwrap_or(u8::MAX) {
        if mask & 1u32.checked_shl(u32::from(slot)).unwrap_or(0) != 0 {
            ADAPTERS.with(slot, |a: &Adapter<P>| {
                if let Some(live) = a.live() {
                    f(live);
                }
            });
        }
    }
}

/// DxgkDdiUpdateCurrentValuesFromCpu (DISPATCH by the pages; device IRQL under the
/// interrupt lock on 24H2, where nothing here takes a lock or waits; at DISPATCH a device store
/// takes the interrupt lock, [`fence_store`]): a CPU signal (NF-17), or with
/// `NotificationOnly` a signal that already happened elsewhere (a cross-adapter fence, NF-16).
/// Either way the CMP re-evaluates the GPU waits on the fence (WAIT_RESCAN), with no round
/// trip through the OS.
///
/// Two forms 24H2 sends besides one fence per call:
/// - `NumFences` 0 with `NotificationOnly` and no arrays: some fence shared with another
///   adapter changed and the OS does not say which (`M:VidSchiProcessCrossAdapterSignaledSyncObjects`
///   @0x14001FBBC, after a peer's scan-all report, `M:VidSchPostCrossAdapterSignal`
///   @0x140048510). The call names no adapter either, so every started adapter rescans all
///   its blocked waits. A refusal is bug check 0x119 / 0x13 there.
/// - `AlwaysSignaled` with 0xFFFFFFFF, right after the same fence was stored to `u64::MAX`
///   (`_VIDSCH_SYNC_OBJECT::SetToAlwaysSignaled` @0x14003B954 on the peer of a device put in
///   error). The page: the value can no longer be relied upon and every GPU wait on the fence
///   must pass at once. So the driver stores `u64::MAX`, which satisfies every wait and never
///   moves the fence backwards (0xFFFFFFFF would undo the store before it). Not enforced: that
///   later GPU signals leave such a fence alone (the device has no per-fence "poisoned" state).
pub(crate) fn update_current<P: Platform>(
    args: &DXGKARG_UPDATECURRENTVALUESFROMCPU,
    arrays: &FenceArrays<'_>,
) -> Result<(), Status> {
    let n = args.NumFences;
    let flags = args.Flags;
    type Flags = DXGK_UPDATECURRENTVALUESFROMCPU_FLAGS;
    let known = Flags::mask(Flags::AlwaysSignaled) | Flags::mask(Flags::NotificationOnly);
    if n > MAX_FENCES_PER_UPDATE || flags.Value & !known != 0 {
        return Err(status::INVALID_PARAMETER);
    }
    let notify_only = flags.is_set(Flags::NotificationOnly);
    let always = flags.is_set(Flags::AlwaysSignaled);
    if n == 0 {
        // Only the unnamed notification comes without fences.
        if !notify_only || always {
            return Err(status::INVALID_PARAMETER);
        }
        fence(Ordering::SeqCst);
        sync_adapters::<P>(u32::MAX, |live| {
            live.regs.write(regs::WaitRescan::new(0));
        });
        return Ok(());
    }
    // No CPU address array (24H2, module doc): the device stores each value instead.
    let cpu_stores = arrays.values_cpu.is_some();
    for i in 0..n {
        let h = arrays.handle(i);
        h.and_then(|h| locate::<P>(h as usize))
            .ok_or(status::INVALID_HANDLE)?;
        if !notify_only {
            if cpu_stores && !arrays.value_cpu_valid(i) {
                return Err(status::INVALID_PARAMETER);
            }
            arrays.updated(i).ok_or(status::INVALID_PARAMETER)?;
        }
    }
    for i in 0..n {
        let h = arrays.handle(i);
        let Some(loc) = h.and_then(|h| locate::<P>(h as usize)) else {
            continue;
        };
        if !notify_only {
            let v = arrays.updated(i).map(|v| if always { u64::MAX } else { v });
            // Release: what the CPU did before signalling is visible to a GPU waiter.
            let stored = v.is_some_and(|v| arrays.store_cpu(i, v, Ordering::Release));
            // Otherwise, without CPU addresses, the device stores the value and re-evaluates
            // the waits on that word.
            if !stored {
                if let (false, Some((cv, _)), Some(v)) = (
                    cpu_stores,
                    h.and_then(|h| words::<P>(loc.adapter, h as usize)),
                    v,
                ) {
                    fence(Ordering::SeqCst);
                    fence_store::<P>(loc.adapter, cv, v, |_| ())?;
                    continue;
                }
            }
        }
        fence(Ordering::SeqCst);
        // The CMP re-evaluates the GPU waits on this fence's CurrentValue.
        ADAPTERS.with(loc.adapter, |a: &Adapter<P>| {
            if let Some(live) = a.live() {
                live.regs
                    .write(regs::WaitRescan::new(loc.current_gpu.get()));
            }
        });
    }
    Ok(())
}
