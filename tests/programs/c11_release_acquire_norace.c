/* Message passing with a release store and an acquire load: the load that
 * reads the stored value synchronizes with the store, so the write of data
 * happens before the read: no race. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42;
    atomic_store_explicit(&flag, 1, memory_order_release);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (!(atomic_load_explicit(&flag, memory_order_acquire))) sched_yield();
    int v = data;
    pthread_join(t, NULL);
    printf("%d\n", v);
    return 0;
}
