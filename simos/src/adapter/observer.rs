//! What tests observe of one adapter: counters and logs the simulated OS keeps so that a test
//! can read them, and that nothing the OS decides reads. The OS records through the
//! `pub(crate)` methods; tests read through `Machine` or the `pub` readers.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::adapter::irql::Routine;
use crate::base::lock::lock;
use crate::base::notify::Processed;

/// The observations of one adapter.
#[derive(Debug, Default)]
pub struct Observer {
    stats: Stats,
    /// Dxgkrnl's triage log for this adapter: statuses outside a DDI wrapper's allow-list
    /// (BR-23) and the other refusals Windows logs and goes on.
    triage: Mutex<Vec<String>>,
    /// Feature IDs the driver asked IsFeatureEnabled about, in order (NF-10).
    features_queried: Mutex<Vec<i32>>,
    /// Times the driver obtained the native-fence feature interface (QueryFeatureInterface).
    native_fence_interface_queries: AtomicU64,
    /// Notifications processed by `DxgkCbNotifyDpc`, in order.
    processed: Mutex<Vec<Processed>>,
    /// Argument blocks checked against the hand-over audit ([`rvgpu_ddi::handover`]).
    handover: Mutex<Handover>,
    /// Blocks of the call sites without a central check ([`Observer::handed_alone`]) whose
    /// zero fields were clear: counted without the audit's lock.
    alone: AloneCounts,
}

/// Per-set block counts, one slot per set name (by the address of its text, as
/// [`NameKey`]), taken by the first block of the set: a relaxed add per block, where the
/// audit's lock and map cost the submission path several times that. Sets past the slots go
/// to [`Handover`].
#[derive(Debug, Default)]
struct AloneCounts {
    slots: [AloneSlot; ALONE_SLOTS],
}

#[derive(Debug, Default)]
struct AloneSlot {
    name: std::sync::OnceLock<NameKey>,
    blocks: AtomicU64,
}

/// Sets counted lock-free (a few DDI call sites pass no central check).
const ALONE_SLOTS: usize = 8;

impl AloneCounts {
    /// Counts one block of `name`; `false` when every slot holds another set.
    #[inline(always)]
    fn count(&self, name: &'static str) -> bool {
        let key = NameKey(name);
        for slot in &self.slots {
            if *slot.name.get_or_init(|| key) == key {
                slot.blocks.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// The blocks counted for sets named `ddi` (by the text).
    fn blocks(&self, ddi: &str) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.name.get().is_some_and(|k| k.0 == ddi))
            .map(|s| s.blocks.load(Ordering::Relaxed))
            .sum()
    }
}

/// Call-site checks remembered for the central check to skip (a DDI's call site checks at most
/// a few blocks before it calls).
const AT_CALL_SITE_KEPT: usize = 16;

/// A row set's name as the key of [`Handover::blocks`]: the address and length of the
/// `&'static str`, not its bytes, as every hot DDI call counts its block there (hashing the
/// name's bytes showed in the per-submission instruction counts). Two sets whose names are
/// equal but stored apart get two entries, which [`Observer::handed_blocks`] adds up.
#[derive(Clone, Copy, Debug)]
struct NameKey(&'static str);

impl PartialEq for NameKey {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for NameKey {}

impl Hash for NameKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.as_ptr() as usize ^ self.0.len().rotate_left(48));
    }
}

/// The hasher of [`NameKey`]s: one multiply of the one word a key writes. Not keyed: the
/// addresses are the program's own.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(0x9e_37_79_b9_7f_4a_7c_15);
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
}

/// What the hand-over audit found in the blocks the OS handed the driver.
#[derive(Debug, Default)]
struct Handover {
    /// Blocks checked, by DDI, but for those of [`Handover::last`].
    blocks: HashMap<NameKey, u64, BuildHasherDefault<AddrHasher>>,
    /// The set counted last and the blocks counted for it since it became the last one (not
    /// yet in `blocks`): a run of calls of one DDI, the hot paths' pattern, counts without a
    /// lookup.
    last: Option<(NameKey, u64)>,
    /// `DDI: field` for each field the audit says 24H2 leaves zero that a block filled.
    filled_zero: Vec<String>,
    /// The sets and block addresses call sites checked last ([`Observer::handed`]), newest
    /// last: the central check of the same block, which follows, is not counted twice.
    at_call_site: std::collections::VecDeque<(&'static str, usize)>,
}

impl Handover {
    /// Counts one block of the set named `name`.
    fn count(&mut self, name: &'static str) {
        let key = NameKey(name);
        match &mut self.last {
            Some((k, n)) if *k == key => *n += 1,
            last => {
                if let Some((k, n)) = last.replace((key, 1)) {
                    *self.blocks.entry(k).or_default() += n;
                }
            }
        }
    }

