//! `D3DKMTEscape`: the structure as the DLL wrote it and its private data, captured before any
//! handle is looked at (24H2 `K:DxgkEscape` @0x140419AB0), to the thunk's kernel entry
//! ([`crate::kmt::escape`]); the data back on success.
//! <https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/d3dkmthk/nf-d3dkmthk-d3dkmtescape>

use super::*;

pub(super) fn escape(p: &UserProcess, at: u64) -> Status {
    use crate::kmt::escape::{dxgk_escape, D3dkmtEscape};
    let a: D3dkmtEscape = args(at)?;
    // A NULL buffer is not copied (the entry refuses the empty data).
    let mut data = if a.p_private_driver_data == 0 || a.private_driver_data_size == 0 {
        Vec::new()
    } else {
        // The simulation's copy is bounded (24H2's is what the pool gives).
        if a.private_driver_data_size > MAX_PRIVATE_DATA {
            return Err(STATUS_NO_MEMORY);
        }
        guest::read_bytes(a.p_private_driver_data, a.private_driver_data_size as usize)
            .map_err(bad)?
    };
    dxgk_escape(
        &p.machine,
        &a,
        &mut data,
        |h| lock(&p.handles).adapters.get(&h).copied(),
        |h| p.device(h).ok().map(|d| d.sim),
    )
    .map_err(nt)?;
    if !data.is_empty() {
        guest::write_bytes(a.p_private_driver_data, &data).map_err(bad)?;
    }
    Ok(())
}
