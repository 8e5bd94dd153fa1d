/* Message passing with a release store but a relaxed load: the load does
 * not acquire, so the consumer's read of data is not ordered after the
 * producer's write: a race. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42; // RACE
    atomic_store_explicit(&flag, 1, memory_order_release);
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
