//! The ntoskrnl routines `rvgpu.sys` imports, implemented with Windows' rules.
//!
//! The image imports 28 routines (src/ntos.rs, src/rt.rs, and the compiler's `memcmp`). Each
//! is bound to a stub that runs
//! the simulated kernel's version: the pool through Verifier's low-resources injector
//! ([`crate::base::lowres`]), timers and DPCs through the simulated kernel's timers
//! ([`crate::adapter::ktimer`]), `KeBugCheckEx` as the machine's bug check with its code and
//! parameters, and the Dxgkrnl registration path (`ZwLoadDriver`, `IoGetDeviceObjectPointer`,
//! the `IOCTL_VIDEO_DDI_FUNC_REGISTER` IRP) answered as the running dxgkrnl answers it, and
//! ETW's registration and write routines into the simulated ETW ([`crate::etw`]), and the
//! registry routines over the adapter's software key ([`crate::adapter::registry`]). The
//! C-library routines (`memcpy`, `memmove`, `memset`, `memcmp`) are machine code run in
//! the emulated processor itself, as ntoskrnl's own are: a bad pointer faults in the image's
//! context (0x50) instead of in the host.
//!
//! An import the simulated kernel does not implement fails the load with its name.

#[path = "ntoskrnl_registry.rs"]
mod registry;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use rvgpu_kmd::platform::{Irql, Level};

use super::cpu::{self, StubResult};
use crate::adapter::context::{current_machine, irql_above, raise};
use crate::adapter::kernel::{self};
use crate::adapter::ktimer;
use crate::base::bugcheck::{self, kirql, BugCheck};
use crate::base::lock::lock;
use crate::base::processor::current_irql;
use rvgpu_ddi::ntstatus;

// The statuses the stubs return in RAX (zero-extended); the values are ntstatus.h's.
const STATUS_SUCCESS: u64 = nt(ntstatus::STATUS_SUCCESS);
const STATUS_INVALID_PARAMETER: u64 = nt(ntstatus::STATUS_INVALID_PARAMETER);
const STATUS_OBJECT_NAME_NOT_FOUND: u64 = nt(ntstatus::STATUS_OBJECT_NAME_NOT_FOUND);
const STATUS_IMAGE_ALREADY_LOADED: u64 = nt(ntstatus::STATUS_IMAGE_ALREADY_LOADED);
const STATUS_INVALID_DEVICE_REQUEST: u64 = nt(ntstatus::STATUS_INVALID_DEVICE_REQUEST);
const STATUS_BUFFER_TOO_SMALL: u64 = nt(ntstatus::STATUS_BUFFER_TOO_SMALL);
const STATUS_INVALID_HANDLE: u64 = nt(ntstatus::STATUS_INVALID_HANDLE);
const STATUS_ACCESS_DENIED: u64 = nt(ntstatus::STATUS_ACCESS_DENIED);

/// `status` as RAX carries it: its 32 bits, zero-extended.
const fn nt(status: rvgpu_ddi::NTSTATUS) -> u64 {
    status as u32 as u64
}

/// `BAD_POOL_CALLER` and the parameter-1 values used below (bug-check-0xc2 reference page).
const BAD_POOL_CALLER: u32 = 0xC2;
/// "The current thread is requesting a pool allocation at IRQL > DISPATCH_LEVEL" (0x08 is
/// the paged-pool variant; non-paged above DISPATCH is 0x09... the page lists 0x9 for frees):
/// the simulation follows Verifier, which reports both as 0xC4/0x02 — see `alloc` below.
const BAD_POOL_FREE_WRONG_TAG: u64 = 0x0A;
/// "Attempt to free pool which was already freed" / an address that is not an allocation.
const BAD_POOL_FREE_BAD_ADDRESS: u64 = 0x46;
/// "Attempt to allocate pool with a tag of zero".
const BAD_POOL_ZERO_TAG: u64 = 0x9B;
/// `POOL_FLAG_UNINITIALIZED`.
const POOL_FLAG_UNINITIALIZED: u64 = 0x2;
/// `POOL_FLAG_NON_PAGED` and `POOL_FLAG_PAGED`.
const POOL_FLAG_NON_PAGED: u64 = 0x40;
const POOL_FLAG_PAGED: u64 = 0x100;

/// A built IRP: (control code, output buffer, its length, event, IO_STATUS_BLOCK).
type Irp = (u32, usize, u32, usize, usize);

/// One live pool allocation.
#[derive(Clone, Copy, Debug)]
pub struct PoolBlock {
    size: usize,
    tag: u32,
    layout: std::alloc::Layout,
}

/// A KTIMER the image initialised, with the simulated kernel's timer behind it. Kept (in
/// [`KernelState`]) for the life of the image instance, so the timer routine's context — this
/// object — is valid whenever the simulated kernel runs it.
#[derive(Debug)]
pub struct PeTimer {
    sim: ktimer::SimTimer,
    /// The KDPC it queues when set.
    dpc: std::sync::atomic::AtomicUsize,
    set: std::sync::atomic::AtomicBool,
    image: Weak<dyn Instance>,
}

