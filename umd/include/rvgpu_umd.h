/*
 * rvgpu_umd.h - C API of the rvgpu user-mode driver (rvgpu_umd.dll).
 *
 * Mirrors umd/src/capi.rs; tests/umd_header.rs checks that every function and status value
 * here matches the Rust declarations.
 *
 * On Windows the calls go to the D3DKMT thunks (user-mode submission through a ring and a
 * doorbell, with a kernel-mode fallback; native fences). That code has run only in an x86-64
 * emulator over a simulated OS (docs/pe-image.md), never on Windows, and queue creation cannot succeed until the kernel driver gives allocations GPU virtual
 * addresses: rvgpu_create_queue then returns the failing call's status (see capi.rs). Off
 * Windows rvgpu_open_adapter returns RVGPU_STATUS_NOT_IMPLEMENTED.
 *
 * Commands are rvgpu packets: 64-bit words, each passed as two dwords, low half first.
 * Timeouts: 0 polls, UINT64_MAX waits forever.
 * Buffers: rvgpu_buffer_lock maps a buffer with RVGPU_LOCK_* flags and takes the queues whose
 * work may use it; the UMD tracks which queue values read or write each buffer, for the work it
 * submits through rvgpu_buffer_fill and rvgpu_buffer_copy (not the packets of rvgpu_submit).
 * A lock with RVGPU_LOCK_DO_NOT_WAIT that would wait returns RVGPU_STATUS_WAS_STILL_DRAWING.
 * A lock must list every live queue that used the buffer (a lock that cannot account for a use
 * returns RVGPU_STATUS_INVALID_ARGUMENT); uses by a queue since destroyed are over.
 * Threading: adapters and fences may be used from any thread; a queue, or a buffer, by one
 * thread at a time.
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
    RVGPU_STATUS_KERNEL_ERROR = 6,
    RVGPU_STATUS_WAS_STILL_DRAWING = 7
} RvgpuStatus;

/* rvgpu_buffer_lock flags: READ and/or WRITE, or DISCARD or NO_OVERWRITE; any with DO_NOT_WAIT. */
#define RVGPU_LOCK_READ 0x1u
#define RVGPU_LOCK_WRITE 0x2u
#define RVGPU_LOCK_DISCARD 0x4u
#define RVGPU_LOCK_NO_OVERWRITE 0x8u
#define RVGPU_LOCK_DO_NOT_WAIT 0x10u

typedef struct RvgpuAdapter RvgpuAdapter;
typedef struct RvgpuQueue RvgpuQueue;
typedef struct RvgpuFence RvgpuFence;
typedef struct RvgpuBuffer RvgpuBuffer;

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
RvgpuStatus rvgpu_buffer_create(RvgpuAdapter *adapter, uint64_t size, RvgpuBuffer **out_buffer);
RvgpuStatus rvgpu_buffer_destroy(RvgpuBuffer *buffer, RvgpuQueue *const *queues, size_t queue_count);
RvgpuStatus rvgpu_buffer_gpu_va(RvgpuBuffer *buffer, uint64_t *out_gpu_va);
RvgpuStatus rvgpu_buffer_lock(RvgpuBuffer *buffer, uint32_t flags, RvgpuQueue *const *queues, size_t queue_count, void **out_data);
RvgpuStatus rvgpu_buffer_unlock(RvgpuBuffer *buffer);
RvgpuStatus rvgpu_buffer_fill(RvgpuQueue *queue, RvgpuBuffer *buffer, uint64_t offset, uint64_t bytes, uint64_t pattern, uint64_t *out_progress);
RvgpuStatus rvgpu_buffer_copy(RvgpuQueue *queue, RvgpuBuffer *src, uint64_t src_offset, RvgpuBuffer *dst, uint64_t dst_offset, uint64_t bytes, uint64_t *out_progress);
const char *rvgpu_status_string(RvgpuStatus status);

#ifdef __cplusplus
}
#endif

#endif /* RVGPU_UMD_H */
