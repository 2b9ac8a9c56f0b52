//! Native fences on the UMD side: what the UMD learns at create, and the GPU wait and
//! signal commands it encodes into its command streams.
//!
//! Two sources, as on Windows: the OS returns where it mapped the fence in *this* process
//! (`D3DDDI_NATIVEFENCEMAPPING`, [`FenceMapping`]: CurrentValue's CPU VA and the GPU VAs of
//! CurrentValue and MonitoredValue "in the current process's address space"), and the kernel
//! driver gives the report tag the device needs to name the fence in its interrupt (NF-14): to
//! the creator in the create call's private driver data ([`NativeFencePdd`]); to a process that
//! opens it from an NT handle in its answer to a `D3DKMTEscape` ([`tag_request`]), since 24H2
//! returns no private data from that open. Both come through the OS, so they are validated,
//! and the private data is parsed with a layout check, never cast.

use rvgpu_hw::addr::GpuVa;
use rvgpu_hw::cmd::{Command, SIGNAL_CONDITIONAL_IRQ};
use rvgpu_hw::pdd::{
    NativeFencePdd, NativeFenceTagEscape, NATIVE_FENCE_PDD_VERSION,
    NATIVE_FENCE_TAG_ESCAPE_VERSION, PDD_MAGIC,
};
use zerocopy::FromBytes;

use crate::nt::KmtHandle;

/// Why private driver data is not a usable native fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PddError {
    /// Shorter than [`NativeFencePdd`].
    TooShort,
    /// Not rvgpu's (magic) or from another version of the driver.
    WrongDriver,
    /// A mapping's GPU address is zero or not 8-byte aligned, or both values share one.
    BadAddress,
}

/// Where the OS mapped a native fence in this process (`D3DDDI_NATIVEFENCEMAPPING`, returned by
/// `D3DKMTCreateNativeFence` and `D3DKMTOpenNativeFenceFromNtHandle`). Every process that
/// creates or opens the fence gets its own VAs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FenceMapping {
    /// `CurrentValueCpuVa`: the CPU's read-only view of CurrentValue, as an address (0: none).
    pub current_value_cpu: usize,
    /// `CurrentValueGpuVa`: what this process's FENCE_SIGNAL and FENCE_WAIT address.
    pub current_value_gpu: u64,
    /// `MonitoredValueGpuVa`: the conditional interrupt's comparand (NF-03) in this process.
    pub monitored_value_gpu: u64,
}

/// A native fence as the GPU addresses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuFence {
    /// GPU address of CurrentValue.
    pub current: GpuVa,
    /// GPU address of MonitoredValue.
    pub monitored: GpuVa,
    /// The device report tag.
    pub tag: u64,
}

impl GpuFence {
    /// The fence at the VAs of `mapping` (this process's, from the OS) with the report tag of
    /// the private driver data the KMD returned at create.
    pub fn new(mapping: &FenceMapping, private_data: &[u8]) -> Result<Self, PddError> {
        let (pdd, _) =
            NativeFencePdd::read_from_prefix(private_data).map_err(|_| PddError::TooShort)?;
        if pdd.magic != PDD_MAGIC || pdd.version != NATIVE_FENCE_PDD_VERSION {
            return Err(PddError::WrongDriver);
        }
        Self::with_tag(mapping, pdd.report_tag)
    }

    /// The fence at the VAs of `mapping` with report tag `tag` (a fence this process opened:
    /// the KMD's answer to [`tag_request`]).
    pub fn with_tag(mapping: &FenceMapping, tag: u64) -> Result<Self, PddError> {
        let ok = |a: GpuVa| !a.is_null() && a.is_aligned(8);
        let (cv, mv) = (
            GpuVa::new(mapping.current_value_gpu),
            GpuVa::new(mapping.monitored_value_gpu),
        );
        if !ok(cv) || !ok(mv) || cv == mv {
            return Err(PddError::BadAddress);
        }
        Ok(Self {
            current: cv,
            monitored: mv,
            tag,
        })
    }

    /// GPU signal to `value` with the conditional interrupt (NF-03): the device interrupts
    /// only if a CPU waiter is monitoring a value below it.
    pub fn signal(&self, value: u64) -> Command {
        Command::FenceSignal {
            flags: SIGNAL_CONDITIONAL_IRQ,
            value_addr: self.current.get(),
            value,
            monitored_addr: self.monitored.get(),
            report_tag: self.tag,
        }
    }

    /// GPU wait until the fence reaches `value` (no CPU round trip).
    pub fn wait(&self, value: u64) -> Command {
        Command::FenceWait {
            addr: self.current.get(),
            value,
        }
    }
}

/// A native fence as the UMD holds it (docs/logs.md#umd): the process's D3DKMT handle,
/// which LOG_WRITE records as the log entry's `hNativeFence` (LOG-03), and its addresses in this
/// process.
/// Returned by [`Kmt::create_native_fence`](crate::kmt::Kmt::create_native_fence) and
/// [`Kmt::open_native_fence`](crate::kmt::Kmt::open_native_fence).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeFence {
    /// The D3DKMT handle of the fence in this process (`hSyncObject`).
    pub kmt: KmtHandle,
    /// Its GPU addresses in this process and its report tag.
    pub gpu: GpuFence,
    /// The CPU's read-only view of CurrentValue in this process, as an address (0: none).
    pub current_value_cpu: usize,
}