/// The kernel objects and pool of one image instance.
#[derive(Default)]
pub struct KernelState {
    pub(super) pool: Mutex<HashMap<usize, PoolBlock>>,
    timers: Mutex<HashMap<usize, Arc<PeTimer>>>,
    /// KDPC address → (routine, context).
    dpcs: Mutex<HashMap<usize, (usize, usize)>>,
    /// Timers cancelled since the last `KeFlushQueuedDpcs` (their routine may still run).
    cancelled: Mutex<Vec<Arc<ktimer::Armed>>>,
    /// The `\Device\DxgKrnl` device object and its file object (opaque to the driver).
    pub(super) device_object: Box<[u64; 8]>,
    pub(super) file_object: Box<[u64; 8]>,
    file_refs: std::sync::atomic::AtomicI64,
    /// IRPs built and not yet sent: address → (code, output buffer, length, event, iosb).
    irps: Mutex<HashMap<usize, Irp>>,
    /// The IRPs' memory (its address is the image's IRP pointer: boxed so it does not move).
    #[allow(clippy::vec_box, reason = "the image holds the IRP's address")]
    irp_storage: Mutex<Vec<Box<[u64; 32]>>>,
    /// The internal device-control requests the image sent to `\Device\DxgKrnl`, in order,
    /// with the status each completed with.
    requests: Mutex<Vec<(u32, i32)>>,
    /// Open registry-key handles (`IoOpenDeviceRegistryKey`): handle → the PDO whose software
    /// key it opens. One object per open, gone at its `ZwClose`.
    reg_keys: Mutex<HashMap<u64, usize>>,
    /// The next registry-key handle's index.
    next_reg_key: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for KernelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelState")
            .field("pool_blocks", &lock(&self.pool).len())
            .finish_non_exhaustive()
    }
}

impl KernelState {
    /// Frees every block (the image instance is gone).
    pub(super) fn free_all(&self) {
        for (p, b) in lock(&self.pool).drain() {
            // SAFETY: a live allocation of ours with its layout; nothing runs the image any more.
            unsafe { std::alloc::dealloc(p as *mut u8, b.layout) };
        }
    }

    /// The internal device-control requests the image sent to Dxgkrnl's device, in order:
    /// (IOCTL code, completion status).
    pub fn dxgkrnl_requests(&self) -> Vec<(u32, i32)> {
        lock(&self.requests).clone()
    }

    /// Bytes and blocks of pool the image holds.
    pub fn pool_in_use(&self) -> (usize, usize) {
        let p = lock(&self.pool);
        (p.values().map(|b| b.size).sum(), p.len())
    }
}

/// What the routines need of the image instance they run for (the loader's [`super::PeImage`]):
/// its kernel objects and pool, and the `DxgkInitialize` stub `IofCallDriver` hands back.
pub trait Instance: Send + Sync {
    /// The instance's kernel objects and pool.
    fn kernel(&self) -> &KernelState;
    /// The address of the image's `DxgkInitialize` stub.
    fn dxgk_initialize_stub(&self) -> usize;
}

/// The instance the calling thread's machine runs (`None` outside any machine).
pub type CurrentInstance = fn() -> Option<Arc<dyn Instance>>;

type Handler = fn(&Arc<dyn Instance>, &[u64; 12]) -> StubResult;

/// The routines, by import name.
fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "ExAllocatePool2" => ex_allocate_pool2,
        "ExFreePoolWithTag" => ex_free_pool_with_tag,
        "KeBugCheckEx" => ke_bug_check_ex,
        "ZwLoadDriver" => zw_load_driver,
        "IoGetDeviceObjectPointer" => io_get_device_object_pointer,
        "IoBuildDeviceIoControlRequest" => io_build_device_io_control_request,
        "IofCallDriver" => iof_call_driver,
        "KeInitializeEvent" => ke_initialize_event,
        "KeWaitForSingleObject" => ke_wait_for_single_object,
        "MmGetPhysicalAddress" => mm_get_physical_address,
        "KeQueryPerformanceCounter" => ke_query_performance_counter,
        "KeInitializeTimerEx" => ke_initialize_timer_ex,
        "KeInitializeDpc" => ke_initialize_dpc,
        "KeSetTimerEx" => ke_set_timer_ex,
        "KeCancelTimer" => ke_cancel_timer,
        "KeFlushQueuedDpcs" => ke_flush_queued_dpcs,
        "ObfDereferenceObject" => obf_dereference_object,
        "DbgPrintEx" => dbg_print_ex,
        "EtwRegister" => etw_register,
        "EtwUnregister" => etw_unregister,
        "EtwWriteTransfer" => etw_write_transfer,
        "IoOpenDeviceRegistryKey" => registry::io_open_device_registry_key,
        "ZwQueryValueKey" => registry::zw_query_value_key,
        "ZwClose" => registry::zw_close,
        _ => return None,
    })
}

