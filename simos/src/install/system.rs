//! What installing touches on one simulated machine ([`System`]), what it leaves
//! ([`Installed`], [`StoredPackage`]) and where the driver stores are; the install itself is
//! [`super`]'s.

use std::path::{Path, PathBuf};

use super::catalog::{CertStores, Trust};
use super::inf::Plan;
use super::registry::Registry;

/// A package in the driver store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredPackage {
    /// `rvgpu.inf_amd64_<hash>`, the folder under `FileRepository`.
    pub folder: String,
    /// Where the folder's files are on this host.
    pub dir: PathBuf,
    pub catalog: Vec<u8>,
    pub plan: Plan,
    pub trust: Trust,
}

/// One simulated Windows machine, as far as installing a driver touches it.
#[derive(Clone, Debug)]
pub struct System {
    pub registry: Registry,
    pub driver_store: Vec<StoredPackage>,
    pub certs: CertStores,
    /// `bcdedit /set testsigning on`.
    pub test_signing: bool,
    /// Memory integrity (HVCI) on: the loader's LD-04.
    pub memory_integrity: bool,
    /// The Windows build (26100: 24H2).
    pub build: u32,
    /// The display device's PCI IDs ([`super::inf::rvgpu_pci_ids`]).
    pub device_ids: Vec<String>,
    /// Where this machine's driver-store folders are on the host ([`store_root`] unless a
    /// test gives the machine a store of its own).
    pub store_root: PathBuf,
}

/// What an install left: the package and where its keys are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    pub package: StoredPackage,
    /// The adapter's software key (`HKLM\...\Class\{Display}\0000`).
    pub software_key_path: String,
    /// The service key.
    pub service_key_path: String,
}

/// `C:\Windows\System32\DriverStore\FileRepository`: where `%13%` folders are.
pub const FILE_REPOSITORY: &str = r"C:\Windows\System32\DriverStore\FileRepository";

/// The host directory that holds the simulated driver stores' folders: the PE target
/// directory's `driver-store` (`RVGPU_TARGET_DIR`, else `target/pe`).
pub fn store_root() -> PathBuf {
    std::env::var_os("RVGPU_TARGET_DIR")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/pe"),
            PathBuf::from,
        )
        .join("driver-store")
}
