/* Message passing through fences: a release fence before a relaxed store,
 * a relaxed load before an acquire fence. The fences synchronize (C11
 * 7.17.4), so the write of data happens before the read: no race.
 * ThreadSanitizer does not model fences, so it reports a false race here. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42;
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&flag, 1, memory_order_relaxed);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (!(atomic_load_explicit(&flag, memory_order_relaxed) && (atomic_thread_fence(memory_order_acquire), 1))) sched_yield();
    int v = data;
    pthread_join(t, NULL);
    printf("%d\n", v);
    return 0;
}