/// Machine code of the C-library routines ntoskrnl exports (Windows x64 convention; RDI and
/// RSI are callee-saved, DF is clear on entry).
pub(crate) fn machine_code(name: &str) -> Option<&'static [u8]> {
    Some(match name {
        // push rdi; push rsi; mov rax,rcx; mov rdi,rcx; mov rsi,rdx; mov rcx,r8; rep movsb;
        // pop rsi; pop rdi; ret
        "memcpy" => &[
            0x57, 0x56, 0x48, 0x89, 0xc8, 0x48, 0x89, 0xcf, 0x48, 0x89, 0xd6, 0x4c, 0x89, 0xc1,
            0xf3, 0xa4, 0x5e, 0x5f, 0xc3,
        ],
        // As memcpy, but backwards (std … cld) when the destination is above the source.
        "memmove" => &[
            0x57, 0x56, 0x48, 0x89, 0xc8, 0x48, 0x89, 0xcf, 0x48, 0x89, 0xd6, 0x4c, 0x89, 0xc1,
            0x48, 0x39, 0xf7, 0x77, 0x05, 0xf3, 0xa4, 0x5e, 0x5f, 0xc3, 0x48, 0x8d, 0x74, 0x0e,
            0xff, 0x48, 0x8d, 0x7c, 0x0f, 0xff, 0xfd, 0xf3, 0xa4, 0xfc, 0x5e, 0x5f, 0xc3,
        ],
        // push rdi; mov r9,rcx; mov rdi,rcx; movzx eax,dl; mov rcx,r8; rep stosb; mov rax,r9;
        // pop rdi; ret
        "memset" => &[
            0x57, 0x49, 0x89, 0xc9, 0x48, 0x89, 0xcf, 0x0f, 0xb6, 0xc2, 0x4c, 0x89, 0xc1, 0xf3,
            0xaa, 0x4c, 0x89, 0xc8, 0x5f, 0xc3,
        ],
        // push rdi; push rsi; mov rsi,rcx; mov rdi,rdx; mov rcx,r8; xor eax,eax; test rcx,rcx;
        // jz done; repe cmpsb; je done; movzx eax,[rsi-1]; movzx edx,[rdi-1]; sub eax,edx;
        // done: pop rsi; pop rdi; ret
        "memcmp" => &[
            0x57, 0x56, 0x48, 0x89, 0xce, 0x48, 0x89, 0xd7, 0x4c, 0x89, 0xc1, 0x31, 0xc0, 0x48,
            0x85, 0xc9, 0x74, 0x0e, 0xf3, 0xa6, 0x74, 0x0a, 0x0f, 0xb6, 0x46, 0xff, 0x0f, 0xb6,
            0x57, 0xff, 0x29, 0xd0, 0x5e, 0x5f, 0xc3,
        ],
        _ => return None,
    })
}

