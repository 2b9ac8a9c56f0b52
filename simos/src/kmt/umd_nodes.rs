//! What a simulated process's UMD learns of its adapter's nodes ([`rvgpu_umd::nodes`]): asked
//! through `D3DKMTQueryAdapterInfo`'s kernel entry with the structure the UMD's Windows thunk
//! fills, and kept beside the simulated process on its adapter (one per process, whatever its
//! devices; it goes with the process), since a [`super::SimKmt`] is made afresh for every call
//! and cannot hold it. User-mode state: the simulated OS never reads it.

use std::cell::RefCell;

use rvgpu_ddi::ntstatus::{STATUS_INVALID_PARAMETER, STATUS_UNSUCCESSFUL};
use rvgpu_umd::kmt::NtStatus;
use rvgpu_umd::nodes::{self, NODEMETADATA_SIZE};

use super::context_virtual::CallerMemory;
use super::query_adapter_info::{dxgk_query_adapter_info_impl, D3dkmtQueryAdapterInfo};
use crate::base::lock::lock;
use crate::machine::Machine;
use crate::ums::UmsProcess;

/// The caller's buffer of the query: one in this process, at a token address (the kernel
/// entry reads and writes it whole).
struct OwnBuffer(RefCell<Vec<u8>>);

/// [`OwnBuffer`]'s address as the structure names it.
const OWN_BUFFER_AT: u64 = 0x1000;

impl CallerMemory for OwnBuffer {
    fn read(&self, at: u64, size: u32) -> Result<Vec<u8>, NtStatus> {
        let b = self.0.borrow();
        if at != OWN_BUFFER_AT || size as usize != b.len() {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        Ok(b.clone())
    }
    fn write(&self, at: u64, bytes: &[u8]) -> Result<(), NtStatus> {
        let mut b = self.0.borrow_mut();
        if at != OWN_BUFFER_AT || bytes.len() != b.len() {
            return Err(NtStatus(STATUS_INVALID_PARAMETER));
        }
        b.copy_from_slice(bytes);
        Ok(())
    }
}

/// Whether node `node` of `p`'s adapter is hardware-scheduled, as its UMD learns it:
/// `KMTQAITYPE_NODEMETADATA` (78 bytes) once per node of the process's device. The adapter is
/// the one the device is on (a simulated process opens no adapter handle of its own).
pub(super) fn node_hw_scheduled(m: &Machine, p: &UmsProcess, node: u32) -> Result<bool, NtStatus> {
    let a = m
        .adapter_shared(p.adapter)
        .map_err(|_| NtStatus(STATUS_UNSUCCESSFUL))?;
    let known = lock(&a.ums).umd_nodes.entry(p.pid).or_default().clone();
    known.get(node, || {
        let buf = OwnBuffer(RefCell::new(nodes::node_metadata_request(node)?.to_vec()));
        let a = D3dkmtQueryAdapterInfo {
            h_adapter: 0,
            info_type: nodes::KMTQAITYPE_NODEMETADATA,
            p_private_driver_data: OWN_BUFFER_AT,
            private_driver_data_size: NODEMETADATA_SIZE as u32,
            _pad: 0,
        };
        let adapter = p.adapter;
        dxgk_query_adapter_info_impl(m, &a, |_| Some(adapter), &buf)?;
        let md = <[u8; NODEMETADATA_SIZE]>::try_from(buf.0.into_inner().as_slice())
            .map_err(|_| NtStatus(STATUS_UNSUCCESSFUL))?;
        Ok(nodes::context_scheduling(&md))
    })
}
