//! What a simulated process's UMD learns of its adapter's nodes ([`rvgpu_umd::nodes`]): asked
//! through `D3DKMTQueryAdapterInfo`'s kernel entry with the structure the UMD's Windows thunk
//! fills, and kept beside the simulated process on its adapter (one per process, whatever its
//! devices; it goes with the process), since a [`super::SimKmt`] is made afresh for every call
//! and cannot hold it. User-mode state: the simulated OS never reads it.

use rvgpu_ddi::ntstatus::STATUS_UNSUCCESSFUL;
use rvgpu_umd::kmt::NtStatus;
use rvgpu_umd::nodes::{self, NODEMETADATA_SIZE};

use super::hw_queue::Buffer;
use super::query_adapter_info::{dxgk_query_adapter_info_impl, D3DKMT_QUERYADAPTERINFO};
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// Whether node `node` of `p`'s adapter is hardware-scheduled, as its UMD learns it:
/// `KMTQAITYPE_NODEMETADATA` (78 bytes) once per node of the process's device. The adapter is
/// the one the device is on (a simulated process opens no adapter handle of its own).
pub(super) fn node_hw_scheduled(m: &Machine, p: &UmsProcess, node: u32) -> Result<bool, NtStatus> {
    let a = m
        .adapter_shared(p.adapter)
        .map_err(|_| NtStatus(STATUS_UNSUCCESSFUL))?;
    let known = lock(&a.ums).umd_nodes.entry(p.pid).or_default().clone();
    known.get(node, || {
        let mut md: [u8; NODEMETADATA_SIZE] = nodes::node_metadata_request(node)?;
        {
            let buf = Buffer::new(&mut md);
            let (at, size) = buf.pointer();
            let a = D3DKMT_QUERYADAPTERINFO {
                hAdapter: 0,
                Type: nodes::KMTQAITYPE_NODEMETADATA,
                pPrivateDriverData: at,
                PrivateDriverDataSize: size,
                Padding0: 0,
            };
            let adapter = p.adapter;
            dxgk_query_adapter_info_impl(m, &a, |_| Some(adapter), &buf)?;
        }
        Ok(nodes::context_scheduling(&md))
    })
}