/// What an import binds to.
pub enum Binding {
    /// A host routine (through a stub).
    Host(cpu::StubFn),
    /// Machine code to place in the image's system code page.
    Code(&'static [u8]),
}

/// The binding of `module!name`, or `None` (the load fails with the name). A routine runs on
/// the calling thread's machine's instance of the image, which `current` finds.
pub fn bind(module: &str, name: &str, current: CurrentInstance) -> Option<Binding> {
    if module != "ntoskrnl.exe" {
        return None;
    }
    if let Some(code) = machine_code(name) {
        return Some(Binding::Code(code));
    }
    let h = handler(name)?;
    Some(Binding::Host(Arc::new(move |w: &[u64; 12]| {
        let Some(img) = current() else {
            eprintln!("rvgpu-simos: the PE image called ntoskrnl outside any machine");
            return StubResult::Return(0);
        };
        h(&img, w)
    })))
}

fn ret(v: u64) -> StubResult {
    StubResult::Return(v)
}

/// A UTF-16 `UNICODE_STRING` at `p`, or `None` for a NULL one or one
/// [`image_unicode_string`] refuses.
fn unicode_string(p: u64) -> Option<String> {
    if p == 0 {
        return None;
    }
    image_unicode_string(p)
}

/// The image's `UNICODE_STRING` at `p`, read without trusting it: an unreadable structure or
/// buffer is 0x50 ([`image_bytes`]); an odd length or a NULL buffer with a length is `None`.
fn image_unicode_string(p: u64) -> Option<String> {
    let head = image_bytes(p, 16)?;
    let len = usize::from(u16::from_le_bytes([head[0], head[1]]));
    let mut at = [0u8; 8];
    at.copy_from_slice(&head[8..16]);
    let buf = u64::from_le_bytes(at);
    if len % 2 != 0 || (buf == 0 && len != 0) {
        return None;
    }
    let bytes = image_bytes(buf, len)?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

// --- pool -----------------------------------------------------------------------------------

/// `ExAllocatePool2(Flags, NumberOfBytes, Tag)`: zeroed unless `POOL_FLAG_UNINITIALIZED`;
/// non-paged at IRQL <= DISPATCH_LEVEL, paged at <= APC_LEVEL; a zero tag is 0xC2/0x9B; NULL
/// when Verifier's low-resources simulation fails it.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-exallocatepool2>
fn ex_allocate_pool2(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    let (flags, size, tag) = (w[0], w[1] as usize, w[2] as u32);
    if tag == 0 {
        raise(BugCheck::new(BAD_POOL_CALLER, [BAD_POOL_ZERO_TAG, 0, 0, 0]));
        return ret(0);
    }
    let max = if flags & POOL_FLAG_PAGED != 0 {
        Irql::Apc
    } else {
        Irql::Dispatch
    };
    let irql = current_irql();
    if irql > max {
        // Under Verifier (the simulation always runs the driver so), 0xC4/0x02.
        raise(BugCheck::verifier(
            bugcheck::verifier::NONPAGED_ALLOC_ABOVE_DISPATCH,
            kirql(irql),
            0,
            0,
        ));
        return ret(0);
    }
    if flags & (POOL_FLAG_NON_PAGED | POOL_FLAG_PAGED) == 0 {
        return ret(0);
    }
    if !current_machine().is_none_or(|m| m.pool().permit()) {
        return ret(0);
    }
    let align = if size >= 4096 { 4096 } else { 16 };
    let Ok(layout) = std::alloc::Layout::from_size_align(size.max(1), align) else {
        return ret(0);
    };
    // SAFETY: non-zero size.
    let p = unsafe {
        if flags & POOL_FLAG_UNINITIALIZED != 0 {
            std::alloc::alloc(layout)
        } else {
            std::alloc::alloc_zeroed(layout)
        }
    };
    if p.is_null() {
        return ret(0);
    }
    lock(&img.kernel().pool).insert(p as usize, PoolBlock { size, tag, layout });
    ret(p as u64)
}

/// `ExFreePoolWithTag(P, Tag)`: at IRQL <= DISPATCH_LEVEL; a pointer that is not a live
/// allocation or a wrong tag is 0xC2; freeing memory that holds a set timer is 0xC7.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-exfreepoolwithtag>
///
/// The block is looked up, checked and taken out of the pool under one hold of its lock: of
/// two threads freeing the same block, one frees it and the other finds no live allocation
/// (0xC2/0x46), never both.
fn ex_free_pool_with_tag(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    let (p, tag) = (w[0] as usize, w[1] as u32);
    if irql_above(Irql::Dispatch, 0) {
        return ret(0);
    }
    let taken = take_pool_block(img.kernel(), p, tag);
    let block = match taken {
        Ok(block) => block,
        Err(b) => {
            raise(b);
            return ret(0);
        }
    };
    lock(&img.kernel().dpcs).retain(|&a, _| !(a >= p && a < p + block.size));
    // SAFETY: a live allocation of ours with its layout, taken out of the table by this call
    // alone.
    unsafe { std::alloc::dealloc(p as *mut u8, block.layout) };
    ret(0)
}

/// Takes block `p` out of the pool if freeing it with `tag` is allowed, else the bug check.
fn take_pool_block(k: &KernelState, p: usize, tag: u32) -> Result<PoolBlock, BugCheck> {
    let mut pool = lock(&k.pool);
    let Some(&block) = pool.get(&p) else {
        return Err(BugCheck::new(
            BAD_POOL_CALLER,
            [BAD_POOL_FREE_BAD_ADDRESS, p as u64, 0, 0],
        ));
    };
    if block.tag != tag {
        return Err(BugCheck::new(
            BAD_POOL_CALLER,
            [
                BAD_POOL_FREE_WRONG_TAG,
                p as u64,
                u64::from(tag),
                u64::from(block.tag),
            ],
        ));
    }
    // The timer lock is only ever taken inside the pool's, never around it.
    let set_timer = lock(&k.timers)
        .iter()
        .find(|(&a, t)| {
            a >= p && a < p + block.size && t.set.load(std::sync::atomic::Ordering::Acquire)
        })
        .map(|(&a, _)| a);
    if let Some(t) = set_timer {
        return Err(BugCheck::new(
            bugcheck::TIMER_OR_DPC_INVALID,
            [0, t as u64, p as u64, p as u64 + block.size as u64],
        ));
    }
    pool.remove(&p);
    Ok(block)
}

// --- bug check and debug output -------------------------------------------------------------

/// `KeBugCheckEx`: the machine stops with the driver's code and parameters.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kebugcheckex>
fn ke_bug_check_ex(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    raise(BugCheck::new(w[0] as u32, [w[1], w[2], w[3], w[4]]));
    StubResult::NoReturn
}

/// `DbgPrintEx(ComponentId, Level, Format, ...)`: formatted into the machine's driver log.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-dbgprintex>
fn dbg_print_ex(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    let level = match w[1] {
        0 => Level::Error,
        1 => Level::Warning,
        2 => Level::Trace,
        _ => Level::Info,
    };
    let Some(text) = format_c(w[2], &w[3..]) else {
        return ret(STATUS_SUCCESS);
    };
    // The Windows platform prefixes its messages for the debugger's output; the machine's log
    // holds the message as the Linux build logs it.
    let text = text
        .strip_prefix("rvgpu: ")
        .map(str::to_string)
        .unwrap_or(text);
    if let Some(m) = current_machine() {
        m.push_log(level, text);
    }
    ret(STATUS_SUCCESS)
}

/// The most of one string `DbgPrint` formats: its whole output is at most 512 bytes.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-dbgprint>
const DBG_PRINT_MAX: usize = 512;

/// The NUL-terminated string the image passed at `p`, cut at [`DBG_PRINT_MAX`] bytes. It is
/// read a page at a time as [`image_bytes`] reads (a page is readable whole or not at all):
/// one the image cannot read is 0x50 at its first byte there (raised, `None`).
fn c_string(p: u64) -> Option<String> {
    if p == 0 {
        return Some("(null)".into());
    }
    let mut text = Vec::new();
    let mut at = p;
    while text.len() < DBG_PRINT_MAX {
        let in_page = 4096 - (at % 4096) as usize;
        let piece = image_bytes(at, in_page.min(DBG_PRINT_MAX - text.len()))?;
        if let Some(end) = piece.iter().position(|&b| b == 0) {
            text.extend_from_slice(&piece[..end]);
            break;
        }
        text.extend_from_slice(&piece);
        let Some(next) = at.checked_add(piece.len() as u64) else {
            break;
        };
        at = next;
    }
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// The subset of DbgPrint's format the image uses (`%s`, integers, `%p`, `%%`).
fn format_c(fmt: u64, args: &[u64]) -> Option<String> {
    let f = c_string(fmt)?;
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        while matches!(
            chars.peek(),
            Some('l' | 'h' | 'z' | 'I' | '6' | '4' | '#' | '0'..='9')
        ) {
            chars.next();
        }
        let a = args.next().copied().unwrap_or(0);
        match chars.next() {
            Some('s') => out.push_str(&c_string(a)?),
            Some('d' | 'i') => out.push_str(&(a as i64).to_string()),
            Some('u') => out.push_str(&a.to_string()),
            Some('x') => out.push_str(&format!("{a:x}")),
            Some('X') => out.push_str(&format!("{a:X}")),
            Some('p') => out.push_str(&format!("{a:016X}")),
            Some('c') => out.push(char::from(a as u8)),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => {}
        }
    }
    Some(out)
}

// --- dxgkrnl registration -------------------------------------------------------------------

const DXGKRNL_SERVICE: &str = r"\Registry\Machine\System\CurrentControlSet\Services\DXGKrnl";
const DXGKRNL_DEVICE: &str = r"\Device\DxgKrnl";
/// `IOCTL_VIDEO_DDI_FUNC_REGISTER` (ntddvdeo.h): answered with `DpiInitialize`.
const IOCTL_VIDEO_DDI_FUNC_REGISTER: u32 = 0x0023_003F;
/// The request answered with `DpiInitializeWin8` (\[D24\] 24H2 `DxgkInternalDeviceIoctl` @
/// 0x1403A9E70), which the Windows 8 and later displib sends first (BR-06).
const IOCTL_DXGK_INITIALIZE_WIN8: u32 = 0x0023_0047;

/// `ZwLoadDriver` (PASSIVE_LEVEL): dxgkrnl is loaded on a running system, so loading it again
/// answers `STATUS_IMAGE_ALREADY_LOADED`; any other service is not installed here.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwloaddriver>
fn zw_load_driver(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    match unicode_string(w[0]) {
        Some(s) if s.eq_ignore_ascii_case(DXGKRNL_SERVICE) => ret(STATUS_IMAGE_ALREADY_LOADED),
        Some(_) => ret(STATUS_OBJECT_NAME_NOT_FOUND),
        None => ret(STATUS_INVALID_PARAMETER),
    }
}

/// `IoGetDeviceObjectPointer` (PASSIVE_LEVEL): `\Device\DxgKrnl` and a referenced file object.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-iogetdeviceobjectpointer>
fn io_get_device_object_pointer(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    if w[2] == 0 || w[3] == 0 {
        return ret(STATUS_INVALID_PARAMETER);
    }
    match unicode_string(w[0]) {
        Some(s) if s.eq_ignore_ascii_case(DXGKRNL_DEVICE) => {
            img.kernel()
                .file_refs
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            if !image_write(w[2], img.kernel().file_object.as_ptr() as u64)
                || !image_write(w[3], img.kernel().device_object.as_ptr() as u64)
            {
                return ret(STATUS_INVALID_PARAMETER);
            }
            ret(STATUS_SUCCESS)
        }
        _ => ret(STATUS_OBJECT_NAME_NOT_FOUND),
    }
}

/// `IoBuildDeviceIoControlRequest` (PASSIVE_LEVEL): an IRP for the named device.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-iobuilddeviceiocontrolrequest>
fn io_build_device_io_control_request(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(0);
    }
    if w[1] != img.kernel().device_object.as_ptr() as u64 {
        return ret(0);
    }
    if !current_machine().is_none_or(|m| m.pool().permit()) {
        return ret(0);
    }
    let irp = Box::new([0u64; 32]);
    let at = irp.as_ptr() as usize;
    lock(&img.kernel().irp_storage).push(irp);
    lock(&img.kernel().irps).insert(
        at,
        (
            w[0] as u32,
            w[4] as usize,
            w[5] as u32,
            w[7] as usize,
            w[8] as usize,
        ),
    );
    ret(at as u64)
}

/// `IofCallDriver`: Dxgkrnl's internal device-control dispatch, completed at once, as \[D24\]
/// 24H2 `DxgkInternalDeviceIoctl` @ 0x1403A9E70 answers the registration requests (BR-06):
/// 0x23003F (`DpiInitialize`) and 0x230047 (`DpiInitializeWin8`; both reach
/// `DpiInitializeInternal`, which differs only in a flag it keeps for the driver) write the
/// routine's address into the METHOD_NEITHER output buffer, 8 bytes, when it is at least 8
/// bytes long and not NULL, else fail with `STATUS_BUFFER_TOO_SMALL`. Any other request is
/// `STATUS_INVALID_DEVICE_REQUEST` (simulation limit: the KMDOD, uninitialise, report-software-
/// device, feature and interface requests Windows also answers are not modelled). A Dxgkrnl
/// configured as older than Windows 8 (`OsConfig::dxgkrnl_knows_win8_initialize` off) does
/// not know 0x230047.
fn iof_call_driver(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    let Some((code, out, out_len, _event, iosb)) =
        lock(&img.kernel().irps).remove(&(w[1] as usize))
    else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    lock(&img.kernel().irp_storage).retain(|b| b.as_ptr() as u64 != w[1]);
    let known = code == IOCTL_VIDEO_DDI_FUNC_REGISTER
        || (code == IOCTL_DXGK_INITIALIZE_WIN8
            && crate::adapter::load::dxgkrnl_knows_win8_initialize());
    let (status, info) = if !known {
        (STATUS_INVALID_DEVICE_REQUEST, 0)
    } else if out == 0 || out_len < 8 {
        (STATUS_BUFFER_TOO_SMALL, 0)
    } else {
        if !image_write(out as u64, img.dxgk_initialize_stub() as u64) {
            return ret(STATUS_INVALID_PARAMETER);
        }
        (STATUS_SUCCESS, 8)
    };
    lock(&img.kernel().requests).push((code, status as u32 as i32));
    // The caller's IO_STATUS_BLOCK (Status, Information), given when the IRP was built; its
    // second word's address wraps as the processor's would.
    if iosb != 0
        && !(image_write(iosb as u64, status) && image_write((iosb as u64).wrapping_add(8), info))
    {
        return ret(STATUS_INVALID_PARAMETER);
    }
    ret(status)
}

/// `KeInitializeEvent`: the event is signalled by the completion above, which is synchronous.
fn ke_initialize_event(_img: &Arc<dyn Instance>, _w: &[u64; 12]) -> StubResult {
    ret(0)
}

/// `KeWaitForSingleObject`: only the IRP's event is waited on, and only after a request
/// returned `STATUS_PENDING`, which this dxgkrnl never does; a wait here would never end.
fn ke_wait_for_single_object(_img: &Arc<dyn Instance>, _w: &[u64; 12]) -> StubResult {
    if let Some(m) = current_machine() {
        m.raise_sim_error("KeWaitForSingleObject on an object that is never signalled");
    }
    ret(STATUS_INVALID_PARAMETER)
}

/// `ObfDereferenceObject`: the file object from `IoGetDeviceObjectPointer`.
fn obf_dereference_object(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if w[0] == img.kernel().file_object.as_ptr() as u64 {
        let n = img
            .kernel()
            .file_refs
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            - 1;
        if n < 0 {
            // Dereferencing more than referenced: Windows' 0x18 REFERENCE_BY_POINTER.
            raise(BugCheck::new(0x18, [0, w[0], 1, 0]));
        }
        return ret(n as u64);
    }
    raise(BugCheck::new(0x18, [0, w[0], 0, 0]));
    ret(0)
}

// --- time and memory ------------------------------------------------------------------------

/// `MmGetPhysicalAddress`: the bus address of contiguous memory the simulated Dxgkrnl handed
/// out (0 for anything else).
fn mm_get_physical_address(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    ret(kernel::dma_bus_address(w[0] as usize).unwrap_or(0))
}

/// `KeQueryPerformanceCounter`: the simulation's QPC.
fn ke_query_performance_counter(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if w[0] != 0 && !image_write(w[0], crate::base::clock::QPC_HZ) {
        return ret(0);
    }
    ret(crate::base::clock::qpc())
}

// --- timers and DPCs ------------------------------------------------------------------------

fn timer(img: &Arc<dyn Instance>, at: u64) -> Arc<PeTimer> {
    lock(&img.kernel().timers)
        .entry(at as usize)
        .or_insert_with(|| {
            Arc::new(PeTimer {
                sim: ktimer::SimTimer::default(),
                dpc: std::sync::atomic::AtomicUsize::new(0),
                set: std::sync::atomic::AtomicBool::new(false),
                image: Arc::downgrade(img),
            })
        })
        .clone()
}

/// `KeInitializeTimerEx`: initialising a timer that is set corrupts the kernel's timer list.
fn ke_initialize_timer_ex(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    let t = timer(img, w[0]);
    if t.set.load(std::sync::atomic::Ordering::Acquire) {
        if let Some(m) = current_machine() {
            m.raise_sim_error(
                "KeInitializeTimerEx on a set KTIMER (corrupts the kernel's timer list on Windows)",
            );
        }
    }
    ret(0)
}

/// `KeInitializeDpc`: records the routine and its context.
fn ke_initialize_dpc(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    lock(&img.kernel().dpcs).insert(w[0] as usize, (w[1] as usize, w[2] as usize));
    ret(0)
}

/// What the simulated kernel's timer runs: the image's DPC routine
/// `(Dpc, DeferredContext, SystemArgument1, SystemArgument2)` at DISPATCH_LEVEL.
///
/// # Safety
/// `context` is a [`PeTimer`] of a live image (see its documentation).
unsafe fn run_dpc(context: *const core::ffi::c_void) {
    // SAFETY: the caller's contract.
    let t = unsafe { &*context.cast::<PeTimer>() };
    let Some(img) = t.image.upgrade() else { return };
    let dpc = t.dpc.load(std::sync::atomic::Ordering::Acquire);
    let Some((routine, ctx)) = lock(&img.kernel().dpcs).get(&dpc).copied() else {
        return;
    };
    let _ = cpu::call(routine, &[dpc as u64, ctx as u64, 0, 0]);
}

/// `KeSetTimerEx(Timer, DueTime, Period, Dpc)` (<= DISPATCH_LEVEL): a periodic timer with a
/// DPC, set on the simulated kernel's clock; returns whether it was already set.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-kesettimerex>
fn ke_set_timer_ex(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Dispatch, 0) {
        return ret(0);
    }
    let t = timer(img, w[0]);
    let was = t.set.swap(true, std::sync::atomic::Ordering::AcqRel);
    if was {
        if let Some(armed) = ktimer::cancel_keep(&t.sim) {
            lock(&img.kernel().cancelled).push(armed);
        }
    }
    let period = u32::try_from(w[2] as i32).unwrap_or(0);
    t.dpc
        .store(w[3] as usize, std::sync::atomic::Ordering::Release);
    let ctx = Arc::as_ptr(&t) as usize;
    let routine = ktimer::TimerRun {
        address: run_dpc as *const () as usize as u64,
        context: ctx as u64,
        // SAFETY: `ctx` is this image's live `PeTimer` while the timer is set.
        run: Arc::new(move || unsafe { run_dpc(ctx as *const core::ffi::c_void) }),
    };
    let ok = ktimer::arm(&t.sim, period.max(1), routine);
    if !ok {
        t.set.store(false, std::sync::atomic::Ordering::Release);
    }
    ret(u64::from(was))
}

