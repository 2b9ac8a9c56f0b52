//! Private driver data: the layouts the KMD and UMD exchange through Dxgkrnl's opaque
//! private-data buffers. Not hardware, but here because both sides depend on this crate and
//! nothing else.

/// Marks rvgpu private data, so a buffer from another driver (or garbage) is recognised.
pub const PDD_MAGIC: u32 = 0x5244_4450; // "PDDR"
/// Version of [`NativeFencePdd`] (2: the report tag only; version 1 also carried the fence's
/// system-process GPU VAs, which are no use to a process: its own VAs come from the OS).
pub const NATIVE_FENCE_PDD_VERSION: u32 = 2;

wire_struct! {
    /// What `DxgkDdiCreateNativeFence` returns to the UMD in `pPrivateDriverData` (64 bytes):
    /// what only the KMD knows about signalling the fence on this adapter's GPU.
    ///
    /// No addresses: a process signals and waits at the VAs the OS mapped the fence at in *its*
    /// address space (`D3DDDI_NATIVEFENCEMAPPING::CurrentValueGpuVa` / `MonitoredValueGpuVa`,
    /// returned by `D3DKMTCreateNativeFence` / `D3DKMTOpenNativeFenceFromNtHandle`), while the
    /// KMD only sees the system-process VAs (`DXGKARG_CREATENATIVEFENCE`); private data written
    /// once at create could not name the VAs of every process that later opens the fence.
    #[size(64)]
    pub struct NativeFencePdd {
        /// [`PDD_MAGIC`].
        pub magic: u32,
        /// [`NATIVE_FENCE_PDD_VERSION`].
        pub version: u32,
        /// The tag FENCE_SIGNAL commands carry so the device can report the fence (NF-14).
        pub report_tag: u64,
        /// Reserved, 0.
        pub reserved: [u64; 6],
    }
}

/// Version of [`NativeFenceTagEscape`].
pub const NATIVE_FENCE_TAG_ESCAPE_VERSION: u32 = 1;

wire_struct! {
    /// The UMD's `D3DKMTEscape` private data (24 bytes, in/out) asking the KMD for the report
    /// tag of a native fence it opened from an NT handle: 24H2 returns no private data from that
    /// open (the caller's own bytes come back), so [`NativeFencePdd`] reaches only the creator.
    /// The fence is named by what the opener has from the OS, its CurrentValue GPU VA in this
    /// process (`D3DDDI_NATIVEFENCEMAPPING::CurrentValueGpuVa`), and the KMD answers only for
    /// the calling device's own opens.
    #[size(24)]
    pub struct NativeFenceTagEscape {
        /// [`PDD_MAGIC`] (in).
        pub magic: u32,
        /// [`NATIVE_FENCE_TAG_ESCAPE_VERSION`] (in).
        pub version: u32,
        /// CurrentValue's GPU VA in the calling process (in).
        pub current_value_gpu: u64,
        /// The fence's report tag (out).
        pub report_tag: u64,
    }
}

/// Version of [`WaitBoardEscape`].
pub const WAIT_BOARD_ESCAPE_VERSION: u32 = 1;

/// Pending waits a wait-board slot names ([`WaitBoardEscape::waits`]).
pub const WAIT_BOARD_WAITS: usize = 4;

wire_struct! {
    /// The UMD's `D3DKMTEscape` private data (88 bytes, in/out) on the board of a shareable
    /// native fence it holds open (docs/performance.md, "Waits through the UMD"): the KMD keeps
    /// one slot per open of the fence, which only the opening device's escapes write (24H2's
    /// `DxgkEscape` passes the driver the caller's own device), and answers every opener with
    /// what the others' slots say. The fence is named as in [`NativeFenceTagEscape`].
    #[size(88)]
    pub struct WaitBoardEscape {
        /// [`PDD_MAGIC`] (in).
        pub magic: u32,
        /// [`WAIT_BOARD_ESCAPE_VERSION`] (in).
        pub version: u32,
        /// CurrentValue's GPU VA in the calling process (in).
        pub current_value_gpu: u64,
        /// 1: `waits` and `more` replace the caller's slot before the answer; 0: read only (in).
        pub publish: u32,
        /// 1: the caller waits for more values than `waits` names, all above them (in).
        pub more: u32,
        /// The caller's lowest pending waits, `u64::MAX` where there are fewer (in).
        pub waits: [u64; WAIT_BOARD_WAITS],
        /// CurrentValue as the caller read it before its registration (in).
        pub from: u64,
        /// CurrentValue as the caller read it after its registration (in).
        pub to: u64,
        /// 1: every other opener published, and `next`/`passed` cover them; 0: some opener
        /// never did (out).
        pub known: u32,
        /// 1: one of the others' waits lies in `from + 1..=to` (out).
        pub passed: u32,
        /// The others' lowest pending wait above `to` (`u64::MAX`: none) (out).
        pub next: u64,
    }
}

