/*
 * two_queues.c - a first program on rvgpu_umd.dll: two queues and a fence between them. Queue
 * A fills a buffer and signals the fence; queue B waits for the fence on the GPU and copies the
 * buffer into a second one; the CPU waits for B and checks the copy.
 *
 *   x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Iumd/include examples/two_queues.c \
 *       -Lpath/to/dll -lrvgpu_umd -o two_queues.exe
 *   two_queues.exe [luid_low [luid_high]]
 *
 * Prints "two_queues: ok" and returns 0, or names the call that failed and returns 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rvgpu_umd.h"

#define BYTES 4096u
#define PATTERN 0x5A5A0000C0DEF00Dull

static int check(RvgpuStatus s, const char *what)
{
    if (s != RVGPU_STATUS_OK) {
        printf("two_queues: %s: %s\n", what, rvgpu_status_string((uint32_t)s));
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    uint32_t luid_low = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 0x1000u;
    int32_t luid_high = argc > 2 ? (int32_t)strtol(argv[2], NULL, 0) : 0;
    RvgpuAdapter *adapter = NULL;
    RvgpuQueue *a = NULL, *b = NULL;
    RvgpuBuffer *src = NULL, *dst = NULL;
    RvgpuFence *filled = NULL;
    uint64_t progress = 0, a_progress = 0, *words = NULL;
    void *view = NULL;
    int ok = 0;
    uint32_t i;

    if (!check(rvgpu_open_adapter(luid_low, luid_high, &adapter), "rvgpu_open_adapter"))
        return 1;
    if (check(rvgpu_create_queue(adapter, 0, 0, &a), "queue A") &&
        check(rvgpu_create_queue(adapter, 0, 0, &b), "queue B") &&
        check(rvgpu_buffer_create(adapter, BYTES, &src), "source buffer") &&
        check(rvgpu_buffer_create(adapter, BYTES, &dst), "destination buffer") &&
        check(rvgpu_fence_create(adapter, 0, &filled), "rvgpu_fence_create")) {
        RvgpuFenceValue one = {0};
        RvgpuSubmitDesc wait = {0}, signal = {0};
        RvgpuQueue *both[2];
        one.fence = filled;
        one.value = 1;
        wait.waits = &one;
        wait.wait_count = 1;
        signal.signals = &one;
        signal.signal_count = 1;
        both[0] = a;
        both[1] = b;
        /* B first: its GPU wait holds the copy until A's signal. */
        ok = check(rvgpu_queue_submit(b, &wait, &progress), "B: wait for the fence") &&
             check(rvgpu_buffer_copy(b, src, 0, dst, 0, BYTES, &progress), "B: copy") &&
             check(rvgpu_buffer_fill(a, src, 0, BYTES, PATTERN, &a_progress), "A: fill") &&
             check(rvgpu_queue_submit(a, &signal, &a_progress), "A: signal the fence") &&
             check(rvgpu_queue_wait(b, progress, UINT64_MAX), "CPU: wait for B") &&
             check(rvgpu_buffer_lock(dst, RVGPU_LOCK_READ, both, 2, &view), "lock");
        if (ok) {
            words = (uint64_t *)view;
            for (i = 0; i < BYTES / 8u; i++) {
                if (words[i] != PATTERN) {
                    printf("two_queues: word %u is %#llx\n", i, (unsigned long long)words[i]);
                    ok = 0;
                    break;
                }
            }
            check(rvgpu_buffer_unlock(dst), "unlock");
        }
    }
    {
        /* A destroy names the queues that used the buffer (a NULL one is not passed). */
        RvgpuQueue *live[2];
        size_t n = 0;
        if (a != NULL)
            live[n++] = a;
        if (b != NULL)
            live[n++] = b;
        if (src != NULL)
            check(rvgpu_buffer_destroy(src, live, n), "destroy the source");
        if (dst != NULL)
            check(rvgpu_buffer_destroy(dst, live, n), "destroy the destination");
    }
    if (filled != NULL)
        check(rvgpu_fence_destroy(filled), "rvgpu_fence_destroy");
    if (b != NULL)
        check(rvgpu_destroy_queue(b), "destroy B");
    if (a != NULL)
        check(rvgpu_destroy_queue(a), "destroy A");
    check(rvgpu_close_adapter(adapter), "rvgpu_close_adapter");
    if (ok)
        printf("two_queues: ok\n");
    return ok ? 0 : 1;
}
