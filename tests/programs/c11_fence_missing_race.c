/* Half a fence pair: a release fence before a relaxed store, but the
 * consumer's relaxed load has no acquire fence after it, so nothing
 * synchronizes: a race on data. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42; // RACE
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&flag, 1, memory_order_relaxed);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (!(atomic_load_explicit(&flag, memory_order_relaxed))) sched_yield();
    int v = data; // RACE
    pthread_join(t, NULL);
    printf("%d\n", v);
    return 0;
}
