/*
 * device_loss.c - losing the device and recovering by recreating it, on rvgpu_umd.dll.
 * A queue submits a HANG packet (work that never ends, as a runaway shader would) and a fill
 * behind it. Windows times the engine out and resets it; the device is lost: the wait for the
 * fill answers RVGPU_STATUS_DEVICE_LOST (the fill never ran) and rvgpu_device_loss_info says
 * how. The program then destroys everything of the lost device, opens the adapter again (a new
 * device), and fills and checks a buffer on it.
 *
 *   x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Iumd/include examples/device_loss.c \
 *       -Lpath/to/dll -lrvgpu_umd -o device_loss.exe
 *   device_loss.exe [luid_low [luid_high]]
 *
 * Prints how the device was lost, then "device_loss: recovered", and returns 0; or names the
 * call that failed and returns 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rvgpu_umd.h"

#define BYTES 4096u
#define PATTERN 0x600DF111C0DEF00Dull
/* The longest a wait here lasts: Windows detects a hung engine within seconds (TdrDelay). */
#define WAIT_NS 30000000000ull

/* HANG (opcode 0x08, one word), as two dwords, low half first. */
static const uint32_t hang[2] = {0x00010008u, 0u};

struct device {
    RvgpuAdapter *adapter;
    RvgpuQueue *queue;
    RvgpuBuffer *buffer;
};

static int check(RvgpuStatus s, const char *what)
{
    if (s != RVGPU_STATUS_OK) {
        printf("device_loss: %s: %s\n", what, rvgpu_status_string((uint32_t)s));
        return 0;
    }
    return 1;
}

/* Opens the adapter (which creates a device) with a queue and a buffer. */
static int open_device(struct device *d, uint32_t luid_low, int32_t luid_high)
{
    d->queue = NULL;
    d->buffer = NULL;
    if (!check(rvgpu_open_adapter(luid_low, luid_high, &d->adapter), "rvgpu_open_adapter"))
        return 0;
    return check(rvgpu_create_queue(d->adapter, 0, 0, &d->queue), "rvgpu_create_queue") &&
           check(rvgpu_buffer_create(d->adapter, BYTES, &d->buffer), "rvgpu_buffer_create");
}

/* Destroys every object of the device, then closes its adapter. On a lost device each call
   still returns; their statuses do not matter, the objects are gone either way. */
static void close_device(struct device *d)
{
    if (d->buffer != NULL)
        (void)rvgpu_buffer_destroy(d->buffer, &d->queue, d->queue != NULL ? 1u : 0u);
    if (d->queue != NULL)
        (void)rvgpu_destroy_queue(d->queue);
    (void)rvgpu_close_adapter(d->adapter);
    d->buffer = NULL;
    d->queue = NULL;
    d->adapter = NULL;
}

/* Fills the buffer on the GPU, waits, and checks it from the CPU. */
static int fill_and_check(struct device *d)
{
    uint64_t progress = 0, *words;
    void *view = NULL;
    uint32_t i;
    int ok;

    if (!check(rvgpu_buffer_fill(d->queue, d->buffer, 0, BYTES, PATTERN, &progress), "fill") ||
        !check(rvgpu_queue_wait(d->queue, progress, WAIT_NS), "wait for the fill") ||
        !check(rvgpu_buffer_lock(d->buffer, RVGPU_LOCK_READ, &d->queue, 1, &view), "lock"))
        return 0;
    words = (uint64_t *)view;
    ok = 1;
    for (i = 0; i < BYTES / 8u; i++) {
        if (words[i] != PATTERN) {
            printf("device_loss: word %u is %#llx\n", i, (unsigned long long)words[i]);
            ok = 0;
            break;
        }
    }
    return check(rvgpu_buffer_unlock(d->buffer), "unlock") && ok;
}

int main(int argc, char **argv)
{
    uint32_t luid_low = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 0x1000u;
    int32_t luid_high = argc > 2 ? (int32_t)strtol(argv[2], NULL, 0) : 0;
    struct device d;
    RvgpuDeviceLossInfo loss;
    uint64_t progress = 0;
    RvgpuStatus s;
    int ok;

    /* A working device, then a HANG and a fill that waits behind it. */
    ok = open_device(&d, luid_low, luid_high) && fill_and_check(&d) &&
         check(rvgpu_submit(d.queue, hang, 2, &progress), "submit the HANG") &&
         check(rvgpu_buffer_fill(d.queue, d.buffer, 0, BYTES, ~PATTERN, &progress), "fill");
    if (!ok) {
        if (d.adapter != NULL)
            close_device(&d);
        return 1;
    }
    s = rvgpu_queue_wait(d.queue, progress, WAIT_NS);
    if (s != RVGPU_STATUS_DEVICE_LOST) {
        printf("device_loss: the wait behind the HANG: %s\n", rvgpu_status_string((uint32_t)s));
        close_device(&d);
        return 1;
    }
    if (!check(rvgpu_device_loss_info(d.adapter, &loss), "rvgpu_device_loss_info")) {
        close_device(&d);
        return 1;
    }
    /* adapter_reset 0: only this device was lost; other devices and processes go on. */
    printf("device_loss: lost (execution state %u, doorbell status %d, removed %u, "
           "adapter reset %u)\n",
           loss.execution_state, loss.doorbell_status, loss.device_removed,
           loss.adapter_reset);

    /* Recover by recreating: nothing of the lost device is used again. */
    close_device(&d);
    ok = open_device(&d, luid_low, luid_high) && fill_and_check(&d);
    if (d.adapter != NULL)
        close_device(&d);
    if (!ok)
        return 1;
    printf("device_loss: recovered\n");
    return 0;
}
