/* A spinlock built from C11 compare_exchange (acquire on success, relaxed on
 * failure) and a release store protects a counter that two threads update:
 * each unlock synchronizes with the next successful lock: no race. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

static atomic_int lock;
static long counter;

static void spin_lock(void) {
    int expected = 0;
    while (!atomic_compare_exchange_weak_explicit(&lock, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
        expected = 0;
        sched_yield();
    }
}

static void spin_unlock(void) {
    atomic_store_explicit(&lock, 0, memory_order_release);
}

static void *work(void *arg) {
    for (int i = 0; i < 100; i++) {
        spin_lock();
        counter++;
        spin_unlock();
    }
    int expected = 0;
    /* A strong CAS with acq_rel / acquire orders, for coverage. */
    while (!atomic_compare_exchange_strong_explicit(&lock, &expected, 1, memory_order_acq_rel,
                                                    memory_order_acquire))
        expected = 0;
    counter += 1000;
    atomic_store_explicit(&lock, 0, memory_order_seq_cst);
    return arg;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", counter);
    return 0;
}
