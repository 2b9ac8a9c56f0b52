//! The Windows a machine plays: one value ([`Windows`]) that names the graphics kernel and
//! how the places where that kernel's code and Microsoft's pages disagree are answered.
//!
//! Everything that differs between Windows builds asks this value: the feature database
//! ([`Windows::supports_feature`], BR-110..112), the installer (the build number an INF's
//! models decoration is held against, [`Windows::build_number`]), the start checks that differ
//! by build ([`Windows::ums_requires_slot_1368`], [`Windows::zero_segments_accepted`]) and the
//! answers to every disagreement ([`Windows::reading`], [`super::answers`]). So a machine
//! cannot claim one build while playing another's rule.
//!
//! The answers follow the kernel by default: each kernel's decompiled code, as far as it was
//! read (24H2's flows where nothing else was read). Microsoft's pages are the other choice
//! ([`Windows::with_pages`]): the pages answer every disagreement while the build facts stay
//! the kernel's. A test that needs one answer changed (a test knob no Windows plays, such as
//! [`super::answers::PagingWork::InThunk`]) says so with [`Windows::answering`]. Registry
//! values and the simulation's own switches stay separate fields of
//! [`super::OsConfig`].
//!
//! `RVGPU_WINDOWS` (or [`Windows::set_default`], the harness's `--windows`) chooses the value
//! of every machine configured from then on; [`Windows::parse`] reads both.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, RwLock};

use rvgpu_ddi::feature::{
    DXGK_FEATURE_ID, DXGK_FEATURE_NATIVE_FENCE, DXGK_FEATURE_PAGE_BASED_MEMORY_MANAGER,
};

use super::answers::Reading;

/// A Windows 11 graphics kernel the simulated OS can play.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Windows 11 23H2 (build 22631), the last before WDDM 3.2. Modelled where it was read
    /// and differs at start (\[D\], the 22631 pseudocode): the slot at byte 1368 and the
    /// segment count; its feature database and flows are taken as 24H2's (nothing else of it
    /// is modelled, not even its shorter DDI table).
    W22631,
    /// Windows 11 24H2 (build 26100), the first with WDDM 3.2: the default.
    W24H2,
    /// Windows 11 25H2.
    W25H2,
    /// Windows 11 26H1.
    W26H1,
}

impl Kernel {
    /// Every kernel, oldest first.
    pub const ALL: [Self; 4] = [Self::W22631, Self::W24H2, Self::W25H2, Self::W26H1];

    /// `22631`, `24h2`, `25h2`, `26h1`.
    pub fn name(self) -> &'static str {
        match self {
            Self::W22631 => "22631",
            Self::W24H2 => "24h2",
            Self::W25H2 => "25h2",
            Self::W26H1 => "26h1",
        }
    }

    /// The answers of this kernel's code.
    const fn reading(self) -> Reading {
        match self {
            Self::W22631 => Reading {
                name: "22631",
                ..Reading::W24H2
            },
            Self::W24H2 => Reading::W24H2,
            // The flows read the same as 24H2's where 25H2 was checked.
            Self::W25H2 => Reading {
                name: "25h2",
                ..Reading::W24H2
            },
            Self::W26H1 => Reading::W26H1,
        }
    }
}

/// The Windows a machine plays: its kernel and the answers to where code and pages disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    kernel: Kernel,
    pages: bool,
    answers: Reading,
}

impl Default for Windows {
    /// [`Windows::from_env`].
    fn default() -> Self {
        Self::from_env()
    }
}

impl Windows {
    /// The 22631 kernel as read.
    pub const W22631: Self = Self::new(Kernel::W22631);
    /// 24H2 as decompiled (the default).
    pub const W24H2: Self = Self::new(Kernel::W24H2);
    /// 25H2.
    pub const W25H2: Self = Self::new(Kernel::W25H2);
    /// 26H1.
    pub const W26H1: Self = Self::new(Kernel::W26H1);
    /// 24H2's kernel with Microsoft's pages answering every disagreement.
    pub const PAGES: Self = Self::W24H2.with_pages();
    /// The values the suites compare: each set of answers a machine can play. 26H1's own
    /// answers differ from 24H2's only in native-fence and user-mode-submission flows, which
    /// 26H1 never runs (no native fences at all, BR-112).
    pub const READINGS: [Self; 2] = [Self::W24H2, Self::PAGES];

