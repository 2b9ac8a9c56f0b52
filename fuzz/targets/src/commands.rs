//! One of every command packet, for seeds.

use rvgpu_hw::cmd::{Command, LogKind, SIGNAL_CONDITIONAL_IRQ};

/// Every packet kind once, with addresses inside a 4 KiB page at `base` (the INDIRECTs name
/// `base + 0x800`).
pub fn every_command(base: u64) -> Vec<Command> {
    vec![
        Command::Nop { len: 2 },
        Command::Fill {
            dst: base,
            bytes: 64,
            pattern: 0x55,
        },
        Command::Copy {
            src: base,
            dst: base + 0x200,
            bytes: 256,
        },
        Command::Timestamp { addr: base + 0x400 },
        Command::Progress {
            irq: true,
            value: 1,
        },
        Command::FenceSignal {
            flags: SIGNAL_CONDITIONAL_IRQ,
            value_addr: base + 0x600,
            value: 3,
            monitored_addr: base + 0x608,
            report_tag: 5,
        },
        Command::FenceWait {
            addr: base + 0x600,
            value: 3,
        },
        Command::LogWrite {
            log: LogKind::Signal,
            index: 0,
            fence_handle: 1,
            fence_value: 3,
        },
        Command::WriteData {
            dst: base + 0x700,
            count: 1,
        },
        Command::TlbInvalidate { root: 0 },
        Command::Indirect {
            addr: base + 0x800,
            bytes: 16,
        },
        Command::IndirectVm {
            addr: base + 0x800,
            bytes: 16,
            root: base + 0x1000,
        },
        Command::Hang,
    ]
}

/// `cmds` encoded (packets that do not encode are left out).
pub fn encode(cmds: &[Command]) -> Vec<u64> {
    let mut out = Vec::new();
    for c in cmds {
        let mut b = vec![0u64; c.len()];
        if c.encode(&mut b).is_some() {
            out.extend(b);
        }
    }
    out
}