    /// Counts block `b` of `ddi` and notes the fields 24H2 leaves zero that it fills.
    fn checked<T>(&mut self, ddi: &rvgpu_ddi::handover::Ddi<T>, b: &T) {
        self.count(ddi.name);
        self.note_filled(ddi, b);
    }

    /// Notes the fields of `b` that 24H2 leaves zero but that `b` fills.
    fn note_filled<T>(&mut self, ddi: &rvgpu_ddi::handover::Ddi<T>, b: &T) {
        self.filled_zero
            .extend(ddi.filled_zero(b).map(|f| format!("{}: {f}", ddi.name)));
    }
}

impl Observer {
    /// Checks block `b`, about to be handed to the driver's `ddi`, against the audit: every
    /// field 24H2 leaves zero that `b` fills is noted (meaningful under the 24H2 reading,
    /// which the audit describes). The central check of an audited call (`Ddi::call`) that
    /// follows skips the same block.
    pub(crate) fn handed<T>(&self, ddi: &rvgpu_ddi::handover::Ddi<T>, b: &T) {
        let mut h = lock(&self.handover);
        if h.at_call_site.len() >= AT_CALL_SITE_KEPT {
            h.at_call_site.pop_front();
        }
        h.at_call_site.push_back((ddi.name, b as *const T as usize));
        h.checked(ddi, b);
    }

    /// [`Observer::handed`] for a call site whose DDI call has no central check
    /// (`Ddi::call_unaudited`): the same count and notes, with nothing kept for a central check
    /// to skip.
    #[inline(always)]
    pub(crate) fn handed_alone<T>(&self, ddi: &rvgpu_ddi::handover::Ddi<T>, b: &T) {
        // The zero test outside the lock, at the call site (the submission's: once per packet).
        if ddi.zero_fields_clear(b) && self.alone.count(ddi.name) {
            return;
        }
        let mut h = lock(&self.handover);
        h.count(ddi.name);
        h.note_filled(ddi, b);
    }

    /// Checks argument block `b`, about to be handed to DDI `ddi` (its catalog name), against
    /// every row set of `ddi` in the audit ([`rvgpu_ddi::handover::AUDIT`]) that reads a block
    /// of that type and applies to this one, as [`Observer::handed`] does for one set. The one
    /// check for the DDIs the OS calls through the audited callers (`Ddi::call`): no call site
    /// names the set.
    pub(crate) fn handed_at<T: 'static>(&self, ddi: &str, b: &T) {
        for set in rvgpu_ddi::handover::sets_of(ddi) {
            let mut filled = Vec::new();
            if set.check_block(b, &mut |f| filled.push(f)) {
                let mut h = lock(&self.handover);
                let key = (set.name(), b as *const T as usize);
                if let Some(i) = h.at_call_site.iter().rposition(|k| *k == key) {
                    // The call site checked this block against this set already.
                    h.at_call_site.remove(i);
                    continue;
                }
                h.count(set.name());
                h.filled_zero
                    .extend(filled.into_iter().map(|f| format!("{}: {f}", set.name())));
            }
        }
    }

    /// Blocks of `ddi` checked against the hand-over audit so far.
    pub fn handed_blocks(&self, ddi: &str) -> u64 {
        let h = lock(&self.handover);
        h.blocks
            .iter()
            .chain(h.last.as_ref().map(|(k, n)| (k, n)))
            .filter(|(k, _)| k.0 == ddi)
            .map(|(_, n)| n)
            .sum::<u64>()
            + self.alone.blocks(ddi)
    }

    /// `DDI: field` for each field the audit marks zero that the OS filled.
    pub fn handed_filled_zero(&self) -> Vec<String> {
        lock(&self.handover).filled_zero.clone()
    }

    /// Adds a line to the triage log.
    pub(crate) fn triage(&self, line: String) {
        lock(&self.triage).push(line);
    }