/// `KeCancelTimer` (<= DISPATCH_LEVEL): returns whether it was set; a DPC already running is
/// waited for by `KeFlushQueuedDpcs`.
fn ke_cancel_timer(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Dispatch, 0) {
        return ret(0);
    }
    let t = timer(img, w[0]);
    let was = t.set.swap(false, std::sync::atomic::Ordering::AcqRel);
    if let Some(armed) = ktimer::cancel_keep(&t.sim) {
        lock(&img.kernel().cancelled).push(armed);
    }
    ret(u64::from(was))
}

/// `KeFlushQueuedDpcs` (PASSIVE_LEVEL): waits for the DPCs of cancelled timers.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-keflushqueueddpcs>
fn ke_flush_queued_dpcs(img: &Arc<dyn Instance>, _w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(0);
    }
    let cancelled: Vec<_> = std::mem::take(&mut *lock(&img.kernel().cancelled));
    for a in cancelled {
        ktimer::wait_not_running(&a);
    }
    ret(0)
}

// --- ETW ------------------------------------------------------------------------------------

/// `MAX_EVENT_DATA_DESCRIPTORS` (evntprov.h): the most data descriptors one write may pass.
const MAX_EVENT_DATA_DESCRIPTORS: u64 = 128;
/// The largest event ETW delivers (64 KiB, the session buffer limit); a larger one is dropped
/// here with `STATUS_INVALID_PARAMETER` (simulation's choice: Windows counts it as lost).
const MAX_EVENT_BYTES: usize = 0xFFFF;
/// The Security-Auditing provider {54849625-5478-4994-a5ba-3e3b0328c30d}, which 24H2
/// `EtwpRegisterKMProvider` @ 0x140A57524 refuses to register (`STATUS_ACCESS_DENIED`).
const SECURITY_PROVIDER: rvgpu_kmd::etw::Guid = rvgpu_kmd::etw::Guid {
    Data1: 0x5484_9625,
    Data2: 0x5478,
    Data3: 0x4994,
    Data4: [0xa5, 0xba, 0x3e, 0x3b, 0x03, 0x28, 0xc3, 0x0d],
};

