//! The registry routines `rvgpu.sys` imports (`src/platform/windows.rs`
//! `software_key_dword`), over the adapter's software key ([`crate::adapter::registry`]):
//! `IoOpenDeviceRegistryKey`, `ZwQueryValueKey`, `ZwClose`.

use std::sync::Arc;

use rvgpu_kmd::platform::Irql;

use super::{
    image_unicode_string, image_write, ret, Instance, STATUS_BUFFER_TOO_SMALL,
    STATUS_INVALID_HANDLE, STATUS_INVALID_PARAMETER, STATUS_OBJECT_NAME_NOT_FOUND, STATUS_SUCCESS,
};
use crate::adapter::context::{irql_above, raise};
use crate::base::bugcheck::{self, BugCheck};
use crate::base::lock::lock;
use crate::pe::cpu::StubResult;

/// `PLUGPLAY_REGKEY_DRIVER` (wdm.h): the device's software key, the only key modelled.
const PLUGPLAY_REGKEY_DRIVER: u64 = 2;
/// `KeyValuePartialInformation` (KEY_VALUE_INFORMATION_CLASS, wdm.h).
const KEY_VALUE_PARTIAL_INFORMATION: u64 = 2;
/// `FIELD_OFFSET(KEY_VALUE_PARTIAL_INFORMATION, Data)`: `TitleIndex`, `Type`, `DataLength`.
const PARTIAL_HEADER: usize = 12;
/// `STATUS_BUFFER_OVERFLOW`, a warning: the fixed part is written, the data is not.
const STATUS_BUFFER_OVERFLOW: u64 = rvgpu_ddi::ntstatus::STATUS_BUFFER_OVERFLOW as u32 as u64;
/// Kernel handles have the top bit set; the index is a multiple of 4.
const KERNEL_HANDLE_BASE: u64 = 0xFFFF_FFFF_8000_0000;

/// Writes the 32-bit `v` where the image points (`out`), as [`image_write`] does.
fn image_write_u32(out: u64, v: u32) -> bool {
    crate::pe::checked::write_bytes(out, &v.to_le_bytes(), 0)
        .map_err(raise)
        .is_ok()
}

/// `IoOpenDeviceRegistryKey(DeviceObject, DevInstKeyType, DesiredAccess, DeviceRegKey)`
/// (PASSIVE_LEVEL): a new kernel handle to the software key of the device whose PDO is
/// `DeviceObject`, as 24H2 `IoOpenDeviceRegistryKey` @ 0x1409CAEC0 opens it: a NULL
/// `DeviceObject` or one without a device node (here: no adapter's PDO), or a
/// `DevInstKeyType` with neither `PLUGPLAY_REGKEY_DEVICE` (1) nor `PLUGPLAY_REGKEY_DRIVER` (2),
/// is `STATUS_INVALID_PARAMETER`. 24H2 opens the hardware key for bit 1 and a key under the
/// current hardware profile for bit 4; neither is modelled and both answer
/// `STATUS_INVALID_PARAMETER` (simulation limit). A `DeviceRegKey` the image cannot write
/// faults (0x50).
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-ioopendeviceregistrykey>
pub(super) fn io_open_device_registry_key(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let (pdo, key_type, out) = (w[0], w[1] & 0xFFFF_FFFF, w[3]);
    if pdo == 0
        || key_type & 0x7 != PLUGPLAY_REGKEY_DRIVER
        || crate::adapter::registry::software_key_value(pdo as usize, "").is_none()
    {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let index = img
        .kernel()
        .next_reg_key
        .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let handle = KERNEL_HANDLE_BASE + (index % 0x1000_0000 + 1) * 4;
    if !image_write(out, handle) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    lock(&img.kernel().reg_keys).insert(handle, pdo as usize);
    ret(STATUS_SUCCESS)
}

/// `ZwQueryValueKey(KeyHandle, ValueName, KeyValueInformationClass, KeyValueInformation,
/// Length, ResultLength)` (PASSIVE_LEVEL), `KeyValuePartialInformation` only (another class is
/// `STATUS_INVALID_PARAMETER`: simulation limit). An unknown handle is
/// `STATUS_INVALID_HANDLE`, an absent value `STATUS_OBJECT_NAME_NOT_FOUND`. `*ResultLength`
/// is the whole answer's size (12 + the data); a buffer shorter than the fixed part is
/// `STATUS_BUFFER_TOO_SMALL` with nothing written, one shorter than the whole answer
/// `STATUS_BUFFER_OVERFLOW` with the fixed part only. Pointers the image passes are checked
/// (0x50 for one it cannot read or write).
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwqueryvaluekey>
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/ns-wdm-_key_value_partial_information>
pub(super) fn zw_query_value_key(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let (handle, name_at, class, buf, len, result_at) = (
        w[0],
        w[1],
        w[2] & 0xFFFF_FFFF,
        w[3],
        w[4] & 0xFFFF_FFFF,
        w[5],
    );
    let Some(pdo) = lock(&img.kernel().reg_keys).get(&handle).copied() else {
        return ret(STATUS_INVALID_HANDLE);
    };
    if class != KEY_VALUE_PARTIAL_INFORMATION {
        return ret(STATUS_INVALID_PARAMETER);
    }
    let Some(name) = image_unicode_string(name_at) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    let Some(Some(value)) = crate::adapter::registry::software_key_value(pdo, &name) else {
        return ret(STATUS_OBJECT_NAME_NOT_FOUND);
    };
    let (Ok(data_len), Ok(required)) = (
        u32::try_from(value.data.len()),
        u32::try_from(PARTIAL_HEADER + value.data.len()),
    ) else {
        return ret(STATUS_INVALID_PARAMETER);
    };
    if !image_write_u32(result_at, required) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    if len < PARTIAL_HEADER as u64 {
        return ret(STATUS_BUFFER_TOO_SMALL);
    }
    let mut answer = Vec::with_capacity(required as usize);
    answer.extend_from_slice(&0u32.to_le_bytes());
    answer.extend_from_slice(&value.ty.to_le_bytes());
    answer.extend_from_slice(&data_len.to_le_bytes());
    let whole = len >= u64::from(required);
    if whole {
        answer.extend_from_slice(&value.data);
    }
    if crate::pe::umd::guest::write_bytes(buf, &answer).is_err() {
        raise(BugCheck::new(
            bugcheck::PAGE_FAULT_IN_NONPAGED_AREA,
            [buf, 1, 0, 0],
        ));
        return ret(STATUS_INVALID_PARAMETER);
    }
    ret(if whole {
        STATUS_SUCCESS
    } else {
        STATUS_BUFFER_OVERFLOW
    })
}

/// `ZwClose(Handle)` (PASSIVE_LEVEL): closes a registry-key handle of
/// `IoOpenDeviceRegistryKey`; any other handle is `STATUS_INVALID_HANDLE`, as the page says.
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/wdm/nf-wdm-zwclose>
pub(super) fn zw_close(img: &Arc<dyn Instance>, w: &[u64; 12]) -> StubResult {
    if irql_above(Irql::Passive, 0) {
        return ret(STATUS_INVALID_PARAMETER);
    }
    if lock(&img.kernel().reg_keys).remove(&w[0]).is_some() {
        ret(STATUS_SUCCESS)
    } else {
        ret(STATUS_INVALID_HANDLE)
    }
}
