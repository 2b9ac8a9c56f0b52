/*
 * rvgpu_umd.h - C API of the rvgpu user-mode driver (rvgpu_umd.dll).
 *
 * Mirrors umd/src/capi.rs; tests/umd_header.rs checks that every function and status value
 * here matches the Rust declarations.
 *
 * On Windows the calls go to the D3DKMT thunks (user-mode submission through a ring and a
 * doorbell, with a kernel-mode fallback; native fences). That code is compiled but has not run
 * yet, and queue creation cannot succeed until the kernel driver gives allocations GPU virtual
 * addresses: rvgpu_create_queue then returns the failing call's status (see capi.rs). Off
 * Windows rvgpu_open_adapter returns RVGPU_STATUS_NOT_IMPLEMENTED.
 *
 * Commands are rvgpu packets: 64-bit words, each passed as two dwords, low half first.
 * Timeouts: 0 polls, UINT64_MAX waits forever.
 * Threading: adapters and fences may be used from any thread; a queue by one thread at a time.
 */
#ifndef RVGPU_UMD_H
#define RVGPU_UMD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum RvgpuStatus {
    RVGPU_STATUS_OK = 0,
    RVGPU_STATUS_INVALID_ARGUMENT = 1,
    RVGPU_STATUS_NOT_IMPLEMENTED = 2,
    RVGPU_STATUS_DEVICE_LOST = 3,
    RVGPU_STATUS_TIMEOUT = 4,
    RVGPU_STATUS_OUT_OF_MEMORY = 5,
    RVGPU_STATUS_KERNEL_ERROR = 6
} RvgpuStatus;

typedef struct RvgpuAdapter RvgpuAdapter;
typedef struct RvgpuQueue RvgpuQueue;
typedef struct RvgpuFence RvgpuFence;

RvgpuStatus rvgpu_open_adapter(uint32_t luid_low, int32_t luid_high, RvgpuAdapter **out_adapter);
RvgpuStatus rvgpu_close_adapter(RvgpuAdapter *adapter);
RvgpuStatus rvgpu_create_queue(RvgpuAdapter *adapter, uint32_t node, uint32_t priority, RvgpuQueue **out_queue);
RvgpuStatus rvgpu_destroy_queue(RvgpuQueue *queue);
RvgpuStatus rvgpu_submit(RvgpuQueue *queue, const uint32_t *commands, size_t dword_count, uint64_t *out_progress);
RvgpuStatus rvgpu_queue_wait(RvgpuQueue *queue, uint64_t value, uint64_t timeout_ns);
RvgpuStatus rvgpu_fence_create(RvgpuAdapter *adapter, uint64_t initial_value, RvgpuFence **out_fence);
RvgpuStatus rvgpu_fence_signal(RvgpuFence *fence, uint64_t value);
RvgpuStatus rvgpu_fence_wait(RvgpuFence *fence, uint64_t value, uint64_t timeout_ns);
RvgpuStatus rvgpu_fence_destroy(RvgpuFence *fence);
const char *rvgpu_status_string(RvgpuStatus status);

#ifdef __cplusplus
}
#endif

#endif /* RVGPU_UMD_H */
