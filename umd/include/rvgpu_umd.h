/*
 * rvgpu_umd.h - C API of the rvgpu user-mode driver (rvgpu_umd.dll).
 *
 * Mirrors umd/src/capi.rs; tests/umd_header.rs checks that every function, status value and
 * constant here matches the Rust declarations, and compiles this header as C99 with
 * -Wall -Werror.
 *
 * Objects are explicit: an application opens an adapter and creates queues, fences and
 * buffers on it; there is no current adapter or queue and no state outside the objects. Every
 * call returns an RvgpuStatus and validates its arguments: a NULL pointer or handle is
 * RVGPU_STATUS_INVALID_ARGUMENT; a destroyed, forged or wrong-kind handle is
 * RVGPU_STATUS_INVALID_HANDLE (handles are tokens the DLL looks up in its table of live
 * objects, never pointers it dereferences). Non-NULL pointers must be valid for what each call
 * documents. Out-parameters are cleared first, so a failed call leaves NULL or 0 there.
 *
 * Queues: RVGPU_QUEUE_USER_MODE queues submit through their own ring and doorbell, without a
 * system call (the driver may move one to its kernel-mode fallback: rvgpu_queue_status shows
 * it). RVGPU_QUEUE_KERNEL_MODE queues submit every batch through the kernel. Each submission returns
 * a progress value; rvgpu_queue_wait waits for one. A kernel-mode queue (and a user-mode queue on
 * its fallback) never waits for work that may be held behind a GPU wait: it holds up to 4 MiB of
 * commands behind one, then returns RVGPU_STATUS_WAS_STILL_DRAWING at once, having submitted
 * nothing of the batch (of a batch with INDIRECT packets, the parts before the refusal went);
 * signal what the queue waits for, or wait for an earlier value, and submit again.
 *
 * Fences are native timeline fences: a 64-bit value that only grows. The CPU signals and waits
 * (rvgpu_fence_signal, rvgpu_fence_wait); the GPU waits and signals as the wait and signal lists
 * of rvgpu_queue_submit. A fence created RVGPU_FENCE_SHAREABLE can be shared with another
 * process by NT handle: rvgpu_fence_share (D3DKMTShareObjects), then DuplicateHandle, then
 * rvgpu_fence_open there (D3DKMTOpenNativeFenceFromNtHandle); each process closes its NT handle
 * with CloseHandle. Sharing a fence not created shareable is RVGPU_STATUS_INVALID_ARGUMENT; a
 * value that is no NT handle of this process is RVGPU_STATUS_INVALID_HANDLE.
 *
 * Commands are rvgpu packets: 64-bit words, each passed as two dwords, low half first.
 * Timeouts: 0 polls, UINT64_MAX waits forever.
 *
 * Buffers: rvgpu_buffer_lock maps a buffer with RVGPU_LOCK_* flags and takes the queues whose
 * work may use it; the UMD tracks which queue values read or write each buffer, for the work it
 * submits through rvgpu_buffer_fill and rvgpu_buffer_copy (not the packets of rvgpu_submit or
 * rvgpu_queue_submit). A lock with RVGPU_LOCK_DO_NOT_WAIT that would wait returns
 * RVGPU_STATUS_WAS_STILL_DRAWING. A lock must list every live queue that used the buffer (a lock
 * that cannot account for a use returns RVGPU_STATUS_INVALID_ARGUMENT); uses by a queue since
 * destroyed are over.
 *
 * Threading: every call is thread-safe. Calls on one queue, one buffer or one context are
 * serialized by that object's lock; rvgpu_queue_wait and rvgpu_fence_wait wait without it, so
 * one thread may wait while another submits; rvgpu_context_submit waits for command-buffer
 * space with its context's lock held. Destroying an object while another thread uses it is safe: the
 * other call finishes, later calls get RVGPU_STATUS_INVALID_HANDLE.
 *
 * Device loss: a hang of the device's work, a fault, or a reset of the whole adapter loses the
 * device. Its queues' submissions and waits return RVGPU_STATUS_DEVICE_LOST (other calls on
 * its objects may too); its fences read UINT64_MAX (Windows signals a lost device's fences to
 * the maximum, so a fence value alone never shows that work ran). A queue never
 * reports work as done that it did not see complete before the loss: rvgpu_queue_wait answers
 * RVGPU_STATUS_DEVICE_LOST, and RvgpuQueueStatus.completed stays at what was seen.
 * rvgpu_device_loss_info says how it was lost: adapter_reset means every device on the
 * adapter, of every process, was lost with it; otherwise only this one was (a device this
 * process opened separately with another rvgpu_open_adapter keeps working). To recover,
 * recreate: destroy every buffer, fence, context and queue of the adapter and close it (each
 * destruction returns, whatever its status), then rvgpu_open_adapter again, which creates a
 * new device, and create new queues and objects on it; their work runs. The objects of the
 * lost device are never usable again. examples/device_loss.c shows the sequence.
 *
 * Off Windows (the host build used by tests) rvgpu_open_adapter returns
 * RVGPU_STATUS_NOT_IMPLEMENTED, so no handle exists.
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
    RVGPU_STATUS_WAS_STILL_DRAWING = 7,
    RVGPU_STATUS_INVALID_HANDLE = 8
} RvgpuStatus;

/* rvgpu_buffer_lock flags: READ and/or WRITE, or DISCARD or NO_OVERWRITE; any with DO_NOT_WAIT. */
#define RVGPU_LOCK_READ 0x1u
#define RVGPU_LOCK_WRITE 0x2u
#define RVGPU_LOCK_DISCARD 0x4u
#define RVGPU_LOCK_NO_OVERWRITE 0x8u
#define RVGPU_LOCK_DO_NOT_WAIT 0x10u

