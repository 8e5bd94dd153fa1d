/* Twin of mixed_atomic_race.c: both sides access the variable atomically
 * (even with relaxed order, two atomic accesses never race), and two threads
 * increment a C11 atomic counter with relaxed fetch_add: no race. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static int hits;
static atomic_long counter;

static void *bump(void *arg) {
    __atomic_fetch_add(&hits, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 100; i++) atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, bump, NULL);
    int v = __atomic_load_n(&hits, __ATOMIC_RELAXED);
    for (int i = 0; i < 100; i++) atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    pthread_join(t, NULL);
    printf("%d %ld\n", v, atomic_load_explicit(&counter, memory_order_relaxed));
    return 0;
}
