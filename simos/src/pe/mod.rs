//! The shipped driver image under the simulated OS: `rvgpu.sys`, loaded and run in an x86-64
//! emulator.
//!
//! A machine configured with [`DriverBuild::Pe`] does not link the driver: it maps
//! `rvgpu.sys` (what `scripts/package.sh` builds) as the Windows loader would
//! ([`image`]), binds its ntoskrnl imports to the simulated kernel ([`ntoskrnl`]) and runs
//! `DriverEntry` on an emulated processor ([`cpu`]). The image finds dxgkrnl as it does on
//! Windows (`ZwLoadDriver`, `IoGetDeviceObjectPointer`, `IOCTL_VIDEO_DDI_FUNC_REGISTER`) and
//! registers its table with the simulated `DxgkInitialize`; each slot it fills is replaced by a
//! host forwarder of the slot's type ([`rvgpu_ddi::abi`]), so every DDI the simulated Dxgkrnl
//! calls — through the same [`crate::adapter::ddi`] path, with the same rules — executes the
//! image's machine code. In the other direction, the `DXGKRNL_INTERFACE` handed to
//! `DxgkDdiStartDevice` (and the feature interface `DxgkCbQueryServices` returns) point at stubs
//! that run the simulated callbacks, of the kind that reads the image's pointers through the
//! checked copy (`checked`). Register BARs the image maps are emulated MMIO regions
//! routed to the same device model the Linux build reaches. A debugger attaches through
//! [`gdb`] (`RVGPU_GDB`).

pub mod arena;
mod calls;
pub(crate) mod checked;
pub mod cpu;
pub mod exe;
pub mod gdb;
pub mod image;
pub mod ntoskrnl;
pub mod umd;
pub mod unicorn;

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, RwLock};

use rvgpu_ddi::abi::{AbiSlot, Callee, SlotVisitor};
use rvgpu_ddi::dxgkrnl::DXGKRNL_INTERFACE;
use rvgpu_ddi::feature::DXGKDDI_FEATURE_INTERFACE;
use rvgpu_ddi::init::DRIVER_INITIALIZATION_DATA;
use rvgpu_ddi::slot_id;

use self::cpu::{Stop, StubResult, Stubs};
use crate::adapter::context;
use crate::adapter::state::{DriverImage, MachineState};
use crate::base::lock::lock;
pub use crate::install::loader;
pub use crate::os::driver_build::DriverBuild;

/// The workspace's root (where `scripts/package.sh` lives).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds `rvgpu.sys` as `scripts/package.sh` does (same profile, target, linker and target
/// directory — `RVGPU_TARGET_DIR`, else `target/pe` — so the two share their work) and returns
/// its path; once per process. An image given by `RVGPU_SYS` is used as it is.
pub fn build_image() -> Result<PathBuf, String> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    given_or_built(&BUILT, "RVGPU_SYS", || {
        build_cdylib("rvgpu", &[], &[], "rvgpu.dll", "rvgpu.sys")
    })
}

/// Builds `rvgpu_umd.dll` as `scripts/package.sh` does (the `dll` feature, no C runtime, no
/// entry point; same profile, target, linker and target directory as [`build_image`]) and
/// returns its path; once per process. A DLL given by `RVGPU_UMD_DLL` is used as it is.
pub fn build_umd() -> Result<PathBuf, String> {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    given_or_built(&BUILT, "RVGPU_UMD_DLL", || {
        build_cdylib(
            "rvgpu-umd",
            &["--features", "dll"],
            &[
                "-C",
                "link-arg=/NODEFAULTLIB",
                "-C",
                "link-arg=/NOENTRY",
                "-C",
                "link-arg=/DEBUG:FULL",
                "-C",
                "link-arg=/PDBALTPATH:%_PDB%",
                "-C",
                "link-arg=/OPT:REF,ICF",
            ],
            "rvgpu_umd.dll",
            "rvgpu_umd.dll",
        )
    })
}