/* RvgpuQueueDesc.kind and RvgpuQueueStatus.kind. */
#define RVGPU_QUEUE_USER_MODE 0u
#define RVGPU_QUEUE_KERNEL_MODE 1u

/* rvgpu_fence_create2 flags. */
#define RVGPU_FENCE_SHAREABLE 0x1u

/* RvgpuDeviceLossInfo.execution_state: D3DKMT_DEVICEEXECUTION_STATE, as D3DKMTGetDeviceState
   answers it. */
#define RVGPU_DEVICE_EXECUTION_ACTIVE 1u
#define RVGPU_DEVICE_EXECUTION_RESET 2u
#define RVGPU_DEVICE_EXECUTION_HUNG 3u
#define RVGPU_DEVICE_EXECUTION_STOPPED 4u
#define RVGPU_DEVICE_EXECUTION_ERROR_OUTOFMEMORY 5u
#define RVGPU_DEVICE_EXECUTION_ERROR_DMAFAULT 6u
#define RVGPU_DEVICE_EXECUTION_ERROR_DMAPAGEFAULT 7u

/* RvgpuFenceLogEntry.kind. */
#define RVGPU_FENCE_LOG_WAIT 0u
#define RVGPU_FENCE_LOG_SIGNAL 1u

typedef struct RvgpuAdapter RvgpuAdapter;
typedef struct RvgpuQueue RvgpuQueue;
typedef struct RvgpuFence RvgpuFence;
typedef struct RvgpuBuffer RvgpuBuffer;
typedef struct RvgpuContext RvgpuContext;

/* How rvgpu_queue_create makes a queue. */
typedef struct RvgpuQueueDesc {
    uint32_t node;      /* engine (node ordinal) */
    uint32_t kind;      /* RVGPU_QUEUE_USER_MODE or RVGPU_QUEUE_KERNEL_MODE */
    uint32_t priority;  /* scheduling priority; the driver clamps it */
    uint32_t ring_size; /* ring (and kernel command buffer) bytes: a power of two from 256 to
                           16 MiB; 0 for 64 KiB */
} RvgpuQueueDesc;