/// `EVENT_DESCRIPTOR` as the image lays it out.
#[derive(zerocopy::FromBytes, zerocopy::KnownLayout, zerocopy::Immutable)]
#[repr(C)]
struct RawEventDescriptor {
    id: u16,
    version: u8,
    channel: u8,
    level: u8,
    opcode: u8,
    task: u16,
    keyword: u64,
}

/// `EVENT_DATA_DESCRIPTOR` as the image lays it out.
#[derive(zerocopy::FromBytes, zerocopy::KnownLayout, zerocopy::Immutable)]
#[repr(C)]
struct RawDataDescriptor {
    ptr: u64,
    size: u32,
    kind: u8,
    reserved1: u8,
    reserved2: u16,
}

/// The `len` bytes the image points at `p`, copied without trusting the pointer
/// ([`super::checked`]): an address the image cannot read is the page fault Windows takes
/// inside the routine, bug check 0x50 naming it, raised here (`None`).
pub(super) fn image_bytes(p: u64, len: usize) -> Option<Vec<u8>> {
    super::checked::read_bytes(p, len, 0).map_err(raise).ok()
}

/// Writes `v` where the image points (`out`), as [`image_bytes`] reads: an address it cannot
/// write is bug check 0x50 (`false`).
fn image_write(out: u64, v: u64) -> bool {
    super::checked::write_bytes(out, &v.to_le_bytes(), 0)
        .map_err(raise)
        .is_ok()
}