/// The lowest pending wait a slot (`waits`, `more`) names above `current`, read as garbage may
/// be written: the lowest named value above `current`; `current + 1` when none is but the
/// owner has `more`; none otherwise.
pub fn board_next_above(waits: &[u64; WAIT_BOARD_WAITS], more: bool, current: u64) -> Option<u64> {
    let named = waits
        .iter()
        .copied()
        .filter(|&w| w > current && w != u64::MAX)
        .min();
    match named {
        Some(w) => Some(w),
        None if more => Some(current.saturating_add(1)),
        None => None,
    }
}

// ---------------------------------------------------------------------------------------------
// User-mode submission. docs/usermode-submission.md describes the flows.
// ---------------------------------------------------------------------------------------------

/// Version of [`HwQueuePdd`].
pub const HW_QUEUE_PDD_VERSION: u32 = 1;

wire_struct! {
    /// Private data of `DxgkDdiCreateHwQueue` (32 bytes, in/out). The UMD fills the input fields;
    /// the KMD validates them and writes the output fields before it returns.
    #[size(32)]
    pub struct HwQueuePdd {
        /// [`PDD_MAGIC`] (in).
        pub magic: u32,
        /// [`HW_QUEUE_PDD_VERSION`] (in).
        pub version: u32,
        /// Scheduling priority among the engine's queues, higher runs first (in; the KMD clamps it
        /// to [`HW_QUEUE_PRIORITY_MAX`]).
        pub priority: u32,
        /// The device's queue id (out): what a ring of the global doorbell writes, and what events
        /// report.
        pub queue_id: u32,
        /// Engine (node ordinal) the queue runs on (out).
        pub engine: u32,
        /// Reserved, 0.
        pub reserved: [u32; 3],
    }
}

/// Highest priority a UMD may ask for in [`HwQueuePdd::priority`].
pub const HW_QUEUE_PRIORITY_MAX: u32 = 15;

/// Version of [`DoorbellPdd`] (2: the 16-byte layout; version 1 carried the ring addresses).
pub const DOORBELL_PDD_VERSION: u16 = 2;

wire_enum! {
    /// What the UMD writes to the doorbell page to ring it (out field of [`DoorbellPdd`]).
    pub enum DoorbellValue: u32, from_u32 {
        /// Dedicated doorbells: any value rings; the UMD writes its new write pointer.
        WritePtr = 0,
        /// Global doorbell (`CAPS.GLOBAL_DOORBELL`): the UMD writes its queue id.
        QueueId = 1,
    }
}

/// Most private data `D3DKMTCreateDoorbell` carries: Dxgkrnl refuses more with
/// `STATUS_INVALID_PARAMETER` (`D3DDDI_DOORBELL_PRIVATEDATA_MAX_BYTES_WDDM3_1` in d3dukmdt.h;
/// docs/windows-bringup.md BR-96).
pub const DOORBELL_PDD_MAX_BYTES: usize = 16;