/* One entry of a wait or signal list. */
typedef struct RvgpuFenceValue {
    RvgpuFence *fence;
    uint64_t value;
} RvgpuFenceValue;

/* One batch: the GPU waits for every wait entry, runs the commands, signals every signal
   entry. Each array may be NULL when its count is 0; a batch needs at least one of the three.
   WRITE_DATA packets (the kernel's page-table writes) are an invalid argument. */
typedef struct RvgpuSubmitDesc {
    const uint32_t *commands;
    size_t dword_count;
    const RvgpuFenceValue *waits;
    size_t wait_count;
    const RvgpuFenceValue *signals;
    size_t signal_count;
} RvgpuSubmitDesc;

typedef struct RvgpuQueueStatus {
    uint64_t submitted;           /* last progress value submitted (0: none) */
    uint64_t completed;           /* progress value the GPU completed */
    uint64_t dropped_log_entries; /* fence log entries dropped before they were read */
    uint32_t kind;                /* the path batches take now (RVGPU_QUEUE_*) */
    uint32_t lost;                /* non-zero: the device was lost; destroy and recreate */
    uint32_t queue_id;            /* the device's queue id (in fence log entries) */
    int32_t doorbell_status;      /* a user-mode queue's D3DDDI_DOORBELLSTATUS (0 connected,
                                     1 connected-notify, 2 retry, 3 abort); -1 without one (a
                                     lost queue whose doorbell is gone: what it read last) */
} RvgpuQueueStatus;

typedef struct RvgpuDeviceStatus {
    uint32_t lost;        /* non-zero once a queue found the device lost, or the OS reports it not active */
    uint32_t reset_count; /* queues whose work a reset or loss aborted, each counted once */
} RvgpuDeviceStatus;

/* How the adapter's device was lost (rvgpu_device_loss_info), from what Windows tells an
   application: D3DKMTGetDeviceState, a queue's doorbell status page, STATUS_DEVICE_REMOVED. */
typedef struct RvgpuDeviceLossInfo {
    uint32_t lost;            /* non-zero: lost (any field below says so, or a queue found it) */
    uint32_t execution_state; /* RVGPU_DEVICE_EXECUTION_*; 0 when the OS gave none */
    int32_t doorbell_status;  /* D3DDDI_DOORBELLSTATUS the first queue that found the loss read
                                 from its disconnected doorbell (3: aborted by the driver); -1:
                                 none read one */
    uint32_t device_removed;  /* non-zero: the OS refuses the device (STATUS_DEVICE_REMOVED) */
    uint32_t adapter_reset;   /* non-zero: the adapter was reset, every device on it lost */
    uint32_t reserved;        /* 0 */
} RvgpuDeviceLossInfo;

typedef struct RvgpuBufferStatus {
    uint64_t gpu_va;     /* GPU address of the current memory */
    uint64_t renames;    /* RVGPU_LOCK_DISCARD renames of a busy buffer */
    uint64_t lock_waits; /* locks that blocked on GPU work */
    uint64_t backings;   /* current memory plus renamed memory the GPU still uses */
} RvgpuBufferStatus;

/* One fence operation a queue submitted, oldest first (rvgpu_queue_read_fence_log). */
typedef struct RvgpuFenceLogEntry {
    uint64_t value;         /* fence value waited for or signalled */
    uint64_t cpu_timestamp; /* QueryPerformanceCounter ticks before the batch was written */
    uint32_t queue_id;
    uint32_t kind;          /* RVGPU_FENCE_LOG_WAIT or RVGPU_FENCE_LOG_SIGNAL */
    uint32_t index;         /* free-running index of its device log entry, if logged */
    uint32_t logged;        /* non-zero: the device writes a log entry (user-mode path) */
    uint32_t os_fence;      /* the fence's D3DKMT handle (the log entry's hNativeFence) */
    uint32_t reserved;
} RvgpuFenceLogEntry;