/// `EtwRegister(ProviderId, EnableCallback, CallbackContext, RegHandle)` (PASSIVE_LEVEL), as
/// 24H2 `EtwpRegisterKMProvider` @ 0x140A57524 does it: `*RegHandle = 0` first (a NULL
/// `RegHandle` or `ProviderId` is a fault there: 0x50 here), the security provider refused,
/// a context without a callback `STATUS_INVALID_PARAMETER`; the callback runs before the
/// return when a session already enables the provider.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-etwregister>
fn etw_register(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let (guid_at, callback, context, out) = (w[0], w[1], w[2], w[3]);
    if out == 0 || guid_at == 0 {
        raise(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [
                if out == 0 { 0 } else { guid_at },
                u64::from(out == 0) * 2,
                0,
                0,
            ],
        ));
        return ret(STATUS_INVALID_PARAMETER);
    }
    if !image_write(out, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let Some(b) = image_bytes(guid_at, 16) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    let guid = rvgpu_kmd::etw::Guid {
        Data1: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        Data2: u16::from_le_bytes([b[4], b[5]]),
        Data3: u16::from_le_bytes([b[6], b[7]]),
        Data4: [b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]],
    };
    if guid == SECURITY_PROVIDER {
        return ret(STATUS_ACCESS_DENIED);
    }
    if callback == 0 && context != 0 {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let cb = (callback != 0).then_some(crate::etw::Callback::Pe(
        callback as usize,
        context,
        run_etw_callback,
    ));
    // The handle is written before the callback runs, as the decompiled routine stores it
    // before calling the callback.
    crate::etw::register_then(guid, cb, |h| {
        // Written a moment ago, so it is writable.
        let _ = image_write(out, h);
    });
    ret(STATUS_SUCCESS)
}