impl NativeFence {
    /// The fence `kmt`, mapped in this process at `mapping`, with the private driver data the
    /// KMD returned for it.
    pub fn new(
        kmt: KmtHandle,
        mapping: &FenceMapping,
        private_data: &[u8],
    ) -> Result<Self, PddError> {
        Ok(Self {
            kmt,
            gpu: GpuFence::new(mapping, private_data)?,
            current_value_cpu: mapping.current_value_cpu,
        })
    }

    /// The fence `kmt` this process opened from an NT handle, mapped at `mapping`, with the
    /// report tag the KMD answered [`tag_request`] with (`answer`). 24H2 returns no private
    /// data from the open (`D3DKMTOpenNativeFenceFromNtHandle` copies the caller's own bytes
    /// back), so the opener never reads it.
    pub fn opened(kmt: KmtHandle, mapping: &FenceMapping, answer: &[u8]) -> Result<Self, PddError> {
        let q = NativeFenceTagEscape::read_from_bytes(answer).map_err(|_| PddError::TooShort)?;
        let asked = tag_request(mapping);
        if q.magic != PDD_MAGIC
            || q.version != NATIVE_FENCE_TAG_ESCAPE_VERSION
            || q.current_value_gpu != asked.current_value_gpu
        {
            return Err(PddError::WrongDriver);
        }
        Ok(Self {
            kmt,
            gpu: GpuFence::with_tag(mapping, q.report_tag)?,
            current_value_cpu: mapping.current_value_cpu,
        })
    }

    /// GPU signal to `value` (conditional interrupt, NF-03). Without its LOG_WRITE: use
    /// [`Op::Signal`](crate::fencelog::Op::Signal) to get both (LOG-02).
    pub fn signal(&self, value: u64) -> Command {
        self.gpu.signal(value)
    }

    /// GPU wait until the fence reaches `value`. Without its LOG_WRITE: use
    /// [`Op::Wait`](crate::fencelog::Op::Wait) to get both (LOG-02).
    pub fn wait(&self, value: u64) -> Command {
        self.gpu.wait(value)
    }
}

/// The `D3DKMTEscape` private data asking the KMD for the report tag of the fence this process
/// opened and the OS mapped at `mapping` ([`NativeFence::opened`] reads the answer).
pub fn tag_request(mapping: &FenceMapping) -> NativeFenceTagEscape {
    NativeFenceTagEscape {
        magic: PDD_MAGIC,
        version: NATIVE_FENCE_TAG_ESCAPE_VERSION,
        current_value_gpu: mapping.current_value_gpu,
        report_tag: 0,
    }
}

/// A legacy monitored fence (WDDM 2.0, MF-01): one 64-bit value the GPU writes through its
/// GPU address; the OS learns of each GPU signal through an interrupt, since it keeps no
/// MonitoredValue for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MonitoredFence {
    /// `FenceValueGPUVirtualAddress` from the OS.
    pub value_gpu: u64,
}

impl MonitoredFence {
    /// MF-03: a GPU signal is a fence-write command in the stream. Every signal interrupts
    /// (the device marks it as a legacy signal, so the driver reports a monitored-fence
    /// interrupt and the OS scans its waits, MF-04).
    pub fn signal(&self, value: u64) -> Command {
        Command::FenceSignal {
            flags: rvgpu_hw::cmd::SIGNAL_ALWAYS_IRQ,
            value_addr: self.value_gpu,
            value,
            monitored_addr: 0,
            report_tag: rvgpu_hw::event::NO_TAG,
        }
    }
}

/// The stream is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamFull;

/// Appends encoded commands to a caller-provided buffer of 64-bit words.
#[derive(Debug)]
pub struct CommandStream<'a> {
    words: &'a mut [u64],
    len: usize,
}

impl<'a> CommandStream<'a> {
    /// An empty stream over `words`.
    pub fn new(words: &'a mut [u64]) -> Self {
        Self { words, len: 0 }
    }

    /// Appends `cmd`; on [`StreamFull`] nothing is written.
    pub fn push(&mut self, cmd: Command) -> Result<(), StreamFull> {
        let rest = self.words.get_mut(self.len..).ok_or(StreamFull)?;
        let n = cmd.encode(rest).ok_or(StreamFull)?;
        self.len = self.len.saturating_add(n);
        Ok(())
    }

