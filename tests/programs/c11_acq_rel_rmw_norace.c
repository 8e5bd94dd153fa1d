/* Message passing through read-modify-writes with memory_order_acq_rel: the
 * producer's exchange releases, the consumer's fetch_add (of 0) acquires when
 * it reads 1: no race on data. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42;
    atomic_exchange_explicit(&flag, 1, memory_order_acq_rel);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (!(atomic_fetch_add_explicit(&flag, 0, memory_order_acq_rel))) sched_yield();
    int v = data;
    pthread_join(t, NULL);
    printf("%d\n", v);
    return 0;
}