    /// `kernel`, answering as its code does.
    pub const fn new(kernel: Kernel) -> Self {
        Self {
            kernel,
            pages: false,
            answers: kernel.reading(),
        }
    }

    /// The same kernel, with Microsoft's pages answering every disagreement.
    pub const fn with_pages(self) -> Self {
        Self {
            kernel: self.kernel,
            pages: true,
            answers: Reading::PAGES,
        }
    }

    /// The same Windows with single answers changed by `f` (a test's knob).
    pub fn answering(mut self, f: impl FnOnce(&mut Reading)) -> Self {
        f(&mut self.answers);
        self
    }

    /// The kernel played.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The answers to every disagreement between the code and the pages.
    pub fn reading(&self) -> &Reading {
        &self.answers
    }

    /// `24h2`, `pages` (24H2's kernel with the pages' answers), `26h1+pages`, …: what
    /// [`Windows::parse`] reads back (single answers changed by [`Windows::answering`] are not
    /// named).
    pub fn name(&self) -> String {
        match (self.kernel, self.pages) {
            (k, false) => k.name().into(),
            (Kernel::W24H2, true) => "pages".into(),
            (k, true) => format!("{}+pages", k.name()),
        }
    }

    /// Parses a kernel (`22631` or `23h2`, `24h2`, `25h2`, `26h1`; any case), optionally
    /// followed by `+pages`, or `pages` alone (24H2's kernel with the pages' answers).
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        if s == "pages" {
            return Ok(Self::PAGES);
        }
        let (kernel, pages) = match s.strip_suffix("+pages") {
            Some(k) => (k, true),
            None => (s.as_str(), false),
        };
        let kernel = match kernel {
            "23h2" => Kernel::W22631,
            k => Kernel::ALL
                .into_iter()
                .find(|c| c.name() == k)
                .ok_or_else(|| {
                    format!(
                        "unknown Windows {s} (22631, 24h2, 25h2, 26h1, each optionally \
                         +pages; or pages)"
                    )
                })?,
        };
        let w = Self::new(kernel);
        Ok(if pages { w.with_pages() } else { w })
    }

    /// The Windows machines configured from now on play: the one set by
    /// [`Windows::set_default`], else `RVGPU_WINDOWS` (an unknown name panics: a run that
    /// asked for a Windows must not silently play another), else 24H2. The environment is read
    /// once per process: every machine configuration asks, and without a
    /// [`Windows::set_default`] the answer takes no lock.
    pub fn from_env() -> Self {
        if CHOSEN_SET.load(Ordering::Acquire) {
            if let Some(w) = *CHOSEN.read().unwrap_or_else(|p| p.into_inner()) {
                return w;
            }
        }
        *FROM_ENV.get_or_init(|| match std::env::var("RVGPU_WINDOWS") {
            Ok(v) => Self::parse(&v).unwrap_or_else(|e| panic!("RVGPU_WINDOWS: {e}")),
            Err(_) => Self::W24H2,
        })
    }

    /// Makes `w` the Windows of every machine configured from now on (the harness's
    /// `--windows`).
    pub fn set_default(w: Self) {
        *CHOSEN.write().unwrap_or_else(|p| p.into_inner()) = Some(w);
        CHOSEN_SET.store(true, Ordering::Release);
    }

    /// The build number the installer holds an INF's models decoration against: 22631,
    /// 26100 (24H2), 26200 (25H2), 28000 (26H1; the number of its first releases, \[I\]).
    pub fn build_number(&self) -> u32 {
        match self.kernel {
            Kernel::W22631 => 22631,
            Kernel::W24H2 => 26100,
            Kernel::W25H2 => 26200,
            Kernel::W26H1 => 28000,
        }
    }

    /// BR-112: whether the OS supports feature `id` at all. \[D\] 11-26H1
    /// `CheckFeatureOSSupport` @ 0x140288B70 answers no for PAGE_BASED_MEMORY_MANAGER (32) and
    /// NATIVE_FENCE (37) whatever the database says, and its caller `IsFeatureEnabledUncached`
    /// @ 0x140289AE4 enables nothing the OS does not support; 24H2 and 25H2 have no such gate
    /// (their `IsFeatureEnabledUncached` follows the configuration, BR-110/111).
    pub fn supports_feature(&self, id: DXGK_FEATURE_ID) -> bool {
        !(self.kernel == Kernel::W26H1
            && matches!(
                id,
                DXGK_FEATURE_NATIVE_FENCE | DXGK_FEATURE_PAGE_BASED_MEMORY_MANAGER
            ))
    }

    /// Whether `DXGK_FEATURE_NATIVE_FENCE` can be enabled at all ([`Self::supports_feature`]).
    pub fn native_fence_supported(&self) -> bool {
        self.supports_feature(DXGK_FEATURE_NATIVE_FENCE)
    }

    /// windows-bringup.md §15 question 2 (BR-73): does a user-mode-submission node need the
    /// slot after `DxgkDdiNotifyWorkSubmission` (byte 1368, `DxgkDdiFlushHwQueue` /
    /// `Reserved4`) filled? Yes on the 22631 kernel (\[D\] `ADAPTER_RENDER::Initialize`, six
    /// slots checked at adapter +1520..+1560 with the table copied at +192, triage event
    /// 1290). No on every later build read (the WDDM 3.2 kernels that copy 1,544 bytes for an
    /// interface ≥ 0x11001, \[D24\] `ADAPTER_RENDER::Initialize`, triage line 1315): the table
    /// sits at +200 there and the five slots checked, +1528..+1560, are the four doorbell
    /// DDIs and `DxgkDdiNotifyWorkSubmission`.
    pub fn ums_requires_slot_1368(&self) -> bool {
        self.kernel == Kernel::W22631
    }

    /// windows-bringup.md §15 question 4 (BR-62): may a physical adapter report no segments
    /// (`DXGK_QUERYSEGMENTOUT4.NbSegment` = 0)? Yes on the 22631 kernel: \[D\]
    /// `VidMmiQuerySegmentInfo4` and `VIDMM_GLOBAL::Init` check only the upper bound (32).
    /// No on every later build read (\[D24\] dxgmms2 `CreatePhysicalAdapterSegments` @
    /// 0x14009B368 and @ 0x1400B14D0): a zero count is refused with `STATUS_UNSUCCESSFUL`
    /// before the descriptors are asked for, and the start fails with `STATUS_NO_MEMORY`.
    /// Neither exempts an IoMmu-only adapter.
    pub fn zero_segments_accepted(&self) -> bool {
        self.kernel == Kernel::W22631
    }
}

/// What [`Windows::set_default`] chose, and whether it chose: the flag spares every other
/// caller the lock.
static CHOSEN: RwLock<Option<Windows>> = RwLock::new(None);
static CHOSEN_SET: AtomicBool = AtomicBool::new(false);
/// `RVGPU_WINDOWS` as read the first time it was asked for.
static FROM_ENV: OnceLock<Windows> = OnceLock::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn br_110_every_windows_parses_back_from_its_name() {
        for k in Kernel::ALL {
            for w in [Windows::new(k), Windows::new(k).with_pages()] {
                assert_eq!(Windows::parse(&w.name()), Ok(w));
            }
        }
        assert_eq!(Windows::parse("23H2"), Ok(Windows::W22631));
        assert_eq!(Windows::parse("PAGES"), Ok(Windows::PAGES));
        assert!(Windows::parse("21h2").is_err());
    }
}
