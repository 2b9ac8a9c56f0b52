//! What the callback handlers see of the driver's pointers, and how the entry points reach
//! the memory behind them. A child of the driver->OS FFI ([`super`], `ffi.rs`): only the FFI's
//! entry points make a [`DriverPtr`] (from the pointer the driver passed the call, borrowed
//! from the entry point's [`Call`], so neither it nor what is read through it outlives the
//! call), and pass each handler its own entry point's address (bug-check parameters); the
//! handlers name nothing of the FFI. Everything here is safe code over those pointers.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::ptr::NonNull;

use rvgpu_ddi::basic::{BOOLEAN, HANDLE, INTERFACE};
use rvgpu_ddi::interrupt::{DXGKARGCB_NOTIFY_INTERRUPT_DATA, DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED};

use crate::adapter::context::raise;
use crate::base::bugcheck::BugCheck;

/// One call of a callback, made by its entry point on its own stack: what the driver's
/// pointers are borrowed from ([`DriverPtr`] and [`DriverArray`] take its lifetime), so that
/// nothing made or read through them outlives the call. It carries the entry point's address
/// (bug-check parameters).
pub(crate) struct Call {
    entry: usize,
}

impl Call {
    /// A call of the entry point at `entry`.
    pub(super) fn new(entry: usize) -> Self {
        Call { entry }
    }
}

/// A non-null pointer the driver passed a callback, for that call (`'call`). Made only by the
/// FFI's entry points, so [`super::Direct`] may take it as the DDI's contract makes it: valid
/// for its type during the call.
pub(crate) struct DriverPtr<'call, T> {
    at: NonNull<T>,
    _call: PhantomData<&'call Call>,
}

impl<T> Clone for DriverPtr<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DriverPtr<'_, T> {}

impl<'call, T> DriverPtr<'call, T> {
    /// The driver's pointer `p` of `call` (`None` when null).
    pub(super) fn new(_call: &'call Call, p: *mut T) -> Option<Self> {
        Self::within(PhantomData, p)
    }

    /// `p` for the call another of its pointers was made for.
    fn within(_call: PhantomData<&'call Call>, p: *mut T) -> Option<Self> {
        NonNull::new(p).map(|at| DriverPtr {
            at,
            _call: PhantomData,
        })
    }

    /// The same address as a `U`, for the same call (the caller knows the block is one).
    pub(super) fn cast<U>(self) -> DriverPtr<'call, U> {
        DriverPtr {
            at: self.at.cast(),
            _call: PhantomData,
        }
    }

    /// The pointer.
    pub(crate) fn get(self) -> NonNull<T> {
        self.at
    }
}

/// `len` `T`s the driver passed a callback, from a [`DriverPtr`] of the same call: made as
/// it is.
pub(crate) struct DriverArray<'call, T> {
    at: DriverPtr<'call, T>,
    len: usize,
}

impl<T> Clone for DriverArray<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DriverArray<'_, T> {}

impl<'call, T> DriverArray<'call, T> {
    /// The `len` `T`s the driver declared at `at`.
    pub(super) fn new(at: DriverPtr<'call, T>, len: usize) -> Self {
        DriverArray { at, len }
    }

    /// The first `n` of them (`None`: more than there are).
    pub(crate) fn first(self, n: usize) -> Option<Self> {
        (n <= self.len).then_some(DriverArray {
            at: self.at,
            len: n,
        })
    }

    /// Where they start and how many there are.
    pub(crate) fn get(self) -> (NonNull<T>, usize) {
        (self.at.at, self.len)
    }
}

/// How the entry points reach what the driver's pointers name; each is generic over it and
/// [`super::super::table`] makes the callback table of either kind. The Linux build's driver
/// is Rust in this process: [`super::Direct`] dereferences. `rvgpu.sys` in the emulator shares
/// the host's address space, its pointers being whatever the image computed: the PE bridge's
/// kind (`crate::pe::checked`) copies through the checked copy, and an address the image
/// cannot reach is bug check 0x50 (`Err`), as 24H2's own access faults there.
pub(crate) trait DriverMemory: 'static {
    /// A copy of the `T` at `p`, read by callback `entry`.
    fn read<T: Copy>(p: DriverPtr<'_, T>, entry: usize) -> Result<T, BugCheck>;
    /// Writes `v` at `p`.
    fn write<T: Copy>(p: DriverPtr<'_, T>, v: T, entry: usize) -> Result<(), BugCheck>;
    /// The `T`s of `a`, borrowed no longer than its call.
    fn read_array<'call, T: Copy>(
        a: DriverArray<'call, T>,
        entry: usize,
    ) -> Result<Cow<'call, [T]>, BugCheck>;
    /// Runs `f` on the driver's in/out block at `p`; what `f` changed is in the block after.
    fn update<T: Copy, R>(
        p: DriverPtr<'_, T>,
        entry: usize,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, BugCheck>;
}

/// An out-parameter of the driver, checked non-null: written once, whole.
pub(crate) trait Place<T> {
    /// Writes the answer.
    fn write(self, value: T);
}

/// A place the driver gave the OS to write one value to during its call, through `M`.
pub(crate) struct Out<'call, T, M> {
    place: DriverPtr<'call, T>,
    entry: usize,
    _memory: PhantomData<M>,
}