/* Adapters. */
RvgpuStatus rvgpu_open_adapter(uint32_t luid_low, int32_t luid_high, RvgpuAdapter **out_adapter);
RvgpuStatus rvgpu_close_adapter(RvgpuAdapter *adapter);
RvgpuStatus rvgpu_device_status(RvgpuAdapter *adapter, RvgpuDeviceStatus *out_status);
RvgpuStatus rvgpu_device_loss_info(RvgpuAdapter *adapter, RvgpuDeviceLossInfo *out_info);

/* Queues. rvgpu_create_queue is rvgpu_queue_create of a user-mode queue; rvgpu_submit is
   rvgpu_queue_submit of commands alone. */
RvgpuStatus rvgpu_queue_create(RvgpuAdapter *adapter, const RvgpuQueueDesc *desc, RvgpuQueue **out_queue);
RvgpuStatus rvgpu_create_queue(RvgpuAdapter *adapter, uint32_t node, uint32_t priority, RvgpuQueue **out_queue);
RvgpuStatus rvgpu_destroy_queue(RvgpuQueue *queue);
RvgpuStatus rvgpu_queue_submit(RvgpuQueue *queue, const RvgpuSubmitDesc *desc, uint64_t *out_progress);
RvgpuStatus rvgpu_submit(RvgpuQueue *queue, const uint32_t *commands, size_t dword_count, uint64_t *out_progress);
RvgpuStatus rvgpu_queue_wait(RvgpuQueue *queue, uint64_t value, uint64_t timeout_ns);
RvgpuStatus rvgpu_queue_status(RvgpuQueue *queue, RvgpuQueueStatus *out_status);
RvgpuStatus rvgpu_queue_read_fence_log(RvgpuQueue *queue, RvgpuFenceLogEntry *entries, size_t capacity, size_t *out_count);

/* Fences. */
RvgpuStatus rvgpu_fence_create(RvgpuAdapter *adapter, uint64_t initial_value, RvgpuFence **out_fence);
RvgpuStatus rvgpu_fence_create2(RvgpuAdapter *adapter, uint64_t initial_value, uint32_t flags, RvgpuFence **out_fence);
RvgpuStatus rvgpu_fence_share(RvgpuFence *fence, void **out_nt_handle);
RvgpuStatus rvgpu_fence_open(RvgpuAdapter *adapter, void *nt_handle, RvgpuFence **out_fence);
RvgpuStatus rvgpu_fence_signal(RvgpuFence *fence, uint64_t value);
RvgpuStatus rvgpu_fence_value(RvgpuFence *fence, uint64_t *out_value);
RvgpuStatus rvgpu_fence_wait(RvgpuFence *fence, uint64_t value, uint64_t timeout_ns);
/* Registers a wait for value that signals event (a Win32 event of this process, e.g. from
   CreateEventW) once released or once the fence is gone, and returns at once; wait on the event
   with WaitForSingleObject. A handle the OS does not take as an event is an invalid argument
   (RVGPU_STATUS_INVALID_ARGUMENT). Thread-safe like every call. */
RvgpuStatus rvgpu_fence_wait_async(RvgpuFence *fence, uint64_t value, void *event);
RvgpuStatus rvgpu_fence_destroy(RvgpuFence *fence);