/// `EtwUnregister(RegHandle)` (PASSIVE_LEVEL): `STATUS_INVALID_HANDLE` for a handle that is
/// no registration.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-etwunregister>
fn etw_unregister(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    if crate::etw::unregister(w[0]) {
        ret(STATUS_SUCCESS)
    } else {
        ret(STATUS_INVALID_HANDLE)
    }
}

/// `EtwWriteTransfer(RegHandle, EventDescriptor, ActivityId, RelatedActivityId,
/// UserDataCount, UserData)` (any IRQL): the event goes to this machine's session, which
/// decodes it from its TraceLogging metadata. An unknown handle is `STATUS_INVALID_HANDLE`;
/// more than `MAX_EVENT_DATA_DESCRIPTORS` descriptors `STATUS_INVALID_PARAMETER`; a NULL
/// descriptor pointer faults (0x50).
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-etwwritetransfer>
fn etw_write_transfer(_img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    use zerocopy::FromBytes;
    let (handle, desc_at, count, data_at) = (w[0], w[1], w[4] & 0xFFFF_FFFF, w[5]);
    let Some(m) = current_machine() else {
        return ret(STATUS_INVALID_HANDLE);
    };
    let Some(guid) = crate::etw::provider_of(handle) else {
        return ret(STATUS_INVALID_HANDLE);
    };
    if count > MAX_EVENT_DATA_DESCRIPTORS {
        return ret(STATUS_INVALID_PARAMETER);
    }
    if desc_at == 0 || (count != 0 && data_at == 0) {
        raise(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [0, 0, 0, 0],
        ));
        return ret(STATUS_INVALID_PARAMETER);
    }
    let Some(desc) = image_bytes(desc_at, 16) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    let Ok(d) = RawEventDescriptor::read_from_bytes(&desc) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    let Some(raw) = image_bytes(data_at, count as usize * 16) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    let Ok(raw) = <[RawDataDescriptor]>::ref_from_bytes(&raw) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    let total = raw.iter().map(|r| r.size as usize).sum::<usize>();
    if total > MAX_EVENT_BYTES || raw.iter().any(|r| r.size != 0 && r.ptr == 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let mut copies = Vec::with_capacity(raw.len());
    for r in raw {
        let Some(b) = image_bytes(r.ptr, r.size as usize) else {
            return ret(STATUS_INVALID_PARAMETER);
        };
        copies.push((r.kind, b));
    }
    let parts: Vec<(u8, &[u8])> = copies.iter().map(|(k, b)| (*k, b.as_slice())).collect();
    let descriptor = rvgpu_kmd::etw::EventDescriptor {
        id: d.id,
        version: d.version,
        channel: d.channel,
        level: d.level,
        opcode: d.opcode,
        task: d.task,
        keyword: d.keyword,
    };
    m.etw().deliver(guid, &descriptor, &parts);
    ret(STATUS_SUCCESS)
}

/// Runs an ETW enable callback of the image on the emulated processor (a fault in it is raised
/// on the machine by the emulator).
fn run_etw_callback(routine: usize, args: &[u64]) {
    let _ = super::cpu::call(routine, args);
}

#[cfg(test)]
#[path = "ntoskrnl_tests.rs"]
mod tests;