wire_struct! {
    /// Private data of `DxgkDdiCreateDoorbell` (16 bytes, in/out).
    ///
    /// The ring and its control block are the allocations `DXGKARG_CREATEDOORBELL` names
    /// (`hRingBuffer`, `hRingBufferControl`): the KMD takes their GPU VAs from where VidMm mapped
    /// them, so nothing here is an address. The UMD says only how much of the ring allocation the
    /// ring uses (a ring smaller than a page still fills a page-sized allocation).
    #[size(DOORBELL_PDD_MAX_BYTES)]
    pub struct DoorbellPdd {
        /// [`PDD_MAGIC`] (in).
        pub magic: u32,
        /// [`DOORBELL_PDD_VERSION`] (in).
        pub version: u16,
        /// log2 of the ring size in bytes (in): the size is a power of two in
        /// `queue::RING_MIN..=queue::RING_MAX` and no larger than the ring allocation.
        pub ring_size_log2: u8,
        /// Reserved, 0.
        pub reserved: u8,
        /// [`DoorbellValue`] as `u32` (out).
        pub ring_value: u32,
        /// The queue id, for [`DoorbellValue::QueueId`] (out).
        pub queue_id: u32,
    }
}

impl DoorbellPdd {
    /// The UMD's private data for a ring of `size` bytes (a power of two; anything else is
    /// encoded so that the KMD refuses it).
    pub fn for_ring(size: u32) -> Self {
        let log2 = if size.is_power_of_two() {
            size.trailing_zeros()
        } else {
            u32::from(u8::MAX)
        };
        Self {
            magic: PDD_MAGIC,
            version: DOORBELL_PDD_VERSION,
            ring_size_log2: u8::try_from(log2).unwrap_or(u8::MAX),
            ..Self::default()
        }
    }

    /// The ring size in bytes, if `ring_size_log2` names one that fits a `u32`.
    pub fn ring_size(&self) -> Option<u32> {
        1u32.checked_shl(u32::from(self.ring_size_log2))
    }
}

// ---------------------------------------------------------------------------------------------
// Allocations (docs/memory.md "Allocations").
// ---------------------------------------------------------------------------------------------

/// Version of [`AllocationPdd`].
pub const ALLOCATION_PDD_VERSION: u32 = 1;

wire_enum! {
    /// What an allocation is for; decides its placement and page attributes.
    pub enum AllocationKind: u32, from_u32 {
        /// Data the GPU reads and writes (FILL/COPY targets, fence-adjacent data).
        Buffer = 0,
        /// Commands the GPU fetches: a user-mode ring or a DMA (INDIRECT) buffer.
        Commands = 1,
        /// A ring-control block (write pointer from the CPU, read pointer from the GPU).
        RingControl = 2,
    }
}

/// [`AllocationPdd::flags`]: the GPU may only read the allocation.
pub const ALLOCATION_GPU_READ_ONLY: u32 = 1 << 0;
/// [`AllocationPdd::flags`]: the CPU maps the allocation (it stays in CPU-visible memory).
pub const ALLOCATION_CPU_VISIBLE: u32 = 1 << 1;
/// [`AllocationPdd::flags`]: the CPU maps it write-back cached (`DXGK_ALLOCATIONINFOFLAGS`
/// `Cached`; needs [`ALLOCATION_CPU_VISIBLE`]). The KMD keeps it in the aperture segment:
/// the CPU's caches are coherent with system memory, never with VRAM (AL-04).
pub const ALLOCATION_CPU_CACHED: u32 = 1 << 2;
/// Every defined [`AllocationPdd::flags`] bit.
pub const ALLOCATION_FLAGS: u32 =
    ALLOCATION_GPU_READ_ONLY | ALLOCATION_CPU_VISIBLE | ALLOCATION_CPU_CACHED;

wire_struct! {
    /// Private data of one allocation in `DxgkDdiCreateAllocation` (32 bytes, in): what the UMD
    /// asks for. Untrusted: the KMD checks every field and decides size, alignment, segments and
    /// page attributes itself.
    #[size(32)]
    pub struct AllocationPdd {
        /// [`PDD_MAGIC`].
        pub magic: u32,
        /// [`ALLOCATION_PDD_VERSION`].
        pub version: u32,
        /// Bytes the UMD needs (the KMD rounds up to whole pages).
        pub size: u64,
        /// [`AllocationKind`].
        pub kind: u32,
        /// `ALLOCATION_*` bits.
        pub flags: u32,
        /// Reserved, 0.
        pub reserved: u64,
    }
}
