/* gcc's legacy __sync builtins: a spinlock from __sync_lock_test_and_set
 * (an acquire barrier) and __sync_lock_release (a release barrier) protects
 * plain data, and a counter is updated with __sync_fetch_and_add and
 * __sync_val_compare_and_swap (full barriers): no race. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static int lock;
static long data;
static long counter;

static void *work(void *arg) {
    for (int i = 0; i < 50; i++) {
        while (__sync_lock_test_and_set(&lock, 1)) sched_yield();
        data += 2;
        __sync_lock_release(&lock);
        __sync_fetch_and_add(&counter, 1);
        long old = __sync_fetch_and_add(&counter, 0);
        (void)__sync_val_compare_and_swap(&counter, -1, old);
    }
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld %ld\n", data, __sync_fetch_and_add(&counter, 0));
    return 0;
}
