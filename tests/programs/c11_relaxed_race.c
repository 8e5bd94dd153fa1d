/* Message passing through a C11 atomic flag with relaxed stores and loads.
 * A relaxed store does not release and a relaxed load does not acquire, so
 * seeing the flag set orders nothing: the write and the read of data race. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42; // RACE
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
