/* Message passing with the default (seq_cst) atomic_store and atomic_load,
 * which both release and acquire: no race on data. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

static int data;
static atomic_int flag;

static void *producer(void *arg) {
    data = 42;
    atomic_store(&flag, 1);
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    while (!(atomic_load(&flag))) sched_yield();
    int v = data;
    pthread_join(t, NULL);
    printf("%d\n", v);
    return 0;
}
