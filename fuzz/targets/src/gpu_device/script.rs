//! Inputs of the `gpu_device` target written operation by operation: [`Script`] encodes the ops
//! and tagged values [`super::run`] decodes, and [`seeds`] are the hand-made inputs the fuzzer
//! starts from (working queues on both engines, MMU refusals, a hang and its reset).

use crate::input::Writer;

use super::*;

/// Builds inputs (seeds, and tests that name operations).
#[derive(Debug, Default)]
pub struct Script(Writer);

impl Script {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }
    fn op(&mut self, op: Op) -> &mut Writer {
        self.0.u8(op as u8)
    }
    /// A window offset value.
    fn win(w: &mut Writer, off: u32) {
        w.u8(Val::Window as u8).u32(off);
    }
    fn va(w: &mut Writer, off: u32) {
        w.u8(Val::Va as u8).u32(off);
    }
    fn small(w: &mut Writer, v: u8) {
        w.u8(Val::Small as u8).u8(v);
    }
    /// A queue: index `q` on `engine`, user-mode with root table page `root` when given.
    pub fn queue(&mut self, q: u8, engine: u8, root: Option<u8>, doorbell: u8) -> &mut Self {
        let w = self.op(Op::Queue);
        w.u8(q).u8(engine).u8(u8::from(root.is_some())).u8(4);
        match root {
            Some(r) => w.u8(1).u8(r),
            None => w.u8(0),
        };
        w.u8(0).u8(doorbell).u8(0).u8(0);
        self
    }
    /// A window map at table pages `first..first + 4`.
    pub fn map(&mut self, first: u8, attrs: u8) -> &mut Self {
        self.op(Op::Map).u8(first).u8(attrs);
        self
    }
    /// A fence signal of `value` at window offset `off` (by VA when `va`) on queue `q`'s ring,
    /// rung through its doorbell (`bell`) or kicked.
    pub fn signal(&mut self, q: u8, off: u32, value: u8, va: bool, bell: bool) -> &mut Self {
        let w = self.op(Op::Ring);
        w.u8(q).u8(if bell { 3 } else { 0 }).u8(1);
        w.u8(1).u8(1).u8(0);
        let addr = |w: &mut Writer, o: u32| {
            if va {
                Self::va(w, o)
            } else {
                Self::win(w, o)
            }
        };
        addr(w, off);
        Self::small(w, value);
        addr(w, off + 8);
        Self::small(w, 0);
        self
    }
    /// One command of kind `sel` (the target's command selector) with `args` as raw bytes.
    pub fn command(&mut self, q: u8, sel: u8, args: &[u8]) -> &mut Self {
        let w = self.op(Op::Ring);
        w.u8(q).u8(0).u8(1).u8(1).u8(sel);
        for b in args {
            w.u8(*b);
        }
        self
    }
    /// One page-table entry of table page `page`.
    pub fn pte(&mut self, page: u8, index: u16, raw: u64) -> &mut Self {
        self.op(Op::Pte).u8(page).u16(index).u8(0).u64(raw);
        self
    }
    /// A register write.
    pub fn write64(&mut self, off: u16, raw: u64) -> &mut Self {
        self.op(Op::Write64).u16(off).u8(Val::Raw as u8).u64(raw);
        self
    }
    /// An injected fault.
    pub fn fault(&mut self, kind: u8, engine: u8) -> &mut Self {
        self.op(Op::Fault).u8(kind).u8(engine);
        self
    }
    /// Device passes.
    pub fn step(&mut self, n: u8) -> &mut Self {
        self.op(Op::Step).u8(n);
        self
    }
    /// A raw doorbell write.
    pub fn doorbell(&mut self, page: u16, v: u64) -> &mut Self {
        self.op(Op::Doorbell).u16(page).u64(v);
        self
    }
    /// The input.
    pub fn finish(&self) -> Vec<u8> {
        self.0.finish()
    }
}

/// Seed inputs: a kernel- and a user-mode queue that complete, the MMU's refusals, large and
/// VRAM pages, resets and hangs.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let data = at::DATA as u32;
    let mut out = Vec::new();
    // INDIRECT_VM (selector 10) of 64 bytes of the data page under the root at table page 0.
    let mut indirect_vm = vec![Val::Va as u8];
    indirect_vm.extend(data.to_le_bytes());
    indirect_vm.extend([Val::Small as u8, 64, Val::Table as u8, 0]);
    let mut add = |name: &str, s: &Script| out.push((name.to_string(), s.finish()));
    add(
        "kernel-fence",
        Script::new()
            .queue(0, 0, None, 0xFF)
            .signal(0, data, 3, false, false)
            .step(32),
    );
    add(
        "user-fence-doorbell",
        Script::new()
            .map(0, 0)
            .queue(1, 1, Some(0), 1)
            .signal(1, data, 5, true, true)
            .step(32),
    );
    add(
        "user-privileged-page",
        Script::new()
            .map(4, 2)
            .queue(2, 0, Some(4), 2)
            .signal(2, data, 5, true, true)
            .step(32),
    );
    add(
        "user-no-execute-ring",
        Script::new()
            .map(8, 8)
            .queue(3, 1, Some(8), 3)
            .signal(3, data, 5, true, true)
            .step(32),
    );
    // Level-1 entry of the chain at 12 made a large page, a self-referencing root, reserved
    // bits, and a VRAM leaf.
    let l1 = (VA_BASE >> 21) as u16 & 0x1FF;
    let root_idx = (VA_BASE >> 39) as u16 & 0x1FF;
    add(
        "large-and-broken-tables",
        Script::new()
            .map(12, 0)
            .pte(14, l1, Pte::LARGE | Pte::VALID | Pte::USER | Pte::WRITABLE)
            .queue(4, 0, Some(12), 4)
            .signal(4, data, 1, true, true)
            .step(16)
            .map(16, 0)
            .pte(16, root_idx, 1u64 << 60 | Pte::VALID)
            .queue(5, 1, Some(16), 5)
            .signal(5, data, 1, true, true)
            .step(16),
    );
    add(
        "kernel-indirect-vm-and-tlb",
        Script::new()
            .map(0, 0)
            .queue(0, 0, None, 0xFF)
            // IndirectVm (selector 10): addr, bytes, root as values.
            .command(0, 10, &indirect_vm)
            .command(0, 11, &[4, 0])
            .step(64),
    );
    add(
        "hang-engine-reset",
        Script::new()
            .queue(0, 0, None, 0xFF)
            .command(0, 8, &[])
            .step(64)
            .fault(4, 0)
            .step(8)
            .queue(0, 0, None, 0xFF)
            .signal(0, data, 2, false, false)
            .step(32),
    );
    add(
        "adapter-reset-midway",
        Script::new()
            .map(0, 0)
            .queue(1, 1, Some(0), 1)
            .fault(5, 0)
            .signal(1, data, 5, true, true)
            .doorbell(1, 0)
            .doorbell(40, 0)
            .step(32),
    );
    add(
        "system-root-and-fence-store",
        Script::new()
            .map(20, 0)
            .write64(regs::SYSTEM_PAGE_TABLE_BASE as u16, 0)
            .fault(8, 0)
            .fault(7, 0)
            .fault(2, 0)
            .queue(0, 0, None, 0xFF)
            .signal(0, data, 4, false, false)
            .step(32),
    );
    out
}