impl<'call, T, M> Out<'call, T, M> {
    /// The driver's out-parameter `p` of `call`, `None` when it is null.
    pub(super) fn new(call: &'call Call, p: *mut T) -> Option<Self> {
        DriverPtr::new(call, p).map(|place| Out {
            place,
            entry: call.entry,
            _memory: PhantomData,
        })
    }
}

impl<T: Copy, M: DriverMemory> Place<T> for Out<'_, T, M> {
    /// 24H2 writes an out-parameter after its null check only; one `M` cannot write is the
    /// bug check, raised.
    fn write(self, value: T) {
        if let Err(b) = M::write(self.place, value, self.entry) {
            raise(b);
        }
    }
}

/// `f` on the driver's in/out block `p` (`None` when it is null); `faulted` when `M` cannot
/// reach it (the bug check raised).
pub(super) fn with_block<M: DriverMemory, T: Copy, R>(
    call: &Call,
    p: *mut T,
    faulted: R,
    f: impl FnOnce(Option<&mut T>) -> R,
) -> R {
    let Some(p) = DriverPtr::new(call, p) else {
        return f(None);
    };
    match M::update(p, call.entry, |b| f(Some(b))) {
        Ok(r) => r,
        Err(b) => {
            raise(b);
            faulted
        }
    }
}

/// A copy of the driver's input block `p` (`None` when it is null); `Err` when `M` cannot read
/// it (the bug check raised).
pub(super) fn copy<M: DriverMemory, T: Copy>(call: &Call, p: *const T) -> Result<Option<T>, ()> {
    DriverPtr::new(call, p.cast_mut())
        .map(|p| M::read(p, call.entry))
        .transpose()
        .map_err(raise)
}

/// A `DxgkCbNotifyInterrupt` report, copied at the call.
pub(crate) trait ReportView:
    std::ops::Deref<Target = DXGKARGCB_NOTIFY_INTERRUPT_DATA>
{
    /// The first `n` handles a native-fence report lists (`None` for another type, a NULL
    /// array or more than its count); `Err` when they cannot be read.
    fn signaled_fences(&self, n: usize) -> Result<Option<Cow<'_, [HANDLE]>>, BugCheck>;
}

/// A `DxgkCbNotifyInterrupt` report, copied from the driver at the call; the pointers in it
/// are the call's.
pub(crate) struct Report<'call, M> {
    data: DXGKARGCB_NOTIFY_INTERRUPT_DATA,
    entry: usize,
    _call: PhantomData<&'call Call>,
    _memory: PhantomData<M>,
}

impl<'call, M: DriverMemory> Report<'call, M> {
    /// A copy of the report `data` of `call` (`None` when null; `Err`: it cannot be read, the
    /// bug check raised).
    pub(super) fn copy(
        call: &'call Call,
        data: *const DXGKARGCB_NOTIFY_INTERRUPT_DATA,
    ) -> Result<Option<Self>, ()> {
        Ok(copy::<M, _>(call, data)?.map(|data| Report {
            data,
            entry: call.entry,
            _call: PhantomData,
            _memory: PhantomData,
        }))
    }
}

impl<M> std::ops::Deref for Report<'_, M> {
    type Target = DXGKARGCB_NOTIFY_INTERRUPT_DATA;
    fn deref(&self) -> &DXGKARGCB_NOTIFY_INTERRUPT_DATA {
        &self.data
    }
}

impl<M: DriverMemory> ReportView for Report<'_, M> {
    /// 24H2 reads the handles at ISR time without a check of the array
    /// (`M:VidSchiProcessIsrNativeFenceSignaled` @0x140052784), as this does: the driver
    /// declares `SignaledNativeFenceCount` of them there.
    fn signaled_fences(&self, n: usize) -> Result<Option<Cow<'_, [HANDLE]>>, BugCheck> {
        if self.data.InterruptType != DXGK_INTERRUPT_NATIVE_FENCE_SIGNALED {
            return Ok(None);
        }
        let d = self.data.Anonymous.native_fence_signaled();
        let declared = DriverPtr::within(self._call, d.pSignaledNativeFenceArray)
            .map(|at| DriverArray::new(at, d.SignaledNativeFenceCount as usize));
        match declared.and_then(|a| a.first(n)) {
            Some(a) => M::read_array(a, self.entry).map(Some),
            None => Ok(None),
        }
    }
}

/// The driver's synchronized routine with its context.
pub(crate) trait SyncView {
    /// Runs it (under the interrupt lock at device IRQL).
    fn run(&self) -> BOOLEAN;
    /// The routine's address.
    fn address(&self) -> u64;
    /// The context's address.
    fn context(&self) -> u64;
}

/// The interface buffer of `DxgkCbQueryServices`, non-null.
pub(crate) trait InterfaceView {
    /// Its `INTERFACE` header (`Err`: it cannot be read).
    fn header(&self) -> Result<INTERFACE, BugCheck>;
    /// Fills it with the feature interface of adapter handle `context` when its `Size` is
    /// exactly that interface's; `Ok(false)` (nothing written) otherwise.
    fn write_feature(self, context: HANDLE) -> Result<bool, BugCheck>;
}