    /// Adds lines to the triage log together.
    pub(crate) fn triage_all(&self, lines: impl IntoIterator<Item = String>) {
        lock(&self.triage).extend(lines);
    }

    /// The triage log so far.
    pub fn triage_log(&self) -> Vec<String> {
        lock(&self.triage).clone()
    }

    /// Notifications `DxgkCbNotifyDpc` processed, appended in order.
    pub(crate) fn processed(&self, done: impl IntoIterator<Item = Processed>) {
        lock(&self.processed).extend(done);
    }

    /// The notifications processed so far, in order.
    pub fn notifications(&self) -> Vec<Processed> {
        lock(&self.processed).clone()
    }

    /// The driver asked IsFeatureEnabled about `id`.
    pub(crate) fn feature_queried(&self, id: i32) {
        lock(&self.features_queried).push(id);
    }

    /// Feature IDs the driver asked IsFeatureEnabled about, in order.
    pub fn features_queried(&self) -> Vec<i32> {
        lock(&self.features_queried).clone()
    }

    /// The driver obtained the native-fence feature interface.
    pub(crate) fn native_fence_interface_queried(&self) {
        self.native_fence_interface_queries
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Times the driver obtained the native-fence feature interface.
    pub fn native_fence_interface_queries(&self) -> u64 {
        self.native_fence_interface_queries.load(Ordering::Relaxed)
    }

    /// The ISR was called.
    pub(crate) fn isr_called(&self) {
        self.stats.isr_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// The DPC routine was called.
    pub(crate) fn dpc_called(&self) {
        self.stats.dpc_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// ISR and DPC call counts.
    pub fn interrupt_counts(&self) -> (u64, u64) {
        (
            self.stats.isr_calls.load(Ordering::Relaxed),
            self.stats.dpc_calls.load(Ordering::Relaxed),
        )
    }

    /// Charges `routine` one call and the accesses since `before` (`None`: a board that
    /// cannot count).
    #[inline]
    pub(crate) fn charge_bus(
        &self,
        routine: Routine,
        before: Option<rvgpu_device::BusCounts>,
        now: Option<rvgpu_device::BusCounts>,
    ) {
        self.stats.charge_bus(routine, before, now);
    }

    /// Every routine charged so far: name, calls, accesses.
    pub fn bus_costs(&self) -> Vec<(String, u64, rvgpu_device::BusCounts)> {
        self.stats.bus.snapshot()
    }
}

/// Counters tests can read.
#[derive(Debug, Default)]
struct Stats {
    /// ISR calls.
    isr_calls: AtomicU64,
    /// DPC calls.
    dpc_calls: AtomicU64,
    /// Bus accesses of each DDI (outermost calls), the ISR and the DPC: calls and what the
    /// device counted during them. Exact in step mode; in threaded mode another thread's
    /// accesses can fall inside a call.
    bus: BusLedger,
}

impl Stats {
    /// Charges `routine` one call and the accesses since `before` (`None`: a board that
    /// cannot count).
    #[inline]
    fn charge_bus(
        &self,
        routine: Routine,
        before: Option<rvgpu_device::BusCounts>,
        now: Option<rvgpu_device::BusCounts>,
    ) {
        if let (Some(b), Some(n)) = (before, now) {
            self.bus.charge(routine, n.since(&b));
        }
    }
}

/// Per-routine tallies, indexed by the routine's id: a few relaxed atomic adds per call, so
/// that counting does not weigh on the simulated OS's own figures (its DDI wrappers run on
/// every hot path the benchmarks measure).
#[derive(Debug)]
struct BusLedger {
    slots: Box<[BusSlot]>,
    /// The routine of each slot used so far (written once per slot).
    names: Mutex<HashMap<u64, Routine>>,
}

#[derive(Debug, Default)]
struct BusSlot {
    seen: AtomicBool,
    calls: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    doorbell_writes: AtomicU64,
}

/// Routine ids are small (the `Routine` enum's discriminants).
const BUS_SLOTS: usize = 256;

impl Default for BusLedger {
    fn default() -> Self {
        Self {
            slots: (0..BUS_SLOTS).map(|_| BusSlot::default()).collect(),
            names: Mutex::new(HashMap::new()),
        }
    }
}

impl BusLedger {
    #[inline]
    fn charge(&self, routine: Routine, c: rvgpu_device::BusCounts) {
        let id = routine.id();
        let Some(slot) = usize::try_from(id).ok().and_then(|i| self.slots.get(i)) else {
            return;
        };
        // A load first: the swap and the name are needed once per routine.
        if !slot.seen.load(Ordering::Relaxed) {
            self.first_charge(slot, id, routine);
        }
        slot.calls.fetch_add(1, Ordering::Relaxed);
        slot.reads.fetch_add(c.reads, Ordering::Relaxed);
        slot.writes.fetch_add(c.writes, Ordering::Relaxed);
        slot.doorbell_writes
            .fetch_add(c.doorbell_writes, Ordering::Relaxed);
    }

    /// Records the name of `routine` (slot `slot`, id `id`) the first time it is charged.
    #[cold]
    #[inline(never)]
    fn first_charge(&self, slot: &BusSlot, id: u64, routine: Routine) {
        if !slot.seen.swap(true, Ordering::Relaxed) {
            self.names
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, routine);
        }
    }

    /// Every routine charged so far: name, calls, accesses.
    fn snapshot(&self) -> Vec<(String, u64, rvgpu_device::BusCounts)> {
        let names = self.names.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut v: Vec<_> = names
            .into_iter()
            .filter_map(|(id, r)| {
                let s = self.slots.get(usize::try_from(id).ok()?)?;
                Some((
                    format!("{r:?}"),
                    s.calls.load(Ordering::Relaxed),
                    rvgpu_device::BusCounts {
                        reads: s.reads.load(Ordering::Relaxed),
                        writes: s.writes.load(Ordering::Relaxed),
                        doorbell_writes: s.doorbell_writes.load(Ordering::Relaxed),
                    },
                ))
            })
            .collect();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_ddi::fence::DXGKARG_SETNATIVEFENCELOGBUFFER;

    fn hand(o: &Observer, b: &DXGKARG_SETNATIVEFENCELOGBUFFER) {
        o.handed_at("DxgkDdiSetNativeFenceLogBuffer", b);
    }

    /// DDI-01: the central check holds a block to the set of its kind: a log buffer given a
    /// system-process VA (which `M:VidSchiCreateNativeFenceLog` @0x140024634 never writes) is
    /// caught, a release naming only the queue passes as a release.
    #[test]
    fn ddi_01_a_log_buffer_with_a_system_process_va_is_caught_where_it_is_handed_over() {
        let o = Observer::default();
        let mut b = DXGKARG_SETNATIVEFENCELOGBUFFER {
            hHwQueue: 8 as rvgpu_ddi::HANDLE,
            NumberOfEntries: 64,
            LogBufferGpuVa: 0x10_0000,
            ..Default::default()
        };
        hand(&o, &b);
        assert_eq!(o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer"), 1);
        assert_eq!(o.handed_filled_zero(), Vec::<String>::new());
        b.LogBufferSystemProcessGpuVa = 0x10_0000;
        hand(&o, &b);
        assert_eq!(
            o.handed_filled_zero(),
            ["DxgkDdiSetNativeFenceLogBuffer: LogBufferSystemProcessGpuVa"]
        );
        let release = DXGKARG_SETNATIVEFENCELOGBUFFER {
            hHwQueue: 8 as rvgpu_ddi::HANDLE,
            ..Default::default()
        };
        hand(&o, &release);
        assert_eq!(
            o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer(release)"),
            1
        );
        assert_eq!(o.handed_filled_zero().len(), 1);
    }

    /// A log-buffer block as 24H2 fills it (a queue, 64 entries, a GPU VA).
    fn log_buffer_block() -> DXGKARG_SETNATIVEFENCELOGBUFFER {
        DXGKARG_SETNATIVEFENCELOGBUFFER {
            hHwQueue: 8 as rvgpu_ddi::HANDLE,
            NumberOfEntries: 64,
            LogBufferGpuVa: 0x10_0000,
            ..Default::default()
        }
    }

    /// DDI-01: a block its call site already checked against a set is not counted again by
    /// the central check that follows (the count is of blocks handed over).
    #[test]
    fn ddi_01_a_block_checked_at_its_call_site_is_counted_once() {
        let o = Observer::default();
        let b = log_buffer_block();
        o.handed(&rvgpu_ddi::handover::SET_NATIVE_FENCE_LOG_BUFFER, &b);
        hand(&o, &b);
        assert_eq!(o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer"), 1);
        hand(&o, &b);
        assert_eq!(o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer"), 2);
    }

    /// DDI-01: blocks are counted per row set name, wherever the name's text is stored: a
    /// set whose equal name lives at another address (another crate's copy of the constant)
    /// adds to the same count.
    #[test]
    fn ddi_01_blocks_of_sets_with_equal_names_count_together() {
        let o = Observer::default();
        let b = log_buffer_block();
        let set = rvgpu_ddi::handover::SET_NATIVE_FENCE_LOG_BUFFER;
        let copy = rvgpu_ddi::handover::Ddi {
            name: Box::leak(set.name.to_owned().into_boxed_str()),
            ..set
        };
        assert!(!std::ptr::eq(set.name, copy.name));
        o.handed(&set, &b);
        o.handed(&copy, &b);
        assert_eq!(o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer"), 2);
    }

    /// DDI-01: a block of another type than the sets read, or of a DDI without sets, is not
    /// read at all.
    #[test]
    fn ddi_01_only_the_sets_of_the_ddi_and_the_block_type_apply() {
        let o = Observer::default();
        let x = 7u64;
        o.handed_at("DxgkDdiSetNativeFenceLogBuffer", &x);
        o.handed_at("DxgkDdiNoSuchThing", &x);
        assert_eq!(o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer"), 0);
        assert!(o.handed_filled_zero().is_empty());
    }

    /// DDI-01: a call site whose DDI call has no central check (`handed_alone`) leaves nothing
    /// behind, so a later central check of a block at the same address counts it.
    #[test]
    fn ddi_01_a_block_checked_where_no_central_check_follows_is_not_skipped_later() {
        let o = Observer::default();
        let b = log_buffer_block();
        o.handed_alone(&rvgpu_ddi::handover::SET_NATIVE_FENCE_LOG_BUFFER, &b);
        hand(&o, &b);
        assert_eq!(o.handed_blocks("DxgkDdiSetNativeFenceLogBuffer"), 2);
    }

    /// DDI-01: runs of one set and sets interleaved count every block, including the run
    /// still being counted, and a filled field is noted on every block of a run.
    #[test]
    fn ddi_01_blocks_of_interleaved_sets_all_count() {
        let o = Observer::default();
        let b = log_buffer_block();
        let destroy = rvgpu_ddi::submission::DXGKARG_DESTROYDOORBELL {
            hDoorbell: 4 as rvgpu_ddi::HANDLE,
        };
        let log = rvgpu_ddi::handover::SET_NATIVE_FENCE_LOG_BUFFER;
        let door = rvgpu_ddi::handover::DESTROY_DOORBELL;
        for _ in 0..3 {
            o.handed_alone(&log, &b);
        }
        o.handed_alone(&door, &destroy);
        o.handed_alone(&log, &b);
        assert_eq!(o.handed_blocks(log.name), 4);
        assert_eq!(o.handed_blocks(door.name), 1);
        o.handed_alone(&door, &destroy);
        assert_eq!(o.handed_blocks(door.name), 2);
        let mut filled = b;
        filled.LogBufferSystemProcessGpuVa = 0x10_0000;
        o.handed_alone(&log, &filled);
        o.handed_alone(&log, &filled);
        assert_eq!(o.handed_blocks(log.name), 6);
        assert_eq!(o.handed_filled_zero().len(), 2);
    }

    /// DDI-01: call sites of more sets than the lock-free counts hold still count every block
    /// of each set.
    #[test]
    fn ddi_01_blocks_of_more_sets_than_counted_lock_free_all_count() {
        let o = Observer::default();
        let b = log_buffer_block();
        let log = rvgpu_ddi::handover::SET_NATIVE_FENCE_LOG_BUFFER;
        let sets: Vec<_> = (0..=ALONE_SLOTS)
            .map(|i| rvgpu_ddi::handover::Ddi {
                name: Box::leak(format!("set {i}").into_boxed_str()),
                ..log
            })
            .collect();
        for (i, set) in sets.iter().enumerate() {
            for _ in 0..=i {
                o.handed_alone(set, &b);
            }
        }
        for (i, set) in sets.iter().enumerate() {
            assert_eq!(o.handed_blocks(set.name), i as u64 + 1, "{}", set.name);
        }
        assert!(o.handed_filled_zero().is_empty());
    }
}
