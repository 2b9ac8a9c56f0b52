//! `rvgpu-vfu --socket PATH`: serves one rvgpu function over vfio-user until killed, one
//! client at a time (QEMU: `-device '{"driver":"vfio-user-pci","socket":{"type":"unix",
//! "path":"PATH"}}'` with shared guest RAM; docs/qemu-guest.md).

use std::path::PathBuf;

use clap::Parser;
use rvgpu_device::DeviceConfig;
use rvgpu_vfu::VfuServer;

#[derive(Parser, Debug)]
#[command(version, about = "Serve the emulated rvgpu GPU to a VM over vfio-user")]
struct Args {
    /// UNIX socket to listen on. Its directory is created with mode 0700 if missing, or must
    /// be one only this user can enter; a stale socket there (nobody listening) is replaced.
    #[arg(long)]
    socket: PathBuf,
    /// Also accept clients running as this uid (default: only this process's own user).
    #[arg(long)]
    allow_uid: Vec<u32>,
    /// VRAM in MiB (BAR4 is this rounded up to a power of two).
    #[arg(long, default_value_t = 16)]
    vram_mib: u64,
    /// Engines (1..=16).
    #[arg(long, default_value_t = rvgpu_hw::defaults::ENGINES)]
    engines: u32,
    /// Physical doorbells (1..=512).
    #[arg(long, default_value_t = rvgpu_hw::defaults::DOORBELLS)]
    doorbells: u32,
    /// One doorbell page per process (CAPS.GLOBAL_DOORBELL) instead of dedicated doorbells.
    #[arg(long)]
    global_doorbell: bool,
    /// Serve one client, then exit.
    #[arg(long)]
    once: bool,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let cfg = DeviceConfig {
        vram_size: args.vram_mib.saturating_mul(1 << 20),
        engines: args.engines,
        doorbells: args.doorbells,
        global_doorbell: args.global_doorbell,
        ..DeviceConfig::default()
    };
    let mut server = match VfuServer::new(&args.socket, cfg) {
        Ok(mut s) => {
            for uid in &args.allow_uid {
                s.allow_uid(*uid);
            }
            s
        }
        Err(e) => {
            eprintln!("rvgpu-vfu: cannot serve on {}: {e}", args.socket.display());
            return std::process::ExitCode::FAILURE;
        }
    };
    eprintln!("rvgpu-vfu: listening on {}", args.socket.display());
    if args.once {
        let end = server.serve_one();
        eprintln!("rvgpu-vfu: client session ended ({end:?})");
        return std::process::ExitCode::SUCCESS;
    }
    server.serve_forever()
}