/// The file environment variable `var` names, else what `build` builds; once per process
/// (`built` keeps the answer).
fn given_or_built(
    built: &std::sync::OnceLock<Result<PathBuf, String>>,
    var: &str,
    build: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<PathBuf, String> {
    built
        .get_or_init(|| match std::env::var_os(var) {
            Some(p) => Ok(PathBuf::from(p)),
            None => build(),
        })
        .clone()
}

/// `cargo rustc -p package --profile driver --target x86_64-pc-windows-msvc … --crate-type
/// cdylib [-- rustc_args]`, as `scripts/package.sh` runs it; returns the built file.
fn build_cdylib(
    package: &str,
    cargo_args: &[&str],
    rustc_args: &[&str],
    file: &str,
    shipped: &str,
) -> Result<PathBuf, String> {
    let root = workspace_root();
    let target = "x86_64-pc-windows-msvc";
    let target_dir = std::env::var_os("RVGPU_TARGET_DIR")
        .map_or_else(|| root.join("target").join("pe"), PathBuf::from);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(&root)
        .args(["rustc", "-q", "-p", package])
        .args(cargo_args)
        .args(["--profile", "driver", "--target", target])
        .arg("--target-dir")
        .arg(&target_dir)
        .args([
            "--config",
            &format!("target.{target}.linker=\"rust-lld\""),
            "--crate-type",
            "cdylib",
        ]);
    if !rustc_args.is_empty() {
        cmd.arg("--").args(rustc_args);
    }
    let out = cmd
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .map_err(|e| format!("cannot run cargo to build {shipped}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building {shipped} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(target_dir.join(target).join("driver").join(file))
}

/// Index of the slots the bridge treats specially.
const SYNC_ID: usize = slot_id!(DXGKRNL_INTERFACE::SLOT_NAMES, "DxgkCbSynchronizeExecution");
const START_DEVICE_ID: usize =
    slot_id!(DRIVER_INITIALIZATION_DATA::SLOT_NAMES, "DxgkDdiStartDevice");
const QUERY_SERVICES_ID: usize = slot_id!(DXGKRNL_INTERFACE::SLOT_NAMES, "DxgkCbQueryServices");
/// Forwarder ids of the feature interface the image returns from `DxgkDdiQueryInterface`
/// (after the table's own slot ids).
const FEATURE_BASE: usize = 1024;

/// The image mapped once per process (per file): its code, its bound imports and the
/// `DxgkInitialize` stub. Machines share it, as the Linux build's machines share one set of
/// driver statics (and as Windows' adapters share one loaded driver); a machine's kernel
/// objects and pool are its own ([`PeImage`]). Mapped once, the code is translated once for
/// every machine and processor.
struct Loaded {
    image: image::Image,
    path: PathBuf,
    /// Keeps the import stubs alive.
    _stubs: Arc<Stubs>,
    dxgk_initialize: usize,
}

/// What the image's imports and the `DxgkInitialize` stub run on: the calling thread's
/// machine's instance.
fn current_image() -> Option<Arc<PeImage>> {
    context::current_machine().and_then(|m| image_of(&m))
}

/// [`current_image`] as the simulated kernel's routines take it.
fn current_instance() -> Option<Arc<dyn ntoskrnl::Instance>> {
    current_image().map(|i| i as Arc<dyn ntoskrnl::Instance>)
}

/// A mapped file: path, length and modification time.
type FileKey = (PathBuf, u64, std::time::SystemTime);

/// Images mapped once per process, by file: a rebuilt file (another length or modification
/// time) is mapped anew, an unchanged one shares its mapping and its translated code.
pub(crate) struct ImageCache<T>(Mutex<Vec<(FileKey, Arc<T>)>>);

impl<T> ImageCache<T> {
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// The mapping of the file at `path` (`what` names it in errors), made by `map` on first
    /// use.
    pub(crate) fn get(
        &self,
        path: &Path,
        what: &str,
        map: impl FnOnce(&Path) -> Result<T, String>,
    ) -> Result<Arc<T>, String> {
        let meta = std::fs::metadata(path).map_err(|e| {
            format!(
                "cannot read the {what} {}: {e} (build it with `bash scripts/package.sh`)",
                path.display()
            )
        })?;
        let key = (
            path.to_path_buf(),
            meta.len(),
            meta.modified().unwrap_or(std::time::UNIX_EPOCH),
        );
        let mut cache = lock(&self.0);
        if let Some((_, l)) = cache.iter().find(|(k, _)| *k == key) {
            return Ok(l.clone());
        }
        let l = Arc::new(map(path)?);
        cache.push((key, l.clone()));
        Ok(l)
    }
}

static LOADED: ImageCache<Loaded> = ImageCache::new();

impl Loaded {
    /// The mapping of the file at `path` (mapped on first use; a rebuilt file is mapped anew).
    fn get(path: &Path) -> Result<Arc<Self>, String> {
        LOADED.get(path, "driver image", Self::map)
    }

    fn map(path: &Path) -> Result<Self, String> {
        let data = std::fs::read(path)
            .map_err(|e| format!("cannot read the driver image {}: {e}", path.display()))?;
        let img = image::Image::map(&data)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        gdb::note_module(name.as_deref().unwrap_or("rvgpu.sys"), img.base, img.size);
        cpu::register_range(img.base, img.size, cpu::Range::Ram);
        cpu::register_count_range(img.base, img.base + img.size);
        let stubs = Stubs::new(64)?;
        let specials: Arc<[_]> = img.specials.clone().into();
        cpu::register_specials(specials);
        let mut code_page = Vec::new();
        for i in &img.imports {
            match ntoskrnl::bind(&i.module, &i.name, current_instance) {
                Some(ntoskrnl::Binding::Host(f)) => img.bind(i, stubs.add(&i.name, f)?),
                Some(ntoskrnl::Binding::Code(bytes)) => code_page.push((i.clone(), bytes)),
                None => {
                    return Err(format!(
                        "the image imports {}!{}, which the simulated kernel does not implement",
                        i.module, i.name
                    ))
                }
            }
        }
        // The C-library routines: machine code in a page of their own.
        place_code(&img, &code_page)?;
        let dxgk_initialize = stubs.add(
            "DxgkInitialize",
            Arc::new(|w: &[u64; 12]| match current_image() {
                Some(img) => img.dxgk_initialize(w),
                None => StubResult::Return(STATUS_UNSUCCESSFUL),
            }),
        )?;
        Ok(Self {
            image: img,
            path: path.to_path_buf(),
            _stubs: stubs,
            dxgk_initialize,
        })
    }
}

const STATUS_UNSUCCESSFUL: u64 = rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL as u32 as u64;

/// A machine's instance of the image: the shared mapping, and what Windows keeps per loaded
/// driver — its pool, timers and DPCs, the table it registered, the callback tables it got.
pub struct PeImage {
    loaded: Arc<Loaded>,
    /// Stubs for the simulated OS's callbacks handed to this machine's driver.
    stubs: Arc<Stubs>,
    /// The image's code address behind each forwarder id.
    ddi: RwLock<HashMap<usize, usize>>,
    /// Stubs made for host functions the image was handed, by host address.
    host_stubs: Mutex<HashMap<usize, usize>>,
    /// The same stubs by the name of the routine they run (the last one made of a name).
    named_stubs: Arc<Mutex<HashMap<&'static str, usize>>>,
    /// Translated callback tables handed to StartDevice (kept alive: the image may keep the
    /// pointer while it copies).
    #[allow(clippy::vec_box, reason = "the image holds the table's address")]
    interfaces: Mutex<Vec<Box<DXGKRNL_INTERFACE>>>,
    /// The kernel objects and pool of this instance.
    pub kernel: ntoskrnl::KernelState,
    /// Leave the pool allocated when the instance goes (see `keep_pool`).
    keep_pool: std::sync::atomic::AtomicBool,
}

// SAFETY: the raw pointers inside (handles in the translated callback tables, the kernel
// objects' addresses) are plain data shared with the image; every mutable part is behind a lock.
unsafe impl Send for PeImage {}
// SAFETY: as above.
unsafe impl Sync for PeImage {}

impl std::fmt::Debug for PeImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeImage")
            .field("path", &self.loaded.path)
            .field("base", &format_args!("{:#x}", self.loaded.image.base))
            .finish_non_exhaustive()
    }
}

impl Drop for PeImage {
    fn drop(&mut self) {
        cpu::drop_stubs(&self.stubs);
        // Pool the driver still held goes with the instance, unless the machine ended with
        // adapters the shared driver statics may still reach (`keep_pool`).
        if !self.keep_pool.load(std::sync::atomic::Ordering::Acquire) {
            self.kernel.free_all();
        }
    }
}

impl PeImage {
    /// An instance of the image at `path` (mapped once per process). Fails with the name of
    /// an import the simulated kernel does not implement, or when the emulator cannot be
    /// loaded (with the command that installs it).
    pub fn load(path: &Path) -> Result<Arc<Self>, String> {
        unicorn::api()?;
        let loaded = Loaded::get(path)?;
        Ok(Arc::new(PeImage {
            loaded,
            stubs: Stubs::new(256)?,
            ddi: RwLock::new(HashMap::new()),
            host_stubs: Mutex::new(HashMap::new()),
            named_stubs: Arc::new(Mutex::new(HashMap::new())),
            interfaces: Mutex::new(Vec::new()),
            kernel: ntoskrnl::KernelState::default(),
            keep_pool: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// The image's path.
    pub fn path(&self) -> &Path {
        &self.loaded.path
    }

    /// The image's imports, as `module!name`.
    pub fn imports(&self) -> Vec<String> {
        self.loaded
            .image
            .imports
            .iter()
            .map(|i| format!("{}!{}", i.module, i.name))
            .collect()
    }

    /// Instructions of the image the emulator handles itself (CR8 accesses and `pause`s).
    pub fn special_instructions(&self) -> usize {
        self.loaded.image.specials.len()
    }

    /// Leaves the driver's pool allocated when this instance goes: the machine ended with
    /// adapters still in the driver's adapter table, which the image's statics (shared by the
    /// process's machines) keep pointing at.
    pub fn keep_pool(&self) {
        self.keep_pool
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Runs `DriverEntry(DriverObject, RegistryPath)`.
    pub fn driver_entry(
        &self,
        driver_object: *mut c_void,
        registry_path: *const c_void,
    ) -> Result<i32, Stop> {
        cpu::call(
            self.loaded.image.entry,
            &[driver_object as u64, registry_path as u64],
        )
        .map(|v| v as u32 as i32)
    }

    /// The simulated `DxgkInitialize`, reached through the IOCTL's answer: the image's table is
    /// read, every filled slot replaced by a forwarder to the image's code, and the copy handed
    /// to [`crate::dxgkrnl::callbacks::ffi::sim_dxgk_initialize`] — which checks and copies it as for the
    /// Linux build.
    fn dxgk_initialize(self: &Arc<Self>, w: &[u64; 12]) -> StubResult {
        let (dobj, reg, table) = (w[0] as *mut c_void, w[1] as *const c_void, w[2]);
        let status = if table == 0 {
            // SAFETY: a null table is one of the cases the simulated DxgkInitialize checks.
            unsafe {
                crate::dxgkrnl::callbacks::ffi::sim_dxgk_initialize(dobj, reg, std::ptr::null())
            }
        } else {
            // Read as Dxgkrnl reads it, a copy; memory the image cannot read is 0x50.
            let Some(bytes) =
                ntoskrnl::image_bytes(table, std::mem::size_of::<DRIVER_INITIALIZATION_DATA>())
            else {
                return StubResult::Return(0);
            };
            // SAFETY: `bytes` holds a whole DRIVER_INITIALIZATION_DATA (its size, copied from
            // the image), read unaligned from the vector.
            let mut t = unsafe {
                bytes
                    .as_ptr()
                    .cast::<DRIVER_INITIALIZATION_DATA>()
                    .read_unaligned()
            };
            t.visit_slots(&mut DdiBridge { image: self });
            // SAFETY: a valid table on this frame for the duration of the call.
            unsafe { crate::dxgkrnl::callbacks::ffi::sim_dxgk_initialize(dobj, reg, &t) }
        };
        StubResult::Return(status as u32 as u64)
    }

    /// The image's code behind DDI slot `id` (`DRIVER_INITIALIZATION_DATA::SLOT_NAMES` order).
    pub fn code_address(&self, id: usize) -> Option<usize> {
        self.ddi
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .copied()
    }

    /// Records `stub`, the image's stub of routine `name`.
    fn name_stub(&self, name: &'static str, stub: usize) -> usize {
        lock(&self.named_stubs).insert(name, stub);
        stub
    }

    /// A stub the image can call for the host function in `slot`.
    fn host_stub<S: AbiSlot>(&self, slot: &S, name: &'static str) -> usize {
        let host = slot.addr();
        let mut cache = lock(&self.host_stubs);
        if let Some(&s) = cache.get(&host) {
            return s;
        }
        let call: unsafe fn(usize, &[u64]) -> Option<u64> = call_as::<S>;
        let stub = self
            .stubs
            .add(
                name,
                Arc::new(move |w: &[u64; 12]| {
                    // SAFETY: `host` is the simulated OS's callback of type S; the image calls it
                    // with the callback's own arguments.
                    StubResult::Return(unsafe { call(host, w) }.unwrap_or(0))
                }),
            )
            .unwrap_or(0);
        cache.insert(host, stub);
        self.name_stub(name, stub)
    }

    /// The callback table for StartDevice as the image sees it: every callback a stub. The
    /// callbacks are those of the table Dxgkrnl hands a linked driver (`i`, which
    /// `callbacks::interface_for` makes), slot for slot, of the kind that reads the image's
    /// pointers through the checked copy (`checked::Checked`).
    pub fn translate_interface(self: &Arc<Self>, i: &DXGKRNL_INTERFACE) -> *mut DXGKRNL_INTERFACE {
        let mut t = Box::new(crate::dxgkrnl::callbacks::table::<checked::Checked>(
            i.DeviceHandle,
        ));
        t.visit_slots(&mut CallbackBridge { image: self });
        let p: *mut DXGKRNL_INTERFACE = &mut *t;
        lock(&self.interfaces).push(t);
        p
    }

    /// The feature interface the image returned from `DxgkDdiQueryInterface`, with forwarders
    /// to its code in place of its routines.
    pub fn translate_feature_interface(
        &self,
        mut f: DXGKDDI_FEATURE_INTERFACE,
    ) -> DXGKDDI_FEATURE_INTERFACE {
        fn fwd<S: AbiSlot, const ID: usize>(img: &PeImage, s: &mut S) {
            let a = s.addr();
            if a != 0 {
                img.ddi
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(ID, a);
                *s = S::forwarder::<PeDdi, ID>();
            }
        }
        fwd::<_, { FEATURE_BASE }>(self, &mut f.InterfaceReference);
        fwd::<_, { FEATURE_BASE + 1 }>(self, &mut f.InterfaceDereference);
        fwd::<_, { FEATURE_BASE + 2 }>(self, &mut f.QueryFeatureSupport);
        fwd::<_, { FEATURE_BASE + 3 }>(self, &mut f.QueryFeatureInterface);
        f
    }

    /// The image's `pfnBuildTestCommandBuffer` (its kernel-mode testing interface) as a
    /// forwarder the OS can call.
    pub fn translate_build_test_command_buffer(
        &self,
        mut f: rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER,
    ) -> rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER {
        let a = f.addr();
        if a != 0 {
            self.ddi
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(FEATURE_BASE + 4, a);
            f = AbiSlot::forwarder::<PeDdi, { FEATURE_BASE + 4 }>();
        }
        f
    }

    /// Translates an interface `DxgkCbQueryServices` wrote for the image (the feature
    /// interface: its four routines become stubs).
    fn translate_services(&self, services: u64, interface: u64) {
        if services != u64::from(rvgpu_ddi::dxgkrnl::DxgkServicesFeature as u32) || interface == 0 {
            return;
        }
        // The callback just wrote a DXGK_FEATURE_INTERFACE there (it checked Size); read and
        // written back through the checked copy.
        let Some(mut f) = read_image::<rvgpu_ddi::feature::DXGK_FEATURE_INTERFACE>(interface)
        else {
            return;
        };
        let r = self.host_stub(&f.InterfaceReference, "InterfaceReference");
        let d = self.host_stub(&f.InterfaceDereference, "InterfaceDereference");
        let e = self.host_stub(&f.IsFeatureEnabled, "IsFeatureEnabled");
        let q = self.query_feature_interface_stub(&f.QueryFeatureInterface);
        // SAFETY: stub addresses, never called as host functions (the image calls them).
        unsafe {
            f.InterfaceReference = AbiSlot::from_addr(r);
            f.InterfaceDereference = AbiSlot::from_addr(d);
            f.IsFeatureEnabled = AbiSlot::from_addr(e);
            f.QueryFeatureInterface = AbiSlot::from_addr(q);
        }
        write_image(interface, &f);
    }

    /// `QueryFeatureInterface` for the image: the native-fence interface it fills holds a host
    /// routine (`GetOSCaps`), which becomes a stub.
    fn query_feature_interface_stub<S: AbiSlot>(&self, slot: &S) -> usize {
        let host = slot.addr();
        if let Some(&s) = lock(&self.host_stubs).get(&host) {
            return s;
        }
        let call: unsafe fn(usize, &[u64]) -> Option<u64> = call_as::<S>;
        let stubs = self.stubs.clone();
        let named = self.named_stubs.clone();
        let cache: Arc<Mutex<Option<usize>>> = Arc::new(Mutex::new(None));
        let stub = self
            .stubs
            .add(
                "QueryFeatureInterface",
                Arc::new(move |w: &[u64; 12]| {
                    // SAFETY: the simulated callback with the image's own arguments.
                    let st = unsafe { call(host, w) }.unwrap_or(0);
                    if st as u32 != 0 || w[1] == 0 {
                        return StubResult::Return(st);
                    }
                    // The image's argument block (the callback just used it), and the interface
                    // the callback wrote, through the checked copy.
                    let Some(args) =
                        read_image::<rvgpu_ddi::feature::DXGKARGCB_QUERYFEATUREINTERFACE>(w[1])
                    else {
                        return StubResult::Return(st);
                    };
                    if args.FeatureId == rvgpu_ddi::feature::DXGK_FEATURE_NATIVE_FENCE
                        && !args.Interface.is_null()
                    {
                        let at = args.Interface as u64;
                        let Some(mut i) =
                            read_image::<rvgpu_ddi::feature::DXGKCBINT_FEATURE_NATIVEFENCE_1>(at)
                        else {
                            return StubResult::Return(st);
                        };
                        let mut c = lock(&cache);
                        let caps_stub = match *c {
                            Some(s) => s,
                            None => {
                                let caps_host = i.GetOSCaps.addr();
                                let caps_call: unsafe fn(usize, &[u64]) -> Option<u64> =
                                    call_as_typed(&i.GetOSCaps);
                                let s = stubs
                                    .add(
                                        "GetOSCaps",
                                        Arc::new(move |w: &[u64; 12]| {
                                            // SAFETY: the simulated GetOSCaps with the image's argument.
                                            StubResult::Return(
                                                unsafe { caps_call(caps_host, w) }.unwrap_or(0),
                                            )
                                        }),
                                    )
                                    .unwrap_or(0);
                                *c = Some(s);
                                lock(&named).insert("GetOSCaps", s);
                                s
                            }
                        };
                        // SAFETY: a stub address for the image; never called as a host function.
                        i.GetOSCaps = unsafe { AbiSlot::from_addr(caps_stub) };
                        write_image(at, &i);
                    }
                    StubResult::Return(st)
                }),
            )
            .unwrap_or(0);
        lock(&self.host_stubs).insert(host, stub);
        self.name_stub("QueryFeatureInterface", stub)
    }

    /// Pool the image holds: (bytes, blocks).
    pub fn pool_in_use(&self) -> (usize, usize) {
        self.kernel.pool_in_use()
    }
}

/// A copy of the image's `T` at `at` through the checked copy; `None` when it cannot be read
/// (bug check 0x50 raised).
fn read_image<T: Copy>(at: u64) -> Option<T> {
    match checked::read_bytes(at, std::mem::size_of::<T>(), 0) {
        // SAFETY: a whole `T` of the image's, read unaligned.
        Ok(b) => Some(unsafe { b.as_ptr().cast::<T>().read_unaligned() }),
        Err(b) => {
            context::raise(b);
            None
        }
    }
}

/// Writes `v` to the image's memory at `at` through the checked copy (bug check 0x50 when it
/// cannot be written).
fn write_image<T: Copy>(at: u64, v: &T) {
    if let Err(b) = checked::write_value(at, v, 0) {
        context::raise(b);
    }
}

/// Calls the host function at `addr` as a slot of type `S`.
///
/// # Safety
/// `addr` must be a host function of type `S`, sound to call with `args`.
unsafe fn call_as<S: AbiSlot>(addr: usize, args: &[u64]) -> Option<u64> {
    // SAFETY: the caller's contract.
    let s = unsafe { S::from_addr(addr) };
    // SAFETY: as above.
    unsafe { s.call_words(args) }
}

/// [`call_as`] for the type of `_slot`.
fn call_as_typed<S: AbiSlot>(_slot: &S) -> unsafe fn(usize, &[u64]) -> Option<u64> {
    call_as::<S>
}

/// Where the table's forwarders send their calls: the current machine's image.
struct PeDdi;

impl Callee for PeDdi {
    fn call(id: usize, args: &[u64]) -> u64 {
        let Some(m) = context::current_machine() else {
            eprintln!(
                "rvgpu-simos: a DDI of the PE image was called outside any machine: {id} {}",
                std::backtrace::Backtrace::force_capture()
            );
            return 0;
        };
        let Some(img) = image_of(&m) else {
            m.raise_sim_error("a PE forwarder ran on a machine without a PE image");
            return 0;
        };
        let Some(addr) = img.code_address(id) else {
            m.raise_sim_error(format!("no image code behind forwarder {id}"));
            return 0;
        };
        // StartDevice's callback table holds host routines: the image gets stubs for them.
        let mut words = [0u64; 8];
        let n = args.len().min(8);
        words[..n].copy_from_slice(&args[..n]);
        if id == START_DEVICE_ID && words[2] != 0 {
            // SAFETY: the simulated Dxgkrnl's DXGKRNL_INTERFACE for this call.
            let host = unsafe { &*(words[2] as *const DXGKRNL_INTERFACE) };
            words[2] = img.translate_interface(host) as u64;
        }
        let args = &words[..n];
        let before = cpu::executed();
        let r = cpu::call(addr, args);
        if cpu::counting() {
            count(id, cpu::executed() - before);
        }
        if cpu::trace() {
            let name = DRIVER_INITIALIZATION_DATA::SLOT_NAMES
                .get(id)
                .copied()
                .unwrap_or("feature interface");
            eprintln!("[pe] {name}({:x?}) = {r:x?}", args);
        }
        match r {
            Ok(v) => v,
            Err(Stop::Halted) => 0,
            Err(Stop::Emulator(e)) => {
                m.raise_sim_error(format!("PE image: {e}"));
                0
            }
            // Only user-mode calls end this way; a DDI never is one.
            Err(Stop::UserException { code, .. }) => {
                m.raise_sim_error(format!("PE image: user-mode exception {code:#x} in a DDI"));
                0
            }
        }
    }
}

struct DdiBridge<'a> {
    image: &'a PeImage,
}

impl SlotVisitor for DdiBridge<'_> {
    fn visit<const ID: usize, S: AbiSlot>(&mut self, slot: &mut S) {
        if !S::CALLABLE {
            return;
        }
        let a = slot.addr();
        if a == 0 {
            return;
        }
        self.image
            .ddi
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ID, a);
        *slot = S::forwarder::<PeDdi, ID>();
    }
}

struct CallbackBridge<'a> {
    image: &'a Arc<PeImage>,
}

impl SlotVisitor for CallbackBridge<'_> {
    fn visit<const ID: usize, S: AbiSlot>(&mut self, slot: &mut S) {
        if !S::CALLABLE || slot.addr() == 0 {
            return;
        }
        let name = DXGKRNL_INTERFACE::SLOT_NAMES
            .get(ID)
            .copied()
            .unwrap_or("callback");
        let cached = lock(&self.image.host_stubs).get(&slot.addr()).copied();
        let stub = match (cached, ID) {
            (Some(s), _) => s,
            (None, SYNC_ID) => {
                let s = self.image.sync_stub(slot);
                lock(&self.image.host_stubs).insert(slot.addr(), s);
                self.image.name_stub(name, s)
            }
            (None, QUERY_SERVICES_ID) => {
                let s = self.image.query_services_stub(slot);
                lock(&self.image.host_stubs).insert(slot.addr(), s);
                self.image.name_stub(name, s)
            }
            (None, _) => self.image.host_stub(slot, name),
        };
        // SAFETY: a stub address, handed to the image; never called as a host function.
        *slot = unsafe { S::from_addr(stub) };
    }
}

/// A synchronize routine of the image with its context (`DxgkCbSynchronizeExecution`).
struct GuestRoutine {
    routine: usize,
    context: u64,
}

/// The host routine `DxgkCbSynchronizeExecution` calls under the interrupt lock: runs the
/// image's routine, returns its BOOLEAN.
unsafe extern "system" fn sync_trampoline(context: *mut c_void) -> u8 {
    // SAFETY: the GuestRoutine on the stub's frame, live for the callback.
    let g = unsafe { &*context.cast::<GuestRoutine>() };
    cpu::call(g.routine, &[g.context]).map_or(0, |v| v as u8)
}

impl PeImage {
    /// `DxgkCbSynchronizeExecution` for the image: its routine (argument 2) is image code, so
    /// the callback gets a host trampoline that runs it.
    fn sync_stub<S: AbiSlot>(&self, slot: &S) -> usize {
        let host = slot.addr();
        let call: unsafe fn(usize, &[u64]) -> Option<u64> = call_as::<S>;
        self.stubs
            .add(
                "DxgkCbSynchronizeExecution",
                Arc::new(move |w: &[u64; 12]| {
                    let g = GuestRoutine {
                        routine: w[1] as usize,
                        context: w[2],
                    };
                    let mut args = *w;
                    if g.routine != 0 {
                        args[1] = sync_trampoline as *const () as usize as u64;
                        args[2] = &g as *const GuestRoutine as u64;
                    }
                    // SAFETY: the simulated callback with the image's arguments, the routine
                    // replaced by a host trampoline that runs the image's.
                    StubResult::Return(unsafe { call(host, &args) }.unwrap_or(0))
                }),
            )
            .unwrap_or(0)
    }

    /// `DxgkCbQueryServices` for the image: the interface it returns holds host routines, which
    /// become stubs before the image sees them.
    fn query_services_stub<S: AbiSlot>(self: &Arc<Self>, slot: &S) -> usize {
        let host = slot.addr();
        let call: unsafe fn(usize, &[u64]) -> Option<u64> = call_as::<S>;
        let me = Arc::downgrade(self);
        self.stubs
            .add(
                "DxgkCbQueryServices",
                Arc::new(move |w: &[u64; 12]| {
                    // SAFETY: the simulated callback with the image's own arguments.
                    let st = unsafe { call(host, w) }.unwrap_or(0);
                    if st as u32 == 0 {
                        if let Some(img) = me.upgrade() {
                            img.translate_services(w[1], w[2]);
                        }
                    }
                    StubResult::Return(st)
                }),
            )
            .unwrap_or(0)
    }
}

/// Instructions the image executed per DDI (counting mode): name → (calls, instructions).
static COUNTS: Mutex<std::collections::BTreeMap<&'static str, (u64, u64)>> =
    Mutex::new(std::collections::BTreeMap::new());

fn count(id: usize, instructions: u64) {
    let name = DRIVER_INITIALIZATION_DATA::SLOT_NAMES
        .get(id)
        .copied()
        .unwrap_or("feature interface");
    let mut c = lock(&COUNTS);
    let first = c.is_empty();
    let e = c.entry(name).or_insert((0, 0));
    e.0 += 1;
    e.1 += instructions;
    drop(c);
    if first {
        // SAFETY: registering a plain function to run at exit.
        unsafe { libc::atexit(print_counts) };
    }
}

/// Per-DDI instruction counts of the image so far (counting mode): (DDI, calls, instructions).
pub fn instruction_counts() -> Vec<(&'static str, u64, u64)> {
    lock(&COUNTS)
        .iter()
        .map(|(n, (c, i))| (*n, *c, *i))
        .collect()
}

extern "C" fn print_counts() {
    let rows = instruction_counts();
    eprintln!("rvgpu.sys instructions per DDI call (RVGPU_PE_COUNT, executed in the emulator):");
    for (name, calls, instr) in rows {
        eprintln!(
            "  {name:<40} {calls:>8} calls {:>10.1} instructions/call",
            instr as f64 / calls.max(1) as f64
        );
    }
}

/// The image `state`'s machine runs, if it runs one.
fn image_of(state: &MachineState) -> Option<Arc<PeImage>> {
    state
        .pe()
        .cloned()
        .and_then(|image| image.into_any().downcast::<PeImage>().ok())
}

impl ntoskrnl::Instance for PeImage {
    fn kernel(&self) -> &ntoskrnl::KernelState {
        &self.kernel
    }

    /// The address the IOCTL answers with (the simulated `DxgkInitialize`).
    fn dxgk_initialize_stub(&self) -> usize {
        self.loaded.dxgk_initialize
    }
}

impl DriverImage for PeImage {
    fn path(&self) -> &Path {
        PeImage::path(self)
    }

    fn pool_in_use(&self) -> (usize, usize) {
        PeImage::pool_in_use(self)
    }

    fn keep_pool(&self) {
        PeImage::keep_pool(self);
    }

    fn translate_feature_interface(
        &self,
        f: DXGKDDI_FEATURE_INTERFACE,
    ) -> DXGKDDI_FEATURE_INTERFACE {
        PeImage::translate_feature_interface(self, f)
    }

    fn translate_build_test_command_buffer(
        &self,
        f: rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER,
    ) -> rvgpu_ddi::kmtest::PDXGKDDI_BUILDTESTCOMMANDBUFFER {
        PeImage::translate_build_test_command_buffer(self, f)
    }

    fn window_range(&self, len: usize) -> Option<NonNull<u8>> {
        window_range(len)
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// A register window for the PE image: address space the emulator routes to the device.
pub fn window_range(len: usize) -> Option<NonNull<u8>> {
    let base = arena::alloc(len, arena::Access::Window).ok()?;
    cpu::register_range(base, len, cpu::Range::Window);
    NonNull::new(base as *mut u8)
}

/// Maps the image at `path` (`None`: the one this workspace builds) for a machine and makes
/// the machine run it. A machine's load path passes the driver-store copy its install left
/// (`crate::install::install_and_load`).
pub fn attach(state: &MachineState, path: Option<&Path>) -> Result<Arc<PeImage>, String> {
    let built;
    let path = match path {
        Some(p) => p,
        None => {
            built = build_image()?;
            &built
        }
    };
    let img = PeImage::load(path)?;
    state.set_pe(img.clone());
    Ok(img)
}

/// Copies the machine code of the imports `img` binds to code (the C-library routines) into
/// one fresh arena range, 16-byte aligned each, and binds each import to its copy.
pub(crate) fn place_code(
    img: &image::Image,
    code: &[(image::Import, &'static [u8])],
) -> Result<(), String> {
    let bodies: Vec<&'static [u8]> = code.iter().map(|(_, b)| *b).collect();
    for ((i, _), at) in code.iter().zip(code_range(&bodies)?) {
        img.bind(i, at);
    }
    Ok(())
}

/// Copies each routine's machine code into one fresh arena range, 16-byte aligned each;
/// their addresses, in order.
pub(crate) fn code_range(code: &[&'static [u8]]) -> Result<Vec<usize>, String> {
    let total: usize = code.iter().map(|b| (b.len() + 15) & !15).sum();
    if total == 0 {
        return Ok(Vec::new());
    }
    let base = arena::alloc(total, arena::Access::ReadWrite)?;
    cpu::register_range(base, total, cpu::Range::Ram);
    let mut at = base;
    let mut out = Vec::with_capacity(code.len());
    for bytes in code {
        // SAFETY: inside the fresh code range just allocated (`total` covers every copy).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at as *mut u8, bytes.len()) };
        out.push(at);
        at += (bytes.len() + 15) & !15;
    }
    Ok(out)
}
