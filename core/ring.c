/* Futex wake-ups of the shared-memory ring. See ring.h. */
#include <config.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/ring.h"

void gx_ring_futex_wait(_Atomic uint32_t *word, uint32_t val, int64_t timeout_us)
{
    struct timespec ts = {timeout_us / 1000000, (timeout_us % 1000000) * 1000};
    /* not FUTEX_PRIVATE_FLAG: the word is in memory shared with another process */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, val, timeout_us < 0 ? NULL : &ts, NULL, 0);
}

void gx_ring_futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

void gx_ring_store_wake(_Atomic uint32_t *word, uint32_t index, _Atomic uint32_t *sleep,
                        _Atomic uint32_t *futex)
{
    atomic_store_explicit(word, index, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(sleep)) {
        atomic_fetch_add(futex, 1);
        gx_ring_futex_wake(futex);
    }
}