    /// The encoded words so far.
    pub fn words(&self) -> &[u64] {
        self.words.get(..self.len).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rvgpu_hw::cmd::decode;
    use zerocopy::IntoBytes;

    fn pdd() -> NativeFencePdd {
        NativeFencePdd {
            magic: PDD_MAGIC,
            version: NATIVE_FENCE_PDD_VERSION,
            report_tag: (3 << 32) | 7,
            reserved: [0; 6],
        }
    }

    fn mapping() -> FenceMapping {
        FenceMapping {
            current_value_cpu: 0,
            current_value_gpu: 0x1000_0000,
            monitored_value_gpu: 0x1000_1000,
        }
    }

    /// the GPU VAs come from the OS's per-process mapping, the tag from the KMD's
    /// private data; each is checked.
    #[test]
    fn vas_from_the_mapping_tag_from_private_data() {
        let good = pdd();
        let f = GpuFence::new(&mapping(), good.as_bytes()).unwrap();
        assert_eq!(
            (f.current.get(), f.monitored.get(), f.tag),
            (0x1000_0000, 0x1000_1000, (3 << 32) | 7)
        );
        assert_eq!(
            GpuFence::new(&mapping(), &good.as_bytes()[..10]),
            Err(PddError::TooShort)
        );
        let other = NativeFencePdd { magic: 0, ..good };
        assert_eq!(
            GpuFence::new(&mapping(), other.as_bytes()),
            Err(PddError::WrongDriver)
        );
        let v1 = NativeFencePdd { version: 1, ..good };
        assert_eq!(
            GpuFence::new(&mapping(), v1.as_bytes()),
            Err(PddError::WrongDriver),
            "version 1 carried system-process VAs"
        );
        let bad_addresses = [
            ("misaligned", (0x1000_0004, 0x1000_1000)),
            ("both values at one address", (0x1000_0000, 0x1000_0000)),
            ("unmapped", (0, 0x1000_1000)),
        ];
        for (what, (current_value_gpu, monitored_value_gpu)) in bad_addresses {
            let m = FenceMapping {
                current_value_gpu,
                monitored_value_gpu,
                ..mapping()
            };
            assert_eq!(
                GpuFence::new(&m, good.as_bytes()),
                Err(PddError::BadAddress),
                "{what}"
            );
        }
    }

    /// NF-14: an opener's tag comes from the KMD's answer to its own request: the answer must
    /// be rvgpu's, of this version, and about the VA it asked for.
    #[test]
    fn nf_14_an_opener_takes_the_tag_from_the_answer_to_its_request() {
        let m = mapping();
        let mut q = tag_request(&m);
        assert_eq!(q.current_value_gpu, m.current_value_gpu);
        q.report_tag = (3 << 32) | 7;
        let f = NativeFence::opened(9, &m, q.as_bytes()).unwrap();
        assert_eq!((f.kmt, f.gpu.tag), (9, (3 << 32) | 7));
        let other_va = NativeFenceTagEscape {
            current_value_gpu: 0x2000_0000,
            ..q
        };
        let not_ours = NativeFenceTagEscape { magic: 0, ..q };
        for bad in [other_va, not_ours] {
            assert_eq!(
                NativeFence::opened(9, &m, bad.as_bytes()),
                Err(PddError::WrongDriver)
            );
        }
        assert_eq!(
            NativeFence::opened(9, &m, &q.as_bytes()[..8]),
            Err(PddError::TooShort)
        );
    }

    /// MF-03 (the GPU-signal half): a monitored-fence signal is a fence write in the command
    /// stream that always interrupts. (The other half, a GPU wait that the OS schedules with
    /// WaitForSynchronizationObjectFromGpu, belongs to the kernel-mode submission path.)
    #[test]
    fn mf_03_monitored_fence_gpu_signal_is_an_always_interrupting_fence_write() {
        let f = MonitoredFence {
            value_gpu: 0x2000_0000,
        };
        let mut buf = [0u64; 5];
        let mut s = CommandStream::new(&mut buf);
        s.push(f.signal(9)).unwrap();
        match decode(s.words()).unwrap() {
            Command::FenceSignal {
                flags,
                value_addr,
                value,
                ..
            } => {
                assert_eq!(flags, rvgpu_hw::cmd::SIGNAL_ALWAYS_IRQ);
                assert_eq!((value_addr, value), (0x2000_0000, 9));
            }
            other => panic!("not a fence write: {other:?}"),
        }
    }

    /// The commands the UMD encodes are exactly what the device decodes (same crate, same
    /// layout): a conditional signal naming the fence's tag and MonitoredValue, and a wait.
    #[test]
    fn nf_03_signal_and_wait_encode_for_the_device() {
        let f = GpuFence::new(&mapping(), pdd().as_bytes()).unwrap();
        let mut buf = [0u64; 8];
        let mut s = CommandStream::new(&mut buf);
        s.push(f.wait(4)).unwrap();
        s.push(f.signal(5)).unwrap();
        assert_eq!(
            s.push(f.signal(6)),
            Err(StreamFull),
            "5 + 3 words fit, 5 more do not"
        );
        let w = s.words();
        assert_eq!(w.len(), 8);
        assert_eq!(decode(&w[..3]).unwrap(), f.wait(4));
        assert_eq!(decode(&w[3..]).unwrap(), f.signal(5));
    }
}