/* Buffers. */
RvgpuStatus rvgpu_buffer_create(RvgpuAdapter *adapter, uint64_t size, RvgpuBuffer **out_buffer);
RvgpuStatus rvgpu_buffer_destroy(RvgpuBuffer *buffer, RvgpuQueue *const *queues, size_t queue_count);
RvgpuStatus rvgpu_buffer_gpu_va(RvgpuBuffer *buffer, uint64_t *out_gpu_va);
RvgpuStatus rvgpu_buffer_status(RvgpuBuffer *buffer, RvgpuBufferStatus *out_status);
RvgpuStatus rvgpu_buffer_lock(RvgpuBuffer *buffer, uint32_t flags, RvgpuQueue *const *queues, size_t queue_count, void **out_data);
RvgpuStatus rvgpu_buffer_unlock(RvgpuBuffer *buffer);
RvgpuStatus rvgpu_buffer_fill(RvgpuQueue *queue, RvgpuBuffer *buffer, uint64_t offset, uint64_t bytes, uint64_t pattern, uint64_t *out_progress);
RvgpuStatus rvgpu_buffer_copy(RvgpuQueue *queue, RvgpuBuffer *src, uint64_t src_offset, RvgpuBuffer *dst, uint64_t dst_offset, uint64_t bytes, uint64_t *out_progress);

/* GPU virtual addresses the application places itself. rvgpu_va_reserve reserves size bytes
   (a non-zero multiple of 4 KiB) of the adapter's GPU VA space at base (64 KiB aligned; 0: the
   OS chooses); rvgpu_buffer_map_va maps page_count 4 KiB pages of the buffer's current memory,
   from first_page, read-write at va (page-aligned, inside a reserved range of the buffer's
   adapter) and returns once the GPU may use them; rvgpu_va_free frees a reserved range, every
   page of it unmapped (GPU work that still uses it faults and loses the device). Pages past
   the buffer's end, unaligned or empty ranges are RVGPU_STATUS_INVALID_ARGUMENT. Thread-safe;
   mapping and freeing ranges other threads' work uses is the application's to order. */
RvgpuStatus rvgpu_va_reserve(RvgpuAdapter *adapter, uint64_t base, uint64_t size, uint64_t *out_va);
RvgpuStatus rvgpu_buffer_map_va(RvgpuBuffer *buffer, uint64_t va, uint64_t first_page, uint64_t page_count);
RvgpuStatus rvgpu_va_free(RvgpuAdapter *adapter, uint64_t base, uint64_t size);

/* Kernel-mode DMA contexts: work scheduled by the OS one DMA buffer at a time, as the D3D
   runtime submits on a context of a GPU-VA device: D3DKMTSubmitCommand on a node without
   context scheduling; on a hardware-scheduled node (D3DKMTQueryAdapterInfo's node metadata)
   the context is created with HwQueueSupported and a kernel-mode hardware queue, and each
   DMA buffer goes to it (D3DKMTSubmitCommandToHwQueue), as Windows refuses
   D3DKMTSubmitCommand there. rvgpu_context_create makes a context on node `node` of the
   adapter's device with its command buffer (*out_context is NULL on failure). rvgpu_context_submit validates
   dword_count command dwords (as for rvgpu_submit; at most 16384, no INDIRECT), copies them
   into the command buffer and submits them; there is no progress value: completion is seen in
   the memory the commands write. Any amount of work may be in flight: the context reuses
   command-buffer space only once the GPU consumed it, so a submission may block until then
   (bounded by the OS's wait; a failed wait is its status and submits nothing, and the call
   may be repeated). A context whose device the OS put in error (a timeout and reset)
   returns RVGPU_STATUS_DEVICE_LOST: destroy it. NULL pointers, an empty, odd,
   oversized or malformed stream are RVGPU_STATUS_INVALID_ARGUMENT; a destroyed, forged or
   other-kind handle is RVGPU_STATUS_INVALID_HANDLE. Thread-safe: calls on one context are
   serialized; distinct contexts may submit from different threads at once. */
RvgpuStatus rvgpu_context_create(RvgpuAdapter *adapter, uint32_t node, RvgpuContext **out_context);
RvgpuStatus rvgpu_context_submit(RvgpuContext *context, const uint32_t *commands, size_t dword_count);
RvgpuStatus rvgpu_context_destroy(RvgpuContext *context);

/* A static English name for any status value ("unknown status" for other values). */
const char *rvgpu_status_string(uint32_t status);

#ifdef __cplusplus
}
#endif

#endif /* RVGPU_UMD_H */
